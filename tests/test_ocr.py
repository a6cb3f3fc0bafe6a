"""OCR data loader, kernelised online MKL on chains and the OCR experiment."""

from __future__ import annotations

import copy
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


def _tagger(split, kernels=(), features=(), epochs=3, average=False, **kw):
    """A SequenceTagger over precomputed Gram matrices (``kernels``: float32
    arrays or SparseGram objects) and feature rows, trained on ``split``
    with a constant step, as the OCR experiment trains."""
    from omkl import PrecomputedGram, SequenceTagger

    kw = {"lam": 1e-3, "eta0": 0.5, "schedule": "constant", **kw}
    tagger = SequenceTagger(
        kernels={f"k{i}": PrecomputedGram(g) for i, g in enumerate(kernels)},
        explicit_groups={f"e{i}": f for i, f in enumerate(features)},
        labels=list(range(26)),
        average=average,
        **kw,
    )
    tagger.fit(split.inputs, split.labels, epochs=epochs, shuffle=True, lengths=split.lengths)
    return tagger


def test_tracked_group_norms_match_quadratic_forms(small):
    _, fg, split = small
    grams = [fg.base[b] for b in ("L", "Q", "G")]
    tagger = _tagger(split, grams, epochs=6)
    norms = tagger.group_norms_  # maintained incrementally (current iterate)
    for k, g in enumerate(grams):
        a = tagger.coef_[f"k{k}"]  # L x m
        exact = float(np.einsum("yi,ij,yj->", a, g.astype(np.float64), a))
        assert exact > 0
        assert abs(norms[f"k{k}"] ** 2 - exact) <= 1e-8 * exact
    beta = np.array(list(tagger.kernel_weights_.values()))
    assert np.all(beta >= 0) and abs(beta.sum() - 1) < 1e-12
    history = np.array([list(b.values()) for _, b in tagger.kernel_weights_history_])
    assert history.shape == (6, 3)
    np.testing.assert_allclose(history.sum(axis=1), 1.0)


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


def test_bad_inputs_raise_value_error(small):
    from omkl import PrecomputedGram, SequenceTagger

    _, fg, split = small
    g = fg.base["L"]
    with pytest.raises(ValueError, match="regularizer"):
        _tagger(split, [g], regularizer="l1")
    with pytest.raises(ValueError, match="eta0"):
        _tagger(split, [g], eta0=-1.0)
    with pytest.raises(ValueError, match="lam"):
        _tagger(split, [g], lam=float("nan"))
    with pytest.raises(ValueError, match="grams"):
        _tagger(split, [g, g[:-1, :-1].copy()])
    with pytest.raises(ValueError, match="symmetric"):
        bad = g.copy()
        bad[0, 1] += 1
        PrecomputedGram(bad)
    with pytest.raises(ValueError, match="gram"):
        PrecomputedGram(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="unseen label"):
        t = SequenceTagger(kernels={"L": PrecomputedGram(g)}, labels=[0, 1, 2])
        t.fit(split.inputs, split.labels, lengths=split.lengths)
    t = SequenceTagger(kernels={"L": PrecomputedGram(g)}, labels=list(range(26)))
    with pytest.raises(ValueError, match="x"):
        t.fit(-split.inputs - 1, split.labels, lengths=split.lengths)
    with pytest.raises(ValueError, match="input ids"):
        t.fit(split.inputs + len(fg.inputs), split.labels, lengths=split.lengths)
    with pytest.raises(ValueError, match="lengths"):
        t.fit(split.inputs, split.labels, lengths=split.lengths[:-1])
    with pytest.raises(ValueError, match="input ids"):
        t.learn_one([0.5, 1.5], [0, 1])
    with pytest.raises(ValueError, match="max_support"):
        SequenceTagger(kernels={"L": PrecomputedGram(g)}, max_support=10)
    with pytest.raises(ValueError, match="explicit_groups"):
        SequenceTagger(kernels={"L": PrecomputedGram(g)}, explicit_groups={"U": fg.unit[:-1]})
    assert t.n_rounds_ == 0  # nothing was learned


