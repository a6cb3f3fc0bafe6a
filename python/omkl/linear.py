"""Streaming linear models trained by online proximal learning (Alg. 1).

The estimators follow river's conventions (``learn_one`` / ``predict_one`` on
dict features) and keep their state in the Rust core.

Features are **grouped**: a feature ``"word_the"`` belongs to the group
``"word"``, the part of its name before the first ``separator`` (default
``"_"``); a name without the separator is a group of its own. An explicit
mapping ``groups={feature name: group name}`` overrides this rule for the
names it lists. Inside its group, a feature goes to bucket
``xxh3_64(name, seed=HASH_SEED) mod n_buckets`` of the group's own table, so
features of different groups never share a weight. Non-string keys are
converted with ``str()``.

Regularisers are given as ``(name, *params)`` tuples, or a list of them for
composite regularisation (J > 1 prox steps per round, applied in order):

============================  ==========================================
``("l1", lam)``               ``lam * ||w||_1``
``("l2_squared", lam)``       ``lam / 2 * ||w||_2^2``
``("group_lasso", lam)``      ``lam * sum_g ||w_g||``
``("squared_l21", lam)``      ``lam / 2 * (sum_g ||w_g||)^2`` (MKL)
``("elastic_net_mkl", lam, r)``  ``lam * [r sum_g ||w_g|| + (1 - r)/2 sum_g ||w_g||^2]``
``("l2q", lam, q)``           ``lam * sum_g ||w_g||^q`` (q >= 1)
``("sparse_group_lasso", l1, l2)``  ``l1 ||w||_1 + l2 sum_g ||w_g||``
``("l1_ball", radius)``       projection onto ``||w||_1 <= radius``
``("l21_ball", radius)``      projection onto ``sum_g ||w_g|| <= radius``
============================  ==========================================

A group's norm covers all its features and, for classifiers, all classes.

Examples
--------
Features ``signal_a`` and ``signal_b`` form the group ``signal``, ``noise_a``
and ``noise_b`` the group ``noise``; the labels depend on the signal only,
and the group lasso keeps the noise group's weights small:

>>> import numpy as np
>>> import omkl
>>> rng = np.random.default_rng(0)
>>> xs = [dict(zip(["signal_a", "signal_b", "noise_a", "noise_b"], rng.normal(size=4)))
...       for _ in range(500)]
>>> ys = ["pos" if x["signal_a"] + x["signal_b"] > 0 else "neg" for x in xs]
>>> model = omkl.ProximalClassifier(regularizer=("group_lasso", 0.05))
>>> for x, y in zip(xs, ys):
...     model.learn_one(x, y)
>>> norms = model.group_norms_
>>> sorted(norms), norms["noise"] < 0.1 * norms["signal"]
(['noise', 'signal'], True)
>>> model.predict_one({"signal_a": 2.0, "signal_b": 1.0}), model.classes_
('pos', ['neg', 'pos'])

``learn_batch`` learns the same examples in one call (in Rust, with the GIL
released) and gives the same model:

>>> batch = omkl.ProximalClassifier(regularizer=("group_lasso", 0.05))
>>> batch.learn_batch(xs, ys)
>>> batch.group_norms_ == norms, batch.n_rounds_
(True, 500)

``groups`` names the group of the features it lists; other features keep
the separator rule (here ``x3`` has no separator and is a group of its own):

>>> reg = omkl.ProximalRegressor(groups={"x1": "inputs", "x2": "inputs"})
>>> reg.learn_one({"x1": 1.0, "x2": 0.5, "x3": 2.0}, 3.0)
>>> sorted(reg.group_norms_)
['inputs', 'x3']
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from river import base

from omkl import _omkl
from omkl._classifier import SoftmaxClassifier
from omkl._drift import DRIFT_REACTIONS, detector_from
from omkl._params import SCHEDULES, check_choice, check_int, check_real, renamed
from omkl._persist import BytesState, IndependentCopies, Persistent, index_of
from omkl._sync import Synchronized, synchronized

__all__ = ["ProximalClassifier", "ProximalRegressor"]

Regularizer = tuple[Any, ...]

#: Deprecated constructor names of the Alg. 1 estimators and their new names.
_ALIASES = {"learning_rate": "schedule", "averaged": "average"}


def _regularizers(
    spec: Regularizer | Sequence[Regularizer] | None,
) -> list[tuple[_omkl._Regularizer, list[float]]]:
    """Normalises a regulariser spec to ``[(name, [params...]), ...]``."""
    if spec is None:
        return []
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        spec = [spec]
    if isinstance(spec, str) or not isinstance(spec, Iterable):
        raise ValueError(
            "invalid value for `regularizer`: expected None, a tuple (name, *params) "
            f"or a list of such tuples, got {spec!r}"
        )
    out: list[tuple[_omkl._Regularizer, list[float]]] = []
    for item in spec:
        if not (isinstance(item, (tuple, list)) and item and isinstance(item[0], str)):
            raise ValueError(
                f"invalid value for `regularizer`: expected a tuple (name, *params), got {item!r}"
            )
        try:
            params = [float(p) for p in item[1:]]
        except (TypeError, ValueError):
            raise ValueError(
                f"invalid value for `regularizer`: parameters of {item[0]!r} must be numbers, "
                f"got {list(item[1:])!r}"
            ) from None
        out.append((cast("_omkl._Regularizer", item[0]), params))
    return out


def _group_map(groups: Mapping[Any, Any] | None, key: str, value: str) -> dict[str, str]:
    """``groups`` as ``{str: str}`` (``{}`` for ``None``); ``ValueError``
    unless it is ``None`` or a mapping ``{key: value}``."""
    if groups is not None and not isinstance(groups, Mapping):
        raise ValueError(
            f"invalid value for `groups`: expected None or a dict {{{key}: {value}}}, "
            f"got {groups!r}"
        )
    return {} if groups is None else {str(k): str(v) for k, v in groups.items()}


class _HashedGroups(Synchronized, Persistent, BytesState, IndependentCopies, base.Base):
    """Base of the estimators on hashed grouped sparse features (Alg. 1 on
    one example or on a chain): the core learner's shared arguments, the
    group norms, the round count, pickling and the save layout."""

    _state: Any
    regularizer: Regularizer | Sequence[Regularizer] | None
    schedule: str
    eta0: float
    sigma: float
    radius: float | None
    average: bool
    fit_intercept: bool
    groups: Mapping[str, str] | None
    n_buckets: int

    _SAVE_VERSION = 1
    _SAVE_SECTIONS = (1,)

    def _learner_args(
        self,
    ) -> tuple[
        _omkl._Schedule,
        float,
        float,
        list[tuple[_omkl._Regularizer, list[float]]],
        float | None,
        bool,
        bool,
    ]:
        """The schedule, ``eta0``, ``sigma``, regularisers, radius, averaging
        and intercept arguments of the core learner, checked."""
        return (
            cast("_omkl._Schedule", check_choice("schedule", self.schedule, SCHEDULES)),
            float(self.eta0),
            float(self.sigma),
            _regularizers(self.regularizer),
            None if self.radius is None else float(self.radius),
            bool(self.average),
            bool(self.fit_intercept),
        )

    @property
    @synchronized
    def group_norms_(self) -> dict[str, float]:
        """``{group: ||w_g||}`` of the prediction model (averaged or last);
        a tagger's transitions are the group ``"<transitions>"``."""
        return dict(self._state.group_norms())

    @property
    @synchronized
    def n_rounds_(self) -> int:
        """Number of examples (sequences, for a tagger) learned so far."""
        return int(self._state.rounds)


