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
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from _common import print_result, print_stream_table
from river import base, datasets, preprocessing

import omkl
from omkl.experiments.drift import STREAMS, prequential


def models(
    components: int,
    factors: list[float],
    orthogonal: bool = False,
    linear: bool = True,
    extra: dict[str, Any] | None = None,
) -> dict[str, Callable[[], Any]]:
    kw = extra or {}
    lin = ["linear"] if linear else []

    def nystroem() -> omkl.MKLClassifier:
        groups = [omkl.NystroemFeatures(components, factor=f) for f in factors]
        return omkl.MKLClassifier(kernels=[*lin, *groups], **kw)

    def rff() -> omkl.MKLClassifier:
        groups = [
            omkl.RandomFourierFeatures(components, factor=f, seed=i, orthogonal=orthogonal)
            for i, f in enumerate(factors)
        ]
        return omkl.MKLClassifier(kernels=[*lin, *groups], **kw)

    return {"exact (default)": omkl.MKLClassifier, "Nyström": nystroem, "RFF": rff}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--streams", default="segments," + ",".join(STREAMS))
    parser.add_argument("--components", type=int, default=300)
    parser.add_argument("--factors", default="0.0625,0.25,1.0")
    parser.add_argument("--orthogonal", action="store_true", help="orthogonal random features")
    parser.add_argument("--no-linear", action="store_true", help="no linear group")
    parser.add_argument("--extra", default="{}", help="more MKLClassifier arguments (JSON)")
    parser.add_argument("--models", default="exact,nystroem,rff", help="models to run")
    args = parser.parse_args()
    factors = [float(f) for f in args.factors.split(",")]
    every = models(
        args.components, factors, args.orthogonal, not args.no_linear, json.loads(args.extra)
    )
    keys = {"exact": "exact (default)", "nystroem": "Nyström", "rff": "RFF"}
    makers = {keys[m]: every[keys[m]] for m in args.models.split(",")}
    sources: dict[str, Callable[[int], Iterable[Any]]] = {"segments": image_segments, **STREAMS}
    total = len(factors) * args.components
    print(
        f"{args.samples} samples per stream, {total} features per explicit-feature model, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    results: dict[tuple[str, str], tuple[float, float, int]] = {}
    for stream in args.streams.split(","):
        data = list(sources[stream](args.samples))
        for name, make in makers.items():
            pipe = preprocessing.StandardScaler() | ToArray() | make()
            acc, secs, n = prequential(pipe, data)
            results[stream, name] = (acc, secs, n)
            print_result(stream, name, 16, acc, secs, n)
    names = list(makers)
    print_stream_table(args.streams.split(","), names, results, names[0], lambda m: m != names[0])


if __name__ == "__main__":
    main()
