"""Frozen parsers: a DependencyParser frozen for prediction (the averaged
tables of its arc model and pruner, the non-zero averaged weights of its
label stage in float32) predicts the trees and relations of the parser it
was frozen from, saves and loads at a fraction of the size and refuses to
learn; a fitted TextParser is frozen, tags and parses as it would unfrozen,
and files of unfrozen pipelines still load."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("kw", [{"prune_k": 0}, {"prune_k": 5}, {"stack_folds": 2}])
def test_a_frozen_parser_predicts_as_the_parser(kw, tmp_path):
    data = _treebank(240)
    train, test = data[:180], data[180:]
    parser = DependencyParser(epochs=2, max_table_bits=12, **kw).fit(train)
    frozen = parser.freeze()
    assert frozen.frozen and not parser.frozen
    assert frozen.parse_with_labels(test) == parser.parse_with_labels(test)
    assert frozen.score(test) == parser.score(test)
    parser.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    back = DependencyParser.load(tmp_path / "frozen.omkl")
    assert back.frozen and back.parse_with_labels(test) == parser.parse_with_labels(test)
    back.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == (tmp_path / "frozen.omkl").read_bytes()
    assert pickle.loads(pickle.dumps(frozen)).parse(test) == parser.parse(test)
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
    assert frozen.predict(words) == full.predict(words)
    # the file of an unfrozen pipeline (the earlier layout) loads and parses the same
    full.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    assert TextParser.load(tmp_path / "full.omkl").predict(words) == full.predict(words)
    back = TextParser.load(tmp_path / "frozen.omkl")
    assert back.parser.frozen and back.predict(words) == full.predict(words)
    full_size = (tmp_path / "full.omkl").stat().st_size
    assert (tmp_path / "frozen.omkl").stat().st_size * 2 < full_size
    # fitting again trains a fresh parser
    again = back.fit(train)
    assert again.parser.frozen and again.predict(words) == full.predict(words)
