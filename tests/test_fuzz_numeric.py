"""Hostile-input fuzzing of every public function of omkl.prox, omkl.decode
and omkl.kernels.

Inputs mix ordinary values with NaN, +-inf, +-1e308, -0.0, subnormals, empty
arrays, complex, string and object arrays, float32/int dtypes, non-contiguous
views and huge shapes. Each case has exactly one accepted outcome: a result
that matches a reference (numpy, brute-force enumeration, or an invariant),
or a ``ValueError``/``TypeError``/``MemoryError`` whose message names the bad
argument. Input that cannot be valid (NaN, infinity, complex, strings) must
be refused; ordinary input (magnitudes <= 10) must be accepted. Cases that
allocate huge outputs run in a child interpreter, so that an abort fails the
test instead of the suite.

``OMKL_FUZZ_SLOW=1`` raises the example counts; ``OMKL_FUZZ_SUMMARY=path``
writes the outcome counts as JSON at the end (see benches/fuzz_summary.py).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omkl import decode, kernels, prox

SLOW = os.environ.get("OMKL_FUZZ_SLOW") == "1"
EXAMPLES = 600 if SLOW else 60
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not SLOW,
)

#: (module, outcome) -> count; outcomes: correct, rejected, wrong, panic, abort.
STATS: Counter[tuple[str, str]] = Counter()

SPECIAL = [math.nan, math.inf, -math.inf, 1e308, -1e308, -0.0, 0.0, 5e-324, 1e-300, 1e154, -1e154]
VARIANTS = ["plain", "plain", "plain", "complex", "str", "object", "float32", "int", "noncontig"]


@pytest.fixture(scope="session", autouse=True)
def _summary() -> Iterator[None]:
    yield
    path = os.environ.get("OMKL_FUZZ_SUMMARY")
    if path:
        with open(path, "w") as f:
            json.dump([[m, o, c] for (m, o), c in sorted(STATS.items())], f)


def values(special: bool = True) -> st.SearchStrategy[float]:
    ordinary = st.floats(-10, 10, allow_nan=False, width=64)
    return st.one_of(ordinary, ordinary, st.sampled_from(SPECIAL)) if special else ordinary


@st.composite
def array(draw: Any, shape: tuple[int, ...], special: bool = True) -> tuple[Any, str]:
    """An array of ``shape`` and the name of its variant."""
    a = draw(hnp.arrays(np.float64, shape, elements=values(special)))
    kind = draw(st.sampled_from(VARIANTS))
    if kind == "complex":
        return a.astype(complex) + 1j, kind
    if kind == "str":
        return a.astype(str), kind
    if kind == "object":
        return a.astype(object), kind
    if kind == "float32":
        with np.errstate(over="ignore"):
            return a.astype(np.float32), kind
    if kind == "int" and np.isfinite(a).all() and (np.abs(a) < 1e9).all():
        return np.round(a).astype(np.int64), kind
    if kind == "noncontig":
        return np.repeat(a, 2, axis=-1)[..., ::2], kind
    return a, "plain"


def bad_type(kind: str) -> bool:
    return kind in ("complex", "str", "object")


def as_f64(a: Any) -> np.ndarray:
    """The values of ``a`` as float64 (real part of complex input)."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        a = a.real
    with np.errstate(over="ignore"):
        return a.astype(np.float64)


def run(
    module: str,
    call: Callable[[], Any],
    names: list[str],
    must_reject: bool,
    must_accept: bool,
    check: Callable[[Any], None],
) -> None:
    """Runs one case and asserts its single accepted outcome."""
    try:
        out = call()
    except (ValueError, TypeError, MemoryError) as e:
        msg = str(e)
        # "`emissions (n = 0 positions)`" and "`scores[0]`" name their argument too.
        named = any("`" + n.strip("`") in msg or n in msg for n in names)
        if not named or must_accept:
            STATS[module, "wrong"] += 1
        assert named, f"message names none of {names}: {msg}"
        assert not must_accept, f"ordinary input refused: {msg}"
        STATS[module, "rejected"] += 1
        return
    except BaseException:
        STATS[module, "panic"] += 1
        raise
    try:
        assert not must_reject, f"invalid input accepted, returned {out!r}"
        check(out)
    except AssertionError:
        STATS[module, "wrong"] += 1
        raise
    STATS[module, "correct"] += 1


