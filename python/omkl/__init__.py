"""omkl: online multiple kernel learning and structured sparsity for structured prediction.

The maths lives in a Rust core (``omkl._omkl``); this package holds river-style
streaming estimators, dataset loaders, experiments and a command-line interface.
"""

from omkl import _omkl, decode, prox
from omkl.datasets import load_ocr

__version__: str = _omkl.__version__

__all__ = ["__version__", "decode", "load_ocr", "prox"]
