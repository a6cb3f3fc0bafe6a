"""Token templates computed in the core: for every block, the entries
(template, bucket, value) of each word equal those of the feature dicts that
omkl.tagging and omkl.morphology build in Python, in the same order, on the
training forms of three treebanks (English, Greek, Gothic), on hand-made
Unicode edge cases, on random text and on every assigned code point; a
MorphologyTagger that reads them saves the same bytes and tags the same as
one that reads the dicts; bad input is a ValueError naming the sentence."""

from __future__ import annotations

import pathlib
import pickle
import unicodedata
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_morphology import corpus

from omkl import _omkl
from omkl.morphology import (
    MorphologyTagger,
    _ambiguity,
    _casing,
    _dicts,
    _lex_feats,
    _lexicon,
    _lookup,
    _stage_blocks,
    _templates,
)
from omkl.parsing import read_conllu
from omkl.tagging import TextTagger, _Sentences, token_features

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"
TREEBANKS = {
    "en_ewt": DATA / "ud-english-ewt" / "en_ewt-ud-train.conllu",
    "el_gdt": DATA / "ud-greek-gdt" / "el_gdt-ud-train.conllu",
    "got_proiel": DATA / "ud-gothic-proiel" / "got_proiel-ud-train.conllu",
}
NB = 1 << 16

#: Words whose classes differ between languages or Unicode versions.
EDGE = [
    ["ǅemal", "İstanbul", "ΣΟΦΟΣ", "١٢", "ß", "ﬁ", "Ⅻ", "ⓐ", "𐌰𐍁", "ǅ̈"],
    ["ΌΣΟΣ.", "ΑΣ'Σ", "Σ", "ΑΣ\u0301", "A\u0301b", "²³", "½", "𝟘", "x-y", "-"],
    ["", "THE", "The", "the", "e-2", "E-2", "Ǆ", "ǆ", "ᾈ", "ᾀ", "ʕali", "ჼ", "ꭩ"],
    ["Ⓐ", "Σ\u0345", "\U0001d400", "ﬀ", "İİ", "\u1e9e", "ꞵ", "ꞔ", "ᏸ", "Ᏸ", "٣x", "𑁦"],
]


def hashed(dicts: Sequence[dict[str, Any]]) -> list[list[tuple[str, int, float]]]:
    """The entries of feature dicts as TextTagger reads them."""
    out = []
    for d in dicts:
        row = []
        for k, v in d.items():
            if isinstance(v, str):
                row.append((k, _omkl.hash_feature(f"{k}={v}") % NB, 1.0))
            else:
                row.append((k, _omkl.hash_feature(k) % NB, float(v)))
        out.append(row)
    return out


def _treebank(name: str, n: int = 300) -> list[list[dict[str, str]]]:
    path = TREEBANKS[name]
    if not path.exists():
        pytest.skip(f"no {name} data in {path.parent}")
    return read_conllu(str(path))[:n]


