"""Nyström features of a Gaussian or polynomial kernel on a fixed set of
landmarks, as an explicit group of :class:`omkl.MKLClassifier`.

``NystroemFeatures(D)`` given among the ``kernels`` adds a group whose
features are ``z(x) = K_LL^{-1/2} k_L(x)`` (Williams and Seeger, 2001), where
``L`` holds ``D`` landmarks, ``k_L(x)`` is the column of kernel values
``k(l, x)`` and ``K_LL`` the kernel matrix of the landmarks (its
pseudo-inverse square root: directions with eigenvalues below ``1e-10``
times the largest are dropped). Then ``z(x) . z(x') = k_L(x)' K_LL^+ k_L(x')``,
the kernel itself whenever ``x`` or ``x'`` is a landmark, and an
approximation that improves with ``D`` elsewhere. As with
:class:`omkl.RandomFourierFeatures`, the group is a dense linear model on
``z(x)`` whose cost per example is ``O(D d)`` whatever the length of the
stream.

The landmarks are either given (``landmarks``, a ``D x d`` array) or the
first ``D`` distinct inputs seen: until ``D`` of them have been seen the map
uses the first ``2^k`` of those seen so far (the largest power of two; the
other features are zero), so that it changes only ``log2 D`` times, after
which it stays fixed. A model copies the object it is given, so one
``NystroemFeatures`` may configure several models.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from omkl import _omkl
from omkl._feature_maps import GaussianFeatureMap
from omkl._params import check_choice, check_int, check_nonnegative

__all__ = ["NystroemFeatures"]

_KERNELS = ("gaussian", "polynomial")


def _landmark_rows(value: Any, least: int, most: int, what: str) -> npt.NDArray[np.float64]:
    """``value`` as a float64 array of ``least`` to ``most`` finite rows of
    one width >= 1, else ``ValueError`` starting with ``what``.

    >>> _landmark_rows([[0.0, 1.0]], 1, 4, "the saved landmarks must be").shape
    (1, 2)
    >>> _landmark_rows([[0.0], [1.0]], 3, 3, "invalid value for `landmarks`: expected")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `landmarks`: expected 3 rows of one width ..., got shape (2, 1)
    """
    a = np.array(value, dtype=np.float64)
    if a.ndim != 2 or not least <= a.shape[0] <= most or a.shape[1] < 1:
        rows = f"{most}" if least == most else f"{least} to {most}"
        raise ValueError(
            f"{what} {rows} rows of one width (an n_components x d array), got shape {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} finite values")
    return a


class NystroemFeatures(GaussianFeatureMap):
    """``n_components`` Nyström features of the Gaussian kernel
    ``exp(-||x - x'||^2 / (2 sigma2))`` or of the polynomial kernel
    ``(x . x' + offset) ** degree``.

    Parameters
    ----------
    n_components
        Number of landmarks and of features ``D >= 1``.
    kernel
        ``"gaussian"`` (default) or ``"polynomial"``.
    sigma2
        Gaussian bandwidth (finite, > 0); ``None`` for ``d * factor``.
    factor
        With ``sigma2=None``: ``sigma2 = d * factor`` (default ``1/2``, the
        scale rule of the named ``"gaussian"`` kernel).
    degree
        Degree of the polynomial kernel (an integer >= 1).
    offset
        Offset of the polynomial kernel (finite, >= 0).
    landmarks
        ``None`` (the first ``D`` distinct inputs seen) or a finite
        ``D x d`` array.

    Examples
    --------
    On the landmarks the features reproduce the kernel exactly:

    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((50, 3))
    >>> ny = NystroemFeatures(10, sigma2=2.0, landmarks=x[:10])
    >>> z = ny.transform(x)
    >>> z.shape
    (50, 10)
    >>> exact = np.exp(-np.sum((x[0] - x[5]) ** 2) / (2 * 2.0))
    >>> bool(abs(float(z[0] @ z[5]) - exact) < 1e-5)
    True

    Bad parameters raise ``ValueError`` naming them (``n_components``,
    ``sigma2`` and ``factor`` as in :class:`omkl.RandomFourierFeatures`):

    >>> NystroemFeatures(10, kernel="linear")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `kernel`: ...
    >>> NystroemFeatures(10, kernel="polynomial", offset=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `offset`: expected a finite number >= 0, got -1.0
    """

    saved_as: ClassVar[str] = "nystroem"

    #: The given landmarks (``None``: chosen from the first inputs).
    landmarks: npt.NDArray[np.float64] | None

    def __init__(
        self,
        n_components: int,
        kernel: str = "gaussian",
        sigma2: float | None = None,
        factor: float = 0.5,
        degree: int = 2,
        offset: float = 1.0,
        landmarks: npt.ArrayLike | None = None,
    ):
        super().__init__(n_components, sigma2, factor)
        check_choice("kernel", kernel, _KERNELS)
        check_int("degree", degree, 1)
        check_nonnegative("offset", offset)
        self.kernel = kernel
        self.degree = degree
        self.offset = offset
        self.landmarks = None
        if landmarks is not None:
            self.landmarks = _landmark_rows(
                landmarks, n_components, n_components, "invalid value for `landmarks`: expected"
            )
        self._seen: npt.NDArray[np.float64] | None = None  # landmarks chosen from the data
        self._map: tuple[tuple[int, int, int], npt.NDArray[np.float64]] | None = None

    def __repr__(self) -> str:
        if self.kernel == "gaussian":
            bw = self._bandwidth_repr()
        else:
            bw = f"degree={self.degree!r}, offset={self.offset!r}"
        given = ", landmarks=<given>" if self.landmarks is not None else ""
        return f"NystroemFeatures({self.n_components}, kernel={self.kernel!r}, {bw}{given})"

    def current_landmarks(self) -> npt.NDArray[np.float64] | None:
        """The landmarks in use (given, or chosen from the inputs seen so
        far; ``None`` before any input).

        >>> ny = NystroemFeatures(2)
        >>> _ = ny.transform(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]))
        >>> ny.current_landmarks()
        array([[1., 0.],
               [0., 2.]])
        """
        return self.landmarks if self.landmarks is not None else self._seen

    def kernel_matrix(
        self, a: npt.ArrayLike, b: npt.ArrayLike, scale_d: int | None = None
    ) -> npt.NDArray[np.float64]:
        """The exact kernel between the rows of ``a`` and of ``b``.

        >>> NystroemFeatures(1, kernel="polynomial").kernel_matrix([[1.0, 2.0]], [[3.0, 1.0]])
        array([[36.]])
        """
        x = np.asarray(a, dtype=np.float64)
        y = np.asarray(b, dtype=np.float64)
        dots = x @ y.T
        if self.kernel == "polynomial":
            return np.asarray((dots + float(self.offset)) ** int(self.degree))
        d = x.shape[1] if scale_d is None else scale_d
        sq = np.sum(x * x, axis=1)[:, None] + np.sum(y * y, axis=1)[None, :] - 2.0 * dots
        return np.asarray(np.exp(-np.maximum(sq, 0.0) / (2.0 * self.bandwidth(d))))

    def _collect(self, a: npt.NDArray[np.float64]) -> None:
        """Adds the distinct rows of ``a`` to the landmarks until there are
        ``n_components`` of them (one vectorised comparison per row with
        the landmarks so far)."""
        seen = self._seen
        if seen is not None and seen.shape[1] != a.shape[1]:
            raise ValueError(
                f"invalid value for `x`: expected {seen.shape[1]} columns, got {a.shape[1]}"
            )
        have = 0 if seen is None else len(seen)
        rows = np.empty((max(self.n_components, have), a.shape[1]), dtype=np.float64)
        if seen is not None:
            rows[:have] = seen
        n = have
        for r in a:
            if n >= self.n_components:
                break
            if np.all(np.isfinite(r)) and not (rows[:n] == r).all(axis=1).any():
                rows[n] = r
                n += 1
        if n > have:
            self._seen = rows[:n].copy()

    def _n_used(self) -> int:
        """The number of landmarks the map uses (the first ``2^k`` while
        they are being chosen)."""
        lm = self.current_landmarks()
        n = 0 if lm is None else lm.shape[0]
        return n if n >= self.n_components or n == 0 else 1 << (n.bit_length() - 1)

    def _check_columns(self, d: int) -> None:
        """``ValueError`` unless inputs of ``d`` columns fit the landmarks."""
        lm = self.current_landmarks()
        if lm is not None and lm.shape[1] != d:
            like = "like the landmarks" if self.landmarks is not None else "as in earlier inputs"
            raise ValueError(
                f"invalid value for `x`: expected {lm.shape[1]} columns {like}, got {d}"
            )

    def _take_landmarks(self, x: npt.NDArray[Any]) -> bool:
        """Checks the width of the rows ``x`` and, while the landmarks are
        still being chosen, adds the distinct rows to them (as
        :meth:`transform` does); ``True`` when the landmarks in use changed.

        >>> ny = NystroemFeatures(4)
        >>> ny._take_landmarks(np.array([[1.0], [2.0], [3.0]])), ny._n_used()
        (True, 2)
        >>> ny._take_landmarks(np.array([[1.0]])), ny._n_used()
        (False, 2)
        """
        self._check_columns(x.shape[1])
        if self.landmarks is not None:
            return False
        if self._seen is not None and len(self._seen) >= self.n_components:
            return False
        before = self._n_used()
        self._collect(np.asarray(x, dtype=np.float64))
        return self._n_used() != before

    def _core_map(self, d: int, scale_d: int | None) -> _omkl.FeatureMap:
        """The map for inputs of ``d`` columns as the core evaluates it
        (``scale_d`` as in :meth:`transform`): the landmarks in use, the
        kernel and ``K_LL^{-1/2}``; all features 0 before any landmark.

        >>> ny = NystroemFeatures(3, sigma2=1.0, landmarks=[[0.0], [1.0], [2.0]])
        >>> x = np.array([[0.5], [1.5]], dtype=np.float32)
        >>> z = ny._core_map(1, None).transform(x)
        >>> bool(np.allclose(z, ny.transform(x), atol=1e-6))
        True
        """
        sd = d if scale_d is None else scale_d
        if self.kernel == "polynomial":
            kernel = _omkl.Kernel("polynomial", degree=int(self.degree), offset=float(self.offset))
        else:
            kernel = _omkl.Kernel("gaussian", sigma2=self.bandwidth(sd))
        self._check_columns(d)
        if self.current_landmarks() is None:
            none = np.zeros((0, d))
            return _omkl.FeatureMap.nystroem(self.n_components, kernel, none, np.zeros((0, 0)))
        lm, m = self._projection(sd)
        return _omkl.FeatureMap.nystroem(
            self.n_components, kernel, np.ascontiguousarray(lm), np.ascontiguousarray(m)
        )

    def _projection(self, scale_d: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(L, M)``: the landmarks and ``M = K_LL^{-1/2}`` (pseudo-inverse)."""
        lm = self.current_landmarks()
        assert lm is not None
        if lm.shape[0] < self.n_components:  # the first 2^k while collecting
            lm = lm[: 1 << (lm.shape[0].bit_length() - 1)]
        key = (lm.shape[0], lm.shape[1], scale_d)
        if self._map is None or self._map[0] != key:
            k = self.kernel_matrix(lm, lm, scale_d)
            vals, vecs = np.linalg.eigh((k + k.T) / 2.0)
            keep = vals > 1e-10 * max(float(vals.max()), 0.0)
            inv_sqrt = np.zeros_like(vals)
            inv_sqrt[keep] = 1.0 / np.sqrt(vals[keep])
            self._map = (key, (vecs * inv_sqrt) @ vecs.T)
        return lm, self._map[1]

    def transform(self, x: npt.ArrayLike, scale_d: int | None = None) -> npt.NDArray[np.float32]:
        """``z(x)`` of each row of the ``n x d`` array ``x`` (``n x D``,
        float32). Without given landmarks, the rows first complete the
        landmarks. ``scale_d`` (default ``d``) is the dimension the
        Gaussian's bandwidth rule uses.

        >>> NystroemFeatures(3).transform(np.zeros((1, 2))).shape
        (1, 3)
        """
        a = np.asarray(x, dtype=np.float64)
        if a.ndim != 2:
            raise ValueError(f"invalid value for `x`: expected an n x d array, got shape {a.shape}")
        if self.landmarks is not None and a.shape[1] != self.landmarks.shape[1]:
            raise ValueError(
                f"invalid value for `x`: expected {self.landmarks.shape[1]} columns like the "
                f"landmarks, got {a.shape[1]}"
            )
        if self.landmarks is None and (self._seen is None or len(self._seen) < self.n_components):
            self._collect(a)
        out = np.zeros((a.shape[0], self.n_components), dtype=np.float32)
        if self.current_landmarks() is None:
            return out
        lm, m = self._projection(a.shape[1] if scale_d is None else scale_d)
        out[:, : lm.shape[0]] = self.kernel_matrix(a, lm, scale_d) @ m
        return out

    def _key(self) -> tuple[Any, ...]:
        """The constructor's arguments, in order (the given landmarks as
        lists): how a saved model records the map."""
        given = None if self.landmarks is None else self.landmarks.tolist()
        return (
            self.n_components,
            self.kernel,
            self.sigma2,
            self.factor,
            self.degree,
            self.offset,
            given,
        )

    def _restore_seen(self, rows: Any) -> None:
        """Sets the landmarks chosen from the inputs (as saved by a model),
        ``ValueError`` unless they are at most ``n_components`` finite rows
        of one width."""
        self._seen = (
            None
            if rows is None
            else _landmark_rows(rows, 1, self.n_components, "the saved landmarks must be")
        )
        self._map = None

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the cached projection (computed again)."""
        return {k: v for k, v in self.__dict__.items() if k != "_map"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._map = None
