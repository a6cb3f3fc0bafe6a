"""omkl.MKLClassifier: river conventions, learning, kernel weights, budget,
bad input, pickling and saving."""

from __future__ import annotations

import _thread
import os
import pickle
import signal
import threading

import numpy as np
import pytest
from river import checks

import omkl
from omkl import MKLClassifier, SequenceTagger
from omkl.mkl import UNBOUNDED_CONFIG


def test_river_check_estimator():
    for params in MKLClassifier._unit_test_params():
        checks.check_estimator(MKLClassifier(**params))


def blobs(n=300, seed=0, d=4):
    """Three classes: two separable by a line, one inside a ring (needs the
    Gaussian kernel)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    r = np.linalg.norm(X[:, :2], axis=1)
    y = np.where(r < 0.8, "in", np.where(X[:, 0] > 0, "right", "left"))
    return X, list(y)


#: The unbounded model that ``MKLClassifier()`` was before its drift defaults.
UNBOUNDED = UNBOUNDED_CONFIG


def accuracy(model, X, y):
    return float(np.mean([p == t for p, t in zip(model.predict(X), y, strict=True)]))


def test_learns_a_nonlinear_problem_and_weights_kernels():
    X, y = blobs(600)
    Xt, yt = blobs(300, seed=1)
    mkl = MKLClassifier(**UNBOUNDED).fit(X, y, epochs=3)
    lin = MKLClassifier(kernels=["linear"], **UNBOUNDED).fit(X, y, epochs=3)
    assert accuracy(mkl, Xt, yt) > 0.85
    assert accuracy(mkl, Xt, yt) > accuracy(lin, Xt, yt) + 0.1
    w = mkl.kernel_weights_
    assert list(w) == [
        "linear",
        "gaussian_d/32",
        "gaussian_d/16",
        "gaussian_d/8",
        "gaussian_d/4",
        "gaussian_d/2",
        "gaussian_d",
    ]
    assert abs(sum(w.values()) - 1.0) < 1e-12
    assert sum(v for k, v in w.items() if k.startswith("gaussian")) > 0.2
    hist = mkl.kernel_weights_history_
    assert [r for r, _ in hist] == [600, 1200, 1800]
    assert hist[-1][1] == pytest.approx(w)


def test_default_kernels_are_linear_and_the_bandwidth_grid():
    X, y = blobs(200)
    d = X.shape[1]
    explicit = {"linear": "linear"} | {
        ("gaussian_d" if f == 1.0 else f"gaussian_d/{round(1 / f)}"): omkl.Kernel(
            "gaussian", sigma2=d * f
        )
        for f in omkl.mkl.BANDWIDTH_GRID
    }
    a = MKLClassifier().fit(X, y)
    b = MKLClassifier(kernels=explicit).fit(X, y)
    assert a.kernel_weights_ == pytest.approx(b.kernel_weights_, rel=1e-12)
    assert a.predict(X) == b.predict(X)
    # a single Gaussian by name keeps the scale rule sigma2 = d / 2
    c = MKLClassifier(kernels=["linear", "gaussian"]).fit(X, y)
    e = MKLClassifier(
        kernels={"linear": "linear", "gaussian": omkl.Kernel("gaussian", sigma2=d / 2)}
    ).fit(X, y)
    assert c.kernel_weights_ == pytest.approx(e.kernel_weights_, rel=1e-12)
    # the tagger keeps linear + one Gaussian
    assert list(omkl.SequenceTagger().kernel_weights_) == ["linear", "gaussian"]


def test_fit_equals_learn_one_in_order():
    X, y = blobs(150)
    a = MKLClassifier(average=True).fit(X, y)
    b = MKLClassifier(average=True)
    for x, t in zip(X, y, strict=True):
        b.learn_one(x, t)
    assert a.predict(X) == b.predict(X)
    assert a.n_support_ == b.n_support_
    assert a.kernel_weights_ == pytest.approx(b.kernel_weights_, rel=1e-12)


@pytest.fixture
def sigint_raises_keyboard_interrupt():
    """Python's own SIGINT handler for the test's duration, the old one
    restored after: the test process may have been started with SIGINT
    ignored (a background job), where ``_thread.interrupt_main()`` would do
    nothing."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize(
    "config",
    [{}, {"drift_detector": None, "linear_hedge": None}],
    ids=["detector and hedge", "neither"],
)
def test_ctrl_c_during_fit_raises_keyboard_interrupt_and_keeps_whole_epochs(
    config, sigint_raises_keyboard_interrupt
):
    """Ctrl-C stops a long ``fit`` in the core: ``KeyboardInterrupt`` is
    raised, and the model holds whole epochs only (the interrupted one is
    not kept), still usable."""
    X, y = blobs(3000)  # the core checks for Ctrl-C every 256 examples
    model = MKLClassifier(**config)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.fit(X, y, epochs=1_000_000)
    finally:
        timer.cancel()
    assert model.n_rounds_ % len(X) == 0
    if model.n_rounds_:
        assert set(model.predict(X)) <= set(y)


