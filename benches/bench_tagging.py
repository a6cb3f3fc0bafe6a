"""UPOS tagging of UD English-EWT (reads ``../shared/data/ud-english-ewt``):
omkl's :class:`~omkl.tagging.TextTagger` against python-crfsuite, in the same
run, with the same features (:func:`omkl.tagging.token_features`).

Trains both on the train file and tags the test file (gold tokenisation), and
prints for each: UPOS accuracy, training seconds (all epochs or iterations),
tokens/s of training and of tagging, and the peak resident memory after it;
for omkl also tokens/s of ``learn_one`` (one sentence at a time from Python,
on the first ``--learn-one-sentences`` sentences) and the model's bytes.
CRFsuite runs L-BFGS with c1 = 0.1, c2 = 0.01 and 100 iterations (the
sklearn-crfsuite tutorial's settings). Exits cleanly without the data, and
skips CRFsuite when python-crfsuite is not installed.

    PYTHONPATH=python python benches/bench_tagging.py [--epochs 15] [--no-shuffle] [--no-crfsuite]
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import resource
import sys
import tempfile
from typing import Any

from _common import crfsuite_trainer, timed

from omkl.datasets import read_conllu
from omkl.tagging import TextTagger, token_features

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def rss_mb() -> float:
    """Peak resident memory of the process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def accuracy(pred: list[list[str]], gold: list[list[str]]) -> float:
    pairs = [(p, g) for ps, gs in zip(pred, gold, strict=True) for p, g in zip(ps, gs, strict=True)]
    return 100.0 * sum(p == g for p, g in pairs) / len(pairs)


def text_tagger(
    loss: str = "hinge",
    regularizer: str = "l2_squared",
    lam: float = 1e-6,
    eta0: float = 1.0,
    schedule: str = "constant",
    n_buckets: int = 1 << 16,
) -> TextTagger:
    """The averaged :class:`TextTagger` of this benchmark (its defaults are
    the command line's)."""
    return TextTagger(
        loss=loss,
        regularizer=(regularizer, lam),
        eta0=eta0,
        schedule=schedule,
        average=True,
        n_buckets=n_buckets,
    )


