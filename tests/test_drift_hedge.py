"""The drift defaults of MKLClassifier: the averaged iterate restarted on a
detector's alarm (against the mean of the iterates computed in the test),
the linear group's own step size and the step size of named groups
(against a run with rate 1), the hedging
linear model (against a separate linear model and MKL model run side by
side, with the weighted errors computed in the test), and ``fit`` with the
detector and the hedge (against ``learn_one`` in the same order)."""

from __future__ import annotations

import copy
import math
import pickle
import re

import numpy as np
import pytest
from river import base, drift

from omkl import MKLClassifier, NystroemFeatures, RandomFourierFeatures, SequenceTagger
from omkl.mkl import HEDGE_DECAY


class SpyDetector(base.DriftDetector):
    """Reports a drift every ``every`` updates."""

    def __init__(self, every: int = 7):
        super().__init__()
        self.every = every
        self.n = 0

    def update(self, x):
        self.n += 1
        self._drift_detected = self.n % self.every == 0


def learn_in_fit_order(model, X, y, epochs=1, shuffle=False):
    """``learn_one`` on each example in the order that ``fit`` visits them
    (with ``shuffle``, a permutation drawn from the model's seed per epoch),
    with the record of ``beta`` that ``fit`` makes after each epoch; the
    number of rounds after which the hedge predicted."""
    rng = np.random.default_rng(model.seed)
    hedged = 0
    for _ in range(epochs):
        for i in rng.permutation(len(X)) if shuffle else range(len(X)):
            model.learn_one(X[i], y[i])
            hedged += model.hedge_active_
        model._state.record_beta()
    return hedged


def assert_same_model(a, b, X):
    """``a`` and ``b`` hold the same MKL model, hedge, errors, detectors and
    drift count, and predict alike."""
    assert a._state.to_bytes() == b._state.to_bytes()
    assert (a._hedge is None) == (b._hedge is None)
    if a._hedge is not None:
        assert a._hedge.to_bytes() == b._hedge.to_bytes()
    assert a._hedge_errors == b._hedge_errors
    assert a.n_drifts_ == b.n_drifts_
    for name in ("_detector", "_hedge_detector"):
        assert pickle.dumps(getattr(a, name)) == pickle.dumps(getattr(b, name))
    assert a.predict(X) == b.predict(X)
    assert [a.predict_proba_one(x) for x in X[:50]] == [b.predict_proba_one(x) for x in X[:50]]


