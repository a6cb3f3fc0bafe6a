"""The tokenizer (:mod:`omkl.tokenizer`): learned from the text of a
synthetic treebank, rebuilding the text, multiword tokens, files, errors,
the commands, and UD English-EWT when ``../shared/data`` has it."""

from __future__ import annotations

import contextlib
import copy
import io
import pathlib
import pickle
import random

import pytest

import omkl
from omkl import _persist
from omkl.cli import run
from omkl.evaluate import evaluate
from omkl.tokenizer import Tokenizer, conllu_text, detokenize, format_tokenized

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
EWT = DATA / "ud-english-ewt"

NOUNS = ["dog", "cat", "house", "car", "tree", "river", "idea", "plan", "city", "song"]
VERBS = ["runs", "sleeps", "sings", "falls", "waits", "grows", "works", "moves"]
ADJS = ["big", "small", "red", "old", "new", "quiet", "happy"]
NAMES = ["Smith", "Jones", "Brown", "Lee"]
#: multiword tokens of the training text and their words
MWTS = {"don't": ("do", "n't"), "can't": ("ca", "n't"), "isn't": ("is", "n't")}
MWTS["won't"] = ("wo", "n't")


def _row(i: int | str, form: str, misc: str = "_") -> str:
    """A CoNLL-U line (words hang from the first, so that the file can be
    scored)."""
    head = "_" if "-" in str(i) else "0\troot" if i == 1 else "1\tdep"
    head = head if head != "_" else "_\t_"
    return f"{i}\t{form}\t_\t_\t_\t_\t{head}\t_\t{misc}"


def _sentence(rng: random.Random) -> list[tuple[str, tuple[str, ...], bool]]:
    """A sentence as (form, words of a multiword token, space after)."""
    toks: list[list[object]] = []

    def add(form: str, words: tuple[str, ...] = ()) -> None:
        toks.append([form, words, True])

    if rng.random() < 0.3:
        add("Mr.")
        add(rng.choice(NAMES))
    else:
        add("The")
        add(rng.choice(NOUNS))
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.25:
            form = rng.choice(sorted(MWTS))
            add(form, MWTS[form])
        elif kind < 0.45 and toks[-1][0] != ",":
            toks[-1][2] = False
            add(",")
        elif kind < 0.7:
            add(rng.choice(ADJS))
            add(rng.choice(NOUNS))
        else:
            add(rng.choice(VERBS))
    if toks[-1][0] == ",":
        toks.pop()
    toks[-1][2] = False
    add(rng.choice([".", "!", "?"]))
    return [(str(f), tuple(w), bool(s)) for f, w, s in toks]  # type: ignore[call-overload]


