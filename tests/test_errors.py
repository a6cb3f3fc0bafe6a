"""Errors by kind for files and for the parser's inputs.

A missing file is ``FileNotFoundError``; a malformed file is
``omkl.ParseError`` (a ``ValueError``) whose message starts with
``path:line:`` and whose ``path`` and ``line`` attributes say the same; a bad
argument is ``ValueError`` or ``TypeError`` naming it.
"""

from __future__ import annotations

import gzip
import pathlib
import pickle
import re

import numpy as np
import pytest

import omkl
from omkl import DependencyParser, ParseError, _omkl, load_ocr
from omkl.parsing import read_conllu


def _word(i: int, head: object, form: str = "w", ident: object = None) -> str:
    ident = i if ident is None else ident
    return f"{ident}\t{form}{i}\t{form}\tNOUN\tNN\t_\t{head}\tdep\t_\t_"


#: two well-formed sentences (lines 1-4 and 6-8)
GOOD = [
    "# sent_id = a",
    _word(1, 2),
    _word(2, 0),
    _word(3, 2),
    "",
    "# sent_id = b",
    _word(1, 0),
    _word(2, 1),
    "",
]


def _write(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _parser() -> DependencyParser:
    return DependencyParser(templates=list(range(12)), prune_k=0, label_epochs=0, epochs=1)


def _sent(n: int = 3) -> list[dict[str, str]]:
    return [
        {"form": f"w{i}", "lemma": "w", "upos": "NOUN", "xpos": "NN", "feats": "_"}
        for i in range(n)
    ]


def _check_parse_error(err: pytest.ExceptionInfo[ParseError], path: pathlib.Path, line: int):
    e = err.value
    assert type(e) is ParseError
    assert isinstance(e, ValueError)
    assert e.path == str(path)
    assert e.line == line
    assert str(e).startswith(f"{path}:{line}: "), str(e)


# --- the class --------------------------------------------------------------


def test_parse_error_is_one_value_error_class_exported_once() -> None:
    assert omkl.ParseError is _omkl.ParseError
    assert "ParseError" in omkl.__all__
    assert issubclass(ParseError, ValueError)
    assert ParseError.path is None and ParseError.line is None


def test_parse_error_pickles_with_its_location(tmp_path: pathlib.Path) -> None:
    p = _write(tmp_path / "x.conllu", ["1\tw\tw\tX\tX\t_\t0\troot\t_"])
    with pytest.raises(ParseError) as err:
        read_conllu(p)
    back = pickle.loads(pickle.dumps(err.value))
    assert type(back) is ParseError
    assert (back.path, back.line, str(back)) == (str(p), 1, str(err.value))


# --- missing files ----------------------------------------------------------


def test_missing_conllu_file_is_file_not_found(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "nope.conllu"
    calls = [
        lambda: read_conllu(missing),
        lambda: read_conllu(str(missing)),
        lambda: omkl.datasets.read_conllu(missing),
        lambda: _parser().fit(missing),
        lambda: _parser().parse(missing),
        lambda: _omkl.ParseCorpus.from_path(missing),
    ]
    for call in calls:
        with pytest.raises(FileNotFoundError) as err:
            call()
        assert err.value.filename == str(missing)
        assert str(missing) in str(err.value)


def test_a_directory_is_an_os_error_not_a_parse_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_conllu(tmp_path)
    with pytest.raises(IsADirectoryError):
        load_ocr(tmp_path)


def test_missing_ocr_file_is_file_not_found(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "letter.data"
    with pytest.raises(FileNotFoundError) as err:
        load_ocr(missing)
    assert err.value.filename == str(missing)


# --- malformed CoNLL-U --------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ("1\tw\tw\tNOUN\tNN\t_\t0\troot\t_", "expected 10 tab-separated columns, got 9"),
        ("1\tw\tw\tNOUN", "expected 10 tab-separated columns, got 4"),
        (_word(2, 0, ident="x-y"), "ID `x-y`"),
        (_word(2, 0, ident="-1"), "ID `-1`"),
        (_word(2, 0, ident="1.2.3"), "ID `1.2.3`"),
        (_word(2, 0, ident="3-2"), "ID `3-2`"),
        (_word(2, 0, ident="2.0"), "ID `2.0`"),
        (_word(2, 0, ident="two"), "ID `two`"),
        (_word(2, 0, ident="+2"), "ID `+2`"),
        (_word(2, 0, ident=3), "expected word ID 2, got 3"),
        (_word(2, "zero"), "HEAD `zero`"),
        (_word(2, "2.7"), "HEAD `2.7`"),
        (_word(2, "-1"), "HEAD `-1`"),
        (_word(2, "+1"), "HEAD `+1`"),
        (_word(2, 2), "itself"),
        (_word(2, 9), "HEAD 9 is out of range for a sentence of 3 words"),
        (_word(2, 2**70), f"HEAD {2**70} is too large"),
    ],
)
def test_malformed_conllu_line_is_a_parse_error_naming_file_and_line(
    tmp_path: pathlib.Path, bad: str, what: str
) -> None:
    lines = list(GOOD)
    lines[2] = bad  # word 2 of sentence "a", on line 3
    p = _write(tmp_path / "bad.conllu", lines)
    with pytest.raises(ParseError) as err:
        read_conllu(p)
    _check_parse_error(err, p, 3)
    assert what in str(err.value)
    with pytest.raises(ParseError) as err:
        _parser().fit(p)
    _check_parse_error(err, p, 3)


def test_malformed_line_in_a_later_sentence_counts_every_line(tmp_path: pathlib.Path) -> None:
    lines = ["# newdoc", *GOOD, "# sent_id = c", "# text = w", _word(1, 0, ident="1-x")]
    p = _write(tmp_path / "later.conllu", lines)
    with pytest.raises(ParseError) as err:
        read_conllu(p)
    _check_parse_error(err, p, len(lines))


def test_invalid_utf8_is_a_parse_error_at_its_line(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "latin1.conllu"
    p.write_bytes(
        "\n".join(GOOD[:5]).encode() + b"\n# sent_id = b\n1\tca\xf1a\t_\tX\tX\t_\t0\tr\t_\t_\n"
    )
    with pytest.raises(ParseError) as err:
        read_conllu(p)
    _check_parse_error(err, p, 7)
    assert "UTF-8" in str(err.value)


def test_valid_ranges_and_empty_nodes_are_still_skipped(tmp_path: pathlib.Path) -> None:
    lines = [
        GOOD[0],
        "1-2\tww\t_\t_\t_\t_\t_\t_\t_\t_",
        *GOOD[1:3],
        "2.1\te\te\tX\tX\t_\t_\t_\t_\t_",
    ]
    lines += [*GOOD[3:5], "0.1\te\te\tX\tX\t_\t_\t_\t_\t_", *GOOD[6:]]
    with_extra = read_conllu(_write(tmp_path / "a.conllu", lines))
    plain = read_conllu(_write(tmp_path / "b.conllu", GOOD))
    assert with_extra == plain


@pytest.mark.parametrize(
    ("heads", "what"),
    [([2, 3, 1], "cycle"), ([2, 1, 0], "cycle"), (["_", 0, 2], "word 1 has no gold head")],
)
def test_bad_gold_tree_in_a_file_names_file_and_sentence_line(
    tmp_path: pathlib.Path, heads: list[object], what: str
) -> None:
    bad = ["# sent_id = c", *(_word(i + 1, h) for i, h in enumerate(heads)), ""]
    p = _write(tmp_path / "tree.conllu", [*GOOD, *bad])
    assert len(read_conllu(p)) == 3  # reading needs no tree
    parser = _parser()
    with pytest.raises(ParseError) as err:
        parser.fit(p)
    _check_parse_error(err, p, len(GOOD) + 1)
    assert 'sentence "c"' in str(err.value) and what in str(err.value)
    assert parser._core.steps() == 0
    # the same sentences as dicts: no file, but the sentence is named
    with pytest.raises(ValueError, match=rf'sentence "3".*{what}') as err2:
        _parser().fit(read_conllu(p))
    assert type(err2.value) is ValueError


def test_score_on_a_file_with_a_missing_gold_head_names_file_and_line(
    tmp_path: pathlib.Path,
) -> None:
    parser = _parser().fit(_write(tmp_path / "train.conllu", GOOD))
    lines = [*GOOD, "# sent_id = c", _word(1, 0), _word(2, "_"), ""]
    p = _write(tmp_path / "gold.conllu", lines)
    with pytest.raises(ParseError) as err:
        parser.score(p)
    _check_parse_error(err, p, len(GOOD) + 1)
    assert 'sentence "c": word 2 has no gold head' in str(err.value)
    with pytest.raises(ValueError, match='sentence "3": word 2 has no gold head'):
        parser.score(read_conllu(p))
    assert parser.score(_write(tmp_path / "ok.conllu", GOOD))["uas"] is not None


def test_a_byte_order_mark_is_accepted(tmp_path: pathlib.Path) -> None:
    plain = _write(tmp_path / "plain.conllu", GOOD)
    bom = tmp_path / "bom.conllu"
    bom.write_text("\n".join(GOOD) + "\n", encoding="utf-8-sig")
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf")
    assert read_conllu(bom) == read_conllu(plain)
    assert _omkl.ParseCorpus.from_path(bom).ids() == ["a", "b"]
    a, b = _parser().fit(bom), _parser().fit(plain)
    assert a.parse(bom) == b.parse(plain)
    # a mark anywhere else is not skipped
    mid = tmp_path / "mid.conllu"
    mid.write_text("\n".join(GOOD[:6]) + "\n\ufeff" + "\n".join(GOOD[6:]) + "\n", encoding="utf-8")
    with pytest.raises(ParseError) as err:
        read_conllu(mid)
    _check_parse_error(err, mid, 7)


# --- nothing to train on --------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# a comment\n# sent_id = x\n\n# another\n"])
def test_fit_on_a_file_without_sentences_is_refused(tmp_path: pathlib.Path, text: str) -> None:
    p = tmp_path / "empty.conllu"
    p.write_text(text)
    assert read_conllu(p) == []
    parser = _parser()
    with pytest.raises(ValueError, match="no sentences") as err:
        parser.fit(p)
    assert str(p) in str(err.value)
    assert parser.history_ == [] and parser._core.steps() == 0


def test_fit_on_an_empty_list_is_refused() -> None:
    parser = _parser()
    with pytest.raises(ValueError, match="no sentences"):
        parser.fit([])
    assert parser.history_ == [] and parser._core.steps() == 0
    with pytest.raises(ValueError, match="no sentences"):
        DependencyParser(templates=list(range(12)), prune_k=5).pruner_recall([])


# --- heads must be integers ---------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "exc"),
    [
        (2.7, TypeError),
        (2.0, TypeError),
        ("2", TypeError),
        (True, TypeError),
        (None, TypeError),
        (2**70, ValueError),
        (-1, ValueError),
        (4, ValueError),
    ],
)
def test_learn_one_refuses_non_integer_heads_naming_heads(bad: object, exc: type) -> None:
    parser = _parser()
    with pytest.raises(exc, match=r"heads\[1\] of sentence") as err:
        parser.learn_one(_sent(), [2, bad, 2])
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)
    assert parser._core.steps() == 0


