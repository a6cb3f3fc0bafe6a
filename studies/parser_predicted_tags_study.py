"""Dev-set accuracy of the parser on predicted morphology (EWT dev only).

Trains :class:`omkl.DependencyParser` on a training file whose LEMMA, UPOS,
XPOS and FEATS were predicted (jackknifed, as :class:`omkl.TextParser` does)
and scores it on a dev file whose morphology was predicted by a tagger
trained on all of the training set, against the gold dev file's heads and
relations (punctuation by its gold UPOS, as ``TextParser.score`` does). One
row per configuration: the default parser, template sets without the
templates that read XPOS, FEATS or the lemma, other parser settings (among
them the stacked parser, ``stack-5``: ``DependencyParser(stack_folds=5)``,
which trains seven parsers), and training on the predicted and the gold
training sentences together. With
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

``make --upos-alternatives`` also writes each word's alternative UPOS and
XPOS into FEATS, as the pseudo-features ``UposAlt=tag:p`` and
``XposAlt=tag:p``: the label other than the predicted one with the largest
marginal of the UPOS (XPOS) stage (``MorphologyTagger.tag(...,
alternatives=["upos", "xpos"])``). ``run`` drops these pseudo-features from every
configuration but ``alt-TAU``, which keeps ``UposAlt=tag`` (without ``p``)
on the words whose alternative has ``p >= TAU``, in the training and the
dev file, so that the parser's templates and the label stage read it beside
the predicted UPOS, as ``TextParser(alternatives=TAU)`` does, and
``altx-TAU``, which keeps ``XposAlt=tag`` as well (``alt-TAU/S``: with the
parser's ``seed=S``). A suffix ``+stack-K`` trains the configuration's
parser with ``stack_folds=K``, and a final ``+labgold`` lets its label
stage learn from the gold-tagged training sentences as well
(``DependencyParser.fit(..., label_variant=gold)``, as ``TextParser`` does
with ``label_gold=True``). ``run`` first prints, per threshold, how
many dev words get an alternative UPOS and how many of the UPOS errors
they cover.

Example::

    python studies/parser_predicted_tags_study.py make --out /tmp/pred
    python studies/parser_predicted_tags_study.py make --out /tmp/pred-f3 --folds 3
    python studies/parser_predicted_tags_study.py run \\
        /tmp/pred/train.pred.conllu /tmp/pred/dev.pred.conllu \\
        --configs base,no-xpos,no-feats,no-lemma --ensemble --oracle
    python studies/parser_predicted_tags_study.py make --out /tmp/pred-alt --folds 5 \\
        --upos-alternatives
    python studies/parser_predicted_tags_study.py run \\
        /tmp/pred-alt/train.pred.conllu /tmp/pred-alt/dev.pred.conllu \\
        --configs base,alt-1e-09,alt-1e-06
    python studies/parser_predicted_tags_study.py run \\
        /tmp/pred-alt/train.pred.conllu /tmp/pred-alt/dev.pred.conllu \\
        --configs stack-5,stack-5-seed-1
    python studies/parser_predicted_tags_study.py run \\
        /tmp/pred-alt/train.pred.conllu /tmp/pred-alt/dev.pred.conllu \\
        --configs alt-1e-09+stack-5,alt-1e-09/1+stack-5
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
    "stack-2": {"stack_folds": 2},
    "stack-3": {"stack_folds": 3},
    "stack-5": {"stack_folds": 5},
    "stack-5-seed-1": {"stack_folds": 5, "seed": 1},
    "stack-10": {"stack_folds": 10},
}
CONFIGS = [*SETTINGS, *DROPS, "pred+gold"]


#: The pseudo-features of FEATS that carry a token's alternative UPOS and XPOS.
ALT = "UposAlt"
XALT = "XposAlt"


def _with_alt(feats: str, alt: str, p: float | None, name: str = "UposAlt") -> str:
    """``feats`` with the pseudo-feature ``name=alt`` (``:p`` appended
    when ``p`` is given) as its last item."""
    item = f"{name}={alt}" if p is None else f"{name}={alt}:{p:.4g}"
    return item if feats in ("", "_") else f"{feats}|{item}"


def _split_alt(feats: str) -> tuple[str, dict[str, tuple[str, float]]]:
    """``feats`` without its ``UposAlt=tag:p`` and ``XposAlt=tag:p``
    pseudo-features, and those features' ``(tag, p)`` by name."""
    keep, alts = [], {}
    for v in str(feats).split("|"):
        name, _, value = v.partition("=")
        if name in (ALT, XALT):
            tag, _, prob = value.rpartition(":")
            alts[name] = (tag, float(prob))
        elif v not in ("", "_"):
            keep.append(v)
    return "|".join(keep) or "_", alts


