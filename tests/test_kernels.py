"""Kernels and dense Gram matrices against numpy references."""

from __future__ import annotations

import math
import pickle
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omkl import kernels


def reference(X: np.ndarray, Y: np.ndarray, kind: str, **p: float) -> np.ndarray:
    """Naive float64 reference, one pair at a time for the distances."""
    X = X.astype(np.float64)
    Y = Y.astype(np.float64)
    D2 = np.array([[np.sum((x - y) ** 2) for y in Y] for x in X]).reshape(len(X), len(Y))
    if kind == "linear":
        K = X @ Y.T
        if p.get("normalize"):
            nx = np.sqrt(np.sum(X * X, axis=1))
            ny = np.sqrt(np.sum(Y * Y, axis=1))
            z = np.outer(nx, ny)
            K = np.divide(K, z, out=np.zeros_like(K), where=z > 0)
        return K
    if kind == "polynomial":
        deg, c = int(p["degree"]), float(p["offset"])
        K = (X @ Y.T + c) ** deg
        if p.get("normalize"):
            dx = (np.sum(X * X, axis=1) + c) ** deg
            dy = (np.sum(Y * Y, axis=1) + c) ** deg
            z = np.sqrt(np.outer(dx, dy))
            K = np.divide(K, z, out=np.zeros_like(K), where=z > 0)
        return K
    if kind == "gaussian":
        return np.exp(-D2 / (2.0 * p["sigma2"]))
    if kind == "b1_spline":
        return np.maximum(0.0, 1.0 - np.sqrt(D2) / p["h"])
    raise AssertionError(kind)


KERNELS = st.one_of(
    st.builds(lambda n: ("linear", {"normalize": n}), st.booleans()),
    st.builds(
        lambda g, c, n: ("polynomial", {"degree": g, "offset": c, "normalize": n}),
        st.integers(1, 3),
        # Offsets, like inputs, are 0 or at least 1e-6: Gram matrices are
        # float32, where a smaller offset rounds towards 0 (see ``gram``).
        st.one_of(st.just(0.0), st.floats(1e-6, 2.0)),
        st.booleans(),
    ),
    st.builds(lambda s: ("gaussian", {"sigma2": s}), st.floats(0.1, 10.0)),
    st.builds(lambda h: ("b1_spline", {"h": h}), st.floats(0.3, 5.0)),
)


def matrices(max_rows: int, d: int) -> st.SearchStrategy[np.ndarray]:
    """Inputs in [-1, 1]; non-zero entries have magnitude >= 1e-6, since
    products of smaller float32 values underflow (see ``gram``)."""
    return hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, max_rows), st.just(d)),
        elements=st.floats(-1.0, 1.0, width=32).filter(lambda v: v == 0.0 or abs(v) >= 1e-6),
    )


def tolerance(kind: str, p: dict, d: int) -> float:
    if kind == "b1_spline":
        return 2e-5 * d / p["h"]
    if kind == "polynomial" and not p["normalize"]:
        return 2e-5 * d * (d + p["offset"]) ** p["degree"]
    return 2e-5 * d


@settings(max_examples=60, deadline=None)
@given(spec=KERNELS, d=st.integers(1, 6), data=st.data())
def test_gram_matches_numpy_reference(spec, d, data):
    kind, p = spec
    X = data.draw(matrices(12, d))
    Y = data.draw(matrices(12, d))
    tol = tolerance(kind, p, d)
    np.testing.assert_allclose(kernels.gram(X, Y, kind, **p), reference(X, Y, kind, **p), atol=tol)
    K = kernels.gram(X, None, kind, **p)
    np.testing.assert_allclose(K, reference(X, X, kind, **p), atol=tol)
    np.testing.assert_array_equal(K, K.T)
    if kernels.make_kernel(kind, **p).has_unit_diagonal:
        np.testing.assert_array_equal(np.diag(K)[np.any(X != 0, axis=1)], 1.0)


