"""OCR data loader, kernelised online MKL on chains and the OCR experiment."""

from __future__ import annotations

import gzip
import pathlib

import numpy as np
import pytest

from omkl.datasets import load_ocr


@pytest.fixture(scope="module")
def ocr():
    return load_ocr()


@pytest.fixture(scope="module")
def corpus(ocr):
    """The experiment's deduplicated corpus, built once for the module."""
    from omkl.experiments.ocr import Corpus

    return Corpus.from_dataset(ocr)


def _lines(n_words: int = 3) -> list[str]:
    """A tiny valid file: ``n_words`` words of 2-3 characters."""
    rng = np.random.default_rng(0)
    out, cid = [], 1
    for w in range(n_words):
        n = 2 + w % 2
        for p in range(n):
            nxt = -1 if p == n - 1 else cid + 1
            pix = "\t".join(str(v) for v in rng.integers(0, 2, 128))
            out.append(f"{cid}\t{'abc'[p]}\t{nxt}\t{w + 1}\t{p + 1}\t{w % 10}\t{pix}")
            cid += 1
    return out


def test_bundled_file_loads(ocr):
    assert len(ocr.letters) == 52152
    assert len(ocr.words) == 6877
    assert sorted(set(ocr.folds.tolist())) == list(range(10))
    assert ocr.pixels.shape == (52152, 128) and ocr.pixels.dtype == np.uint8
    assert set(np.unique(ocr.pixels).tolist()) == {0, 1}
    assert ocr.alphabet == [chr(c) for c in range(ord("a"), ord("z") + 1)]
    x, y = ocr.words[0]
    assert x.shape == (len(y), 128)
    assert sum(len(w[1]) for w in ocr.words) == 52152


def test_loader_matches_slow_reference(tmp_path: pathlib.Path):
    lines = _lines(5)
    path = tmp_path / "letter.data"
    path.write_text("\n".join(lines) + "\n")
    data = load_ocr(path)
    rows = [ln.split("\t") for ln in lines]
    np.testing.assert_array_equal(data.pixels, np.array([r[6:] for r in rows], dtype=np.uint8))
    assert data.letters == [r[1] for r in rows]
    assert [len(w[1]) for w in data.words] == [2, 3, 2, 3, 2]
    assert data.folds.tolist() == [0, 1, 2, 3, 4]
    gz = tmp_path / "letter.data.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    np.testing.assert_array_equal(load_ocr(gz).pixels, data.pixels)