def _alternatives(
    sentences: list[Sentence], tau: float | None, names: tuple[str, ...] = (ALT,)
) -> list[Sentence]:
    """Copies of ``sentences`` without the ``UposAlt=tag:p`` and
    ``XposAlt=tag:p`` pseudo-features of ``make --upos-alternatives``,
    except, with ``tau``, ``name=tag`` (no probability) for each of
    ``names`` on the tokens whose alternative has ``p >= tau``."""
    out = []
    for sent in sentences:
        new = []
        for tok in sent:
            feats, alts = _split_alt(tok.get("feats", "_"))
            for name in names:
                alt = alts.get(name)
                if alt is not None and tau is not None and alt[1] >= tau:
                    feats = _with_alt(feats, alt[0], None, name)
            new.append({**tok, "feats": feats})
        out.append(new)
    return out


def _with_alternatives(sentences: Sequence[Sentence]) -> list[Sentence]:
    """``sentences`` tagged with ``alternatives=["upos", "xpos"]``, their ``upos_alt``
    and ``xpos_alt`` written into FEATS as ``UposAlt=tag:p`` and
    ``XposAlt=tag:p``."""
    out = []
    for sent in sentences:
        new = []
        for tok in sent:
            t = {k: v for k, v in tok.items() if k not in ("upos_alt", "xpos_alt")}
            for key, name in (("upos_alt", ALT), ("xpos_alt", XALT)):
                if key in tok:
                    t["feats"] = _with_alt(t["feats"], *tok[key], name=name)
            new.append(t)
        out.append(new)
    return out


def make(args: argparse.Namespace) -> None:
    """Writes ``train.pred.conllu`` (jackknifed over ``--folds`` parts),
    ``dev.pred.conllu`` and, with ``--test``, ``test.pred.conllu`` to
    ``--out`` (keeping those already there), then prints the tag accuracies
    of the training and dev files."""
    from omkl.morphology import MorphologyTagger, tag_accuracies
    from omkl.pipeline import jackknife

    def with_alternatives(model: MorphologyTagger, sents: list[Sentence]) -> list[Sentence]:
        return _with_alternatives(model.tag(sents, alternatives=["upos", "xpos"]))

    tag = with_alternatives if args.upos_alternatives else None

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = read_conllu(args.train)
    epochs = args.tagger_epochs if args.jackknife_epochs is None else args.jackknife_epochs
    t0 = time.perf_counter()
    if not (out / "train.pred.conllu").exists():
        tagger = MorphologyTagger(epochs=epochs)
        pred = jackknife(train, tagger, args.folds, 0, progress=True, tag=tag)
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
            words = [[{"id": t["id"], "form": t["form"]} for t in s] for s in gold]
            tagged = full.tag(words) if tag is None else tag(full, words)
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
        pred = _alternatives(read_conllu(str(out / f"{name}.pred.conllu")), None)
        acc = tag_accuracies(read_conllu(path), pred)
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


def _breakdown(
    gold: Sequence[Sentence],
    pred: Sequence[Sentence],
    heads: list[list[int]],
    rels: list[list[str]],
) -> list[tuple[tuple[str, str, str], float]]:
    """The share (percent) of the non-punctuation words of ``gold`` by
    whether their predicted UPOS, head and relation are right."""
    counts: dict[tuple[str, str, str], int] = {}
    n = 0
    for gs, ps, hs, rs in zip(gold, pred, heads, rels, strict=True):
        for g, p, h, r in zip(gs, ps, hs, rs, strict=True):
            if g["upos"] == "PUNCT":
                continue
            n += 1
            key = (_right(p["upos"] == g["upos"]), _right(h == g["head"]), _right(r == g["deprel"]))
            counts[key] = counts.get(key, 0) + 1
    return [(k, 100 * v / n) for k, v in sorted(counts.items())]


def _right(ok: bool) -> str:
    return "right" if ok else "wrong"


def _sentences(data: str | list[Sentence]) -> list[Sentence]:
    return read_conllu(data) if isinstance(data, str) else data


