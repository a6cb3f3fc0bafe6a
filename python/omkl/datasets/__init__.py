"""Dataset loaders.

* :func:`load_ocr`: Taskar's OCR handwriting data (bundled with the package).
* :func:`read_conllu`: CoNLL-U treebanks such as Universal Dependencies
  English-EWT (not bundled; pass the file's path).
* :func:`read_text`, :func:`read_sentences`, :func:`write_conllu`:
  pre-tokenised text in, CoNLL-U out (:mod:`omkl.datasets.text`);
  :func:`write_conllu_table`: a small treebank typed as a table;
  :func:`sample_treebank`: a bundled two-sentence treebank.
"""

from omkl.datasets import text
from omkl.datasets.ocr import OCRDataset, load_ocr
from omkl.datasets.text import *  # noqa: F403 (the names of text.__all__)
from omkl.parsing import read_conllu

__all__ = ["OCRDataset", "load_ocr", "read_conllu"]
__all__ += text.__all__