@settings(max_examples=40, deadline=None)
@given(
    X=matrices(20, 4),
    sigma2=st.floats(0.05, 5.0),
    degree=st.integers(1, 4),
    offset=st.floats(0.0, 2.0),
    normalize=st.booleans(),
)
def test_gaussian_and_polynomial_grams_are_psd(X, sigma2, degree, offset, normalize):
    for K in (
        kernels.gram(X, kernel="gaussian", sigma2=sigma2),
        kernels.gram(X, kernel="polynomial", degree=degree, offset=offset, normalize=normalize),
    ):
        K = K.astype(np.float64)
        trace = np.trace(K)
        assert np.linalg.eigvalsh(K).min() >= -1e-6 * max(trace, 1e-12)


def test_large_symmetric_gram_spans_tiles():
    rng = np.random.default_rng(1)
    X = (rng.random((700, 128)) < 0.3).astype(np.float32)
    K = kernels.gram(X, kernel="gaussian", sigma2=5.0)
    np.testing.assert_array_equal(K, K.T)
    sq = np.sum(X.astype(np.float64) ** 2, axis=1)
    D2 = sq[:, None] + sq[None, :] - 2.0 * (X.astype(np.float64) @ X.T.astype(np.float64))
    np.testing.assert_allclose(K, np.exp(-D2 / 10.0), atol=1e-6)
    R = kernels.gram(X[:300], X, kernel="gaussian", sigma2=5.0)
    np.testing.assert_allclose(R, K[:300], atol=1e-6)


def test_normalised_quadratic_on_binary_pixels():
    rng = np.random.default_rng(2)
    X = (rng.random((50, 128)) < 0.4).astype(np.float32)
    K = kernels.gram(X, kernel="polynomial", degree=2, offset=0.0, normalize=True)
    G = X.astype(np.float64) @ X.T.astype(np.float64)
    want = G**2 / np.outer(np.diag(G), np.diag(G))
    np.testing.assert_allclose(K, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.diag(K), 1.0)


def test_tiny_inputs_give_finite_normalised_values():
    X = np.array([[1e-40], [1e-30], [1.0]], dtype=np.float32)
    for kind, p in (
        ("linear", {"normalize": True}),
        ("polynomial", {"offset": 0.0, "normalize": True}),
    ):
        K = kernels.gram(X, X, kind, **p)
        assert np.all(np.isfinite(K))
        assert K[2, 2] == pytest.approx(1.0)


def exact_normalised(X: np.ndarray, Y: np.ndarray, degree: int, offset: float) -> np.ndarray:
    """``((x.y + c) / sqrt((|x|^2 + c) (|y|^2 + c))) ** degree`` of the
    float64 inputs (0 where the normaliser is 0), in exact rational
    arithmetic rounded once to float64: right at any scale."""
    c = Fraction(offset)
    fx = [[Fraction(float(v)) for v in row] for row in X]
    fy = [[Fraction(float(v)) for v in row] for row in Y]
    out = np.zeros((len(fx), len(fy)))
    for i, x in enumerate(fx):
        nx = sum(v * v for v in x) + c
        for j, y in enumerate(fy):
            ny = sum(v * v for v in y) + c
            num = sum(a * b for a, b in zip(x, y, strict=True)) + c
            if nx * ny > 0:
                cos = math.sqrt(float(num * num / (nx * ny))) * (1 if num >= 0 else -1)
                out[i, j] = cos**degree
    return out


