"""The river estimators ProximalClassifier and ProximalRegressor."""

import copy
import math
import pickle

import numpy as np
import pytest
from river import checks, datasets, evaluate, metrics, preprocessing

import omkl
from omkl import _omkl

# Reference values of xxh3-64 with seed 0x6F6D6B6C (from the xxHash reference
# implementation); a change of hash or seed would break saved models.
EXPECTED_HASHES = {
    "": 11304092499299795732,
    "a": 7521291141300987594,
    "word=the": 7350697978797785030,
    "hue-mean": 3625582427221076157,
}


def test_hash_is_fixed():
    assert _omkl.HASH_NAME == "xxh3-64"
    assert _omkl.HASH_SEED == 0x6F6D6B6C
    for name, h in EXPECTED_HASHES.items():
        assert _omkl.hash_feature(name) == h


@pytest.mark.parametrize("cls", [omkl.ProximalClassifier, omkl.ProximalRegressor])
def test_river_check_estimator(cls):
    for params in cls._unit_test_params():
        checks.check_estimator(cls(**params))


def stream(n=400, seed=0):
    """Two informative groups (a, b) and two noise groups (c, d)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = {f"{g}_{i}": float(rng.normal()) for g in "abcd" for i in range(3)}
        score = x["a_0"] + x["a_1"] - 2 * x["b_2"]
        y = "pos" if score > 0.3 else ("neg" if score < -0.3 else "mid")
        yield x, y


def test_learns_groups_by_prefix_and_selects_informative_ones():
    model = omkl.ProximalClassifier(regularizer=("group_lasso", 0.05), eta0=0.5)
    data = list(stream(1500))
    for x, y in data:
        model.learn_one(x, y)
    norms = model.group_norms_
    assert set(norms) == {"a", "b", "c", "d"}
    assert model.selected_groups_ == [g for g, n in norms.items() if n > 0]
    # Online prox steps with decreasing rates rarely zero a noisy group
    # exactly, but the informative groups stand out clearly.
    assert min(norms["a"], norms["b"]) > 5 * max(norms["c"], norms["d"])
    assert model.classes_ == list(dict.fromkeys(y for _, y in data))
    correct = sum(model.predict_one(x) == y for x, y in stream(300, seed=1))
    assert correct / 300 > 0.8


def test_strong_group_lasso_zeroes_groups_exactly():
    model = omkl.ProximalClassifier(regularizer=("group_lasso", 1.0), eta0=0.5)
    for x, y in stream(1500):
        model.learn_one(x, y)
    norms = model.group_norms_
    assert norms["a"] == 0.0 and norms["d"] == 0.0
    assert set(model.selected_groups_) <= {"b", "c"}


def test_explicit_group_mapping_overrides_prefix():
    mapping = {"a_0": "first", "b_2": "first"}
    model = omkl.ProximalClassifier(groups=mapping, separator="_")
    for x, y in stream(20):
        model.learn_one(x, y)
    assert set(model.group_norms_) == {"first", "a", "b", "c", "d"}
    model = omkl.ProximalClassifier(separator="::")
    model.learn_one({"x::1": 1.0, "x::2": 1.0, "y": 2.0}, True)
    assert set(model.group_norms_) == {"x", "y"}


def test_predict_proba_is_a_distribution_over_seen_classes():
    for loss in ["log", "hinge"]:
        model = omkl.ProximalClassifier(loss=loss)
        assert model.predict_proba_one({"a": 1.0}) == {}
        assert model.predict_one({"a": 1.0}) is None
        for x, y in stream(100):
            model.learn_one(x, y)
        p = model.predict_proba_one(x)
        assert set(p) == {"pos", "neg", "mid"}
        assert math.isclose(sum(p.values()), 1.0)
        assert max(p, key=p.get) == model.predict_one(x)


@pytest.mark.parametrize("averaged", [False, True])
def test_pickle_round_trip_keeps_predictions_and_learning(averaged):
    model = omkl.ProximalClassifier(
        regularizer=[("group_lasso", 1e-3), ("l1", 1e-4)], average=averaged
    )
    data = list(stream(200))
    for x, y in data[:150]:
        model.learn_one(x, y)
    clone = pickle.loads(pickle.dumps(model))
    for x, _ in data[150:]:
        assert clone.predict_proba_one(x) == model.predict_proba_one(x)
    for x, y in data[150:]:
        model.learn_one(x, y)
        clone.learn_one(x, y)
    assert pickle.dumps(clone) == pickle.dumps(model)
    assert clone.group_norms_ == model.group_norms_


def test_failed_learn_one_raises_and_leaves_the_model_unchanged():
    model = omkl.ProximalClassifier()
    for x, y in stream(30):
        model.learn_one(x, y)
    before = pickle.dumps(model)
    bad_values = [float("nan"), float("inf"), -float("inf"), "abc", None, [1.0]]
    for bad in bad_values:
        x = {"a_0": 1.0, "new_group_feature": 2.0, "z_bad": bad}
        with pytest.raises(ValueError, match="z_bad"):
            model.learn_one(x, "a brand new class")
        assert pickle.dumps(model) == before
        with pytest.raises(ValueError, match="z_bad"):
            model.predict_one(x)
    assert "a brand new class" not in model.classes_
    huge = {"a_0": 1e200}
    proba = model.predict_proba_one(huge)
    with pytest.raises(ValueError, match="too large"):
        model.learn_one(huge, min(proba, key=proba.get))
    assert pickle.dumps(model) == before
    reg = omkl.ProximalRegressor()
    reg.learn_one({"a": 1.0}, 2.0)
    before = pickle.dumps(reg)
    for y in [float("nan"), "x"]:
        with pytest.raises(ValueError, match="y"):
            reg.learn_one({"a": 1.0}, y)
    assert pickle.dumps(reg) == before


def test_bad_hyperparameters_are_rejected_with_their_name():
    cases = [
        ({"loss": "squared"}, "loss"),
        ({"regularizer": ("group_lasso", -1.0)}, "lam"),
        ({"regularizer": ("nope", 1.0)}, "regulariser"),
        ({"regularizer": ("l2q", 0.1, 0.5)}, "q"),
        ({"regularizer": "group_lasso"}, "regularizer"),
        ({"schedule": "fast"}, "schedule"),
        ({"eta0": 0.0}, "eta0"),
        ({"radius": -1.0}, "radius"),
        ({"separator": ""}, "separator"),
        ({"n_buckets": 0}, "n_buckets"),
    ]
    for params, word in cases:
        with pytest.raises(ValueError, match=word):
            omkl.ProximalClassifier(**params)


def test_learn_batch_equals_learn_one():
    data = list(stream(120))
    one = omkl.ProximalClassifier(average=True)
    for x, y in data:
        one.learn_one(x, y)
    many = omkl.ProximalClassifier(average=True)
    many.learn_batch([x for x, _ in data], [y for _, y in data])
    assert pickle.dumps(one) == pickle.dumps(many)
    xs = [x for x, _ in data[:5]] + [{"a_0": float("nan")}]
    with pytest.raises(ValueError, match="example 5"):
        many.learn_batch(xs, ["new1", "pos", "new2", "pos", "pos", "new3"])
    assert many.classes_ == one.classes_ + ["new1", "new2"]
    assert many.predict_proba_one(data[0][0]).keys() == set(many.classes_)


class _SameHash(str):
    """A feature name whose Python hash is that of every other such name."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7