def _stage_sets(
    words: list[list[str]], upos: list[list[str]], xpos: list[list[str]], feats: list[list[str]]
) -> list[_Sentences]:
    """Every set of templates of the morphology stages, with columns taken
    from the lexicons of the sentences and their gold tags."""
    lowers = [[w.lower() for w in ws] for ws in words]
    amb = _ambiguity(_lexicon(words, xpos), 0.01)
    classes = [_lookup(amb, ls) for ls in lowers]
    case = _casing(words[: len(words) // 2])
    cases = [_lookup(case, ls) for ls in lowers]
    sets = []
    for tags, col in ((None, None), ("xpos", xpos), ("upos", upos)):
        for casing in (False, True):
            cols = [classes, *([col] if col else []), *([cases] if casing else [])]
            sets.append(_Sentences(_templates(_stage_blocks(tags, casing)), words, cols))
    sets.append(_Sentences(_templates(("lemma",)), words, [upos, xpos]))
    sets.append(_Sentences(_templates(("feats",)), words, [upos, xpos, feats]))
    return sets


def _check_parity(data: _Sentences) -> None:
    want = _dicts(data)
    for s, ws in enumerate(data.words):
        got = data.templates.entries(ws, [c[s] for c in data.columns], NB)
        assert got == hashed(want[s]), (data.templates.blocks, ws)


def _columns_of(sents: list[list[dict[str, str]]]) -> tuple[list[list[str]], ...]:
    return tuple([[t[k] for t in s] for s in sents] for k in ("form", "upos", "xpos", "feats"))


@pytest.mark.parametrize("name", list(TREEBANKS))
def test_every_stage_equals_the_python_dicts_on_a_treebank(name: str) -> None:
    words, upos, xpos, feats = _columns_of(_treebank(name))
    for data in _stage_sets(words, upos, xpos, feats):
        _check_parity(data)
    # the token block alone is token_features
    t = _omkl.TokenTemplates(["token"])
    for ws in words:
        assert t.entries(ws, [], NB) == hashed(token_features(ws))


def test_every_stage_equals_the_python_dicts_on_unicode_edge_cases() -> None:
    words = [*EDGE, ["a"], ["Α", "β"], [w for ws in EDGE for w in ws]]
    upos = [[f"U{i % 3}" for i in range(len(ws))] for ws in words]
    xpos = [[f"X|{w[-1:]}" for w in ws] for ws in words]
    feats = [["_" if i % 2 else "Case=Nom" for i in range(len(ws))] for ws in words]
    for data in _stage_sets(words, upos, xpos, feats):
        _check_parity(data)
    # an FEATS lexicon column as the tagger computes it
    back = {"U0\tX|a": "A=B"}
    lex = [_lex_feats({}, back, ws, us, xs) for ws, us, xs in zip(words, upos, xpos, strict=True)]
    _check_parity(_Sentences(_templates(("feats",)), words, [upos, xpos, lex]))


WORD = st.text(
    st.sampled_from("aAzZΣσςΑάΌίİıǅǄǆß0١²½-'.\u0301\u0345Ⅻⓐᾈǅﬁ𐌰𐍁ʕ ")
    | st.characters(codec="utf-8", exclude_categories=["Cs"]),
    max_size=7,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(WORD, min_size=1, max_size=6))
def test_random_text_equals_the_python_dicts(words: list[str]) -> None:
    n = len(words)
    cols = [[f"c{i % 2}" for i in range(n)], words[::-1], [w.upper() for w in words]]
    data = _Sentences(
        _templates(("token", "classes:amb", "tags:upos", "casing")), [words], [[c] for c in cols]
    )
    _check_parity(data)
    _check_parity(_Sentences(_templates(("lemma",)), [words], [[cols[1]], [cols[2]]]))


@pytest.mark.skipif(
    unicodedata.unidata_version != "14.0.0",
    reason="the letter and digit tables of the core are of Unicode 14.0.0 (Python 3.11)",
)
def test_every_assigned_code_point_is_classified_as_python_does() -> None:
    # Each assigned code point as a word: its lower case, shape and flags,
    # and (in two sentences with 'a' and 'A') whether it is a letter, as the
    # share of capitalised words tells.
    chars = [
        chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")
    ]
    token = _omkl.TokenTemplates(["token"])
    casing = _omkl.TokenTemplates(["casing"])
    keep = {"lower", "shape", "short_shape", "has_digit", "all_digits", "is_title", "is_upper",
            "is_lower"}  # fmt: skip
    differ = set()
    step = 4096
    for k in range(0, len(chars), step):
        ws = chars[k : k + step]
        got = token.entries(ws, [], NB)
        want = hashed(token_features(ws))
        for c, g, w in zip(ws, got, want, strict=True):
            if [e for e in g if e[0] in keep] != [e for e in w if e[0] in keep]:
                differ.add(ord(c))
    for c in chars:
        for other in ("a", "A"):
            data = _Sentences(casing, [[c, other]], [[["x", "x"]]])
            if casing.entries([c, other], [["x", "x"]], NB) != hashed(_dicts(data)[0]):
                differ.add(ord(c))
    assert not differ, sorted(hex(c) for c in differ)


# --- the MorphologyTagger on core features ---------------------------------


def _fit_both(
    train: list[list[dict[str, str]]], tmp_path: pathlib.Path, **params: Any
) -> tuple[MorphologyTagger, MorphologyTagger]:
    core = MorphologyTagger(**params).fit(train, epochs=3)
    ref = MorphologyTagger(**params)
    ref._dict_features = True
    ref.fit(train, epochs=3)
    core.save(tmp_path / "core.omkl")
    ref.save(tmp_path / "dicts.omkl")
    assert (tmp_path / "core.omkl").read_bytes() == (tmp_path / "dicts.omkl").read_bytes()
    return core, ref


@pytest.mark.parametrize("name", ["synthetic", *TREEBANKS])
def test_a_morphology_tagger_saves_the_same_bytes_and_tags_the_same(
    name: str, tmp_path: pathlib.Path
) -> None:
    if name == "synthetic":
        train, test = corpus(150, 0), corpus(30, 1)
    else:
        sents = _treebank(name, 330)
        train, test = sents[:300], sents[300:]
    core, ref = _fit_both(train, tmp_path, folds=3, n_buckets=1 << 12)
    # the core tags with its stages and lexicons in the core, the reference
    # stage by stage on feature dicts
    assert core._core_chain() is not None and ref._core_chain() is None
    bare = [[{"form": t["form"]} for t in s] for s in test]
    for alternatives in ([], ["upos", "xpos"]):
        assert core.tag(bare, alternatives) == ref.tag(bare, alternatives)
    loaded = MorphologyTagger.load(tmp_path / "core.omkl")
    assert loaded.tag(bare) == ref.tag(bare)
    assert pickle.loads(pickle.dumps(core)).tag(bare) == ref.tag(bare)


def test_a_version_1_model_tags_the_same_on_core_features(tmp_path: pathlib.Path) -> None:
    # a model without the first XPOS stage and casing features
    from omkl._persist import save_estimator

    fitted = MorphologyTagger(folds=3).fit(corpus(100, 0), epochs=2)
    state, sections = fitted._save_state()
    old = {k: v for k, v in state.items() if k not in ("feats_xpos", "casing")}
    old["labels"] = state["labels"][:4]
    save_estimator(fitted, tmp_path / "v1.omkl", 1, old, sections[:4])
    core = MorphologyTagger.load(tmp_path / "v1.omkl")
    ref = MorphologyTagger.load(tmp_path / "v1.omkl")
    ref._dict_features = True
    test = corpus(20, 4)
    assert core.xpos1_ is None and core._core_chain() is not None
    assert core.tag(test, ["upos"]) == ref.tag(test, ["upos"])


# --- bad input ----------------------------------------------------------------


def _taggers() -> list[Any]:
    t = TextTagger(n_buckets=64)
    data = _Sentences(_templates(("token", "tags:upos")), [["a", "b"]], [[["X", "Y"]]])
    t._fit_text(data, [["A", "B"]], epochs=2)
    return [t._state, t.freeze()._state]


@pytest.mark.parametrize(
    ("sentences", "columns", "match"),
    [
        ("ab", [[]], r"`sentences`: expected a list of sentences"),
        ([["a"], []], [[["X"], []]], r"`sentences\[1\]`: empty sentence"),
        ([["a", 3]], [[["X", "Y"]]], r"`sentences\[0\]\[1\]`: expected a str, got 3"),
        ([["a"], "ab"], [[["X"], ["Y"]]], r"`sentences\[1\]`: expected a list of str"),
        ([["a"]], [], r"`columns`: expected 1 columns \(\[upos tags\]\), got 0"),
        ([["a"]], [[["X"], ["Y"]]], r"`columns\[0\]`: expected 1 lists of upos tags"),
        ([["a", "b"]], [[["X"]]], r"`columns\[0\]\[0\]`: expected 2 upos tags .*got 1"),
        ([["a"]], [[[None]]], r"`columns\[0\]\[0\]\[0\]`: expected a str, got None"),
        ([["a", "\ud800"]], [[["X", "Y"]]], r"`sentences\[0\]\[1\]`"),
        ([["a"]], [[["\ud800"]]], r"`columns\[0\]\[0\]\[0\]`"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_sentence(
    sentences: Any, columns: Any, match: str
) -> None:
    templates = _templates(("token", "tags:upos"))
    for state in _taggers():
        with pytest.raises(ValueError, match=match):
            state.predict_many_text(templates, sentences, columns)
        with pytest.raises(ValueError, match=match):
            state.marginals_many_text(templates, sentences, columns)


def test_bad_input_of_one_sentence() -> None:
    templates = _templates(("token", "tags:upos"))
    for words, columns, match in [
        ("ab", [["X"]], r"`sentences\[0\]`: expected a list of str, got 'ab'"),
        ([], [[]], r"`sentences\[0\]`: empty sentence"),
        (["a"], [["X", "Y"]], r"`columns\[0\]\[0\]`: expected 1 upos tags"),
        (["a"], [], r"expected 1 columns"),
        (["a"], ["X"], r"`columns\[0\]\[0\]`: expected a list of str, got 'X'"),
    ]:
        with pytest.raises(ValueError, match=match):
            templates.entries(words, columns, NB)
    with pytest.raises(ValueError, match="n_buckets"):
        templates.entries(["a"], [["X"]], 0)


def test_bad_training_input_changes_nothing() -> None:
    learner = _taggers()[0]
    before = learner.to_bytes()
    templates = _templates(("token", "classes:amb"))
    with pytest.raises(ValueError, match=r"`Y\[0\]`: expected 2 labels"):
        learner.prepare_text(templates, [["a", "b"]], [[["c", "c"]]], [[0]])
    with pytest.raises(ValueError, match=r"`Y`: expected one label sequence per sentence"):
        learner.prepare_text(templates, [["a", "b"]], [[["c", "c"]]], [])
    with pytest.raises(ValueError, match=r"`sentences\[0\]\[0\]`"):
        learner.prepare_text(templates, [[1]], [[["c"]]], [[0]])
    with pytest.raises(ValueError, match="transition group"):
        learner.prepare_text(_templates(("tags:<transitions>",)), [["a"]], [[["c"]]], [[0]])
    assert learner.to_bytes() == before


def test_bad_template_sets_are_refused() -> None:
    for blocks, match in [
        ([], "at least one block"),
        (["words"], 'unknown block "words"'),
        (["tags:"], "names no template"),
        (["token", "lemma"], 'repeats the template "lower"'),
        (["classes:x", "tags:x"], 'repeats the template "x"'),
    ]:
        with pytest.raises(ValueError, match=match):
            _omkl.TokenTemplates(blocks)
    t = _omkl.TokenTemplates(["token", "classes:amb", "casing"])
    assert t.columns == ["amb classes", "casing classes"]
    assert t.names[:2] == ["w", "lower"] and t.names[-3:] == ["case", "case|title|first",
                                                               "share|title"]  # fmt: skip
    assert pickle.loads(pickle.dumps(t)) == t and hash(t) == hash(_omkl.TokenTemplates(t.blocks))
    assert repr(t) == "TokenTemplates(['token', 'classes:amb', 'casing'])"
