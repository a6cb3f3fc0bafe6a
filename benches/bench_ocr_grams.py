"""OCR Gram matrices: omkl's Rust kernels against the numpy formulas.

Times the training-fold Gram matrices (symmetric, one per base kernel) and a
test-vs-support block (4096 test inputs against the fold's inputs) as
computed by numpy (one shared f32 GEMM of inner products, then the
elementwise maps of ``kernel_from_dots``), by ``omkl.kernels.gram_many``
(one shared GEMM, all maps fused into the tiles) and by one
``omkl.kernels.gram`` call per kernel, in the same run, the contenders
taking turns; prints seconds (best of ``--repeat``), the numpy/omkl ratios
(> 1: omkl faster) and the load average.

The B1-spline rows (h for about 95% zeros, from ``omkl.kernels.b1_bandwidth``)
time ``omkl.kernels.sparse_gram`` (CSR, never dense) against numpy computing
the same matrix densely (one f32 GEMM, then the ``kernel_from_dots`` map)
and thresholding it into the same CSR arrays, for the fold's Gram matrix and
the test block; the two CSR matrices are compared (entries present in one
only, and the largest value difference).

    python benches/bench_ocr_grams.py --fold 0
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse

from omkl import kernels
from omkl.experiments.ocr import Corpus, base_kernel, kernel_from_dots


def race(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best wall time of each function over ``repeat`` rounds, taking turns."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            times[i] = min(times[i], time.perf_counter() - t)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fold", type=int, default=0)
    p.add_argument("--bases", default="L,Q,G")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    corpus = Corpus.load()
    words = np.flatnonzero(corpus.folds == a.fold)
    inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    Xs, sq = np.ascontiguousarray(corpus.X[inputs]), corpus.sq[inputs]
    others = np.setdiff1d(np.arange(len(corpus.X)), inputs)[:4096]
    Xt, sqt = np.ascontiguousarray(corpus.X[others]), corpus.sq[others]
    bases = a.bases.split(",")
    ks = {b: base_kernel(b, 8.0) for b in bases}

    def np_fold() -> None:
        D = Xs @ Xs.T
        for b in bases:
            kernel_from_dots(b, D, sq, sq, 8.0)

    def np_test() -> None:
        D = Xt @ Xs.T
        for b in bases:
            kernel_from_dots(b, D, sqt, sq, 8.0)

    kl = list(ks.values())
    cases = {
        f"fold Gram {len(Xs)}x{len(Xs)}": (
            np_fold,
            lambda: kernels.gram_many(Xs, kernels=kl),
            lambda: [kernels.gram(Xs, kernel=k) for k in kl],
        ),
        f"test block {len(Xt)}x{len(Xs)}": (
            np_test,
            lambda: kernels.gram_many(Xt, Xs, kernels=kl),
            lambda: [kernels.gram(Xt, Xs, kernel=k) for k in kl],
        ),
    }
    print(f"OCR fold {a.fold}, base kernels {'+'.join(bases)}, best of {a.repeat}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{'case':<26}{'numpy s':>9}{'many s':>9}{'single s':>10}"
        f"{'numpy/many':>12}{'numpy/single':>14}"
    )
    for name, (f_np, f_many, f_single) in cases.items():
        t_np, t_many, t_single = race([f_np, f_many, f_single], a.repeat)
        print(
            f"{name:<26}{t_np:>9.3f}{t_many:>9.3f}{t_single:>10.3f}"
            f"{t_np / t_many:>11.2f}x{t_np / t_single:>13.2f}x"
        )
    t = time.perf_counter()
    h = kernels.b1_bandwidth(Xs, zero_fraction=0.95)
    t_h = time.perf_counter() - t
    kb = base_kernel("B", h)
    print(f"\nB1-spline, h = {h:.4f} (omkl b1_bandwidth in {t_h:.3f}s)")
    print(f"{'case':<26}{'numpy s':>9}{'omkl s':>9}{'numpy/omkl':>12}{'zeros':>8}  agreement")
    b1_cases = {
        f"B1 fold CSR {len(Xs)}x{len(Xs)}": (Xs, sq, None),
        f"B1 test CSR {len(Xt)}x{len(Xs)}": (Xt, sqt, Xt),
    }
    for name, (Xa, sqa, Y) in b1_cases.items():

        def np_b1(Xa: np.ndarray = Xa, sqa: np.ndarray = sqa) -> tuple[np.ndarray, ...]:
            return dense_to_csr(kernel_from_dots("B", Xa @ Xs.T, sqa, sq, h))

        def om_b1(Y: np.ndarray | None = Y) -> kernels.SparseGram:
            return kernels.sparse_gram(Xs if Y is None else Y, None if Y is None else Xs, kb)

        t_np, t_om = race([np_b1, om_b1], a.repeat)
        S = om_b1()
        ours = S.to_scipy()
        ptr, idx, val = np_b1()
        theirs = scipy.sparse.csr_matrix((val, idx, ptr), shape=S.shape)
        only = (ours != 0).astype(np.int8) - (theirs != 0).astype(np.int8)
        diff = abs(ours - theirs).max() if S.nnz else 0.0
        print(
            f"{name:<26}{t_np:>9.3f}{t_om:>9.3f}{t_np / t_om:>11.2f}x"
            f"{100 * (1 - S.density):>7.2f}%  entries in one only: {only.count_nonzero()}, "
            f"max|diff| {diff:.1e}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def dense_to_csr(K: np.ndarray) -> tuple[np.ndarray, ...]:
    """CSR arrays ``(indptr, indices, values)`` of the non-zeros of ``K``."""
    rows, cols = np.nonzero(K)
    indptr = np.zeros(K.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=K.shape[0]), out=indptr[1:])
    return indptr, cols, K[rows, cols]


if __name__ == "__main__":
    main()
