"""The parser trained by iterative parameter mixing on a local Dask cluster
against one process, on UD English-EWT (reads ``../shared/data/ud-english-ewt``).

In one run:

* one process: ``DependencyParser().fit`` for ``--epochs`` arc epochs, test
  UAS after each epoch and seconds per epoch;
* ``--workers`` single-threaded worker processes of a ``LocalCluster``, the
  training file dealt into K shards for each K of ``--shards`` (sentence
  ``i`` to shard ``i mod K``, so that each shard is a sample of the whole
  file, as iterative parameter mixing assumes; ``--contiguous`` cuts the
  file into K contiguous blocks instead, which in EWT hold different genres):
  test UAS after each mixing round, seconds per round (wall-clock, and the
  longest worker's pass), megabytes of parameters sent per round, the
  first round within 0.3 UAS of the K = 1 run's last, and where an arc
  round's time goes (the history's ``profile``), and how much a pass learns
  and scores (hinge loss per training sentence of every epoch or round, and
  the share of the test file's arcs that the final pruner keeps).

The label stage is off (UAS only). Skips cleanly without the treebank.
One process's ``fit`` prepares the next block of sentences on a second
thread while it learns from the current one, so it keeps two cores busy; the
CPU seconds it used per wall-clock second are printed. ``--threads N`` caps
the parser's threads at ``N`` in the single process and in every worker
(``RAYON_NUM_THREADS``): with ``--threads 1`` each process has one core, as
when every added machine brings one core.

    PYTHONPATH=python python benches/bench_distributed.py [--epochs 5] \
        [--shards 1,2,4,8] [--workers 2] [--train-sentences 0] [--contiguous] \
        [--threads N]

With ``--mkl``, instead: ``MKLClassifier`` (default kernels, ``max_support``
of ``--max-support``, ``budget_rule`` of ``--budget-rule``) on a synthetic
stream of ``--samples`` samples (a Gaussian mixture: 3 classes of 2
components each in 5 dimensions), one pass in one process (``fit``) against
one mixing round of ``--workers`` workers on as many contiguous shards;
accuracy on 10,000 held-out samples, seconds and bytes per round.

    PYTHONPATH=python python benches/bench_distributed.py --mkl [--samples 200000] \
        [--max-support 500] [--budget-rule smallest] [--workers 2] [--epochs 1]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def write_shards(
    train: pathlib.Path, k: int, limit: int, folder: pathlib.Path, contiguous: bool = False
) -> list[str]:
    """The training file (its first ``limit`` sentences, all when 0) dealt
    into ``k`` CoNLL-U files of nearly equal sizes: sentence ``i`` to file
    ``i mod k``, or ``k`` contiguous blocks with ``contiguous``."""
    blocks = train.read_text(encoding="utf-8").strip().split("\n\n")
    if limit:
        blocks = blocks[:limit]
    out = []
    for j in range(k):
        if contiguous:
            part = blocks[j * len(blocks) // k : (j + 1) * len(blocks) // k]
        else:
            part = blocks[j::k]
        path = folder / f"k{k}-shard{j}.conllu"
        path.write_text("\n\n".join(part) + "\n\n", encoding="utf-8")
        out.append(str(path))
    return out


def mixture(n: int, seed: int) -> tuple[Any, list[int]]:
    """``n`` samples of a fixed Gaussian mixture (3 classes, 2 components
    each, 5 dimensions, unit-variance components), drawn with ``seed``."""
    import numpy as np

    centres = np.random.default_rng(0).normal(scale=1.5, size=(6, 5))
    rng = np.random.default_rng(seed)
    comp = rng.integers(0, 6, size=n)
    x = centres[comp] + rng.normal(size=(n, 5))
    return x, [int(c) % 3 for c in comp]


def bench_mkl(args: argparse.Namespace) -> None:
    """``--mkl``: see the module docs."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print('skipped: needs Dask (pip install "omkl[dask]")')
        return
    import numpy as np

    from omkl import MKLClassifier
    from omkl.distributed import train

    x, y = mixture(args.samples, 1)
    xt, yt = mixture(10_000, 2)

    def make() -> MKLClassifier:
        return MKLClassifier(
            max_support=args.max_support, budget_rule=args.budget_rule, labels=[0, 1, 2]
        )

    def accuracy(model: MKLClassifier) -> float:
        return 100.0 * float(np.mean(np.array(model.predict(xt)) == np.array(yt)))

    print(
        f"MKLClassifier(max_support={args.max_support}, budget_rule={args.budget_rule!r}), "
        f"{args.samples} samples, 5 features"
    )
    single = make()
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        single.fit(x, y)
    one = time.perf_counter() - t0
    acc1 = accuracy(single)
    print(f"1 process: accuracy {acc1:.2f}, {one / args.epochs:.2f} s/epoch", flush=True)
    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = Client(cluster)
    try:
        k = args.workers
        bounds = [j * len(y) // k for j in range(k + 1)]
        shards = [
            list(zip(x[a:b], y[a:b], strict=True))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        t0 = time.perf_counter()
        model, history = train(
            make(), shards, epochs=args.epochs, client=client, validation=accuracy, progress=False
        )
        total = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()
    print(f"{k} workers: accuracy by round {[round(h['validation'], 2) for h in history]}")
    s = sum(h["seconds"] for h in history) / len(history)
    w = sum(h["worker_seconds"] for h in history) / len(history)
    kb = sum(h["bytes"] for h in history) / len(history) / 1e3
    print()
    print("| run | accuracy | vs 1 process | s/round (worker pass) | kB/round | support |")
    print("|---|---|---|---|---|---|")
    print(f"| 1 process | {acc1:.2f} | | {one / args.epochs:.2f} | | {single.n_support_} |")
    print(
        f"| {k} workers | {history[-1]['validation']:.2f} | "
        f"{history[-1]['validation'] - acc1:+.2f} | {s:.2f} ({w:.2f}) | {kb:.0f} "
        f"| {model.n_support_} |"
    )
    print(f"\n{k} workers: {total:.2f} s in all (shards sent once, scan, rounds)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--shards", default="1,2,4,8")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--train-sentences", type=int, default=0, help="0: the whole file")
    ap.add_argument("--contiguous", action="store_true", help="contiguous shards (parser)")
    ap.add_argument("--threads", type=int, default=0, help="parser threads per process")
    ap.add_argument("--mkl", action="store_true", help="the MKLClassifier benchmark instead")
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--max-support", type=int, default=500)
    ap.add_argument("--budget-rule", default="smallest", choices=["smallest", "oldest"])
    args = ap.parse_args()
    if args.mkl:
        if "--epochs" not in sys.argv:
            args.epochs = 1
        bench_mkl(args)
        return
    train_file, test_file = DATA / "en_ewt-ud-train.conllu", DATA / "en_ewt-ud-test.conllu"
    if not train_file.exists():
        print(f"skipped: {train_file} not found (download UD English-EWT there)")
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print('skipped: needs Dask (pip install "omkl[dask]")')
        return
    env = {"RAYON_NUM_THREADS": str(args.threads)} if args.threads > 0 else {}
    os.environ.update(env)  # before the first parallel call starts the thread pool
    from omkl import DependencyParser
    from omkl.distributed import train

    def make() -> DependencyParser:
        return DependencyParser(epochs=args.epochs, label_epochs=0)

    def uas(model: Any) -> float:
        return float(model.score(test_file)["uas"])

    folder = pathlib.Path(tempfile.mkdtemp())
    whole = write_shards(train_file, 1, args.train_sentences, folder)[0]
    print(
        f"train {whole} ({args.train_sentences or 'all'} sentences), test {test_file.name}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    single_uas: list[float] = []
    scoring = [0.0, 0.0]  # wall and CPU seconds of the per-epoch test scoring

    epoch_cpu: list[float] = []  # CPU seconds at the end of each epoch, scoring left out

    def on_epoch(_: int, m: Any) -> None:
        w, c = time.perf_counter(), time.process_time()
        epoch_cpu.append(c - scoring[1])
        single_uas.append(uas(m))
        scoring[0] += time.perf_counter() - w
        scoring[1] += time.process_time() - c

    wall, cpu = time.perf_counter(), time.process_time()
    single = make().fit(whole, on_epoch=on_epoch)
    wall, cpu = time.perf_counter() - wall - scoring[0], time.process_time() - cpu - scoring[1]
    per_epoch = [h["seconds"] for h in single.history_]
    print(
        f"1 process: UAS by epoch {[round(u, 2) for u in single_uas]}, "
        f"s/epoch {[round(s, 2) for s in per_epoch]}, "
        f"{cpu / wall:.2f} CPU s per wall-clock s (threads: {args.threads or 'all'})"
    )
    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env=env,
    )
    client = Client(cluster)
    rows = []
    models: dict[int, Any] = {}
    reference = None
    try:
        for k in [int(v) for v in args.shards.split(",")]:
            shards = write_shards(train_file, k, args.train_sentences, folder, args.contiguous)
            t0 = time.perf_counter()
            model, history = train(make(), shards, client=client, validation=uas, progress=False)
            total = time.perf_counter() - t0
            arc = [h for h in history if h["stage"] == "arc"]
            curve = [h["validation"] for h in arc]
            if reference is None:
                reference = curve[-1]
            reach = next((i + 1 for i, u in enumerate(curve) if u >= reference - 0.3), None)
            rows.append((k, curve, arc, reach, total))
            models[k] = model
            print(
                f"K={k}: UAS by round {[round(u, 2) for u in curve]}, "
                f"s/round {[round(h['seconds'], 2) for h in arc]}",
                flush=True,
            )
    finally:
        client.close()
        cluster.close()
    print()
    print(
        f"| K | UAS after {args.epochs} rounds | vs 1 process | rounds to within 0.3 of K=1 "
        "| s/round (worker pass) | worker CPU s | MB/round | 1 process s/epoch ÷ s/round |"
    )
    print("|---|---|---|---|---|---|---|---|")
    mean_epoch = sum(per_epoch) / len(per_epoch)
    for k, curve, arc, reach, _ in rows:
        s = sum(h["seconds"] for h in arc) / len(arc)
        w = sum(h["worker_seconds"] for h in arc) / len(arc)
        c = sum(h["worker_cpu_seconds"] for h in arc) / len(arc)
        mb = sum(h["bytes"] for h in arc) / len(arc) / 1e6
        print(
            f"| {k} | {curve[-1]:.2f} | {curve[-1] - single_uas[-1]:+.2f} | {reach} "
            f"| {s:.2f} ({w:.2f}) | {c:.2f} | {mb:.0f} | {mean_epoch / s:.2f} |"
        )
    print(
        f"\n1 process: UAS {single_uas[-1]:.2f}, {mean_epoch:.2f} s/epoch, "
        f"{cpu / args.epochs:.2f} CPU s/epoch (pruner and setup included)"
    )
    if len(epoch_cpu) > 1:
        per = (epoch_cpu[-1] - epoch_cpu[0]) / (len(epoch_cpu) - 1)
        print(f"1 process: {per:.2f} CPU s per arc epoch after the first")
    print("\nWhere an arc round's time goes (seconds, mean over the arc rounds; worker")
    print("figures are the slowest shard's):\n")
    print(
        "| K | round | worker pass | worker: mixed arrays in | worker: export "
        "| driver: send | driver: wait beyond the pass | driver: mix | driver: import |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for k, _, arc, _, _ in rows:

        def mean(name: str, arc: list[dict[str, Any]] = arc) -> float:
            return sum(h["profile"][name] for h in arc) / len(arc)

        s = sum(h["seconds"] for h in arc) / len(arc)
        wait = mean("gather") - mean("pass") - mean("load") - mean("export")
        print(
            f"| {k} | {s:.2f} | {mean('pass'):.2f} | {mean('load'):.3f} | {mean('export'):.3f} "
            f"| {mean('send'):.3f} | {wait:.3f} | {mean('mix'):.3f} | {mean('import'):.3f} |"
        )
    work(single, models, rows, test_file)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


def work(single: Any, models: dict[int, Any], rows: list[Any], test_file: pathlib.Path) -> None:
    """How much a pass learns and scores: the hinge loss per training
    sentence of each arc epoch or round (a sentence with a positive loss is
    an update), and the share of the test file's arcs that the final
    model's first-pass pruner keeps for the arc model to score (with its
    recall of the gold arcs)."""
    from omkl import _omkl

    corpus = _omkl.ParseCorpus.from_path(str(test_file))

    def kept(m: Any) -> str:
        hit, gold, keep, cand = m._core.pruner_stats(corpus)
        return f"{100 * keep / cand:.1f}% ({100 * hit / gold:.2f}%)"

    n = rows[0][2][0]["examples"] if rows else 0  # the training sentences
    arc_losses = [round(h["loss"] / n, 3) for h in single.history_] if n else []
    print("\nWork per pass: hinge loss per training sentence of each arc epoch or round;")
    print("share of test arcs the final pruner keeps (its recall of gold arcs):\n")
    print("| run | loss per sentence by epoch or round | kept test arcs (recall) |")
    print("|---|---|---|")
    print(f"| 1 process | {arc_losses} | {kept(single)} |")
    for k, _, arc, _, _ in rows:
        per = [round(h["loss"] / h["examples"], 3) for h in arc]
        print(f"| K={k} | {per} | {kept(models[k])} |")


if __name__ == "__main__":
    main()