def ordinary(*arrays: Any) -> bool:
    return all(np.isfinite(as_f64(a)).all() and (np.abs(as_f64(a)) <= 10).all() for a in arrays)


def nonfinite(*arrays: Any) -> bool:
    return any(not np.isfinite(as_f64(a)).all() for a in arrays)


# ---------------------------------------------------------------- references


def pow2_scale(v: np.ndarray) -> float:
    m = float(np.abs(v).max(initial=0.0))
    return 1.0 if m == 0.0 else 2.0 ** math.floor(math.log2(m))


def ref_norm(v: np.ndarray) -> float:
    c = pow2_scale(v)
    return float(np.sqrt(np.sum((v / c) ** 2)) * c)


def ref_squared_l1(x: np.ndarray, tau: float) -> np.ndarray:
    c = pow2_scale(x)
    a = np.abs(x) / c
    u = np.sort(a)[::-1]
    s = np.cumsum(u)
    k = np.arange(1, len(u) + 1)
    ok = u > tau * s / (1 + k * tau)
    theta = 0.0 if not ok.any() else tau * s[ok][-1] / (1 + k[ok][-1] * tau)
    return np.sign(x) * np.maximum(a - theta, 0.0) * c


def ref_l1_ball(x: np.ndarray, r: float) -> np.ndarray:
    c = pow2_scale(x)
    a, r = np.abs(x) / c, r / c
    if a.sum() <= r:
        return x.copy()
    if r == 0:
        return np.zeros_like(x)
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - r
    k = np.arange(1, len(u) + 1)
    hits = np.nonzero(u - css / k > 0)[0]
    rho = hits[-1] if len(hits) else 0  # r below the rounding of u[0]: rho = 0
    theta = css[rho] / (rho + 1)
    return np.sign(x) * np.maximum(a - theta, 0.0) * c


def by_group(x: np.ndarray, g: np.ndarray, new_norm: Callable[[np.ndarray], np.ndarray]) -> Any:
    """Rescales each group of ``x`` to the norm ``new_norm(norms)``."""
    ids = np.unique(g)
    norms = np.array([ref_norm(x[g == i]) for i in ids])
    new = new_norm(norms)
    out = np.zeros_like(x)
    for i, n0, n1 in zip(ids, norms, new, strict=True):
        if n0 > 0:
            out[g == i] = x[g == i] * (n1 / n0)
    return out


def close(a: Any, b: Any, rtol: float = 1e-9, atol: float = 0.0) -> None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.isfinite(a).all(), a
    # A reference that overflowed (or a tolerance that did) would accept any
    # output: an accepted call must have a finite true value.
    assert np.isfinite(b).all(), ("the true value is not finite; the call must refuse", a, b)
    scale = max(float(np.abs(b).max(initial=0.0)), 1e-300)
    bound = rtol * scale + atol + 1e-300
    assert math.isfinite(bound), ("tolerance overflowed", rtol, scale, atol)
    assert np.abs(a - b).max(initial=0.0) <= bound, (a, b)


def prob_tol(n: int, magnitude: float) -> float:
    """Absolute tolerance of probabilities whose reference sums ``n`` scores of
    up to ``magnitude`` in float64 (each rounded by about ``magnitude * eps``)."""
    return 1e-9 + 8 * (n + 1) * 2.3e-16 * magnitude


# --------------------------------------------------------------------- prox

