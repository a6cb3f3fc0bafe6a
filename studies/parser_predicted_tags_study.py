"""Dev-set accuracy of the parser on predicted morphology (EWT dev only).

Trains :class:`omkl.DependencyParser` on a training file whose LEMMA, UPOS,
XPOS and FEATS were predicted (jackknifed, as :class:`omkl.TextParser` does)
and scores it on a dev file whose morphology was predicted by a tagger
trained on all of the training set, against the gold dev file's heads and
relations (punctuation by its gold UPOS, as ``TextParser.score`` does). One
row per configuration: the default parser, template sets without the
templates that read XPOS, FEATS or the lemma, other parser settings, and
training on the predicted and the gold training sentences together. With
``--ensemble`` it also decodes the sum of the arc scores of the default
parser and of one trained on the gold tags, and with ``--oracle`` it parses
the dev file again with some predicted columns replaced by the gold ones
(which tagging errors cost the parser most). The test file is never read.

``make`` writes the predicted files first, with the recipe of
``omkl reproduce parsing --predicted-tags`` (``MorphologyTagger(epochs=5)``,
10 jackknife parts, seed 0); the jackknife trains ten taggers and takes
about 40 minutes on two cores, the rest a few minutes. ``--folds K`` splits
the training set into K jackknife parts instead (each tagger learns from
(K-1)/K of it, so fewer parts give less accurate training tags), and
``--jackknife-epochs E`` trains the jackknife taggers for E epochs while
the tagger of the dev (and test) file keeps ``--tagger-epochs``. Files
already in ``--out`` are kept, not written again: copying a
``dev.pred.conllu`` made with the same ``--tagger-epochs`` into a new
``--out`` saves training the dev tagger. ``make`` prints the tag accuracies
of the jackknifed training file and of the dev file against the gold ones.

Example::

    python studies/parser_predicted_tags_study.py make --out /tmp/pred
    python studies/parser_predicted_tags_study.py make --out /tmp/pred-f3 --folds 3
    python studies/parser_predicted_tags_study.py run \\
        /tmp/pred/train.pred.conllu /tmp/pred/dev.pred.conllu \\
        --configs base,no-xpos,no-feats,no-lemma --ensemble --oracle
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import time
from collections.abc import Sequence
from typing import Any

import _ewt
import numpy as np

from omkl import _omkl
from omkl.datasets.text import write_conllu
from omkl.parsing import DependencyParser, Sentence, _corpus, attachment_scores, read_conllu
from omkl.pipeline import MORPHOLOGY

#: Substrings of the template names that each template set leaves out.
DROPS: dict[str, tuple[str, ...]] = {
    "no-xpos": ("xpos",),
    "no-feats": ("feat",),
    "no-lemma": ("lemma",),
    "no-xpos-feats": ("xpos", "feat"),
    "forms-and-upos": ("xpos", "feat", "lemma"),
}
#: Other parser settings, as ``DependencyParser`` keyword arguments.
SETTINGS: dict[str, dict[str, Any]] = {
    "base": {},
    "seed-1": {"seed": 1},
    "margin-10": {"prune_margin": 10.0},
    "epochs-8": {"epochs": 8},
    "eta-0.006": {"eta0": 0.006},
    "label-epochs-5": {"label_epochs": 5},
    "label-epochs-20": {"label_epochs": 20},
}
CONFIGS = [*SETTINGS, *DROPS, "pred+gold"]


def make(args: argparse.Namespace) -> None:
    """Writes ``train.pred.conllu`` (jackknifed over ``--folds`` parts),
    ``dev.pred.conllu`` and, with ``--test``, ``test.pred.conllu`` to
    ``--out`` (keeping those already there), then prints the tag accuracies
    of the training and dev files."""
    from omkl.morphology import MorphologyTagger, tag_accuracies
    from omkl.pipeline import jackknife

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = read_conllu(args.train)
    epochs = args.tagger_epochs if args.jackknife_epochs is None else args.jackknife_epochs
    t0 = time.perf_counter()
    if not (out / "train.pred.conllu").exists():
        tagger = MorphologyTagger(epochs=epochs)
        pred = jackknife(train, tagger, args.folds, 0, progress=True)
        write_conllu(pred, out / "train.pred.conllu")
        print(
            f"jackknife ({args.folds} parts, {epochs} epochs): {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
    todo = [
        (name, path)
        for name, path in (("dev", args.dev), ("test", args.test))
        if path is not None and not (out / f"{name}.pred.conllu").exists()
    ]
    if todo:
        full = MorphologyTagger(epochs=args.tagger_epochs).fit(train)
        for name, path in todo:
            gold = read_conllu(path)
            tagged = full.tag([[{"id": t["id"], "form": t["form"]} for t in s] for s in gold])
            merged = [
                [
                    {**g, **{c: t.get(c, "_") for c in MORPHOLOGY}}
                    for g, t in zip(gs, ts, strict=True)
                ]
                for gs, ts in zip(gold, tagged, strict=True)
            ]
            write_conllu(merged, out / f"{name}.pred.conllu")
        print(f"tagged in {time.perf_counter() - t0:.0f} s", flush=True)
    print("| file | UPOS | XPOS | UFeats | AllTags | Lemma |")
    print("|---|---|---|---|---|---|")
    keys = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemma")
    for label, name, path in (
        ("train (jackknifed)", "train", args.train),
        ("dev", "dev", args.dev),
    ):
        acc = tag_accuracies(read_conllu(path), read_conllu(str(out / f"{name}.pred.conllu")))
        print(f"| {label} | " + " | ".join(f"{acc[k]:.2f}" for k in keys) + " |", flush=True)


def _scores(
    gold: Sequence[Sentence], heads: list[list[int]], rels: list[list[str]]
) -> dict[str, float | None]:
    return attachment_scores(
        [[t["head"] for t in s] for s in gold],
        heads,
        [[t["upos"] for t in s] for s in gold],
        [[t["deprel"] for t in s] for s in gold],
        rels,
    )


def _sentences(data: str | list[Sentence]) -> list[Sentence]:
    return read_conllu(data) if isinstance(data, str) else data


def run(args: argparse.Namespace) -> None:
    """Prints one Markdown row per configuration (and per ensemble)."""
    gold = read_conllu(args.dev)
    dev = read_conllu(args.dev_pred)
    if [len(s) for s in gold] != [len(s) for s in dev]:
        raise SystemExit(f"{args.dev_pred} and {args.dev} do not have the same sentences")
    names = DependencyParser().template_names_
    corpus = _corpus(dev)
    print("| configuration | templates | dev UAS | dev LAS | seconds |")
    print("|---|---|---|---|---|")
    kept: dict[str, DependencyParser] = {}
    train_pred: str | list[Sentence] = args.train_pred
    train_gold: str | list[Sentence] = args.train
    if args.max_train:
        train_pred = read_conllu(args.train_pred)[: args.max_train]
        train_gold = read_conllu(args.train)[: args.max_train]
    for config in args.configs.split(","):
        train = train_pred
        kw: dict[str, Any] = {}
        if config in DROPS:
            kw["templates"] = [
                i for i, n in enumerate(names) if not any(d in n for d in DROPS[config])
            ]
        elif config == "pred+gold":
            train = [*_sentences(train_pred), *_sentences(train_gold)]
        elif config in SETTINGS:
            kw = dict(SETTINGS[config])
        else:
            raise SystemExit(f"unknown configuration {config!r}; expected one of {CONFIGS}")
        t0 = time.perf_counter()
        parser = DependencyParser(**kw).fit(train)
        heads, rels = parser.parse_with_labels(dev)
        s = _scores(gold, heads, rels)
        n = len(kw.get("templates") or names)
        print(
            f"| {config} | {n} | {s['uas']:.2f} | {s['las']:.2f} | "
            f"{time.perf_counter() - t0:.0f} |",
            flush=True,
        )
        if config == "base":
            kept["base"] = parser
    if args.oracle:
        base = kept.setdefault("base", DependencyParser().fit(train_pred))
        for r in range(1, len(MORPHOLOGY) + 1):
            for cols in itertools.combinations(MORPHOLOGY, r):
                mixed = [
                    [{**p, **{c: g[c] for c in cols}} for g, p in zip(gs, ps, strict=True)]
                    for gs, ps in zip(gold, dev, strict=True)
                ]
                s = _scores(gold, *base.parse_with_labels(mixed))
                label = f"base, dev with gold {' + '.join(c.upper() for c in cols)}"
                print(f"| {label} | {len(names)} | {s['uas']:.2f} | {s['las']:.2f} | |")
    if args.ensemble:
        kept.setdefault("base", DependencyParser().fit(train_pred))
        kept["gold tags"] = DependencyParser().fit(train_gold)
        mats = {k: [np.asarray(m) for m in p._core.score_matrices(corpus)] for k, p in kept.items()}
        heads = []
        for i, sent in enumerate(dev):
            n1 = len(sent) + 1
            total = sum(np.nan_to_num(m[i], neginf=-1e9).reshape(n1, n1) for m in mats.values())
            tree, _ = _omkl.chu_liu_edmonds(np.asarray(total), single_root=True)
            heads.append([int(h) for h in tree[1:]])
        rels = kept["base"]._labeler.predict_corpus(corpus, heads)
        s = _scores(gold, heads, rels)
        label = "sum of arc scores: base + trained on gold tags (relations of base)"
        print(f"| {label} | {len(names)} | {s['uas']:.2f} | {s['las']:.2f} | |")


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    sub = ap.add_subparsers(dest="command", required=True)
    mk = sub.add_parser("make", help="write the predicted-tag files")
    mk.add_argument("--out", required=True)
    mk.add_argument("--tagger-epochs", type=int, default=5)
    mk.add_argument("--folds", type=int, default=10, help="jackknife parts of the training set")
    mk.add_argument(
        "--jackknife-epochs",
        type=int,
        default=None,
        help="epochs of the jackknife taggers only (default: --tagger-epochs)",
    )
    mk.add_argument("--test", default=None, help="also tag this file (never scored here)")
    rn = sub.add_parser("run", help="train and score the parsers")
    rn.add_argument("train_pred", help="training file with jackknifed predicted morphology")
    rn.add_argument("dev_pred", help="dev file with predicted morphology")
    rn.add_argument("--configs", default=",".join(CONFIGS), help=f"some of {CONFIGS}")
    rn.add_argument(
        "--ensemble", action="store_true", help="also decode base + a parser on gold tags"
    )
    rn.add_argument(
        "--oracle",
        action="store_true",
        help="also parse the dev file with some predicted columns replaced by gold ones",
    )
    args = _ewt.parse_dev_only(ap)
    if args.command == "make":
        make(args)
    else:
        if "test" in pathlib.Path(args.dev_pred).name:
            raise SystemExit("the study must be run on the dev file, not the test file")
        run(args)


if __name__ == "__main__":
    main()
