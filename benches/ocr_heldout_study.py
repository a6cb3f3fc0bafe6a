"""OCR: held-out accuracy of the MKL (L+Q+G) row and the quadratic row under
training variants (averaged or last model, number of epochs, transitions
penalised inside the squared l2,1 norm or apart), for each C with its eta0
chosen by the protocol (lowest objective after 5 epochs).

Only held-out words carved from the training fold are used (the split of
``omkl.experiments.ocr.run_fold``); the test folds are never touched.

    python benches/ocr_heldout_study.py --folds 0,1
"""

from __future__ import annotations

import argparse
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

#: name: (averaged, epochs, transitions apart from the kernel groups)
VARIANTS = {
    "avg, 20 ep": (True, 20, True),
    "last, 20 ep": (False, 20, True),
    "avg, 40 ep": (True, 40, True),
    "avg, 40 ep, shared T": (True, 40, False),
    "avg, 80 ep, shared T": (True, 80, False),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folds", default="0,1")
    p.add_argument("--C", default="10,100,1000")
    p.add_argument("--rows", default="quadratic,mkl_lqg")
    p.add_argument("--variants", default=";".join(VARIANTS), help="names separated by semicolons")
    a = p.parse_args()
    variants = {v: VARIANTS[v] for v in a.variants.split(";")}
    corpus = Corpus.load()
    cs = [float(c) for c in a.C.split(",")]
    print("| fold | row | C | eta0 | " + " | ".join(variants) + " |")
    print("|---" * (4 + len(variants)) + "|")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for fold in [int(f) for f in a.folds.split(",")]:
            words = np.flatnonzero(corpus.folds == fold)
            inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
            bases = sorted({b for r in a.rows.split(",") for b in kernel_bases(ROWS[r])})
            fg = fold_grams(corpus, inputs, bases)
            local = np.full(len(corpus.X), -1, dtype=np.int64)
            local[inputs] = np.arange(len(inputs))
            perm = np.random.default_rng(1000 + fold).permutation(words)
            n_held = max(1, int(round(HELDOUT_FRACTION * len(words))))
            held, sub = np.sort(perm[:n_held]), np.sort(perm[n_held:])
            sub_s, held_s = make_split(corpus, sub, local), make_split(corpus, held, local)
            for name in a.rows.split(","):
                row = ROWS[name]
                for C in cs:
                    objs = {
                        e: pool.submit(train, fg, row, sub_s, C, e, 5, track_objective=True)
                        for e in ETA_GRID
                    }
                    obj = {e: float(f.result()["objective"][-1]) for e, f in objs.items()}
                    eta = min(
                        ETA_GRID, key=lambda e: (obj[e] if np.isfinite(obj[e]) else np.inf, e)
                    )
                    lam = 1.0 / (C * sub_s.n_words)
                    runs = {
                        v: pool.submit(
                            train,
                            fg,
                            row,
                            sub_s,
                            C,
                            eta,
                            ep,
                            average=avg,
                            transition_lam=lam if apart else None,
                        )
                        for v, (avg, ep, apart) in variants.items()
                    }
                    accs = [100 * heldout_accuracy(runs[v].result(), fg, held_s) for v in variants]
                    cells = " | ".join(f"{x:.2f}" for x in accs)
                    print(f"| {fold} | {name} | {C:g} | {eta:g} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
