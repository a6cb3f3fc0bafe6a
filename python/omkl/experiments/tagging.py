"""Morphological tagging of UD English-EWT and template pruning.

Trains :class:`omkl.morphology.MorphologyTagger` on ``--train`` and scores
it on ``--test`` (gold tokenisation: UPOS, XPOS, UFeats, AllTags, Lemma).
Then the template-pruning curve: a UPOS :class:`~omkl.tagging.TextTagger`
on :func:`~omkl.tagging.token_features` is trained with the squared ℓ2,1
penalty (MKL) and one with ℓ2²; the templates are ranked by MKL's β and by
the ℓ2 model's template norms, and ℓ2² taggers are retrained on the top
``--fractions`` of each ranking. Writes ``tagging.json``, ``tagging.md``
and ``tagging_pruning.png`` to ``--out``.

Examples
--------
From the command line (``--train`` and ``--test`` default to UD English-EWT
in ``../shared/data/ud-english-ewt`` when it exists)::

    omkl reproduce tagging --out results/

The same run on the bundled two-sentence treebank used for both training and test:

>>> import contextlib, io, json, pathlib, shutil, tempfile
>>> from omkl.cli import main
>>> from omkl.datasets import sample_treebank
>>> path = sample_treebank()
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with contextlib.redirect_stdout(io.StringIO()):  # the run prints its tables
...     status = main(["reproduce", "tagging", "--train", str(path), "--test", str(path),
...                    "--epochs", "3", "--folds", "2", "--fractions", "0.5,1.0",
...                    "--out", str(folder / "r")])
>>> status, sorted(p.name for p in (folder / "r").iterdir())
(0, ['tagging.json', 'tagging.md', 'tagging_pruning.png'])
>>> result = json.loads((folder / "r" / "tagging.json").read_text())
>>> result["scores"]["UPOS"], [p["fraction"] for p in result["pruning"]["mkl"]]
(100.0, [0.5, 1.0])
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import resource
import time
from typing import Any

from omkl.experiments import add_plot_option, plots_wanted
from omkl.experiments.parsing import _default

#: λ of the squared ℓ2,1 (MKL) run that ranks the templates.
RANK_MKL_LAM = 1e-4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    train, test = _default("en_ewt-ud-train.conllu"), _default("en_ewt-ud-test.conllu")
    parser.add_argument("--train", default=train, required=train is None)
    parser.add_argument("--test", default=test, required=test is None)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--folds", type=int, default=10, help="folds of the ambiguity classes")
    parser.add_argument("--n-buckets", type=int, default=1 << 16)
    parser.add_argument("--lam", type=float, default=1e-6, help="λ of the ℓ2² taggers")
    parser.add_argument("--mkl-lam", type=float, default=RANK_MKL_LAM, help="λ of the MKL ranking")
    parser.add_argument("--curve-epochs", type=int, default=0, help="0: --epochs")
    parser.add_argument("--fractions", default="0.2,0.4,0.5,0.6,0.8,1.0")
    parser.add_argument("--no-pruning", action="store_true", help="skip the pruning curve")
    parser.add_argument("--out", default=".")
    add_plot_option(parser, "tagging_pruning.png")


def _upos_tagger(regularizer: str, lam: float, n_buckets: int) -> Any:
    from omkl.tagging import TextTagger

    return TextTagger(
        loss="hinge",
        regularizer=(regularizer, lam),
        schedule="constant",
        eta0=1.0,
        average=True,
        n_buckets=n_buckets,
    )


def _accuracy(pred: list[list[Any]], gold: list[list[str]]) -> float:
    pairs = [(p, g) for ps, gs in zip(pred, gold, strict=True) for p, g in zip(ps, gs, strict=True)]
    hits = sum(1 for p, g in pairs if p == g)
    return 100.0 * hits / len(pairs)


def run(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import read_conllu
    from omkl.tagging import token_features

    plot = not args.no_pruning and plots_wanted(args, "tagging_pruning.png")
    wall0 = time.perf_counter()
    test = read_conllu(args.test)
    train = read_conllu(args.train)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_train = sum(map(len, train))
    n_test = sum(map(len, test))
    model = MorphologyTagger(n_buckets=args.n_buckets, folds=args.folds)
    t0 = time.perf_counter()
    model.fit(train, epochs=args.epochs)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = model.score(test)
    tag_s = time.perf_counter() - t0
    print({"scores": scores, "train_seconds": train_s}, flush=True)
    del model

    curve: dict[str, list[dict[str, Any]]] = {"mkl": [], "l2": []}
    rankings: dict[str, dict[str, float]] = {}
    if not args.no_pruning:
        epochs = args.curve_epochs or args.epochs
        X = [token_features([t["form"] for t in s]) for s in train]
        Y = [[t["upos"] for t in s] for s in train]
        Xt = [token_features([t["form"] for t in s]) for s in test]
        Yt = [[t["upos"] for t in s] for s in test]
        mkl = _upos_tagger("squared_l21", args.mkl_lam, args.n_buckets)
        mkl.fit(X, Y, epochs=epochs, shuffle=True)
        rankings["mkl"] = mkl.template_weights_
        del mkl
        l2 = _upos_tagger("l2_squared", args.lam, args.n_buckets)
        l2.fit(X, Y, epochs=epochs, shuffle=True)
        rankings["l2"] = l2.template_weights_
        full = _accuracy(l2.predict(Xt), Yt)
        del l2
        names = sorted(rankings["l2"])
        runs: dict[tuple[str, ...], float] = {tuple(names): full}
        for name, beta in rankings.items():
            order = sorted(names, key=lambda g: (-beta.get(g, 0.0), g))
            for frac in [float(f) for f in args.fractions.split(",")]:
                k = max(1, math.ceil(frac * len(names)))
                keep = tuple(sorted(order[:k]))
                if keep not in runs:
                    kept = set(keep)

                    def select(xs: list[dict[str, Any]], kept: set[str] = kept) -> Any:
                        # a token left with no feature keeps an always-on one
                        return [{k: v for k, v in f.items() if k in kept} or {"": True} for f in xs]

                    tagger = _upos_tagger("l2_squared", args.lam, args.n_buckets)
                    tagger.fit([select(x) for x in X], Y, epochs=epochs, shuffle=True)
                    runs[keep] = _accuracy(tagger.predict([select(x) for x in Xt]), Yt)
                    del tagger
                row = {"ranking": name, "fraction": frac, "templates": k, "upos": runs[keep]}
                curve[name].append(row)
                print(row, flush=True)
        if plot:
            from omkl.plotting import plot_pruning_curve

            legend = {"mkl": "ranked by MKL β", "l2": "ranked by ℓ2 norms"}
            plot_pruning_curve(
                curve, "upos", "UPOS accuracy (%)", out / "tagging_pruning.png", legend
            )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall = time.perf_counter() - wall0
    result = {
        "train": args.train,
        "test": args.test,
        "epochs": args.epochs,
        "folds": args.folds,
        "n_buckets": args.n_buckets,
        "train_words": n_train,
        "test_words": n_test,
        "scores": scores,
        "train_seconds": train_s,
        "tag_words_per_s": n_test / tag_s,
        "rankings": rankings or None,
        "pruning": curve,
        "peak_memory_mb": peak_mb,
        "wall_seconds": wall,
        "load_average": os.getloadavg(),
    }
    (out / "tagging.json").write_text(json.dumps(result, indent=2))
    lines = [
        "| UPOS | XPOS | UFeats | AllTags | Lemma | train s | tag words/s |",
        "|---|---|---|---|---|---|---|",
        "| "
        + " | ".join(f"{scores[k]:.2f}" for k in ("UPOS", "XPOS", "UFeats", "AllTags", "Lemma"))
        + f" | {train_s:.0f} | {n_test / tag_s:,.0f} |",
    ]
    if any(curve.values()):
        lines += ["", "| ranking | fraction | templates | UPOS |", "|---|---|---|---|"]
        for name, pts in curve.items():
            for p in pts:
                lines.append(f"| {name} | {p['fraction']} | {p['templates']} | {p['upos']:.2f} |")
    lines += ["", f"peak memory {peak_mb:.0f} MB; wall {wall:.0f} s"]
    (out / "tagging.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0