class _Proximal(_HashedGroups):
    _state: _omkl.OnlineProximalLearner
    _loss_name: _omkl._Loss
    separator: str
    drift_detector: Any
    drift_reaction: str
    _detector: Any
    n_drifts_: int

    #: Constructor parameters shared by both estimators.
    _PARAMS = (
        "regularizer",
        "schedule",
        "eta0",
        "sigma",
        "radius",
        "average",
        "fit_intercept",
        "separator",
        "groups",
        "n_buckets",
        "drift_detector",
        "drift_reaction",
    )

    def _configure(self, given: dict[str, Any], *own: str) -> None:
        """Stores the constructor's arguments ``given`` (its ``locals()``,
        with the deprecated names in ``given["kwargs"]`` mapped to the new
        ones) as same-named attributes, ``own`` names first, and builds the
        learner."""
        new = renamed(type(self), given["kwargs"], _ALIASES, given, stacklevel=4)
        for name in (*own, *self._PARAMS):
            setattr(self, name, new.get(name, given[name]))
        self._state = self._make_state()
        check_choice("drift_reaction", self.drift_reaction, DRIFT_REACTIONS)
        real_valued = self._loss_name == "squared"
        self._detector = detector_from(self.drift_detector, "drift_detector", real_valued)
        self.n_drifts_ = 0

    def _watch(self, error: float) -> None:
        """Feeds a round's error (made before its update) to the drift
        detector (the caller checks there is one), and reacts when it
        fires."""
        det = self._detector
        det.update(error)
        if det.drift_detected:
            self.n_drifts_ += 1
            if self.drift_reaction == "reset":
                self._state.reset_weights()
            else:
                self._state.restart_schedule()

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        # pickles from before the drift options
        for key, value in (
            ("drift_detector", None),
            ("drift_reaction", "restart"),
            ("_detector", None),
            ("n_drifts_", 0),
        ):
            state.setdefault(key, value)
        super().__setstate__(state)

    def _make_state(self) -> _omkl.OnlineProximalLearner:
        groups = _group_map(self.groups, "feature name", "group name")
        return _omkl.OnlineProximalLearner(
            self._loss_name,
            self._learner_args(),
            getattr(self, "clip_gradient", None),
            self.separator,
            groups,
            check_int("n_buckets", self.n_buckets, 1),
        )

    @property
    @synchronized
    def selected_groups_(self) -> list[str]:
        """Groups with a non-zero weight norm, in order of first appearance."""
        return [g for g, n in self._state.group_norms() if n > 0.0]

    _STATE_TYPE = _omkl.OnlineProximalLearner

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        state = {"classes": getattr(self, "_classes", None), "n_drifts": self.n_drifts_}
        return state, [self._state.to_bytes()]

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        self._state = _omkl.OnlineProximalLearner.from_bytes(sections[0])
        self.n_drifts_ = check_int("n_drifts", state.get("n_drifts", 0), 0)
        classes = state["classes"]
        if classes is not None:
            if not isinstance(classes, list) or len(classes) > self._state.n_outputs:
                raise ValueError("the saved classes do not match the learner's outputs")
            self._classes = classes
            self._class_index = index_of(classes, "classes")


