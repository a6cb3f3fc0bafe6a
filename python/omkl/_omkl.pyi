"""Type stubs for the native module ``omkl._omkl``.

Each area of the binding has its own section below.
"""

__version__: str

# --- prox ---------------------------------------------------------------

import numpy as np
import numpy.typing as npt

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]

def soft_threshold(x: _F64, tau: float) -> _F64: ...
def prox_l2_squared(x: _F64, tau: float) -> _F64: ...
def prox_squared_l1(x: _F64, tau: float, method: str = "sort") -> _F64: ...
def prox_weighted_squared_l1(x: _F64, d: _F64, tau: float) -> _F64: ...
def project_l1_ball(x: _F64, radius: float) -> _F64: ...
def prox_group_lasso(x: _F64, groups: _I64, tau: float) -> _F64: ...
def project_l21_ball(x: _F64, groups: _I64, radius: float) -> _F64: ...
def prox_sparse_group_lasso(x: _F64, groups: _I64, tau1: float, tau2: float) -> _F64: ...
def prox_elastic_net_mkl(x: _F64, groups: _I64, tau: float, l1_ratio: float) -> _F64: ...
def prox_l2q(x: _F64, groups: _I64, tau: float, q: float) -> _F64: ...
def prox_squared_l21(x: _F64, groups: _I64, tau: float) -> _F64: ...
def group_norms(x: _F64, groups: _I64) -> _F64: ...

# --- decode -------------------------------------------------------------

def viterbi(
    emissions: npt.NDArray[np.float64],
    transitions: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64] | None = None,
    stop: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.int64], float]: ...
def viterbi_hamming(
    emissions: npt.NDArray[np.float64],
    transitions: npt.NDArray[np.float64],
    gold: npt.NDArray[np.int64],
    cost: float = 1.0,
    start: npt.NDArray[np.float64] | None = None,
    stop: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.int64], float]: ...
def viterbi_batch(
    emissions: list[npt.NDArray[np.float64]],
    transitions: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64] | None = None,
    stop: npt.NDArray[np.float64] | None = None,
) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[np.float64]]: ...
def chu_liu_edmonds(
    scores: npt.NDArray[np.float64], single_root: bool = False
) -> tuple[npt.NDArray[np.int64], float]: ...
def chu_liu_edmonds_hamming(
    scores: npt.NDArray[np.float64],
    gold: npt.NDArray[np.int64],
    cost: float = 1.0,
    single_root: bool = False,
) -> tuple[npt.NDArray[np.int64], float]: ...
def chu_liu_edmonds_batch(
    scores: list[npt.NDArray[np.float64]], single_root: bool = False
) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[np.float64]]: ...
def forward_backward(
    emissions: npt.NDArray[np.float64],
    transitions: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64] | None = None,
    stop: npt.NDArray[np.float64] | None = None,
) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def matrix_tree(
    scores: npt.NDArray[np.float64], single_root: bool = False
) -> tuple[float, npt.NDArray[np.float64]]: ...
def eisner(
    scores: npt.NDArray[np.float64], single_root: bool = False
) -> tuple[npt.NDArray[np.int64], float]: ...
def eisner_hamming(
    scores: npt.NDArray[np.float64],
    gold: npt.NDArray[np.int64],
    cost: float = 1.0,
    single_root: bool = False,
) -> tuple[npt.NDArray[np.int64], float]: ...
def argmax(scores: npt.NDArray[np.float64]) -> tuple[int, float]: ...
def argmax_hamming(
    scores: npt.NDArray[np.float64], gold: int, cost: float = 1.0
) -> tuple[int, float]: ...

# --- kernel -------------------------------------------------------------

# --- learner ------------------------------------------------------------

# --- mkl ----------------------------------------------------------------

def train_chain_mkl(
    grams: list[npt.NDArray[np.float32]],
    inputs: npt.NDArray[np.int64],
    labels: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    n_labels: int,
    features: list[npt.NDArray[np.float32]] = ...,
    regularizer: str = "squared_l21",
    lam: float = 1e-3,
    eta0: float = 1.0,
    schedule: str = "inv_sqrt",
    epochs: int = 20,
    average: bool = True,
    cost: float = 1.0,
    shuffle: bool = True,
    seed: int = 0,
    track_objective: bool = False,
) -> dict[str, np.ndarray]: ...
def decode_chains(
    emissions: npt.NDArray[np.float64],
    offsets: npt.NDArray[np.int64],
    transitions: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64],
    stop: npt.NDArray[np.float64],
) -> npt.NDArray[np.int64]: ...
