"""What the river-style classifiers share: their classes in order of first
appearance, and probabilities that are the softmax of their class scores.

A subclass keeps its classes in a list returned by ``_class_list()`` and
scores an input with ``_scores(x)`` (one score per class, in the same
order, or ``None`` while it has no model to score with); it runs under its
model's lock (see :mod:`omkl._sync`).

>>> import omkl
>>> m = omkl.ProximalClassifier()
>>> m.predict_proba_one({"a": 1.0})
{}
>>> m.learn_one({"a": 1.0}, "yes")
>>> m.learn_one({"b": 1.0}, "no")
>>> m.classes_, sorted(m.predict_proba_one({"a": 1.0}))
(['yes', 'no'], ['no', 'yes'])
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

from omkl._sync import Synchronized


class SoftmaxClassifier(Synchronized):
    """Base of the classifiers: ``classes_`` and ``predict_proba_one``."""

    def _class_list(self) -> list[Hashable]:
        """The classes, in order of first appearance (empty before any)."""
        raise NotImplementedError

    def _scores(self, x: Any) -> list[float] | None:
        """One score per class of ``_class_list()``, or ``None`` without a model."""
        raise NotImplementedError

    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def classes_(self) -> list[Hashable]:
        """Classes in order of first appearance."""
        with self._lock:
            return list(self._class_list())

    def predict_proba_one(self, x: Any) -> dict[Hashable, float]:
        """The softmax of the class scores of ``x`` (``{}`` before any class
        or model)."""
        with self._lock:
            classes = self._class_list()
            z = self._scores(x) if classes else None
            if z is None:
                return {}
            top = max(z)
            e = [math.exp(v - top) for v in z]
            s = sum(e)
            return {c: v / s for c, v in zip(classes, e, strict=True)}
