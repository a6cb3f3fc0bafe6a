"""The prequential fast paths of MKLClassifier change no result: a model
that predicts each array row before learning it (the core reuses the
prediction's scores, and a float array row skips the general conversion)
ends bit for bit where a model learning the same rows as lists, without
predicting, does; and random_feature_classifier builds the documented model
and checks its arguments."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from omkl import MKLClassifier, NystroemFeatures, RandomFourierFeatures
from omkl.mkl import (
    RANDOM_FEATURE_CONFIG,
    RANDOM_FEATURE_FACTORS,
    RANDOM_FEATURE_RATES,
    random_feature_classifier,
)


def _stream(n: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """A drifting 3-class stream with a class that appears late."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        x = rng.standard_normal(4)
        x[0] += 2.0 * np.sin(t / 60)
        k = int(x[0] * x[1] > 0) + (2 if t > n // 2 and x[2] > 1.0 else 0)
        out.append((x, "abc"[min(k, 2)]))
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: random_feature_classifier(40),
        lambda: MKLClassifier(
            kernels=["linear", "gaussian", RandomFourierFeatures(24, seed=3)], max_support=30
        ),
        lambda: MKLClassifier(max_support=25, forgetting=0.99, drift_reaction="reset"),
        lambda: MKLClassifier(kernels=["linear", RandomFourierFeatures(16)], average=True),
    ],
)
def test_predicting_first_changes_nothing(make):
    fast, plain = make(), make()
    right = 0
    for x, y in _stream(400, 7):
        p = fast.predict_one(x)
        right += p == y
        fast.learn_one(x, y)  # the same row as the prediction: scores reused
        plain.learn_one(x.tolist(), y)  # a list: the general path, no prediction
        assert fast.n_drifts_ == plain.n_drifts_
    assert right > 0
    assert fast.classes_ == plain.classes_
    for name, coef in plain.coef_.items():
        np.testing.assert_array_equal(fast.coef_[name], coef)
    assert fast.kernel_weights_ == plain.kernel_weights_
    assert fast.hedge_active_ == plain.hedge_active_
    assert fast._state.to_bytes() == plain._state.to_bytes()
    assert pickle.dumps(fast) == pickle.dumps(plain)
    rows = np.array([x for x, _ in _stream(50, 8)])
    assert fast.predict(rows) == plain.predict(rows)


def test_a_scaled_model_between_prediction_and_learning_is_scored_again():
    """A drift reaction (scale_groups) after a prediction: the round scores
    the row again, as a model that did not predict."""
    a, b = MKLClassifier(max_support=20), MKLClassifier(max_support=20)
    data = _stream(200, 2)
    for i, (x, y) in enumerate(data):
        a.predict_one(x)
        if i % 17 == 5 and a._state is not None:
            a._state.scale_groups(0.5)
            b._state.scale_groups(0.5)
        a.learn_one(x, y)
        b.learn_one(x, y)
    assert a._state.to_bytes() == b._state.to_bytes()