def test_precomputed_features_give_the_model_of_the_array(small):
    """An explicit group given as one shared PrecomputedFeatures trains the
    same model as the float32 array it was made from, beside a Gram group
    and alone; copies share it, and bad matrices are refused by name."""
    from omkl import PrecomputedFeatures

    _, fg, split = small
    pf = PrecomputedFeatures(fg.unit)
    assert (pf.n_inputs, pf.n_features) == fg.unit.shape
    assert copy.copy(pf) is pf and copy.deepcopy(pf) is pf
    for grams in ([], [fg.base["Q"]]):
        a = _tagger(split, grams, features=[fg.unit], epochs=2, average=True)
        b = _tagger(split, grams, features=[pf], epochs=2, average=True)
        for name, coef in a.coef_.items():
            np.testing.assert_array_equal(b.coef_[name], coef)
        assert a.transitions_.keys() == b.transitions_.keys()
        for key, value in a.transitions_.items():
            np.testing.assert_array_equal(b.transitions_[key], value)
    clone = b.clone()
    assert clone.explicit_groups["e0"] is pf
    bad = fg.unit.copy()
    bad[3, 5] = np.nan
    with pytest.raises(ValueError, match="features"):
        PrecomputedFeatures(bad)
    with pytest.raises(ValueError, match="features.*float32"):
        PrecomputedFeatures(fg.unit.astype(np.float64))
    with pytest.raises(ValueError, match=r"explicit_groups\['e0'\].*rows"):
        _tagger(split, [fg.base["Q"]], features=[PrecomputedFeatures(fg.unit[:-1])])


