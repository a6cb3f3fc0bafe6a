"""Parsing text that has no gold tags: a morphology tagger feeding the parser.

:class:`TextParser` owns a tagger, which predicts the CoNLL-U columns LEMMA,
UPOS, XPOS and FEATS from the word forms, and a :class:`DependencyParser`,
which predicts HEAD and DEPREL from them. It reads a CoNLL-U file with only
ID and FORM filled, or plain pre-tokenised text (one sentence per line,
tokens separated by spaces), and writes complete CoNLL-U. With a
:class:`~omkl.Tokenizer` (trained by :meth:`TextParser.fit` on a file whose
sentences have their ``# text``), it also reads raw text
(:meth:`TextParser.parse_text`), as ``udpipe --tokenize --tag --parse``.

The parser is trained on **predicted** tags, jackknifed over ``folds`` parts
of the training set: the tags of each part come from a tagger trained on the
other parts, so the parser learns how far the tags it will see can be
trusted. The tagger that the pipeline keeps is then trained on the whole
training set. Where the tagger is unsure of a word's UPOS, the parser also
reads its second choice (``alternatives``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from omkl._params import check_int
from omkl._persist import (
    IndependentCopies,
    SavedEntries,
    build_estimator,
    constructor_params,
    load_model,
    named_errors,
    save_model,
    saved_format,
)
from omkl._persist import decode as decode_value
from omkl._persist import encode as encode_value
from omkl._sync import synchronized
from omkl._threads import thread_map
from omkl.datasets.text import read_sentences, write_conllu
from omkl.morphology import MorphologyTagger
from omkl.parsing import (
    DependencyParser,
    Sentence,
    _read_gold,
    attachment_scores,
    split_parts,
)
from omkl.tokenizer import Tokenizer, format_tokenized

__all__ = [
    "TextParser",
    "Tagger",
    "jackknife",
    "alternatives_option",
    "load_tagger",
    "annotate_text",
    "has_text",
    "MORPHOLOGY",
]

PathLike = str | os.PathLike[str]

#: The CoNLL-U columns a tagger fills.
MORPHOLOGY = ("lemma", "upos", "xpos", "feats")

#: The columns whose alternative tags (``tag(..., alternatives=[column])``)
#: the parser reads, and the FEATS pseudo-feature of each.
_ALTERNATIVE_COLUMNS = (("upos", "UposAlt"),)

#: The token keys of those alternative tags.
_ALTERNATIVE_KEYS = tuple(f"{col}_alt" for col, _ in _ALTERNATIVE_COLUMNS)

#: The default threshold of ``TextParser(alternatives="auto")``: screened on
#: EWT dev (``docs/parser.md``).
DEFAULT_ALTERNATIVES = 1e-9

#: The longest sentence that :meth:`TextParser.predict` parses whole: more
#: than twice the longest sentence of the EWT, Greek-GDT and Gothic-PROIEL
#: training files, so that a parser learns from nothing longer and none of
#: their test sentences is split (``tests/test_pipeline.py`` checks it).
MAX_PARSED_WORDS = 400


class Tagger(Protocol):
    """What :class:`TextParser` needs of a tagger: ``fit`` on sentences with
    gold columns, and ``tag``, which returns new sentences with
    :data:`MORPHOLOGY` filled (the input left untouched)."""

    def fit(self, sentences: Sequence[Sentence], *args: Any, **kwargs: Any) -> Any: ...

    def tag(self, sentences: Sequence[Sentence]) -> list[Sentence]: ...


def alternatives_option(text: str) -> float | str | None:
    """``TextParser``'s ``alternatives`` from a command-line value:
    ``auto``, ``none`` or a threshold.

    >>> alternatives_option("auto"), alternatives_option("none"), alternatives_option("1e-6")
    ('auto', None, 1e-06)
    """
    if text in ("auto", "none"):
        return None if text == "none" else text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected 'auto', 'none' or a threshold, got {text!r}") from None


def _gives_alternatives(tagger: Any) -> bool:
    """Whether ``tagger.tag`` takes ``alternatives`` (as
    :meth:`MorphologyTagger.tag <omkl.MorphologyTagger.tag>` does)."""
    import inspect

    try:
        return "alternatives" in inspect.signature(tagger.tag).parameters
    except (TypeError, ValueError):
        return False


def _fresh(model: Any) -> Any:
    """An untrained model with the parameters of ``model`` (river's
    ``clone``)."""
    return type(model)(**constructor_params(model))


def jackknife(
    sentences: Sequence[Sentence],
    tagger: Any,
    folds: int = 10,
    seed: int = 0,
    fit: Callable[[Any, list[Sentence]], Any] | None = None,
    progress: bool = False,
    tag: Callable[[Any, list[Sentence]], list[Sentence]] | None = None,
) -> list[Sentence]:
    """The sentences with :data:`MORPHOLOGY` predicted by taggers that never
    saw them: the sentences are split into ``folds`` parts at random (by
    ``seed``), and each part is tagged by a fresh copy of ``tagger`` trained
    on the other parts (``fit(copy, sentences)``, default ``copy.fit``) and
    tagging it (``tag(copy, sentences)``, default ``copy.tag``); the folds
    train side by side on :func:`omkl._threads.n_threads` threads, so
    ``fit`` and ``tag`` must not share state between copies. Gold
    heads and relations are kept, as are the keys the tagger adds to a
    token (such as ``MorphologyTagger``'s ``upos_alt``), so the result trains
    a parser on the tags it will see at prediction time.

    >>> class Majority:  # predicts each column's most frequent value
    ...     def fit(self, sents):
    ...         from collections import Counter
    ...         self.best = {c: Counter(t[c] for s in sents for t in s).most_common(1)[0][0]
    ...                      for c in ("lemma", "upos", "xpos", "feats")}
    ...     def tag(self, sents):
    ...         return [[{**t, **self.best} for t in s] for s in sents]
    >>> sents = [[{"form": w, "lemma": w, "upos": u, "xpos": u, "feats": "_", "head": 0}]
    ...          for w, u in [("a", "X"), ("b", "X"), ("c", "Y")]]
    >>> [s[0]["upos"] for s in jackknife(sents, Majority(), folds=3)]
    ['X', 'X', 'X']
    """
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"folds: expected an integer >= 2, got {folds!r}")
    n = len(sentences)
    if n < folds:
        raise ValueError(f"folds: {folds} parts of {n} sentences; expected at least one per part")
    part = split_parts(n, folds, seed)
    out: list[Sentence | None] = [None] * n
    from tqdm.auto import tqdm

    bar = tqdm(total=folds, desc="jackknife", unit="fold", disable=not progress)

    def one_fold(k: int) -> tuple[list[int], list[Sentence]]:
        train = [sentences[i] for i in range(n) if part[i] != k]
        held = [i for i in range(n) if part[i] == k]
        model = _fresh(tagger)
        if fit is None:
            model.fit(train)
        else:
            fit(model, train)
        some = [sentences[i] for i in held]
        tagged = model.tag(some) if tag is None else tag(model, some)
        bar.update(1)
        return held, list(tagged)

    # the folds train side by side (each model learns without the GIL)
    try:
        done = thread_map(one_fold, range(folds))
    finally:
        bar.close()
    for held, tagged in done:
        for i, s in zip(held, tagged, strict=True):
            gold = sentences[i]
            out[i] = [
                {
                    **g,
                    **{c: t.get(c, "_") for c in MORPHOLOGY},
                    **{k: v for k, v in t.items() if k not in g},
                }
                for g, t in zip(gold, s, strict=True)
            ]
    return [s for s in out if s is not None]


#: The classes that a saved :class:`TextParser` may name for its tagger and
#: its parser, by the name its file gives (``"module:QualName"``).
_COMPONENTS: dict[str, dict[str, type]] = {
    "tagger": {"omkl.morphology:MorphologyTagger": MorphologyTagger},
    "parser": {"omkl.parsing:DependencyParser": DependencyParser},
    "tokenizer": {"omkl.tokenizer:Tokenizer": Tokenizer},
}


def has_text(path: PathLike) -> bool:
    r"""Whether every sentence of the CoNLL-U file ``path`` has a ``# text``
    comment (what a :class:`~omkl.Tokenizer` learns from), and it has at
    least one sentence.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.conllu"
    >>> row = "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n"
    >>> _ = p.write_text("# text = Hi\n" + row + "\n" + row + "\n")
    >>> has_text(p)
    False
    >>> _ = p.write_text("# text = Hi\n" + row + "\n")
    >>> has_text(p)
    True
    """
    seen = texted = 0
    words = text = False
    with open(path, encoding="utf-8-sig") as f:
        for line in itertools.chain(f, ["\n"]):
            if not line.strip():
                seen += words
                texted += words and text
                words = text = False
            elif line.startswith("#"):
                body = line[1:].strip()
                text = text or body == "text" or body.startswith("text =")
            else:
                words = True
    return seen > 0 and seen == texted


class TextParser(IndependentCopies):
    """Tags and parses text that has no gold tags.

    Parameters
    ----------
    tagger
        The morphology tagger (any object with ``fit(sentences)`` and
        ``tag(sentences)``, see :class:`Tagger`); trained by :meth:`fit`.
    parser
        The :class:`~omkl.DependencyParser`, trained by :meth:`fit` on
        jackknifed tags. The default, ``DependencyParser(stack_folds=5)``, is
        stacked: its second stage reads the tree of a first one, which parses
        EWT from predicted tags 0.6 to 0.8 UAS more accurately on dev for
        about seven times the training (``docs/parser.md``).
    folds
        Parts of the training set for the jackknife (0: train the parser on
        gold tags, which it will never see at prediction time).
    seed
        Seed of the split into parts.
    alternatives
        The parser also reads, for each word whose second-best UPOS has a
        marginal of at least this threshold in the tagger's UPOS stage, that
        tag, as the FEATS item ``UposAlt=TAG`` (only in its own input; the
        output keeps the tagger's FEATS). It tells the parser where the tag
        may be wrong and what it would then be; on EWT dev it gains about
        0.2 UAS and LAS (``docs/parser.md``). ``"auto"`` (the default):
        ``1e-9`` with a tagger whose ``tag`` takes ``alternatives=["upos"]``
        (:meth:`MorphologyTagger.tag <omkl.MorphologyTagger.tag>`), else
        ``None``; ``None``: the parser reads the tags alone. With
        ``folds=0`` the parser learns from gold tags, which have no
        alternatives, so it reads none.
    label_gold
        The parser's label stage (the second stage's, in a stacked parser)
        learns from the gold-tagged training sentences as well as from the
        jackknifed ones (:meth:`DependencyParser.fit
        <omkl.DependencyParser.fit>`'s ``label_variant``); the arc models
        from the jackknifed ones only. No effect with ``folds=0``. On EWT
        dev it gains a few hundredths of LAS and leaves the heads as they
        were (``docs/parser.md``).
    tokenizer
        What reads raw text (:meth:`parse_text`): ``"auto"`` (the
        default) trains a new :class:`~omkl.Tokenizer` when :meth:`fit` is
        given a CoNLL-U file whose every sentence has its ``# text`` (as UD
        treebanks do), and none otherwise; ``None`` never trains one; a
        :class:`~omkl.Tokenizer` is trained by ``fit(path)`` on the file's
        text (which must then have it), or, when already fitted, kept as it
        is by ``fit(sentences)``. The fitted one, or ``None``, is
        :attr:`tokenizer_`, and is saved with the pipeline.

    Attributes
    ----------
    tokenizer_
        The fitted :class:`~omkl.Tokenizer` that :meth:`parse_text` uses, or
        ``None`` (the pipeline then reads pre-tokenised words only).

    Examples
    --------
    A tiny treebank of gold sentences trains the pipeline; it then tags and
    parses sentences given as word forms only:

    >>> from omkl import DependencyParser, MorphologyTagger, TextParser
    >>> def word(form, lemma, upos, head, rel):
    ...     return {"form": form, "lemma": lemma, "upos": upos, "xpos": upos,
    ...             "feats": "_", "head": head, "deprel": rel}
    >>> train = [
    ...     [word("Dogs", "dog", "NOUN", 2, "nsubj"), word("bark", "bark", "VERB", 0, "root")],
    ...     [word("Cats", "cat", "NOUN", 2, "nsubj"), word("sleep", "sleep", "VERB", 0, "root")],
    ... ]
    >>> pipe = TextParser(MorphologyTagger(folds=2, epochs=5),
    ...                   DependencyParser(templates=list(range(40)), epochs=3), folds=2)
    >>> _ = pipe.fit(train * 4)
    >>> [(t["upos"], t["head"], t["deprel"]) for t in pipe.predict([[{"form": "Dogs"},
    ...                                                                {"form": "sleep"}]])[0]]
    [('NOUN', 2, 'nsubj'), ('VERB', 0, 'root')]
    """

    def __init__(
        self,
        tagger: Any,
        parser: DependencyParser | None = None,
        folds: int = 10,
        seed: int = 0,
        alternatives: float | str | None = "auto",
        label_gold: bool = True,
        tokenizer: Tokenizer | str | None = "auto",
    ) -> None:
        if isinstance(folds, bool) or not isinstance(folds, int) or folds == 1 or folds < 0:
            raise ValueError(f"folds: expected 0 or an integer >= 2, got {folds!r}")
        for name in ("fit", "tag"):
            if not callable(getattr(tagger, name, None)):
                raise TypeError(
                    f"tagger: expected an object with fit() and tag(), got {type(tagger).__name__}"
                )
        gives = _gives_alternatives(tagger)
        if alternatives is not None and alternatives != "auto":
            if (
                isinstance(alternatives, bool)
                or not isinstance(alternatives, (int, float))
                or not 0.0 <= alternatives <= 1.0
            ):
                raise ValueError(
                    "alternatives: expected 'auto', None or a threshold in [0, 1], "
                    f"got {alternatives!r}"
                )
            if not gives:
                raise ValueError(
                    f"alternatives: a {type(tagger).__name__} gives no alternative tags "
                    "(its tag() takes no `alternatives`); expected 'auto' or None"
                )
        if not isinstance(label_gold, bool):
            raise ValueError(f"label_gold: expected True or False, got {label_gold!r}")
        if not (tokenizer is None or tokenizer == "auto" or isinstance(tokenizer, Tokenizer)):
            raise ValueError(f"tokenizer: expected 'auto', None or a Tokenizer, got {tokenizer!r}")
        check_int("seed", seed, 0)
        self.tagger = tagger
        self.parser = parser if parser is not None else DependencyParser(stack_folds=5)
        self.folds = folds
        self.seed = seed
        self.alternatives = alternatives
        self.label_gold = label_gold
        self.tokenizer = tokenizer
        #: The fitted tokenizer (see the class docs), or ``None``.
        self.tokenizer_: Tokenizer | None = (
            tokenizer if isinstance(tokenizer, Tokenizer) and tokenizer._fitted else None
        )

    @property
    def _threshold(self) -> float | None:
        """The threshold of the alternatives the parser reads, if any."""
        if self.folds == 0 or self.alternatives is None:
            return None
        if self.alternatives == "auto":
            return DEFAULT_ALTERNATIVES if _gives_alternatives(self.tagger) else None
        return float(self.alternatives)

    def _tag(self, model: Any, sentences: Sequence[Sentence]) -> list[Sentence]:
        """``model``'s tags, with its alternatives when the parser reads them."""
        if self._threshold is None:
            return list(model.tag(sentences))
        return list(model.tag(sentences, alternatives=[c for c, _ in _ALTERNATIVE_COLUMNS]))

    def _parser_input(self, tagged: Sequence[Sentence]) -> list[Sentence]:
        """``tagged`` as the parser reads it: each alternative whose
        marginal reaches the threshold as a FEATS pseudo-feature."""
        tau = self._threshold
        if tau is None:
            return list(tagged)
        out = []
        for sent in tagged:
            new = []
            for tok in sent:
                feats = [f for f in str(tok.get("feats", "_")).split("|") if f not in ("", "_")]
                for col, name in _ALTERNATIVE_COLUMNS:
                    alt = tok.get(f"{col}_alt")
                    if alt is not None and alt[1] >= tau:
                        feats.append(f"{name}={alt[0]}")
                new.append({**tok, "feats": "|".join(feats) or "_"})
            out.append(new)
        return out

    @synchronized
    def fit(self, data: PathLike | Sequence[Sentence], progress: bool = False) -> TextParser:
        """Trains the parser on jackknifed tags of ``data`` (a CoNLL-U file
        or sentences with gold columns and heads), and the tagger on all of
        ``data``, side by side on :func:`omkl._threads.n_threads` threads.
        Returns ``self``.

        A file is checked before any training: a malformed line, a word
        without a head or heads that do not form a tree raise
        :class:`omkl.ParseError` (a ``ValueError``) naming the file, the
        line and the sentence's ``sent_id`` (its 1-based index when it has
        none).

        The fitted pipeline is frozen for prediction: the tagger's stages
        (:meth:`MorphologyTagger.fit <omkl.MorphologyTagger.fit>`) and the
        parser (:meth:`DependencyParser.freeze
        <omkl.parsing.DependencyParser.freeze>`) keep only what prediction
        reads, so that it is small in memory and on disk. Fitting again
        trains a fresh parser of the same parameters.

        The tokenizer (``tokenizer``, see the class docs) learns from the
        file's ``# text`` comments, tokens, multiword tokens and
        ``SpaceAfter=No``, side by side with the others; a file without the
        text of every sentence and a ``Tokenizer`` to train is an error
        naming the file, before any training."""
        if isinstance(data, str | os.PathLike):
            sentences = _read_gold(data, complete=True)
        else:
            sentences = list(data)
        if not sentences:
            raise ValueError("data: expected at least one sentence, got none")
        tokenizer, train_tokenizer = self._tokenizer_to_fit(data)
        if self.folds:
            predicted = jackknife(
                sentences, self.tagger, self.folds, self.seed, progress=progress, tag=self._tag
            )
        else:
            predicted = sentences
        variant = sentences if self.folds and self.label_gold else None
        parser = self.parser
        if parser.frozen:
            parser = DependencyParser(**constructor_params(parser))

        def fit_parser() -> None:
            parser.fit(self._parser_input(predicted), progress=progress, label_variant=variant)
            parser._freeze_in_place()

        def fit_tagger() -> None:
            self.tagger.fit(sentences)

        # the parser, the tagger and the tokenizer learn from different data:
        # side by side
        jobs: list[Callable[[], None]] = [fit_parser, fit_tagger]
        if tokenizer is not None and train_tokenizer:
            path = cast(PathLike, data)
            chosen = tokenizer

            def fit_tokenizer() -> None:
                chosen.fit(path)

            jobs.append(fit_tokenizer)
        thread_map(lambda fit: fit(), jobs)
        self.parser = parser
        self.tokenizer_ = tokenizer
        return self

    def _tokenizer_to_fit(
        self, data: PathLike | Sequence[Sentence]
    ) -> tuple[Tokenizer | None, bool]:
        """The tokenizer that :meth:`fit` of ``data`` ends with (``None``:
        none), and whether it trains it; ``ValueError`` if a ``Tokenizer``
        cannot learn from ``data``."""
        given = self.tokenizer
        if isinstance(data, str | os.PathLike):
            if given is None:
                return None, False
            if not has_text(data):
                if given == "auto":
                    return None, False
                raise ValueError(
                    f"{os.fspath(data)}: a sentence without a '# text = ...' comment; the "
                    "tokenizer learns from the text of every sentence (tokenizer=None: none)"
                )
            return (Tokenizer() if given == "auto" else cast(Tokenizer, given)), True
        if isinstance(given, Tokenizer):
            if not given._fitted:
                raise ValueError(
                    "tokenizer: an unfitted Tokenizer learns from the text of a CoNLL-U "
                    "file; fit(path), or give a fitted Tokenizer or None"
                )
            return given, False
        return None, False

    @synchronized
    def tag(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """New sentences with LEMMA, UPOS, XPOS and FEATS predicted."""
        return [list(s) for s in self.tagger.tag(sentences)]

    @synchronized
    def predict(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """New sentences with every column predicted: the tagger's, then
        ``head`` and ``deprel`` from the parser.

        A sentence of more than :data:`MAX_PARSED_WORDS` words (as a failed
        sentence split gives) is tagged whole but parsed in pieces of at most
        that many words, one after the other: the root of each piece after
        the first depends on the first piece's root, as ``parataxis``. The
        parser's time and memory per piece are then bounded, and the output
        is still one tree per sentence."""
        if not sentences:
            return []
        tagged = self._tag(self.tagger, sentences)
        pieces: list[Sentence] = []
        spans: list[list[tuple[int, int]]] = []
        for sent in tagged:
            starts = range(0, max(len(sent), 1), MAX_PARSED_WORDS)
            spans.append([(a, min(a + MAX_PARSED_WORDS, len(sent))) for a in starts])
            pieces.extend(sent[a:b] for a, b in spans[-1])
        piece_heads, piece_rels = self.parser.parse_with_labels(self._parser_input(pieces))
        heads: list[list[int]] = []
        rels: list[list[str]] = []
        k = 0
        for parts in spans:
            hs: list[int] = []
            rs: list[str] = []
            root = 0
            for a, _ in parts:
                for h, r in zip(piece_heads[k], piece_rels[k], strict=True):
                    if h:
                        hs.append(a + h)
                        rs.append(r)
                    elif root:  # a later piece's root
                        hs.append(root)
                        rs.append("parataxis")
                    else:
                        root = len(hs) + 1
                        hs.append(0)
                        rs.append(r)
                k += 1
            heads.append(hs)
            rels.append(rs)
        return [
            [
                {
                    **{k: v for k, v in t.items() if k not in _ALTERNATIVE_KEYS},
                    "head": h,
                    "deprel": r,
                }
                for t, h, r in zip(s, hs, rs, strict=True)
            ]
            for s, hs, rs in zip(tagged, heads, rels, strict=True)
        ]

    def _tokenizer(self) -> Tokenizer:
        if self.tokenizer_ is None:
            raise RuntimeError(
                "this TextParser has no tokenizer: fit it on a CoNLL-U file with the "
                "'# text' of its sentences, or give it a fitted Tokenizer"
            )
        return self.tokenizer_

    @synchronized
    def predict_text(self, text: str) -> list[dict[str, Any]]:
        r"""The sentences of the raw ``text`` as the tokenizer cuts it
        (:meth:`Tokenizer.tokenize <omkl.Tokenizer.tokenize>`: ``text``,
        ``newdoc``, ``newpar``, and ``tokens`` with their ``words`` and the
        white space after them in ``misc``), each with ``words``: the words
        of its tokens (a multiword token's expanded), with ``id``, ``form``
        and every column predicted (:meth:`predict`).
        :func:`~omkl.tokenizer.format_tokenized` writes them as CoNLL-U
        (:meth:`parse_text`). ``RuntimeError`` without a tokenizer."""
        return annotate_text(self._tokenizer(), text, self.predict)

    @synchronized
    def tag_text(self, text: str) -> list[dict[str, Any]]:
        """As :meth:`predict_text`, with only the tagger's columns
        (:data:`MORPHOLOGY`) predicted."""
        return annotate_text(self._tokenizer(), text, self.tag)

    @synchronized
    def parse_text(self, text: str) -> str:
        r"""CoNLL-U of the raw ``text``, as ``udpipe --tokenize --tag
        --parse`` writes it: ``# newdoc``, ``# newpar``, ``# sent_id``,
        ``# text``, a line for each multiword token before its words,
        ``SpaceAfter=No`` (and ``SpacesAfter``/``SpacesBefore`` where the
        white space is not one space, so that
        :func:`~omkl.tokenizer.detokenize` rebuilds ``text``), and every
        column predicted (:meth:`predict_text`). ``RuntimeError`` without a
        tokenizer.

        >>> import pathlib, tempfile
        >>> from omkl import DependencyParser, MorphologyTagger, TextParser
        >>> row = "{}\t{}\t{}\t{}\t{}\t_\t{}\t{}\t_\t{}\n"
        >>> one = ("# text = Dogs bark.\n" + row.format(1, "Dogs", "dog", "NOUN", "NNS", 2,
        ...        "nsubj", "_") + row.format(2, "bark", "bark", "VERB", "VBP", 0, "root",
        ...        "SpaceAfter=No") + row.format(3, ".", ".", "PUNCT", ".", 2, "punct", "_") + "\n")
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.conllu"
        >>> _ = path.write_text(one * 8, encoding="utf-8")
        >>> pipe = TextParser(MorphologyTagger(folds=2, epochs=3),
        ...                   DependencyParser(templates=list(range(40)), epochs=2), folds=2)
        >>> print(pipe.fit(path).parse_text("Dogs bark.\n").replace("\t", " "), end="")
        # newdoc
        # newpar
        # sent_id = 1
        # text = Dogs bark.
        1 Dogs dog NOUN NNS _ 2 nsubj _ _
        2 bark bark VERB VBP _ 0 root _ SpaceAfter=No
        3 . . PUNCT . _ 2 punct _ SpacesAfter=\n
        <BLANKLINE>
        """
        return format_tokenized(self.predict_text(text))

    def parse_file(
        self, source: PathLike, target: PathLike, input_format: str | None = None
    ) -> int:
        """Reads ``source`` (CoNLL-U or pre-tokenised text, see
        :func:`omkl.datasets.read_sentences`), writes it to ``target`` as
        complete CoNLL-U (atomically), and returns the number of sentences."""
        sentences = read_sentences(source, input_format)
        write_conllu(self.predict(sentences), target)
        return len(sentences)

    @synchronized
    def score(self, data: PathLike | Sequence[Sentence]) -> dict[str, float | None]:
        """Accuracies in percent on gold ``data``: the tagger's columns
        (``upos``, ``xpos``, ``feats``, ``lemma``, ``alltags``: UPOS, XPOS
        and FEATS all right), and ``uas``/``las`` of the parser on the
        predicted tags (:func:`~omkl.parsing.attachment_scores`; ``None``
        unless every gold word has a head).

        A file whose line is malformed, or whose gold heads of a sentence
        do not form a tree, raises :class:`omkl.ParseError` naming the file,
        the line and the sentence's ``sent_id`` (its 1-based index when it
        has none)."""
        from omkl.morphology import tag_accuracies

        if isinstance(data, str | os.PathLike):
            gold = _read_gold(data, complete=False)
        else:
            gold = list(data)
        pred = self.predict(gold)
        tags = tag_accuracies(gold, pred)
        out: dict[str, float | None] = {
            "upos": tags["UPOS"],
            "xpos": tags["XPOS"],
            "feats": tags["UFeats"],
            "lemma": tags["Lemma"],
            "alltags": tags["AllTags"],
            "uas": None,
            "las": None,
        }
        if all(t.get("head") is not None for s in gold for t in s):
            out.update(
                attachment_scores(
                    [[t["head"] for t in s] for s in gold],
                    [[t["head"] for t in s] for s in pred],
                    [[t["upos"] for t in s] for s in gold],
                    [[t.get("deprel", "_") for t in s] for s in gold],
                    [[t["deprel"] for t in s] for s in pred],
                )
            )
        return out

    # --- persistence --------------------------------------------------------

    _FORMAT = "omkl.TextParser"
    #: Version 2 records ``alternatives``; a file of version 1 loads with
    #: ``alternatives=None``, as its parser was trained. Version 3 records
    #: ``label_gold``; older files load with ``label_gold=False``. Version 4
    #: holds a tagger of format version 3 (which records ``feats_upos``),
    #: and the tokenizer (``None`` when there is none); older files load
    #: without one.
    _VERSION = 4

    @synchronized
    def save(self, path: PathLike) -> None:
        """Saves the tagger, the parser and the tokenizer (if any,
        :attr:`tokenizer_`) atomically in one checksummed file. ``TypeError``
        if the tagger is not a :class:`~omkl.MorphologyTagger` (the one
        tagger class a saved pipeline can hold)."""
        parts: list[bytes] = []
        header: dict[str, Any] = {
            "folds": self.folds,
            "seed": self.seed,
            "alternatives": self.alternatives,
            "label_gold": self.label_gold,
            "tokenizer": None,
        }
        components: list[tuple[str, Any]] = [("tagger", self.tagger), ("parser", self.parser)]
        if self.tokenizer_ is not None:
            components.append(("tokenizer", self.tokenizer_))
        for name, model in components:
            saved_as = f"{type(model).__module__}:{type(model).__qualname__}"
            if _COMPONENTS[name].get(saved_as) is not type(model):
                raise TypeError(
                    f"cannot save a TextParser whose {name} is a {type(model).__name__}: "
                    f"expected {' or '.join(c.__name__ for c in _COMPONENTS[name].values())}"
                )
            state, sections = cast(Any, model)._save_state()
            header[name] = {
                "class": saved_as,
                "params": encode_value(constructor_params(model)),
                "state": encode_value(state),
                "sections": len(sections),
            }
            parts.extend(sections)
        save_model(path, self._FORMAT, self._VERSION, header, parts)

    @classmethod
    def load(cls, path: PathLike) -> TextParser:
        """Loads a pipeline saved by :meth:`save` (``FileNotFoundError`` if
        ``path`` is missing, ``ValueError`` naming the file if it is not a
        saved pipeline or is damaged). The file names its tagger, parser and
        tokenizer classes from a closed set (:class:`~omkl.MorphologyTagger`,
        :class:`~omkl.parsing.DependencyParser`, :class:`~omkl.Tokenizer`);
        nothing it names is imported or called. A pipeline saved without a
        tokenizer (or by a version before 4) loads with ``tokenizer=None``."""
        version, header, sections = load_model(path, cls._FORMAT, [1, 2, 3, cls._VERSION])
        with named_errors(path):
            strict = version == cls._VERSION
            head = SavedEntries(header, "the header", strict)
            models = {}
            at = 0
            names = ["tagger", "parser"]
            if head.get("tokenizer") is not None:
                names.append("tokenizer")
            for name in names:
                part = head.entries(name, f"the saved {name}")
                model_cls = _COMPONENTS[name].get(part["class"])
                if model_cls is None:
                    raise ValueError(
                        f"the saved {name} class {part['class']!r} is not one of "
                        f"{', '.join(map(repr, _COMPONENTS[name]))}"
                    )
                model = build_estimator(model_cls, decode_value(part["params"]), strict)
                n = part["sections"]
                if (
                    isinstance(n, bool)
                    or not isinstance(n, int)
                    or not 0 <= n <= len(sections) - at
                ):
                    raise ValueError(
                        f"the saved {name} has {n!r} sections, {len(sections) - at} left"
                    )
                state = SavedEntries(
                    decode_value(part["state"]), f"the saved {name}'s state", strict
                )
                model._load_state(state, sections[at : at + n])
                state.check_all_read()
                at += n
                models[name] = model
            if at != len(sections):
                raise ValueError(f"expected {at} sections, got {len(sections)}")
            alternatives = head.get("alternatives")
            if alternatives is not None and alternatives != "auto":
                alternatives = float(alternatives)
            label_gold = head.get("label_gold", False)
            folds, seed = head["folds"], head["seed"]
            head.check_all_read()
            tokenizer = models.get("tokenizer")
            if tokenizer is not None and not tokenizer._fitted:
                raise ValueError("the saved tokenizer is not fitted")
            return cls(
                models["tagger"], models["parser"], folds, seed, alternatives, label_gold, tokenizer
            )


def annotate_text(
    tokenizer: Tokenizer,
    text: str,
    annotate: Callable[[list[Sentence]], list[Sentence]],
) -> list[dict[str, Any]]:
    """The sentences of ``tokenizer.tokenize(text)``, each with ``words``:
    the words of its tokens (multiword tokens expanded) as dicts with
    ``id`` and ``form``, then what ``annotate`` (such as
    :meth:`TextParser.predict` or a tagger's ``tag``) makes of them."""
    sentences = tokenizer.tokenize(text)
    words = [
        [
            {"id": i, "form": w}
            for i, w in enumerate((w for t in s["tokens"] for w in t["words"]), 1)
        ]
        for s in sentences
    ]
    done = annotate(words) if words else []
    return [{**s, "words": list(p)} for s, p in zip(sentences, done, strict=True)]


def load_tagger(path: PathLike) -> MorphologyTagger:
    """The tagger saved in ``path``: a :class:`~omkl.MorphologyTagger`
    saved on its own (``omkl train tagger``), or the tagger of a
    :class:`TextParser` (``omkl train parser``), so that one pipeline file
    also tags. ``FileNotFoundError`` if ``path`` is missing, ``ValueError``
    naming the file if it is neither.

    >>> import pathlib, tempfile
    >>> load_tagger(pathlib.Path(tempfile.mkdtemp()) / "none.omkl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    if saved_format(path) == TextParser._FORMAT:
        return cast(MorphologyTagger, TextParser.load(path).tagger)
    return MorphologyTagger.load(path)
