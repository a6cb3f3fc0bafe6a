"""Random Fourier and Nyström groups evaluated by the core: the core's maps
against the numpy transforms of RandomFourierFeatures and NystroemFeatures,
whole models against explicit groups on the numpy features (with the
intercept, hashed dict features and landmarks still being chosen), copies
and saved models, and bad input to the maps."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omkl import MKLClassifier, NystroemFeatures, RandomFourierFeatures, _omkl
from omkl.mkl import UNBOUNDED_CONFIG


@settings(max_examples=40, deadline=None)
@given(
    d=st.integers(1, 12),
    n=st.integers(1, 70),
    factor=st.sampled_from([0.0625, 0.25, 1.0, 4.0]),
    seed=st.integers(0, 2**16),
    spread=st.sampled_from([0.1, 1.0, 10.0]),
    pairs=st.booleans(),
)
def test_core_fourier_map_equals_the_numpy_transform(d, n, factor, seed, spread, pairs):
    rff = RandomFourierFeatures(n, factor=factor, seed=seed, pairs=pairs)
    x = (np.random.default_rng(seed).standard_normal((5, d)) * spread).astype(np.float32)
    core, numpy_z = rff._core_map(d, None).transform(x), rff.transform(x)
    # both against the features computed in float64 from the same float32
    # parameters: the argument W'x + b is rounded to float32 in either path,
    # an error that grows with |W'x + b|
    w, b = (a.astype(np.float64) for a in rff.weights(d))
    x64 = x.astype(np.float64)
    scale = np.sqrt(2.0 / n)
    exact = scale * np.cos(x64 @ w + b)
    bound = scale * (4 * np.finfo(np.float32).eps * (np.abs(x64) @ np.abs(w) + np.abs(b)) + 2e-7)
    assert np.all(np.abs(core - exact) <= bound)
    assert np.all(np.abs(numpy_z - exact) <= bound)
    assert np.all(np.abs(core - numpy_z) <= 2 * bound)
    # the bandwidth rule's dimension given apart (hashed dict features)
    np.testing.assert_allclose(
        rff._core_map(d, 3).transform(x), rff.transform(x, scale_d=3), atol=2 * bound.max()
    )


@pytest.mark.parametrize("factor", [0.0625, 0.25, 1.0])
def test_core_fourier_map_on_standardised_inputs_is_within_1e_6(factor):
    """The benchmarks' setting: 300 features of 10 standardised inputs and
    the intercept's column."""
    rff = RandomFourierFeatures(300, factor=factor, seed=0)
    x = np.random.default_rng(0).standard_normal((500, 11)).astype(np.float32)
    x[:, -1] = 1.0
    np.testing.assert_allclose(rff._core_map(11, None).transform(x), rff.transform(x), atol=1e-6)


@pytest.mark.parametrize(
    "kw",
    [
        {"sigma2": 0.7},
        {"factor": 0.25},
        {"kernel": "polynomial", "degree": 3, "offset": 0.5},
    ],
)
@pytest.mark.parametrize("seen", [1, 3, 6, 16])
def test_core_nystroem_map_equals_the_numpy_transform(kw, seen):
    rng = np.random.default_rng(seen)
    x = rng.standard_normal((seen + 10, 4)).astype(np.float32)
    ny = NystroemFeatures(16, **kw)
    ny.transform(x[:seen])  # landmarks from the inputs: the first 2^k while fewer than 16
    z_numpy = ny.transform(x[seen:])
    z_core = ny._core_map(4, None).transform(x[seen:])
    scale = max(1.0, float(np.abs(z_numpy).max()))
    np.testing.assert_allclose(z_core, z_numpy, atol=1e-6 * scale)


def test_a_nystroem_map_without_landmarks_gives_zeros():
    z = NystroemFeatures(5)._core_map(3, None).transform(np.ones((2, 3), dtype=np.float32))
    np.testing.assert_array_equal(z, np.zeros((2, 5), dtype=np.float32))


