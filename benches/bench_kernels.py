"""Benchmark of omkl's kernels against numpy, measured in the same run.

* Dense Gram of n x n inputs of dimension d (binary pixels, like the OCR
  task) for the Gaussian and the normalised quadratic kernels: omkl (float32
  GEMM + map, Rust) against numpy's BLAS ``X @ X.T`` followed by the same
  elementwise map, in float32 and float64.
* Scoring ``K @ alpha`` (alpha: n x labels) with a B1-spline Gram matrix
  with about 95% zeros: omkl's CSR scoring (float32 values, u32 column
  indices, all labels of a row in one pass, rows in parallel; also with
  label-major ``labels x n`` coefficients) against dense BLAS scoring of the
  same shapes with numpy (float32 ``K @ A``, float64 ``K @ A``, and a
  float32 gemv ``K @ a`` against omkl's one-label scores) and against
  scipy's CSR product.
* Bytes of the dense Gram matrix, the CSR Gram matrix, a Gram row cache in
  use and the support store, and the peak RSS.

Run from the repository root (with omkl importable)::

    python benches/bench_kernels.py            # n=5000, d=128
    python benches/bench_kernels.py --n 2000   # quicker

Ratios > 1 mean omkl is faster. Times are the best of ``--repeat`` rounds in which the
contenders take turns.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable

import numpy as np

from omkl import kernels


def best(f: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


#: Seconds between timed calls (see :func:`race`).
PAUSE = 0.2


def race(fns: list[Callable[[], object]], repeat: int, pause: float = PAUSE) -> list[float]:
    """Best wall time of each function over ``repeat`` rounds, the functions
    taking turns within each round so that drifting machine load affects
    them alike. Each call starts ``pause`` seconds after the previous one
    ended: after a threaded call, OpenBLAS keeps its worker threads
    busy-waiting for a while, and on a 2-core machine they would slow
    whichever call comes next."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            time.sleep(pause)
            t = time.perf_counter()
            f()
            times[i] = min(times[i], time.perf_counter() - t)
    return times


def numpy_gaussian(X: np.ndarray, sigma2: float, Y: np.ndarray | None = None) -> np.ndarray:
    if Y is None:
        Y = X  # numpy then uses a symmetric rank-k update (syrk)
    K = X @ Y.T
    K *= -2.0
    K += np.einsum("ij,ij->i", X, X)[:, None]
    K += np.einsum("ij,ij->i", Y, Y)[None, :]
    np.maximum(K, 0.0, out=K)
    K *= -1.0 / (2.0 * sigma2)
    return np.exp(K, out=K)