PROX = {
    "soft_threshold": (False, lambda x, g, t: np.sign(x) * np.maximum(np.abs(x) - t, 0.0)),
    "prox_l2_squared": (False, lambda x, g, t: x / (1 + t)),
    "prox_squared_l1": (False, lambda x, g, t: ref_squared_l1(x, t)),
    "project_l1_ball": (False, lambda x, g, t: ref_l1_ball(x, t)),
    "prox_group_lasso": (True, lambda x, g, t: by_group(x, g, lambda n: np.maximum(n - t, 0))),
    "project_l21_ball": (True, lambda x, g, t: by_group(x, g, lambda n: ref_l1_ball(n, t))),
    "prox_squared_l21": (True, lambda x, g, t: by_group(x, g, lambda n: ref_squared_l1(n, t))),
    "prox_sparse_group_lasso": (
        True,
        lambda x, g, t: by_group(
            np.sign(x) * np.maximum(np.abs(x) - t, 0.0), g, lambda n: np.maximum(n - t, 0)
        ),
    ),
    "prox_elastic_net_mkl": (
        True,
        lambda x, g, t: by_group(x, g, lambda n: np.maximum(n - t * 0.5, 0) / (1 + t * 0.5)),
    ),
    "prox_l2q": (True, lambda x, g, t: by_group(x, g, lambda n: n / (1 + 2 * t))),
}


@pytest.mark.parametrize("name", sorted(PROX))
@SETTINGS
@given(data=st.data(), n=st.integers(0, 6), tau=st.sampled_from([0.0, 0.5, 1.0, 3.0, -1.0]))
def test_prox_operators(name: str, n: int, tau: float, data: Any) -> None:
    grouped, ref = PROX[name]
    x, kind = data.draw(array((n,)))
    g = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    fn = getattr(prox, name)
    args: list[Any] = [x, g] if grouped else [x]
    if name == "prox_elastic_net_mkl":
        args += [tau, 0.5]
    elif name == "prox_l2q":
        args += [tau, 2.0]
    elif name == "prox_sparse_group_lasso":
        args += [tau, tau]
    else:
        args.append(tau)
    bad_param = tau < 0
    # Elementwise operators map an empty array to an empty array.
    elementwise = name in ("soft_threshold", "prox_l2_squared")
    must_reject = bad_type(kind) or (n == 0 and not elementwise) or nonfinite(x) or bad_param
    must_accept = not must_reject and ordinary(x) and n > 0
    xs = as_f64(x)

    def check(out: np.ndarray) -> None:
        norms = [ref_norm(xs[g == i]) for i in np.unique(g)] if grouped and n else [0.0]
        if all(math.isfinite(v) for v in norms):
            close(out, ref(xs, g, tau))
            return
        # A group norm beyond the float64 range: the reference cannot form it;
        # check that every coordinate shrinks towards 0 without crossing it.
        assert out.shape == xs.shape and np.isfinite(out).all()
        assert (out * xs >= 0).all() and (np.abs(out) <= np.abs(xs) * (1 + 1e-15)).all()

    run(
        "prox",
        lambda: fn(*args),
        ["`x`", "`tau", "`radius`", "`groups`"],
        must_reject,
        must_accept,
        check,
    )


@SETTINGS
@given(data=st.data(), n=st.integers(0, 6), tau=st.sampled_from([0.0, 1.0, 2.0]))
def test_prox_weighted_squared_l1_and_group_norms(data: Any, n: int, tau: float) -> None:
    x, kind = data.draw(array((n,)))
    d, dkind = data.draw(array((n,)))
    xs, ds = as_f64(x), np.abs(as_f64(d))
    bad = bad_type(kind) or bad_type(dkind) or n == 0 or nonfinite(x, d)

    def check(out: np.ndarray) -> None:
        # With d = 1 the weighted prox is the plain squared-l1 prox; in
        # general it shrinks every coordinate towards 0 without crossing it
        # and leaves those with d = 0 alone.
        assert out.shape == xs.shape and np.isfinite(out).all()
        assert (np.sign(out) * np.sign(xs) >= 0).all() and (np.abs(out) <= np.abs(xs)).all()
        assert (out[ds == 0] == xs[ds == 0]).all()

    dd = d if bad_type(dkind) else np.abs(as_f64(d))
    run(
        "prox",
        lambda: prox.prox_weighted_squared_l1(x, dd, tau),
        ["`x`", "`d`", "`tau`"],
        bad,
        not bad and ordinary(x, d),
        check,
    )
    run(
        "prox",
        lambda: prox.prox_weighted_squared_l1(x, np.ones(n), tau),
        ["`x`", "`d`"],
        bad_type(kind) or n == 0 or nonfinite(x),
        False,
        lambda out: close(out, ref_squared_l1(xs, tau)),
    )
    g = np.arange(n) % 2
    run(
        "prox",
        lambda: prox.group_norms(x, g),
        ["`x`", "`groups`"],
        bad_type(kind) or n == 0 or nonfinite(x),
        False,
        lambda out: close(out, [ref_norm(xs[g == i]) for i in range(int(g.max()) + 1)]),
    )


