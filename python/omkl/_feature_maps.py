"""What the explicit feature maps of a kernel share
(:class:`omkl.RandomFourierFeatures`, :class:`omkl.NystroemFeatures`)."""

from __future__ import annotations

from typing import Any, ClassVar

from omkl._params import check_int, check_positive

#: The feature-map classes by the tag of their saved form
#: (``omkl._persist.encode`` writes ``{tag: parameters}``), registered as
#: the classes are defined.
SAVED_AS: dict[str, type[GaussianFeatureMap]] = {}


class GaussianFeatureMap:
    """``n_components`` features approximating the Gaussian kernel
    ``exp(-||x - x'||^2 / (2 sigma2))``, with ``sigma2`` given or, when it
    is ``None``, ``d * factor`` for inputs of dimension ``d``. ``ValueError``
    naming the argument unless ``n_components`` is an integer >= 1 and
    ``sigma2`` (when given) and ``factor`` are finite and > 0.

    A subclass names the tag of its saved form in ``saved_as`` and gives its
    constructor's arguments in ``_key()``; saving writes them, and loading
    calls the class registered under the tag with them.

    >>> import omkl
    >>> SAVED_AS["rff"] is omkl.RandomFourierFeatures
    True
    """

    saved_as: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.saved_as:
            SAVED_AS[cls.saved_as] = cls

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

    def _key(self) -> tuple[Any, ...]:
        """The constructor's arguments, in order."""
        raise NotImplementedError
