"""MKLClassifier against river's KNNClassifier and logistic regression.

Every model runs inside ``StandardScaler() | model`` with progressive
validation (predict, then learn, on each sample), in the same process,
with default parameters. Contenders: the default ``MKLClassifier()``
(linear + Gaussians at ``sigma2 = d/32, ..., d``), ``MKLClassifier`` with
linear + one Gaussian (``sigma2 = d / 2``), the default with
``passive_aggressive=True``, river's ``KNNClassifier`` and one-vs-rest
``LogisticRegression``. Each timing is the best of
``--repeat`` runs. Prints the accuracies, per-sample times, the speed
ratio (KNN time / MKL time, whole pipeline), each model's memory (river's
``_raw_memory_usage``, which includes the Rust heap through
``__sizeof__``), the peak Python-heap memory of one progressive run
(tracemalloc; the Rust heap is not traced, its size is the model's
``nbytes``), the support size and the learned kernel weights.

Datasets: river's ImageSegments (2,310 samples, in river's order) or a
scikit-learn dataset (digits, wine, breast_cancer) streamed in the order of
a permutation drawn with ``--seed``; ``--seeds N`` averages the accuracies
over the permutations ``seed, ..., seed + N - 1`` (timings from the first).

    python benches/bench_mkl_classifier.py [--dataset image_segments] [--repeat 3]
    python benches/bench_mkl_classifier.py --dataset digits --repeat 1 --seeds 3
"""

from __future__ import annotations

import argparse
import os
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import progressive
from river import datasets, linear_model, multiclass, neighbors, preprocessing

import omkl

Stream = list[tuple[dict[str, float], Any]]


def load(name: str, seed: int) -> Stream:
    if name == "image_segments":
        return list(datasets.ImageSegments())
    from sklearn import datasets as skd

    X, y = getattr(skd, f"load_{name}")(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    return [({f"x{j}": float(v) for j, v in enumerate(X[i])}, int(y[i])) for i in order]


def peak_python_memory(make: Callable[[], Any], data: Stream) -> int:
    tracemalloc.start()
    progressive(make, data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset",
        default="image_segments",
        choices=["image_segments", "digits", "wine", "breast_cancer"],
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    n_orders = 1 if args.dataset == "image_segments" else args.seeds
    streams = [load(args.dataset, args.seed + s) for s in range(n_orders)]
    data = streams[0]
    n = len(data)
    contenders: dict[str, Callable[[], Any]] = {
        "omkl MKLClassifier": lambda: preprocessing.StandardScaler() | omkl.MKLClassifier(),
        "omkl MKL lin+1 Gauss": lambda: (
            preprocessing.StandardScaler() | omkl.MKLClassifier(kernels=["linear", "gaussian"])
        ),
        "omkl MKL pass.-aggr.": lambda: (
            preprocessing.StandardScaler() | omkl.MKLClassifier(passive_aggressive=True)
        ),
        "river KNNClassifier": lambda: preprocessing.StandardScaler() | neighbors.KNNClassifier(),
        "river LogisticReg OvR": lambda: (
            preprocessing.StandardScaler()
            | multiclass.OneVsRestClassifier(linear_model.LogisticRegression())
        ),
    }
    results = {}
    for name, make in contenders.items():
        best = None
        for _ in range(args.repeat):
            t, acc, model = progressive(make, data)
            if best is None or t < best[0]:
                best = (t, acc, model)
        assert best is not None
        accs = [best[1]] + [progressive(make, s)[1] for s in streams[1:]]
        results[name] = (best[0], accs, best[2])
    order = "river's order" if args.dataset == "image_segments" else f"seeds {args.seed}.."
    print(
        f"{args.dataset}, {n} samples, d = {len(data[0][0])}, progressive validation, "
        f"{n_orders} order(s) ({order}), best of {args.repeat}"
    )
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for name, (t, accs, model) in results.items():
        mem = model._raw_memory_usage
        peak = peak_python_memory(contenders[name], data)
        each = " ".join(f"{a:.4f}" for a in accs) if len(accs) > 1 else ""
        print(
            f"  {name:22s} accuracy {np.mean(accs):.4f} {each:s} {1e6 * t / n:8.1f} us/sample  "
            f"model {mem / 1024:8.1f} KiB  peak Python heap {peak / 1024:8.1f} KiB"
        )
    knn_t = results["river KNNClassifier"][0]
    for name in ("omkl MKLClassifier", "omkl MKL lin+1 Gauss", "omkl MKL pass.-aggr."):
        print(f"  speed ratio KNN / {name} per sample: {knn_t / results[name][0]:.1f}x")
    mkl = results["omkl MKLClassifier"][2]["MKLClassifier"]
    print(
        f"  MKL support inputs: {mkl.n_support_} of {n}; Rust model heap "
        f"{mkl._state.nbytes / 1024:.1f} KiB"
    )
    weights = ", ".join(f"{k} {v:.3f}" for k, v in mkl.kernel_weights_.items())
    print(f"  MKL kernel weights: {weights}")


if __name__ == "__main__":
    main()
