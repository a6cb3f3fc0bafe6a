r"""Tokenisation and sentence splitting of raw text, learned from the text of
a CoNLL-U treebank (as UDPipe 1's ``--tokenize``).

:class:`Tokenizer` learns from a CoNLL-U file's own ``# text`` comments, its
tokens and multiword-token lines (``1-2 don't`` followed by its words),
``SpaceAfter=No`` and its ``# newdoc`` / ``# newpar`` comments:

* **Tokens**: a linear chain (:class:`~omkl.tagging.TextTagger`, hinge
  loss, averaged) over the characters of a paragraph that are not white
  space labels each character ``I`` (inside a token) or ``T`` (a token ends
  after it). The
  features of a character are computed in the core from string columns
  (``tags:NAME`` blocks of ``omkl._omkl.TokenTemplates``, each read at the
  character and its two neighbours): the character, the classes (upper,
  lower, digit, punctuation, symbol, space) of the five characters around
  it, the classes of it and the next character with opening and closing
  brackets and quotes told apart, the lower-cased trigrams left and right
  of the boundary after it and the 4-gram across it (white space runs as
  one space, digits as ``0``), the part of its white-space-delimited chunk
  up to it and after it, and, at the last character of a chunk, the whole
  chunk, the chunks before and after it and the pair of it and the next.
  The sentences of a paragraph (a ``# newpar`` block, or a ``# newdoc``
  one, or the whole file when it marks neither) are learned in pieces of
  two sentences. A token never spans white space (a training token with a
  space in it is learned as its pieces); a web or e-mail address (also
  one whose user part ends in ``...``, as web archives hide them) and an
  emoticon (``:-)``, ``;P``) are one token.
* **Sentence ends**: a second chain, over the tokens of a paragraph (a CRF,
  log loss, so that its marginals are probabilities; averaged;
  ``sentence_epochs`` passes), labels each token ``E`` (a sentence ends after it)
  or ``O``, from the ``token`` block of ``TokenTemplates`` (the token, its
  affixes and shape, the tokens two either side and the bigrams) and a
  column of the class of the token's last character, whether white space
  follows and the class of the next token's first character
  (:func:`_token_columns`). It learns from the training file's own tokens
  in blocks of 10 sentences of a paragraph, and reads the tokens the first
  chain finds. A token is a sentence end where the chain's marginal of
  ``E`` reaches a threshold, so that text without punctuation between
  sentences (Gothic-PROIEL) still gets some from the words around. The
  threshold is the one with the best sentence F1 (both ends right, as in
  the CoNLL 2018 metric) on about one block in ten, held out of the
  training file while a first sentence chain learns from the rest; then it
  learns from the whole file. ``sentence_threshold`` sets it instead.
* **Multiword tokens**: a token whose lower-cased surface the training file
  mostly wrote as a multiword token takes its most frequent words (in the
  case of the surface where a word is a part of it: ``Don't`` gives
  ``Do n't``). A token the training file never saw may take a *suffix
  rule*: each two-word multiword token ``s`` = ``w1 w2`` gives the rule
  "a token ending in ``x`` (the part of ``s`` after its common prefix with
  ``w1``) splits into its beginning plus the rest of ``w1``, and ``w2``"
  (``don't`` gives ``n't`` -> ``(do)`` + ``n't``; ``στον`` gives ``τον`` ->
  ``(σ)ε`` + ``τον``). A rule is kept when it was seen in at least
  ``min_rule_count`` distinct (lower-cased) training tokens and at least
  ``min_rule_share`` of the distinct training tokens longer than ``x`` that
  end in ``x`` are its multiword tokens (distinct tokens, not their counts:
  a frequent ``στο`` makes no rule of every word ending in ``το``); the
  longest matching suffix wins.

:meth:`Tokenizer.tokenize` cuts a text into paragraphs at blank lines, and
returns its sentences (dicts, see :meth:`Tokenizer.tokenize`); the white
space after each token is kept in its MISC (``SpaceAfter=No``, or
``SpacesAfter=\n\n`` as UDPipe writes it when it is not one space), so that
:func:`detokenize` rebuilds the exact text. The ``# text`` of a sentence is
its stretch of the input with each run of white space (line breaks too) as
one space. :func:`format_tokenized` writes CoNLL-U.

Examples
--------
>>> import pathlib, tempfile
>>> from omkl.tokenizer import Tokenizer, detokenize, format_tokenized
>>> def sent(text, *tokens):
...     rows = [f"{i}\t{f}\t_\t_\t_\t_\t_\t_\t_\t{m}" for i, (f, m) in enumerate(tokens, 1)]
...     return "\n".join([f"# text = {text}", *rows]) + "\n\n"
>>> no = "SpaceAfter=No"
>>> corpus = "# newpar\n" + sent("Dogs bark.", ("Dogs", "_"), ("bark", no), (".", "_"))
>>> corpus += sent("Cats sleep.", ("Cats", "_"), ("sleep", no), (".", "_"))
>>> path = pathlib.Path(tempfile.mkdtemp()) / "train.conllu"
>>> _ = path.write_text(corpus * 20, encoding="utf-8")
>>> tok = Tokenizer(epochs=5).fit(path)
>>> out = tok.tokenize("Cats bark. Dogs sleep.")
>>> [[t["form"] for t in s["tokens"]] for s in out]
[['Cats', 'bark', '.'], ['Dogs', 'sleep', '.']]
>>> detokenize(out) == "Cats bark. Dogs sleep."
True
>>> print(format_tokenized(out).splitlines()[:5])
['# newdoc', '# newpar', '# sent_id = 1', '# text = Cats bark.', '1\tCats\t_\t_\t_\t_\t_\t_\t_\t_']
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from omkl import _omkl
from omkl._params import check_int
from omkl._persist import IndependentCopies, Persistent, load_estimator, restore_state
from omkl._sync import Synchronized, synchronized
from omkl._threads import thread_map
from omkl.tagging import TextTagger, _Sentences

__all__ = ["Tokenizer", "conllu_text", "detokenize", "format_tokenized"]

Sentence = dict[str, Any]

#: Character labels: inside a token, a token ends, a token and a sentence end
#: (the character chain learns ``I`` and ``T``; the sentence chain sets ``S``).
_INSIDE, _TOKEN, _SENTENCE = "I", "T", "S"
_LABELS = frozenset({_INSIDE, _TOKEN, _SENTENCE})
#: The string columns of a character's features (see :func:`_features`).
_COLUMNS = ("c", "k", "l", "r", "b", "p", "s", "n", "x", "w", "v", "u", "j")
#: The sentences of a training piece (a paragraph is cut into pieces).
_PIECE = 2
#: The sentences of a block: about one block in ten (:data:`_HELD_OUT`) is
#: held out while the threshold of sentence ends is chosen.
_BLOCK = 10
_HELD_OUT = 0.1
_SPACE = re.compile(r"\s+")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


@functools.cache
def _templates() -> _omkl.TokenTemplates:
    return _omkl.TokenTemplates([f"tags:{c}" for c in _COLUMNS])


#: The class of the punctuation of a Unicode category (see :func:`_class`).
_PUNCT = {"Ps": "(", "Pe": ")", "Pi": "<", "Pf": ">", "Pd": "~"}


@functools.cache
def _class(c: str) -> str:
    """The class of a character: ``_`` space, ``U`` upper, ``L`` lower,
    ``A`` other letter, ``D`` digit, ``P`` punctuation (its own ``.`` ``,``
    ``'`` ``"`` ``-``), ``S`` symbol, ``O`` other."""
    if c.isspace():
        return "_"
    if c.isalpha():
        return "U" if c.isupper() else "L" if c.islower() else "A"
    if c.isdigit():
        return "D"
    cat = unicodedata.category(c)
    if cat[0] == "P":
        return c if c in ".,'\"-?!:;" else "P"
    return "S" if cat[0] == "S" else "O"


@functools.cache
def _fine(c: str) -> str:
    """The class of ``c`` (:func:`_class`), its punctuation told apart as
    opening, closing, initial quote, final quote or dash."""
    return _PUNCT.get(unicodedata.category(c), "") or _class(c)


@functools.cache
def _low(c: str) -> str:
    """``c`` lower-cased (kept when that is not one character), digits as 0."""
    if c.isdigit():
        return "0"
    lo = c.lower()
    return lo if len(lo) == 1 else c


def _features(view: str) -> tuple[list[str], list[list[str]]]:
    r"""The characters of ``view`` that are not spaces and their columns
    (:data:`_COLUMNS`). ``view`` is a paragraph with each run of white space
    as one space, without space at either end.

    >>> chars, cols = _features("Mr. Li")
    >>> chars
    ['M', 'r', '.', 'L', 'i']
    >>> [col[2] for col in cols]
    ['.', 'UL._U', 'mr.', ' li', 'r. l', 'mr.', '$', 'li', '._', 'mr.', 'li', '^', 'mr. li']
    """
    n = len(view)
    low = "^^^" + "".join(map(_low, view)) + "$$$$"
    cls = "^^" + "".join(map(_class, view)) + "$$"
    fine = "".join(map(_fine, view)) + "$"
    # the white-space chunk of each position: where it starts and ends
    starts = [0] * n
    ends = [0] * n
    s = 0
    for i, c in enumerate(view):
        if c == " ":
            for j in range(s, i):
                ends[j] = i
            s = i + 1
        else:
            starts[i] = s
    for j in range(s, n):
        ends[j] = n
    chars: list[str] = []
    cols: list[list[str]] = [[] for _ in _COLUMNS]
    cc, ck, cl, cr, cb, cp, cs, cn, cx, cw, cv, cu, cj = cols
    for q, ch in enumerate(view):
        if ch == " ":
            continue
        chars.append(ch)
        cc.append(ch)
        ck.append(cls[q : q + 5])
        cx.append(fine[q : q + 2])
        cl.append(low[q + 1 : q + 4])
        cr.append(low[q + 4 : q + 7])
        cb.append(low[q + 2 : q + 6])
        cp.append(low[max(starts[q], q - 4) + 3 : q + 4])
        end = ends[q]
        cs.append(low[q + 4 : min(end, q + 5) + 3] or "$")
        if end == q + 1 and end < n:
            nxt = end + 1
            cn.append(low[nxt + 3 : min(ends[nxt], nxt + 5) + 3])
            cv.append(low[nxt + 3 : ends[nxt] + 3])
        else:
            cn.append("-")
            cv.append("$" if end == q + 1 else "-")
        if end == q + 1:
            cw.append(low[starts[q] + 3 : end + 3])
            st = starts[q]
            cu.append(low[starts[st - 2] + 3 : st + 2] if st > 0 else "^")
            cj.append(cw[-1] + " " + cv[-1])
        else:
            cw.append("-")
            cu.append("-")
            cj.append("-")
    return chars, cols


# --- reading CoNLL-U ------------------------------------------------------


class _Token(NamedTuple):
    form: str
    #: the words of a multiword token (empty for a token of one word)
    words: tuple[str, ...]
    space_after: bool


class _Sent(NamedTuple):
    text: str | None
    tokens: list[_Token]
    newdoc: bool
    newpar: bool
    line: int


def _read(path: str | os.PathLike[str]) -> list[_Sent]:
    """The sentences of a CoNLL-U file (read and checked by
    :meth:`omkl.datasets.ConlluDocument.read`) with their ``# text``, tokens,
    multiword tokens, ``SpaceAfter=No`` and ``# newdoc`` / ``# newpar``."""
    from omkl.datasets.text import ConlluDocument

    doc = ConlluDocument.read(path)
    out = []
    line = 1
    for block in doc.blocks:
        text = None
        newdoc = newpar = False
        tokens: list[_Token] = []
        until = 0
        pending: tuple[str, str, int] | None = None
        words: list[str] = []
        for raw in block:
            if raw.startswith("#"):
                body = raw[1:].strip()
                if body.startswith("text =") or body == "text":
                    text = body[len("text") :].strip()[1:].strip()
                elif body.startswith("newdoc"):
                    newdoc = True
                elif body.startswith("newpar"):
                    newpar = True
                continue
            cells = raw.split("\t")
            ident = cells[0]
            if "-" in ident:
                first, last = ident.split("-", 1)
                pending, until, words = (cells[1], cells[9], int(last)), int(last), []
            elif ident.isdigit():
                if pending is not None and int(ident) <= until:
                    words.append(cells[1])
                    if int(ident) == until:
                        form, misc, _ = pending
                        tokens.append(_Token(form, tuple(words), not _no_space(misc)))
                        pending = None
                else:
                    tokens.append(_Token(cells[1], (), not _no_space(cells[9])))
        if tokens:
            out.append(_Sent(text, tokens, newdoc, newpar, line))
        line += len(block) + 1
    return out


def _no_space(misc: str) -> bool:
    return "SpaceAfter=No" in misc.split("|")


def _check_path(path: Any, what: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"invalid value for `{what}`: expected a path, got {path!r}")
    return os.fspath(path)


def _paragraphs(sents: list[_Sent]) -> list[list[_Sent]]:
    """The sentences grouped by paragraph (``# newpar`` or ``# newdoc``
    starts one; a file that marks neither is one paragraph)."""
    out: list[list[_Sent]] = []
    for s in sents:
        if not out or s.newpar or s.newdoc:
            out.append([])
        out[-1].append(s)
    return out


def _sentence_text(s: _Sent) -> str:
    """The tokens of ``s`` written with their spaces."""
    return "".join(t.form + (" " if t.space_after else "") for t in s.tokens).strip()


def conllu_text(path: str | os.PathLike[str]) -> str:
    r"""The raw text of a CoNLL-U file: each sentence's ``# text`` (its
    tokens written with their ``SpaceAfter`` when it has none, or when its
    characters other than white space are not its tokens'), the sentences of
    a paragraph joined by a space (none after ``SpaceAfter=No``), paragraphs
    (``# newpar``, ``# newdoc``) by a blank line; a line break at the end.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "g.conllu"
    >>> row = "1\t{}\t_\t_\t_\t_\t_\t_\t_\t_\n"
    >>> _ = p.write_text("# newpar\n# text = Hi\n" + row.format("Hi") + "\n"
    ...                  + row.format("You") + "\n# newpar\n" + row.format("Yes") + "\n")
    >>> conllu_text(p)
    'Hi You\n\nYes\n'
    """
    paragraphs = []
    for par in _paragraphs(_read(path)):
        parts = []
        for i, s in enumerate(par):
            text = s.text
            own = _sentence_text(s)
            if text is None or _SPACE.sub("", text) != _SPACE.sub("", own):
                text = own
            gap = " " if s.tokens[-1].space_after and i + 1 < len(par) else ""
            parts.append(text + gap)
        paragraphs.append("".join(parts))
    return "\n\n".join(paragraphs) + "\n" if paragraphs else ""


def _labelled(sents: Sequence[_Sent]) -> tuple[str, list[str]] | None:
    """The view of a training piece (its text with white space runs as one
    space, see :func:`_features`) and the label of each of its characters
    that is not a space; ``None`` if a sentence's text and its tokens
    disagree."""
    parts: list[str] = []
    labels: list[str] = []
    for s in sents:
        assert s.text is not None
        text = _SPACE.sub(" ", s.text).strip()
        chars = _SPACE.sub("", text)
        ends: list[int] = []
        k = 0
        for t in s.tokens:
            for piece in t.form.split():
                k += len(piece)
                ends.append(k)
        if not ends or chars != "".join("".join(t.form.split()) for t in s.tokens):
            return None
        lab = [_INSIDE] * len(chars)
        for e in ends:
            lab[e - 1] = _TOKEN
        lab[-1] = _TOKEN
        labels.extend(lab)
        parts.append(text + (" " if s.tokens[-1].space_after else ""))
    return "".join(parts).strip(), labels


def _pieces(sents: Sequence[_Sent], size: int, views: list[str], labels: list[list[str]]) -> None:
    """Appends the training pieces of ``size`` sentences of ``sents`` (one
    by one where a text and its tokens disagree) to ``views`` and
    ``labels`` (:func:`_labelled`)."""
    for i in range(0, len(sents), size):
        got = _labelled(sents[i : i + size])
        if got is None:
            for s in sents[i : i + size]:
                one = _labelled([s])
                if one is not None:
                    views.append(one[0])
                    labels.append(one[1])
            continue
        views.append(got[0])
        labels.append(got[1])


#: Token labels of the sentence chain: a sentence ends after the token, or not.
_END, _GOES_ON = "E", "O"


@functools.cache
def _token_templates() -> _omkl.TokenTemplates:
    return _omkl.TokenTemplates(["token", "tags:e"])


def _token_columns(forms: Sequence[str], spaced: Sequence[bool]) -> list[list[str]]:
    """The string columns of the tokens ``forms`` of a paragraph (followed
    by white space where ``spaced``) for the sentence chain: the class of a
    token's last character, whether white space follows, and the class of
    the next token's first character.

    >>> _token_columns(["Hi", ".", "Yes"], [False, True, False])
    [['L.', '._U', 'L$']]
    """
    nxt = [_class(f[0]) for f in forms[1:]] + ["$"]
    return [
        [
            _fine(f[-1]) + ("_" if sp else "") + n
            for f, sp, n in zip(forms, spaced, nxt, strict=True)
        ]
    ]


def _tokens_of(view: str, labels: Sequence[Hashable]) -> tuple[list[str], list[bool], list[int]]:
    """The tokens of ``view`` whose characters that are not spaces are
    labelled ``labels``, whether a space follows each, and the index (among
    those characters) of the last character of each.

    >>> _tokens_of("Hi. Yo", ["I", "T", "S", "I", "T"])
    (['Hi', '.', 'Yo'], [False, True, False], [1, 2, 4])
    """
    forms: list[str] = []
    spaced: list[bool] = []
    at: list[int] = []
    k = 0
    start = 0
    n = len(labels)
    for q, ch in enumerate(view):
        if ch == " ":
            continue
        if labels[k] != _INSIDE or k + 1 == n or view[q + 1] == " ":
            forms.append(_SPACE.sub("", view[start : q + 1]))
            spaced.append(q + 1 < len(view) and view[q + 1] == " ")
            at.append(k)
            start = q + 1
        k += 1
    return forms, spaced, at


def _token_ends(
    chain: TextTagger, seqs: Sequence[tuple[Sequence[str], Sequence[bool]]]
) -> list[list[float]]:
    """The sentence chain's marginal of a sentence end after each token of
    each sequence ``(forms, spaced)``."""
    if not seqs or _END not in chain._label_index:
        return [[0.0] * len(f) for f, _ in seqs]
    words = [list(f) for f, _ in seqs]
    cols = [_token_columns(f, sp)[0] for f, sp in seqs]
    k = chain._label_index[_END]
    mus = chain._state.marginals_many_text(_token_templates(), words, [cols])
    return [mu[:, k].tolist() for mu in mus]


#: A web address, an e-mail address (its user part may end in ``...``, as
#: web archives hide addresses) or an emoticon (kept as one token).
_URL = re.compile(
    r"(?:(?:https?|ftp)://|www\.)[^\s<>\"'()\[\]{}]*[^\s<>\"'()\[\]{}.,;:!?]"
    r"|(?:mailto:)?[\w.+%-]*(?:\w|\.\.\.)@\w[\w-]*(?:\.[\w-]+)*\.[A-Za-z]{2,}"
    r"|(?<![:;=])[:;=]-?[()DPp](?![\w()])"
)


def _keep_urls(view: str, labels: list[Hashable]) -> list[Hashable]:
    """``labels`` (of the characters of ``view`` that are not spaces) with
    each web or e-mail address in ``view`` one token, cut from what is
    before it and after it (its last character a token end, not inside).

    >>> "".join(_keep_urls("(www.a.b?c). a@b.org", list("ITIIITTTTITSITIIIITT")))
    'TIIIIIIIITTSIIIIIITT'
    >>> "".join(_keep_urls("ab...@c.com so:-)", list("ITIIIITIIITITTTT")))
    'IIIIIIIIIITITIIT'
    """
    for m in _URL.finditer(view):
        # a view has no space at either end and single spaces: the
        # characters before position q that are not spaces
        a = m.start() - view.count(" ", 0, m.start())
        b = a + m.end() - m.start()
        if a > 0 and labels[a - 1] == _INSIDE:
            labels[a - 1] = _TOKEN
        labels[a : b - 1] = [_INSIDE] * (b - 1 - a)
        if labels[b - 1] == _INSIDE:
            labels[b - 1] = _TOKEN
    return labels


def _token_pieces(
    sents: Sequence[_Sent],
) -> tuple[list[str], list[bool], list[str]]:
    """The tokens of the sentences ``sents`` (a token with white space in
    it as its pieces), whether white space follows each, and their labels
    for the sentence chain (:data:`_END` after the last token of a
    sentence)."""
    forms: list[str] = []
    spaced: list[bool] = []
    labels: list[str] = []
    for s in sents:
        for t in s.tokens:
            pieces = t.form.split()
            forms.extend(pieces)
            spaced.extend([True] * (len(pieces) - 1) + [t.space_after])
            labels.extend([_GOES_ON] * len(pieces))
        if labels:
            labels[-1] = _END
    if spaced:
        spaced[-1] = False
    return forms, spaced, labels


def _best_threshold(ps: Sequence[Sequence[float]], gold: Sequence[Sequence[str]]) -> float:
    """The threshold of a sentence end after a token with the best F1 of
    sentences (a sentence is right when both its ends are, as in the CoNLL
    2018 metric) on held-out sequences of tokens with marginals ``ps`` and
    labels ``gold``; 0.5 where no other does better.

    >>> round(_best_threshold([[0.1, 0.3, 0.05, 0.9]], [["O", "E", "O", "E"]]), 3)
    0.173
    """
    flat: list[float] = []
    gs: list[bool] = []
    for piece, labels in zip(ps, gold, strict=True):
        flat.extend(piece)
        flat[-1] = 2.0  # a sequence ends a sentence
        gs.extend(x == _END for x in labels)
    p = np.array(flat)
    g = np.array(gs)
    at = np.arange(len(g))
    # the last sentence end before each position (-1: none)
    before = np.concatenate([[-1], np.maximum.accumulate(np.where(g, at, -1))[:-1]])
    n_gold = int(g.sum())
    values = np.unique(p[(p >= 0.0) & (p <= 1.0)])[::-1][: 4 * n_gold]
    ranks = np.unique(np.linspace(0, len(values) - 1, min(len(values), 400)).astype(int))
    candidates = [0.5]
    for k in ranks:
        nxt = values[k + 1] if k + 1 < len(values) else 0.0
        candidates.append(float(np.sqrt(values[k] * nxt)) if nxt > 0.0 else values[k] / 2.0)
    best, best_f1 = 0.5, -1.0
    for t in candidates:
        ends = np.flatnonzero(p >= t)
        right = g[ends] & (before[ends] == np.concatenate([[-1], ends[:-1]]))
        f1 = 2.0 * int(right.sum()) / (len(ends) + n_gold)
        if f1 > best_f1 + 1e-12:
            best, best_f1 = t, f1
    return best


# --- multiword tokens -----------------------------------------------------


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _cased(word: str, surface: str, first: bool) -> str:
    """A lexicon ``word`` (lower case) in the case of ``surface``."""
    if len(surface) > 1 and surface.isupper():
        return word.upper()
    if first and surface[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _expand(surface: str, words: Sequence[str]) -> list[str]:
    """The lower-cased ``words`` of a multiword token written ``surface``:
    a word that is the next part of the surface (or, for the last word, its
    end) keeps the surface's case; the others take its case
    (:func:`_cased`).

    >>> _expand("Don't", ["do", "n't"]), _expand("Στο", ["σε", "το"])
    (['Do', "n't"], ['Σε', 'το'])
    """
    low = surface.lower()
    if len(low) != len(surface):
        return [_cased(w, surface, i == 0) for i, w in enumerate(words)]
    out = []
    pos = 0
    for i, w in enumerate(words):
        if i == len(words) - 1 and low.endswith(w) and len(low) - len(w) >= pos:
            out.append(surface[len(low) - len(w) :])
        elif low.startswith(w, pos):
            out.append(surface[pos : pos + len(w)])
            pos += len(w)
        else:
            out.append(_cased(w, surface, i == 0))
            pos += _common(low[pos:], w)
    return out


def _rule(surface: str, words: Sequence[str]) -> tuple[str, str, str] | None:
    """The suffix rule ``(x, a, b)`` of a two-word multiword token: a token
    ending in ``x`` is its beginning plus ``a``, then ``b``."""
    if len(words) != 2:
        return None
    p = _common(surface, words[0])
    x = surface[p:]
    if not x or p == 0:
        return None
    return x, words[0][p:], words[1]


# --- the model ------------------------------------------------------------


def _ends_tagger(n_buckets: int) -> TextTagger:
    """The sentence chain: a CRF (log loss, so that its marginals are
    probabilities), averaged, with a sixteenth of the character chain's
    ``n_buckets`` (log loss gives every feature seen a weight: the table
    bounds the size of the model)."""
    return TextTagger(
        loss="log",
        regularizer=("l2_squared", 1e-6),
        schedule="constant",
        eta0=0.03,
        average=True,
        n_buckets=max(4, n_buckets >> 4),
    )


class Tokenizer(Persistent, Synchronized, IndependentCopies):
    r"""Splits raw text into sentences, tokens and the words of multiword
    tokens (see the module docs).

    Parameters
    ----------
    loss, regularizer, schedule, eta0
        Of the character chain (a :class:`~omkl.tagging.TextTagger`,
        averaged).
    n_buckets
        Hash-table size of each feature template of the character chain
        (the sentence chain has a sixteenth of it).
    epochs
        Shuffled passes of :meth:`fit` (of the character chain) over the
        training pieces.
    sentence_epochs
        Shuffled passes of the sentence chain over the training blocks.
    min_rule_count
        A suffix rule of multiword tokens must have been seen in this many
        distinct training tokens.
    min_rule_share
        ... and account for at least this share of the distinct training
        tokens that end in its suffix.
    sentence_threshold
        A token is a sentence end where the sentence chain's marginal of
        one reaches this; ``None`` (the default): the threshold with the
        best sentence F1 on a part of the training file held out (see the
        module docs; :meth:`fit` then trains the sentence chain twice).
    seed
        Seed of the shuffling of the epochs and of the held-out part.

    Examples
    --------
    >>> Tokenizer(epochs=0)
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `epochs`: expected an integer >= 1, got 0
    """

    _SAVE_VERSION = 1
    _SAVE_SECTIONS = (1,)

    def __init__(
        self,
        loss: str = "hinge",
        regularizer: Any = ("l2_squared", 1e-6),
        schedule: str = "constant",
        eta0: float = 1.0,
        n_buckets: int = 1 << 18,
        epochs: int = 15,
        sentence_epochs: int = 20,
        min_rule_count: int = 2,
        min_rule_share: float = 0.5,
        sentence_threshold: float | None = None,
        seed: int = 0,
    ):
        check_int("epochs", epochs, 1)
        check_int("sentence_epochs", sentence_epochs, 1)
        check_int("n_buckets", n_buckets, 4)
        check_int("min_rule_count", min_rule_count, 1)
        if (
            isinstance(min_rule_share, bool)
            or not isinstance(min_rule_share, (int, float))
            or not 0.0 <= min_rule_share <= 1.0
        ):
            raise ValueError(
                f"invalid value for `min_rule_share`: expected a number in [0, 1], "
                f"got {min_rule_share!r}"
            )
        if sentence_threshold is not None and (
            isinstance(sentence_threshold, bool)
            or not isinstance(sentence_threshold, (int, float))
            or not 0.0 < sentence_threshold < 1.0
        ):
            raise ValueError(
                f"invalid value for `sentence_threshold`: expected None or a number in (0, 1), "
                f"got {sentence_threshold!r}"
            )
        check_int("seed", seed, 0)
        self.loss = loss
        self.regularizer = regularizer
        self.schedule = schedule
        self.eta0 = eta0
        self.n_buckets = n_buckets
        self.epochs = epochs
        self.sentence_epochs = sentence_epochs
        self.min_rule_count = min_rule_count
        self.min_rule_share = min_rule_share
        self.sentence_threshold = sentence_threshold
        self.seed = seed
        self.chain_ = self._tagger()
        #: the sentence chain over tokens
        self.ends_ = _ends_tagger(n_buckets)
        #: lower-cased surface -> its words (tab-separated) as a multiword token
        self._mwt: dict[str, str] = {}
        #: suffix -> ``a`` tab ``b`` (see :func:`_rule`)
        self._rules: dict[str, str] = {}
        #: the length of the longest suffix of a rule
        self._longest = 0
        #: training tokens of one word that a rule would split
        self._plain: set[str] = set()
        #: a token end is a sentence end where its marginal reaches this
        self._threshold = 0.5
        self._fitted = False

    def _tagger(self) -> TextTagger:
        return TextTagger(
            loss=self.loss,
            regularizer=self.regularizer,
            schedule=self.schedule,
            eta0=self.eta0,
            average=True,
            n_buckets=self.n_buckets,
        )

    # --- training --------------------------------------------------------

    @synchronized
    def fit(self, path: str | os.PathLike[str], epochs: int | None = None) -> Tokenizer:
        """Learns from the CoNLL-U file ``path`` (see the module docs),
        ``epochs`` (default ``self.epochs``) passes. Refits from scratch;
        nothing changes on bad input. ``ValueError`` naming the file for a
        file without sentences, or a sentence without ``# text``.

        >>> Tokenizer().fit(42)
        Traceback (most recent call last):
        ...
        ValueError: invalid value for `path`: expected a path, got 42
        """
        epochs = check_int("epochs", self.epochs if epochs is None else epochs, 1)
        name = _check_path(path, "path")
        sents = _read(name)
        if not sents:
            raise ValueError(f"{name}: no sentence in it; expected a CoNLL-U training file")
        for s in sents:
            if s.text is None:
                raise ValueError(
                    f"{name}, line {s.line}: a sentence without a '# text = ...' comment; "
                    "the tokenizer learns from the text of every sentence"
                )
        # blocks of sentences; about one in ten is held out to choose the
        # threshold of sentence ends
        blocks = [
            par[i : i + _BLOCK] for par in _paragraphs(sents) for i in range(0, len(par), _BLOCK)
        ]
        views: list[str] = []
        labels: list[list[str]] = []
        for block in blocks:
            _pieces(block, _PIECE, views, labels)
        if not views:
            raise ValueError(f"{name}: no sentence whose '# text' its tokens spell")
        seqs = [_token_pieces(block) for block in blocks]
        rng = np.random.default_rng(self.seed)
        held = rng.random(len(blocks)) < _HELD_OUT
        threshold = 0.5 if self.sentence_threshold is None else self.sentence_threshold
        choose = self.sentence_threshold is None and held.any() and not held.all()
        # the chains learn side by side (the core releases the GIL)
        jobs: list[Callable[[], TextTagger]] = [
            lambda: self._train(views, labels, epochs),
            lambda: self._train_ends(seqs),
        ]
        if choose:
            rest = [q for q, h in zip(seqs, held, strict=True) if not h]
            jobs.append(lambda: self._train_ends(rest))
        chain, ends, *first = thread_map(lambda job: job(), jobs)
        if first:
            kept = [q for q, h in zip(seqs, held, strict=True) if h]
            ps = _token_ends(first[0], [(f, sp) for f, sp, _ in kept])
            threshold = _best_threshold(ps, [y for _, _, y in kept])
        mwt, rules, plain = _mwt_lexicon(sents, self.min_rule_count, self.min_rule_share)
        self.chain_ = chain
        self.ends_ = ends
        self._mwt, self._rules, self._plain = mwt, rules, plain
        self._longest = max(map(len, rules), default=0)
        self._threshold = threshold
        self._fitted = True
        return self

    def _train(self, views: list[str], labels: list[list[str]], epochs: int) -> TextTagger:
        """A frozen chain learned from the training pieces ``views`` labelled
        ``labels``."""
        chars, cols = self._columns(views)
        chain = self._tagger()
        chain._fit_text(
            _Sentences(_templates(), chars, cols), labels, epochs, shuffle=True, seed=self.seed
        )
        return chain.freeze()

    def _train_ends(self, seqs: Sequence[tuple[list[str], list[bool], list[str]]]) -> TextTagger:
        """A frozen sentence chain learned from the sequences of tokens
        ``seqs`` (:func:`_token_pieces`)."""
        chain = _ends_tagger(self.n_buckets)
        words = [f for f, _, _ in seqs]
        cols = [_token_columns(f, sp)[0] for f, sp, _ in seqs]
        chain._fit_text(
            _Sentences(_token_templates(), words, [cols]),
            [y for _, _, y in seqs],
            self.sentence_epochs,
            shuffle=True,
            seed=self.seed,
        )
        return chain.freeze()

    @staticmethod
    def _columns(views: Sequence[str]) -> tuple[list[list[str]], list[list[list[str]]]]:
        chars: list[list[str]] = []
        cols: list[list[list[str]]] = [[] for _ in _COLUMNS]
        for v in views:
            cs, fs = _features(v)
            chars.append(cs)
            for k, f in enumerate(fs):
                cols[k].append(f)
        return chars, cols

    # --- tokenising ------------------------------------------------------

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("this Tokenizer is not fitted; call fit() or load() first")

    def _words(self, form: str) -> list[str]:
        """The words of the token ``form``: more than one for a multiword
        token (the lexicon's, else a suffix rule's)."""
        low = form.lower()
        known = self._mwt.get(low)
        if known is not None:
            return _expand(form, known.split("\t"))
        if low in self._plain or not self._rules or len(low) != len(form):
            return [form]
        for k in range(max(1, len(low) - self._longest), len(low)):
            rule = self._rules.get(low[k:])
            if rule is not None:
                a, b = rule.split("\t")
                x = form[k:]
                head = form[:k] + (a.upper() if form.isupper() and len(form) > 1 else a)
                tail = x if x.lower() == b else _cased(b, form, False)
                return [head, tail]
        return [form]

    @synchronized
    def tokenize(self, text: str) -> list[Sentence]:
        r"""The sentences of ``text``: paragraphs are cut at blank lines,
        tokens and sentences as the model says. Each sentence is a dict with
        ``text`` (its stretch of ``text``, white space runs as one space),
        ``newdoc`` (the first sentence) and ``newpar`` (the first of a
        paragraph), and ``tokens``: dicts with ``form``, ``words`` (the form
        alone, or the words of a multiword token), ``start`` and ``end``
        (offsets in ``text``) and ``misc`` (``SpaceAfter=No`` where no
        space follows; ``SpacesAfter=...`` where other white space follows,
        ``SpacesBefore=...`` on the first token where the text starts with
        white space; else ``_``). :func:`detokenize` rebuilds ``text``.

        >>> Tokenizer().tokenize(b"abc")
        Traceback (most recent call last):
        ...
        ValueError: invalid value for `text`: expected a str, got b'abc'
        """
        if not isinstance(text, str):
            raise ValueError(f"invalid value for `text`: expected a str, got {_short(text)}")
        self._check_fitted()
        spans = _paragraph_spans(text)
        views = []
        offsets = []
        for a, b in spans:
            par = text[a:b]
            views.append(_SPACE.sub(" ", par))
            offsets.append([a + m.start() for m in re.finditer(r"\S", par)])
        chars, cols = self._columns(views)
        out: list[Sentence] = []
        predicted = self.chain_._predict_text(_Sentences(_templates(), chars, cols))
        tagged = [_keep_urls(v, ys) for v, ys in zip(views, predicted, strict=True)]
        seqs = [_tokens_of(view, labels) for view, labels in zip(views, tagged, strict=True)]
        ps = _token_ends(self.ends_, [(f, sp) for f, sp, _ in seqs])
        for labels, (_, _, at), p_end, offs in zip(tagged, seqs, ps, offsets, strict=True):
            for i, p in zip(at, p_end, strict=True):
                labels[i] = _SENTENCE if p >= self._threshold else _TOKEN
            out.extend(self._sentences(text, labels, offs))
        if out:
            out[0]["newdoc"] = True
            first = out[0]["tokens"][0]
            if first["start"] > 0:
                _add_misc(first, "SpacesBefore=" + _escape(text[: first["start"]]))
        return out

    def _sentences(
        self, text: str, labels: Sequence[Hashable], offs: Sequence[int]
    ) -> list[Sentence]:
        """The sentences of one paragraph whose characters (at ``offs`` in
        ``text``) are labelled ``labels``."""
        out: list[Sentence] = []
        tokens: list[dict[str, Any]] = []
        start = None
        n = len(offs)
        for i, (lab, at) in enumerate(zip(labels, offs, strict=True)):
            if start is None:
                start = at
            last = i + 1 == n
            nxt = offs[i + 1] if not last else None
            if lab == _INSIDE and nxt == at + 1:
                continue
            end = at + 1
            form = text[start:end]
            gap = text[end : nxt if nxt is not None else _gap_end(text, end)]
            misc = (
                "SpaceAfter=No" if not gap else "_" if gap == " " else "SpacesAfter=" + _escape(gap)
            )
            tokens.append(
                {"form": form, "words": self._words(form), "start": start, "end": end, "misc": misc}
            )
            start = None
            if lab == _SENTENCE or last:
                a, b = tokens[0]["start"], tokens[-1]["end"]
                out.append(
                    {
                        "text": _SPACE.sub(" ", text[a:b]),
                        "newdoc": False,
                        "newpar": not out,
                        "tokens": tokens,
                    }
                )
                tokens = []
        return out

    @synchronized
    def score(self, gold: str | os.PathLike[str]) -> dict[str, float]:
        """``Tokens``, ``Sentences`` and ``Words`` F1 in percent (the CoNLL
        2018 metric, :func:`omkl.evaluate.evaluate`) of this model on the raw
        text of the CoNLL-U file ``gold`` (:func:`conllu_text`)."""
        name = _check_path(gold, "gold")
        return _scores(name, self.tokenize(conllu_text(name)))

    # --- persistence -----------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Loads a model saved by :meth:`save`. ``FileNotFoundError`` if
        ``path`` is missing; ``ValueError`` naming the file if it is not a
        saved ``Tokenizer`` or is truncated, corrupted or inconsistent."""
        model, state, sections = load_estimator(cls, path, [cls._SAVE_VERSION], cls._SAVE_SECTIONS)
        restore_state(model, path, state, sections)
        return cast(Tokenizer, model)

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        r"""The Python state and one section: the length of the character
        chain's core bytes (8 bytes, little-endian), those bytes, then the
        sentence chain's.

        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.conllu"
        >>> _ = p.write_text("# text = Hi.\n1\tHi\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        ...                  "2\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
        >>> t = Tokenizer(epochs=3).fit(p)
        >>> t.save(p.with_suffix(".omkl"))
        >>> [x["form"] for x in Tokenizer.load(p.with_suffix(".omkl")).tokenize("Hi.")[0]["tokens"]]
        ['Hi', '.']
        """
        state: dict[str, Any] = {
            "fitted": self._fitted,
            "labels": [str(x) for x in self.chain_._labels],
            "end_labels": [str(x) for x in self.ends_._labels],
            "mwt": dict(self._mwt),
            "rules": dict(self._rules),
            "plain": sorted(self._plain),
            "threshold": self._threshold,
        }
        first = self.chain_._state.to_bytes()
        both = len(first).to_bytes(8, "little") + first + self.ends_._state.to_bytes()
        return state, [both]

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        labels = state["labels"]
        if not isinstance(labels, list) or not set(labels) <= _LABELS:
            raise ValueError(f"the saved labels are not among I, T and S: {_short(labels)}")
        both = sections[0]
        n = int.from_bytes(both[:8], "little")
        if len(both) < 8 or not 0 < n < len(both) - 8:
            raise ValueError("the saved chains are truncated")
        self.chain_._load_state({"labels": labels}, [both[8 : 8 + n]])
        end_labels = state["end_labels"]
        if not isinstance(end_labels, list) or not set(end_labels) <= {_END, _GOES_ON}:
            raise ValueError(f"the saved end labels are not among E and O: {_short(end_labels)}")
        self.ends_._load_state({"labels": end_labels}, [both[8 + n :]])
        for key in ("mwt", "rules"):
            value = state[key]
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
            ):
                raise ValueError(f"the saved {key} is not a dict of non-empty str")
            if key == "rules" and not all(v.count("\t") == 1 for v in value.values()):
                raise ValueError("a saved rule is not two parts separated by a tab")
            setattr(self, f"_{key}", value)
        self._longest = max(map(len, self._rules), default=0)
        plain = state["plain"]
        if not isinstance(plain, list) or not all(isinstance(p, str) for p in plain):
            raise ValueError("the saved plain tokens are not a list of str")
        self._plain = set(plain)
        threshold = state["threshold"]
        if not isinstance(threshold, float) or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"the saved threshold is not a number in [0, 1]: {_short(threshold)}")
        self._threshold = threshold
        self._fitted = bool(state["fitted"])

    @synchronized
    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + self.chain_.__sizeof__() + self.ends_.__sizeof__()


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    r"""The ``(start, end)`` of each paragraph of ``text`` (what blank lines
    separate), without white space at either end.

    >>> _paragraph_spans(" a b\n\n \n c\n")
    [(1, 4), (9, 10)]
    """
    out = []
    pos = 0
    for m in [*_BLANK_LINE.finditer(text), None]:
        end = len(text) if m is None else m.start()
        chunk = text[pos:end]
        stripped = chunk.strip()
        if stripped:
            a = pos + len(chunk) - len(chunk.lstrip())
            out.append((a, a + len(stripped)))
        if m is not None:
            pos = m.end()
    return out


def _gap_end(text: str, end: int) -> int:
    """Where the white space after ``end`` ends."""
    m = re.compile(r"\s*").match(text, end)
    assert m is not None
    return m.end()


_ESCAPES = {" ": r"\s", "\t": r"\t", "\n": r"\n", "\r": r"\r", "\\": "\\\\", "|": r"\p"}


def _escape(space: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in space)


def _unescape(value: str) -> str:
    back = {v: k for k, v in _ESCAPES.items()}
    return re.sub(r"\\[stnrp\\]", lambda m: back[m.group(0)], value)


def _add_misc(token: dict[str, Any], item: str) -> None:
    misc = token["misc"]
    token["misc"] = item if misc == "_" else f"{item}|{misc}"


def _mwt_lexicon(
    sents: Iterable[_Sent], min_count: int, min_share: float
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """The multiword lexicon (lower-cased surface -> words, for the
    surfaces mostly written as multiword tokens), the suffix rules kept
    (see the module docs) and the surfaces of one word that a rule would
    split."""
    seen: dict[str, Counter[tuple[str, ...]]] = {}
    for s in sents:
        for t in s.tokens:
            seen.setdefault(t.form.lower(), Counter())[tuple(w.lower() for w in t.words)] += 1
    mwt = {}
    plain = set()
    rules: Counter[tuple[str, str, str]] = Counter()
    for low, analyses in seen.items():
        best = min(analyses, key=lambda a: (-analyses[a], a))
        if best:
            mwt[low] = "\t".join(best)
        else:
            plain.add(low)
        for words in analyses:
            r = _rule(low, words)
            if r is not None:
                rules[r] += 1
    # the most frequent rule of each suffix, and how often it applies
    by_suffix: dict[str, tuple[str, str, int]] = {}
    for (x, a, b), count in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])):
        if x not in by_suffix:
            by_suffix[x] = (a, b, count)
    ending = Counter[str]()
    for low in seen:
        for k in range(1, len(low)):
            if low[k:] in by_suffix:
                ending[low[k:]] += 1
    kept = {
        x: f"{a}\t{b}"
        for x, (a, b, count) in by_suffix.items()
        if count >= min_count and count >= min_share * ending[x]
    }
    plain = {p for p in plain if any(p[k:] in kept for k in range(1, len(p)))}
    return mwt, kept, plain


# --- writing --------------------------------------------------------------


def detokenize(sentences: Sequence[Sentence]) -> str:
    r"""The text of the sentences of :meth:`Tokenizer.tokenize`: each token's
    form, then its white space (none for ``SpaceAfter=No``, that of
    ``SpacesAfter``, else one space); ``SpacesBefore`` of the first token
    first.

    >>> detokenize([{"tokens": [{"form": "Hi", "misc": "SpaceAfter=No"},
    ...                         {"form": "!", "misc": r"SpacesAfter=\n"}]}])
    'Hi!\n'
    """
    out = []
    for s in sentences:
        for t in s["tokens"]:
            items = dict(m.split("=", 1) for m in str(t.get("misc", "_")).split("|") if "=" in m)
            out.append(_unescape(items.get("SpacesBefore", "")))
            out.append(t["form"])
            if "SpacesAfter" in items:
                out.append(_unescape(items["SpacesAfter"]))
            elif items.get("SpaceAfter") != "No":
                out.append(" ")
    return "".join(out)


def format_tokenized(sentences: Sequence[Sentence], placeholder_heads: bool = False) -> str:
    r"""CoNLL-U of the sentences of :meth:`Tokenizer.tokenize`: ``# newdoc``,
    ``# newpar``, ``# sent_id = N`` (from 1), ``# text``, a line ``i-j`` for
    each multiword token (with the token's MISC) before its words, and the
    words, whose columns other than ID, FORM and MISC are ``_``. With
    ``placeholder_heads``, the first word of each sentence is its root and
    the others hang from it (``root`` and ``dep``), so that the file can be
    scored with :func:`omkl.evaluate.evaluate`, which reads HEAD.

    A sentence with ``words`` (one dict per word of its tokens, in order,
    as :meth:`omkl.TextParser.predict_text` gives) has its words' ``lemma``,
    ``upos``, ``xpos``, ``feats``, ``head``, ``deprel`` and ``deps``
    written from them (``_`` where missing; placeholder heads only where a
    word has no ``head``).

    >>> s = {"text": "Don't", "newdoc": True, "newpar": True,
    ...      "tokens": [{"form": "Don't", "words": ["Do", "n't"], "misc": "_"}]}
    >>> print(format_tokenized([s]).replace("\t", " "), end="")
    # newdoc
    # newpar
    # sent_id = 1
    # text = Don't
    1-2 Don't _ _ _ _ _ _ _ _
    1 Do _ _ _ _ _ _ _ _
    2 n't _ _ _ _ _ _ _ _
    <BLANKLINE>
    """
    lines: list[str] = []
    for n, s in enumerate(sentences, 1):
        if s.get("newdoc"):
            lines.append("# newdoc")
        if s.get("newpar"):
            lines.append("# newpar")
        lines.append(f"# sent_id = {n}")
        lines.append(f"# text = {s['text']}")
        i = 1
        given: Sequence[Any] | None = s.get("words")
        n_words = sum(len(t.get("words") or [t["form"]]) for t in s["tokens"])
        if given is not None and len(given) != n_words:
            raise ValueError(f"sentence {n}: {len(given)} words given for {n_words} words")
        for t in s["tokens"]:
            words = t.get("words") or [t["form"]]
            misc = t.get("misc", "_") or "_"
            if len(words) > 1:
                lines.append(
                    f"{i}-{i + len(words) - 1}\t{t['form']}\t" + "\t".join(["_"] * 7) + f"\t{misc}"
                )
            for w in words:
                cols = ["_"] * len(_WORD_COLUMNS)
                if given is not None:
                    cols = [_column(given[i - 1].get(c)) for c in _WORD_COLUMNS]
                if placeholder_heads and cols[4] == "_":
                    cols[4:6] = ("0", "root") if i == 1 else ("1", "dep")
                last = misc if len(words) == 1 else "_"
                lines.append(f"{i}\t{w}\t" + "\t".join(cols) + f"\t{last}")
                i += 1
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""


#: The columns of a word that :func:`format_tokenized` writes from a
#: sentence's ``words``: LEMMA to DEPS.
_WORD_COLUMNS = ("lemma", "upos", "xpos", "feats", "head", "deprel", "deps")


def _column(value: Any) -> str:
    """A CoNLL-U field of ``value`` (``_`` for none or empty)."""
    text = "_" if value is None else str(value) or "_"
    if any(c in text for c in "\t\n\r"):
        raise ValueError(f"a CoNLL-U field may not hold a tab or a line break: {text!r}")
    return text


def _scores(gold: str | os.PathLike[str], sentences: Sequence[Sentence]) -> dict[str, float]:
    """Tokens, Sentences and Words F1 (percent) of ``sentences`` against the
    CoNLL-U file ``gold`` (:func:`omkl.evaluate.evaluate`, on a copy of
    ``gold`` whose heads are placeholders too: these scores do not read
    them, and a tokenizer's file need not have them)."""
    import tempfile

    from omkl.evaluate import evaluate

    with open(gold, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        cells = line.split("\t")
        if len(cells) == 10 and cells[0].isdigit():
            cells[6], cells[7] = ("0", "root") if cells[0] == "1" else ("1", "dep")
            lines[i] = "\t".join(cells)
    with tempfile.TemporaryDirectory(prefix="omkl-") as tmp:
        system = os.path.join(tmp, "system.conllu")
        with open(system, "w", encoding="utf-8") as f:
            f.write(format_tokenized(sentences, placeholder_heads=True))
        flat = os.path.join(tmp, "gold.conllu")
        with open(flat, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        scores = evaluate(flat, system)
    return {k: 100.0 * scores[k].f1 for k in ("Tokens", "Sentences", "Words")}
