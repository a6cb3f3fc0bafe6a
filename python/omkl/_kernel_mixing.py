"""Mixing the kernel estimators: :class:`~omkl.MKLClassifier` and
:class:`~omkl.SequenceTagger` (streaming Alg. 3).

A kernel model's parameters are a kernel expansion per kernel group over a
deduplicated set of support inputs (plus dense explicit groups and, for
chains, transitions), so they do not fit a fixed layout of flat arrays: the
learnable state travels as the Rust model's versioned bytes (one ``uint8``
array named ``"state"``), and the names it depends on (input kind, feature
names, labels, the scale-rule dimension) as the estimator's *layout*.

:func:`mix_kernel` averages models with weights ``w_m`` (shard sizes) in
Rust. The average of kernel expansions is an expansion over the **union of
the supports**: an input held by several models (the same bits) is stored
once with its coefficients ``sum_m w_m alpha_m`` summed, an input held by
one model keeps ``w_m alpha_m``. Every kernel is the same in every model, so
the mixed model's scores are exactly ``sum_m w_m f_m(x, y)`` (the decision
function of the current iterate is linear in the coefficients). Explicit
groups, transitions and the running sums of the averaged iterate are
averaged entry by entry; the round counter is the weighted average, rounded.
The group norms are **recomputed** from the mixed coefficients
(``||theta_k||^2 = sum_ij sum_y alpha[i, y] alpha[j, y] k_k(x_i, x_j)``), not
averaged, so the kernel weights ``beta_k = ||theta_k|| / sum_l ||theta_l||``
are the mixed model's own. Then, with ``max_support=B``, the support inputs
with the smallest coefficients are removed (with the exact norm update of a
removal) until at most ``B`` are left: the mixed model is then the average
less the removed inputs' terms. The cut keeps the largest terms whatever the
estimator's ``budget_rule``: ``"oldest"`` orders the inputs of one stream,
and shards are streams with no common order.

Models that differ in configuration (kernels and their bandwidths,
regulariser, groups, budget), number of features or labels, or layout are
refused with ``ValueError``.

Examples
--------
>>> import numpy as np
>>> import omkl
>>> from omkl._kernel_mixing import export_kernel, import_kernel, mix_kernel
>>> a, b = omkl.MKLClassifier(labels=[0, 1]), omkl.MKLClassifier(labels=[0, 1])
>>> a.learn_one(np.array([1.0, 0.0]), 0); b.learn_one(np.array([0.0, 1.0]), 1)
>>> mixed = mix_kernel([export_kernel(a), export_kernel(b)], [1, 3])
>>> import_kernel(a, mixed)
>>> a.n_support_
2
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omkl import _omkl
from omkl.mkl import MKLClassifier, SequenceTagger

__all__ = ["KERNEL_MIXABLE", "export_kernel", "import_kernel", "mix_kernel"]

Params = dict[str, np.ndarray]

#: The kernel estimators whose models can be mixed.
KERNEL_MIXABLE: tuple[type[MKLClassifier], type[SequenceTagger]] = (MKLClassifier, SequenceTagger)


def _check(estimator: Any) -> None:
    if not isinstance(estimator, KERNEL_MIXABLE):
        raise TypeError(
            f"estimator: expected an MKLClassifier or a SequenceTagger, got "
            f"{type(estimator).__name__}"
        )
    if estimator._precomputed:
        raise TypeError(
            "estimator: a model over precomputed Gram matrices cannot be mixed (its "
            "matrices are not part of it)"
        )


def export_kernel(estimator: Any) -> Params:
    """The learnable state of a kernel estimator: ``{"state": uint8 array}``
    (the Rust model's bytes), or ``{}`` before its first round."""
    _check(estimator)
    with estimator._lock:
        if estimator._state is None:
            return {}
        return {"state": np.frombuffer(estimator._state.to_bytes(), dtype=np.uint8)}


def layout_of(estimator: Any) -> dict[str, Any]:
    """The names the state depends on: input kind, features, labels and the
    scale-rule dimension (not the hedging linear model's errors, which are
    not mixed)."""
    _check(estimator)
    with estimator._lock:
        state, _ = estimator._save_state()
        return {
            k: (list(v) if isinstance(v, list) else v)
            for k, v in state.items()
            if k != "hedge_errors"
        }


def set_layout(estimator: Any, layout: Mapping[str, Any]) -> None:
    """Gives ``estimator`` the names of :func:`layout_of` (the state is set
    by :func:`import_kernel`)."""
    _check(estimator)
    with estimator._lock:
        estimator._input = layout["input"]
        estimator._features = list(layout["features"])
        estimator._feature_index = {f: i for i, f in enumerate(estimator._features)}
        estimator._labels = list(layout["labels"])
        estimator._label_index = {y: i for i, y in enumerate(estimator._labels)}
        estimator._scale_d = layout["scale_d"]


def import_kernel(estimator: Any, params: Mapping[str, np.ndarray]) -> None:
    """Sets the state of ``estimator`` from :func:`export_kernel`'s layout;
    ``ValueError`` (nothing changed) when the bytes are not a model or do
    not fit the estimator's labels."""
    _check(estimator)
    if set(params) - {"state"}:
        raise ValueError(f"params: expected only the array 'state', got {sorted(params)}")
    with estimator._lock:
        if "state" not in params:
            estimator._state = None
            return
        a = params["state"]
        if not (isinstance(a, np.ndarray) and a.dtype == np.uint8 and a.ndim == 1):
            raise ValueError("params['state']: expected a 1-d uint8 array of model bytes")
        core = _omkl.StreamMkl.from_bytes(a.tobytes())
        if core.n_labels < len(estimator._labels):
            raise ValueError(
                f"params['state']: a model of {core.n_labels} labels, the estimator has "
                f"{len(estimator._labels)}"
            )
        estimator._state = core


def mix_kernel(
    params: Sequence[Mapping[str, np.ndarray]],
    weights: Sequence[float],
    names: Sequence[str] | None = None,
) -> Params:
    """The weighted average of the kernel models ``params`` (from
    :func:`export_kernel`; see the module docs); ``names[k]`` names model
    ``k`` in errors. One model is returned as it is."""
    if len(params) == 0 or len(params) != len(weights):
        raise ValueError(
            f"expected one weight per model, got {len(weights)} weights for {len(params)} models"
        )
    names = [f"model {k}" for k in range(len(params))] if names is None else list(names)
    empty = [n for p, n in zip(params, names, strict=True) if "state" not in p]
    if empty:
        raise ValueError(f"{empty[0]} has no model to mix (it learned nothing)")
    if len(params) == 1:
        return {"state": params[0]["state"]}  # the average of one model is itself
    cores = [_omkl.StreamMkl.from_bytes(p["state"].tobytes()) for p in params]
    try:
        mixed = _omkl.stream_mkl_mix(cores, [float(w) for w in weights])
    except ValueError as e:
        msg = re.sub(
            r"invalid value for `models\[(\d+)\]`: ", lambda m: names[int(m.group(1))] + " ", str(e)
        )
        msg = re.sub(r"models\[(\d+)\]", lambda m: names[int(m.group(1))], msg)
        raise ValueError(msg) from None
    return {"state": np.frombuffer(mixed.to_bytes(), dtype=np.uint8)}
