"""Dependency parsing with online MKL over feature templates (EWT).

Trains (a) the SVM (ℓ2²) parser, (b) the MKL (squared ℓ2,1 over templates)
parser, and (c) the template-pruning curve: templates ranked by MKL's β and
by the SVM's template norms, SVM parsers retrained on the top fractions.
Writes ``parsing.json``, ``parsing.md`` and ``parsing_pruning.png`` to
``--out``. The results on UD English-EWT are in ``docs/parser.md``.

Train sentences/s count the arc-model epochs only; the first pass (arc
pruner) and the label stage are timed separately. ``--jobs`` parsers train at
the same time (threads: training runs in Rust with the GIL released), so the
per-model seconds and rates are wall-clock times while sharing the machine;
the total wall and CPU seconds and the load average are recorded too.

Examples
--------
From the command line (``--train`` and ``--test`` default to UD English-EWT
in ``../shared/data/ud-english-ewt`` when it exists)::

    omkl reproduce parsing --epochs 2 --max-train 2000 --out results/

The same run from Python, here on the bundled two-sentence treebank used for both
training and test, without the pruning curve:

>>> import contextlib, io, json, pathlib, shutil, tempfile
>>> from omkl.cli import main
>>> from omkl.datasets import sample_treebank
>>> path = sample_treebank()
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with contextlib.redirect_stdout(io.StringIO()):  # the run prints its table
...     status = main(["reproduce", "parsing", "--train", str(path), "--test", str(path),
...                    "--epochs", "2", "--no-pruning", "--out", str(folder / "results")])
>>> status
0
>>> sorted(p.name for p in (folder / "results").iterdir())
['parsing.json', 'parsing.md']
>>> result = json.loads((folder / "results" / "parsing.json").read_text())
>>> [(m["model"], m["uas"], m["las"]) for m in result["models"]]
[('SVM (l2)', 100.0, 100.0), ('MKL (squared l2,1)', 100.0, 100.0)]
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
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from omkl.experiments import add_plot_option, plots_wanted
from omkl.parsing import DependencyParser
from omkl.pipeline import alternatives_option

#: λ of the MKL parser (chosen on the dev set, see ``docs/parser.md``).
MKL_LAM = 1e-6
#: λ of the MKL run whose averaged β ranks the templates for the pruning curve,
#: larger than the MKL parser's so that its β separates the templates (chosen
#: on the dev set with ``studies/parser_prune_study.py``, see ``docs/parser.md``).
RANK_MKL_LAM = 1e-3
_DEFAULTS = DependencyParser()

EWT = pathlib.Path("shared") / "data" / "ud-english-ewt"


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _default(name: str) -> str | None:
    here = pathlib.Path(__file__).resolve()
    for base in (pathlib.Path.cwd().parent, here.parents[3].parent):
        p = base / EWT / name
        if p.exists():
            return str(p)
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    train, test = _default("en_ewt-ud-train.conllu"), _default("en_ewt-ud-test.conllu")
    parser.add_argument("--train", default=train, required=train is None)
    parser.add_argument("--test", default=test, required=test is None)
    parser.add_argument("--epochs", type=int, default=_DEFAULTS.epochs)
    parser.add_argument(
        "--prune-k", type=int, default=_DEFAULTS.prune_k, help="heads kept per word (0: none)"
    )
    parser.add_argument(
        "--pruner-epochs",
        type=int,
        default=_DEFAULTS.pruner_epochs,
        help="first-pass epochs of the arc pruner",
    )
    parser.add_argument(
        "--prune-margin",
        type=float,
        default=_DEFAULTS.prune_margin,
        help="log-odds margin of the first-pass pruner (inf: keep its top k)",
    )
    parser.add_argument(
        "--curve-epochs",
        type=int,
        default=0,
        help="epochs of the pruning-curve retrains (0: --epochs)",
    )
    parser.add_argument(
        "--curve-max-train",
        type=int,
        default=0,
        help="train the pruning-curve parsers on the first N sentences (0: all)",
    )
    parser.add_argument("--max-train", type=int, default=0, help="use the first N sentences")
    parser.add_argument("--svm-lam", type=float, default=_DEFAULTS.lam)
    parser.add_argument("--mkl-lam", type=float, default=MKL_LAM)
    parser.add_argument("--eta", type=float, default=_DEFAULTS.eta0)
    parser.add_argument(
        "--ranking-beta",
        choices=("averaged", "last"),
        default="averaged",
        help="rank templates by β of the averaged model (used for prediction) or of "
        "the last iterate",
    )
    parser.add_argument(
        "--rank-mkl-lam",
        type=float,
        default=RANK_MKL_LAM,
        help="rank by a separate, more strongly regularised MKL run with this λ, trained "
        "with the curve's budget (0: rank by the MKL parser above)",
    )
    parser.add_argument("--fractions", default="0.2,0.4,0.6,0.8,1.0")
    parser.add_argument("--no-pruning", action="store_true", help="skip the pruning curve")
    add_plot_option(parser, "parsing_pruning.png")
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="parsers trained at the same time (threads; training releases the GIL)",
    )
    parser.add_argument("--out", default=".")
    parser.add_argument(
        "--predicted-tags",
        action="store_true",
        help="parse text without gold tags: a MorphologyTagger predicts LEMMA, UPOS, XPOS and "
        "FEATS, and the SVM parser trains on tags jackknifed over --folds parts",
    )
    parser.add_argument("--folds", type=int, default=10, help="jackknife parts (--predicted-tags)")
    parser.add_argument(
        "--stack-folds",
        type=int,
        default=5,
        help="parts of the jackknife of the stacked parser (--predicted-tags; 0: one parser)",
    )
    parser.add_argument(
        "--tagger-epochs", type=int, default=15, help="epochs of each tagger (--predicted-tags)"
    )
    parser.add_argument(
        "--alternatives",
        type=alternatives_option,
        default="auto",
        help="the parser reads the tagger's second-best UPOS where its marginal reaches "
        "this threshold (--predicted-tags; auto: 1e-9; none: the tags alone)",
    )
    parser.add_argument(
        "--label-gold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the parser's label stage also learns from the gold-tagged training sentences "
        "(--predicted-tags)",
    )


def _train(
    args: argparse.Namespace, train: Any, test: Any, epochs: int | None = None, **kw: Any
) -> dict[str, Any]:
    epochs = epochs or args.epochs
    p = DependencyParser(
        eta0=args.eta,
        epochs=epochs,
        prune_k=args.prune_k,
        pruner_epochs=args.pruner_epochs,
        prune_margin=args.prune_margin,
        **kw,
    )
    t0 = time.perf_counter()
    p.fit(train)
    secs = time.perf_counter() - t0
    t1 = time.perf_counter()
    scores = p.score(test)
    parse_secs = time.perf_counter() - t1
    n_train = len(train) if not isinstance(train, str) else sum(1 for _ in _ids(train))
    arc_secs = sum(h["seconds"] for h in p.history_)
    return {
        "parser": p,
        "templates": len(p.template_names_),
        "epochs": epochs,
        "train_seconds": secs,
        "first_pass_seconds": sum(h["seconds"] for h in p.pruner_history_),
        "label_seconds": sum(h["seconds"] for h in p.label_history_),
        "train_sentences_per_s": n_train * epochs / arc_secs,
        "parse_seconds": parse_secs,
        "parse_sentences_per_s": n_sentences(test) / parse_secs,
        "pruner_recall": p.pruner_recall(test) if args.prune_k > 0 else None,
        "uas": scores["uas"],
        "las": scores["las"],
        "active_templates": sum(b > 0 for b in p.template_weights_),
        "table_slots": sum(p.table_sizes_),
    }


def _train_metrics(*args: Any, **kw: Any) -> dict[str, Any]:
    """:func:`_train` without the trained parser, so that the pruning curve
    does not keep every retrained parser in memory."""
    res = _train(*args, **kw)
    del res["parser"]
    return res


def _beta(p: DependencyParser, which: str) -> list[float]:
    if which == "averaged":
        beta = p.averaged_template_weights_
        if beta is not None:
            return beta
    return p.template_weights_


def _ids(path: str) -> list[str]:
    from omkl import _omkl

    return _omkl.ParseCorpus.from_path(path).ids()


def n_sentences(data: Any) -> int:
    return len(_ids(data)) if isinstance(data, str) else len(data)


def run_predicted(args: argparse.Namespace) -> int:
    """``--predicted-tags``: the SVM parser behind a
    :class:`~omkl.MorphologyTagger`, trained on jackknifed tags, scored on the
    test file from its word forms alone. Writes ``parsing_predicted.json`` and
    ``parsing_predicted.md``."""
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import read_conllu
    from omkl.pipeline import TextParser

    wall0, cpu0 = time.perf_counter(), time.process_time()
    test = read_conllu(args.test)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = read_conllu(args.train)
    if args.max_train:
        train = train[: args.max_train]

    parser = DependencyParser(
        eta0=args.eta,
        epochs=args.epochs,
        prune_k=args.prune_k,
        pruner_epochs=args.pruner_epochs,
        prune_margin=args.prune_margin,
        lam=args.svm_lam,
        stack_folds=args.stack_folds,
    )
    pipe = TextParser(
        MorphologyTagger(epochs=args.tagger_epochs),
        parser,
        folds=args.folds,
        alternatives=args.alternatives,
        label_gold=args.label_gold,
    )
    t0 = time.perf_counter()
    pipe.fit(train, progress=True)
    secs = time.perf_counter() - t0
    bare = [[{"id": t["id"], "form": t["form"]} for t in s] for s in test]
    t1 = time.perf_counter()
    pipe.predict(bare)
    tag_parse_secs = time.perf_counter() - t1
    scores = pipe.score(test)
    gold_scores = parser.score(test)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    result = {
        "train": args.train,
        "test": args.test,
        "max_train": args.max_train,
        "folds": args.folds,
        "stack_folds": args.stack_folds,
        "alternatives": args.alternatives,
        "label_gold": args.label_gold,
        "tagger_epochs": args.tagger_epochs,
        "epochs": args.epochs,
        "predicted": scores,
        "gold_morphology": gold_scores,
        "train_seconds": secs,
        "tag_and_parse_sentences_per_s": len(test) / tag_parse_secs,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "load_average": os.getloadavg(),
        "peak_memory_mb": peak_mb,
    }
    (out / "parsing_predicted.json").write_text(json.dumps(result, indent=2))
    cols = ["upos", "xpos", "feats", "alltags", "lemma", "uas", "las"]
    lines = [
        "| input of the parser | UPOS | XPOS | UFeats | AllTags | Lemma | UAS | LAS |",
        "|---|---|---|---|---|---|---|---|",
        "| predicted morphology (jackknifed training) | "
        + " | ".join(_fmt(scores[c]) for c in cols)
        + " |",
        "| gold morphology (the same parser) | | | | | | "
        f"{_fmt(gold_scores['uas'])} | {_fmt(gold_scores['las'])} |",
        "",
        f"{len(train)} training sentences, {args.folds} jackknife parts, stacked parser's "
        f"jackknife {args.stack_folds} parts, alternatives {args.alternatives}, label stage "
        f"also on gold tags {'yes' if args.label_gold else 'no'}, tagger epochs "
        f"{args.tagger_epochs}, parser epochs {args.epochs}; training {secs:.0f} s; tagging and "
        f"parsing {len(test) / tag_parse_secs:.0f} sentences/s; peak memory {peak_mb:.0f} MB; "
        f"wall {wall:.0f} s, CPU {cpu:.0f} s",
    ]
    (out / "parsing_predicted.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def run(args: argparse.Namespace) -> int:
    from omkl.parsing import read_conllu

    if args.predicted_tags:
        return run_predicted(args)
    plot = not args.no_pruning and plots_wanted(args, "parsing_pruning.png")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    # Read the test file first: a missing (FileNotFoundError) or malformed
    # (omkl.ParseError) file then fails at once, not after the training.
    _ids(args.test)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train: Any = args.train
    if args.max_train:
        train = read_conllu(args.train)[: args.max_train]
    curve_train: Any = train
    if args.curve_max_train:
        curve_train = read_conllu(args.train)[: args.curve_max_train]
    rows: list[dict[str, Any]] = []
    pool = ThreadPoolExecutor(max(1, args.jobs))
    svm_f = pool.submit(_train, args, train, args.test, regularizer="l2_squared", lam=args.svm_lam)
    mkl_f = pool.submit(_train, args, train, args.test, regularizer="squared_l21", lam=args.mkl_lam)
    svm, mkl = svm_f.result(), mkl_f.result()
    rows.append({"model": "SVM (l2)", **{k: v for k, v in svm.items() if k != "parser"}})
    rows.append({"model": "MKL (squared l2,1)", **{k: v for k, v in mkl.items() if k != "parser"}})
    for r in rows:
        print(r, flush=True)
    curve: dict[str, list[dict[str, Any]]] = {"mkl": [], "svm": []}
    rankings: dict[str, list[float]] = {}
    if not args.no_pruning:
        curve_epochs = args.curve_epochs or args.epochs
        ranker = mkl["parser"]
        if args.rank_mkl_lam:
            ranker = DependencyParser(
                regularizer="squared_l21",
                lam=args.rank_mkl_lam,
                eta0=args.eta,
                epochs=curve_epochs,
                prune_k=args.prune_k,
                pruner_epochs=args.pruner_epochs,
                prune_margin=args.prune_margin,
                label_epochs=0,
            ).fit(curve_train)
        rankings = {
            "mkl": _beta(ranker, args.ranking_beta),
            "svm": _beta(svm["parser"], args.ranking_beta),
        }
        n_t = len(rankings["mkl"])
        # One retrain per distinct template set (both rankings share 100%); the
        # SVM above is that retrain when the curve's budget is the full one.
        runs: dict[tuple[int, ...], Any] = {}
        if curve_train is train and curve_epochs == args.epochs:
            done: Future[dict[str, Any]] = Future()
            done.set_result(svm)
            runs[tuple(range(n_t))] = done
        plan = []
        for name, beta in rankings.items():
            order = sorted(range(n_t), key=lambda i: -beta[i])
            for frac in [float(f) for f in args.fractions.split(",")]:
                k = max(1, math.ceil(frac * n_t))
                key = tuple(sorted(order[:k]))
                if key not in runs:
                    runs[key] = pool.submit(
                        _train_metrics,
                        args,
                        curve_train,
                        args.test,
                        epochs=curve_epochs,
                        regularizer="l2_squared",
                        lam=args.svm_lam,
                        templates=list(key),
                    )
                plan.append((name, frac, k, key))
        for name, frac, k, key in plan:
            res = runs[key].result()
            row = {
                "ranking": name,
                "fraction": frac,
                "templates": k,
                "uas": res["uas"],
                "las": res["las"],
                "epochs": res["epochs"],
                "train_seconds": res["train_seconds"],
            }
            curve[name].append(row)
            print(row, flush=True)
        if plot:
            from omkl.plotting import plot_pruning_curve

            legend = {name: f"ranked by {name.upper()}" for name in curve}
            plot_pruning_curve(curve, "uas", "UAS (%)", out / "parsing_pruning.png", legend)
    pool.shutdown()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    load = os.getloadavg()
    sizes = svm["parser"].table_sizes_
    result = {
        "train": args.train,
        "test": args.test,
        "max_train": args.max_train,
        "curve_max_train": args.curve_max_train,
        "curve_epochs": args.curve_epochs or args.epochs,
        "prune_k": args.prune_k,
        "pruner_epochs": args.pruner_epochs,
        "prune_margin": args.prune_margin if math.isfinite(args.prune_margin) else None,
        "eta": args.eta,
        "svm_lam": args.svm_lam,
        "mkl_lam": args.mkl_lam,
        "ranking_beta": args.ranking_beta,
        "rank_mkl_lam": args.rank_mkl_lam or None,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "load_average": load,
        "mkl_beta_averaged": mkl["parser"].averaged_template_weights_,
        "mkl_beta": mkl["parser"].template_weights_,
        "ranking_betas": rankings or None,
        "template_names": mkl["parser"].template_names_,
        "models": rows,
        "pruning": curve,
        "peak_memory_mb": peak_mb,
        "table_slots_total": sum(sizes),
        "table_bytes_per_slot": 12,
    }
    (out / "parsing.json").write_text(json.dumps(result, indent=2))
    lines = [
        "| model | templates | active | epochs | train s | train sent/s | parse sent/s "
        "| pruner recall | UAS | LAS |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['templates']} | {r['active_templates']} | {r['epochs']} | "
            f"{r['train_seconds']:.0f} | {r['train_sentences_per_s']:.0f} | "
            f"{r['parse_sentences_per_s']:.0f} | {_fmt(r['pruner_recall'])} | "
            f"{r['uas']:.2f} | {_fmt(r['las'])} |"
        )
    if any(curve.values()):
        lines += [
            "",
            "| ranking | fraction | templates | epochs | UAS | LAS |",
            "|---|---|---|---|---|---|",
        ]
        for name, pts in curve.items():
            for p in pts:
                lines.append(
                    f"| {name} | {p['fraction']} | {p['templates']} | {p['epochs']} | "
                    f"{p['uas']:.2f} | {_fmt(p['las'])} |"
                )
    lines += [
        "",
        f"peak memory {peak_mb:.0f} MB; table slots {sum(sizes)}; "
        f"wall {wall:.0f} s, CPU {cpu:.0f} s; load average {load[0]:.2f}, {load[1]:.2f}, "
        f"{load[2]:.2f}",
        f"eta {args.eta:g}, SVM lam {args.svm_lam:g}, MKL lam {args.mkl_lam:g}; ranking by "
        f"{args.ranking_beta} beta"
        + (f" of an MKL run with lam {args.rank_mkl_lam:g}" if args.rank_mkl_lam else ""),
    ]
    (out / "parsing.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0
