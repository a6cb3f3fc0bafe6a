"""CPU time and page faults of the parser's training passes with glibc's own
memory settings and with those of Dask's worker processes, on UD
English-EWT (reads ``../shared/data/ud-english-ewt``; skips cleanly
without it).

Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``. Setting it
also turns off glibc's adaptive threshold for mapping large blocks, so that
every block above 128 kB is mapped, faulted in and unmapped again. Each
run is a child process that trains ``DependencyParser(epochs=3,
label_epochs=0)`` with one thread (``RAYON_NUM_THREADS=1``) on half of the
first ``--sentences`` training sentences (every other one: one shard of a
two-worker ``omkl.distributed.train``), and reports the CPU seconds of arc
epochs 2 and 3 (after the pruner and the first pass have touched the
tables) and the minor page faults of the whole process. Runs alternate
between the two environments, and with ``--baseline-python`` (the Python of
another installation, for example a virtualenv that
``compare_previous.py`` built for an earlier commit) between the two
installations, ``--repeats`` times; the table gives medians and ratios.

    python benches/bench_parser_memory.py [--sentences 4000] [--repeats 5] \\
        [--baseline-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from _ewt import DATA

TRIM = {"MALLOC_TRIM_THRESHOLD_": "65536"}


def child(path: str) -> None:
    """Trains on ``path`` and prints the figures as one JSON line."""
    import resource
    import time

    from omkl import DependencyParser

    marks: list[float] = []
    DependencyParser(epochs=3, label_epochs=0).fit(
        path, on_epoch=lambda _i, _m: marks.append(time.process_time())
    )
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(json.dumps({"cpu": marks[-1] - marks[-3], "faults": faults}))


def run(python: str, path: str, extra: dict[str, str]) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    env.update({"RAYON_NUM_THREADS": "1", **extra})
    out = subprocess.run(
        [python, __file__, "--child", path], env=env, check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-python", default=None, help="the Python of another installation")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    train = DATA / "en_ewt-ud-train.conllu"
    if not train.exists():
        print(f"skipped: {train} not found (download UD English-EWT there)")
        return
    blocks = train.read_text(encoding="utf-8").strip().split("\n\n")[: args.sentences]
    sides = {"this": sys.executable}
    if args.baseline_python:
        sides["baseline"] = args.baseline_python
    envs = {"glibc default": {}, "Dask's workers": TRIM}
    figures: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp) / "shard.conllu")
        pathlib.Path(path).write_text("\n\n".join(blocks[0::2]) + "\n\n", encoding="utf-8")
        print(
            f"{len(blocks[0::2])} sentences, {args.repeats} runs per cell, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        for _ in range(args.repeats):
            for side, python in sides.items():
                for name, extra in envs.items():
                    figures.setdefault((side, name), []).append(run(python, path, extra))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print()
    print("| omkl | memory settings | CPU s, arc epochs 2-3 (median) | page faults (median) |")
    print("|---|---|---|---|")
    med = {
        k: {f: statistics.median(r[f] for r in v) for f in ("cpu", "faults")}
        for k, v in figures.items()
    }
    for (side, name), m in med.items():
        print(f"| {side} | {name} | {m['cpu']:.3f} | {m['faults']:.0f} |")
    print()
    for side in sides:
        a, b = med[(side, "Dask's workers")], med[(side, "glibc default")]
        print(f"{side}: Dask's workers ÷ glibc default, CPU {a['cpu'] / b['cpu']:.3f}")
    if "baseline" in sides:
        for name in envs:
            a, b = med[("this", name)], med[("baseline", name)]
            print(f"{name}: this ÷ baseline, CPU {a['cpu'] / b['cpu']:.3f}")


if __name__ == "__main__":
    main()
