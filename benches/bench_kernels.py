"""Benchmark of omkl's kernels against numpy, measured in the same run.

* Dense Gram of n x n inputs of dimension d (binary pixels, like the OCR
  task) for the Gaussian and the normalised quadratic kernels: omkl (float32
  GEMM + map, Rust) against numpy's BLAS ``X @ X.T`` followed by the same
  elementwise map, in float32 and float64.
* Scoring ``K @ alpha`` (alpha: n x labels) with a B1-spline Gram matrix
  with about 95% zeros: omkl's CSR scoring against dense scoring with numpy
  (BLAS) and against scipy's CSR product.
* Bytes of a Gram row cache and of the support store, and the peak RSS.

Run from the repository root (with omkl importable)::

    python benches/bench_kernels.py            # n=5000, d=128
    python benches/bench_kernels.py --n 2000   # quicker

Ratios > 1 mean omkl is faster. Times are the best of ``--repeat`` rounds in which the
contenders take turns.
"""

from __future__ import annotations

import argparse
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


def race(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best wall time of each function over ``repeat`` rounds, the functions
    taking turns within each round so that drifting machine load affects
    them alike."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
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
    K = S.to_dense().astype(np.float64)
    csr = S.to_scipy().astype(np.float64)
    alpha = rng.normal(size=(n, args.labels))
    want = K @ alpha
    err = np.max(np.abs(S.scores(alpha) - want))
    rs = max(r, 10)  # cheap calls: more runs against the noise of a shared machine
    t_sparse, t_dense, t_scipy = race(
        [lambda: S.scores(alpha), lambda: K @ alpha, lambda: csr @ alpha], rs
    )
    print(
        f"h={h:.4f}: zeros {100 * (1 - S.density):.2f}%, nnz {S.nnz}, "
        f"CSR {S.nbytes / 2**20:.1f} MiB vs dense f32 {n * n * 4 / 2**20:.1f} MiB, "
        f"built in {t_build:.3f}s (never dense)"
    )
    print(f"omkl sparse scores     {t_sparse * 1e3:9.2f} ms   max|diff| vs dense = {err:.1e}")
    print(f"numpy dense K @ alpha  {t_dense * 1e3:9.2f} ms   ratio {t_dense / t_sparse:6.2f}x")
    print(f"scipy CSR @ alpha      {t_scipy * 1e3:9.2f} ms   ratio {t_scipy / t_sparse:6.2f}x")
    print("\n== Memory")
    budget = 64 << 20
    cache = kernels.GramCache(d, kernel="gaussian", sigma2=5.0, budget_bytes=budget)
    stream = X[rng.integers(0, n, size=2 * n)]  # inputs repeat across rounds
    ids = [cache.add(x) for x in stream]
    t_rows = best(lambda: [cache.row(i) for i in ids[:2000]], 1)
    s = cache.stats()
    print(
        f"support store: {s['support_len']} distinct of {len(stream)} inputs, "
        f"{s['support_bytes'] / 2**20:.2f} MiB"
    )
    print(
        f"Gram row cache: {s['entries']} rows, {s['cache_bytes'] / 2**20:.2f} MiB "
        f"of {budget / 2**20:.0f} MiB budget; hits {s['hits']}, misses {s['misses']}, "
        f"evictions {s['evictions']}; 2000 row requests in {t_rows:.3f}s"
    )
    print(
        f"peak RSS of this process: {peak_rss_mib():.0f} MiB "
        f"(dense f64 n x n alone: {n * n * 8 / 2**20:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
