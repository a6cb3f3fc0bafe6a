"""The weight of the text pipeline that ``omkl train parser`` makes (a
:class:`~omkl.MorphologyTagger`, the jackknife and a stacked
:class:`~omkl.DependencyParser` in a :class:`~omkl.TextParser`), on UD
English-EWT, Greek-GDT and Gothic-PROIEL with gold tokenisation (read from
``../shared/data/``; a missing treebank is skipped with a message), for this
checkout's omkl and, with ``--baseline-python``, another omkl in the same run.

For each treebank and each side, every measurement is a child process of
that side's Python (run in an empty directory), so that its peak memory (from
``os.wait4``, as in ``compare_previous.py``) and its start-up are real:

1. training: ``python -m omkl train parser --train PREFIX --out MODEL`` on
   the first ``--train-sentences`` sentences of the training file (default:
   all), with ``--tagger-epochs``, ``--epochs`` and ``--folds`` when given
   (the command's defaults otherwise: 15, 5 and 10): wall and CPU seconds,
   peak resident memory, and the size of the model file;
2. cold start: ``python -m omkl parse MODEL five.txt OUT --input-format
   text`` on the first five sentences of the test file as pre-tokenised
   text (one sentence a line, the words separated by spaces): wall and
   CPU seconds and peak memory, the median (and the best wall time) of
   ``--repeats`` runs, the two sides taking turns;
3. loading: a child that imports omkl, loads the model with
   ``TextParser.load`` and reads its own resident memory (``VmRSS``) after
   each step, and its peak while loading;
4. speed, on one core (``RAYON_NUM_THREADS``, ``OMP_NUM_THREADS`` and
   ``OPENBLAS_NUM_THREADS`` set to 1): ``TextParser.tag`` (UPOS, XPOS, FEATS
   and LEMMA) of the test file's word forms in words/s, and
   ``TextParser.predict`` (tagging and parsing) in sentences/s, medians of
   ``--repeats`` passes after a warm-up on 50 sentences;
5. accuracy on the test file: ``TextParser.score`` (UPOS, XPOS, UFeats,
   AllTags and Lemma over all words; UAS and LAS over the words whose gold
   UPOS is not ``PUNCT``, with the full relation, subtype included), and the
   same predictions under the CoNLL 2018 shared task's metric (every word,
   punctuation included; LAS on the universal part of the relation; UFeats
   on the universal features only; a gold lemma ``_`` matches any lemma).
   With gold tokenisation its F1 scores are accuracies, and its UPOS and XPOS
   are the pipeline's.

The peer, in the same run and on the current side only: python-crfsuite
(``bench_tagging.crfsuite_upos``: L-BFGS, c1 = 0.1, c2 = 0.01, 100
iterations) and omkl's averaged ``TextTagger`` (``bench_tagging.text_tagger``,
``--tagger-epochs`` epochs, default 15), each trained on the UPOS of the same
training sentences with ``token_features`` and tagging the test file on one
core (features computed beforehand, not timed): UPOS accuracy, training
seconds, tokens/s and model file size. The pipeline's UPOS stage reads more
than these features (ambiguity classes, the first XPOS stage), so the peer
bounds what tagging one column costs, not what the pipeline's UPOS costs.

Each treebank gets a Markdown table: the measure, the current side, the
baseline, the ratio current/baseline (the difference in points for
accuracies) and the target of issue 37 with ``met``/``missed`` for the
current side. The training targets (900 s, 3 GB) are for the whole training
file with the default options; on a prefix or other options they are shown
but not judged. MB are 2^20 bytes. Child logs are kept in
``target/bench_pipeline/<time>/`` (the models and data files are removed at
the end unless ``--keep``); ``--from-json FILE`` prints the tables of a run
saved with ``--json FILE`` again. On a shared machine the one-core child
may get less than a core: the rates per CPU second (the wall-clock rate
divided by the child's CPU seconds per wall second) show the code's speed.

Run from the repository root (``PYTHONPATH=python`` when omkl is not
installed; the current side's children inherit it, the baseline's do not)::

    PYTHONPATH=python python benches/bench_pipeline.py --treebank ewt \\
        --train-sentences 300 --tagger-epochs 2 --epochs 1 --folds 2
    PYTHONPATH=python python benches/bench_pipeline.py --train-sentences 1000 \\
        --tagger-epochs 5 --epochs 2 --folds 2 --baseline-python ../prev-venv/bin/python \\
        --json pipe.json --markdown pipe.md
    PYTHONPATH=python python benches/bench_pipeline.py --treebank ewt   # whole EWT: > 1 hour

With ``--raw-text``, both systems start from the raw text of the test file
instead (rebuilt from its ``# text`` comments, paragraphs and
``SpaceAfter=No`` by :func:`omkl.tokenizer.conllu_text`), as ``udpipe
--tokenize --tag --parse``: after the training of step 1 (whose ``omkl train
parser`` trains a tokenizer too), each side's ``TextParser.parse_text``
tokenises, tags and parses it, and the peer is UDPipe 1 (``ufal.udpipe``,
when installed): trained on the same training sentences (tokenizer, tagger
and parser, its default options, or ``--udpipe-iterations`` epochs of each),
then ``Pipeline(model, "tokenize", DEFAULT, DEFAULT, "conllu")`` on the same
text. Both outputs are scored by ``omkl.evaluate`` (the CoNLL 2018 metric,
with words aligned by their characters): Tokens, Sentences, Words, UPOS,
XPOS, UFeats, AllTags, Lemmas, UAS and LAS F1. Steps 2 to 5 and the UPOS
peer are left out. ``--test-sentences N`` keeps the first N sentences of the
test file, in either mode::

    PYTHONPATH=python python benches/bench_pipeline.py --raw-text --treebank ewt \\
        --train-sentences 300 --test-sentences 100 --tagger-epochs 2 --epochs 1 --folds 2 \\
        --udpipe-iterations 1

``--baseline-python`` is a Python in which another omkl is installed, such as
the ``target/compare/<hash>/venv/bin/python`` that ``compare_previous.py``
builds for a previous commit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from compare_previous import ChildFailed, Side, failure, log, run_measured

BENCHES = pathlib.Path(__file__).resolve().parent
ROOT = BENCHES.parent
DATA = ROOT.parent / "shared" / "data"
RUNS = ROOT / "target" / "bench_pipeline"

#: --treebank name -> (display name, folder under DATA, file prefix)
TREEBANKS = {
    "ewt": ("UD English-EWT", "ud-english-ewt", "en_ewt"),
    "greek": ("UD Greek-GDT", "ud-greek-gdt", "el_gdt"),
    "gothic": ("UD Gothic-PROIEL", "ud-gothic-proiel", "got_proiel"),
}

# the targets of issue 37
MODEL_MB_MAX = 100.0
LOAD_RSS_MB_MAX = 500.0
COLD_S_MAX = 2.0
TAG_WORDS_MIN = 100_000.0
PARSE_SENTENCES_MIN = 2_000.0
TRAIN_S_MAX = 900.0
TRAIN_RSS_MB_MAX = 3 * 1024.0

#: environment of the one-core children
ONE_CORE = {"RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

#: the universal features, the only ones the CoNLL 2018 metric's UFeats compares
UNIVERSAL_FEATURES = frozenset(
    "PronType NumType Poss Reflex Foreign Abbr Gender Animacy Number Case Definite Degree "
    "VerbForm Mood Tense Aspect Voice Evident Polarity Person Polite".split()
)

#: (key of TextParser.score, label)
PIPELINE_SCORES = (
    ("upos", "UPOS"),
    ("xpos", "XPOS"),
    ("feats", "UFeats"),
    ("alltags", "AllTags"),
    ("lemma", "Lemma"),
    ("uas", "UAS (no punct., full relation)"),
    ("las", "LAS (no punct., full relation)"),
)
#: the CoNLL 2018 scores that can differ from the pipeline's
CONLL18_SCORES = ("UFeats", "AllTags", "Lemmas", "UAS", "LAS")
#: the CoNLL 2018 scores of ``--raw-text``
RAW_SCORES = (
    "Tokens",
    "Sentences",
    "Words",
    "UPOS",
    "XPOS",
    "UFeats",
    "AllTags",
    "Lemmas",
    "UAS",
    "LAS",
)


# --------------------------------------------------------------------------
# workloads run in a child process by each side's Python (``--child NAME``)


def vm_rss_mb() -> float:
    """The process's resident memory now (``VmRSS``), in MB; its peak so
    far where ``/proc`` is missing."""
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_info(args: argparse.Namespace) -> dict[str, Any]:
    """Where omkl comes from, and a first import of what ``python -m omkl``
    imports, so that writing bytecode is not timed."""
    import platform

    import omkl
    from omkl import cli, pipeline  # noqa: F401

    cli.build_parser()
    return {
        "omkl_file": omkl.__file__,
        "version": omkl.__version__,
        "python_version": platform.python_version(),
    }


def child_load(args: argparse.Namespace) -> dict[str, Any]:
    start = vm_rss_mb()
    t0 = time.perf_counter()
    from omkl.pipeline import TextParser

    imported, import_s = vm_rss_mb(), time.perf_counter() - t0
    t0 = time.perf_counter()
    model = TextParser.load(args.model)
    load_s = time.perf_counter() - t0
    out = {
        "rss_start_mb": start,
        "rss_import_mb": imported,
        "rss_loaded_mb": vm_rss_mb(),
        "peak_rss_loaded_mb": peak_rss_mb(),
        "import_s": import_s,
        "load_s": load_s,
    }
    del model
    return out


def conll18_scores(
    gold: Sequence[Sequence[dict[str, Any]]], pred: Sequence[Sequence[dict[str, Any]]]
) -> dict[str, float]:
    """The CoNLL 2018 shared task's scores (``conll18_ud_eval.py``) of
    ``pred`` against ``gold`` with the same words, in percent: every word
    counts, punctuation included; UFeats compares the universal features
    only, LAS the universal part of the relation (before ``:``); a gold
    lemma ``_`` matches any lemma.

    >>> g = [[{"upos": "X", "xpos": "X", "feats": "Typo=Yes|Number=Sing", "lemma": "_",
    ...        "head": 0, "deprel": "root"},
    ...       {"upos": "PUNCT", "xpos": ".", "feats": "_", "lemma": ".", "head": 1,
    ...        "deprel": "punct"}]]
    >>> p = [[{**g[0][0], "feats": "Number=Sing", "lemma": "x"},
    ...       {**g[0][1], "deprel": "punct:x", "head": 0}]]
    >>> s = conll18_scores(g, p); s["UFeats"], s["Lemmas"], s["UAS"], s["LAS"]
    (100.0, 100.0, 50.0, 50.0)
    """

    def ufeats(feats: Any) -> str:
        items = str(feats or "_").split("|")
        return "|".join(sorted(f for f in items if f.split("=", 1)[0] in UNIVERSAL_FEATURES))

    hits = dict.fromkeys(("UPOS", "XPOS", *CONLL18_SCORES), 0)
    total = 0
    for gs, ps in zip(gold, pred, strict=True):
        for g, p in zip(gs, ps, strict=True):
            upos, xpos = g["upos"] == p["upos"], g["xpos"] == p["xpos"]
            feats = ufeats(g["feats"]) == ufeats(p["feats"])
            head = g["head"] == p["head"]
            hits["UPOS"] += upos
            hits["XPOS"] += xpos
            hits["UFeats"] += feats
            hits["AllTags"] += upos and xpos and feats
            hits["Lemmas"] += g["lemma"] == "_" or g["lemma"] == p["lemma"]
            hits["UAS"] += head
            rel_g, rel_p = (str(t["deprel"]).split(":")[0] for t in (g, p))
            hits["LAS"] += head and rel_g == rel_p
            total += 1
    return {k: 100.0 * v / total for k, v in hits.items()}


def _median_pass(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, float]:
    """``fn()``'s last result and the median wall and CPU seconds of
    ``repeats`` calls."""
    walls, cpus = [], []
    out = None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return out, statistics.median(walls), statistics.median(cpus)


def child_speed(args: argparse.Namespace) -> dict[str, Any]:
    from omkl.parsing import read_conllu
    from omkl.pipeline import TextParser

    model = TextParser.load(args.model)
    gold = read_conllu(args.test)
    bare = [[{"id": t["id"], "form": t["form"]} for t in s] for s in gold]
    words = sum(map(len, bare))
    model.predict(bare[:50])  # warm-up
    _, tag_s, tag_cpu = _median_pass(lambda: model.tag(bare), args.repeats)
    pred, parse_s, parse_cpu = _median_pass(lambda: model.predict(bare), args.repeats)
    return {
        "sentences": len(bare),
        "words": words,
        "tag_words_per_s": words / tag_s,
        "tag_cpu_per_wall": tag_cpu / tag_s,
        "predict_sentences_per_s": len(bare) / parse_s,
        "predict_words_per_s": words / parse_s,
        "predict_cpu_per_wall": parse_cpu / parse_s,
        "score": model.score(args.test),
        "conll18": conll18_scores(gold, pred),
    }


def child_peer(args: argparse.Namespace) -> dict[str, Any]:
    import bench_tagging

    from omkl.parsing import read_conllu
    from omkl.tagging import token_features

    train, test = read_conllu(args.train), read_conllu(args.test)
    X = [token_features([t["form"] for t in s]) for s in train]
    Xt = [token_features([t["form"] for t in s]) for s in test]
    Y = [[t["upos"] for t in s] for s in train]
    Yt = [[t["upos"] for t in s] for s in test]
    tokens = sum(map(len, Yt))
    out: dict[str, Any] = {"train_tokens": sum(map(len, Y)), "test_tokens": tokens}
    with tempfile.TemporaryDirectory() as tmp:
        crf = bench_tagging.crfsuite_upos(X, Y, Xt, pathlib.Path(tmp) / "upos.crfsuite")
        if crf is not None:
            out["crfsuite"] = {
                "upos": bench_tagging.accuracy(crf["pred"], Yt),
                "train_s": crf["train_s"],
                "tokens_per_s": tokens / crf["tag_s"],
                "model_bytes": crf["model_bytes"],
            }
        tagger = bench_tagging.text_tagger()
        epochs = args.tagger_epochs or 15
        t0 = time.perf_counter()
        tagger.fit(X, Y, epochs=epochs, shuffle=True)
        train_s = time.perf_counter() - t0
        pred, tag_s, _ = _median_pass(lambda: tagger.predict(Xt), 1)
        path = pathlib.Path(tmp) / "upos.omkl"
        tagger.save(path)
        out["text_tagger"] = {
            "upos": bench_tagging.accuracy([[str(t) for t in s] for s in pred], Yt),
            "train_s": train_s,
            "tokens_per_s": tokens / tag_s,
            "model_bytes": path.stat().st_size,
            "epochs": epochs,
        }
    return out


def _f1(gold: str, system: pathlib.Path) -> dict[str, float]:
    """The :data:`RAW_SCORES` F1 in percent of ``system`` against ``gold``."""
    from omkl.evaluate import evaluate

    scores = evaluate(gold, system)
    return {k: 100.0 * scores[k].f1 for k in RAW_SCORES}


def child_rawtext(args: argparse.Namespace) -> dict[str, Any]:
    """``TextParser.parse_text`` of the test file's raw text, scored."""
    from omkl.pipeline import TextParser
    from omkl.tokenizer import conllu_text

    model = TextParser.load(args.model)
    text = conllu_text(args.test)
    t0 = time.perf_counter()
    out = model.parse_text(text)
    seconds = time.perf_counter() - t0
    system = pathlib.Path(args.result).with_suffix(".conllu")
    system.write_text(out, encoding="utf-8")
    return {"scores": _f1(args.test, system), "parse_s": seconds, "chars": len(text)}


