"""Where does the UPOS stage of ``MorphologyTagger`` err on EWT dev, and
does an ensemble of taggers trained with other shuffling seeds fix it?

Trains ``MorphologyTagger(epochs=E, seed=s)`` on EWT train for each seed
of ``--seeds``, tags the dev file from its word forms, and prints:

* for the first seed, the dev words split by how often their form occurs
  in the training file (never, 1 to 4 times, 5 or more): their share of
  the words, their UPOS error rate and their share of the UPOS errors,
  then the most frequent confusions (gold -> predicted);
* for the first k seeds (k = 1, 2, ...), the UPOS accuracy of each seed's
  tagger alone and of the ensemble of k taggers, by majority vote of their
  tags (a tie goes to the first seed's tag) and by the largest sum of the
  UPOS stage's marginals.

The parser on predicted morphology loses two thirds of what it loses to
predicted tags through UPOS (``docs/parser.md``), so this is where a more
accurate tagger would have to gain. Example::

    python studies/tagger_upos_study.py --epochs 5 --seeds 0,1,2
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import _ewt
import numpy as np

from omkl.morphology import MorphologyTagger
from omkl.parsing import read_conllu


def _upos_stage(model: MorphologyTagger, words: list[list[str]]) -> tuple[list[Any], list[Any]]:
    """The UPOS tags of the sentences ``words`` and, per sentence, the
    UPOS stage's marginals as ``{tag: array over the words}``."""
    tagged = model.tag([[{"form": w} for w in ws] for ws in words])
    tags = [[t["upos"] for t in s] for s in tagged]
    data = model._upos_data(words)
    labels = [str(label) for label in model.upos_.labels_]
    mus = model.upos_._state.marginals_many_text(data.templates, data.words, data.columns)
    margs = [dict(zip(labels, np.asarray(mu).T, strict=False)) for mu in mus]
    return tags, margs


def _accuracy(pred: list[list[str]], gold: list[list[str]]) -> float:
    pairs = [(p, g) for ps, gs in zip(pred, gold, strict=True) for p, g in zip(ps, gs, strict=True)]
    return 100.0 * sum(p == g for p, g in pairs) / len(pairs)


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    ap.add_argument("--epochs", type=int, default=5, help="epochs of each tagger")
    ap.add_argument("--seeds", default="0,1,2", help="shuffling seeds of the taggers")
    ap.add_argument("--confusions", type=int, default=12, help="confusions to print")
    args = _ewt.parse_dev_only(ap)
    train = read_conllu(args.train)
    if args.max_train:
        train = train[: args.max_train]
    dev = read_conllu(args.dev)
    words = [[t["form"] for t in s] for s in dev]
    gold = [[t["upos"] for t in s] for s in dev]
    seeds = [int(s) for s in args.seeds.split(",")]
    tags: list[list[list[str]]] = []
    margs: list[list[Any]] = []
    rows = []
    for k, seed in enumerate(seeds, start=1):
        t0 = time.perf_counter()
        model = MorphologyTagger(epochs=args.epochs, seed=seed).fit(train)
        seconds = time.perf_counter() - t0
        t, m = _upos_stage(model, words)
        tags.append(t)
        margs.append(m)
        if k == 1:
            _errors(train, dev, t, args.confusions)
        vote = [
            [Counter(tags[j][i][w] for j in range(k)).most_common(1)[0][0] for w in range(len(ws))]
            for i, ws in enumerate(words)
        ]
        # most_common keeps the first seen on a tie: the first seed's tag
        summed = []
        for i in range(len(words)):
            labels = sorted(set().union(*(margs[j][i] for j in range(k))))
            total = np.array([sum(margs[j][i].get(lab, 0.0) for j in range(k)) for lab in labels])
            summed.append([labels[int(c)] for c in total.argmax(axis=0)])
        rows.append(
            f"| {seed} | {_accuracy(t, gold):.2f} | {k} | {_accuracy(vote, gold):.2f} "
            f"| {_accuracy(summed, gold):.2f} | {seconds:.0f} |"
        )
        print(f"seed {seed} done ({seconds:.0f} s to train)", flush=True)
    print(f"\n{len(train)} training sentences, {args.epochs} epochs per tagger\n")
    print("| seed | its dev UPOS | taggers | vote | summed marginals | train s |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\npeak memory {_ewt.peak_rss_mb():.0f} MB")


def _errors(train: list[Any], dev: list[Any], pred: list[list[str]], top: int) -> None:
    counts = Counter(t["form"] for s in train for t in s)
    words: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    confusions: Counter[tuple[str, str]] = Counter()
    for sent, tags in zip(dev, pred, strict=True):
        for tok, tag in zip(sent, tags, strict=True):
            c = counts[tok["form"]]
            kind = "never" if c == 0 else "1 to 4 times" if c < 5 else "5 times or more"
            words[kind] += 1
            if tag != tok["upos"]:
                errors[kind] += 1
                confusions[tok["upos"], tag] += 1
    n, e = sum(words.values()), sum(errors.values())
    print("\n| form in train | dev words | UPOS errors among them | share of all UPOS errors |")
    print("|---|---|---|---|")
    for kind in ("never", "1 to 4 times", "5 times or more"):
        print(
            f"| {kind} | {100 * words[kind] / n:.1f}% | {100 * errors[kind] / words[kind]:.1f}% "
            f"| {100 * errors[kind] / e:.1f}% |"
        )
    print(f"\n{e} UPOS errors in {n} dev words; the most frequent (gold -> predicted):\n")
    print("| gold | predicted | words | share of the errors |")
    print("|---|---|---|---|")
    for (g, p), c in confusions.most_common(top):
        print(f"| {g} | {p} | {c} | {100 * c / e:.1f}% |")
    print(flush=True)


if __name__ == "__main__":
    main()
