"""No-regression benchmark: this checkout's omkl against a previous commit's, in one run.

Both versions are built as release wheels and installed into virtualenvs of
their own (cached under ``target/compare/``); every workload then runs as a
child process of each side's Python, the sides taking turns (A B, then B A,
...), and the table prints the medians, ratios current/baseline and a
PASS/FLAG verdict per criterion:

* OCR, the default ``omkl reproduce ocr`` (folds 0 and 1; rows linear,
  quadratic, gaussian and mkl_lqg; 20 epochs), read from its ``results.json``:
  accuracy per row (FLAG if it moved by more than 0.2 points) and train
  seconds per fold (FLAG if current/baseline > 1.1);
* the default ``DependencyParser`` on UD English-EWT (trained on the whole
  training file, scored on the test file; skipped with a message when the
  treebank is absent): test UAS (>= 88.1), training sentences/s of the arc
  epochs (>= 1,000) and parsing sentences/s of the test file (>= 3,000,
  median of 3 passes), each also against the baseline (rates: FLAG if
  current/baseline < 1/1.1), and the CPU seconds of training and of one
  parsing pass (<= 1.1);
* ``StandardScaler() | MKLClassifier()`` on river's ImageSegments with
  progressive validation (as in ``bench_mkl_classifier.py``): accuracy
  (>= 0.91) and CPU time per sample (current/baseline <= 1.1); the same
  unbounded model on both sides (a side whose default is the bounded,
  drift-following one passes the earlier default's parameters);
* ``ProximalClassifier`` against river's ``SoftmaxRegression`` (as in
  ``bench_linear.py``): CPU time per sample (<= 1.1) and the speed-up over
  SoftmaxRegression with the scaler's time subtracted (>= 10); the peer's
  own current/baseline ratio shows the machine's drift;
* the CPU seconds (user + sys) and the peak resident memory of each
  workload's child process (from ``os.wait4``), current/baseline <= 1.1.

The small workloads are timed in CPU seconds (wall times are printed too):
on a loaded machine they move far less than wall times. The ``noise``
column is the spread of one side's repeats.

Sides. The baseline is ``--baseline REF`` (default ``70cd72e``): its tree is
exported with ``git archive`` into a temporary directory and built with
``maturin build --release``. The current side is built from this checkout,
uncommitted changes included. Both are cached by the hash of their build
inputs (``rust_core``, ``python``, ``Cargo.*``, ``pyproject.toml``): the
wheel in ``target/compare/<hash>/wheel/`` and a virtualenv with it and its
runtime dependencies (from the package index; the current side pinned to
the baseline's versions) in ``target/compare/<hash>/venv``, so reruns skip
both steps, and two sides with the same build inputs share them.
``--current-python`` or ``--baseline-python`` use an environment in which
omkl is already installed instead. A workload one side cannot run is
reported as ``n/a`` with the path of its log; the other rows still run.
Child logs and results are kept in ``target/compare/runs/<time>/``.

Run from anywhere (needs git, cargo and network access for the first
build; maturin is taken from next to this Python, from PATH, or installed
into ``target/compare/tools``)::

    python benches/compare_previous.py                    # 6-9 min once built
    python benches/compare_previous.py --quick --skip-parser
    python benches/compare_previous.py --baseline v0.1.0 --repeats 3 --json cmp.json

``--quick`` runs OCR on fold 0 only, trains the parser on 2,000 sentences for
2 epochs (its absolute UAS and speed targets then do not apply) and uses one
repeat of the small workloads.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCHES = ROOT / "benches"
CACHE = ROOT / "target" / "compare"
DEFAULT_BASELINE = "70cd72e"
DEFAULT_EWT = ROOT.parent / "shared" / "data" / "ud-english-ewt"
#: paths whose content decides the wheel (the cache key of a build)
BUILD_INPUTS = ("rust_core", "python", "Cargo.toml", "Cargo.lock", "pyproject.toml", ".cargo")
MATURIN = "maturin>=1.9,<2"

# criteria
ACC_POINTS = 0.2
TIME_RATIO = 1.1
MEM_RATIO = 1.1
UAS_MIN = 88.1
TRAIN_RATE_MIN = 1000.0
PARSE_RATE_MIN = 3000.0
MKL_ACC_MIN = 0.91
SOFTMAX_SPEEDUP_MIN = 10.0
QUICK_PARSER_SENTENCES = 2000
QUICK_PARSER_EPOCHS = 2


# --------------------------------------------------------------------------
# workloads, run in a child process by each side's Python (``--child NAME``);
# they import omkl from that side's environment and only its public API


def child_ocr(args: argparse.Namespace) -> dict[str, Any]:
    from omkl.experiments import ocr

    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--out", tmp] + (["--folds", "0"] if args.quick else [])
        t0 = time.perf_counter()
        if hasattr(ocr, "main"):
            rc = ocr.main(argv)
        else:  # an older layout: through the command line
            from omkl import cli

            rc = cli.main(["reproduce", "ocr", *argv])
        wall = time.perf_counter() - t0
        if rc:
            raise RuntimeError(f"omkl reproduce ocr returned {rc}")
        rows = json.loads((pathlib.Path(tmp) / "results.json").read_text())["rows"]
    return {
        "wall_s": wall,
        "rows": {
            name: {
                "accuracy": float(r["accuracy_mean"]),
                "train_s_per_fold": float(r["train_seconds_per_fold"]),
            }
            for name, r in rows.items()
        },
    }


def child_parser(args: argparse.Namespace) -> dict[str, Any]:
    from omkl.parsing import DependencyParser, read_conllu

    ewt = pathlib.Path(args.ewt)
    train, test = str(ewt / "en_ewt-ud-train.conllu"), str(ewt / "en_ewt-ud-test.conllu")
    if args.quick:
        data: Any = read_conllu(train)[:QUICK_PARSER_SENTENCES]
        parser = DependencyParser(epochs=QUICK_PARSER_EPOCHS)
        n_train = len(data)
    else:
        data, parser = train, DependencyParser()
        n_train = len(read_conllu(train))
    t0, c0 = time.perf_counter(), time.process_time()
    parser.fit(data)
    fit_wall, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    history = getattr(parser, "history_", None) or []
    arc_s = sum(h["seconds"] for h in history) if history else fit_wall
    epochs = len(history) or parser.epochs
    uas = float(parser.score(test)["uas"])
    passes, cpu = [], []
    for _ in range(3):
        t, c = time.perf_counter(), time.process_time()
        n_test = len(parser.parse(test))
        passes.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {
        "uas": uas,
        "train_sentences_per_s": n_train * epochs / arc_s,
        "parse_sentences_per_s": n_test / statistics.median(passes),
        "parse_cpu_s": statistics.median(cpu),
        "fit_wall_s": fit_wall,
        "fit_cpu_s": fit_cpu,
        "train_sentences": n_train,
        "epochs": epochs,
    }


def child_mkl(args: argparse.Namespace) -> dict[str, Any]:
    import bench_mkl_classifier as bench
    from _common import timed
    from river import preprocessing

    import omkl

    data = bench.load("image_segments", 0)
    n = len(data)
    wall = cpu = float("inf")
    # The same model on both sides: where MKLClassifier() has become the
    # bounded, drift-following default, the earlier unbounded default is
    # asked for by its parameters.
    same = getattr(omkl.mkl, "UNBOUNDED_CONFIG", {})
    for _ in range(args.inner):
        make = lambda: preprocessing.StandardScaler() | omkl.MKLClassifier(**same)  # noqa: E731
        (_, acc, _), w, c = timed(lambda: bench.progressive(make, data))  # noqa: B023
        wall, cpu = min(wall, w), min(cpu, c)
    return {"us_per_sample": 1e6 * wall / n, "cpu_us_per_sample": 1e6 * cpu / n, "accuracy": acc}


def child_linear(args: argparse.Namespace) -> dict[str, Any]:
    import bench_linear as bench
    from _common import timed
    from river import linear_model, preprocessing

    import omkl

    data = list(bench.datasets.ImageSegments())
    contenders = {
        "proximal": lambda: preprocessing.StandardScaler() | omkl.ProximalClassifier(),
        "softmax": lambda: preprocessing.StandardScaler() | linear_model.SoftmaxRegression(),
    }
    wall = dict.fromkeys(("scaler", *contenders), float("inf"))
    cpu = dict(wall)
    accuracy = {}
    for _ in range(args.inner):
        _, w, c = timed(lambda: bench.scaler_only(data))
        wall["scaler"], cpu["scaler"] = min(wall["scaler"], w), min(cpu["scaler"], c)
        for name, make in contenders.items():
            (_, accuracy[name], _), w, c = timed(lambda: bench.progressive(make, data))  # noqa: B023
            wall[name], cpu[name] = min(wall[name], w), min(cpu[name], c)
    n = len(data)
    out: dict[str, Any] = {
        "proximal_accuracy": accuracy["proximal"],
        "softmax_accuracy": accuracy["softmax"],
    }
    for kind, t in (("", wall), ("cpu_", cpu)):
        for name in t:
            out[f"{kind}{name}_us_per_sample"] = 1e6 * t[name] / n
        out[f"{kind}speedup_whole"] = t["softmax"] / t["proximal"]
        out[f"{kind}speedup_scaler_subtracted"] = (t["softmax"] - t["scaler"]) / max(
            t["proximal"] - t["scaler"], 1e-12
        )
    return out


def child_info(args: argparse.Namespace) -> dict[str, Any]:
    """Versions, and a first import of every module the workloads use, so
    that writing a fresh environment's bytecode is not timed."""
    import importlib
    from importlib import metadata

    import omkl

    for module in ("omkl.parsing", "omkl.experiments.ocr", "matplotlib.pyplot", "tqdm"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    import bench_linear  # noqa: F401  (river's estimators, datasets and evaluation)
    import bench_mkl_classifier  # noqa: F401

    versions = {}
    for dist in ("omkl", "numpy", "river", "threadpoolctl"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {"omkl_file": omkl.__file__, "versions": versions, "python": platform.python_version()}


CHILDREN = {
    "info": child_info,
    "ocr": child_ocr,
    "parser": child_parser,
    "mkl": child_mkl,
    "linear": child_linear,
}


def child_main(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(BENCHES))
    out = CHILDREN[args.child](args)
    import resource

    out["self_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pathlib.Path(args.result).write_text(json.dumps(out))
    return 0


# --------------------------------------------------------------------------
# building and installing each side


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def git(*argv: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *argv], cwd=ROOT, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def inputs_key(tree: str) -> str:
    """Hash of the build inputs' entries in ``tree`` (a tree-ish)."""
    listing = git("ls-tree", tree, "--", *BUILD_INPUTS)
    return hashlib.sha1(listing.encode()).hexdigest()[:12]


def worktree_key() -> str:
    """:func:`inputs_key` of the checkout as it is on disk (uncommitted
    and untracked, not ignored files included), through a temporary index."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=str(pathlib.Path(tmp) / "index"))
        git("read-tree", "HEAD", env=env)
        git("add", "-A", "--", *[p for p in BUILD_INPUTS if (ROOT / p).exists()], env=env)
        return inputs_key(git("write-tree", env=env))


def find_maturin() -> list[str]:
    for cand in (pathlib.Path(sys.executable).parent / "maturin", shutil.which("maturin")):
        if cand and pathlib.Path(cand).exists():
            probe = subprocess.run([str(cand), "--version"], capture_output=True)
            if probe.returncode == 0:
                return [str(cand)]
    tools = CACHE / "tools"
    if not (tools / "bin" / "maturin").exists():
        log(f"installing {MATURIN} into {tools}")
        subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
        subprocess.run([str(tools / "bin" / "python"), "-m", "pip", "install", "-q", MATURIN])
    return [str(tools / "bin" / "maturin")]


def build_wheel(key: str, commit: str | None) -> pathlib.Path:
    """The release wheel of build inputs ``key``: from the cache, else built
    from ``commit`` (exported with ``git archive``) or, with ``None``, from
    this checkout. Each build has a Cargo target directory of its own,
    removed afterwards: in a shared one, the extension module that Cargo
    copies out after a build of one source tree could be packaged again for
    another tree whose build Cargo judged fresh (two wheels of different
    sources with the same module)."""
    done = CACHE / key / "wheel"
    wheels = sorted(done.glob("omkl-*.whl"))
    if wheels:
        return wheels[0]
    partial = CACHE / key / "wheel.partial"
    shutil.rmtree(partial, ignore_errors=True)
    maturin = find_maturin()
    with tempfile.TemporaryDirectory(prefix="omkl-compare-") as tmp:
        env = dict(os.environ, CARGO_TARGET_DIR=str(pathlib.Path(tmp) / "target"))
        src = ROOT
        if commit is not None:
            src = pathlib.Path(tmp) / "src"
            src.mkdir()
            archive = subprocess.run(
                ["git", "archive", "--format=tar", commit],
                cwd=ROOT,
                check=True,
                capture_output=True,
            ).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                if sys.version_info >= (3, 12):
                    tar.extractall(src, filter="data")
                else:
                    tar.extractall(src)
        what = commit or "this checkout"
        log(f"building the release wheel of {what} (inputs {key}) ...")
        t0 = time.perf_counter()
        subprocess.run(
            [*maturin, "build", "--release", "--out", str(partial)], cwd=src, env=env, check=True
        )
        log(f"built in {time.perf_counter() - t0:.0f} s")
    partial.rename(done)
    return sorted(done.glob("omkl-*.whl"))[0]


def make_venv(key: str, wheel: pathlib.Path, constraints: pathlib.Path | None) -> pathlib.Path:
    """A virtualenv with ``wheel`` (of build inputs ``key``) and its runtime
    dependencies (pinned by ``constraints`` when given and satisfiable);
    reused when it already holds that wheel."""
    venv = CACHE / key / "venv"
    marker = venv / "omkl-wheel.txt"
    python = venv / "bin" / "python"
    if marker.exists() and marker.read_text() == str(wheel) and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    log(f"creating {venv}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    ok = False
    if constraints is not None:
        ok = subprocess.run([*pip, str(wheel), "-c", str(constraints)]).returncode == 0
        if not ok:
            log("the other side's dependency versions do not fit; installing unpinned")
    if not ok:
        subprocess.run([*pip, str(wheel)], check=True)
    marker.write_text(str(wheel))
    return python


def freeze(python: pathlib.Path, path: pathlib.Path) -> pathlib.Path:
    out = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--exclude", "omkl", "--disable-pip-version-check"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out)
    return path


@dataclass
class Side:
    name: str  # "baseline" or "current"
    label: str  # commit (and state) shown in the table
    python: pathlib.Path
    info: dict[str, Any] = field(default_factory=dict)


def prepare_sides(args: argparse.Namespace) -> tuple[Side, Side]:
    head = git("rev-parse", "--short", "HEAD")
    base_commit = git("rev-parse", "--short", f"{args.baseline}^{{commit}}")
    base_key = inputs_key(base_commit)
    cur_key = worktree_key()
    dirty = cur_key != inputs_key(head)
    cur_label = f"{head}-dirty-{cur_key[:8]}" if dirty else head
    constraints = None
    if args.baseline_python:
        base = Side("baseline", f"{args.baseline} ({args.baseline_python})", args.baseline_python)
    else:
        wheel = build_wheel(base_key, base_commit)
        python = make_venv(base_key, wheel, None)
        constraints = freeze(python, CACHE / base_key / "requirements.txt")
        base = Side("baseline", base_commit, python)
    if args.current_python:
        cur = Side("current", f"{cur_label} ({args.current_python})", args.current_python)
    else:
        wheel = build_wheel(cur_key, None)
        cur = Side("current", cur_label, make_venv(cur_key, wheel, constraints))
    return base, cur


# --------------------------------------------------------------------------
# running the workloads


class ChildFailed(RuntimeError):
    pass


def run_measured(
    cmd: list[str], logfile: pathlib.Path, env: dict[str, str], cwd: str | pathlib.Path
) -> tuple[int, float, Any]:
    """Runs ``cmd`` in ``cwd`` with ``env``, its output and errors written
    to ``logfile``; returns its exit status, its wall seconds and its
    resource usage from ``os.wait4`` (``ru_maxrss``: its peak resident
    memory in KiB; ``ru_utime + ru_stime``: its CPU seconds)."""
    t0 = time.perf_counter()
    with open(logfile, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    return os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage


def failure(returncode: int, logfile: pathlib.Path) -> str:
    """The exit status of a failed child and the last lines of its log."""
    tail = logfile.read_text(errors="replace").strip().splitlines()[-3:]
    return f"exit {returncode}; log {logfile}: " + " / ".join(tail)


def run_child(
    side: Side, workload: str, args: argparse.Namespace, run_dir: pathlib.Path, tag: str
) -> dict[str, Any]:
    """Runs ``workload`` in ``side``'s Python; returns its result with the
    child's wall time and peak resident memory (``os.wait4``)."""
    stem = run_dir / f"{workload}-{side.name}-{tag}"
    result, logfile = stem.with_suffix(".json"), stem.with_suffix(".log")
    cmd = [str(side.python), str(pathlib.Path(__file__).resolve()), "--child", workload]
    cmd += ["--result", str(result), "--ewt", str(args.ewt), "--inner", str(args.inner)]
    cmd += ["--quick"] if args.quick else []
    # both sides import their installed omkl, and both may write and read
    # cached bytecode: a side that may not would compile every module of
    # omkl at each start, which the child's CPU time would count
    drop = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    with tempfile.TemporaryDirectory() as cwd:
        returncode, wall, usage = run_measured(cmd, logfile, env, cwd)
    if returncode != 0 or not result.exists():
        raise ChildFailed(failure(returncode, logfile))
    out_data = json.loads(result.read_text())
    out_data["peak_rss_mb"] = usage.ru_maxrss / 1024
    out_data["child_wall_s"] = wall
    out_data["child_cpu_s"] = usage.ru_utime + usage.ru_stime
    return out_data


def run_workload(
    name: str,
    sides: tuple[Side, Side],
    repeats: int,
    args: argparse.Namespace,
    run_dir: pathlib.Path,
) -> dict[str, list[dict[str, Any]] | str]:
    """``repeats`` runs per side, alternating (A B, B A, A B, ...). A side
    whose child fails gets the error message instead of its list of runs."""
    runs: dict[str, Any] = {s.name: [] for s in sides}
    for r in range(repeats):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            if isinstance(runs[side.name], str):
                continue
            log(f"  {name}: {side.name} ({side.label}), run {r + 1}/{repeats}")
            try:
                runs[side.name].append(run_child(side, name, args, run_dir, str(r)))
            except ChildFailed as e:
                log(f"  {name} failed on the {side.name} side: {e}")
                runs[side.name] = str(e)
    return runs


# --------------------------------------------------------------------------
# the table


def _values(runs: Any, path: tuple[str, ...], least: int) -> list[float] | None:
    """The value at ``path`` of every repeat in ``runs``, or ``None`` if
    there are fewer than ``least`` repeats or one lacks the value."""
    if not isinstance(runs, list) or len(runs) < least:
        return None
    vals = []
    for r in runs:
        v: Any = r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if v is None:
            return None
        vals.append(float(v))
    return vals


def med(runs: Any, *path: str) -> float | None:
    vals = _values(runs, path, 1)
    return None if vals is None else statistics.median(vals)


def spread(runs: Any, *path: str) -> float | None:
    """(max - min) / median over the repeats of one side, in percent."""
    vals = _values(runs, path, 2)
    if vals is None:
        return None
    m = statistics.median(vals)
    return 100.0 * (max(vals) - min(vals)) / m if m else None


@dataclass
class Row:
    section: str
    metric: str
    baseline: float | None
    current: float | None
    compare: str  # the ratio current/baseline, or the difference
    criterion: str
    status: str
    fmt: str = "{:.2f}"
    noise: str = ""

    def cells(self) -> list[str]:
        def f(v: float | None) -> str:
            return "n/a" if v is None else self.fmt.format(v)

        return [
            self.section,
            self.metric,
            f(self.baseline),
            f(self.current),
            self.compare,
            self.criterion,
            self.status,
            self.noise,
        ]


def _noise(runs: dict[str, Any], *path: str) -> str:
    s = [spread(runs[k], *path) for k in ("baseline", "current")]
    s = [v for v in s if v is not None]
    return f"{max(s):.1f}%" if s else ""


def _baseline_below(b: float | None, floor: float | None) -> str:
    """A note when the baseline misses the absolute floor as well."""
    return " (baseline too)" if b is not None and floor is not None and b < floor else ""


def ratio_row(
    section: str,
    metric: str,
    runs: dict[str, Any],
    path: tuple[str, ...],
    *,
    max_ratio: float | None = None,
    min_ratio: float | None = None,
    min_current: float | None = None,
    fmt: str = "{:.2f}",
) -> Row:
    """Row comparing ``current / baseline`` with an upper bound (times,
    memory) or a lower bound (rates), and optionally an absolute floor on
    the current value. Absolute floors are checked on both sides' values
    when shown, but only the current side decides the verdict."""
    b, c = med(runs["baseline"], *path), med(runs["current"], *path)
    crit, bad = [], []
    if min_current is not None:
        crit.append(f">= {min_current:g}")
        if c is not None and c < min_current:
            bad.append(f"< {min_current:g}")
    if max_ratio is not None:
        crit.append(f"ratio <= {max_ratio:g}")
    if min_ratio is not None:
        crit.append(f"ratio >= {min_ratio:.2f}")
    if b is None or c is None or b == 0:
        compare, status = "n/a", "n/a"
        if c is not None and bad:
            status = "FLAG (" + ", ".join(bad) + ")"
    else:
        q = c / b
        compare = f"{q:.3f}"
        if max_ratio is not None and q > max_ratio:
            bad.append("ratio")
        if min_ratio is not None and q < min_ratio:
            bad.append("ratio")
        status = "FLAG (" + ", ".join(bad) + ")" if bad else "PASS"
    if not crit:
        status = "info" if status != "n/a" else status
    status += _baseline_below(b, min_current)
    return Row(
        section,
        metric,
        b,
        c,
        compare,
        "; ".join(crit) or "-",
        status,
        fmt,
        _noise(runs, *path),
    )


def diff_row(
    section: str,
    metric: str,
    runs: dict[str, Any],
    path: tuple[str, ...],
    *,
    points: float,
    scale: float = 1.0,
    min_current: float | None = None,
    fmt: str = "{:.2f}",
) -> Row:
    """Row comparing accuracies by their difference in points (``scale``
    turns a fraction into percent)."""
    b, c = med(runs["baseline"], *path), med(runs["current"], *path)
    crit = [f"|diff| <= {points:g} pt"]
    bad = []
    if min_current is not None:
        crit.insert(0, f">= {min_current:g}")
        if c is not None and c < min_current:
            bad.append(f"< {min_current:g}")
    if b is None or c is None:
        compare = "n/a"
        status = "FLAG (" + ", ".join(bad) + ")" if bad else "n/a"
    else:
        d = scale * (c - b)
        compare = f"{d:+.2f} pt"
        if abs(d) > points:
            bad.append("diff")
        status = "FLAG (" + ", ".join(bad) + ")" if bad else "PASS"
    status += _baseline_below(b, min_current)
    return Row(section, metric, b, c, compare, "; ".join(crit), status, fmt, _noise(runs, *path))


def build_rows(results: dict[str, Any], args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    if "ocr" in results:
        runs = results["ocr"]
        names: list[str] = []
        for side in ("baseline", "current"):
            if isinstance(runs[side], list) and runs[side]:
                names += [n for n in runs[side][0]["rows"] if n not in names]
        for n in names:
            rows.append(
                diff_row("OCR", f"{n} accuracy %", runs, ("rows", n, "accuracy"), points=ACC_POINTS)
            )
            rows.append(
                ratio_row(
                    "OCR",
                    f"{n} train s/fold",
                    runs,
                    ("rows", n, "train_s_per_fold"),
                    max_ratio=TIME_RATIO,
                    fmt="{:.3f}",
                )
            )
        rows.append(ratio_row("OCR", "whole run s", runs, ("wall_s",), fmt="{:.1f}"))
    if "parser" in results:
        runs = results["parser"]
        q = args.quick
        rows.append(
            diff_row(
                "parser",
                "test UAS %" + (" (quick)" if q else ""),
                runs,
                ("uas",),
                points=ACC_POINTS,
                min_current=None if q else UAS_MIN,
            )
        )
        for path, metric, floor in (
            ("train_sentences_per_s", "train sent/s", TRAIN_RATE_MIN),
            ("parse_sentences_per_s", "parse sent/s", PARSE_RATE_MIN),
        ):
            rows.append(
                ratio_row(
                    "parser",
                    metric,
                    runs,
                    (path,),
                    min_ratio=1 / TIME_RATIO,
                    min_current=None if q else floor,
                    fmt="{:.0f}",
                )
            )
        for path, metric in (("fit_cpu_s", "fit CPU s"), ("parse_cpu_s", "parse CPU s (test)")):
            rows.append(
                ratio_row("parser", metric, runs, (path,), max_ratio=TIME_RATIO, fmt="{:.2f}")
            )
    if "mkl" in results:
        runs = results["mkl"]
        rows.append(
            diff_row(
                "MKLClassifier",
                "accuracy",
                runs,
                ("accuracy",),
                points=ACC_POINTS,
                scale=100.0,
                min_current=MKL_ACC_MIN,
                fmt="{:.4f}",
            )
        )
        rows.append(
            ratio_row(
                "MKLClassifier",
                "CPU us/sample",
                runs,
                ("cpu_us_per_sample",),
                max_ratio=TIME_RATIO,
                fmt="{:.1f}",
            )
        )
        rows.append(
            ratio_row("MKLClassifier", "wall us/sample", runs, ("us_per_sample",), fmt="{:.1f}")
        )
    if "linear" in results:
        runs = results["linear"]
        rows.append(
            ratio_row(
                "Proximal",
                "ProximalClassifier CPU us/sample",
                runs,
                ("cpu_proximal_us_per_sample",),
                max_ratio=TIME_RATIO,
                fmt="{:.1f}",
            )
        )
        rows.append(
            ratio_row(
                "Proximal",
                "river SoftmaxRegression CPU us/sample (peer)",
                runs,
                ("cpu_softmax_us_per_sample",),
                fmt="{:.1f}",
            )
        )
        rows.append(
            ratio_row(
                "Proximal",
                "CPU speed-up vs Softmax, scaler subtracted",
                runs,
                ("cpu_speedup_scaler_subtracted",),
                min_current=SOFTMAX_SPEEDUP_MIN,
                fmt="{:.1f}",
            )
        )
        for path, metric in (
            ("proximal_us_per_sample", "ProximalClassifier wall us/sample"),
            ("speedup_scaler_subtracted", "wall speed-up vs Softmax, scaler subtracted"),
            ("speedup_whole", "wall speed-up vs Softmax, whole pipeline"),
        ):
            rows.append(ratio_row("Proximal", metric, runs, (path,), fmt="{:.1f}"))
    for name, runs in results.items():
        rows.append(
            ratio_row(
                "CPU",
                f"{name} child CPU s (user + sys)",
                runs,
                ("child_cpu_s",),
                max_ratio=TIME_RATIO,
                fmt="{:.1f}",
            )
        )
    for name, runs in results.items():
        rows.append(
            ratio_row(
                "memory",
                f"{name} peak RSS MB",
                runs,
                ("peak_rss_mb",),
                max_ratio=MEM_RATIO,
                fmt="{:.0f}",
            )
        )
    return rows


HEADER = ["section", "metric", "baseline", "current", "cur/base", "criterion", "verdict", "noise"]


def render(rows: list[Row]) -> str:
    cells = [HEADER] + [r.cells() for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = []
    for k, c in enumerate(cells):
        lines.append("| " + " | ".join(s.ljust(w) for s, w in zip(c, widths, strict=True)) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git ref of the baseline")
    ap.add_argument("--current-python", type=pathlib.Path, help="use this env for the current side")
    ap.add_argument("--baseline-python", type=pathlib.Path, help="use this env for the baseline")
    ap.add_argument("--repeats", type=int, default=None, help="runs per side of OCR and parser")
    ap.add_argument(
        "--small-repeats", type=int, default=None, help="runs per side of the small workloads"
    )
    ap.add_argument(
        "--inner", type=int, default=3, help="best-of passes inside one small-workload run"
    )
    ap.add_argument("--skip-ocr", action="store_true")
    ap.add_argument("--skip-parser", action="store_true")
    ap.add_argument("--skip-small", action="store_true", help="skip MKLClassifier and Proximal")
    ap.add_argument("--quick", action="store_true", help="smaller OCR and parser runs")
    ap.add_argument("--ewt", type=pathlib.Path, default=DEFAULT_EWT, help="UD English-EWT dir")
    ap.add_argument("--json", type=pathlib.Path, help="also write the results here")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1
    if args.small_repeats is None:
        args.small_repeats = 1 if args.quick else 3
    if min(args.repeats, args.small_repeats, args.inner) < 1:
        ap.error("--repeats, --small-repeats and --inner must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    t_start = time.perf_counter()
    load0 = os.getloadavg()
    sides = prepare_sides(args)
    t_built = time.perf_counter()
    run_dir = CACHE / "runs" / time.strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    for side in sides:
        try:
            side.info = run_child(side, "info", args, run_dir, "0")
        except ChildFailed as e:
            log(f"omkl does not import in the {side.name} environment ({side.python}): {e}")
            return 2
    plan: list[tuple[str, int]] = []
    if not args.skip_ocr:
        plan.append(("ocr", args.repeats))
    if not args.skip_parser:
        files = [args.ewt / f"en_ewt-ud-{s}.conllu" for s in ("train", "test")]
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            log(f"parser section skipped: UD English-EWT not found ({', '.join(missing)})")
        else:
            plan.append(("parser", args.repeats))
    if not args.skip_small:
        plan += [("mkl", args.small_repeats), ("linear", args.small_repeats)]
    results: dict[str, Any] = {}
    for name, repeats in plan:
        results[name] = run_workload(name, sides, repeats, args, run_dir)
    rows = build_rows(results, args)
    wall = time.perf_counter() - t_start
    load1 = os.getloadavg()

    print(f"omkl no-regression comparison ({'quick' if args.quick else 'full'} run)")
    for side in sides:
        v = side.info["versions"]
        deps = ", ".join(f"{k} {v[k]}" for k in ("numpy", "river") if v.get(k))
        print(
            f"  {side.name:8s} {side.label}: omkl {v.get('omkl')} ({deps}), "
            f"Python {side.info['python']}, {side.python}"
        )
    vb, vc = sides[0].info["versions"], sides[1].info["versions"]
    if {k: vb[k] for k in vb if k != "omkl"} != {k: vc[k] for k in vc if k != "omkl"}:
        print("  note: the two sides run different dependency versions")
    print(
        f"  repeats: OCR/parser {args.repeats}, small workloads {args.small_repeats} "
        f"(each best of {args.inner}); medians; sides alternate; {os.cpu_count()} CPUs; "
        f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end"
    )
    print("  noise: largest (max - min) / median over one side's repeats")
    cpus = os.cpu_count() or 1
    if max(load0[0], load1[0]) > cpus:
        print(
            f"  note: the machine was loaded (load average above {cpus}); wall-time ratios "
            "drift with the load, the CPU rows much less; --repeats 3 gives medians"
        )
    print()
    print(render(rows))
    print()
    for name, runs in results.items():
        for side_name, side_runs in runs.items():
            if isinstance(side_runs, str):
                print(f"{name} failed on the {side_name} side: {side_runs}")
    flags = [r for r in rows if r.status.startswith("FLAG")]
    print(
        f"{len(flags)} flagged, {sum(r.status == 'PASS' for r in rows)} passed; "
        f"builds/setup {t_built - t_start:.0f} s, workloads {wall - (t_built - t_start):.0f} s, "
        f"total {wall:.0f} s; logs in {run_dir}"
    )
    if args.json:
        payload = {
            "settings": {
                k: str(v) if isinstance(v, pathlib.Path) else v
                for k, v in vars(args).items()
                if k not in ("child", "result")
            },
            "sides": {s.name: {"label": s.label, "python": str(s.python), **s.info} for s in sides},
            "results": results,
            "rows": [dict(zip(HEADER, r.cells(), strict=True)) for r in rows],
            "seconds": {"total": wall, "setup": t_built - t_start},
            "load_average": {"start": load0, "end": load1},
        }
        args.json.write_text(json.dumps(payload, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