def test_fit_with_progress_bar_and_shuffling(capsys):
    X, y = blobs(120)
    a = MKLClassifier(seed=3).fit(X, y, epochs=2, progress=True, shuffle=True)
    b = MKLClassifier(seed=3).fit(X, y, epochs=2, shuffle=True)
    assert "epoch" in capsys.readouterr().err
    assert a.predict(X) == b.predict(X)
    assert a.n_rounds_ == 240
    c = MKLClassifier(seed=4).fit(X, y, epochs=2, shuffle=True)
    assert c._state.to_bytes() != b._state.to_bytes()  # another visiting order


def test_dict_and_array_inputs_agree():
    X, y = blobs(200)
    names = [f"f{i}" for i in range(X.shape[1])]
    a, b = MKLClassifier(), MKLClassifier()
    for x, t in zip(X, y, strict=True):
        a.learn_one(x, t)
        b.learn_one(dict(zip(names, x, strict=True)), t)
    Xt, _ = blobs(50, seed=3)
    for x in Xt:
        d = dict(zip(names, x, strict=True))
        assert a.predict_one(x) == b.predict_one(d)
        pa, pb = a.predict_proba_one(x), b.predict_proba_one(d)
        assert pa == pytest.approx(pb)
        assert sum(pa.values()) == pytest.approx(1.0)
        assert max(pa, key=pa.get) == a.predict_one(x)


def test_new_features_and_labels_are_added():
    m = MKLClassifier(**UNBOUNDED)
    m.learn_one({"a": 1.0}, "x")
    m.learn_one({"a": -1.0, "b": 2.0}, "y")  # a new feature and a new label
    assert m.classes_ == ["x", "y"]
    assert m._features == ["a", "b"]
    # unseen features are ignored at prediction time, missing ones are 0
    assert m.predict_one({"a": -1.0, "b": 2.0, "zzz": 5.0}) == m.predict_one({"a": -1.0, "b": 2.0})
    assert m.predict_one({}) in ("x", "y")


def test_explicit_groups():
    X, y = blobs(400)
    m = MKLClassifier(kernels=["gaussian"], explicit_groups={"first_two": [0, 1]})
    m.fit(X, y, epochs=2)
    assert set(m.kernel_weights_) == {"gaussian", "first_two"}
    assert m.kernel_weights_["first_two"] > 0
    names = [f"f{i}" for i in range(X.shape[1])]
    md = MKLClassifier(kernels=["gaussian"], explicit_groups={"first_two": ["f0", "f1"]})
    md.fit([dict(zip(names, x, strict=True)) for x in X], y, epochs=2)
    assert md.kernel_weights_ == pytest.approx(m.kernel_weights_)


def test_ball_projection_bounds_the_group_norms():
    X, y = blobs(300)
    m = MKLClassifier(radius=0.5, lam=0.0).fit(X, y)
    assert sum(m._state.group_norms()) <= 0.5 * (1 + 1e-9)
    free = MKLClassifier(lam=0.0).fit(X, y)
    assert sum(free._state.group_norms()) > 0.5
    with pytest.raises(ValueError, match="radius"):
        MKLClassifier(radius=-1.0)