def stream(n, seed=0, switch_at=None, noise=0.1):
    """A noisy linear concept, then (from ``switch_at``) the XOR of the
    signs, which no linear model learns."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal()), "c": float(rng.normal())}
        if switch_at is not None and i >= switch_at:
            y = bool(x["a"] * x["b"] > 0)
        else:
            y = bool(x["a"] + 0.5 * x["b"] > 0.3)
            if rng.random() < noise:
                y = not y
        yield x, y


def test_average_restarts_on_each_alarm():
    every = 13
    model = MKLClassifier(
        kernels=["linear"],
        schedule="inv_sqrt",
        eta0=0.5,
        average=True,
        drift_detector=SpyDetector(every),
        linear_hedge=None,
        labels=[False, True],
    )
    iterates = []
    for i, (x, y) in enumerate(stream(60, noise=0.3)):
        model.learn_one(x, y)
        if (i + 1) % every == 0:
            iterates = []  # the alarm of this round restarts the average
        else:
            iterates.append(model._state.explicit_coef(0, False))
        if iterates:
            expected = np.mean(iterates, axis=0)
            np.testing.assert_allclose(model.coef_["linear"], expected, rtol=1e-9, atol=1e-12)
        else:
            # no round since the alarm: the current iterate
            np.testing.assert_array_equal(
                model.coef_["linear"], model._state.explicit_coef(0, False)
            )
    assert model.n_drifts_ == 60 // every


def test_without_a_detector_the_average_is_over_the_whole_stream():
    model = MKLClassifier(
        kernels=["linear"],
        average=True,
        drift_detector=None,
        linear_hedge=None,
        labels=[False, True],
    )
    iterates = []
    for x, y in stream(40, noise=0.3):
        model.learn_one(x, y)
        iterates.append(model._state.explicit_coef(0, False))
    np.testing.assert_allclose(model.coef_["linear"], np.mean(iterates, axis=0), rtol=1e-9)


def _first_step(**kwargs):
    """``coef_`` after the first step (taken from zero scores) of a linear
    and Gaussian model without λ, hedge or detector, with ``kwargs``."""
    model = MKLClassifier(
        kernels=["linear", "gaussian"], lam=0.0, linear_hedge=None, drift_detector=None, **kwargs
    )
    model.learn_one({"a": 1.0, "b": -2.0}, "x")
    model.learn_one({"a": 0.5, "b": 1.0}, "y")  # the first step: from zero scores
    return model.coef_


def test_linear_rate_scales_the_first_step_of_the_linear_group_only():
    coefs = {rate: _first_step(linear_rate=rate) for rate in (1.0, 0.25)}
    np.testing.assert_allclose(coefs[0.25]["linear"], 0.25 * coefs[1.0]["linear"], rtol=1e-12)
    np.testing.assert_allclose(coefs[0.25]["gaussian"], coefs[1.0]["gaussian"], rtol=1e-12)
    assert np.abs(coefs[1.0]["linear"]).max() > 0


def test_rates_scale_the_first_step_of_the_named_groups_only():
    plain, gauss, lin = (
        _first_step(linear_rate=1.0, rates=rates)
        for rates in (None, {"gaussian": 0.25}, {"linear": 0.25})
    )
    np.testing.assert_allclose(gauss["gaussian"], 0.25 * plain["gaussian"], rtol=1e-12)
    np.testing.assert_allclose(gauss["linear"], plain["linear"], rtol=1e-12)
    np.testing.assert_allclose(lin["linear"], 0.25 * plain["linear"], rtol=1e-12)
    np.testing.assert_allclose(lin["gaussian"], plain["gaussian"], rtol=1e-12)
    assert np.abs(plain["gaussian"]).max() > 0 and np.abs(plain["linear"]).max() > 0


def test_rates_name_the_linear_group_as_linear_rate_does():
    data = list(stream(400, switch_at=200))
    preds = []
    for kw in ({"linear_rate": 0.2}, {"linear_rate": 1.0, "rates": {"linear": 0.2}}):
        model = MKLClassifier(kernels=["linear", "gaussian"], max_support=50, **kw)
        out = []
        for x, y in data:
            out.append(model.predict_one(x))
            model.learn_one(x, y)
        preds.append((out, model.coef_["linear"]))
    assert preds[0][0] == preds[1][0]
    np.testing.assert_array_equal(preds[0][1], preds[1][1])
    # a saved model keeps them
    again = pickle.loads(pickle.dumps(model))
    assert again.rates == {"linear": 0.2} and again._group_rates == [1.0, 0.2]


@pytest.mark.parametrize(
    "groups",
    [
        lambda: dict(kernels=["linear", "gaussian"], max_support=50),
        # feature maps the core computes from the bare input row
        lambda: dict(kernels=["linear", RandomFourierFeatures(30, seed=1)], hash_features=8),
        lambda: dict(kernels=["linear", NystroemFeatures(12)], hash_features=8),
    ],
    ids=["gaussian", "fourier", "nystroem"],
)
def test_predictions_come_from_the_model_with_the_smaller_weighted_error(groups):
    def kw():
        return dict(drift_detector="ADWIN", labels=[False, True], **groups())

    hashing = {k: v for k, v in groups().items() if k == "hash_features"}
    hedged = MKLClassifier(linear_hedge=0.2, **kw())
    # the two models side by side: the MKL model alone, and the linear model
    # the hedge is (the primal linear group with an intercept, eta0 / sqrt(t))
    mkl = MKLClassifier(linear_hedge=None, **kw())
    linear = MKLClassifier(
        kernels=["linear"],
        schedule="inv_sqrt",
        eta0=0.2,
        linear_rate=1.0,
        linear_hedge=None,
        drift_detector="ADWIN",
        labels=[False, True],
        **hashing,
    )
    data = list(stream(3000, switch_at=1500))
    # a first round for all three, so that each predicts before it learns
    for m in (hedged, mkl, linear):
        m.learn_one(*data[0])
    errors = list(hedged._hedge_errors)
    chosen = set()
    for x, y in data[1:]:
        preds = (mkl.predict_one(x), linear.predict_one(x))
        use = 1 if errors[1] < errors[0] else 0
        chosen.add(use)
        assert hedged.predict_one(x) == preds[use]
        proba = hedged.predict_proba_one(x)
        ref = (mkl, linear)[use].predict_proba_one(x)
        assert proba.keys() == ref.keys()
        assert all(math.isclose(proba[k], ref[k], rel_tol=1e-12) for k in ref)
        for m in (hedged, mkl, linear):
            m.learn_one(x, y)
        errors = [
            HEDGE_DECAY * e + (1 - HEDGE_DECAY) * (p != y)
            for e, p in zip(errors, preds, strict=True)
        ]
        assert hedged._hedge_errors == pytest.approx(errors, rel=1e-12, abs=1e-15)
    # the linear model wins on the noisy linear half, the MKL model on XOR
    assert chosen == {0, 1}
    assert hedged._predictor() is hedged._state
    for name, coef in mkl.coef_.items():
        np.testing.assert_array_equal(hedged.coef_[name], coef)


def test_the_hedge_survives_pickling_saving_copies_and_fit(tmp_path):
    model = MKLClassifier(linear_hedge=0.1)
    data = list(stream(400))
    for x, y in data:
        model.learn_one(x, y)
    assert model._hedge is not None
    probes = [x for x, _ in data[:50]]
    expected = [model.predict_one(x) for x in probes]
    model.save(tmp_path / "m.pkl")
    for other in (
        pickle.loads(pickle.dumps(model)),
        MKLClassifier.load(tmp_path / "m.pkl"),
        copy.deepcopy(model),
    ):
        assert [other.predict_one(x) for x in probes] == expected
        assert other._hedge_errors == model._hedge_errors
    # fit goes on with the hedge as learn_one on each example does
    X = [x for x, _ in data]
    y = [t for _, t in data]
    one = copy.deepcopy(model)
    model.fit(X, y)
    learn_in_fit_order(one, X, y)
    assert model._hedge is not None and model._hedge is not one._hedge
    assert model._hedge.to_bytes() == one._hedge.to_bytes()
    assert model._hedge_errors == one._hedge_errors
    assert model._state.to_bytes() == one._state.to_bytes()


def test_a_detector_alarm_keeps_a_hedged_model_that_predicts_and_pickles():
    model = MKLClassifier(drift_detector=SpyDetector(5), average=True, max_support=10)
    for i, (x, y) in enumerate(stream(40, switch_at=20)):
        model.learn_one(x, y)
        if (i + 1) % 5 == 0:
            assert model.predict_one(x) in (False, True)
            back = pickle.loads(pickle.dumps(model))
            assert back.predict_one(x) == model.predict_one(x)
    assert model.n_drifts_ == 8


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"linear_rate": 0.0}, "linear_rate"),
        ({"linear_rate": -1.0}, "linear_rate"),
        ({"linear_rate": float("nan")}, "linear_rate"),
        ({"linear_rate": "fast"}, "linear_rate"),
        ({"linear_hedge": 0.0}, "linear_hedge"),
        ({"linear_hedge": float("inf")}, "linear_hedge"),
        ({"linear_hedge": "yes"}, "linear_hedge"),
        ({"rates": {"rbf": 2.0}}, "rates"),
        ({"rates": [2.0]}, "rates"),
        ({"rates": {"linear": 0.0}}, "rates['linear']"),
        ({"rates": {"gaussian_d": float("inf")}}, "rates['gaussian_d']"),
    ],
)
def test_bad_rates_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=re.escape(f"`{name}`")):
        MKLClassifier(**kwargs)


def test_a_sequence_tagger_takes_no_hedge():
    with pytest.raises(ValueError, match="`linear_hedge`"):
        SequenceTagger(linear_hedge=0.1)


def test_precomputed_kernels_take_no_hedge():
    from omkl import PrecomputedGram

    x = np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)
    gram = PrecomputedGram((x @ x.T).astype(np.float32))
    model = MKLClassifier(kernels=[gram], max_support=None)
    for i in range(6):
        model.learn_one(i, i % 2)
    assert model._hedge is None and model.predict_one(0) in (0, 1)


def test_default_detector_is_adwin():
    assert isinstance(MKLClassifier()._hedge_detector, drift.ADWIN)


@pytest.mark.parametrize(
    ("kwargs", "epochs", "shuffle"),
    [
        ({}, 1, False),
        ({}, 2, True),
        ({"drift_reaction": "reset"}, 1, False),
        ({"average": True}, 2, True),
        ({"average": True, "drift_reaction": "reset"}, 1, False),
    ],
)
def test_fit_equals_learn_one_with_the_detector_and_the_hedge(kwargs, epochs, shuffle):
    # the noisy linear concept, then XOR; shuffled, XOR from the start
    data = list(stream(3000, switch_at=0 if shuffle else 1500))
    X = np.array([list(x.values()) for x, _ in data])
    y = [t for _, t in data]
    fitted = MKLClassifier(seed=1, **kwargs).fit(X, y, epochs=epochs, shuffle=shuffle)
    one = MKLClassifier(seed=1, **kwargs)
    hedged = learn_in_fit_order(one, X, y, epochs, shuffle)
    # the detector fired and the hedge predicted during the stream
    assert one.n_drifts_ >= 1 and hedged >= 1
    assert_same_model(fitted, one, X)


def test_fit_equals_learn_one_on_dicts_after_learn_one_and_with_hashed_random_features():
    data = list(stream(1200, switch_at=600))
    X = [x for x, _ in data]
    y = [t for _, t in data]
    configs = {
        "default": {},
        "spy": {"drift_detector": SpyDetector(97), "drift_reaction": "reset"},
        "fourier": {"kernels": ["linear", RandomFourierFeatures(16)], "hash_features": 8},
    }
    drifts = {}
    for name, kwargs in configs.items():
        fitted, one = MKLClassifier(**kwargs), MKLClassifier(**kwargs)
        for m in (fitted, one):
            for x, t in data[:100]:
                m.learn_one(x, t)
        fitted.fit(X, y, epochs=2)
        learn_in_fit_order(one, X, y, epochs=2)
        assert_same_model(fitted, one, X)
        drifts[name] = fitted.n_drifts_
    assert drifts["spy"] == (100 + 2400) // 97


def test_fit_equals_learn_one_on_dicts_whose_features_appear_later():
    # "z" first appears in the second half: the primal linear group takes
    # it as learn_one meets it, and the bandwidths keep the first row's d
    data = [
        (dict(x, z=x["a"] - x["b"]) if i >= 600 else x, t) for i, (x, t) in enumerate(stream(1200))
    ]
    X = [x for x, _ in data]
    y = [t for _, t in data]
    fitted = MKLClassifier().fit(X, y)
    one = MKLClassifier()
    learn_in_fit_order(one, X, y)
    assert_same_model(fitted, one, X)
    # the new column joined the primal linear group, which learned it
    w = one._state.explicit_coef(0, False)
    assert w.shape[1] == len(one._features) == 5  # a, b, c, the intercept, z
    assert np.abs(w[:, one._feature_index["z"]]).max() > 0


class FailingDetector(SpyDetector):
    """A ``SpyDetector`` that raises on its ``fail_at``-th update."""

    def __init__(self, every: int = 7, fail_at: int = 0):
        super().__init__(every)
        self.fail_at = fail_at

    def update(self, x):
        super().update(x)
        if self.n == self.fail_at:
            raise RuntimeError(f"update {self.n}")


@pytest.mark.parametrize("reaction", ["restart", "reset"])
def test_fit_changes_nothing_on_bad_data_and_keeps_completed_epochs_on_failure(reaction):
    data = list(stream(400, switch_at=200))
    X = np.array([list(x.values()) for x, _ in data])
    y = [t for _, t in data]
    model = MKLClassifier(drift_detector=FailingDetector(11, 700), drift_reaction=reaction)
    model.fit(X[:150], y[:150])
    before = pickle.dumps(model)
    bad = X.copy()
    bad[350, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        model.fit(bad, y)
    assert pickle.dumps(model) == before
    # the detector raises in the first epoch: nothing changes
    with pytest.raises(RuntimeError, match="update 700"):
        model.fit(np.vstack([X, X]), y + y)
    assert pickle.dumps(model) == before
    # ... in the second epoch: the model of the first epoch
    first = pickle.loads(before).fit(X, y)
    with pytest.raises(RuntimeError, match="update 700"):
        model.fit(X, y, epochs=3)
    assert first.n_drifts_ == model.n_drifts_ == (150 + 400) // 11
    assert_same_model(model, first, X)