#: The normalised kernels as ``(kernel, degree, offset)``.
NORMALISED = [
    (kernels.linear(normalize=True), 1, 0.0),
    (kernels.polynomial(1, 0.0, normalize=True), 1, 0.0),
    (kernels.polynomial(2, 0.0, normalize=True), 2, 0.0),
    (kernels.polynomial(3, 0.0, normalize=True), 3, 0.0),
    (kernels.polynomial(2, 1.0, normalize=True), 2, 1.0),
    (kernels.polynomial(3, 0.5, normalize=True), 3, 0.5),
    (kernels.polynomial(2, 1e-30, normalize=True), 2, 1e-30),
    (kernels.polynomial(2, 1e30, normalize=True), 2, 1e30),
]
#: Rows of different directions (cosines from -0.9 to 0.9) and sizes.
ROWS_X = np.array([[1.0, 2.0, -0.5], [3.0, -1.0, 0.25], [0.5, 0.5, 2.0], [-1.0, -1.5, 0.75]])
ROWS_Y = np.array([[2.0, 1.0, 0.0], [-0.25, 4.0, 1.0], [1.0, -2.0, -0.5]])
#: Scales from 1e-300 to 1e300, more of them where float32 products of the
#: inputs underflow or overflow (near 1e-19 and 1e19) or leave its range.
SCALES = sorted(
    {10.0**k for k in range(-300, 301, 25)}
    | {10.0**k for k in (-45, -40, -38, -30, -25, -20, -19, -15, -12, -5, -1)}
    | {10.0**k for k in (1, 5, 12, 15, 19, 20, 25, 30, 38, 40, 45)}
)
#: Absolute tolerance of a normalised float32 Gram entry (values in [-1, 1]).
F32_ATOL = 2e-6


@pytest.mark.parametrize(("k", "degree", "offset"), NORMALISED, ids=repr)
def test_normalised_kernels_match_exact_values_at_any_scale(k, degree, offset):
    """gram, its symmetric form, gram_many and sparse_gram of inputs scaled
    from 1e-300 to 1e300 (rows of one scale, and rows of scales from
    1e-300 to 1e300 together) equal the exact normalised kernel of the
    float64 inputs to float32 rounding; with no offset the result is the
    same at every scale. Small inputs used to give the identity matrix."""
    mixed = np.array([[1e-300], [1e-20], [1.0], [1e300]])
    for X, Y in [(ROWS_X * s, ROWS_Y * s) for s in SCALES] + [(ROWS_X * mixed, ROWS_Y * 1e-150)]:
        want_xy = exact_normalised(X, Y, degree, offset)
        want_xx = exact_normalised(X, X, degree, offset)
        rect = kernels.gram(X, Y, k)
        sym = kernels.gram(X, kernel=k)
        np.testing.assert_allclose(rect, want_xy, rtol=0, atol=F32_ATOL, err_msg=f"{X[0]}")
        np.testing.assert_allclose(sym, want_xx, rtol=0, atol=F32_ATOL, err_msg=f"{X[0]}")
        np.testing.assert_array_equal(np.diag(sym), 1.0)
        np.testing.assert_array_equal(kernels.gram_many(X, Y, kernels=[k, k])[1], rect)
        np.testing.assert_allclose(
            kernels.sparse_gram(X, Y, kernel=k).to_dense(), want_xy, rtol=0, atol=F32_ATOL
        )
        if offset == 0.0:
            at_one = exact_normalised(ROWS_X, ROWS_Y, degree, 0.0)
            np.testing.assert_allclose(want_xy, at_one, rtol=0, atol=1e-12)
    # the values are those of distinct inputs, far from an identity matrix
    assert np.abs(exact_normalised(ROWS_X, ROWS_X, degree, 0.0) - np.eye(4)).max() > 0.5


@pytest.mark.parametrize(("k", "degree", "offset"), NORMALISED, ids=repr)
def test_normalised_kernels_of_float32_inputs_at_any_scale(k, degree, offset):
    """float32 inputs from subnormal (1e-44) to near the float32 maximum
    (1e38) go to the core as they are: its Gram matrices, and the rows of a
    GramCache, equal the exact kernel of those float32 values."""
    for s in [10.0**e for e in range(-44, 39, 2)]:
        X = (ROWS_X * s).astype(np.float32)
        want = exact_normalised(X, X, degree, offset)
        np.testing.assert_allclose(kernels.gram(X, X, k), want, rtol=0, atol=F32_ATOL)
        np.testing.assert_allclose(kernels.gram(X, kernel=k), want, rtol=0, atol=F32_ATOL)
        cache = kernels.GramCache(3, kernel=k)
        for row in X:
            cache.add(row)
        rows = np.array([cache.row(i) for i in range(len(X))])
        np.testing.assert_allclose(rows, want, rtol=0, atol=F32_ATOL, err_msg=f"scale {s}")


