"""Which token features the FEATS stage of ``MorphologyTagger`` should read,
and how large its tables should be: on the dev file of each treebank in
``../shared/data``, the tagger trained with the FEATS stage's features of
today and with richer ones, built in Python (the other stages read the
core's features as usual). UFeats and AllTags: every word, all features.

- ``today``: the features of the core's ``feats`` block (the same dicts
  ``omkl.morphology._feats_features`` builds);
- ``+upos+suffixes``: also the word's own UPOS, its suffixes of 1 and 4
  characters, and each suffix of 1 to 4 characters joined with the UPOS
  (an ending means one thing on a noun and another on a verb);
- ``+neighbours``: also the lexicon FEATS, UPOS-joined 3-character suffix
  of the words before and after (agreement of articles, adjectives and
  nouns);
- ``+upos+suffixes x4 buckets``: with four times the FEATS stage's buckets;
- ``+longer``: ``+upos+suffixes`` and the UPOS joined with the 5-character
  suffix, the lower-cased word and its 2-character prefix;
- ``+shape``: ``+upos+suffixes`` and the word's short shape (alone and with
  the UPOS) and its length (up to 6);
- ``+upos+suffixes, log loss``: that set, the FEATS stage trained with the
  log loss (a CRF) instead of the hinge.

    python studies/feats_features_study.py [--treebanks greek,gothic] [--epochs 15]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import _treebanks

from omkl import morphology
from omkl.morphology import MorphologyTagger
from omkl.tagging import TextTagger, _Sentences, token_features

Features = list[dict[str, Any]]


def upos_suffixes(
    words: Sequence[str], upos: Sequence[str], xpos: Sequence[str], lex: Sequence[str]
) -> Features:
    out = morphology._feats_features(words, upos, xpos, lex)
    for f, w, u in zip(out, words, upos, strict=True):
        low = w.lower()
        f["upos"] = u
        f["s1"] = low[-1:]
        f["s4"] = low[-4:]
        for k in range(1, 5):
            f[f"u|s{k}"] = f"{u}|{low[-k:]}"
    return out


def neighbours(
    words: Sequence[str], upos: Sequence[str], xpos: Sequence[str], lex: Sequence[str]
) -> Features:
    out = upos_suffixes(words, upos, xpos, lex)
    n = len(words)
    lows = [w.lower() for w in words]
    for i, f in enumerate(out):
        for d in (-1, 1):
            j = i + d
            inside = 0 <= j < n
            f[f"lex{d:+d}"] = lex[j] if inside else "<s>"
            f[f"us3{d:+d}"] = f"{upos[j]}|{lows[j][-3:]}" if inside else "<s>"
        f["lex-1|u"] = f"{f['lex-1']}|{upos[i]}"
    return out


def longer(
    words: Sequence[str], upos: Sequence[str], xpos: Sequence[str], lex: Sequence[str]
) -> Features:
    out = upos_suffixes(words, upos, xpos, lex)
    for f, w, u in zip(out, words, upos, strict=True):
        low = w.lower()
        f["u|s5"] = f"{u}|{low[-5:]}"
        f["lower|upos"] = f"{low}|{u}"
        f["u|p2"] = f"{u}|{low[:2]}"
    return out


def shape(
    words: Sequence[str], upos: Sequence[str], xpos: Sequence[str], lex: Sequence[str]
) -> Features:
    out = upos_suffixes(words, upos, xpos, lex)
    for f, t, w in zip(out, token_features(words), words, strict=True):
        f["short_shape"] = t["short_shape"]
        f["u|short_shape"] = f"{f['upos']}|{t['short_shape']}"
        f["len"] = str(min(len(w), 6))
    return out


class Variant(MorphologyTagger):
    """A tagger whose FEATS stage reads ``features`` (built in Python) and
    has ``scale`` times the default buckets."""

    features: Callable[..., Features] = staticmethod(morphology._feats_features)
    scale = 1
    feats_loss = "hinge"

    def _core_chain(self) -> None:  # type: ignore[override]
        return None  # tag stage by stage, where the FEATS stage reads dicts

    def _dicts(self, data: _Sentences) -> Features | None:
        if tuple(data.templates.blocks) not in (("feats",), ("feats_suffixes",)):
            return None
        return [self.features(ws, *(c[s] for c in data.columns)) for s, ws in enumerate(data.words)]

    def _fit_stage(
        self, tagger: TextTagger, data: _Sentences, Y: Sequence[Sequence[str]], epochs: int
    ) -> TextTagger:
        dicts = self._dicts(data)
        if dicts is None:
            return super()._fit_stage(tagger, data, Y, epochs)
        loss, self.loss = self.loss, self.feats_loss
        tagger = self._tagger(max(self.n_buckets // 16, 1) * self.scale)
        self.loss = loss
        return tagger.fit(dicts, Y, epochs=epochs, shuffle=True, seed=self.seed)

    def _predict_stage(self, tagger: TextTagger, data: _Sentences) -> Any:
        dicts = self._dicts(data)
        if dicts is None:
            return super()._predict_stage(tagger, data)
        return tagger.predict(dicts)


def variant(features: Callable[..., Features], scale: int, loss: str = "hinge") -> type[Variant]:
    attrs = {"features": staticmethod(features), "scale": scale, "feats_loss": loss}
    return type("V", (Variant,), attrs)


VARIANTS = {
    "today": variant(morphology._feats_features, 1),
    "+upos+suffixes": variant(upos_suffixes, 1),
    "+neighbours": variant(neighbours, 1),
    "+upos+suffixes x4 buckets": variant(upos_suffixes, 4),
    "+longer": variant(longer, 1),
    "+shape": variant(shape, 1),
    "+upos+suffixes, log loss": variant(upos_suffixes, 1, "log"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="greek,gothic")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--variants", default=";".join(VARIANTS), help="separated by ;")
    args = ap.parse_args()
    print("| treebank | FEATS features | UFeats | AllTags | UPOS | training s |")
    print("|---|---|---|---|---|---|")
    for name, sents, gold in _treebanks.read_train_and_dev(args.treebanks):
        for label in args.variants.split(";"):
            t0 = time.perf_counter()
            model = VARIANTS[label](epochs=args.epochs, seed=0).fit(sents)
            seconds = time.perf_counter() - t0
            s = model.score(gold)
            print(
                f"| {name} | {label} | {s['UFeats']:.2f} | {s['AllTags']:.2f} | {s['UPOS']:.2f} "
                f"| {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
