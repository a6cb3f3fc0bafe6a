"""Explicit feature groups against the exact kernels of MKLClassifier.

Prequential accuracy (predict, then learn, each sample) and µs per sample,
every model behind ``StandardScaler()`` (features then as arrays), on river's ImageSegments and the
drifting streams of ``omkl reproduce drift``: the default
``MKLClassifier()`` (exact Gaussians over a support set), and models whose
only groups are explicit (no support set): the primal linear group plus
Nyström features (``omkl.NystroemFeatures``, landmarks from the first inputs)
or random Fourier features (``omkl.RandomFourierFeatures``) of Gaussians at
``sigma2 = d f`` for each factor ``f`` of ``--factors``, ``--components``
features each. ``--orthogonal`` draws the random features orthogonal in
blocks, ``--no-linear`` leaves the linear group out, and ``--extra`` gives
the explicit-feature models more keyword arguments (JSON), for example a
constant step size. Prints one Markdown table with the speed ratio exact
time / model time.

    python benches/bench_features.py --samples 20000 --components 300 \\
        --factors 0.0625,0.25,1.0
    python benches/bench_features.py --samples 10000 --components 333 \\
        --factors 0.125,0.25,0.5 --orthogonal --no-linear \\
        --extra '{"schedule": "constant", "eta0": 0.1}' --models exact,rff

``--models`` also takes ``recommended``: the model of
``omkl.mkl.random_feature_classifier()`` (D = 999), to which ``--extra``
is passed too; ``linear``: ``MKLClassifier(kernels=["linear"])``, the
default without its Gaussian groups (the linear group, the hedging linear
model and the drift detector), whose time is what any model with the
default's hedge and detector pays per sample besides its kernel groups;
and ``unbounded``: ``MKLClassifier(max_support=None)``, the exact model
without a budget, whose support set (and so its cost per sample) grows
with the stream. The ratios are against the first model of ``--models``.
``--seed s`` seeds the random-feature groups ``s``, ``s + 1``, ...
(default 0).

Two times per sample are printed for each model, each the best of
``--repeat`` runs of a fresh model (run in turn, so that both models see the
same load): **pipeline**, the time of ``StandardScaler() | ToArray() |
model`` on the raw stream, as a user runs it; and **alone**, the time of
the model alone on the stream already scaled (each input scaled once, with
the scaler's statistics after learning it, outside the timing), the same
arrays for every model. The ratios are the exact model's time over the
model's, from the same run. After each model's times it prints how many
support inputs the model alone kept at the end of the stream (0 for a
model without kernel groups): the exact models' cost per sample grows
with that number, the explicit-feature models' does not. The accuracy of
the "alone" run differs a little from the pipeline's (the pipeline
predicts with the statistics before the input is learned).

    python benches/bench_features.py --samples 10000 --models exact,recommended \\
        --repeat 3

``--profile N`` then runs ``N`` pairs of ``predict_one`` and ``learn_one`` of
each model alone on the first stream's scaled arrays under ``cProfile`` and
prints the functions with the most own time, in µs per pair (profiler
included), and the time of a pair without the profiler:

    python benches/bench_features.py --samples 4000 --streams rbf \\
        --models exact,rff --profile 3000
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from _common import print_result
from river import base, datasets, preprocessing

import omkl
from omkl.experiments.drift import STREAMS, prequential
from omkl.mkl import random_feature_classifier


def models(
    components: int,
    factors: list[float],
    orthogonal: bool = False,
    linear: bool = True,
    extra: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Callable[[], Any]]:
    kw = extra or {}
    lin = ["linear"] if linear else []

    def nystroem() -> omkl.MKLClassifier:
        groups = [omkl.NystroemFeatures(components, factor=f) for f in factors]
        return omkl.MKLClassifier(kernels=[*lin, *groups], **kw)

    def rff() -> omkl.MKLClassifier:
        groups = [
            omkl.RandomFourierFeatures(components, factor=f, seed=seed + i, orthogonal=orthogonal)
            for i, f in enumerate(factors)
        ]
        return omkl.MKLClassifier(kernels=[*lin, *groups], **kw)

    return {
        "exact (default)": omkl.MKLClassifier,
        "exact (no budget)": lambda: omkl.MKLClassifier(max_support=None),
        "Nyström": nystroem,
        "RFF": rff,
        "RFF recommended": lambda: random_feature_classifier(seed=seed, **kw),
        "linear only": lambda: omkl.MKLClassifier(kernels=["linear"]),
    }


class ToArray(base.Transformer):
    """Dict features as an array, in the order of the first sample's keys
    (explicit feature groups need a fixed number of columns)."""

    def __init__(self) -> None:
        self.keys: list[Any] | None = None

    def transform_one(self, x: dict[Any, Any]) -> Any:
        if self.keys is None:
            self.keys = sorted(x, key=str)
        return np.array([x.get(k, 0.0) for k in self.keys], dtype=np.float64)


def image_segments(n: int) -> Iterable[tuple[dict[str, float], str]]:
    for i, (x, y) in enumerate(datasets.ImageSegments()):
        if i >= n:
            break
        yield x, y


def scaled(data: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The samples of ``data`` as the pipeline's arrays: each input scaled by
    a ``StandardScaler`` after it learned the input."""
    prep = preprocessing.StandardScaler() | ToArray()
    out = []
    for x, y in data:
        prep.learn_one(x)
        out.append((prep.transform_one(x), y))
    return out


