"""One lock per model, so that threads can share it.

Every public method that reads or changes a model's state (learning,
prediction, saving) runs under the model's re-entrant lock: a thread that
predicts while another learns waits for the round to finish, and the
Python-side vocabularies never fall out of step with the Rust state. Work
done in Rust with the GIL released (``fit``, batch prediction) keeps its
lock, so other threads wait without holding the GIL.

>>> import threading, omkl
>>> m = omkl.MKLClassifier()
>>> def learn():
...     for i in range(50):
...         m.learn_one({"x": float(i % 2), "y": 1.0}, i % 2)
>>> threads = [threading.Thread(target=learn) for _ in range(2)]
>>> for t in threads: t.start()
>>> for t in threads: t.join()
>>> m.n_rounds_
100
"""

from __future__ import annotations

import _thread
import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class ModelLock(_thread.RLock):  # type: ignore[misc]
    """A re-entrant lock that a copy or a pickle of its model replaces with
    a fresh, unlocked one. It is the interpreter's own ``RLock`` type, so
    ``with model._lock:`` costs no Python-level call."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type[ModelLock], tuple[()]]:
        return (ModelLock, ())

    def __copy__(self) -> ModelLock:
        return ModelLock()

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelLock:
        return ModelLock()


def model_lock(model: Any) -> ModelLock:
    """The lock of ``model``, made on first use (``dict.setdefault`` is
    atomic, so two threads get the same lock)."""
    lock: ModelLock | None = model.__dict__.get("_lock")
    if lock is None:
        lock = model.__dict__.setdefault("_lock", ModelLock())
    return lock


class _LockAttribute:
    """The ``_lock`` attribute of a :class:`Synchronized` model: the lock in
    the instance's ``__dict__``, made there by the first access (a model
    restored without one, e.g. by ``__setstate__``, gets one too)."""

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        if model is None:
            return self
        return model_lock(model)


class Synchronized:
    """Base of the models with one lock each: ``with self._lock:`` runs a
    block under the model's lock."""

    _lock: ModelLock = _LockAttribute()  # type: ignore[assignment]


def synchronized(method: F) -> F:
    """Runs ``method`` under its model's lock."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.__dict__.get("_lock") or model_lock(self):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
