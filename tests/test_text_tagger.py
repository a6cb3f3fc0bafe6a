"""TextTagger: Alg. 1 on chains against a dense numpy reference with
brute-force decoding, and its behaviour as an estimator."""

from __future__ import annotations

import itertools
import math
import pickle
import zlib

import numpy as np
import pytest

import omkl
from omkl import _omkl
from omkl.tagging import TextTagger, token_features

NB = 16


def bucket(name: str) -> int:
    return _omkl.hash_feature(name) % NB


class Reference:
    """Alg. 1 on a chain with dense weights: group 0 holds the transitions
    (bucket 0 the start, 1 the stop, p + 2 the scores after label p), the
    templates follow in order of first appearance; brute-force decoding."""

    def __init__(self, loss, regs, eta0, average, lmax=4):
        self.loss, self.regs, self.eta0, self.average = loss, regs, eta0, average
        self.groups = ["<transitions>"]
        self.W = [np.zeros((NB, lmax))]
        self.b = np.zeros(lmax)
        self.sumW = [np.zeros((NB, lmax))]
        self.sumb = np.zeros(lmax)
        self.t = 0
        self.L = 0

    def entries(self, xs, register):
        out = []
        for i, tok in enumerate(xs):
            for k, v in tok.items():
                if k not in self.groups:
                    if not register:
                        continue
                    self.groups.append(k)
                    self.W.append(np.zeros_like(self.W[0]))
                    self.sumW.append(np.zeros_like(self.W[0]))
                g = self.groups.index(k)
                if isinstance(v, str):
                    out.append((i, g, bucket(f"{k}={v}"), 1.0))
                else:
                    out.append((i, g, bucket(k), float(v)))
        return out

    def tables(self, xs, averaged, register=False):
        W, b = self.W, self.b
        if averaged and self.average and self.t > 0:
            W = [s / self.t for s in self.sumW]
            b = self.sumb / self.t
        L = self.L
        em = np.tile(b[:L], (len(xs), 1))
        for i, g, j, x in self.entries(xs, register):
            em[i] += x * W[g][j, :L]
        T = W[0]
        tr = np.vstack([T[2 : L + 2, :L], T[0, :L], T[1, :L]])
        return em, tr

    def score(self, em, tr, y):
        L = em.shape[1]
        s = tr[L, y[0]] + tr[L + 1, y[-1]] + sum(em[i, v] for i, v in enumerate(y))
        return s + sum(tr[y[i - 1], y[i]] for i in range(1, len(y)))

    def parts(self, n, L, y):
        gem, gtr = np.zeros((n, L)), np.zeros((L + 2, L))
        for i, v in enumerate(y):
            gem[i, v] += 1
        gtr[L, y[0]] += 1
        gtr[L + 1, y[-1]] += 1
        for i in range(1, n):
            gtr[y[i - 1], y[i]] += 1
        return gem, gtr

    def marginals(self, xs):
        em, tr = self.tables(xs, True)
        n, L = em.shape
        ys = list(itertools.product(range(L), repeat=n))
        s = np.array([self.score(em, tr, y) for y in ys])
        p = np.exp(s - s.max())
        p /= p.sum()
        mu = np.zeros((n, L))
        for y, py in zip(ys, p, strict=True):
            for i, v in enumerate(y):
                mu[i, v] += py
        return mu

    def learn(self, xs, y):
        self.L = max(self.L, max(y) + 1)
        em, tr = self.tables(xs, False, register=True)
        n, L = em.shape
        ys = list(itertools.product(range(L), repeat=n))
        gold_em, gold_tr = self.parts(n, L, y)
        if self.loss == "log":
            s = np.array([self.score(em, tr, c) for c in ys])
            p = np.exp(s - s.max())
            p /= p.sum()
            gem, gtr = -gold_em, -gold_tr
            for c, pc in zip(ys, p, strict=True):
                a, b = self.parts(n, L, c)
                gem, gtr = gem + pc * a, gtr + pc * b
        else:
            aug = [
                self.score(em, tr, c) + sum(u != v for u, v in zip(c, y, strict=True)) for c in ys
            ]
            top = max(aug)
            # Viterbi's ties: the smallest last label, then the smallest before it, ...
            best = min(
                (c for c, a in zip(ys, aug, strict=True) if a >= top - 1e-12), key=lambda c: c[::-1]
            )
            gem, gtr = np.zeros((n, L)), np.zeros((L + 2, L))
            if list(best) != list(y):
                a, b = self.parts(n, L, best)
                gem, gtr = a - gold_em, b - gold_tr
        self.t += 1
        eta = self.eta0 / math.sqrt(self.t)
        for i, g, j, x in self.entries(xs, False):
            self.W[g][j, :L] -= eta * x * gem[i]
        self.b[:L] -= eta * gem.sum(axis=0)
        T = self.W[0]
        T[2 : L + 2, :L] -= eta * gtr[:L]
        T[0, :L] -= eta * gtr[L]
        T[1, :L] -= eta * gtr[L + 1]
        for name, *p in self.regs:
            self.prox(name, p, eta)
        for s, w in zip(self.sumW, self.W, strict=True):
            s += w
        self.sumb += self.b

    def prox(self, name, p, eta):
        if name == "l1":
            for w in self.W:
                w[:] = np.sign(w) * np.maximum(np.abs(w) - eta * p[0], 0.0)
            return
        v = np.array([np.linalg.norm(w) for w in self.W])
        lam = p[0]
        if name == "l2_squared":
            u = v / (1 + eta * lam)
        elif name == "group_lasso":
            u = np.maximum(v - eta * lam, 0.0)
        else:  # squared_l21: u = max(v - eta lam sum(u), 0)
            srt = np.sort(v)[::-1]
            tau = 0.0
            for k in range(1, len(v) + 1):
                t_k = eta * lam * srt[:k].sum() / (1 + eta * lam * k)
                if srt[k - 1] > t_k:
                    tau = t_k
            u = np.maximum(v - tau, 0.0)
        for w, a, c in zip(self.W, v, u, strict=True):
            if a > 0:
                w *= c / a


