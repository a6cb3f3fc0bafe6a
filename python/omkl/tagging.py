"""Sequence labelling on sparse text features: a streaming chain tagger
trained by online proximal learning (Alg. 1 on the chain structure), and
built-in token features.

:class:`TextTagger` takes one dict of features per token, as CRFsuite does
(``{"lower": "the", "suffix3": "the", "is_title": True}``). A string value
is the indicator feature ``key=value``; a bool or a number is a real-valued
feature ``key``. The **template** (group) of a feature is its key, or the
group that ``groups={key: template}`` gives it. Inside its template a
feature goes to bucket ``xxh3_64(name, seed=HASH_SEED) mod n_buckets``, so
memory does not grow with the vocabulary. Each template is one group of the
regularisers, so that the squared ℓ2,1 penalty (MKL) selects templates; the
transition weights (label bigrams, start and stop) are one more group.

:func:`token_features` gives a strong set of features from the words alone.

Examples
--------
>>> import omkl
>>> from omkl.tagging import TextTagger, token_features
>>> sents = [("the dog runs".split(), ["DET", "NOUN", "VERB"]),
...          ("a cat sleeps".split(), ["DET", "NOUN", "VERB"]),
...          ("the cats run".split(), ["DET", "NOUN", "VERB"])]
>>> tagger = TextTagger()
>>> _ = tagger.fit([token_features(w) for w, _ in sents], [t for _, t in sents], epochs=5)
>>> tagger.predict_one(token_features("a dog sleeps".split()))
['DET', 'NOUN', 'VERB']
>>> tagger.labels_
['DET', 'NOUN', 'VERB']
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from omkl import _omkl
from omkl._labels import LabelIndex
from omkl._params import check_choice, check_int, renamed
from omkl._persist import index_of
from omkl._sync import synchronized
from omkl.linear import Regularizer, _group_map, _HashedGroups

__all__ = ["TextTagger", "token_features"]

Token = Mapping[Any, Any]

#: Name of the group holding the transition weights.
_TRANSITIONS = "<transitions>"
#: The format that the bytes of a frozen tagger name.
_FROZEN_FORMAT = b"omkl-frozen-chain"


def _sealed_format(data: bytes) -> bytes:
    """The format name in the envelope of core bytes (empty if there is
    none; the core checks the rest when it reads them)."""
    n = data[4] if len(data) > 4 else 0
    return bytes(data[5 : 5 + n]) if data[:4] == b"OMKL" else b""


class _Sentences(NamedTuple):
    """Sentences of word forms with the string columns that a set of token
    templates reads (``columns[k][s][i]``: column ``k`` of word ``i`` of
    sentence ``s``), for a :class:`TextTagger` whose features are computed
    in the core rather than given as dicts.

    >>> t = _omkl.TokenTemplates(["token", "tags:upos"])
    >>> data = _Sentences(t, [["The", "dog"], ["Hi"]], [[["DET", "NOUN"], ["INTJ"]]])
    >>> data.subset([1]).words, data.subset([1]).columns
    ([['Hi']], [[['INTJ']]])
    """

    templates: _omkl.TokenTemplates
    words: Sequence[Sequence[str]]
    columns: Sequence[Sequence[Sequence[str]]]

    def subset(self, idx: Sequence[int]) -> _Sentences:
        """The sentences ``idx``, in that order."""
        columns = [[c[i] for i in idx] for c in self.columns]
        return _Sentences(self.templates, [self.words[i] for i in idx], columns)


class TextTagger(LabelIndex, _HashedGroups):
    """Linear-chain tagger on sparse token features, trained online by
    proximal steps (Alg. 1 on chains).

    Each round scores every (position, label) part with the hashed template
    weights and every label bigram with the transition weights, takes a
    subgradient step on the loss, then one prox step per regulariser (the
    group-norm ones act on the template norms), then (if ``radius`` is set)
    projects onto ``||w|| <= radius``. Labels may be any hashable; they are
    learned as they appear. A round costs O(non-zeros x labels + length x
    labels^2) whatever the number of features seen so far; with ``("l1",
    lam)`` or ``("sparse_group_lasso", ...)`` it also touches every weight
    written so far (the exact entry-wise prox).

    Parameters
    ----------
    loss
        ``"log"`` (the CRF: forward-backward marginals) or ``"hinge"`` (the
        structured hinge with Hamming cost 1: loss-augmented Viterbi).
    regularizer
        A ``(name, *params)`` tuple, a list of them, or ``None``; the names
        of :class:`omkl.ProximalClassifier` (``("squared_l21", lam)`` is MKL
        over templates).
    schedule, eta0, sigma, radius, average, fit_intercept
        As in :class:`omkl.ProximalClassifier` (``fit_intercept``: a bias
        per label at every position).
    groups
        Explicit ``{key: template}`` assignments (other keys are templates
        of their own).
    n_buckets
        Size of each template's hash table.
    **kwargs
        Deprecated names (``learning_rate``, ``averaged``).

    Examples
    --------
    >>> from omkl.tagging import TextTagger
    >>> tagger = TextTagger(loss="hinge", average=True)
    >>> for _ in range(10):
    ...     tagger.learn_one([{"w": "I"}, {"w": "run"}], ["PRON", "VERB"])
    ...     tagger.learn_one([{"w": "we"}, {"w": "sing"}], ["PRON", "VERB"])
    >>> tagger.predict_one([{"w": "we"}, {"w": "run"}])
    ['PRON', 'VERB']
    >>> sorted(tagger.template_weights_)
    ['w']
    """

    _state: _omkl.SparseChainLearner | _omkl.FrozenChainTagger

    def __init__(
        self,
        loss: str = "log",
        regularizer: Regularizer | Sequence[Regularizer] | None = (("group_lasso", 1e-4),),
        schedule: str = "inv_sqrt",
        eta0: float = 1.0,
        sigma: float = 1.0,
        radius: float | None = None,
        average: bool = False,
        fit_intercept: bool = True,
        groups: Mapping[str, str] | None = None,
        n_buckets: int = 1 << 16,
        **kwargs: Any,
    ):
        new = renamed(
            TextTagger, kwargs, {"learning_rate": "schedule", "averaged": "average"}, locals()
        )
        self.loss = check_choice("loss", loss, ("log", "hinge"))
        self.regularizer = regularizer
        self.schedule = new.get("schedule", schedule)
        self.eta0 = eta0
        self.sigma = sigma
        self.radius = radius
        self.average = new.get("average", average)
        self.fit_intercept = fit_intercept
        self.groups = groups
        self.n_buckets = n_buckets
        self._state = self._make_state()
        self._labels: list[Hashable] = []
        self._label_index: dict[Hashable, int] = {}

    def _make_state(self) -> _omkl.SparseChainLearner:
        groups = _group_map(self.groups, "key", "template")
        return _omkl.SparseChainLearner(
            cast("_omkl._Loss", self.loss),
            self._learner_args(),
            groups,
            check_int("n_buckets", self.n_buckets, 1),
        )

    # --- labels ----------------------------------------------------------

    def _ids(self, ys: Sequence[Hashable]) -> tuple[list[int], list[Hashable]]:
        """Label ids of ``ys`` and the labels they add (in order)."""
        if isinstance(ys, (str, bytes)) or not isinstance(ys, Sequence):
            raise ValueError(f"invalid value for `ys`: expected a list of labels, got {ys!r}")
        new: list[Hashable] = []
        added: dict[Hashable, int] = {}
        ids = []
        n = len(self._labels)
        for y in ys:
            try:
                k = self._label_index.get(y)
            except TypeError:
                raise ValueError(f"invalid value for `ys`: unhashable label {y!r}") from None
            if k is None:
                k = added.get(y)
                if k is None:
                    k = added[y] = n + len(new)
                    new.append(y)
            ids.append(k)
        return ids, new

    @property
    @synchronized
    def labels_(self) -> list[Hashable]:
        """Labels in order of first appearance."""
        return list(self._labels)

    # --- learning --------------------------------------------------------

    @synchronized
    def learn_one(self, xs: Sequence[Token], ys: Sequence[Hashable]) -> None:
        """One round on the tokens ``xs`` (one feature dict each) labelled
        ``ys``; on error (an empty sequence, lengths that differ, a value
        that is not a str, bool or finite number, a token that is not a
        dict) nothing changes."""
        ids, new = self._ids(ys)
        self._learner().learn(xs, ids)
        self._add_labels(new)

    @synchronized
    def fit(
        self,
        X: Sequence[Sequence[Token]],
        Y: Sequence[Sequence[Hashable]],
        epochs: int = 1,
        progress: bool = False,
        shuffle: bool = False,
        seed: int = 0,
    ) -> TextTagger:
        """Learns ``epochs`` passes over the sequences ``X`` labelled ``Y``
        in order, each pass in Rust with the GIL released (a tqdm bar per
        epoch with ``progress=True``). The same model as ``learn_one`` on each
        sequence in turn (up to rounding: every template is registered
        before the first round). ``shuffle=True`` visits the sequences in a
        new order each epoch, drawn from ``seed`` (labels are numbered in the
        order of ``Y``, so that a label may enter the model before its
        first sequence is visited). Nothing is learned if the data are
        invalid.

        >>> X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
        >>> TextTagger().fit(X, [["A", "B"], ["B", "A"]], epochs=3).predict(X)
        [['A', 'B'], ['B', 'A']]
        """
        return self._fit_with(
            lambda learner, ids: learner.prepare(X, ids), len(X), Y, epochs, progress, shuffle, seed
        )

    @synchronized
    def _fit_text(
        self,
        data: _Sentences,
        Y: Sequence[Sequence[Hashable]],
        epochs: int = 1,
        shuffle: bool = False,
        seed: int = 0,
    ) -> TextTagger:
        """:meth:`fit` on the features of ``data`` computed in the core (no
        dict per token): the same model as ``fit`` on the dicts of the same
        features."""

        def prepare(learner: _omkl.SparseChainLearner, ids: list[list[int]]) -> Any:
            return learner.prepare_text(data.templates, data.words, data.columns, ids)

        return self._fit_with(prepare, len(data.words), Y, epochs, False, shuffle, seed)

    def _fit_with(
        self,
        prepare: Callable[[_omkl.SparseChainLearner, list[list[int]]], _omkl.PreparedSequences],
        n: int,
        Y: Sequence[Sequence[Hashable]],
        epochs: int,
        progress: bool,
        shuffle: bool,
        seed: int,
    ) -> TextTagger:
        """``epochs`` passes over the ``n`` sequences that ``prepare(learner,
        label ids)`` reads (see :meth:`fit`)."""
        epochs = check_int("epochs", epochs, 1)
        if n != len(Y):
            raise ValueError(
                f"invalid value for `Y`: expected one label sequence per sequence ({n}), "
                f"got {len(Y)}"
            )
        learner = self._learner()
        ids: list[list[int]] = []
        new_all: list[Hashable] = []
        n_before = len(self._labels)
        backup = learner.to_bytes()
        try:
            for ys in Y:
                i, new = self._ids(ys)
                self._add_labels(new)
                new_all.extend(new)
                ids.append(i)
            data = prepare(learner, ids)
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=epochs, desc=type(self).__name__, unit="epoch")
            try:
                rng = np.random.default_rng(seed)
                for _ in range(epochs):
                    order = rng.permutation(len(ids)).tolist() if shuffle else None
                    learner.fit_epoch(data, order)
                    if bar is not None:
                        bar.update(1)
            finally:
                if bar is not None:
                    bar.close()
        except BaseException:
            self._state = _omkl.SparseChainLearner.from_bytes(backup)
            for y in self._labels[n_before:]:
                del self._label_index[y]
            del self._labels[n_before:]
            raise
        return self

    # --- freezing --------------------------------------------------------

    @property
    def frozen(self) -> bool:
        """Whether this tagger is frozen (see :meth:`freeze`): it predicts,
        and cannot learn."""
        return isinstance(self._state, _omkl.FrozenChainTagger)

    def _learner(self) -> _omkl.SparseChainLearner:
        """The core learner; ``RuntimeError`` if the tagger is frozen."""
        if isinstance(self._state, _omkl.FrozenChainTagger):
            raise RuntimeError(
                "this TextTagger is frozen (a compact model for prediction, from freeze() or "
                "a file saved from a frozen tagger) and cannot learn; keep the tagger you froze "
                "to go on learning"
            )
        return self._state

    @synchronized
    def freeze(self) -> TextTagger:
        """A frozen copy of this tagger, for prediction: it keeps only the
        non-zero weights of the prediction model (the averaged weights with
        ``average=True``) in float32, and no training state, so that it is
        a fraction of the size in memory and on disk (``save``). It predicts
        the labels that this tagger predicts (its scores differ by the
        float32 rounding of the weights) and cannot learn (``learn_one`` and
        ``fit`` raise ``RuntimeError``); this tagger is left as it is.

        >>> X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
        >>> t = TextTagger(loss="hinge", average=True).fit(X, [["A", "B"], ["B", "A"]], epochs=3)
        >>> f = t.freeze()
        >>> f.frozen, f.predict(X) == t.predict(X)
        (True, True)
        >>> f.learn_one(X[0], ["A", "B"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        RuntimeError: this TextTagger is frozen ...
        """
        if isinstance(self._state, _omkl.FrozenChainTagger):
            return copy.copy(self)
        frozen = self._state.freeze()
        out = object.__new__(type(self))
        out.__dict__.update(
            {k: (frozen if k == "_state" else copy.deepcopy(v)) for k, v in self.__dict__.items()}
        )
        return out

    # --- prediction ------------------------------------------------------

    @synchronized
    def predict_one(self, xs: Sequence[Token]) -> list[Hashable]:
        """The Viterbi labelling of the tokens ``xs`` under the prediction
        model (``None`` for every token before any label was learned)."""
        ids = self._state.predict(xs)
        if not self._labels:
            return [None] * len(ids)
        return [self._labels[i] for i in ids]

    @synchronized
    def predict(self, X: Sequence[Sequence[Token]]) -> list[list[Hashable]]:
        """Viterbi labellings of many sequences (decoded with the GIL
        released)."""
        out = self._state.predict_many(X)
        if not self._labels:
            return [[None] * len(ids) for ids in out]
        labels = self._labels
        return [[labels[i] for i in ids] for ids in out]

    @synchronized
    def _predict_text(self, data: _Sentences) -> list[list[Hashable]]:
        """:meth:`predict` on the features of ``data`` computed in the core."""
        out = self._state.predict_many_text(data.templates, data.words, data.columns)
        if not self._labels:
            return [[None] * len(ids) for ids in out]
        labels = self._labels
        return [[labels[i] for i in ids] for ids in out]

    @synchronized
    def predict_marginals_one(self, xs: Sequence[Token]) -> list[dict[Hashable, float]]:
        """``P(y_i = label)`` for every token, from forward-backward on the
        prediction model's scores (the CRF's marginals; with the hinge loss a
        calibration-free mapping of the scores). Each dict sums to 1.

        >>> t = TextTagger().fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]], epochs=5)
        >>> mu = t.predict_marginals_one([{"w": "a"}])
        >>> sorted(mu[0]), round(sum(mu[0].values()), 12), mu[0]["A"] > 0.5
        (['A', 'B'], 1.0, True)
        """
        mu = self._state.marginals(xs)
        if not self._labels:
            return [{} for _ in range(mu.shape[0])]
        return [dict(zip(self._labels, map(float, row), strict=False)) for row in mu]

    def _second_choices(
        self, xs: Sequence[Token], ys: Sequence[Hashable]
    ) -> list[tuple[Hashable, float]]:
        """For each token, the label other than ``ys[i]`` with the largest
        marginal (:meth:`predict_marginals_one`) and that marginal; ``(ys[i],
        0.0)`` where there is no other label."""
        return self._second_of(self._state.marginals(xs), ys)

    @synchronized
    def _second_choices_text(
        self, data: _Sentences, tags: Sequence[Sequence[Hashable]]
    ) -> list[list[tuple[Hashable, float]]]:
        """:meth:`_second_choices` of every sentence of ``data`` (labelled
        ``tags``), on the features computed in the core."""
        mus = self._state.marginals_many_text(data.templates, data.words, data.columns)
        return [self._second_of(mu, ys) for mu, ys in zip(mus, tags, strict=True)]

    def _second_of(
        self, mu: npt.NDArray[np.float64], ys: Sequence[Hashable]
    ) -> list[tuple[Hashable, float]]:
        """The second choices of a sentence labelled ``ys`` from its
        marginals ``mu`` (a new array, overwritten here)."""
        if not self._labels or mu.shape[1] < 2:
            return [(y, 0.0) for y in ys]
        rows = np.arange(mu.shape[0])
        mu[rows, [self._label_index[y] for y in ys]] = -1.0
        best = mu.argmax(axis=1)
        return [(self._labels[k], float(p)) for k, p in zip(best, mu[rows, best], strict=True)]

    # --- inspection ------------------------------------------------------

    @property
    @synchronized
    def template_weights_(self) -> dict[str, float]:
        """``{template: beta_g}``: each template's share ``||w_g|| / sum_h
        ||w_h||`` of the templates' norms (MKL's kernel weights under the
        squared ℓ2,1 penalty); 0 for a template switched off."""
        norms = {g: n for g, n in self._state.group_norms() if g != _TRANSITIONS}
        total = sum(norms.values())
        return {g: (n / total if total > 0 else 0.0) for g, n in norms.items()}

    @property
    @synchronized
    def selected_templates_(self) -> list[str]:
        """Templates with a non-zero weight norm, in order of first
        appearance."""
        return [g for g, n in self._state.group_norms() if g != _TRANSITIONS and n > 0.0]

    @property
    @synchronized
    def transitions_(self) -> dict[str, npt.NDArray[np.float64]]:
        """Transition weights of the prediction model, indexed like
        ``labels_``: ``"bigram"`` (``[previous, next]``), ``"start"`` and
        ``"stop"``."""
        t = self._state.transitions()[:, : len(self._labels)]
        n = len(self._labels)
        return {"bigram": t[:n], "start": t[-2], "stop": t[-1]}

    # --- persistence -----------------------------------------------------

    _STATE_TYPE = _omkl.SparseChainLearner

    @classmethod
    def _state_from_bytes(cls, data: bytes) -> Any:
        """The learner, or the frozen tagger, of ``data`` (told apart by
        the format their bytes name)."""
        if _sealed_format(data) == _FROZEN_FORMAT:
            return _omkl.FrozenChainTagger.from_bytes(data)
        return _omkl.SparseChainLearner.from_bytes(data)

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        return {"labels": list(self._labels)}, [self._state.to_bytes()]

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        self._state = self._state_from_bytes(sections[0])
        labels = state["labels"]
        if not isinstance(labels, list) or len(labels) > max(self._state.n_labels, 1):
            raise ValueError("the saved labels do not match the learner's labels")
        self._labels = labels
        self._label_index = index_of(labels, "labels")

    @classmethod
    def _unit_test_params(cls) -> Any:
        yield {}
        yield {"loss": "hinge", "regularizer": [("squared_l21", 1e-3)], "average": True}


def _shape(word: str) -> str:
    return "".join(
        "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in word
    )


def _short(shape: str) -> str:
    out: list[str] = []
    for c in shape:
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def token_features(words: Sequence[str]) -> list[dict[str, str | bool]]:
    """One feature dict per word of a sentence, for :class:`TextTagger`
    (or any CRF taking CRFsuite-style dicts). Each key is its own template:

    * ``w`` the word, ``lower`` its lower case;
    * ``p1``..``p4`` and ``s1``..``s4`` its prefixes and suffixes (of
      lengths 1 to 4, the whole word when shorter);
    * ``shape`` (``Xxxx``, ``dd-dd``: upper, lower, digit, other kept) and
      ``short_shape`` (runs collapsed: ``Xx``, ``d-d``);
    * ``has_digit``, ``all_digits``, ``has_hyphen``, ``is_title``,
      ``is_upper``, ``is_lower`` (booleans);
    * ``w-1``, ``w-2``, ``w+1``, ``w+2`` the neighbouring words lowercased
      (``<s>`` before the start and ``</s>`` after the end) and ``s3-1``,
      ``s3-2``, ``s3+1``, ``s3+2`` their 3-letter suffixes, and the
      lowercased bigrams ``w-1|w`` and ``w|w+1``;
    * ``BOS`` on the first word, ``EOS`` on the last (``True``).

    :class:`~omkl.MorphologyTagger` computes the same features in the core,
    from the words, without building these dicts.

    >>> f = token_features(["The", "E-2", "runs"])
    >>> f[0]["lower"], f[0]["s2"], f[0]["shape"], f[0]["BOS"], f[0]["w-1"]
    ('the', 'he', 'Xxx', True, '<s>')
    >>> f[1]["shape"], f[1]["short_shape"], f[1]["has_hyphen"], f[1]["has_digit"]
    ('X-d', 'X-d', True, True)
    >>> f[2]["w-1"], f[2]["s3-2"], f[2]["w+1"], f[2]["EOS"]
    ('e-2', 'the', '</s>', True)
    """
    if isinstance(words, str) or not isinstance(words, Sequence):
        raise ValueError(f"invalid value for `words`: expected a list of str, got {words!r}")
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise ValueError(f"invalid value for `words[{i}]`: expected a str, got {w!r}")
    n = len(words)
    lowers = [w.lower() for w in words]

    def near(i: int) -> str:
        if i < 0:
            return "<s>"
        return lowers[i] if i < n else "</s>"

    out: list[dict[str, str | bool]] = []
    for i, w in enumerate(words):
        shape = _shape(w)
        f: dict[str, str | bool] = {
            "w": w,
            "lower": lowers[i],
            "p1": w[:1],
            "p2": w[:2],
            "p3": w[:3],
            "p4": w[:4],
            "s1": w[-1:],
            "s2": w[-2:],
            "s3": w[-3:],
            "s4": w[-4:],
            "shape": shape,
            "short_shape": _short(shape),
            "has_digit": any(c.isdigit() for c in w),
            "all_digits": w.isdigit(),
            "has_hyphen": "-" in w,
            "is_title": w.istitle(),
            "is_upper": w.isupper(),
            "is_lower": w.islower(),
        }
        for d in (-2, -1, 1, 2):
            o = near(i + d)
            f[f"w{d:+d}"] = o
            f[f"s3{d:+d}"] = o[-3:]
        f["w-1|w"] = f"{near(i - 1)}|{lowers[i]}"
        f["w|w+1"] = f"{lowers[i]}|{near(i + 1)}"
        if i == 0:
            f["BOS"] = True
        if i == n - 1:
            f["EOS"] = True
        out.append(f)
    return out
