"""Huge feature values: a refused update leaves the model byte-identical,
and an accepted one never stops the model from learning afterwards."""

from __future__ import annotations

import itertools
import pickle

import pytest

import omkl

HUGE = 2.8e150


def _saved(model, tmp_path) -> bytes:
    path = tmp_path / "m.omkl"
    model.save(path)
    return path.read_bytes()


def _classifier_with_a_huge_weight(**params) -> omkl.ProximalClassifier:
    # the hinge loss's gradient is ±1, so its updates reach the bound sooner
    value = 7e149 if params.get("loss") == "hinge" else HUGE
    """Updates on a huge value (until one is refused): the weights of `a_x`
    end near the largest magnitude an update may reach."""
    m = omkl.ProximalClassifier(**params)
    for y in ["p", "p", "q", "p", "q"]:
        try:
            m.learn_one({"a_x": value}, y)
        except ValueError as e:
            assert "too large" in str(e)
            break
    if not params.get("average"):
        assert m.group_norms_["a"] > 1e148
    return m


@pytest.mark.parametrize("params", [{}, {"loss": "hinge"}, {"average": True}])
def test_the_model_keeps_learning_after_a_huge_value(params):
    m = _classifier_with_a_huge_weight(**params)
    before = m.predict_proba_one({"a_y": 1.0, "b": 1.0})
    rounds = m.n_rounds_
    examples = [({"a_x": 1.0}, "p"), ({"a_y": 1.0, "b": 1.0}, "q"), ({"b": 1.0}, "r")]
    for x, y in examples * 5:
        m.learn_one(x, y)
    assert m.n_rounds_ == rounds + 15
    after = m.predict_proba_one({"a_y": 1.0, "b": 1.0})
    assert after != before
    assert max(after, key=after.get) == "q"


def test_no_short_sequence_after_a_huge_value_freezes_the_model():
    """Every sequence of three rounds over a few examples, after a huge
    value was accepted, learns all of its ordinary examples."""
    xs = [{"a_x": HUGE}, {"a_x": 1.0}, {"a_y": 1.0}, {"b": 1.0}]
    rounds = list(itertools.product(range(4), ["p", "q", "r"]))
    for seq in itertools.product(rounds, repeat=2):
        m = omkl.ProximalClassifier()
        m.learn_one(xs[0], "p")
        m.learn_one(xs[0], "p")
        for xi, y in seq:
            try:
                m.learn_one(xs[xi], y)
            except ValueError:
                assert xi == 0, (seq, xi)
        m.learn_one({"a_y": 1.0}, "q")
        m.learn_one({"a_x": 1.0}, "p")


def _failing_rounds():
    # (model parameters, preparation, refused round)
    yield {}, [], ({"a_x": HUGE, "b_z": 1.0}, "r")
    yield {}, [({"a_x": 1.0}, "p")], ({"a_x": HUGE * 100, "n_w": 1.0}, "new")
    yield {"average": True}, [({"a_x": 1.0}, "p")], ({"a_x": HUGE * 100}, "p")
    yield {"loss": "hinge"}, [({"b": 1.0}, "p")], ({"c_d": HUGE * 100}, "q")


@pytest.mark.parametrize(("params", "prep", "bad"), list(_failing_rounds()))
def test_a_refused_update_leaves_the_model_byte_identical(params, prep, bad, tmp_path):
    m = _classifier_with_a_huge_weight(**params)
    for x, y in prep:
        m.learn_one(x, y)
    pickled, saved = pickle.dumps(m), _saved(m, tmp_path)
    x, y = bad
    with pytest.raises(ValueError, match="too large"):
        m.learn_one(x, y)
    assert pickle.dumps(m) == pickled
    assert _saved(m, tmp_path) == saved
    m.learn_one({"a_y": 1.0}, "q")
    assert pickle.dumps(m) != pickled


def test_a_refused_regression_update_leaves_the_model_byte_identical(tmp_path):
    m = omkl.ProximalRegressor()
    m.learn_one({"a_x": 1.0}, 1.0)
    pickled, saved = pickle.dumps(m), _saved(m, tmp_path)
    with pytest.raises(ValueError, match="too large"):
        m.learn_one({"a_x": 1e300, "z_new": 1.0}, 1e10)
    assert pickle.dumps(m) == pickled
    assert _saved(m, tmp_path) == saved