def numpy_normalised_quadratic(X: np.ndarray) -> np.ndarray:
    K = X @ X.T
    g = 1.0 / np.sqrt(np.einsum("ij,ij->i", X, X))
    K *= g[:, None]
    K *= g[None, :]
    return np.square(K, out=K)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="number of inputs")
    parser.add_argument("--d", type=int, default=128, help="input dimension")
    parser.add_argument("--labels", type=int, default=26, help="labels (columns of alpha)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n, d, r = args.n, args.d, args.repeat
    # Binary "pixels": noisy copies of 26 prototypes.
    protos = rng.random((26, d)) < 0.3
    X = (protos[rng.integers(0, 26, size=n)] ^ (rng.random((n, d)) < 0.1)).astype(np.float32)
    X64 = X.astype(np.float64)
    Y, Y64 = X.copy(), X64.copy()  # same values, distinct buffers: a rectangular product
    print(f"inputs: {n} x {d} binary, labels: {args.labels}, best of {r} runs")
    print(f"load average before: {os.getloadavg()[0]:.2f}")

    print("\n== Dense Gram matrix (n x n)")
    print(
        f"{'kernel':<24}{'omkl f32':>10}{'numpy f32':>11}{'numpy f64':>11}"
        f"{'f32 ratio':>11}{'f64 ratio':>11}"
    )
    cases = [
        (
            "gaussian sigma2=5",
            lambda: kernels.gram(X, kernel="gaussian", sigma2=5.0),
            lambda: numpy_gaussian(X, 5.0),
            lambda: numpy_gaussian(X64, 5.0),
        ),
        (
            "quadratic normalised",
            lambda: kernels.gram(X, kernel="polynomial", degree=2, offset=0.0, normalize=True),
            lambda: numpy_normalised_quadratic(X),
            lambda: numpy_normalised_quadratic(X64),
        ),
        (
            "gaussian X vs Y (rect.)",
            lambda: kernels.gram(X, Y, kernel="gaussian", sigma2=5.0),
            lambda: numpy_gaussian(X, 5.0, Y),
            lambda: numpy_gaussian(X64, 5.0, Y64),
        ),
    ]
    for name, ours, np32, np64 in cases:
        diff = np.max(np.abs(ours().astype(np.float64) - np64()))
        t_o, t_32, t_64 = race([ours, np32, np64], r)
        print(
            f"{name:<24}{t_o:>9.3f}s{t_32:>10.3f}s{t_64:>10.3f}s"
            f"{t_32 / t_o:>10.2f}x{t_64 / t_o:>10.2f}x   max|diff|={diff:.1e}"
        )

    print("\n== Scoring K @ alpha with a B1-spline Gram matrix")
    h = kernels.b1_bandwidth(X, zero_fraction=0.95)
    t_build = best(lambda: kernels.sparse_gram(X, kernel="b1_spline", h=h), 1)
    S = kernels.sparse_gram(X, kernel="b1_spline", h=h)
    K32 = S.to_dense()
    K = K32.astype(np.float64)
    csr = S.to_scipy().astype(np.float64)
    alpha = rng.normal(size=(n, args.labels))
    A32 = alpha.astype(np.float32)
    alpha_lm = np.ascontiguousarray(alpha.T)
    a1, a1_32 = np.ascontiguousarray(alpha[:, :1]), alpha[:, 0].astype(np.float32)
    want = K @ alpha
    err = np.max(np.abs(S.scores(alpha) - want))
    err_lm = np.max(np.abs(S.scores_label_major(alpha_lm) - want.T))
    rs = max(r, 10)  # cheap calls: more runs against the noise of a shared machine
    err32 = np.max(np.abs(S.scores_f32(A32) - want))
    t_sp, t_32, t_lm, t_d32, t_d64, t_scipy, t_sp1, t_gemv = race(
        [
            lambda: S.scores(alpha),
            lambda: S.scores_f32(A32),
            lambda: S.scores_label_major(alpha_lm),
            lambda: K32 @ A32,
            lambda: K @ alpha,
            lambda: csr @ alpha,
            lambda: S.scores(a1),
            lambda: K32 @ a1_32,
        ],
        rs,
    )
    print(
        f"h={h:.4f}: zeros {100 * (1 - S.density):.2f}%, nnz {S.nnz}, "
        f"built in {t_build:.3f}s (never dense)"
    )
    print(f"{'':<36}{'time':>11}   ratio (> 1: omkl CSR faster)")
    print(f"{'omkl CSR scores, ' + str(args.labels) + ' labels':<36}{t_sp * 1e3:8.2f} ms")
    print(f"  max|diff| vs float64 dense = {err:.1e} (label-major {err_lm:.1e})")
    print(f"{'omkl CSR scores, label-major':<36}{t_lm * 1e3:8.2f} ms")
    for name, t in (
        ("numpy dense f32 K @ A (BLAS)", t_d32),
        ("numpy dense f64 K @ A (BLAS)", t_d64),
        ("scipy CSR f64 @ A", t_scipy),
    ):
        print(f"{name:<36}{t * 1e3:8.2f} ms   {t / t_sp:6.2f}x")
    print(f"{'omkl CSR scores_f32 (all float32)':<36}{t_32 * 1e3:8.2f} ms")
    print(f"  max|diff| vs float64 dense = {err32:.1e}")
    print(f"{'numpy dense f32 K @ A (BLAS)':<36}{t_d32 * 1e3:8.2f} ms   {t_d32 / t_32:6.2f}x")
    print(f"{'omkl CSR scores, 1 label':<36}{t_sp1 * 1e3:8.2f} ms")
    print(f"{'numpy dense f32 gemv K @ a':<36}{t_gemv * 1e3:8.2f} ms   {t_gemv / t_sp1:6.2f}x")

    print("\n== Memory")
    budget = 64 << 20
    cache = kernels.GramCache(d, kernel="gaussian", sigma2=5.0, budget_bytes=budget)
    stream = X[rng.integers(0, n, size=2 * n)]  # inputs repeat across rounds
    ids = [cache.add(x) for x in stream]
    t_rows = best(lambda: [cache.row(i) for i in ids[:2000]], 1)
    s = cache.stats()
    store = kernels.SupportStore(d)
    for x in stream:
        store.add(x)
    mib = 2**20
    print(f"dense f32 Gram n x n:  {n * n * 4 / mib:8.2f} MiB")
    print(f"CSR Gram (95% zeros):  {S.nbytes / mib:8.2f} MiB (u32 indices + f32 values + indptr)")
    print(
        f"CSR scoring layout:    {S.scoring_nbytes / mib:8.2f} MiB "
        "(renumbered copy, u16 indices, padded coefficient buffers)"
    )
    print(
        f"SupportStore:          {store.nbytes / mib:8.2f} MiB "
        f"({len(store)} distinct of {len(stream)} inputs)"
    )
    print(
        f"GramCache in use:      {(s['cache_bytes'] + s['support_bytes']) / mib:8.2f} MiB "
        f"(rows {s['cache_bytes'] / mib:.2f} MiB of a {budget / mib:.0f} MiB budget, "
        f"{s['entries']} rows; support {s['support_bytes'] / mib:.2f} MiB)"
    )
    print(
        f"  hits {s['hits']}, misses {s['misses']}, evictions {s['evictions']}; "
        f"2000 row requests in {t_rows:.3f}s"
    )
    print(
        f"peak RSS of this process: {peak_rss_mib():.0f} MiB "
        f"(dense f64 n x n alone: {n * n * 8 / mib:.0f} MiB)"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
