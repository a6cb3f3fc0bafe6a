"""Flat cost on an endless stream: time per sample and RSS at 10^5 and at
10^6 samples of a drifting stream, for MKLClassifier configurations.

The stream is a rotating hyperplane in 10 standardised dimensions (5%
label noise), generated with numpy in blocks so that generation costs
little; each model runs in its own process (``--model``), learning one
array at a time with prequential evaluation. At each checkpoint the script
prints the time per sample over the last 10,000 samples, the resident set
size (``VmRSS``) and the support size. The time per sample is the best of
the last ten windows of 10,000 samples (the machine is shared: a busy
moment slows one window, not all ten), as the other benchmarks take the
best of repeated runs. Models: ``drift`` (the drift
configuration of ``omkl reproduce drift``), ``rff`` (500 random Fourier
features, no support set), ``recommended``
(``omkl.mkl.random_feature_classifier()``: 999 orthogonal random
features with forgetting, no support set), ``default``
(``MKLClassifier()``, which ``DRIFT_CONFIG`` spells out: the same model as
``drift``).

    python benches/flat_cost_drift.py --model drift
    python benches/flat_cost_drift.py --model rff
    python benches/flat_cost_drift.py --model recommended
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator

import numpy as np

import omkl
from omkl.experiments.drift import DRIFT_CONFIG
from omkl.mkl import random_feature_classifier


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def stream(n: int, d: int = 10, seed: int = 0) -> Iterator[tuple[np.ndarray, bool]]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    step = rng.normal(size=d) * 1e-3
    done = 0
    while done < n:
        k = min(10_000, n - done)
        X = rng.normal(size=(k, d))
        ws = w + np.outer(np.arange(k), step)  # the hyperplane keeps turning
        y = np.einsum("ij,ij->i", X, ws) > 0
        y ^= rng.random(k) < 0.05
        w = ws[-1] + step
        for i in range(k):
            yield X[i], bool(y[i])
        done += k


def make(name: str) -> omkl.MKLClassifier:
    if name == "drift":
        return omkl.MKLClassifier(**DRIFT_CONFIG)
    if name == "rff":
        return omkl.MKLClassifier(kernels=[omkl.RandomFourierFeatures(500)])
    if name == "recommended":
        return random_feature_classifier()
    return omkl.MKLClassifier()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", choices=["drift", "rff", "recommended", "default"], default="drift"
    )
    parser.add_argument("--samples", type=int, default=1_000_000)
    args = parser.parse_args()
    checkpoints = {10**k for k in range(4, 7)} | {args.samples}
    model = make(args.model)
    right = 0
    window = 10_000
    recent: list[float] = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(stream(args.samples), start=1):
        right += model.predict_one(x) == y
        model.learn_one(x, y)
        if i % window == 0:
            recent = [*recent[-9:], time.perf_counter() - t0]
            if i in checkpoints:
                print(
                    f"{args.model:8s} n={i:>9,d}  {1e6 * min(recent) / window:7.1f} us/sample "
                    f"(best of the last {len(recent)} windows)  RSS {rss_kib() / 1024:7.1f} MiB  "
                    f"support {model.n_support_:5d}  accuracy so far {right / i:.4f}",
                    flush=True,
                )
            t0 = time.perf_counter()


if __name__ == "__main__":
    main()
