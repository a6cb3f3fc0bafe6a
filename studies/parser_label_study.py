"""Dev-set accuracy and memory of the parser's label stage (EWT dev only).

Trains the relation classifier of :class:`omkl.DependencyParser` (its label
stage, a multiclass Alg. 1 learner) on the gold trees of the first
``--max-train`` training sentences, once per ``eta:epochs`` configuration,
then prints its label accuracy on the dev file's gold trees (non-punctuation
words, i.e. LAS with gold heads), the growth of the peak resident memory
while it trained (a measure of the size of its weight table) and, with
``--parser-trees``, the dev LAS on the trees of a parser trained on the same
sentences (``DependencyParser(label_epochs=0)``, default arc model), which
is what :meth:`omkl.DependencyParser.score` reports. With
``--parser-trees``, it also counts the heads of those trees to which the
label stage gives a relation twice that occurs at most once per head in
the training trees (for at least 99.5% of at least 20 heads), and how many
of them have a wrongly attached word among those dependents. The test file
is never read.

Example::

    python studies/parser_label_study.py --max-train 0 --parser-trees \\
        --configs 0.1:3,0.05:5,0.03:8,0.02:10,0.01:15
"""

from __future__ import annotations

import collections
import os
import random
import time

import _ewt

from omkl import _omkl
from omkl.parsing import DependencyParser, attachment_scores, read_conllu


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    default = f"0.02:{DependencyParser().label_epochs}"
    ap.add_argument("--configs", default=default, help="eta:epochs,... of the label stage")
    ap.add_argument("--lam", type=float, default=1e-6, help="ℓ2² λ of the label stage")
    ap.add_argument(
        "--parser-trees",
        action="store_true",
        help="also score the label stage on the dev trees of a parser trained on the same "
        "sentences",
    )
    args = _ewt.parse_dev_only(ap)

    train = _omkl.ParseCorpus.from_path(args.train)
    dev = _omkl.ParseCorpus.from_path(args.dev)
    n = len(train) if not args.max_train else min(args.max_train, len(train))
    gold = [list(h or []) for h in dev.gold_heads()]
    trees = None
    if args.parser_trees:
        parser = DependencyParser(label_epochs=0).fit(read_conllu(args.train)[:n])
        trees, _ = parser.parse_with_labels(args.dev)
    print(
        "| train sentences | eta | epochs | relations | dev label acc. (gold heads) "
        "| dev UAS | dev LAS | peak RSS growth MB | state MB | train CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec in args.configs.split(","):
        eta_s, epochs_s = spec.split(":")
        eta, epochs = float(eta_s), int(epochs_s)
        rss0 = _ewt.peak_rss_mb()
        lab = _omkl.ArcLabelerCore(eta, args.lam)
        rng = random.Random(0)
        t0 = time.process_time()
        for _ in range(epochs):
            order = list(range(n))
            rng.shuffle(order)
            lab.fit_epoch(train, order)
        cpu = time.process_time() - t0
        grown = _ewt.peak_rss_mb() - rss0
        pred = lab.predict_corpus(dev, gold)
        acc = attachment_scores(gold, gold, dev.upos(), dev.deprels(), pred)["las"]
        uas = las = "n/a"
        if trees is not None:
            s = attachment_scores(
                gold, trees, dev.upos(), dev.deprels(), lab.predict_corpus(dev, trees)
            )
            uas, las = f"{s['uas']:.2f}", f"{s['las']:.2f}"
        state = len(lab.__getstate__())
        print(
            f"| {n} | {eta:g} | {epochs} | {len(lab.labels())} | {acc:.2f} | {uas} | {las} | "
            f"{grown:.0f} | {state / 2**20:.1f} | {cpu:.0f} |",
            flush=True,
        )
    if trees is not None:
        print(duplicates(train, dev, trees, lab.predict_corpus(dev, trees)))
    print(f"load average {os.getloadavg()[0]:.2f}")


def duplicates(
    train: _omkl.ParseCorpus,
    dev: _omkl.ParseCorpus,
    trees: list[list[int]],
    labels: list[list[str]],
) -> str:
    """How many heads of `trees` get a once-per-head relation twice in
    `labels`, and how many of those have a wrongly attached word among them."""
    having: collections.Counter[str] = collections.Counter()
    twice: collections.Counter[str] = collections.Counter()
    for hs, rels in zip(train.gold_heads(), train.deprels(), strict=True):
        per_head = collections.Counter(zip(hs or [], rels, strict=True))
        having.update(r for _, r in per_head)
        twice.update(r for (_, r), c in per_head.items() if c > 1)
    single = {r for r, c in having.items() if c >= 20 and twice[r] <= 0.005 * c}
    heads = wrong = 0
    for gold, hs, rels in zip(dev.gold_heads(), trees, labels, strict=True):
        groups: dict[tuple[int, str], list[int]] = collections.defaultdict(list)
        for i, (h, r) in enumerate(zip(hs, rels, strict=True)):
            if r in single:
                groups[(h, r)].append(i)
        for (h, _), words in groups.items():
            if len(words) > 1:
                heads += 1
                wrong += any((gold or [])[i] != h for i in words)
    return (
        f"heads given a once-per-head relation twice: {heads}, "
        f"with a wrongly attached word among those dependents: {wrong}"
    )


if __name__ == "__main__":
    main()
