"""Estimators' learnable state as named flat numpy arrays, and its mixing.

:func:`export_params` gives the parameters of a :class:`~omkl.ProximalClassifier`,
:class:`~omkl.ProximalRegressor`, :class:`~omkl.tagging.TextTagger` (its
template tables and transition weights are the groups of one weight list) or
:class:`~omkl.DependencyParser` as
``{name: 1-d array}``: the weights with their scale factors folded in, the
running sums of the averaged iterate, and round counters (one-element
arrays). :func:`mix` averages such dicts with weights; :func:`import_params`
sets them into an estimator with the same layout (groups, classes, table
sizes, relation labels). State outside the parameters does not travel.
The kernel estimators (:class:`~omkl.MKLClassifier`,
:class:`~omkl.SequenceTagger`) export their model's bytes instead, mixed by
:func:`omkl._kernel_mixing.mix_kernel` (the union of the supports).

Examples
--------
>>> import numpy as np
>>> import omkl
>>> from omkl._mixing import export_params, import_params, mix
>>> a, b = omkl.ProximalRegressor(), omkl.ProximalRegressor()
>>> a.learn_one({"x": 1.0}, 1.0); b.learn_one({"x": 1.0}, 3.0)
>>> pa, pb = export_params(a), export_params(b)
>>> sorted(pa)
['average_rounds', 'intercept', 'intercept_sums', 'rounds', 'weights']
>>> mixed = mix([pa, pb], [1, 3])  # weighted by shard sizes 1 and 3
>>> bool(np.allclose(mixed["weights"], 0.25 * pa["weights"] + 0.75 * pb["weights"]))
True
>>> import_params(a, mixed)
>>> bool((export_params(a)["weights"] == mixed["weights"]).all())
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omkl import _omkl
from omkl._kernel_mixing import KERNEL_MIXABLE, export_kernel, import_kernel
from omkl.linear import ProximalClassifier, ProximalRegressor
from omkl.parsing import DependencyParser
from omkl.tagging import TextTagger

__all__ = ["export_params", "import_params", "mix", "nbytes", "MIXABLE"]

Params = dict[str, np.ndarray]

#: The estimators whose parameters can be exported and mixed.
MIXABLE: tuple[type, ...] = (
    ProximalClassifier,
    ProximalRegressor,
    TextTagger,
    DependencyParser,
    *KERNEL_MIXABLE,
)


def check_mixable(estimator: Any) -> None:
    """Raises ``TypeError`` unless ``estimator`` is one of :data:`MIXABLE`
    (and not a stacked parser)."""
    if not isinstance(estimator, MIXABLE):
        names = ", ".join(t.__name__ for t in MIXABLE)
        raise TypeError(
            f"estimator: expected one of {names} (their parameters can be mixed), "
            f"got {type(estimator).__name__}"
        )
    if isinstance(estimator, DependencyParser) and estimator.stack_folds:
        raise TypeError(
            f"estimator: a stacked DependencyParser (stack_folds={estimator.stack_folds}) "
            "has two stages whose parameters are not mixed; expected stack_folds=0"
        )


def export_params(estimator: Any) -> Params:
    """The learnable state of ``estimator`` as ``{name: 1-d array}``."""
    check_mixable(estimator)
    if isinstance(estimator, KERNEL_MIXABLE):
        return export_kernel(estimator)
    with estimator._lock:
        if isinstance(estimator, DependencyParser):
            out: Params = dict(_omkl.export_params(estimator._core))
            out.update(_omkl.export_params(estimator._labeler))
            return out
        return dict(_omkl.export_params(estimator._state))


def import_params(estimator: Any, params: Mapping[str, np.ndarray]) -> None:
    """Sets the learnable state of ``estimator`` from :func:`export_params`'s
    layout. Every array is checked (name, dtype, length, finite values)
    before anything changes: on error the estimator is unchanged."""
    check_mixable(estimator)
    if isinstance(estimator, KERNEL_MIXABLE):
        import_kernel(estimator, params)
        return
    with estimator._lock:
        if isinstance(estimator, DependencyParser):
            core = {k: v for k, v in params.items() if not k.startswith("label/")}
            label = {k: v for k, v in params.items() if k.startswith("label/")}
            old = _omkl.export_params(estimator._labeler)
            _omkl.import_params(estimator._labeler, label)
            try:
                _omkl.import_params(estimator._core, core)
            except BaseException:
                _omkl.import_params(estimator._labeler, old)
                raise
            return
        _omkl.import_params(estimator._state, dict(params))


def nbytes(params: Mapping[str, np.ndarray]) -> int:
    """Bytes of the arrays of ``params``."""
    return sum(int(a.nbytes) for a in params.values())


def mix(
    params: Sequence[Mapping[str, np.ndarray]],
    weights: Sequence[float],
    names: Sequence[str] | None = None,
) -> Params:
    """The weighted average ``sum_k w_k p_k / sum_k w_k`` of the dicts
    ``params``, array by array (computed in float64, stored in each array's
    dtype). An array equal in every dict is taken as it is. ``names[k]``
    names dict ``k`` in the error raised when the dicts differ in names,
    dtypes or lengths."""
    if len(params) == 0 or len(params) != len(weights):
        raise ValueError(
            f"expected one weight per parameter dict, got {len(weights)} weights "
            f"for {len(params)} dicts"
        )
    total = float(sum(weights))
    if not (total > 0 and all(w >= 0 for w in weights)):
        raise ValueError(f"weights must be >= 0 with a positive sum, got {list(weights)!r}")
    names = [f"model {k}" for k in range(len(params))] if names is None else list(names)
    first = params[0]
    for k, p in enumerate(params[1:], 1):
        if p.keys() != first.keys():
            diff = sorted(set(p) ^ set(first))
            raise ValueError(
                f"{names[k]} has a different layout from {names[0]} (arrays {diff} are in one only)"
            )
        for key, a in p.items():
            b = first[key]
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(
                    f"{names[k]} has a different layout from {names[0]}: {key!r} is "
                    f"{a.dtype}{list(a.shape)} against {b.dtype}{list(b.shape)} "
                    "(different classes, groups or feature spaces)"
                )
    ws = [float(w) / total for w in weights]
    out: Params = {}
    for key, a0 in first.items():
        arrays = [p[key] for p in params]
        if all(np.array_equal(a, a0) for a in arrays[1:]):
            out[key] = a0
            continue
        # w_0 p_0 + w_1 p_1 + ... in float64, without a temporary per term
        acc = np.multiply(arrays[0], ws[0], dtype=np.float64)
        tmp = np.empty_like(acc)
        for w, a in zip(ws[1:], arrays[1:], strict=True):
            np.multiply(a, w, out=tmp, dtype=np.float64)
            acc += tmp
        out[key] = acc.astype(a0.dtype, copy=False)
    return out
