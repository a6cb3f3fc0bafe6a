"""Benchmark of ``omkl.prox`` against peers measured in the same run.

* squared-ℓ1 prox (Alg. 2) on p = 10^6, by sorting and by selection, against
  ``np.sort`` of the same vector;
* group-lasso prox on 10^6 coefficients in 10^3 groups against SPAMS
  ``proximalFlat(regul="group-lasso-l2")``, after checking that both outputs
  agree.

Times are the best of ``--repeat`` runs; ratios are ours / peer (below 1 means
faster). Peak memory is the growth of the process's peak resident set (above the
resident set just before the call) during one call, measured in a fresh child
process per operation; it includes the returned array (8 MB for p = 10^6).

    python benches/bench_prox.py [--p 1000000] [--groups 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import resource
import subprocess
import sys
from collections.abc import Callable

import numpy as np
from _common import best_time

from omkl import prox

try:
    import spams
except ImportError:  # pragma: no cover - SPAMS is an optional peer
    spams = None


def data(p: int, n_groups: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(p)
    groups = np.repeat(np.arange(n_groups), p // n_groups)
    groups = np.concatenate([groups, np.full(p - groups.size, n_groups - 1)])
    return x, groups


def operations(p: int, n_groups: int) -> dict[str, Callable[[], object]]:
    x, groups = data(p, n_groups)
    tau = 1e-4  # squared ℓ1 with a moderate support (about 1% of coordinates)
    tau_group = 0.5 * np.sqrt(p / n_groups)  # about half the groups survive
    ops: dict[str, Callable[[], object]] = {
        "np.sort": lambda: np.sort(x),
        "squared_l1[sort]": lambda: prox.prox_squared_l1(x, tau, method="sort"),
        "squared_l1[select]": lambda: prox.prox_squared_l1(x, tau, method="select"),
        "group_lasso": lambda: prox.prox_group_lasso(x, groups, tau_group),
    }
    if spams is not None:
        u = np.asfortranarray(x.reshape(-1, 1))
        g32 = np.ascontiguousarray(groups + 1, dtype=np.int32)
        ops["spams.group_lasso"] = lambda: spams.proximalFlat(
            u, lambda1=tau_group, regul="group-lasso-l2", groups=g32, numThreads=1
        )
    return ops


def peak_rss_mb(name: str, p: int, n_groups: int) -> float:
    """Peak-RSS growth of one call of ``name``, in a fresh child process."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--p", str(p), "--groups", str(n_groups)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)["mb"]


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def child(name: str, p: int, n_groups: int) -> None:
    f = operations(p, n_groups)[name]
    # Give freed heap memory back to the OS (glibc) so that reused pages do
    # not hide the call's allocations, then reset the peak-RSS mark (Linux:
    # write 5 to clear_refs) so that only the measured call counts; fall back
    # to ru_maxrss growth elsewhere.
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        base = _status_kib("VmRSS")
        f()
        peak = _status_kib("VmHWM")
        assert base is not None and peak is not None
        kib = peak - base
    except (OSError, AssertionError):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        f()
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"mb": kib / 1024.0}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.p, args.groups)
        return 0

    p, n_groups = args.p, args.groups
    ops = operations(p, n_groups)
    x, groups = data(p, n_groups)
    input_mb = x.nbytes / 2**20

    # Agreement checks before timing.
    sort_out = ops["squared_l1[sort]"]()
    select_out = ops["squared_l1[select]"]()
    assert isinstance(sort_out, np.ndarray) and isinstance(select_out, np.ndarray)
    diff_sel = float(np.abs(sort_out - select_out).max())
    print(f"p = {p}, groups = {n_groups}, input {input_mb:.1f} MiB, best of {args.repeat}")
    print(
        f"squared_l1: support {np.count_nonzero(sort_out)} of {p}; "
        f"max |sort - select| = {diff_sel:.2e}"
    )
    if "spams.group_lasso" in ops:
        ours = ops["group_lasso"]()
        theirs = np.asarray(ops["spams.group_lasso"]()).ravel()
        diff = float(np.abs(np.asarray(ours) - theirs).max())
        print(f"group_lasso: max |omkl - SPAMS| = {diff:.2e}")
        if diff > 1e-9 * max(1.0, float(np.abs(x).max())):
            print("group_lasso: OUTPUTS DISAGREE", file=sys.stderr)
            return 1
    else:
        print("SPAMS not installed: group-lasso peer skipped")

    times = {name: best_time(f, args.repeat, warmup=True) for name, f in ops.items()}
    mem = {name: peak_rss_mb(name, p, n_groups) for name in ops}

    print(f"{'operation':<22}{'time (ms)':>12}{'peak +RSS (MiB)':>18}{'ratio':>10}  peer")
    peers = {
        "squared_l1[sort]": "np.sort",
        "squared_l1[select]": "np.sort",
        "group_lasso": "spams.group_lasso",
    }
    for name, t in times.items():
        peer = peers.get(name)
        ratio = f"{t / times[peer]:.2f}" if peer in times else ""
        print(f"{name:<22}{1e3 * t:>12.2f}{mem[name]:>18.1f}{ratio:>10}  {peer if ratio else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
