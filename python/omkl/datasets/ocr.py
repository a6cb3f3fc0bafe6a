"""Loader for Taskar's OCR handwriting data (the ``letter.data`` layout).

One character per line, tab-separated::

    id  letter  next_id  word_id  position  fold  p_0 ... p_127

``next_id`` is -1 on a word's last character, ``word_id`` and ``position``
are 1-based and ``fold`` is 0-9. A copy of the data (52,152 characters in
6,877 words) ships inside the package; see ``data/NOTICE.md`` for its source.
"""

from __future__ import annotations

import gzip
import os
import pathlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from omkl._omkl import ParseError

#: number of pixels of one character image (16 x 8)
N_PIXELS = 128
_N_META = 6
_BUNDLED = pathlib.Path(__file__).resolve().parent / "data" / "letter.data.gz"


@dataclass(frozen=True)
class OCRDataset:
    """Words of the OCR data set.

    Attributes
    ----------
    words
        One ``(pixels, labels)`` pair per word, in file order; ``pixels`` is
        an ``n x 128`` ``uint8`` array of 0/1 pixels (a view into
        :attr:`pixels`) and ``labels`` the list of its ``n`` letters.
    folds
        Fold id (0-9) of each word, ``int64`` array of ``len(words)``.
    word_ids
        The file's ``word_id`` of each word.
    pixels
        All characters stacked, ``N x 128`` ``uint8``.
    letters
        Letter of every character, length ``N``.
    offsets
        Word ``w`` is characters ``offsets[w]:offsets[w + 1]``.
    source
        The file the data was read from.

    Examples
    --------
    >>> from omkl.datasets import load_ocr
    >>> data = load_ocr()
    >>> len(data.words), data.pixels.shape, sorted(set(data.folds.tolist()))[:3]
    (6877, (52152, 128), [0, 1, 2])
    >>> x, y = data.words[0]
    >>> x.shape[1], "".join(y)
    (128, 'ommanding')
    >>> len(data.alphabet), data.alphabet[:3]
    (26, ['a', 'b', 'c'])

    Each character is a 16 x 8 image, row by row (the first letter, "o"):

    >>> for line in x[0].reshape(16, 8)[3:13]:
    ...     print("".join(".#"[p] for p in line))
    .###....
    .#####..
    .#...##.
    ##....##
    #......#
    #......#
    #......#
    #.....##
    #...###.
    #####...
    """

    words: list[tuple[npt.NDArray[np.uint8], list[str]]] = field(repr=False)
    folds: npt.NDArray[np.int64] = field(repr=False)
    word_ids: npt.NDArray[np.int64] = field(repr=False)
    pixels: npt.NDArray[np.uint8] = field(repr=False)
    letters: list[str] = field(repr=False)
    offsets: npt.NDArray[np.int64] = field(repr=False)
    source: str = ""

    @property
    def alphabet(self) -> list[str]:
        """The sorted distinct letters."""
        return sorted(set(self.letters))

    def __repr__(self) -> str:
        return (
            f"OCRDataset({len(self.words)} words, {len(self.letters)} characters, "
            f"{len(set(self.folds.tolist()))} folds, source={self.source!r})"
        )


def _read_text(path: pathlib.Path) -> bytes:
    with open(path, "rb") as f:
        head = f.read(2)
    if head == b"\x1f\x8b":
        with gzip.open(path, "rb") as g:
            return g.read()
    return path.read_bytes()


def _parse_error(path: str, line: int | None, reason: str) -> ParseError:
    """A :class:`omkl.ParseError` for ``path``, at the 1-based ``line`` (``None``:
    the file as a whole), with the message layout of the Rust readers."""
    err = ParseError(f"{path}: {reason}" if line is None else f"{path}:{line}: {reason}")
    err.path = path
    err.line = line
    return err


def _pixel_error(pixels: bytes) -> str | None:
    """What is wrong with the pixel fields of a line (``pixels`` is everything
    after the six metadata fields), or ``None`` if they are 128 tab-separated
    0/1 values."""
    values = pixels.split(b"\t")
    if len(values) != N_PIXELS:
        return f"expected {N_PIXELS} pixel fields after the 6 metadata fields, got {len(values)}"
    for k, v in enumerate(values):
        if v not in (b"0", b"1"):
            got = v.decode("ascii", "replace")
            return f"pixel {k + 1} of {N_PIXELS} is {got!r}, expected 0 or 1"
    return None


def _locate_error(lines: list[bytes], fail: Callable[[int, str], ValueError]) -> None:
    """Line-by-line check; raises the error of the first malformed line."""
    tab = b"\t"
    for i, line in enumerate(lines):
        fields = line.split(tab, _N_META)
        if len(fields) != _N_META + 1:
            raise fail(i, f"expected {_N_META + N_PIXELS} tab-separated fields, got {len(fields)}")
        try:
            for k in (0, 2, 3, 4, 5):
                int(fields[k])
        except ValueError:
            raise fail(
                i, "expected integers in fields id, next_id, word_id, position, fold"
            ) from None
        letter = fields[1].decode("ascii", "replace")
        if len(letter) != 1 or not letter.isalpha():
            raise fail(i, f"expected a single letter in field 2, got {letter!r}")
        reason = _pixel_error(fields[6])
        if reason is not None:
            raise fail(i, reason)


