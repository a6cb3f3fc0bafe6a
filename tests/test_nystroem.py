"""Nyström features: exact on the landmarks against the kernel computed in
the test, an error that shrinks with the number of landmarks, landmarks
taken from the data, the group inside MKLClassifier against an explicit
group on the same features, and bad parameters."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from feature_groups import assert_feature_group_equals_explicit_group

from omkl import MKLClassifier, NystroemFeatures


def gaussian(a, b, sigma2):
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return np.exp(-sq / (2 * sigma2))


def polynomial(a, b, degree, offset):
    return (a @ b.T + offset) ** degree


@pytest.mark.parametrize(
    ("kw", "ref"),
    [
        ({"kernel": "gaussian", "sigma2": 1.7}, lambda a, b: gaussian(a, b, 1.7)),
        ({"kernel": "polynomial", "degree": 2, "offset": 1.0}, lambda a, b: polynomial(a, b, 2, 1)),
    ],
)
def test_exact_on_the_landmarks(kw, ref):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    L = X[:5]  # a degree-2 polynomial kernel in 3-d has rank 10 >= 5
    ny = NystroemFeatures(5, landmarks=L, **kw)
    Z = ny.transform(X).astype(np.float64)
    K = ref(X, L)
    # z(x) . z(l) = k(x, l) whenever l is a landmark
    np.testing.assert_allclose(Z @ Z[:5].T, K, rtol=1e-4, atol=1e-4)


def test_error_shrinks_with_the_number_of_landmarks():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    K = gaussian(X, X, 4.0)
    errors = []
    for m in (5, 40, 200):
        Z = NystroemFeatures(m, sigma2=4.0, landmarks=X[:m]).transform(X).astype(np.float64)
        errors.append(np.abs(Z @ Z.T - K).mean())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1e-3


def test_landmarks_are_the_first_distinct_inputs():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    stream = np.vstack([X[:3], X[:2], X[3:]])  # repeats are not new landmarks
    ny = NystroemFeatures(6, factor=1.0)
    first = ny.transform(stream[:4])
    assert first.shape == (4, 6)
    np.testing.assert_array_equal(ny.current_landmarks(), X[:3])
    # while collecting, the map uses the first 2^k landmarks seen (here 2 of 3)
    assert np.all(first[:, 2:] == 0) and np.any(first[:, :2] != 0)
    two = NystroemFeatures(2, factor=1.0, landmarks=X[:2]).transform(stream[:4])
    np.testing.assert_allclose(first[:, :2], two, rtol=1e-5, atol=1e-6)
    ny.transform(stream[4:])
    np.testing.assert_array_equal(ny.current_landmarks(), X[:6])
    given = NystroemFeatures(6, factor=1.0, landmarks=X[:6])
    np.testing.assert_allclose(ny.transform(X), given.transform(X), rtol=1e-5, atol=1e-6)
    # the bandwidth rule sigma2 = d * factor, as the named kernel's
    Z = given.transform(X).astype(np.float64)
    np.testing.assert_allclose(Z @ Z[:6].T, gaussian(X, X[:6], 2.0), atol=1e-4)


def test_copies_and_pickles_keep_the_landmarks():
    X = np.random.default_rng(3).normal(size=(20, 3))
    ny = NystroemFeatures(4)
    z = ny.transform(X)
    for other in (copy.deepcopy(ny), pickle.loads(pickle.dumps(ny))):
        np.testing.assert_array_equal(other.transform(X), z)


def test_group_equals_an_explicit_group_on_the_same_features():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = list(np.where(np.linalg.norm(X, axis=1) < 1.5, "in", "out"))
    ny = NystroemFeatures(32, sigma2=1.5, landmarks=X[:32])
    assert_feature_group_equals_explicit_group(ny, "nystroem", X, y, 1e-4, 1e-8)


def test_each_model_chooses_its_own_landmarks():
    rng = np.random.default_rng(5)
    ny = NystroemFeatures(8)
    a = MKLClassifier(kernels=["linear", ny])
    b = MKLClassifier(kernels=["linear", ny])
    for x in rng.normal(size=(20, 2)):
        a.learn_one(x, bool(x[0] > 0))
    for x in rng.normal(size=(20, 2)):
        b.learn_one(x, bool(x[1] > 0))
    assert ny.current_landmarks() is None  # the object given stays a parameter
    la = a._rff_specs[0][1].current_landmarks()
    lb = b._rff_specs[0][1].current_landmarks()
    assert la.shape == lb.shape == (8, 2)
    assert not np.array_equal(la, lb)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 2.0}, "n_components"),
        ({"n_components": 4, "sigma2": float("nan")}, "sigma2"),
        ({"n_components": 4, "sigma2": float("inf")}, "sigma2"),
        ({"n_components": 4, "sigma2": -1.0}, "sigma2"),
        ({"n_components": 4, "factor": 0.0}, "factor"),
        ({"n_components": 4, "kernel": "laplace"}, "kernel"),
        ({"n_components": 4, "kernel": "polynomial", "degree": 0}, "degree"),
        ({"n_components": 4, "kernel": "polynomial", "offset": -1.0}, "offset"),
        ({"n_components": 4, "kernel": "polynomial", "offset": float("inf")}, "offset"),
        ({"n_components": 4, "landmarks": np.zeros((3, 2))}, "landmarks"),
        ({"n_components": 2, "landmarks": [[0.0, np.nan], [1.0, 1.0]]}, "landmarks"),
    ],
)
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        NystroemFeatures(**kwargs)


def test_bad_inputs():
    ny = NystroemFeatures(2, landmarks=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="`x`"):
        ny.transform(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="`x`"):
        ny.transform(np.zeros(3))


def test_given_landmarks_see_the_inputs_without_the_intercept_column():
    # the default model appends the intercept's column to arrays; the
    # Nyström group must see the d input columns its landmarks have
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    y = list(X[:, 0] * X[:, 1] > 0)
    landmarks = X[:20]
    # (without the hedging linear model, which sees the input columns only)
    a = MKLClassifier(
        kernels=[NystroemFeatures(20, sigma2=1.5, landmarks=landmarks)], linear_hedge=None
    )
    b = MKLClassifier(
        kernels=[],
        explicit_groups={"nystroem": list(range(4, 24))},
        intercept=False,
        linear_hedge=None,
    )
    Z = NystroemFeatures(20, sigma2=1.5, landmarks=landmarks).transform(X)
    XZ = np.hstack([X, np.ones((200, 1)), Z])  # the intercept's column by hand
    for i in range(len(y)):
        assert a.predict_one(X[i]) == b.predict_one(XZ[i])
        a.learn_one(X[i], y[i])
        b.learn_one(XZ[i], y[i])
    assert a.group_norms_["nystroem"] == pytest.approx(b.group_norms_["nystroem"], rel=1e-4)


@pytest.mark.parametrize(
    "make",
    [
        lambda X: NystroemFeatures(12, factor=1.0),  # landmarks chosen from the inputs
        lambda X: NystroemFeatures(12, sigma2=1.5, landmarks=X[:12] + 0.5),
        lambda X: NystroemFeatures(6, kernel="polynomial", degree=3, offset=0.5),
    ],
)
def test_a_model_with_nystroem_groups_saves_and_loads(tmp_path, make):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3))
    y = list(X[:, 0] * X[:, 1] > 0)
    model = MKLClassifier(kernels=["linear", make(X)], max_support=50)
    for i in range(150):
        model.learn_one(X[i], y[i])
    path = tmp_path / "ny.omkl"
    model.save(path)
    back = MKLClassifier.load(path)
    assert repr(back.kernels) == repr(model.kernels)
    for i in range(150, 300):
        assert back.predict_one(X[i]) == model.predict_one(X[i])
        model.learn_one(X[i], y[i])
        back.learn_one(X[i], y[i])
    assert back.group_norms_ == model.group_norms_


def test_a_save_with_bad_landmarks_is_refused(tmp_path):
    import json

    X = np.random.default_rng(9).normal(size=(40, 3))
    model = MKLClassifier(kernels=[NystroemFeatures(4, factor=1.0)])
    for i in range(40):
        model.learn_one(X[i], bool(X[i, 0] > 0))
    state, sections = model._save_state()
    assert len(state["landmarks"][0]) == 4
    bad = json.loads(json.dumps(state))
    bad["landmarks"][0] = [[float("nan")] * 3] * 2
    with pytest.raises(ValueError, match="finite"):
        MKLClassifier(kernels=[NystroemFeatures(4, factor=1.0)])._load_state(bad, sections)
    bad["landmarks"][0] = [[0.0] * 3] * 5
    with pytest.raises(ValueError, match="1 to 4 rows"):
        MKLClassifier(kernels=[NystroemFeatures(4, factor=1.0)])._load_state(bad, sections)