def test_primal_linear_group_equals_kernelised_linear(small):
    """The normalised linear kernel as a Gram matrix and as explicit unit-norm
    features give the same model: equal weights and norms up to the float32
    rounding of the Gram matrix."""
    _, fg, split = small
    D = fg.unit.astype(np.float64) @ fg.unit.T.astype(np.float64)
    gram = D.astype(np.float32)
    gram = np.minimum(gram, gram.T)  # exactly symmetric
    a = _tagger(split, [gram], epochs=4, average=True)
    b = _tagger(split, features=[fg.unit], epochs=4, average=True)
    w = a.coef_["k0"] @ fg.unit.astype(np.float64)  # W_y = sum_j alpha_yj x_j
    np.testing.assert_allclose(w, b.coef_["e0"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(
        list(a.group_norms_.values()), list(b.group_norms_.values()), rtol=1e-4
    )


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
    same coefficients, transitions and objective as the dense matrix."""
    from omkl import PrecomputedGram, _omkl

    _, fg, split = small
    fgb = small_b1
    S = fgb.sparse["B"]
    assert S.density < 0.2
    dense = S.to_dense()
    for reg, feats in [("l2_squared", []), ("squared_l21", [fg.unit])]:
        a = _tagger(split, [dense], feats, regularizer=reg, average=True)
        b = _tagger(split, [S._inner], feats, regularizer=reg, average=True)
        for name in a.coef_:
            np.testing.assert_array_equal(a.coef_[name], b.coef_[name])
        for key in ("bigram", "start", "stop"):
            np.testing.assert_array_equal(a.transitions_[key], b.transitions_[key])
        ya, yb = [split.labels], [split.labels]
        oa = a.objective(split.inputs, ya[0], lengths=split.lengths)
        ob = b.objective(split.inputs, yb[0], lengths=split.lengths)
        assert oa == ob
        np.testing.assert_allclose(
            list(a.group_norms_.values()), list(b.group_norms_.values()), rtol=1e-12
        )
        assert np.abs(a.coef_["k0"]).sum() > 0
    # a scaled object equals the scaled arrays (float32 products)
    half = S._inner.scaled(0.5)
    indptr, indices, data = fgb.csr("B", 0.5)
    np.testing.assert_array_equal(half.csr()[2], data)
    np.testing.assert_array_equal(half.csr()[1], indices)
    rebuilt = _omkl.SparseGram.from_csr(len(indptr) - 1, len(indptr) - 1, indptr, indices, data)
    a, b = _tagger(split, [rebuilt]), _tagger(split, [half])
    np.testing.assert_array_equal(a.coef_["k0"], b.coef_["k0"])
    with pytest.raises(ValueError, match="c"):
        S._inner.scaled(float("nan"))
    with pytest.raises(ValueError, match="gram"):
        PrecomputedGram("not a matrix")
    one = _omkl.SparseGram.from_csr(1, 1, np.array([0, 1]), np.array([0]), np.ones(1, np.float32))
    with pytest.raises(ValueError, match=r"grams\[1\]"):  # not m x m
        _tagger(split, [dense, one])
    with pytest.raises(ValueError, match="symmetric"):  # an asymmetric object
        ip, ix, dv = fgb.csr("B")
        bad = dv.copy()
        bad[1] += 0.5
        PrecomputedGram(_omkl.SparseGram.from_csr(len(ip) - 1, len(ip) - 1, ip, ix, bad))


def test_average_with_sparse_kernel_equals_dense_average(small, small_b1):
    """Average (L+B1)/2 trained as groups L/2 (primal) and B1/2 (sparse) under
    the squared l2 norm equals one group with the dense Gram (K_L + K_B)/2."""
    from dataclasses import replace

    from omkl.experiments.ocr import ROWS, emission_scores, train

    corpus, fg, split = small
    fgb = replace(small_b1, base={**small_b1.base, "L": fg.base["L"]})
    row = ROWS["average_lb1"]
    C, eta0 = 100.0, 0.5
    split_model = train(fgb, row, split, C, eta0, 3)
    avg = (fg.base["L"] + fgb.sparse["B"].to_dense()) * np.float32(0.5)
    ref = _tagger(
        split,
        [avg],
        regularizer="l2_squared",
        lam=1.0 / (C * split.n_words),
        eta0=eta0,
        average=True,
        transition_lam=1.0 / (C * split.n_words),
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
    want = kt @ ref.coef_["k0"].T
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    np.testing.assert_allclose(split_model["transitions"], ref.transitions_["bigram"], atol=1e-6)


def test_mkl_with_one_kernel_and_transitions_apart_is_the_svm(small):
    """With the transitions penalised apart, the squared l2,1 norm over a
    single kernel group is (lambda/2)|theta_Q|^2: MKL restricted to one kernel
    (beta = e_Q) is exactly the quadratic SVM at the same C; with the
    transitions inside the norm it is a different model."""
    _, fg, split = small
    lam = 1.0 / (10.0 * split.n_words)
    kw = dict(lam=lam, eta0=0.1, average=True)
    models = {
        "svm": _tagger(split, [fg.base["Q"]], regularizer="l2_squared", **kw),
        "apart": _tagger(
            split, [fg.base["Q"]], regularizer="squared_l21", transition_lam=lam, **kw
        ),
        "shared": _tagger(split, [fg.base["Q"]], regularizer="squared_l21", **kw),
    }
    obj = {
        k: m.objective(split.inputs, split.labels, lengths=split.lengths) for k, m in models.items()
    }
    svm, apart = models["svm"], models["apart"]
    np.testing.assert_allclose(apart.coef_["k0"], svm.coef_["k0"], rtol=1e-12, atol=1e-12)
    for key in ("bigram", "start", "stop"):
        np.testing.assert_allclose(
            apart.transitions_[key], svm.transitions_[key], rtol=1e-12, atol=1e-12
        )
    assert abs(obj["apart"] - obj["svm"]) <= 1e-12 * obj["svm"]
    assert not np.isclose(obj["shared"], obj["svm"], rtol=1e-6)


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
    """The products done on one OpenBLAS thread equal the threaded product
    up to float32 rounding (d = 128 columns), and the thread count is
    restored afterwards, also when the block raises."""
    from omkl.experiments import ocr as exp

    rng = np.random.default_rng(5)
    for m in (1, 65, 1000, 4096):
        U = exp.unit_rows((rng.random((m, 128)) < 0.4).astype(np.float32))
        W = rng.standard_normal((26, 128))
        np.testing.assert_allclose(
            exp.unit_scores(U, W), U @ W.T.astype(np.float32), rtol=1e-5, atol=1e-5
        )
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


def test_ocr_mkl_row_is_a_sequence_tagger_over_precomputed_grams(small):
    """One learner: the OCR experiment's MKL row and a SequenceTagger that a
    user configures on the same words and the same precomputed Gram matrices
    are the same model (coefficients, transitions, beta) to 1e-9."""
    from omkl import PrecomputedGram, SequenceTagger
    from omkl.experiments.ocr import ROWS, train

    _, fg, split = small
    C, eta0, epochs = 100.0, 0.1, 4
    model = train(fg, ROWS["mkl_lqg"], split, C, eta0, epochs)
    lam = 1.0 / (C * split.n_words)
    tagger = SequenceTagger(
        kernels={"Q": PrecomputedGram(fg.base["Q"]), "G": PrecomputedGram(fg.base["G"])},
        explicit_groups={"L": fg.unit},
        labels=list(range(26)),
        regularizer="squared_l21",
        lam=lam,
        eta0=eta0,
        schedule="constant",
        average=True,
        transition_lam=lam,
    )
    tagger.fit(split.inputs, split.labels, epochs=epochs, shuffle=True, lengths=split.lengths)
    parts = {names[0]: coef for names, coef in model["parts"]}
    assert set(parts) == {"L", "Q", "G"}
    for name, coef in tagger.coef_.items():
        assert np.abs(coef).sum() > 0
        np.testing.assert_allclose(parts[name], coef, rtol=0, atol=1e-9 * np.abs(coef).max())
    for key, ocr_key in (("bigram", "transitions"), ("start", "start"), ("stop", "stop")):
        np.testing.assert_allclose(model[ocr_key], tagger.transitions_[key], rtol=0, atol=1e-9)
    norms = tagger.group_norms_
    beta = np.array([norms[n] for n in ("L", "Q", "G")])
    np.testing.assert_allclose(model["beta"], beta / beta.sum(), rtol=0, atol=1e-9)
