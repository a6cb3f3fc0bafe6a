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
spans the scale rule (and the median heuristic, ``sigma2`` = half the
median squared distance, which is ``0.68 d`` to ``0.97 d`` on the streams
of the benchmark) and reaches mostly below it: narrow Gaussians follow the
classes at the scale of near neighbours, whose distances are much smaller
than the typical one. The grid is fixed (no warm-up), so the model is the
same whatever the order of the first examples. The dot products are shared
by all kernels; each Gaussian adds one exponential per support input and a
row of label scores, so the default is slower than linear plus one
Gaussian (about 1.4 times per sample on ImageSegments, whole pipeline,
``benches/bench_mkl_classifier.py``); pass ``kernels=["linear",
"gaussian"]`` for the cheaper model.
Features should be standardised, e.g. with
``river.preprocessing.StandardScaler() | model``.

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
each round, while there are more than ``B``, the support input whose
coefficients have the smallest ``sum_k sum_y |alpha_k[j, y]|`` (over
kernels and labels, current iterate) is removed (ties: lowest index), and
each group norm is updated exactly. Memory then stays bounded on an
endless stream.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from river import base

from omkl import _omkl
from omkl._omkl import Kernel
from omkl._persist import index_of, load_estimator, named_errors, save_estimator

__all__ = ["BANDWIDTH_GRID", "MKLClassifier", "SequenceTagger"]

SAVE_FORMAT_VERSION = 2

KernelSpec = Kernel | str


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


def _kernel_list(
    kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None,
    default: list[tuple[str, Any]] = _LINEAR_GAUSSIAN,
) -> list[tuple[str, Any]]:
    """``[(name, kernel or name)]`` from the ``kernels`` argument."""
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
            base_name = k if isinstance(k, str) else k.kind
            n = seen.get(base_name, 0)
            seen[base_name] = n + 1
            items.append((base_name if n == 0 else f"{base_name}_{n}", k))
    for name, k in items:
        if not isinstance(k, (str, Kernel)):
            raise ValueError(
                f"invalid value for `kernels[{name!r}]`: expected an omkl.Kernel or a name, "
                f"got {k!r}"
            )
        if isinstance(k, str) and k not in ("linear", "polynomial", "gaussian", "b1_spline"):
            raise ValueError(
                f"invalid value for `kernels[{name!r}]`: expected 'linear', 'polynomial', "
                f"'gaussian' or 'b1_spline', got {k!r}"
            )
    if not items:
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


def _sort_key(k: Hashable) -> tuple[str, str]:
    return (type(k).__name__, str(k))