def test_budget_bounds_the_support_on_a_long_stream():
    rng = np.random.default_rng(0)
    m = MKLClassifier(max_support=25)
    for _ in range(3000):
        x = rng.normal(size=3)
        m.learn_one(x, int(x[0] > 0) + int(x[1] > 1))
        assert m.n_support_ <= 25
    assert m.n_support_ == 25
    Xt = rng.normal(size=(300, 3))
    yt = [int(x[0] > 0) + int(x[1] > 1) for x in Xt]
    assert accuracy(m, Xt, yt) > 0.75


def state_bytes(m):
    return pickle.dumps(m)


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.array([1.0, np.nan, 0.0]), "finite"),
        (np.array([1.0, 2.0]), "3 features"),
        (np.array([1.0, 2.0, 3.0, 4.0]), "3 features"),
        (np.array([[1.0, 2.0, 3.0]]), "1-D"),
        ({"a": 1.0}, "array"),
    ],
)
def test_bad_input_raises_and_leaves_the_model_unchanged(x, message):
    m = MKLClassifier()
    m.learn_one(np.array([1.0, 0.0, 0.0]), "a")
    m.learn_one(np.array([0.0, 1.0, 0.0]), "b")
    before = state_bytes(m)
    with pytest.raises(ValueError, match=message):
        m.learn_one(x, "new label")
    assert state_bytes(m) == before
    assert m.classes_ == ["a", "b"]


@pytest.mark.parametrize("make", ["default", "random_features"])
@pytest.mark.parametrize("predict_first", [False, True])
def test_a_failed_first_or_later_learn_one_leaves_the_model_unchanged(make, predict_first):
    # also before any example: nothing is cached on the model by a failed call
    from omkl.mkl import random_feature_classifier

    m = MKLClassifier() if make == "default" else random_feature_classifier(30)
    rng = np.random.default_rng(1)
    for t in range(4):
        x = rng.normal(size=3)
        if predict_first:
            m.predict_one(x)
        before = state_bytes(m)
        with pytest.raises(ValueError, match="finite"):
            m.learn_one(np.array([x[0], np.nan, x[2]]), t % 2)
        assert state_bytes(m) == before
        m.learn_one(x, t % 2)


def test_bad_dict_values_and_parameters():
    m = MKLClassifier()
    m.learn_one({"a": 1.0}, 0)
    before = state_bytes(m)
    with pytest.raises(ValueError, match="finite"):
        m.learn_one({"a": float("inf"), "new": 1.0}, 1)
    with pytest.raises(ValueError, match="real number"):
        m.learn_one({"a": "text"}, 1)
    assert state_bytes(m) == before
    with pytest.raises(ValueError, match="loss"):
        MKLClassifier(loss="squared")
    with pytest.raises(ValueError, match="lam"):
        MKLClassifier(lam=-1.0)
    with pytest.raises(ValueError, match="kernels"):
        MKLClassifier(kernels=["cubic"])
    with pytest.raises(ValueError, match="max_support"):
        MKLClassifier(max_support=0)
    with pytest.raises(ValueError, match="sigma2"):
        MKLClassifier(kernels=[omkl.Kernel("gaussian", sigma2=-1.0)])
    with pytest.raises(ValueError, match="epochs"):
        MKLClassifier().fit(np.zeros((2, 2)), [0, 1], epochs=0)


