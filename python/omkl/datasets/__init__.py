"""Dataset loaders.

* :func:`load_ocr`: Taskar's OCR handwriting data (bundled with the package).
"""

from omkl.datasets.ocr import OCRDataset, load_ocr

__all__ = ["OCRDataset", "load_ocr"]