def crfsuite_upos(
    X: list[Any], Y: list[list[str]], Xt: list[Any], path: pathlib.Path
) -> dict[str, Any] | None:
    """The peer: python-crfsuite with the settings of
    :func:`_common.crfsuite_trainer`, trained on the feature sentences ``X``
    with tags ``Y`` into the model file ``path``, then tagging ``Xt``:
    ``pred`` (the tags), ``append_s`` (seconds to hand the data over),
    ``train_s``, ``tag_s``, ``train_rss_mb`` (peak RSS after training) and
    ``model_bytes``; ``None`` when python-crfsuite is not installed."""
    trainer = crfsuite_trainer()
    if trainer is None:
        return None
    import pycrfsuite

    _, append_s, _ = timed(lambda: [trainer.append(x, y) for x, y in zip(X, Y, strict=True)])
    _, train_s, _ = timed(lambda: trainer.train(str(path)))
    train_rss = rss_mb()
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    pred, tag_s, _ = timed(lambda: [tagger.tag(x) for x in Xt])
    tagger.close()
    return {
        "pred": pred,
        "append_s": append_s,
        "train_s": train_s,
        "tag_s": tag_s,
        "train_rss_mb": train_rss,
        "model_bytes": path.stat().st_size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--loss", default="hinge")
    ap.add_argument("--eta0", type=float, default=1.0)
    ap.add_argument("--schedule", default="constant")
    ap.add_argument("--lam", type=float, default=1e-6)
    ap.add_argument("--regularizer", default="l2_squared")
    ap.add_argument("--n-buckets", type=int, default=1 << 16)
    ap.add_argument("--learn-one-sentences", type=int, default=2000)
    ap.add_argument("--no-shuffle", action="store_true", help="every epoch in file order")
    ap.add_argument("--no-crfsuite", action="store_true")
    args = ap.parse_args()
    if not (DATA / "en_ewt-ud-train.conllu").exists():
        print(f"skipped: no EWT data in {DATA}")
        return

    def load(split: str) -> tuple[list[list[str]], list[list[str]]]:
        sents = read_conllu(DATA / f"en_ewt-ud-{split}.conllu")
        return [[t["form"] for t in s] for s in sents], [[t["upos"] for t in s] for s in sents]

    (train_w, train_y), (test_w, test_y) = load("train"), load("test")
    (X, Xt), feat_s, _ = timed(
        lambda: ([token_features(w) for w in train_w], [token_features(w) for w in test_w])
    )
    n_train = sum(map(len, train_y))
    n_test = sum(map(len, test_y))
    print(f"EWT: {len(X)} train sentences ({n_train} tokens), {len(Xt)} test ({n_test} tokens)")
    print(f"features (token_features, both files): {feat_s:.1f} s")

    def make() -> TextTagger:
        return text_tagger(
            args.loss, args.regularizer, args.lam, args.eta0, args.schedule, args.n_buckets
        )

    k = args.learn_one_sentences
    one = make()
    for xs, ys in zip(X[:k], train_y[:k], strict=True):  # every label appears in these
        one.learn_one(xs, ys)

    def learn_ones(model: TextTagger) -> None:
        for xs, ys in zip(X[k : 2 * k], train_y[k : 2 * k], strict=True):
            model.learn_one(xs, ys)

    _, one_s, _ = timed(functools.partial(learn_ones, one))
    one_tokens = sum(map(len, train_y[k : 2 * k]))
    del one

    tagger = make()
    _, fit_s, fit_cpu = timed(
        lambda: tagger.fit(X, train_y, epochs=args.epochs, shuffle=not args.no_shuffle)
    )
    fit_rss = rss_mb()
    pred, tag_s, _ = timed(lambda: tagger.predict(Xt))
    acc = accuracy(pred, test_y)
    print(
        f"omkl TextTagger (loss={args.loss}, {args.regularizer} {args.lam:g}, {args.schedule} "
        f"eta0={args.eta0:g}, "
        f"averaged, n_buckets={args.n_buckets}, {args.epochs} epochs"
        f"{'' if args.no_shuffle else ', shuffled'})"
    )
    print(f"  UPOS accuracy {acc:.2f}")
    fit_rate = args.epochs * n_train / fit_s
    print(f"  training {fit_s:.1f} s ({fit_cpu:.1f} s CPU), fit {fit_rate:,.0f} tokens/s")
    print(f"  learn_one {one_tokens / one_s:,.0f} tokens/s (sentences {k} to {2 * k})")
    mb = tagger.__sizeof__() / 2**20
    print(f"  tagging {n_test / tag_s:,.0f} tokens/s; model {mb:.0f} MB, peak RSS {fit_rss:.0f} MB")
    selected = len(tagger.selected_templates_)
    print(f"  templates selected {selected} of {len(tagger.template_weights_)}")
    if args.no_crfsuite:
        return
    with tempfile.TemporaryDirectory() as tmp:
        crf = crfsuite_upos(X, train_y, Xt, pathlib.Path(tmp) / "ewt.crfsuite")
    if crf is None:
        return
    crf_pred, crf_s, crf_tag_s = crf["pred"], crf["train_s"], crf["tag_s"]
    append_s, crf_rss = crf["append_s"], crf["train_rss_mb"]
    crf_acc = accuracy(crf_pred, test_y)
    print("python-crfsuite (L-BFGS, c1=0.1, c2=0.01, 100 iterations)")
    print(f"  UPOS accuracy {crf_acc:.2f}")
    crf_rate = 100 * n_train / crf_s
    print(
        f"  training {crf_s:.1f} s (+{append_s:.1f} s to append the data), {crf_rate:,.0f} tokens/s"
    )
    print(f"  tagging {n_test / crf_tag_s:,.0f} tokens/s; peak RSS {crf_rss:.0f} MB")
    print(
        f"omkl / CRFsuite: accuracy {acc - crf_acc:+.2f} points, "
        f"training {crf_s / fit_s:.1f}x faster, "
        f"tagging {crf_tag_s / tag_s:.1f}x faster"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