@pytest.mark.parametrize(
    ("line_no", "edit", "match"),
    [
        (3, lambda f: f[:-1], "fields"),
        (2, lambda f: f[:5] + ["x"] + f[6:], "integers"),
        (4, lambda f: f[:7] + ["2"] + f[8:], "0 or 1"),
        (1, lambda f: f[:1] + ["ab"] + f[2:], "single letter"),
        (5, lambda f: f[:5] + ["12"] + f[6:], "fold"),
        (2, lambda f: f[:4] + ["7"] + f[5:], "position"),
        (1, lambda f: f[:2] + ["99"] + f[3:], "next_id"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: pathlib.Path, line_no, edit, match):
    lines = _lines(3)
    lines[line_no - 1] = "\t".join(edit(lines[line_no - 1].split("\t")))
    path = tmp_path / "bad.data"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=match) as err:
        load_ocr(path)
    assert f"bad.data:{line_no}:" in str(err.value)


def test_missing_and_empty_files(tmp_path: pathlib.Path):
    with pytest.raises(FileNotFoundError):
        load_ocr(tmp_path / "nope.data")
    (tmp_path / "empty.data").write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_ocr(tmp_path / "empty.data")


# --------------------------------------------------------------------------
# kernelised online MKL on chains


def test_corpus_dedup_matches_numpy_unique_rows(ocr, corpus):
    """Packed-key deduplication gives np.unique(axis=0)'s rows, order and inverse."""
    from dataclasses import replace

    from omkl.experiments.ocr import Corpus

    np.testing.assert_array_equal(corpus.X[corpus.char_input], ocr.pixels)
    assert len(corpus.X) == len({r.tobytes() for r in ocr.pixels})  # no duplicates left
    # a subset with many repeated rows, against numpy's row-wise unique
    rows = np.random.default_rng(5).integers(0, len(ocr.pixels), 3000)
    rows = np.concatenate([rows, rows[:500]])
    sub = replace(ocr, pixels=ocr.pixels[rows], letters=[ocr.letters[i] for i in rows])
    got = Corpus.from_dataset(sub)
    uniq, inverse = np.unique(sub.pixels, axis=0, return_inverse=True)
    np.testing.assert_array_equal(got.X, uniq.astype(np.float32))
    np.testing.assert_array_equal(got.char_input, inverse.ravel())
    np.testing.assert_array_equal(got.sq, uniq.sum(axis=1))


def _small_problem(corpus, n_words: int = 120):
    from omkl.experiments.ocr import fold_grams, make_split

    words = np.flatnonzero(corpus.folds == 0)[:n_words]
    inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    fg = fold_grams(corpus, inputs, ["L", "Q", "G"])
    local = np.full(len(corpus.X), -1, dtype=np.int64)
    local[inputs] = np.arange(len(inputs))
    return corpus, fg, make_split(corpus, words, local)


@pytest.fixture(scope="module")
def small(corpus):
    return _small_problem(corpus)


@pytest.fixture(scope="module")
def small_b1(small):
    """B1-spline fold Grams (sparse) of the small problem's inputs."""
    from omkl.experiments.ocr import fold_grams

    corpus, fg, _ = small
    return fold_grams(corpus, fg.inputs, ["B"])


def test_tracked_group_norms_match_quadratic_forms(small):
    from omkl import _omkl

    _, fg, split = small
    grams = [fg.base[b] for b in ("L", "Q", "G")]
    res = _omkl.train_chain_mkl(
        grams, split.inputs, split.labels, split.offsets, 26, lam=1e-3, eta0=0.5, epochs=6
    )
    for k, g in enumerate(grams):
        a = res["last_coef"][k]  # L x m
        exact = float(np.einsum("yi,ij,yj->", a, g.astype(np.float64), a))
        assert exact > 0
        assert abs(res["last_sq_norms"][k] - exact) <= 1e-8 * exact
    beta = res["beta"]
    assert np.all(beta >= 0) and abs(beta.sum() - 1) < 1e-12
    assert res["beta_trajectory"].shape == (6, 3)
    np.testing.assert_allclose(res["beta_trajectory"].sum(axis=1), 1.0)


def test_rust_grams_match_numpy_reference(small, small_b1):
    """Fold Grams and test-vs-support blocks from the Rust kernels equal the
    numpy formulas (one f32 GEMM of inner products) up to float32 rounding."""
    from omkl.experiments.ocr import (
        ROWS,
        b1_bandwidth,
        emission_scores,
        kernel_from_dots,
        train,
    )

    corpus, fg, split = small
    Xs, sq = corpus.X[fg.inputs], corpus.sq[fg.inputs]
    D = Xs @ Xs.T
    h = b1_bandwidth(Xs, sq)
    assert 0 < h < np.sqrt(2 * 128)
    fgb = small_b1
    assert fgb.h == h
    refs = {b: kernel_from_dots(b, D, sq, sq, h) for b in ("L", "Q", "G", "B")}
    for b, ref in refs.items():
        got = fgb.sparse["B"].to_dense() if b == "B" else fg.base[b]
        assert got.dtype == np.float32 and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6, err_msg=b)
        np.testing.assert_array_equal(got, got.T)
    # B1: about 95% of the entries are exactly zero, with the same zero pattern
    zeros = fgb.sparse["B"].to_dense() == 0
    assert 0.85 < zeros.mean() < 0.99
    assert np.mean(zeros != (refs["B"] == 0)) < 1e-4
    # test emissions: Rust Gram blocks against the numpy reference
    model = train(fg, ROWS["mkl_lqg"], split, C=100.0, eta0=0.1, epochs=2)
    test_inputs = np.unique(corpus.char_input[corpus.chars_of(np.flatnonzero(corpus.folds == 1))])
    test_inputs = test_inputs[:300]
    got = emission_scores(corpus, fg, ROWS["mkl_lqg"], model, test_inputs, chunk=128)
    Xt, sqt = corpus.X[test_inputs], corpus.sq[test_inputs]
    ref = Xt @ model["parts"][0][1].T.astype(np.float32) / np.sqrt(sqt)[:, None]
    Dt = Xt @ Xs.T
    for names, coef in model["parts"][1:]:
        ref = ref + kernel_from_dots(names[0], Dt, sqt, sq, h) @ coef.T.astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_end_to_end_accuracy_well_above_chance(small):
    from omkl.experiments.ocr import ROWS, heldout_accuracy, make_split, train

    corpus, fg, split = small
    local = np.full(len(corpus.X), -1, dtype=np.int64)
    local[fg.inputs] = np.arange(len(fg.inputs))
    words = np.flatnonzero(corpus.folds == 0)
    train_split = make_split(corpus, words[:90], local)
    held_split = make_split(corpus, words[90:120], local)
    model = train(fg, ROWS["mkl_lqg"], train_split, C=100.0, eta0=0.1, epochs=5)
    acc = heldout_accuracy(model, fg, held_split)
    assert acc > 0.4, acc  # chance is about 1/26
    assert abs(model["beta"].sum() - 1) < 1e-12 and np.all(model["beta"] >= 0)
    # training accuracy after 5 epochs on 90 words is high
    assert heldout_accuracy(model, fg, train_split) > 0.9


