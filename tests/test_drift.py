"""Drift options of MKLClassifier and SequenceTagger: the detector hook
against prequential errors computed apart, reactions that keep a working
model, random Fourier features against an explicit run on the same
features, hashed dict features against arrays hashed in the test, and bad
input."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from feature_groups import assert_feature_group_equals_explicit_group
from river import base, drift

import omkl
from omkl import MKLClassifier, RandomFourierFeatures, SequenceTagger
from omkl.mkl import UNBOUNDED_CONFIG


class SpyDetector(base.DriftDetector):
    """Records what it is fed and reports a drift every ``every`` updates."""

    def __init__(self, every: int = 7):
        super().__init__()
        self.every = every
        self.seen: list[bool] = []

    def update(self, x):
        self.seen.append(bool(x))
        self._drift_detected = len(self.seen) % self.every == 0


#: The unbounded model that ``MKLClassifier()`` was before its drift defaults.
UNBOUNDED = UNBOUNDED_CONFIG


def xor_stream(n, seed=0, flip_at=None):
    rng = np.random.default_rng(seed)
    for i in range(n):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = bool(x["a"] * x["b"] > 0)
        if flip_at is not None and i >= flip_at:
            y = not y
        yield x, y


@pytest.mark.parametrize("reaction", ["restart", "reset"])
def test_detector_sees_the_prequential_errors_and_reactions_keep_a_model(reaction):
    model = MKLClassifier(
        kernels=["linear", "gaussian"],
        drift_detector=SpyDetector(7),
        drift_reaction=reaction,
        max_support=40,
        budget_rule="oldest",
        linear_hedge=None,  # predictions of the MKL model itself
    )
    errors = []
    for i, (x, y) in enumerate(xor_stream(200, flip_at=100)):
        # the error of the prediction before learning, on a copy
        before = copy.deepcopy(model)
        errors.append(before.predict_one(x) != y if i > 0 else True)
        model.learn_one(x, y)
        if (i + 1) % 7 == 0:
            if reaction == "reset":
                assert model.n_support_ == 0
                assert all(v == 0.0 for v in model.group_norms_.values())
            assert model.predict_one(x) in (False, True)
            back = pickle.loads(pickle.dumps(model))
            assert back.predict_one({"a": 1.0, "b": 1.0}) == model.predict_one({"a": 1.0, "b": 1.0})
    assert model._detector.seen[1:] == errors[1:]
    assert model.n_drifts_ == 200 // 7
    # the constructor's detector is a template: it is never fed
    assert model.drift_detector.seen == []


def test_detector_restart_steps_with_eta0_again_after_a_drift():
    """With a tiny lam, a new support input's coefficient is the step size:
    eta0 / sqrt(t) without a restart, eta0 right after one."""
    coefs = {}
    for det in (None, SpyDetector(30)):
        model = MKLClassifier(
            kernels=["linear"],
            lam=1e-12,
            **{**UNBOUNDED, "eta0": 0.5, "drift_detector": det, "drift_reaction": "restart"},
        )
        for x, y in xor_stream(30):
            model.learn_one(x, y)
        # a new input far from the others, labelled against the prediction
        x = {"a": 50.0, "b": -40.0}
        y = not model.predict_one(x)
        model.learn_one(x, y)
        coefs[det is None] = np.abs(model.coef_["linear"][:, -1]).max()
    assert coefs[True] == pytest.approx(0.5 / np.sqrt(31), rel=1e-9)
    assert coefs[False] == pytest.approx(0.5, rel=1e-9)


def test_save_and_load_keep_detectors_and_random_features(tmp_path):
    model = MKLClassifier(
        kernels=["linear", RandomFourierFeatures(16, sigma2=2.0, seed=3)],
        hash_features=8,
        drift_detector=drift.ADWIN(delta=0.01),
        budget_rule="oldest",
        max_support=50,
    )
    for x, y in xor_stream(400, flip_at=200):
        model.learn_one(x, y)
    model.save(tmp_path / "m.omkl")
    back = MKLClassifier.load(tmp_path / "m.omkl")
    assert back.kernels == model.kernels
    assert isinstance(back.drift_detector, drift.ADWIN)
    assert back.drift_detector._get_params() == model.drift_detector._get_params()
    assert back.drift_detector is not model.drift_detector
    probe = [x for x, _ in xor_stream(50, seed=9)]
    assert [back.predict_one(x) for x in probe] == [model.predict_one(x) for x in probe]
    # the loaded model goes on learning and watching for drift
    for x, y in xor_stream(50, seed=11):
        back.learn_one(x, y)


def test_river_detectors_and_budget_keep_a_saved_model(tmp_path):
    model = MKLClassifier(
        drift_detector=drift.ADWIN(),
        forgetting=0.999,
        max_support=100,
        budget_rule="oldest",
    )
    for x, y in xor_stream(1000, flip_at=500):
        model.learn_one(x, y)
    assert model.n_support_ == 100
    assert model.n_drifts_ >= 1
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(model))
    back = pickle.loads((tmp_path / "m.pkl").read_bytes())
    assert back._detector is not model._detector
    probe = [x for x, _ in xor_stream(50, seed=9)]
    assert [back.predict_one(x) for x in probe] == [model.predict_one(x) for x in probe]


def test_random_feature_group_equals_an_explicit_group_on_the_same_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = list(np.where(np.linalg.norm(X, axis=1) < 1.5, "in", "out"))
    rff = RandomFourierFeatures(64, sigma2=1.5, seed=4)
    # the same model written out: a linear kernel on x is an explicit group
    # on x's columns, the random features an explicit group on z's
    a, b = assert_feature_group_equals_explicit_group(rff, "rff", X, y, 1e-5, 1e-9)
    assert a.kernel_weights_["rff"] == pytest.approx(b.kernel_weights_["rff"], rel=1e-5)
    assert a.n_support_ > 0  # the linear kernel keeps its support inputs


def test_random_features_approximate_the_gaussian_kernel():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    sigma2 = 2.5
    Z = RandomFourierFeatures(8000, sigma2=sigma2, seed=2).transform(X)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-sq / (2 * sigma2))
    assert np.abs(Z @ Z.T - K).max() < 0.06
    # the same seed gives the same features; the scale rule uses d
    np.testing.assert_array_equal(Z, RandomFourierFeatures(8000, 2.5, seed=2).transform(X))
    assert RandomFourierFeatures(8, factor=0.25).bandwidth(12) == 3.0


def test_a_model_of_random_features_only_keeps_a_constant_size():
    model = MKLClassifier(kernels=[RandomFourierFeatures(100)], hash_features=8)
    sizes = []
    right = 0
    for i, (x, y) in enumerate(xor_stream(1500)):
        if i >= 1000:
            right += model.predict_one(x) == y
        model.learn_one(x, y)
        if i in (200, 1499):
            sizes.append(model._state.nbytes)
    assert model.n_support_ == 0
    assert sizes[0] == sizes[1]
    assert right > 400  # of 500; xor is not linear in the inputs


def hashed(x, n):
    """The signed hashing of dict features, written out: column
    ``h mod n``, sign from the top bit of the xxh3-64 hash of the name."""
    v = np.zeros(n, dtype=np.float32)
    for k, val in x.items():
        h = omkl._omkl.hash_feature(str(k))
        v[h % n] += (-1.0 if h >> 63 else 1.0) * val
    return v


def test_hashed_dict_features_equal_arrays_hashed_apart_and_do_not_grow():
    rng = np.random.default_rng(3)
    n = 16
    gauss = omkl.Kernel("gaussian", sigma2=2.0)
    a = MKLClassifier(kernels=["linear", gauss], hash_features=n, **UNBOUNDED)
    b = MKLClassifier(kernels=["linear", gauss], **UNBOUNDED)
    for i in range(400):
        # a new feature name every example, plus two recurring ones
        x = {"a": float(rng.normal()), "b": float(rng.normal()), f"new{i}": 0.1}
        y = bool(x["a"] > x["b"])
        v = hashed(x, n)
        assert a.predict_one(x) == b.predict_one(v)
        a.learn_one(x, y)
        b.learn_one(v, y)
    assert a._state.dim == n
    assert a._features == []
    assert a.group_norms_ == pytest.approx(b.group_norms_, rel=1e-6)


def test_dict_features_with_random_features_need_hashing():
    model = MKLClassifier(kernels=[RandomFourierFeatures(10)])
    with pytest.raises(ValueError, match="hash_features"):
        model.learn_one({"a": 1.0}, True)
    model.learn_one(np.array([1.0, 2.0]), True)  # arrays have a fixed width


def test_sequence_tagger_budget_and_drift_options():
    rng = np.random.default_rng(0)
    tagger = SequenceTagger(
        max_support=25,
        budget_rule="oldest",
        forgetting=0.99,
        drift_detector=drift.ADWIN(),
        schedule="constant",
        eta0=0.5,
    )
    for i in range(300):
        n = int(rng.integers(2, 7))
        labels = ["ab"[(p + (i >= 150)) % 2] for p in range(n)]
        tagger.learn_one(rng.normal(size=(n, 2)), labels)
        assert tagger.n_support_ <= 25
    out = tagger.predict_one(rng.normal(size=(4, 2)))
    assert out == ["b", "a", "b", "a"]
    back = pickle.loads(pickle.dumps(tagger))
    assert back.predict_one(np.ones((3, 2))) == tagger.predict_one(np.ones((3, 2)))
    # random features in a tagger: positions become [x | z]
    tagger = SequenceTagger(kernels=["linear", RandomFourierFeatures(32)])
    for _ in range(100):
        n = int(rng.integers(2, 7))
        tagger.learn_one(rng.normal(size=(n, 2)), ["ab"[p % 2] for p in range(n)])
    assert tagger.predict_one(rng.normal(size=(3, 2))) == ["a", "b", "a"]
    assert set(tagger.kernel_weights_) == {"linear", "rff"}


def test_forget_on_mistakes_keeps_the_model_through_rounds_it_gets_right():
    """After a separable concept is learned with margin, rounds of zero
    hinge loss change nothing with ``forget_on_mistakes`` (and halve the
    model each round without it); a mistake still shrinks it."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(400, 2))
    X[:, 0] += np.where(X[:, 0] > 0, 2.0, -2.0)  # a gap of 4 around x0 = 0
    X = X.astype(np.float32).astype(np.float64)  # the core's inputs are float32
    y = [bool(v) for v in X[:, 0] > 0]
    kw = dict(
        kernels=["linear"],
        lam=1e-12,
        eta0=1.0,
        forgetting=0.5,
        linear_rate=1.0,
        linear_hedge=None,
        drift_detector=None,
        intercept=False,
        labels=[False, True],
    )
    coefs = {}
    for on_mistakes in (True, False):
        model = MKLClassifier(forget_on_mistakes=on_mistakes, **kw)
        for xi, yi in zip(X[:300], y[:300], strict=True):
            model.learn_one(xi, yi)
        if on_mistakes:
            # every later example has zero hinge loss: a margin of at least 1
            scores = np.array([model._scores(xi) for xi in X[300:]])
            margin = np.where(y[300:], 1.0, -1.0) * (scores[:, 1] - scores[:, 0])
            assert model.classes_ == [False, True] and margin.min() >= 1.0
        before = model.coef_["linear"]
        for xi, yi in zip(X[300:], y[300:], strict=True):
            model.learn_one(xi, yi)
        coefs[on_mistakes] = (before, model.coef_["linear"])
    kept_before, kept = coefs[True]
    np.testing.assert_allclose(kept, kept_before, rtol=1e-9)
    # forgetting after every round halves the model each round, which then
    # errs and steps again: it is another model
    lost_before, lost = coefs[False]
    assert np.abs(lost - lost_before).max() > 0.1 * np.abs(lost_before).max()
    # a mistake (the other label on a training input, hinge loss >= 2): the
    # hinge step (eta0 = 1), then the model times 0.5
    model = MKLClassifier(forget_on_mistakes=True, **kw)
    for xi, yi in zip(X[:300], y[:300], strict=True):
        model.learn_one(xi, yi)
    want = model.coef_["linear"].copy()
    wrong = not y[0]
    want[int(wrong)] += X[0]
    want[int(y[0])] -= X[0]
    model.learn_one(X[0], wrong)
    np.testing.assert_allclose(model.coef_["linear"], 0.5 * want, rtol=1e-9)


