"""Parser throughput on UD English-EWT (reads ``../shared/data/ud-english-ewt``).

Prints, each against a peer measured in the same run:

* CoNLL-U reading: omkl against a plain Python reader (ratio);
* training: sentences/s of one epoch of the default parser (first-pass arc
  pruner, table sizes fitted to feature counts) against the same parser
  without pruning and with the original table sizes (ratio), wall and CPU;
* parsing: sentences/s over the dev file (features, scores and decoding, in
  parallel) and, on the first ``--decode-sentences`` dev sentences, decoding
  the parser's own score matrices with omkl's Chu-Liu-Edmonds against
  networkx's ``maximum_spanning_arborescence`` (ratio), plus our full parse
  against networkx's decoding alone;
* the first-pass pruner's recall of dev gold arcs, table sizes and peak memory.

The machine is shared: CPU seconds (``time.process_time``) are printed next to
wall seconds, and the load average at the start and end.

    PYTHONPATH=python python benches/bench_parsing.py --train-sentences 1000
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import time

import networkx as nx
import numpy as np

from omkl import _omkl
from omkl.decode import chu_liu_edmonds
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


def timed(f):  # type: ignore[no-untyped-def]
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - w, time.process_time() - c


def train_epoch(p: DependencyParser, corpus: _omkl.ParseCorpus, n: int) -> tuple[float, float]:
    """Sizing and first pass (untimed), then one timed arc epoch."""
    if p.max_table_bits < 18:
        p._core.fit_table_sizes(corpus, p.slots_per_feature, p.max_table_bits)
    if p.prune_k:
        p._core.fit_epoch(corpus, list(range(len(corpus))), None, True)
    _, wall, cpu = timed(lambda: p._core.fit_epoch(corpus, list(range(n))))
    return n / wall, n / cpu


def nx_decode(s: np.ndarray) -> float:
    n = s.shape[0] - 1
    g = nx.DiGraph()
    g.add_weighted_edges_from(
        (h, m, float(s[h, m])) for h in range(n + 1) for m in range(1, n + 1) if h != m
    )
    t = nx.maximum_spanning_arborescence(g)
    return float(sum(s[h, m] for h, m in t.edges()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-sentences", type=int, default=1000)
    ap.add_argument("--decode-sentences", type=int, default=200)
    args = ap.parse_args()
    print(f"load average at start {os.getloadavg()}")
    train = DATA / "en_ewt-ud-train.conllu"
    dev = DATA / "en_ewt-ud-dev.conllu"
    corpus, ours, _ = timed(lambda: _omkl.ParseCorpus.from_path(train))
    n_py, peer, _ = timed(lambda: python_reader(train))
    assert n_py == len(corpus)
    print(
        f"read {len(corpus)} sentences: omkl {ours:.2f} s, python {peer:.2f} s, "
        f"ratio {peer / ours:.1f}x"
    )
    n = min(args.train_sentences, len(corpus))
    p = DependencyParser()
    base = DependencyParser(prune_k=0, max_table_bits=18, slots_per_feature=1e9)
    w_ours, c_ours = train_epoch(p, corpus, n)
    w_base, c_base = train_epoch(base, corpus, n)
    n_t = len(p.template_names_)
    print(
        f"train ({n_t} templates, {n} sentences, 1 epoch): {w_ours:.0f} sent/s wall, "
        f"{c_ours:.0f} sent/CPU-s; unpruned full-size tables {w_base:.0f} wall, "
        f"{c_base:.0f} CPU; ratio {w_ours / w_base:.2f}x wall, {c_ours / c_base:.2f}x CPU"
    )
    dev_corpus = _omkl.ParseCorpus.from_path(dev)
    _, wall, cpu = timed(lambda: p._core.predict_corpus(dev_corpus))
    print(
        f"parse {len(dev_corpus)} dev sentences (rayon): {len(dev_corpus) / wall:.0f} sent/s "
        f"wall, {len(dev_corpus) / cpu:.0f} sent/CPU-s"
    )
    print(
        f"first-pass pruner (k = {p.prune_k}) recall of dev gold arcs {p.pruner_recall(dev):.2f}%"
    )
    mats = [
        np.array(m).reshape(int(round(len(m) ** 0.5)), -1)
        for m in p._core.score_matrices(dev_corpus)[: args.decode_sentences]
    ]
    _, w_cle, _ = timed(lambda: [chu_liu_edmonds(m) for m in mats])
    vals, w_nx, _ = timed(lambda: [nx_decode(m) for m in mats])
    ours_vals = [chu_liu_edmonds(m)[1] for m in mats]
    assert np.allclose(ours_vals, vals, rtol=1e-9, atol=1e-6)
    k = len(mats)
    print(
        f"decode {k} score matrices: omkl CLE {k / w_cle:.0f} sent/s, networkx "
        f"{k / w_nx:.0f} sent/s, ratio {w_nx / w_cle:.1f}x; full omkl parse "
        f"{len(dev_corpus) / wall:.0f} sent/s vs networkx decoding alone "
        f"{k / w_nx:.0f} sent/s, ratio {(len(dev_corpus) / wall) / (k / w_nx):.1f}x"
    )
    sizes = p.table_sizes_
    print(
        f"table slots {sum(sizes)} (min {min(sizes)}, max {max(sizes)}), 12 bytes/slot "
        f"= {sum(sizes) * 12 / 2**20:.0f} MB; unpruned baseline {sum(base.table_sizes_)} slots"
    )
    print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
