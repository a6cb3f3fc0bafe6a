"""ProximalClassifier and ProximalRegressor against a dense Alg. 1 in numpy.

The reference keeps the weights as a dense array ``W[group, bucket, output]``
and runs each round of Alg. 1 as the paper states it: scores, the loss
subgradient (multiclass logistic, loss-augmented hinge with cost 1, or
squared with the residual clipped), the step ``W -= eta_t x g^T`` (and the
intercept), the J prox steps of the regularisers written here in numpy (the
``l2q`` one, which needs a root finder, through :mod:`omkl.prox`), the
projection onto ``||W|| <= radius`` and the running average. It maps feature
names to groups and buckets by the documented rule: the group is the
explicit ``groups`` entry or the name's part before the first separator,
groups are numbered in order of first appearance, and the bucket is
``hash_feature(name) mod n_buckets`` (the hash is pinned by
``test_linear.test_hash_is_fixed``). Classes are numbered in order of first
appearance and a new class adds an output with zero weights.

After every round the estimator's weights, intercept, scores, group norms
and predicted probabilities must equal the reference's to 1e-9 (relative to
the magnitude); the same comparison with a wrong step size in the reference
must fail.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import omkl
from omkl import _omkl, prox

TOL = 1e-9


def _shrink_norms(norms: np.ndarray, tau: float) -> np.ndarray:
    return np.maximum(norms - tau, 0.0)


def _squared_l1_norms(norms: np.ndarray, tau: float) -> np.ndarray:
    """prox of (tau / 2) ||n||_1^2 on non-negative n: every entry shrinks by
    tau * S_rho / (1 + rho tau), S_rho the sum of the rho largest entries,
    rho the largest count for which the rho-th largest entry stays positive."""
    s = np.sort(norms)[::-1]
    c = np.cumsum(s)
    j = np.arange(1, len(s) + 1)
    keep = s > tau * c / (1.0 + j * tau)
    if not keep.any():
        return np.zeros_like(norms)
    rho = j[keep][-1]
    return _shrink_norms(norms, tau * c[rho - 1] / (1.0 + rho * tau))


def _l1_ball_norms(v: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of non-negative v onto {sum v <= radius}."""
    if v.sum() <= radius:
        return v.copy()
    s = np.sort(v)[::-1]
    c = np.cumsum(s)
    j = np.arange(1, len(s) + 1)
    rho = j[s - (c - radius) / j > 0][-1]
    return _shrink_norms(v, (c[rho - 1] - radius) / rho)


def _on_group_norms(w: np.ndarray, f: Any) -> None:
    """Replaces each group's norm ``n_g`` of ``w[g]`` by ``f(n)[g]``, in place."""
    norms = np.sqrt((w**2).sum(axis=(1, 2)))
    new = f(norms)
    for g, (old, n) in enumerate(zip(norms, new, strict=True)):
        if old > 0.0:
            w[g] *= n / old


def _on_entries(w: np.ndarray, f: Any) -> None:
    """Replaces ``|w|`` by ``f(|w|)`` entrywise, keeping signs, in place."""
    w[...] = np.sign(w) * f(np.abs(w).reshape(-1)).reshape(w.shape)


