"""Drift detection of the linear estimators (ProximalClassifier,
ProximalRegressor): the detector's input, the reactions, bad parameters,
persistence."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from river import drift

import omkl


def _flip_stream(n: int, change: int) -> list[tuple[dict[str, float], bool]]:
    """Label ``a == 0`` before ``change``, ``a == 1`` after (abrupt)."""
    return [({"a": float(i % 2), "b": 1.0}, (i % 2 == 0) == (i < change)) for i in range(n)]


_CLASSIFY = (omkl.ProximalClassifier, _flip_stream(3000, 1500), lambda p, y: float(p != y))
_REGRESS = (
    omkl.ProximalRegressor,
    [({"a": 1.0}, 1.0 if i < 1500 else -3.0) for i in range(3000)],
    lambda p, y: abs(p - y),
)


@pytest.mark.parametrize(("make", "stream", "error"), [_CLASSIFY, _REGRESS])
def test_the_detector_is_fed_the_errors_of_the_predictions_before_each_update(
    make: Any, stream: list[tuple[dict[str, float], Any]], error: Any
) -> None:
    # the classifier's 0/1 errors, the regressor's absolute errors
    model = make(drift_detector=drift.ADWIN())
    twin = make()
    reference = drift.ADWIN()
    for x, y in stream:
        reference.update(error(twin.predict_one(x), y))
        model.learn_one(x, y)
        twin.learn_one(x, y)
        if reference.drift_detected:
            twin._state.restart_schedule()
    assert model.n_drifts_ >= 1
    assert model._state.to_bytes() == twin._state.to_bytes()


@pytest.mark.parametrize("reaction", ["restart", "reset"])
def test_an_alarm_restarts_the_schedule_or_zeroes_the_weights(reaction: str) -> None:
    model = omkl.ProximalClassifier(
        drift_detector="ADWIN", drift_reaction=reaction, regularizer=None
    )
    fired = 0
    for x, y in _flip_stream(3000, 1500):
        probe = pickle.loads(pickle.dumps(model))
        model.learn_one(x, y)
        if model.n_drifts_ > fired:
            fired = model.n_drifts_
            # the same round without the detector, then the reaction by hand
            probe.drift_detector, probe._detector = None, None
            probe.learn_one(x, y)
            if reaction == "reset":
                probe._state.reset_weights()
                assert all(v == 0.0 for v in model.group_norms_.values())
            else:
                probe._state.restart_schedule()
            assert model._state.to_bytes() == probe._state.to_bytes()
    assert fired >= 1
    # after the change the detector's model follows the new concept
    assert model.predict_one({"a": 1.0, "b": 1.0}) is True


def test_bad_drift_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="drift_detector.*got 3"):
        omkl.ProximalClassifier(drift_detector=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drift_detector.*'NoSuchDetector'"):
        omkl.ProximalClassifier(drift_detector="NoSuchDetector")
    with pytest.raises(ValueError, match="drift_detector.*real-valued"):
        omkl.ProximalRegressor(drift_detector=drift.binary.DDM())
    with pytest.raises(ValueError, match="drift_reaction"):
        omkl.ProximalClassifier(drift_detector="ADWIN", drift_reaction="forget")
    # a binary detector is fine for the classifier
    assert omkl.ProximalClassifier(drift_detector=drift.binary.DDM()).n_drifts_ == 0


def test_a_failed_learn_one_leaves_model_and_detector_unchanged() -> None:
    model = omkl.ProximalClassifier(drift_detector="ADWIN")
    for x, y in _flip_stream(200, 1000):
        model.learn_one(x, y)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="NaN"):
        model.learn_one({"a": float("nan")}, True)
    assert pickle.dumps(model) == before


def test_save_and_pickle_keep_the_drift_options(tmp_path: pytest.TempPathFactory) -> None:
    model = omkl.ProximalClassifier(drift_detector="ADWIN", drift_reaction="reset")
    for x, y in _flip_stream(3000, 1500):
        model.learn_one(x, y)
    assert model.n_drifts_ >= 1
    path = f"{tmp_path}/m.omkl"
    model.save(path)
    for back in (omkl.ProximalClassifier.load(path), pickle.loads(pickle.dumps(model))):
        assert (back.drift_detector, back.drift_reaction) == ("ADWIN", "reset")
        assert back.n_drifts_ == model.n_drifts_
        assert back._state.to_bytes() == model._state.to_bytes()
        back.learn_one({"a": 1.0, "b": 1.0}, True)
