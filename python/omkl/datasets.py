"""Dataset readers.

>>> from omkl.datasets import read_conllu  # doctest: +SKIP
"""

from omkl.parsing import read_conllu

__all__ = ["read_conllu"]
