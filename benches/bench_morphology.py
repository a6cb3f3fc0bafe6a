"""Morphology of UD English-EWT from the word forms (reads
``../shared/data/ud-english-ewt``): :class:`omkl.MorphologyTagger` trained on
the train file and scored on the test file with gold tokenisation (UPOS,
XPOS, UFeats, AllTags, Lemma), with its training seconds, tagging tokens/s,
model size and peak resident memory; and, in the same run, python-crfsuite
(L-BFGS, c1 = 0.1, c2 = 0.01, 100 iterations) and omkl's TextTagger (the
settings of the UPOS stage) on UPOS with the same features:
``token_features`` plus the UPOS ambiguity classes (from the other folds
for a training sentence). Exits cleanly without the data, and skips CRFsuite
when python-crfsuite is not installed.

With ``--compare-features`` it also tags the dev file (all columns) with the
stages' features computed in the core and with the same features built as
Python dicts (the path of ``TextTagger`` on dicts), checks that both give the
same tags, and prints the words per second of each (best of three runs).

    PYTHONPATH=python python benches/bench_morphology.py [--epochs 15] [--no-crfsuite]
        [--compare-features]
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import sys
import tempfile

from _common import best_time, crfsuite_trainer, timed

from omkl.morphology import MorphologyTagger, _ambiguity, _lexicon
from omkl.parsing import read_conllu

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def rss_mb() -> float:
    """Peak resident memory of the process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compare_features(model: MorphologyTagger, dev: list[list[dict[str, str]]]) -> None:
    """Tags ``dev`` (all columns) with the features computed in the core and
    with the feature dicts built in Python; prints the words per second of
    each (best of three runs) and whether they give the same tags."""
    bare = [[{"form": t["form"]} for t in s] for s in dev]
    n = sum(map(len, dev))
    core_tags = model.tag(bare)
    core_s = best_time(lambda: model.tag(bare), repeat=3)
    model._dict_features = True
    try:
        dict_tags = model.tag(bare)
        dict_s = best_time(lambda: model.tag(bare), repeat=3)
    finally:
        del model._dict_features
    same = "same tags" if core_tags == dict_tags else "DIFFERENT TAGS"
    print(f"tagging EWT dev ({len(dev)} sentences, {n} words), all columns, best of 3 runs:")
    print(f"  features computed in the core  {n / core_s:9,.0f} words/s")
    print(f"  feature dicts built in Python  {n / dict_s:9,.0f} words/s")
    print(f"  core / dicts {dict_s / core_s:.1f}x ({same})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--n-buckets", type=int, default=1 << 16)
    ap.add_argument("--no-crfsuite", action="store_true")
    ap.add_argument(
        "--compare-features",
        action="store_true",
        help="also time tagging the dev file with core features against Python dicts",
    )
    args = ap.parse_args()
    if not (DATA / "en_ewt-ud-train.conllu").exists():
        print(f"skipped: no EWT data in {DATA}")
        return
    train = read_conllu(DATA / "en_ewt-ud-train.conllu")
    test = read_conllu(DATA / "en_ewt-ud-test.conllu")
    n_train, n_test = sum(map(len, train)), sum(map(len, test))
    print(f"EWT: {len(train)} train sentences ({n_train} words), {len(test)} test ({n_test})")
    model = MorphologyTagger(n_buckets=args.n_buckets, folds=args.folds)
    _, fit_s, fit_cpu = timed(lambda: model.fit(train, epochs=args.epochs))
    fit_rss = rss_mb()
    scores, tag_s, _ = timed(lambda: model.score(test))
    print(
        f"omkl MorphologyTagger ({args.epochs} epochs per tagger, {args.folds} folds, "
        f"n_buckets={args.n_buckets})"
    )
    print("  " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    print(f"  training {fit_s:.1f} s ({fit_cpu:.1f} s CPU) for the five taggers and lexicons")
    print(f"  tagging (all columns, features included) {n_test / tag_s:,.0f} tokens/s")
    bare = [[{"form": t["form"]} for t in s] for s in test]
    for cols in ([], ["upos"], ["upos", "xpos"]):
        _, alt_s, _ = timed(lambda cols=cols: model.tag(bare, alternatives=cols))
        print(f"  tag(alternatives={cols}) {n_test / alt_s:,.0f} tokens/s")
    print(f"  model {model.__sizeof__() / 2**20:.0f} MB; peak RSS {fit_rss:.0f} MB")
    if args.compare_features:
        compare_features(model, read_conllu(DATA / "en_ewt-ud-dev.conllu"))
    if args.no_crfsuite:
        return
    trainer = crfsuite_trainer()
    if trainer is None:
        return
    import pycrfsuite

    # token features and UPOS ambiguity classes: from the other folds in
    # training, from the whole training set on the test file
    words = [[t["form"] for t in s] for s in train]
    upos = [[t["upos"] for t in s] for s in train]
    folds = args.folds
    amb = [
        _ambiguity(
            _lexicon(
                [w for i, w in enumerate(words) if i % folds != k],
                [u for i, u in enumerate(upos) if i % folds != k],
            ),
            model.min_share,
        )
        for k in range(folds)
    ]
    X = [model._stage_features(w, amb[i % folds]) for i, w in enumerate(words)]
    Xt = [model._stage_features([t["form"] for t in s], model._amb_upos) for s in test]
    Yt = [[t["upos"] for t in s] for s in test]
    same = model._tagger(args.n_buckets)
    _, same_s, _ = timed(lambda: same.fit(X, upos, epochs=args.epochs, shuffle=True))
    omkl_pred = same.predict(Xt)
    for x, y in zip(X, upos, strict=True):
        trainer.append(x, y)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp) / "ewt.crfsuite")
        _, crf_s, _ = timed(lambda: trainer.train(path))
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        crf_pred, crf_tag_s, _ = timed(lambda: [tagger.tag(x) for x in Xt])

    def acc(pred: list[list[object]]) -> float:
        hits = sum(
            p == g for ps, gs in zip(pred, Yt, strict=True) for p, g in zip(ps, gs, strict=True)
        )
        return 100.0 * hits / n_test

    print("python-crfsuite on UPOS, same features (L-BFGS, c1=0.1, c2=0.01, 100 iterations)")
    crf_rate = n_test / crf_tag_s
    print(f"  UPOS {acc(crf_pred):.2f}; training {crf_s:.1f} s; tagging {crf_rate:,.0f} tokens/s")
    print(f"omkl TextTagger on UPOS, same features ({args.epochs} epochs, as the UPOS stage)")
    print(f"  UPOS {acc(omkl_pred):.2f}; training {same_s:.1f} s")
    print(f"  peak RSS {rss_mb():.0f} MB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
