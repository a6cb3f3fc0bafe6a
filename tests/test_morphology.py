"""MorphologyTagger and the lemma edit rules."""

from __future__ import annotations

import pathlib
import pickle
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omkl.morphology import MorphologyTagger, apply_lemma_rule, lemma_rule
from omkl.parsing import read_conllu

EWT = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"

# --- lemma rules ---------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@given(texts, texts)
def test_rule_round_trip(form: str, lemma: str) -> None:
    assert apply_lemma_rule(lemma_rule(form, lemma), form) == lemma


@given(texts, st.text(alphabet="abcXYZ", max_size=6), st.text(alphabet="xyz", max_size=4))
def test_rule_shared_by_words_with_the_same_ending(stem: str, ending: str, new: str) -> None:
    # a suffix edit depends on the ending only, so it carries over to other stems
    rule = lemma_rule("q" + ending, "q" + new)
    assert apply_lemma_rule(rule, stem + "q" + ending) in (
        stem + "q" + new,
        (stem + "q" + ending).lower()[: -len(ending) or None] + new
        if ending
        else (stem + "q").lower() + new,
    )


def test_rule_is_minimal_against_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(300):
        form = "".join(rng.choice("aAbB") for _ in range(rng.randint(0, 5)))
        lemma = "".join(rng.choice("abB") for _ in range(rng.randint(0, 5)))
        rule = lemma_rule(form, lemma)
        strip = int(rule[1 : rule.index("|")])
        cost = strip + len(rule) - rule.index("|") - 1
        # the cheapest edit over both casings, found by trying every strip count
        best = min(
            k + len(lemma) - len(src[: len(src) - k])
            for src in (form, form.lower())
            for k in range(len(src) + 1)
            if lemma.startswith(src[: len(src) - k])
        )
        assert cost == best


def test_rule_examples_and_errors() -> None:
    assert lemma_rule("dogs", "dog") == "K1|"
    assert lemma_rule("The", "the") == "L0|"
    assert lemma_rule("NASA", "NASA") == "K0|"
    assert apply_lemma_rule("K2|be", "is") == "be"
    with pytest.raises(ValueError, match="strips 5 characters from 'is'"):
        apply_lemma_rule("K5|", "is")
    with pytest.raises(ValueError, match="expected 'K<k>"):
        apply_lemma_rule("X1|", "is")
    with pytest.raises(ValueError, match="`form`"):
        lemma_rule(3, "x")  # type: ignore[arg-type]


@pytest.mark.skipif(not (EWT / "en_ewt-ud-dev.conllu").exists(), reason="no EWT data")
def test_rule_round_trip_on_every_ewt_token() -> None:
    for split in ("train", "dev", "test"):
        for sent in read_conllu(EWT / f"en_ewt-ud-{split}.conllu"):
            for t in sent:
                assert apply_lemma_rule(lemma_rule(t["form"], t["lemma"]), t["form"]) == t["lemma"]


# --- a synthetic corpus ----------------------------------------------------------

NOUNS = [("dog", "dogs"), ("cat", "cats"), ("bird", "birds"), ("horse", "horses")]
VERBS = [("run", "runs", "ran"), ("see", "sees", "saw"), ("eat", "eats", "ate")]


def _tok(form: str, lemma: str, upos: str, xpos: str, feats: str = "_") -> dict[str, Any]:
    return {"form": form, "lemma": lemma, "upos": upos, "xpos": xpos, "feats": feats}


