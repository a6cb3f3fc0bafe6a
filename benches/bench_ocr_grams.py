"""OCR Gram matrices: omkl's Rust kernels against the numpy formulas.

Times the training-fold Gram matrices (symmetric, one per base kernel) and a
test-vs-support block (4096 test inputs against the fold's inputs) as
computed by ``omkl.kernels.gram`` and by numpy (one shared f32 GEMM of inner
products, then the elementwise maps of ``kernel_from_dots``), in the same
run; prints seconds (best of ``--repeat``) and the numpy/omkl ratio.

    python benches/bench_ocr_grams.py --fold 0
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from omkl import kernels
from omkl.experiments.ocr import Corpus, base_kernel, kernel_from_dots


def best(f: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


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

    cases = {
        f"fold Gram {len(Xs)}x{len(Xs)}": (
            np_fold,
            lambda: [kernels.gram(Xs, kernel=k) for k in ks.values()],
        ),
        f"test block {len(Xt)}x{len(Xs)}": (
            np_test,
            lambda: [kernels.gram(Xt, Xs, kernel=k) for k in ks.values()],
        ),
    }
    print(f"OCR fold {a.fold}, base kernels {'+'.join(bases)}, best of {a.repeat}")
    print(f"{'case':<26}{'numpy s':>10}{'omkl s':>10}{'numpy/omkl':>12}")
    for name, (f_np, f_rs) in cases.items():
        t_np, t_rs = best(f_np, a.repeat), best(f_rs, a.repeat)
        print(f"{name:<26}{t_np:>10.3f}{t_rs:>10.3f}{t_np / t_rs:>11.2f}x")


if __name__ == "__main__":
    main()
