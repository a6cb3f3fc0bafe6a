"""omkl: online multiple kernel learning and structured sparsity for structured prediction.

The maths lives in a Rust core (``omkl._omkl``); this package holds river-style
streaming estimators, dataset loaders, experiments and a command-line interface.
Measured results (the OCR table, the parser, the streaming MKL defaults) are in
the repository's ``docs/`` folder.

Examples
--------
A river-style estimator learns one dict of features at a time:

>>> import omkl
>>> model = omkl.ProximalClassifier()
>>> for x, y in [({"colour_red": 1.0}, "apple"), ({"colour_yellow": 1.0}, "banana")] * 20:
...     model.learn_one(x, y)
>>> model.predict_one({"colour_yellow": 1.0})
'banana'
>>> model.group_norms_.keys()  # one group per prefix before "_"
dict_keys(['colour'])
"""

from omkl import _omkl, decode, kernels, prox
from omkl._omkl import ParseError
from omkl.datasets import load_ocr
from omkl.kernels import Kernel
from omkl.linear import ProximalClassifier, ProximalRegressor
from omkl.mkl import MKLClassifier, PrecomputedFeatures, PrecomputedGram, SequenceTagger
from omkl.morphology import MorphologyTagger
from omkl.nystroem import NystroemFeatures
from omkl.parsing import DependencyParser
from omkl.pipeline import TextParser
from omkl.random_features import RandomFourierFeatures
from omkl.tagging import TextTagger
from omkl.tokenizer import Tokenizer

__version__: str = _omkl.__version__

__all__ = [
    "DependencyParser",
    "Kernel",
    "MKLClassifier",
    "MorphologyTagger",
    "NystroemFeatures",
    "ParseError",
    "PrecomputedFeatures",
    "PrecomputedGram",
    "ProximalClassifier",
    "ProximalRegressor",
    "RandomFourierFeatures",
    "SequenceTagger",
    "TextParser",
    "TextTagger",
    "Tokenizer",
    "__version__",
    "decode",
    "kernels",
    "load_ocr",
    "prox",
]