def test_learn_one_refuses_a_wrong_number_or_kind_of_heads() -> None:
    parser = _parser()
    with pytest.raises(ValueError, match="expected 3 heads"):
        parser.learn_one(_sent(), [2, 0])
    with pytest.raises(TypeError, match="heads"):
        parser.learn_one(_sent(), "200")
    with pytest.raises(TypeError, match="heads"):
        parser.learn_one(_sent(), 2)  # type: ignore[arg-type]
    assert parser._core.steps() == 0


def test_numpy_integer_heads_train_like_python_ints() -> None:
    a, b = _parser(), _parser()
    a.learn_one(_sent(), [2, 0, 2])
    b.learn_one(_sent(), list(np.array([2, 0, 2], dtype=np.int64)))
    assert a._core.__getstate__() == b._core.__getstate__()


@pytest.mark.parametrize(
    ("bad", "exc"), [(2.7, TypeError), ("2", TypeError), (2**70, ValueError), (-3, ValueError)]
)
def test_token_dict_heads_must_be_integers(bad: object, exc: type) -> None:
    sents = [_sent(), _sent()]
    for s, hs in zip(sents, [[2, 0, 2], [0, 1, 1]], strict=True):
        for t, h in zip(s, hs, strict=True):
            t["head"] = h  # type: ignore[assignment]
    sents[1][2]["head"] = bad  # type: ignore[assignment]
    for call in (_parser().fit, _parser().parse):
        with pytest.raises(exc, match=r"head of token 3 of sentence '2'"):
            call(sents)