# river types class labels as bool | str | int; these classifiers take any hashable label
class ProximalClassifier(SoftmaxClassifier, _Proximal, base.Classifier):  # type: ignore[misc]
    """Multiclass linear classifier trained online by proximal steps (Alg. 1).

    Each round takes a subgradient step on the loss, then one prox step per
    regulariser, then (if ``radius`` is set) projects onto the Euclidean ball
    ``||w|| <= radius``. Classes are learned as they appear; labels may be
    any hashable.

    Parameters
    ----------
    loss
        ``"log"`` (multiclass logistic) or ``"hinge"`` (multiclass hinge,
        loss-augmented with cost 1).
    regularizer
        A ``(name, *params)`` tuple, a list of them, or ``None`` (see the
        module docs for the names).
    schedule
        Learning-rate schedule: ``"constant"`` (``eta0``), ``"inv_sqrt"``
        (``eta0 / sqrt(t)``) or ``"inv_linear"`` (``1 / (sigma t)``).
        Formerly ``learning_rate`` (deprecated alias).
    eta0
        Base step size of ``"constant"`` and ``"inv_sqrt"``.
    sigma
        Strong-convexity modulus of ``"inv_linear"``.
    radius
        Radius of the optional projection onto an Euclidean ball.
    average
        Predict with the average of all iterates instead of the last one.
        Formerly ``averaged`` (deprecated alias).
    fit_intercept
        Learn an unregularised intercept per class.
    separator
        Groups features by the prefix of their name before this string.
    groups
        Explicit ``{feature name: group name}`` assignments.
    n_buckets
        Size of each group's hash table.
    drift_detector
        ``None``, a river drift detector (``river.drift.ADWIN()``, a binary
        one such as ``river.drift.binary.DDM()`` for the classifier) or the
        name of a class of ``river.drift`` (``"ADWIN"``). A copy of it is fed,
        in ``learn_one`` (not ``learn_batch``), the error of the prediction
        made before each update: 0/1 for the classifier, the absolute error
        for the regressor (which needs a real-valued detector). ``n_drifts_``
        counts its alarms.
    drift_reaction
        What an alarm does: ``"restart"`` restarts the step-size schedule
        (``eta0 / sqrt(t)`` counts ``t`` from the alarm); ``"reset"`` also
        zeroes the weights and intercepts. The averaged model (``average``)
        keeps the rounds before the alarm in its average.
    **kwargs
        Deprecated names of the parameters above (``learning_rate``,
        ``averaged``), accepted for one release with a ``DeprecationWarning``;
        see ``docs/configuration.md``.

    ``predict_proba_one`` is the softmax of the class scores; for the hinge
    loss this is a monotone calibration-free mapping of the scores.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import omkl
    >>> model = preprocessing.StandardScaler() | omkl.ProximalClassifier(
    ...     regularizer=[("group_lasso", 1e-4), ("l2_squared", 1e-4)]
    ... )
    >>> metric = evaluate.progressive_val_score(
    ...     datasets.ImageSegments(), model, metrics.Accuracy()
    ... )
    >>> metric.get() > 0.85
    True

    With a drift detector, the step size restarts when the concept changes
    (here the label of each input flips at sample 2,000):

    >>> model = omkl.ProximalClassifier(drift_detector="ADWIN")
    >>> for i in range(4000):
    ...     model.learn_one({"a": float(i % 2)}, (i % 2 == 0) == (i < 2000))
    >>> model.n_drifts_ >= 1, model.predict_one({"a": 1.0})
    (True, True)
    """

    _loss_name = "log"

    def __init__(
        self,
        loss: str = "log",
        regularizer: Regularizer | Sequence[Regularizer] | None = (("group_lasso", 1e-4),),
        schedule: str = "inv_sqrt",
        eta0: float = 1.0,
        sigma: float = 1.0,
        radius: float | None = None,
        average: bool = False,
        fit_intercept: bool = True,
        separator: str = "_",
        groups: Mapping[str, str] | None = None,
        n_buckets: int = 64,
        drift_detector: base.DriftDetector | base.BinaryDriftDetector | str | None = None,
        drift_reaction: str = "restart",
        **kwargs: Any,
    ):
        if loss not in ("log", "hinge"):
            raise ValueError(f"invalid value for `loss`: expected 'log' or 'hinge', got {loss!r}")
        self._loss_name = loss
        self._configure(locals(), "loss")
        self._classes: list[Hashable] = []
        self._class_index: dict[Hashable, int] = {}

    def _class_list(self) -> list[Hashable]:
        return self._classes

    def learn_one(self, x: dict[Hashable, Any], y: Hashable) -> None:
        with self._lock:
            watched = self._detector is not None
            wrong = watched and (
                not self._classes or self._classes[self._state.predict_class(x)] != y
            )
            k = self._class_index.get(y)
            if k is not None:
                self._state.learn_class(x, k)
            else:
                k = len(self._classes)
                self._state.learn_class(x, k)
                self._classes.append(y)
                self._class_index[y] = k
            if watched:
                self._watch(float(wrong))

    @synchronized
    def learn_batch(self, xs: Sequence[dict[Hashable, Any]], ys: Sequence[Hashable]) -> None:
        """Learns many examples in order, in Rust, with the GIL released.

        Same result as calling ``learn_one`` on each pair. On a bad example,
        the ones before it stay learned and ``ValueError`` names it.
        """
        if len(xs) != len(ys):
            raise ValueError(f"expected as many targets as examples ({len(xs)}), got {len(ys)}")
        n_before = len(self._classes)
        ks = []
        for y in ys:
            k = self._class_index.get(y)
            if k is None:
                k = len(self._classes)
                self._classes.append(y)
                self._class_index[y] = k
            ks.append(k)
        try:
            self._state.learn_many_classes(list(xs), ks)
        except BaseException:
            n_keep = self._state.n_outputs if self._state.rounds > 0 else 0
            n_keep = max(n_keep, n_before)
            for y in self._classes[n_keep:]:
                del self._class_index[y]
            del self._classes[n_keep:]
            raise

    def _scores(self, x: dict[Hashable, Any]) -> list[float]:
        return self._state.scores(x)[: len(self._classes)]

    def predict_one(self, x: dict[Hashable, Any]) -> Hashable | None:  # type: ignore[override]
        with self._lock:
            if not self._classes:
                return None
            return self._classes[self._state.predict_class(x)]

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {"loss": "hinge", "regularizer": [("squared_l21", 1e-3)], "average": True}
        yield {"drift_detector": "ADWIN", "drift_reaction": "reset"}