def _alt_coverage(gold: Sequence[Sentence], pred: Sequence[Sentence], taus: list[float]) -> None:
    """Prints, for each threshold, the share of the words of ``pred`` (with
    ``UposAlt=tag:p`` pseudo-features) whose alternative UPOS has
    ``p >= tau``, the share of the UPOS errors among them, and how often
    the alternative is the gold UPOS where the prediction is wrong."""
    rows = []
    for gs, ps in zip(gold, pred, strict=True):
        for g, t in zip(gs, ps, strict=True):
            alt = _split_alt(t["feats"])[1].get(ALT)
            if alt is not None:
                rows.append((alt[1], t["upos"] != g["upos"], alt[0] == g["upos"]))
    if not rows:
        return
    errors = sum(w for _, w, _ in rows)
    print("| p(alternative) >= | words | their UPOS errors | errors covered | alternative right |")
    print("|---|---|---|---|---|")
    for tau in taus:
        sel = [(w, r) for p, w, r in rows if p >= tau]
        wrong = sum(w for w, _ in sel)
        right = sum(w and r for w, r in sel)
        print(
            f"| {tau:g} | {100 * len(sel) / len(rows):.2f}% | "
            f"{100 * wrong / max(len(sel), 1):.1f}% | {100 * wrong / max(errors, 1):.1f}% | "
            f"{100 * right / max(wrong, 1):.1f}% |",
            flush=True,
        )


def run(args: argparse.Namespace) -> None:
    """Prints one Markdown row per configuration (and per ensemble)."""
    gold = read_conllu(args.dev)
    dev_alt = read_conllu(args.dev_pred)
    dev = _alternatives(dev_alt, None)
    if [len(s) for s in gold] != [len(s) for s in dev]:
        raise SystemExit(f"{args.dev_pred} and {args.dev} do not have the same sentences")
    taus = [
        float(c.partition("-")[2].partition("+")[0].partition("/")[0])
        for c in args.configs.split(",")
        if c.startswith(("alt-", "altx-"))
    ]
    _alt_coverage(gold, dev_alt, sorted({1e-6, 1e-4, 1e-3, 0.01, 0.1, 0.3, *taus}))
    names = DependencyParser().template_names_
    corpus = _corpus(dev)
    print("| configuration | templates | dev UAS | dev LAS | seconds |")
    print("|---|---|---|---|---|")
    kept: dict[str, DependencyParser] = {}
    errors: list[tuple[str, list[tuple[tuple[str, str, str], float]]]] = []
    train_alt = read_conllu(args.train_pred)
    train_gold: str | list[Sentence] = args.train
    if args.max_train:
        train_alt = train_alt[: args.max_train]
        train_gold = read_conllu(args.train)[: args.max_train]
    train_pred: list[Sentence] = _alternatives(train_alt, None)
    for label in args.configs.split(","):
        config, gold_labels = label.removesuffix("+labgold"), label.endswith("+labgold")
        config, _, stack = config.partition("+stack-")
        train = train_pred
        parse = dev
        kw: dict[str, Any] = {}
        if config.startswith(("alt-", "altx-")):
            kind, _, rest = config.partition("-")
            tau, _, seed = rest.partition("/")
            alts = (ALT, XALT) if kind == "altx" else (ALT,)
            train = _alternatives(train_alt, float(tau), alts)
            parse = _alternatives(dev_alt, float(tau), alts)
            if seed:
                kw["seed"] = int(seed)
        elif config in DROPS:
            kw["templates"] = [
                i for i, n in enumerate(names) if not any(d in n for d in DROPS[config])
            ]
        elif config == "pred+gold":
            train = [*_sentences(train_pred), *_sentences(train_gold)]
        elif config in SETTINGS:
            kw = dict(SETTINGS[config])
        else:
            raise SystemExit(
                f"unknown configuration {config!r}; expected one of {CONFIGS}, alt-TAU or altx-TAU"
            )
        if stack:
            kw["stack_folds"] = int(stack)
        t0 = time.perf_counter()
        variant = _sentences(train_gold) if gold_labels else None
        parser = DependencyParser(**kw).fit(train, label_variant=variant)
        heads, rels = parser.parse_with_labels(parse)
        s = _scores(gold, heads, rels)
        n = len(kw.get("templates") or names)
        print(
            f"| {label} | {n} | {s['uas']:.2f} | {s['las']:.2f} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )
        if args.errors:
            errors.append((label, _breakdown(gold, parse, heads, rels)))
        if label == "base":
            kept["base"] = parser
    for label, rows in errors:
        print(f"\nWords of dev (no punctuation) by outcome, {label}:\n")
        print("| UPOS | head | relation | words |")
        print("|---|---|---|---|")
        for row, share in rows:
            print(f"| {' | '.join(row)} | {share:.2f}% |")
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
    mk.add_argument(
        "--upos-alternatives",
        action="store_true",
        help="also write each word's alternative UPOS and its marginal into FEATS",
    )
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
    rn.add_argument(
        "--errors",
        action="store_true",
        help="also print the share of dev words by whether UPOS, head and relation are right",
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
