"""Drift detection for the estimators: the river detector of a
``drift_detector`` parameter, and the reactions when it fires.

>>> from omkl._drift import detector_from
>>> type(detector_from("ADWIN", "drift_detector")).__name__
'ADWIN'
>>> detector_from(None, "drift_detector") is None
True
>>> detector_from(3, "drift_detector")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: invalid value for `drift_detector`: expected None, a river drift detector ... got 3
"""

from __future__ import annotations

import math
from typing import Any

from river import base

from omkl._params import check_real

#: Reactions of ``drift_reaction`` when the ``drift_detector`` fires:
#: restart the step-size schedule, or also zero the weights.
DRIFT_REACTIONS = ("restart", "reset")

Detector = base.DriftDetector | base.BinaryDriftDetector


def detector_from(
    value: Any, name: str, real_valued: bool = False, by_name: bool = True
) -> Detector | None:
    """A fresh detector for the estimator parameter ``name``: ``None``, a
    river detector (cloned) or, with ``by_name``, the name of a class of
    ``river.drift`` (built with its default parameters). With
    ``real_valued``, a binary detector (one fed only 0/1 errors, such as
    ``DDM``) is refused."""
    if value is None:
        return None
    detector: Any = value
    if isinstance(value, str) and by_name:
        # imported here: river.drift loads scipy.stats (about 80 MB), which a
        # model without a named detector does not need
        from river import drift as river_drift

        cls = getattr(river_drift, value, None)
        detector = cls() if isinstance(cls, type) else None
    if not isinstance(detector, (base.DriftDetector, base.BinaryDriftDetector)):
        names = " or the name of a class of river.drift such as 'ADWIN'" if by_name else ""
        raise ValueError(
            f"invalid value for `{name}`: expected None, a river drift detector (e.g. "
            f"river.drift.ADWIN()){names}, got {value!r}"
        )
    if real_valued and isinstance(detector, base.BinaryDriftDetector):
        raise ValueError(
            f"invalid value for `{name}`: a regressor feeds its absolute errors, so it needs "
            f"a real-valued detector (river.base.DriftDetector such as ADWIN), got {value!r}"
        )
    return detector.clone() if detector is value else detector


def check_rate(name: str, value: Any, allow_none: bool = False) -> float | None:
    """``value`` as a float if it is a finite real number > 0 (or ``None``
    with ``allow_none``); else ``ValueError`` naming ``name``.

    >>> check_rate("linear_rate", 0.03)
    0.03
    >>> check_rate("linear_hedge", None, allow_none=True) is None
    True
    >>> check_rate("linear_rate", 0.0)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `linear_rate`: expected a finite number > 0, got 0.0
    """
    if value is None and allow_none:
        return None
    r = check_real(name, value)
    if not (math.isfinite(r) and r > 0.0):
        none = "None or " if allow_none else ""
        raise ValueError(
            f"invalid value for `{name}`: expected {none}a finite number > 0, got {value!r}"
        )
    return r


def feed_errors(detector: Any, n: int, wrong: int) -> bool:
    """Feeds a round of ``n`` predictions, ``wrong`` of them wrong, to
    ``detector`` as 0/1 errors (the errors first); whether it fired.

    >>> from river import drift
    >>> feed_errors(drift.DummyDriftDetector(t_0=3), n=4, wrong=1)
    True
    >>> feed_errors(drift.DummyDriftDetector(t_0=10), n=4, wrong=1)
    False
    """
    if n == 1:  # a stream's round: one prediction
        detector.update(wrong > 0)
        return bool(detector.drift_detected)
    fired = False
    for p in range(n):
        detector.update(p < wrong)
        fired = fired or detector.drift_detected
    return fired
