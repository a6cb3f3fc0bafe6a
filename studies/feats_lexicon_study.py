"""Which lexicon FEATS the FEATS stage of ``MorphologyTagger`` should learn
from: the stage reads, for each word, the FEATS its lexicons give (of the
lower-cased form with its UPOS and XPOS, else backoffs). When tagging new
text, two words in five the stage errs on are unknown to the lexicons; in
training, lexicons built from the whole training set know every word. With
``_held_out_feats`` the lexicons' FEATS of a training sentence come from
the other folds (``folds``, as the ambiguity classes do), so that the stage
learns how far to trust them. On the dev file of each treebank in
``../shared/data``: UFeats and AllTags (every word; the tagger's own
count, all features).

    python studies/feats_lexicon_study.py [--treebanks greek,gothic,ewt] [--epochs 15]
"""

from __future__ import annotations

import argparse
import time

import _treebanks

from omkl.morphology import MorphologyTagger


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="greek,gothic,ewt")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()
    print("| treebank | lexicon FEATS in training | UFeats | AllTags | UPOS | training s |")
    print("|---|---|---|---|---|---|")
    for name, sents, gold in _treebanks.read_train_and_dev(args.treebanks):
        for label, held_out in (("whole training set", False), ("other folds", True)):
            model = MorphologyTagger(epochs=args.epochs, seed=0)
            model._held_out_feats = held_out
            t0 = time.perf_counter()
            model.fit(sents)
            seconds = time.perf_counter() - t0
            s = model.score(gold)
            print(
                f"| {name} | {label} | {s['UFeats']:.2f} | {s['AllTags']:.2f} | {s['UPOS']:.2f} "
                f"| {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
