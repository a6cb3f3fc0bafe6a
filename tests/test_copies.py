"""Copies of an estimator are independent models, and a refused call leaves a
model as it was.

Every estimator with ``save``, copied by ``copy.copy``, ``copy.deepcopy``,
river's ``clone(include_attributes=True)`` (where it has one) or a pickle
round trip, gives a copy that learns a new label and a new feature while the
original's saved bytes and predictions stay the same, and the original goes
on learning (labels of its own too) without the copy's label. A call that
fails with ``ValueError`` or ``TypeError`` leaves a model, fresh or trained,
with the same pickle."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from test_persistence import (
    ESTIMATORS,
    WORDS,
    _sentence,
    make_model,
    predictions,
    tokenizer_corpus,
)

import omkl
from omkl._persist import constructor_params

#: The label that only a copy learns.
NEW = "copy-only"
#: A label that the original learns after its copy did.
OWN = "original-only"


def _tree(words: list[tuple[str, str, str]], heads: list[int]) -> list[dict[str, Any]]:
    """A sentence of ``words`` (form, UPOS, relation) with gold ``heads``."""
    sent = _sentence(words)
    for tok, head in zip(sent, heads, strict=True):
        tok["head"] = head
    return sent


def _zebra(label: str | None) -> list[dict[str, Any]]:
    """A sentence with a word no model here has met ("zebra"), whose UPOS
    and relation are ``label`` (known ones for ``None``)."""
    words = [("The", "DET", "det"), ("zebra", label or "NOUN", label or "nsubj")]
    return _tree([*words, ("barks", "VERB", "root")], [2, 3, 0])


def teach(model: Any, label: str | None) -> None:
    """One more round of learning of ``model``, its own way (``learn_one``,
    and ``fit`` where that continues or redoes the training), on an example
    labelled ``label`` (a label the model has, for ``None``) with a feature
    it has not met: a new feature name or word (the MKLClassifier of
    ``make_model`` learns arrays, whose columns are fixed; the
    ProximalRegressor learns a number, not a label)."""
    if isinstance(model, omkl.ProximalClassifier):
        model.learn_one({"new_f": 1.0, "w_1": 1.0}, label or "a")
    elif isinstance(model, omkl.ProximalRegressor):
        model.learn_one({"new_f": 1.0, "x": 2.0}, 9.0)
    elif isinstance(model, omkl.MKLClassifier):
        model.learn_one(np.array([0.3, -1.0, 2.0]), label or 0)
    elif isinstance(model, omkl.SequenceTagger):
        model.learn_one([{"a": 0.5, "new": 1.0}, {"a": -0.5, ("t", 1): 1.0}], [label or "x", "y"])
    elif isinstance(model, omkl.TextTagger):
        model.learn_one([{"w": "new", "x": 0.2}, {"w": "b"}], [label or "x", "y"])
    elif isinstance(model, omkl.DependencyParser):
        sent = _zebra(label)
        model.learn_one(sent, [t["head"] for t in sent])
        model.fit([sent], epochs=1)
    elif isinstance(model, omkl.MorphologyTagger):
        model.fit([_zebra(label), _sentence(WORDS)] * 2, epochs=1)
    elif isinstance(model, omkl.TextParser):
        model.fit([_zebra(label), _tree(WORDS, [2, 3, 0])] * 2)
    elif isinstance(model, omkl.Tokenizer):
        model.fit(tokenizer_corpus(label or "zebras"), epochs=1)
    else:
        raise AssertionError(type(model).__name__)


def labels_of(model: Any) -> list[Hashable]:
    """The labels ``model`` has learned (UPOS tags and relations for the
    morphology tagger and the parsers)."""
    if isinstance(model, (omkl.ProximalClassifier, omkl.MKLClassifier)):
        return list(model.classes_)
    if isinstance(model, (omkl.SequenceTagger, omkl.TextTagger)):
        return list(model.labels_)
    if isinstance(model, omkl.DependencyParser):
        return list(model._labeler.labels())
    if isinstance(model, omkl.MorphologyTagger):
        return list(model.upos_.labels_)
    if isinstance(model, omkl.TextParser):
        return labels_of(model.tagger) + labels_of(model.parser)
    if isinstance(model, omkl.Tokenizer):
        return sorted(model._mwt)  # the multiword tokens it knows
    return []


def _pickled(model: Any) -> Any:
    return pickle.loads(pickle.dumps(model))


def _cloned(model: Any) -> Any:
    return model.clone(include_attributes=True)


COPIES: dict[str, Callable[[Any], Any]] = {
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "clone": _cloned,
    "pickle": _pickled,
}

CASES = [
    (name, how)
    for name in ESTIMATORS
    for how in COPIES
    if how != "clone" or hasattr(getattr(omkl, name), "clone")
]


def saved(model: Any, tmp_path: Any) -> bytes:
    path = tmp_path / "model.omkl"
    model.save(path)
    return bytes(path.read_bytes())


@pytest.mark.parametrize(("name", "how"), CASES)
def test_a_copy_learns_without_changing_the_original(name, how, tmp_path):
    m = make_model(name)
    before, predicted = saved(m, tmp_path), predictions(m)
    c = COPIES[how](m)
    assert saved(c, tmp_path) == before
    teach(c, NEW)
    assert saved(c, tmp_path) != before
    assert saved(m, tmp_path) == before
    assert predictions(m) == predicted
    labelled = name != "ProximalRegressor"
    assert (NEW in labels_of(c)) == labelled
    # the original learns on, a label of its own too, and never the copy's
    teach(m, None)
    teach(m, OWN)
    assert (OWN in labels_of(m)) == labelled
    assert NEW not in labels_of(m)
    assert OWN not in labels_of(c)


def _free(lock: Any) -> bool:
    """Whether ``lock`` is free (taken and given back at once)."""
    if not lock.acquire(blocking=False):
        return False
    lock.release()
    return True


@pytest.mark.parametrize("how", COPIES)
def test_a_copy_has_a_lock_of_its_own(how):
    m = make_model("ProximalClassifier")
    with m._lock:
        c = COPIES[how](m)
        # another thread finds the copy's lock free while the original's is held
        with ThreadPoolExecutor(1) as pool:
            assert not pool.submit(_free, m._lock).result()
            assert pool.submit(_free, c._lock).result()


# --- refused calls ---------------------------------------------------------------


def fresh_model(name: str) -> Any:
    """A model that has learned nothing, with the parameters of
    ``make_model(name)``."""
    m = make_model(name)
    params = constructor_params(m)
    if isinstance(m, omkl.TextParser):
        params.update(
            tagger=fresh_model("MorphologyTagger"), parser=fresh_model("DependencyParser")
        )
    return type(m)(**params)


NAN = float("nan")
#: Overflows float32, the MKL models' input type: the core refuses it.
HUGE = 1e300

#: Calls that every model of each estimator, fresh or trained, refuses.
REFUSED: dict[str, list[Callable[[Any], object]]] = {
    "ProximalClassifier": [
        lambda m: m.learn_one({"a_x": NAN, "new_f": 1.0}, NEW),
        lambda m: m.learn_one({"a_x": "text"}, NEW),
    ],
    "ProximalRegressor": [
        lambda m: m.learn_one({"x": NAN, "new_f": 1.0}, 1.0),
        lambda m: m.learn_one({"x": 1.0}, NAN),
        lambda m: m.learn_one({"x": 1.0}, "y"),
    ],
    "MKLClassifier": [
        lambda m: m.learn_one({"a": HUGE}, NEW),
        lambda m: m.learn_one(np.array([HUGE, 0.0, 0.0]), NEW),
        lambda m: m.learn_one(np.array([1.0, NAN, 0.0]), 1),
        lambda m: m.fit([{"a": 1.0}, {"b": HUGE}], [0, NEW]),
    ],
    "SequenceTagger": [
        lambda m: m.learn_one([{"a": HUGE}], [NEW]),
        lambda m: m.learn_one([{"a": NAN, "new": 1.0}], [NEW]),
        lambda m: m.learn_one([{"a": 1.0}], ["x", "y"]),
        lambda m: m.fit([[{"a": 1.0}], [{"a": HUGE}]], [["x"], [NEW]]),
    ],
    "TextTagger": [
        lambda m: m.learn_one([{"w": "new", "x": NAN}], [NEW]),
        lambda m: m.learn_one([{"w": "a"}], ["x", "y"]),
        lambda m: m.learn_one([], []),
        lambda m: m.fit([[{"w": "a"}], [{"w": "new", "x": NAN}]], [["x"], [NEW]]),
    ],
    "DependencyParser": [
        lambda m: m.learn_one(_zebra(NEW), [2, 3, 2]),
        lambda m: m.learn_one(_zebra(NEW), [2, 0]),
        lambda m: m.learn_one([], []),
        lambda m: m.fit([_zebra(NEW), _sentence(WORDS)]),  # no gold heads in the second
        lambda m: m.fit([_zebra(NEW), _tree(WORDS, [2, 3, 2])]),  # a cycle in the second
    ],
    "MorphologyTagger": [
        lambda m: m.fit([_zebra(NEW), [{"form": "new"}]]),
        lambda m: m.fit([]),
    ],
    "TextParser": [
        lambda m: m.fit([]),
        lambda m: m.fit([_zebra(NEW), _sentence(WORDS)] * 2),  # no gold heads
    ],
    "Tokenizer": [
        lambda m: m.fit(42),
        lambda m: m.fit(_without_text(tokenizer_corpus(NEW))),
    ],
}


def _without_text(path: str) -> str:
    """The training file ``path`` without its last ``# text`` comment."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith("# text"))
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines[:last] + lines[last + 1 :])
    return path


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("trained", [False, True], ids=["fresh", "trained"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_refused_call_leaves_the_model_byte_identical(name, trained):
    m = make_model(name) if trained else fresh_model(name)
    for i, call in enumerate(REFUSED[name]):
        before = pickle.dumps(m)
        with pytest.raises((ValueError, TypeError)):
            call(m)
        assert pickle.dumps(m) == before, f"call {i}"
    assert NEW not in labels_of(m)
    teach(m, OWN)  # and it learns on
    assert (OWN in labels_of(m)) == (name != "ProximalRegressor")


@pytest.mark.parametrize("trained", [False, True], ids=["fresh", "trained"])
def test_a_refused_call_keeps_the_landmarks_of_nystroem_groups(trained):
    """Nystroem groups take landmarks from the inputs before the labels are
    checked: a refused call puts them back, and the core's maps with them."""
    m = omkl.MKLClassifier(kernels=[omkl.NystroemFeatures(8)], labels=["a", "b"])
    X = np.random.default_rng(0).normal(size=(4, 3))
    if trained:
        m.fit(X[:2], ["a", "b"])
    before = pickle.dumps(m)
    predicted = m.predict_proba_one(X[0]) if trained else None
    with pytest.raises(ValueError, match="unseen label"):
        m.fit(X[2:], ["a", NEW])  # two more landmarks: four in use
    with pytest.raises(ValueError, match="unseen label"):
        m.learn_one(X[3], NEW)
    assert pickle.dumps(m) == before
    if trained:
        assert m.predict_proba_one(X[0]) == predicted
