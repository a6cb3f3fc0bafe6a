"""Frozen parsers: a DependencyParser frozen for prediction (the averaged
tables of its arc model and pruner rounded to half precision, the non-zero
averaged weights of its label stage in float32) predicts the trees and
relations of the parser it was frozen from up to that rounding, saves and
loads exactly, at a fraction of the size, and refuses to learn; a fitted
TextParser is frozen, tags as it would unfrozen and parses as it would up to
the rounding, and files of unfrozen pipelines still load.

The rounding moves each arc weight by at most 2^-11 of the largest weight
of its template, so an arc score (a sum of one weight per template and
feature) moves by a small fraction of the scores' range. The tests allow
an arc score to move by at most 1e-3 of the largest |score| of its
sentence, and a tree to differ from the unfrozen one on at most 1% of the
words (on these test sets, none differ)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from omkl import _omkl
from omkl.morphology import MorphologyTagger
from omkl.parsing import DependencyParser, read_conllu
from omkl.pipeline import TextParser
from omkl.tagging import TextTagger

EWT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ud-english-ewt"

WORDS = {"DET": ["the", "a"], "ADJ": ["big", "red"], "NOUN": ["dog", "cat", "fox"]}
VERBS = ["sees", "chases", "sleeps"]


def _synthetic(n: int) -> list[list[dict[str, object]]]:
    """Sentences ``DET (ADJ) NOUN VERB DET NOUN``: DET and ADJ attach to
    their noun, the nouns to the verb, the verb to the root."""
    out = []
    for i in range(n):
        adj = i % 3 == 0
        toks = [("DET", WORDS["DET"][i % 2])]
        if adj:
            toks.append(("ADJ", WORDS["ADJ"][i % 2]))
        toks += [("NOUN", WORDS["NOUN"][i % 3]), ("VERB", VERBS[i % 3])]
        toks += [("DET", WORDS["DET"][(i + 1) % 2]), ("NOUN", WORDS["NOUN"][(i + 1) % 3])]
        verb = 4 if adj else 3
        subj = verb - 1
        heads = [subj] * (subj - 1) + [verb, 0, verb + 2, verb]
        rels = ["det"] + (["amod"] if adj else []) + ["nsubj", "root", "det", "obj"]
        out.append(
            [
                {"form": f, "lemma": f, "upos": u, "xpos": u, "feats": "_", "head": h, "deprel": r}
                for (u, f), h, r in zip(toks, heads, rels, strict=True)
            ]
        )
    return out


def _treebank(n: int) -> list[list[dict[str, object]]]:
    path = EWT / "en_ewt-ud-dev.conllu"
    if path.exists():
        return read_conllu(str(path))[:n]
    return _synthetic(n)


#: The largest change of an arc score that freezing may make, as a share
#: of the largest |score| of the sentence (see the module docs).
SCORE_SHARE = 1e-3
#: The largest share of words whose head or relation freezing may change.
CHANGED_SHARE = 0.01


def _changed(a: list[list[object]], b: list[list[object]]) -> float:
    """The share of positions where two lists of lists differ."""
    assert [len(x) for x in a] == [len(y) for y in b]
    n = sum(len(x) for x in a)
    return sum(p != q for x, y in zip(a, b, strict=True) for p, q in zip(x, y, strict=True)) / n


def _assert_close_trees(got: tuple[list, list], want: tuple[list, list]) -> None:
    assert _changed(got[0], want[0]) <= CHANGED_SHARE
    assert _changed(got[1], want[1]) <= CHANGED_SHARE


@pytest.mark.parametrize("kw", [{"prune_k": 0}, {"prune_k": 5}, {"stack_folds": 2}])
def test_a_frozen_parser_predicts_as_the_parser(kw, tmp_path):
    data = _treebank(240)
    train, test = data[:180], data[180:]
    parser = DependencyParser(epochs=2, max_table_bits=12, **kw).fit(train)
    frozen = parser.freeze()
    assert frozen.frozen and not parser.frozen
    _assert_close_trees(frozen.parse_with_labels(test), parser.parse_with_labels(test))
    if "stack_folds" not in kw:
        corpus = _omkl.ParseCorpus.from_tokens(
            [str(i) for i in range(len(test))],
            [[(t["form"], t["lemma"], t["upos"], t["xpos"], t["feats"]) for t in s] for s in test],
        )
        pairs = zip(
            parser._core.score_matrices(corpus), frozen._core.score_matrices(corpus), strict=True
        )
        rounded = False
        for full, half in pairs:
            full, half = np.array(full), np.array(half)
            finite = np.isfinite(full)  # impossible arcs score -inf in both
            assert np.array_equal(finite, np.isfinite(half))
            assert np.array_equal(full[~finite], half[~finite])
            full, half = full[finite], half[finite]
            assert np.abs(full - half).max() <= SCORE_SHARE * np.abs(full).max()
            rounded = rounded or not np.array_equal(full, half)
        assert rounded  # the tables were rounded
    parser.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    # a frozen parser saves and loads exactly
    back = DependencyParser.load(tmp_path / "frozen.omkl")
    assert back.frozen and back.parse_with_labels(test) == frozen.parse_with_labels(test)
    back.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == (tmp_path / "frozen.omkl").read_bytes()
    assert pickle.loads(pickle.dumps(frozen)).parse(test) == frozen.parse(test)
    full, small = (tmp_path / "full.omkl").stat().st_size, (tmp_path / "frozen.omkl").stat().st_size
    assert small * 2 < full, (small, full)


def test_a_frozen_parser_cannot_learn_and_the_original_still_does():
    data = _synthetic(30)
    parser = DependencyParser(epochs=1, prune_k=3, max_table_bits=10).fit(data)
    frozen = parser.freeze()
    before = pickle.dumps(frozen)
    heads = [int(t["head"]) for t in data[0]]  # type: ignore[call-overload]
    with pytest.raises(RuntimeError, match="frozen"):
        frozen.learn_one(data[0], heads)
    with pytest.raises(RuntimeError, match="frozen"):
        frozen.fit(data)
    assert pickle.dumps(frozen) == before
    parser.learn_one(data[0], heads)
    parser.fit(data, epochs=1)


def _unfrozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fits taggers and pipelines without freezing them, as before."""
    monkeypatch.setattr(TextTagger, "freeze", lambda self: self)
    monkeypatch.setattr(DependencyParser, "_freeze_in_place", lambda self: None)


