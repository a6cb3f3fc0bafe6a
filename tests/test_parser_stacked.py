"""The stacked parser (``DependencyParser(stack_folds=K)``): the first
stage's tree as FEATS of the second, persistence, failures and refusals."""

from __future__ import annotations

import pathlib
import pickle
from typing import Any

import pytest

from omkl import DependencyParser, MorphologyTagger, TextParser, _omkl
from omkl._mixing import check_mixable


def _word(form: str, upos: str, head: int, rel: str, feats: str = "_") -> dict[str, Any]:
    return {
        "form": form,
        "lemma": form.lower(),
        "upos": upos,
        "xpos": upos,
        "feats": feats,
        "head": head,
        "deprel": rel,
    }


def _treebank() -> list[list[dict[str, Any]]]:
    return [
        [_word("Dogs", "NOUN", 2, "nsubj"), _word("bark", "VERB", 0, "root")],
        [_word("The", "DET", 2, "det"), _word("cat", "NOUN", 3, "nsubj"),
         _word("sleeps", "VERB", 0, "root"), _word(".", "PUNCT", 3, "punct")],
        [_word("Birds", "NOUN", 2, "nsubj"), _word("sing", "VERB", 0, "root"),
         _word("songs", "NOUN", 2, "obj")],
    ] * 4  # fmt: skip


def _tuples(sentence: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    return [(t["form"], t["lemma"], t["upos"], t["xpos"], t["feats"]) for t in sentence]


def _feats_column(corpus: _omkl.ParseCorpus, path: pathlib.Path) -> list[str]:
    corpus.write_conllu(path, [[0] * len(h) for h in corpus.upos()])
    return [line.split("\t")[5] for line in path.read_text().splitlines() if "\t" in line]


def test_the_first_stage_tree_joins_feats(tmp_path: pathlib.Path) -> None:
    sent = [_word("The", "DET", 2, "det"), _word("cat", "NOUN", 3, "nsubj", "Number=Sing"),
            _word("sleeps", "VERB", 0, "root")]  # fmt: skip
    corpus = _omkl.ParseCorpus.from_tokens(["s1"], [_tuples(sent)])
    stacked = corpus.stacked([[2, 3, 0]], [["det", "nsubj", "root"]])
    assert _feats_column(stacked, tmp_path / "a.conllu") == [
        "@off=+1|@rel=det|@hupos=NOUN|@gupos=VERB|@hrel=nsubj",
        "Number=Sing|@off=+1|@rel=nsubj|@hupos=VERB|@gupos=<root>|@hrel=root|@kid=det<",
        "@off=root|@rel=root|@hupos=<root>|@gupos=<none>|@hrel=<none>|@kid=nsubj<",
    ]
    # the corpus itself is unchanged
    assert _feats_column(corpus, tmp_path / "b.conllu") == ["_", "Number=Sing", "_"]


def test_bad_first_stage_trees_are_named() -> None:
    corpus = _omkl.ParseCorpus.from_tokens(["s7"], [_tuples(_treebank()[0])])
    with pytest.raises(ValueError, match=r"s7.*word 1 has head 1"):
        corpus.stacked([[1, 0]], [["x", "root"]])
    with pytest.raises(ValueError, match=r"s7.*word 2 has head 3"):
        corpus.stacked([[2, 3]], [["x", "root"]])
    with pytest.raises(ValueError, match=r"rels"):
        corpus.stacked([[2, 0]], [["x"]])
    with pytest.raises(ValueError, match=r"heads"):
        corpus.stacked([[2, 0], [2, 0]], [["x", "root"]])
    with pytest.raises(ValueError, match=r"index 5"):
        corpus.select([0, 5])


def test_stack_folds_is_checked() -> None:
    for bad in (1, -1, True, 2.0, "5"):
        with pytest.raises(ValueError, match=rf"stack_folds.*{bad!r}"):
            DependencyParser(stack_folds=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"stack_folds: 5 parts of 3 sentences"):
        DependencyParser(stack_folds=5).fit(_treebank()[:3])


def test_the_second_stage_reads_the_first_stage_tree() -> None:
    """The treebank has no morphology, so only the first stage's tree can
    give the templates that read FEATS any weight."""
    data = _treebank()
    feats = [i for i, n in enumerate(DependencyParser().template_names_) if "feat" in n]
    plain = DependencyParser(templates=feats, epochs=3).fit(data)
    stacked = DependencyParser(templates=feats, epochs=3, stack_folds=3).fit(data)
    assert max(plain.template_weights_) == 0.0
    assert max(stacked.template_weights_) > 0.0
    assert stacked.score(data) == {"uas": 100.0, "las": 100.0}


def test_fit_parse_save_load_and_pickle(tmp_path: pathlib.Path) -> None:
    data = _treebank()
    p = DependencyParser(templates=list(range(60)), stack_folds=3).fit(data)
    heads, rels = p.parse_with_labels(data[:3])
    assert heads == [[2, 0], [2, 3, 0, 3], [2, 0, 2]]
    assert rels[2] == ["nsubj", "root", "obj"]
    assert p.predict_one(data[1]) == [2, 3, 0, 3]
    p.save(tmp_path / "p.omkl")
    loaded = DependencyParser.load(tmp_path / "p.omkl")
    assert loaded.stack_folds == 3
    assert loaded.parse_with_labels(data[:3]) == (heads, rels)
    assert pickle.loads(pickle.dumps(p)).parse_with_labels(data[:3]) == (heads, rels)
    # the written file has the input's FEATS, not the first stage's tree
    p.write_conllu(data[:3], tmp_path / "out.conllu")
    text = (tmp_path / "out.conllu").read_text()
    assert "@" not in text and "\tnsubj\t" in text


def test_failed_learn_one_leaves_a_stacked_parser_byte_identical() -> None:
    p = DependencyParser(templates=list(range(40)), stack_folds=2)
    for sent in _treebank()[:6]:
        p.learn_one(sent, [t["head"] for t in sent])
    before = pickle.dumps(p)
    with pytest.raises(ValueError, match=r"s9.*cycle"):
        p.learn_one(_treebank()[2], [2, 3, 2], sentence_id="s9")
    with pytest.raises(ValueError, match=r"empty"):
        p.learn_one([], [])
    assert pickle.dumps(p) == before
    assert p.predict_one(_treebank()[0]) == [2, 0]


def test_a_pipeline_with_a_stacked_parser_saves_and_loads(tmp_path: pathlib.Path) -> None:
    pipe = TextParser(
        MorphologyTagger(folds=2, epochs=3),
        DependencyParser(templates=list(range(60)), epochs=3, stack_folds=2),
        folds=2,
    ).fit(_treebank())
    bare = [[{"form": "Dogs"}, {"form": "sing"}]]
    out = pipe.predict(bare)
    pipe.save(tmp_path / "pipe.omkl")
    assert TextParser.load(tmp_path / "pipe.omkl").predict(bare) == out
    assert "@" not in out[0][0]["feats"]


def test_parameter_mixing_refuses_a_stacked_parser() -> None:
    check_mixable(DependencyParser())
    with pytest.raises(TypeError, match=r"stack_folds=5"):
        check_mixable(DependencyParser(stack_folds=5))
