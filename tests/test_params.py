"""One vocabulary of hyperparameters across the estimators, its deprecated
aliases, and defaults that agree between the estimators and the binding."""

from __future__ import annotations

import inspect
import pickle
import re
import warnings

import numpy as np
import pytest

import omkl
from omkl import _omkl
from omkl._params import ALIASES_REMOVED_IN
from omkl.parsing import DependencyParser

SENT = [
    {"form": f, "lemma": f.lower(), "upos": u, "xpos": u, "feats": "_"}
    for f, u in [("The", "DET"), ("dog", "NOUN"), ("barks", "VERB")]
]
HEADS = [2, 3, 0]


def _stream(n=60, seed=0):
    rng = np.random.default_rng(seed)
    xs = [{f"g{i % 2}_{i}": float(v) for i, v in enumerate(rng.normal(size=4))} for _ in range(n)]
    ys = ["a" if x["g0_0"] + x["g1_1"] > 0 else "b" for x in xs]
    return xs, ys


def _no_warning(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return make()


@pytest.mark.parametrize(
    ("cls", "old", "new", "value"),
    [
        (omkl.ProximalClassifier, "learning_rate", "schedule", "constant"),
        (omkl.ProximalClassifier, "averaged", "average", True),
        (omkl.ProximalRegressor, "learning_rate", "schedule", "inv_linear"),
        (omkl.ProximalRegressor, "averaged", "average", True),
        (DependencyParser, "eta", "eta0", 0.01),
    ],
)
def test_deprecated_name_maps_to_the_new_one_with_a_warning(cls, old, new, value):
    message = (
        rf"^{cls.__name__}: `{old}` is deprecated, use `{new}` instead; "
        rf"`{old}` is removed in omkl {re.escape(ALIASES_REMOVED_IN)}$"
    )
    with pytest.warns(DeprecationWarning, match=message) as caught:
        model = cls(**{old: value})
    assert len(caught) == 1 and caught[0].filename == __file__
    assert getattr(model, new) == value
    assert not hasattr(model, old)
    # the model is the one built with the new name
    ref = _no_warning(lambda: cls(**{new: value}))
    if cls is DependencyParser:
        for m in (model, ref):
            m.learn_one(SENT, HEADS)
        assert pickle.dumps(model._core.__getstate__()) == pickle.dumps(ref._core.__getstate__())
        return
    xs, ys = _stream()
    for m in (model, ref):
        for x, y in zip(xs, ys, strict=True):
            m.learn_one(x, y if cls is omkl.ProximalClassifier else float(y == "a"))
    assert model._state.to_bytes() == ref._state.to_bytes()


@pytest.mark.parametrize(("old", "new"), [("l2", "l2_squared"), ("mkl", "squared_l21")])
def test_parser_regularizer_takes_the_shared_names_and_the_old_ones(old, new):
    with pytest.warns(DeprecationWarning, match=f"regularizer={new!r}"):
        model = DependencyParser(regularizer=old, templates=list(range(20)))
    assert model.regularizer == new
    ref = _no_warning(lambda: DependencyParser(regularizer=new, templates=list(range(20))))
    for m in (model, ref):
        for _ in range(3):
            m.learn_one(SENT, HEADS)
    assert model._core.__getstate__() == ref._core.__getstate__()
    assert model.template_weights_ == ref.template_weights_


def test_deprecated_name_with_its_new_name_is_refused():
    with pytest.raises(TypeError, match="`schedule` and its deprecated alias `learning_rate`"):
        omkl.ProximalClassifier(schedule="constant", learning_rate="inv_sqrt")
    with pytest.raises(TypeError, match="`eta0` and its deprecated alias `eta`"):
        DependencyParser(eta0=0.5, eta=0.1)


@pytest.mark.parametrize("cls", [omkl.ProximalClassifier, omkl.ProximalRegressor, DependencyParser])
def test_unknown_keyword_is_a_type_error(cls):
    with pytest.raises(TypeError, match="unexpected keyword argument 'learnig_rate'"):
        cls(learnig_rate="constant")


def test_clone_and_params_use_the_new_names_without_warning():
    with pytest.warns(DeprecationWarning):
        model = omkl.ProximalClassifier(learning_rate="constant", averaged=True, eta0=0.5)
    params = model._get_params()
    assert params["schedule"] == "constant" and params["average"] is True
    assert "learning_rate" not in params and "averaged" not in params
    assert "kwargs" not in params
    clone = _no_warning(model.clone)
    assert clone.schedule == "constant" and clone.average is True and clone.eta0 == 0.5
    # save and load go through the constructor with the new names, too
    assert _no_warning(lambda: pickle.loads(pickle.dumps(model))).average is True


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (omkl.ProximalClassifier, {"schedule": "fast"}),
        (omkl.ProximalRegressor, {"schedule": "fast"}),
        (omkl.MKLClassifier, {"schedule": "fast"}),
        (omkl.SequenceTagger, {"schedule": "fast"}),
    ],
)
def test_bad_schedule_names_the_schedule(cls, kwargs):
    with pytest.raises(ValueError, match="`schedule`.*'constant', 'inv_sqrt' or 'inv_linear'"):
        cls(**kwargs)


