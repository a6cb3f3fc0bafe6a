"""Alg. 1 (averaged, squared l2,1 regulariser) against a batch optimum.

On a small synthetic group-sparse multiclass problem, the objective

    F(W) = (1/n) sum_i logistic(W; x_i, y_i) + (lam / 2) (sum_g ||W_g||)^2

is minimised by FISTA written here in numpy (with its own prox of the squared
l2,1 norm), and the averaged model of Alg. 1, fed a stream of uniform draws
from the same n examples, must come within 1% of that optimum and single out
the true groups.
"""

import numpy as np
import pytest

from omkl import _omkl

G, B, K, N, LAM = 6, 4, 3, 300, 0.02
TRUE_GROUPS = (0, 3)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, G, B))
    w_true = np.zeros((G, B, K))
    for g in TRUE_GROUPS:
        w_true[g] = 2.0 * rng.normal(size=(B, K))
    logits = x.reshape(N, -1) @ w_true.reshape(-1, K)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(K, p=pi) for pi in p])
    return x, y


def objective(x, y, w):
    z = x.reshape(N, -1) @ w.reshape(-1, K)
    m = z.max(1)
    lse = m + np.log(np.exp(z - m[:, None]).sum(1))
    norms = np.sqrt((w**2).sum(axis=(1, 2)))
    return np.mean(lse - z[np.arange(N), y]) + LAM / 2 * norms.sum() ** 2


def gradient(x, y, w):
    xf = x.reshape(N, -1)
    z = xf @ w.reshape(-1, K)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(N), y] -= 1.0
    return (xf.T @ p / N).reshape(G, B, K)


def prox_squared_l21(w, tau):
    """prox of (tau/2)(sum_g ||w_g||)^2: shrink each norm by t = tau S' / (1 + tau s)."""
    norms = np.sqrt((w**2).sum(axis=(1, 2)))
    order = np.argsort(-norms)
    for s in range(1, G + 1):
        t = tau * norms[order[:s]].sum() / (1.0 + tau * s)
        if norms[order[s - 1]] > t and (s == G or norms[order[s]] <= t):
            new = np.maximum(norms - t, 0.0)
            return w * (new / np.where(norms > 0, norms, 1.0))[:, None, None]
    return np.zeros_like(w)


def fista(x, y, iters=2500):
    lip = np.linalg.norm(x.reshape(N, -1), 2) ** 2 / N
    w = np.zeros((G, B, K))
    v, t = w.copy(), 1.0
    for _ in range(iters):
        w_next = prox_squared_l21(v - gradient(x, y, v) / lip, LAM / lip)
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        v = w_next + (t - 1.0) / t_next * (w_next - w)
        w, t = w_next, t_next
    return w


def run_alg1(x, y, averaged, rounds=100_000, seed=1):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, N, size=rounds)
    m = _omkl.OnlineProximalLearner(
        "log", ("inv_sqrt", 0.5, 1.0, [("squared_l21", [LAM])], None, averaged, False), None,
        "_", {}, B,
    )  # fmt: skip
    assert m.add_groups([f"g{g}" for g in range(G)]) == list(range(G))
    m.set_n_outputs(K)
    nnz = G * B
    m.learn_hashed_classes(
        np.arange(0, (rounds + 1) * nnz, nnz, dtype=np.int64),
        np.tile(np.repeat(np.arange(G, dtype=np.uint32), B), rounds),
        np.tile(np.tile(np.arange(B, dtype=np.uint32), G), rounds),
        x[idx].reshape(-1),
        y[idx].astype(np.int64),
    )
    assert m.rounds == rounds
    return m


def test_averaged_alg1_reaches_the_batch_optimum(problem):
    x, y = problem
    w_opt = fista(x, y)
    f_opt = objective(x, y, w_opt)
    # The batch solution is group-sparse on the true groups.
    opt_norms = np.sqrt((w_opt**2).sum(axis=(1, 2)))
    assert set(np.flatnonzero(opt_norms > 0)) == set(TRUE_GROUPS)

    m = run_alg1(x, y, averaged=True)
    w = m.dense_weights().reshape(G, B, K)
    f = objective(x, y, w)
    assert f >= f_opt - 1e-9, "the batch solver must not be beaten"
    assert (f - f_opt) / f_opt < 0.01, (f, f_opt)

    norms = dict(m.group_norms())
    assert np.allclose([norms[f"g{g}"] for g in range(G)], np.sqrt((w**2).sum(axis=(1, 2))))
    big = {g for g in range(G) if norms[f"g{g}"] > 0.1 * max(norms.values())}
    assert big == set(TRUE_GROUPS)


def test_last_iterate_singles_out_the_true_groups(problem):
    x, y = problem
    m = run_alg1(x, y, averaged=False, rounds=20_000)
    norms = dict(m.group_norms())
    big = {g for g in range(G) if norms[f"g{g}"] > 0.1 * max(norms.values())}
    assert big == set(TRUE_GROUPS)