def corpus(n: int, seed: int) -> list[list[dict[str, Any]]]:
    """Sentences 'DET NOUN VERB [DET NOUN] .' whose tags follow from the words."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        sent = []
        for part in range(2 if rng.random() < 0.5 else 1):
            det = rng.choice(["the", "a"]) if part else rng.choice(["The", "A"])
            sent.append(_tok(det, det.lower(), "DET", "DT", "Definite=Def|PronType=Art"))
            lemma, plural = rng.choice(NOUNS)
            if rng.random() < 0.5:
                sent.append(_tok(lemma, lemma, "NOUN", "NN", "Number=Sing"))
            else:
                sent.append(_tok(plural, lemma, "NOUN", "NNS", "Number=Plur"))
            if part == 0:
                base, third, past = rng.choice(VERBS)
                if rng.random() < 0.5:
                    sent.append(_tok(third, base, "VERB", "VBZ", "Number=Sing|Tense=Pres"))
                else:
                    sent.append(_tok(past, base, "VERB", "VBD", "Tense=Past"))
        sent.append(_tok(".", ".", "PUNCT", "."))
        out.append(sent)
    return out


@pytest.fixture(scope="module")
def fitted() -> MorphologyTagger:
    return MorphologyTagger(folds=3).fit(corpus(200, 0), epochs=4)


def test_learns_synthetic_corpus(fitted: MorphologyTagger) -> None:
    scores = fitted.score(corpus(100, 1))
    assert set(scores) == {"UPOS", "XPOS", "UFeats", "AllTags", "Lemma"}
    for k, v in scores.items():
        assert v > 99.0, (k, v)


def test_score_matches_a_count(fitted: MorphologyTagger) -> None:
    test = corpus(30, 2)
    for t in test[0]:
        t["lemma"] = t["lemma"] + "x"  # every lemma of sentence 0 wrong
    pred = fitted.tag(test)
    n = sum(map(len, test))
    right = sum(
        p["lemma"] == g["lemma"]
        for ps, gs in zip(pred, test, strict=False)
        for p, g in zip(ps, gs, strict=False)
    )
    assert fitted.score(test)["Lemma"] == pytest.approx(100.0 * right / n)
    assert right <= n - len(test[0])


def test_tag_leaves_input_untouched(fitted: MorphologyTagger) -> None:
    sents = [
        [{"id": "1", "form": "The", "misc": "x", "deps": [(2, "det")]}, {"id": "2", "form": "cats"}]
    ]
    before = pickle.dumps(sents)
    out = fitted.tag(sents)
    assert pickle.dumps(sents) == before
    assert out[0][0]["misc"] == "x" and out[0][0]["id"] == "1"
    # a mutable value is copied, not shared with the input
    assert out[0][0]["deps"] == [(2, "det")] and out[0][0]["deps"] is not sents[0][0]["deps"]
    assert [(t["upos"], t["xpos"], t["lemma"], t["feats"]) for t in out[0]] == [
        ("DET", "DT", "the", "Definite=Def|PronType=Art"),
        ("NOUN", "NNS", "cat", "Number=Plur"),
    ]
    words = fitted.tag_words(["The", "cats"])
    assert [{k: t[k] for k in ("upos", "xpos", "lemma", "feats")} for t in words] == [
        {k: t[k] for k in ("upos", "xpos", "lemma", "feats")} for t in out[0]
    ]
    assert [t["id"] for t in words] == ["1", "2"]


def test_unseen_word_gets_a_lemma_from_its_ending(fitted: MorphologyTagger) -> None:
    (det, noun) = fitted.tag_words(["the", "cows"])
    assert noun["upos"] == "NOUN"
    if noun["xpos"] == "NNS":
        assert noun["lemma"] == "cow"


def test_save_load_pickle_predict_identically(
    fitted: MorphologyTagger, tmp_path: pathlib.Path
) -> None:
    test = corpus(40, 3)
    want = fitted.tag(test)
    fitted.save(tmp_path / "m.omkl")
    loaded = MorphologyTagger.load(tmp_path / "m.omkl")
    assert loaded.tag(test) == want
    assert pickle.loads(pickle.dumps(fitted)).tag(test) == want
    assert loaded.folds == 3


def test_load_errors(fitted: MorphologyTagger, tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        MorphologyTagger.load(tmp_path / "missing.omkl")
    path = tmp_path / "m.omkl"
    fitted.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="m.omkl"):
        MorphologyTagger.load(path)


def test_bad_input(fitted: MorphologyTagger) -> None:
    with pytest.raises(ValueError, match=r"sentences\[0\]`: empty sentence"):
        fitted.tag([[]])
    with pytest.raises(ValueError, match="no 'form' key"):
        fitted.tag([[{"id": "1"}]])
    with pytest.raises(ValueError, match=r"\['form'\]`: expected a non-empty str, got 3"):
        fitted.tag([[{"form": 3}]])
    with pytest.raises(ValueError, match=r"`words\[1\]`: expected a str"):
        fitted.tag_words(["a", None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="empty sentence"):
        fitted.tag_words([])
    with pytest.raises(ValueError, match="expected a list of sentences"):
        fitted.tag("the cat")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not fitted"):
        MorphologyTagger().tag_words(["a"])
    with pytest.raises(ValueError, match="`epochs`"):
        MorphologyTagger().fit(corpus(2, 0), epochs=0)
    with pytest.raises(ValueError, match="`folds`"):
        MorphologyTagger(folds=1)
    bad = corpus(3, 0)
    del bad[1][0]["lemma"]
    model = MorphologyTagger(folds=2)
    with pytest.raises(ValueError, match=r"sentences\[1\]\[0\]\['lemma'\]"):
        model.fit(bad)
    with pytest.raises(RuntimeError, match="not fitted"):  # the failed fit changed nothing
        model.tag_words(["a"])


@pytest.mark.skipif(not (EWT / "en_ewt-ud-dev.conllu").exists(), reason="no EWT data")
def test_ewt_small_run() -> None:
    train = read_conllu(EWT / "en_ewt-ud-train.conllu")[:1500]
    dev = read_conllu(EWT / "en_ewt-ud-dev.conllu")[:300]
    scores = MorphologyTagger(n_buckets=1 << 12).fit(train, epochs=2).score(dev)
    # far from the full run's figures, but well above tagging every word NOUN (<20%)
    assert scores["UPOS"] > 80.0 and scores["Lemma"] > 90.0


def test_text_tagger_with_cancelled_rows_round_trips() -> None:
    # the feature z=q is written at both positions with opposite signs, so its
    # row is listed as written but holds no value; the bytes must still load
    from omkl.tagging import TextTagger

    t = TextTagger(loss="hinge", regularizer=None, fit_intercept=False)
    t.learn_one([{"w": "a"}, {"w": "b"}], ["Y", "X"])
    t.learn_one([{"w": "a", "z": "q"}, {"w": "b", "z": "q"}], ["X", "Y"])
    assert t.template_weights_["z"] == 0.0
    u = pickle.loads(pickle.dumps(t))
    xs = [{"w": "b", "z": "q"}, {"w": "a"}]
    assert u.predict_one(xs) == t.predict_one(xs)
    assert u._state.to_bytes() == t._state.to_bytes()


def test_loads_a_version_1_file(fitted: MorphologyTagger, tmp_path: pathlib.Path) -> None:
    # version 1 saved four taggers (no first XPOS tagger) and six lexicons,
    # and tagged UPOS from the token features and ambiguity classes alone
    from omkl._persist import save_estimator

    state, sections = fitted._save_state()
    old = {k: v for k, v in state.items() if k not in ("feats_xpos", "casing", "feats_upos")}
    old["labels"] = state["labels"][:4]
    save_estimator(fitted, tmp_path / "v1.omkl", 1, old, sections[:4])
    loaded = MorphologyTagger.load(tmp_path / "v1.omkl")
    assert loaded.xpos1_ is None
    test = corpus(20, 4)
    words = [[t["form"] for t in s] for s in test]
    want_upos = fitted.upos_.predict([fitted._stage_features(ws, fitted._amb_upos) for ws in words])
    got = loaded.tag(test)
    assert [[t["upos"] for t in s] for s in got] == want_upos
    # a version-1 file with five sections is refused, naming the file
    save_estimator(fitted, tmp_path / "bad.omkl", 1, old, sections)
    with pytest.raises(ValueError, match="bad.omkl"):
        MorphologyTagger.load(tmp_path / "bad.omkl")


def test_casing_and_feats_backoff_lexicons(fitted: MorphologyTagger) -> None:
    # recount from the training corpus: the ways each word was written, and
    # the most frequent FEATS of each XPOS (the smallest on a tie)
    train = corpus(200, 0)
    ways: dict[str, set[str]] = {}
    per_xpos: dict[str, dict[str, int]] = {}
    for s in train:
        for i, t in enumerate(s):
            w = t["form"]
            k = "l" if w.islower() else "t" if w.istitle() else "u" if w.isupper() else "o"
            ways.setdefault(w.lower(), set()).add(k + ("0" if i == 0 else ""))
            c = per_xpos.setdefault(t["xpos"], {})
            c[t["feats"]] = c.get(t["feats"], 0) + 1
    assert fitted._casing == {w: ",".join(sorted(c)) for w, c in ways.items()}
    for x, c in per_xpos.items():
        assert fitted._feats_xpos["\t\t" + x] == min(c, key=lambda f: (-c[f], f))


def test_unpickles_a_version_1_object(fitted: MorphologyTagger) -> None:
    # a version-1 object had no first XPOS tagger and no new lexicons
    old = pickle.loads(pickle.dumps(fitted))
    for key in ("xpos1_", "_feats_xpos", "_casing", "jackknife"):
        del old.__dict__[key]
    restored = pickle.loads(pickle.dumps(old))
    assert restored.xpos1_ is None and restored.jackknife == 2
    test = corpus(10, 5)
    words = [[t["form"] for t in s] for s in test]
    want_upos = fitted.upos_.predict([fitted._stage_features(ws, fitted._amb_upos) for ws in words])
    assert [[t["upos"] for t in s] for s in restored.tag(test)] == want_upos


def sheep_corpus(n: int, seed: int) -> list[list[dict[str, Any]]]:
    """'a sheep runs .' or 'many sheep run .': the number of 'sheep' (one
    XPOS for both) follows from the word before it, not from the word."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        one = rng.random() < 0.5
        number = "Number=Sing" if one else "Number=Plur"
        out.append(
            [
                _tok("a" if one else "many", "a" if one else "many", "DET", "DT"),
                _tok("sheep", "sheep", "NOUN", "NN", number),
                _tok("runs" if one else "run", "run", "VERB", "VB", number),
                _tok(".", ".", "PUNCT", "."),
            ]
        )
    return out