def test_decode_chains_matches_brute_force():
    import itertools

    from omkl import _omkl

    rng = np.random.default_rng(3)
    L, lens = 3, [1, 3, 2]
    em = rng.normal(size=(sum(lens), L))
    tr, st, sp = rng.normal(size=(L, L)), rng.normal(size=L), rng.normal(size=L)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    got = _omkl.decode_chains(em, offsets, tr, st, sp)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):

        def score(y, a=a):
            s = st[y[0]] + sp[y[-1]] + sum(em[a + i, v] for i, v in enumerate(y))
            return s + sum(tr[u, v] for u, v in zip(y, y[1:], strict=False))

        best = max(itertools.product(range(L), repeat=b - a), key=score)
        assert tuple(got[a:b]) == best


def test_bad_inputs_raise_value_error(small):
    from omkl import _omkl

    _, fg, split = small
    g = fg.base["L"]
    args = (split.inputs, split.labels, split.offsets, 26)
    with pytest.raises(ValueError, match="regularizer"):
        _omkl.train_chain_mkl([g], *args, regularizer="l1")
    with pytest.raises(ValueError, match="eta0"):
        _omkl.train_chain_mkl([g], *args, eta0=-1.0)
    with pytest.raises(ValueError, match="lam"):
        _omkl.train_chain_mkl([g], *args, lam=float("nan"))
    with pytest.raises(ValueError, match="grams"):
        _omkl.train_chain_mkl([g, g[:-1, :-1].copy()], *args)
    with pytest.raises(ValueError, match="symmetric"):
        bad = g.copy()
        bad[0, 1] += 1
        _omkl.train_chain_mkl([bad], *args)
    with pytest.raises(ValueError, match="labels"):
        _omkl.train_chain_mkl([g], split.inputs, split.labels, split.offsets, 3)
    with pytest.raises(ValueError, match="inputs"):
        _omkl.train_chain_mkl([g], -split.inputs - 1, split.labels, split.offsets, 26)
    with pytest.raises(ValueError, match="offsets"):
        _omkl.train_chain_mkl([g], split.inputs, split.labels, split.offsets[:-1], 26)
    with pytest.raises(ValueError, match="emissions"):
        em = np.full((2, 3), np.nan)
        _omkl.decode_chains(em, np.array([0, 2]), np.zeros((3, 3)), np.zeros(3), np.zeros(3))