def test_gram_many_mixes_normalised_kernels_and_others_at_extreme_scales():
    """With inputs float32 cannot hold, gram_many still gives every kernel
    as gram does: the normalised ones right, the others their float32
    limits (linear 0, Gaussian 1) or the overflow error."""
    X = ROWS_X * 1e-300
    ks = [kernels.linear(), kernels.linear(normalize=True), kernels.gaussian(1.0)]
    many = kernels.gram_many(X, kernels=ks)
    for k, K in zip(ks, many, strict=True):
        np.testing.assert_array_equal(K, kernels.gram(X, kernel=k))
    np.testing.assert_array_equal(many[0], 0.0)
    np.testing.assert_array_equal(many[2], 1.0)
    np.testing.assert_allclose(many[1], exact_normalised(ROWS_X, ROWS_X, 1, 0.0), atol=F32_ATOL)
    with pytest.raises(ValueError, match="`X`.*overflow"):
        kernels.gram_many(ROWS_X * 1e300, kernels=ks)
    np.testing.assert_allclose(
        kernels.gram_many(ROWS_X * 1e300, kernels=ks[1:2])[0],
        exact_normalised(ROWS_X, ROWS_X, 1, 0.0),
        atol=F32_ATOL,
    )


def test_kernel_objects_eval_and_pickle():
    for k in (
        kernels.linear(True),
        kernels.polynomial(3, 0.5, normalize=True),
        kernels.gaussian(5.0),
        kernels.b1_spline(2.0),
    ):
        assert pickle.loads(pickle.dumps(k)) == k
        assert eval(repr(k), {"Kernel": kernels.Kernel}) == k
        x = np.array([1.0, 0.0, 2.0], dtype=np.float32)
        y = np.array([0.5, 1.0, -1.0], dtype=np.float32)
        got = k.eval(x, y)
        want = reference(x[None], y[None], k.kind, **_params(k))[0, 0]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert got == pytest.approx(float(kernels.gram(x[None], y[None], k)[0, 0]), abs=1e-5)


def _params(k: kernels.Kernel) -> dict:
    _, degree, offset, normalize, sigma2, h = k.args()
    return {"degree": degree, "offset": offset, "normalize": normalize, "sigma2": sigma2, "h": h}


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: kernels.gram(np.array([[0.0, np.nan]])), "X"),
        (lambda: kernels.gram(np.ones((2, 2)), np.array([[np.inf, 0.0]])), "Y"),
        (lambda: kernels.gram(np.ones((2, 3)), np.ones((2, 4))), "Y"),
        (lambda: kernels.gram(np.ones(3)), "X"),
        (lambda: kernels.gram(np.ones((0, 3))), "X"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="gaussian", sigma2=-5.0), "sigma2"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="b1_spline", h=0.0), "h"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="polynomial", degree=0), "degree"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="polynomial", degree=-2), "degree"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="polynomial", offset=-1.0), "offset"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="cubic"), "kernel"),
        (lambda: kernels.gram(np.ones((2, 3)), kernel="gaussian", sigma=1.0), "params"),
        (lambda: kernels.gram(np.array([["a", "b"]])), "X"),
        (lambda: kernels.gaussian(5.0).eval([1.0, 2.0], [1.0]), "y"),
        (lambda: kernels.gaussian(5.0).eval([1.0, float("nan")], [1.0, 2.0]), "x"),
        (lambda: kernels.gram_many(np.ones((2, 3)), kernels=[]), "kernels"),
        (lambda: kernels.gram_many(np.ones((2, 3)), kernels="gaussian"), "kernels"),
        (lambda: kernels.gram_many(np.ones((2, 3)), np.ones((2, 4))), "Y"),
        (lambda: kernels.gram_many(np.array([[np.nan, 1.0]])), "X"),
        (lambda: kernels.gram_many(np.ones((2, 3)), kernels=["linear", "cubic"]), "kernel"),
    ],
)
def test_bad_input_raises_value_error_naming_it(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(KERNELS, min_size=1, max_size=4),
    d=st.integers(1, 6),
    data=st.data(),
)
def test_gram_many_equals_each_single_kernel_gram(specs, d, data):
    X = data.draw(matrices(20, d))
    Y = data.draw(matrices(20, d))
    ks = [kernels.make_kernel(kind, **p) for kind, p in specs]
    for got, k in zip(kernels.gram_many(X, Y, ks), ks, strict=True):
        np.testing.assert_array_equal(got, kernels.gram(X, Y, k))
    for got, k in zip(kernels.gram_many(X, kernels=ks), ks, strict=True):
        np.testing.assert_array_equal(got, kernels.gram(X, kernel=k))


