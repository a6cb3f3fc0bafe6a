"""Exactness of ``omkl.prox`` against independent references written here.

References are slow and simple: bisection on the scalar that defines each
operator (threshold, Lagrange multiplier, or the group-wise scalar equation),
closed forms in plain numpy, and scipy's scalar minimiser. Invariants: KKT
conditions and the Moreau decomposition ``prox_f(x) + prox_f*(x) = x``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize_scalar

from omkl import prox

RTOL = 1e-9
SETTINGS = settings(max_examples=40, deadline=None)

values = st.one_of(
    st.sampled_from([0.0, 0.0, 1.0, -1.0, 2.5, -2.5, 1e-9]),
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)
vectors = hnp.arrays(np.float64, st.integers(1, 40), elements=values)
taus = st.one_of(
    st.sampled_from([0.0, 1e-12, 1e-6, 1.0, 1e6, 1e12]),
    st.floats(0.0, 100.0, allow_nan=False),
)


@st.composite
def grouped(draw, max_groups=6):
    x = draw(vectors)
    n_groups = draw(st.integers(1, max_groups))
    ids = draw(hnp.arrays(np.int64, x.shape[0], elements=st.integers(0, n_groups - 1)))
    return x, ids


def close(got, ref, scale):
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=RTOL * max(1.0, scale))


def bisect(f, lo, hi, iters=200):
    """Root of an increasing function ``f`` in ``[lo, hi]`` with ``f(lo) <= 0 <= f(hi)``."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def soft(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def norms_of(x, ids):
    n_groups = int(ids.max()) + 1
    return np.array([np.sqrt(np.sum(x[ids == g] ** 2)) for g in range(n_groups)])


def rescale(x, ids, old, new):
    out = np.zeros_like(x)
    for g in range(old.shape[0]):
        if old[g] > 0:
            out[ids == g] = x[ids == g] * (new[g] / old[g])
    return out


# --- references -------------------------------------------------------------


def ref_squared_l1(x, tau):
    """Bisection on θ: θ = τ Σ max(|x| − θ, 0)."""
    a = np.abs(x)
    if tau == 0 or not a.any():
        return x.copy()
    theta = bisect(lambda t: t - tau * np.maximum(a - t, 0.0).sum(), 0.0, a.max())
    return soft(x, theta)


def ref_weighted_squared_l1(x, d, tau):
    """Bisection on θ: θ = τ Σ d_i max(|x_i| − θ d_i, 0)."""
    a = np.abs(x)
    if tau == 0:
        return x.copy()
    top = tau * float(np.sum(d * a))
    theta = bisect(lambda t: t - tau * np.sum(d * np.maximum(a - t * d, 0.0)), 0.0, top)
    return np.sign(x) * np.maximum(a - theta * d, 0.0)


def ref_l1_ball(x, r):
    """Bisection on the Lagrange multiplier θ of Σ max(|x| − θ, 0) = r."""
    a = np.abs(x)
    if a.sum() <= r:
        return x.copy()
    theta = bisect(lambda t: r - np.maximum(a - t, 0.0).sum(), 0.0, a.max())
    return soft(x, theta)


def ref_l2q_scalar(n0, tau, q):
    if n0 == 0 or tau == 0:
        return n0
    if q == 1:
        return max(n0 - tau, 0.0)
    return bisect(lambda n: n - n0 + tau * q * n ** (q - 1), 0.0, n0, iters=2000)


# --- exactness ----------------------------------------------------------------


@SETTINGS
@given(vectors, taus)
def test_soft_threshold_and_l2_squared(x, tau):
    close(prox.soft_threshold(x, tau), soft(x, tau), np.abs(x).max())
    close(prox.prox_l2_squared(x, tau), x / (1 + tau), np.abs(x).max())


@SETTINGS
@given(vectors, taus, st.sampled_from(["sort", "select"]))
def test_squared_l1_matches_bisection(x, tau, method):
    got = prox.prox_squared_l1(x, tau, method=method)
    close(got, ref_squared_l1(x, tau), np.abs(x).max())


@SETTINGS
@given(vectors, taus)
def test_squared_l1_kkt(x, tau):
    u = prox.prox_squared_l1(x, tau)
    theta = tau * np.abs(u).sum()
    nz = u != 0
    # θ = τ‖u‖₁ carries the rounding error of u amplified by τ p.
    scale = max(1.0, np.abs(x).max()) * (1e-9 + 4 * np.finfo(float).eps * tau * x.size)
    # x − u = θ sign(u) on the support, |x_i| ≤ θ off it.
    np.testing.assert_allclose((x - u)[nz], theta * np.sign(u[nz]), rtol=0, atol=scale)
    assert np.all(np.abs(x[~nz]) <= theta + scale)