def test_random_feature_model_with_intercept_equals_explicit_groups():
    """The default configuration (primal linear group, intercept, budget,
    drift detector) on arrays: the intercept's column enters the Fourier
    maps, not the Nyström map. The linear group takes the kernels' step and
    there is no hedging linear model, as the twin made of explicit groups
    has no primal linear group to single out."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((250, 3))
    y = list(np.where(np.sin(2 * X[:, 0]) + X[:, 1] ** 2 > 0.5, "a", "b"))
    rff = RandomFourierFeatures(30, factor=0.5, seed=3)
    ny = NystroemFeatures(30, sigma2=2.0, landmarks=X[:30])
    same = dict(lam=1e-3, linear_rate=1.0, linear_hedge=None)
    a = MKLClassifier(kernels={"linear": "linear", "g0": rff, "g1": ny}, **same)
    X1 = np.hstack([X, np.ones((len(X), 1))])
    Z = np.hstack([X1, rff.transform(X1), ny.transform(X)])
    groups = {"linear": [0, 1, 2, 3], "g0": list(range(4, 34)), "g1": list(range(34, 64))}
    b = MKLClassifier(kernels=[], explicit_groups=groups, intercept=False, **same)
    for i in range(len(y)):
        assert a.predict_one(X[i]) == b.predict_one(Z[i])
        a.learn_one(X[i], y[i])
        b.learn_one(Z[i], y[i])
        na, nb = a.group_norms_, b.group_norms_
        for g in groups:
            assert na[g] == pytest.approx(nb[g], rel=1e-5, abs=1e-9)
    assert a.n_support_ == 0
    np.testing.assert_allclose(a._scores(X[0]), b._scores(Z[0]), rtol=1e-5, atol=1e-7)


def test_nystroem_landmarks_chosen_from_the_stream_equal_the_numpy_path():
    """While the landmarks are being chosen, the core's map follows each
    change (2^k of them at a time)."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((120, 2))
    y = [bool(v) for v in X[:, 0] * X[:, 1] > 0]
    a = MKLClassifier(kernels={"g0": NystroemFeatures(30, sigma2=1.0)}, **UNBOUNDED_CONFIG)
    ref = NystroemFeatures(30, sigma2=1.0)
    b = MKLClassifier(kernels=[], explicit_groups={"g0": list(range(2, 32))}, **UNBOUNDED_CONFIG)
    for i in range(len(y)):
        z = np.hstack([X[i], ref.transform(X[i : i + 1])[0]])
        assert a.predict_one(X[i]) == b.predict_one(z)
        a.learn_one(X[i], y[i])
        b.learn_one(z, y[i])
        assert a.group_norms_["g0"] == pytest.approx(b.group_norms_["g0"], rel=1e-4, abs=1e-8)
    assert a._rff_specs[0][1]._n_used() == 30


def test_hashed_dict_features_with_random_features_equal_explicit_groups():
    rng = np.random.default_rng(9)
    rff = RandomFourierFeatures(30, factor=0.5, seed=1)
    a = MKLClassifier(kernels={"g0": rff}, hash_features=8, **UNBOUNDED_CONFIG)
    b = MKLClassifier(kernels=[], explicit_groups={"g0": list(range(8, 38))}, **UNBOUNDED_CONFIG)
    for _ in range(150):
        x = {f"f{j}": float(v) for j, v in enumerate(rng.standard_normal(4))}
        label = x["f0"] * x["f1"] > 0
        h = a._hashed_rows([x])
        z = np.hstack([h[0], rff.transform(h, scale_d=4)[0]])
        assert a.predict_one(x) == b.predict_one(z)
        a.learn_one(x, label)
        b.learn_one(z, label)
    assert a.group_norms_["g0"] == pytest.approx(b.group_norms_["g0"], rel=1e-5)


def test_copies_saved_models_and_fit_keep_the_maps(tmp_path):
    rng = np.random.default_rng(10)
    X = rng.standard_normal((200, 3))
    y = [bool(v) for v in np.sin(3 * X[:, 0]) > X[:, 1]]
    kernels = [RandomFourierFeatures(40, factor=0.25, seed=2), NystroemFeatures(16)]
    model = MKLClassifier(kernels=kernels)
    for xi, yi in zip(X[:150], y[:150], strict=True):
        model.learn_one(xi, yi)
    model.save(tmp_path / "m.pkl")
    copies = [
        copy.deepcopy(model),
        pickle.loads(pickle.dumps(model)),
        MKLClassifier.load(tmp_path / "m.pkl"),
    ]
    for c in copies:
        assert c.predict(X[150:]) == model.predict(X[150:])
        np.testing.assert_array_equal(c._scores(X[160]), model._scores(X[160]))
    # learning goes on alike after a copy (the maps are given again on load)
    for c in [*copies, model]:
        for xi, yi in zip(X[150:], y[150:], strict=True):
            c.learn_one(xi, yi)
    for c in copies:
        assert c.group_norms_ == pytest.approx(model.group_norms_, rel=1e-12)
    # fit learns the rows as learn_one does (with landmarks given: fit
    # chooses them from all rows first)
    kernels = [kernels[0], NystroemFeatures(16, landmarks=X[:16])]
    fitted = MKLClassifier(kernels=kernels, **UNBOUNDED_CONFIG).fit(X, y)
    stepped = MKLClassifier(kernels=kernels, **UNBOUNDED_CONFIG)
    for xi, yi in zip(X, y, strict=True):
        stepped.learn_one(xi, yi)
    assert fitted.group_norms_ == pytest.approx(stepped.group_norms_, rel=1e-12)
    assert fitted.predict(X) == stepped.predict(X)


