"""Which token features the lemma stage of ``MorphologyTagger`` should
read: on the dev file of each treebank in ``../shared/data``, the tagger
trained with the lemma stage's features of today and with richer ones,
built in Python (the other stages read the core's features as usual).
Lemma accuracy: every word (the tagger's own count).

- ``today``: the features of the core's ``lemma`` block (the dicts
  ``omkl.morphology._lemma_features`` builds): the lower-cased form, UPOS,
  XPOS, title case, its suffixes of 1 to 5 characters joined with the
  XPOS, its prefixes of 1 to 3;
- ``+upos suffixes``: also each suffix of 1 to 5 characters joined with the
  UPOS, and the 6-character suffix joined with the XPOS.

    python studies/lemma_features_study.py [--treebanks greek,gothic] [--epochs 15]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import _treebanks

from omkl import morphology
from omkl.morphology import MorphologyTagger
from omkl.tagging import TextTagger, _Sentences

Features = list[dict[str, Any]]


def upos_suffixes(words: Sequence[str], upos: Sequence[str], xpos: Sequence[str]) -> Features:
    out = morphology._lemma_features(words, upos, xpos)
    for f, w, u, x in zip(out, words, upos, xpos, strict=True):
        low = w.lower()
        for k in range(1, 6):
            f[f"us{k}"] = f"{u}|{low[-k:]}"
        f["s6"] = f"{x}|{low[-6:]}"
    return out


class Variant(MorphologyTagger):
    """A tagger whose lemma stage reads ``features`` (built in Python)."""

    features: Callable[..., Features] = staticmethod(morphology._lemma_features)

    def _core_chain(self) -> None:  # type: ignore[override]
        return None  # tag stage by stage, where the lemma stage reads dicts

    def _dicts(self, data: _Sentences) -> Features | None:
        if tuple(data.templates.blocks) != ("lemma",):
            return None
        return [self.features(ws, *(c[s] for c in data.columns)) for s, ws in enumerate(data.words)]

    def _fit_stage(
        self, tagger: TextTagger, data: _Sentences, Y: Sequence[Sequence[str]], epochs: int
    ) -> TextTagger:
        dicts = self._dicts(data)
        if dicts is None:
            return super()._fit_stage(tagger, data, Y, epochs)
        return tagger.fit(dicts, Y, epochs=epochs, shuffle=True, seed=self.seed)

    def _predict_stage(self, tagger: TextTagger, data: _Sentences) -> Any:
        dicts = self._dicts(data)
        if dicts is None:
            return super()._predict_stage(tagger, data)
        return tagger.predict(dicts)


VARIANTS = {
    "today": type("V", (Variant,), {}),
    "+upos suffixes": type("V", (Variant,), {"features": staticmethod(upos_suffixes)}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--treebanks", default="greek,gothic")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--variants", default=";".join(VARIANTS), help="separated by ;")
    args = ap.parse_args()
    print("| treebank | lemma features | Lemma | UPOS | training s |")
    print("|---|---|---|---|---|")
    for name, sents, gold in _treebanks.read_train_and_dev(args.treebanks):
        for label in args.variants.split(";"):
            t0 = time.perf_counter()
            model = VARIANTS[label](epochs=args.epochs, seed=0).fit(sents)
            seconds = time.perf_counter() - t0
            s = model.score(gold)
            print(
                f"| {name} | {label} | {s['Lemma']:.2f} | {s['UPOS']:.2f} | {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
