"""Shared handling of the estimators' constructor parameters.

The estimators use one name per concept (see ``docs/configuration.md``):
``schedule`` and ``eta0`` for the learning-rate schedule and its base rate,
``average`` for predicting with the averaged iterate, ``regularizer`` (with
its strength ``lam`` where the regulariser is given by name). Names used by
earlier releases are accepted for one release as deprecated aliases:
:func:`renamed` maps them to the new name with a ``DeprecationWarning`` that
names the new name and the release that removes the alias
(:data:`ALIASES_REMOVED_IN`).

>>> import warnings
>>> class Model:
...     def __init__(self, average=False, **kwargs):
...         average = renamed(Model, kwargs, {"averaged": "average"}, locals()).get(
...             "average", average
...         )
...         self.average = average
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     Model(averaged=True).average
True
>>> str(caught[0].message)
'Model: `averaged` is deprecated, use `average` instead; `averaged` is removed in omkl 0.2.0'
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ALIASES_REMOVED_IN",
    "SCHEDULES",
    "check_choice",
    "check_int",
    "check_positive",
    "check_real",
    "renamed",
    "renamed_value",
]

#: The release that removes the deprecated aliases of this one; every alias
#: warns for one release (this one) before it goes.
ALIASES_REMOVED_IN = "0.2.0"

#: Learning-rate schedules accepted by every estimator with a ``schedule``.
SCHEDULES = ("constant", "inv_sqrt", "inv_linear")


def renamed(
    owner: type,
    given: Mapping[str, Any],
    aliases: Mapping[str, str],
    current: Mapping[str, Any],
    stacklevel: int = 3,
) -> dict[str, Any]:
    """``{new name: value}`` for the deprecated keyword arguments ``given``
    of ``owner``'s constructor.

    ``aliases`` maps each deprecated name to its new name, ``current`` each
    new name to the value the constructor received. Each deprecated name
    used warns with a ``DeprecationWarning`` naming the new one and the
    release that removes the alias (:data:`ALIASES_REMOVED_IN`). A keyword
    that is no alias raises ``TypeError``, as Python does for an unexpected
    keyword; so does a deprecated name given together with its new name
    (the new name set to other than its default). The warning points
    ``stacklevel`` frames up (3: the caller of the constructor that calls
    this function).
    """
    init = owner.__init__  # type: ignore[misc]
    defaults = {n: p.default for n, p in inspect.signature(init).parameters.items()}
    name = owner.__name__
    out: dict[str, Any] = {}
    for old, value in given.items():
        new = aliases.get(old)
        if new is None:
            raise TypeError(f"{name}() got an unexpected keyword argument {old!r}")
        if current[new] is not defaults[new] and current[new] != defaults[new]:
            raise TypeError(f"{name}() got both `{new}` and its deprecated alias `{old}`")
        warnings.warn(
            f"{name}: `{old}` is deprecated, use `{new}` instead; "
            f"`{old}` is removed in omkl {ALIASES_REMOVED_IN}",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        out[new] = value
    return out


def renamed_value(name: str, value: Any, aliases: Mapping[str, str]) -> Any:
    """``value``, or its new spelling if it is a deprecated value of ``name``
    (with a ``DeprecationWarning`` naming the new value and the release that
    removes the old one, :data:`ALIASES_REMOVED_IN`).

    >>> renamed_value("regularizer", "l2_squared", {"l2": "l2_squared"})
    'l2_squared'
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     renamed_value("regularizer", "l2", {"l2": "l2_squared"})
    'l2_squared'
    >>> print(*str(caught[0].message).split("; "), sep="\\n")
    `regularizer='l2'` is deprecated, use `regularizer='l2_squared'` instead
    `'l2'` is removed in omkl 0.2.0
    """
    if isinstance(value, str) and value in aliases:
        new = aliases[value]
        warnings.warn(
            f"`{name}={value!r}` is deprecated, use `{name}={new!r}` instead; "
            f"`{value!r}` is removed in omkl {ALIASES_REMOVED_IN}",
            DeprecationWarning,
            stacklevel=3,
        )
        return new
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else ``ValueError`` naming ``name``.

    >>> check_choice("schedule", "fast", ("constant", "inv_sqrt"))
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `schedule`: expected 'constant' or 'inv_sqrt', got 'fast'
    """
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"
        raise ValueError(f"invalid value for `{name}`: expected {listed}, got {value!r}")
    return value


def check_positive(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number > 0, else ``ValueError``
    naming ``name``.

    >>> check_positive("eta0", 0.5)
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"invalid value for `{name}`: expected a number > 0, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"invalid value for `{name}`: expected a finite number > 0, got {value!r}")
    return float(value)


def check_int(name: str, value: Any, minimum: int, allow_none: bool = False) -> Any:
    """``value`` if it is an integer ``>= minimum`` (``None`` too with
    ``allow_none``); else ``ValueError`` naming ``name``. Booleans and floats
    are refused, even integral ones.

    >>> check_int("n_buckets", 64, 1)
    64
    >>> check_int("max_support", True, 1)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `max_support`: expected an integer >= 1, got True
    """
    if value is None and allow_none:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        none = "None or " if allow_none else ""
        raise ValueError(
            f"invalid value for `{name}`: expected {none}an integer >= {minimum}, got {value!r}"
        )
    return int(value)


def check_real(name: str, value: Any, allow_bool: bool = False) -> float:
    """``value`` as a float if it is a real number (not a string; a boolean
    only with ``allow_bool``, as 0 or 1); else ``ValueError`` naming
    ``name``.

    >>> check_real("y", 2.5)
    2.5
    >>> check_real("y", "2.5")
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `y`: expected a real number, got '2.5'
    """
    kind = type(value)
    if kind is float or kind is int:  # the common case, without the ABC check
        return float(value)
    if (kind is bool and not allow_bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"invalid value for `{name}`: expected a real number, got {value!r}")
    return float(value)


def check_nonnegative(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite real number >= 0 (see
    :func:`check_real`), else ``ValueError`` naming ``name``.

    >>> check_nonnegative("offset", 0)
    0.0
    >>> check_nonnegative("offset", -1.0)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `offset`: expected a finite number >= 0, got -1.0
    """
    v = check_real(name, value)
    if not (math.isfinite(v) and v >= 0.0):
        raise ValueError(
            f"invalid value for `{name}`: expected a finite number >= 0, got {value!r}"
        )
    return v