def test_feats_upos_chooses_the_words_whose_feats_the_chain_predicts(
    tmp_path: pathlib.Path,
) -> None:
    train, test = sheep_corpus(200, 0), sheep_corpus(100, 1)
    every = MorphologyTagger(folds=2, epochs=4).fit(train)
    verbs = MorphologyTagger(folds=2, epochs=4, feats_upos=["VERB", "AUX"]).fit(train)
    assert every.feats_upos_ == ("DET", "NOUN", "PUNCT", "VERB")
    assert verbs.feats_upos_ == ("VERB",)  # the tags seen in training
    # the lexicon gives 'sheep' one number; the chain reads the word before
    assert every.score(test)["UFeats"] == 100.0
    assert verbs.score(test)["UFeats"] < 90.0
    # the core and the stage-by-stage path read the same set
    for model in (every, verbs):
        words = [[t["form"] for t in s] for s in test]
        chain = model._core_chain()
        assert chain is not None
        assert model._tag_many_in_core(chain, words, ())[0] == model._tag_many_by_stage(words)[0]
    assert every._feats_block == verbs._feats_block == "feats_suffixes"
    # the current version records the set and the block: a file lacking
    # either, or naming another block, is refused
    from omkl._persist import save_estimator

    every.save(tmp_path / "v3.omkl")
    assert MorphologyTagger.load(tmp_path / "v3.omkl").tag(test) == every.tag(test)
    for key, value in (("feats_upos", None), ("feats_block", None), ("feats_block", "token")):
        state, sections = every._save_state()
        if value is None:
            del state[key]
        else:
            state[key] = value
        save_estimator(every, tmp_path / "bad.omkl", 3, state, sections)
        with pytest.raises(ValueError, match=f"bad.omkl.*{key}"):
            MorphologyTagger.load(tmp_path / "bad.omkl")
    for bad in ("VERB", [1], {"VERB"}):
        with pytest.raises(ValueError, match="`feats_upos`"):
            MorphologyTagger(feats_upos=bad)  # type: ignore[arg-type]


