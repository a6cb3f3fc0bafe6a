"""The CoNLL 2018 shared task's evaluation of a system's CoNLL-U file
against the gold one (``conll18_ud_eval.py``, the metric of the UD field and
of UDPipe's papers): ``omkl evaluate GOLD SYSTEM``.

The two files may tokenise the same text differently. Their characters,
without white space, must be the same; tokens and sentences are scored as
character spans (``Tokens``, ``Sentences``), and words are aligned by their
spans, or inside a multiword token by the longest common subsequence of
their lower-cased forms (``Words``). Every other metric counts the aligned
words whose column agrees: precision over the system's words, recall over
the gold words, F1, and the accuracy over aligned words (``AligndAcc``).
Punctuation counts. ``UFeats`` compares the universal features only,
``LAS`` and the others the universal part of the relation (before ``:``), a
gold lemma ``_`` matches any lemma, and ``CLAS``, ``MLAS`` and ``BLEX`` count
the words with a content relation (``MLAS`` also needs the UPOS, the
universal features and the function-word children right, ``BLEX`` the
lemma). Empty nodes (``8.1``) are skipped.

>>> import os, tempfile
>>> gold = (
...     "# text = Dogs bark.\\n"
...     "1\\tDogs\\tdog\\tNOUN\\tNNS\\tNumber=Plur\\t2\\tnsubj\\t_\\t_\\n"
...     "2\\tbark\\tbark\\tVERB\\tVBP\\t_\\t0\\troot\\t_\\tSpaceAfter=No\\n"
...     "3\\t.\\t.\\tPUNCT\\t.\\t_\\t2\\tpunct\\t_\\t_\\n\\n")
>>> system = gold.replace("VERB\\tVBP", "NOUN\\tNN").replace("2\\tpunct", "1\\tpunct")
>>> with tempfile.TemporaryDirectory() as d:
...     for name, text in [("gold", gold), ("system", system)]:
...         with open(os.path.join(d, name), "w", encoding="utf-8") as f:
...             _ = f.write(text)
...     s = evaluate(os.path.join(d, "gold"), os.path.join(d, "system"))
>>> round(s["UPOS"].f1 * 100, 2), round(s["LAS"].f1 * 100, 2), s["Words"].f1
(66.67, 66.67, 1.0)
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["METRICS", "Score", "evaluate", "format_scores"]

#: The metrics, in the order the official script prints them.
METRICS = (
    "Tokens",
    "Sentences",
    "Words",
    "UPOS",
    "XPOS",
    "UFeats",
    "AllTags",
    "Lemmas",
    "UAS",
    "LAS",
    "CLAS",
    "MLAS",
    "BLEX",
)

_CONTENT = frozenset(
    "nsubj obj iobj csubj ccomp xcomp obl vocative expl dislocated advcl advmod discourse "
    "nmod appos nummod acl amod conj fixed flat compound list parataxis orphan goeswith "
    "reparandum root dep".split()
)
_FUNCTIONAL = frozenset("aux cop mark det clf case cc".split())
_UNIVERSAL_FEATURES = frozenset(
    "PronType NumType Poss Reflex Foreign Abbr Gender Animacy Number Case Definite Degree "
    "VerbForm Mood Tense Aspect Voice Evident Polarity Person Polite".split()
)


class Score(NamedTuple):
    """One metric: the counts and the scores in ``[0, 1]``
    (``aligned_accuracy`` is ``None`` for the span metrics)."""

    gold: int
    system: int
    correct: int
    aligned: int | None

    @property
    def precision(self) -> float:
        return self.correct / self.system if self.system else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        total = self.system + self.gold
        return 2 * self.correct / total if total else 0.0

    @property
    def aligned_accuracy(self) -> float | None:
        if self.aligned is None:
            return None
        return self.correct / self.aligned if self.aligned else 0.0


@dataclass(eq=False)
class _Word:
    """A word: its token's character span, its columns (FEATS reduced to the
    universal features, DEPREL to its universal part) and its links."""

    start: int
    end: int
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str
    deprel: str
    head: int
    multiword: bool
    parent: _Word | None = None
    children: list[_Word] = field(default_factory=list)


@dataclass
class _File:
    characters: list[str] = field(default_factory=list)
    tokens: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    words: list[_Word] = field(default_factory=list)


def _bad(path: str, line: int, what: str) -> ValueError:
    return ValueError(f"{path}, line {line}: {what}")


def _word(path: str, line: int, cols: list[str], span: tuple[int, int], multi: bool) -> _Word:
    if len(cols) != 10:
        raise _bad(path, line, f"expected 10 tab-separated columns, got {len(cols)}")
    try:
        head = int(cols[6])
    except ValueError:
        raise _bad(path, line, f"HEAD {cols[6]!r} is not an integer") from None
    if head < 0:
        raise _bad(path, line, f"HEAD {head} is negative")
    universal = (f for f in cols[5].split("|") if f.split("=", 1)[0] in _UNIVERSAL_FEATURES)
    feats, deprel = "|".join(sorted(universal)), cols[7].split(":")[0]
    return _Word(span[0], span[1], cols[1], cols[2], cols[3], cols[4], feats, deprel, head, multi)


def _link(path: str, line: int, words: list[_Word]) -> None:
    """Sets the parents and function-word children of one sentence's words;
    an error for a head outside the sentence, a cycle or not one root."""
    for w in words:
        if w.head > len(words):
            n = len(words)
            raise _bad(path, line, f"HEAD {w.head} points outside the sentence of {n} words")
        w.parent = words[w.head - 1] if w.head else None
    for w in words:
        seen, p = 0, w.parent
        while p is not None:
            seen += 1
            if seen > len(words):
                raise _bad(path, line, "the heads of the sentence ending here form a cycle")
            p = p.parent
    if sum(w.parent is None for w in words) != 1:
        raise _bad(path, line, "the sentence ending here has more than one root")
    for w in words:
        if w.parent is not None and w.deprel in _FUNCTIONAL:
            w.parent.children.append(w)


def _read(path: str) -> _File:
    out = _File()
    sentence: list[_Word] | None = None
    index = start = 0
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        i += 1
        if sentence is None:
            if line.startswith("#"):
                continue
            sentence, start = [], index
        if not line:
            if not sentence:
                raise _bad(path, i, "an empty sentence")
            _link(path, i, sentence)
            out.words.extend(sentence)
            out.sentences.append((start, index))
            sentence = None
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise _bad(path, i, f"expected 10 tab-separated columns, got {len(cols)}")
        if "." in cols[0]:
            continue  # an empty node
        form = "".join(c for c in cols[1] if unicodedata.category(c) != "Zs")
        if not form:
            raise _bad(path, i, "an empty FORM")
        out.characters.extend(form)
        span = (index, index + len(form))
        out.tokens.append(span)
        index += len(form)
        if "-" in cols[0]:
            try:
                first, last = map(int, cols[0].split("-"))
            except ValueError:
                raise _bad(path, i, f"ID {cols[0]!r} is not a range of integers") from None
            for _ in range(first, last + 1):
                if i >= len(lines):
                    raise _bad(path, i, f"the multiword token {cols[0]} lacks its words")
                sentence.append(_word(path, i + 1, lines[i].rstrip("\r").split("\t"), span, True))
                i += 1
        else:
            try:
                wid = int(cols[0])
            except ValueError:
                raise _bad(path, i, f"ID {cols[0]!r} is not an integer") from None
            if wid != len(sentence) + 1:
                raise _bad(path, i, f"word ID {wid}, expected {len(sentence) + 1}")
            sentence.append(_word(path, i, cols, span, False))
    if sentence is not None:
        raise _bad(path, len(lines), "the file does not end with an empty line")
    return out


def _spans(gold: list[tuple[int, int]], system: list[tuple[int, int]]) -> Score:
    correct = gi = si = 0
    while gi < len(gold) and si < len(system):
        if system[si][0] < gold[gi][0]:
            si += 1
        elif gold[gi][0] < system[si][0]:
            gi += 1
        else:
            correct += gold[gi][1] == system[si][1]
            gi += 1
            si += 1
    return Score(len(gold), len(system), correct, None)


def _beyond(words: list[_Word], i: int, end: int) -> bool:
    if i >= len(words):
        return True
    if words[i].multiword:
        return words[i].start >= end
    return words[i].end > end


def _extend(w: _Word, end: int) -> int:
    return w.end if w.multiword and w.end > end else end


def _region(gw: list[_Word], sw: list[_Word], gi: int, si: int) -> tuple[int, int, int, int]:
    """The smallest stretch of words, from ``(gi, si)``, that covers the
    multiword tokens there: ``(gs, ss, ge, se)``."""
    if gw[gi].multiword:
        end = gw[gi].end
        if not sw[si].multiword and sw[si].start < gw[gi].start:
            si += 1
    else:
        end = sw[si].end
        if not gw[gi].multiword and gw[gi].start < sw[si].start:
            gi += 1
    gs, ss = gi, si
    while not _beyond(gw, gi, end) or not _beyond(sw, si, end):
        if gi < len(gw) and (si >= len(sw) or gw[gi].start <= sw[si].start):
            end = _extend(gw[gi], end)
            gi += 1
        else:
            end = _extend(sw[si], end)
            si += 1
    return gs, ss, gi, si


def _align(gw: list[_Word], sw: list[_Word]) -> dict[_Word, _Word]:
    """The gold word of each aligned system word."""
    out: dict[_Word, _Word] = {}
    gi = si = 0
    while gi < len(gw) and si < len(sw):
        if gw[gi].multiword or sw[si].multiword:
            gs, ss, gi, si = _region(gw, sw, gi, si)
            ng, ns = gi - gs, si - ss
            if ng and ns:
                g_forms = [w.form.lower() for w in gw[gs:gi]]
                s_forms = [w.form.lower() for w in sw[ss:si]]
                lcs = [[0] * (ns + 1) for _ in range(ng + 1)]
                for g in reversed(range(ng)):
                    for s in reversed(range(ns)):
                        best = lcs[g + 1][s + 1] + 1 if g_forms[g] == s_forms[s] else 0
                        lcs[g][s] = max(best, lcs[g + 1][s], lcs[g][s + 1])
                g = s = 0
                while g < ng and s < ns:
                    if g_forms[g] == s_forms[s]:
                        out[sw[ss + s]] = gw[gs + g]
                        g += 1
                        s += 1
                    elif lcs[g][s] == lcs[g + 1][s]:
                        g += 1
                    else:
                        s += 1
        elif (gw[gi].start, gw[gi].end) == (sw[si].start, sw[si].end):
            out[sw[si]] = gw[gi]
            gi += 1
            si += 1
        elif gw[gi].start <= sw[si].start:
            gi += 1
        else:
            si += 1
    return out


def evaluate(gold: str | os.PathLike[str], system: str | os.PathLike[str]) -> dict[str, Score]:
    """The scores of :data:`METRICS` of the CoNLL-U file ``system`` against
    ``gold`` (see the module docs). ``ValueError`` naming the file and the
    line for a malformed file (wrong column count, bad ID or HEAD, a head
    outside its sentence, a cycle, several roots, no final empty line), and
    naming both files when their characters differ."""
    g_path, s_path = os.fspath(gold), os.fspath(system)
    g, s = _read(g_path), _read(s_path)
    if g.characters != s.characters:
        i = 0
        while i < min(len(g.characters), len(s.characters)) and g.characters[i] == s.characters[i]:
            i += 1
        raise ValueError(
            f"{s_path}: its text differs from {g_path}'s (white space aside) at character {i}: "
            f"{''.join(s.characters[i : i + 20])!r} where the gold file has "
            f"{''.join(g.characters[i : i + 20])!r}"
        )
    to_gold = _align(g.words, s.words)

    def score(key: Any = None, content: bool = False) -> Score:
        def keep(w: _Word) -> bool:
            return not content or w.deprel in _CONTENT

        pairs = [(sw, gw) for sw, gw in to_gold.items() if keep(gw)]
        n_gold = sum(keep(w) for w in g.words)
        n_system = sum(keep(w) for w in s.words)
        if key is None:
            return Score(n_gold, n_system, len(pairs), len(pairs))

        def same(w: _Word | None) -> Any:
            return w  # a gold word stands for itself

        def gold_of(w: _Word | None) -> Any:
            return None if w is None else to_gold.get(w, "not aligned")

        correct = sum(key(gw, same, gw) == key(sw, gold_of, gw) for sw, gw in pairs)
        return Score(n_gold, n_system, correct, len(pairs))

    def lemma(w: _Word, gw: _Word) -> str:
        return "_" if gw.lemma == "_" else w.lemma

    def children(w: _Word, ga: Any) -> list[Any]:
        return [(ga(c), c.deprel, c.upos, c.feats) for c in w.children]

    return {
        "Tokens": _spans(g.tokens, s.tokens),
        "Sentences": _spans(g.sentences, s.sentences),
        "Words": score(),
        "UPOS": score(lambda w, ga, gw: w.upos),
        "XPOS": score(lambda w, ga, gw: w.xpos),
        "UFeats": score(lambda w, ga, gw: w.feats),
        "AllTags": score(lambda w, ga, gw: (w.upos, w.xpos, w.feats)),
        "Lemmas": score(lambda w, ga, gw: lemma(w, gw)),
        "UAS": score(lambda w, ga, gw: ga(w.parent)),
        "LAS": score(lambda w, ga, gw: (ga(w.parent), w.deprel)),
        "CLAS": score(lambda w, ga, gw: (ga(w.parent), w.deprel), content=True),
        "MLAS": score(
            lambda w, ga, gw: (ga(w.parent), w.deprel, w.upos, w.feats, children(w, ga)),
            content=True,
        ),
        "BLEX": score(lambda w, ga, gw: (ga(w.parent), w.deprel, lemma(w, gw)), content=True),
    }


def format_scores(scores: dict[str, Score]) -> str:
    """The table of the official script: precision, recall, F1 and the
    accuracy over aligned words, in percent.

    >>> print(format_scores({"UPOS": Score(4, 5, 3, 4)}))
    Metric     | Precision |    Recall |  F1 Score | AligndAcc
    -----------+-----------+-----------+-----------+-----------
    UPOS       |     60.00 |     75.00 |     66.67 |     75.00
    """
    rows = [
        "Metric     | Precision |    Recall |  F1 Score | AligndAcc",
        "-----------+-----------+-----------+-----------+-----------",
    ]
    for name, s in scores.items():
        acc = s.aligned_accuracy
        shown = "" if acc is None or name == "Words" else f"{100 * acc:10.2f}"
        rows.append(
            f"{name:11}|{100 * s.precision:10.2f} |{100 * s.recall:10.2f} |"
            f"{100 * s.f1:10.2f} |{shown}"
        )
    return "\n".join(rows)
