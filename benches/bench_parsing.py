"""Parser throughput on UD English-EWT (reads ``../shared/data/ud-english-ewt``).

Prints: CoNLL-U reading time against a pure-Python reader measured in the same
run (ratio), training and parsing sentences per second, and peak memory.

    PYTHONPATH=python python benches/bench_parsing.py --train-sentences 1000
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import time

from omkl import _omkl
from omkl.parsing import DependencyParser

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def python_reader(path: pathlib.Path) -> int:
    """A plain Python CoNLL-U reader keeping the same columns (the peer)."""
    sents, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if cur:
                    sents.append(cur)
                    cur = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if "-" in cols[0] or "." in cols[0]:
                continue
            cur.append((cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]))
    if cur:
        sents.append(cur)
    return len(sents)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-sentences", type=int, default=1000)
    ap.add_argument("--templates", type=int, default=312)
    args = ap.parse_args()
    train = DATA / "en_ewt-ud-train.conllu"
    dev = DATA / "en_ewt-ud-dev.conllu"
    t0 = time.perf_counter()
    corpus = _omkl.ParseCorpus.from_path(train)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_py = python_reader(train)
    peer = time.perf_counter() - t0
    assert n_py == len(corpus)
    print(
        f"read {len(corpus)} sentences: omkl {ours:.2f} s, python {peer:.2f} s, "
        f"ratio {peer / ours:.1f}x"
    )
    p = DependencyParser(templates=list(range(args.templates)))
    n = min(args.train_sentences, len(corpus))
    t0 = time.perf_counter()
    p._core.fit_epoch(corpus, list(range(n)))
    dt = time.perf_counter() - t0
    print(f"train: {n / dt:.0f} sentences/s ({args.templates} templates)")
    dev_corpus = _omkl.ParseCorpus.from_path(dev)
    t0 = time.perf_counter()
    p._core.predict_corpus(dev_corpus)
    dt = time.perf_counter() - t0
    print(f"parse: {len(dev_corpus) / dt:.0f} sentences/s")
    sizes = p.table_sizes_
    print(f"table slots {sum(sizes)} (min {min(sizes)}, max {max(sizes)}), 12 bytes/slot")
    print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