# ------------------------------------------------------------------- decode


def chain_brute(em: np.ndarray, tr: np.ndarray) -> list[tuple[float, tuple[int, ...]]]:
    n, L = em.shape
    out = []
    for y in itertools.product(range(L), repeat=n):
        with np.errstate(over="ignore"):  # extreme finite scores may sum to inf
            s = sum(em[i, y[i]] for i in range(n)) + sum(tr[y[i - 1], y[i]] for i in range(1, n))
        out.append((float(s), y))
    return out


def trees(n: int) -> list[tuple[int, ...]]:
    out = []
    for heads in itertools.product(range(n + 1), repeat=n):
        h = (0, *heads)
        ok = all(h[m] != m for m in range(1, n + 1))
        for m in range(1, n + 1):
            seen, v = set(), m
            while ok and v != 0:
                ok = v not in seen
                seen.add(v)
                v = h[v]
        if ok:
            out.append(h)
    return out


def projective(h: tuple[int, ...]) -> bool:
    arcs = [(min(h[m], m), max(h[m], m)) for m in range(1, len(h))]
    return not any(a < c < b < d for a, b in arcs for c, d in arcs)


def lse(v: list[float]) -> float:
    m = max(v)
    return m + math.log(sum(math.exp(x - m) for x in v))


@SETTINGS
@given(data=st.data(), n=st.integers(0, 3), L=st.integers(1, 3))
def test_chain_decoders(data: Any, n: int, L: int) -> None:
    em, kind = data.draw(array((n, L)))
    tr, tkind = data.draw(array((L, L)))
    bad = bad_type(kind) or bad_type(tkind) or nonfinite(em, tr) or n == 0
    acc = not bad and ordinary(em, tr)
    E, T = as_f64(em), as_f64(tr)
    brute = chain_brute(E, T) if not bad and n else []
    best = max(s for s, _ in brute) if brute else 0.0
    with np.errstate(over="ignore", invalid="ignore"):  # inf (or nan) for extreme scores
        tol = 1e-12 * max(1.0, float(np.abs(E).sum() + np.abs(T).sum() * n))
    names = ["`emissions`", "`transitions`", "`k`", "`gold`", "`cost`"]

    def check_viterbi(out: Any) -> None:
        y, s = out
        assert math.isfinite(tol), ("tolerance overflowed", tol)
        assert abs(s - best) <= tol, (s, best)
        assert abs(dict((yy, ss) for ss, yy in brute)[tuple(y.tolist())] - s) <= tol

    run("decode", lambda: decode.viterbi(em, tr), names, bad, acc, check_viterbi)
    gold = np.zeros(n, dtype=np.int64)
    aug = [(s + sum(1.0 for i in range(n) if y[i] != 0), y) for s, y in brute]
    run(
        "decode",
        lambda: decode.viterbi_hamming(em, tr, gold, 1.0),
        names,
        bad,
        acc,
        lambda out: close(out[1], max(s for s, _ in aug), 1e-12, tol),
    )
    run(
        "decode",
        lambda: decode.viterbi_batch([em, em], tr),
        names + ["`emissions[0]`"],
        bad,
        acc,
        lambda out: close(out[1], [best, best], 1e-12, tol),
    )
    k = data.draw(st.sampled_from([1, 3, 2**63, 0, 2.5]))
    k_bad = not isinstance(k, int) or not 1 <= k < 2**63
    run(
        "decode",
        lambda: decode.viterbi_nbest(em, tr, k),  # type: ignore[arg-type]
        names,
        bad or k_bad,
        acc and not k_bad,
        lambda out: close(out[1], sorted((s for s, _ in brute), reverse=True)[:k], 1e-12, tol),
    )

    def check_fb(out: Any) -> None:
        log_z, node, _ = out
        ref = lse([s for s, _ in brute])
        assert math.isfinite(ref) and math.isfinite(tol), ("reference overflowed", ref, tol)
        assert abs(log_z - ref) <= 1e-12 * max(10.0, abs(ref)) + tol, (log_z, ref)
        close(node.sum(axis=1), np.ones(n), 0, 1e-9)
        total = sum(math.exp(s - best) for s, _ in brute)
        p = np.zeros((n, L))
        for s, y in brute:
            for i in range(n):
                p[i, y[i]] += math.exp(s - best) / total
        close(node, p, 0, prob_tol(2 * n, float(np.abs(E).max() + np.abs(T).max())))

    run("decode", lambda: decode.forward_backward(em, tr), names, bad, acc, check_fb)