weights = st.one_of(st.sampled_from([0.0, 0.0, 1.0, 1e-6]), st.floats(0.0, 10.0))


@st.composite
def weighted(draw):
    x = draw(vectors)
    d = draw(hnp.arrays(np.float64, x.shape[0], elements=weights))
    return x, d


@SETTINGS
@given(weighted(), taus)
def test_weighted_squared_l1_matches_bisection(xd, tau):
    x, d = xd
    got = prox.prox_weighted_squared_l1(x, d, tau)
    close(got, ref_weighted_squared_l1(x, d, tau), np.abs(x).max())
    # zero weights leave coordinates unchanged
    np.testing.assert_array_equal(got[d == 0], x[d == 0])


@SETTINGS
@given(vectors, taus)
def test_weighted_with_unit_weights_is_squared_l1(x, tau):
    close(
        prox.prox_weighted_squared_l1(x, np.ones_like(x), tau),
        prox.prox_squared_l1(x, tau),
        np.abs(x).max(),
    )


@SETTINGS
@given(vectors, st.one_of(st.sampled_from([0.0, 1e-9, 1.0]), st.floats(0.0, 1e4)))
def test_l1_ball_matches_bisection(x, r):
    got = prox.project_l1_ball(x, r)
    close(got, ref_l1_ball(x, r), np.abs(x).max())
    # feasible up to the rounding of θ, about eps * max|x| per coordinate
    assert np.abs(got).sum() <= r + 4 * x.size * np.finfo(float).eps * max(1.0, np.abs(x).max())


@SETTINGS
@given(grouped(), taus)
def test_group_lasso_closed_form(xg, tau):
    x, ids = xg
    n = norms_of(x, ids)
    close(prox.group_norms(x, ids), n, np.abs(x).max())
    close(prox.prox_group_lasso(x, ids, tau), rescale(x, ids, n, np.maximum(n - tau, 0)), n.max())


@SETTINGS
@given(grouped(), taus, taus)
def test_sparse_group_lasso_is_two_steps(xg, tau1, tau2):
    x, ids = xg
    s = soft(x, tau1)
    n = norms_of(s, ids)
    ref = rescale(s, ids, n, np.maximum(n - tau2, 0))
    close(prox.prox_sparse_group_lasso(x, ids, tau1, tau2), ref, np.abs(x).max())


@SETTINGS
@given(grouped(), taus, st.floats(0.0, 1.0))
def test_elastic_net_mkl_per_group_minimiser(xg, tau, rho):
    x, ids = xg
    n = norms_of(x, ids)
    new = np.empty_like(n)
    for g, n0 in enumerate(n):
        # minimise ½(m − n0)² + τ[ρ m + (1 − ρ)/2 m²] over m ≥ 0 (independent scalar solver)
        if n0 == 0:
            new[g] = 0.0
            continue
        res = minimize_scalar(
            lambda m, n0=n0: 0.5 * (m - n0) ** 2 + tau * (rho * m + 0.5 * (1 - rho) * m * m),
            bounds=(0.0, n0),
            method="bounded",
            options={"xatol": 1e-13 * n0},
        )
        new[g] = res.x
    got = prox.prox_elastic_net_mkl(x, ids, tau, rho)
    # scipy's bounded minimiser is accurate to ~1e-8 relative only
    np.testing.assert_allclose(
        prox.group_norms(got, ids), new, rtol=1e-6, atol=1e-6 * max(1.0, n.max())
    )
    # and the exact closed form to 1e-9
    close(
        got,
        rescale(x, ids, n, np.maximum(n - tau * rho, 0) / (1 + tau * (1 - rho))),
        n.max(),
    )


qs = st.one_of(
    st.sampled_from([1.0, 1.0 + 1e-9, 1.0 + 1e-6, 1.001, 1.5, 2.0, 3.0, 10.0, 50.0]),
    st.floats(1.0, 20.0),
)


@SETTINGS
@given(grouped(), taus, qs)
def test_l2q_matches_scalar_bisection(xg, tau, q):
    x, ids = xg
    n = norms_of(x, ids)
    new = np.array([ref_l2q_scalar(n0, tau, q) for n0 in n])
    close(prox.prox_l2q(x, ids, tau, q), rescale(x, ids, n, new), n.max())


@SETTINGS
@given(grouped(), taus)
def test_l2q_endpoints_are_group_lasso_and_ridge(xg, tau):
    x, ids = xg
    scale = np.abs(x).max()
    close(prox.prox_l2q(x, ids, tau, 1.0), prox.prox_group_lasso(x, ids, tau), scale)
    close(prox.prox_l2q(x, ids, tau, 2.0), x / (1 + 2 * tau), scale)


