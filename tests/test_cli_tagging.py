"""``omkl train tagger`` and ``omkl tag`` end to end on tiny files."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import subprocess
import sys

import pytest

from omkl.cli import main
from omkl.cli_tagging import PARSED, TAGGED
from omkl.datasets import ConlluDocument, read_sentences, read_text
from omkl.parsing import read_conllu

TREEBANK = """\
# sent_id = a
1\tThe\tthe\tDET\tDT\tDefinite=Def|PronType=Art\t2\tdet\t_\t_
2\tdogs\tdog\tNOUN\tNNS\tNumber=Plur\t3\tnsubj\t_\t_
3\tran\trun\tVERB\tVBD\tMood=Ind|Tense=Past|VerbForm=Fin\t0\troot\t_\t_

1\tA\ta\tDET\tDT\tDefinite=Ind|PronType=Art\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_
3\tsleeps\tsleep\tVERB\tVBZ\tMood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin\t0\troot\t_\t_

"""


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    folder = tmp_path_factory.mktemp("cli")
    train = folder / "train.conllu"
    train.write_text(TREEBANK * 4)
    path = folder / "model.omkl"
    status, out = run(
        "train", "tagger", "--train", str(train), "--dev", str(train), "--out", str(path),
        "--epochs", "4", "--folds", "2",
    )  # fmt: skip
    assert status == 0
    assert "UPOS 100.00" in out and "Lemma 100.00" in out
    return path


def gold() -> list[list[dict[str, object]]]:
    return [
        [{"form": "The", "lemma": "the", "upos": "DET", "xpos": "DT"},
         {"form": "dogs", "lemma": "dog", "upos": "NOUN", "xpos": "NNS"},
         {"form": "ran", "lemma": "run", "upos": "VERB", "xpos": "VBD"}],
        [{"form": "A", "lemma": "a", "upos": "DET", "xpos": "DT"},
         {"form": "cat", "lemma": "cat", "upos": "NOUN", "xpos": "NN"},
         {"form": "sleeps", "lemma": "sleep", "upos": "VERB", "xpos": "VBZ"}],
    ]  # fmt: skip


def check(path: pathlib.Path) -> None:
    sents = read_conllu(path)
    assert len(sents) == 2
    for sent, want in zip(sents, gold(), strict=True):
        assert [t["id"] for t in sent] == [1, 2, 3] or [str(t["id"]) for t in sent] == [
            "1",
            "2",
            "3",
        ]
        for t, w in zip(sent, want, strict=True):
            assert {k: t[k] for k in w} == w
            assert t["head"] is None and t["feats"] != "_"


def test_tag_conllu_with_id_and_form_only(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "in.conllu"
    rows = [[(1, "The"), (2, "dogs"), (3, "ran")], [(1, "A"), (2, "cat"), (3, "sleeps")]]
    src.write_text(
        "".join("".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, w in s) + "\n" for s in rows)
    )
    out = tmp_path / "out.conllu"
    status, text = run("tag", str(model), str(src), str(out))
    assert status == 0 and "tagged 2 sentences" in text
    check(out)


def test_tag_text(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("The dogs ran\n\n  A cat   sleeps \n")
    out = tmp_path / "out.conllu"
    assert run("tag", str(model), str(src), str(out))[0] == 0
    check(out)
    # the format flag wins over the suffix
    odd = tmp_path / "in.conllu"
    odd.write_text("The dogs ran\nA cat sleeps\n")
    out2 = tmp_path / "out2.conllu"
    assert run("tag", str(model), str(odd), str(out2), "--input-format", "text")[0] == 0
    assert out2.read_text() == out.read_text()


def test_malformed_conllu_names_file_and_line(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdogs\n\n")
    out = tmp_path / "out.conllu"
    with pytest.raises(ValueError, match=r"bad\.conllu:2"):
        run("tag", str(model), str(bad), str(out))
    assert not out.exists()
    with pytest.raises(ValueError, match=r"bad\.conllu:2"):
        run("train", "tagger", "--train", str(bad), "--out", str(tmp_path / "m.omkl"))
    assert not (tmp_path / "m.omkl").exists()


def test_bad_inputs(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        run("tag", str(model), str(tmp_path / "missing.txt"), str(tmp_path / "o.conllu"))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin\.txt:2: not valid UTF-8"):
        read_text(latin)
    with pytest.raises(ValueError, match="`input_format`"):
        read_sentences(latin, "xml")
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    with pytest.raises(ValueError, match="not-a-model"):
        (tmp_path / "not-a-model").write_bytes(b"junk")
        run("tag", str(tmp_path / "not-a-model"), str(src), str(tmp_path / "o.conllu"))
    # an empty input, or one of comments and blank lines only, is refused and
    # no output is written
    for name, text in [("empty.txt", ""), ("blank.txt", "\n \n"), ("notes.conllu", "# c\n\n")]:
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=rf"{name}: no sentence in it"):
            run("tag", str(model), str(tmp_path / name), str(tmp_path / "o.conllu"))
    assert not (tmp_path / "o.conllu").exists()


def test_commands_that_reproduce_nothing_import_no_experiment(model: pathlib.Path) -> None:
    """``omkl tag`` starts without importing the experiments (and the river
    datasets and scikit-learn they pull in); ``omkl reproduce X`` imports X
    only."""
    import subprocess
    import sys

    text = model.parent / "in.txt"
    text.write_text("The dogs ran\n")
    probe = (
        "import contextlib, sys; from omkl.cli import main\n"
        "with contextlib.suppress(SystemExit): main(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.startswith('omkl.experiments.')))"
    )
    for argv, expected in (
        (["tag", str(model), str(text), str(model.parent / "out.conllu")], "[]"),
        (["reproduce", "ocr", "--help"], "['omkl.experiments.ocr']"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=False
        )
        assert out.stdout.strip().splitlines()[-1] == expected, (out.stdout, out.stderr)


def _omkl(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m omkl ARGV`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "omkl", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_errors_are_one_line_and_exit_code_2(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from omkl.cli import run as omkl_run

    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdogs\n\n")
    junk = tmp_path / "junk.omkl"
    junk.write_bytes(b"junk")
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    out = str(tmp_path / "out.conllu")
    cases = [
        (["tag", str(model), str(tmp_path / "missing.txt"), out], "missing.txt"),
        (["tag", str(model), str(bad), out], "bad.conllu:2"),
        (["tag", str(junk), str(src), out], "junk.omkl"),
        (["tag", str(model), str(src), str(tmp_path / "no" / "out.conllu")], "No such directory"),
        (["parse", str(model), str(src), str(tmp_path)], "Is a directory"),
        # the output is checked before the training file is even read
        (["train", "parser", "--train", "/no/train", "--out", "/no/dir/m.omkl"], "/no/dir/m.omkl"),
    ]
    for argv, named in cases:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert omkl_run(argv) == 2, argv
        line = err.getvalue()
        assert line.startswith("omkl: error: ") and line.count("\n") == 1, line
        assert named in line, (named, line)
        assert not pathlib.Path(out).exists()
    # the command itself, and --debug for the traceback
    child = _omkl("tag", str(model), str(bad), out)
    assert child.returncode == 2 and child.stderr.count("\n") == 1, child.stderr
    child = _omkl("--debug", "tag", str(model), str(bad), out)
    assert child.returncode == 1 and "Traceback" in child.stderr


def test_dash_is_stdin_and_stdout(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    child = _omkl("tag", str(model), "-", "-", stdin="The dogs ran\n")
    assert child.returncode == 0, child.stderr
    assert "tagged 1 sentences into -" in child.stderr
    rows = [line.split("\t") for line in child.stdout.splitlines() if line and line[0] != "#"]
    assert [r[1] for r in rows] == ["The", "dogs", "ran"]
    # CoNLL-U on stdin is recognised by its content
    conllu = "".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, w in enumerate(["A", "cat"], 1))
    child = _omkl("tag", str(model), "-", "-", stdin=conllu + "\n")
    assert child.returncode == 0, child.stderr
    assert [r.split("\t")[1] for r in child.stdout.splitlines() if r and r[0] != "#"] == [
        "A",
        "cat",
    ]


def test_help_shows_the_defaults() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["train", "parser", "--help"])
    text = " ".join(out.getvalue().split())
    for shown in ("(default: 5)", "(default: 15)", "(default: 10)", "(default: auto)"):
        assert shown in text, shown
    assert "(default: None)" not in text


EWT_TEST = (
    pathlib.Path(__file__).resolve().parents[1]
    / ".."
    / "shared"
    / "data"
    / "ud-english-ewt"
    / "en_ewt-ud-test.conllu"
)


@pytest.mark.parametrize("columns", [TAGGED, PARSED])
def test_a_conllu_document_keeps_all_but_the_predicted_columns(columns, tmp_path) -> None:
    """All of EWT test (comments, 354 multiword tokens, MISC, DEPS) written
    back with every predicted column changed: the other lines and columns
    are the input's, byte for byte."""
    if not EWT_TEST.exists():
        pytest.skip(f"{EWT_TEST} not found")
    doc = ConlluDocument.read(EWT_TEST)
    predicted = [
        [{c: (1 if c == "head" else f"P{k}") for c in columns} for k, _ in enumerate(s)]
        for s in doc.sentences
    ]
    out = tmp_path / "out.conllu"
    out.write_text(doc.format(predicted, columns), encoding="utf-8")
    want = EWT_TEST.read_text(encoding="utf-8-sig").splitlines()
    got = out.read_text(encoding="utf-8").splitlines()
    assert len(got) == len(want)
    assert sum(bool(re.fullmatch(r"\d+-\d+", line.split("\t")[0])) for line in got) == 354
    at = {
        ["id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel"].index(c) for c in columns
    }
    changed = 0
    for w, g in zip(want, got, strict=True):
        if not w.split("\t", 1)[0].isdigit():
            assert g == w
            continue
        wc, gc = w.split("\t"), g.split("\t")
        assert len(gc) == 10
        assert [x for i, x in enumerate(wc) if i not in at] == [
            x for i, x in enumerate(gc) if i not in at
        ]
        changed += all(gc[i].startswith("P") or gc[i] == "1" for i in at)
    assert changed == sum(map(len, doc.sentences)) == 25094