def test_random_feature_classifier_builds_the_documented_model():
    m = random_feature_classifier()
    groups = m.kernels[1:]
    assert m.kernels[0] == "linear"
    assert [g.n_components for g in groups] == [333, 333, 333]
    assert [g.factor for g in groups] == list(RANDOM_FEATURE_FACTORS)
    assert [g.seed for g in groups] == [0, 1, 2]
    assert all(g.orthogonal and g.pairs for g in groups)
    for k, v in RANDOM_FEATURE_CONFIG.items():
        assert getattr(m, k) == v
    assert m.rates == dict(zip(["rff", "rff_1", "rff_2"], RANDOM_FEATURE_RATES, strict=True))
    assert m._group_rates == [m.linear_rate, *RANDOM_FEATURE_RATES]
    m = random_feature_classifier(
        100, factors=(0.5,), seed=5, linear=False, pairs=False, forgetting=1.0
    )
    assert m.kernels == [RandomFourierFeatures(100, factor=0.5, seed=5, orthogonal=True)]
    assert m.forgetting == 1.0 and m.passive_aggressive is True
    assert m.rates == {"rff": 1.0} and m._group_rates == []
    m = random_feature_classifier(90, factors=(0.5, 1.0), factor_rates=(1.0, 3.0))
    assert m._group_rates == [m.linear_rate, 1.0, 3.0]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"factors": ()}, "factors"),
        ({"factors": (0.5, -1.0)}, "factors[1]"),
        ({"factors": (float("nan"),)}, "factors[0]"),
        ({"n_components": 2}, "n_components"),
        ({"n_components": 10.0}, "n_components"),
        ({"seed": -1}, "seed"),
        ({"linear": 1}, "linear"),
        ({"forgetting": 1.5}, "forgetting"),
        ({"pairs": 1}, "pairs"),
        ({"factor_rates": (1.0, 2.0)}, "factor_rates"),
        ({"factor_rates": (1.0, 2.0, 0.0)}, "rates['rff_2']"),
    ],
)
def test_random_feature_classifier_names_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`".replace("[", r"\[").replace("]", r"\]")):
        random_feature_classifier(**kwargs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: random_feature_classifier(40),
        lambda: MKLClassifier(max_support=25),
        lambda: MKLClassifier(kernels=["linear", NystroemFeatures(12)], max_support=25),
    ],
)
def test_float32_and_strided_rows_are_learned_as_lists(make):
    """The core reads float32 and non-contiguous float64 rows itself (or,
    with Nyström maps, the array path converts them): the same model as
    lists give."""
    a, b, c = make(), make(), make()
    for i, (x, y) in enumerate(_stream(300, 4)):
        wide = np.repeat(x, 2)  # every other value is the row
        assert a.predict_one(x.astype(np.float32)) == b.predict_one(wide[::2])
        assert b.predict_one(wide[::2]) == c.predict_one(x.astype(np.float32).tolist())
        a.learn_one(x.astype(np.float32), y)
        b.learn_one(wide[::2], y)
        c.learn_one(x.astype(np.float32).tolist(), y)
        if i == 150:
            assert a._state.to_bytes() == c._state.to_bytes()
    assert pickle.dumps(a) == pickle.dumps(c)
    assert pickle.dumps(b) == pickle.dumps(c)


@pytest.mark.parametrize("make", [lambda: random_feature_classifier(40), MKLClassifier])
def test_a_bad_row_raises_as_on_the_general_path_and_changes_nothing(make):
    m = make()
    for x, y in _stream(60, 1):
        m.learn_one(x, y)
    before = pickle.dumps(m)
    with pytest.raises(ValueError, match=r"`x`.* finite"):
        m.learn_one(np.array([0.0, np.nan, 1.0, 2.0]), "a")
    with pytest.raises(ValueError, match=r"`x`.* finite"):
        m.predict_one(np.array([0.0, 1.0, np.inf, 2.0]))
    with pytest.raises(ValueError, match="expected 4 features"):
        m.learn_one(np.zeros(3), "a")
    with pytest.raises(ValueError, match="expected 4 features"):
        m.predict_one(np.zeros(5))
    with pytest.raises(ValueError, match="expected a array as in earlier examples"):
        m.learn_one({"a": 1.0}, "a")
    assert pickle.dumps(m) == before
    # a row of another float type, or of integers, takes the general path
    assert m.predict_one(np.ones(4, dtype=np.float16)) == m.predict_one(np.ones(4))
    assert m.predict_one(np.ones(4, dtype=np.int64)) == m.predict_one(np.ones(4))


def test_the_core_reads_only_float_rows_of_its_width():
    m = MKLClassifier(max_support=10)
    for x, y in _stream(30, 3):
        m.learn_one(x, y)
    state = m._state
    before = state.to_bytes()
    for bad in ([1.0, 2.0, 3.0, 4.0], np.ones(5), np.ones(3), np.ones((1, 4)), np.ones(4, int)):
        assert state.predict_row(bad, True) is None
        assert state.learn_row(bad, True, 0, 3) is None
    assert state.to_bytes() == before
    assert state.predict_row(np.ones(4), True) == state.predict(np.ones((1, 5), np.float32))[0]
    assert state.learn_row(np.ones(4), True, 0, 3) is not None
    assert state.to_bytes() != before


@pytest.mark.parametrize("intercept", [True, False])
def test_complex_and_string_rows_are_refused_not_cut_or_parsed(intercept):
    from omkl import SequenceTagger

    m = MKLClassifier(max_support=10, intercept=intercept)
    for x, y in _stream(20, 5):
        m.learn_one(x, y)
    before = pickle.dumps(m)
    row = np.array([1.0 + 2.0j, 0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="`x`: expected real numbers, got an array of complex128"):
        m.learn_one(row, "a")
    with pytest.raises(ValueError, match="imaginary parts are not dropped"):
        m.predict_one(row)
    with pytest.raises(ValueError, match="complex"):
        MKLClassifier(intercept=intercept).learn_one(row, "a")
    for text in ([1.0, "2", 3.0, 4.0], np.array(["1", "2", "3", "4"]), ("1", 2, 3, 4)):
        with pytest.raises(ValueError, match="`x`: expected real numbers, got strings"):
            m.learn_one(text, "a")
        with pytest.raises(ValueError, match="got strings"):
            m.predict_one(text)
    assert pickle.dumps(m) == before
    # booleans and integers are numbers
    assert m.predict_one([True, 0, 1, 2]) == m.predict_one(np.array([1.0, 0.0, 1.0, 2.0]))
    t = SequenceTagger(kernels=["linear"], intercept=intercept)
    with pytest.raises(ValueError, match="complex"):
        t.learn_one(np.ones((3, 2), dtype=complex), [0, 1, 0])
