"""MKLClassifier on drifting streams against river's streaming classifiers.

Prequential accuracy (predict, then learn, each sample) and time per
sample, every model behind ``StandardScaler()``, all in the same process:
river's ``ARFClassifier``, ``HoeffdingAdaptiveTreeClassifier``,
``KNNClassifier`` and ``SoftmaxRegression`` (default parameters), omkl's
default ``MKLClassifier()`` and its drift configuration
(``omkl.experiments.drift.DRIFT_CONFIG``), plus any ``--extra`` omkl
configurations given as JSON objects of keyword arguments. Streams are those of
``omkl reproduce drift``: RandomRBFDrift (4 classes, 50 centroids, change
speed 0.001), SEA with an abrupt change at half and 10% noise, Hyperplane
(10 features, 5 drifting) and river's Shuttle. Prints one Markdown table:
accuracy, µs per sample (the stream is generated before the timing), and
the speed ratio ARF time / model time. ``--extra`` may name a river drift
detector by its class name (``{"drift_detector": "ADWIN"}``) and ask for
random Fourier features with ``{"rff": [D, f1, f2, ...]}`` (a linear kernel
plus ``D`` features of the Gaussian at ``sigma2 = d f`` for each factor).

    python benches/bench_drift.py --samples 20000
    python benches/bench_drift.py --samples 20000 --streams rbf \\
        --extra '{"max_support": 300, "budget_rule": "oldest"}'

``--cache FILE`` keeps river's results (accuracy, seconds, samples) in a JSON
file keyed by stream, sample count and model: a model found there is not run
again, and new river results are added to it, so a long run of the river
peers (``--no-omkl``) can be reused by later omkl-only runs.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from _common import print_result, print_stream_table
from river import drift, forest, linear_model, neighbors, preprocessing, tree

import omkl
from omkl.experiments.drift import DRIFT_CONFIG, STREAMS, prequential


def river_models() -> dict[str, Callable[[], Any]]:
    return {
        "ARF": lambda: forest.ARFClassifier(seed=1),
        "HAT": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=1),
        "KNN": lambda: neighbors.KNNClassifier(),
        "Softmax": lambda: linear_model.SoftmaxRegression(),
    }


def omkl_models(extra: list[str]) -> dict[str, Callable[[], Any]]:
    out: dict[str, Callable[[], Any]] = {
        "MKL default": lambda: omkl.MKLClassifier(),
        "MKL drift": lambda: omkl.MKLClassifier(**DRIFT_CONFIG),
    }
    for e in extra:
        kw = json.loads(e)
        if isinstance(kw.get("drift_detector"), str):  # a river.drift class name
            kw["drift_detector"] = getattr(drift, kw["drift_detector"])()
        if "rff" in kw:  # [D, factor, ...]: linear + D random features per factor
            d, *factors = kw.pop("rff")
            kw["kernels"] = ["linear"] + [
                omkl.RandomFourierFeatures(d, factor=f, seed=i) for i, f in enumerate(factors)
            ]
        out[f"MKL {e}"] = lambda kw=kw: omkl.MKLClassifier(**kw)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--streams", default=",".join(STREAMS))
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--no-river", action="store_true", help="omkl models only")
    parser.add_argument("--no-omkl", action="store_true", help="river models only")
    parser.add_argument("--cache", default=None, help="JSON file of river results to reuse")
    args = parser.parse_args()
    models = {} if args.no_river else river_models()
    if not args.no_omkl:
        models.update(omkl_models(args.extra))
    cache: dict[str, list[float]] = {}
    if args.cache is not None and os.path.exists(args.cache):
        with open(args.cache) as f:
            cache = json.load(f)
    print(f"{args.samples} samples per stream, load average {os.getloadavg()[0]:.2f}")
    results: dict[tuple[str, str], tuple[float, float, int]] = {}
    for stream in args.streams.split(","):
        data = list(STREAMS[stream](args.samples))  # generated before any timing
        for name, make in models.items():
            key = f"{stream}/{args.samples}/{name}"
            if key in cache and not name.startswith("MKL"):
                acc, secs, n = cache[key][0], cache[key][1], int(cache[key][2])
                results[stream, name] = (acc, secs, n)
                print(f"  {stream:11s} {name:28s} {100 * acc:6.2f}%  (cached)")
                continue
            pipe = preprocessing.StandardScaler() | make()
            acc, secs, n = prequential(pipe, data)
            results[stream, name] = (acc, secs, n)
            if args.cache is not None and not name.startswith("MKL"):
                cache[key] = [acc, secs, n]
                with open(args.cache, "w") as f:
                    json.dump(cache, f, indent=1)
            print_result(stream, name, 28, acc, secs, n)
    streams = args.streams.split(",")
    print_stream_table(streams, list(models), results, "ARF", lambda m: m.startswith("MKL"))


if __name__ == "__main__":
    main()
