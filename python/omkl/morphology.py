"""Morphology from text: the CoNLL-U columns UPOS, XPOS, FEATS and LEMMA
predicted from the word forms alone.

:class:`MorphologyTagger` chains five :class:`~omkl.tagging.TextTagger`
models over :func:`~omkl.tagging.token_features` and lexicons:

1. **First XPOS**: the token features plus *ambiguity classes* (the set
   of XPOS tags that the word, and each neighbour, had in training). For a
   training sentence the classes come from the other folds of the training
   set, so that the tagger does not learn to trust a dictionary that has
   already seen the sentence. And features of proper nouns: how the word
   was written in training (lower case, title case, at the start of a
   sentence), and the share of capitalised words in the sentence.
2. **UPOS**: the token features, UPOS ambiguity classes and the first
   XPOS of the word and its neighbours.
3. **XPOS**: the features of the first XPOS stage and the UPOS of the word
   and its neighbours.

   A stage that reads another's tags learns from *jackknifed* predictions
   (``jackknife`` folds of the training set, each tagged by a model
   trained on the others), so that it learns how far to trust the tags it
   will see when tagging.
4. **FEATS**: a chain tagger over the form, its suffixes (alone and joined
   with the UPOS: an ending tells one thing of a noun and another of a
   verb), the tags around it and the lexicon's answer, for the words whose
   UPOS is in ``feats_upos`` (every UPOS by default: nouns and adjectives
   inflect in many languages). For other words, and where that tagger
   defers (class ``<lex>``, the FEATS seen fewer than ``min_rule_count``
   times), the features most seen with the (lower-cased form, UPOS, XPOS)
   in training, else with the (form, XPOS), else with the (UPOS, XPOS),
   else with the XPOS, else ``_``. The FEATS tagger learns from the
   jackknifed UPOS and first XPOS, and from the lexicons' FEATS of a
   training sentence as the other folds give them: it then learns how far
   to trust them, as for a word the lexicons do not know.
5. **LEMMA** as a class: an edit rule from form to lemma
   (:func:`lemma_rule`, :func:`apply_lemma_rule`). A word seen in training
   with this XPOS takes its most frequent rule; any other word takes the
   rule of a chain tagger over suffix, prefix, shape, UPOS and XPOS
   features.

Each stage computes its features in the core, from the word forms and the
columns its lexicons and the stages before it give (``TokenTemplates`` of
``omkl._omkl``): the features of :func:`~omkl.tagging.token_features` and of
the feature dicts of this module, with the same names and buckets, without a
Python dict per word.

Examples
--------
>>> from omkl.morphology import MorphologyTagger
>>> def tok(form, lemma, upos, xpos, feats="_"):
...     return {"form": form, "lemma": lemma, "upos": upos, "xpos": xpos, "feats": feats}
>>> train = [[tok("The", "the", "DET", "DT"), tok("dogs", "dog", "NOUN", "NNS", "Number=Plur"),
...           tok("ran", "run", "VERB", "VBD")],
...          [tok("A", "a", "DET", "DT"), tok("cat", "cat", "NOUN", "NN", "Number=Sing"),
...           tok("sleeps", "sleep", "VERB", "VBZ")]] * 5
>>> tagger = MorphologyTagger(folds=2).fit(train, epochs=5)
>>> [(t["upos"], t["xpos"], t["lemma"]) for t in tagger.tag_words(["The", "dogs", "ran"])]
[('DET', 'DT', 'the'), ('NOUN', 'NNS', 'dog'), ('VERB', 'VBD', 'run')]
>>> tagger.score(train)["UPOS"]
100.0
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar, cast

from omkl import _omkl
from omkl._params import check_int
from omkl._persist import IndependentCopies, Persistent, load_estimator, restore_state
from omkl._sync import Synchronized, synchronized
from omkl._threads import thread_map
from omkl.tagging import TextTagger, _Sentences, token_features

__all__ = ["MorphologyTagger", "lemma_rule", "apply_lemma_rule", "tag_accuracies"]

Token = dict[str, Any]
Sentence = list[Token]
Features = list[dict[str, str | bool]]
_T = TypeVar("_T")

_RULE = re.compile(r"\A([KL])(0|[1-9][0-9]*)\|(.*)\Z", re.DOTALL)
#: The lemma class of the rules too rare to be learned.
_RARE = "<rare>"
#: The ambiguity class of a word not in the lexicon.
_UNKNOWN = "<unk>"
#: The FEATS class that defers to the lexicon.
_LEX = "<lex>"
#: The types of the token values that a copy shares (immutable).
_ATOMS = frozenset({str, int, float, bool, type(None)})
#: The UPOS tags whose FEATS the FEATS tagger of a model saved before
#: format version 3 predicts (a newer model records its own).
_OLD_FEATS_UPOS = ("AUX", "PRON", "VERB")
#: The template block of the FEATS tagger, and of one saved before format
#: version 3.
_FEATS_BLOCK, _OLD_FEATS_BLOCK = "feats_suffixes", "feats"


def lemma_rule(form: str, lemma: str) -> str:
    """The edit rule that turns ``form`` into ``lemma``: ``"K<k>|<s>"``
    (keep the case of the form, strip its last ``k`` characters, append
    ``s``) or ``"L<k>|<s>"`` (the same on the lower-cased form). Of the two,
    the rule with fewer edits is taken (``K`` on a tie), so that the same
    rule serves many words. :func:`apply_lemma_rule` inverts it.

    >>> lemma_rule("dogs", "dog"), lemma_rule("Running", "run"), lemma_rule("was", "be")
    ('K1|', 'L4|', 'K3|be')
    >>> apply_lemma_rule(lemma_rule("Children", "child"), "Children")
    'child'
    """
    if not isinstance(form, str):
        raise ValueError(f"invalid value for `form`: expected a str, got {form!r}")
    if not isinstance(lemma, str):
        raise ValueError(f"invalid value for `lemma`: expected a str, got {lemma!r}")
    best: tuple[int, str] | None = None
    for flag, src in (("K", form), ("L", form.lower())):
        p = 0
        n = min(len(src), len(lemma))
        while p < n and src[p] == lemma[p]:
            p += 1
        strip, append = len(src) - p, lemma[p:]
        cost = strip + len(append)
        if best is None or cost < best[0]:
            best = (cost, f"{flag}{strip}|{append}")
    assert best is not None
    return best[1]


def apply_lemma_rule(rule: str, form: str) -> str:
    """The lemma that the edit ``rule`` of :func:`lemma_rule` makes of
    ``form``. ``ValueError`` if ``rule`` is not a rule, or strips more
    characters than ``form`` has.

    >>> apply_lemma_rule("K1|", "dogs"), apply_lemma_rule("L3|be", "Was")
    ('dog', 'be')
    """
    if not isinstance(form, str):
        raise ValueError(f"invalid value for `form`: expected a str, got {form!r}")
    m = _RULE.match(rule) if isinstance(rule, str) else None
    if m is None:
        raise ValueError(
            f"invalid value for `rule`: expected 'K<k>|<suffix>' or 'L<k>|<suffix>', got {rule!r}"
        )
    src = form.lower() if m.group(1) == "L" else form
    k = int(m.group(2))
    if k > len(src):
        raise ValueError(
            f"invalid value for `rule`: {rule!r} strips {k} characters from {form!r}, "
            f"which has {len(src)}"
        )
    return src[: len(src) - k] + m.group(3)


# --- input checks -----------------------------------------------------------


def _check_words(words: Any, where: str) -> list[str]:
    if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
        raise ValueError(f"invalid value for `{where}`: expected a list of str, got {words!r}")
    if len(words) == 0:
        raise ValueError(f"invalid value for `{where}`: empty sentence; expected at least 1 word")
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise ValueError(f"invalid value for `{where}[{i}]`: expected a str, got {w!r}")
        if not w:
            raise ValueError(f"invalid value for `{where}[{i}]`: expected a non-empty str")
    return list(words)


def _forms(sentence: Any, s: int) -> list[str]:
    """The word forms of the ``s``-th sentence (a list of token dicts)."""
    if isinstance(sentence, (str, bytes)) or not isinstance(sentence, Sequence):
        raise ValueError(
            f"invalid value for `sentences[{s}]`: expected a list of token dicts, got {sentence!r}"
        )
    if len(sentence) == 0:
        raise ValueError(f"invalid value for `sentences[{s}]`: empty sentence; expected tokens")
    out = []
    for i, tok in enumerate(sentence):
        if not isinstance(tok, Mapping):
            raise ValueError(
                f"invalid value for `sentences[{s}][{i}]`: expected a token dict, got {tok!r}"
            )
        if "form" not in tok:
            raise ValueError(f"invalid value for `sentences[{s}][{i}]`: no 'form' key in {tok!r}")
        form = tok["form"]
        if not isinstance(form, str) or not form:
            raise ValueError(
                f"invalid value for `sentences[{s}][{i}]['form']`: expected a non-empty str, "
                f"got {form!r}"
            )
        out.append(form)
    return out


def _gold(sentence: Sequence[Mapping[str, Any]], s: int, key: str) -> list[str]:
    out = []
    for i, tok in enumerate(sentence):
        v = tok.get(key)
        if not isinstance(v, str):
            raise ValueError(
                f"invalid value for `sentences[{s}][{i}][{key!r}]`: expected a str, got {v!r}"
            )
        out.append(v)
    return out


def tag_accuracies(
    gold: Sequence[Sequence[Mapping[str, Any]]], predicted: Sequence[Sequence[Mapping[str, Any]]]
) -> dict[str, float]:
    """Accuracies in percent of ``predicted`` against ``gold`` (the same
    words): ``UPOS``, ``XPOS``, ``UFeats``, ``AllTags`` (UPOS, XPOS and FEATS
    all right) and ``Lemma``.

    >>> g = [[{"form": "a", "upos": "DET", "xpos": "DT", "feats": "_", "lemma": "a"}]]
    >>> tag_accuracies(g, [[{**g[0][0], "lemma": "an"}]])["Lemma"]
    0.0
    """
    hits = Counter[str]()
    total = 0
    for s, (sent, out) in enumerate(zip(gold, predicted, strict=True)):
        cols = {k: _gold(sent, s, k) for k in ("upos", "xpos", "feats", "lemma")}
        for i, t in enumerate(out):
            ok = {k: t[k] == cols[k][i] for k in cols}
            hits["UPOS"] += ok["upos"]
            hits["XPOS"] += ok["xpos"]
            hits["UFeats"] += ok["feats"]
            hits["AllTags"] += ok["upos"] and ok["xpos"] and ok["feats"]
            hits["Lemma"] += ok["lemma"]
            total += 1
    keys = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemma")
    return {k: 100.0 * hits[k] / total if total else 0.0 for k in keys}


# --- lexicons ---------------------------------------------------------------


def _classes(counts: Mapping[str, int], min_share: float) -> str:
    """The ambiguity class of a word: its tags with at least ``min_share``
    of its occurrences, sorted and joined."""
    total = sum(counts.values())
    return "|".join(sorted(t for t, c in counts.items() if c >= min_share * total))


def _lexicon(
    words: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]
) -> dict[str, Counter[str]]:
    lex: dict[str, Counter[str]] = {}
    for ws, ts in zip(words, tags, strict=True):
        for w, t in zip(ws, ts, strict=True):
            lex.setdefault(w.lower(), Counter())[t] += 1
    return lex


def _ambiguity(lex: Mapping[str, Mapping[str, int]], min_share: float) -> dict[str, str]:
    return {w: _classes(c, min_share) for w, c in lex.items()}


def _lookup(lex: Mapping[str, str], lowers: Sequence[str]) -> list[str]:
    """The entry of each lower-cased word in ``lex`` (``<unk>`` if none)."""
    return [lex.get(w, _UNKNOWN) for w in lowers]


def _add_classes(feats: Features, words: Sequence[str], classes: Sequence[str], name: str) -> None:
    """The ambiguity classes ``classes`` of the words (see :func:`_lookup`)
    and of their neighbours, and the class with the lower-cased word."""
    n = len(words)
    for i, (f, w) in enumerate(zip(feats, words, strict=True)):
        f[name] = classes[i]
        f[name + "-1"] = classes[i - 1] if i > 0 else "<s>"
        f[name + "+1"] = classes[i + 1] if i + 1 < n else "</s>"
        f[name + "|w"] = f"{classes[i]}|{w.lower()}"


def _add_tags(feats: Features, tags: Sequence[str], name: str) -> None:
    n = len(tags)
    for i, f in enumerate(feats):
        f[name] = tags[i]
        f[name + "-1"] = tags[i - 1] if i > 0 else "<s>"
        f[name + "+1"] = tags[i + 1] if i + 1 < n else "</s>"


def _lemma_features(words: Sequence[str], upos: Sequence[str], xpos: Sequence[str]) -> Features:
    out: Features = []
    for w, u, x in zip(words, upos, xpos, strict=True):
        low = w.lower()
        f: dict[str, str | bool] = {"lower": low, "upos": u, "xpos": x, "is_title": w.istitle()}
        for k in range(1, 6):
            f[f"s{k}"] = f"{x}|{low[-k:]}"
        for k in range(1, 4):
            f[f"p{k}"] = low[:k]
        out.append(f)
    return out


def _feats_features(
    words: Sequence[str],
    upos: Sequence[str],
    xpos: Sequence[str],
    lex: Sequence[str],
    suffixes: bool = False,
) -> Features:
    """The FEATS stage's features of a sentence (block ``feats``); with
    ``suffixes`` (block ``feats_suffixes``) also the word's UPOS, its
    suffixes of 1 and 4 characters and each suffix of 1 to 4 characters
    joined with the UPOS: an ending tells one thing of a noun and another
    of a verb (``studies/feats_features_study.py``).

    >>> f = _feats_features(["the", "dogs"], ["DET", "NOUN"], ["DT", "NNS"], ["_", "_"], True)
    >>> f[1]["u|s2"], f[1]["x-1"], f[0]["s4"]
    ('NOUN|gs', 'DT', 'the')
    """
    n = len(words)
    lowers = [w.lower() for w in words]

    def at(seq: Sequence[str], i: int) -> str:
        return seq[i] if 0 <= i < n else "<s>" if i < 0 else "</s>"

    out: Features = []
    for i, low in enumerate(lowers):
        f: dict[str, str | bool] = {
            "lower": low,
            "s2": low[-2:],
            "s3": low[-3:],
            "xpos": xpos[i],
            "lex": lex[i],
            "lower|xpos": f"{low}|{xpos[i]}",
        }
        for d in (-3, -2, -1, 1, 2):
            f[f"x{d:+d}"] = at(xpos, i + d)
            f[f"u{d:+d}"] = at(upos, i + d)
        for d in (-2, -1, 1):
            f[f"w{d:+d}"] = at(lowers, i + d)
        f["x-1|x"] = f"{at(xpos, i - 1)}|{xpos[i]}"
        f["x|x+1"] = f"{xpos[i]}|{at(xpos, i + 1)}"
        if suffixes:
            f["upos"] = upos[i]
            f["s1"] = low[-1:]
            f["s4"] = low[-4:]
            for k in range(1, 5):
                f[f"u|s{k}"] = f"{upos[i]}|{low[-k:]}"
        out.append(f)
    return out


def _lex_feats(
    lex: Mapping[str, str],
    backoff: Mapping[str, str],
    words: Sequence[str],
    upos: Sequence[str],
    xpos: Sequence[str],
    by_xpos: Mapping[str, str] | None = None,
) -> list[str]:
    r"""The FEATS of each word from the lexicons: of its (lower-cased form,
    UPOS, XPOS), else of its (form, XPOS) in ``by_xpos`` (keys
    ``"form\t\tXPOS"``), else of its (UPOS, XPOS), else of its XPOS in
    ``by_xpos`` (keys ``"\t\tXPOS"``), else ``_``.

    >>> _lex_feats({"saw\tVERB\tVBD": "Tense=Past"}, {}, ["saw"], ["NOUN"], ["VBD"],
    ...            {"saw\t\tVBD": "Tense=Past"})
    ['Tense=Past']
    """
    by_xpos = {} if by_xpos is None else by_xpos
    out = []
    for w, u, x in zip(words, upos, xpos, strict=True):
        low = w.lower()
        f = lex.get(f"{low}\t{u}\t{x}")
        if f is None:
            f = by_xpos.get(f"{low}\t\t{x}")
        if f is None:
            f = backoff.get(f"{u}\t{x}")
        if f is None:
            f = by_xpos.get(f"\t\t{x}", "_")
        out.append(f)
    return out


def _casing(words: Sequence[Sequence[str]]) -> dict[str, str]:
    """The casing class of each lower-cased word: the ways it was written
    (``l`` lower, ``t`` title, ``u`` upper, ``o`` other; ``0`` marks the first
    word of a sentence), sorted and joined.

    >>> _casing([["Apple", "apple"], ["IBM", "apple"]])
    {'apple': 'l,t0', 'ibm': 'u0'}
    """
    seen: dict[str, set[str]] = {}
    for ws in words:
        for i, w in enumerate(ws):
            k = "l" if w.islower() else "t" if w.istitle() else "u" if w.isupper() else "o"
            seen.setdefault(w.lower(), set()).add(k + ("0" if i == 0 else ""))
    return {w: ",".join(sorted(c)) for w, c in seen.items()}


def _add_case(feats: Features, words: Sequence[str], cases: Sequence[str]) -> None:
    """Features of proper nouns: the word's casing class ``cases[i]`` (see
    :func:`_casing`), with its own capital and position, and the share of
    capitalised words in the sentence (in quarters) with the word's capital
    and position."""
    alpha = [w for w in words if w[:1].isalpha()]
    share = round(4 * sum(w[:1].isupper() for w in alpha) / max(len(alpha), 1))
    for i, (f, w) in enumerate(zip(feats, words, strict=True)):
        c = cases[i]
        f["case"] = c
        f["case|title|first"] = f"{c}|{w.istitle()}|{i == 0}"
        f["share|title"] = f"{share}|{w[:1].isupper()}|{i == 0}"


def _stage_blocks(tags: str | None, casing: bool) -> tuple[str, ...]:
    """The template blocks of a UPOS or XPOS stage: the token features, the
    ambiguity classes, the tags named ``tags`` of another stage (if any) and
    the casing features (if ``casing``); its columns are the classes, the
    tags and the casing classes."""
    return (
        "token",
        "classes:amb",
        *((f"tags:{tags}",) if tags else ()),
        *(("casing",) if casing else ()),
    )


@functools.cache
def _templates(blocks: tuple[str, ...]) -> _omkl.TokenTemplates:
    """The token templates of ``blocks`` (made once per set)."""
    return _omkl.TokenTemplates(list(blocks))


def _dicts(data: _Sentences) -> list[Features]:
    """The feature dicts of ``data``, built in Python: the features that the
    core computes from the same sentences and columns, as
    :class:`~omkl.tagging.TextTagger` reads dicts.

    >>> t = _templates(("token", "tags:upos"))
    >>> f = _dicts(_Sentences(t, [["The", "dog"]], [[["DET", "NOUN"]]]))[0]
    >>> f[1]["lower"], f[1]["upos"], f[1]["upos-1"], f[1]["EOS"]
    ('dog', 'NOUN', 'DET', True)
    """
    out = []
    for s, words in enumerate(data.words):
        cols = iter([c[s] for c in data.columns])
        feats: Features = [{} for _ in words]
        for block in data.templates.blocks:
            kind, _, name = block.partition(":")
            more: Features | None = None
            if kind == "token":
                more = token_features(words)
            elif kind == "classes":
                _add_classes(feats, words, next(cols), name)
            elif kind == "tags":
                _add_tags(feats, next(cols), name)
            elif kind == "casing":
                _add_case(feats, words, next(cols))
            elif kind == "lemma":
                more = _lemma_features(words, next(cols), next(cols))
            else:
                suffixes = kind == "feats_suffixes"
                more = _feats_features(words, next(cols), next(cols), next(cols), suffixes)
            if more is not None:
                for f, g in zip(feats, more, strict=True):
                    f.update(g)
        out.append(feats)
    return out


class _Columns(NamedTuple):
    """The lexicon columns of sentences: each word's UPOS and XPOS
    ambiguity classes and its casing class (``None`` in a model of version
    1)."""

    amb_upos: list[list[str]]
    amb_xpos: list[list[str]]
    casing: list[list[str]] | None


def _held_out_feats_lexicons(
    feats_lex: Mapping[str, Counter[str]],
    feats_xpos: Mapping[str, Counter[str]],
    words: Sequence[Sequence[str]],
    upos: Sequence[Sequence[str]],
    xpos: Sequence[Sequence[str]],
    feats: Sequence[Sequence[str]],
    fold_of: Sequence[int],
    folds: int,
) -> list[tuple[dict[str, str], dict[str, str]]]:
    r"""For each fold, the FEATS lexicons of :func:`_lex_feats` (keyed by
    ``"lower\tUPOS\tXPOS"``, and by ``"lower\t\tXPOS"`` and ``"\t\tXPOS"``)
    as the other folds give them, from the counts of the whole training set
    (``feats_lex``, ``feats_xpos``) less the fold's own: only the keys of
    the fold's words; the XPOS-level entries from the whole set.

    >>> words, upos, xpos = [["a"], ["a"], ["b"]], [["X"]] * 3, [["x"]] * 3
    >>> feats = [["F=1"], ["F=2"], ["F=1"]]
    >>> lex = {"a\tX\tx": Counter({"F=1": 1, "F=2": 1}), "b\tX\tx": Counter({"F=1": 1})}
    >>> by_x = {"a\t\tx": lex["a\tX\tx"], "b\t\tx": lex["b\tX\tx"],
    ...         "\t\tx": Counter({"F=1": 2, "F=2": 1})}
    >>> out = _held_out_feats_lexicons(lex, by_x, words, upos, xpos, feats, [0, 1, 2], 3)
    >>> [o[0] for o in out], out[2][1]
    ([{'a\tX\tx': 'F=2'}, {'a\tX\tx': 'F=1'}, {}], {'\t\tx': 'F=1'})
    """
    own_lex: list[dict[str, Counter[str]]] = [{} for _ in range(folds)]
    own_x: list[dict[str, Counter[str]]] = [{} for _ in range(folds)]
    for k, ws, us, xs, fs in zip(fold_of, words, upos, xpos, feats, strict=True):
        for w, u, x, f in zip(ws, us, xs, fs, strict=True):
            low = w.lower()
            own_lex[k].setdefault(f"{low}\t{u}\t{x}", Counter())[f] += 1
            own_x[k].setdefault(f"{low}\t\t{x}", Counter())[f] += 1
    xpos_level = {k: _most(c) for k, c in feats_xpos.items() if k.startswith("\t\t")}

    def held_out(total: Mapping[str, Counter[str]], own: dict[str, Counter[str]]) -> dict[str, str]:
        out = {}
        for key, c in own.items():
            rest = total[key] - c
            if rest:
                out[key] = _most(rest)
        return out

    return [
        (held_out(feats_lex, own_lex[k]), {**xpos_level, **held_out(feats_xpos, own_x[k])})
        for k in range(folds)
    ]


def _most(counts: Mapping[str, int]) -> str:
    """The most frequent key (the smallest on a tie, so that the choice
    does not depend on the order seen)."""
    return min(counts, key=lambda k: (-counts[k], k))


class MorphologyTagger(Persistent, Synchronized, IndependentCopies):
    """Predicts UPOS, XPOS, FEATS and LEMMA of pre-tokenised sentences
    (see the module docs for the pipeline).

    Parameters
    ----------
    loss, regularizer, schedule, eta0
        Of the five :class:`~omkl.tagging.TextTagger` models (averaged).
    n_buckets
        Hash-table size of each template of the UPOS and XPOS taggers (the
        first XPOS tagger uses a quarter, the lemma and FEATS taggers a
        sixteenth).
    folds
        Number of folds of the training set from which the ambiguity
        classes of a training sentence are computed (from the folds it is
        not in); at least 2.
    jackknife
        Number of folds of the training set over which the first XPOS and
        the UPOS taggers are jackknifed for the stages that read their
        tags; at least 2.
    min_share
        A tag enters a word's ambiguity class when it has at least this
        share of the word's occurrences.
    min_rule_count
        Lemma rules seen fewer times in training are one class ``<rare>``
        (the form is kept as the lemma unless the lexicon knows the word);
        likewise, FEATS seen fewer times are left to the lexicons.
    feats_upos
        The UPOS tags whose FEATS the FEATS tagger predicts; the lexicons
        give the FEATS of the other words. ``None`` (the default): every
        UPOS, which serves languages that inflect nouns and adjectives
        (``studies/feats_upos_study.py``). Models saved before format
        version 3 predict the FEATS of VERB, AUX and PRON only.
    seed
        Seed of the shuffling of the epochs.
    epochs
        Passes of :meth:`fit` over the training set (for each tagger).

    Examples
    --------
    >>> t = MorphologyTagger(folds=2)
    >>> sents = [[{"form": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP",
    ...            "feats": "Case=Nom|Number=Sing|Person=1|PronType=Prs"},
    ...           {"form": "ran", "lemma": "run", "upos": "VERB", "xpos": "VBD",
    ...            "feats": "Mood=Ind|Tense=Past|VerbForm=Fin"}]] * 4
    >>> _ = t.fit(sents, epochs=3)
    >>> out = t.tag([[{"id": "1", "form": "I"}, {"id": "2", "form": "ran"}]])
    >>> out[0][1]["lemma"], out[0][1]["feats"], out[0][1]["id"]
    ('run', 'Mood=Ind|Tense=Past|VerbForm=Fin', '2')
    """

    #: Version 2 added the first XPOS tagger (a fifth section); files of
    #: version 1 (four sections) load as the older pipeline. Version 3
    #: records ``feats_upos``, the UPOS tags the FEATS tagger predicts and
    #: its template block (``feats_suffixes``); older files predict them for
    #: VERB, AUX and PRON with the block ``feats``.
    _SAVE_VERSION = 3
    _SAVE_SECTIONS = (5,)

    def __init__(
        self,
        loss: str = "hinge",
        regularizer: Any = ("l2_squared", 1e-6),
        schedule: str = "constant",
        eta0: float = 1.0,
        n_buckets: int = 1 << 16,
        folds: int = 10,
        min_share: float = 0.01,
        min_rule_count: int = 2,
        seed: int = 0,
        epochs: int = 15,
        jackknife: int = 2,
        feats_upos: Sequence[str] | None = None,
    ):
        check_int("epochs", epochs, 1)
        check_int("folds", folds, 2)
        check_int("jackknife", jackknife, 2)
        if not isinstance(min_share, (int, float)) or not 0.0 <= min_share <= 1.0:
            raise ValueError(
                f"invalid value for `min_share`: expected a number in [0, 1], got {min_share!r}"
            )
        if isinstance(min_rule_count, bool) or not isinstance(min_rule_count, int):
            raise ValueError(
                f"invalid value for `min_rule_count`: expected an int, got {min_rule_count!r}"
            )
        check_int("n_buckets", n_buckets, 4)
        if feats_upos is not None and (
            isinstance(feats_upos, str)
            or not isinstance(feats_upos, (list, tuple))
            or not all(isinstance(u, str) for u in feats_upos)
        ):
            raise ValueError(
                "invalid value for `feats_upos`: expected None or a list of UPOS tags (str), "
                f"got {feats_upos!r}"
            )
        self.loss = loss
        self.regularizer = regularizer
        self.schedule = schedule
        self.eta0 = eta0
        self.n_buckets = n_buckets
        self.folds = folds
        self.min_share = min_share
        self.min_rule_count = min_rule_count
        self.seed = seed
        self.epochs = epochs
        self.jackknife = jackknife
        self.feats_upos = feats_upos
        #: The UPOS tags whose FEATS the fitted FEATS tagger predicts.
        self.feats_upos_: tuple[str, ...] = ()
        #: The template block of the FEATS tagger.
        self._feats_block = _FEATS_BLOCK
        #: The first XPOS tagger (``None`` in a model of version 1).
        self.xpos1_: TextTagger | None = self._tagger(max(n_buckets // 4, 1))
        self.upos_ = self._tagger(n_buckets)
        self.xpos_ = self._tagger(n_buckets)
        self.lemma_ = self._tagger(max(n_buckets // 16, 1))
        self.feats_ = self._tagger(max(n_buckets // 16, 1))
        self._amb_upos: dict[str, str] = {}
        self._amb_xpos: dict[str, str] = {}
        self._feats_lex: dict[str, str] = {}
        self._feats_backoff: dict[str, str] = {}
        self._feats_xpos: dict[str, str] = {}
        self._casing: dict[str, str] = {}
        self._lemma_lex: dict[str, str] = {}
        self._lemma_lower_lex: dict[str, str] = {}
        self._fitted = False

    def _tagger(self, n_buckets: int) -> TextTagger:
        return TextTagger(
            loss=self.loss,
            regularizer=self.regularizer,
            schedule=self.schedule,
            eta0=self.eta0,
            average=True,
            n_buckets=n_buckets,
        )

    # --- features --------------------------------------------------------

    #: Whether the FEATS stage learns from the lexicons' FEATS of a training
    #: sentence as the other folds give them (as it will see them for words
    #: outside the training set), rather than from lexicons that have seen
    #: the sentence (``studies/feats_lexicon_study.py``).
    _held_out_feats = True

    #: Whether the stages read feature dicts built in Python (:func:`_dicts`,
    #: the reference of the features that the core computes; slower) rather
    #: than features computed in the core: the same models and tags.
    _dict_features = False

    def _stage_features(
        self,
        words: Sequence[str],
        amb: Mapping[str, str],
        tags: tuple[str, Sequence[str]] | None = None,
        casing: Mapping[str, str] | None = None,
        base: Features | None = None,
    ) -> Features:
        """The feature dicts of a UPOS or XPOS stage: the token features
        (copied from ``base``, :func:`token_features` of ``words``, when
        given), the ambiguity classes ``amb`` of the words and their
        neighbours, the tags ``(name, tags)`` another stage gave them, and the
        casing features (see :func:`_add_case`). The stages compute the same
        features in the core (:func:`_stage_blocks`)."""
        lowers = [w.lower() for w in words]
        feats = token_features(words) if base is None else [dict(f) for f in base]
        _add_classes(feats, words, _lookup(amb, lowers), "amb")
        if tags is not None:
            _add_tags(feats, tags[1], tags[0])
        if casing is not None:
            _add_case(feats, words, _lookup(casing, lowers))
        return feats

    def _fit_stage(
        self, tagger: TextTagger, data: _Sentences, Y: Sequence[Sequence[str]], epochs: int
    ) -> TextTagger:
        """``tagger`` fitted on ``data`` labelled ``Y`` (shuffled epochs)."""
        if self._dict_features:
            return tagger.fit(_dicts(data), Y, epochs=epochs, shuffle=True, seed=self.seed)
        return tagger._fit_text(data, Y, epochs=epochs, shuffle=True, seed=self.seed)

    def _predict_stage(self, tagger: TextTagger, data: _Sentences) -> list[list[Hashable]]:
        """The labels that ``tagger`` gives the sentences of ``data``."""
        if self._dict_features:
            return tagger.predict(_dicts(data))
        return tagger._predict_text(data)

    def _jackknifed(
        self,
        n_buckets: int,
        data: _Sentences,
        Y: Sequence[Sequence[str]],
        epochs: int,
    ) -> list[list[str]]:
        """The tags of each training sentence predicted by a tagger trained
        on the other ``self.jackknife`` folds (each tags itself when there is
        one sentence).

        >>> t = MorphologyTagger()
        >>> words = [["a"], ["b"], ["b"], ["a"]]
        >>> data = _Sentences(_templates(("tags:w",)), words, [words])
        >>> t._jackknifed(1 << 10, data, [["A"], ["B"], ["B"], ["A"]], epochs=5)
        [['A'], ['B'], ['B'], ['A']]
        """
        n = len(data.words)
        k = min(self.jackknife, n)
        out: list[list[str]] = [[] for _ in range(n)]

        def one_fold(j: int) -> tuple[list[int], list[list[Hashable]]]:
            own = [i for i in range(n) if i % k == j] if k > 1 else list(range(n))
            rest = [i for i in range(n) if i % k != j] if k > 1 else list(range(n))
            tagger = self._fit_stage(
                self._tagger(n_buckets), data.subset(rest), [Y[i] for i in rest], epochs
            )
            # the fold's model goes with this call
            return own, self._predict_stage(tagger, data.subset(own))

        # the folds train side by side (each model learns without the GIL)
        for own, predicted in thread_map(one_fold, range(max(k, 1))):
            for i, tags in zip(own, predicted, strict=True):
                out[i] = [str(t) for t in tags]
        return out

    # --- training --------------------------------------------------------

    @synchronized
    def fit(
        self,
        sentences: Sequence[Sequence[Mapping[str, Any]]],
        epochs: int | None = None,
        progress: bool = False,
    ) -> MorphologyTagger:
        """Trains every stage on ``sentences`` (lists of token dicts with
        ``form``, ``upos``, ``xpos``, ``feats`` and ``lemma``, as from
        :func:`omkl.parsing.read_conllu`), ``epochs`` (default
        ``self.epochs``) shuffled passes for
        each tagger. Refits from scratch; nothing changes on bad input.
        ``progress`` shows a bar of the seven trainings (two jackknifes and
        five stages) on standard error.
        Each stage is frozen once it has learned
        (:meth:`~omkl.tagging.TextTagger.freeze`): the fitted tagger holds,
        and saves, only the non-zero averaged weights of its taggers.

        >>> MorphologyTagger().fit([[{"form": "a"}]])
        Traceback (most recent call last):
        ...
        ValueError: invalid value for `sentences[0][0]['upos']`: expected a str, got None
        """
        epochs = check_int("epochs", self.epochs if epochs is None else epochs, 1)
        if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Sequence):
            raise ValueError(
                f"invalid value for `sentences`: expected a list of sentences, got {sentences!r}"
            )
        if len(sentences) == 0:
            raise ValueError("invalid value for `sentences`: expected at least 1 sentence")
        words = [_forms(s, i) for i, s in enumerate(sentences)]
        upos = [_gold(s, i, "upos") for i, s in enumerate(sentences)]
        xpos = [_gold(s, i, "xpos") for i, s in enumerate(sentences)]
        feats = [_gold(s, i, "feats") for i, s in enumerate(sentences)]
        lemmas = [_gold(s, i, "lemma") for i, s in enumerate(sentences)]
        rules = [
            [lemma_rule(w, lem) for w, lem in zip(ws, ls, strict=True)]
            for ws, ls in zip(words, lemmas, strict=True)
        ]
        n = len(words)
        folds = min(self.folds, n) if n >= 2 else 1
        fold_of = [i % folds for i in range(n)]
        # ambiguity classes of each training sentence from the other folds
        lex_u = [_lexicon(*_select(words, upos, fold_of, k)) for k in range(folds)]
        lex_x = [_lexicon(*_select(words, xpos, fold_of, k)) for k in range(folds)]
        amb_u = [_ambiguity(lex, self.min_share) for lex in lex_u]
        amb_x = [_ambiguity(lex, self.min_share) for lex in lex_x]
        case = [_casing(_select(words, words, fold_of, k)[0]) for k in range(folds)]
        rule_counts = Counter(r for rs in rules for r in rs)
        lemma_y = [
            [r if rule_counts[r] >= self.min_rule_count else _RARE for r in rs] for rs in rules
        ]

        feats_lex: dict[str, Counter[str]] = {}
        feats_back: dict[str, Counter[str]] = {}
        feats_xpos: dict[str, Counter[str]] = {}
        lemma_lex: dict[str, Counter[str]] = {}
        lemma_lower: dict[str, Counter[str]] = {}
        for i in range(n):
            for w, u, x, f, lem, r in zip(
                words[i], upos[i], xpos[i], feats[i], lemmas[i], rules[i], strict=True
            ):
                feats_lex.setdefault(f"{w.lower()}\t{u}\t{x}", Counter())[f] += 1
                feats_back.setdefault(f"{u}\t{x}", Counter())[f] += 1
                feats_xpos.setdefault(f"{w.lower()}\t\t{x}", Counter())[f] += 1
                feats_xpos.setdefault(f"\t\t{x}", Counter())[f] += 1
                lemma_lex.setdefault(f"{w}\t{x}", Counter())[r] += 1
                low = w.lower()
                lemma_lower.setdefault(f"{low}\t{x}", Counter())[lemma_rule(low, lem)] += 1
        feats_best = {k: _most(c) for k, c in feats_lex.items()}
        feats_back_best = {k: _most(c) for k, c in feats_back.items()}
        feats_xpos_best = {k: _most(c) for k, c in feats_xpos.items()}
        chosen = frozenset(u for us in upos for u in us)
        if self.feats_upos is not None:
            chosen = chosen & frozenset(self.feats_upos)
        feats_counts = Counter(
            f
            for fs, us in zip(feats, upos, strict=True)
            for f, u in zip(fs, us, strict=True)
            if u in chosen
        )

        xpos1_t, upos_t, xpos_t, lemma_t, feats_t = (
            self._tagger(max(self.n_buckets // 4, 1)),
            self._tagger(self.n_buckets),
            self._tagger(self.n_buckets),
            self._tagger(max(self.n_buckets // 16, 1)),
            self._tagger(max(self.n_buckets // 16, 1)),
        )
        # the columns that the stages' templates read: ambiguity and casing
        # classes from the other folds, then the tags of the stages before
        lowers = [[w.lower() for w in ws] for ws in words]
        cls_u = [_lookup(amb_u[fold_of[i]], ls) for i, ls in enumerate(lowers)]
        cls_x = [_lookup(amb_x[fold_of[i]], ls) for i, ls in enumerate(lowers)]
        cases = [_lookup(case[fold_of[i]], ls) for i, ls in enumerate(lowers)]
        del lowers
        # a stage reading another's tags learns from jackknifed ones
        data = _Sentences(_templates(_stage_blocks(None, True)), words, [cls_x, cases])
        from tqdm.auto import tqdm

        bar = tqdm(total=7, desc="tagger", unit="training", disable=not progress)

        def step(done: _T) -> _T:
            bar.update()
            return done

        jack_x = step(self._jackknifed(max(self.n_buckets // 4, 1), data, xpos, epochs))
        xpos1_t = step(self._fit_stage(xpos1_t, data, xpos, epochs).freeze())
        data = _Sentences(_templates(_stage_blocks("xpos", True)), words, [cls_u, jack_x, cases])
        jack_u = step(self._jackknifed(self.n_buckets, data, upos, epochs))
        upos_t = step(self._fit_stage(upos_t, data, upos, epochs).freeze())
        data = _Sentences(_templates(_stage_blocks("upos", True)), words, [cls_x, jack_u, cases])
        xpos_t = step(self._fit_stage(xpos_t, data, xpos, epochs).freeze())
        data = _Sentences(_templates(("lemma",)), words, [upos, xpos])
        lemma_t = step(self._fit_stage(lemma_t, data, lemma_y, epochs).freeze())
        # the FEATS tagger learns from the jackknifed UPOS and (first) XPOS
        feats_y = [
            [
                f if u in chosen and feats_counts[f] >= self.min_rule_count else _LEX
                for f, u in zip(fs, us, strict=True)
            ]
            for fs, us in zip(feats, jack_u, strict=True)
        ]
        # the lexicons' FEATS of a training sentence, from the other folds
        sources = [(feats_best, feats_xpos_best)] * folds
        if self._held_out_feats and folds > 1:
            sources = _held_out_feats_lexicons(
                feats_lex, feats_xpos, words, upos, xpos, feats, fold_of, folds
            )
        lex = [
            _lex_feats(sources[k][0], feats_back_best, ws, us, xs, sources[k][1])
            for k, ws, us, xs in zip(fold_of, words, jack_u, jack_x, strict=True)
        ]
        del sources
        data = _Sentences(_templates((_FEATS_BLOCK,)), words, [jack_u, jack_x, lex])
        feats_t = step(self._fit_stage(feats_t, data, feats_y, epochs).freeze())
        bar.close()
        del data

        all_u = _lexicon(words, upos)
        all_x = _lexicon(words, xpos)
        self.xpos1_ = xpos1_t
        self.upos_, self.xpos_, self.lemma_, self.feats_ = upos_t, xpos_t, lemma_t, feats_t
        self.feats_upos_ = tuple(sorted(chosen))
        self._feats_block = _FEATS_BLOCK
        self._amb_upos = _ambiguity(all_u, self.min_share)
        self._amb_xpos = _ambiguity(all_x, self.min_share)
        self._feats_lex = feats_best
        self._feats_backoff = feats_back_best
        self._feats_xpos = feats_xpos_best
        self._casing = _casing(words)
        self._lemma_lex = {k: _most(c) for k, c in lemma_lex.items()}
        self._lemma_lower_lex = {k: _most(c) for k, c in lemma_lower.items()}
        self._fitted = True
        self.__dict__.pop("_chain", None)
        return self

    # --- tagging ---------------------------------------------------------

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("this MorphologyTagger is not fitted; call fit(sentences) first")

    def _lemma(self, word: str, xpos: str, rule: Any) -> str:
        known = self._lemma_lex.get(f"{word}\t{xpos}")
        if known is not None:
            return apply_lemma_rule(known, word)
        low = word.lower()
        known = self._lemma_lower_lex.get(f"{low}\t{xpos}")
        if known is not None:
            return apply_lemma_rule(known, low)
        if isinstance(rule, str) and rule != _RARE:
            try:
                return apply_lemma_rule(rule, word)
            except ValueError:
                pass
        return word

    def _columns(self, words: Sequence[Sequence[str]]) -> _Columns:
        """The lexicon columns of the sentences ``words``."""
        lowers = [[w.lower() for w in ws] for ws in words]
        return _Columns(
            [_lookup(self._amb_upos, ls) for ls in lowers],
            [_lookup(self._amb_xpos, ls) for ls in lowers],
            None if self.xpos1_ is None else [_lookup(self._casing, ls) for ls in lowers],
        )

    def _upos_data(self, words: list[list[str]], cols: _Columns | None = None) -> _Sentences:
        """The UPOS stage's sentences ``words`` with its columns (``cols``:
        their lexicon columns, when known), with the tags of the first XPOS
        stage (none in a model of version 1)."""
        self._check_fitted()
        cols = self._columns(words) if cols is None else cols
        if self.xpos1_ is None or cols.casing is None:
            return _Sentences(_templates(_stage_blocks(None, False)), words, [cols.amb_upos])
        data_1 = _Sentences(
            _templates(_stage_blocks(None, True)), words, [cols.amb_xpos, cols.casing]
        )
        first = [[str(x) for x in xs] for xs in self._predict_stage(self.xpos1_, data_1)]
        return _Sentences(
            _templates(_stage_blocks("xpos", True)), words, [cols.amb_upos, first, cols.casing]
        )

    def _core_chain(self) -> _omkl.MorphologyChain | None:
        """The stages and lexicons in the core (``MorphologyChain`` of
        ``omkl._omkl``, made on first use), which tag as :meth:`_tag_many`'s
        stages do; ``None`` when a stage is not frozen (a model of an older
        format) or has labels other than str, or with :attr:`_dict_features`."""
        chain = self.__dict__.get("_chain")
        if chain is not None or "_chain" in self.__dict__:
            return chain
        stages = [self.xpos1_, self.upos_, self.xpos_, self.lemma_, self.feats_]
        usable = not self._dict_features and all(
            t is None or (t.frozen and t.labels_ and all(isinstance(y, str) for y in t.labels_))
            for t in stages
        )
        if usable:
            casing = self.xpos1_ is not None
            blocks = [
                _stage_blocks(None, True),
                _stage_blocks("xpos", True) if casing else _stage_blocks(None, False),
                _stage_blocks("upos", casing),
                ("lemma",),
                (self._feats_block,),
            ]
            args = [
                None
                if t is None
                else (
                    _templates(b),
                    cast(_omkl.FrozenChainTagger, t._state),
                    list(map(str, t.labels_)),
                )
                for t, b in zip(stages, blocks, strict=True)
            ]
            first, upos, xpos, lemma, feats = args
            assert upos is not None and xpos is not None and lemma is not None and feats is not None
            chain = _omkl.MorphologyChain(
                first,
                upos,
                xpos,
                lemma,
                feats,
                {
                    "amb_upos": self._amb_upos,
                    "amb_xpos": self._amb_xpos,
                    "casing": self._casing if casing else {},
                    "feats": self._feats_lex,
                    "feats_backoff": self._feats_backoff,
                    "feats_xpos": self._feats_xpos,
                    "lemma": self._lemma_lex,
                    "lemma_lower": self._lemma_lower_lex,
                },
                list(self.feats_upos_),
            )
        self.__dict__["_chain"] = chain
        return chain

    def _tag_many(
        self, words: list[list[str]], alternatives: Sequence[str] = ()
    ) -> tuple[list[list[tuple[str, str, str, str]]], list[list[dict[str, Any]]]]:
        """``(upos, xpos, feats, lemma)`` of every word of every sentence,
        and a dict per word with its ``{column}_alt`` for each column of
        ``alternatives`` (``"upos"``, ``"xpos"``; empty without)."""
        self._check_fitted()
        chain = self._core_chain()
        if chain is not None:
            return self._tag_many_in_core(chain, words, alternatives)
        return self._tag_many_by_stage(words, alternatives)

    def _tag_many_in_core(
        self, chain: _omkl.MorphologyChain, words: list[list[str]], alternatives: Sequence[str]
    ) -> tuple[list[list[tuple[str, str, str, str]]], list[list[dict[str, Any]]]]:
        """:meth:`_tag_many` by the stages in the core."""
        out = []
        alts: list[list[dict[str, Any]]] = []
        tagged = chain.tag_many(words, "upos" in alternatives, "xpos" in alternatives)
        for upos, xpos, feats, lemma, upos_alt, xpos_alt in tagged:
            out.append(list(zip(upos, xpos, feats, lemma, strict=True)))
            sent_alts: list[dict[str, Any]] = [{} for _ in upos]
            for col in alternatives:
                second = upos_alt if col == "upos" else xpos_alt
                assert second is not None
                for d, alt in zip(sent_alts, second, strict=True):
                    d[f"{col}_alt"] = alt
            alts.append(sent_alts)
        return out, alts

    def _tag_many_by_stage(
        self, words: list[list[str]], alternatives: Sequence[str] = ()
    ) -> tuple[list[list[tuple[str, str, str, str]]], list[list[dict[str, Any]]]]:
        """:meth:`_tag_many` stage by stage, each stage's labels back in
        Python (the reference of :meth:`_tag_many_in_core`)."""
        cols = self._columns(words)
        data_u = self._upos_data(words, cols)
        upos = [[str(u) for u in us] for us in self._predict_stage(self.upos_, data_u)]
        casing = [] if cols.casing is None else [cols.casing]
        blocks = _stage_blocks("upos", cols.casing is not None)
        data_x = _Sentences(_templates(blocks), words, [cols.amb_xpos, upos, *casing])
        xpos = [[str(x) for x in xs] for xs in self._predict_stage(self.xpos_, data_x)]
        alts: list[list[dict[str, Any]]] = [[{} for _ in ws] for ws in words]
        stages = {"upos": (self.upos_, data_u, upos), "xpos": (self.xpos_, data_x, xpos)}
        for col in alternatives:
            tagger, data, tags = stages[col]
            if self._dict_features:
                second = [
                    tagger._second_choices(x, ts) for x, ts in zip(_dicts(data), tags, strict=True)
                ]
            else:
                second = tagger._second_choices_text(data, tags)
            for words_alts, choices in zip(alts, second, strict=True):
                for d, (alt, p) in zip(words_alts, choices, strict=True):
                    d[f"{col}_alt"] = (str(alt), p)
        rules = self._predict_stage(
            self.lemma_, _Sentences(_templates(("lemma",)), words, [upos, xpos])
        )
        lex = [
            _lex_feats(self._feats_lex, self._feats_backoff, ws, us, xs, self._feats_xpos)
            for ws, us, xs in zip(words, upos, xpos, strict=True)
        ]
        data_f = _Sentences(_templates((self._feats_block,)), words, [upos, xpos, lex])
        feats = self._predict_stage(self.feats_, data_f)
        chosen = frozenset(self.feats_upos_)
        out = []
        for ws, us, xs, rs, ls, fs in zip(words, upos, xpos, rules, lex, feats, strict=True):
            sent = []
            for w, u, x, r, lf, f in zip(ws, us, xs, rs, ls, fs, strict=True):
                if u not in chosen or not isinstance(f, str) or f == _LEX:
                    f = lf
                sent.append((u, x, cast(str, f), self._lemma(w, x, r)))
            out.append(sent)
        return out, alts

    @synchronized
    def tag(
        self, sentences: Sequence[Sequence[Mapping[str, Any]]], alternatives: Sequence[str] = ()
    ) -> list[Sentence]:
        """Copies of ``sentences`` (lists of token dicts with at least
        ``form``) with ``upos``, ``xpos``, ``feats`` and ``lemma`` predicted;
        the input is left untouched and other keys are copied.

        For each column of ``alternatives`` (``"upos"``, ``"xpos"``), each
        token also gets ``upos_alt`` (``xpos_alt``): the tag other than the
        predicted one with the largest marginal of that stage
        (forward-backward on the stage's scores,
        :meth:`~omkl.tagging.TextTagger.predict_marginals_one`), as a pair
        ``(tag, marginal)``; a parser can read it as a sign that the tag may
        be wrong (:class:`~omkl.TextParser`). Each column adds a
        forward-backward pass of its stage (``benches/bench_morphology.py``
        prints the tagging rates with and without).

        >>> def tok(upos, xpos):
        ...     return {"form": "runs", "lemma": "run", "upos": upos, "xpos": xpos, "feats": "_"}
        >>> t = MorphologyTagger(folds=2).fit(
        ...     [[tok("VERB", "VBZ")], [tok("NOUN", "NNS")], [tok("VERB", "VBZ")]] * 2, epochs=2)
        >>> tok = t.tag([[{"form": "runs"}]], alternatives=["upos"])[0][0]
        >>> sorted([tok["upos"], tok["upos_alt"][0]]), 0.0 < tok["upos_alt"][1] < 0.5
        (['NOUN', 'VERB'], True)
        """
        if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Sequence):
            raise ValueError(
                f"invalid value for `sentences`: expected a list of sentences, got {sentences!r}"
            )
        if (
            isinstance(alternatives, (str, bytes))
            or not isinstance(alternatives, Sequence)
            or not set(alternatives) <= {"upos", "xpos"}
        ):
            raise ValueError(
                "invalid value for `alternatives`: expected a list of columns among "
                f"'upos' and 'xpos', got {alternatives!r}"
            )
        words = [_forms(s, i) for i, s in enumerate(sentences)]
        self._check_fitted()
        chain = self._core_chain()
        if chain is not None:
            return _copies_in_core(chain, sentences, words, alternatives)
        tags, alts = self._tag_many_by_stage(words, alternatives)
        out = []
        for sent, ts, sent_alts in zip(sentences, tags, alts, strict=True):
            new = []
            for tok, (u, x, f, lem), alt in zip(sent, ts, sent_alts, strict=True):
                t = {k: v if type(v) in _ATOMS else copy.deepcopy(v) for k, v in tok.items()}
                t.update(upos=u, xpos=x, feats=f, lemma=lem, **alt)
                new.append(t)
            out.append(new)
        return out

    @synchronized
    def tag_words(self, words: Sequence[str]) -> list[Token]:
        """Token dicts (``id`` from 1, ``form``, ``lemma``, ``upos``,
        ``xpos``, ``feats``) of one pre-tokenised sentence."""
        ws = _check_words(words, "words")
        (tags,), _ = self._tag_many([ws])
        return [
            {"id": str(i + 1), "form": w, "lemma": lem, "upos": u, "xpos": x, "feats": f}
            for i, (w, (u, x, f, lem)) in enumerate(zip(ws, tags, strict=True))
        ]

    @synchronized
    def score(self, sentences: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, float]:
        """Accuracies in percent over all words of ``sentences`` (gold
        tokenisation): ``UPOS``, ``XPOS``, ``UFeats``, ``AllTags`` (UPOS,
        XPOS and FEATS all right) and ``Lemma`` (see :func:`tag_accuracies`)."""
        return tag_accuracies(sentences, self.tag(sentences))

    # --- persistence -----------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MorphologyTagger:
        """Loads a model saved by :meth:`save`, of this version, of version
        2 (whose FEATS tagger predicts the FEATS of VERB, AUX and PRON only)
        or of version 1 (which also tags UPOS before XPOS, without the first
        XPOS tagger). ``FileNotFoundError`` if ``path`` is missing; ``ValueError``
        naming the file if it is not a saved ``MorphologyTagger`` or is
        truncated or corrupted."""
        model, state, sections = load_estimator(cls, path, [1, 2, cls._SAVE_VERSION], (4, 5))
        restore_state(model, path, state, sections)
        return cast(MorphologyTagger, model)

    @synchronized
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_chain", None)  # rebuilt from the stages when next used
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restores a pickle; one made before version 2 (no first XPOS
        tagger, no casing or XPOS-keyed FEATS lexicons) tags as version 1
        did."""
        self.__dict__.update(
            xpos1_=None,
            _feats_xpos={},
            _casing={},
            jackknife=2,
            feats_upos=list(_OLD_FEATS_UPOS),
            feats_upos_=_OLD_FEATS_UPOS,
            _feats_block=_OLD_FEATS_BLOCK,
        )
        self.__dict__.update(state)

    def _taggers(self) -> list[TextTagger]:
        """The chains in the order of the saved sections (the first XPOS
        tagger last, absent in a model of version 1)."""
        taggers = [self.upos_, self.xpos_, self.lemma_, self.feats_]
        return taggers if self.xpos1_ is None else [*taggers, self.xpos1_]

    @synchronized
    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sum(t.__sizeof__() for t in self._taggers())

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        """The Python state and the four taggers' core bytes (see
        :class:`~omkl._persist.Persistent`).

        >>> import pathlib, tempfile
        >>> t = MorphologyTagger(folds=2).fit(
        ...     [[{"form": "Hi", "lemma": "hi", "upos": "INTJ", "xpos": "UH", "feats": "_"}]] * 2,
        ...     epochs=2)
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.omkl"
        >>> t.save(p)
        >>> MorphologyTagger.load(p).tag_words(["Hi"])[0]["lemma"]
        'hi'
        """
        taggers = self._taggers()
        state: dict[str, Any] = {
            "fitted": self._fitted,
            "labels": [list(t._labels) for t in taggers],
            "feats_upos": list(self.feats_upos_),
            "feats_block": self._feats_block,
            **{key: getattr(self, f"_{key}") for key in _LEXICONS},
        }
        return state, [t._state.to_bytes() for t in taggers]

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        labels = state["labels"]
        if not isinstance(labels, list) or len(labels) != len(sections):
            raise ValueError(f"expected the labels of {len(sections)} taggers")
        if len(sections) == 4 and getattr(state, "strict", False):
            raise ValueError("expected 5 sections in a file of format version 2, got 4")
        if len(sections) == 4:  # version 1: no first XPOS tagger
            self.xpos1_ = None
        taggers = self._taggers()
        for tagger, lab, sec in zip(taggers, labels, sections, strict=True):
            tagger._load_state({"labels": lab}, [sec])
        for key in _LEXICONS:
            if len(sections) == 4 and key in _LEXICONS_2:
                continue
            value = state[key]
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ValueError(f"the saved {key} is not a dict of str")
            setattr(self, f"_{key}", value)
        chosen = state.get("feats_upos", None)
        if chosen is None:  # before version 3
            chosen = list(_OLD_FEATS_UPOS)
            self.feats_upos = list(_OLD_FEATS_UPOS)
        if not isinstance(chosen, list) or not all(isinstance(u, str) for u in chosen):
            raise ValueError(f"the saved feats_upos is not a list of str: {chosen!r}")
        self.feats_upos_ = tuple(chosen)
        block = state.get("feats_block", _OLD_FEATS_BLOCK)
        if block not in (_FEATS_BLOCK, _OLD_FEATS_BLOCK):
            raise ValueError(
                f"the saved feats_block is {block!r}: expected {_FEATS_BLOCK!r} or "
                f"{_OLD_FEATS_BLOCK!r}"
            )
        self._feats_block = block
        self._fitted = bool(state["fitted"])
        self.__dict__.pop("_chain", None)


