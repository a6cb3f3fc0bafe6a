"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def best_time(
    fn: Callable[[], object],
    repeat: int,
    number: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    warmup: bool = False,
) -> float:
    """Best of ``repeat`` timings of ``number`` calls, in seconds per call
    (after one untimed call if ``warmup``)."""
    if warmup:
        fn()
    best = float("inf")
    for _ in range(repeat):
        t = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - t) / number)
    return best


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    """``fn()``, its wall seconds and the process's CPU seconds (all threads)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def progressive(make: Callable[[], Any], data: Any) -> tuple[float, float, Any]:
    """River's progressive validation (predict, then learn, each example) of
    the model ``make()`` on ``data``: ``(wall seconds, accuracy, model)``."""
    from river import evaluate, metrics

    model = make()
    t0 = time.perf_counter()
    acc = evaluate.progressive_val_score(data, model, metrics.Accuracy())
    return time.perf_counter() - t0, acc.get(), model


def print_result(stream: str, name: str, width: int, acc: float, secs: float, n: int) -> None:
    """One line of a prequential run: accuracy and microseconds per sample."""
    print(f"  {stream:11s} {name:{width}s} {100 * acc:6.2f}%  {1e6 * secs / n:8.1f} µs/sample")


def print_stream_table(
    streams: list[str],
    names: list[str],
    results: dict[tuple[str, str], tuple[float, float, int]],
    ref: str,
    compared: Callable[[str], bool],
) -> None:
    """A Markdown table of ``results[stream, name] = (accuracy, seconds,
    samples)``, a row per stream and a column per model; the cells of the
    models that ``compared`` accepts also give the speed-up over the model
    ``ref`` measured on the same stream (when there is one)."""
    print()
    print("| stream | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for stream in streams:
        base = results.get((stream, ref))
        cells = []
        n = 0
        for name in names:
            acc, secs, n = results[stream, name]
            cell = f"{100 * acc:.2f}% {1e6 * secs / n:.0f} µs"
            if base is not None and compared(name):
                cell += f" ({base[1] / secs:.1f}×)"
            cells.append(cell)
        print(f"| {stream} ({n}) | " + " | ".join(cells) + " |")


def crfsuite_trainer() -> Any | None:
    """A python-crfsuite trainer with the peer's settings (L-BFGS, c1 = 0.1,
    c2 = 0.01, 100 iterations, all label transitions), or ``None`` after
    saying so when python-crfsuite is not installed."""
    try:
        import pycrfsuite
    except ImportError:
        print("python-crfsuite is not installed: no peer")
        return None
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.set_params(
        {"c1": 0.1, "c2": 0.01, "max_iterations": 100, "feature.possible_transitions": True}
    )
    return trainer
