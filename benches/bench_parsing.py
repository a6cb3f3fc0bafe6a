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
* the first-pass pruner's recall of dev gold arcs at the parser's ``prune_k``
  and for k = 1..20 (from the rank of each gold head), table sizes and peak
  memory.

The machine is shared: CPU seconds (``time.process_time``) are printed next to
wall seconds, and the load average at the start and end. The last line sums
up wall sentences/s of training and parsing (the primary figures, against
the targets of 1,000 and 3,000 on two cores) next to CPU sentences/s, the
bytes of the weight tables and the peak resident memory.

    PYTHONPATH=python python benches/bench_parsing.py --train-sentences 2000 \
        --decode-sentences 1000 [--prune-k 10 --pruner-epochs 3]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource

import numpy as np
from _common import timed
from bench_decode import networkx_cle

from omkl import _omkl
from omkl.decode import chu_liu_edmonds
from omkl.parsing import DependencyParser, attachment_scores

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


def train_epoch(
    p: DependencyParser, corpus: _omkl.ParseCorpus, n: int
) -> tuple[float, float, float, float]:
    """Sizing (untimed), the pruner's first-pass epochs over the whole
    corpus (timed separately: CPU sentences/s per first-pass epoch), then one
    timed arc epoch on ``n`` sentences. Returns wall and CPU sentences/s of
    the arc epoch, then of one first-pass epoch (0 without a pruner)."""
    if p.max_table_bits < 18:
        p._core.fit_table_sizes(corpus, p.slots_per_feature, p.max_table_bits)
    pw = pc = 0.0
    if p.prune_k:
        order = list(range(len(corpus)))
        _, wall, cpu = timed(
            lambda: [p._core.fit_epoch(corpus, order, None, True) for _ in range(p.pruner_epochs)]
        )
        pw, pc = p.pruner_epochs * len(corpus) / wall, p.pruner_epochs * len(corpus) / cpu
    _, wall, cpu = timed(lambda: p._core.fit_epoch(corpus, list(range(n))))
    return n / wall, n / cpu, pw, pc


def recall_at(ranks: list[int], ks: list[int]) -> list[float]:
    """Share (percent) of gold arcs whose rank is below each ``k``."""
    r = np.asarray(ranks)
    return [100.0 * float(np.mean(r < k)) for k in ks]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-sentences", type=int, default=1000)
    ap.add_argument("--decode-sentences", type=int, default=200)
    ap.add_argument("--prune-k", type=int, default=None, help="default: the parser's")
    ap.add_argument("--pruner-epochs", type=int, default=None, help="default: the parser's")
    ap.add_argument(
        "--prune-margin",
        type=float,
        default=None,
        help="keep heads within this first-pass score margin of the best (at most k)",
    )
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
    kw = {}
    if args.prune_k is not None:
        kw["prune_k"] = args.prune_k
    if args.pruner_epochs is not None:
        kw["pruner_epochs"] = args.pruner_epochs
    p = DependencyParser(**kw)
    if args.prune_margin is not None:
        p._core.set_prune_margin(args.prune_margin)
    base = DependencyParser(prune_k=0, max_table_bits=18, slots_per_feature=1e9)
    w_ours, c_ours, pw, pc = train_epoch(p, corpus, n)
    w_base, c_base, _, _ = train_epoch(base, corpus, n)
    n_t = len(p.template_names_)
    print(
        f"first pass (pruner, k = {p.prune_k}, {p.pruner_epochs} epochs over {len(corpus)} "
        f"sentences): {pw:.0f} sent/s wall, {pc:.0f} sent/CPU-s per epoch"
    )
    print(
        f"train ({n_t} templates, {n} sentences, 1 epoch): {w_ours:.0f} sent/s wall, "
        f"{c_ours:.0f} sent/CPU-s; unpruned full-size tables {w_base:.0f} wall, "
        f"{c_base:.0f} CPU; ratio {w_ours / w_base:.2f}x wall, {c_ours / c_base:.2f}x CPU"
    )
    dev_corpus = _omkl.ParseCorpus.from_path(dev)
    # the median of 3 passes over dev (one pass takes about a second)
    passes = sorted(
        (timed(lambda: p._core.predict_corpus(dev_corpus)) for _ in range(3)), key=lambda r: r[1]
    )
    pred, wall, cpu = passes[1]
    print(
        f"parse {len(dev_corpus)} dev sentences (rayon, median of 3 passes): "
        f"{len(dev_corpus) / wall:.0f} sent/s wall, {len(dev_corpus) / cpu:.0f} sent/CPU-s"
    )
    gold = [g or [] for g in dev_corpus.gold_heads()]
    uas = attachment_scores(gold, pred, dev_corpus.upos())["uas"]
    uas_base = attachment_scores(gold, base._core.predict_corpus(dev_corpus), dev_corpus.upos())[
        "uas"
    ]
    print(
        f"dev UAS after that one epoch on {n} sentences: {uas:.2f} (pruned), "
        f"{uas_base:.2f} (unpruned baseline)"
    )
    print(
        f"first-pass pruner (k = {p.prune_k}, margin {p._core.prune_margin()}) recall of dev "
        f"gold arcs {p.pruner_recall(dev):.2f}%"
    )
    ks = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20]
    rec = recall_at(p._core.pruner_gold_ranks(dev_corpus), ks)
    print(
        "pruner recall of dev gold arcs by k: "
        + ", ".join(f"k={k} {r:.2f}%" for k, r in zip(ks, rec, strict=True))
    )
    lens = np.array([len(h or []) for h in dev_corpus.gold_heads()])
    n1 = lens + 1
    for k in sorted({p.prune_k, 5, 8, 10, 20} - {0}):
        kept = np.minimum(n1 - 1, k) * lens
        print(
            f"  k={k}: {kept.sum() / (lens * (n1 - 1)).sum() * 100:.0f}% of dev arcs scored "
            f"by the full model"
        )
    chosen = p._core.prune_margin() or float("inf")
    row = []
    for margin in (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, float("inf")):
        p._core.set_prune_margin(margin)
        hit, gold_n, kept, cand = p._core.pruner_stats(dev_corpus)
        row.append(f"m={margin:g} {100 * hit / gold_n:.2f}% / {100 * kept / cand:.1f}%")
    print(f"  k={p.prune_k} by margin (recall / share of dev arcs kept): " + ", ".join(row))
    p._core.set_prune_margin(chosen)
    mats = [
        np.array(m).reshape(int(round(len(m) ** 0.5)), -1)
        for m in p._core.score_matrices(dev_corpus)[: args.decode_sentences]
    ]
    _, w_cle, _ = timed(lambda: [chu_liu_edmonds(m) for m in mats])
    vals, w_nx, _ = timed(lambda: [networkx_cle(m) for m in mats])
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
        f"(f32 weights read by scoring, f32 averaging state written by updates, f32 averaged "
        f"table read by prediction) = {sum(sizes) * 12 / 2**20:.0f} MB; unpruned baseline "
        f"{sum(base.table_sizes_)} slots"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MB")
    print(f"load average at end {os.getloadavg()}")
    print(
        f"summary: train {w_ours:.0f} sent/s wall ({c_ours:.0f} sent/CPU-s; target 1000 wall), "
        f"parse {len(dev_corpus) / wall:.0f} sent/s wall ({len(dev_corpus) / cpu:.0f} "
        f"sent/CPU-s; target 3000 wall), {n_t} templates, weight tables "
        f"{sum(sizes) * 4} bytes read by scoring ({sum(sizes) * 12} with averaging state and "
        f"averaged copy), peak RSS {peak:.0f} MB, {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