@SETTINGS
@given(data=st.data(), n=st.integers(0, 4), gold=st.sampled_from([0, 1, 1.7, "1", -1, 2**64]))
def test_tree_decoders_and_argmax(data: Any, n: int, gold: Any) -> None:
    s, kind = data.draw(array((n + 1, n + 1)))
    S = as_f64(s)
    used = S[:, 1:][~np.eye(n + 1, dtype=bool)[:, 1:]] if n else S[:0]
    bad = bad_type(kind) or n == 0 or not np.isfinite(used).all()
    acc = not bad and ordinary(used)
    names = ["`scores`", "`gold`", "`cost`"]
    ts = trees(n) if not bad else []

    def score(h: tuple[int, ...]) -> float:
        with np.errstate(over="ignore"):  # extreme finite scores may sum to inf
            return float(sum(S[h[m], m] for m in range(1, n + 1)))

    with np.errstate(over="ignore"):  # inf for extreme finite scores, as the tree sums
        tol = 1e-12 * max(1.0, float(np.abs(used).sum())) if not bad else 0.0
    if ts:
        best = max(score(h) for h in ts)
        pbest = max(score(h) for h in ts if projective(h))
    for fn, ref in [(decode.chu_liu_edmonds, "best"), (decode.eisner, "pbest")]:
        run(
            "decode",
            lambda fn=fn: fn(s),  # type: ignore[misc]
            names,
            bad,
            acc,
            lambda out, ref=ref: close(out[1], best if ref == "best" else pbest, tol + 1e-15),
        )

    def check_mt(out: Any) -> None:
        log_z, mu = out
        ref = lse([score(h) for h in ts])
        assert math.isfinite(ref) and math.isfinite(tol), ("reference overflowed", ref, tol)
        assert abs(log_z - ref) <= 1e-12 * max(10.0, abs(ref)) + tol, (log_z, ref)
        close(mu[:, 1:].sum(axis=0), np.ones(n), 0, 1e-9)
        # Probabilities relative to the best tree: log Z itself may round away
        # ln(count) when the scores are near 1e300.
        top = max(score(h) for h in ts)
        total = sum(math.exp(score(h) - top) for h in ts)
        p = np.zeros_like(S)
        for h in ts:
            for m in range(1, n + 1):
                p[h[m], m] += math.exp(score(h) - top) / total
        close(mu, p, 0, prob_tol(n, float(np.abs(used).max())))

    run("decode", lambda: decode.matrix_tree(s), names, bad, acc, check_mt)
    run(
        "decode",
        lambda: decode.chu_liu_edmonds_batch([s]),
        names + ["`scores[0]`"],
        bad,
        acc,
        lambda out: close(out[1], [best], tol + 1e-15),
    )
    heads = np.zeros(n + 1, dtype=np.int64)
    for fn, ref in ((decode.chu_liu_edmonds_hamming, "best"), (decode.eisner_hamming, "pbest")):
        # cost >= 0: the augmented value is at least the best (projective) score.
        run(
            "decode",
            lambda fn=fn: fn(s, heads, 1.0),  # type: ignore[misc]
            names,
            bad,
            acc,
            lambda out, ref=ref: np.testing.assert_array_less(
                -1e-9 - tol, out[1] - (best if ref == "best" else pbest)
            ),
        )
    # argmax over row 0 of the scores.
    v, vkind = data.draw(array((n,)))
    V = as_f64(v)
    vbad = bad_type(vkind) or n == 0 or nonfinite(v)
    run(
        "decode",
        lambda: decode.argmax(v),
        ["`scores`"],
        vbad,
        not vbad and ordinary(v),
        lambda out: close([out[0], out[1]], [int(np.argmax(V)), V.max()], 0),
    )
    gbad = not isinstance(gold, int) or not 0 <= gold < n
    run(
        "decode",
        lambda: decode.argmax_hamming(v, gold, 1.0),
        ["`scores`", "`gold`", "`cost`"],
        vbad or gbad,
        not (vbad or gbad) and ordinary(v),
        lambda out: close(out[1], max(V + (np.arange(n) != gold)), 1e-15),
    )


