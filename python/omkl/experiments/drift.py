"""Concept drift: prequential accuracy and the kernel weights over time on drifting streams.

The paper ends on a claim it does not test: algorithms that adapt the
kernel while learning are robust to concept drift. This experiment streams
four of river's drifting benchmarks through ``StandardScaler() | model``
with prequential evaluation (predict, then learn, on each sample), for the
default :class:`omkl.MKLClassifier` (the drift configuration,
:data:`DRIFT_CONFIG`) and the unbounded model of earlier releases
(:data:`omkl.mkl.UNBOUNDED_CONFIG`), and records β every ``--every``
samples:

* ``rbf``: ``RandomRBFDrift`` (4 classes, 50 centroids, change speed 0.001);
* ``sea``: SEA with an abrupt change of concept (variant 0 to variant 2)
  at half the stream, 10% label noise;
* ``hyperplane``: a rotating hyperplane, 10 features of which 5 drift;
* ``shuttle``: river's bundled Shuttle data, in their order.

It writes ``table.md``, ``results.json`` and ``beta.png`` (β over time,
one row of panels per model and one panel per stream, the change point of
SEA marked) to ``--out``. The default model's linear group steps at a
fraction of the kernels' rate, so its β stays small; the unbounded model's
row shows the weights of all its groups moving as the concepts change.
The comparison with river's models is ``benches/bench_drift.py``.

Examples
--------
The streams by name:

>>> from omkl.experiments.drift import STREAMS
>>> sorted(STREAMS)
['hyperplane', 'rbf', 'sea', 'shuttle']
>>> x, y = next(iter(STREAMS["sea"](100)))
>>> sorted(x), y in (False, True)
([0, 1, 2], True)

``omkl reproduce drift --samples 300 --streams sea`` from Python:

>>> import argparse, contextlib, io, json, pathlib, shutil, tempfile
>>> from omkl.experiments import drift
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> cli = argparse.ArgumentParser()
>>> drift.add_arguments(cli)
>>> args = cli.parse_args(["--samples", "300", "--streams", "sea", "--out", str(folder)])
>>> with contextlib.redirect_stdout(io.StringIO()):
...     status = drift.run(args)
>>> status, sorted(p.name for p in folder.iterdir())
(0, ['beta.png', 'results.json', 'table.md'])
>>> rows = json.loads((folder / "results.json").read_text())["rows"]
>>> sorted(rows[0]), rows[0]["stream"]
(['accuracy', 'model', 'samples', 'stream', 'us_per_sample'], 'sea')
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from river import datasets, drift, preprocessing
from river.datasets import synth

import omkl
from omkl.experiments import add_plot_option, plots_wanted
from omkl.mkl import UNBOUNDED_CONFIG

Sample = tuple[dict[Any, float], Any]

#: The drift configuration of ``MKLClassifier``, its default (chosen on
#: 20,000 and 100,000 samples of each stream, see ``benches/README.md``): a
#: constant step of which the linear group takes 0.03 times, a hedging
#: linear model (step ``0.1 / sqrt(t)``) that predicts while its recent
#: errors are the fewer, a budget of 500 support inputs that drops the least
#: recently changed one, the linear kernel as a primal group with an
#: intercept (which the budget does not touch), and an ADWIN detector on
#: the prequential errors whose alarm restarts the step size.
DRIFT_CONFIG: dict[str, Any] = {
    "schedule": "constant",
    "eta0": 0.1,
    "linear_rate": 0.03,
    "linear_hedge": 0.1,
    "max_support": 500,
    "budget_rule": "oldest",
    "linear_group": "primal",
    "intercept": True,
    "drift_detector": drift.ADWIN(),  # type: ignore[no-untyped-call]
    "drift_reaction": "restart",
}


def rbf(n: int) -> Iterable[Sample]:
    """``RandomRBFDrift``: 4 classes, 50 moving centroids (change speed 0.001)."""
    s = synth.RandomRBFDrift(
        seed_model=1, seed_sample=2, n_classes=4, n_centroids=50, change_speed=0.001
    )
    out: Iterable[Sample] = s.take(n)
    return out


def sea(n: int) -> Iterable[Sample]:
    """SEA, variant 0 then variant 2 from sample ``n // 2`` (abrupt), 10% noise."""
    before = synth.SEA(variant=0, noise=0.1, seed=1).take(n // 2)
    after = synth.SEA(variant=2, noise=0.1, seed=2).take(n - n // 2)
    return itertools.chain(before, after)


def hyperplane(n: int) -> Iterable[Sample]:
    """A rotating hyperplane in 10 dimensions, 5 drifting (magnitude 0.001)."""
    s = synth.Hyperplane(seed=1, n_features=10, n_drift_features=5, mag_change=0.001)
    out: Iterable[Sample] = s.take(n)
    return out


def shuttle(n: int) -> Iterable[Sample]:
    """river's Shuttle data (at most 43,500 samples), in their order."""
    return itertools.islice(datasets.Shuttle(), n)


#: Stream name -> ``f(n)`` giving the first ``n`` samples.
STREAMS: dict[str, Callable[[int], Iterable[Sample]]] = {
    "rbf": rbf,
    "sea": sea,
    "hyperplane": hyperplane,
    "shuttle": shuttle,
}

#: The change point of each stream with an abrupt change, as a fraction.
CHANGE_AT = {"sea": 0.5}


def prequential(
    model: Any, samples: Iterable[Sample], on_sample: Callable[[int], None] | None = None
) -> tuple[float, float, int]:
    """Predicts, then learns, each sample; returns ``(accuracy, seconds,
    samples)``. ``on_sample(i)`` is called after sample ``i`` is learned.

    >>> from river import linear_model
    >>> acc, secs, n = prequential(linear_model.LogisticRegression(), sea(200))
    >>> n, 0.5 < acc <= 1.0
    (200, True)
    """
    right = n = 0
    start = time.perf_counter()
    for i, (x, y) in enumerate(samples):
        right += model.predict_one(x) == y
        model.learn_one(x, y)
        n += 1
        if on_sample is not None:
            on_sample(i)
    secs = time.perf_counter() - start
    return right / max(n, 1), secs, n


def contenders() -> dict[str, Callable[[], Any]]:
    """omkl's default model and the unbounded model of earlier releases,
    each behind a ``StandardScaler``.

    >>> sorted(contenders())
    ['MKLClassifier()', 'MKLClassifier(unbounded)']
    """
    return {
        "MKLClassifier()": lambda: preprocessing.StandardScaler() | omkl.MKLClassifier(),
        "MKLClassifier(unbounded)": lambda: (
            preprocessing.StandardScaler() | omkl.MKLClassifier(**UNBOUNDED_CONFIG)
        ),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The experiment's options.

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args([]).samples, p.parse_args(["--streams", "sea,rbf"]).streams
    (20000, ['sea', 'rbf'])
    """
    parser.add_argument("--samples", type=int, default=20000, help="samples per stream")
    parser.add_argument(
        "--streams",
        type=lambda s: s.split(","),
        default=list(STREAMS),
        help="comma-separated streams (rbf, sea, hyperplane, shuttle)",
    )
    parser.add_argument("--every", type=int, default=0, help="β every this many samples")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("drift-results"))
    add_plot_option(parser, "beta.png")


def _table(rows: list[dict[str, Any]], models: list[str]) -> str:
    lines = [
        "| stream | samples | " + " | ".join(models) + " |",
        "|---|---|" + "---|" * len(models),
    ]
    for stream in dict.fromkeys(r["stream"] for r in rows):
        cells = {r["model"]: r for r in rows if r["stream"] == stream}
        n = next(iter(cells.values()))["samples"]
        vals = [
            f"{100 * cells[m]['accuracy']:.1f}% ({cells[m]['us_per_sample']:.0f} µs)"
            for m in models
        ]
        lines.append(f"| {stream} | {n} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Runs the experiment and writes its files; returns 0."""
    for name in args.streams:
        if name not in STREAMS:
            raise ValueError(f"invalid value for `--streams`: unknown stream {name!r}")
    if args.samples < 1:
        raise ValueError(f"invalid value for `--samples`: expected >= 1, got {args.samples}")
    every = args.every if args.every > 0 else max(args.samples // 200, 1)
    plot = plots_wanted(args, "beta.png")
    rows: list[dict[str, Any]] = []
    makers = contenders()
    histories: dict[str, dict[str, list[tuple[int, dict[str, float]]]]] = {m: {} for m in makers}
    for stream in args.streams:
        data = list(STREAMS[stream](args.samples))  # generated before any timing
        for name, make in makers.items():
            pipe = make()
            mkl = pipe["MKLClassifier"]
            hist: list[tuple[int, dict[str, float]]] = []

            def record(i: int, mkl: Any = mkl, hist: Any = hist) -> None:
                if (i + 1) % every == 0:
                    # groups in name order: a group has one colour in every panel
                    hist.append((i + 1, dict(sorted(mkl.kernel_weights_.items()))))

            acc, secs, n = prequential(pipe, data, record)
            rows.append(
                {
                    "stream": stream,
                    "model": name,
                    "samples": n,
                    "accuracy": acc,
                    "us_per_sample": 1e6 * secs / max(n, 1),
                }
            )
            histories[name][stream] = hist
            print(f"{stream:11s} {name:22s} {100 * acc:6.2f}%  {1e6 * secs / n:8.1f} µs/sample")
    args.out.mkdir(parents=True, exist_ok=True)
    table = _table(rows, list(makers))
    (args.out / "table.md").write_text(table)
    (args.out / "results.json").write_text(
        json.dumps(
            {"config": {k: repr(v) for k, v in DRIFT_CONFIG.items()}, "rows": rows}, indent=1
        )
    )
    if plot:
        _figure(histories, args.samples, args.out / "beta.png")
    print(table)
    return 0


def _figure(
    histories: dict[str, dict[str, list[tuple[int, dict[str, float]]]]],
    n: int,
    path: pathlib.Path,
) -> None:
    from omkl.plotting import plot_kernel_weights, pyplot

    plt = pyplot(headless=True)
    rows = len(histories)
    k = max((len(h) for h in histories.values()), default=1)
    fig, axes = plt.subplots(rows, k, figsize=(4.5 * k, 3.4 * rows), squeeze=False)
    for row, (model, per_stream) in zip(axes, histories.items(), strict=True):
        for ax, (stream, hist) in zip(row, per_stream.items(), strict=False):
            change = CHANGE_AT.get(stream)
            plot_kernel_weights(
                hist,
                ax=ax,
                title=f"{stream}: {model}",
                events=[int(change * n)] if change is not None else [],
            )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