def child_udpipe(args: argparse.Namespace) -> dict[str, Any]:
    """UDPipe 1 trained on the training file (tokenizer, tagger and parser)
    and run on the test file's raw text, scored; ``{"missing": ...}`` when
    ``ufal.udpipe`` is not installed."""
    try:
        from ufal import udpipe  # type: ignore[import-not-found]
    except ImportError as e:
        return {"missing": str(e)}
    from omkl.tokenizer import conllu_text

    fmt = udpipe.InputFormat.newConlluInputFormat()
    fmt.setText(pathlib.Path(args.train).read_text(encoding="utf-8"))
    sentences = udpipe.Sentences()
    error = udpipe.ProcessingError()
    s = udpipe.Sentence()
    while fmt.nextSentence(s, error):
        sentences.push_back(s)
        s = udpipe.Sentence()
    if error.occurred():
        raise RuntimeError(error.message)
    n = args.udpipe_iterations
    options = (
        (f"epochs={n}", f"iterations={n}", f"iterations={n}")
        if n
        else (udpipe.Trainer.DEFAULT,) * 3
    )
    t0 = time.perf_counter()
    data = udpipe.Trainer.train(
        "morphodita_parsito", sentences, udpipe.Sentences(), *options, error
    )
    train_s = time.perf_counter() - t0
    if error.occurred():
        raise RuntimeError(error.message)
    result = pathlib.Path(args.result)
    path = result.with_suffix(".udpipe")
    path.write_bytes(data.encode("latin-1") if isinstance(data, str) else data)
    model = udpipe.Model.load(str(path))
    pipeline = udpipe.Pipeline(
        model, "tokenize", udpipe.Pipeline.DEFAULT, udpipe.Pipeline.DEFAULT, "conllu"
    )
    text = conllu_text(args.test)
    t0 = time.perf_counter()
    out = pipeline.process(text, error)
    parse_s = time.perf_counter() - t0
    if error.occurred():
        raise RuntimeError(error.message)
    system = result.with_suffix(".conllu")
    system.write_text(out, encoding="utf-8")
    return {
        "scores": _f1(args.test, system),
        "train_s": train_s,
        "parse_s": parse_s,
        "model_mb": path.stat().st_size / 2**20,
        "options": list(options),
    }


