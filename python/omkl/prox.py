"""Proximity operators and projections (Section 3 and the appendix of the paper).

Every function takes a 1-D array of coefficients ``x`` and returns a new float64
array; the input is never modified. Grouped operators take ``groups``, an integer
array of the same length as ``x`` giving each coefficient's group id in
``0..G-1`` (any order, groups need not be contiguous). Invalid input (NaN or
infinity, a negative parameter, mismatched lengths, a negative group id, an
empty array) raises ``ValueError`` naming the argument; input of the wrong type
(complex numbers, strings, non-integer group ids) raises an exception that is
both a ``TypeError`` and a ``ValueError``. Coefficients of any finite magnitude
work (up to the largest float64): inputs beyond about ``1e144`` or below
``1e-144`` are rescaled by a power of two, exactly, using the homogeneity of
each operator; a result that would exceed the float64 range raises
``ValueError``. The work is done in Rust, without holding the GIL.

Example:
    >>> import numpy as np
    >>> from omkl import prox
    >>> prox.prox_group_lasso(np.array([6.0, 1.0, 8.0]), np.array([0, 1, 0]), 5.0)
    array([3., 0., 4.])
"""

from __future__ import annotations

import numbers
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from omkl import _omkl

__all__ = [
    "group_norms",
    "project_l1_ball",
    "project_l21_ball",
    "prox_elastic_net_mkl",
    "prox_group_lasso",
    "prox_l2_squared",
    "prox_l2q",
    "prox_sparse_group_lasso",
    "prox_squared_l1",
    "prox_squared_l21",
    "prox_weighted_squared_l1",
    "soft_threshold",
]

ArrayLike = npt.ArrayLike
Array = npt.NDArray[np.float64]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (complex, string, non-integer where an
    integer is required). Both a ``TypeError`` and a ``ValueError``."""


def _real_array(x: Any, name: str) -> npt.NDArray[Any]:
    """``x`` as an array of booleans, integers or real floats, refusing
    complex numbers, strings and objects (never dropping imaginary parts
    or parsing text)."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"`{name}` must be an array of real numbers: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise ArgumentTypeError(
            f"`{name}` must hold real numbers, got dtype {arr.dtype}"
            + (" (imaginary parts are not dropped)" if arr.dtype.kind == "c" else "")
        )
    return arr


def _vector(x: ArrayLike, name: str) -> Array:
    """``x`` as a contiguous 1-D float64 array, or ``ValueError``."""
    real = _real_array(x, name)
    try:
        arr = np.ascontiguousarray(real, dtype=np.float64)
    except MemoryError:
        raise MemoryError(f"cannot allocate {8 * real.size} bytes for `{name}`") from None
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be a 1-D array, got shape {arr.shape}")
    return arr