def test_bad_values_name_the_argument_in_every_estimator():
    cases = [
        (omkl.MKLClassifier, {"loss": "squared"}, "loss"),
        (omkl.SequenceTagger, {"loss": "squared"}, "loss"),
        (omkl.MKLClassifier, {"lam": -1.0}, "lam"),
        (omkl.MKLClassifier, {"eta0": 0.0}, "eta0"),
        (omkl.MKLClassifier, {"regularizer": "nope"}, "regulari"),
        (DependencyParser, {"regularizer": "l1"}, "regularizer"),
        (DependencyParser, {"eta0": float("nan")}, "eta0"),
        (DependencyParser, {"eta0": "fast"}, "eta0"),
    ]
    for cls, kwargs, word in cases:
        with pytest.raises(ValueError, match=word):
            cls(**kwargs)


def test_precomputed_models_check_their_hyperparameters_at_construction():
    gram = omkl.PrecomputedGram(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="loss"):
        omkl.SequenceTagger(kernels=[gram], loss="squared")
    with pytest.raises(ValueError, match="lam"):
        omkl.SequenceTagger(kernels=[gram], lam=-1.0)


def _defaults(f) -> dict:
    return {
        n: p.default
        for n, p in inspect.signature(f).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


@pytest.mark.parametrize("cls", [omkl.MKLClassifier, omkl.SequenceTagger])
def test_mkl_defaults_equal_the_binding_defaults(cls):
    py = _defaults(cls.__init__)
    # both StreamMkl constructors read their keyword options in one place
    core = _omkl.StreamMkl.option_defaults()
    shared = set(py) & set(core)
    assert {"lam", "eta0", "schedule", "regularizer", "loss", "average", "forgetting"} <= shared
    if cls is omkl.MKLClassifier:
        # the classifier's own default budget (the binding's is no budget)
        assert py.pop("max_support") == omkl.mkl.DEFAULT_MAX_SUPPORT == 500
        assert core["max_support"] is None
        shared.discard("max_support")
        # its drift-following step size (the binding's is eta0 / sqrt(t))
        assert (py.pop("eta0"), py.pop("schedule")) == (0.1, "constant")
        assert (core["eta0"], core["schedule"]) == (1.0, "inv_sqrt")
        shared -= {"eta0", "schedule"}
    assert {k: py[k] for k in shared} == {k: core[k] for k in shared}


def test_parser_defaults_equal_the_binding_defaults():
    py = _defaults(DependencyParser.__init__)
    core = _defaults(_omkl.ArcParserCore)
    assert core["eta"] == py["eta0"]
    assert core["lam"] == py["lam"]
    # "auto" is the core's decoder until the first fit measures the trees
    assert py["decoder"] == "auto"
    assert core["decoder"] == DependencyParser().decoder_ == "chu-liu-edmonds"
    assert core["prune_k"] == py["prune_k"] and core["templates"] == py["templates"]
    assert {"l2": "l2_squared", "mkl": "squared_l21"}[core["regularizer"]] == py["regularizer"]
    sizes = _defaults(_omkl.ArcParserCore.fit_table_sizes)
    assert sizes["slots_per_feature"] == py["slots_per_feature"]
    assert sizes["max_bits"] == py["max_table_bits"]


def test_shared_concepts_have_one_name_in_every_estimator():
    estimators = [
        omkl.ProximalClassifier,
        omkl.ProximalRegressor,
        omkl.MKLClassifier,
        omkl.SequenceTagger,
        DependencyParser,
    ]
    for cls in estimators:
        names = set(inspect.signature(cls.__init__).parameters)
        assert {"regularizer", "eta0"} <= names, cls
        assert not names & {"learning_rate", "averaged", "eta"}, cls
    for cls in estimators[:4]:
        names = set(inspect.signature(cls.__init__).parameters)
        assert {"schedule", "average"} <= names, cls


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: omkl.MKLClassifier(max_support=True), "max_support"),
        (lambda: omkl.MKLClassifier(history_every=-1), "history_every"),
        (lambda: omkl.MKLClassifier(kernels=[None]), "kernels"),
        (lambda: omkl.ProximalClassifier(n_buckets=2.5), "n_buckets"),
        (lambda: omkl.ProximalClassifier(n_buckets=True), "n_buckets"),
        (lambda: omkl.ProximalClassifier(groups=[1, 2]), "groups"),
        (lambda: omkl.MKLClassifier().learn_one({"a": "1.5"}, 1), r"x\['a'\]"),
        (lambda: omkl.ProximalRegressor().learn_one({"a": 1.0}, "2.5"), "`y`"),
    ],
)
def test_loose_values_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_boolean_features_count_as_zero_or_one():
    m = omkl.MKLClassifier()
    m.learn_one({"a": True, "b": 0.5}, "p")
    assert m.n_rounds_ == 1