class _StreamMkl(base.Base):
    """Shared state handling of :class:`MKLClassifier` and :class:`SequenceTagger`."""

    _chain = False
    _default_kernels = _LINEAR_GAUSSIAN

    def __init__(
        self,
        kernels: Sequence[KernelSpec] | Mapping[str, KernelSpec] | None = None,
        explicit_groups: Mapping[str, Sequence[Hashable]] | None = None,
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
        if not isinstance(passive_aggressive, bool):
            raise ValueError(
                f"invalid value for `passive_aggressive`: expected True or False, "
                f"got {passive_aggressive!r}"
            )
        self._kernel_specs = _kernel_list(kernels, self._default_kernels)
        if loss not in ("hinge", "crf", "log"):
            raise ValueError(
                f"invalid value for `loss`: expected 'hinge' or 'crf' (alias 'log'), got {loss!r}"
            )
        if max_support is not None and (not isinstance(max_support, int) or max_support < 1):
            raise ValueError(
                f"invalid value for `max_support`: expected None or an integer >= 1, "
                f"got {max_support!r}"
            )
        groups = {} if explicit_groups is None else dict(explicit_groups)
        self._group_names = [str(g) for g in groups]
        self._group_members = [list(v) for v in groups.values()]
        self._state: _omkl.StreamMkl | None = None
        self._input: str | None = None  # "dict" or "array"
        self._features: list[Hashable] = []
        self._feature_index: dict[Hashable, int] = {}
        self._labels: list[Hashable] = []
        self._label_index: dict[Hashable, int] = {}
        # fail early on bad hyperparameters
        self._make_state(1, 1, check_only=True)

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
                else:
                    idx.append(self._feature_index[f])
            cols.append(idx)
        return cols

    def _make_state(self, d: int, n_labels: int, check_only: bool = False) -> _omkl.StreamMkl:
        kernels = [_build_kernel(k, d) for _, k in self._kernel_specs]
        explicit = [[0] for _ in self._group_names] if check_only else self._explicit_columns(d)
        return _omkl.StreamMkl(
            kernels,
            explicit,
            d,
            n_labels,
            chain=self._chain,
            loss=self.loss,
            regularizer=self.regularizer,
            lam=float(self.lam),
            schedule=self.schedule,
            eta0=float(self.eta0),
            sigma=float(self.lam) if self.schedule == "inv_linear" else 1.0,
            cost=float(self.cost),
            average=bool(self.average),
            radius=None if self.radius is None else float(self.radius),
            max_support=self.max_support,
            history_every=int(self.history_every),
            passive_aggressive=self.passive_aggressive,
        )

    def _group_labels(self) -> list[str]:
        return [n for n, _ in self._kernel_specs] + self._group_names

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
        """Rows of ``xs`` as an ``n x d`` float32 matrix, with the feature
        names that would be new (dict inputs, ``learning=True``)."""
        if len(xs) == 0:
            raise ValueError("`x` must not be empty")
        kind = self._kind_of(xs[0])
        if kind == "array":
            for x in xs:
                self._kind_of(x)
            try:
                m = np.asarray(xs, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    "invalid value for `x`: expected rows of real numbers of equal length"
                ) from None
            if m.ndim != 2:
                raise ValueError(
                    f"invalid value for `x`: expected 1-D rows, got an array of shape {m.shape}"
                )
            d = m.shape[1] if self._state is None else self._state.dim
            if m.shape[1] != d:
                raise ValueError(
                    f"shape mismatch for `x`: expected {d} features (as in earlier rounds), "
                    f"got {m.shape[1]}"
                )
            if self._state is None and self._input is None and m.shape[1] == 0:
                raise ValueError("`x` must not be empty (0 features)")
            return np.ascontiguousarray(m, dtype=np.float32), []
        new: list[Hashable] = []
        seen_new: set[Hashable] = set()
        if learning:
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
                try:
                    m[i, j] = float(v)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"invalid value for `x[{k!r}]`: expected a real number, got {v!r}"
                    ) from None
        return m, new

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
            if k is None:
                k = len(index)
                index[y] = k
                new.append(y)
            ids.append(k)
        return ids, new

    def _commit_labels(self, new: list[Hashable]) -> None:
        for y in new:
            self._label_index[y] = len(self._labels)
            self._labels.append(y)

    def _learn_rows(self, xs: Sequence[Any], ys: Sequence[Hashable]) -> None:
        """One round on the example with rows ``xs`` and labels ``ys``;
        nothing changes if it fails."""
        if len(xs) != len(ys):
            raise ValueError(
                f"shape mismatch for `ys`: expected {len(xs)} labels (one per position), "
                f"got {len(ys)}"
            )
        m, new_features = self._rows(xs, learning=True)
        ids, new_labels = self._label_ids(ys)
        n_labels = len(self._labels) + len(new_labels)
        kind = self._kind_of(xs[0])
        state = self._state
        if state is None:
            saved = (self._input, self._features, self._feature_index)
            self._input = kind
            self._features = list(new_features)
            self._feature_index = {f: i for i, f in enumerate(new_features)}
            try:
                state = self._make_state(m.shape[1], max(n_labels, 1))
            finally:
                self._input, self._features, self._feature_index = saved
        state.learn(m, np.asarray(ids, dtype=np.int64), n_labels, grow_dim=kind == "dict")
        self._state = state
        self._commit_features(kind, new_features)
        self._commit_labels(new_labels)

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
            raise ValueError(
                f"shape mismatch for `y`: expected {len(seqs)} targets (one per example), "
                f"got {len(labels)}"
            )
        if len(seqs) == 0:
            raise ValueError("`X` must not be empty")
        for s, ys in zip(seqs, labels, strict=True):
            if len(s) != len(ys):
                raise ValueError(
                    f"shape mismatch for `y`: expected {len(s)} labels for a sequence of "
                    f"{len(s)} positions, got {len(ys)}"
                )
            if len(s) == 0:
                raise ValueError("`x` must not be empty (a sequence of length 0)")
        flat = [x for s in seqs for x in s]
        m, new_features = self._rows(flat, learning=True)
        ids, new_labels = self._label_ids([y for ys in labels for y in ys])
        n_labels = len(self._labels) + len(new_labels)
        kind = self._kind_of(flat[0])
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        y_all = np.asarray(ids, dtype=np.int64)
        # Learn on a copy: the model changes only if the first epoch is valid.
        if self._state is None:
            saved = (self._input, self._features, self._feature_index)
            self._input = kind
            self._features = list(new_features)
            self._feature_index = {f: i for i, f in enumerate(new_features)}
            try:
                # labels enter as they are met, as with learn_one
                state = self._make_state(m.shape[1], 1)
            finally:
                self._input, self._features, self._feature_index = saved
        else:
            state = _omkl.StreamMkl.from_bytes(self._state.to_bytes())
            if m.shape[1] > state.dim:
                state.grow(m.shape[1], state.n_labels)
        rng = np.random.default_rng(self.seed)
        offsets = np.concatenate([[0], np.cumsum(lens)])
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
                else:
                    em, el, ey = m, lens, y_all
                loss = state.learn_many(np.ascontiguousarray(em), el, ey, n_labels)
                state.record_beta()
                if epoch == 0:
                    self._state = state
                    self._commit_features(kind, new_features)
                    self._commit_labels(new_labels)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss / len(seqs):.4g}", support=state.n_support)
        finally:
            if bar is not None:
                bar.close()

    def _predict_rows(self, xs: Sequence[Any]) -> npt.NDArray[np.float32]:
        m, _ = self._rows(xs, learning=False)
        assert self._state is not None
        return m

    # --- fitted attributes ------------------------------------------------

    @property
    def kernel_weights_(self) -> dict[str, float]:
        """``{group name: beta}`` over the kernels and explicit groups,
        ``beta_k = ||theta_k|| / sum_l ||theta_l||`` (current iterate;
        uniform before any update)."""
        names = self._group_labels()
        if self._state is None:
            return {n: 1.0 / len(names) for n in names}
        return dict(zip(names, self._state.beta(), strict=True))

    @property
    def kernel_weights_history_(self) -> list[tuple[int, dict[str, float]]]:
        """The ``beta`` trajectory: ``(round, {name: beta})`` recorded every
        ``history_every`` rounds (if > 0) and after every epoch of ``fit``."""
        if self._state is None:
            return []
        names = self._group_labels()
        rounds, betas = self._state.beta_history()
        return [(r, dict(zip(names, b, strict=True))) for r, b in zip(rounds, betas, strict=True)]

    @property
    def n_support_(self) -> int:
        """Number of (distinct) support inputs of the kernel expansions."""
        return 0 if self._state is None else self._state.n_support

    @property
    def n_rounds_(self) -> int:
        """Number of examples learned so far."""
        return 0 if self._state is None else self._state.rounds

    # --- persistence ------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_state"] = None if self._state is None else self._state.to_bytes()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if state["_state"] is not None:
            state["_state"] = _omkl.StreamMkl.from_bytes(state["_state"])
        self.__dict__.update(state)

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + (0 if self._state is None else self._state.nbytes)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Saves the model to ``path`` atomically (see :func:`omkl._persist.save_bytes`):
        one checksummed file with the constructor parameters, the feature
        names and labels, and the core state. The file keeps an existing
        file's mode and is written through a symbolic link to its target."""
        state = {"input": self._input, "features": self._features, "labels": self._labels}
        sections = [] if self._state is None else [self._state.to_bytes()]
        save_estimator(self, path, SAVE_FORMAT_VERSION, state, sections)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Loads a model saved by :meth:`save`. ``FileNotFoundError`` if
        ``path`` is missing; ``ValueError`` naming the file if it is not a
        saved model of this class, was saved by an older format, or is
        truncated or corrupted.

        >>> import pathlib, tempfile
        >>> m = MKLClassifier().fit([[0.0, 1.0], [1.0, 0.0]] * 10, ["a", "b"] * 10, epochs=2)
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.omkl"
        >>> m.save(p)
        >>> MKLClassifier.load(p).predict([[0.0, 1.0], [1.0, 0.0]])
        ['a', 'b']
        """
        model, state, sections = load_estimator(cls, path, [SAVE_FORMAT_VERSION], (0, 1))
        with named_errors(path):
            features, labels, kind = state["features"], state["labels"], state["input"]
            if not isinstance(features, list) or not isinstance(labels, list):
                raise ValueError("the saved features and labels must be lists")
            if kind not in (None, "dict", "array"):
                raise ValueError(f"unknown input kind {kind!r}")
            core = _omkl.StreamMkl.from_bytes(sections[0]) if sections else None
            if core is not None:
                if core.n_labels < len(labels) or (kind == "dict" and core.dim != len(features)):
                    raise ValueError(
                        f"the core state ({core.dim} features, {core.n_labels} labels) does "
                        f"not match the saved names ({len(features)} features, "
                        f"{len(labels)} labels)"
                    )
            model._state = core
            model._input = kind
            model._features = features
            model._feature_index = index_of(features, "feature names")
            model._labels = labels
            model._label_index = index_of(labels, "labels")
        return model


class MKLClassifier(_StreamMkl, base.Classifier):
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
        groups on those features, regularised with the kernels.
    lam
        Regularisation strength ``lam``.
    eta0
        Base step size.
    schedule
        ``"inv_sqrt"`` (``eta0 / sqrt(t)``), ``"constant"`` (``eta0``) or
        ``"inv_linear"`` (``1 / (lam t)``).
    loss
        ``"hinge"`` (multiclass hinge, cost 1) or ``"crf"`` (alias
        ``"log"``: multiclass logistic).
    average
        Predict with the average of all iterates.
    max_support
        Cap on the number of support inputs (``None``: no cap).
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
    >>> metric.get() > 0.9
    True
    >>> list(model["MKLClassifier"].kernel_weights_)  # doctest: +NORMALIZE_WHITESPACE
    ['linear', 'gaussian_d/32', 'gaussian_d/16', 'gaussian_d/8', 'gaussian_d/4',
     'gaussian_d/2', 'gaussian_d']
    """

    _default_kernels = _LINEAR_GAUSSIAN_GRID

    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def classes_(self) -> list[Hashable]:
        """Classes in order of first appearance."""
        return list(self._labels)

    def learn_one(self, x: Mapping[Hashable, float] | npt.ArrayLike, y: Hashable) -> None:
        self._learn_rows([x], [y])

    def _scores(self, x: Any) -> list[float]:
        assert self._state is not None
        return self._state.scores(self._predict_rows([x]))[0].tolist()

    def predict_proba_one(self, x: Mapping[Hashable, float] | npt.ArrayLike) -> dict:
        if self._state is None or not self._labels:
            return {}
        z = self._scores(x)
        top = max(z)
        e = [math.exp(v - top) for v in z]
        s = sum(e)
        return {c: v / s for c, v in zip(self._labels, e, strict=True)}

    def predict_one(self, x: Mapping[Hashable, float] | npt.ArrayLike) -> Hashable | None:
        if self._state is None or not self._labels:
            return None
        return self._labels[int(self._state.predict(self._predict_rows([x]))[0])]

    def fit(
        self,
        X: Sequence[Any] | npt.ArrayLike,
        y: Sequence[Hashable],
        epochs: int = 1,
        progress: bool = False,
        shuffle: bool = False,
    ) -> MKLClassifier:
        """Learns ``epochs`` passes over ``(X, y)`` (rows as dicts or a 2-D
        array), each pass in Rust with the GIL released; ``progress=True``
        shows a tqdm bar per epoch. Same result as ``learn_one`` on each
        example in order (without shuffling). Nothing is learned if the
        data are invalid. ``kernel_weights_`` is recorded after each epoch.

        >>> import numpy as np
        >>> X = np.array([[0.0, 1.0], [1.0, 0.0]] * 10)
        >>> y = [0, 1] * 10
        >>> MKLClassifier().fit(X, y, epochs=2).predict(X[:2])
        [0, 1]
        """
        rows = list(X) if not isinstance(X, np.ndarray) else list(X)
        self._fit([[r] for r in rows], [[t] for t in y], epochs, progress, shuffle)
        return self

    def predict(self, X: Sequence[Any] | npt.ArrayLike) -> list[Hashable]:
        """Predicted labels of the rows of ``X`` (GIL released)."""
        rows = list(X)
        if self._state is None or not self._labels:
            return [None] * len(rows)
        if not rows:
            return []
        m = self._predict_rows(rows)
        ids = self._state.predict_many(m, np.ones(len(rows), dtype=np.int64))
        return [self._labels[int(i)] for i in ids]

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"loss": "crf", "average": True, "max_support": 30, "radius": 10.0}
        yield {"kernels": ["gaussian"], "regularizer": "l2_squared", "lam": 1e-3}
        yield {"passive_aggressive": True, "kernels": ["linear", "gaussian"]}


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
    """

    _chain = True

    @property
    def labels_(self) -> list[Hashable]:
        """Labels in order of first appearance."""
        return list(self._labels)

    @staticmethod
    def _positions(xs: Any) -> list[Any]:
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

    def learn_one(self, xs: Sequence[Any] | npt.ArrayLike, ys: Sequence[Hashable]) -> None:
        """One round on the sequence ``xs`` (a list of dicts or an ``n x d``
        array) labelled ``ys``; on error nothing changes."""
        pos = self._positions(xs)
        if len(pos) == 0:
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        self._learn_rows(pos, list(ys))

    def predict_one(self, xs: Sequence[Any] | npt.ArrayLike) -> list[Hashable]:
        """The Viterbi labelling of ``xs`` (empty before any learning)."""
        pos = self._positions(xs)
        if len(pos) == 0:
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        if self._state is None:
            return []
        ids = self._state.predict(self._predict_rows(pos))
        return [self._labels[int(i)] for i in ids]

    def fit(
        self,
        X_seqs: Sequence[Any],
        Y_seqs: Sequence[Sequence[Hashable]],
        epochs: int = 1,
        progress: bool = False,
        shuffle: bool = False,
    ) -> SequenceTagger:
        """Learns ``epochs`` passes over the sequences, each pass in Rust
        with the GIL released (tqdm bar per epoch with ``progress=True``);
        nothing is learned if the data are invalid."""
        seqs = [self._positions(xs) for xs in X_seqs]
        self._fit(seqs, [list(ys) for ys in Y_seqs], epochs, progress, shuffle)
        return self

    def predict(self, X_seqs: Sequence[Any]) -> list[list[Hashable]]:
        """Viterbi labellings of many sequences (GIL released)."""
        seqs = [self._positions(xs) for xs in X_seqs]
        if any(len(s) == 0 for s in seqs):
            raise ValueError("`xs` must not be empty (a sequence of at least one position)")
        if self._state is None:
            return [[] for _ in seqs]
        if not seqs:
            return []
        m = self._predict_rows([x for s in seqs for x in s])
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        ids = self._state.predict_many(m, lens)
        out, off = [], 0
        for n in lens:
            out.append([self._labels[int(i)] for i in ids[off : off + n]])
            off += n
        return out
