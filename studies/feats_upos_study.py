"""Which words the FEATS stage of ``MorphologyTagger`` should tag: its
chain predicted the FEATS of VERB, AUX and PRON words only (the classes
that English inflects) and a lexicon gave the rest, falling back on the
most frequent FEATS of the word's UPOS and XPOS when it does not know the
word; now it predicts them for every UPOS (``feats_upos=None``). On the dev
file of each treebank in ``../shared/data``, the tagger trained with each
set: UFeats and AllTags (every word; the tagger's own count, all features).

    python studies/feats_upos_study.py [--treebanks greek,gothic,ewt] [--epochs 15]
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
    print("| treebank | FEATS chain for | UFeats | AllTags | UPOS | training s |")
    print("|---|---|---|---|---|---|")
    for name, sents, gold in _treebanks.read_train_and_dev(args.treebanks):
        for label, chosen in (("VERB, AUX, PRON", ["VERB", "AUX", "PRON"]), ("every UPOS", None)):
            t0 = time.perf_counter()
            model = MorphologyTagger(epochs=args.epochs, seed=0, feats_upos=chosen).fit(sents)
            seconds = time.perf_counter() - t0
            s = model.score(gold)
            print(
                f"| {name} | {label} | {s['UFeats']:.2f} | {s['AllTags']:.2f} | {s['UPOS']:.2f} "
                f"| {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