def prox_step(w: np.ndarray, name: str, params: list[float], eta: float) -> None:
    """One prox step of the regulariser ``(name, *params)`` with step ``eta``."""
    if name == "l1":
        _on_entries(w, lambda a: _shrink_norms(a, eta * params[0]))
    elif name == "l2_squared":
        w /= 1.0 + eta * params[0]
    elif name == "group_lasso":
        _on_group_norms(w, lambda n: _shrink_norms(n, eta * params[0]))
    elif name == "squared_l21":
        _on_group_norms(w, lambda n: _squared_l1_norms(n, eta * params[0]))
    elif name == "elastic_net_mkl":
        lam, r = params
        _on_group_norms(w, lambda n: _shrink_norms(n, eta * lam * r) / (1.0 + eta * lam * (1 - r)))
    elif name == "sparse_group_lasso":
        _on_entries(w, lambda a: _shrink_norms(a, eta * params[0]))
        _on_group_norms(w, lambda n: _shrink_norms(n, eta * params[1]))
    elif name == "l1_ball":
        _on_entries(w, lambda a: _l1_ball_norms(a, params[0]))
    elif name == "l21_ball":
        _on_group_norms(w, lambda n: _l1_ball_norms(n, params[0]))
    elif name == "l2q":
        groups = np.repeat(np.arange(w.shape[0]), w[0].size)
        w[...] = prox.prox_l2q(w.reshape(-1), groups, eta * params[0], params[1]).reshape(w.shape)
    else:
        raise AssertionError(f"no reference for {name!r}")


class DenseAlg1:
    """Alg. 1 on dense weights ``W[group, bucket, output]``; see the module docs."""

    def __init__(self, p: dict[str, Any], *, loss: str, clip: float | None) -> None:
        self.p, self.loss, self.clip = p, loss, clip
        self.max_groups, self.max_outputs = 16, 8
        shape = (self.max_groups, p["n_buckets"], self.max_outputs)
        self.w, self.w_sum = np.zeros(shape), np.zeros(shape)
        self.b, self.b_sum = np.zeros(self.max_outputs), np.zeros(self.max_outputs)
        self.t = 0
        self.group_ids: dict[str, int] = {}
        self.n_outputs = 1
        regs = p["regularizer"]
        regs = [] if regs is None else [regs] if isinstance(regs[0], str) else list(regs)
        self.regs = [(r[0], [float(v) for v in r[1:]]) for r in regs]

    def group_of(self, name: str) -> str:
        mapping = self.p.get("groups") or {}
        return mapping[name] if name in mapping else name.split(self.p["separator"])[0]

    def entries(self, x: dict[str, float], register: bool) -> list[tuple[int, int, float]]:
        out = []
        for name, v in x.items():
            group = self.group_of(name)
            if group not in self.group_ids:
                if not register:
                    continue
                self.group_ids[group] = len(self.group_ids)
            out.append((self.group_ids[group], _omkl.hash_feature(name) % self.p["n_buckets"], v))
        return out

    def rate(self, t: int) -> float:
        schedule = self.p["schedule"]
        if schedule == "constant":
            return self.p["eta0"]
        if schedule == "inv_sqrt":
            return self.p["eta0"] / math.sqrt(t)
        return 1.0 / (self.p["sigma"] * t)

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """The prediction weights and intercept (averaged or last)."""
        if self.p["average"] and self.t > 0:
            return self.w_sum / self.t, self.b_sum / self.t
        return self.w, self.b

    def scores(self, x: dict[str, float], w: np.ndarray, b: np.ndarray) -> np.ndarray:
        k = self.n_outputs
        z = b[:k].copy()
        for g, j, v in self.entries(x, register=False):
            z += v * w[g, j, :k]
        return z

    def gradient(self, z: np.ndarray, y: Any) -> np.ndarray:
        g = np.zeros_like(z)
        if self.loss == "squared":
            g[0] = z[0] - y
        elif self.loss == "log":
            e = np.exp(z - z.max())
            g = e / e.sum()
            g[y] -= 1.0
        else:
            others = [k for k in range(len(z)) if k != y]
            if others:
                worst = max(others, key=lambda k: (z[k], -k))
                if z[worst] + 1.0 - z[y] > 0.0:
                    g[worst], g[y] = 1.0, -1.0
        if self.clip is not None:
            g = np.clip(g, -self.clip, self.clip)
        return g

    def learn(self, x: dict[str, float], y: Any) -> None:
        entries = self.entries(x, register=True)
        if self.loss != "squared":
            self.n_outputs = max(self.n_outputs, y + 1)
        k = self.n_outputs
        z = self.scores(x, self.w, self.b)
        g = self.gradient(z, y)
        self.t += 1
        eta = self.rate(self.t)
        for grp, j, v in entries:
            self.w[grp, j, :k] -= eta * v * g
        if self.p["fit_intercept"]:
            self.b[:k] -= eta * g
        for name, params in self.regs:
            prox_step(self.w, name, params, eta)
        radius = self.p["radius"]
        norm = np.sqrt((self.w**2).sum())
        if radius is not None and norm > radius:
            self.w *= radius / norm
        self.w_sum += self.w
        self.b_sum += self.b


