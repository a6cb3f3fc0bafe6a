"""Dev-set accuracy and memory of the parser's label stage (EWT dev only).

Trains the relation classifier of :class:`omkl.DependencyParser` (its label
stage, a multiclass Alg. 1 learner) on the gold trees of the first
``--max-train`` training sentences, then prints its label accuracy on the
dev file's gold trees (non-punctuation words, i.e. LAS with gold heads) and
the growth of the peak resident memory while it trained, a measure of the
size of its weight tables. The test file is never read.

Example::

    python studies/parser_label_study.py --max-train 0 --epochs 3
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import resource
import time

from omkl import _omkl
from omkl.parsing import attachment_scores

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "ud-english-ewt"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", default=str(DATA / "en_ewt-ud-train.conllu"))
    ap.add_argument("--dev", default=str(DATA / "en_ewt-ud-dev.conllu"))
    ap.add_argument("--max-train", type=int, default=0, help="first N sentences (0: all)")
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    if "test" in os.path.basename(args.dev):
        raise SystemExit("the study must be run on the dev file, not the test file")

    train = _omkl.ParseCorpus.from_path(args.train)
    dev = _omkl.ParseCorpus.from_path(args.dev)
    n = len(train) if not args.max_train else min(args.max_train, len(train))
    rss0 = _rss_mb()
    lab = _omkl.ArcLabelerCore(0.1, 1e-6)
    rng = random.Random(0)
    t0 = time.process_time()
    for _ in range(args.epochs):
        order = list(range(n))
        rng.shuffle(order)
        lab.fit_epoch(train, order)
    cpu = time.process_time() - t0
    grown = _rss_mb() - rss0
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