def load_ocr(path: str | os.PathLike[str] | None = None) -> OCRDataset:
    """Reads OCR data in the ``letter.data`` layout (plain or gzip-compressed).

    Parameters
    ----------
    path
        File to read; ``None`` reads the copy bundled with the package.

    Returns
    -------
    OCRDataset
        The words, grouped by ``word_id`` in file order, with their folds.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (``OSError`` for other failures to open it).
    omkl.ParseError
        A ``ValueError`` whose message starts with ``path:line:``, on a
        malformed line; or ``path:`` if the file holds no characters or is a
        corrupt gzip file.

    Examples
    --------
    >>> from omkl.datasets import load_ocr
    >>> data = load_ocr()
    >>> len(data.letters)
    52152
    >>> data  # doctest: +ELLIPSIS
    OCRDataset(6877 words, 52152 characters, 10 folds, source='...letter.data.gz')
    """
    src = _BUNDLED if path is None else pathlib.Path(path)
    name = str(src)
    try:
        raw = _read_text(src)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise _parse_error(name, None, f"cannot decompress the gzip data: {e}") from e
    lines = raw.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise _parse_error(
            name, None, "expected OCR data in the letter.data layout, got an empty file"
        )
    lines = [line.rstrip(b"\t\r ") for line in lines]
    n = len(lines)
    width = 2 * N_PIXELS - 1

    def fail(i: int, reason: str) -> ParseError:
        return _parse_error(name, i + 1, reason)

    # Fast path: the pixels are the last 255 bytes of each line, the six
    # metadata fields come before. Any irregularity sends us to the slow
    # line-by-line check, which names the first bad line.
    heads = [line[: -width - 1] for line in lines]
    tokens = b"\t".join(heads).split(b"\t")
    ok = len(tokens) == _N_META * n and all(
        len(line) > width and line[-width - 1] == 9 for line in lines
    )
    table = None
    if ok:
        arr = np.array(tokens).reshape(n, _N_META)
        try:
            table = arr[:, [0, 2, 3, 4, 5]].astype(np.int64)
        except ValueError:
            table = None
        letter_col = arr[:, 1]
        if table is None or (np.char.str_len(letter_col) != 1).any():
            table = None
    if table is None:
        _locate_error(lines, fail)
        raise fail(0, "malformed OCR data")  # pragma: no cover (located above)
    letters = [c.decode("ascii", "replace") for c in letter_col.tolist()]
    bad_letter = [i for i, c in enumerate(letters) if not c.isalpha()]
    if bad_letter:
        i = bad_letter[0]
        raise fail(i, f"expected a single letter in field 2, got {letters[i]!r}")
    meta = table[:, [0, 1, 2, 4]]  # id, next_id, word_id, fold
    position = table[:, 3]
    bad_fold_range = np.flatnonzero((meta[:, 3] < 0) | (meta[:, 3] > 9))
    if len(bad_fold_range):
        i = int(bad_fold_range[0])
        raise fail(i, f"expected a fold id in 0..9, got {meta[i, 3]}")
    expected_tail = width
    pixel_parts = [line[-width:] for line in lines]
    grid = np.frombuffer(b"".join(pixel_parts), dtype=np.uint8).reshape(n, expected_tail)
    digits = grid[:, 0::2]
    seps = grid[:, 1::2]
    bad = ((digits < ord("0")) | (digits > ord("1"))).any(axis=1) | (seps != ord("\t")).any(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(i, _pixel_error(lines[i][-width:]) or "expected 0/1 pixels")
    pixels = np.ascontiguousarray(digits - np.uint8(ord("0")))

    # Words: consecutive lines chained by next_id, positions 1..n, one fold.
    ids, nxt, wid, fold = meta[:, 0], meta[:, 1], meta[:, 2], meta[:, 3]
    ends = np.flatnonzero(nxt == -1)
    if len(ends) == 0 or ends[-1] != n - 1:
        raise fail(n - 1, "expected next_id -1 on the last character of the file")
    inner = np.ones(n, dtype=bool)
    inner[ends] = False
    idx = np.flatnonzero(inner)
    bad_chain = idx[(nxt[idx] != ids[np.minimum(idx + 1, n - 1)]) | (wid[idx] != wid[idx + 1])]
    if len(bad_chain):
        i = int(bad_chain[0])
        raise fail(i, f"next_id {nxt[i]} is not the id of the next line of the same word")
    bad_fold = idx[fold[idx] != fold[idx + 1]]
    if len(bad_fold):
        raise fail(int(bad_fold[0]) + 1, "expected the same fold for every character of a word")
    offsets = np.concatenate(([0], ends + 1)).astype(np.int64)
    starts = offsets[:-1]
    expect_pos = np.arange(n) - np.repeat(starts, np.diff(offsets)) + 1
    bad_pos = np.flatnonzero(position != expect_pos)
    if len(bad_pos):
        i = int(bad_pos[0])
        raise fail(i, f"expected position {expect_pos[i]}, got {position[i]}")
    if len(np.unique(wid[starts])) != len(starts):
        w = wid[starts]
        _, first = np.unique(w, return_index=True)
        dup = np.setdiff1d(np.arange(len(w)), first)[0]
        raise fail(int(starts[dup]), f"word_id {w[dup]} appears in two separate words")

    words = [
        (pixels[a:b], letters[a:b])
        for a, b in zip(starts.tolist(), offsets[1:].tolist(), strict=True)
    ]
    return OCRDataset(
        words=words,
        folds=fold[starts].copy(),
        word_ids=wid[starts].copy(),
        pixels=pixels,
        letters=letters,
        offsets=offsets,
        source=name,
    )