def test_a_model_takes_full_rows_as_they_are():
    """Rows with the random-feature columns already filled bypass the maps."""
    X = np.random.default_rng(11).standard_normal((30, 2))
    rff = RandomFourierFeatures(10, sigma2=1.0, seed=0)
    model = MKLClassifier(kernels=[rff], **UNBOUNDED_CONFIG)
    for i, xi in enumerate(X):
        model.learn_one(xi, i % 2)
    state = model._state
    rows = X.astype(np.float32)
    wide = np.hstack([rows, rff.transform(rows)]).astype(np.float32)
    np.testing.assert_allclose(
        state.scores(rows, rows=True), state.scores(wide, rows=True), rtol=1e-5, atol=1e-7
    )
    with pytest.raises(ValueError, match="`x`"):
        state.predict(np.zeros((1, 5), dtype=np.float32))


def test_bad_maps_raise_value_errors():
    w = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="`b`"):
        _omkl.FeatureMap.fourier(w, np.zeros(3, dtype=np.float32), 1.0)
    with pytest.raises(ValueError, match="`w`"):
        _omkl.FeatureMap.fourier(
            np.full((3, 4), np.nan, dtype=np.float32), np.zeros(4, np.float32), 1.0
        )
    with pytest.raises(ValueError, match="`scale`"):
        _omkl.FeatureMap.fourier(w, np.zeros(4, dtype=np.float32), float("inf"))
    fmap = _omkl.FeatureMap.fourier(w, np.zeros(4, dtype=np.float32), 1.0)
    assert (fmap.input_dim, fmap.width) == (3, 4)
    with pytest.raises(ValueError, match="`x`"):
        fmap.transform(np.zeros((1, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="`x`"):
        fmap.transform(np.full((1, 3), np.inf, dtype=np.float32))
    g = _omkl.Kernel("gaussian", sigma2=1.0)
    with pytest.raises(ValueError, match="`whiten`"):
        _omkl.FeatureMap.nystroem(2, g, np.zeros((2, 3)), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="`landmarks`"):
        _omkl.FeatureMap.nystroem(1, g, np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="`kernel`"):
        _omkl.FeatureMap.nystroem(1, _omkl.Kernel("linear"), np.zeros((1, 3)), np.ones((1, 1)))
    state = MKLClassifier(kernels=[RandomFourierFeatures(4)])
    state.learn_one(np.zeros(3), True)
    with pytest.raises(ValueError, match="`maps`"):
        state._state.set_feature_maps(3, [fmap])  # 3 + 4 columns, the model has 3 + 1 + 4
    # a row with a non-finite value is refused, and nothing is learned
    before = state.n_rounds_
    with pytest.raises(ValueError, match="finite"):
        state.learn_one(np.array([np.nan, 0.0, 0.0]), True)
    assert state.n_rounds_ == before


def _kernel_error(d: int, **option: bool) -> float:
    """Mean squared error of the Gaussian kernel (sigma2 = 1) estimated by
    60 random Fourier features with ``option``, on 30 points in ``d``
    dimensions, averaged over the seeds 0 to 19."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, d)) * 0.5
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0)
    errs = []
    for seed in range(20):
        Z = RandomFourierFeatures(60, sigma2=1.0, seed=seed, **option).transform(X)
        errs.append(np.mean((Z.astype(np.float64) @ Z.T - K) ** 2))
    return float(np.mean(errs))


def test_orthogonal_features_are_orthogonal_in_blocks_and_estimate_the_kernel():
    d, n = 6, 15
    w, _ = RandomFourierFeatures(n, sigma2=1.0, seed=3, orthogonal=True).weights(d)
    w64 = w.astype(np.float64)
    for start in range(0, n, d):
        block = w64[:, start : start + d]
        gram = block.T @ block
        off = gram - np.diag(np.diag(gram))
        assert np.abs(off).max() < 1e-4 * np.abs(np.diag(gram)).max()
    # the i.i.d. draw is unchanged by the option's existence
    iid = RandomFourierFeatures(n, sigma2=1.0, seed=3)
    assert not np.array_equal(iid.weights(d)[0], w)
    # the kernel estimate: unbiased, and closer than i.i.d. features on average
    assert _kernel_error(d, orthogonal=True) < _kernel_error(d, orthogonal=False)


def test_orthogonal_option_is_checked_kept_and_saved(tmp_path):
    with pytest.raises(ValueError, match="`orthogonal`"):
        RandomFourierFeatures(4, orthogonal=1)
    a = RandomFourierFeatures(4, seed=2, orthogonal=True)
    assert a != RandomFourierFeatures(4, seed=2)
    assert a == pickle.loads(pickle.dumps(a))
    assert "orthogonal=True" in repr(a)
    # a map pickled before the option loads as i.i.d.
    old = RandomFourierFeatures(4, seed=2)
    state = old.__getstate__()
    del state["orthogonal"]
    back = RandomFourierFeatures.__new__(RandomFourierFeatures)
    back.__setstate__(state)
    assert back == old
    X = np.random.default_rng(1).standard_normal((60, 3))
    model = MKLClassifier(kernels=[a])
    for i, xi in enumerate(X):
        model.learn_one(xi, i % 3)
    model.save(tmp_path / "m.pkl")
    loaded = MKLClassifier.load(tmp_path / "m.pkl")
    assert loaded.predict(X) == model.predict(X)
    assert loaded._rff_specs[0][1].orthogonal


@pytest.mark.parametrize("n", [8, 9])
@pytest.mark.parametrize("orthogonal", [False, True])
def test_paired_features_are_cosines_and_sines_of_the_same_frequencies(n, orthogonal):
    d, half = 3, n // 2
    rff = RandomFourierFeatures(n, sigma2=1.5, seed=4, orthogonal=orthogonal, pairs=True)
    w, b = rff.weights(d)
    assert w.shape == (d, n) and b.shape == (n,)
    np.testing.assert_array_equal(w[:, :half], w[:, half : 2 * half])
    x = np.random.default_rng(2).standard_normal((7, d))
    z = rff.transform(x).astype(np.float64)
    t = x @ w[:, :half].astype(np.float64)
    scale = np.sqrt(2.0 / n)
    np.testing.assert_allclose(z[:, :half], scale * np.cos(t), atol=1e-5)
    np.testing.assert_allclose(z[:, half : 2 * half], scale * np.sin(t), atol=1e-5)
    if n % 2:
        # the odd feature: a cosine of another frequency and a random phase
        assert not np.allclose(w[:, -1], w[:, 0]) and 0.0 < b[-1] < 2 * np.pi
    # the orthogonal draw covers the D // 2 (+ 1) frequencies
    if orthogonal:
        block = w[:, :d].astype(np.float64)
        gram = block.T @ block
        assert np.abs(gram - np.diag(np.diag(gram))).max() < 1e-4 * np.abs(gram).max()


def test_paired_features_estimate_the_kernel_closer_than_random_phases():
    assert _kernel_error(4, pairs=True) < _kernel_error(4, pairs=False)


def test_pairs_option_is_checked_kept_and_saved(tmp_path):
    with pytest.raises(ValueError, match="`pairs`"):
        RandomFourierFeatures(4, pairs="yes")
    a = RandomFourierFeatures(5, seed=2, orthogonal=True, pairs=True)
    assert a != RandomFourierFeatures(5, seed=2, orthogonal=True)
    assert a == pickle.loads(pickle.dumps(a))
    assert repr(a) == "RandomFourierFeatures(5, factor=0.5, seed=2, orthogonal=True, pairs=True)"
    # the draw without pairs is unchanged by the option's existence
    old = RandomFourierFeatures(5, seed=2)
    w, b = old.weights(3)
    rng = np.random.default_rng(2)
    want_w = rng.standard_normal((3, 5)) / np.sqrt(1.5)
    np.testing.assert_allclose(w, want_w.astype(np.float32))
    np.testing.assert_allclose(b, rng.uniform(0.0, 2.0 * np.pi, 5).astype(np.float32))
    # a map pickled before the option loads without pairs
    state = old.__getstate__()
    del state["pairs"]
    back = RandomFourierFeatures.__new__(RandomFourierFeatures)
    back.__setstate__(state)
    assert back == old and not back.pairs
    X = np.random.default_rng(1).standard_normal((60, 3))
    model = MKLClassifier(kernels=[a])
    for i, xi in enumerate(X):
        model.learn_one(xi, i % 3)
    model.save(tmp_path / "m.pkl")
    loaded = MKLClassifier.load(tmp_path / "m.pkl")
    assert loaded.predict(X) == model.predict(X)
    assert loaded._rff_specs[0][1].pairs