def test_feature_names_resolve_alike_whatever_their_python_hash_or_type():
    """The learner remembers where each feature name goes, keyed by Python's
    hash of the name: names whose hashes collide, names that are not
    ``str`` (named by ``str()``), and names first seen in prediction (before
    their group exists) must all end in the model the batch path gives on
    the ``str()`` of the names, which resolves every name afresh."""
    data = list(stream(150))
    variants = {
        "str": lambda x: x,
        "colliding": lambda x: {_SameHash(k): v for k, v in x.items()},
        "non-str": lambda x: {(k[0], int(k[2:])): v for k, v in x.items()},
    }
    for name, convert in variants.items():
        xs = [convert(x) for x, _ in data]
        named = [{str(k): v for k, v in x.items()} for x in xs]
        batch = omkl.ProximalClassifier(average=True)
        batch.learn_batch(named, [y for _, y in data])
        model = omkl.ProximalClassifier(average=True)
        for x, (_, y) in zip(xs, data, strict=True):
            model.predict_proba_one(x)
            model.learn_one(x, y)
        assert len(model.group_norms_) == (4 if name != "non-str" else 12), name
        assert pickle.dumps(model) == pickle.dumps(batch), name
        for x, n in zip(xs[:20], named, strict=False):
            assert model.predict_proba_one(x) == batch.predict_proba_one(n), name