CHILDREN = {
    "info": child_info,
    "load": child_load,
    "speed": child_speed,
    "peer": child_peer,
    "rawtext": child_rawtext,
    "udpipe": child_udpipe,
}


def child_main(args: argparse.Namespace) -> int:
    out = CHILDREN[args.child](args)
    pathlib.Path(args.result).write_text(json.dumps(out))
    return 0


# --------------------------------------------------------------------------
# the parent: files, sides and measurements


def side_env(side: Side, one_core: bool = False) -> dict[str, str]:
    """The environment of ``side``'s children: the current side keeps this
    process's ``PYTHONPATH`` (made absolute, as the children run elsewhere),
    the baseline has none. Both may write and read cached bytecode
    (``PYTHONDONTWRITEBYTECODE`` is dropped): an installed wheel has it, and
    a checkout that may not write it would compile every module of omkl at
    each start, which a cold start would count."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    path = env.pop("PYTHONPATH", "")
    if side.name == "current" and path:
        env["PYTHONPATH"] = os.pathsep.join(
            str(pathlib.Path(p).resolve()) for p in path.split(os.pathsep) if p
        )
    if one_core:
        env.update(ONE_CORE)
    return env


def measure(
    side: Side,
    argv: list[str],
    logfile: pathlib.Path,
    one_core: bool = False,
) -> dict[str, float]:
    """Runs ``side``'s Python with ``argv`` in an empty directory: its wall
    and CPU seconds and peak resident memory (``ChildFailed`` if it fails)."""
    with tempfile.TemporaryDirectory() as cwd:
        rc, wall, usage = run_measured(
            [str(side.python), *argv], logfile, side_env(side, one_core), cwd
        )
    if rc != 0:
        raise ChildFailed(failure(rc, logfile))
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def run_child(
    side: Side,
    name: str,
    argv: list[str],
    run_dir: pathlib.Path,
    tag: str,
    one_core: bool = False,
) -> dict[str, Any]:
    """The workload ``name`` of this script in ``side``'s Python: its
    result, with the child's wall and CPU seconds and peak memory."""
    result = run_dir / f"{name}-{side.name}-{tag}.json"
    logfile = result.with_suffix(".log")
    argv = [str(pathlib.Path(__file__).resolve()), "--child", name, "--result", str(result), *argv]
    usage = measure(side, argv, logfile, one_core)
    if not result.exists():
        raise ChildFailed(f"no result; log {logfile}")
    return {**json.loads(result.read_text()), **{f"child_{k}": v for k, v in usage.items()}}


