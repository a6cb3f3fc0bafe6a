"""Parsing text without gold tags (omkl.pipeline)."""

from __future__ import annotations

import collections
import copy
from typing import Any

import pytest

import omkl
from omkl._persist import load_model, save_model
from omkl.datasets import read_sentences, read_text, write_conllu
from omkl.parsing import read_conllu
from omkl.pipeline import MORPHOLOGY, TextParser, jackknife

# A toy treebank: determiner-noun-verb sentences and their variants.
_NOUNS = ["dog", "cat", "bird", "cow", "fox", "owl"]
_VERBS = ["barks", "sleeps", "sings", "runs"]


def _treebank(n: int) -> list[list[dict[str, Any]]]:
    out = []
    for i in range(n):
        noun, verb = _NOUNS[i % len(_NOUNS)], _VERBS[(i // 2) % len(_VERBS)]
        words = [
            ("the", "the", "DET", "DT", "Definite=Def", 2, "det"),
            (noun, noun, "NOUN", "NN", "Number=Sing", 3, "nsubj"),
            (verb, verb[:-1], "VERB", "VBZ", "Number=Sing", 0, "root"),
        ]
        if i % 3 == 0:
            words.append((".", ".", "PUNCT", ".", "_", 3, "punct"))
        out.append(
            [
                {
                    "id": j + 1,
                    "form": f,
                    "lemma": lem,
                    "upos": u,
                    "xpos": x,
                    "feats": ft,
                    "head": h,
                    "deprel": r,
                }
                for j, (f, lem, u, x, ft, h, r) in enumerate(words)
            ]
        )
    return out


class LookupTagger:
    """Predicts each column's most frequent value for the word form (the
    first training word's values for an unknown form); records what it was
    trained on."""

    def __init__(self) -> None:
        self.trained_on: list[tuple[str, ...]] = []

    def fit(self, sentences: list[list[dict[str, Any]]]) -> LookupTagger:
        self.trained_on = [tuple(t["form"] for t in s) for s in sentences]
        counts: dict[str, collections.Counter[tuple[str, ...]]] = collections.defaultdict(
            collections.Counter
        )
        for s in sentences:
            for t in s:
                counts[t["form"]][tuple(t[c] for c in MORPHOLOGY)] += 1
        self.best = {f: c.most_common(1)[0][0] for f, c in counts.items()}
        self.default = next(iter(self.best.values()))
        return self

    def tag(self, sentences: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        return [
            [
                {**t, **dict(zip(MORPHOLOGY, self.best.get(t["form"], self.default), strict=True))}
                for t in s
            ]
            for s in sentences
        ]


def test_read_text_and_conllu_by_content(tmp_path):
    txt = tmp_path / "in.txt"
    txt.write_text("the dog barks\n\n  the cat   sleeps .\n", encoding="utf-8")
    assert [[t["form"] for t in s] for s in read_sentences(txt)] == [
        ["the", "dog", "barks"],
        ["the", "cat", "sleeps", "."],
    ]
    conllu = tmp_path / "in.conllu"
    conllu.write_text("1\tthe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdog\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    assert [t["form"] for t in read_sentences(conllu)[0]] == ["the", "dog"]
    # an explicit format wins over the content
    assert read_sentences(conllu, "text")[0][0]["form"].startswith("1")
    # the content decides, not the name: CoNLL-U named .ud, text named .conllu
    ud = tmp_path / "in.ud"
    ud.write_text("# sent_id = 1\n" + conllu.read_text())
    assert [t["form"] for t in read_sentences(ud)[0]] == ["the", "dog"]
    named = tmp_path / "text.conllu"
    named.write_text("\ufeffthe dog\tbarks\n")
    assert [[t["form"] for t in s] for s in read_sentences(named)] == [["the", "dog", "barks"]]
    with pytest.raises(ValueError, match="input_format.*expected 'conllu' or 'text'"):
        read_sentences(txt, "xml")
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "missing.txt")


def test_write_conllu_round_trips_through_the_reader(tmp_path):
    gold = _treebank(5)
    path = tmp_path / "out.conllu"
    write_conllu(gold, path)
    back = read_conllu(path)
    assert back == gold
    with pytest.raises(ValueError, match="tab or a line break"):
        write_conllu([[{"form": "a\tb"}]], tmp_path / "bad.conllu")
    assert not (tmp_path / "bad.conllu").exists()


def test_jackknife_tags_each_sentence_with_a_tagger_that_never_saw_it():
    gold = _treebank(30)
    seen: list[list[tuple[str, ...]]] = []

    def fit(model: LookupTagger, train: list[list[dict[str, Any]]]) -> None:
        model.fit(train)
        seen.append(model.trained_on)

    out = jackknife(gold, LookupTagger(), folds=5, seed=1, fit=fit)
    assert len(seen) == 5 and all(len(s) == 24 for s in seen)
    # every sentence is left out of exactly one fold's training set
    assert sum(len(gold) - len(s) for s in seen) == len(gold)
    for g, p in zip(gold, out, strict=True):
        assert [t["head"] for t in p] == [t["head"] for t in g]  # gold trees kept
        assert [t["deprel"] for t in p] == [t["deprel"] for t in g]
        assert all(set(MORPHOLOGY) <= t.keys() for t in p)
    with pytest.raises(ValueError, match="folds: expected an integer >= 2"):
        jackknife(gold, LookupTagger(), folds=1)
    with pytest.raises(ValueError, match="at least one per part"):
        jackknife(gold[:3], LookupTagger(), folds=5)


def test_text_parser_tags_and_parses_raw_text(tmp_path):
    train = _treebank(60)
    pipe = TextParser(LookupTagger(), omkl.DependencyParser(epochs=3), folds=3)
    assert pipe.fit(train) is pipe
    scores = pipe.score(_treebank(12))
    assert scores["upos"] == scores["lemma"] == 100.0
    assert scores["uas"] == 100.0 and scores["las"] == 100.0
    raw = tmp_path / "raw.txt"
    raw.write_text("the owl sings .\nthe cow runs\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert pipe.parse_file(raw, out) == 2
    parsed = read_conllu(out)
    assert [[t["upos"] for t in s] for s in parsed] == [
        ["DET", "NOUN", "VERB", "PUNCT"],
        ["DET", "NOUN", "VERB"],
    ]
    assert [[t["head"] for t in s] for s in parsed] == [[2, 3, 0, 3], [2, 3, 0]]
    assert [t["deprel"] for t in parsed[1]] == ["det", "nsubj", "root"]
    assert pipe.predict([]) == []


def test_an_overlong_sentence_is_parsed_in_pieces_into_one_tree(monkeypatch):
    from omkl import pipeline

    train = _treebank(60)
    pipe = TextParser(LookupTagger(), omkl.DependencyParser(epochs=3), folds=3).fit(train)
    # 40 sentences of "the NOUN VERB" written as one sentence of 120 words
    words = [{"form": t["form"]} for s in _treebank(40) for t in s if t["upos"] != "PUNCT"]
    whole = pipe.predict([words])[0]
    monkeypatch.setattr(pipeline, "MAX_PARSED_WORDS", 9)
    (cut,) = pipe.predict([words])
    # the tags are the same, and the pieces of 9 words are three sentences
    # each, parsed as the parser parses them alone
    assert [t["upos"] for t in cut] == [t["upos"] for t in whole]
    alone = pipe.predict([words[:9]])[0]
    assert [(t["head"], t["deprel"]) for t in cut[:9]] == [(t["head"], t["deprel"]) for t in alone]
    heads = [t["head"] for t in cut]
    assert heads.count(0) == 1
    root = heads.index(0) + 1
    for k in range(1, 14):  # the roots of the later pieces
        piece = [(i, t) for i, t in enumerate(cut) if 9 * k <= i < 9 * k + 9]
        tops = [(i, t) for i, t in piece if not 9 * k < t["head"] <= 9 * k + 9]
        assert [(t["head"], t["deprel"]) for _, t in tops] == [(root, "parataxis")]
    # every word reaches the root: one tree
    for i in range(1, len(heads) + 1):
        seen, h = 0, i
        while h:
            h, seen = heads[h - 1], seen + 1
            assert seen <= len(heads)


def test_no_test_sentence_of_the_shared_treebanks_is_split():
    import pathlib

    from omkl.pipeline import MAX_PARSED_WORDS

    data = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
    files = sorted(data.glob("ud-*/*-ud-t*.conllu"))  # the training and test files
    if not files:
        pytest.skip(f"no UD treebank in {data}")
    longest = max(len(s) for f in files for s in read_conllu(f))
    assert 2 * longest < MAX_PARSED_WORDS


def test_text_parser_bad_input():
    with pytest.raises(TypeError, match="tagger: expected an object with fit"):
        TextParser(object())
    with pytest.raises(ValueError, match="folds: expected 0 or an integer >= 2"):
        TextParser(LookupTagger(), folds=1)
    with pytest.raises(ValueError, match="data: expected at least one sentence"):
        TextParser(LookupTagger()).fit([])


def test_train_parser_and_parse_commands(tmp_path):
    import contextlib
    import io

    from omkl.cli import main

    train = tmp_path / "train.conllu"
    write_conllu(_treebank(40), train)
    model = tmp_path / "parser.omkl"
    out = io.StringIO()
    args = ["train", "parser", "--train", str(train), "--dev", str(train), "--out", str(model)]
    args += ["--folds", "2", "--epochs", "2", "--tagger-epochs", "3"]
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    assert "upos 100.00" in out.getvalue() and "las 100.00" in out.getvalue()
    raw = tmp_path / "raw.txt"
    raw.write_text("the fox sleeps .\n", encoding="utf-8")
    parsed = tmp_path / "parsed.conllu"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["parse", str(model), str(raw), str(parsed)]) == 0
    (sent,) = read_conllu(parsed)
    assert [(t["form"], t["upos"], t["head"], t["deprel"]) for t in sent] == [
        ("the", "DET", 2, "det"),
        ("fox", "NOUN", 3, "nsubj"),
        ("sleeps", "VERB", 0, "root"),
        (".", "PUNCT", 3, "punct"),
    ]
    # the pipeline's file also tags, as the tagger in it does
    tagged = tmp_path / "tagged.conllu"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["tag", str(model), str(raw), str(tagged)]) == 0
    cols = ("form", "upos", "xpos", "lemma", "feats")
    want = TextParser.load(model).tagger.tag(read_sentences(raw))
    got = read_conllu(tagged)
    assert [[tuple(t[c] for c in cols) for t in s] for s in got] == [
        [tuple(t[c] for c in cols) for t in s] for s in want
    ]
    assert got[0][2]["upos"] == "VERB"
    # a CoNLL-U input keeps its comments, multiword tokens, empty nodes,
    # DEPS and MISC: only the predicted columns change
    rich = tmp_path / "rich.conllu"
    rich_lines = [
        "# newdoc id = d1",
        "# sent_id = s-7",
        "# text = the fox sleeps.",
        "1\tthe\t_\t_\t_\t_\t_\t_\t2:det\tStart=0",
        "2-3\tfoxsleeps\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No",
        "2\tfox\t_\t_\t_\t_\t_\t_\t3:nsubj\t_",
        "3\tsleeps\t_\t_\t_\t_\t_\t_\t0:root\t_",
        "3.1\tgone\tgo\tVERB\t_\t_\t_\t_\t3:conj\t_",
        "4\t.\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No",
    ]
    rich.write_text("\n".join(rich_lines) + "\n\n", encoding="utf-8")
    rich_out = tmp_path / "rich-out.conllu"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["parse", str(model), str(rich), str(rich_out)]) == 0
    got_lines = rich_out.read_text(encoding="utf-8").split("\n")
    assert got_lines[-2:] == ["", ""] and len(got_lines) == len(rich_lines) + 2
    for want_line, got_line in zip(rich_lines, got_lines, strict=False):
        if not want_line.split("\t")[0].isdigit():
            assert got_line == want_line
            continue
        w, g = want_line.split("\t"), got_line.split("\t")
        assert [w[i] for i in (0, 1, 8, 9)] == [g[i] for i in (0, 1, 8, 9)]
    (rich_sent,) = read_conllu(rich_out)
    assert [(t["upos"], t["head"], t["deprel"]) for t in rich_sent] == [
        ("DET", 2, "det"), ("NOUN", 3, "nsubj"), ("VERB", 0, "root"), ("PUNCT", 3, "punct"),
    ]  # fmt: skip
    # the model round-trips, and a tagger-only file is refused by name
    again = TextParser.load(model)
    assert again.predict(read_conllu(parsed)) == TextParser.load(model).predict(read_conllu(parsed))
    tagger_file = tmp_path / "tagger.omkl"
    again.tagger.save(tagger_file)
    with pytest.raises(ValueError, match='tagger.omkl.*expected a saved "omkl.TextParser"'):
        TextParser.load(tagger_file)


def _ambiguous_treebank() -> list[list[dict[str, Any]]]:
    """``_treebank`` plus sentences where "runs" is a noun, so that the
    tagger's UPOS stage has a second choice for it."""
    gold = _treebank(24)
    for i in range(6):
        noun = _NOUNS[i]
        gold.append(
            [
                {"id": 1, "form": "the", "lemma": "the", "upos": "DET", "xpos": "DT",
                 "feats": "Definite=Def", "head": 2, "deprel": "det"},
                {"id": 2, "form": "runs", "lemma": "run", "upos": "NOUN", "xpos": "NNS",
                 "feats": "Number=Plur", "head": 3, "deprel": "nsubj"},
                {"id": 3, "form": "tire", "lemma": "tire", "upos": "VERB", "xpos": "VBP",
                 "feats": "_", "head": 0, "deprel": "root"},
                {"id": 4, "form": noun, "lemma": noun, "upos": "NOUN", "xpos": "NN",
                 "feats": "Number=Sing", "head": 3, "deprel": "obj"},
            ]
        )  # fmt: skip
    return gold


def test_the_parser_reads_the_taggers_second_choice_of_upos(tmp_path):
    parser = omkl.DependencyParser(templates=list(range(60)), epochs=2)
    pipe = TextParser(omkl.MorphologyTagger(folds=2, epochs=3), parser, folds=2)
    assert pipe.alternatives == "auto" and pipe._threshold == 1e-9
    seen: list[list[dict[str, Any]]] = []
    fit = parser.fit

    def spy(data: Any, *args: Any, **kwargs: Any) -> Any:
        seen.extend(data)
        return fit(data, *args, **kwargs)

    parser.fit = spy  # type: ignore[method-assign]
    pipe.fit(_ambiguous_treebank())
    # the parser learned from jackknifed tags with the tagger's second choices
    runs = [t for s in seen for t in s if t["form"] == "runs"]
    assert runs and any("UposAlt=" in t["feats"] for t in runs)
    tagged = pipe._tag(pipe.tagger, [[{"form": "the"}, {"form": "runs"}]])
    alt, p = tagged[0][1]["upos_alt"]
    assert {alt, tagged[0][1]["upos"]} == {"NOUN", "VERB"} and 1e-9 <= p <= 0.5
    assert f"UposAlt={alt}" in pipe._parser_input(tagged)[0][1]["feats"].split("|")
    # below the threshold, no alternative
    sure = [[{**tagged[0][1], "upos_alt": ("ADJ", 1e-12), "feats": "_"}]]
    assert pipe._parser_input(sure)[0][0]["feats"] == "_"
    # the output keeps the tagger's FEATS and no alternative
    out = pipe.predict([[{"form": "the"}, {"form": "runs"}, {"form": "tire"}]])
    assert all("Alt" not in t["feats"] and "upos_alt" not in t for t in out[0])
    assert [t["feats"] for t in out[0]] == [t["feats"] for t in pipe.tag(out)[0]]
    pipe.save(tmp_path / "pipe.omkl")
    back = TextParser.load(tmp_path / "pipe.omkl")
    assert back.alternatives == "auto" and back.predict(out) == out
    # a file of format version 1 (before `alternatives`) loads without them
    _, header, sections = load_model(tmp_path / "pipe.omkl", TextParser._FORMAT, [4])
    # a file of version 3 holds a tagger that records no `feats_upos`
    v3 = copy.deepcopy(header)
    for part in ("params", "state"):
        entries = v3["tagger"][part]["dict"]
        v3["tagger"][part]["dict"] = [e for e in entries if e[0] != "feats_upos"]
    save_model(tmp_path / "v3.omkl", TextParser._FORMAT, 3, v3, sections)
    assert TextParser.load(tmp_path / "v3.omkl").tagger.feats_upos_ == ("AUX", "PRON", "VERB")
    save_model(tmp_path / "bad.omkl", TextParser._FORMAT, 4, v3, sections)
    with pytest.raises(ValueError, match="bad.omkl.*feats_upos"):
        TextParser.load(tmp_path / "bad.omkl")
    del header["alternatives"], header["label_gold"]
    save_model(tmp_path / "v1.omkl", TextParser._FORMAT, 1, header, sections)
    assert TextParser.load(tmp_path / "v1.omkl").alternatives is None
    # None: the tags alone
    plain = TextParser(omkl.MorphologyTagger(folds=2, epochs=3), alternatives=None)
    assert plain._threshold is None
    assert plain._parser_input(tagged) == tagged


def test_alternatives_bad_values():
    assert TextParser(LookupTagger())._threshold is None  # "auto" without alternatives
    assert TextParser(omkl.MorphologyTagger(), folds=0)._threshold is None
    assert TextParser(omkl.MorphologyTagger(), alternatives=0.01)._threshold == 0.01
    with pytest.raises(ValueError, match=r"alternatives: expected 'auto', None or .* got 2"):
        TextParser(omkl.MorphologyTagger(), alternatives=2)
    with pytest.raises(ValueError, match=r"alternatives: .* got 'yes'"):
        TextParser(omkl.MorphologyTagger(), alternatives="yes")
    with pytest.raises(ValueError, match=r"a LookupTagger gives no alternative tags"):
        TextParser(LookupTagger(), alternatives=1e-9)
    with pytest.raises(
        ValueError, match=r"`alternatives`: expected a list of columns .* got \[.lemma.\]"
    ):
        omkl.MorphologyTagger().tag([[{"form": "a"}]], alternatives=["lemma"])


def _word(i: int, head: object, form: str = "w") -> str:
    return f"{i}\t{form}{i}\t{form}\tNOUN\tNN\t_\t{head}\tdep\t_\t_"


#: Bad sentences as (their word lines, the 0-based index of the word line
#: the error names, or None for the sentence's first line, and the end of
#: the message, which says what was expected).
_BAD_SENTENCES = {
    "column count": (
        [_word(1, 2), _word(2, 0).rsplit("\t", 1)[0], _word(3, 2)],
        1,
        "expected 10 tab-separated columns, got 9",
    ),
    "non-integer head": (
        [_word(1, 2), _word(2, "x"), _word(3, 2)],
        1,
        "HEAD `x` is not a non-negative integer; expected 0 (the root), a word ID or `_`",
    ),
    "head out of range": (
        [_word(1, 7), _word(2, 0), _word(3, 2)],
        0,
        "HEAD 7 is out of range for a sentence of 3 words; expected 0 (the root) to 3",
    ),
    "cycle": (
        [_word(1, 2), _word(2, 3), _word(3, 1)],
        None,
        "heads contain a cycle through word 1; expected a tree, every word reaching the root 0",
    ),
}


def _bad_file(tmp_path, case: str, sent_id: str | None):
    """A CoNLL-U file whose first sentence is good and whose second is the
    bad sentence ``case``, with ``sent_id`` (or none); returns the path,
    the line the error must name and the message's tail."""
    words, at, expected = _BAD_SENTENCES[case]
    good = ["# sent_id = good-1", _word(1, 0), _word(2, 1), ""]
    head = [] if sent_id is None else [f"# sent_id = {sent_id}"]
    lines = [*good, *head, *words, ""]
    path = tmp_path / f"{case.replace(' ', '-')}.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = len(good) + 1
    return path, first if at is None else first + len(head) + at, expected


@pytest.mark.parametrize("case", sorted(_BAD_SENTENCES))
@pytest.mark.parametrize("sent_id", ["ewt-0042", None])
def test_fit_and_score_name_file_line_and_sentence_of_a_bad_treebank(tmp_path, case, sent_id):
    """TextParser.fit and .score on a malformed CoNLL-U file, or one whose
    heads are out of range or form a cycle, raise omkl.ParseError naming the
    file, the line, the sentence's sent_id (its 1-based index without one)
    and what was expected, before any training."""
    path, line, expected = _bad_file(tmp_path, case, sent_id)
    name = sent_id if sent_id is not None else "2"
    want = f'{path}:{line}: sentence "{name}": {expected}'
    tagger = LookupTagger()
    pipe = TextParser(tagger, omkl.DependencyParser(epochs=1), folds=2)
    with pytest.raises(omkl.ParseError) as err:
        pipe.fit(path)
    assert str(err.value) == want
    assert (err.value.path, err.value.line) == (str(path), line)
    assert tagger.trained_on == []  # nothing was trained
    pipe.fit(_treebank(12))
    with pytest.raises(omkl.ParseError) as err:
        pipe.score(path)
    assert str(err.value) == want
    assert isinstance(err.value, ValueError)


def test_train_parser_command_names_file_line_and_sentence_of_a_bad_treebank(tmp_path):
    """``omkl train parser`` checks --train and --dev before any training."""
    from omkl.cli import main

    good = tmp_path / "good.conllu"
    write_conllu(_treebank(12), good)
    path, line, expected = _bad_file(tmp_path, "cycle", "dev-9")
    model = tmp_path / "parser.omkl"
    for train, dev in [(path, good), (good, path)]:
        args = ["train", "parser", "--train", str(train), "--dev", str(dev), "--out", str(model)]
        with pytest.raises(omkl.ParseError) as err:
            main([*args, "--folds", "2", "--epochs", "1", "--tagger-epochs", "1"])
        assert str(err.value) == f'{path}:{line}: sentence "dev-9": {expected}'
        assert not model.exists()


def test_folds_trained_on_threads_give_the_models_of_one_thread(monkeypatch):
    # the pipeline's jackknife, the tagger's own folds and the stacked
    # parser's parts train side by side; each part's model is the same
    from omkl._threads import n_threads

    train, test = _treebank(40), _treebank(9)

    def fitted(threads: int) -> tuple[list[bytes], list[list[dict[str, Any]]]]:
        monkeypatch.setenv("RAYON_NUM_THREADS", str(threads))
        assert n_threads() == threads
        pipe = TextParser(
            omkl.MorphologyTagger(folds=2, epochs=2, jackknife=3),
            omkl.DependencyParser(epochs=2, stack_folds=2),
            folds=3,
        ).fit(train)
        sections = pipe.tagger._save_state()[1] + pipe.parser._save_state()[1]
        return sections, pipe.predict(test)

    assert fitted(1) == fitted(3)
