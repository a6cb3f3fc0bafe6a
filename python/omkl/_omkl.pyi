"""Type stubs for the native module ``omkl._omkl``.

Each area of the binding has its own section below.
"""

__version__: str

# --- prox ---------------------------------------------------------------

import numpy as np
import numpy.typing as npt

def soft_threshold(x: npt.NDArray[np.float64], tau: float) -> npt.NDArray[np.float64]: ...

# --- decode -------------------------------------------------------------

# --- kernel -------------------------------------------------------------

from typing import final  # noqa: E402

@final
class Kernel:
    def __new__(
        cls,
        kind: str,
        degree: int = 2,
        offset: float = 1.0,
        normalize: bool = False,
        sigma2: float = 5.0,
        h: float = 1.0,
    ) -> Kernel: ...
    @property
    def kind(self) -> str: ...
    @property
    def has_compact_support(self) -> bool: ...
    @property
    def has_unit_diagonal(self) -> bool: ...
    def args(self) -> tuple[str, int, float, bool, float, float]: ...
    def eval(
        self, x: list[float] | npt.NDArray[np.float32], y: list[float] | npt.NDArray[np.float32]
    ) -> float: ...
    def __reduce__(self) -> tuple[type[Kernel], tuple[str, int, float, bool, float, float]]: ...

def gram(
    kernel: Kernel, x: npt.NDArray[np.float32], y: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]: ...

@final
class SparseGram:
    @staticmethod
    def from_csr(
        nrows: int,
        ncols: int,
        indptr: npt.NDArray[np.int64],
        indices: npt.NDArray[np.int64],
        data: npt.NDArray[np.float32],
    ) -> SparseGram: ...
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def nnz(self) -> int: ...
    @property
    def density(self) -> float: ...
    @property
    def nbytes(self) -> int: ...
    def csr(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
    def to_dense(self) -> npt.NDArray[np.float32]: ...
    def scores(self, alpha: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def score_row(self, i: int, alpha: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...

def sparse_gram(
    kernel: Kernel, x: npt.NDArray[np.float32], y: npt.NDArray[np.float32] | None = None
) -> SparseGram: ...
def b1_bandwidth(
    x: npt.NDArray[np.float32], zero_fraction: float = 0.95, max_sample: int = 2000
) -> float: ...

# --- learner ------------------------------------------------------------
