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
normaliser is 0). The Gaussian uses ``2 sigma2`` in the denominator; for the
convention ``exp(-||x - x'||^2 / s)`` pass ``sigma2 = s / 2``.

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

from typing import Any

import numpy as np
import numpy.typing as npt

from omkl._omkl import Kernel
from omkl._omkl import gram as _gram

__all__ = [
    "Kernel",
    "b1_spline",
    "gaussian",
    "gram",
    "linear",
    "make_kernel",
    "polynomial",
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
    return Kernel("polynomial", degree=degree, offset=offset, normalize=normalize)


def gaussian(sigma2: float = 5.0) -> Kernel:
    """The Gaussian kernel ``exp(-||x - x'||^2 / (2 sigma2))``.

    >>> gaussian(5.0)
    Kernel('gaussian', sigma2=5.0)
    """
    return Kernel("gaussian", sigma2=sigma2)


def b1_spline(h: float) -> Kernel:
    """The B1-spline kernel ``max(0, 1 - ||x - x'|| / h)``.

    >>> b1_spline(3.0).has_compact_support
    True
    """
    return Kernel("b1_spline", h=h)


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
    return Kernel(kernel, **params)


def as_matrix(name: str, X: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """``X`` as a C-contiguous 2-D float32 array, or ``ValueError`` naming ``name``."""
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"shape mismatch for `{name}`: expected a 2-D array, got {arr.ndim}-D")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ValueError(
            f"invalid value for `{name}`: expected a numeric array, got dtype {arr.dtype}"
        )
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


def gram(
    X: npt.ArrayLike,
    Y: npt.ArrayLike | None = None,
    kernel: str | Kernel = "gaussian",
    **params: Any,
) -> npt.NDArray[np.float32]:
    """The Gram matrix ``K[i, j] = K(X[i], Y[j])`` as a float32 array.

    With ``Y=None`` the symmetric Gram matrix of ``X`` is computed (half the
    work; exactly symmetric with an exact diagonal). Inputs are converted to
    float32. ``kernel`` is a name (see the module docstring) with its
    parameters as keywords, or a :class:`Kernel`.

    >>> import numpy as np
    >>> gram(np.eye(2), kernel="linear").tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    k = make_kernel(kernel, **params)
    x = as_matrix("X", X)
    if Y is None:
        return _gram(k, x)
    return _gram(k, x, as_matrix("Y", Y))
