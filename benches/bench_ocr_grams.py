"""OCR Gram matrices: omkl's Rust kernels against the numpy formulas.

Times the training-fold Gram matrices (symmetric, one per base kernel) and a
test-vs-support block (4096 test inputs against the fold's inputs) as
computed by numpy (one shared f32 GEMM of inner products, then the
elementwise maps of ``kernel_from_dots``), by ``omkl.kernels.gram_many``
(one shared GEMM, all maps fused into the tiles) and by one
``omkl.kernels.gram`` call per kernel, in the same run, the contenders
taking turns; prints seconds (best of ``--repeat``), the numpy/omkl ratios
(> 1: omkl faster) and the load average.

    python benches/bench_ocr_grams.py --fold 0
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

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
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
