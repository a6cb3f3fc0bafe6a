"""Streaming multiple kernel learning (Alg. 3): a multiclass classifier and a
linear-chain sequence tagger that learn a convex combination of kernels.

Both estimators hold a Rust learner (``omkl._omkl.StreamMkl``) and follow
river's conventions: constructor arguments are stored as same-named
attributes, ``learn_one`` returns ``None``, a failed ``learn_one`` leaves
the model unchanged.

**Model.** Each kernel ``k`` is a group ``theta_k`` expanded over the
support inputs seen so far (deduplicated: an input seen again is stored
once); each explicit group is a dense linear model on a set of features.
Every round takes a subgradient step of the loss (structured hinge with
Hamming cost, or the CRF/log loss) and then the prox of ``eta_t * Omega``
on the group norms, by one scale factor per group. With the default
``regularizer="squared_l21"``, ``Omega = lam/2 (sum_k ||theta_k||)^2`` (MKL);
``"l2_squared"`` gives a plain kernel SVM on the sum of the kernels.
``kernel_weights_`` are ``beta_k = ||theta_k|| / sum_l ||theta_l||``.

**Kernels.** ``kernels`` is ``None`` (the default), a list
of :class:`omkl.Kernel` or names (``"linear"``, ``"polynomial"``,
``"gaussian"``, ``"b1_spline"`` with default parameters), or a dict
``{name: kernel}`` naming them. A ``"gaussian"`` given by name takes its
bandwidth from the **scale rule** ``sigma2 = d / 2`` where ``d`` is the
number of features at the first example, i.e. ``exp(-||x - x'||^2 / d)``:
scikit-learn's ``gamma="scale"`` (``gamma = 1 / (d Var(x))``) for
standardised features (``Var = 1``), where ``E||x - x'||^2 = 2d`` and a
typical pair has kernel value ``exp(-2)``.

The default of :class:`SequenceTagger` is linear plus one such Gaussian.
The default of :class:`MKLClassifier` is linear plus **one Gaussian per
bandwidth of a grid**, ``sigma2 = d * f`` for ``f`` in
:data:`BANDWIDTH_GRID` = ``(1/32, 1/16, 1/8, 1/4, 1/2, 1)``, named
``"gaussian_d/32"``, ..., ``"gaussian_d"``: the squared ``l2,1`` penalty
then weighs the bandwidths (``kernel_weights_`` shows how). The grid
spans the scale rule and reaches mostly below it, where narrow Gaussians
follow the classes at the scale of near neighbours. The grid is fixed (no
warm-up), so the model is the same whatever the order of the first
examples. The dot products are shared by all kernels; each Gaussian adds
one exponential per support input and a row of label scores, so the
default costs more per sample than linear plus one Gaussian; pass
``kernels=["linear", "gaussian"]`` for the cheaper model.
Features should be standardised, e.g. with
``river.preprocessing.StandardScaler() | model``. Measurements behind
these defaults (accuracy, cost, the median heuristic on the benchmark's
data) are in ``docs/mkl.md``.

**Features.** ``x`` is a dict (``{name: number}``) or a 1-D array. With
dicts, a feature name is given a column the first time it is learned;
features missing from an example are 0 (river's convention), and a name
never seen in training is ignored at prediction time (its weight is 0 in a
linear model; here it is dropped). Arrays must keep their length. NaN or
infinite values raise ``ValueError``, for dicts and arrays alike.

**Labels** may be any hashable; a new label met in ``learn_one`` is added
(river's convention) with zero scores. Predictions are always labels seen
in training.

**Budget.** ``max_support=B`` caps the number of support inputs: after
each round, while there are more than ``B``, one support input is removed
and each group norm is updated exactly. Memory then stays bounded on an
endless stream. ``budget_rule="oldest"`` (the default) removes the input
whose coefficients changed longest ago, so the expansion follows a moving
concept; ``"smallest"`` removes the one whose coefficients have the
smallest ``sum_k sum_y |alpha_k[j, y]|`` (ties: lowest index). On drifting
streams the oldest rule keeps the accuracy of the unbounded model where
the smallest one falls near chance (``benches/README.md``).

**Drift.** ``schedule="constant"`` keeps the step size from decaying.
``forgetting=f`` in ``(0, 1]`` multiplies every group by ``f`` after each
round (one scale change per group: the norms stay exact, the averaged
iterate is still the mean of the iterates), so a coefficient learned ``a``
rounds ago weighs ``f ** a``; with ``forget_on_mistakes=True`` (hinge
loss) only the rounds whose hinge loss is at least ``cost`` shrink it (for
one position, the mistakes), so a model forgets as fast as it errs;
``forget_after=n`` skips the first ``n`` rounds that would shrink it.
``drift_detector`` takes any river detector (``river.drift.ADWIN()``,
``river.drift.binary.DDM()``, ...); a copy of it is fed the 0/1 error of
each position's prediction made before the update (by ``learn_one`` and
``fit`` alike; models over precomputed Gram matrices have no detector).
When it reports a drift, ``drift_reaction="reset"`` (the default of
:class:`SequenceTagger`) zeroes the model (and drops the support inputs
unless ``average=True``) and restarts the step size; ``"restart"`` only
restarts the step size (``eta0 / sqrt(t)`` counts ``t`` from the drift).
With ``average=True`` an alarm also restarts the average: the model
predicts with the mean of the iterates since the last alarm. ``n_drifts_``
counts the alarms. With a budget, ``linear_group="primal"`` keeps the
linear kernel as a dense group on the input columns, which the budget does
not touch, and ``intercept=True`` gives it an intercept;
``omkl.experiments.drift.DRIFT_CONFIG`` is the configuration measured on
river's drifting streams, and the default of :class:`MKLClassifier`:
``max_support=500``, ``budget_rule="oldest"``, ``linear_group="primal"``,
an intercept, ``drift_detector="ADWIN"`` and ``drift_reaction="restart"``,
with a constant step size (``schedule="constant", eta0=0.1``) of which the
linear group takes ``linear_rate=0.03`` times, and a hedging linear model
(``linear_hedge=0.1``). ``MKLClassifier(**UNBOUNDED_CONFIG)`` is the
unbounded model of earlier versions.

**Step size per group and the linear hedge.** ``linear_rate=r`` moves the
linear kernel (or primal linear group, with the intercept) by ``r eta_t``
times its subgradient where the other groups move by ``eta_t``; the prox
steps on the group norms that follow are Alg. 3's; ``rates={name: r}``
does the same for any named group. A small linear rate
with a constant step lets the kernel expansion follow moving clusters
(RandomRBFDrift) without the linear part chasing the noise. On a noisy,
nearly linear concept (SEA, 10% label noise) a decaying step wins instead,
so ``linear_hedge=eta0`` learns a plain linear model (the input columns
and the intercept, step ``eta0 / sqrt(t)`` restarted by its own copy of
the drift detector) beside the MKL model on every example (``learn_one``
or ``fit``), and each prediction comes from the one of the two whose
exponentially weighted prequential error (decay :data:`HEDGE_DECAY`, about
the last 1,000 examples) is smaller. ``coef_``, ``kernel_weights_`` and
the drift detector are those of the MKL model. Models over precomputed
Gram matrices have no hedge.

**Constant cost.** :class:`omkl.RandomFourierFeatures` given among the
``kernels`` is a group of random features of a Gaussian kernel, weighed by
Alg. 3 beside the exact kernels; a model whose kernels are all random
features keeps no support set and costs ``O(D d L)`` per example.
:func:`random_feature_classifier` builds the one
measured against the exact default (999 orthogonal features in cosine and
sine pairs, forgetting after mistakes and the passive-aggressive step,
which suit a linear model on the features).
``hash_features=n`` hashes dict feature names (xxh3-64 with a fixed seed,
signed) into ``n`` columns, so that a stream that keeps bringing new names
does not grow the model; random features with dict inputs need it.
Without it, a dict feature name met for the first time gets the next
column: the kernels see it, and it joins the primal linear group (and any
explicit group over every input column) with zero weights, as in ``fit``
over all the rows at once; the bandwidth rules keep the ``d`` of the first
example.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from river import base

from omkl import _omkl
from omkl._classifier import SoftmaxClassifier
from omkl._drift import DRIFT_REACTIONS, check_rate, detector_from, feed_errors
from omkl._labels import LabelIndex
from omkl._omkl import Kernel
from omkl._params import SCHEDULES, check_choice, check_int, check_positive, check_real
from omkl._persist import IndependentCopies, Persistent, index_of
from omkl._sync import synchronized
from omkl.nystroem import NystroemFeatures
from omkl.random_features import RandomFourierFeatures

__all__ = [
    "BANDWIDTH_GRID",
    "RANDOM_FEATURE_CONFIG",
    "RANDOM_FEATURE_FACTORS",
    "RANDOM_FEATURE_RATES",
    "MKLClassifier",
    "PrecomputedFeatures",
    "PrecomputedGram",
    "SequenceTagger",
    "random_feature_classifier",
]

#: A Gram matrix precomputed over a fixed set of inputs ``0..m-1`` (a float32
#: ``m x m`` array, read in place when it is C-contiguous and read-only,
#: copied once otherwise; or an :class:`omkl.kernels.SparseGram`),
#: validated (square, symmetric, finite) once. Given as the kernels of
#: :class:`SequenceTagger` or :class:`MKLClassifier`, it makes each position
#: an input id (a row of the matrix), as ``kernel="precomputed"`` does in
#: scikit-learn; explicit groups are then feature matrices with one row per
#: input.
PrecomputedGram = _omkl.PrecomputedGram

#: A feature matrix over the same fixed set of inputs (a float32 ``m x d``
#: array of finite values, one row per input), validated and stored sparsely
#: once. Given as an explicit group of a model over
#: :class:`PrecomputedGram` matrices (or of one with explicit groups only),
#: it is shared by every model built on it, where a plain array is
#: converted again by each model.
PrecomputedFeatures = _omkl.PrecomputedFeatures

SAVE_FORMAT_VERSION = 2

KernelSpec = Kernel | PrecomputedGram | str | RandomFourierFeatures | NystroemFeatures
#: An explicit group: feature names or column indices, or (over
#: precomputed inputs) a feature matrix with one row per input.
ExplicitGroup = Sequence[Hashable] | npt.NDArray[Any] | PrecomputedFeatures
#: Explicit feature maps given among the kernels (each a dense group).
_FEATURE_MAPS = (RandomFourierFeatures, NystroemFeatures)

#: The feature name (dicts) of the constant 1 that ``intercept=True`` adds;
#: arrays get it as one more last column.
INTERCEPT = "__intercept__"

#: Removal rules of ``budget_rule``.
BUDGET_RULES = ("smallest", "oldest")


#: Bandwidth grid of the default kernels of :class:`MKLClassifier`:
#: ``sigma2 = d * f`` for each factor ``f`` (a factor-2 geometric grid from
#: ``d / 32`` to ``d``, around the scale rule ``d / 2``).
BANDWIDTH_GRID = (1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)

#: Default kernels of :class:`SequenceTagger`: linear plus one Gaussian
#: with the scale rule ``sigma2 = d / 2``.
_LINEAR_GAUSSIAN: list[tuple[str, Any]] = [("linear", "linear"), ("gaussian", "gaussian")]


def _grid_name(f: float) -> str:
    return "gaussian_d" if f == 1.0 else f"gaussian_d/{round(1 / f)}"


#: Default kernels of :class:`MKLClassifier`: linear plus one Gaussian per
#: bandwidth of :data:`BANDWIDTH_GRID`, named ``"gaussian_d/32"``, ...,
#: ``"gaussian_d"``; internally ``("gaussian", f)`` means ``sigma2 = d * f``.
_LINEAR_GAUSSIAN_GRID: list[tuple[str, Any]] = [("linear", "linear")] + [
    (_grid_name(f), ("gaussian", f)) for f in BANDWIDTH_GRID
]


#: Default support budget of :class:`MKLClassifier`.
DEFAULT_MAX_SUPPORT = 500

#: Default ``linear_rate`` of :class:`MKLClassifier`: the linear group steps
#: by ``0.03 eta``, the kernel groups by ``eta``.
DEFAULT_LINEAR_RATE = 0.03

#: Default ``linear_hedge`` of :class:`MKLClassifier`: ``eta0`` of the
#: hedging linear model.
DEFAULT_LINEAR_HEDGE = 0.1

#: Decay of the weighted prequential errors that choose between the MKL
#: model and its hedging linear model (about the last 1,000 rounds).
HEDGE_DECAY = 0.999

#: The parameters that give the unbounded :class:`MKLClassifier` of earlier
#: releases (its support grows with the stream, no drift detector):
#: ``MKLClassifier(**UNBOUNDED_CONFIG)``.
UNBOUNDED_CONFIG: dict[str, Any] = {
    "eta0": 1.0,
    "schedule": "inv_sqrt",
    "linear_rate": 1.0,
    "linear_hedge": None,
    "max_support": None,
    "linear_group": "kernel",
    "intercept": False,
    "drift_detector": None,
    "drift_reaction": "reset",
}


def _has_precomputed(
    kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None,
    explicit_groups: Mapping[str, ExplicitGroup] | None,
) -> bool:
    """Whether the model is given precomputed Gram matrices (no feature
    vectors). ``ValueError`` if ``explicit_groups`` is neither ``None`` nor a
    mapping."""
    ks = list(kernels.values()) if isinstance(kernels, Mapping) else list(kernels or [])
    if explicit_groups is not None and not isinstance(explicit_groups, Mapping):
        raise ValueError(
            "invalid value for `explicit_groups`: expected None or a dict {group name: "
            f"features}}, got {explicit_groups!r}"
        )
    groups = list((explicit_groups or {}).values())
    return any(isinstance(k, _omkl.PrecomputedGram) for k in ks) or any(
        _is_feature_matrix(v) for v in groups
    )


def _decayed_errors(errors: list[float], n: int, wrong_mkl: int, wrong_linear: int) -> list[float]:
    """The weighted prequential errors ``[MKL, linear hedge]`` after a
    round of ``n`` predictions, ``wrong_mkl`` and ``wrong_linear`` of them
    wrong (decay :data:`HEDGE_DECAY`)."""
    d = HEDGE_DECAY
    return [
        d * errors[0] + (1.0 - d) * (wrong_mkl / n),
        d * errors[1] + (1.0 - d) * (wrong_linear / n),
    ]


def _is_feature_matrix(v: Any) -> bool:
    """Whether the explicit group ``v`` is a feature matrix over precomputed
    inputs (not a list of feature names or columns)."""
    return isinstance(v, _omkl.PrecomputedFeatures) or (isinstance(v, np.ndarray) and v.ndim == 2)


def _check_real(x: Any) -> None:
    """Refuses an array row ``x`` (an array, list or tuple) of complex
    numbers, whose imaginary parts a conversion to float would drop, or
    of strings, which it would parse; anything else is left to the
    conversion's checks.

    >>> _check_real(np.array([1.0 + 2.0j, 0.0]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `x`: expected real numbers, got an array of complex128 ...
    >>> _check_real([1.0, "2"])
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `x`: expected real numbers, got strings
    >>> _check_real([1, 2.5, True])
    """
    if isinstance(x, list | tuple):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError):
            return
    dtype = getattr(x, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if kind == "c":
        raise ValueError(
            f"invalid value for `x`: expected real numbers, got an array of {dtype} "
            "(imaginary parts are not dropped)"
        )
    if kind in ("U", "S"):
        raise ValueError("invalid value for `x`: expected real numbers, got strings")


def _with_one(x: Any) -> Any:
    """The array row ``x`` with a last entry 1 (the intercept's column);
    anything but a 1-D row is returned as it is, for the checks to name."""
    _check_real(x)
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        return x
    return np.append(a, 1.0) if a.ndim == 1 else x


def _group_rates_by_name(rates: Mapping[str, float] | None, labels: list[str]) -> dict[str, float]:
    """``rates`` checked against the group names ``labels``: a dict of
    finite multipliers > 0; ``ValueError`` naming ``rates`` otherwise.

    >>> _group_rates_by_name({"rff": 2}, ["linear", "rff"])
    {'rff': 2.0}
    >>> _group_rates_by_name({"rbf": 2}, ["linear", "rff"])
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `rates`: expected group names of ['linear', 'rff'], got 'rbf'
    """
    if rates is None:
        return {}
    if not isinstance(rates, Mapping):
        raise ValueError(
            f"invalid value for `rates`: expected None or a dict {{group name: multiplier}}, "
            f"got {rates!r}"
        )
    out: dict[str, float] = {}
    for name, r in rates.items():
        if name not in labels:
            raise ValueError(
                f"invalid value for `rates`: expected group names of {labels}, got {name!r}"
            )
        out[name] = cast(float, check_rate(f"rates[{name!r}]", r))
    return out


def _kernel_list(
    kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None,
    default: list[tuple[str, Any]] = _LINEAR_GAUSSIAN,
    allow_empty: bool = False,
) -> list[tuple[str, Any]]:
    """``[(name, kernel or name)]`` from the ``kernels`` argument (empty only
    with ``allow_empty``, when explicit groups exist)."""
    if kernels is None:
        return list(default)
    if isinstance(kernels, Mapping):
        items = [(str(k), v) for k, v in kernels.items()]
    elif isinstance(kernels, (str, Kernel)) or not isinstance(kernels, Iterable):
        raise ValueError(
            "invalid value for `kernels`: expected None, a list of kernels or a dict "
            f"{{name: kernel}}, got {kernels!r}"
        )
    else:
        items = []
        seen: dict[str, int] = {}
        for k in kernels:
            if not isinstance(k, (str, Kernel, _omkl.PrecomputedGram, *_FEATURE_MAPS)):
                raise ValueError(
                    "invalid value for `kernels`: expected omkl.Kernel objects, kernel names, "
                    f"omkl.RandomFourierFeatures, omkl.NystroemFeatures or omkl.PrecomputedGram "
                    f"objects, got {k!r}"
                )
            base_name = (
                k
                if isinstance(k, str)
                else "precomputed"
                if isinstance(k, _omkl.PrecomputedGram)
                else "rff"
                if isinstance(k, RandomFourierFeatures)
                else "nystroem"
                if isinstance(k, NystroemFeatures)
                else k.kind
            )
            n = seen.get(base_name, 0)
            seen[base_name] = n + 1
            items.append((base_name if n == 0 else f"{base_name}_{n}", k))
    for name, k in items:
        if not isinstance(k, (str, Kernel, _omkl.PrecomputedGram, *_FEATURE_MAPS)):
            raise ValueError(
                f"invalid value for `kernels[{name!r}]`: expected an omkl.Kernel, an "
                f"omkl.RandomFourierFeatures, an omkl.NystroemFeatures or a name, got {k!r}"
            )
        if isinstance(k, str) and k not in ("linear", "polynomial", "gaussian", "b1_spline"):
            raise ValueError(
                f"invalid value for `kernels[{name!r}]`: expected 'linear', 'polynomial', "
                f"'gaussian' or 'b1_spline', got {k!r}"
            )
    if not items and not allow_empty:
        raise ValueError("invalid value for `kernels`: expected at least one kernel, got none")
    return items


def _build_kernel(spec: Any, d: int) -> Kernel:
    """A kernel from its spec; a Gaussian given by name gets ``sigma2 = d / 2``,
    ``("gaussian", f)`` (default grid) gets ``sigma2 = d * f``."""
    if isinstance(spec, Kernel):
        return spec
    if isinstance(spec, tuple):
        return Kernel("gaussian", sigma2=d * spec[1])
    if spec == "gaussian":
        return Kernel("gaussian", sigma2=d / 2.0)
    return Kernel(spec)


def _count_mismatch(name: str, expected: int, got: int, what: str) -> ValueError:
    """The error for an argument ``name`` holding ``got`` items where
    ``expected`` ``what`` were expected."""
    return ValueError(f"shape mismatch for `{name}`: expected {expected} {what}, got {got}")


def _sort_key(k: Hashable) -> tuple[str, str]:
    return (type(k).__name__, str(k))


class _StreamMkl(LabelIndex, Persistent, IndependentCopies, base.Base):
    """Shared state handling of :class:`MKLClassifier` and :class:`SequenceTagger`."""

    _chain = False
    _default_kernels = _LINEAR_GAUSSIAN
    #: Whether ``drift_detector`` may name a class of ``river.drift``.
    _DETECTOR_BY_NAME = False

    def __init__(
        self,
        kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None = None,
        explicit_groups: Mapping[str, ExplicitGroup] | None = None,
        lam: float = 1e-4,
        eta0: float = 1.0,
        schedule: str = "inv_sqrt",
        loss: str = "hinge",
        average: bool = False,
        max_support: int | None = None,
        regularizer: str = "squared_l21",
        cost: float = 1.0,
        history_every: int = 0,
        seed: int = 0,
        radius: float | None = None,
        passive_aggressive: bool = False,
        labels: Sequence[Hashable] | None = None,
        transition_lam: float | None = None,
        forgetting: float = 1.0,
        budget_rule: str = "oldest",
        drift_detector: base.DriftDetector | base.BinaryDriftDetector | None = None,
        drift_reaction: str = "reset",
        hash_features: int | None = None,
        linear_group: str = "kernel",
        intercept: bool = False,
        linear_rate: float = 1.0,
        linear_hedge: float | None = None,
        rates: Mapping[str, float] | None = None,
        forget_on_mistakes: bool = False,
        forget_after: int = 0,
    ):
        self.kernels = kernels
        self.explicit_groups = explicit_groups
        self.regularizer = regularizer
        self.lam = lam
        self.eta0 = eta0
        self.schedule = schedule
        self.loss = loss
        self.average = average
        self.max_support = max_support
        self.cost = cost
        self.history_every = history_every
        self.seed = seed
        self.radius = radius
        self.passive_aggressive = passive_aggressive
        self.labels = labels
        self.transition_lam = transition_lam
        self.forgetting = forgetting
        self.forget_on_mistakes = forget_on_mistakes
        self.forget_after = forget_after
        self.budget_rule = budget_rule
        self.drift_detector = drift_detector
        self.drift_reaction = drift_reaction
        self.hash_features = hash_features
        self.linear_group = linear_group
        self.intercept: bool | None = intercept
        self.linear_rate = linear_rate
        self.linear_hedge = linear_hedge
        self.rates = rates
        if not isinstance(intercept, bool):
            raise ValueError(
                f"invalid value for `intercept`: expected True or False, got {intercept!r}"
            )
        self._intercept = intercept
        check_choice("linear_group", linear_group, ("kernel", "primal"))
        f = check_real("forgetting", forgetting)
        if not 0.0 < f <= 1.0:
            raise ValueError(
                f"invalid value for `forgetting`: expected a factor in (0, 1], got {forgetting!r}"
            )
        if not isinstance(forget_on_mistakes, bool):
            raise ValueError(
                f"invalid value for `forget_on_mistakes`: expected True or False, "
                f"got {forget_on_mistakes!r}"
            )
        check_int("forget_after", forget_after, 0)
        check_choice("budget_rule", budget_rule, BUDGET_RULES)
        check_choice("drift_reaction", drift_reaction, DRIFT_REACTIONS)
        check_int("hash_features", hash_features, 1, allow_none=True)
        self._detector = detector_from(
            drift_detector, "drift_detector", by_name=self._DETECTOR_BY_NAME
        )
        self.n_drifts_ = 0
        if not isinstance(passive_aggressive, bool):
            raise ValueError(
                f"invalid value for `passive_aggressive`: expected True or False, "
                f"got {passive_aggressive!r}"
            )
        groups = {} if explicit_groups is None else dict(explicit_groups)
        specs = _kernel_list(kernels, self._default_kernels, allow_empty=bool(groups))
        primal = linear_group == "primal"
        self._primal_names = [n for n, k in specs if primal and k == "linear"]
        self._kernel_specs = [
            (n, k)
            for n, k in specs
            if not isinstance(k, _FEATURE_MAPS) and n not in self._primal_names
        ]
        # A model's own copy of each Nyström map: its landmarks come from its data.
        self._rff_specs: list[tuple[str, RandomFourierFeatures | NystroemFeatures]] = [
            (n, copy.deepcopy(k) if isinstance(k, NystroemFeatures) else k)
            for n, k in specs
            if isinstance(k, _FEATURE_MAPS)
        ]
        self._n_rand = sum(k.n_components for _, k in self._rff_specs)
        self._fourier_only = all(isinstance(k, RandomFourierFeatures) for _, k in self._rff_specs)
        check_int("max_support", max_support, 1, allow_none=True)
        check_int("history_every", history_every, 0)
        self._group_names = [str(g) for g in groups]
        rate = check_rate("linear_rate", linear_rate)
        linear = {n for n, k in specs if isinstance(k, str) and k == "linear"}
        group_labels = self._group_labels()
        named = _group_rates_by_name(rates, group_labels)
        per_group = [named.get(g, rate if g in linear else 1.0) for g in group_labels]
        self._group_rates = [] if all(r == 1.0 for r in per_group) else per_group
        self._precomputed = any(
            isinstance(k, _omkl.PrecomputedGram) for _, k in self._kernel_specs
        ) or any(_is_feature_matrix(v) for v in groups.values())
        if self._precomputed and (self._rff_specs or self._primal_names or intercept):
            raise ValueError(
                "invalid value for `kernels`: omkl.RandomFourierFeatures need feature vectors, "
                "not precomputed Gram matrices"
            )
        if self._precomputed:
            self._check_precomputed(groups)
            self._group_members: list[Any] = [
                v
                if isinstance(v, _omkl.PrecomputedFeatures)
                else np.ascontiguousarray(v, dtype=np.float32)
                for v in groups.values()
            ]
        else:
            # names or columns: a feature matrix makes the model precomputed
            self._group_members = [list(cast(Iterable[Any], v)) for v in groups.values()]
        self._state: _omkl.StreamMkl | None = None
        # hashed dict features: the scale rule's d is the number of features
        # of the first example, not the number of columns
        self._scale_d: int | None = None
        self._input: str | None = "ids" if self._precomputed else None  # "dict" or "array"
        self._features: list[Hashable] = []
        self._feature_index: dict[Hashable, int] = {}
        self._labels: list[Hashable] = []
        self._label_index: dict[Hashable, int] = {}
        self._fixed_labels = labels is not None
        if labels is not None:
            self._labels = list(labels)
            self._label_index = {y: i for i, y in enumerate(self._labels)}
            if len(self._label_index) != len(self._labels) or not self._labels:
                raise ValueError(
                    f"invalid value for `labels`: expected distinct labels, got {labels!r}"
                )
        # the linear model that hedges the MKL model (feature vectors only)
        hedge = check_rate("linear_hedge", linear_hedge, allow_none=True)
        if hedge is not None and self._chain:
            raise ValueError(
                "invalid value for `linear_hedge`: expected None (a SequenceTagger has no "
                f"hedging linear model), got {linear_hedge!r}"
            )
        self._hedge_eta0 = None if self._precomputed else hedge
        self._hedge: _omkl.StreamMkl | None = None
        self._hedge_errors = [0.0, 0.0]
        self._hedge_detector = (
            None
            if self._hedge_eta0 is None
            else detector_from(drift_detector, "drift_detector", by_name=self._DETECTOR_BY_NAME)
        )
        # fail early on bad hyperparameters: the core checks them (and the
        # kernels) on a one-feature model
        if self._precomputed:
            _omkl.StreamMkl([], [[0]], 1, 1, **self._hyper())
        else:
            self._make_state(1, 1, check_only=True)

    def _check_precomputed(self, groups: dict[str, Any]) -> None:
        """Checks a configuration over precomputed inputs: every kernel a
        :class:`omkl.PrecomputedGram`, every explicit group a feature matrix
        with one row per input, no support budget."""
        for name, k in self._kernel_specs:
            if not isinstance(k, _omkl.PrecomputedGram):
                raise ValueError(
                    f"invalid value for `kernels[{name!r}]`: expected an omkl.PrecomputedGram "
                    f"like the other kernels, got {k!r}"
                )
        if self.max_support is not None:
            raise ValueError(
                "invalid value for `max_support`: expected None with precomputed Gram "
                "matrices (the support is the fixed input set)"
            )

        def shape(v: Any) -> tuple[int, ...]:
            if isinstance(v, _omkl.PrecomputedFeatures):
                return (v.n_inputs, v.n_features)
            return tuple(np.shape(v))

        m = (
            self._kernel_specs[0][1].n_inputs
            if self._kernel_specs
            else shape(next(iter(groups.values())))[0]
        )
        for name, v in groups.items():
            got = shape(v)
            if len(got) != 2 or got[0] != m:
                raise ValueError(
                    f"invalid value for `explicit_groups[{name!r}]`: expected a feature matrix "
                    f"with {m} rows (one per input of the Gram matrices), got shape {got}"
                )

    # --- state ------------------------------------------------------------

    def _explicit_columns(self, d: int) -> list[list[int]]:
        cols = []
        for name, members in zip(self._group_names, self._group_members, strict=True):
            idx = []
            for f in members:
                if self._input == "array":
                    if not isinstance(f, (int, np.integer)) or not 0 <= f < d:
                        raise ValueError(
                            f"invalid value for `explicit_groups[{name!r}]`: expected column "
                            f"indices in [0, {d}), got {f!r}"
                        )
                    idx.append(int(f))
                elif self.hash_features is not None:
                    idx.append(self._hashed(f)[0])
                else:
                    idx.append(self._feature_index[f])
            cols.append(sorted(set(idx)))
        for _ in self._primal_names:
            cols.append(list(range(d)))
        base_d = d
        for _, rff in self._rff_specs:
            cols.append(list(range(base_d, base_d + rff.n_components)))
            base_d += rff.n_components
        return cols

    def _hashed(self, name: Hashable) -> tuple[int, float]:
        """The column and sign of a dict feature name under ``hash_features``
        (xxh3-64 of ``str(name)``, stable across processes)."""
        assert self.hash_features is not None
        h = _omkl.hash_feature(str(name))
        return h % self.hash_features, (-1.0 if h >> 63 else 1.0)

    def _scale_dim(self, x: Any) -> int | None:
        """The ``d`` of the bandwidth rules for a first example ``x``: its
        number of features when dict features are hashed; for other dicts,
        the feature names known once it is learned (those registered ahead
        and its own), so that names met later change no bandwidth, in
        ``fit`` as in ``learn_one``; ``None`` for arrays (the number of
        columns)."""
        if not isinstance(x, Mapping):
            return None
        if self.hash_features is not None:
            return max(len(x), 1)
        names = {*self._features, *x}
        names.discard(INTERCEPT)
        return max(len(names), 1)

    def _n_random(self) -> int:
        """Total number of random-feature columns (counted once: the maps
        are fixed at construction)."""
        return self._n_rand

    def _base_dim(self) -> int:
        """The input dimension (columns before the random features)."""
        assert self._state is not None
        return self._state.dim - self._n_random()

    def _augment(
        self, m: npt.NDArray[np.float32], intercept_last: bool = False
    ) -> npt.NDArray[np.float32]:
        """``m`` as the core takes it: the input rows alone, whose
        random-feature columns the core state's feature maps compute
        (``intercept_last``: the last column is the intercept's, which the
        Nyström landmarks leave out). Nyström groups still choosing their
        landmarks take them from ``m`` first, and the state gets its maps
        again when they change (or when it has none, as after loading)."""
        if not self._rff_specs:
            return m
        changed = False
        for _, f in self._rff_specs:
            if isinstance(f, NystroemFeatures):
                bare = m[:, :-1] if intercept_last else m
                changed |= f._take_landmarks(bare)
        state = self._state
        if state is not None and (changed or state.feature_maps_input_dim is None):
            self._install_maps(state)
        return m

    def _install_maps(self, state: _omkl.StreamMkl) -> None:
        """Gives ``state`` the feature maps of the random-feature groups:
        they read its input columns (the Nyström maps without an array
        input's intercept column) and fill the groups' columns."""
        if not self._rff_specs:
            return
        base_d = state.dim - self._n_random()
        bare_d = base_d - 1 if self._intercept and self._input == "array" else base_d
        maps = [
            f._core_map(bare_d if isinstance(f, NystroemFeatures) else base_d, self._scale_d)
            for _, f in self._rff_specs
        ]
        state.set_feature_maps(base_d, maps)

    def _hyper(self) -> dict[str, Any]:
        return dict(
            chain=self._chain,
            loss=self.loss,
            regularizer=self.regularizer,
            lam=float(self.lam),
            schedule=check_choice("schedule", self.schedule, SCHEDULES),
            eta0=float(self.eta0),
            sigma=float(self.lam) if self.schedule == "inv_linear" else 1.0,
            cost=float(self.cost),
            average=bool(self.average),
            radius=None if self.radius is None else float(self.radius),
            history_every=int(self.history_every),
            forgetting=float(self.forgetting),
            forget_on_mistakes=self.forget_on_mistakes,
            forget_after=int(self.forget_after),
            budget_rule=self.budget_rule,
            count_mistakes=self.drift_detector is not None or self._hedge_eta0 is not None,
            group_rates=self._group_rates,
            passive_aggressive=self.passive_aggressive,
            transition_lam=None if self.transition_lam is None else float(self.transition_lam),
        )

    def _make_state(self, d: int, n_labels: int, check_only: bool = False) -> _omkl.StreamMkl:
        if self._precomputed:
            return _omkl.StreamMkl.precomputed(
                [k for _, k in self._kernel_specs],
                list(self._group_members),
                max(n_labels, len(self._labels), 1),
                **self._hyper(),
            )
        base_d = d - (0 if check_only else self._n_random())
        scale_d = base_d if check_only or self._scale_d is None else self._scale_d
        if self._intercept and self._scale_d is None and not check_only:
            scale_d = max(base_d - 1, 1)  # the bandwidth rules count the input's features
        kernels = [_build_kernel(k, scale_d) for _, k in self._kernel_specs]
        n_explicit = len(self._group_names) + len(self._primal_names) + len(self._rff_specs)
        explicit = [[0]] * n_explicit if check_only else self._explicit_columns(base_d)
        state = _omkl.StreamMkl(
            kernels,
            explicit,
            d,
            max(n_labels, len(self._labels), 1),
            max_support=self.max_support,
            kernel_columns=None if check_only or not self._rff_specs else base_d,
            **self._hyper(),
        )
        if not check_only:
            self._install_maps(state)
        return state

    def _group_labels(self) -> list[str]:
        return (
            [n for n, _ in self._kernel_specs]
            + self._group_names
            + self._primal_names
            + [n for n, _ in self._rff_specs]
        )

    # --- inputs -----------------------------------------------------------

    def _kind_of(self, x: Any) -> str:
        kind = "dict" if isinstance(x, Mapping) else "array"
        if self._input is not None and kind != self._input:
            raise ValueError(
                f"invalid value for `x`: expected a {self._input} as in earlier examples, "
                f"got {type(x).__name__}"
            )
        return kind

    def _rows(
        self, xs: Sequence[Any], learning: bool
    ) -> tuple[npt.NDArray[np.float32], list[Hashable]]:
        """Rows of ``xs`` as an ``n x d`` float32 matrix (the core state
        appends the random features), with the feature names that would be
        new (dict inputs without hashing, ``learning=True``)."""
        one = self._one_row(xs)
        if one is not None:
            return self._augment(one, self._intercept), []
        if self._intercept:
            xs = [{**x, INTERCEPT: 1.0} if isinstance(x, Mapping) else _with_one(x) for x in xs]
        m, new = self._input_rows(xs, learning)
        arrays = bool(xs) and not isinstance(xs[0], Mapping)
        return self._augment(m, self._intercept and arrays), new

    def _one_row(self, xs: Sequence[Any]) -> npt.NDArray[np.float32] | None:
        """The row of a single 1-D float array of the expected length, once
        the model has learned from arrays (with the intercept's 1 appended),
        as the general path gives it; ``None`` for anything else."""
        if len(xs) != 1 or self._input != "array" or self._state is None:
            return None
        x = xs[0]
        if type(x) is not np.ndarray or x.ndim != 1 or x.dtype.kind != "f":
            return None
        one = int(self._intercept)
        d = self._base_dim()
        if x.shape[0] != d - one:
            return None
        m = np.empty((1, d), dtype=np.float32)
        m[0, : d - one] = x
        if one:
            m[0, -1] = 1.0
        return m

    def _hashed_rows(self, xs: Sequence[Any]) -> npt.NDArray[np.float32]:
        """Dict rows hashed into ``hash_features`` columns (signed)."""
        assert self.hash_features is not None
        # summed in float64, so that colliding features give the same float32
        # value in any order
        m = np.zeros((len(xs), self.hash_features), dtype=np.float64)
        for i, x in enumerate(xs):
            self._kind_of(x)
            for k, v in x.items():
                kind = type(v)
                if not (kind is float or kind is int):
                    v = check_real(f"x[{k!r}]", v, allow_bool=True)
                j, sign = self._hashed(k)
                m[i, j] += sign * v
        if not np.isfinite(m).all():
            raise ValueError("invalid value for `x`: expected finite values")
        return m.astype(np.float32)

    def _input_rows(
        self, xs: Sequence[Any], learning: bool
    ) -> tuple[npt.NDArray[np.float32], list[Hashable]]:
        """Rows of ``xs`` before the random features."""
        if len(xs) == 0:
            raise ValueError("`x` must not be empty")
        kind: Any = self._kind_of(xs[0])
        if kind == "array":
            for x in xs:
                self._kind_of(x)
                _check_real(x)
            try:
                m: npt.NDArray[Any] = np.asarray(xs, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    "invalid value for `x`: expected rows of real numbers of equal length"
                ) from None
            if m.ndim != 2:
                raise ValueError(
                    f"invalid value for `x`: expected 1-D rows, got an array of shape {m.shape}"
                )
            d = m.shape[1] if self._state is None else self._base_dim()
            if m.shape[1] != d:
                one = int(self._intercept)  # the intercept's column is not the caller's
                raise ValueError(
                    f"shape mismatch for `x`: expected {d - one} features (as in earlier rounds), "
                    f"got {m.shape[1] - one}"
                )
            if self._state is None and self._input is None and m.shape[1] == 0:
                raise ValueError("`x` must not be empty (0 features)")
            return np.ascontiguousarray(m, dtype=np.float32), []
        if self.hash_features is not None:
            return self._hashed_rows(xs), []
        if self._rff_specs:
            raise ValueError(
                "invalid value for `x`: dict features with omkl.RandomFourierFeatures need a "
                "fixed number of columns; pass `hash_features=n`"
            )
        new = self._fresh_names(xs) if learning else []
        index = dict(self._feature_index)
        for f in new:
            index[f] = len(index)
        d = len(index)
        if d == 0:
            raise ValueError("`x` must not be empty (no features)")
        m = np.zeros((len(xs), d), dtype=np.float32)
        for i, x in enumerate(xs):
            if not isinstance(x, Mapping):
                self._kind_of(x)
            for k, v in x.items():
                j = index.get(k)
                if j is None:
                    continue
                kind = type(v)
                if kind is float or kind is int:  # the common case, checked inline
                    m[i, j] = v
                else:
                    m[i, j] = check_real(f"x[{k!r}]", v, allow_bool=True)
        return m, new

    def _fresh_names(self, xs: Sequence[Mapping[Hashable, Any]]) -> list[Hashable]:
        """The names of the dicts ``xs`` without a column, in the order
        learning ``xs`` gives them columns: on a model that has not learned
        yet, the explicit groups' members first; then each example's new
        names, sorted."""
        new: list[Hashable] = []
        seen_new: set[Hashable] = set()
        if self._state is None:
            for members in self._group_members:
                for f in members:
                    if f not in self._feature_index and f not in seen_new:
                        new.append(f)
                        seen_new.add(f)
        for x in xs:
            self._kind_of(x)
            fresh = [k for k in x if k not in self._feature_index and k not in seen_new]
            fresh.sort(key=_sort_key)
            new.extend(fresh)
            seen_new.update(fresh)
        return new

    def _new_features(self, xs: Sequence[Any]) -> list[Hashable]:
        """The dict feature names of the inputs ``xs`` (rows, or a
        tagger's positions) that learning them would give new columns, in
        that order; ``[]`` for arrays and hashed features."""
        if not xs or not isinstance(xs[0], Mapping) or self.hash_features is not None:
            return []
        if self._intercept:
            xs = [{**x, INTERCEPT: 1.0} for x in xs]
        return self._fresh_names(xs)

    def _register_features(self, names: Sequence[Hashable]) -> None:
        """Gives each dict feature name of ``names`` that has none the next
        column, in order, as learning them would (the learned state, if
        any, grows by as many zero columns)."""
        new = [f for f in dict.fromkeys(names) if f not in self._feature_index]
        if not new:
            return
        self._kind_of({})  # refused after array inputs
        self._commit_features("dict", new)
        if self._state is not None:
            self._state.grow(len(self._features), self._state.n_labels)

    def _commit_features(self, kind: str, new: list[Hashable]) -> None:
        self._input = kind
        for f in new:
            self._feature_index[f] = len(self._features)
            self._features.append(f)

    def _label_ids(self, ys: Sequence[Hashable]) -> tuple[list[int], list[Hashable]]:
        new: list[Hashable] = []
        index = dict(self._label_index)
        ids = []
        for y in ys:
            k = index.get(y)
            if k is None and self._fixed_labels:
                raise ValueError(
                    f"invalid value for `y`: unseen label {y!r}, expected one of {self._labels!r}"
                )
            if k is None:
                k = len(index)
                index[y] = k
                new.append(y)
            ids.append(k)
        return ids, new

    def _ids(self, xs: Sequence[Any] | npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """Input ids of a model over precomputed Gram matrices."""
        a = np.asarray(xs)
        if a.ndim != 1 or len(a) == 0 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(
                "invalid value for `x`: expected input ids (integers, rows of the precomputed "
                f"Gram matrices), got {xs!r}"
            )
        return np.ascontiguousarray(a, dtype=np.int64)

    def _learn_rows(self, xs: Sequence[Any], ys: Sequence[Hashable]) -> None:
        """One round on the example with rows ``xs`` and labels ``ys``;
        nothing changes if it fails."""
        if len(xs) != len(ys):
            raise _count_mismatch("ys", len(xs), len(ys), "labels (one per position)")
        ids: npt.NDArray[np.int64] | list[int]
        state: _omkl.StreamMkl | None
        if self._precomputed:
            ids = self._ids(xs)
            lab, new_labels = self._label_ids(ys)
            n_labels = len(self._labels) + len(new_labels)
            state = self._state if self._state is not None else self._make_state(0, n_labels)
            if n_labels > state.n_labels:
                state.grow(state.dim, n_labels)
            state.learn_ids(ids, np.asarray(lab, dtype=np.int64))
            self._state = state
            self._add_labels(new_labels)
            return
        with self._undone_on_failure():
            m, new_features = self._rows(xs, learning=True)
            ids, new_labels = self._label_ids(ys)
            n_labels = len(self._labels) + len(new_labels)
            kind = self._kind_of(xs[0])
            state = self._state
            if state is None:
                d = m.shape[1] + self._n_random()  # the core appends the random features
                state = self._first_state(kind, new_features, xs[0], d, max(n_labels, 1))
            grow = kind == "dict" and self.hash_features is None
            y = np.asarray(ids, dtype=np.int64)
            state.learn(m, y, n_labels, grow_dim=grow)
        self._state = state
        self._commit_features(kind, new_features)
        self._add_labels(new_labels)
        self._learn_hedge(lambda h: h.learn(m, y, n_labels, grow_dim=grow), len(xs), state)
        self._watch_drift(state, len(xs))

    def _learn_array_row(self, x: Any, y: Hashable) -> bool:
        """``_learn_rows([x], [y])`` for the common case of a stream: a
        single float array row, of a known label, on a model that has
        learned from arrays (the same steps, without the general path's
        conversions); ``False``, with nothing done, for anything else."""
        if self._precomputed or self._state is None:
            return False
        k = self._label_index.get(y)
        if k is None:
            return False
        state = self._state
        n_labels = len(self._labels)
        one = self._intercept
        if self._takes_rows():
            # the core reads the row itself
            if state.learn_row(x, one, k, n_labels) is None:
                return False
            self._learn_hedge(lambda h: h.learn_row(x, one, k, n_labels), 1, state)
        else:
            with self._undone_on_failure():
                row = self._one_row([x])
                if row is None:
                    return False
                m = self._augment(row, one)
                ys = np.array([k], dtype=np.int64)
                state.learn(m, ys, n_labels, grow_dim=False)
            self._learn_hedge(lambda h: h.learn(m, ys, n_labels, grow_dim=False), 1, state)
        self._watch_drift(state, 1)
        return True

    def _takes_rows(self) -> bool:
        """Whether the core reads a single array row as it is
        (``StreamMkl.predict_row``, ``learn_row``): the model has learned
        from arrays, and its feature maps, if any, are random Fourier
        features the core already has (Nyström maps may still take
        landmarks from the row)."""
        if self._input != "array" or self._state is None:
            return False
        specs = self._rff_specs
        if not specs:
            return True
        return self._fourier_only and self._state.feature_maps_input_dim is not None

    def _learn_hedge(
        self,
        learn: Callable[[_omkl.StreamMkl], object],
        n: int,
        state: _omkl.StreamMkl,
    ) -> None:
        """One round of the hedging linear model (``linear_hedge``),
        ``learn(hedge)``, on the ``n`` rows the MKL model ``state`` has just
        learned, and the update of both models' weighted prequential
        errors."""
        if self._hedge_eta0 is None:
            return
        # the input columns, without the random features
        hedge, self._hedge_errors = self._hedge_for(self._base_dim(), state.n_labels)
        learn(hedge)
        self._hedge = hedge
        wrong = hedge.last_mistakes
        self._hedge_errors = _decayed_errors(self._hedge_errors, n, state.last_mistakes, wrong)
        det = self._hedge_detector
        if det is not None and feed_errors(det, n, wrong):
            hedge.restart_schedule()

    def _hedge_for(self, base: int, n_labels: int) -> tuple[_omkl.StreamMkl, list[float]]:
        """The hedging linear model to learn the next round, and its
        weighted errors, once the MKL model has ``base`` input columns and
        ``n_labels`` labels: the current one, or a new one (over the
        ``base`` columns) when there is none or when it is larger than the
        MKL model (which was replaced, as by parameter mixing)."""
        assert self._hedge_eta0 is not None
        hedge = self._hedge
        if hedge is not None and hedge.dim <= base and hedge.n_labels <= n_labels:
            return hedge, self._hedge_errors
        hyper = self._hyper()
        hyper.update(
            eta0=self._hedge_eta0,
            schedule="inv_sqrt",
            sigma=1.0,
            average=False,
            radius=None,
            history_every=0,
            forgetting=1.0,
            forget_on_mistakes=False,
            forget_after=0,
            passive_aggressive=False,
            group_rates=[],
        )
        errors = self._hedge_errors if hedge is None else [0.0, 0.0]
        return _omkl.StreamMkl([], [list(range(base))], base, n_labels, **hyper), errors

    def _predictor(self) -> _omkl.StreamMkl:
        """The model that predicts: the hedging linear model when its
        weighted prequential error is the smaller, else the MKL model."""
        assert self._state is not None
        e_mkl, e_linear = self._hedge_errors
        hedge = self._hedge
        if hedge is not None and e_linear < e_mkl and hedge.dim == self._base_dim():
            return hedge
        return self._state

    @contextlib.contextmanager
    def _undone_on_failure(self) -> Iterator[None]:
        """Runs a block that learns: if it raises before it has replaced the
        core state, what learning sets on the model before the core takes
        the examples is put back: the scale dimension (set with the first
        core state) and the landmarks that Nystroem groups take from the
        inputs (the core state then gets the maps of the earlier landmarks
        again). The core itself refuses an example without changing."""
        state, scale_d = self._state, self._scale_d
        seen = [(f, f._seen) for _, f in self._rff_specs if isinstance(f, NystroemFeatures)]
        try:
            yield
        except BaseException:
            if self._state is state:
                self._scale_d = scale_d
                moved = False
                for f, rows in seen:
                    if f._seen is not rows:
                        f._seen, f._map = rows, None
                        moved = True
                if moved and state is not None:
                    self._install_maps(state)
            raise

    def _first_state(
        self, kind: str, new_features: list[Hashable], first: Any, d: int, n_labels: int
    ) -> _omkl.StreamMkl:
        """The core state of a model's first examples (inputs of kind ``kind``
        with ``d`` columns, the first being ``first``), built as though the
        features ``new_features`` were already the model's; of the model only
        the scale dimension is set (put back by :meth:`_undone_on_failure`
        if the first examples are refused)."""
        self._scale_d = self._scale_dim(first)
        saved = (self._input, self._features, self._feature_index)
        self._input = kind
        self._features = list(new_features)
        self._feature_index = {f: i for i, f in enumerate(new_features)}
        try:
            return self._make_state(d, n_labels)
        finally:
            self._input, self._features, self._feature_index = saved

    def _watch_drift(self, state: _omkl.StreamMkl, n: int) -> None:
        """Feeds the 0/1 errors of the round's prediction (made before its
        update) to the drift detector, and reacts when it fires."""
        det = self._detector
        if det is None:
            return
        if feed_errors(det, n, state.last_mistakes):
            self.n_drifts_ += 1
            state.react_to_drift(self.drift_reaction == "reset")

    def _fit(
        self,
        seqs: Sequence[Sequence[Any]],
        labels: Sequence[Sequence[Hashable]],
        epochs: int,
        progress: bool,
        shuffle: bool,
    ) -> None:
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError(
                f"invalid value for `epochs`: expected an integer >= 1, got {epochs!r}"
            )
        if len(seqs) != len(labels):
            raise _count_mismatch("y", len(seqs), len(labels), "targets (one per example)")
        if len(seqs) == 0:
            raise ValueError("`X` must not be empty")
        if self._precomputed:
            self._fit_ids(seqs, labels, epochs, progress, shuffle)
            return
        for s, ys in zip(seqs, labels, strict=True):
            if len(s) != len(ys):
                what = f"labels for a sequence of {len(s)} positions"
                raise _count_mismatch("y", len(s), len(ys), what)
            if len(s) == 0:
                raise ValueError("`x` must not be empty (a sequence of length 0)")
        with self._undone_on_failure():
            self._fit_rows(seqs, labels, epochs, progress, shuffle)

    def _fit_rows(
        self,
        seqs: Sequence[Sequence[Any]],
        labels: Sequence[Sequence[Hashable]],
        epochs: int,
        progress: bool,
        shuffle: bool,
    ) -> None:
        """``fit`` on checked sequences of feature vectors: the model
        changes when the first epoch is complete, and keeps the epochs
        completed before one that fails."""
        flat = [x for s in seqs for x in s]
        m, new_features = self._rows(flat, learning=True)
        ids, new_labels = self._label_ids([y for ys in labels for y in ys])
        n_labels = len(self._labels) + len(new_labels)
        kind = self._kind_of(flat[0])
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        y_all = np.asarray(ids, dtype=np.int64)
        # Learn on a copy: the model changes only if the first epoch is valid.
        if self._state is None:
            # labels enter as they are met, as with learn_one
            d = m.shape[1] + self._n_random()  # the core appends the random features
            state = self._first_state(kind, new_features, flat[0], d, 1)
        else:
            state = _omkl.StreamMkl.from_bytes(self._state.to_bytes())
            if m.shape[1] > state.dim:
                state.grow(m.shape[1], state.n_labels)
            self._install_maps(state)
        rng = np.random.default_rng(self.seed)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        # with a drift detector or a hedge, each round is followed by what
        # learn_one does after it
        watched = self._detector is not None or self._hedge_eta0 is not None
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=epochs, desc=type(self).__name__, unit="epoch")
        try:
            for epoch in range(epochs):
                if shuffle:
                    order = rng.permutation(len(seqs))
                    rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in order])
                    em, el, ey = m[rows], lens[order], y_all[rows]
                    first = seqs[order[0]]
                else:
                    em, el, ey = m, lens, y_all
                    first = seqs[0]
                em = np.ascontiguousarray(em)
                if epoch > 0:
                    # a failed (or interrupted) epoch leaves the model of the
                    # epochs before
                    state = copy.copy(state)
                if watched:
                    loss = self._watched_epoch(state, em, el, ey, n_labels, first)
                else:
                    loss, _ = state.learn_many(em, el, ey, n_labels)
                state.record_beta()
                self._state = state
                if epoch == 0:
                    self._commit_features(kind, new_features)
                    self._add_labels(new_labels)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss / len(seqs):.4g}", support=state.n_support)
        finally:
            if bar is not None:
                bar.close()

    def _watched_epoch(
        self,
        state: _omkl.StreamMkl,
        m: npt.NDArray[np.float32],
        lens: npt.NDArray[np.int64],
        y: npt.NDArray[np.int64],
        n_labels: int,
        first: Sequence[Any],
    ) -> float:
        """One epoch of ``fit`` on the examples of ``m`` (``lens`` rows
        each, labels ``y``), in order, as ``learn_one`` on each: the MKL
        model ``state`` learns them in the core, its drift detector reacting
        after each round, and so does the hedging linear model; then the
        weighted errors follow both models' mistakes. Works on copies of
        the hedge and detectors, which replace the model's only at the end;
        ``first`` is the epoch's first example (its positions), whose round
        starts a hedge. Returns the summed loss."""
        detector = copy.deepcopy(self._detector)
        drifts = self.n_drifts_
        labels_before = state.n_labels

        def on_round(n: int, wrong: int) -> bool:
            nonlocal drifts
            if feed_errors(detector, n, wrong):
                drifts += 1
                return True
            return False

        reset = self.drift_reaction == "reset"
        loss, wrong = state.learn_many(
            m, lens, y, n_labels, None if detector is None else on_round, reset
        )
        hedge, errors = None, self._hedge_errors
        hedge_detector = copy.deepcopy(self._hedge_detector)
        if self._hedge_eta0 is not None:
            # the hedge is started (or replaced) after the first round, with
            # the columns and labels the MKL model has then (with dict
            # features, only the first example's are new)
            base = m.shape[1]
            if isinstance(first[0], Mapping) and self.hash_features is None:
                base = len(self._feature_index) + len(self._new_features(list(first)))
            top = int(y[: lens[0]].max()) + 1
            hedge, errors = self._hedge_for(base, max(labels_before, top))
            if hedge is self._hedge:
                hedge = copy.copy(hedge)
            if hedge.dim < m.shape[1]:
                hedge.grow(m.shape[1], hedge.n_labels)
            on_hedge = None
            if hedge_detector is not None:

                def on_hedge(n: int, wrong: int) -> bool:
                    return feed_errors(hedge_detector, n, wrong)

            _, hedge_wrong = hedge.learn_many(m, lens, y, n_labels, on_hedge, False)
            for n, a, b in zip(lens.tolist(), wrong.tolist(), hedge_wrong.tolist(), strict=True):
                errors = _decayed_errors(errors, n, a, b)
        self._detector, self.n_drifts_ = detector, drifts
        self._hedge, self._hedge_errors, self._hedge_detector = hedge, errors, hedge_detector
        return loss

    def _flat_ids(
        self, seqs: Sequence[Sequence[Any]] | npt.NDArray[Any]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """All input ids of ``seqs`` one after the other, and the offsets."""
        parts = [self._ids(s) for s in seqs]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        return np.concatenate(parts), offsets

    def _label_array(self, ys: Any) -> tuple[npt.NDArray[np.int64], list[Hashable]]:
        """Label ids of a flat array or list of labels, mapped once per
        distinct label."""
        a = np.asarray(ys)
        if a.ndim != 1 or a.dtype == object:
            lab, new = self._label_ids(list(ys))
            return np.asarray(lab, dtype=np.int64), new
        uniq, inv = np.unique(a, return_inverse=True)
        lab, new = self._label_ids([u.item() for u in uniq])
        return np.asarray(lab, dtype=np.int64)[inv.ravel()], new

    def _fit_ids(
        self,
        seqs: Sequence[Sequence[Any]] | None,
        labels: Any,
        epochs: int,
        progress: bool,
        shuffle: bool,
        flat: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None,
    ) -> None:
        """``fit`` over precomputed inputs: all epochs in Rust. ``flat``:
        the ids and offsets already concatenated (then ``labels`` is flat)."""
        if flat is None:
            assert seqs is not None
            ids, offsets = self._flat_ids(seqs)
            lab, new_labels = self._label_array([y for ys in labels for y in ys])
        else:
            ids, offsets = flat
            lab, new_labels = self._label_array(labels)
        if len(lab) != len(ids):
            raise _count_mismatch("y", len(ids), len(lab), "labels (one per position)")
        n_labels = len(self._labels) + len(new_labels)
        state = self._state if self._state is not None else self._make_state(0, n_labels)
        if n_labels > state.n_labels:
            state.grow(state.dim, n_labels)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=epochs, desc=type(self).__name__, unit="epoch")

        def on_epoch(report: dict[str, Any]) -> None:
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{report['mean_loss']:.4g}")

        try:
            state.fit_ids(
                ids,
                lab,
                offsets,
                epochs=epochs,
                shuffle=shuffle,
                seed=int(self.seed),
                on_epoch=on_epoch,
            )
        finally:
            if bar is not None:
                bar.close()
        self._state = state
        self._add_labels(new_labels)

    @synchronized
    def objective(
        self,
        X: Sequence[Any] | npt.NDArray[Any],
        y: Sequence[Any] | npt.NDArray[Any],
        lengths: Sequence[int] | npt.NDArray[np.integer[Any]] | None = None,
    ) -> float:
        """The training objective ``Omega(theta) + (1/n) sum loss`` of the
        current iterate on ``(X, y)`` (models over precomputed Gram matrices;
        ``X`` holds sequences of input ids, or all ids one after the other
        with ``lengths`` as in ``fit``). Nothing changes."""
        if not self._precomputed:
            raise ValueError(
                "`objective` needs a model over precomputed Gram matrices "
                "(kernels given as omkl.PrecomputedGram)"
            )
        if self._state is None:
            raise ValueError("the model has not learned anything yet")
        if lengths is None:
            ids, offsets = self._flat_ids(X)
            lab, new_labels = self._label_array([t for ys in y for t in ys])
        else:
            ids = self._ids(X)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
            lab, new_labels = self._label_array(y)
        if new_labels:
            raise ValueError(f"invalid value for `y`: unseen labels {new_labels!r}")
        return self._state.objective_ids(ids, lab, offsets)

    @property
    @synchronized
    def coef_(self) -> dict[str, npt.NDArray[np.float64]]:
        """Coefficients of each group of the prediction iterate (the average
        when ``average=True``): ``labels x support`` for a kernel group (the
        support inputs are the rows of the precomputed Gram matrices, or
        ``support_`` otherwise), ``labels x width`` for an explicit group."""
        if self._state is None:
            return {}
        avg = bool(self.average)
        nk = len(self._kernel_specs)
        out = {
            name: self._state.kernel_coef(k, avg) for k, (name, _) in enumerate(self._kernel_specs)
        }
        explicit = self._group_names + self._primal_names + [n for n, _ in self._rff_specs]
        for e, name in enumerate(explicit):
            out[name] = self._state.explicit_coef(e, avg)
        assert len(out) == nk + len(explicit)
        return out

    @property
    @synchronized
    def group_norms_(self) -> dict[str, float]:
        """``||theta_g||`` of each group of the prediction iterate
        (``"transitions"`` too for sequence taggers)."""
        names = self._group_labels() + (["transitions"] if self._chain else [])
        if self._state is None:
            return {n: 0.0 for n in names}
        norms = self._state.iterate_norms(bool(self.average))
        return dict(zip(names, norms, strict=True))

    def _predict_rows(self, xs: Sequence[Any]) -> npt.NDArray[np.float32]:
        m, _ = self._rows(xs, learning=False)
        assert self._state is not None
        return m

    # --- fitted attributes ------------------------------------------------

    @property
    @synchronized
    def kernel_weights_(self) -> dict[str, float]:
        """``{group name: beta}`` over the kernels and explicit groups,
        ``beta_k = ||theta_k|| / sum_l ||theta_l||`` (current iterate;
        uniform before any update)."""
        names = self._group_labels()
        if self._state is None:
            return {n: 1.0 / len(names) for n in names}
        return dict(zip(names, self._state.beta(), strict=True))

    @property
    @synchronized
    def kernel_weights_history_(self) -> list[tuple[int, dict[str, float]]]:
        """The ``beta`` trajectory: ``(round, {name: beta})`` recorded every
        ``history_every`` rounds (if > 0) and after every epoch of ``fit``."""
        if self._state is None:
            return []
        names = self._group_labels()
        rounds, betas = self._state.beta_history()
        return [(r, dict(zip(names, b, strict=True))) for r, b in zip(rounds, betas, strict=True)]

    @property
    @synchronized
    def n_support_(self) -> int:
        """Number of (distinct) support inputs of the kernel expansions."""
        return 0 if self._state is None else self._state.n_support

    @property
    @synchronized
    def n_rounds_(self) -> int:
        """Number of examples learned so far."""
        return 0 if self._state is None else self._state.rounds

    @property
    @synchronized
    def hedge_active_(self) -> bool:
        """Whether predictions now come from the hedging linear model
        (``linear_hedge``) rather than from the MKL model."""
        return self._state is not None and self._predictor() is self._hedge

    # --- persistence ------------------------------------------------------

    @synchronized
    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """An independent model: the vocabularies, labels and the Rust state
        are copied (precomputed Gram matrices, immutable, are shared). The
        attributes are copied one by one rather than through
        ``__getstate__``, which refuses a model over precomputed Gram
        matrices; ``copy.copy`` is this copy too (see
        :class:`~omkl._persist.IndependentCopies`)."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    @synchronized
    def __getstate__(self) -> dict[str, Any]:
        if self._precomputed:
            raise ValueError(
                f"a {type(self).__name__} over precomputed Gram matrices cannot be saved or "
                "pickled: the matrices are not part of it (keep them, and the coefficients "
                "in `coef_`; `clone()` builds a fresh model on the same matrices)"
            )
        state = self.__dict__.copy()
        state["_state"] = None if self._state is None else self._state.to_bytes()
        state["_hedge"] = None if self._hedge is None else self._hedge.to_bytes()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        # pickles from before the drift options
        for key, value in (
            ("forgetting", 1.0),
            ("forget_on_mistakes", False),
            ("forget_after", 0),
            ("budget_rule", "smallest"),
            ("drift_detector", None),
            ("drift_reaction", "reset"),
            ("hash_features", None),
            ("linear_group", "kernel"),
            ("intercept", False),
            ("_detector", None),
            ("n_drifts_", 0),
            ("_rff_specs", []),
            ("_primal_names", []),
            ("_scale_d", None),
            ("linear_rate", 1.0),
            ("linear_hedge", None),
            ("rates", None),
            ("_group_rates", []),
            ("_hedge_eta0", None),
            ("_hedge", None),
            ("_hedge_errors", [0.0, 0.0]),
            ("_hedge_detector", None),
        ):
            state.setdefault(key, value)
        state.setdefault("_intercept", bool(state["intercept"]))
        state.setdefault("_n_rand", sum(k.n_components for _, k in state["_rff_specs"]))
        state.setdefault(
            "_fourier_only",
            all(isinstance(k, RandomFourierFeatures) for _, k in state["_rff_specs"]),
        )
        for key in ("_state", "_hedge"):
            if state[key] is not None:
                state[key] = _omkl.StreamMkl.from_bytes(state[key])
        self.__dict__.update(state)

    @synchronized
    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sum(
            0 if m is None else m.nbytes for m in (self._state, self._hedge)
        )

    _SAVE_VERSION = SAVE_FORMAT_VERSION
    _SAVE_SECTIONS = (0, 1, 2)

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        state: dict[str, Any] = {
            "input": self._input,
            "features": self._features,
            "labels": self._labels,
            "scale_d": self._scale_d,
            # the landmarks each Nystroem group chose from the inputs
            "landmarks": [
                f._seen.tolist()
                if isinstance(f, NystroemFeatures) and f._seen is not None
                else None
                for _, f in self._rff_specs
            ],
        }
        state["hedge_errors"] = list(self._hedge_errors)
        sections = [m.to_bytes() for m in (self._state, self._hedge) if m is not None]
        return state, sections

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        features, labels, kind = state["features"], state["labels"], state["input"]
        if not isinstance(features, list) or not isinstance(labels, list):
            raise ValueError("the saved features and labels must be lists")
        if kind not in (None, "dict", "array"):
            raise ValueError(f"unknown input kind {kind!r}")
        # the MKL model once it has learned, and the hedging linear model beside it
        # once it has learned too (only with `linear_hedge`)
        if len(sections) == 2 and self._hedge_eta0 is None:
            raise ValueError("a hedging linear model was saved for `linear_hedge=None`")
        core = _omkl.StreamMkl.from_bytes(sections[0]) if sections else None
        hedge = _omkl.StreamMkl.from_bytes(sections[1]) if len(sections) > 1 else None
        errors = state.get("hedge_errors", [0.0, 0.0])
        if (
            not isinstance(errors, list)
            or len(errors) != 2
            or not all(isinstance(e, (int, float)) and 0.0 <= e <= 1.0 for e in errors)
        ):
            raise ValueError(f"the saved hedge errors must be two rates in [0, 1], got {errors!r}")
        if hedge is not None and (
            core is None
            or hedge.dim != core.dim - self._n_random()
            or hedge.n_labels != core.n_labels
        ):
            raise ValueError("the saved hedging linear model does not match the MKL model")
        if core is not None:
            n_dim = (
                len(features) if self.hash_features is None else self.hash_features
            ) + self._n_random()
            if core.n_labels < len(labels) or (kind == "dict" and core.dim != n_dim):
                raise ValueError(
                    f"the core state ({core.dim} features, {core.n_labels} labels) does "
                    f"not match the saved names ({len(features)} features, "
                    f"{len(labels)} labels)"
                )
        scale_d = state.get("scale_d")
        if scale_d is not None and (not isinstance(scale_d, int) or scale_d < 1):
            raise ValueError(
                f"the saved scale dimension must be a positive integer, got {scale_d!r}"
            )
        landmarks = state.get("landmarks") or [None] * len(self._rff_specs)
        if not isinstance(landmarks, list) or len(landmarks) != len(self._rff_specs):
            raise ValueError("the saved landmarks do not match the model's feature groups")
        for (_, f), rows in zip(self._rff_specs, landmarks, strict=True):
            if isinstance(f, NystroemFeatures):
                f._restore_seen(rows)
            elif rows is not None:
                raise ValueError("landmarks were saved for a group that has none")
        self._scale_d = scale_d
        self._state = core
        self._hedge = hedge
        self._hedge_errors = [float(e) for e in errors]
        self._input = kind
        self._features = features
        self._feature_index = index_of(features, "feature names")
        self._labels = labels
        self._label_index = index_of(labels, "labels")


# river types class labels as bool | str | int; these classifiers take any hashable label
class MKLClassifier(SoftmaxClassifier, _StreamMkl, base.Classifier):  # type: ignore[misc]
    """Multiclass classifier that learns a combination of kernels online (Alg. 3).

    See the module documentation of :mod:`omkl.mkl` for the model, the
    default bandwidth rule, how dict features and new labels are handled,
    and the support budget.

    Parameters
    ----------
    kernels
        ``None`` (linear + Gaussians at the bandwidths ``sigma2 = d / 32,
        d / 16, ..., d / 2, d``, see :data:`BANDWIDTH_GRID`), a list of
        :class:`omkl.Kernel` or kernel names, or a dict ``{name: kernel}``.
    explicit_groups
        ``{group name: [feature names]}`` (dict inputs) or
        ``{group name: [column indices]}`` (array inputs): dense linear
        groups on those features, regularised with the kernels. Over
        precomputed inputs, ``{group name: feature matrix}``: a float32
        array or an :class:`omkl.PrecomputedFeatures` with one row per
        input.
    lam
        Regularisation strength ``lam``.
    eta0
        Base step size (the default of :class:`MKLClassifier` is ``0.1``).
    schedule
        ``"inv_sqrt"`` (``eta0 / sqrt(t)``), ``"constant"`` (``eta0``) or
        ``"inv_linear"`` (``1 / (lam t)``). The default of
        :class:`MKLClassifier` is ``"constant"``.
    loss
        ``"hinge"`` (multiclass hinge, cost 1) or ``"crf"`` (alias
        ``"log"``: multiclass logistic).
    average
        Predict with the average of the iterates (since the last alarm of
        the ``drift_detector``, if any).
    max_support
        Cap on the number of support inputs (``None``: no cap). The default
        of :class:`MKLClassifier`, ``500`` (:data:`DEFAULT_MAX_SUPPORT`),
        bounds the cost per example on an endless stream; ``None`` gives
        the unbounded model of earlier versions.
    regularizer
        ``"squared_l21"`` (MKL), ``"l2_squared"`` (SVM on the kernel sum),
        ``"group_lasso"``, ``"l21_ball"`` (then ``lam`` is the radius), ...
    cost
        Margin (Hamming cost) of the hinge loss.
    history_every
        Record ``kernel_weights_`` every this many rounds (0: only at the
        end of each ``fit`` epoch).
    seed
        Seed of the shuffling in ``fit(..., shuffle=True)``.
    radius
        Radius of the optional projection onto the ball
        ``sum_k ||theta_k|| <= radius`` after each prox step (``None``: no
        projection).
    passive_aggressive
        Hinge loss only: take the passive-aggressive step
        ``tau = min(loss / ||Delta||^2, eta_t)`` (``Delta``: the subgradient
        direction, its squared norm summed over the kernels and groups), the
        smallest step that brings the example's hinge loss to 0 before the
        prox, capped by the schedule's ``eta_t`` (PA-I of Crammer et al.,
        2006), instead of ``eta_t``.
    forgetting
        Factor in ``(0, 1]`` by which every group shrinks after each round
        (1: no forgetting).
    forget_on_mistakes
        Hinge loss only: shrink the groups by ``forgetting`` only after the
        rounds whose hinge loss is at least ``cost`` (for one position, the
        mistakes: a wrong label scores at least as high as the right one),
        so that the model forgets as fast as it errs.
    forget_after
        Integer ``>= 0``: the first ``forget_after`` rounds that would
        shrink the groups (every round, or the mistakes with
        ``forget_on_mistakes``) do not, so that the model forgets only once
        it has learned from that many, as a support budget of that size
        drops inputs only once it is full (0: from the first round).
    budget_rule
        ``"oldest"`` or ``"smallest"``: which support input the budget
        removes (see the module documentation).
    drift_detector
        ``None`` or a river drift detector, fed the 0/1 prequential errors
        (a clone of it). :class:`MKLClassifier` also takes the name of a
        class of ``river.drift`` (built with its default parameters); its
        default is ``"ADWIN"``. ``None`` turns detection off.
    drift_reaction
        ``"reset"`` or ``"restart"``: what a detected drift does (the
        default of :class:`MKLClassifier` is ``"restart"``, that of
        :class:`SequenceTagger` ``"reset"``).
    hash_features
        ``None`` (one column per dict feature name) or the number of columns
        that dict feature names are hashed into.
    intercept
        Add a constant feature 1 to every input (dict name
        ``"__intercept__"``; arrays: one more last column): the linear
        kernel (or primal group) then has an intercept per label; Gaussian
        kernels do not change. ``None`` (the default of
        :class:`MKLClassifier`): ``True`` with feature vectors, ``False``
        with precomputed Gram matrices.
    linear_group
        ``"kernel"``: a ``"linear"`` kernel given by name is a kernel
        expansion over the support inputs; ``"primal"``: it is a dense
        linear group on the input columns (the same model, O(d L) per
        example, untouched by the budget; with dict features it covers the
        features known at the first example, or all hashed columns). The
        default of :class:`MKLClassifier` is ``"primal"``; ``"kernel"``
        (with ``max_support=None, intercept=False``) gives the model of
        earlier versions.
    linear_rate
        Multiplier of the step size for the linear kernel (or primal
        linear group); a finite number > 0. The default of
        :class:`MKLClassifier` is ``0.03`` (:data:`DEFAULT_LINEAR_RATE`).
    linear_hedge
        ``None`` or the ``eta0`` (> 0) of the hedging linear model: a
        linear model learned beside the MKL model, which makes the
        predictions while its weighted prequential error is the smaller
        (see the module documentation). The default of
        :class:`MKLClassifier` is ``0.1`` (:data:`DEFAULT_LINEAR_HEDGE`).
    rates
        ``None`` or ``{group name: multiplier}``: the step size of each
        named group (the names of ``kernel_weights_``) times its
        multiplier, a finite number > 0, as ``linear_rate`` does for the
        linear group (which a name here overrides); the groups not named
        keep theirs.

    ``predict_proba_one`` is the softmax of the class scores: it orders the
    classes like the scores but is not calibrated.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import omkl
    >>> model = preprocessing.StandardScaler() | omkl.MKLClassifier()
    >>> metric = evaluate.progressive_val_score(
    ...     datasets.ImageSegments(), model, metrics.Accuracy()
    ... )
    >>> metric.get() > 0.85
    True
    >>> list(model["MKLClassifier"].kernel_weights_)  # doctest: +NORMALIZE_WHITESPACE
    ['gaussian_d/32', 'gaussian_d/16', 'gaussian_d/8', 'gaussian_d/4', 'gaussian_d/2',
     'gaussian_d', 'linear']

    Dict features learned one at a time, with two kernels. The labels are
    the sign of ``a * b``, which no linear model separates, so β moves to
    the Gaussian:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> model = omkl.MKLClassifier(kernels=["linear", "gaussian"])
    >>> for _ in range(300):
    ...     x = {"a": rng.normal(), "b": rng.normal()}
    ...     model.learn_one(x, bool(x["a"] * x["b"] > 0))
    >>> [model.predict_one({"a": a, "b": b}) for a, b in [(1, 1), (1, -1), (-1, -1)]]
    [True, False, True]
    >>> beta = model.kernel_weights_
    >>> sorted(beta), round(sum(beta.values()), 6), beta["gaussian"] > 0.5
    (['gaussian', 'linear'], 1.0, True)
    >>> model.classes_, model.n_rounds_
    ([False, True], 300)

    On a noisy linear concept the hedging linear model makes the
    predictions; once the concept is no longer linear, the MKL model does:

    >>> rng = np.random.default_rng(1)
    >>> hedged = omkl.MKLClassifier(kernels=["linear", "gaussian"])
    >>> for _ in range(1000):
    ...     x = {"a": rng.normal(), "b": rng.normal()}
    ...     hedged.learn_one(x, bool(x["a"] + x["b"] > 0) != bool(rng.random() < 0.2))
    >>> hedged.hedge_active_
    True
    >>> for _ in range(1000):
    ...     x = {"a": rng.normal(), "b": rng.normal()}
    ...     hedged.learn_one(x, bool(x["a"] * x["b"] > 0))
    >>> hedged.hedge_active_
    False

    Saved and loaded atomically:

    >>> import pathlib, shutil, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> model.save(folder / "model.pkl")
    >>> omkl.MKLClassifier.load(folder / "model.pkl").predict_one({"a": 1.0, "b": 1.0})
    True
    >>> shutil.rmtree(folder)
    """

    _default_kernels = _LINEAR_GAUSSIAN_GRID
    _DETECTOR_BY_NAME = True

    def __init__(
        self,
        kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None = None,
        explicit_groups: Mapping[str, ExplicitGroup] | None = None,
        lam: float = 1e-4,
        eta0: float = 0.1,
        schedule: str = "constant",
        loss: str = "hinge",
        average: bool = False,
        max_support: int | None = DEFAULT_MAX_SUPPORT,
        regularizer: str = "squared_l21",
        cost: float = 1.0,
        history_every: int = 0,
        seed: int = 0,
        radius: float | None = None,
        passive_aggressive: bool = False,
        labels: Sequence[Hashable] | None = None,
        transition_lam: float | None = None,
        forgetting: float = 1.0,
        budget_rule: str = "oldest",
        drift_detector: base.DriftDetector | base.BinaryDriftDetector | str | None = "ADWIN",
        drift_reaction: str = "restart",
        hash_features: int | None = None,
        linear_group: str = "primal",
        intercept: bool | None = None,
        linear_rate: float = DEFAULT_LINEAR_RATE,
        linear_hedge: float | None = DEFAULT_LINEAR_HEDGE,
        rates: Mapping[str, float] | None = None,
        forget_on_mistakes: bool = False,
        forget_after: int = 0,
    ):
        if intercept is not None and not isinstance(intercept, bool):
            raise ValueError(
                f"invalid value for `intercept`: expected True, False or None, got {intercept!r}"
            )
        super().__init__(
            kernels=kernels,
            explicit_groups=explicit_groups,
            lam=lam,
            eta0=eta0,
            schedule=schedule,
            loss=loss,
            average=average,
            max_support=max_support,
            regularizer=regularizer,
            cost=cost,
            history_every=history_every,
            seed=seed,
            radius=radius,
            passive_aggressive=passive_aggressive,
            labels=labels,
            transition_lam=transition_lam,
            forgetting=forgetting,
            forget_on_mistakes=forget_on_mistakes,
            forget_after=forget_after,
            budget_rule=budget_rule,
            drift_detector=drift_detector,  # type: ignore[arg-type]  # or a name, see _DETECTOR_BY_NAME
            drift_reaction=drift_reaction,
            hash_features=hash_features,
            linear_group=linear_group,
            intercept=(
                intercept
                if intercept is not None
                else not _has_precomputed(kernels, explicit_groups)
            ),
            linear_rate=linear_rate,
            linear_hedge=linear_hedge,
            rates=rates,
        )
        self.intercept = intercept

    def _class_list(self) -> list[Hashable]:
        return self._labels

    @synchronized
    def learn_one(self, x: Mapping[Hashable, float] | npt.ArrayLike, y: Hashable) -> None:
        if not self._learn_array_row(x, y):
            self._learn_rows([x], [y])

    def _scores(self, x: Any) -> list[float] | None:
        if self._state is None:
            return None
        if self._precomputed:
            return cast("list[float]", self._state.scores_ids(self._ids([x]))[0].tolist())
        return cast("list[float]", self._predictor().scores(self._predict_rows([x]))[0].tolist())

    @synchronized
    def predict_one(  # type: ignore[override]
        self, x: Mapping[Hashable, float] | npt.ArrayLike
    ) -> Hashable | None:
        if self._state is None or not self._labels:
            return None
        if self._precomputed:
            return self._labels[int(self._state.predict_ids(self._ids([x]))[0])]
        if self._takes_rows():
            k = self._predictor().predict_row(x, self._intercept)
            if k is not None:
                return self._labels[k]
        return self._labels[int(self._predictor().predict(self._predict_rows([x]))[0])]

    @synchronized
    def fit(
        self,
        X: Sequence[Any] | npt.NDArray[Any],
        y: Sequence[Hashable],
        epochs: int = 1,
        progress: bool = False,
        shuffle: bool = False,
    ) -> MKLClassifier:
        """Learns ``epochs`` passes over ``(X, y)`` (rows as dicts or a 2-D
        array), each pass in Rust with the GIL released; ``progress=True``
        shows a tqdm bar per epoch, and ``shuffle=True`` visits the rows in
        a new order each epoch, drawn from ``seed``. Same result as
        ``learn_one`` on each example in the order visited, drift detector
        and hedging linear model included (the detector is called with the
        GIL after each round). Nothing is learned if the data are invalid.
        An epoch that fails (Ctrl-C, an error of the detector) leaves the
        model of the epochs before it.
        ``kernel_weights_`` is recorded after each epoch.

        >>> import numpy as np
        >>> X = np.array([[0.0, 1.0], [1.0, 0.0]] * 10)
        >>> y = [0, 1] * 10
        >>> MKLClassifier().fit(X, y, epochs=2).predict(X[:2])
        [0, 1]
        """
        rows = list(X) if not isinstance(X, np.ndarray) else list(X)
        self._fit([[r] for r in rows], [[t] for t in y], epochs, progress, shuffle)
        return self

    @synchronized
    def predict(self, X: Sequence[Any] | npt.NDArray[Any]) -> list[Hashable]:
        """Predicted labels of the rows of ``X`` (GIL released)."""
        rows = list(X)
        if self._state is None or not self._labels:
            return [None] * len(rows)
        if not rows:
            return []
        if self._precomputed:
            return [self.predict_one(r) for r in rows]
        m = self._predict_rows(rows)
        ids = self._predictor().predict_many(m, np.ones(len(rows), dtype=np.int64))
        return [self._labels[int(i)] for i in ids]

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {"loss": "crf", "average": True, "max_support": 30, "radius": 10.0}
        yield {"kernels": ["gaussian"], "regularizer": "l2_squared", "lam": 1e-3}
        yield {"passive_aggressive": True, "kernels": ["linear", "gaussian"]}
        from river import drift

        yield {
            "max_support": 20,
            "budget_rule": "oldest",
            "forgetting": 0.99,
            "drift_detector": drift.ADWIN(),  # type: ignore[no-untyped-call]
            "drift_reaction": "reset",
        }
        yield {"kernels": ["linear", RandomFourierFeatures(16)], "hash_features": 8}
        yield {"average": True, "linear_rate": 0.5, "linear_hedge": 0.3, "max_support": 20}


class SequenceTagger(_StreamMkl):
    """Linear-chain sequence tagger that learns a combination of kernels
    online (Alg. 3): emissions are kernel expansions over
    ``(position input, label)`` parts, transitions an explicit group of
    label bigrams plus start and stop weights; decoding is Viterbi.

    Parameters are those of :class:`MKLClassifier`; with the hinge loss
    ``cost`` is the Hamming cost per wrong position, with ``loss="crf"``
    the gradient uses the marginals from forward-backward.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> tagger = SequenceTagger()
    >>> for _ in range(300):  # labels alternate whatever the (noise) inputs
    ...     n = int(rng.integers(2, 7))
    ...     tagger.learn_one(rng.normal(size=(n, 2)), ["ab"[p % 2] for p in range(n)])
    >>> tagger.predict_one(rng.normal(size=(5, 2)))
    ['a', 'b', 'a', 'b', 'a']

    Over precomputed inputs, each position is an input id: here three
    inputs, a linear kernel's Gram matrix and the same features as an
    explicit group, both made once and shared by every model built on them.

    >>> x = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    >>> gram, feats = PrecomputedGram(x @ x.T), PrecomputedFeatures(x)
    >>> gram.n_inputs, (feats.n_inputs, feats.n_features)
    (3, (3, 2))
    >>> tagger = SequenceTagger(kernels={"K": gram}, explicit_groups={"x": feats})
    >>> ids, tags = [[0, 1], [1, 0], [2, 1]], [["a", "b"], ["b", "a"], ["c", "b"]]
    >>> tagger.fit(ids, tags, epochs=3).predict([[2, 1], [1, 0]])
    [['c', 'b'], ['b', 'a']]
    """

    _chain = True

    @property
    @synchronized
    def labels_(self) -> list[Hashable]:
        """Labels in order of first appearance."""
        return list(self._labels)

    @property
    @synchronized
    def transitions_(self) -> dict[str, npt.NDArray[np.float64]]:
        """Transition weights of the prediction iterate, indexed like
        ``labels_``: ``"bigram"`` (``L x L``, ``[previous, next]``),
        ``"start"`` and ``"stop"`` (``L``)."""
        if self._state is None:
            return {}
        t = self._state.transition_coef(bool(self.average))
        n = t.shape[1]
        return {"bigram": t[:n], "start": t[n], "stop": t[n + 1]}

    def _positions(self, xs: Any) -> list[Any]:
        if self._precomputed:
            return list(self._ids(xs))
        if isinstance(xs, np.ndarray):
            if xs.ndim != 2:
                raise ValueError(
                    f"invalid value for `xs`: expected an n x d array, got shape {xs.shape}"
                )
            return list(xs)
        if isinstance(xs, Mapping) or not isinstance(xs, Sequence):
            raise ValueError(
                f"invalid value for `xs`: expected a list of dicts or an n x d array, got {xs!r}"
            )
        return list(xs)

    @synchronized
    def learn_one(self, xs: Sequence[Any] | npt.ArrayLike, ys: Sequence[Hashable]) -> None:
        """One round on the sequence ``xs`` (a list of dicts or an ``n x d``
        array) labelled ``ys``; on error nothing changes."""
        pos = self._positions(xs)
        if len(pos) == 0:
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        self._learn_rows(pos, list(ys))

    @synchronized
    def predict_one(self, xs: Sequence[Any] | npt.ArrayLike) -> list[Hashable]:
        """The Viterbi labelling of ``xs`` (empty before any learning)."""
        pos = self._positions(xs)
        if len(pos) == 0:
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        if self._state is None:
            return []
        if self._precomputed:
            ids = self._state.predict_ids(self._ids(pos))
        else:
            ids = self._state.predict(self._predict_rows(pos))
        return [self._labels[int(i)] for i in ids]

    @synchronized
    def fit(
        self,
        X_seqs: Sequence[Any] | npt.NDArray[Any],
        Y_seqs: Sequence[Any] | npt.NDArray[Any],
        epochs: int = 1,
        progress: bool = False,
        shuffle: bool = False,
        lengths: Sequence[int] | npt.ArrayLike | None = None,
    ) -> SequenceTagger:
        """Learns ``epochs`` passes over the sequences, each pass in Rust
        with the GIL released (tqdm bar per epoch with ``progress=True``);
        nothing is learned if the data are invalid. With ``lengths`` (as in
        seqlearn), ``X_seqs`` and ``Y_seqs`` hold all positions of all
        sequences one after the other, and ``lengths`` the length of each
        sequence. ``shuffle=True`` visits the sequences in a new order each
        epoch, drawn from ``seed``. Same result as ``learn_one`` on each
        sequence in the order visited, drift detector included (called
        with the GIL after each round). On feature vectors, an epoch that
        fails (Ctrl-C, an error of the detector) leaves the model of the
        epochs before it.

        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X_seqs = [rng.normal(size=(n, 2)) for n in rng.integers(2, 7, size=100)]
        >>> Y_seqs = [["ab"[p % 2] for p in range(len(xs))] for xs in X_seqs]
        >>> tagger = SequenceTagger().fit(X_seqs, Y_seqs, epochs=2)
        >>> tagger.predict([rng.normal(size=(3, 2)), rng.normal(size=(2, 2))])
        [['a', 'b', 'a'], ['a', 'b']]
        >>> tagger.labels_, len(tagger.kernel_weights_history_)  # one beta per epoch
        (['a', 'b'], 2)
        """
        if lengths is not None:
            lens = np.asarray(lengths, dtype=np.int64)
            if lens.ndim != 1 or (lens < 1).any():
                raise ValueError(
                    f"invalid value for `lengths`: expected positive integers, got {lengths!r}"
                )
            if int(lens.sum()) != len(X_seqs) or len(Y_seqs) != len(X_seqs):
                raise ValueError(
                    f"shape mismatch for `lengths`: they sum to {int(lens.sum())}, but X_seqs "
                    f"has {len(X_seqs)} positions and Y_seqs {len(Y_seqs)} labels"
                )
            offsets = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=offsets[1:])
            if self._precomputed:
                if not isinstance(epochs, int) or epochs < 1:
                    raise ValueError(
                        f"invalid value for `epochs`: expected an integer >= 1, got {epochs!r}"
                    )
                flat = (self._ids(X_seqs), offsets)
                self._fit_ids(None, Y_seqs, epochs, progress, shuffle, flat=flat)
                return self
            X_seqs = [X_seqs[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
            Y_seqs = [Y_seqs[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
        seqs = [self._positions(xs) for xs in X_seqs]
        self._fit(seqs, [list(ys) for ys in Y_seqs], epochs, progress, shuffle)
        return self

    @synchronized
    def predict(self, X_seqs: Sequence[Any]) -> list[list[Hashable]]:
        """Viterbi labellings of many sequences (GIL released)."""
        seqs = [self._positions(xs) for xs in X_seqs]
        if any(len(s) == 0 for s in seqs):
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        if self._state is None:
            return [[] for _ in seqs]
        if not seqs:
            return []
        if self._precomputed:
            return [self.predict_one(s) for s in seqs]
        m = self._predict_rows([x for s in seqs for x in s])
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        ids = self._state.predict_many(m, lens)
        out, off = [], 0
        for n in lens:
            out.append([self._labels[int(i)] for i in ids[off : off + n]])
            off += n
        return out


# --------------------------------------------------------------------------
# the random-feature model

#: Bandwidth factors of :func:`random_feature_classifier`: ``sigma2 = d f``.
RANDOM_FEATURE_FACTORS = (1 / 16, 1 / 8, 1 / 4)

#: Step-size multipliers of the groups of :data:`RANDOM_FEATURE_FACTORS`
#: in :func:`random_feature_classifier` (the ``rates`` of
#: :class:`MKLClassifier`): the wider Gaussians move faster.
RANDOM_FEATURE_RATES = (1.0, 1.5, 2.0)

#: :class:`MKLClassifier` arguments of :func:`random_feature_classifier`
#: (the rest are the classifier's defaults).
RANDOM_FEATURE_CONFIG: dict[str, Any] = {
    "forgetting": 0.993,
    "forget_on_mistakes": True,
    "forget_after": DEFAULT_MAX_SUPPORT,
    "passive_aggressive": True,
}


def random_feature_classifier(
    n_components: int = 999,
    factors: Sequence[float] = RANDOM_FEATURE_FACTORS,
    orthogonal: bool = True,
    seed: int = 0,
    linear: bool = True,
    pairs: bool = True,
    factor_rates: Sequence[float] | None = None,
    **kwargs: Any,
) -> MKLClassifier:
    """An :class:`omkl.MKLClassifier` whose groups are explicit only (no
    support set, constant cost per example): the linear group (``linear``)
    and ``n_components`` random Fourier features in all (cosine and sine
    pairs with ``pairs``), split evenly over the Gaussians at
    ``sigma2 = d f`` for ``f`` in ``factors`` (seeds ``seed``, ``seed + 1``,
    ...), with :data:`RANDOM_FEATURE_CONFIG`; ``kwargs`` override it and set
    the classifier's other arguments. ``factor_rates`` gives the step-size
    multiplier of each factor's group (default: :data:`RANDOM_FEATURE_RATES`
    with the default factors, else 1 for every group).

    This is the random-feature model measured against the exact default
    :class:`MKLClassifier` (``benches/README.md``, ``bench_features.py``).
    A linear model on the random features wants another step than the exact
    expansion: forgetting lets it follow moving concepts, as the exact
    model's budget does by dropping its oldest support inputs. It forgets
    after its mistakes only (``forget_on_mistakes=True``, by
    ``forgetting=0.993`` each), so that a model that is right keeps what it
    learned on a stationary stream and one that errs often forgets fast,
    and only after its first 500 mistakes (``forget_after``): the exact
    default's budget of 500 support inputs (each mistake adds one) drops
    none until it is full.
    The passive-aggressive step (``passive_aggressive=True``) moves it no
    further than the example needs, and the wider Gaussians take larger
    steps (:data:`RANDOM_FEATURE_RATES`). It keeps the classifier's drift
    detector: the alarms restart the step size of the hedging linear model
    (``linear_hedge``), whose ``1/sqrt(t)`` step would otherwise shrink
    until, on a long drifting stream, the hedge no longer follows the
    concept.

    When it pays: its cost per example is fixed, about that of an exact
    expansion over a few hundred support inputs (``n_components`` features
    of the input against, for the exact model, one Gaussian row per support
    input and kernel). An exact model's cost grows with its support set,
    one input per mistake: without a budget (``max_support=None``) it grows
    with the stream, and there the random features are many times faster;
    with the default budget of 500, on a short stream or one with few
    mistakes, the exact model's support set stays small and it costs at most
    about twice as much (``benches/README.md``, "The exact model without a
    budget").

    Examples
    --------
    >>> model = random_feature_classifier()
    >>> model.kernels  # doctest: +NORMALIZE_WHITESPACE
    ['linear', RandomFourierFeatures(333, factor=0.0625, seed=0, orthogonal=True, pairs=True),
     RandomFourierFeatures(333, factor=0.125, seed=1, orthogonal=True, pairs=True),
     RandomFourierFeatures(333, factor=0.25, seed=2, orthogonal=True, pairs=True)]
    >>> model.rates
    {'rff': 1.0, 'rff_1': 1.5, 'rff_2': 2.0}
    >>> model.forgetting, model.forget_on_mistakes, model.forget_after
    (0.993, True, 500)
    >>> model.passive_aggressive
    True
    >>> model.drift_detector
    'ADWIN'

    On array rows (dict rows need ``hash_features``), the sign of ``a * b``,
    which no linear model separates:

    >>> rng = np.random.default_rng(0)
    >>> right = 0
    >>> for t in range(2000):
    ...     x = rng.normal(size=2)
    ...     y = bool(x[0] * x[1] > 0)
    ...     right += t >= 1000 and model.predict_one(x) == y
    ...     model.learn_one(x, y)
    >>> right / 1000 > 0.9, model.n_support_
    (True, 0)

    Bad arguments raise ``ValueError`` naming them:

    >>> random_feature_classifier(factors=())
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `factors`: expected at least one bandwidth factor, got ()
    >>> random_feature_classifier(n_components=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `n_components`: expected an integer >= 3 ..., got 2
    >>> random_feature_classifier(factor_rates=(1.0, 2.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `factor_rates`: expected one multiplier per factor (3), ...
    """
    fs = tuple(factors)
    if not fs:
        raise ValueError(
            f"invalid value for `factors`: expected at least one bandwidth factor, got {factors!r}"
        )
    for i, f in enumerate(fs):
        check_positive(f"factors[{i}]", f)
    if (
        isinstance(n_components, bool)
        or not isinstance(n_components, int)
        or n_components < len(fs)
    ):
        raise ValueError(
            f"invalid value for `n_components`: expected an integer >= {len(fs)} (one feature "
            f"per factor at least), got {n_components!r}"
        )
    check_int("seed", seed, 0)
    if not isinstance(linear, bool):
        raise ValueError(f"invalid value for `linear`: expected True or False, got {linear!r}")
    if factor_rates is None:
        factor_rates = RANDOM_FEATURE_RATES if fs == RANDOM_FEATURE_FACTORS else (1.0,) * len(fs)
    rs = tuple(factor_rates)
    if len(rs) != len(fs):
        raise ValueError(
            f"invalid value for `factor_rates`: expected one multiplier per factor ({len(fs)}), "
            f"got {factor_rates!r}"
        )
    each = n_components // len(fs)
    groups = [
        RandomFourierFeatures(each, factor=f, seed=seed + i, orthogonal=orthogonal, pairs=pairs)
        for i, f in enumerate(fs)
    ]
    kernels: list[Any] = (["linear"] if linear else []) + groups
    # the names that MKLClassifier gives the groups: rff, rff_1, rff_2, ...
    rates = {("rff" if i == 0 else f"rff_{i}"): r for i, r in enumerate(rs)}
    return MKLClassifier(kernels=kernels, **{**RANDOM_FEATURE_CONFIG, "rates": rates, **kwargs})
