"""Which tree decoder should the parser use on a nearly projective treebank
(EWT dev only)?

Counts the non-projective arcs and sentences of the training and dev files,
then trains one :class:`omkl.DependencyParser` (default settings) per
decoder of ``--decoders`` on the first ``--max-train`` training sentences,
decoding with it while it trains and while it parses, and prints the dev
UAS and LAS, the training time and the dev parsing speed. With
``--cross``, each parser also parses dev with the other decoder (the same
weights), which shows how much of the difference is the decoder at
prediction time and how much the model it trained. The test file is never
read.

Example::

    python studies/parser_decoder_study.py --max-train 0 --cross
"""

from __future__ import annotations

import time

import _ewt

from omkl import _omkl
from omkl.parsing import DependencyParser, read_conllu


def _projectivity(path: str) -> str:
    trees = [c for c in _omkl.ParseCorpus.from_path(path).nonprojective_arcs() if c is not None]
    bad, arcs = sum(b for b, _ in trees), sum(n for _, n in trees)
    sentences = sum(b > 0 for b, _ in trees)
    return (
        f"{bad} of {arcs} arcs non-projective ({100 * bad / arcs:.3f}%), "
        f"{sentences} of {len(trees)} sentences ({100 * sentences / len(trees):.2f}%)"
    )


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    ap.add_argument("--decoders", default="chu-liu-edmonds,eisner")
    ap.add_argument("--cross", action="store_true", help="also parse dev with the other decoder")
    args = _ewt.parse_dev_only(ap)
    train = read_conllu(args.train)
    if args.max_train:
        train = train[: args.max_train]
    dev = read_conllu(args.dev)
    print(f"train: {_projectivity(args.train)}")
    print(f"dev: {_projectivity(args.dev)}")
    decoders = args.decoders.split(",")
    head = ["trained with", "parses dev with", "dev UAS", "dev LAS", "training s", "dev sent/s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in decoders:
        p = DependencyParser(decoder=name)
        t0 = time.perf_counter()
        p.fit(train)
        fit_s = time.perf_counter() - t0
        for other in [name] + ([d for d in decoders if d != name] if args.cross else []):
            p._core.decoder = other
            t0 = time.perf_counter()
            p.parse(dev)
            speed = len(dev) / (time.perf_counter() - t0)
            s = p.score(dev)
            row = [
                name,
                other,
                f"{s['uas']:.2f}",
                f"{s['las']:.2f}",
                f"{fit_s:.0f}",
                f"{speed:.0f}",
            ]
            print("| " + " | ".join(row) + " |", flush=True)
    print(f"peak RSS {_ewt.peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
