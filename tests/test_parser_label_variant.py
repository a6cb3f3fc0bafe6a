"""``DependencyParser.fit(..., label_variant=...)``: the label stage learns
from a second tagging of the training sentences, the arc models do not; and
``TextParser(label_gold=True)`` passes the gold tags as that variant."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from omkl import DependencyParser, MorphologyTagger, TextParser
from omkl._persist import load_model, save_model


def _word(form: str, upos: str, head: int, rel: str) -> dict[str, Any]:
    return {"form": form, "lemma": form, "upos": upos, "xpos": upos, "feats": "_",
            "head": head, "deprel": rel}  # fmt: skip


def _gold(forms: list[str]) -> list[list[dict[str, Any]]]:
    """Two-word sentences whose relation only the first word's UPOS gives:
    a noun is ``nsubj`` of the verb, an adverb ``advmod``."""
    out = []
    for k, form in enumerate(forms):
        upos, rel = ("NOUN", "nsubj") if k % 2 == 0 else ("ADV", "advmod")
        out.append([_word(form, upos, 2, rel), _word("goes", "VERB", 0, "root")])
    return out


def _untagged(sents: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    return [[{**t, "upos": "X", "xpos": "X"} for t in s] for s in sents]


def _parser(**kw: Any) -> DependencyParser:
    return DependencyParser(templates=list(range(60)), epochs=2, label_epochs=5, **kw)


@pytest.mark.parametrize("stack_folds", [0, 2])
def test_the_label_stage_learns_what_only_the_variant_tells(stack_folds: int) -> None:
    gold = _gold([f"w{i}" for i in range(16)])
    unseen = _gold([f"u{i}" for i in range(4)])
    alone = _parser(stack_folds=stack_folds).fit(_untagged(gold))
    both = _parser(stack_folds=stack_folds).fit(_untagged(gold), label_variant=gold)
    # the arc models learned from `data` alone: the same bytes; so did the
    # whole first stage of a stacked parser
    assert both._core.__getstate__() == alone._core.__getstate__()
    if stack_folds:
        assert both._first is not None and alone._first is not None
        for part in ("_core", "_labeler"):
            mine, theirs = getattr(both._first, part), getattr(alone._first, part)
            assert mine.__getstate__() == theirs.__getstate__()
        assert both._first.label_history_[0]["sentences"] == len(gold)
    assert [h["sentences"] for h in both.label_history_] == [2 * len(gold)] * 5
    assert [h["sentences"] for h in alone.label_history_] == [len(gold)] * 5
    # only the variant shows that the UPOS decides the relation
    assert both.score(unseen) == {"uas": 100.0, "las": 100.0}
    assert alone.score(unseen)["las"] < 100.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s[:-1], r"label_variant: expected the 16 sentences of data, got 15"),
        (
            lambda s: [[{**t, "head": 0 if i == 0 else 1} for i, t in enumerate(s[0])], *s[1:]],
            r"label_variant: sentence 0 has other heads than in data; expected \[2, 0\], "
            r"got \[0, 1\]",
        ),
        (
            lambda s: [*s[:3], [{**s[3][0], "deprel": "obj"}, s[3][1]], *s[4:]],
            r"label_variant: sentence 3 has other relations than in data; expected "
            r"\['advmod', 'root'\], got \['obj', 'root'\]",
        ),
    ],
)
def test_a_variant_that_is_not_the_same_sentences_is_refused(change: Any, message: str) -> None:
    gold = _gold([f"w{i}" for i in range(16)])
    parser = _parser()
    with pytest.raises(ValueError, match=message):
        parser.fit(_untagged(gold), label_variant=change(gold))
    assert parser.history_ == [] and parser.label_history_ == []


def _spied(pipe: TextParser) -> list[Any]:
    seen: list[Any] = []
    fit = pipe.parser.fit

    def spy(data: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("label_variant"))
        return fit(data, *args, **kwargs)

    pipe.parser.fit = spy  # type: ignore[method-assign]
    return seen


def _treebank() -> list[list[dict[str, Any]]]:
    words = [("Dogs", "NOUN", "NNS"), ("Cats", "NOUN", "NNS"), ("often", "ADV", "RB")]
    out = []
    for (form, upos, xpos), verb in itertools.product(words, ["bark", "sleep"]):
        out.append(
            [{"form": form, "lemma": form.lower(), "upos": upos, "xpos": xpos, "feats": "_",
              "head": 2, "deprel": "nsubj" if upos == "NOUN" else "advmod"},
             {"form": verb, "lemma": verb, "upos": "VERB", "xpos": "VBP", "feats": "_",
              "head": 0, "deprel": "root"}]
        )  # fmt: skip
    return out * 2


@pytest.mark.parametrize(
    ("kw", "gets_gold"),
    [({}, True), ({"label_gold": False}, False), ({"folds": 0}, False)],
)
def test_the_pipeline_passes_the_gold_tags_as_the_variant(kw: dict[str, Any], gets_gold: bool):
    data = _treebank()
    pipe = TextParser(MorphologyTagger(folds=2, epochs=2), _parser(), **{"folds": 2, **kw})
    seen = _spied(pipe)
    pipe.fit(data)
    assert seen == [data if gets_gold else None]


def test_label_gold_is_saved_and_older_files_load_without_it(tmp_path) -> None:
    pipe = TextParser(MorphologyTagger(folds=2, epochs=2), _parser(), folds=2, label_gold=False)
    pipe.fit(_treebank())
    pipe.save(tmp_path / "pipe.omkl")
    assert TextParser.load(tmp_path / "pipe.omkl").label_gold is False
    version = TextParser._VERSION
    _, header, sections = load_model(tmp_path / "pipe.omkl", TextParser._FORMAT, [version])
    header["label_gold"] = True
    save_model(tmp_path / "new.omkl", TextParser._FORMAT, version, header, sections)
    assert TextParser.load(tmp_path / "new.omkl").label_gold is True
    # a file of format version 2 (before `label_gold`, and before the
    # tokenizer of version 4): its parser learned its relations from the
    # jackknifed tags alone
    assert header.pop("tokenizer") is None
    del header["label_gold"]
    save_model(tmp_path / "v2.omkl", TextParser._FORMAT, 2, header, sections)
    assert TextParser.load(tmp_path / "v2.omkl").label_gold is False
    with pytest.raises(ValueError, match=r"label_gold: expected True or False, got 'yes'"):
        TextParser(MorphologyTagger(), label_gold="yes")  # type: ignore[arg-type]
