"""Dependency parsing with online multiple kernel learning.

:class:`DependencyParser` is an arc-factored parser whose feature templates
(346 by default, 330 of which can carry weight) are the groups of a
structured-sparsity regulariser: with ``regularizer="l2_squared"`` it is an
SVM trained online (Alg. 1), with ``regularizer="squared_l21"`` the squared
ℓ2,1 norm over templates (MKL, Alg. 3) switches whole templates off.
Training, decoding and feature extraction run in Rust.

A sentence is a list of token dicts with keys ``form``, ``lemma``, ``upos``,
``xpos`` and ``feats`` (as returned by :func:`read_conllu`); heads are
1-based with 0 for the root. Results on UD English-EWT and the studies behind
the defaults are in ``docs/parser.md``.

Examples
--------
>>> from omkl.parsing import DependencyParser
>>> sent = [
...     {"form": "Dogs", "lemma": "dog", "upos": "NOUN", "xpos": "NNS", "feats": "_"},
...     {"form": "bark", "lemma": "bark", "upos": "VERB", "xpos": "VBP", "feats": "_"},
... ]
>>> parser = DependencyParser(templates=list(range(20)))
>>> for _ in range(3):
...     parser.learn_one(sent, [2, 0])
>>> parser.predict_one(sent)
[2, 0]
"""

from __future__ import annotations

import copy
import math
import operator
import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from omkl import _omkl
from omkl._params import check_choice, check_positive, renamed, renamed_value
from omkl._persist import IndependentCopies, Persistent, SavedEntries, constructor_params
from omkl._sync import synchronized
from omkl._threads import thread_map

__all__ = ["DependencyParser", "read_conllu", "attachment_scores"]

Token = dict[str, Any]
Sentence = list[Token]
PathLike = str | os.PathLike[str]

#: The parser's regularisers, by their names in every estimator, and the
#: names the core knows them by.
_CORE_REGULARIZERS: dict[str, _omkl._ParserRegularizer] = {"l2_squared": "l2", "squared_l21": "mkl"}
#: Deprecated values of ``regularizer`` and their new names.
_OLD_REGULARIZERS = {"l2": "l2_squared", "mkl": "squared_l21"}
#: ``decoder="auto"`` decodes projective trees (Eisner) when at most this
#: share of the training trees' arcs is non-projective, and any tree
#: (Chu-Liu-Edmonds) otherwise (``docs/parser.md``).
AUTO_EISNER_MAX_NONPROJECTIVE = 0.01


def read_conllu(path: PathLike) -> list[Sentence]:
    """Reads a CoNLL-U file into a list of sentences (lists of token dicts).

    Comment lines, multiword-token ranges (``N-M``) and empty nodes (``N.M``)
    are skipped, and so is a UTF-8 byte order mark at the start. Each token
    dict has keys ``id``, ``form``, ``lemma``, ``upos``, ``xpos``, ``feats``,
    ``head`` (``None`` when absent) and ``deprel``. A missing file raises
    ``FileNotFoundError``; a malformed one raises :class:`omkl.ParseError`
    (a ``ValueError``) whose message starts with ``path:line:``.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".conllu", delete=False)
    >>> _ = f.write("1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n\\n"); f.close()
    >>> read_conllu(f.name)[0][0]["upos"]
    'INTJ'
    >>> os.unlink(f.name)
    """
    return [tokens for _, tokens in _omkl.read_conllu_file(path)]


def _read_gold(path: PathLike, complete: bool) -> list[Sentence]:
    """The sentences of :func:`read_conllu`, with the gold heads checked as
    well: those of each sentence whose words all have one must form a tree,
    and with ``complete`` every word must have one. Else
    :class:`omkl.ParseError` names the file, the sentence's first line and
    its ``sent_id`` (its 1-based index when it has none).

    >>> import pathlib, tempfile
    >>> from omkl.datasets import write_conllu_table
    >>> path = write_conllu_table(pathlib.Path(tempfile.mkdtemp()) / "loop.conllu", '''
    ... 1 Dogs dog  NOUN NNS _ 2 nsubj _ _
    ... 2 bark bark VERB VBP _ 1 root  _ _
    ... ''')
    >>> len(read_conllu(path))
    1
    >>> try:
    ...     _read_gold(path, complete=True)
    ... except ValueError as e:
    ...     print(e.line, *str(e).removeprefix(f"{path}:1: ").split("; "), sep="\\n")
    1
    sentence "1": heads contain a cycle through word 1
    expected a tree, every word reaching the root 0
    """
    return [
        tokens
        for _, tokens in _omkl.read_conllu_file(path, check_trees=True, require_heads=complete)
    ]


