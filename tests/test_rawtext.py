"""Raw text in, complete CoNLL-U out (``TextParser`` with a tokenizer,
``omkl parse|tag --input text``): a synthetic treebank with ``# text``,
``SpaceAfter=No`` and multiword tokens, and UD English-EWT when
``../shared/data`` has it."""

from __future__ import annotations

import contextlib
import copy
import io
import pathlib
import random
import sys
from typing import Any

import pytest

import omkl
from omkl import _persist
from omkl.cli import run
from omkl.datasets import detect_format
from omkl.evaluate import evaluate
from omkl.pipeline import TextParser
from omkl.tokenizer import Tokenizer, conllu_text, detokenize

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
EWT = DATA / "ud-english-ewt"

# (form, lemma, upos, xpos, feats) of the synthetic words
DETS = [("the", "the", "DET", "DT", "Definite=Def|PronType=Art"),
        ("a", "a", "DET", "DT", "Definite=Ind|PronType=Art")]  # fmt: skip
ADJS = [(a, a, "ADJ", "JJ", "Degree=Pos") for a in ("big", "small", "red", "old")]
NOUNS = [(n, n, "NOUN", "NN", "Number=Sing") for n in ("dog", "cat", "bird", "tree", "car")]
NAMES = [(n, n, "PROPN", "NNP", "Number=Sing") for n in ("Lee", "Smith", "Jones")]
FINITE = "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"
#: (third person, base form) of the verbs; "sees" takes an object
VERBS = [("runs", "run"), ("sleeps", "sleep"), ("sees", "see"), ("sings", "sing")]
#: multiword tokens: surface -> (auxiliary word, its lemma, its XPOS)
MWTS = {"doesn't": ("does", "do", "VBZ"), "can't": ("ca", "can", "MD")}
MWTS["won't"] = ("wo", "will", "MD")
NOT = ("n't", "not", "PART", "RB", "Polarity=Neg")

Word = tuple[str, str, str, str, str, int, str]


def _noun_phrase(rng: random.Random, head_of_noun: int, rel: str, at: int) -> list[Word]:
    """Words of a noun phrase whose first word is number ``at``."""
    if rng.random() < 0.25:
        title = ("Mr.", "Mr.", "PROPN", "NNP", "Abbr=Yes")
        return [(*title, at + 1, "compound"), (*rng.choice(NAMES), head_of_noun, rel)]
    words: list[tuple[str, str, str, str, str]] = [rng.choice(DETS)]
    if rng.random() < 0.5:
        words.append(rng.choice(ADJS))
    words.append(rng.choice(NOUNS))
    noun = at + len(words) - 1
    out: list[Word] = []
    for w in words[:-1]:
        out.append((*w, noun, "det" if w[2] == "DET" else "amod"))
    out.append((*words[-1], head_of_noun, rel))
    return out


def _sentence(rng: random.Random) -> tuple[list[Word], dict[int, str], set[int]]:
    """A sentence's words (head and relation included), its multiword
    tokens (first word -> surface) and the words followed by no space."""
    third, base = rng.choice(VERBS)
    negated = rng.random() < 0.35
    subject = _noun_phrase(rng, 0, "nsubj", 1)  # its head is the verb, placed next
    verb = len(subject) + (2 if negated else 0) + 1
    subject = [(*w[:5], verb if w[6] == "nsubj" else w[5], w[6]) for w in subject]
    words = list(subject)
    mwt: dict[int, str] = {}
    if negated:
        surface = rng.choice(sorted(MWTS))
        aux, lemma, xpos = MWTS[surface]
        feats = FINITE if xpos == "VBZ" else "VerbForm=Fin"
        mwt[len(words) + 1] = surface
        words.append((aux, lemma, "AUX", xpos, feats, verb, "aux"))
        words.append((*NOT, verb, "advmod"))
        words.append((base, base, "VERB", "VB", "VerbForm=Inf", 0, "root"))
    else:
        words.append((third, base, "VERB", "VBZ", FINITE, 0, "root"))
    if third == "sees":
        words += _noun_phrase(rng, verb, "obj", len(words) + 1)
    no_space = {len(words)}
    mark = rng.choice(".!?")
    words.append((mark, mark, "PUNCT", ".", "_", verb, "punct"))
    first = words[0]
    words[0] = (first[0][:1].upper() + first[0][1:], *first[1:])
    return words, mwt, no_space


