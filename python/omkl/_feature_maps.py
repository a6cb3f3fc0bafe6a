"""What the explicit feature maps of a kernel share
(:class:`omkl.RandomFourierFeatures`, :class:`omkl.NystroemFeatures`)."""

from __future__ import annotations

from omkl._params import check_int, check_positive


class GaussianFeatureMap:
    """``n_components`` features approximating the Gaussian kernel
    ``exp(-||x - x'||^2 / (2 sigma2))``, with ``sigma2`` given or, when it
    is ``None``, ``d * factor`` for inputs of dimension ``d``. ``ValueError``
    naming the argument unless ``n_components`` is an integer >= 1 and
    ``sigma2`` (when given) and ``factor`` are finite and > 0."""

    def __init__(self, n_components: int, sigma2: float | None, factor: float) -> None:
        check_int("n_components", n_components, 1)
        if sigma2 is not None:
            check_positive("sigma2", sigma2)
        check_positive("factor", factor)
        self.n_components = n_components
        self.sigma2 = sigma2
        self.factor = factor

    def bandwidth(self, d: int) -> float:
        """``sigma2`` of the Gaussian for inputs of dimension ``d``.

        >>> import omkl
        >>> omkl.NystroemFeatures(8).bandwidth(10), omkl.RandomFourierFeatures(8, 3.0).bandwidth(10)
        (5.0, 3.0)
        """
        return float(self.sigma2) if self.sigma2 is not None else d * float(self.factor)

    def _bandwidth_repr(self) -> str:
        """``sigma2=...`` or, without it, ``factor=...``."""
        return f"sigma2={self.sigma2!r}" if self.sigma2 is not None else f"factor={self.factor!r}"
