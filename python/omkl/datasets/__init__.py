"""Dataset loaders.

* :func:`load_ocr`: Taskar's OCR handwriting data (bundled with the package).
* :func:`read_conllu`: CoNLL-U treebanks such as Universal Dependencies
  English-EWT (not bundled; pass the file's path).
* :func:`read_text`, :func:`read_sentences`, :func:`write_conllu`:
  pre-tokenised text in, CoNLL-U out (:mod:`omkl.datasets.text`).
"""

from omkl.datasets.ocr import OCRDataset, load_ocr
from omkl.datasets.text import format_conllu, read_sentences, read_text, write_conllu
from omkl.parsing import read_conllu

__all__ = [
    "OCRDataset",
    "load_ocr",
    "read_conllu",
    "read_text",
    "read_sentences",
    "format_conllu",
    "write_conllu",
]