def test_tag_keeps_the_lines_and_columns_it_does_not_predict(
    model: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    lines = [
        "# sent_id = first",
        "# text = The dogs ran",
        "1\tThe\t_\t_\t_\t_\t2\tdet\t2:det\t_",
        "2\tdogs\t_\t_\t_\t_\t3\tnsubj\t3:nsubj\tGloss=dog",
        "2.1\tgo\t_\t_\t_\t_\t_\t_\t3:conj\t_",
        "3\tran\t_\t_\t_\t_\t0\troot\t0:root\tSpaceAfter=No",
    ]
    src = tmp_path / "in.conllu"
    src.write_text("\n".join(lines) + "\n\n")
    out = tmp_path / "out.conllu"
    assert run("tag", str(model), str(src), str(out))[0] == 0
    got = out.read_text().split("\n")
    assert got[:2] == lines[:2] and got[4] == lines[4] and got[-2:] == ["", ""]
    want = [(2, "The", "the", "DET"), (3, "dogs", "dog", "NOUN"), (5, "ran", "run", "VERB")]
    for i, form, lemma, upos in want:
        cells, source = got[i].split("\t"), lines[i].split("\t")
        assert cells[1:4] == [form, lemma, upos]
        assert cells[6:] == source[6:]  # HEAD, DEPREL, DEPS and MISC as read


def test_train_tagger_shows_progress_when_asked(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.conllu"
    train.write_text(TREEBANK * 2)
    out = tmp_path / "m.omkl"
    args = ("train", "tagger", "--train", str(train), "--out", str(out), "--epochs", "1")
    assert main([*args, "--folds", "2", "--progress"]) == 0
    assert "7/7" in capsys.readouterr().err
    assert main([*args, "--folds", "2", "--no-progress"]) == 0
    assert "7/7" not in capsys.readouterr().err
