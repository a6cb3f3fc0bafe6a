"""Where the FEATS of ``MorphologyTagger`` go wrong, on the dev file of a
treebank in ``../shared/data``: the words whose FEATS are wrong because
their UPOS is, and of the others, by gold UPOS, by feature (a feature
counts when its value differs), and whether the training file has the
word (lower-cased).

    python studies/feats_errors_study.py [--treebank greek] [--lexicon folds|whole]

``--lexicon whole``: the FEATS stage learns from lexicons of the whole
training set, as before ``MorphologyTagger._held_out_feats``.
"""

from __future__ import annotations

import argparse
import collections

import _treebanks

from omkl.morphology import MorphologyTagger
from omkl.parsing import read_conllu


def _features(feats: str) -> dict[str, str]:
    return dict(f.split("=", 1) for f in feats.split("|") if "=" in f)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebank", default="greek", choices=sorted(_treebanks.TREEBANKS))
    ap.add_argument("--lexicon", default="folds", choices=("folds", "whole"))
    args = ap.parse_args()
    name, train, dev = _treebanks.train_and_dev(args.treebank)
    sents, gold = read_conllu(str(train)), read_conllu(str(dev))
    model = MorphologyTagger(seed=0)
    model._held_out_feats = args.lexicon == "folds"
    model.fit(sents)
    vocab = {t["form"].lower() for s in sents for t in s}
    n = wrong_upos = 0
    by_upos: collections.Counter[str] = collections.Counter()
    by_feature: collections.Counter[str] = collections.Counter()
    known: collections.Counter[str] = collections.Counter()
    for ps, gs in zip(model.tag(gold), gold, strict=True):
        for p, g in zip(ps, gs, strict=True):
            n += 1
            if p["feats"] == g["feats"]:
                continue
            if p["upos"] != g["upos"]:
                wrong_upos += 1
                continue
            by_upos[g["upos"]] += 1
            known["known" if g["form"].lower() in vocab else "unknown"] += 1
            pf, gf = _features(p["feats"]), _features(g["feats"])
            by_feature.update(k for k in set(pf) | set(gf) if pf.get(k) != gf.get(k))
    print(f"{name} dev, lexicon FEATS in training from the {args.lexicon}: {n} words")
    print(f"- FEATS wrong with the UPOS wrong: {wrong_upos}")
    print(f"- FEATS wrong with the UPOS right: {sum(by_upos.values())}, of which")
    print(f"  - on words the training file has: {known['known']}, not: {known['unknown']}")
    print(f"  - by gold UPOS: {', '.join(f'{k} {v}' for k, v in by_upos.most_common(8))}")
    print(f"  - by feature: {', '.join(f'{k} {v}' for k, v in by_feature.most_common(8))}")


if __name__ == "__main__":
    main()