def _stream(n: int, seed: int, separator: str) -> list[tuple[dict[str, float], int]]:
    """Examples over four groups (one name without the separator), with
    repeated buckets at ``n_buckets=4``; class 2 first appears at round 15."""
    rng = np.random.default_rng(seed)
    names = [f"{g}{separator}{i}" for g in "abc" for i in range(4)] + ["solo"]
    out = []
    for t in range(n):
        chosen = rng.choice(len(names), size=int(rng.integers(2, 7)), replace=False)
        x = {names[i]: float(rng.normal()) for i in chosen}
        y = int(rng.integers(0, 3 if t >= 15 else 2))
        out.append((x, y))
    return out


def _close(got: Any, want: Any) -> float:
    """The largest ``|got - want| / (1 + |want|)``."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float((np.abs(got - want) / (1.0 + np.abs(want))).max(initial=0.0))


def run(kind: str, params: dict[str, Any], n: int = 60, wrong: dict[str, Any] | None = None):
    """Trains the estimator and the reference side by side (the reference
    with ``wrong`` overriding its parameters) and returns the largest
    relative discrepancy of any compared quantity over all rounds."""
    p = {
        "schedule": "inv_sqrt",
        "eta0": 0.5,
        "sigma": 1.0,
        "radius": None,
        "average": False,
        "fit_intercept": True,
        "separator": "_",
        "groups": None,
        "n_buckets": 4,
        **params,
    }
    r = {**p, **(wrong or {})}
    if kind == "classifier":
        model = omkl.ProximalClassifier(**p)
        ref = DenseAlg1(r, loss=r.get("loss", "log"), clip=None)
    else:
        model = omkl.ProximalRegressor(**p)
        ref = DenseAlg1(r, loss="squared", clip=r.get("clip_gradient"))
    probe = {"a_0": 0.5, "c_3": -1.0, "unseen_group": 3.0, "solo": 0.25}
    worst = 0.0
    for x, y in _stream(n, seed=0, separator=p["separator"]):
        target = y if kind == "classifier" else float(y) - 1.0
        model.learn_one(x, target)
        ref.learn(x, target)
        w, b = ref.weights()
        n_groups, k = len(ref.group_ids), ref.n_outputs
        state = model._state
        worst = max(
            worst,
            _close(state.dense_weights(), w[:n_groups, :, :k].reshape(-1)),
            _close(state.intercept(), b[:k]),
        )
        norms = np.sqrt((w[:n_groups, :, :k] ** 2).sum(axis=(1, 2)))
        got = model.group_norms_
        worst = max(worst, _close([got[g] for g in ref.group_ids], norms))
        for q in (x, probe):
            z = ref.scores(q, w, b)
            if kind == "classifier":
                e = np.exp(z - z.max())
                proba = model.predict_proba_one(q)
                worst = max(worst, _close([proba[c] for c in range(k)], e / e.sum()))
                worst = max(worst, _close(state.scores(q)[:k], z))
            else:
                worst = max(worst, _close(model.predict_one(q), z[0]))
    return worst


CLASSIFIER_CASES = {
    "log, group lasso": {"regularizer": ("group_lasso", 0.05)},
    "hinge, squared l21 (MKL), constant, averaged": {
        "loss": "hinge",
        "regularizer": ("squared_l21", 0.1),
        "schedule": "constant",
        "eta0": 0.1,
        "average": True,
    },
    "log, l1 then l2 squared, inv_linear, ball": {
        "regularizer": [("l1", 0.01), ("l2_squared", 0.05)],
        "schedule": "inv_linear",
        "sigma": 0.5,
        "radius": 0.2,
    },
    "hinge, elastic-net MKL then sparse group lasso, no intercept, averaged": {
        "loss": "hinge",
        "regularizer": [("elastic_net_mkl", 0.1, 0.5), ("sparse_group_lasso", 0.01, 0.02)],
        "fit_intercept": False,
        "average": True,
    },
    "log, l21 ball then l1 ball, constant": {
        "regularizer": [("l21_ball", 1.0), ("l1_ball", 2.0)],
        "schedule": "constant",
        "eta0": 0.3,
    },
    "log, l2q": {"regularizer": ("l2q", 0.05, 1.5), "average": True},
    "log, unregularised, explicit groups and another separator": {
        "regularizer": None,
        "separator": "-",
        "groups": {"a-0": "c", "solo": "b"},
        "n_buckets": 7,
    },
}

REGRESSOR_CASES = {
    "group lasso, clipped residual, averaged": {
        "regularizer": ("group_lasso", 0.05),
        "clip_gradient": 0.5,
        "average": True,
        "eta0": 0.1,
    },
    "squared l21, ball, unclipped": {
        "regularizer": ("squared_l21", 0.05),
        "clip_gradient": None,
        "radius": 0.2,
        "eta0": 0.1,
    },
}


@pytest.mark.parametrize("params", CLASSIFIER_CASES.values(), ids=CLASSIFIER_CASES.keys())
def test_classifier_equals_dense_alg1(params):
    assert run("classifier", params) <= TOL


@pytest.mark.parametrize("params", REGRESSOR_CASES.values(), ids=REGRESSOR_CASES.keys())
def test_regressor_equals_dense_alg1(params):
    assert run("regressor", params) <= TOL


def _wrong_regularizer(case: str, regularizer: Any) -> tuple[str, dict, dict]:
    return ("classifier", CLASSIFIER_CASES[case], {"regularizer": regularizer})


@pytest.mark.parametrize(
    ("kind", "params", "wrong"),
    [
        ("classifier", CLASSIFIER_CASES["log, group lasso"], {"eta0": 0.5 * 1.001}),
        _wrong_regularizer("log, group lasso", ("group_lasso", 0.051)),
        _wrong_regularizer("hinge, squared l21 (MKL), constant, averaged", ("squared_l21", 0.11)),
        _wrong_regularizer(
            "hinge, elastic-net MKL then sparse group lasso, no intercept, averaged",
            [("elastic_net_mkl", 0.1, 0.5), ("sparse_group_lasso", 0.01, 0.021)],
        ),
        _wrong_regularizer(
            "log, l21 ball then l1 ball, constant", [("l21_ball", 0.95), ("l1_ball", 2.0)]
        ),
        _wrong_regularizer("log, l2q", ("l2q", 0.05, 1.6)),
        ("classifier", CLASSIFIER_CASES["log, l2q"], {"average": False}),
        (
            "classifier",
            CLASSIFIER_CASES["log, l1 then l2 squared, inv_linear, ball"],
            {"radius": 0.21},
        ),
        (
            "classifier",
            CLASSIFIER_CASES["hinge, squared l21 (MKL), constant, averaged"],
            {"loss": "log"},
        ),
        (
            "regressor",
            REGRESSOR_CASES["group lasso, clipped residual, averaged"],
            {"clip_gradient": 0.45},
        ),
    ],
)
def test_a_wrong_reference_is_detected(kind, params, wrong):
    """The comparison can fail: a reference with a slightly wrong step size,
    regulariser strength, averaging, radius, loss or clipping is caught."""
    assert run(kind, params, wrong=wrong) > 1e-6
