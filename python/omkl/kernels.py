"""Kernels and Gram matrices.

Kernels (all computed in float32 by the Rust core, through a GEMM plus an
elementwise map):

========================  ==================================================
``"linear"``              ``<x, x'>`` (``normalize=True``: cosine)
``"polynomial"``          ``(<x, x'> + offset) ** degree``, optionally
                          normalised to unit diagonal
``"gaussian"``            ``exp(-||x - x'||^2 / (2 sigma2))``
``"b1_spline"``           ``max(0, 1 - ||x - x'|| / h)`` (compact support)
========================  ==================================================

Normalised kernels are ``K(x, x') / sqrt(K(x, x) K(x', x'))`` (0 when the
normaliser is 0). They are right at any scale of the inputs, up to float32
rounding of the result: such a kernel is the cosine of the inputs extended
by ``sqrt(offset)``, to the power ``degree``, and each input is divided by a
power of two near its size before any float32 product (float64 inputs
beyond the float32 range included). Other kernels are computed from the
float32 inputs as they are, with their parameters rounded to float32 as
well: an ``offset`` below about 1e-45 counts as 0.

Bad input raises ``ValueError`` naming the argument (NaN or infinite entries,
entries or a polynomial degree so large that float32 values would overflow);
complex, string or object arrays raise an exception that is both a
``TypeError`` and a ``ValueError``; a result that cannot be allocated raises
``MemoryError`` naming the argument and the bytes requested.

The Gaussian uses ``2 sigma2`` in the denominator; for the convention
``exp(-||x - x'||^2 / s)`` pass ``sigma2 = s / 2``.

Example
-------
>>> import numpy as np
>>> from omkl import kernels
>>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
>>> K = kernels.gram(X, kernel="gaussian", sigma2=0.5)
>>> K.dtype, K.shape
(dtype('float32'), (2, 2))
>>> bool(np.isclose(K[0, 1], np.exp(-1.0)))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, cast, overload

import numpy as np
import numpy.typing as npt

from omkl import _omkl
from omkl._omkl import Kernel
from omkl.prox import ArgumentTypeError, _scalar

__all__ = [
    "GramCache",
    "Kernel",
    "SparseGram",
    "SupportStore",
    "b1_bandwidth",
    "b1_spline",
    "gaussian",
    "gram",
    "gram_many",
    "linear",
    "make_kernel",
    "polynomial",
    "sparse_gram",
]


def linear(normalize: bool = False) -> Kernel:
    """The linear kernel ``<x, x'>``; ``normalize=True`` gives the cosine.

    >>> linear(normalize=True)
    Kernel('linear', normalize=True)
    """
    return Kernel("linear", normalize=normalize)


def polynomial(degree: int = 2, offset: float = 1.0, normalize: bool = False) -> Kernel:
    """The polynomial kernel ``(<x, x'> + offset) ** degree``.

    >>> polynomial(2, 0.0, normalize=True)
    Kernel('polynomial', degree=2, offset=0.0, normalize=True)
    """
    return make_kernel("polynomial", degree=degree, offset=offset, normalize=normalize)


def gaussian(sigma2: float = 5.0) -> Kernel:
    """The Gaussian kernel ``exp(-||x - x'||^2 / (2 sigma2))``.

    >>> gaussian(5.0)
    Kernel('gaussian', sigma2=5.0)
    """
    return make_kernel("gaussian", sigma2=sigma2)


def b1_spline(h: float) -> Kernel:
    """The B1-spline kernel ``max(0, 1 - ||x - x'|| / h)``.

    >>> b1_spline(3.0).has_compact_support
    True
    """
    return make_kernel("b1_spline", h=h)


def make_kernel(kernel: str | Kernel = "gaussian", **params: Any) -> Kernel:
    """A :class:`Kernel` from a name and keyword parameters (``degree``,
    ``offset``, ``normalize``, ``sigma2``, ``h``), or ``kernel`` itself.

    >>> make_kernel("polynomial", degree=3)
    Kernel('polynomial', degree=3, offset=1.0, normalize=False)
    """
    if isinstance(kernel, Kernel):
        if params:
            raise ValueError(
                "invalid value for `params`: expected none with a Kernel instance, "
                f"got {sorted(params)}"
            )
        return kernel
    allowed = {"degree", "offset", "normalize", "sigma2", "h"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(
            f"invalid value for `params`: unknown kernel parameter(s) {unknown}, "
            f"expected some of {sorted(allowed)}"
        )
    for name in ("offset", "sigma2", "h"):
        if name in params:
            params[name] = _scalar(params[name], name)
    return Kernel(cast("_omkl._KernelKind", kernel), **params)


def _real_matrix(name: str, X: npt.ArrayLike) -> npt.NDArray[Any]:
    """``X`` as a 2-D array of real numbers (of its own dtype), or
    ``ValueError`` naming ``name``."""
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise ArgumentTypeError(
            f"invalid value for `{name}`: expected an array of real numbers, got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        raise ValueError(f"shape mismatch for `{name}`: expected a 2-D array, got {arr.ndim}-D")
    return arr


def as_matrix(name: str, X: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """``X`` as a C-contiguous 2-D float32 array, or ``ValueError`` naming
    ``name`` (also when finite entries overflow float32).

    >>> as_matrix("X", [[1e300, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `X`: entries of magnitude up to 1e+300 overflow float32 \
(largest finite value 3.4e+38); scale the inputs down
    """
    arr = _real_matrix(name, X)
    with np.errstate(over="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 4 and not np.isfinite(out).all():
        lost = np.abs(arr[np.isfinite(arr) & ~np.isfinite(out)])
        if lost.size:
            raise ValueError(
                f"invalid value for `{name}`: entries of magnitude up to {lost.max():.3g} "
                f"overflow float32 (largest finite value {_F32_MAX:.2g}); scale the inputs down"
            )
    return out


def _is_normalised(k: Kernel) -> bool:
    """Whether ``k`` is a linear or polynomial kernel with ``normalize=True``."""
    kind, _, _, normalize, _, _ = k.args()
    return kind in ("linear", "polynomial") and normalize


#: Largest entries of a row that float32 holds together with every entry
#: that matters to a normalised kernel (those within 2**-26 of the largest).
_F32_ROWS = (2.0**-100, 2.0**100)


def _beyond_float32(arr: npt.NDArray[Any]) -> bool:
    """Whether some non-zero row of the finite, wider-than-float32 array
    ``arr`` has its largest entry outside :data:`_F32_ROWS`, where its
    conversion to float32 would underflow or overflow."""
    if arr.dtype.kind != "f" or arr.dtype.itemsize <= 4 or arr.size == 0:
        return False
    with np.errstate(invalid="ignore"):
        m = np.maximum(arr.max(axis=1), -arr.min(axis=1)).astype(np.float64)
    if not np.isfinite(m).all():
        return False  # the core names the non-finite entries
    m = m[m > 0]
    return bool(((m < _F32_ROWS[0]) | (m > _F32_ROWS[1])).any())


def _extended_rows(arr: npt.NDArray[Any], root_offset: float) -> npt.NDArray[np.float32]:
    """``arr`` with a column of ``root_offset`` appended (none when it is 0),
    each row divided by the power of two of its largest entry (exactly, in
    float64), as float32: the same cosines as the extended rows."""
    a = arr.astype(np.float64)
    if root_offset > 0.0:
        a = np.hstack([a, np.full((a.shape[0], 1), root_offset)])
    _, e = np.frexp(np.maximum(a.max(axis=1, initial=0.0), -a.min(axis=1, initial=0.0)))
    return np.ascontiguousarray(np.ldexp(a, -e[:, None]), dtype=np.float32)


def _normalised_inputs(
    k: Kernel, X: npt.ArrayLike, Y: npt.ArrayLike | None
) -> tuple[Kernel, npt.NDArray[np.float32], npt.NDArray[np.float32] | None]:
    """The kernel and float32 inputs that give the normalised kernel ``k``
    of ``X`` and ``Y`` right at any scale. Inputs that float32 holds go to
    the core as they are (it rescales rows itself). Otherwise, since ``k``
    is ``cos(x ++ [sqrt(c)], y ++ [sqrt(c)]) ** degree``, each row is
    extended by ``sqrt(offset)`` and divided by a power of two, and the
    kernel becomes the same one with offset 0.

    >>> import numpy as np
    >>> k = polynomial(2, 1.0, normalize=True)
    >>> k2, x, _ = _normalised_inputs(k, np.array([[3.0, 4.0], [2.0**700, 0.0]]), None)
    >>> k2
    Kernel('polynomial', degree=2, offset=0.0, normalize=True)
    >>> x.tolist()  # [3, 4, 1] / 8 and [2**700, 0, 1] / 2**701
    [[0.375, 0.5, 0.125], [0.5, 0.0, 0.0]]
    """
    xs = _real_matrix("X", X)
    ys = None if Y is None else _real_matrix("Y", Y)
    if not (_beyond_float32(xs) or (ys is not None and _beyond_float32(ys))):
        return k, as_matrix("X", xs), None if ys is None else as_matrix("Y", ys)
    kind, degree, offset, _, _, _ = k.args()
    root = float(np.sqrt(offset)) if kind == "polynomial" else 0.0
    if root > 0.0:
        k = Kernel("polynomial", degree=degree, offset=0.0, normalize=True)
    return k, _extended_rows(xs, root), None if ys is None else _extended_rows(ys, root)


_F32_MAX = float(np.finfo(np.float32).max)


def _check_range(ks: Sequence[Kernel], x: npt.NDArray[np.float32], y: Any) -> None:
    """``ValueError`` naming ``X`` (or ``Y``) when some float32 kernel value
    or inner product could overflow: the inner products are bounded by
    ``max|x| * max|y| * d``, and a polynomial kernel's values by that plus
    ``|offset|`` to the power ``degree``. Non-finite inputs are left to the
    core, which names them. No kernel: nothing to check."""
    if not ks:
        return
    mx = float(np.abs(x).max(initial=0.0)) if np.isfinite(x).all() else 0.0
    my = mx if y is None else (float(np.abs(y).max(initial=0.0)) if np.isfinite(y).all() else 0.0)
    d = max(x.shape[1], 1)
    name = "Y" if my > mx else "X"
    bound = mx * my * d
    if bound > _F32_MAX / 4:
        raise ValueError(
            f"invalid value for `{name}`: entries of magnitude up to {max(mx, my):.3g} make "
            f"inner products up to {bound:.3g} overflow float32; scale the inputs down"
        )
    for k in ks:
        kind, degree, offset, _, _, _ = k.args()
        if kind == "polynomial" and degree * np.log(bound + abs(offset) + 1e-300) > np.log(
            _F32_MAX / 4
        ):
            raise ValueError(
                f"invalid value for `{name}`: polynomial kernel values up to "
                f"({bound:.3g} + {abs(offset):.3g}) ** {degree} overflow float32; scale the "
                f"inputs down or lower `degree`"
            )


def gram(
    X: npt.ArrayLike,
    Y: npt.ArrayLike | None = None,
    kernel: str | Kernel = "gaussian",
    **params: Any,
) -> npt.NDArray[np.float32]:
    """The Gram matrix ``K[i, j] = K(X[i], Y[j])`` as a float32 array.

    With ``Y=None`` the symmetric Gram matrix of ``X`` is computed (half the
    work; exactly symmetric with an exact diagonal). Inputs are converted to
    float32 (so, but for the normalised kernels, which are right at any
    scale, entries of magnitude below about 1e-19 underflow in products).
    ``kernel`` is a name (see the module docstring) with its parameters as
    keywords, or a :class:`Kernel`.

    >>> import numpy as np
    >>> gram(np.eye(2), kernel="linear").tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> [round(float(v), 4) for v in gram(X * 1e-30, kernel="linear", normalize=True).ravel()]
    [1.0, 0.7071, 0.7071, 1.0]
    """
    k = make_kernel(kernel, **params)
    k, x, y = _inputs(k, X, Y)
    if y is None:
        return _omkl.gram(k, x)
    return _omkl.gram(k, x, y)


def _inputs(
    k: Kernel, X: npt.ArrayLike, Y: npt.ArrayLike | None
) -> tuple[Kernel, npt.NDArray[np.float32], npt.NDArray[np.float32] | None]:
    """The kernel and float32 inputs the core computes ``k(X, Y)`` from:
    :func:`_normalised_inputs` for a normalised kernel; else the inputs as
    float32, refused by :func:`_check_range` if values would overflow."""
    if _is_normalised(k):
        return _normalised_inputs(k, X, Y)
    x = as_matrix("X", X)
    y = None if Y is None else as_matrix("Y", Y)
    _check_range([k], x, y)
    return k, x, y


def gram_many(
    X: npt.ArrayLike,
    Y: npt.ArrayLike | None = None,
    kernels: Sequence[str | Kernel] = ("linear", "gaussian"),
) -> list[npt.NDArray[np.float32]]:
    """One Gram matrix per kernel, all from a single shared GEMM of inner
    products (every kernel here is a function of ``<x, y>``, ``||x||^2`` and
    ``||y||^2``), so ``k`` kernels cost about one :func:`gram` plus ``k``
    cheap elementwise maps.

    ``kernels`` holds :class:`Kernel` objects or names (with their default
    parameters). Output ``k`` equals ``gram(X, Y, kernels[k])`` exactly.

    >>> import numpy as np
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.5]])
    >>> L, G = gram_many(X, kernels=["linear", gaussian(0.5)])
    >>> bool(np.array_equal(G, gram(X, kernel=gaussian(0.5)))), L.shape
    (True, (3, 3))
    """
    if isinstance(kernels, str | Kernel):
        raise ValueError(
            f"invalid value for `kernels`: expected a list of kernels, got {kernels!r}"
        )
    ks = [make_kernel(k) for k in kernels]
    if not ks:
        raise ValueError("invalid value for `kernels`: expected at least one kernel, got none")
    if any(map(_is_normalised, ks)):
        xs = _real_matrix("X", X)
        ys = None if Y is None else _real_matrix("Y", Y)
        if _beyond_float32(xs) or (ys is not None and _beyond_float32(ys)):
            # float32 cannot hold the inputs: each kernel on its own inputs
            return [gram(xs, ys, k) for k in ks]
    x = as_matrix("X", X)
    y = None if Y is None else as_matrix("Y", Y)
    _check_range([k for k in ks if not _is_normalised(k)], x, y)
    if y is None:
        return _omkl.gram_many(ks, x)
    return _omkl.gram_many(ks, x, y)


def b1_bandwidth(X: npt.ArrayLike, zero_fraction: float = 0.95, max_sample: int = 2000) -> float:
    """The B1-spline width ``h`` giving a fraction ``zero_fraction`` of zeros
    in the Gram matrix of ``X`` (the paper used about 95%).

    An entry is zero iff ``||x_i - x_j|| >= h``; the fraction counts all
    ``n^2`` entries (the diagonal is never zero). ``h`` is the matching
    quantile of pairwise distances, placed midway between two distinct
    distances. For ``n > max_sample`` the distances are measured among
    ``max_sample`` rows drawn by a fixed-seed generator (deterministic).

    >>> import numpy as np
    >>> X = np.arange(100.0)[:, None]
    >>> S = sparse_gram(X, kernel="b1_spline", h=b1_bandwidth(X, 0.9))
    >>> abs((1.0 - S.density) - 0.9) <= 0.01
    True
    """
    n = _int64_at_least("max_sample", max_sample, 2, "an integer")
    return _omkl.b1_bandwidth(as_matrix("X", X), _scalar(zero_fraction, "zero_fraction"), n)


def _int64_at_least(name: str, value: Any, minimum: int, expected: str) -> int:
    """``value`` as an ``int`` if it is an integer (not a boolean) with
    ``minimum <= value < 2**63``. Another type raises
    :class:`~omkl.prox.ArgumentTypeError` reading ``expected {expected}``,
    another integer a ``ValueError``; both name ``name``.

    >>> _int64_at_least("n", -1, 0, "an integer >= 0")
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `n`: expected an integer >= 0 and < 2**63, got -1
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ArgumentTypeError(f"invalid value for `{name}`: expected {expected}, got {value!r}")
    if not minimum <= value < 2**63:
        raise ValueError(
            f"invalid value for `{name}`: expected an integer >= {minimum} and < 2**63, "
            f"got {int(value)}"
        )
    return int(value)


_T = TypeVar("_T")


class _Native(Generic[_T]):
    """A read-only attribute that reads the same-named attribute of the
    wrapped native object ``_inner``; ``doc`` is its docstring."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Native[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: Any, owner: type | None = None) -> _T | _Native[_T]:
        if obj is None:
            return self
        return cast(_T, getattr(obj._inner, self._name))

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(
            f"property {self._name!r} of {type(obj).__name__!r} object has no setter"
        )

    def __delete__(self, obj: object) -> None:
        raise AttributeError(
            f"property {self._name!r} of {type(obj).__name__!r} object has no deleter"
        )


class SparseGram:
    """A Gram matrix stored in CSR form: only non-zero kernel values are
    kept, so memory and scoring cost scale with the number of neighbours,
    not with the number of columns. Build one with :func:`sparse_gram`.

    Rows are query inputs and columns support inputs; :meth:`scores`
    computes ``K @ alpha`` for coefficients ``alpha`` of shape
    ``(columns, labels)``.

    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [5.0]])
    >>> S = sparse_gram(X, kernel="b1_spline", h=2.0)
    >>> S.nnz, S.shape
    (5, (3, 3))
    >>> S.scores(np.array([[1.0], [0.0], [0.0]])).ravel().tolist()
    [1.0, 0.5, 0.0]
    """

    def __init__(self, inner: _omkl.SparseGram) -> None:
        self._inner = inner

    shape: _Native[tuple[int, int]] = _Native("``(rows, columns)``.")
    nnz: _Native[int] = _Native("Number of stored (non-zero) entries.")
    density: _Native[float] = _Native("``nnz / (rows * columns)``.")
    nbytes: _Native[int] = _Native("Bytes held by the CSR arrays.")

    @property
    def scoring_nbytes(self) -> int:
        """Bytes of the scoring layout, held in addition to :attr:`nbytes`:
        a renumbered copy of the matrix built by the first bulk scoring call
        (0 before it), and the reused coefficient buffers.

        >>> import numpy as np
        >>> S = sparse_gram(np.array([[0.0], [1.0]]), kernel="b1_spline", h=2.0)
        >>> S.scoring_nbytes
        0
        >>> S.scores_f32(np.ones((2, 1), dtype=np.float32)).ravel().tolist()
        [1.5, 1.5]
        >>> S.scoring_nbytes > 0
        True
        """
        return self._inner.scoring_nbytes

    def to_dense(self) -> npt.NDArray[np.float32]:
        """The dense float32 matrix."""
        return self._inner.to_dense()

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.csr_matrix`` copy (needs scipy)."""
        import scipy.sparse

        indptr, indices, data = self._inner.csr()
        return scipy.sparse.csr_matrix((data, indices, indptr), shape=self.shape)

    def scores(self, alpha: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``K @ alpha`` (float64), visiting only the stored entries.

        ``alpha`` has shape ``(columns, labels)``, or ``(columns,)`` for one
        label (the result is then 1-D).
        """
        a, one = _as_alpha(alpha, self.shape[1])
        out = self._inner.scores(a)
        return out[:, 0] if one else out

    def scores_f32(self, alpha: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """``K @ alpha`` computed entirely in float32 (coefficients, sums and
        result), the precision of float32 BLAS scoring, with half the memory
        traffic of :meth:`scores`. ``alpha`` has shape ``(columns, labels)``
        or ``(columns,)``.

        >>> import numpy as np
        >>> S = sparse_gram(np.array([[0.0], [1.0], [5.0]]), kernel="b1_spline", h=2.0)
        >>> S.scores_f32(np.array([1.0, 0.0, 0.0])).tolist()
        [1.0, 0.5, 0.0]
        """
        a, one = _as_alpha(alpha, self.shape[1], np.float32)
        out = self._inner.scores_f32(a)
        return out[:, 0] if one else out

    def scores_label_major(self, alpha: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Scores with label-major coefficients: ``alpha`` has shape
        ``(labels, columns)`` and the result ``(labels, rows)``, i.e.
        ``(K @ alpha.T).T``, the layout of the chain learners. Each row's
        non-zeros are visited once for all labels.

        >>> import numpy as np
        >>> S = sparse_gram(np.array([[0.0], [1.0], [5.0]]), kernel="b1_spline", h=2.0)
        >>> S.scores_label_major(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])).tolist()
        [[1.0, 0.5, 0.0], [0.0, 0.0, 1.0]]
        """
        a = np.asarray(alpha)
        if a.dtype.kind not in "biuf":
            raise ArgumentTypeError(
                f"invalid value for `alpha`: expected an array of real numbers, got dtype {a.dtype}"
            )
        a = a.astype(np.float64, copy=False)
        m = self.shape[1]
        if a.ndim != 2 or a.shape[1] != m or a.shape[0] == 0:
            raise ValueError(
                f"shape mismatch for `alpha`: expected (labels, {m}) with labels >= 1, "
                f"got {np.shape(alpha)}"
            )
        return self._inner.scores_label_major(np.ascontiguousarray(a))

    def score_row(self, i: int, alpha: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Row ``i`` of ``K @ alpha``, shape ``(labels,)``."""
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < self.shape[0]:
            raise ValueError(
                f"invalid value for `i`: expected a row index < {self.shape[0]}, got {i!r}"
            )
        a, _ = _as_alpha(alpha, self.shape[1])
        return self._inner.score_row(int(i), a)

    def __getstate__(self) -> dict[str, Any]:
        indptr, indices, data = self._inner.csr()
        return {"shape": self.shape, "indptr": indptr, "indices": indices, "data": data}

    def __setstate__(self, state: dict[str, Any]) -> None:
        rows, cols = state["shape"]
        self._inner = _omkl.SparseGram.from_csr(
            rows, cols, state["indptr"], state["indices"], state["data"]
        )

    def __repr__(self) -> str:
        return f"SparseGram(shape={self.shape}, nnz={self.nnz}, density={self.density:.4g})"


def _as_alpha(alpha: npt.ArrayLike, m: int, dtype: Any = np.float64) -> tuple[Any, bool]:
    """``alpha`` as a C-contiguous ``(m, labels)`` array of ``dtype`` (no copy
    when it already is one) and whether it was 1-D."""
    a = np.asarray(alpha)
    if a.dtype.kind not in "biuf":
        raise ArgumentTypeError(
            f"invalid value for `alpha`: expected an array of real numbers, got dtype {a.dtype}"
        )
    with np.errstate(over="ignore"):
        a = a.astype(dtype, copy=False)
    one = a.ndim == 1
    if one:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != m or a.shape[1] == 0:
        raise ValueError(
            f"shape mismatch for `alpha`: expected ({m}, labels) or ({m},), got {np.shape(alpha)}"
        )
    return np.ascontiguousarray(a), one


def sparse_gram(
    X: npt.ArrayLike,
    Y: npt.ArrayLike | None = None,
    kernel: str | Kernel = "b1_spline",
    **params: Any,
) -> SparseGram:
    """The Gram matrix ``K(X[i], Y[j])`` in CSR form, built block by block
    without materialising the dense matrix (for compact-support kernels
    such as the B1-spline; other kernels are accepted but store nearly every
    entry). ``Y=None`` means ``Y = X``; when ``Y`` equals ``X``, only the
    upper triangle is computed (half the work) and mirrored, so the result is
    exactly symmetric and equals :func:`gram` up to float32 rounding of the
    inner products (exactly on integer inputs such as binary pixels). For the
    B1-spline, pairs clearly beyond ``h`` are dropped before any square root.

    >>> import numpy as np
    >>> sparse_gram(np.eye(3), kernel="b1_spline", h=1.0).nnz
    3
    """
    k = make_kernel(kernel, **params)
    k, x, y = _inputs(k, X, Y)
    return SparseGram(_omkl.sparse_gram(k, x, y))


def _as_vector(name: str, x: npt.ArrayLike, d: int) -> npt.NDArray[np.float32]:
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise ArgumentTypeError(
            f"invalid value for `{name}`: expected an array of real numbers, got {arr.dtype}"
        )
    if arr.ndim != 1 or arr.shape[0] != d:
        raise ValueError(f"shape mismatch for `{name}`: expected shape ({d},), got {arr.shape}")
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


class SupportStore:
    """Support inputs of dimension ``d``, each stored once: adding an input
    already stored (bitwise the same float32 values) returns its id.

    >>> import numpy as np
    >>> s = SupportStore(2)
    >>> s.add([1.0, 2.0]), s.add([3.0, 4.0]), s.add(np.array([1.0, 2.0]))
    (0, 1, 0)
    >>> len(s)
    2
    """

    def __init__(self, d: int) -> None:
        self.d = _dimension(d)
        self._inner = _omkl.SupportStore(self.d)

    def add(self, x: npt.ArrayLike) -> int:
        """Stores ``x`` unless already stored; returns its id."""
        return self._inner.add(_as_vector("x", x, self.d))[0]

    def find(self, x: npt.ArrayLike) -> int | None:
        """The id of ``x``, or ``None``."""
        return self._inner.find(_as_vector("x", x, self.d))

    def get(self, id: int) -> npt.NDArray[np.float32]:
        """Input ``id``."""
        return self._inner.get(_as_id(id))

    def data(self) -> npt.NDArray[np.float32]:
        """All inputs, shape ``(len(self), d)``, in id order."""
        return self._inner.data()

    nbytes: _Native[int] = _Native("Approximate heap bytes (inputs plus hash index).")

    def __len__(self) -> int:
        return len(self._inner)

    def __getstate__(self) -> dict[str, Any]:
        return {"d": self.d, "data": self.data()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.d = state["d"]
        self._inner = _omkl.SupportStore(self.d)
        for row in state["data"]:
            self._inner.add(np.ascontiguousarray(row, dtype=np.float32))


def _dimension(d: Any) -> int:
    """``d`` as an input dimension: an integer in ``[1, 2**32)``."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise ArgumentTypeError(f"invalid value for `d`: expected an integer >= 1, got {d!r}")
    if not 1 <= d < 2**32:
        raise ValueError(f"invalid value for `d`: expected an integer >= 1 and < 2**32, got {d!r}")
    return int(d)


def _as_id(id: int) -> int:
    if isinstance(id, bool) or not isinstance(id, int | np.integer) or not 0 <= id < 2**32:
        raise ValueError(f"invalid value for `id`: expected a stored id (integer >= 0), got {id!r}")
    return int(id)


class GramCache:
    """Gram rows ``K(x_id, x_j)`` over a deduplicated set of support inputs,
    computed on demand and kept in a least-recently-used cache of at most
    ``budget_bytes`` bytes (each row costs ``4 * len + 64`` bytes).

    When support inputs are added after a row was cached, only the new
    columns are computed ("extensions"). :meth:`stats` reports hits,
    extensions, misses, evictions and bytes.

    >>> c = GramCache(2, kernel="linear", budget_bytes=1 << 20)
    >>> a = c.add([1.0, 0.0]); b = c.add([2.0, 3.0]); c.add([1.0, 0.0]) == a
    True
    >>> c.row(b).tolist()
    [2.0, 13.0]
    >>> c.stats()["misses"], c.stats()["support_len"]
    (1, 2)
    """

    def __init__(
        self,
        d: int,
        kernel: str | Kernel = "gaussian",
        budget_bytes: int = 64 << 20,
        **params: Any,
    ) -> None:
        d = _dimension(d)
        budget = _int64_at_least("budget_bytes", budget_bytes, 0, "an integer >= 0")
        self.d = d
        self.kernel = make_kernel(kernel, **params)
        self.budget_bytes = budget
        self._inner = _omkl.GramCache(self.kernel, self.d, self.budget_bytes)

    def add(self, x: npt.ArrayLike) -> int:
        """Adds a support input (stored once) and returns its id."""
        return self._inner.add(_as_vector("x", x, self.d))

    def row(self, id: int) -> npt.NDArray[np.float32]:
        """``K(x_id, x_j)`` for every stored ``j``, in id order."""
        return self._inner.row(_as_id(id))

    def support(self) -> npt.NDArray[np.float32]:
        """All support inputs, shape ``(len(self), d)``."""
        return self._inner.support()

    def stats(self) -> dict[str, int]:
        """``hits``, ``extensions``, ``misses``, ``evictions``,
        ``cache_bytes``, ``entries``, ``budget``, ``support_bytes`` and
        ``support_len``."""
        return self._inner.stats()

    def __len__(self) -> int:
        return len(self._inner)
