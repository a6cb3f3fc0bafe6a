"""OCR: held-out accuracy and training objective of the quadratic, Gaussian
and MKL (L+Q+G) rows under training variants, for each C with its eta0
chosen by the protocol (lowest objective after 5 epochs, under the variant's
step schedule).

Only held-out words carved from the training fold are used (the split of
``omkl.experiments.ocr.run_fold``); the test folds are never touched.

Variants: ``avg``/``last`` (averaged or last iterate), ``const``/``sqrt``
(step eta0 or eta0/sqrt(t)), the number of epochs, and ``sepT`` (the
transitions penalised by (lambda/2)|theta_T|^2 apart from the kernel groups).
For each (row, C, variant) the script prints the held-out accuracy and the
objective of the last iterate after training (tracked by the core), then per
row and variant the mean over folds of the held-out accuracy at the C that
held-out accuracy selects.

    python studies/ocr_heldout_study.py --folds 2,3,4,5
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from omkl.experiments.ocr import (
    ETA_GRID,
    HELDOUT_FRACTION,
    ROWS,
    Corpus,
    fold_grams,
    heldout_accuracy,
    kernel_bases,
    make_split,
    train,
)

#: name: (averaged, schedule, epochs, transitions apart from the kernel groups)
VARIANTS = {
    "avg const 40": (True, "constant", 40, False),
    "avg const 20": (True, "constant", 20, False),
    "last const 40": (False, "constant", 40, False),
    "avg sqrt 40": (True, "inv_sqrt", 40, False),
    "avg const 40 sepT": (True, "constant", 40, True),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folds", default="2,3,4,5")
    p.add_argument("--C", default="1,10,100")
    p.add_argument("--rows", default="quadratic,gaussian,mkl_lqg")
    p.add_argument("--variants", default=";".join(VARIANTS), help="names separated by semicolons")
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    variants = {v: VARIANTS[v] for v in a.variants.split(";")}
    corpus = Corpus.load()
    cs = [float(c) for c in a.C.split(",")]
    rows = a.rows.split(",")
    # acc[row][variant][fold][C]
    acc: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    print("| fold | row | C | variant | eta0 | held-out % | objective (last iterate) |")
    print("|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for fold in [int(f) for f in a.folds.split(",")]:
            words = np.flatnonzero(corpus.folds == fold)
            inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
            bases = sorted({b for r in rows for b in kernel_bases(ROWS[r])})
            fg = fold_grams(corpus, inputs, bases)
            local = np.full(len(corpus.X), -1, dtype=np.int64)
            local[inputs] = np.arange(len(inputs))
            perm = np.random.default_rng(1000 + fold).permutation(words)
            n_held = max(1, int(round(HELDOUT_FRACTION * len(words))))
            held, sub = np.sort(perm[:n_held]), np.sort(perm[n_held:])
            sub_s, held_s = make_split(corpus, sub, local), make_split(corpus, held, local)
            for name in rows:
                row = ROWS[name]
                for C in cs:
                    lam = 1.0 / (C * sub_s.n_words)
                    etas = {}
                    for sched in sorted({v[1] for v in variants.values()}):
                        objs = {
                            e: pool.submit(
                                train, fg, row, sub_s, C, e, 5, track_objective=True, schedule=sched
                            )
                            for e in ETA_GRID
                        }
                        obj = {e: float(f.result()["objective"][-1]) for e, f in objs.items()}
                        etas[sched] = min(
                            ETA_GRID, key=lambda e: (obj[e] if np.isfinite(obj[e]) else np.inf, e)
                        )
                    runs = {
                        v: pool.submit(
                            train,
                            fg,
                            row,
                            sub_s,
                            C,
                            etas[sched],
                            ep,
                            average=avg,
                            schedule=sched,
                            track_objective=True,
                            transition_lam=lam if apart else None,
                        )
                        for v, (avg, sched, ep, apart) in variants.items()
                    }
                    for v, (_, sched, _, _) in variants.items():
                        res = runs[v].result()
                        h = 100 * heldout_accuracy(res, fg, held_s)
                        acc[name][v][fold][C] = h
                        print(
                            f"| {fold} | {name} | {C:g} | {v} | {etas[sched]:g} | {h:.2f} "
                            f"| {float(res['objective'][-1]):.5f} |",
                            flush=True,
                        )
    print()
    print("Held-out % at the C chosen by held-out accuracy, mean over folds")
    print("| row | " + " | ".join(variants) + " |")
    print("|---" * (1 + len(variants)) + "|")
    for name in rows:
        cells = []
        for v in variants:
            best = [max(by_c.values()) for by_c in acc[name][v].values()]
            cells.append(f"{np.mean(best):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