def synthetic_conllu(n_paragraphs: int, seed: int) -> str:
    """CoNLL-U of paragraphs of 1 to 4 synthetic sentences: ``# newpar``,
    ``# text``, ``SpaceAfter=No``, multiword tokens."""
    rng = random.Random(seed)
    lines = ["# newdoc"]
    for _ in range(n_paragraphs):
        lines.append("# newpar")
        for _ in range(rng.randint(1, 4)):
            toks = _sentence(rng)
            text = "".join(f + (" " if s else "") for f, _, s in toks).strip()
            lines.append(f"# text = {text}")
            i = 1
            for form, words, space in toks:
                misc = "_" if space else "SpaceAfter=No"
                if words:
                    lines.append(_row(f"{i}-{i + len(words) - 1}", form, misc))
                    for w in words:
                        lines.append(_row(i, w))
                        i += 1
                else:
                    lines.append(_row(i, form, misc))
                    i += 1
            lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("tok") / "train.conllu"
    path.write_text(synthetic_conllu(150, seed=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model(corpus: pathlib.Path) -> Tokenizer:
    return Tokenizer(epochs=5).fit(corpus)


def _gold(path: pathlib.Path) -> list[list[tuple[str, list[str]]]]:
    """Each sentence's tokens as (form, words) from a CoNLL-U file."""
    out: list[list[tuple[str, list[str]]]] = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        toks: list[tuple[str, list[str]]] = []
        until = 0
        for cells in rows:
            if "-" in cells[0]:
                until = int(cells[0].split("-")[1])
                toks.append((cells[1], []))
            elif int(cells[0]) <= until:
                toks[-1][1].append(cells[1])
            else:
                toks.append((cells[1], [cells[1]]))
        if toks:
            out.append(toks)
    return out


def _tokens(sentences: list[dict[str, object]]) -> list[list[tuple[str, list[str]]]]:
    return [[(t["form"], t["words"]) for t in s["tokens"]] for s in sentences]  # type: ignore[attr-defined]


def test_the_synthetic_treebank_is_learned_exactly(model, corpus, tmp_path):
    other = tmp_path / "other.conllu"  # new sentences of the same kind
    other.write_text(synthetic_conllu(40, seed=2), encoding="utf-8")
    for path in (corpus, other):
        text = conllu_text(path)
        out = model.tokenize(text)
        assert _tokens(out) == _gold(path)
        assert detokenize(out) == text
        paragraphs = text.strip().split("\n\n")
        assert sum(s["newpar"] for s in out) == len(paragraphs)
        assert [s["newdoc"] for s in out] == [True] + [False] * (len(out) - 1)
        assert model.score(path) == {"Tokens": 100.0, "Sentences": 100.0, "Words": 100.0}


def test_the_written_conllu_scores_against_the_gold_file(model, corpus, tmp_path):
    out = model.tokenize(conllu_text(corpus))
    system = tmp_path / "system.conllu"
    system.write_text(format_tokenized(out, placeholder_heads=True), encoding="utf-8")
    scores = evaluate(corpus, system)
    assert scores["Tokens"].f1 == scores["Words"].f1 == scores["Sentences"].f1 == 1.0
    plain = format_tokenized(out)
    assert plain.startswith("# newdoc\n# newpar\n# sent_id = 1\n# text = ")
    assert "\tSpaceAfter=No\n" in plain
    mwt = [line for line in plain.splitlines() if line.split("\t")[0].count("-") == 1]
    assert mwt and all(line.endswith("\t_") or "SpaceAfter" in line for line in mwt)
    # a damaged tokenisation scores lower: the check can fail
    for s in out:
        for t in s["tokens"]:
            t["words"] = [t["form"]]
    system.write_text(format_tokenized(out, placeholder_heads=True), encoding="utf-8")
    assert evaluate(corpus, system)["Words"].f1 < 1.0


def test_white_space_is_kept_and_paragraphs_cut_at_blank_lines(model):
    text = "  The dog runs.   The cat sleeps!\nThe car falls.\n\n \n\tMr. Lee waits?\n"
    out = model.tokenize(text)
    assert detokenize(out) == text
    assert [s["text"] for s in out] == [
        "The dog runs.",
        "The cat sleeps!",
        "The car falls.",
        "Mr. Lee waits?",
    ]
    assert [s["newpar"] for s in out] == [True, False, False, True]
    assert out[0]["tokens"][0]["misc"] == "SpacesBefore=\\s\\s"
    assert out[0]["tokens"][-1]["misc"] == "SpacesAfter=\\s\\s\\s"
    assert out[1]["tokens"][-2]["misc"] == "SpaceAfter=No"
    for s in out:
        for t in s["tokens"]:
            assert text[t["start"] : t["end"]] == t["form"]
    assert model.tokenize("") == [] and model.tokenize(" \n\n ") == []


def test_multiword_tokens_from_the_lexicon_and_from_the_rule(model):
    (s,) = model.tokenize("Don't the dog sleeps!")
    assert s["tokens"][0]["words"] == ["Do", "n't"]
    assert s["tokens"][0]["form"] == "Don't"
    # "shouldn't" was never seen: the rule of the suffix n't (seen 4 ways)
    assert model._rules == {"n't": "\tn't"}
    (s,) = model.tokenize("The dog shouldn't sleep.")
    assert [t["words"] for t in s["tokens"]][2] == ["should", "n't"]
    assert model._words("DON'T") == ["DO", "N'T"]
    assert model._words("dogs") == ["dogs"]


def test_a_rule_is_learned_when_seen_twice_and_mostly_right(tmp_path):
    def rules(*forms: str) -> dict[str, str]:
        lines = []
        for form in forms:
            k = form.index("n't") if "n't" in form else len(form)
            lines.append(f"# text = {form}")
            if k < len(form):
                lines += [_row("1-2", form), _row(1, form[:k]), _row(2, form[k:])]
            else:
                lines.append(_row(1, form))
            lines.append("")
        path = tmp_path / "t.conllu"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return Tokenizer(epochs=1).fit(path)._rules

    assert rules("don't", "isn't") == {"n't": "\tn't"}
    assert rules("don't", "dogs") == {}  # seen once
    assert rules("don't", "don't", "isn't") == {"n't": "\tn't"}
    # most tokens ending in n't are not multiword tokens: no rule
    assert rules("don't", "isn't", "ben't", "xn't", "yn't", "zn't") != {}
    lines = [f"# text = {w}\n{_row(1, w)}\n" for w in ("bxn't", "byn't", "bzn't")]
    path = tmp_path / "plain.conllu"
    two = "# text = don't\n" + "\n".join([_row("1-2", "don't"), _row(1, "do"), _row(2, "n't")])
    two += "\n\n# text = isn't\n" + "\n".join([_row("1-2", "isn't"), _row(1, "is")])
    two += "\n" + _row(2, "n't") + "\n\n"
    path.write_text(two + "\n".join(lines) + "\n", encoding="utf-8")
    assert Tokenizer(epochs=1).fit(path)._rules == {}


def test_a_frequent_multiword_token_alone_makes_no_rule(tmp_path):
    # "don't" 9 times and 2 plain words ending in n't: one distinct token
    # with the rule, so no rule, and an unseen "ben't" stays whole
    one = "# text = don't\n" + "\n".join([_row("1-2", "don't"), _row(1, "do"), _row(2, "n't")])
    plain = "".join(f"# text = {w}\n{_row(1, w)}\n\n" for w in ("bxn't", "byn't"))
    path = tmp_path / "t.conllu"
    path.write_text((one + "\n\n") * 9 + plain, encoding="utf-8")
    model = Tokenizer(epochs=1).fit(path)
    assert model._rules == {}
    assert model._words("ben't") == ["ben't"] and model._words("Don't") == ["Do", "n't"]


def test_web_and_e_mail_addresses_are_one_token(model):
    (s,) = model.tokenize("The dog (www.dogs.org/a?b=c) sleeps at ann.lee@dogs.org.")
    forms = [t["form"] for t in s["tokens"]]
    assert "www.dogs.org/a?b=c" in forms and "ann.lee@dogs.org" in forms, forms
    assert forms[-1] == "." and forms[2] == "("
    (s,) = model.tokenize("Mr. Lee (lee...@dogs.org) sleeps:-) and runs :(")
    forms = [t["form"] for t in s["tokens"]]
    assert "lee...@dogs.org" in forms and ":-)" in forms and forms[-1] == ":(", forms
    assert "sleeps" in forms, forms


def test_sentence_ends_without_punctuation_from_the_held_out_threshold(tmp_path):
    # sentences without punctuation, each starting with "and" or "then":
    # the held-out part sets a threshold below the chain's own choice
    rng = random.Random(3)
    lines = ["# newpar"]
    for _ in range(300):
        words = [rng.choice(["and", "then"]), *rng.sample(NOUNS + VERBS, rng.randint(2, 5))]
        lines.append("# text = " + " ".join(words))
        lines += [_row(i, w) for i, w in enumerate(words, 1)]
        lines.append("")
    path = tmp_path / "t.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = Tokenizer(epochs=3).fit(path)
    assert 0.0 < model._threshold < 1.0
    fixed = Tokenizer(epochs=3, sentence_threshold=0.5).fit(path)
    assert fixed._threshold == 0.5
    scores = model.score(path)
    assert scores["Sentences"] >= fixed.score(path)["Sentences"] and scores["Sentences"] > 50.0


def test_sentence_ends_from_the_words_around_them(tmp_path):
    # lower-case sentences without punctuation whose last word is a verb
    # and whose first is a noun (nouns and verbs come nowhere else): only
    # the words on either side of a boundary tell it
    rng = random.Random(4)
    lines = ["# newpar"]
    fillers = ["big", "small", "red", "old", "new", "quiet", "happy", "very", "so", "too"]
    for _ in range(300):
        words = [rng.choice(NOUNS), *rng.sample(fillers, rng.randint(1, 4)), rng.choice(VERBS)]
        lines.append("# text = " + " ".join(words))
        lines += [_row(i, w) for i, w in enumerate(words, 1)]
        lines.append("")
    path = tmp_path / "t.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = Tokenizer(epochs=3).fit(path)
    out = model.tokenize("dog big red runs tree so quiet sleeps song new waits")
    assert [s["text"] for s in out] == [
        "dog big red runs",
        "tree so quiet sleeps",
        "song new waits",
    ]
    assert model.score(path)["Sentences"] > 95.0
    # the sentence chain's own, smaller tables
    assert model.ends_.n_buckets == model.n_buckets // 16


def test_save_load_pickle_and_copies_tokenize_the_same(model, tmp_path):
    text = conllu_text_of(synthetic_conllu(10, seed=5), tmp_path)
    expected = model.tokenize(text)
    path = tmp_path / "tok.omkl"
    model.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.tokenize(text) == expected
    assert pickle.loads(pickle.dumps(model)).tokenize(text) == expected
    assert copy.deepcopy(model).tokenize(text) == expected
    loaded.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == path.read_bytes()
    assert isinstance(omkl.Tokenizer.load(path), omkl.Tokenizer)


def conllu_text_of(conllu: str, tmp_path: pathlib.Path) -> str:
    path = tmp_path / "g.conllu"
    path.write_text(conllu, encoding="utf-8")
    return conllu_text(path)


def test_crafted_and_foreign_files_are_refused_naming_the_file(model, tmp_path, corpus):
    good = tmp_path / "good.omkl"
    model.save(good)
    version, header, sections = _persist.load_model(good, "omkl.Tokenizer", [1])
    crafted = {
        "labels": ["I", "T", "os.system"],
        "mwt": {"don't": ["do", "n't"]},
        "rules": {"n't": "no tab"},
        "plain": "dogs",
        "threshold": 1.5,
        "end_labels": ["E", "os.system"],
    }
    for key, value in crafted.items():
        bad = tmp_path / f"bad-{key}.omkl"
        head = copy.deepcopy(header)
        head["state"][key] = _persist.encode(value)
        _persist.save_model(bad, "omkl.Tokenizer", version, head, sections)
        with pytest.raises(ValueError, match=str(bad)):
            Tokenizer.load(bad)
    for cut in (sections[0][:4], sections[0][:1000]):
        bad = tmp_path / "bad-section.omkl"
        _persist.save_model(bad, "omkl.Tokenizer", version, header, [cut])
        with pytest.raises(ValueError, match=str(bad)):
            Tokenizer.load(bad)
    with pytest.raises(ValueError, match=str(corpus)):
        Tokenizer.load(corpus)
    other = tmp_path / "tagger.omkl"
    omkl.TextTagger().save(other)
    with pytest.raises(ValueError, match=str(other)):
        Tokenizer.load(other)


def test_bad_inputs_are_refused_with_clear_errors(model, tmp_path):
    for text in (b"The dog.", None, ["The dog."]):
        with pytest.raises(ValueError, match="invalid value for `text`: expected a str"):
            model.tokenize(text)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not fitted"):
        Tokenizer().tokenize("The dog.")
    empty = tmp_path / "empty.conllu"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{empty}: no sentence"):
        Tokenizer().fit(empty)
    untexted = tmp_path / "untexted.conllu"
    untexted.write_text(_row(1, "Hi") + "\n\n" + _row(1, "Yes") + "\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{untexted}, line 1: .*'# text = ...'"):
        Tokenizer().fit(untexted)
    with pytest.raises(FileNotFoundError):
        Tokenizer().fit(tmp_path / "missing.conllu")
    for params, name in [
        ({"epochs": 0}, "epochs"),
        ({"n_buckets": 2}, "n_buckets"),
        ({"min_rule_count": 0}, "min_rule_count"),
        ({"min_rule_share": 1.5}, "min_rule_share"),
        ({"min_rule_share": True}, "min_rule_share"),
        ({"sentence_threshold": 0.0}, "sentence_threshold"),
        ({"sentence_threshold": "0.5"}, "sentence_threshold"),
    ]:
        with pytest.raises(ValueError, match=f"invalid value for `{name}`"):
            Tokenizer(**params)  # type: ignore[arg-type]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_commands_train_and_tokenize(corpus, tmp_path):
    saved = tmp_path / "tok.omkl"
    status, out, _ = _cli(
        "train", "tokenizer", "--train", str(corpus), "--dev", str(corpus), "--out", str(saved)
    )
    assert status == 0, out
    assert "Tokens 100.00, Sentences 100.00, Words 100.00" in out
    raw = tmp_path / "in.txt"
    raw.write_text(conllu_text(corpus), encoding="utf-8")
    result = tmp_path / "out.conllu"
    status, _, _ = _cli("tokenize", str(saved), str(raw), str(result))
    assert status == 0
    system = tmp_path / "scored.conllu"
    text = result.read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        cells = line.split("\t")
        if len(cells) == 10 and cells[0].isdigit():
            cells[6], cells[7] = ("0", "root") if cells[0] == "1" else ("1", "dep")
        lines.append("\t".join(cells))
    system.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert evaluate(corpus, system)["Words"].f1 == 1.0


def test_the_commands_fail_on_one_line_with_status_2(model, corpus, tmp_path):
    saved = tmp_path / "tok.omkl"
    model.save(saved)
    bad_utf8 = tmp_path / "bad.txt"
    bad_utf8.write_bytes(b"The dog \xff runs.")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    out = str(tmp_path / "out.conllu")
    untexted = tmp_path / "untexted.conllu"
    untexted.write_text(_row(1, "Hi") + "\n\n", encoding="utf-8")
    cases = [
        (("tokenize", str(saved), str(tmp_path / "missing.txt"), out), "missing.txt"),
        (("tokenize", str(saved), str(bad_utf8), out), "not valid UTF-8"),
        (("tokenize", str(saved), str(blank), out), "no text in it"),
        (("tokenize", str(corpus), str(blank), out), str(corpus)),
        (("tokenize", str(saved), str(blank), "/no/such/dir/out.conllu"), "No such directory"),
        (("train", "tokenizer", "--train", str(untexted), "--out", out), "# text"),
    ]
    for argv, expected in cases:
        status, _, err = _cli(*argv)
        assert status == 2, argv
        assert err.count("\n") == 1 and err.startswith("omkl: error: "), err
        assert expected in err, err
    assert not pathlib.Path(out).exists()


def _first_sentences(path: pathlib.Path, n: int, into: pathlib.Path) -> pathlib.Path:
    blocks = path.read_text(encoding="utf-8").split("\n\n")[:n]
    into.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return into


@pytest.mark.skipif(not EWT.is_dir(), reason="no UD English-EWT in ../shared/data")
def test_ud_english_ewt(tmp_path):
    train = _first_sentences(EWT / "en_ewt-ud-train.conllu", 2000, tmp_path / "train.conllu")
    dev = _first_sentences(EWT / "en_ewt-ud-dev.conllu", 600, tmp_path / "dev.conllu")
    model = Tokenizer().fit(train)
    scores = model.score(dev)
    assert scores["Tokens"] > 97.0, scores
    assert scores["Sentences"] > 70.0, scores
    assert scores["Words"] > 96.5, scores
    out = model.tokenize(conllu_text(dev))
    assert detokenize(out) == conllu_text(dev)
