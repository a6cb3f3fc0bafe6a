"""OCR handwriting recognition: omkl (Alg. 3 on chains) against CRFsuite.

CRFsuite is the tool a user would pick instead: a linear-chain CRF trained by
L-BFGS (c2 = 1), with the 128 pixels as attributes ``{"p17": 1.0, ...}``;
with ``--pairs`` also with explicit pixel-pair attributes (every pair of "on"
pixels, the quadratic kernel's feature map up to weights; slow).
Both train on one fold and test on the other nine, in the same run, each in
its own child process (so that peak memory is measured separately). omkl
runs the rows of Table 1 at fixed hyper-parameters (no selection, like
CRFsuite's fixed c2); training time includes the Gram matrices.

    python benches/bench_ocr.py                 # folds 0 and 1
    python benches/bench_ocr.py --folds 0 --rows linear
    python benches/bench_ocr.py --folds 0 --pairs     # + CRFsuite on pixel pairs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def crfsuite_child(fold: int, c2: float, pairs: bool = False) -> dict[str, float]:
    import pycrfsuite

    from omkl.datasets import load_ocr

    data = load_ocr()
    names = np.array([f"p{i}" for i in range(128)])

    def attrs(on: np.ndarray) -> dict[str, float]:
        out = {str(n): 1.0 for n in names[on]}
        if pairs:
            idx = np.flatnonzero(on)
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    out[f"p{idx[a]}_{idx[b]}"] = 1.0
        return out

    def feats(x: np.ndarray) -> list[dict[str, float]]:
        return [attrs(row.astype(bool)) for row in x]

    train = [(feats(x), y) for (x, y), f in zip(data.words, data.folds, strict=True) if f == fold]
    test = [(feats(x), y) for (x, y), f in zip(data.words, data.folds, strict=True) if f != fold]
    t0, c0 = time.perf_counter(), time.process_time()
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for x, y in train:
        trainer.append(x, y)
    trainer.set_params({"c1": 0.0, "c2": c2})
    path = f"/tmp/omkl-bench-ocr-{fold}-{int(time.time() * 1e6)}.crfsuite"
    trainer.train(path)
    train_s, train_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    right = total = 0
    for x, y in test:
        pred = tagger.tag(x)
        right += sum(a == b for a, b in zip(pred, y, strict=True))
        total += len(y)
    tagger.close()
    import os

    os.remove(path)
    return {
        "train_s": train_s,
        "train_cpu_s": train_cpu_s,
        "test_s": time.perf_counter() - t1,
        "accuracy": right / total,
    }


def omkl_child(fold: int, row_name: str, C: float, eta0: float, epochs: int) -> dict[str, float]:
    from omkl.experiments.ocr import (
        ROWS,
        Corpus,
        fold_grams,
        kernel_bases,
        make_split,
        other_folds_accuracy,
        train,
    )

    corpus = Corpus.load()
    row = ROWS[row_name]
    t0, c0 = time.perf_counter(), time.process_time()
    words = np.flatnonzero(corpus.folds == fold)
    inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    fg = fold_grams(corpus, inputs, kernel_bases(row))
    gram_s = time.perf_counter() - t0
    local = np.full(len(corpus.X), -1, dtype=np.int64)
    local[inputs] = np.arange(len(inputs))
    t1 = time.perf_counter()
    model = train(fg, row, make_split(corpus, words, local), C, eta0, epochs)
    update_s, train_cpu_s = time.perf_counter() - t1, time.process_time() - c0
    t2 = time.perf_counter()
    accuracy = other_folds_accuracy(corpus, fg, row, model, fold)
    return {
        "train_s": gram_s + update_s,
        "train_cpu_s": train_cpu_s,
        "gram_s": gram_s,
        "update_s": update_s,
        "test_s": time.perf_counter() - t2,
        "accuracy": accuracy,
    }


def child(argv: list[str]) -> None:
    kind, fold = argv[0], int(argv[1])
    if kind == "crfsuite":
        out = crfsuite_child(fold, float(argv[2]))
    elif kind == "crfsuite_pairs":
        out = crfsuite_child(fold, float(argv[2]), pairs=True)
    else:
        out = omkl_child(fold, argv[2], float(argv[3]), float(argv[4]), int(argv[5]))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def cpu(xs: list[dict[str, float]]) -> float:
    return float(np.mean([x["train_cpu_s"] for x in xs]))


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def spawn(*args: object) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", *map(str, args)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folds", default="0,1")
    p.add_argument("--rows", default="linear,quadratic,mkl_lqg")
    p.add_argument("--C", type=float, default=1e3)
    p.add_argument("--eta0", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--c2", type=float, default=1.0)
    p.add_argument("--pairs", action="store_true", help="also CRFsuite on pixel pairs (slow)")
    a = p.parse_args()
    folds = [int(f) for f in a.folds.split(",")]
    rows = [r for r in a.rows.split(",") if r]
    print(f"OCR, train on one fold, test on nine; folds {folds}")
    print(f"omkl: C = {a.C:g}, eta0 = {a.eta0:g} (constant), {a.epochs} epochs, averaged")
    print(f"CRFsuite: L-BFGS, c2 = {a.c2:g}, pixel attributes\n")
    res: dict[str, list[dict[str, float]]] = {"crfsuite": []}
    for f in folds:
        res["crfsuite"].append(spawn("crfsuite", f, a.c2))
        if a.pairs:
            res.setdefault("crfsuite_pairs", []).append(spawn("crfsuite_pairs", f, a.c2))
        for r in rows:
            res.setdefault(r, []).append(spawn("omkl", f, r, a.C, a.eta0, a.epochs))
    crf = res["crfsuite"]
    crf_t = float(np.mean([x["train_s"] for x in crf]))
    crf_c = float(np.mean([x["train_cpu_s"] for x in crf]))
    crf_acc = float(np.mean([x["accuracy"] for x in crf]))
    head = (
        f"{'method':<18}{'accuracy %':>11}{'train s/fold':>14}{'(Gram+update)':>16}"
        f"{'test s/fold':>13}{'peak MB':>9}{'speed-up vs CRFsuite':>22}"
        f"{'train CPU s':>13}{'CPU speed-up':>14}"
    )
    print(head)
    print("-" * len(head))
    for name, xs in res.items():
        acc = 100 * float(np.mean([x["accuracy"] for x in xs]))
        t = float(np.mean([x["train_s"] for x in xs]))
        split = (
            f"({np.mean([x['gram_s'] for x in xs]):.2f}+{np.mean([x['update_s'] for x in xs]):.2f})"
            if "gram_s" in xs[0]
            else ""
        )
        label = {"crfsuite": "CRFsuite linear", "crfsuite_pairs": "CRFsuite pairs"}.get(
            name, f"omkl {name}"
        )
        print(
            f"{label:<18}{acc:>11.2f}{t:>14.2f}{split:>16}"
            f"{np.mean([x['test_s'] for x in xs]):>13.2f}"
            f"{max(x['peak_rss_mb'] for x in xs):>9.0f}{crf_t / t:>21.1f}x"
            f"{cpu(xs):>13.2f}{crf_c / cpu(xs):>13.1f}x"
        )
    print(
        f"\nCRFsuite accuracy {100 * crf_acc:.2f}%, train {crf_t:.2f} s per fold "
        f"({crf_c:.2f} CPU s). Wall times depend on the machine's load (os.getloadavg() "
        f"= {', '.join(f'{v:.1f}' for v in os.getloadavg())}); CPU seconds count every thread "
        "of the process."
    )
    best = max(
        100 * float(np.mean([x["accuracy"] for x in xs]))
        for name, xs in res.items()
        if name.startswith("crfsuite")
    )
    for name, xs in res.items():
        if name.startswith("crfsuite"):
            continue
        acc = 100 * float(np.mean([x["accuracy"] for x in xs]))
        t, c = float(np.mean([x["train_s"] for x in xs])), cpu(xs)
        if name == "linear":
            ok = [acc >= 100 * crf_acc and r >= 10 for r in (crf_t / t, crf_c / c)]
            print(
                f"omkl linear: {crf_t / t:.1f}x faster than CRFsuite linear in wall time, "
                f"{crf_c / c:.1f}x in CPU time, accuracy {acc - 100 * crf_acc:+.2f} points "
                f"(target >= 10x at equal or better accuracy): wall {verdict(ok[0])}, "
                f"CPU {verdict(ok[1])}"
            )
        else:
            ok = [acc > best and t < crf_t, acc > best and c < crf_c]
            print(
                f"omkl {name}: accuracy {acc - best:+.2f} points vs CRFsuite's best, train "
                f"time {t / crf_t:.2f}x (CPU {c / crf_c:.2f}x) CRFsuite linear's (target: "
                f"better accuracy in less time): wall {verdict(ok[0])}, CPU {verdict(ok[1])}"
            )


if __name__ == "__main__":
    main()
