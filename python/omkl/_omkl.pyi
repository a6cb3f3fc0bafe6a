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
