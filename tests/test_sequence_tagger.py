"""omkl.SequenceTagger: a chain task where transitions matter, bad input,
dict sequences, fit, pickling and saving."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from omkl import MKLClassifier, SequenceTagger

MEANS = np.array([[1.0, 0.0], [-0.5, 0.87], [-0.5, -0.87]])


def sticky_chains(n_seqs, seed, stay=0.9, noise=1.0):
    """A hidden Markov chain over 3 labels that mostly keeps its label,
    with noisy Gaussian emissions: a position alone is ambiguous, its
    neighbours are not."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_seqs):
        n = int(rng.integers(4, 12))
        y = [int(rng.integers(3))]
        for _ in range(n - 1):
            y.append(y[-1] if rng.random() < stay else int(rng.integers(3)))
        X.append(MEANS[y] + noise * rng.normal(size=(n, 2)))
        Y.append([f"s{v}" for v in y])
    return X, Y


def position_accuracy(pred, gold):
    hits = sum(
        p == g for ps, gs in zip(pred, gold, strict=True) for p, g in zip(ps, gs, strict=True)
    )
    return hits / sum(len(g) for g in gold)


@pytest.mark.parametrize("loss", ["hinge", "crf"])
def test_transitions_beat_per_position_classification(loss):
    X, Y = sticky_chains(300, seed=0)
    Xt, Yt = sticky_chains(150, seed=1)
    tagger = SequenceTagger(loss=loss).fit(X, Y, epochs=2)
    clf = MKLClassifier(loss=loss).fit(np.vstack(X), [y for ys in Y for y in ys], epochs=2)
    chain_acc = position_accuracy(tagger.predict(Xt), Yt)
    flat = clf.predict(np.vstack(Xt))
    off, per_pos = 0, []
    for ys in Yt:
        per_pos.append(flat[off : off + len(ys)])
        off += len(ys)
    flat_acc = position_accuracy(per_pos, Yt)
    assert flat_acc < 0.8  # the emissions alone are ambiguous
    assert chain_acc > flat_acc + 0.08, (chain_acc, flat_acc)
    w = tagger.kernel_weights_
    assert set(w) == {"linear", "gaussian"}
    assert sum(w.values()) == pytest.approx(1.0)
    assert [r for r, _ in tagger.kernel_weights_history_] == [300, 600]


def test_fit_equals_learn_one_and_predict_equals_predict_one():
    X, Y = sticky_chains(60, seed=2)
    a = SequenceTagger(average=True).fit(X, Y)
    b = SequenceTagger(average=True)
    for xs, ys in zip(X, Y, strict=True):
        assert b.learn_one(xs, ys) is None
    assert a.predict(X) == b.predict(X)
    assert [b.predict_one(xs) for xs in X] == b.predict(X)
    assert a.n_support_ == b.n_support_ > 0


def test_dict_sequences():
    X, Y = sticky_chains(80, seed=3)
    t_arr, t_dict = SequenceTagger(), SequenceTagger()
    for xs, ys in zip(X, Y, strict=True):
        t_arr.learn_one(xs, ys)
        t_dict.learn_one([{"u": float(r[0]), "v": float(r[1])} for r in xs], ys)
    for xs in X[:20]:
        dicts = [{"v": float(r[1]), "u": float(r[0])} for r in xs]
        assert t_dict.predict_one(dicts) == t_arr.predict_one(xs)


@pytest.mark.parametrize(
    ("xs", "ys", "message"),
    [
        (np.zeros((0, 2)), [], "empty"),
        ([], [], "empty"),
        (np.zeros((3, 2)), ["s0", "s1"], "3 labels"),
        (np.array([[0.0, 1.0], [np.nan, 0.0]]), ["s0", "s1"], "finite"),
        (np.zeros((2, 3)), ["s0", "s1"], "2 features"),
        (np.zeros(4), ["s0"], "n x d"),
        ([{"u": 1.0}], ["s0"], "array"),
    ],
)
def test_bad_input_raises_and_leaves_the_model_unchanged(xs, ys, message):
    X, Y = sticky_chains(10, seed=4)
    t = SequenceTagger().fit(X, Y)
    before = pickle.dumps(t)
    with pytest.raises(ValueError, match=message):
        t.learn_one(xs, ys[:-1] + ["a label never seen"] if ys else ys)
    assert pickle.dumps(t) == before
    with pytest.raises(ValueError, match="empty"):
        t.predict_one(np.zeros((0, 2)))


def test_pickle_and_save_load(tmp_path):
    X, Y = sticky_chains(40, seed=5)
    t = SequenceTagger(max_support=30, history_every=10).fit(X, Y)
    assert t.n_support_ <= 30
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.predict(X) == t.predict(X)
    path = tmp_path / "tagger.omkl"
    t.save(path)
    t3 = SequenceTagger.load(path)
    assert t3.predict(X) == t.predict(X)
    assert t3.kernel_weights_history_ == t.kernel_weights_history_
    assert len(t.kernel_weights_history_) >= 4
    with pytest.raises(ValueError, match='tagger.omkl.*expected a saved "omkl.MKLClassifier"'):
        MKLClassifier.load(path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="tagger.omkl.*truncated"):
        SequenceTagger.load(path)


def test_precomputed_gram_tagger_learns_predicts_and_refuses_to_pickle():
    """Positions are input ids of the precomputed Gram matrix; such a model
    is not self-contained, so pickling it is a clear ValueError."""
    import pickle

    import omkl

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    tagger = omkl.SequenceTagger(
        kernels={"lin": omkl.PrecomputedGram(X @ X.T)},
        explicit_groups={"raw": X},
        labels=["neg", "pos"],
        transition_lam=1e-3,
    )
    seqs = [rng.integers(0, 40, size=4) for _ in range(60)]
    ys = [["pos" if X[i, 0] > 0 else "neg" for i in s] for s in seqs]
    tagger.fit(seqs, ys, epochs=3, shuffle=True)
    pred = [tagger.predict_one(s) for s in seqs]
    acc = np.mean(np.concatenate(pred) == np.concatenate(ys))
    assert acc > 0.9
    assert set(tagger.coef_) == {"lin", "raw"} and tagger.coef_["lin"].shape == (2, 40)
    with pytest.raises(ValueError, match="precomputed Gram"):
        pickle.dumps(tagger)
    with pytest.raises(ValueError, match="unseen label"):
        tagger.learn_one(seqs[0], ["neg", "other", "pos", "neg"])