def _head(h: object, n: int, what: str) -> int:
    """``h`` as an integer head in ``0..n``: ``TypeError`` unless it is an
    integer (``bool``, ``float`` and ``str`` are refused), ``ValueError``
    unless it is in range; both messages start with ``what``."""
    if isinstance(h, bool) or not hasattr(type(h), "__index__"):
        raise TypeError(f"{what} is {h!r}; expected an integer (0 = root)")
    v = operator.index(h)  # type: ignore[arg-type]
    if not 0 <= v <= n:
        raise ValueError(f"{what} is {v}, out of range: expected an integer in 0..{n} (0 = root)")
    return v


def _heads(heads: Sequence[int], sid: str, n: int) -> list[int]:
    """The gold ``heads`` of a sentence of ``n`` words, checked by :func:`_head`."""
    if isinstance(heads, str | bytes) or not isinstance(heads, Iterable):
        raise TypeError(f"heads of sentence {sid!r} must be a sequence of integers, got {heads!r}")
    out = [_head(h, n, f"heads[{i}] of sentence {sid!r}") for i, h in enumerate(heads)]
    if len(out) != n:
        raise ValueError(
            f"heads of sentence {sid!r}: expected {n} heads (one per word), got {len(out)}"
        )
    return out


def _tuples(sentence: Sentence, sid: str) -> list[tuple[str, str, str, str, str]]:
    if not isinstance(sentence, list | tuple) or len(sentence) == 0:
        raise ValueError(f"sentence {sid!r} is empty; expected a non-empty list of token dicts")
    out = []
    for i, tok in enumerate(sentence):
        try:
            out.append(
                (
                    str(tok["form"]),
                    str(tok.get("lemma", "_")),
                    str(tok["upos"]),
                    str(tok.get("xpos", "_")),
                    str(tok.get("feats", "_")),
                )
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(
                f"sentence {sid!r}, token {i + 1}: expected a dict with keys "
                f"form, lemma, upos, xpos, feats ({e!r})"
            ) from None
    return out


def _corpus(data: PathLike | Sequence[Sentence] | _omkl.ParseCorpus) -> _omkl.ParseCorpus:
    if isinstance(data, _omkl.ParseCorpus):
        return data
    if isinstance(data, str | os.PathLike):
        return _omkl.ParseCorpus.from_path(data)
    ids = [str(i + 1) for i in range(len(data))]
    toks = [_tuples(s, sid) for s, sid in zip(data, ids, strict=True)]
    heads: list[list[int | None]] = []
    rels: list[list[str]] = []
    for s, sid in zip(data, ids, strict=True):
        heads.append(
            [
                None
                if t.get("head") is None
                else _head(t["head"], len(s), f"head of token {j + 1} of sentence {sid!r}")
                for j, t in enumerate(s)
            ]
        )
        rels.append([str(t.get("deprel", "_")) for t in s])
    return _omkl.ParseCorpus.from_tokens(ids, toks, heads, rels)


def _training_corpus(data: PathLike | Sequence[Sentence] | _omkl.ParseCorpus) -> _omkl.ParseCorpus:
    """:func:`_corpus`, refused with ``ValueError`` when it has no sentence."""
    corpus = _corpus(data)
    if len(corpus) == 0:
        where = f"{os.fspath(data)!r} has" if isinstance(data, str | os.PathLike) else "data has"
        raise ValueError(f"{where} no sentences; expected at least one sentence with gold heads")
    return corpus


def _variant(
    corpus: _omkl.ParseCorpus, data: PathLike | Sequence[Sentence] | _omkl.ParseCorpus
) -> _omkl.ParseCorpus:
    """``data`` as a corpus, refused with ``ValueError`` unless it has the
    sentences of ``corpus`` with the same heads and relations."""
    variant = _corpus(data)
    if len(variant) != len(corpus):
        raise ValueError(
            f"label_variant: expected the {len(corpus)} sentences of data, got {len(variant)}"
        )
    for name, mine, theirs in (
        ("heads", corpus.gold_heads(), variant.gold_heads()),
        ("relations", corpus.deprels(), variant.deprels()),
    ):
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            if a != b:
                raise ValueError(
                    f"label_variant: sentence {i} has other {name} than in data; expected "
                    f"{a!r}, got {b!r}"
                )
    return variant


def split_parts(n: int, folds: int, seed: int) -> list[int]:
    """The part (``0..folds``) of each of ``n`` items in a random split by
    ``seed`` into ``folds`` parts whose sizes differ by at most one, as the
    jackknives of :func:`omkl.pipeline.jackknife` and of a stacked
    :class:`DependencyParser` split their sentences.

    >>> split_parts(5, 2, seed=0)
    [0, 1, 0, 0, 1]
    """
    order = list(range(n))
    random.Random(seed).shuffle(order)
    part = [0] * n
    for k, i in enumerate(order):
        part[i] = k % folds
    return part


def attachment_scores(
    gold_heads: Iterable[Sequence[int]],
    pred_heads: Iterable[Sequence[int]],
    upos: Iterable[Sequence[str]],
    gold_labels: Iterable[Sequence[str]] | None = None,
    pred_labels: Iterable[Sequence[str]] | None = None,
) -> dict[str, float | None]:
    """UAS and LAS in percent over words whose UPOS is not ``PUNCT``.

    LAS is ``None`` unless both gold and predicted labels are given.

    >>> attachment_scores([[2, 0, 2]], [[2, 0, 1]], [["DET", "NOUN", "PUNCT"]])
    {'uas': 100.0, 'las': None}
    """
    total = uas = las = 0
    gl = list(gold_labels) if gold_labels is not None else None
    pl = list(pred_labels) if pred_labels is not None else None
    for i, (g, p, u) in enumerate(zip(gold_heads, pred_heads, upos, strict=True)):
        if len(g) != len(p) or len(g) != len(u):
            raise ValueError(f"sentence {i + 1}: expected {len(g)} heads, got {len(p)}")
        for j, (gh, ph, tag) in enumerate(zip(g, p, u, strict=True)):
            if tag == "PUNCT":
                continue
            total += 1
            if gh == ph:
                uas += 1
                if gl is None or pl is None or gl[i][j] == pl[i][j]:
                    las += 1
    if total == 0:
        raise ValueError("no non-punctuation words to score")
    has_labels = gl is not None and pl is not None
    return {"uas": 100.0 * uas / total, "las": 100.0 * las / total if has_labels else None}


class DependencyParser(Persistent, IndependentCopies):
    """Arc-factored non-projective dependency parser (see the module docstring).

    Parameters
    ----------
    regularizer
        ``"l2_squared"`` (SVM, Alg. 1) or ``"squared_l21"`` (squared ℓ2,1 over
        templates, MKL, Alg. 3); the former names ``"l2"`` and ``"mkl"`` are
        deprecated aliases.
    lam
        Regularisation constant λ.
    eta0
        Learning rate of each online step (constant). Formerly ``eta``
        (deprecated alias).
    decoder
        ``"chu-liu-edmonds"`` (any tree with one root child), ``"eisner"``
        (projective trees with one root child) or ``"auto"``: at the start of
        the first :meth:`fit`, Eisner when at most 1% of the training trees'
        arcs are non-projective (:data:`AUTO_EISNER_MAX_NONPROJECTIVE`;
        English EWT has 0.17%, and Eisner parses its test set 0.5 UAS more
        accurately), Chu-Liu-Edmonds otherwise. A parser that learns with
        :meth:`learn_one` before any ``fit`` has no training set to measure,
        and ``"auto"`` is then Chu-Liu-Edmonds. ``decoder_`` is the choice.
    epochs
        Default number of passes of :meth:`fit`.
    templates
        Indices of the default templates to use (all when ``None``).
    seed
        Seed of the shuffling of sentences between epochs.
    prune_k
        Heads kept per word by the first-pass arc pruner (0 disables it). The
        pruner, a small model on 23 templates, is trained for
        ``pruner_epochs`` passes at the start of :meth:`fit`; the full model
        then scores only the kept arcs (and the gold arc while training).
    pruner_epochs
        First-pass epochs of the pruner.
    prune_margin
        Log-odds margin of the pruner: of its ``prune_k`` best heads, a word
        keeps those whose first-pass score is within ``prune_margin`` of its
        best (``inf`` keeps all ``prune_k``). The pruner is a softmax over
        candidate heads, so a head is dropped when it is ``e**prune_margin``
        times less likely than the best.
    label_epochs
        Epochs of the label stage, a multiclass Alg. 1 learner (hinge loss,
        averaged, learning rate 0.02) that predicts each arc's relation from
        the two words, their neighbours and the rest of the tree; it trains
        on the gold trees at the end of :meth:`fit` when every word has a
        relation, and gives :meth:`score` its LAS (0 disables the stage).
    stack_folds
        0 (the default) or the number of parts ``K >= 2`` of a stacked
        parser (Martins, Das, Smith and Xing 2008): a first-stage parser with
        the same settings predicts a tree and its relations, and this parser
        reads them as extra FEATS of every word (its head's offset, relation
        and tag, the tag and relation of the head's head, and the relations of
        its dependents; ``omkl_core::features::stacked``), so that its
        arc-factored templates see the rest of the tree. :meth:`fit` trains
        the first stage on all the data and, for the second stage's training
        trees, jackknifes it over ``K`` random parts (by ``seed``): each part
        is parsed by a first stage trained on the other parts, as at
        prediction time the first stage parses text it never saw. Training
        costs about ``K + 2`` parsers; parsing two. A second :meth:`fit`
        jackknifes with fresh first stages and continues training the kept
        first stage and the second stage. :meth:`learn_one` lets the first
        stage parse the sentence before either stage learns it.
    slots_per_feature, max_table_bits
        At the start of :meth:`fit`, each template's table gets the smallest
        power of two of at least ``slots_per_feature`` times its number of
        distinct features on the training gold arcs, at most
        ``2**max_table_bits`` slots.
    **kwargs
        The deprecated name ``eta`` of ``eta0``, accepted for one release
        with a ``DeprecationWarning``; see ``docs/configuration.md``.

    Attributes
    ----------
    history_
        One dict per arc-model epoch of :meth:`fit`: ``epoch``, ``loss``,
        ``seconds`` and ``sentences_per_s``.
    pruner_history_, label_history_
        The same for the first-pass pruner's epochs and the label stage's
        (whose dicts also give the ``sentences`` it learned from per epoch).
    template_names_
        Name of each feature template, in index order (``templates`` selects
        among these indices).
    template_weights_, averaged_template_weights_, template_weights_trajectory_
        β over the templates (see the properties).
    table_sizes_
        Slots of each template's weight table.
    decoder_
        The tree decoder in use (``decoder``, or the choice of ``"auto"``).

    Prediction always uses the averaged parameters. The defaults were chosen
    on the EWT dev set; the studies, test-set results and their history are
    in ``docs/parser.md``.

    Examples
    --------
    A tiny treebank in CoNLL-U (ten tab-separated columns per word, a blank
    line after each sentence), written to a temporary file; in practice this is
    UD English-EWT's ``en_ewt-ud-train.conllu``.

    >>> import pathlib, shutil, tempfile
    >>> from omkl import DependencyParser
    >>> from omkl.datasets import write_conllu_table
    >>> from omkl.parsing import read_conllu
    >>> treebank = '''
    ... 1 Dogs   dog   NOUN  NNS _ 2 nsubj _ _
    ... 2 bark   bark  VERB  VBP _ 0 root  _ _
    ... 3 .      .     PUNCT .   _ 2 punct _ _
    ...
    ... 1 The    the   DET   DT  _ 2 det   _ _
    ... 2 cat    cat   NOUN  NN  _ 3 nsubj _ _
    ... 3 sleeps sleep VERB  VBZ _ 0 root  _ _
    ...
    ... 1 Birds  bird  NOUN  NNS _ 2 nsubj _ _
    ... 2 sing   sing  VERB  VBP _ 0 root  _ _
    ... 3 songs  song  NOUN  NNS _ 2 obj   _ _
    ... '''
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> path = write_conllu_table(folder / "train.conllu", treebank)

    Train (5 epochs by default), then parse; ``score`` gives UAS and LAS in
    percent over non-punctuation words (here on the training data itself):

    >>> parser = DependencyParser().fit(path)
    >>> parser.parse(path)
    [[2, 0, 2], [2, 3, 0], [2, 0, 2]]
    >>> parser.score(path)
    {'uas': 100.0, 'las': 100.0}
    >>> heads, relations = parser.parse_with_labels(path)
    >>> relations[2]
    ['nsubj', 'root', 'obj']
    >>> parser.predict_one(read_conllu(path)[1])
    [2, 3, 0]
    >>> len(parser.template_names_), parser.template_names_[:3]
    (346, ['h.form', 'h.lemma', 'h.upos'])

    A stacked parser reads the tree of a first parser trained like itself
    (jackknifed here over 3 parts, one sentence each):

    >>> stacked = DependencyParser(stack_folds=3).fit(path)
    >>> stacked.parse(path)
    [[2, 0, 2], [2, 3, 0], [2, 0, 2]]

    A parser trained on predicted tags can let its label stage learn from
    the gold tags of the same sentences as well (``fit``'s
    ``label_variant``):

    >>> gold = read_conllu(path)
    >>> noisy = [[{**t, "upos": "X"} for t in s] for s in gold]
    >>> both = DependencyParser(label_epochs=2).fit(noisy, label_variant=gold)
    >>> both.label_history_[0]["sentences"], len(both.label_history_)
    (6, 2)

    The MKL parser weighs the templates by β, a distribution over them:

    >>> mkl = DependencyParser(regularizer="squared_l21").fit(path)
    >>> round(sum(mkl.template_weights_), 6)
    1.0

    Save and load (atomic; the file records format version and feature hash):

    >>> parser.save(folder / "parser.pkl")
    >>> DependencyParser.load(folder / "parser.pkl").parse(path)
    [[2, 0, 2], [2, 3, 0], [2, 0, 2]]
    >>> shutil.rmtree(folder)
    """

    def __init__(
        self,
        regularizer: str = "l2_squared",
        lam: float = 1e-6,
        eta0: float = 0.003,
        decoder: str = "auto",
        epochs: int = 5,
        templates: list[int] | None = None,
        seed: int = 0,
        prune_k: int = 20,
        pruner_epochs: int = 1,
        prune_margin: float = 5.0,
        slots_per_feature: float = 1.0,
        max_table_bits: int = 15,
        label_epochs: int = 10,
        stack_folds: int = 0,
        **kwargs: Any,
    ) -> None:
        eta0 = renamed(type(self), kwargs, {"eta": "eta0"}, locals()).get("eta0", eta0)
        regularizer = renamed_value("regularizer", regularizer, _OLD_REGULARIZERS)
        self.regularizer = regularizer
        self.lam = lam
        self.eta0 = eta0
        self.decoder = decoder
        self.epochs = epochs
        self.templates = templates
        self.seed = seed
        self.prune_k = prune_k
        self.pruner_epochs = pruner_epochs
        self.prune_margin = prune_margin
        self.slots_per_feature = slots_per_feature
        self.max_table_bits = max_table_bits
        self.label_epochs = label_epochs
        self.stack_folds = stack_folds
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
        for name, v, lo in (
            ("prune_k", prune_k, 0),
            ("pruner_epochs", pruner_epochs, 1),
            ("label_epochs", label_epochs, 0),
        ):
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        if (
            isinstance(stack_folds, bool)
            or not isinstance(stack_folds, int)
            or stack_folds == 1
            or stack_folds < 0
        ):
            raise ValueError(f"stack_folds must be 0 or an integer >= 2, got {stack_folds!r}")
        if not isinstance(max_table_bits, int) or not 8 <= max_table_bits <= 18:
            raise ValueError(
                f"max_table_bits must be an integer in [8, 18], got {max_table_bits!r}"
            )
        if not slots_per_feature > 0:
            raise ValueError(f"slots_per_feature must be > 0, got {slots_per_feature!r}")
        if not isinstance(prune_margin, (int, float)) or not prune_margin > 0:
            raise ValueError(f"prune_margin must be a number > 0 (or inf), got {prune_margin!r}")
        check_choice("regularizer", regularizer, tuple(_CORE_REGULARIZERS))
        check_choice("decoder", decoder, ("auto", "chu-liu-edmonds", "eisner"))
        check_positive("eta0", eta0)
        self._core = self._new_core()
        self._labeler = _omkl.ArcLabelerCore()
        self.history_: list[dict[str, float]] = []
        self.pruner_history_: list[dict[str, float]] = []
        self.label_history_: list[dict[str, float]] = []
        #: The first stage of a stacked parser (``stack_folds >= 2``).
        self._first: DependencyParser | None = (
            DependencyParser(**self._first_stage_params()) if stack_folds else None
        )

    def _new_core(self) -> _omkl.ArcParserCore:
        """The arc model of a parser that has learned nothing."""
        core = _omkl.ArcParserCore(
            _CORE_REGULARIZERS[self.regularizer],
            self.lam,
            self.eta0,
            cast(
                "_omkl._TreeDecoder",
                "chu-liu-edmonds" if self.decoder == "auto" else self.decoder,
            ),
            self.templates,
            self.prune_k,
        )
        if self.prune_k > 0 and math.isfinite(self.prune_margin):
            core.set_prune_margin(float(self.prune_margin))
        return core

    def _first_stage_params(self) -> dict[str, Any]:
        return {**constructor_params(self), "stack_folds": 0}

    def _input(self, corpus: _omkl.ParseCorpus) -> _omkl.ParseCorpus:
        """What this parser's stages read: ``corpus``, with the first
        stage's tree in FEATS when the parser is stacked."""
        if self._first is None:
            return corpus
        return corpus.stacked(*self._first._parse_corpus(corpus))

    def _parse_corpus(self, corpus: _omkl.ParseCorpus) -> tuple[list[list[int]], list[list[str]]]:
        corpus = self._input(corpus)
        heads = self._core.predict_corpus(corpus)
        return heads, self._labeler.predict_corpus(corpus, heads)

    # --- online interface -------------------------------------------------

    # --- freezing ----------------------------------------------------------

    @property
    def frozen(self) -> bool:
        """Whether the parser is frozen (see :meth:`freeze`)."""
        return bool(self._core.frozen)

    def _check_learnable(self) -> None:
        if self._core.frozen:
            raise RuntimeError(
                "this DependencyParser is frozen (a compact model for prediction, from freeze() "
                "or a file saved from a frozen parser) and cannot learn; keep the parser you "
                "froze to go on learning"
            )

    def _freeze_in_place(self) -> None:
        """Freezes this parser's arc model, pruner, label stage and first
        stage."""
        self._core.freeze()
        self._labeler.freeze()
        if self._first is not None:
            self._first._freeze_in_place()

    @synchronized
    def freeze(self) -> DependencyParser:
        """A frozen copy of this parser, for prediction: the arc model and
        its pruner keep only their averaged tables (a third of their memory),
        rounded to half precision template by template (each weight moves by
        at most 2^-11 of its template's largest weight; a sixth of the saved
        size), the label stage only its non-zero averaged weights in
        float32, and so does a stacked parser's first stage. It predicts the
        heads and relations of this parser up to those roundings (on the dev
        files of EWT, Greek-GDT and Gothic-PROIEL, none changed:
        ``studies/parser_half_study.py``), saves and loads exactly, and
        cannot learn (``learn_one`` and ``fit`` raise ``RuntimeError``); this
        parser is left as it is.

        >>> sent = [{"form": f, "upos": u, "xpos": u, "lemma": f, "feats": "_", "deprel": d}
        ...         for f, u, d in [("the", "DET", "det"), ("dog", "NOUN", "root")]]
        >>> p = DependencyParser(prune_k=0, max_table_bits=8)
        >>> for _ in range(3):
        ...     p.learn_one(sent, [2, 0])
        >>> f = p.freeze()
        >>> f.frozen, f.predict_one(sent) == p.predict_one(sent)
        (True, True)
        """
        new = copy.deepcopy(self)
        new._freeze_in_place()
        return new

    @synchronized
    def learn_one(self, sentence: Sentence, heads: Sequence[int], sentence_id: str = "") -> None:
        """One online step on a sentence with gold ``heads``."""
        self._check_learnable()
        sid = sentence_id or "<learn_one>"
        toks = _tuples(sentence, sid)
        hs = _heads(heads, sid, len(toks))
        rels = [str(t.get("deprel", "_")) for t in sentence]
        labelled = self.label_epochs > 0 and all(r not in ("", "_") for r in rels)
        if self._first is not None:
            one = _omkl.ParseCorpus.from_tokens([sid], [toks], [list(hs)], [rels])
            stacked = self._input(one)
            self._core.fit_epoch(stacked, [0], None, False)
            if labelled:
                self._labeler.fit_epoch(stacked, [0])
            self._first.learn_one(sentence, hs, sid)
            return
        self._core.learn_one(sid, toks, hs)
        if labelled:
            self._labeler.learn_one(sid, toks, hs, rels)

    @synchronized
    def predict_one(self, sentence: Sentence, sentence_id: str = "") -> list[int]:
        """Predicted head of each word (0 = root)."""
        sid = sentence_id or "<predict_one>"
        if self._first is not None:
            one = _omkl.ParseCorpus.from_tokens([sid], [_tuples(sentence, sid)])
            return self._core.predict_corpus(self._input(one))[0]
        return self._core.predict_one(sid, _tuples(sentence, sid))

    # --- batch interface --------------------------------------------------

    @synchronized
    def fit(
        self,
        data: PathLike | Sequence[Sentence] | _omkl.ParseCorpus,
        epochs: int | None = None,
        progress: bool = False,
        on_epoch: Callable[[int, DependencyParser], None] | None = None,
        label_variant: PathLike | Sequence[Sentence] | _omkl.ParseCorpus | None = None,
    ) -> DependencyParser:
        """Trains for ``epochs`` passes (default ``self.epochs``) over a CoNLL-U
        file or a list of sentences with gold ``head`` in every token.

        ``on_epoch(epoch, parser)``, when given, is called after each arc-model
        epoch (1-based), when the averaged parameters used by prediction are
        up to date, so a learning curve can be measured in one run (the label
        stage is trained only after the last epoch).

        ``label_variant``, when given, is another copy of ``data``: the same
        sentences with the same words, heads and relations, but other tags
        (for example the gold tags of training sentences whose tags in
        ``data`` were predicted, as :class:`omkl.TextParser` passes). The
        label stage then learns from both copies, shuffled together; the arc
        model from ``data`` only. In a stacked parser, the second stage's
        label stage reads the first stage's tree of each sentence in both
        copies, and the first stage learns from ``data`` alone (its
        relations are features of the second stage's arc model).
        """
        import time

        self._check_learnable()
        corpus = _training_corpus(data)
        variant = None if label_variant is None else _variant(corpus, label_variant)
        if self._first is not None:
            trees = self._stacked_training(corpus, epochs, progress)
            corpus = corpus.stacked(*trees)
            variant = None if variant is None else variant.stacked(*trees)
        n = len(corpus)
        rng = random.Random(self.seed)

        def timed_epoch(epoch: int, label: str, pruner: bool) -> dict[str, float]:
            order = list(range(n))
            rng.shuffle(order)
            t0 = time.perf_counter()
            loss = self._run_epoch(corpus, order, label, progress, pruner)
            dt = time.perf_counter() - t0
            return {"epoch": epoch, "loss": loss, "seconds": dt, "sentences_per_s": n / dt}

        first = self._core.steps() == 0 and not self.history_
        untrained = first and not self.pruner_history_
        try:
            if first:
                self._choose_decoder(corpus.nonprojective_arcs())
                self._core.fit_table_sizes(corpus, self.slots_per_feature, self.max_table_bits)
            if self.prune_k > 0 and not self.pruner_history_:
                for epoch in range(self.pruner_epochs):
                    self.pruner_history_.append(
                        timed_epoch(epoch + 1, f"first pass {epoch + 1}", pruner=True)
                    )
            for epoch in range(epochs if epochs is not None else self.epochs):
                self.history_.append(timed_epoch(epoch + 1, f"epoch {epoch + 1}", pruner=False))
                if on_epoch is not None:
                    on_epoch(epoch + 1, self)
        except BaseException:
            # an epoch checks every tree before its first step: a parser that
            # had learned nothing and refuses the data is left as it was,
            # without the decoder and table sizes chosen from the data
            if untrained and not (self.pruner_history_ or self.history_ or self._core.steps()):
                self._core = self._new_core()
            raise
        if self.label_epochs > 0 and all(
            r not in ("", "_") for rels in corpus.deprels() for r in rels
        ):
            labelled = corpus if variant is None else corpus.concat(variant)
            m = len(labelled)
            for epoch in range(self.label_epochs):
                order = list(range(m))
                rng.shuffle(order)
                t0 = time.perf_counter()
                loss = self._labeler.fit_epoch(labelled, order)
                dt = time.perf_counter() - t0
                self.label_history_.append(
                    {"epoch": epoch + 1, "loss": loss, "seconds": dt, "sentences": m,
                     "sentences_per_s": m / dt}
                )  # fmt: skip
        return self

    def _stacked_training(
        self, corpus: _omkl.ParseCorpus, epochs: int | None, progress: bool
    ) -> tuple[list[list[int]], list[list[str]]]:
        """Trains the first stage on ``corpus`` and returns the trees and
        relations of the jackknifed first stages, for the second stage to
        read."""
        from tqdm.auto import tqdm

        assert self._first is not None
        n, folds = len(corpus), self.stack_folds
        if n < folds:
            raise ValueError(
                f"stack_folds: {folds} parts of {n} sentences; expected at least one per part"
            )
        part = split_parts(n, folds, self.seed)
        heads: list[list[int]] = [[] for _ in range(n)]
        rels: list[list[str]] = [[] for _ in range(n)]
        bar = tqdm(total=folds, desc="stacking", unit="part", disable=not progress)

        first = self._first

        def one_part(k: int) -> tuple[list[int], tuple[list[list[int]], list[list[str]]]]:
            if k < 0:  # the first stage itself, on all of the corpus
                first.fit(corpus, epochs)
                return [], ([], [])
            held = [i for i in range(n) if part[i] == k]
            stage = DependencyParser(**self._first_stage_params())
            stage.fit(corpus.select([i for i in range(n) if part[i] != k]), epochs)
            bar.update(1)
            return held, stage._parse_corpus(corpus.select(held))

        # the parts and the first stage train side by side (each parser
        # learns without the GIL), the first stage, the longest, first
        try:
            done = thread_map(one_part, range(-1, folds))
        finally:
            bar.close()
        for held, (part_heads, part_rels) in done:
            for i, h, r in zip(held, part_heads, part_rels, strict=True):
                heads[i], rels[i] = h, r
        return heads, rels

    def _run_epoch(
        self,
        corpus: _omkl.ParseCorpus,
        order: list[int],
        desc: str,
        progress: bool,
        first_pass: bool,
    ) -> float:
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(order), desc=desc, unit="sent")
        last = [0]

        def tick(done: int) -> None:
            if bar is not None:
                bar.update(done - last[0])
                last[0] = done

        try:
            return self._core.fit_epoch(corpus, order, tick, first_pass)
        finally:
            if bar is not None:
                bar.close()

    @synchronized
    def pruner_recall(self, data: PathLike | Sequence[Sentence]) -> float:
        """Percentage of gold arcs kept by the trained first-pass pruner."""
        hit, total = self._core.pruner_recall(self._input(_training_corpus(data)))
        return 100.0 * hit / total

    @synchronized
    def parse(self, data: PathLike | Sequence[Sentence]) -> list[list[int]]:
        """Predicted heads of every sentence (parsed in parallel)."""
        return self._core.predict_corpus(self._input(_corpus(data)))

    @synchronized
    def parse_with_labels(
        self, data: PathLike | Sequence[Sentence]
    ) -> tuple[list[list[int]], list[list[str]]]:
        """Predicted heads and relations of every sentence (relations are
        ``"_"`` before the label stage is trained)."""
        return self._parse_corpus(_corpus(data))

    @synchronized
    def score(self, data: PathLike | Sequence[Sentence]) -> dict[str, float | None]:
        """``{"uas": ..., "las": ...}`` in percent over non-punctuation words.
        ``las`` is ``None`` when the label stage is untrained."""
        corpus = _corpus(data)
        corpus.require_gold_heads()
        gold = corpus.gold_heads()
        pred, labels = self._parse_corpus(corpus)
        if not self._labeler.labels():
            return attachment_scores([g or [] for g in gold], pred, corpus.upos())
        return attachment_scores(
            [g or [] for g in gold], pred, corpus.upos(), corpus.deprels(), labels
        )

    @synchronized
    def write_conllu(self, data: PathLike | Sequence[Sentence], path: PathLike) -> None:
        """Parses ``data`` and writes it to ``path`` as CoNLL-U with predicted
        heads (and relations once the label stage is trained), atomically
        (see :func:`omkl._persist.save_bytes`): an existing file is replaced
        only by the complete output."""
        import tempfile

        from omkl._persist import save_bytes

        corpus = _corpus(data)
        heads, rels = self._parse_corpus(corpus)
        labels = rels if self._labeler.labels() else None
        with tempfile.TemporaryDirectory() as folder:
            staged = os.path.join(folder, "parsed.conllu")
            corpus.write_conllu(staged, heads, labels)
            with open(staged, "rb") as f:
                text = f.read()
        save_bytes(path, text)

    # --- introspection ----------------------------------------------------

    @property
    @synchronized
    def template_names_(self) -> list[str]:
        """Name of each feature template, in index order."""
        return self._core.template_names()

    @property
    @synchronized
    def template_weights_(self) -> list[float]:
        """β_t = ‖θ_t‖ / Σ‖θ‖ of the current (sparse) iterate θ."""
        return self._core.template_weights()

    @property
    @synchronized
    def averaged_template_weights_(self) -> list[float] | None:
        """β of the averaged parameters used for prediction (dense even under
        MKL); ``None`` before the first epoch."""
        return self._core.averaged_template_weights()

    @property
    @synchronized
    def template_weights_trajectory_(self) -> list[list[float]]:
        """β after each epoch."""
        return self._core.beta_trajectory()

    @property
    @synchronized
    def table_sizes_(self) -> list[int]:
        """Slots of each template's weight table (powers of two)."""
        return self._core.table_sizes()

    @property
    @synchronized
    def decoder_(self) -> str:
        """The tree decoder in use: ``decoder``, or what ``"auto"`` chose."""
        return self._core.decoder

    def _choose_decoder(self, counts: Iterable[tuple[int, int] | None]) -> None:
        """Resolves ``decoder="auto"`` from the training trees' counts of
        non-projective arcs and of all arcs, per tree (before the first step)."""
        if self.decoder == "auto":
            trees = [c for c in counts if c is not None]
            arcs = sum(n for _, n in trees)
            share = sum(bad for bad, _ in trees) / arcs if arcs else 0.0
            self._core.decoder = (
                "eisner" if share <= AUTO_EISNER_MAX_NONPROJECTIVE else "chu-liu-edmonds"
            )

    # --- persistence ------------------------------------------------------

    @synchronized
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_core"] = self._core.__getstate__()
        state["_labeler"] = self._labeler.__getstate__()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        core = _omkl.ArcParserCore()
        core.__setstate__(state["_core"])
        labeler = _omkl.ArcLabelerCore()
        labeler.__setstate__(state["_labeler"])
        state = dict(state)
        state["_core"] = core  # keeps the attribute order, so pickles are stable
        state["_labeler"] = labeler
        self.__dict__.update(state)

    #: The layout of the file's header and sections; the core's bytes in the
    #: sections carry their own format version (``_omkl.PARSER_FORMAT_VERSION``).
    _SAVE_VERSION = 4
    _SAVE_SECTIONS = (2, 4)

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        state: dict[str, Any] = {
            "history": self.history_,
            "pruner_history": self.pruner_history_,
            "label_history": self.label_history_,
        }
        sections = [self._core.__getstate__(), self._labeler.__getstate__()]
        if self._first is not None:
            state["first_stage"], first = self._first._save_state()
            sections += first
        return state, sections

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        expected = 2 if self._first is None else 4
        if len(sections) != expected:
            raise ValueError(
                f"expected {expected} sections for stack_folds={self.stack_folds}, "
                f"got {len(sections)}"
            )
        self._core.__setstate__(sections[0])
        self._labeler.__setstate__(sections[1])
        if self._first is not None:
            first = state["first_stage"]
            if isinstance(state, SavedEntries):
                first = state.entries("first_stage", "the saved first stage's state")
            self._first._load_state(first, sections[2:])
        for key, attr in (
            ("history", "history_"),
            ("pruner_history", "pruner_history_"),
            ("label_history", "label_history_"),
        ):
            value = state[key]
            if not isinstance(value, list) or not all(isinstance(h, dict) for h in value):
                raise ValueError(f"the saved {key} must be a list of dicts")
            setattr(self, attr, value)