class ProximalRegressor(_Proximal, base.Regressor):
    """Linear regressor (squared loss) trained online by proximal steps (Alg. 1).

    Parameters are those of :class:`ProximalClassifier`, without ``loss``,
    plus ``clip_gradient``: the residual ``prediction - y`` used in each step
    is clipped to ``[-clip_gradient, clip_gradient]`` (``None``: no clipping),
    a guard against divergence on unscaled features.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> import omkl
    >>> model = preprocessing.StandardScaler() | omkl.ProximalRegressor(
    ...     regularizer=("group_lasso", 1e-3)
    ... )
    >>> metric = evaluate.progressive_val_score(
    ...     datasets.TrumpApproval(), model, metrics.MAE()
    ... )
    >>> metric.get() < 2.0
    True
    """

    _loss_name = "squared"

    def __init__(
        self,
        regularizer: Regularizer | Sequence[Regularizer] | None = (("group_lasso", 1e-4),),
        schedule: str = "inv_sqrt",
        eta0: float = 0.1,
        sigma: float = 1.0,
        radius: float | None = None,
        average: bool = False,
        fit_intercept: bool = True,
        clip_gradient: float | None = 1e12,
        separator: str = "_",
        groups: Mapping[str, str] | None = None,
        n_buckets: int = 64,
        drift_detector: base.DriftDetector | base.BinaryDriftDetector | str | None = None,
        drift_reaction: str = "restart",
        **kwargs: Any,
    ):
        self._configure(locals(), "clip_gradient")

    def learn_one(self, x: dict[Hashable, Any], y: float) -> None:
        with self._lock:
            target = check_real("y", y)
            watched = self._detector is not None
            error = abs(self._state.scores(x)[0] - target) if watched else 0.0
            self._state.learn_value(x, target)
            if watched:
                self._watch(error)

    @synchronized
    def learn_batch(self, xs: Sequence[dict[Hashable, Any]], ys: Sequence[float]) -> None:
        """Learns many examples in order, in Rust, with the GIL released."""
        if len(xs) != len(ys):
            raise ValueError(f"expected as many targets as examples ({len(xs)}), got {len(ys)}")
        self._state.learn_many_values(list(xs), [check_real("y", y) for y in ys])

    def predict_one(self, x: dict[Hashable, Any]) -> float:
        with self._lock:
            return self._state.scores(x)[0]

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {"regularizer": [("l1", 1e-3), ("l2_squared", 1e-3)], "average": True}
        yield {"drift_detector": "ADWIN"}