def test_primal_linear_group_equals_kernelised_linear(small):
    """The normalised linear kernel as a Gram matrix and as explicit unit-norm
    features give the same model: equal predictions, norms within 1e-9."""
    from omkl import _omkl

    _, fg, split = small
    args = (split.inputs, split.labels, split.offsets, 26)
    kw = dict(lam=1e-3, eta0=0.5, epochs=4, schedule="constant")
    D = fg.unit.astype(np.float64) @ fg.unit.T.astype(np.float64)
    gram = D.astype(np.float32)
    gram = np.minimum(gram, gram.T)  # exactly symmetric
    a = _omkl.train_chain_mkl([gram], *args, **kw)
    # the primal run sees the features whose inner products are `gram` up to
    # f32 rounding, so compare with a tolerance that reflects it
    b = _omkl.train_chain_mkl([], *args, features=[fg.unit], **kw)
    w = a["coef"][0] @ fg.unit.astype(np.float64)  # W_y = sum_j alpha_yj x_j
    np.testing.assert_allclose(w, b["weights"][0], rtol=0, atol=1e-4)
    np.testing.assert_allclose(a["norms"], b["norms"], rtol=1e-4)


def test_run_fold_chooses_eta0_per_C_on_training_words_only(corpus):
    from concurrent.futures import ThreadPoolExecutor

    from omkl.experiments.ocr import ROWS, fold_grams, run_fold

    words = np.flatnonzero(corpus.folds == 3)
    inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    fg = fold_grams(corpus, inputs, [])
    with ThreadPoolExecutor(max_workers=2) as pool:
        res = run_fold(
            corpus, fg, ROWS["linear"], 3, 2, pool, c_grid=(0.1, 100.0), eta_grid=(0.01, 1.0)
        )
    assert set(res.eta_by_C) == {"0.1", "100.0"} and set(res.heldout) == set(res.eta_by_C)
    assert set(res.eta_by_C.values()) <= {0.01, 1.0}
    assert res.eta0 == res.eta_by_C[str(res.C)]
    assert res.heldout[str(res.C)] == max(res.heldout.values())
    assert 0.5 < res.accuracy < 1.0  # linear chain model on nine unseen folds


def test_sparse_b1_gram_trains_the_dense_model(small, small_b1):
    """B1-spline rows: the CSR Gram matrix (only non-zeros stored) gives the
    same coefficients, transitions and predictions as the dense matrix."""
    from omkl import _omkl

    _, fg, split = small
    fgb = small_b1
    S = fgb.sparse["B"]
    assert S.density < 0.2
    dense = S.to_dense()
    args = (split.inputs, split.labels, split.offsets, 26)
    kw = dict(lam=1e-3, eta0=0.5, epochs=3, schedule="constant", track_objective=True)
    for reg, extra in [("l2_squared", {}), ("squared_l21", {"features": [fg.unit]})]:
        a = _omkl.train_chain_mkl([dense], *args, regularizer=reg, **extra, **kw)
        b = _omkl.train_chain_mkl(
            [], *args, regularizer=reg, sparse_grams=[fgb.csr("B")], **extra, **kw
        )
        # the SparseGram object itself, used in place: the same run
        c = _omkl.train_chain_mkl(
            [], *args, regularizer=reg, sparse_grams=[S._inner], **extra, **kw
        )
        np.testing.assert_array_equal(a["coef"], b["coef"])
        for key in ("transitions", "start", "stop", "mistakes"):
            np.testing.assert_array_equal(a[key], b[key])
        for key in ("coef", "transitions", "start", "stop", "mistakes", "norms", "objective"):
            np.testing.assert_array_equal(b[key], c[key])
        np.testing.assert_allclose(a["norms"], b["norms"], rtol=1e-12)
        np.testing.assert_allclose(a["objective"], b["objective"], rtol=1e-12)
        assert np.abs(a["coef"]).sum() > 0
    # a scaled object equals the scaled arrays (float32 products)
    half = S._inner.scaled(0.5)
    indptr, indices, data = fgb.csr("B", 0.5)
    np.testing.assert_array_equal(half.csr()[2], data)
    np.testing.assert_array_equal(half.csr()[1], indices)
    a = _omkl.train_chain_mkl([], *args, sparse_grams=[(indptr, indices, data)], **kw)
    b = _omkl.train_chain_mkl([], *args, sparse_grams=[half], **kw)
    for key in ("coef", "transitions", "norms", "objective"):
        np.testing.assert_array_equal(a[key], b[key])
    with pytest.raises(ValueError, match="c"):
        S._inner.scaled(float("nan"))
    with pytest.raises(ValueError, match=r"sparse_grams\[0\]"):
        _omkl.train_chain_mkl([], *args, sparse_grams=["not a matrix"])
    with pytest.raises(ValueError, match=r"sparse_grams\[0\]"):  # not m x m
        _omkl.train_chain_mkl(
            [],
            *args,
            features=[fg.unit],
            sparse_grams=[
                _omkl.SparseGram.from_csr(
                    1, 1, np.array([0, 1]), np.array([0]), np.ones(1, np.float32)
                )
            ],
        )
    with pytest.raises(ValueError, match="symmetric"):  # an asymmetric object
        ip, ix, dv = fgb.csr("B")
        bad = dv.copy()
        bad[1] += 0.5
        obj = _omkl.SparseGram.from_csr(len(ip) - 1, len(ip) - 1, ip, ix, bad)
        _omkl.train_chain_mkl([], *args, sparse_grams=[obj])
    with pytest.raises(ValueError, match="sparse_grams"):
        indptr, indices, data = fgb.csr("B")
        _omkl.train_chain_mkl([], *args, sparse_grams=[(indptr[:-1], indices, data)])
    with pytest.raises(ValueError, match="symmetric"):
        indptr, indices, data = fgb.csr("B")
        bad = data.copy()
        bad[1] += 0.5  # row 0's first off-diagonal entry
        _omkl.train_chain_mkl([], *args, sparse_grams=[(indptr, indices, bad)])


