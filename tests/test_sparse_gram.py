"""Sparse (CSR) Gram storage, sparse scoring and the B1-spline width helper."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from omkl import kernels


def matrices(max_rows: int, d: int) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, max_rows), st.just(d)),
        elements=st.floats(-1.0, 1.0, width=32),
    )


@settings(max_examples=40, deadline=None)
@given(X=matrices(80, 3), Y=matrices(60, 3), h=st.floats(0.2, 2.0), labels=st.integers(1, 4))
def test_sparse_gram_equals_zeroed_dense_and_scores_agree(X, Y, h, labels):
    dense = kernels.gram(X, Y, kernel="b1_spline", h=h)
    S = kernels.sparse_gram(X, Y, kernel="b1_spline", h=h)
    np.testing.assert_array_equal(S.to_dense(), dense)
    assert S.nnz == np.count_nonzero(dense)
    assert S.density == pytest.approx(np.count_nonzero(dense) / dense.size)
    csr = S.to_scipy()
    assert isinstance(csr, scipy.sparse.csr_matrix)
    np.testing.assert_array_equal(csr.toarray(), dense)
    alpha = np.random.default_rng(len(X)).normal(size=(len(Y), labels))
    want = dense.astype(np.float64) @ alpha
    got = S.scores(alpha)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got, csr @ alpha, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(S.score_row(len(X) - 1, alpha), want[-1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(S.scores(alpha[:, 0]), want[:, 0], rtol=1e-10, atol=1e-10)
    got32 = S.scores_f32(alpha)
    assert got32.dtype == np.float32
    bound = np.abs(dense.astype(np.float64)) @ np.abs(alpha)
    # float32 coefficients (relative rounding 6e-8) and float32 sums over at
    # most len(Y) terms
    assert np.all(np.abs(got32 - want) <= (len(Y) + 2) * 1.2e-7 * bound + 1e-30)
    lm = S.scores_label_major(np.ascontiguousarray(alpha.T))
    assert lm.shape == (labels, len(X))
    np.testing.assert_array_equal(lm, got.T)


def test_sparse_gram_only_stores_neighbours_and_pickles():
    rng = np.random.default_rng(0)
    X = rng.random((600, 16)).astype(np.float32)
    h = kernels.b1_bandwidth(X, zero_fraction=0.95)
    S = kernels.sparse_gram(X, kernel="b1_spline", h=h)
    assert 0.04 <= S.density <= 0.06
    # int64 indptr + int32 indices + float32 values
    assert S.nbytes == 8 * (len(X) + 1) + 8 * S.nnz
    T = pickle.loads(pickle.dumps(S))
    np.testing.assert_array_equal(T.to_dense(), S.to_dense())
    assert repr(T).startswith("SparseGram(shape=(600, 600)")


def test_scoring_layout_bytes_are_reported_after_the_first_scoring_call():
    rng = np.random.default_rng(1)
    X = rng.random((500, 8)).astype(np.float32)
    S = kernels.sparse_gram(X, kernel="b1_spline", h=kernels.b1_bandwidth(X, zero_fraction=0.9))
    n, nnz = len(X), S.nnz
    assert S.scoring_nbytes == 0
    S.scores_f32(rng.random((n, 26)).astype(np.float32))
    # two u32 renumberings, int64 indptr, u16 indices + f32 values, and the
    # reused f32 coefficient buffer (26 labels padded to 32, plus alignment)
    layout = 8 * n + 8 * (n + 1) + 6 * nnz
    assert layout + 4 * 32 * n <= S.scoring_nbytes <= layout + 4 * 32 * n + 1024
    S.scores(rng.random((n, 3)))
    # and the f64 buffer (3 labels padded to 8)
    assert layout + 4 * 32 * n + 8 * 8 * n <= S.scoring_nbytes
    assert S.scoring_nbytes <= layout + 4 * 32 * n + 8 * 8 * n + 2048
    assert pickle.loads(pickle.dumps(S)).scoring_nbytes == 0


def test_sparse_gram_of_x_with_itself_is_symmetric_and_equals_dense():
    rng = np.random.default_rng(3)
    # binary pixels: inner products are exact, so every entry is equal
    X = (rng.random((300, 64)) < 0.3).astype(np.float32)
    h = kernels.b1_bandwidth(X, zero_fraction=0.9)
    D = kernels.sparse_gram(X, kernel="b1_spline", h=h).to_dense()
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_array_equal(D, kernels.gram(X, kernel="b1_spline", h=h))
    np.testing.assert_array_equal(D, kernels.sparse_gram(X, X.copy(), h=h).to_dense())
    assert 0.05 < np.count_nonzero(D) / D.size < 0.2
    # real inputs: equal up to float32 rounding of the distances
    Xr = rng.normal(size=(200, 5))
    hr = kernels.b1_bandwidth(Xr, zero_fraction=0.9)
    Dr = kernels.sparse_gram(Xr, h=hr).to_dense()
    np.testing.assert_array_equal(Dr, Dr.T)
    np.testing.assert_allclose(Dr, kernels.gram(Xr, kernel="b1_spline", h=hr), rtol=0, atol=1e-5)


@pytest.mark.parametrize(("n", "d", "target"), [(400, 8, 0.95), (300, 3, 0.8), (500, 20, 0.5)])
def test_b1_bandwidth_hits_target_zero_fraction(n, d, target):
    X = np.random.default_rng(n).normal(size=(n, d))
    h = kernels.b1_bandwidth(X, zero_fraction=target)
    K = kernels.gram(X, kernel="b1_spline", h=h)
    assert abs(np.mean(K == 0.0) - target) <= 0.01
    # independent check of the quantile with scipy's pairwise distances
    from scipy.spatial.distance import pdist

    dist = pdist(X.astype(np.float32).astype(np.float64))
    zeros = (2 * np.count_nonzero(dist >= h)) / n**2
    assert abs(zeros - target) <= 0.01


def test_b1_bandwidth_on_a_sample_of_binary_pixels():
    rng = np.random.default_rng(3)
    protos = rng.random((26, 128)) < 0.3
    X = protos[rng.integers(0, 26, size=2500)] ^ (rng.random((2500, 128)) < 0.1)
    h = kernels.b1_bandwidth(X.astype(np.float32), zero_fraction=0.95, max_sample=1000)
    S = kernels.sparse_gram(X, kernel="b1_spline", h=h)
    assert abs((1.0 - S.density) - 0.95) <= 0.01


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: kernels.b1_bandwidth(np.ones((4, 2)) * np.arange(4)[:, None], 1.0),
            "zero_fraction",
        ),
        (lambda: kernels.b1_bandwidth(np.ones((4, 2)), 0.5), "identical"),
        (lambda: kernels.b1_bandwidth(np.ones((1, 2)), 0.5), "X"),
        (lambda: kernels.b1_bandwidth(np.ones((3, 2)), 0.5, max_sample=1), "max_sample"),
        (lambda: kernels.b1_bandwidth(np.array([[np.nan, 1.0]]), 0.5), "X"),
        (lambda: kernels.sparse_gram(np.ones((2, 2)), h=-1.0), "h"),
        (lambda: kernels.sparse_gram(np.ones((2, 2)), np.ones((2, 3)), h=1.0), "Y"),
        (lambda: kernels.sparse_gram(np.eye(2), h=1.0).scores(np.ones((3, 1))), "alpha"),
        (lambda: kernels.sparse_gram(np.eye(2), h=1.0).scores([[np.nan], [1.0]]), "alpha"),
        (lambda: kernels.sparse_gram(np.eye(2), h=1.0).score_row(2, np.ones((2, 1))), "i"),
    ],
)
def test_bad_input_raises_value_error_naming_it(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_from_csr_rejects_malformed_arrays():
    from omkl import _omkl

    i64 = np.int64
    with pytest.raises(ValueError, match="indices"):
        _omkl.SparseGram.from_csr(
            1, 2, np.array([0, 2], i64), np.array([1, 0], i64), np.ones(2, np.float32)
        )
    with pytest.raises(ValueError, match="indptr"):
        _omkl.SparseGram.from_csr(
            2, 2, np.array([0, 1], i64), np.array([0], i64), np.ones(1, np.float32)
        )


def test_label_major_scores_reject_bad_alpha():
    S = kernels.sparse_gram(np.arange(4.0)[:, None], kernel="b1_spline", h=1.5)
    for bad in (np.ones((2, 3)), np.ones(4), np.ones((0, 4))):
        with pytest.raises(ValueError, match="alpha"):
            S.scores_label_major(bad)
    with pytest.raises(ValueError, match="alpha"):
        S.scores_label_major(np.array([[0.0, np.nan, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="alpha"):
        S.scores_f32(np.array([0.0, np.inf, 0.0, 0.0]))
    with pytest.raises(ValueError, match="alpha"):
        S.scores_f32(np.array([0.0, 1e39, 0.0, 0.0]))  # overflows float32
    with pytest.raises(ValueError, match="alpha"):
        S.scores_f32(np.ones((3, 2)))