def conllu_blocks(path: pathlib.Path) -> list[str]:
    """The sentences of a CoNLL-U file as their text blocks (comments and
    multiword-token lines kept)."""
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    return [b.strip("\n") + "\n" for b in text.split("\n\n") if b.strip()]


def five_sentences(test: pathlib.Path) -> list[list[str]]:
    """The word forms of the first five sentences of ``test`` whose forms
    have no spaces (so that they survive as text)."""
    out = []
    for block in conllu_blocks(test):
        forms = []
        for line in block.splitlines():
            cols = line.split("\t")
            if line.startswith("#") or len(cols) < 2 or not cols[0].isdigit():
                continue
            forms.append(cols[1])
        if forms and not any(" " in f for f in forms):
            out.append(forms)
        if len(out) == 5:
            break
    return out


def attempt(what: str, fn: Callable[..., dict[str, Any]], *argv: Any) -> dict[str, Any]:
    """``fn(*argv)``, or ``{"error": ...}`` after saying that ``what`` failed."""
    try:
        return fn(*argv)
    except ChildFailed as e:
        log(f"  {what} failed: {e}")
        return {"error": str(e)}


def bench_treebank(
    key: str, sides: list[Side], args: argparse.Namespace, run_dir: pathlib.Path, turn: int
) -> dict[str, Any] | None:
    """Every measurement of one treebank on every side (``turn`` picks
    which side trains first)."""
    name, folder, stem = TREEBANKS[key]
    train = DATA / folder / f"{stem}-ud-train.conllu"
    test = DATA / folder / f"{stem}-ud-test.conllu"
    missing = [str(p) for p in (train, test) if not p.exists()]
    if missing:
        log(f"{name} skipped: not found ({', '.join(missing)})")
        return None
    work = run_dir / key
    work.mkdir(parents=True, exist_ok=True)
    if args.test_sentences:
        sliced = work / "test.conllu"
        blocks = conllu_blocks(test)[: args.test_sentences]
        sliced.write_text("\n".join(blocks) + "\n", encoding="utf-8")
        test = sliced
    blocks = conllu_blocks(train)
    subset = blocks[: args.train_sentences] if args.train_sentences else blocks
    prefix = work / "train.conllu"
    prefix.write_text("\n".join(subset), encoding="utf-8")
    words = sum(
        1
        for b in subset
        for line in b.splitlines()
        if line.split("\t", 1)[0].isdigit() and "\t" in line
    )
    five = work / "five.txt"
    five.write_text("".join(" ".join(s) + "\n" for s in five_sentences(test)), encoding="utf-8")
    options = []
    for flag, value in (
        ("--tagger-epochs", args.tagger_epochs),
        ("--epochs", args.epochs),
        ("--folds", args.folds),
    ):
        if value is not None:
            options += [flag, str(value)]
    out: dict[str, Any] = {
        "name": name,
        "train_file": str(train),
        "test_file": str(test),
        "train_sentences": len(subset),
        "train_words": words,
        "whole_file": len(subset) == len(blocks),
        "options": options,
        "sides": {s.name: {} for s in sides},
    }
    order = sides if turn % 2 == 0 else sides[::-1]
    models = {}
    for side in order:
        res = out["sides"][side.name]
        model = work / f"model-{side.name}.omkl"
        log(f"{name}: training on the {side.name} side ({len(subset)} sentences)")
        argv = ["-m", "omkl", "train", "parser", "--train", str(prefix), "--out", str(model)]
        logfile = work / f"train-{side.name}.log"
        what = f"{name} training ({side.name})"
        res["train"] = attempt(what, measure, side, argv + options, logfile)
        if "error" not in res["train"]:
            res["train"]["model_mb"] = model.stat().st_size / 2**20
            models[side.name] = model
    ready = [s for s in sides if s.name in models]
    if args.raw_text:
        return bench_raw_text(out, name, sides[0], ready, models, prefix, test, args, work)
    for r in range(args.repeats):
        for side in ready if r % 2 == 0 else ready[::-1]:
            log(f"{name}: cold omkl parse on the {side.name} side, run {r + 1}/{args.repeats}")
            argv = ["-m", "omkl", "parse", str(models[side.name]), str(five)]
            # horizontal text on either side (--input-format text: the older
            # spelling, which a model with a tokenizer would otherwise not assume)
            argv += [str(work / f"five-{side.name}.conllu"), "--input-format", "text"]
            logfile = work / f"parse-{side.name}-{r}.log"
            what = f"{name} omkl parse ({side.name})"
            runs = out["sides"][side.name].setdefault("cold", [])
            runs.append(attempt(what, measure, side, argv, logfile))
    for step, one_core in (("load", False), ("speed", True)):
        for side in ready:
            log(f"{name}: {step} on the {side.name} side")
            argv = ["--model", str(models[side.name]), "--test", str(test)]
            argv += ["--repeats", str(args.repeats)]
            what = f"{name} {step} ({side.name})"
            out["sides"][side.name][step] = attempt(
                what, run_child, side, step, argv, work, "0", one_core
            )
    if not args.no_peer:
        log(f"{name}: the peer (python-crfsuite and TextTagger on UPOS)")
        argv = ["--train", str(prefix), "--test", str(test)]
        if args.tagger_epochs:
            argv += ["--tagger-epochs", str(args.tagger_epochs)]
        out["peer"] = attempt(f"{name} peer", run_child, sides[0], "peer", argv, work, "0", True)
    return out