def stream(seed, count=6):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 4))
        xs = [
            {"a": float(rng.normal()), "w": str(rng.integers(0, 3)), "b": float(rng.normal())}
            for _ in range(n)
        ]
        if rng.random() < 0.3:
            xs[0]["late"] = float(rng.normal())
        yield xs, [int(v) for v in rng.integers(0, 3, size=n)]


REGS = [
    [("l2_squared", 0.05)],
    [("group_lasso", 0.05)],
    [("squared_l21", 0.05)],
    [("l1", 0.02)],
    [("l1", 0.02), ("l2_squared", 0.05)],
]


def test_group_norm_of_weights_that_cancel_to_zero_is_exact():
    # On this stream the CRF gradients of group "w" cancel, so its weights
    # return to about 1e-16. A norm tracked by updates keeps about 1e-17 of
    # rounding in ‖w‖², whose square root (5e-9) is far from the true norm.
    tagger = TextTagger(loss="log", regularizer=[("l2_squared", 0.05)], eta0=0.7, n_buckets=NB)
    ref = Reference("log", [("l2_squared", 0.05)], 0.7, False)
    for xs, ys in stream(366):
        tagger.learn_one(xs, [f"L{v}" for v in ys])
        ref.learn(xs, [tagger.labels_.index(f"L{v}") for v in ys])
        norms = tagger.group_norms_
        for g, w in zip(ref.groups, ref.W, strict=True):
            assert abs(norms[g] - np.linalg.norm(w)) < 1e-12, g


@pytest.mark.parametrize("loss", ["log", "hinge"])
@pytest.mark.parametrize("regs", REGS, ids=lambda r: "+".join(n for n, *_ in r))
@pytest.mark.parametrize("average", [False, True])
def test_equals_dense_reference_with_brute_force_decoding(loss, regs, average):
    tagger = TextTagger(loss=loss, regularizer=regs, eta0=0.7, average=average, n_buckets=NB)
    ref = Reference(loss, regs, 0.7, average)
    probe = [{"a": 0.3, "w": "1", "b": -1.2}, {"a": -0.5, "w": "2", "late": 1.0}]
    for xs, ys in stream(zlib.crc32(f"{loss} {len(regs)}".encode()) % 1000):
        # label ids in order of first appearance are the labels themselves
        labels = [f"L{v}" for v in ys]
        tagger.learn_one(xs, labels)
        ref.learn(xs, [tagger.labels_.index(label) for label in labels])
        mu = tagger.predict_marginals_one(probe)
        got = np.array([[row[label] for label in tagger.labels_] for row in mu])
        np.testing.assert_allclose(got, ref.marginals(probe), rtol=0, atol=1e-9)
        norms = tagger.group_norms_
        want = ref.W if not average else [s / ref.t for s in ref.sumW]
        for g, w in zip(ref.groups, want, strict=True):
            assert abs(norms[g] - np.linalg.norm(w)) < 1e-9, g
        em, tr = ref.tables(probe, True)
        t = tagger.transitions_
        np.testing.assert_allclose(t["bigram"], tr[:-2], atol=1e-9)
        np.testing.assert_allclose(t["start"], tr[-2], atol=1e-9)
        np.testing.assert_allclose(t["stop"], tr[-1], atol=1e-9)


