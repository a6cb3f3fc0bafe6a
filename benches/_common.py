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
