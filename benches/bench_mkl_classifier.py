"""MKLClassifier against river's KNNClassifier on ImageSegments.

Both models run inside ``StandardScaler() | model`` with progressive
validation (predict, then learn, on each of the 2,310 samples), in the same
process, with their default parameters. Each timing is the best of
``--repeat`` runs. Prints both accuracies, per-sample times and the speed
ratio (KNN time / MKL time, whole pipeline), each model's memory (river's
``_raw_memory_usage``, which includes the Rust heap through
``__sizeof__``), the peak Python-heap memory of one progressive run
(tracemalloc; the Rust heap is not traced, its size is the model's
``nbytes``), the support size and the learned kernel weights.

    python benches/bench_mkl_classifier.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

from river import datasets, evaluate, metrics, neighbors, preprocessing

import omkl


def progressive(make, data):
    model = make()
    t0 = time.perf_counter()
    acc = evaluate.progressive_val_score(data, model, metrics.Accuracy())
    return time.perf_counter() - t0, acc.get(), model


def peak_python_memory(make, data) -> int:
    tracemalloc.start()
    progressive(make, data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = list(datasets.ImageSegments())
    n = len(data)
    contenders = {
        "omkl MKLClassifier": lambda: preprocessing.StandardScaler() | omkl.MKLClassifier(),
        "river KNNClassifier": lambda: preprocessing.StandardScaler() | neighbors.KNNClassifier(),
    }
    results = {}
    for name, make in contenders.items():
        best = None
        for _ in range(args.repeat):
            t, acc, model = progressive(make, data)
            if best is None or t < best[0]:
                best = (t, acc, model)
        results[name] = best
    print(f"ImageSegments, {n} samples, progressive validation, best of {args.repeat}")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for name, (t, acc, model) in results.items():
        mem = model._raw_memory_usage
        peak = peak_python_memory(contenders[name], data)
        print(
            f"  {name:22s} accuracy {acc:.4f}  {1e6 * t / n:8.1f} us/sample  "
            f"model {mem / 1024:8.1f} KiB  peak Python heap {peak / 1024:8.1f} KiB"
        )
    mkl_t = results["omkl MKLClassifier"][0]
    knn_t = results["river KNNClassifier"][0]
    print(f"  speed ratio KNN / MKL per sample: {knn_t / mkl_t:.1f}x")
    mkl = results["omkl MKLClassifier"][2]["MKLClassifier"]
    print(
        f"  MKL support inputs: {mkl.n_support_} of {n}; Rust model heap "
        f"{mkl._state.nbytes / 1024:.1f} KiB"
    )
    weights = ", ".join(f"{k} {v:.3f}" for k, v in mkl.kernel_weights_.items())
    print(f"  MKL kernel weights: {weights}")


if __name__ == "__main__":
    main()