def bench_raw_text(
    out: dict[str, Any],
    name: str,
    current: Side,
    ready: list[Side],
    models: dict[str, pathlib.Path],
    prefix: pathlib.Path,
    test: pathlib.Path,
    args: argparse.Namespace,
    work: pathlib.Path,
) -> dict[str, Any]:
    """``--raw-text``: each side's ``parse_text`` of the test file's raw
    text and UDPipe 1's (in the ``current`` side's Python), scored."""
    out["test_file"] = str(test)
    out["test_sentences"] = len(conllu_blocks(test))
    for side in ready:
        log(f"{name}: raw text on the {side.name} side")
        argv = ["--model", str(models[side.name]), "--test", str(test)]
        what = f"{name} raw text ({side.name})"
        out["sides"][side.name]["raw"] = attempt(
            what, run_child, side, "rawtext", argv, work, "0", True
        )
    if not args.no_peer:
        log(f"{name}: UDPipe 1 trained on the same sentences, on the same raw text")
        argv = ["--train", str(prefix), "--test", str(test)]
        argv += ["--udpipe-iterations", str(args.udpipe_iterations or 0)]
        out["udpipe"] = attempt(
            f"{name} UDPipe 1",
            run_child,
            current,
            "udpipe",
            argv,
            work,
            "0",
            True,
        )
    return out


