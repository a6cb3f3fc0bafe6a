"""omkl: online multiple kernel learning and structured sparsity for structured prediction.

The maths lives in a Rust core (``omkl._omkl``); this package holds river-style
streaming estimators, dataset loaders, experiments and a command-line interface.
"""

from omkl import _omkl, decode, kernels, prox
from omkl._omkl import ParseError
from omkl.datasets import load_ocr
from omkl.kernels import Kernel
from omkl.linear import ProximalClassifier, ProximalRegressor
from omkl.mkl import MKLClassifier, PrecomputedGram, SequenceTagger
from omkl.parsing import DependencyParser

__version__: str = _omkl.__version__

__all__ = [
    "DependencyParser",
    "Kernel",
    "MKLClassifier",
    "ParseError",
    "PrecomputedGram",
    "ProximalClassifier",
    "ProximalRegressor",
    "SequenceTagger",
    "__version__",
    "decode",
    "kernels",
    "load_ocr",
    "prox",
]