def _pipeline() -> TextParser:
    return TextParser(
        MorphologyTagger(folds=2, epochs=2, n_buckets=1 << 12),
        DependencyParser(epochs=2, max_table_bits=12, stack_folds=2),
        folds=2,
    )


def test_a_fitted_pipeline_is_frozen_and_parses_as_it_would_unfrozen(tmp_path, monkeypatch):
    data = _treebank(200)
    train, test = data[:150], data[150:]
    frozen = _pipeline().fit(train)
    assert frozen.parser.frozen and all(t.frozen for t in frozen.tagger._taggers())
    with monkeypatch.context() as m:
        _unfrozen(m)
        full = _pipeline().fit(train)
    assert not full.parser.frozen
    words = [[{"form": t["form"]} for t in s] for s in test]

    def trees(model: TextParser) -> tuple[list[list[object]], list[list[object]]]:
        out = model.predict(words)
        return [[t["head"] for t in s] for s in out], [[t["deprel"] for t in s] for s in out]

    def tags(model: TextParser) -> list[list[tuple[object, ...]]]:
        cols = ("upos", "xpos", "feats", "lemma")
        return [[tuple(t[c] for c in cols) for t in s] for s in model.predict(words)]

    assert tags(frozen) == tags(full)
    _assert_close_trees(trees(frozen), trees(full))
    # the file of an unfrozen pipeline (the earlier layout) loads and parses the same
    full.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    assert TextParser.load(tmp_path / "full.omkl").predict(words) == full.predict(words)
    back = TextParser.load(tmp_path / "frozen.omkl")
    assert back.parser.frozen and back.predict(words) == frozen.predict(words)
    full_size = (tmp_path / "full.omkl").stat().st_size
    assert (tmp_path / "frozen.omkl").stat().st_size * 2 < full_size
    # fitting again trains a fresh parser
    again = back.fit(train)
    assert again.parser.frozen and again.predict(words) == frozen.predict(words)
