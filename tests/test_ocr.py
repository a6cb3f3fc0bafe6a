"""OCR data loader, kernelised online MKL on chains and the OCR experiment."""

from __future__ import annotations

import gzip
import pathlib

import numpy as np
import pytest

from omkl.datasets import load_ocr


@pytest.fixture(scope="module")
def ocr():
    return load_ocr()


def _lines(n_words: int = 3) -> list[str]:
    """A tiny valid file: ``n_words`` words of 2-3 characters."""
    rng = np.random.default_rng(0)
    out, cid = [], 1
    for w in range(n_words):
        n = 2 + w % 2
        for p in range(n):
            nxt = -1 if p == n - 1 else cid + 1
            pix = "\t".join(str(v) for v in rng.integers(0, 2, 128))
            out.append(f"{cid}\t{'abc'[p]}\t{nxt}\t{w + 1}\t{p + 1}\t{w % 10}\t{pix}")
            cid += 1
    return out


def test_bundled_file_loads(ocr):
    assert len(ocr.letters) == 52152
    assert len(ocr.words) == 6877
    assert sorted(set(ocr.folds.tolist())) == list(range(10))
    assert ocr.pixels.shape == (52152, 128) and ocr.pixels.dtype == np.uint8
    assert set(np.unique(ocr.pixels).tolist()) == {0, 1}
    assert ocr.alphabet == [chr(c) for c in range(ord("a"), ord("z") + 1)]
    x, y = ocr.words[0]
    assert x.shape == (len(y), 128)
    assert sum(len(w[1]) for w in ocr.words) == 52152


def test_loader_matches_slow_reference(tmp_path: pathlib.Path):
    lines = _lines(5)
    path = tmp_path / "letter.data"
    path.write_text("\n".join(lines) + "\n")
    data = load_ocr(path)
    rows = [ln.split("\t") for ln in lines]
    np.testing.assert_array_equal(data.pixels, np.array([r[6:] for r in rows], dtype=np.uint8))
    assert data.letters == [r[1] for r in rows]
    assert [len(w[1]) for w in data.words] == [2, 3, 2, 3, 2]
    assert data.folds.tolist() == [0, 1, 2, 3, 4]
    gz = tmp_path / "letter.data.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    np.testing.assert_array_equal(load_ocr(gz).pixels, data.pixels)


@pytest.mark.parametrize(
    ("line_no", "edit", "match"),
    [
        (3, lambda f: f[:-1], "fields"),
        (2, lambda f: f[:5] + ["x"] + f[6:], "integers"),
        (4, lambda f: f[:7] + ["2"] + f[8:], "0 or 1"),
        (1, lambda f: f[:1] + ["ab"] + f[2:], "single letter"),
        (5, lambda f: f[:5] + ["12"] + f[6:], "fold"),
        (2, lambda f: f[:4] + ["7"] + f[5:], "position"),
        (1, lambda f: f[:2] + ["99"] + f[3:], "next_id"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: pathlib.Path, line_no, edit, match):
    lines = _lines(3)
    lines[line_no - 1] = "\t".join(edit(lines[line_no - 1].split("\t")))
    path = tmp_path / "bad.data"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=match) as err:
        load_ocr(path)
    assert f"bad.data:{line_no}:" in str(err.value)


def test_missing_and_empty_files(tmp_path: pathlib.Path):
    with pytest.raises(ValueError, match="cannot read"):
        load_ocr(tmp_path / "nope.data")
    (tmp_path / "empty.data").write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_ocr(tmp_path / "empty.data")
