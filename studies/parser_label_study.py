"""Dev-set accuracy and memory of the parser's label stage (EWT dev only).

Trains the relation classifier of :class:`omkl.DependencyParser` (its label
stage, a multiclass Alg. 1 learner) on the gold trees of the first
``--max-train`` training sentences, then prints its label accuracy on the
dev file's gold trees (non-punctuation words, i.e. LAS with gold heads) and
the growth of the peak resident memory while it trained, a measure of the
size of its weight tables. The test file is never read.

Example::

    python studies/parser_label_study.py --max-train 0 --epochs 10 --eta 0.02
"""

from __future__ import annotations

import os
import random
import time

import _ewt

from omkl import _omkl
from omkl.parsing import DependencyParser, attachment_scores


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    ap.add_argument("--epochs", type=int, default=DependencyParser().label_epochs)
    ap.add_argument("--eta", type=float, default=0.02, help="learning rate of the label stage")
    ap.add_argument("--lam", type=float, default=1e-6, help="ℓ2² λ of the label stage")
    args = _ewt.parse_dev_only(ap)

    train = _omkl.ParseCorpus.from_path(args.train)
    dev = _omkl.ParseCorpus.from_path(args.dev)
    n = len(train) if not args.max_train else min(args.max_train, len(train))
    rss0 = _ewt.peak_rss_mb()
    lab = _omkl.ArcLabelerCore(args.eta, args.lam)
    rng = random.Random(0)
    t0 = time.process_time()
    for _ in range(args.epochs):
        order = list(range(n))
        rng.shuffle(order)
        lab.fit_epoch(train, order)
    cpu = time.process_time() - t0
    grown = _ewt.peak_rss_mb() - rss0
    gold = [list(h or []) for h in dev.gold_heads()]
    pred = lab.predict_corpus(dev, gold)
    las = attachment_scores(gold, gold, dev.upos(), dev.deprels(), pred)["las"]
    state = len(lab.__getstate__())
    print(
        "| train sentences | epochs | relations | dev label acc. (gold heads) "
        "| peak RSS growth MB | state MB | train CPU s |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {n} | {args.epochs} | {len(lab.labels())} | {las:.2f} | {grown:.0f} | "
        f"{state / 2**20:.1f} | {cpu:.0f} |"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