def test_average_with_sparse_kernel_equals_dense_average(small, small_b1):
    """Average (L+B1)/2 trained as groups L/2 (primal) and B1/2 (sparse) under
    the squared l2 norm equals one group with the dense Gram (K_L + K_B)/2."""
    from dataclasses import replace

    from omkl import _omkl
    from omkl.experiments.ocr import ROWS, emission_scores, train

    corpus, fg, split = small
    fgb = replace(small_b1, base={**small_b1.base, "L": fg.base["L"]})
    row = ROWS["average_lb1"]
    C, eta0 = 100.0, 0.5
    split_model = train(fgb, row, split, C, eta0, 3)
    avg = (fg.base["L"] + fgb.sparse["B"].to_dense()) * np.float32(0.5)
    ref = _omkl.train_chain_mkl(
        [avg],
        split.inputs,
        split.labels,
        split.offsets,
        26,
        regularizer="l2_squared",
        lam=1.0 / (C * split.n_words),
        eta0=eta0,
        schedule="constant",
        epochs=3,
    )
    test_inputs = np.unique(corpus.char_input[corpus.chars_of(np.flatnonzero(corpus.folds == 1))])
    got = emission_scores(corpus, fgb, row, split_model, test_inputs[:400], chunk=128)
    # reference: ((K_L + K_B) / 2)(test, train) @ alpha
    from omkl import kernels
    from omkl.experiments.ocr import base_kernel

    Xt, Xs = corpus.X[test_inputs[:400]], corpus.X[fg.inputs]
    kt = (
        kernels.gram(Xt, Xs, kernel=base_kernel("L"))
        + kernels.gram(Xt, Xs, kernel=base_kernel("B", fgb.h))
    ) / 2
    want = kt @ ref["coef"][0].T
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    np.testing.assert_allclose(split_model["transitions"], ref["transitions"], atol=1e-6)