@SETTINGS
@given(grouped(), taus)
def test_squared_l21_is_alg2_on_norms(xg, tau):
    x, ids = xg
    n = norms_of(x, ids)
    close(prox.prox_squared_l21(x, ids, tau), rescale(x, ids, n, ref_squared_l1(n, tau)), n.max())


@SETTINGS
@given(grouped(), st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1e3)))
def test_l21_ball_matches_bisection(xg, r):
    x, ids = xg
    n = norms_of(x, ids)
    got = prox.project_l21_ball(x, ids, r)
    close(got, rescale(x, ids, n, ref_l1_ball(n, r)), n.max())
    slack = 4 * x.size * np.finfo(float).eps * max(1.0, n.max())
    assert prox.group_norms(got, ids).sum() <= r + slack


# --- Moreau decomposition ----------------------------------------------------


@SETTINGS
@given(vectors, taus)
def test_moreau_l1_and_linf_ball(x, tau):
    proj = np.clip(x, -tau, tau)  # projection on the ℓ∞ ball of radius τ
    close(prox.soft_threshold(x, tau) + proj, x, np.abs(x).max())


@SETTINGS
@given(grouped(), taus)
def test_moreau_group_lasso_and_l2inf_ball(xg, tau):
    x, ids = xg
    n = norms_of(x, ids)
    proj = rescale(x, ids, n, np.minimum(n, tau))  # projection on max_g ‖x_g‖ ≤ τ
    close(prox.prox_group_lasso(x, ids, tau) + proj, x, np.abs(x).max())


