"""Dev-set accuracy and memory of the parser's label stage (EWT dev only).

Trains the relation classifier of :class:`omkl.DependencyParser` (its label
stage, a multiclass Alg. 1 learner) on the gold trees of the first
``--max-train`` training sentences, once per ``eta:epochs`` configuration,
then prints its label accuracy on the dev file's gold trees (non-punctuation
words, i.e. LAS with gold heads), the growth of the peak resident memory
while it trained (a measure of the size of its weight table) and, with
``--parser-trees``, the dev LAS on the trees of a parser trained on the same
sentences (``DependencyParser(label_epochs=0)``, default arc model), which
is what :meth:`omkl.DependencyParser.score` reports. ``--decoders`` scores
each trained labeler once per decoder of its relations (one row each):
``exact`` (relations that occurred at most once per head in training go
to at most one dependent of a head, the best assignment), ``soft:COST``
(the same with a cost per extra use instead of a ban),
``greedy`` (the best-scoring conflict fixed first), ``argmax`` (each arc on
its own, only the root's relation kept to the arc from the root) and
``independent`` (each arc on its own, the default). ``--stack-folds K`` adds a row for
a stacked second labeler that also reads the first labeler's relations of
the same tree (the arc's own, the head's, the siblings', the modifier's
dependents'), trained on first-pass relations predicted by jackknifing over
K parts of the training set (the first decoder's). The test file is never
read.

Example::

    python studies/parser_label_study.py --max-train 0 --parser-trees \\
        --configs 0.1:3,0.05:5,0.03:8,0.02:10,0.01:15
    python studies/parser_label_study.py --max-train 0 --parser-trees \
        --decoders exact,greedy,argmax,independent
"""

from __future__ import annotations

import argparse
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
    ap.add_argument(
        "--decoders",
        default="independent",
        help="decoders of the relations to score, comma-separated "
        "(independent, argmax, exact, soft:COST, greedy)",
    )
    ap.add_argument(
        "--stack-folds", type=int, default=0, help="parts of the jackknife of a stacked labeler"
    )
    args = _ewt.parse_dev_only(ap)

    train = _omkl.ParseCorpus.from_path(args.train)
    dev = _omkl.ParseCorpus.from_path(args.dev)
    n = len(train) if not args.max_train else min(args.max_train, len(train))
    gold = [list(h or []) for h in dev.gold_heads()]
    train_gold = [list(h or []) for h in train.gold_heads()]
    trees = None
    if args.parser_trees:
        parser = DependencyParser(label_epochs=0).fit(read_conllu(args.train)[:n])
        trees, _ = parser.parse_with_labels(args.dev)
    print(
        "| train sentences | eta | epochs | decoder | relations | dev label acc. (gold heads) "
        "| dev UAS | dev LAS | peak RSS growth MB | state MB | train CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
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
        state = len(lab.__getstate__())
        for decode in args.decoders.split(","):
            pred = lab.predict_corpus(dev, gold, decode)
            acc = attachment_scores(gold, gold, dev.upos(), dev.deprels(), pred)["las"]
            uas = las = "n/a"
            if trees is not None:
                s = attachment_scores(
                    gold, trees, dev.upos(), dev.deprels(), lab.predict_corpus(dev, trees, decode)
                )
                uas, las = f"{s['uas']:.2f}", f"{s['las']:.2f}"
            print(
                f"| {n} | {eta:g} | {epochs} | {decode} | {len(lab.labels())} | {acc:.2f} | "
                f"{uas} | {las} | {grown:.0f} | {state / 2**20:.1f} | {cpu:.0f} |",
                flush=True,
            )
        if args.stack_folds:
            stack_row(args, train, dev, n, eta, epochs, gold, train_gold, trees, lab)
    print(f"load average {os.getloadavg()[0]:.2f}")


def stack_row(
    args: argparse.Namespace,
    train: _omkl.ParseCorpus,
    dev: _omkl.ParseCorpus,
    n: int,
    eta: float,
    epochs: int,
    gold: list[list[int]],
    train_gold: list[list[int]],
    trees: list[list[int]] | None,
    first: _omkl.ArcLabelerCore,
) -> None:
    """Prints the row of a stacked labeler over `first` (jackknifed)."""
    decode = args.decoders.split(",")[0]
    k = args.stack_folds
    t0 = time.process_time()
    jack: list[list[str]] = [["_"] * len(h) for h in train_gold]
    for fold in range(k):
        part = _omkl.ArcLabelerCore(eta, args.lam)
        rng = random.Random(fold + 1)
        rest = [i for i in range(n) if i % k != fold]
        for _ in range(epochs):
            rng.shuffle(rest)
            part.fit_epoch(train, rest)
        pred = part.predict_corpus(train, train_gold, decode)
        for i in range(fold, n, k):
            jack[i] = pred[i]
    second = _omkl.ArcLabelerCore(eta, args.lam)
    rng = random.Random(0)
    for _ in range(epochs):
        order = list(range(n))
        rng.shuffle(order)
        second.fit_epoch(train, order, jack)
    cpu = time.process_time() - t0
    prev = first.predict_corpus(dev, gold, decode)
    pred = second.predict_corpus(dev, gold, decode, prev)
    acc = attachment_scores(gold, gold, dev.upos(), dev.deprels(), pred)["las"]
    uas = las = "n/a"
    if trees is not None:
        prev = first.predict_corpus(dev, trees, decode)
        labels = second.predict_corpus(dev, trees, decode, prev)
        s = attachment_scores(gold, trees, dev.upos(), dev.deprels(), labels)
        uas, las = f"{s['uas']:.2f}", f"{s['las']:.2f}"
    print(
        f"| {n} | {eta:g} | {epochs} | {decode}, stacked ({k} parts) | {len(second.labels())} "
        f"| {acc:.2f} | {uas} | {las} | | {len(second.__getstate__()) / 2**20:.1f} | {cpu:.0f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