def test_learns_a_tagging_task_and_its_marginals_sum_to_one():
    rng = np.random.default_rng(1)
    words = {"DET": ["the", "a", "this"], "NOUN": ["dog", "cat", "idea"], "VERB": ["runs", "is"]}

    def sentence():
        tags = ["DET", "NOUN", "VERB"] + (["DET", "NOUN"] if rng.random() < 0.5 else [])
        return [str(rng.choice(words[t])) for t in tags], tags

    train = [sentence() for _ in range(200)]
    test = [sentence() for _ in range(50)]
    for loss in ["log", "hinge"]:
        tagger = TextTagger(loss=loss, average=True, n_buckets=1 << 10)
        tagger.fit([token_features(w) for w, _ in train], [t for _, t in train], epochs=2)
        pred = tagger.predict([token_features(w) for w, _ in test])
        gold = [t for _, t in test]
        acc = np.mean(
            [p == g for ps, gs in zip(pred, gold, strict=True) for p, g in zip(ps, gs, strict=True)]
        )
        assert acc == 1.0
        for row in tagger.predict_marginals_one(token_features(["the", "dog", "runs"])):
            assert abs(sum(row.values()) - 1.0) < 1e-12


def test_fit_equals_learn_one_in_order():
    data = list(stream(7, 30))
    X = [xs for xs, _ in data]
    Y = [[f"t{v}" for v in ys] for _, ys in data]
    one = TextTagger(regularizer=("squared_l21", 1e-3), average=True, n_buckets=NB)
    for _ in range(2):
        for xs, ys in zip(X, Y, strict=True):
            one.learn_one(xs, ys)
    many = TextTagger(regularizer=("squared_l21", 1e-3), average=True, n_buckets=NB)
    many.fit(X, Y, epochs=2)
    # fit registers every template before the first round, so that the
    # running sums of a late template are summed from another start
    assert many.labels_ == one.labels_ and many.n_rounds_ == one.n_rounds_
    for g, n in one.group_norms_.items():
        assert abs(many.group_norms_[g] - n) < 1e-12
    for xs in X[:5]:
        a, b = many.predict_marginals_one(xs), one.predict_marginals_one(xs)
        for ra, rb in zip(a, b, strict=True):
            assert all(abs(ra[k] - rb[k]) < 1e-12 for k in rb)


def test_shuffled_fit_equals_learn_one_in_the_drawn_orders():
    # every sequence starts with the three labels, so that they get the same
    # ids in any order
    data = list(stream(11, 20))
    head = [{"a": 1.0}, {"a": -1.0}, {"w": "0"}]
    X = [head + xs for xs, _ in data]
    Y = [["t0", "t1", "t2"] + [f"t{v}" for v in ys] for _, ys in data]
    many = TextTagger(loss="hinge", average=True, n_buckets=NB)
    many.fit(X, Y, epochs=3, shuffle=True, seed=5)
    one = TextTagger(loss="hinge", average=True, n_buckets=NB)
    rng = np.random.default_rng(5)
    for _ in range(3):
        for i in rng.permutation(len(X)):
            one.learn_one(X[i], Y[i])
    assert one.labels_ == many.labels_
    for g, n in one.group_norms_.items():
        assert abs(many.group_norms_[g] - n) < 1e-12
    assert many.predict(X) == one.predict(X)
    with pytest.raises(ValueError, match="order"):
        many._state.fit_epoch(many._state.prepare(X[:1], [[0] * len(X[0])]), [3])


def test_memory_does_not_grow_with_new_feature_names():
    tagger = TextTagger(n_buckets=1 << 8)
    rng = np.random.default_rng(0)

    def learn(count):
        for _ in range(count):
            xs = [{"w": f"word{rng.integers(1 << 40)}", "s": str(rng.integers(1 << 40))}]
            tagger.learn_one(xs * 2, ["A", "B"])

    # the tables grow with the buckets written, up to every bucket of them
    learn(50)
    size, pickled = tagger.__sizeof__(), len(pickle.dumps(tagger))
    learn(3000)
    full = tagger.__sizeof__()
    assert size <= full < size + 3 * (1 << 8) * 2 * 16 * 2
    learn(3000)
    assert tagger.__sizeof__() == full
    # at most the two tables of two templates and the transitions
    assert len(pickle.dumps(tagger)) < pickled + 3 * (1 << 8) * 2 * 60