def test_token_dicts_without_some_heads_name_the_right_sentence() -> None:
    sents = [_sent(), _sent()]
    for s, hs in zip(sents, [[2, 0, 2], [0, None, 1]], strict=True):
        for t, h in zip(s, hs, strict=True):
            t["head"] = h  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r'sentence "2": word 2 has no gold head'):
        _parser().fit(sents)
    # parsing needs no gold heads
    assert [len(h) for h in _parser().parse(sents)] == [3, 3]


# --- OCR data -----------------------------------------------------------------


def _ocr_lines() -> list[str]:
    rng = np.random.default_rng(0)
    out = []
    for cid, (letter, nxt, pos) in enumerate([("a", 2, 1), ("b", -1, 2), ("c", -1, 1)], start=1):
        pix = "\t".join(str(v) for v in rng.integers(0, 2, 128))
        word = 1 if cid < 3 else 2
        out.append(f"{cid}\t{letter}\t{nxt}\t{word}\t{pos}\t0\t{pix}")
    return out


@pytest.mark.parametrize(
    ("edit", "what"),
    [
        (lambda f: f[:-1], "expected 128 pixel fields after the 6 metadata fields, got 127"),
        (lambda f: [*f, "0"], "expected 128 pixel fields after the 6 metadata fields, got 129"),
        (lambda f: f[:13] + ["10"] + f[14:], "pixel 8 of 128 is '10', expected 0 or 1"),
        (lambda f: f[:13] + ["2"] + f[14:], "pixel 8 of 128 is '2', expected 0 or 1"),
        (lambda f: f[:13] + [""] + f[14:], "pixel 8 of 128 is '', expected 0 or 1"),
        (lambda f: f[:2] + ["x"] + f[3:], "integers"),
        (lambda f: f[:1] + ["ab"] + f[2:], "single letter"),
    ],
)
def test_malformed_ocr_line_is_a_parse_error_naming_file_and_line(
    tmp_path: pathlib.Path, edit, what: str
) -> None:
    lines = _ocr_lines()
    lines[1] = "\t".join(edit(lines[1].split("\t")))
    p = tmp_path / "bad.data"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError) as err:
        load_ocr(p)
    _check_parse_error(err, p, 2)
    assert what in str(err.value)
    assert not re.search(r"expected 128 .*got 128\b", str(err.value))
    gz = tmp_path / "bad.data.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    with pytest.raises(ParseError) as err:
        load_ocr(gz)
    _check_parse_error(err, gz, 2)