@SETTINGS
@given(vectors, st.floats(1e-3, 1e3))
def test_moreau_l1_ball_and_linf_norm(x, r):
    # prox of r‖·‖∞ by an independent scalar minimisation over the clip level t:
    # min_u ½‖u − x‖² + r max|u_i| = min_t ½ Σ (|x_i| − t)_+² + r t.
    a = np.abs(x)
    res = minimize_scalar(
        lambda t: 0.5 * np.sum(np.maximum(a - t, 0.0) ** 2) + r * t,
        bounds=(0.0, a.max() + 1.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    t = 0.0 if a.sum() <= r else res.x
    prox_linf = np.clip(x, -t, t) if a.sum() > r else np.zeros_like(x)
    got = prox.project_l1_ball(x, r) + prox_linf
    np.testing.assert_allclose(got, x, atol=1e-6 * max(1.0, a.max()))


# --- scale and large inputs ---------------------------------------------------


def test_select_and_sort_agree_on_a_long_vector_with_ties():
    rng = np.random.default_rng(1)
    x = np.round(rng.standard_normal(200_001), 1)
    for tau in [1e-6, 1e-3, 1.0]:
        close(
            prox.prox_squared_l1(x, tau, method="select"),
            prox.prox_squared_l1(x, tau, method="sort"),
            np.abs(x).max(),
        )


def test_huge_and_tiny_magnitudes():
    x = np.array([1e300, -1e300, 1e-300, 0.0])
    out = prox.prox_squared_l1(x, 1.0)
    close(out, ref_squared_l1(x, 1.0), 1e300)
    ids = np.array([0, 0, 1, 1])
    n = prox.group_norms(x, ids)
    assert np.isfinite(n).all() and n[0] == pytest.approx(np.sqrt(2) * 1e300)


def test_l2q_near_one_gives_a_tiny_root():
    # n + 2 * 1.001 n^0.001 = 1 has a root near 0.4995**1000 ≈ 1e-302.
    out = prox.prox_l2q(np.array([1.0]), np.array([0]), 2.0, 1.001)
    assert 0.0 <= out[0] < 1e-250
    out = prox.prox_l2q(np.array([1.0]), np.array([0]), 0.25, 1.001)
    ref = ref_l2q_scalar(1.0, 0.25, 1.001)
    close(out, [ref], 1.0)


# --- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: prox.soft_threshold(np.array([np.nan]), 1.0), "x"),
        (lambda: prox.prox_l2_squared(np.array([np.inf]), 1.0), "x"),
        (lambda: prox.prox_l2_squared(np.array([1.0]), -1.0), "tau"),
        (lambda: prox.prox_squared_l1(np.array([]), 1.0), "x"),
        (lambda: prox.prox_squared_l1(np.array([1.0]), np.nan), "tau"),
        (lambda: prox.prox_squared_l1(np.array([1.0]), 1.0, method="quick"), "method"),
        (lambda: prox.prox_squared_l1(np.ones((2, 2)), 1.0), "x"),
        (lambda: prox.prox_weighted_squared_l1(np.ones(2), np.array([1.0, -1.0]), 1.0), "`d`"),
        (lambda: prox.prox_weighted_squared_l1(np.ones(2), np.ones(3), 1.0), "d"),
        (lambda: prox.project_l1_ball(np.ones(2), -1.0), "radius"),
        (lambda: prox.prox_group_lasso(np.ones(2), np.array([0]), 1.0), "groups"),
        (lambda: prox.prox_group_lasso(np.ones(2), np.array([0, -1]), 1.0), "groups"),
        (lambda: prox.prox_group_lasso(np.ones(2), np.array([0.0, 1.0]), 1.0), "groups"),
        (lambda: prox.prox_group_lasso(np.array([]), np.array([], dtype=int), 1.0), "x"),
        (lambda: prox.prox_group_lasso(np.array([1.0, np.nan]), np.array([0, 1]), 1.0), "x"),
        (lambda: prox.project_l21_ball(np.ones(2), np.array([0, 1]), np.inf), "radius"),
        (lambda: prox.prox_sparse_group_lasso(np.ones(2), np.array([0, 1]), 1.0, -2.0), "tau2"),
        (lambda: prox.prox_elastic_net_mkl(np.ones(2), np.array([0, 1]), 1.0, 1.5), "l1_ratio"),
        (lambda: prox.prox_l2q(np.ones(2), np.array([0, 1]), 1.0, 0.5), "q"),
        (lambda: prox.prox_l2q(np.ones(2), np.array([0, 1]), 1.0, np.nan), "q"),
        (lambda: prox.prox_squared_l21(np.ones(2), np.array([0, 1]), -1.0), "tau"),
        (lambda: prox.group_norms(np.ones(2), np.array([0, 1, 2])), "groups"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_input_is_not_modified_and_lists_are_accepted():
    x = np.array([3.0, -1.0, 0.5])
    before = x.copy()
    prox.prox_squared_l1(x, 1.0)
    prox.prox_group_lasso(x, [0, 0, 1], 1.0)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(prox.soft_threshold([3.0, -0.5], 1.0), [2.0, 0.0])


# --- magnitudes near the float64 limit ---------------------------------------


def test_near_limit_inputs_are_exact_or_refused():
    """Operators are homogeneous: prox(c v) equals c prox(v) (with tau scaled
    to match) for a power of two c, so inputs near 1e308 give the exact
    result of the scaled-down problem instead of zeros or infinities."""
    x = np.array([1e308, -1e308, 1e308, 5.0])
    c = 2.0**-1000
    np.testing.assert_array_equal(
        prox.prox_squared_l1(x, 1.0), prox.prox_squared_l1(x * c, 1.0) / c
    )
    assert prox.prox_squared_l1(x, 1.0)[0] == 2.5e307
    g = np.array([0, 1, 2, 3])
    # Each group is its own norm: the squared l21 prox equals the squared l1 prox.
    np.testing.assert_array_equal(prox.prox_squared_l21(x, g, 1.0), prox.prox_squared_l1(x, 1.0))
    # l2q with q = 2 divides each group by 1 + 2 tau.
    np.testing.assert_allclose(prox.prox_l2q(x, g, 1.0, 2.0), x / 3.0, rtol=1e-15)
    # Group lasso: the huge group keeps its direction, the small one shrinks by its own norm.
    out = prox.prox_group_lasso(np.array([1e308, 1e308, 3.0, 4.0]), np.array([0, 0, 1, 1]), 1.0)
    np.testing.assert_allclose(out, [1e308, 1e308, 2.4, 3.2], rtol=1e-15)
    np.testing.assert_allclose(
        prox.project_l1_ball(x, 1e308), prox.project_l1_ball(x * c, 1e308 * c) / c, rtol=1e-15
    )
    with pytest.raises(ValueError, match="`x`"):
        prox.group_norms(np.array([1.5e308, 1.5e308]), np.array([0, 0]))  # the norm is > 1.8e308


def test_complex_and_string_inputs_are_refused_by_name():
    for bad in (np.array([1 + 2j, 3.0]), np.array(["1.5", "2"]), np.array([1.0, None])):
        with pytest.raises(TypeError, match="`x`"):
            prox.soft_threshold(bad, 1.0)
        with pytest.raises(ValueError, match="`x`"):
            prox.prox_group_lasso(bad, np.array([0, 1]), 1.0)
    with pytest.raises(TypeError, match="`tau`"):
        prox.soft_threshold(np.ones(2), "1.0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`d`"):
        prox.prox_weighted_squared_l1(np.ones(2), np.array([1j, 1.0]), 1.0)
