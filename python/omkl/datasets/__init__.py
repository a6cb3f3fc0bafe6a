"""Dataset loaders.

* :func:`load_ocr`: Taskar's OCR handwriting data (bundled with the package).
* :func:`read_conllu`: CoNLL-U treebanks such as Universal Dependencies
  English-EWT (not bundled; pass the file's path).
"""

from omkl.datasets.ocr import OCRDataset, load_ocr
from omkl.parsing import read_conllu

__all__ = ["OCRDataset", "load_ocr", "read_conllu"]