def test_mkl_with_one_kernel_and_transitions_apart_is_the_svm(small):
    """With the transitions penalised apart, the squared l2,1 norm over a
    single kernel group is (lambda/2)|theta_Q|^2: MKL restricted to one kernel
    (beta = e_Q) is exactly the quadratic SVM at the same C; with the
    transitions inside the norm it is a different model."""
    from omkl import _omkl

    _, fg, split = small
    args = ([fg.base["Q"]], split.inputs, split.labels, split.offsets, 26)
    lam = 1.0 / (10.0 * split.n_words)
    kw = dict(lam=lam, eta0=0.1, epochs=3, schedule="constant", track_objective=True)
    svm = _omkl.train_chain_mkl(*args, regularizer="l2_squared", **kw)
    apart = _omkl.train_chain_mkl(*args, regularizer="squared_l21", transition_lam=lam, **kw)
    shared = _omkl.train_chain_mkl(*args, regularizer="squared_l21", **kw)
    for key in ("coef", "transitions", "start", "stop", "objective"):
        np.testing.assert_allclose(apart[key], svm[key], rtol=1e-12, atol=1e-12, err_msg=key)
    assert not np.allclose(shared["objective"], svm["objective"], rtol=1e-6)


@pytest.mark.parametrize("d", [1, 70, 128, 200])
def test_b1_bandwidth_popcount_path_equals_inner_product_formula(d):
    """0/1 inputs: the packed-bit distances are the f32 formula's values and
    give the same h; other inputs take the formula."""
    from omkl.experiments.ocr import _popcount_distances, b1_bandwidth

    rng = np.random.default_rng(d)
    X = (rng.random((300, d)) < 0.3).astype(np.float32)
    sq = (X * X).sum(axis=1)
    i, j = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    dots = np.einsum("ij,ij->i", X[i], X[j], dtype=np.float32)
    ref = sq[i] + sq[j] - 2.0 * dots
    got = _popcount_distances(X, i, j)
    assert np.issubdtype(got.dtype, np.integer)
    np.testing.assert_array_equal(got.astype(np.float32), ref)
    # the sampled pairs of b1_bandwidth, through the formula
    r = np.random.default_rng(0)
    a, b = r.integers(0, 300, 200_000), r.integers(0, 300, 200_000)
    a, b = a[a != b], b[a != b]
    d2 = sq[a] + sq[b] - 2.0 * np.einsum("ij,ij->i", X[a], X[b], dtype=np.float32)
    h = float(np.sqrt(max(np.quantile(d2, 0.05), 1e-12)))
    assert b1_bandwidth(X, sq) == h
    # non-binary inputs: the formula on the same pairs
    Y = X * np.float32(0.5)
    sqy = (Y * Y).sum(axis=1)
    d2y = sqy[a] + sqy[b] - 2.0 * np.einsum("ij,ij->i", Y[a], Y[b], dtype=np.float32)
    assert b1_bandwidth(Y, sqy) == float(np.sqrt(max(np.quantile(d2y, 0.05), 1e-12)))


def test_unit_scores_on_one_blas_thread_equal_the_threaded_product():
    """The products done on one OpenBLAS thread give the threaded product's
    bits (d = 128 columns), and the thread count is restored afterwards,
    also when the block raises."""
    from omkl.experiments import ocr as exp

    rng = np.random.default_rng(5)
    for m in (1, 65, 1000, 4096):
        U = exp.unit_rows((rng.random((m, 128)) < 0.4).astype(np.float32))
        W = rng.standard_normal((26, 128))
        np.testing.assert_array_equal(exp.unit_scores(U, W), U @ W.T.astype(np.float32))
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    assert before, "no BLAS library found"
    with exp.single_threaded_blas():
        assert all(n == 1 for n in blas_threads())
    assert blas_threads() == before
    with pytest.raises(RuntimeError), exp.single_threaded_blas():
        raise RuntimeError("boom")
    assert blas_threads() == before


def test_integer_quantile_equals_numpy_quantile():
    """The quantile read off a histogram of integers is np.quantile's value
    of the float32 values themselves, for any q and spread of counts."""
    from omkl.experiments.ocr import _integer_quantile

    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(1, 400))
        v = rng.integers(0, int(rng.integers(1, 130)), n)
        q = float(rng.random()) if trial % 3 else float(rng.choice([0.0, 0.05, 0.5, 1.0]))
        got = _integer_quantile(np.bincount(v, minlength=129), q)
        want = np.quantile(v.astype(np.float32), q)
        assert got == want and got.dtype == want.dtype, (n, q)