def test_gram_many_spanning_tiles_matches_float64_formulas():
    # 700 rows: three symmetric tiles and two rectangular row blocks, with
    # partial tiles at the edges.
    rng = np.random.default_rng(5)
    X = (rng.random((700, 128)) < 0.3).astype(np.float32)
    ks = [
        kernels.linear(),
        kernels.polynomial(2, 0.0, normalize=True),
        kernels.gaussian(5.0),
        kernels.b1_spline(7.0),
    ]
    L, Q, G, B = kernels.gram_many(X, kernels=ks)
    X64 = X.astype(np.float64)
    D = X64 @ X64.T
    sq = np.diag(D)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * D, 0.0)
    np.testing.assert_allclose(L, D, rtol=1e-6)
    np.testing.assert_allclose(Q, D**2 / np.outer(sq, sq), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(G, np.exp(-D2 / 10.0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(B, np.maximum(0.0, 1.0 - np.sqrt(D2) / 7.0), atol=1e-6)
    for K in (L, Q, G, B):
        np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(np.diag(G), 1.0)
    R = kernels.gram_many(X[:300], X, ks)
    for K, Rk, k in zip((L, Q, G, B), R, ks, strict=True):
        np.testing.assert_allclose(Rk, K[:300], rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(Rk, kernels.gram(X[:300], X, k))


def test_gaussian_map_is_accurate_over_the_whole_exponent_range():
    # Squared distances from 0 to far beyond exp underflow: the vectorised
    # exp against float64 numpy, relative to the value (absolute below the
    # smallest normal float32). Against the origin the squared distance is
    # ||x||^2 rounded to float32, and sigma2 = 2 makes the scale -1/4 exact,
    # so the only error left is that of exp.
    x = np.linspace(0.0, 30.0, 4001, dtype=np.float32)[:, None]
    K = kernels.gram(x, np.zeros((1, 1), dtype=np.float32), kernel="gaussian", sigma2=2.0)
    d2 = (x.astype(np.float64) ** 2).astype(np.float32).astype(np.float64)
    want = np.exp(-d2 / 4.0)
    err = np.abs(K.astype(np.float64) - want)
    assert np.all(err <= 3e-7 * want + 1.2e-38)


def test_hostile_parameters_and_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="`degree`"):
        kernels.gram(np.eye(2), kernel="polynomial", degree=2**70)
    with pytest.raises(ValueError, match="`degree`"):
        kernels.Kernel("polynomial", degree=2**70)
    with pytest.raises(ValueError, match="`budget_bytes`"):
        kernels.GramCache(2, kernel="linear", budget_bytes=2**70)
    with pytest.raises(ValueError, match="`d`"):
        kernels.SupportStore(2**70)
    with pytest.raises(TypeError, match="`X`"):
        kernels.gram(np.eye(2) + 1j, kernel="linear")
    with pytest.raises(TypeError, match="`zero_fraction`"):
        kernels.b1_bandwidth(np.eye(3), zero_fraction="0.5")  # type: ignore[arg-type]
    # float32 overflow of the kernel values is refused, not returned as inf.
    with pytest.raises(ValueError, match="`X`"):
        kernels.gram(np.full((2, 2), 1e30), kernel="linear")
    with pytest.raises(ValueError, match="`degree`"):
        kernels.gram(np.full((2, 2), 10.0), kernel="polynomial", degree=100)


@pytest.mark.parametrize(
    ("args", "kwargs", "name", "error"),
    [
        ((5,), {}, "kind", TypeError),
        (("gaussian",), {"sigma2": "a"}, "sigma2", TypeError),
        (("gaussian",), {"sigma2": 1j}, "sigma2", TypeError),
        (("b1_spline",), {"h": [1.0]}, "h", TypeError),
        (("polynomial",), {"offset": "1"}, "offset", TypeError),
        (("linear",), {"normalize": "yes"}, "normalize", TypeError),
        (("linear",), {"normalize": 1}, "normalize", TypeError),
        (("polynomial",), {"degree": 2.5}, "degree", TypeError),
        (("polynomial",), {"degree": True}, "degree", TypeError),
        (("polynomial",), {"degree": 0}, "degree", ValueError),
        (("gaussian",), {"sigma2": -1.0}, "sigma2", ValueError),
        (("b1_spline",), {"h": float("nan")}, "h", ValueError),
        (("cosine",), {}, "kernel", ValueError),
    ],
)
def test_kernel_constructor_names_the_bad_argument(args, kwargs, name, error):
    with pytest.raises(error, match=f"`{name}`: expected"):
        kernels.Kernel(*args, **kwargs)


def test_kernel_constructor_takes_numpy_scalars_and_round_trips():
    k = kernels.Kernel("polynomial", degree=np.int64(3), offset=np.float32(0.5), normalize=np.True_)
    assert k == kernels.polynomial(3, 0.5, normalize=True)
    assert kernels.Kernel(*k.args()) == k
    assert pickle.loads(pickle.dumps(k)) == k
    assert kernels.Kernel("gaussian", sigma2=None) == kernels.gaussian(5.0)


def _tagger_coef(gram: object, ids: np.ndarray, y: np.ndarray) -> np.ndarray:
    from omkl.mkl import SequenceTagger

    tagger = SequenceTagger(kernels={"k": gram}, labels=[0, 1, 2], lam=1e-3, average=True)
    tagger.fit(ids, y, epochs=3, shuffle=True, lengths=np.full(len(ids) // 4, 4))
    return tagger.coef_["k"]


def test_precomputed_gram_reads_a_read_only_array_in_place_and_copies_others():
    from omkl.mkl import PrecomputedGram

    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 5)).astype(np.float32)
    K = kernels.gram(X, kernel="gaussian", sigma2=2.0)
    ids = rng.integers(0, 24, 40)
    y = rng.integers(0, 3, 40)
    # a read-only array is held (one more reference), not copied
    ro = K.copy()
    ro.flags.writeable = False
    refs = sys.getrefcount(ro)
    shared = PrecomputedGram(ro)
    assert sys.getrefcount(ro) == refs + 1
    # a writeable array, or a read-only view of one, is copied: changing it
    # afterwards does not change the matrix
    w = K.copy()
    view = w[:]
    view.flags.writeable = False
    refs_w, refs_v = sys.getrefcount(w), sys.getrefcount(view)
    copied, copied_view = PrecomputedGram(w), PrecomputedGram(view)
    assert (sys.getrefcount(w), sys.getrefcount(view)) == (refs_w, refs_v)
    want = _tagger_coef(PrecomputedGram(K.copy()), ids, y)
    w[:] = 0.0
    del ro
    for g in (shared, copied, copied_view):
        np.testing.assert_array_equal(_tagger_coef(g, ids, y), want)
    # a non-contiguous read-only array is copied as well
    fortran = np.asfortranarray(K)
    fortran.flags.writeable = False
    np.testing.assert_array_equal(_tagger_coef(PrecomputedGram(fortran), ids, y), want)
