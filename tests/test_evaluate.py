"""``omkl evaluate``: the CoNLL 2018 shared task's scores, checked against an
independent implementation (udapi's ``eval.Conll18``) on system files made
from the UD test files (EWT, Greek-GDT with its multiword tokens,
Gothic-PROIEL) by changing tags, lemmas, heads and relations, and by
tokenising differently (tokens merged, split, or made multiword); and its
refusals of malformed files, with the file and line named."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from omkl.cli import run
from omkl.evaluate import METRICS, Score, evaluate, format_scores

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
TESTS = [
    DATA / "ud-english-ewt" / "en_ewt-ud-test.conllu",
    DATA / "ud-greek-gdt" / "el_gdt-ud-test.conllu",
    DATA / "ud-gothic-proiel" / "got_proiel-ud-test.conllu",
]
UDAPY = shutil.which("udapy") or str(Path(sys.executable).parent / "udapy")

Row = list[str]


def _blocks(path: Path) -> list[list[str]]:
    """The sentences of a CoNLL-U file, as lists of lines."""
    text = path.read_text(encoding="utf-8").strip("\n")
    return [block.split("\n") for block in text.split("\n\n")]


def _retag(r: Row, rng: random.Random, root: str) -> None:
    """Changes a word's tag, lemma, features, head (to the root, so that a
    tree stays a tree) or relation at random."""
    x = rng.random()
    if x < 0.05:
        r[3] = rng.choice(["NOUN", "VERB", "ADJ", "X"])
    elif x < 0.08:
        r[4] = "XX"
    elif x < 0.11:
        r[5] = "Number=Sing" if r[5] == "_" else "_"
    elif x < 0.14:
        r[2] = r[2] + "x"
    elif x < 0.18 and r[6] != "0" and r[0] != root:
        r[6] = root
    elif x < 0.22:
        r[7] = rng.choice(["dep", "obj", "det", "case", "nsubj:pass"])


def _merge(rows: list[Row], i: int) -> list[Row]:
    """The words at ``i`` and ``i + 1`` (0-based) as one word: it takes the
    head of whichever of the two governs the other (directly or not), and
    the dependents of both."""
    a, b = i + 1, i + 2  # their IDs
    up, h = set(), int(rows[i][6])
    while h:
        up.add(h)
        h = int(rows[h - 1][6])
    merged = list(rows[i])
    merged[1] += rows[i + 1][1]
    if b in up:
        merged[6], merged[7] = rows[i + 1][6], rows[i + 1][7]
    out = []
    for k, r in enumerate([*rows[:i], merged, *rows[i + 2 :]]):
        r = list(r)
        h = int(r[6])
        h = a if h == b else h
        r[0], r[6] = str(k + 1), str(h - 1 if h > b else h)
        out.append(r)
    return out


def _split(rows: list[Row], k: int, cut: int) -> list[Row]:
    """The word at ``k`` split at character ``cut``, the second piece
    depending on the first."""
    first, second = list(rows[k]), list(rows[k])
    first[1], second[1] = rows[k][1][:cut], rows[k][1][cut:]
    second[6], second[7] = str(k + 1), "flat"
    out = [*rows[:k], first, second, *rows[k + 1 :]]
    for j, r in enumerate(out):
        h = int(r[6])
        if j != k + 1 and h > k + 1:
            r[6] = str(h + 1)
        r[0] = str(j + 1)
    return out


def _perturb(lines: list[str], rng: random.Random, retokenise: bool) -> list[str]:
    """One system sentence: columns changed at random (:func:`_retag`);
    with ``retokenise``, in a sentence without multiword tokens or empty
    nodes, also two words merged, one split in two, and two written as a
    multiword token."""
    comments = [x for x in lines if x.startswith("#")]
    rows = [x.split("\t") for x in lines if not x.startswith("#")]
    root = next(r[0] for r in rows if r[0].isdigit() and r[6] == "0")
    for r in rows:
        if r[0].isdigit():
            _retag(r, rng, root)
    # udapi aligns the words of a sentence by their forms, the official
    # metric by their character spans: where a form repeats near a
    # retokenised word, udapi may align it with the wrong occurrence
    # (test_repeated_forms_align_by_their_place), so such sentences keep
    # their tokens
    forms = [r[1].lower() for r in rows]
    if (
        not retokenise
        or len(rows) < 3
        or not all(r[0].isdigit() for r in rows)
        or len(set(forms)) < len(forms)
    ):
        return [*comments, *("\t".join(r) for r in rows)]
    rows = _merge(rows, rng.randrange(len(rows) - 1))
    long = [k for k, r in enumerate(rows) if len(r[1]) >= 2]
    if long:
        k = rng.choice(long)
        rows = _split(rows, k, rng.randrange(1, len(rows[k][1])))
    out = ["\t".join(r) for r in rows]
    j = rng.randrange(len(rows) - 1)
    out.insert(j, "\t".join([f"{j + 1}-{j + 2}", rows[j][1] + rows[j + 1][1]] + ["_"] * 8))
    return [*comments, *out]


def _system(gold: Path, path: Path, seed: int, retokenise: bool) -> None:
    rng = random.Random(seed)
    out = ["\n".join(_perturb(lines, rng, retokenise)) for lines in _blocks(gold)]
    path.write_text("\n\n".join(out) + "\n\n", encoding="utf-8")


def _udapi_counts(gold: Path, system: Path) -> dict[str, tuple[int, int, int, int]]:
    """udapi's (correct, gold, system, aligned) of each metric."""
    out = subprocess.run(
        [UDAPY, "-q", "read.Conllu", "zone=gold", f"files={gold}", "read.Conllu",
         "zone=pred", f"files={system}", "ignore_sent_id=1", "eval.Conll18",
         "print_counts=1"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    counts = {}
    for line in out.splitlines()[2:]:
        name, *nums = (x.strip() for x in line.split("|"))
        counts[name] = tuple(int(x) for x in nums)
    return counts  # type: ignore[return-value]


@pytest.mark.parametrize("retokenise", [False, True])
@pytest.mark.parametrize("gold", TESTS, ids=lambda p: p.parent.name)
def test_the_scores_agree_with_udapi(gold: Path, retokenise: bool, tmp_path: Path) -> None:
    if not gold.exists():
        pytest.skip(f"{gold} not found")
    pytest.importorskip("udapi")
    system = tmp_path / "system.conllu"
    _system(gold, system, seed=7, retokenise=retokenise)
    ours = evaluate(gold, system)
    theirs = _udapi_counts(gold, system)
    assert list(ours) == list(METRICS)
    for name, (correct, n_gold, n_system, aligned) in theirs.items():
        s = ours[name]
        assert (s.gold, s.system) == (n_gold, n_system), name
        if not retokenise:
            assert (s.correct, s.aligned) == (correct, aligned), name
        # udapi aligns the words of a sentence by their forms alone, the
        # official metric by their character spans: the F1 agree to 0.01
        theirs_f1 = 2 * correct / (n_gold + n_system)
        assert abs(100 * s.f1 - 100 * theirs_f1) <= 0.01, (name, s, correct)
    assert ours["Sentences"].f1 == 1.0
    if retokenise:
        assert ours["Tokens"].f1 < 1.0 and ours["Words"].f1 < 1.0
        assert ours["LAS"].f1 < ours["UAS"].f1 < ours["Words"].f1
    else:
        assert ours["Tokens"].f1 == ours["Words"].f1 == 1.0


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


GOLD = (
    "# text = Dogs don't bark.\n"
    "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t4\tnsubj\t_\t_\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tdo\tdo\tAUX\tVBP\tMood=Ind\t4\taux\t_\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
    "4\tbark\tbark\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\tSpaceAfter=No\n"
    "4.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t4:conj\t_\n"
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_\n\n"
)


def test_multiword_tokens_align_by_their_words_and_empty_nodes_are_skipped(tmp_path):
    gold = _write(tmp_path / "gold", GOLD)
    # the system does not split "don't": one word "don't" where gold has two
    system = _write(
        tmp_path / "sys",
        "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t3\tnsubj\t_\t_\n"
        "2\tdon't\tdo\tAUX\tVBP\tMood=Ind\t3\taux\t_\t_\n"
        "3\tbark\tbark\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_\n"
        "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n",
    )
    s = evaluate(gold, system)
    assert (s["Tokens"].correct, s["Tokens"].gold, s["Tokens"].system) == (4, 4, 4)
    assert (s["Words"].correct, s["Words"].gold, s["Words"].system) == (3, 5, 4)
    assert s["UAS"].correct == 3 and s["Sentences"].f1 == 1.0
    assert evaluate(gold, gold)["MLAS"].f1 == 1.0


def test_repeated_forms_align_by_their_place(tmp_path):
    row = "{}\t{}\t{}\tX\tX\t_\t{}\t{}\t_\t_"
    words = [("guþ", 5, "vocative"), ("meins", 1, "nmod"), ("guþ", 5, "vocative"),
             ("meins", 3, "nmod"), ("bilaist", 0, "root")]  # fmt: skip
    gold = _write(
        tmp_path / "gold",
        "\n".join(row.format(i + 1, f, f, h, d) for i, (f, h, d) in enumerate(words)) + "\n\n",
    )
    # the system splits the first "meins" and writes "guþmeins" as one
    # multiword token: the second "guþ meins" is still the gold's second
    sys_words = [("guþ", 6, "vocative"), ("me", 1, "nmod"), ("ins", 2, "flat"),
                 ("guþ", 6, "vocative"), ("meins", 4, "nmod"), ("bilaist", 0, "root")]  # fmt: skip
    lines = [row.format(i + 1, f, f, h, d) for i, (f, h, d) in enumerate(sys_words)]
    lines.insert(3, "4-5\tguþmeins" + "\t_" * 8)
    system = _write(tmp_path / "sys", "\n".join(lines) + "\n\n")
    s = evaluate(gold, system)
    # aligned: the first guþ, the second guþ and meins, bilaist
    assert (s["Words"].correct, s["LAS"].correct, s["CLAS"].aligned) == (4, 4, 4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\ta\ta\tX\tX\t_\t0\troot\t_\n\n", "line 1: expected 10 tab-separated columns, got 9"),
        ("1\ta\ta\tX\tX\t_\t2\troot\t_\t_\n\n", "line 2: HEAD 2 points outside the sentence"),
        (
            "1\ta\ta\tX\tX\t_\t2\tdep\t_\t_\n2\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n\n",
            "line 3: the heads of the sentence ending here form a cycle",
        ),
        (
            "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n2\tb\tb\tX\tX\t_\t0\troot\t_\t_\n\n",
            "more than one root",
        ),
        ("1\ta\ta\tX\tX\t_\tx\troot\t_\t_\n\n", "line 1: HEAD 'x' is not an integer"),
        ("1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n", "does not end with an empty line"),
        ("2\ta\ta\tX\tX\t_\t0\troot\t_\t_\n\n", "line 1: word ID 2, expected 1"),
    ],
)
def test_malformed_files_are_refused_naming_the_file_and_line(tmp_path, text, message):
    bad = _write(tmp_path / "bad.conllu", text)
    with pytest.raises(ValueError, match="bad.conllu") as e:
        evaluate(bad, bad)
    assert message in str(e.value)


def test_files_of_other_texts_are_refused_naming_both(tmp_path):
    gold = _write(tmp_path / "gold", GOLD)
    other = _write(tmp_path / "other", GOLD.replace("bark", "bite"))
    message = r"other: its text differs from .*gold's .* 'ite\.' where the gold file has 'ark\.'"
    with pytest.raises(ValueError, match=message):
        evaluate(gold, other)


def test_the_command_prints_the_table_and_fails_with_one_line(tmp_path, capsys):
    gold = _write(tmp_path / "gold", GOLD)
    assert run(["evaluate", str(gold), str(gold)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Metric     | Precision")
    assert [x.split("|")[0].strip() for x in out[2:]] == list(METRICS)
    assert all("100.00" in x for x in out[2:])
    bad = _write(tmp_path / "bad", "1\ta\n\n")
    assert run(["evaluate", str(gold), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad, line 1" in err[0]
    assert run(["evaluate", str(gold), str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err


def test_scores_of_empty_counts_are_zero():
    s = Score(0, 0, 0, 0)
    assert (s.precision, s.recall, s.f1, s.aligned_accuracy) == (0.0, 0.0, 0.0, 0.0)
    assert "Words" in format_scores({"Words": Score(1, 1, 1, 1)})