#: The lexicons a fitted tagger keeps beside its four chains.
_LEXICONS = (
    "amb_upos",
    "amb_xpos",
    "feats_lex",
    "feats_backoff",
    "lemma_lex",
    "lemma_lower_lex",
    "feats_xpos",
    "casing",
)
#: The lexicons added by version 2 (empty in a model of version 1).
_LEXICONS_2 = ("feats_xpos", "casing")


def _copies_in_core(
    chain: _omkl.MorphologyChain,
    sentences: Sequence[Sequence[Mapping[str, Any]]],
    words: list[list[str]],
    alternatives: Sequence[str],
) -> list[Sentence]:
    """:meth:`MorphologyTagger.tag` by the stages in the core (``chain``):
    the tokens of ``sentences`` (whose forms are ``words``) copied with the
    columns of ``chain.tag_many`` set, read column by column."""
    up, xp = "upos" in alternatives, "xpos" in alternatives
    out = []
    atoms = _ATOMS
    for sent, (us, xs, fs, ls, ua, xa) in zip(
        sentences, chain.tag_many(words, up, xp), strict=True
    ):
        new = []
        for j, tok in enumerate(sent):
            t = {k: v if type(v) in atoms else copy.deepcopy(v) for k, v in tok.items()}
            t["upos"] = us[j]
            t["xpos"] = xs[j]
            t["feats"] = fs[j]
            t["lemma"] = ls[j]
            for col in alternatives:
                second = ua if col == "upos" else xa
                assert second is not None
                t[f"{col}_alt"] = second[j]
            new.append(t)
        out.append(new)
    return out


def _select(
    words: Sequence[Sequence[str]], tags: Sequence[Sequence[str]], fold_of: Sequence[int], k: int
) -> tuple[list[Sequence[str]], list[Sequence[str]]]:
    """The sentences (and tags) of every fold but ``k`` (all of them when
    there is one fold)."""
    if max(fold_of) == 0:
        return list(words), list(tags)
    pick = [i for i, f in enumerate(fold_of) if f != k]
    return [words[i] for i in pick], [tags[i] for i in pick]
