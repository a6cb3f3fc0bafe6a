"""ProximalClassifier against river's SoftmaxRegression on ImageSegments.

Both models run inside ``StandardScaler() | model`` with progressive
validation (predict, then learn, on each of the 2,310 samples), in the same
process. The scaler alone is also timed over the same stream (the calls the
pipeline makes: transform, learn, transform) so its cost can be subtracted,
and so is the whole harness with river's ``NoChangeClassifier`` in place of
the model (scaler, pipeline and progressive-validation overhead). Each
timing is the best of ``--repeat`` runs. Prints per-sample times, the speed
ratios after subtracting either baseline, both accuracies and each model's
memory (river's ``_raw_memory_usage``, which includes the Rust heap through
``__sizeof__``).

    python benches/bench_linear.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from _common import progressive
from river import datasets, dummy, linear_model, preprocessing

import omkl


def scaler_only(data):
    """The scaler's calls in the pipeline: transform (predict), learn, transform (learn)."""
    scaler = preprocessing.StandardScaler()
    t0 = time.perf_counter()
    for x, _ in data:
        scaler.transform_one(x)
        scaler.learn_one(x)
        scaler.transform_one(x)
    return time.perf_counter() - t0


def harness_only(data):
    """Scaler plus progressive validation with a model that does nothing."""
    return progressive(lambda: preprocessing.StandardScaler() | dummy.NoChangeClassifier(), data)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = list(datasets.ImageSegments())
    n = len(data)

    contenders = {
        "omkl ProximalClassifier": lambda: (
            preprocessing.StandardScaler() | omkl.ProximalClassifier()
        ),
        "river SoftmaxRegression": lambda: (
            preprocessing.StandardScaler() | linear_model.SoftmaxRegression()
        ),
    }
    best: dict[str, float] = {}
    result: dict[str, tuple[float, int]] = {}
    scaler_best = harness_best = float("inf")
    for _ in range(args.repeat):
        scaler_best = min(scaler_best, scaler_only(data))
        harness_best = min(harness_best, harness_only(data))
        for name, make in contenders.items():
            t, acc, model = progressive(make, data)
            best[name] = min(best.get(name, float("inf")), t)
            result[name] = (acc, model[-1]._raw_memory_usage)

    print(f"ImageSegments: {n} samples, best of {args.repeat} runs")
    print(f"{'StandardScaler alone':28s} {1e6 * scaler_best / n:8.2f} us/sample")
    print(f"{'scaler + harness, no model':28s} {1e6 * harness_best / n:8.2f} us/sample")
    for name in contenders:
        acc, mem = result[name]
        print(
            f"{name:28s} {1e6 * best[name] / n:8.2f} us/sample with scaler, "
            f"{1e6 * (best[name] - scaler_best) / n:8.2f} us/sample without, "
            f"accuracy {acc:.4f}, model memory {mem / 1024:.1f} KiB"
        )
    ours, theirs = best["omkl ProximalClassifier"], best["river SoftmaxRegression"]
    print(f"speed-up, whole pipeline: {theirs / ours:.2f}x")
    ratio = (theirs - scaler_best) / max(ours - scaler_best, 1e-12)
    print(f"speed-up, scaler subtracted: {ratio:.2f}x")
    ratio = (theirs - harness_best) / max(ours - harness_best, 1e-12)
    print(f"speed-up, scaler and evaluation harness subtracted: {ratio:.2f}x")


if __name__ == "__main__":
    main()
