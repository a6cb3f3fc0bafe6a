"""Why the OCR experiment keeps its small BLAS products on one thread.

After a threaded OpenBLAS call, OpenBLAS's worker threads busy-wait for a
while before sleeping. On a 2-core machine that slows whatever runs next,
such as the timed final training of an OCR row. This study times the same
training run (Linear row, fold 0, C = 1000, eta0 = 0.1, 20 epochs) right
after the held-out product of unit-norm features with their weights, done
(a) by plain numpy (threaded OpenBLAS), (b) by ``unit_scores`` (one BLAS
thread, the experiment's way), (c) with no product at all. The three are
interleaved and repeated, and the script prints median seconds, their
ratios and the load average. The effect needs a busy machine (on an idle
one the waiting worker takes the idle core), so ``--busy N`` (default 1)
starts N busy-looping child processes for the duration, standing in for
the other jobs of a shared machine; ``--busy 0`` measures as it is.

    python studies/ocr_blas_spin.py [--repeats 8] [--busy 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from omkl.experiments import ocr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--busy", type=int, default=1, help="busy-looping child processes")
    args = parser.parse_args()
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        measure(args.repeats, args.busy)
    finally:
        for p in spin:
            p.kill()
            p.wait()


def measure(repeats: int, busy: int) -> None:
    corpus = ocr.Corpus.load()
    words = np.flatnonzero(corpus.folds == 0)
    inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    fg = ocr.fold_grams(corpus, inputs, [])
    local = np.full(len(corpus.X), -1, dtype=np.int64)
    local[fg.inputs] = np.arange(len(fg.inputs))
    split = ocr.make_split(corpus, words, local)
    row = ocr.ROWS["linear"]
    coef = np.random.default_rng(0).standard_normal((26, fg.unit.shape[1]))
    rows = np.arange(min(1000, len(fg.inputs)))
    before = {
        "numpy (threaded BLAS)": lambda: fg.unit[rows] @ coef.T.astype(np.float32),
        "unit_scores (1 thread)": lambda: ocr.unit_scores(fg.unit[rows], coef),
        "no product": lambda: None,
    }
    times: dict[str, list[float]] = {k: [] for k in before}
    ocr.train(fg, row, split, 1000.0, 0.1, 20)  # warm-up
    for _ in range(repeats):
        for name, product in before.items():
            time.sleep(0.3)  # let every thread of the previous step settle
            product()
            t = time.perf_counter()
            ocr.train(fg, row, split, 1000.0, 0.1, 20)
            times[name].append(time.perf_counter() - t)
    base = float(np.median(times["no product"]))
    print(
        f"final training of the Linear row (fold 0), {repeats} interleaved repeats, "
        f"{busy} busy-looping process(es) running"
    )
    print(f"{'preceded by':26s} {'median s':>9s} {'vs no product':>14s}")
    for name, ts in times.items():
        med = float(np.median(ts))
        print(f"{name:26s} {med:9.4f} {med / base:13.2f}x")
    print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