def test_ocr_file_level_faults_are_parse_errors_without_a_line(tmp_path: pathlib.Path) -> None:
    good = tmp_path / "good.data"
    good.write_text("\n".join(_ocr_lines()) + "\n")
    assert len(load_ocr(good).words) == 2
    empty = tmp_path / "empty.data"
    empty.write_text("\n\n")
    truncated = tmp_path / "cut.data.gz"
    truncated.write_bytes(gzip.compress(good.read_bytes())[:-12])
    for p, what in [(empty, "empty file"), (truncated, "gzip")]:
        with pytest.raises(ParseError, match=what) as err:
            load_ocr(p)
        assert err.value.path == str(p) and err.value.line is None
        assert str(err.value).startswith(f"{p}: ")


# --- the parsing experiment reads its files before training ------------------


@pytest.mark.parametrize("fault", ["missing", "malformed"])
def test_parsing_experiment_checks_the_test_file_before_training(
    tmp_path: pathlib.Path, fault: str
) -> None:
    from omkl.cli import main

    train = _write(tmp_path / "train.conllu", GOOD)
    test = tmp_path / "test.conllu"
    if fault == "malformed":
        _write(test, [*GOOD[:2], _word(2, "x")])
    out = tmp_path / "out"
    argv = ["reproduce", "parsing", "--train", str(train), "--test", str(test)]
    argv += ["--out", str(out), "--epochs", "1", "--no-pruning"]
    with pytest.raises(FileNotFoundError if fault == "missing" else ParseError):
        main(argv)
    assert not out.exists()  # nothing was trained or written
