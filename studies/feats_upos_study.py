"""Which words the FEATS stage of ``MorphologyTagger`` should tag: today
its chain predicts the FEATS of VERB, AUX and PRON words only (the classes
that English inflects) and a lexicon gives the rest, falling back on the
most frequent FEATS of the word's UPOS and XPOS when it does not know the
word. On the dev file of each treebank in ``../shared/data``, the tagger
trained with that set and with every UPOS given to the chain: UFeats and
AllTags (every word; the tagger's own count, all features).

Both taggers tag stage by stage in Python (the path that reads the set);
with the default set it gives the tags of the core chain exactly
(``tests/test_token_templates.py``).

    python studies/feats_upos_study.py [--treebanks greek,gothic,ewt] [--epochs 15]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import _treebanks

from omkl import morphology
from omkl.morphology import MorphologyTagger
from omkl.parsing import read_conllu


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="greek,gothic,ewt")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()
    default = morphology._FEATS_UPOS
    # tag stage by stage, the path that reads the set
    MorphologyTagger._core_chain = lambda self: None  # type: ignore[method-assign]
    print("| treebank | FEATS chain for | UFeats | AllTags | UPOS | training s |")
    print("|---|---|---|---|---|---|")
    for key in args.treebanks.split(","):
        name, train, dev = _treebanks.train_and_dev(key)
        if not (train.exists() and dev.exists()):
            print(f"| {name} | skipped: {train.parent} not found |")
            continue
        sents, gold = read_conllu(str(train)), read_conllu(str(dev))
        every = frozenset(t["upos"] for s in sents for t in s)
        for label, chosen in (("VERB, AUX, PRON (default)", default), ("every UPOS", every)):
            morphology._FEATS_UPOS = chosen  # type: ignore[misc]
            t0 = time.perf_counter()
            model: Any = MorphologyTagger(epochs=args.epochs, seed=0).fit(sents)
            seconds = time.perf_counter() - t0
            s = model.score(gold)
            print(
                f"| {name} | {label} | {s['UFeats']:.2f} | {s['AllTags']:.2f} | {s['UPOS']:.2f} "
                f"| {seconds:.0f} |",
                flush=True,
            )
        morphology._FEATS_UPOS = default  # type: ignore[misc]


if __name__ == "__main__":
    main()