# ------------------------------------------------------------------ kernels


def ref_kernel(kind: str, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    X, Y = X.astype(np.float64), Y.astype(np.float64)
    ip = X @ Y.T
    d2 = np.maximum((X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * ip, 0)
    if kind == "linear":
        return ip
    if kind == "polynomial":
        return (ip + 1.0) ** 2
    if kind == "gaussian":
        return np.exp(-d2 / 10.0)
    return np.maximum(0, 1 - np.sqrt(d2) / 3.0)


KINDS = {"linear": {}, "polynomial": {}, "gaussian": {}, "b1_spline": {"h": 3.0}}


@SETTINGS
@given(
    data=st.data(), n=st.integers(0, 4), d=st.integers(1, 3), kind=st.sampled_from(sorted(KINDS))
)
def test_kernels(data: Any, n: int, d: int, kind: str) -> None:
    x, xkind = data.draw(array((n, d)))
    with np.errstate(over="ignore"):
        X32 = as_f64(x).astype(np.float32)
    bad = bad_type(xkind) or n == 0 or not np.isfinite(X32).all()
    acc = not bad and ordinary(x)
    names = ["`X`", "`Y`"]
    params = {"sigma2": 5.0, **KINDS[kind]} if kind != "linear" else {}
    if kind in ("linear", "polynomial"):
        params.pop("sigma2", None)

    def check(out: Any) -> None:
        ref = ref_kernel(kind, X32, X32)
        scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
        assert np.isfinite(out).all()
        assert np.abs(out - ref).max(initial=0.0) <= 1e-4 * scale, (out, ref)

    run("kernels", lambda: kernels.gram(x, kernel=kind, **params), names, bad, acc, check)
    run(
        "kernels",
        lambda: kernels.gram(x, x, kernel=kind, **params),
        names,
        bad,
        acc,
        check,
    )
    k = kernels.make_kernel(kind, **params)
    run("kernels", lambda: kernels.gram_many(x, kernels=[k, "linear"])[0], names, bad, acc, check)
    run(
        "kernels",
        lambda: kernels.sparse_gram(x, kernel=k).to_dense(),
        names,
        bad,
        acc,
        check,
    )
    if n >= 2:
        run(
            "kernels",
            lambda: kernels.b1_bandwidth(x),
            names,
            bad,
            False,
            lambda h: None if (h > 0 and math.isfinite(h)) else pytest.fail(f"h = {h}"),
        )
    if n >= 1:
        row, rkind = data.draw(array((d,)))
        with np.errstate(over="ignore"):
            r32 = as_f64(row).astype(np.float32)
        rbad = bad_type(rkind) or not np.isfinite(r32).all()
        c = kernels.GramCache(d, kernel="linear")
        store = kernels.SupportStore(d)

        def check_row(out: Any) -> None:
            assert (out[3] == r32).all()
            if float(np.abs(r32).max()) < 1e15:
                # float32 products: values below float32's range are 0.
                close(out[1], [float(r32.astype(np.float64) @ r32)], 1e-5, 1e-37)

        run(
            "kernels",
            lambda: (c.add(row), c.row(0), store.add(row), store.get(0)),
            ["`x`"],
            rbad,
            False,
            check_row,
        )


@SETTINGS
@given(
    degree=st.sampled_from([1, 2, 3, 0, -1, 2**31, 2**70, 2.5, "2", True]),
    value=st.sampled_from([1.0, 0.5, 0.0, -1.0, math.nan, math.inf, 1e308, 1 + 1j, "1"]),
    budget=st.sampled_from([0, 1 << 20, -1, 2**63, 2**70, 1.5]),
)
def test_kernel_parameters(degree: Any, value: Any, budget: Any) -> None:
    names = ["`degree`", "`offset`", "`sigma2`", "`h`", "`x`"]
    x = np.array([1.0, 2.0])

    def power() -> float:
        try:
            with np.errstate(over="ignore"):  # inf: then the call must refuse
                return float((x @ x + 1.0) ** degree)
        except OverflowError:
            return math.inf  # then the call must refuse

    for make, ref in [
        (lambda: kernels.polynomial(degree, 1.0), power),
        (lambda: kernels.gaussian(value), lambda: 1.0),
        (lambda: kernels.b1_spline(value), lambda: 1.0),
        (
            lambda: kernels.make_kernel("polynomial", degree=2, offset=value),
            lambda: (5 + value) ** 2,
        ),
        (lambda: kernels.linear(normalize=True), lambda: 1.0),
    ]:
        run(
            "kernels",
            lambda make=make: make().eval(x, x),  # type: ignore[misc]
            names,
            False,
            False,
            lambda out, ref=ref: close(out, ref(), 1e-5),
        )
    run(
        "kernels",
        lambda: kernels.GramCache(2, kernel="linear", budget_bytes=budget),
        ["`budget_bytes`"],
        not (isinstance(budget, int) and 0 <= budget < 2**63),
        isinstance(budget, int) and 0 <= budget < 2**63,
        lambda out: None,
    )


# ------------------------------------------------------------- huge shapes

HUGE = {
    "gram": "kernels.gram(np.zeros((100_000, 2)), kernel='linear')",
    "gram_many": "kernels.gram_many(np.zeros((100_000, 2)), kernels=['linear', 'gaussian'])",
    "sparse_gram": "kernels.sparse_gram(np.zeros((100_000, 2)), kernel='gaussian')",
    "forward_backward": (
        "decode.forward_backward(np.zeros((20000, 1000)), np.zeros((1000, 1000)), pairwise=True)"
    ),
    "viterbi_broadcast": (
        "decode.viterbi(np.broadcast_to(0.0, (10**7, 1000)), np.zeros((1000, 1000)))"
    ),
    "viterbi_nbest": "decode.viterbi_nbest(np.zeros((10**4, 20)), np.zeros((20, 20)), k=10**9)",
    "prox_broadcast": "prox.prox_group_lasso(np.broadcast_to(1.0, (10**11,)), np.zeros(1), 1.0)",
}


@pytest.mark.parametrize("case", sorted(HUGE))
def test_huge_requests_raise_memory_error_in_a_child(case: str) -> None:
    code = (
        "import numpy as np\nfrom omkl import decode, kernels, prox\n"
        f"try:\n    {HUGE[case]}\n    print('RETURNED')\n"
        "except MemoryError as e:\n    print('MemoryError:', e)\n"
    )
    env = {**os.environ, "RAYON_NUM_THREADS": "2"}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    module = "kernels" if "kernels." in HUGE[case] else case.split("_")[0]
    module = "decode" if "decode." in HUGE[case] else ("prox" if "prox." in HUGE[case] else module)
    if r.returncode < 0:
        STATS[module, "abort"] += 1
    elif "MemoryError: cannot allocate" in r.stdout:
        STATS[module, "rejected"] += 1
    else:
        STATS[module, "wrong"] += 1
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "MemoryError: cannot allocate" in r.stdout and "bytes for `" in r.stdout, r.stdout