def test_forget_after_waits_for_that_many_mistakes_and_survives_pickling():
    """With ``forget_after=n`` (and ``forget_on_mistakes``) the first ``n``
    mistakes do not shrink the model: until then it is the model without
    forgetting, bit for bit; later ones do. A pickled model keeps its count
    of the mistakes waited for."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = [int(a * b > 0) for a, b in X[:, :2]]
    kw = dict(
        kernels=["linear", "gaussian"],
        forget_on_mistakes=True,
        linear_hedge=None,
        drift_detector=None,
        labels=[0, 1],
    )
    wait = 15
    waiting = MKLClassifier(forgetting=0.9, forget_after=wait, **kw)
    plain = MKLClassifier(forgetting=1.0, **kw)
    mistakes, copied = 0, None
    for t, (xi, yi) in enumerate(zip(X, y, strict=True)):
        before = plain._scores(xi)
        waiting.learn_one(xi, yi)
        plain.learn_one(xi, yi)
        # a hinge loss >= cost (1): the right label's score leads by <= 0
        mistakes += before is None or before[yi] <= before[1 - yi]
        if mistakes <= wait:
            assert waiting._state.group_norms() == plain._state.group_norms(), t
            assert [waiting._scores(p) for p in X[:5]] == [plain._scores(p) for p in X[:5]], t
        if t == 40:
            copied = pickle.loads(pickle.dumps(waiting))
            twin = copy.deepcopy(waiting)
    assert mistakes > wait + 10
    assert waiting._state.group_norms() != plain._state.group_norms()
    # the pickled copy goes on as the original did
    for xi, yi in zip(X[41:], y[41:], strict=True):
        copied.learn_one(xi, yi)
        twin.learn_one(xi, yi)
    assert copied._state.to_bytes() == waiting._state.to_bytes() == twin._state.to_bytes()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10", None])
def test_forget_after_is_checked(bad):
    with pytest.raises(ValueError, match="`forget_after`"):
        MKLClassifier(forget_after=bad)
    with pytest.raises(ValueError, match="`forget_after`"):
        SequenceTagger(forget_after=bad)


def test_forget_on_mistakes_is_checked():
    with pytest.raises(ValueError, match="`forget_on_mistakes`"):
        MKLClassifier(forget_on_mistakes=1)
    with pytest.raises(ValueError, match="`forget_on_mistakes`"):
        MKLClassifier(forget_on_mistakes=True, loss="crf")
    with pytest.raises(ValueError, match="`forget_on_mistakes`"):
        SequenceTagger(forget_on_mistakes=True, loss="crf")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"drift_detector": object()}, "drift_detector"),
        ({"drift_detector": "NoSuchDetector"}, "drift_detector"),
        ({"drift_detector": drift.ADWIN}, "drift_detector"),
        ({"forgetting": 0.0}, "forgetting"),
        ({"forgetting": 1.5}, "forgetting"),
        ({"forgetting": float("nan")}, "forgetting"),
        ({"forgetting": -0.2}, "forgetting"),
        ({"budget_rule": "newest"}, "budget_rule"),
        ({"drift_reaction": "panic"}, "drift_reaction"),
        ({"hash_features": 0}, "hash_features"),
    ],
)
def test_bad_drift_options_name_the_argument(kwargs, name):
    for cls in (MKLClassifier, SequenceTagger):
        with pytest.raises(ValueError, match=f"`{name}`"):
            cls(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": -5}, "n_components"),
        ({"n_components": 10, "sigma2": float("nan")}, "sigma2"),
        ({"n_components": 10, "sigma2": float("inf")}, "sigma2"),
        ({"n_components": 10, "sigma2": 0.0}, "sigma2"),
        ({"n_components": 10, "factor": float("inf")}, "factor"),
    ],
)
def test_bad_random_features_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        RandomFourierFeatures(**kwargs)


def test_a_primal_linear_group_is_the_linear_kernel_without_support():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = list(np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "a", np.where(X[:, 2] > 0, "b", "c")))
    kinds = {}
    for group in ("kernel", "primal"):
        model = MKLClassifier(
            kernels=["linear", "gaussian"], linear_group=group, max_support=None, intercept=False
        )
        preds = []
        for i in range(len(y)):
            preds.append(model.predict_one(X[i]))
            model.learn_one(X[i], y[i])
        kinds[group] = (preds, model.group_norms_, model)
    assert kinds["kernel"][0] == kinds["primal"][0]
    assert kinds["kernel"][1] == pytest.approx(kinds["primal"][1], rel=1e-6)
    primal = kinds["primal"][2]
    assert primal.coef_["linear"].shape == (3, 3)  # labels x input columns
    # with a budget only the Gaussian loses support inputs; dicts work too
    model = MKLClassifier(linear_group="primal", max_support=10, intercept=False)
    for x, t in xor_stream(100):
        model.learn_one(x, t)
    assert model.n_support_ == 10
    assert model.coef_["linear"].shape == (2, 2)
    with pytest.raises(ValueError, match="`linear_group`"):
        MKLClassifier(linear_group="dual")


def test_pickles_from_before_the_drift_options_load():
    model = MKLClassifier(kernels=["linear", "gaussian"], max_support=10)
    for x, y in xor_stream(50):
        model.learn_one(x, y)
    state = model.__getstate__()
    for key in (
        "forgetting",
        "budget_rule",
        "drift_detector",
        "drift_reaction",
        "hash_features",
        "linear_group",
        "_detector",
        "n_drifts_",
        "_rff_specs",
        "_primal_names",
        "_scale_d",
    ):
        del state[key]
    old = object.__new__(MKLClassifier)
    old.__setstate__(state)
    probe = [x for x, _ in xor_stream(20, seed=5)]
    assert [old.predict_one(x) for x in probe] == [model.predict_one(x) for x in probe]
    old.learn_one({"a": 1.0, "b": 1.0}, True)
    # the old bytes had the old removal rule
    assert old.budget_rule == "smallest"


def test_intercept_is_a_constant_feature_the_gaussians_do_not_see():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 2))
    y = list(X[:, 0] + X[:, 1] > 1.0)  # a boundary away from the origin
    ones = np.hstack([X, np.ones((300, 1))])
    # arrays: intercept=True is the same model as a column of ones given by
    # hand (with the bandwidth of the 2 input features)
    gauss = omkl.Kernel("gaussian", sigma2=1.0)
    a = MKLClassifier(kernels=["linear", gauss], intercept=True, linear_group="primal")
    b = MKLClassifier(kernels=["linear", gauss], linear_group="primal", intercept=False)
    for i in range(300):
        assert a.predict_one(X[i]) == b.predict_one(ones[i])
        a.learn_one(X[i], y[i])
        b.learn_one(ones[i], y[i])
    assert a.group_norms_ == pytest.approx(b.group_norms_, rel=1e-9)
    assert a.coef_["linear"].shape == (2, 3)
    # dicts: the constant is the feature "__intercept__"
    c = MKLClassifier(intercept=True, linear_group="primal")
    for i in range(50):
        c.learn_one({"a": X[i, 0], "b": X[i, 1]}, y[i])
    assert "__intercept__" in c._features
    pickle.loads(pickle.dumps(c)).predict_one({"a": 1.0, "b": 1.0})
    with pytest.raises(ValueError, match="`intercept`"):
        MKLClassifier(intercept=1)


def test_a_detector_by_name_is_built_from_river_drift():
    model = MKLClassifier(drift_detector="PageHinkley")
    assert type(model._detector) is drift.PageHinkley
    assert model.drift_detector == "PageHinkley"  # the parameter is kept as given
    assert type(MKLClassifier()._detector) is drift.ADWIN
    assert MKLClassifier(drift_detector=None)._detector is None
    with pytest.raises(ValueError, match="`drift_detector`"):
        SequenceTagger(drift_detector="ADWIN")  # names are a classifier option


@pytest.mark.parametrize(
    ("reaction", "average", "shuffle"),
    [("reset", True, False), ("restart", False, False), ("reset", False, True)],
)
def test_sequence_tagger_fit_follows_the_detector_as_learn_one_does(reaction, average, shuffle):
    rng = np.random.default_rng(3)
    seqs = [rng.normal(size=(int(rng.integers(2, 6)), 2)) for _ in range(300)]
    # the labels of the second half are swapped
    tags = [["ab"[int(v[0] > 0) ^ (k >= 150)] for v in s] for k, s in enumerate(seqs)]
    kw = {
        "drift_detector": drift.ADWIN(),
        "drift_reaction": reaction,
        "average": average,
        "seed": 4,
    }
    fitted = SequenceTagger(**kw).fit(seqs, tags, epochs=2, shuffle=shuffle)
    one = SequenceTagger(**kw)
    order = np.random.default_rng(4)
    for _ in range(2):
        for i in order.permutation(len(seqs)) if shuffle else range(len(seqs)):
            one.learn_one(seqs[i], tags[i])
        one._state.record_beta()
    if not shuffle:
        assert one.n_drifts_ >= 2
    assert fitted.n_drifts_ == one.n_drifts_
    assert fitted._state.to_bytes() == one._state.to_bytes()
    assert pickle.dumps(fitted._detector) == pickle.dumps(one._detector)
    assert fitted.predict(seqs) == one.predict(seqs)