def test_bad_input_raises_and_changes_nothing():
    tagger = TextTagger(n_buckets=64)
    tagger.learn_one([{"w": "a"}, {"w": "b"}], ["A", "B"])
    before = pickle.dumps(tagger)
    cases = [
        ([], [], ValueError, "at least one token"),
        ([{"w": "a"}], ["A", "B"], ValueError, "ys"),
        ([{"w": "a"}, {"w": "b"}], ["A"], ValueError, "ys"),
        ([{"w": float("nan")}], ["A"], ValueError, 'xs[0]["w"]'),
        ([{"w": "a"}, {"x": float("inf")}], ["A", "C"], ValueError, 'xs[1]["x"]'),
        ([{"w": "a"}, "b"], ["A", "B"], TypeError, "xs[1]"),
        ([{"w": [1]}], ["A"], ValueError, "finite real number"),
        ([{"<transitions>": 1.0}], ["A"], ValueError, "transition"),
        ("ab", ["A", "B"], TypeError, "xs"),
    ]
    for xs, ys, kind, words in cases:
        with pytest.raises(kind) as e:
            tagger.learn_one(xs, ys)
        assert words in str(e.value)
        assert pickle.dumps(tagger) == before
        assert tagger.labels_ == ["A", "B"]
    with pytest.raises(ValueError, match="Y"):
        tagger.fit([[{"w": "a"}]], [["A"], ["B"]])
    with pytest.raises(ValueError, match=r"X\[1\]"):
        tagger.fit([[{"w": "a"}], [{"w": None}]], [["Z"], ["B"]])
    assert pickle.dumps(tagger) == before and tagger.labels_ == ["A", "B"]
    with pytest.raises(ValueError, match="at least one token"):
        tagger.predict_one([])
    with pytest.raises(ValueError, match="unhashable"):
        tagger.learn_one([{"w": "a"}], [["A"]])
    # a token with features never seen gets the label the transitions prefer
    assert tagger.predict_one([{"unseen": "x"}])[0] in ("A", "B")
    assert TextTagger().predict_one([{"w": "a"}]) == [None]
    with pytest.raises(ValueError, match="loss"):
        TextTagger(loss="squared")
    with pytest.raises(ValueError, match="n_buckets"):
        TextTagger(n_buckets=0)


def test_save_load_pickle_and_clone(tmp_path):
    data = list(stream(3, 20))
    tagger = TextTagger(regularizer=("squared_l21", 1e-3), average=True, n_buckets=NB)
    tagger.fit([xs for xs, _ in data], [[f"t{v}" for v in ys] for _, ys in data])
    probe = data[0][0]
    tagger.save(tmp_path / "t.omkl")
    back = TextTagger.load(tmp_path / "t.omkl")
    assert pickle.dumps(back) == pickle.dumps(tagger)
    assert back.predict_marginals_one(probe) == tagger.predict_marginals_one(probe)
    again = pickle.loads(pickle.dumps(tagger))
    assert again.predict_one(probe) == tagger.predict_one(probe)
    assert again.template_weights_ == tagger.template_weights_
    fresh = tagger.clone()
    assert fresh.n_rounds_ == 0 and fresh.labels_ == [] and fresh.average is True
    raw = (tmp_path / "t.omkl").read_bytes()
    (tmp_path / "bad.omkl").write_bytes(raw[:-10])
    with pytest.raises(ValueError, match="bad.omkl"):
        TextTagger.load(tmp_path / "bad.omkl")
    with pytest.raises(FileNotFoundError):
        TextTagger.load(tmp_path / "missing.omkl")
    assert omkl.TextTagger is TextTagger


def test_squared_l21_switches_templates_off():
    rng = np.random.default_rng(0)
    X, Y = [], []
    for _ in range(300):
        n = int(rng.integers(2, 5))
        tags = [str(rng.choice(["A", "B"])) for _ in range(n)]
        X.append([{"good": t.lower(), "noise": str(rng.integers(50))} for t in tags])
        Y.append(tags)
    tagger = TextTagger(regularizer=("squared_l21", 0.05), n_buckets=1 << 8)
    tagger.fit(X, Y, epochs=2)
    beta = tagger.template_weights_
    assert tagger.selected_templates_ == ["good"]
    assert beta["good"] == 1.0 and beta["noise"] == 0.0


def test_token_features_cover_each_template():
    f = token_features(["Hello", "world-3", "42"])
    assert [x.get("BOS", False) for x in f] == [True, False, False]
    assert f[2]["all_digits"] and f[1]["has_hyphen"] and f[0]["is_title"]
    assert f[1]["w-2"] == "<s>" and f[1]["w+2"] == "</s>" and f[0]["w+2"] == "42"
    assert f[0]["p4"] == "Hell" and f[0]["s4"] == "ello" and f[2]["s4"] == "42"
    with pytest.raises(ValueError, match=r"words\[1\]"):
        token_features(["a", 3])  # type: ignore[list-item]
