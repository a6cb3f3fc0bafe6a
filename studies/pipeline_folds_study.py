"""What the jackknife's number of parts buys the pipeline: ``omkl train
parser``'s ``TextParser`` (15 tagger epochs, 5 parser epochs, 5 stacking
parts) trained with each number of jackknife parts on the training file of
each treebank in ``../shared/data``, scored on its dev file from the word
forms (the tags predicted, then the trees): the parser's own UAS and LAS
(punctuation excluded), and the training's wall time on this machine's
cores.

    python studies/pipeline_folds_study.py [--treebanks greek,gothic] [--folds 5,10]
"""

from __future__ import annotations

import argparse
import time

import _treebanks

from omkl.morphology import MorphologyTagger
from omkl.parsing import DependencyParser, read_conllu
from omkl.pipeline import TextParser


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="greek,gothic")
    ap.add_argument("--folds", default="5,10")
    args = ap.parse_args()
    print("| treebank | jackknife parts | UAS | LAS | training wall s |")
    print("|---|---|---|---|---|")
    for key in args.treebanks.split(","):
        name, train, dev = _treebanks.train_and_dev(key)
        if not (train.exists() and dev.exists()):
            print(f"| {name} | skipped: {train.parent} not found |")
            continue
        gold = read_conllu(str(dev))
        bare = [[{"form": t["form"]} for t in s] for s in gold]
        for folds in (int(f) for f in args.folds.split(",")):
            model = TextParser(
                MorphologyTagger(epochs=15, seed=0),
                DependencyParser(epochs=5, seed=0, stack_folds=5),
                folds=folds,
                seed=0,
            )
            t0 = time.perf_counter()
            model.fit(str(train))
            seconds = time.perf_counter() - t0
            uas = las = total = 0
            for g, p in zip(gold, model.predict(bare), strict=True):
                for t, q in zip(g, p, strict=True):
                    if t["upos"] == "PUNCT":
                        continue
                    total += 1
                    uas += int(q["head"]) == int(t["head"])
                    las += int(q["head"]) == int(t["head"]) and q["deprel"] == t["deprel"]
            print(
                f"| {name} | {folds} | {100 * uas / total:.2f} | {100 * las / total:.2f} "
                f"| {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
