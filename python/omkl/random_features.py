"""Random Fourier features of a Gaussian kernel, as an explicit group of
:class:`omkl.MKLClassifier` and :class:`omkl.SequenceTagger`.

``RandomFourierFeatures(D)`` given among the ``kernels`` adds a group whose
features are ``z(x) = sqrt(2 / D) cos(W x + b)`` (Rahimi and Recht, 2007),
with the rows of ``W`` drawn from ``N(0, I / sigma2)`` and ``b`` from
``U(0, 2 pi)``, so that ``E[z(x) . z(x')] = exp(-||x - x'||^2 / (2 sigma2))``,
the kernel of ``omkl.Kernel("gaussian", sigma2=sigma2)``. The group is a
dense linear model on ``z(x)``: Alg. 3 weighs it beside the exact kernels
under the same penalty, and its cost per example is ``O(D d)`` whatever the
length of the stream (a model with only such groups keeps no support set).

``W`` and ``b`` are drawn from ``seed`` once the input dimension ``d`` is
known (the first example), so equal seeds give equal features in every
process. With ``orthogonal=True`` the columns of ``W`` are drawn as
orthogonal random features (Yu et al., 2016): in blocks of ``d``, the
orthonormal columns of the QR factor of a Gaussian block, each scaled by
the norm of an independent Gaussian vector, so that every column still has
the distribution ``N(0, I / sigma2)`` but the columns of a block are
orthogonal. The kernel estimate is then unbiased with a lower variance,
at the same cost per example. With ``pairs=True`` the features are
``sqrt(2 / D) [cos(W' x), sin(W' x)]`` for ``D // 2`` frequencies ``W'``
(each sine the cosine at phase ``-pi / 2``; one more feature
``cos(w x + b)`` when ``D`` is odd): the same kernel in expectation, with a
lower variance than ``D`` features of random phases (Sutherland and
Schneider, 2015), at the same cost per example. ``sigma2=None`` takes the
scale rule ``sigma2 = d / 2`` of the named ``"gaussian"`` kernel;
``factor=f`` takes ``sigma2 = d f``.

:func:`omkl.mkl.random_feature_classifier` builds the random-feature model
measured against the exact default :class:`omkl.MKLClassifier`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from omkl import _omkl
from omkl._feature_maps import GaussianFeatureMap
from omkl._params import check_int

__all__ = ["RandomFourierFeatures"]

_Map = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]


def _orthogonal_columns(
    g: npt.NDArray[np.float64], rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """The columns of the Gaussian ``d x D`` matrix ``g`` made orthogonal in
    blocks of ``d`` (Q of a QR factorisation, signs fixed by R's diagonal)
    and scaled by the norms of the columns of an independent Gaussian
    matrix from ``rng``: each column stays ``N(0, I)``.

    >>> rng = np.random.default_rng(0)
    >>> w = _orthogonal_columns(rng.standard_normal((3, 5)), rng)
    >>> block = w[:, :3]
    >>> gram = block.T @ block
    >>> bool(np.allclose(gram - np.diag(np.diag(gram)), 0.0))
    True
    """
    d, n = g.shape
    out = np.empty_like(g)
    for start in range(0, n, d):
        block = g[:, start : start + d]
        q, r = np.linalg.qr(block)
        signs = np.sign(np.diag(r))
        signs[signs == 0] = 1.0
        out[:, start : start + block.shape[1]] = q * signs
    norms: npt.NDArray[np.float64] = np.linalg.norm(rng.standard_normal((d, n)), axis=0)
    return out * norms


class RandomFourierFeatures(GaussianFeatureMap):
    """``n_components`` random Fourier features of the Gaussian kernel
    ``exp(-||x - x'||^2 / (2 sigma2))``.

    Parameters
    ----------
    n_components
        Number of features ``D >= 1``.
    sigma2
        Bandwidth (finite, > 0); ``None`` for ``d * factor``.
    factor
        With ``sigma2=None``: ``sigma2 = d * factor`` (default ``1/2``, the
        scale rule of the named ``"gaussian"`` kernel).
    seed
        Seed of ``W`` and ``b``.
    orthogonal
        Draw the columns of ``W`` orthogonal in blocks of ``d`` (same
        kernel in expectation, lower variance).
    pairs
        Cosine and sine pairs of ``D // 2`` frequencies instead of ``D``
        cosines of random phases (same kernel in expectation, lower
        variance).

    Examples
    --------
    The features' dot products approach the kernel as ``D`` grows:

    >>> import numpy as np
    >>> rff = RandomFourierFeatures(20000, sigma2=2.0, seed=1)
    >>> x = np.array([[0.0, 1.0], [1.0, 0.5]])
    >>> z = rff.transform(x)
    >>> z.shape
    (2, 20000)
    >>> exact = np.exp(-np.sum((x[0] - x[1]) ** 2) / (2 * 2.0))
    >>> bool(abs(float(z[0] @ z[1]) - exact) < 0.02)
    True

    Orthogonal features estimate the same kernel with a lower error:

    >>> ortho = RandomFourierFeatures(20000, sigma2=2.0, seed=1, orthogonal=True)
    >>> z = ortho.transform(x)
    >>> bool(abs(float(z[0] @ z[1]) - exact) < 0.02)
    True

    So do cosine and sine pairs, ``[cos(W' x), sin(W' x)]``:

    >>> paired = RandomFourierFeatures(20000, sigma2=2.0, seed=1, pairs=True)
    >>> z = paired.transform(x)
    >>> bool(abs(float(z[0] @ z[1]) - exact) < 0.02)
    True
    >>> w, b = paired.weights(2)
    >>> bool(np.array_equal(w[:, :10000], w[:, 10000:]) and b[0] == 0 and b[-1] < 0)
    True

    Bad parameters raise ``ValueError`` naming them:

    >>> RandomFourierFeatures(0)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `n_components`: expected an integer >= 1, got 0
    >>> RandomFourierFeatures(10, sigma2=float("nan"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `sigma2`: ...
    """

    saved_as: ClassVar[str] = "rff"

    def __init__(
        self,
        n_components: int,
        sigma2: float | None = None,
        factor: float = 0.5,
        seed: int = 0,
        orthogonal: bool = False,
        pairs: bool = False,
    ):
        super().__init__(n_components, sigma2, factor)
        check_int("seed", seed, 0)
        for name, flag in (("orthogonal", orthogonal), ("pairs", pairs)):
            if not isinstance(flag, bool):
                raise ValueError(
                    f"invalid value for `{name}`: expected True or False, got {flag!r}"
                )
        self.seed = seed
        self.orthogonal = orthogonal
        self.pairs = pairs
        self._maps: dict[
            tuple[int, int], tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
        ] = {}

    def __repr__(self) -> str:
        bw = self._bandwidth_repr()
        ortho = ", orthogonal=True" if self.orthogonal else ""
        paired = ", pairs=True" if self.pairs else ""
        return f"RandomFourierFeatures({self.n_components}, {bw}, seed={self.seed}{ortho}{paired})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RandomFourierFeatures) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (self.n_components, self.sigma2, self.factor, self.seed, self.orthogonal, self.pairs)

    def __getstate__(self) -> dict[str, Any]:
        """The parameters only: ``W`` and ``b`` are drawn again from ``seed``."""
        return {k: v for k, v in self.__dict__.items() if k != "_maps"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # saved before the options
        self.__dict__.update({"orthogonal": False, "pairs": False, **state})
        self._maps = {}

    def weights(
        self, d: int, scale_d: int | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """``(W, b)`` for inputs of dimension ``d``: ``W`` is ``d x D``,
        ``b`` has ``D`` entries (drawn from ``seed``). With ``pairs`` the
        first ``D // 2`` columns of ``W`` come again as the next ``D // 2``,
        whose phases ``b`` are ``-pi / 2`` (the others' 0; an odd ``D``
        ends with one column of random phase). The bandwidth rule takes
        ``scale_d`` features (default ``d``): hashed dict features fill
        only some of the ``d`` columns.

        >>> w, b = RandomFourierFeatures(4, seed=3).weights(2)
        >>> w.shape, b.shape
        ((2, 4), (4,))
        """
        key = (d, d if scale_d is None else scale_d)
        got = self._maps.get(key)
        if got is None:
            rng = np.random.default_rng(self.seed)
            scale = 1.0 / math.sqrt(self.bandwidth(key[1]))
            n = self.n_components
            half = n // 2 if self.pairs else 0
            g = rng.standard_normal((d, n - half))
            if self.orthogonal:
                g = _orthogonal_columns(g, rng)
            w = (g * scale).astype(np.float32)
            b = rng.uniform(0.0, 2.0 * math.pi, n - 2 * half)
            if self.pairs:
                w = np.concatenate([w[:, :half], w], axis=1)
                phases = [np.zeros(half), np.full(half, -0.5 * math.pi), b]
                b = np.concatenate(phases)
            got = (w, b.astype(np.float32))
            self._maps = {key: got}
        return got

    def _core_map(self, d: int, scale_d: int | None) -> _omkl.FeatureMap:
        """The map for inputs of ``d`` columns as the core evaluates it
        (the same ``W``, ``b`` and scale; ``scale_d`` as in :meth:`weights`).

        >>> rff = RandomFourierFeatures(50, seed=1)
        >>> x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
        >>> bool(np.allclose(rff._core_map(3, None).transform(x), rff.transform(x), atol=1e-6))
        True
        """
        w, b = self.weights(d, scale_d)
        return _omkl.FeatureMap.fourier(w, b, math.sqrt(2.0 / self.n_components))

    def transform(self, x: npt.ArrayLike, scale_d: int | None = None) -> npt.NDArray[np.float32]:
        """``z(x)`` of each row of the ``n x d`` array ``x`` (``n x D``,
        float32); ``scale_d`` as in :meth:`weights`.

        >>> RandomFourierFeatures(3).transform(np.zeros((1, 2))).shape
        (1, 3)
        """
        a = np.asarray(x, dtype=np.float32)
        if a.ndim != 2:
            raise ValueError(f"invalid value for `x`: expected an n x d array, got shape {a.shape}")
        w, b = self.weights(a.shape[1], scale_d)
        z = a @ w
        z += b
        np.cos(z, out=z)
        z *= np.float32(math.sqrt(2.0 / self.n_components))
        return z
