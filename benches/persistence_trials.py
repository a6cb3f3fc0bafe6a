"""Robustness trials of the saved model files, one row per estimator.

For each estimator, a small trained model is saved, then

* corrupted copies are loaded: cuts at many offsets and single-byte flips at
  many offsets; each must raise ``ValueError`` naming the file
  (``corrupt-loaded`` counts those that loaded anyway: must be 0);
* a process that saves a larger model in a loop over an existing file is
  killed (SIGKILL) at random moments; the old file must stay loadable and
  byte-identical (``intact``), and no temporary file may remain once the
  next save completes (``temp left``: must be 0).

It also times saving and loading a parser with the default templates.

Run: ``python benches/persistence_trials.py [--trials 80] [--kills 8]``
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import omkl
from omkl.parsing import DependencyParser

WORDS = [("The", "DET", "det"), ("dog", "NOUN", "nsubj"), ("barks", "VERB", "root")]


def sentence() -> list[dict[str, str]]:
    return [
        {"form": f, "lemma": f.lower(), "upos": u, "xpos": u, "feats": "_", "deprel": r}
        for f, u, r in WORDS
    ]


def build(name: str, large: bool):
    rng = np.random.default_rng(0)
    n = 20 if large else 1
    if name in ("ProximalClassifier", "ProximalRegressor"):
        cls = omkl.ProximalClassifier if name == "ProximalClassifier" else omkl.ProximalRegressor
        m = cls(average=True, n_buckets=1 << 14)
        for i in range(400 * n):
            x = {f"g{i % 50}_{int(v)}": 1.0 for v in rng.integers(0, 5000, size=8)}
            m.learn_one(x, "abc"[i % 3] if name == "ProximalClassifier" else float(i % 4))
        return m
    if name == "MKLClassifier":
        X = rng.normal(size=(100 * n, 20))
        return omkl.MKLClassifier().fit(X, [int(v > 0) for v in X[:, 0]])
    if name == "SequenceTagger":
        t = omkl.SequenceTagger()
        seqs = [rng.normal(size=(int(rng.integers(2, 6)), 10)) for _ in range(30 * n)]
        return t.fit(seqs, [["xy"[p % 2] for p in range(len(s))] for s in seqs])
    if name == "DependencyParser":
        p = (
            DependencyParser(prune_k=0)
            if large
            else DependencyParser(templates=list(range(30)), prune_k=0, max_table_bits=8)
        )
        for _ in range(2):
            p.learn_one(sentence(), [2, 3, 0])
        return p
    raise ValueError(name)


#: Every estimator that omkl exports with ``save``/``load``.
ESTIMATORS = [name for name in omkl.__all__ if hasattr(getattr(omkl, name), "save")]


def corruption_trials(name: str, folder: pathlib.Path, trials: int) -> tuple[int, int, int]:
    """``(files tried, refused naming the file, loaded anyway)``."""
    model = build(name, large=False)
    cls = type(model)
    good = folder / f"{name}.omkl"
    model.save(good)
    data = good.read_bytes()
    rng = np.random.default_rng(7)
    bad = folder / f"{name}.bad.omkl"
    tried = refused = loaded = 0
    for kind in ("cut", "flip"):
        for k in rng.integers(0, len(data), size=trials):
            if kind == "cut":
                bad.write_bytes(data[: int(k)])
            else:
                b = bytearray(data)
                b[int(k)] ^= int(rng.integers(1, 256))
                bad.write_bytes(bytes(b))
            tried += 1
            try:
                cls.load(bad)
                loaded += 1
            except ValueError as e:
                refused += str(bad) in str(e)
    return tried, refused, loaded


SAVER = textwrap.dedent(
    """
    import sys
    import omkl
    from omkl.parsing import DependencyParser
    cls = DependencyParser if sys.argv[1] == "DependencyParser" else getattr(omkl, sys.argv[1])
    m = cls.load(sys.argv[2])
    print("ready", flush=True)
    while True:
        m.save(sys.argv[3])
    """
)


def kill_trials(name: str, folder: pathlib.Path, kills: int) -> tuple[int, int, int, int]:
    """``(kills, old file intact, temp files seen after kills, temp files
    left after the next save)``."""
    model = build(name, large=True)
    cls = type(model)
    src = folder / f"{name}.src.omkl"
    model.save(src)
    work = folder / f"{name}.work"
    work.mkdir()
    path = work / "m.omkl"
    t0 = time.perf_counter()
    model.save(path)
    save_time = time.perf_counter() - t0
    want = path.read_bytes()
    rng = np.random.default_rng(3)
    intact = seen = 0
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, name, str(src), str(path)], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        # a random moment spread over a few saves of the loop
        time.sleep(float(rng.uniform(0.01, 0.01 + 3 * save_time)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        seen += len(os.listdir(work)) - 1
        try:
            cls.load(path)
            intact += path.read_bytes() == want
        except ValueError:
            pass
    model.save(path)
    left = len(os.listdir(work)) - 1
    return kills, intact, seen, left


def parser_speed(folder: pathlib.Path) -> str:
    p = build("DependencyParser", large=True)
    path = folder / "parser.omkl"
    t0 = time.perf_counter()
    p.save(path)
    t1 = time.perf_counter()
    DependencyParser.load(path)
    t2 = time.perf_counter()
    size = path.stat().st_size
    return (
        f"parser with the default templates: file {size / 1e6:.1f} MB, "
        f"save {t1 - t0:.3f} s, load {t2 - t1:.3f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=80, help="cuts and flips per estimator (each)")
    ap.add_argument("--kills", type=int, default=8, help="killed saves per estimator")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        folder = pathlib.Path(d)
        header = (
            f"{'estimator':<20} {'trials':>6} {'refused':>7} {'corrupt-loaded':>14} "
            f"{'kills':>5} {'intact':>6} {'temp after kill':>15} {'temp left':>9}"
        )
        print(header)
        print("-" * len(header))
        for name in ESTIMATORS:
            tried, refused, loaded = corruption_trials(name, folder, args.trials)
            kills, intact, seen, left = kill_trials(name, folder, args.kills)
            print(
                f"{name:<20} {tried:>6} {refused:>7} {loaded:>14} "
                f"{kills:>5} {intact:>6} {seen:>15} {left:>9}",
                flush=True,
            )
        print()
        print(parser_speed(folder))


if __name__ == "__main__":
    main()