def test_a_version_2_file_predicts_the_feats_of_verbs_with_the_old_block(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from omkl import morphology
    from omkl._persist import save_estimator

    # a tagger trained as version 2 trained its FEATS stage: the block `feats`
    monkeypatch.setattr(morphology, "_FEATS_BLOCK", "feats")
    train, test = sheep_corpus(200, 0), sheep_corpus(100, 1)
    every = MorphologyTagger(folds=2, epochs=4).fit(train)
    assert every._feats_block == "feats"
    state, sections = every._save_state()
    del state["feats_upos"], state["feats_block"]
    save_estimator(every, tmp_path / "v2.omkl", 2, state, sections)
    monkeypatch.undo()
    old = MorphologyTagger.load(tmp_path / "v2.omkl")
    assert old.feats_upos_ == ("AUX", "PRON", "VERB") and old.feats_upos == list(old.feats_upos_)
    assert old._feats_block == "feats"
    got = old.tag(test)
    # the verbs' FEATS from the chain, as the same tagger gives them
    assert [[t["feats"] for t in s if t["upos"] != "NOUN"] for s in got] == [
        [t["feats"] for t in s if t["upos"] != "NOUN"] for s in every.tag(test)
    ]
    # the nouns' from the lexicon
    assert {t["feats"] for s in got for t in s if t["upos"] == "NOUN"} == {
        every._feats_lex["sheep\tNOUN\tNN"]
    }
    words = [[t["form"] for t in s] for s in test]
    chain = old._core_chain()
    assert chain is not None
    assert old._tag_many_in_core(chain, words, ())[0] == old._tag_many_by_stage(words)[0]


def test_held_out_feats_lexicons_recount_the_other_folds() -> None:
    from collections import Counter

    from omkl.morphology import _held_out_feats_lexicons, _most

    rng = random.Random(3)
    for _ in range(30):
        n, folds = rng.randint(2, 8), rng.randint(2, 4)
        sents = [
            [
                (rng.choice("aAbc"), rng.choice("XY"), rng.choice("xy"), rng.choice(["F=1", "F=2"]))
                for _ in range(rng.randint(1, 4))
            ]
            for _ in range(n)
        ]
        words, upos, xpos, feats = ([[t[j] for t in s] for s in sents] for j in range(4))
        fold_of = [i % folds for i in range(n)]

        def counts(keep: list[int], key: Any, sents: Any = sents) -> dict[str, Counter[str]]:
            out: dict[str, Counter[str]] = {}
            for i in keep:
                for w, u, x, f in sents[i]:
                    for k in key(w.lower(), u, x):
                        out.setdefault(k, Counter())[f] += 1
            return out

        def by_form(w: str, u: str, x: str) -> list[str]:
            return [f"{w}\t{u}\t{x}"]

        def by_xpos(w: str, u: str, x: str) -> list[str]:
            return [f"{w}\t\t{x}", f"\t\t{x}"]

        every = list(range(n))
        got = _held_out_feats_lexicons(
            counts(every, by_form), counts(every, by_xpos), words, upos, xpos, feats, fold_of, folds
        )
        for k in range(folds):
            own = [i for i in every if fold_of[i] == k]
            rest = [i for i in every if fold_of[i] != k]
            want_lex = {
                key: _most(c)
                for key, c in counts(rest, by_form).items()
                if key in counts(own, by_form)
            }
            want_x = {
                key: _most(c)
                for key, c in counts(rest, by_xpos).items()
                if key in counts(own, by_xpos) and not key.startswith("\t\t")
            }
            want_x.update(
                {
                    key: _most(c)
                    for key, c in counts(every, by_xpos).items()
                    if key.startswith("\t\t")
                }
            )
            assert got[k] == (want_lex, want_x)
