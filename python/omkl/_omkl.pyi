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
