"""Runs the hostile-input fuzz suite and prints its outcome counts per module.

Runs ``pytest tests/test_fuzz_numeric.py`` in a child process (so that an
abort is counted instead of ending this script) and prints, for omkl.prox,
omkl.decode and omkl.kernels, the cases tried, how many returned a result
matching the reference, how many were refused with an exception naming the
argument, and the aborts, panics and silently wrong results (all of which
must be 0).

    python benches/fuzz_summary.py [--slow]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = ["correct", "rejected", "abort", "panic", "wrong"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", action="store_true", help="OMKL_FUZZ_SLOW=1: more examples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        env = {**os.environ, "OMKL_FUZZ_SUMMARY": str(out)}
        if args.slow:
            env["OMKL_FUZZ_SLOW"] = "1"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                str(ROOT / "tests" / "test_fuzz_numeric.py"),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        tail = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
        counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(OUTCOMES, 0))
        if out.exists():
            for module, outcome, n in json.loads(out.read_text()):
                counts[module][outcome] += n
    if r.returncode < 0:
        counts["(suite)"]["abort"] += 1
    header = f"{'module':<10} {'cases':>7} " + " ".join(f"{o:>9}" for o in OUTCOMES)
    print(header)
    print("-" * len(header))
    total = dict.fromkeys(OUTCOMES, 0)
    for module in sorted(counts):
        c = counts[module]
        print(f"{module:<10} {sum(c.values()):7d} " + " ".join(f"{c[o]:9d}" for o in OUTCOMES))
        for o in OUTCOMES:
            total[o] += c[o]
    print(f"{'total':<10} {sum(total.values()):7d} " + " ".join(f"{total[o]:9d}" for o in OUTCOMES))
    print(f"pytest: {' '.join(tail)} (exit code {r.returncode})")
    bad = total["abort"] + total["panic"] + total["wrong"]
    return 0 if r.returncode == 0 and bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
