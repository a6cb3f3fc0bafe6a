"""How much freezing costs a parser now that the frozen tables are rounded
to half precision: on the dev file of each treebank in ``../shared/data``
(UD English-EWT, Greek-GDT, Gothic-PROIEL), the ``omkl train parser``
parser (``DependencyParser(stack_folds=5)``, gold tags) before and after
:meth:`~omkl.parsing.DependencyParser.freeze`: UAS and LAS (the parser's
own scores, punctuation excluded), the share of heads and relations that
changed, and the saved sizes.

    python studies/parser_half_study.py [--treebanks ewt,greek,gothic]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

import _treebanks

from omkl.parsing import DependencyParser, read_conllu


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="ewt,greek,gothic")
    args = ap.parse_args()
    print(
        "| treebank | UAS unfrozen | UAS frozen | LAS unfrozen | LAS frozen "
        "| heads changed % | relations changed % | frozen file MB | training s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for key in args.treebanks.split(","):
        name, train, dev = _treebanks.train_and_dev(key)
        if not (train.exists() and dev.exists()):
            print(f"| {name} | skipped: {train.parent} not found |")
            continue
        sents = read_conllu(str(dev))
        t0 = time.perf_counter()
        parser = DependencyParser(stack_folds=5, seed=0).fit(str(train))
        seconds = time.perf_counter() - t0
        frozen = parser.freeze()
        before, after = parser.score(sents), frozen.score(sents)
        (h0, r0), (h1, r1) = parser.parse_with_labels(sents), frozen.parse_with_labels(sents)
        words = sum(len(h) for h in h0)
        heads = sum(a != b for x, y in zip(h0, h1, strict=True) for a, b in zip(x, y, strict=True))
        rels = sum(a != b for x, y in zip(r0, r1, strict=True) for a, b in zip(x, y, strict=True))
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "frozen.omkl"
            frozen.save(path)
            size = path.stat().st_size / 1e6
        print(
            f"| {name} | {before['uas']:.2f} | {after['uas']:.2f} | {before['las']:.2f} "
            f"| {after['las']:.2f} | {100 * heads / words:.3f} | {100 * rels / words:.3f} "
            f"| {size:.1f} | {seconds:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