def test_fit_on_bad_data_learns_nothing():
    X, y = blobs(50)
    m = MKLClassifier().fit(X, y)
    before = state_bytes(m)
    bad = X.copy()
    bad[30, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        m.fit(bad, y)
    with pytest.raises(ValueError, match="targets"):
        m.fit(X, y[:-1])
    assert state_bytes(m) == before


def test_pickle_and_save_load(tmp_path):
    X, y = blobs(200)
    # the default (with its detector) round-trips; byte-equal pickles are
    # checked without a detector, whose name string pickle memoizes by identity
    md = MKLClassifier().fit(X, y)
    assert pickle.loads(pickle.dumps(md)).predict(X) == md.predict(X)
    m = MKLClassifier(average=True, history_every=50, drift_detector=None).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.predict(X) == m.predict(X)
    assert pickle.dumps(m2) == pickle.dumps(m)
    path = tmp_path / "model.omkl"
    m.save(path)
    assert os.listdir(tmp_path) == ["model.omkl"]  # no temporary file left
    m3 = MKLClassifier.load(path)
    assert m3.predict(X) == m.predict(X)
    assert m3.kernel_weights_history_ == m.kernel_weights_history_
    # corrupt files, wrong version, wrong class
    (tmp_path / "junk").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="junk.*not an omkl model file"):
        MKLClassifier.load(tmp_path / "junk")
    data = path.read_bytes()
    _, start = omkl._omkl.open_sealed(data, "omkl.MKLClassifier", [2])
    payload = data[start:]
    v99 = omkl._omkl.seal_header("omkl.MKLClassifier", 99, [payload]) + payload
    (tmp_path / "v99").write_bytes(v99)
    with pytest.raises(ValueError, match="v99.*version 99"):
        MKLClassifier.load(tmp_path / "v99")
    with pytest.raises(ValueError, match='saved "omkl.MKLClassifier" model'):
        omkl.SequenceTagger.load(path)
    core = m._state.to_bytes()
    _, start = omkl._omkl.open_sealed(core, "omkl-stream-mkl", [2])
    v1 = omkl._omkl.seal_header("omkl-stream-mkl", 1, [core[start:]]) + core[start:]
    with pytest.raises(ValueError, match="older omkl format"):
        omkl._omkl.StreamMkl.from_bytes(v1)


def test_progressive_validation_on_image_segments():
    from river import datasets, evaluate, metrics, preprocessing

    model = preprocessing.StandardScaler() | MKLClassifier(**UNBOUNDED)
    metric = evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    assert metric.get() > 0.90


def test_passive_aggressive_option():
    X, y = blobs(600)
    Xt, yt = blobs(300, seed=1)
    pa = MKLClassifier(passive_aggressive=True).fit(X, y, epochs=2)
    plain = MKLClassifier().fit(X, y, epochs=2)
    assert accuracy(pa, Xt, yt) > 0.85
    assert pa.kernel_weights_ != pytest.approx(plain.kernel_weights_)
    back = pickle.loads(pickle.dumps(pa))
    assert back.passive_aggressive is True
    back.learn_one(X[0], y[0])
    pa.learn_one(X[0], y[0])
    assert back.kernel_weights_ == pytest.approx(pa.kernel_weights_, rel=1e-12)
    # a tiny constant step caps the closed-form step: same model as plain steps
    a = MKLClassifier(passive_aggressive=True, schedule="constant", eta0=1e-6).fit(X[:50], y[:50])
    b = MKLClassifier(schedule="constant", eta0=1e-6).fit(X[:50], y[:50])
    assert a.kernel_weights_ == pytest.approx(b.kernel_weights_, rel=1e-9)
    with pytest.raises(ValueError, match="passive_aggressive"):
        MKLClassifier(passive_aggressive=True, loss="crf")
    with pytest.raises(ValueError, match="passive_aggressive"):
        MKLClassifier(passive_aggressive=1)


@pytest.mark.parametrize("make", [MKLClassifier, SequenceTagger])
def test_copies_are_independent_models(make):
    """copy.copy, copy.deepcopy and river's clone(include_attributes=True)
    give models whose vocabularies and Rust state move together, apart from
    the original's: the copy learns a new feature and label, the original
    predicts as before."""
    import copy

    m = make()
    chain = make is SequenceTagger
    for x, y in [({"a": 1.0}, "p"), ({"a": -1.0}, "q")] * 3:
        if chain:
            m.learn_one([x], [y])
        else:
            m.learn_one(x, y)
    probe = {"a": 1.0, "b": 1.0}
    before = m.predict_one([probe]) if chain else m.predict_one(probe)
    copies = [copy.copy(m), copy.deepcopy(m), m.clone(include_attributes=True)]
    for c in copies:
        if chain:
            c.learn_one([{"b": 2.0}], ["r"])
        else:
            c.learn_one({"b": 2.0}, "r")
        assert c.n_rounds_ == m.n_rounds_ + 1
    assert (m.predict_one([probe]) if chain else m.predict_one(probe)) == before
    assert m.n_rounds_ == 6