def tagged_conllu(n_paragraphs: int, seed: int) -> str:
    """CoNLL-U of paragraphs of 1 to 4 synthetic sentences with every
    column, ``# newdoc``, ``# newpar``, ``# text``, ``SpaceAfter=No`` and
    multiword tokens."""
    rng = random.Random(seed)
    lines = ["# newdoc"]
    n = 0
    for _ in range(n_paragraphs):
        lines.append("# newpar")
        for _ in range(rng.randint(1, 4)):
            n += 1
            words, mwt, no_space = _sentence(rng)
            rows = []
            text = ""
            i = 1
            while i <= len(words):
                if i in mwt:
                    end = i + 1
                    misc = "SpaceAfter=No" if end in no_space else "_"
                    rows.append(f"{i}-{end}\t{mwt[i]}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
                    for k in (i, end):
                        rows.append(_row(k, words[k - 1], "_"))
                    text += mwt[i] + ("" if end in no_space else " ")
                    i = end + 1
                    continue
                misc = "SpaceAfter=No" if i in no_space else "_"
                rows.append(_row(i, words[i - 1], misc))
                text += words[i - 1][0] + ("" if i in no_space else " ")
                i += 1
            lines += [f"# sent_id = s{n}", f"# text = {text.strip()}", *rows, ""]
    return "\n".join(lines) + "\n"


def _row(i: int, w: Word, misc: str) -> str:
    return "\t".join([str(i), *w[:5], str(w[5]), w[6], "_", misc])


def _small_pipeline(**kwargs: Any) -> TextParser:
    return TextParser(
        omkl.MorphologyTagger(folds=2, epochs=3),
        omkl.DependencyParser(templates=list(range(60)), epochs=2, stack_folds=0),
        folds=2,
        **kwargs,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    folder = tmp_path_factory.mktemp("rawtext")
    out = {}
    for name, paragraphs, seed in (("train", 120, 1), ("test", 25, 2)):
        out[name] = folder / f"{name}.conllu"
        out[name].write_text(tagged_conllu(paragraphs, seed), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def pipe(files: dict[str, pathlib.Path]) -> TextParser:
    return _small_pipeline().fit(files["train"])


def _blocks(conllu: str) -> list[list[list[str]]]:
    """The word and multiword-token lines of each sentence, as cells."""
    out = []
    for block in conllu.split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        if rows:
            out.append(rows)
    return out


def rebuilt_text(conllu: str) -> str:
    """The text of CoNLL-U written from raw text, from its tokens and the
    white space in their MISC (:func:`omkl.tokenizer.detokenize`)."""
    sentences = []
    for rows in _blocks(conllu):
        tokens = []
        until = 0
        for cells in rows:
            first = cells[0].split("-")
            if len(first) == 2:
                until = int(first[1])
                tokens.append({"form": cells[1], "misc": cells[9]})
            elif int(first[0]) > until:
                tokens.append({"form": cells[1], "misc": cells[9]})
        sentences.append({"tokens": tokens})
    return detokenize(sentences)


def words_of(conllu: str) -> list[list[str]]:
    return [[c[1] for c in rows if c[0].isdigit()] for rows in _blocks(conllu)]


def test_fit_trains_a_tokenizer_when_the_file_has_the_text(pipe, files, tmp_path):
    assert isinstance(pipe.tokenizer_, Tokenizer) and pipe.tokenizer == "auto"
    assert pipe.tokenizer_.score(files["test"]) == {
        "Tokens": 100.0,
        "Sentences": 100.0,
        "Words": 100.0,
    }
    # none when asked for none, from sentences, or from a file without text
    sentences = omkl.parsing.read_conllu(files["train"])[:40]
    untexted = tmp_path / "untexted.conllu"
    untexted.write_text(
        "".join(
            line + "\n"
            for line in files["train"].read_text(encoding="utf-8").splitlines()
            if not line.startswith("# text")
        ),
        encoding="utf-8",
    )
    assert _small_pipeline(tokenizer=None).fit(files["train"]).tokenizer_ is None
    assert _small_pipeline().fit(sentences).tokenizer_ is None
    assert _small_pipeline().fit(untexted).tokenizer_ is None
    # a Tokenizer given is trained on the file's text, and refused without it
    given = Tokenizer(epochs=3)
    assert _small_pipeline(tokenizer=given).fit(files["train"]).tokenizer_ is given
    assert given._fitted
    with pytest.raises(ValueError, match=f"{untexted}: a sentence without a '# text"):
        _small_pipeline(tokenizer=Tokenizer()).fit(untexted)
    # a fitted one is kept by fit(sentences); an unfitted one is refused there
    assert _small_pipeline(tokenizer=given).fit(sentences).tokenizer_ is given
    with pytest.raises(ValueError, match="unfitted Tokenizer"):
        _small_pipeline(tokenizer=Tokenizer()).fit(sentences)
    with pytest.raises(ValueError, match="tokenizer: expected 'auto', None or a Tokenizer"):
        _small_pipeline(tokenizer="yes")
    with pytest.raises(RuntimeError, match="no tokenizer"):
        _small_pipeline(tokenizer=None).fit(sentences).parse_text("The dog runs.")


def test_parse_text_writes_complete_conllu_of_the_exact_text(pipe, files, tmp_path):
    text = conllu_text(files["test"])
    out = pipe.parse_text(text)
    # the text comes back exactly, and the words are the tokenizer's
    assert rebuilt_text(out) == text
    tokenized = pipe.tokenizer_.tokenize(text)
    assert words_of(out) == [[w for t in s["tokens"] for w in t["words"]] for s in tokenized]
    assert detokenize(pipe.predict_text(text)) == text
    lines = out.splitlines()
    assert lines[:2] == ["# newdoc", "# newpar"]
    assert sum(line == "# newpar" for line in lines) == text.count("\n\n") + 1
    assert sum(line.startswith("# text = ") for line in lines) == len(tokenized)
    assert "\tSpaceAfter=No" in out and "SpacesAfter=\\n" in out
    # multiword tokens: a line for the token, then its words
    mwt = [i for i, line in enumerate(lines) if line.split("\t")[0].count("-") == 1]
    assert mwt
    for i in mwt:
        surface = lines[i].split("\t")[1]
        first, second = (lines[i + k].split("\t") for k in (1, 2))
        assert surface.endswith(second[1]) and second[1] == "n't"
        assert (first[3], second[3]) == ("AUX", "PART")
    # every predicted column is filled, and each sentence is a tree
    for rows in _blocks(out):
        words = [c for c in rows if c[0].isdigit()]
        assert all(c[2] != "_" and c[3] != "_" and c[4] != "_" and c[7] != "_" for c in words)
        heads = [int(c[6]) for c in words]
        assert heads.count(0) == 1 and all(0 <= h <= len(words) for h in heads)
    # and right, by the CoNLL 2018 metric against the gold file
    system = tmp_path / "system.conllu"
    system.write_text(out, encoding="utf-8")
    scores = evaluate(files["test"], system)
    for key in ("Tokens", "Sentences", "Words"):
        assert scores[key].f1 == 1.0, key
    for key in ("UPOS", "XPOS", "Lemmas"):
        assert scores[key].f1 > 0.97, (key, scores[key])
    assert scores["UAS"].f1 > 0.9 and scores["LAS"].f1 > 0.9, scores
    # a damaged output (the multiword tokens' lines dropped) is caught
    broken = "\n".join(line for line in lines if line.split("\t")[0].count("-") != 1)
    assert rebuilt_text(broken + "\n") != text
    system.write_text(broken + "\n", encoding="utf-8")
    assert evaluate(files["test"], system)["Tokens"].f1 < 1.0


def test_saved_and_copied_pipelines_parse_text_the_same(pipe, files, tmp_path):
    text = conllu_text(files["test"])
    expected = pipe.parse_text(text)
    path = tmp_path / "pipe.omkl"
    pipe.save(path)
    loaded = TextParser.load(path)
    assert isinstance(loaded.tokenizer_, Tokenizer)
    assert loaded.parse_text(text) == expected
    assert copy.deepcopy(pipe).parse_text(text) == expected
    loaded.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == path.read_bytes()
    # a pipeline without a tokenizer saves and loads without one
    bare = copy.deepcopy(pipe)
    bare.tokenizer_ = None
    bare.save(tmp_path / "bare.omkl")
    assert TextParser.load(tmp_path / "bare.omkl").tokenizer_ is None
    # as does a file of version 3, which had no tokenizer entry
    version, header, sections = _persist.load_model(path, "omkl.TextParser", [4])
    old = tmp_path / "v3.omkl"
    head = {k: v for k, v in header.items() if k != "tokenizer"}
    _persist.save_model(old, "omkl.TextParser", 3, head, sections[:-1])
    assert TextParser.load(old).tokenizer_ is None


def test_a_crafted_tokenizer_entry_is_refused_naming_the_file(pipe, tmp_path):
    path = tmp_path / "pipe.omkl"
    pipe.save(path)
    version, header, sections = _persist.load_model(path, "omkl.TextParser", [4])
    assert header["tokenizer"]["class"] == "omkl.tokenizer:Tokenizer"
    tok = header["tokenizer"]
    crafted: dict[str, tuple[Any, list[bytes]]] = {
        "os:system": ({**tok, "class": "os:system"}, sections),
        "a tagger": ({**tok, "class": "omkl.morphology:MorphologyTagger"}, sections),
        "not a dict": ("omkl.tokenizer:Tokenizer", sections),
        "no sections": ({**tok, "sections": 0}, sections),
        "too many sections": ({**tok, "sections": 2}, sections),
        "a section left over": (None, sections),
        "unknown state": ({**tok, "state": {"dict": []}}, sections),
        "a damaged chain": (tok, [*sections[:-1], b"junk"]),
    }
    for what, (value, secs) in crafted.items():
        bad = tmp_path / f"bad-{len(what)}-{what[:3]}.omkl"
        _persist.save_model(bad, "omkl.TextParser", version, {**header, "tokenizer": value}, secs)
        with pytest.raises(ValueError, match=str(bad)):
            TextParser.load(bad)
    # the entry is required in a file of version 4
    missing = tmp_path / "missing.omkl"
    head = {k: v for k, v in header.items() if k != "tokenizer"}
    _persist.save_model(missing, "omkl.TextParser", version, head, sections[:-1])
    with pytest.raises(ValueError, match=f"{missing}.*'tokenizer'"):
        TextParser.load(missing)


def test_the_input_format_is_detected_from_the_content(tmp_path, files):
    ud = tmp_path / "sample.ud"
    ud.write_bytes(files["test"].read_bytes())
    raw = tmp_path / "raw.conllu"
    raw.write_text(conllu_text(files["test"]), encoding="utf-8")
    hashtag = tmp_path / "notes.txt"
    hashtag.write_text("# Notes\n\nThe dog runs. The cat sleeps.\n", encoding="utf-8")
    comments_only = tmp_path / "comments.conllu"
    comments_only.write_text("# newdoc\n\n", encoding="utf-8")
    assert detect_format(ud) == "conllu"
    assert detect_format(raw) == "text"
    assert detect_format(hashtag) == "text"
    assert detect_format(comments_only) == "conllu"


def _cli(*argv: str, stdin: str | bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = run(list(argv))
    finally:
        sys.stdin = old
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def model_file(files, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("cli") / "parser.omkl"
    status, out, err = _cli(
        "train", "parser", "--train", str(files["train"]), "--dev", str(files["test"]),
        "--out", str(path), "--folds", "2", "--epochs", "2", "--tagger-epochs", "3",
        "--stack-folds", "0",
    )  # fmt: skip
    assert status == 0, err
    assert "with a tokenizer trained on the '# text'" in out
    assert "Tokens 100.00, Sentences 100.00, Words 100.00" in out
    return path


def test_the_commands_read_raw_text_end_to_end(model_file, files, tmp_path):
    text = conllu_text(files["test"])
    expected = TextParser.load(model_file).parse_text(text)
    # raw text on standard input, CoNLL-U on standard output, format detected
    status, out, err = _cli("parse", str(model_file), "-", "-", stdin=text)
    assert status == 0, err
    assert out == expected and rebuilt_text(out) == text
    assert "parsed" in err and err.count("\n") == 1
    # the same from a file, with --input text, into a file
    raw = tmp_path / "in.txt"
    raw.write_text(text, encoding="utf-8")
    written = tmp_path / "out.conllu"
    assert _cli("parse", str(model_file), str(raw), str(written), "--input", "text")[0] == 0
    assert written.read_text(encoding="utf-8") == expected
    # horizontal: one sentence a line, split at spaces, as before
    lines = tmp_path / "lines.txt"
    lines.write_text("the dog runs .\nMr. Lee doesn't sleep !\n", encoding="utf-8")
    status, out, _ = _cli("parse", str(model_file), str(lines), "-", "--input", "horizontal")
    assert status == 0 and words_of(out) == [
        ["the", "dog", "runs", "."],
        ["Mr.", "Lee", "doesn't", "sleep", "!"],
    ]
    # the deprecated --input-format: its text is horizontal, with one warning line
    status, old, err = _cli("parse", str(model_file), str(lines), "-", "--input-format", "text")
    assert status == 0 and old == out
    assert err.splitlines()[0] == (
        "omkl: warning: --input-format is deprecated; use --input horizontal"
    )
    # CoNLL-U (named .ud) is detected and written back with its lines
    ud = tmp_path / "gold.ud"
    ud.write_bytes(files["test"].read_bytes())
    status, out, _ = _cli("parse", str(model_file), str(ud), "-")
    gold_lines = files["test"].read_text(encoding="utf-8").splitlines()
    assert status == 0 and [line for line in out.splitlines() if line.startswith("#")] == [
        line for line in gold_lines if line.startswith("#")
    ]
    # omkl tag with the pipeline's file tags raw text; HEAD stays empty
    status, out, _ = _cli("tag", str(model_file), "-", "-", stdin=text)
    assert status == 0 and rebuilt_text(out) == text
    for rows in _blocks(out):
        assert all(c[3] != "_" and c[6] == "_" for c in rows if c[0].isdigit())


def test_the_commands_fail_on_one_line_with_status_2(model_file, files, tmp_path):
    tagger = tmp_path / "tagger.omkl"
    TextParser.load(model_file).tagger.save(tagger)
    bare = tmp_path / "bare.omkl"
    status, _, err = _cli(
        "train", "parser", "--train", str(files["train"]), "--out", str(bare), "--folds", "0",
        "--epochs", "1", "--stack-folds", "0", "--no-tokenizer",
    )  # fmt: skip
    assert status == 0, err
    raw = tmp_path / "in.txt"
    raw.write_text("The dog runs. The cat sleeps.\n", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The dog \xff runs.")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    cases = [
        (("parse", str(bare), str(raw), str(out), "--input", "text"), "has no tokenizer"),
        (("tag", str(tagger), str(raw), str(out), "--input", "text"), "has no tokenizer"),
        (("parse", str(model_file), str(bad), str(out)), "not valid UTF-8"),
        (("parse", str(model_file), str(blank), str(out), "--input", "text"), "no text in it"),
        (("parse", str(model_file), str(tmp_path / "none.txt"), str(out)), "none.txt"),
        (("parse", str(raw), str(raw), str(out)), str(raw)),
    ]
    for argv, expected in cases:
        status, stdout, err = _cli(*argv)
        assert status == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith("omkl: error: "), err
        assert expected in err, err
        assert stdout == ""
    assert not out.exists()
    # without --input, a model without a tokenizer reads text as horizontal
    status, stdout, _ = _cli("parse", str(bare), str(raw), "-")
    assert status == 0 and words_of(stdout) == [["The", "dog", "runs.", "The", "cat", "sleeps."]]


def test_help_shows_the_input_choices_and_defaults():
    for argv in (["parse", "--help"], ["tag", "--help"], ["train", "parser", "--help"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            run(argv)
        text = " ".join(out.getvalue().split())
        if argv[0] == "train":
            assert "--no-tokenizer" in text and "(default: False)" in text
        else:
            assert "--input {text,horizontal,conllu}" in text
            assert "default: conllu when it reads as CoNLL-U" in text
            assert "deprecated" in text


def _first_sentences(path: pathlib.Path, n: int, into: pathlib.Path) -> pathlib.Path:
    blocks = path.read_text(encoding="utf-8").split("\n\n")[:n]
    into.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return into


@pytest.mark.skipif(not EWT.is_dir(), reason="no UD English-EWT in ../shared/data")
def test_ud_english_ewt_from_raw_text(tmp_path):
    train = _first_sentences(EWT / "en_ewt-ud-train.conllu", 500, tmp_path / "train.conllu")
    dev = _first_sentences(EWT / "en_ewt-ud-dev.conllu", 100, tmp_path / "dev.conllu")
    pipe = TextParser(
        omkl.MorphologyTagger(folds=2, epochs=3),
        omkl.DependencyParser(epochs=2, stack_folds=0),
        folds=2,
    ).fit(train)
    text = conllu_text(dev)
    out = pipe.parse_text(text)
    assert rebuilt_text(out) == text
    system = tmp_path / "system.conllu"
    system.write_text(out, encoding="utf-8")
    scores = {k: 100 * v.f1 for k, v in evaluate(dev, system).items()}
    # about 97, 86, 97, 90, 94, 70 and 66 (a tagger and a parser trained on
    # 500 sentences, 3 and 2 epochs)
    assert scores["Tokens"] > 95.0, scores
    assert scores["Sentences"] > 75.0, scores
    assert scores["Words"] > 94.5, scores
    assert scores["UPOS"] > 85.0 and scores["Lemmas"] > 90.0, scores
    assert scores["UAS"] > 62.0 and scores["LAS"] > 57.0, scores