def test_regressor_fits_a_linear_target():
    rng = np.random.default_rng(0)
    model = omkl.ProximalRegressor(regularizer=("group_lasso", 1e-3), eta0=0.2, average=True)
    for _ in range(3000):
        x = {"u_0": rng.normal(), "u_1": rng.normal(), "noise_0": rng.normal()}
        model.learn_one(x, 2.0 * x["u_0"] - x["u_1"] + 1.0)
    x = {"u_0": 0.5, "u_1": -1.0, "noise_0": 0.3}
    assert model.predict_one(x) == pytest.approx(3.0, abs=0.1)
    assert model.group_norms_["u"] > 10 * model.group_norms_["noise"]


def test_pipeline_with_scaler_and_progressive_validation():
    model = preprocessing.StandardScaler() | omkl.ProximalClassifier()
    acc = evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    assert acc.get() > 0.85


def test_sizeof_reports_rust_memory():
    small = omkl.ProximalClassifier(n_buckets=16)
    big = omkl.ProximalClassifier(n_buckets=4096)
    for model in (small, big):
        for x, y in stream(10):
            model.learn_one(x, y)
    raw_bytes = 4 * 4096 * 4  # groups x buckets x a 4-byte slot (rows grow as written)
    assert big.__sizeof__() > small.__sizeof__() + raw_bytes
    # A copy holds the same data, without the spare capacity of growable buffers.
    assert big.__sizeof__() * 0.9 < copy.deepcopy(big).__sizeof__() <= big.__sizeof__()


def test_hashed_batch_entry_point_validates_its_input():
    m = _omkl.OnlineProximalLearner(
        "hinge", ("constant", 0.1, 1.0, [("group_lasso", [0.01])], None, False, True), None,
        "_", {}, 8,
    )  # fmt: skip
    assert m.add_groups(["a", "b"]) == [0, 1]
    m.set_n_outputs(3)
    ok = dict(
        indptr=np.array([0, 2, 3], dtype=np.int64),
        groups=np.array([0, 1, 1], dtype=np.uint32),
        indices=np.array([1, 7, 2], dtype=np.uint32),
        values=np.array([1.0, -1.0, 0.5]),
        classes=np.array([2, 0], dtype=np.int64),
    )
    bad = [
        ("groups", np.array([0, 2, 1], dtype=np.uint32), "group"),
        ("indices", np.array([1, 8, 2], dtype=np.uint32), "indices"),
        ("values", np.array([1.0, np.nan, 0.5]), "values"),
        ("indptr", np.array([0, 2, 4], dtype=np.int64), "indptr"),
        ("indptr", np.array([0, -1, 3], dtype=np.int64), "indptr"),
        ("classes", np.array([3, 0], dtype=np.int64), "class"),
        ("classes", np.array([0], dtype=np.int64), "targets"),
    ]
    before = m.to_bytes()
    for key, value, word in bad:
        with pytest.raises(ValueError, match=word):
            m.learn_hashed_classes(**{**ok, key: value})
        assert m.to_bytes() == before
    m.learn_hashed_classes(**ok)
    assert m.rounds == 2
    w = m.dense_weights().reshape(2, 8, 3)
    assert w[0, 1, 2] > 0 and w[0, 1, 0] < 0  # class 2 pushed up, the runner-up down


def test_growth_that_cannot_be_allocated_is_memory_error_and_changes_nothing():
    """A new group of 2**30 buckets asks for 4 GB of slots, more than the
    limit leaves after the first group: MemoryError, the model
    byte-identical (run apart, so that an abort fails this test instead of
    the suite)."""
    import subprocess
    import sys

    code = """
import pickle, resource
import omkl
resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))
m = omkl.ProximalClassifier(n_buckets=2**30)
m.learn_one({"a_x": 1.0}, "p")
before = pickle.dumps(m)
try:
    m.learn_one({"b_x": 1.0}, "q")
    print("learned")
except MemoryError as e:
    print("MemoryError", "n_outputs" in str(e) or "n_buckets" in str(e))
print("unchanged", pickle.dumps(m) == before)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MemoryError", "True", "unchanged", "True"], out.stdout