def _groups(groups: ArrayLike, n: int) -> npt.NDArray[np.int64]:
    """``groups`` as a contiguous int64 array of length ``n``, or ``ValueError``."""
    arr = np.asarray(groups)
    if arr.ndim != 1:
        raise ValueError(f"`groups` must be a 1-D array of group ids, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentTypeError(f"`groups` must hold integer group ids, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"`groups` has group id {int(arr.max())}, far beyond the coefficients")
    if arr.shape[0] != n:
        raise ValueError(
            f"`groups` must have one group id per coefficient (length {n}), "
            f"got length {arr.shape[0]}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def _grouped(x: ArrayLike, groups: ArrayLike) -> tuple[Array, npt.NDArray[np.int64]]:
    """``x`` as a vector (:func:`_vector`) and its ``groups`` (:func:`_groups`)."""
    xs = _vector(x, "x")
    return xs, _groups(groups, xs.shape[0])


def _scalar(v: float, name: str) -> float:
    """``v`` as a float if it is a real number (not a string or complex)."""
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biuf":
        v = v.item()
    if not isinstance(v, numbers.Real):
        raise ArgumentTypeError(f"`{name}` must be a real number, got {v!r}")
    try:
        return float(v)
    except OverflowError:
        raise ValueError(f"`{name}` must be a finite real number, got {v!r}") from None


def soft_threshold(x: ArrayLike, tau: float) -> Array:
    """Prox of ``tau * ||x||_1``: ``sign(x) * max(|x| - tau, 0)``.

    Example:
        >>> soft_threshold(np.array([3.0, -0.5, -2.0]), 1.0)
        array([ 2.,  0., -1.])
    """
    return _omkl.soft_threshold(_vector(x, "x"), _scalar(tau, "tau"))


def prox_l2_squared(x: ArrayLike, tau: float) -> Array:
    """Prox of ``(tau/2) * ||x||^2``: ``x / (1 + tau)``.

    Example:
        >>> prox_l2_squared(np.array([2.0, -4.0]), 1.0)
        array([ 1., -2.])
    """
    return _omkl.prox_l2_squared(_vector(x, "x"), _scalar(tau, "tau"))


def prox_squared_l1(x: ArrayLike, tau: float, method: Literal["sort", "select"] = "sort") -> Array:
    """Prox of ``(tau/2) * ||x||_1^2`` (Alg. 2 of the paper).

    ``method="sort"`` sorts the magnitudes (O(p log p)); ``method="select"``
    finds the threshold by randomised pivoting (expected O(p)). Both give the
    same result up to rounding.

    Example:
        >>> prox_squared_l1(np.array([3.0, -1.0]), 1.0)
        array([1.5, 0. ])
    """
    if method not in ("sort", "select"):
        raise ValueError(f'`method` must be "sort" or "select", got {method!r}')
    return _omkl.prox_squared_l1(_vector(x, "x"), _scalar(tau, "tau"), method)


def prox_weighted_squared_l1(x: ArrayLike, d: ArrayLike, tau: float) -> Array:
    """Prox of ``(tau/2) * (sum_i d_i |x_i|)^2`` with weights ``d >= 0`` (zeros allowed).

    Coordinates with ``d_i = 0`` are returned unchanged.

    Example:
        >>> prox_weighted_squared_l1(np.array([3.0, -1.0, 7.0]), np.array([1.0, 1.0, 0.0]), 1.0)
        array([1.5, 0. , 7. ])
    """
    xs = _vector(x, "x")
    ds = _vector(d, "d")
    if ds.shape != xs.shape:
        raise ValueError(
            f"`d` must have one weight per coefficient (length {xs.shape[0]}), "
            f"got length {ds.shape[0]}"
        )
    return _omkl.prox_weighted_squared_l1(xs, ds, _scalar(tau, "tau"))


def project_l1_ball(x: ArrayLike, radius: float) -> Array:
    """Euclidean projection of ``x`` onto ``{u : ||u||_1 <= radius}``.

    Example:
        >>> project_l1_ball(np.array([3.0, -1.0, 0.5]), 2.0)
        array([2., 0., 0.])
    """
    return _omkl.project_l1_ball(_vector(x, "x"), _scalar(radius, "radius"))


def prox_group_lasso(x: ArrayLike, groups: ArrayLike, tau: float) -> Array:
    """Prox of ``tau * sum_g ||x_g||_2`` (block soft-thresholding).

    Example:
        >>> prox_group_lasso(np.array([6.0, 1.0, 8.0]), np.array([0, 1, 0]), 5.0)
        array([3., 0., 4.])
    """
    return _omkl.prox_group_lasso(*_grouped(x, groups), _scalar(tau, "tau"))


def project_l21_ball(x: ArrayLike, groups: ArrayLike, radius: float) -> Array:
    """Euclidean projection of ``x`` onto ``{u : sum_g ||u_g||_2 <= radius}``.

    Example:
        >>> project_l21_ball(np.array([6.0, 1.0, 8.0]), np.array([0, 1, 0]), 5.0)
        array([3., 0., 4.])
    """
    return _omkl.project_l21_ball(*_grouped(x, groups), _scalar(radius, "radius"))


def prox_sparse_group_lasso(x: ArrayLike, groups: ArrayLike, tau1: float, tau2: float) -> Array:
    """Prox of ``tau1 * ||x||_1 + tau2 * sum_g ||x_g||_2``.

    Soft-thresholding by ``tau1`` followed by block soft-thresholding by ``tau2``.

    Example:
        >>> prox_sparse_group_lasso(np.array([4.0, 5.0, 0.5]), np.array([0, 0, 1]), 1.0, 2.5)
        array([1.5, 2. , 0. ])
    """
    return _omkl.prox_sparse_group_lasso(
        *_grouped(x, groups), _scalar(tau1, "tau1"), _scalar(tau2, "tau2")
    )


def prox_elastic_net_mkl(x: ArrayLike, groups: ArrayLike, tau: float, l1_ratio: float) -> Array:
    """Prox of ``tau * [rho * sum_g ||x_g|| + (1 - rho)/2 * sum_g ||x_g||^2]``, ``rho = l1_ratio``.

    Example:
        >>> prox_elastic_net_mkl(np.array([6.0, 8.0]), np.array([0, 0]), 2.0, 1.0)
        array([4.8, 6.4])
    """
    return _omkl.prox_elastic_net_mkl(
        *_grouped(x, groups), _scalar(tau, "tau"), _scalar(l1_ratio, "l1_ratio")
    )


def prox_l2q(x: ArrayLike, groups: ArrayLike, tau: float, q: float) -> Array:
    """Prox of ``tau * sum_g ||x_g||_2^q`` for ``q >= 1``.

    Each group norm ``n0`` becomes the root in ``[0, n0]`` of
    ``n - n0 + tau * q * n**(q - 1) = 0``.

    Example:
        >>> prox_l2q(np.array([3.0, 4.0]), np.array([0, 0]), 1.0, 2.0)
        array([1.        , 1.33333333])
    """
    return _omkl.prox_l2q(*_grouped(x, groups), _scalar(tau, "tau"), _scalar(q, "q"))


def prox_squared_l21(x: ArrayLike, groups: ArrayLike, tau: float) -> Array:
    """Prox of ``(tau/2) * (sum_g ||x_g||_2)^2``, the MKL regulariser of Alg. 3.

    Example:
        >>> prox_squared_l21(np.array([6.0, 1.0, 8.0]), np.array([0, 1, 0]), 1.0)
        array([3., 0., 4.])
    """
    return _omkl.prox_squared_l21(*_grouped(x, groups), _scalar(tau, "tau"))


def group_norms(x: ArrayLike, groups: ArrayLike) -> Array:
    """Euclidean norm of each group, indexed by group id (length ``max(groups) + 1``).

    Example:
        >>> group_norms(np.array([3.0, 1.0, 4.0]), np.array([0, 1, 0]))
        array([5., 1.])
    """
    return _omkl.group_norms(*_grouped(x, groups))