def raw_table(tb: dict[str, Any]) -> list[str]:
    """The ``--raw-text`` table: each omkl side and UDPipe 1."""
    columns: list[tuple[str, dict[str, Any]]] = []
    for side_name, res in tb["sides"].items():
        raw = res.get("raw", {})
        columns.append(
            (
                f"omkl ({side_name})",
                {
                    **raw,
                    "train_s": res.get("train", {}).get("wall_s"),
                    "model_mb": res.get("train", {}).get("model_mb"),
                },
            )
        )
    peer = tb.get("udpipe")
    if peer is not None:
        columns.append(("UDPipe 1", peer))
    lines = [
        "| from raw text (CoNLL 2018 metric, F1 %) | " + " | ".join(c for c, _ in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]

    def cell(res: dict[str, Any], key: str, fmt: str) -> str:
        value = res.get("scores", {}).get(key) if key in RAW_SCORES else res.get(key)
        if value is not None:
            return fmt.format(value)
        if "missing" in res:
            return "not installed"
        return "failed" if "error" in res else "n/a"

    for key in RAW_SCORES:
        lines.append(f"| {key} | " + " | ".join(cell(r, key, "{:.2f}") for _, r in columns) + " |")
    for key, label, fmt in (
        ("train_s", "training, wall s", "{:.1f}"),
        ("parse_s", "tokenising, tagging and parsing the text, s", "{:.2f}"),
        ("model_mb", "model on disk, MB", "{:.1f}"),
    ):
        lines.append(f"| {label} | " + " | ".join(cell(r, key, fmt) for _, r in columns) + " |")
    return lines


# --------------------------------------------------------------------------
# the tables


def _get(res: dict[str, Any], *path: str) -> float | None:
    v: Any = res
    for p in path:
        v = v.get(p) if isinstance(v, dict) else None
    return None if v is None else float(v)


def _value(res: dict[str, Any], path: tuple[str, ...]) -> float | None:
    if path[0] == "cold":
        runs = [r[path[1]] for r in res.get("cold", []) if "error" not in r]
        if not runs:
            return None
        return min(runs) if path[-1] == "best" else statistics.median(runs)
    if path[0] == "per_cpu":  # a wall-clock rate over the child's CPU share
        rate, share = _get(res, "speed", path[1]), _get(res, "speed", path[2])
        return None if rate is None or not share else rate / share
    return _get(res, *path)


#: (label, path in a side's results, format, kind, target, judged only on a
#: whole training file with the default options)
MEASURES: list[tuple[str, tuple[str, ...], str, str, tuple[str, float] | None, bool]] = [
    ("model on disk, MB", ("train", "model_mb"), "{:.1f}", "ratio", ("<=", MODEL_MB_MAX), False),
    (
        "RSS after TextParser.load, MB",
        ("load", "rss_loaded_mb"),
        "{:.0f}",
        "ratio",
        ("<=", LOAD_RSS_MB_MAX),
        False,
    ),
    ("  peak RSS while loading, MB", ("load", "child_peak_rss_mb"), "{:.0f}", "ratio", None, False),
    ("  RSS after import omkl, MB", ("load", "rss_import_mb"), "{:.0f}", "ratio", None, False),
    ("  TextParser.load, s", ("load", "load_s"), "{:.2f}", "ratio", None, False),
    (
        "omkl parse, 5 sentences, cold process, s (median)",
        ("cold", "wall_s", "median"),
        "{:.2f}",
        "ratio",
        ("<=", COLD_S_MAX),
        False,
    ),
    ("  the same, best", ("cold", "wall_s", "best"), "{:.2f}", "ratio", None, False),
    ("  its CPU s (median)", ("cold", "cpu_s", "median"), "{:.2f}", "ratio", None, False),
    (
        "  its peak RSS, MB (median)",
        ("cold", "peak_rss_mb", "median"),
        "{:.0f}",
        "ratio",
        None,
        False,
    ),
    (
        "tagging all columns, words/s, one core",
        ("speed", "tag_words_per_s"),
        "{:,.0f}",
        "ratio",
        (">=", TAG_WORDS_MIN),
        False,
    ),
    (
        "  the same, words per CPU second",
        ("per_cpu", "tag_words_per_s", "tag_cpu_per_wall"),
        "{:,.0f}",
        "ratio",
        None,
        False,
    ),
    (
        "tagging + parsing, sentences/s, one core",
        ("speed", "predict_sentences_per_s"),
        "{:,.0f}",
        "ratio",
        (">=", PARSE_SENTENCES_MIN),
        False,
    ),
    (
        "  the same, sentences per CPU second",
        ("per_cpu", "predict_sentences_per_s", "predict_cpu_per_wall"),
        "{:,.0f}",
        "ratio",
        None,
        False,
    ),
    (
        "training, wall s (2 cores)",
        ("train", "wall_s"),
        "{:.1f}",
        "ratio",
        ("<=", TRAIN_S_MAX),
        True,
    ),
    ("  training, CPU s", ("train", "cpu_s"), "{:.1f}", "ratio", None, True),
    (
        "training, peak RSS MB",
        ("train", "peak_rss_mb"),
        "{:.0f}",
        "ratio",
        ("<=", TRAIN_RSS_MB_MAX),
        True,
    ),
]
MEASURES += [
    (f"{label} % (TextParser.score)", ("speed", "score", k), "{:.2f}", "points", None, False)
    for k, label in PIPELINE_SCORES
]
MEASURES += [
    (f"{k} % (CoNLL 2018 metric)", ("speed", "conll18", k), "{:.2f}", "points", None, False)
    for k in CONLL18_SCORES
]


def table(tb: dict[str, Any], default_options: bool) -> list[str]:
    cur = tb["sides"].get("current", {})
    base = tb["sides"].get("baseline")
    lines = [
        "| measure | current | baseline | current/baseline | target |",
        "|---|---|---|---|---|",
    ]
    for label, path, fmt, kind, target, whole in MEASURES:
        c = _value(cur, path)
        b = None if base is None else _value(base, path)
        cells = ["n/a" if v is None else fmt.format(v) for v in (c, b)]
        if base is None:
            cells[1] = "-"
        if c is None or b is None:
            compare = "-" if base is None else "n/a"
        elif kind == "points":
            compare = f"{c - b:+.2f} pt"
        else:
            compare = f"{c / b:.3f}" if b else "n/a"
        goal = ""
        if target is not None:
            op, limit = target
            goal = f"{'≤' if op == '<=' else '≥'} {limit:,.0f}"
            if whole and not (tb["whole_file"] and default_options):
                goal += " (whole file, defaults: not judged)"
            elif c is not None:
                ok = c <= limit if op == "<=" else c >= limit
                goal += " met" if ok else " **missed**"
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {compare} | {goal} |")
    return lines


def peer_table(tb: dict[str, Any]) -> list[str]:
    peer = tb.get("peer")
    if not peer or "error" in peer:
        return []
    lines = [
        "| UPOS from `token_features`, test file | UPOS % | training s | tokens/s, one core "
        "| model MB |",
        "|---|---|---|---|---|",
    ]
    rows = [
        ("python-crfsuite (L-BFGS, 100 iterations)", peer.get("crfsuite")),
        (
            f"omkl TextTagger ({peer['text_tagger']['epochs']} epochs, averaged)",
            peer.get("text_tagger"),
        ),
    ]
    for label, r in rows:
        if r is None:
            lines.append(f"| {label} | not installed | | | |")
            continue
        lines.append(
            f"| {label} | {r['upos']:.2f} | {r['train_s']:.1f} | {r['tokens_per_s']:,.0f} | "
            f"{r['model_bytes'] / 2**20:.2f} |"
        )
    return lines


def report(
    results: dict[str, Any], sides: list[Side], args: argparse.Namespace, meta: dict[str, Any]
) -> str:
    default_options = args.tagger_epochs is None and args.epochs is None and args.folds is None
    lines = ["omkl text pipeline (`omkl train parser` defaults unless given below)", ""]
    for side in sides:
        lines.append(
            f"- {side.name}: omkl {side.info.get('version')} from {side.info.get('omkl_file')} "
            f"({side.python})"
        )
    opts = (
        f"--tagger-epochs {args.tagger_epochs or '15 (default)'}, "
        f"--epochs {args.epochs or '5 (default)'}, --folds {args.folds or '10 (default)'}"
    )
    lines.append(
        f"- options: {opts}; {args.repeats} runs of each timing; {os.cpu_count()} CPUs; "
        f"load average {meta['load_start']:.2f} at the start, {meta['load_end']:.2f} at the end; "
        f"{meta['seconds']:.0f} s in all"
    )
    lines.append(
        "- TextParser.score counts UAS and LAS over the words whose gold UPOS is not PUNCT, "
        "with full relations; the CoNLL 2018 rows count every word, the universal relation "
        "and the universal features (their UPOS and XPOS equal the pipeline's)"
    )
    for tb in results.values():
        if tb is None:
            continue
        sp = tb["sides"].get("current", {}).get("speed", {})
        lines += [
            "",
            f"### {tb['name']}: {tb['train_sentences']} training sentences "
            f"({tb['train_words']} words{', the whole file' if tb['whole_file'] else ''}); "
            f"test {sp.get('sentences', tb.get('test_sentences', '?'))} sentences "
            f"({sp.get('words', '?')} words)",
            "",
            *(raw_table(tb) if args.raw_text else table(tb, default_options)),
        ]
        peer = peer_table(tb)
        if peer:
            lines += ["", *peer]
        for side_name, res in tb["sides"].items():
            for step, r in res.items():
                runs = r if isinstance(r, list) else [r]
                for x in runs:
                    if "error" in x:
                        lines.append(f"\n{step} failed on the {side_name} side: {x['error']}")
                        break
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--treebank", choices=(*TREEBANKS, "all"), default="all")
    ap.add_argument("--train-sentences", type=int, help="a prefix of the training file")
    ap.add_argument("--tagger-epochs", type=int, help="default: the command's (15)")
    ap.add_argument("--epochs", type=int, help="epochs of the parser; default: the command's (5)")
    ap.add_argument("--folds", type=int, help="jackknife parts; default: the command's (10)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each timing")
    ap.add_argument("--baseline-python", type=pathlib.Path, help="a Python with another omkl")
    ap.add_argument(
        "--no-peer", action="store_true", help="skip the peers (crfsuite, TextTagger, UDPipe 1)"
    )
    ap.add_argument(
        "--raw-text",
        action="store_true",
        help="tokenise, tag and parse the test file's raw text, against UDPipe 1",
    )
    ap.add_argument("--test-sentences", type=int, help="a prefix of the test file")
    ap.add_argument(
        "--udpipe-iterations",
        type=int,
        help="epochs of UDPipe 1's tokenizer, tagger and parser (default: its own)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the models and data files")
    ap.add_argument("--json", type=pathlib.Path, help="also write the results here")
    ap.add_argument("--markdown", type=pathlib.Path, help="also write the tables here")
    ap.add_argument(
        "--from-json", type=pathlib.Path, help="print the tables of a run saved with --json"
    )
    # the children's arguments
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for name in ("train_sentences", "tagger_epochs", "epochs", "test_sentences"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    return args


def rerender(path: pathlib.Path, markdown: pathlib.Path | None) -> int:
    """Prints (and writes to ``markdown``) the tables of a run saved with
    ``--json``."""
    payload = json.loads(path.read_text())
    args = argparse.Namespace(**payload["settings"])
    sides = [
        Side(name, name, pathlib.Path(info["python"]), info)
        for name, info in payload["sides"].items()
    ]
    meta = {k: payload[k] for k in ("load_start", "load_end", "seconds")}
    text = report(payload["treebanks"], sides, args, meta)
    print(text)
    if markdown:
        markdown.write_text(text)
        print(f"wrote {markdown}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    if args.from_json:
        return rerender(args.from_json, args.markdown)
    t0 = time.perf_counter()
    load_start = os.getloadavg()[0]
    run_dir = RUNS / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    sides = [Side("current", "current", pathlib.Path(sys.executable))]
    if args.baseline_python:
        sides.append(Side("baseline", "baseline", args.baseline_python))
    for side in sides:
        try:
            side.info = run_child(side, "info", [], run_dir, "0")
        except ChildFailed as e:
            log(f"omkl does not import on the {side.name} side ({side.python}): {e}")
            return 2
        log(f"{side.name}: omkl {side.info['version']} from {side.info['omkl_file']}")
    keys = list(TREEBANKS) if args.treebank == "all" else [args.treebank]
    results = {
        key: bench_treebank(key, sides, args, run_dir, turn) for turn, key in enumerate(keys)
    }
    meta = {
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
        "seconds": time.perf_counter() - t0,
    }
    text = report(results, sides, args, meta)
    print(text)
    if not args.keep:
        for key in keys:
            for f in (run_dir / key).glob("*"):
                if f.suffix in (".omkl", ".conllu", ".txt"):
                    f.unlink()
    print(f"logs in {run_dir}")
    if args.markdown:
        args.markdown.write_text(text)
        print(f"wrote {args.markdown}")
    if args.json:
        payload = {
            "settings": {
                k: str(v) if isinstance(v, pathlib.Path) else v
                for k, v in vars(args).items()
                if k not in ("child", "result", "model", "train", "test", "from_json")
            },
            "sides": {s.name: {"python": str(s.python), **s.info} for s in sides},
            "treebanks": results,
            **meta,
        }
        args.json.write_text(json.dumps(payload, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