def print_table(
    streams: list[str],
    names: list[str],
    results: dict[tuple[str, str], tuple[float, float, int]],
    alone: dict[tuple[str, str], tuple[float, float, int]],
) -> None:
    """A Markdown table: per stream and model, the pipeline's accuracy and
    µs per sample, then the model alone's µs per sample, with the exact
    model's time over the model's (``names[0]`` is the exact model)."""
    print()
    print("| stream | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for stream in streams:
        cells = []
        n = 0
        for name in names:
            acc, secs, n = results[stream, name]
            _, secs1, _ = alone[stream, name]
            cell = f"{100 * acc:.2f}% pipeline {1e6 * secs / n:.0f} µs"
            if name != names[0]:
                cell += f" ({results[stream, names[0]][1] / secs:.1f}×)"
            cell += f", alone {1e6 * secs1 / n:.0f} µs"
            if name != names[0]:
                cell += f" ({alone[stream, names[0]][1] / secs1:.1f}×)"
            cells.append(cell)
        print(f"| {stream} ({n}) | " + " | ".join(cells) + " |")


def profile_pairs(name: str, make: Callable[[], Any], arrays: list[Any], n: int) -> None:
    """Prints where ``n`` predict-then-learn pairs of a fresh model go: the
    12 functions with the most own time under cProfile, in µs per pair, the
    total, and a pair's time without the profiler (a second fresh model)."""
    pairs = arrays[:n]
    model = make()
    prof = cProfile.Profile()
    prof.enable()
    for x, y in pairs:
        model.predict_one(x)
        model.learn_one(x, y)
    prof.disable()
    model = make()
    t0 = time.perf_counter()
    for x, y in pairs:
        model.predict_one(x)
        model.learn_one(x, y)
    plain = (time.perf_counter() - t0) / len(pairs)
    stats = pstats.Stats(prof)
    rows = stats.stats  # type: ignore[attr-defined]
    total = sum(r[2] for r in rows.values())
    print(f"\n{name}: {len(pairs)} pairs, µs per pair (own time under cProfile)")
    for (file, line, func), r in sorted(rows.items(), key=lambda kv: -kv[1][2])[:12]:
        where = f"{os.path.basename(file)}:{line}" if line else file
        print(f"  {1e6 * r[2] / len(pairs):8.2f}  {func} ({where})")
    print(f"  {1e6 * total / len(pairs):8.2f}  total under the profiler")
    print(f"  {1e6 * plain:8.2f}  a pair without the profiler")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--streams", default="segments," + ",".join(STREAMS))
    parser.add_argument("--components", type=int, default=300)
    parser.add_argument("--factors", default="0.0625,0.25,1.0")
    parser.add_argument("--orthogonal", action="store_true", help="orthogonal random features")
    parser.add_argument("--no-linear", action="store_true", help="no linear group")
    parser.add_argument("--extra", default="{}", help="more MKLClassifier arguments (JSON)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the first random-feature group (then +1, ...)"
    )
    parser.add_argument(
        "--models", default="exact,nystroem,rff", help="models to run (and recommended)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per model (best time)")
    parser.add_argument(
        "--profile", type=int, default=0, help="profile this many pairs of each model alone"
    )
    args = parser.parse_args()
    factors = [float(f) for f in args.factors.split(",")]
    every = models(
        args.components,
        factors,
        args.orthogonal,
        not args.no_linear,
        json.loads(args.extra),
        args.seed,
    )
    keys = {
        "exact": "exact (default)",
        "unbounded": "exact (no budget)",
        "nystroem": "Nyström",
        "rff": "RFF",
        "recommended": "RFF recommended",
        "linear": "linear only",
    }
    makers = {keys[m]: every[keys[m]] for m in args.models.split(",")}
    sources: dict[str, Callable[[int], Iterable[Any]]] = {"segments": image_segments, **STREAMS}
    total = len(factors) * args.components
    print(
        f"{args.samples} samples per stream, {total} features per explicit-feature model "
        f"(999 recommended), best of {args.repeat}, load average {os.getloadavg()[0]:.2f}"
    )
    results: dict[tuple[str, str], tuple[float, float, int]] = {}
    alone: dict[tuple[str, str], tuple[float, float, int]] = {}
    support: dict[tuple[str, str], int] = {}
    streams = args.streams.split(",")
    for stream in streams:
        data = list(sources[stream](args.samples))
        arrays = scaled(data)
        for _ in range(args.repeat):
            for name, make in makers.items():
                for runs, pipe, samples in (
                    (results, preprocessing.StandardScaler() | ToArray() | make(), data),
                    (alone, make(), arrays),
                ):
                    acc, secs, n = prequential(pipe, samples)
                    best = runs.get((stream, name))
                    if best is None or secs < best[1]:
                        runs[stream, name] = (acc, secs, n)
                support[stream, name] = getattr(pipe, "n_support_", 0)
        for name in makers:
            acc, secs, n = results[stream, name]
            print_result(stream, name + " (pipeline)", 28, acc, secs, n)
            acc, secs, n = alone[stream, name]
            print_result(stream, name + " (alone)", 28, acc, secs, n)
            kept = support[stream, name]
            print(f"  {stream:<11} {name} (alone): {kept} support inputs at the end")
    print_table(streams, list(makers), results, alone)
    if args.profile:
        arrays = scaled(list(sources[streams[0]](max(args.samples, args.profile))))
        for name, make in makers.items():
            profile_pairs(name, make, arrays, args.profile)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
