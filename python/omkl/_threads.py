"""Independent pieces of training run side by side on threads: the folds of
a jackknife, each training its own model in the core, which releases the GIL
while it learns.

>>> thread_map(lambda x: x * x, range(5))
[0, 1, 4, 9, 16]
>>> n_threads() >= 1
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["n_threads", "thread_map"]

T = TypeVar("T")
R = TypeVar("R")


def n_threads() -> int:
    """The number of threads that training runs side by side: the core's
    own setting, ``RAYON_NUM_THREADS``, when it is a positive integer, else
    the CPUs this process may run on."""
    env = os.environ.get("RAYON_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(x) for x in items]``, up to :func:`n_threads` calls at a time
    (one at a time on one thread, in the caller's). The results are in the
    order of ``items`` whatever order the calls end in. The first exception
    (in the order of ``items``) is raised once the calls already running have
    ended, and the calls not yet started are not made; a ``KeyboardInterrupt``
    also waits for the running calls."""
    todo = list(items)
    threads = min(n_threads(), len(todo))
    if threads <= 1:
        return [fn(x) for x in todo]
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="omkl")
    try:
        futures = [pool.submit(fn, x) for x in todo]
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
