"""Frozen taggers: a tagger frozen for prediction (the non-zero averaged
weights in float32) predicts the labels of the model it was frozen from,
with marginals within float32 rounding, saves and loads at a fraction of the
size, refuses to learn, and a MorphologyTagger (whose stages are frozen as
they finish learning) tags as it would unfrozen; files of unfrozen taggers
still load."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

import omkl
from omkl.morphology import MorphologyTagger
from omkl.parsing import read_conllu
from omkl.tagging import TextTagger, token_features

EWT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ud-english-ewt"


def _synthetic(n: int, seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Sentences of words whose tag follows from their suffix and the tag
    before them, with noise words."""
    rng = np.random.default_rng(seed)
    stems = ["walk", "talk", "dog", "cat", "blue", "red", "quick", "slow", "tree", "run"]
    ends = {"N": ["s", "er", ""], "V": ["ed", "ing", "s"], "A": ["ly", "est", "ish"]}
    words, tags = [], []
    for _ in range(n):
        m = int(rng.integers(1, 12))
        ws, ts = [], []
        for _ in range(m):
            t = ["N", "V", "A"][int(rng.integers(3))]
            ws.append(str(rng.choice(stems)) + str(rng.choice(ends[t])))
            ts.append(t)
        words.append(ws)
        tags.append(ts)
    return words, tags


def _ewt(n: int) -> list[list[dict[str, str]]] | None:
    path = EWT / "en_ewt-ud-dev.conllu"
    if not path.exists():
        return None
    return read_conllu(str(path))[:n]


@pytest.mark.parametrize(
    "params",
    [
        {"loss": "hinge", "average": True, "regularizer": ("l2_squared", 1e-6)},
        {"loss": "log", "average": False},
        {"loss": "log", "average": True, "regularizer": ("squared_l21", 1e-4)},
    ],
)
def test_a_frozen_tagger_predicts_as_the_tagger(params, tmp_path):
    words, tags = _synthetic(300, 0)
    X = [token_features(ws) for ws in words]
    tagger = TextTagger(n_buckets=1 << 12, **params).fit(X[:200], tags[:200], epochs=3)
    frozen = tagger.freeze()
    assert frozen.frozen and not tagger.frozen
    assert frozen.predict(X) == tagger.predict(X)
    for xs in X[::10]:
        a, b = tagger.predict_marginals_one(xs), frozen.predict_marginals_one(xs)
        for p, q in zip(a, b, strict=True):
            assert p.keys() == q.keys()
            assert max(abs(p[k] - q[k]) for k in p) <= 1e-5
    np.testing.assert_array_equal(frozen.transitions_["bigram"], tagger.transitions_["bigram"])
    assert frozen.labels_ == tagger.labels_ and frozen.n_rounds_ == tagger.n_rounds_
    assert frozen.selected_templates_ == tagger.selected_templates_
    # saved and loaded, and pickled, it is the same frozen tagger
    tagger.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    back = TextTagger.load(tmp_path / "frozen.omkl")
    assert back.frozen and back.predict(X) == tagger.predict(X)
    back.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == (tmp_path / "frozen.omkl").read_bytes()
    assert pickle.loads(pickle.dumps(frozen)).predict(X) == tagger.predict(X)
    assert copy.copy(frozen).predict(X) == tagger.predict(X)
    assert frozen.freeze().predict(X) == tagger.predict(X)
    full, small = (tmp_path / "full.omkl").stat().st_size, (tmp_path / "frozen.omkl").stat().st_size
    assert small * 2 < full, (small, full)


def test_a_frozen_tagger_cannot_learn_and_is_left_unchanged(tmp_path):
    words, tags = _synthetic(50, 1)
    X = [token_features(ws) for ws in words]
    tagger = TextTagger(loss="hinge", average=True, n_buckets=1 << 10).fit(X, tags, epochs=2)
    frozen = tagger.freeze()
    before = pickle.dumps(frozen)
    with pytest.raises(RuntimeError, match="frozen"):
        frozen.learn_one(X[0], tags[0])
    with pytest.raises(RuntimeError, match="frozen"):
        frozen.fit(X, tags)
    assert pickle.dumps(frozen) == before
    # the tagger it was frozen from still learns, and the frozen one does not follow
    tagger.learn_one(X[0], ["Z"] * len(X[0]))
    assert "Z" in tagger.labels_ and "Z" not in frozen.labels_


def test_a_damaged_frozen_file_is_refused_naming_the_file(tmp_path):
    words, tags = _synthetic(60, 2)
    X = [token_features(ws) for ws in words]
    frozen = TextTagger(loss="hinge", average=True, n_buckets=1 << 10).fit(X, tags).freeze()
    good = tmp_path / "good.omkl"
    frozen.save(good)
    data = good.read_bytes()
    bad = tmp_path / "bad.omkl"
    for cut in (len(data) - 1, len(data) // 2, 40):
        bad.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="bad.omkl"):
            TextTagger.load(bad)
    rng = np.random.default_rng(0)
    for k in rng.integers(0, len(data), size=40):
        b = bytearray(data)
        b[k] ^= 0x5A
        bad.write_bytes(bytes(b))
        with pytest.raises(ValueError, match="bad.omkl"):
            TextTagger.load(bad)


def _unfrozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes ``TextTagger.freeze`` give the tagger itself, as before
    taggers were frozen."""
    monkeypatch.setattr(TextTagger, "freeze", lambda self: self)


def _sentences() -> list[list[dict[str, str]]]:
    real = _ewt(400)
    if real is not None:
        return real
    words, tags = _synthetic(400, 3)
    return [
        [
            {"form": w, "lemma": w.lower(), "upos": t, "xpos": t + "X", "feats": "_"}
            for w, t in zip(ws, ts, strict=True)
        ]
        for ws, ts in zip(words, tags, strict=True)
    ]


def test_a_morphology_tagger_tags_as_it_would_unfrozen_and_old_files_load(tmp_path, monkeypatch):
    sents = _sentences()
    train, test = sents[:300], sents[300:]
    frozen = MorphologyTagger(folds=2, n_buckets=1 << 12, epochs=2).fit(train)
    assert all(t.frozen for t in frozen._taggers())
    with monkeypatch.context() as m:
        _unfrozen(m)
        full = MorphologyTagger(folds=2, n_buckets=1 << 12, epochs=2).fit(train)
    assert not any(t.frozen for t in full._taggers())
    assert frozen.tag(test) == full.tag(test)
    # the second choices are the same labels, their marginals within float32 rounding
    got, want = frozen.tag(test, alternatives=["upos"]), full.tag(test, alternatives=["upos"])
    for s_got, s_want in zip(got, want, strict=True):
        for a, b in zip(s_got, s_want, strict=True):
            (la, pa), (lb, pb) = a.pop("upos_alt"), b.pop("upos_alt")
            assert la == lb and abs(pa - pb) <= 1e-4 * max(pa, pb) + 1e-12, (a, pa, pb)
            assert a == b
    # the file of unfrozen taggers (the earlier layout) loads and tags the same
    full.save(tmp_path / "full.omkl")
    frozen.save(tmp_path / "frozen.omkl")
    old = MorphologyTagger.load(tmp_path / "full.omkl")
    assert not any(t.frozen for t in old._taggers())
    assert old.tag(test) == full.tag(test)
    back = MorphologyTagger.load(tmp_path / "frozen.omkl")
    assert back.tag(test) == full.tag(test)
    full_size = (tmp_path / "full.omkl").stat().st_size
    assert (tmp_path / "frozen.omkl").stat().st_size * 3 < full_size
    assert omkl.MorphologyTagger is MorphologyTagger
