"""N-best Viterbi, per-position transition marginals, padded batch Viterbi and
workspace reuse, against brute-force enumeration and single calls."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from decode_reference import chain_score, chains
from hypothesis import given, settings
from hypothesis import strategies as st

from omkl import decode

SETTINGS = settings(max_examples=60, deadline=None)


def sorted_enumeration(em, tr, start, stop):
    """Every labelling with its score, sorted by (-score, labelling)."""
    n, n_labels = em.shape
    ys = list(itertools.product(range(n_labels), repeat=n))
    scored = [(chain_score(em, tr, y, start, stop), y) for y in ys]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored


# --- N-best ----------------------------------------------------------------


@SETTINGS
@given(chains(), st.floats(0.0, 1.1))
def test_nbest_equals_sorted_enumeration(case, k_frac):
    em, tr, start, stop = case
    ranked = sorted_enumeration(em, tr, start, stop)
    k = min(max(1, int(np.ceil(k_frac * len(ranked)))), len(ranked) + 2)
    paths, scores = decode.viterbi_nbest(em, tr, k, start, stop)
    m = min(k, len(ranked))
    assert paths.shape == (m, em.shape[0]) and paths.dtype == np.int64
    assert scores.shape == (m,)
    np.testing.assert_allclose(scores, [s for s, _ in ranked[:m]], atol=1e-9)
    assert len({tuple(p) for p in paths.tolist()}) == m
    assert np.all(np.diff(scores) <= 0)
    for p, s in zip(paths, scores, strict=True):
        assert chain_score(em, tr, p, start, stop) == pytest.approx(s, abs=1e-9)
    values = [v for v in (em, tr, start, stop) if v is not None]
    if all(np.array_equal(v, np.round(v)) for v in values):
        # Exact sums: the labellings themselves, ties in lexicographic order.
        assert [tuple(p) for p in paths.tolist()] == [y for _, y in ranked[:m]]
    best, best_score = decode.viterbi(em, tr, start, stop)
    assert scores[0] == pytest.approx(best_score, abs=1e-9)


def test_nbest_rejects_bad_input():
    em, tr = np.zeros((3, 2)), np.zeros((2, 2))
    for k in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="k"):
            decode.viterbi_nbest(em, tr, k)  # type: ignore[arg-type]
    bad = em.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="emissions"):
        decode.viterbi_nbest(bad, tr, 2)
    with pytest.raises(ValueError, match="transitions"):
        decode.viterbi_nbest(em, np.zeros((3, 3)), 2)
    # A huge k is capped at L**n paths instead of allocating k rows.
    paths, scores = decode.viterbi_nbest(em, tr, 10**12)
    assert paths.shape == (8, 3) and scores.shape == (8,)
    # A k whose tables cannot be allocated is MemoryError naming k, not a crash.
    with pytest.raises(MemoryError, match="bytes for `k`"):
        decode.viterbi_nbest(np.zeros((100, 50)), np.zeros((50, 50)), 2**60)


# --- pairwise marginals ----------------------------------------------------


@SETTINGS
@given(chains(), st.sampled_from([1.0, 1e3, 1e4]))
def test_pairwise_marginals_equal_enumeration(case, scale):
    em, tr, start, stop = case
    em, tr = em * scale, tr * scale
    n, n_labels = em.shape
    ys = list(itertools.product(range(n_labels), repeat=n))
    scores = np.array([chain_score(em, tr, y, start, stop) for y in ys])
    log_z = float(np.logaddexp.reduce(scores))
    pair = np.zeros((n - 1, n_labels, n_labels))
    for y, sc in zip(ys, scores, strict=True):
        p = np.exp(sc - log_z)
        for i in range(1, n):
            pair[i - 1, y[i - 1], y[i]] += p
    got_z, node, trans, got_pair = decode.forward_backward(em, tr, start, stop, pairwise=True)
    assert got_z == pytest.approx(log_z, rel=1e-12, abs=1e-9)
    assert got_pair.shape == (n - 1, n_labels, n_labels)
    assert np.isfinite(got_pair).all()
    np.testing.assert_allclose(got_pair, pair, atol=1e-9)
    np.testing.assert_allclose(got_pair.sum(axis=0), trans, atol=1e-9)
    np.testing.assert_allclose(got_pair.sum(axis=2), node[:-1], atol=1e-9)
    np.testing.assert_allclose(got_pair.sum(axis=1), node[1:], atol=1e-9)
    # The summed form is unchanged by the option.
    z3, node3, trans3 = decode.forward_backward(em, tr, start, stop)
    assert z3 == got_z
    np.testing.assert_array_equal(node3, node)
    np.testing.assert_array_equal(trans3, trans)


def test_pairwise_marginals_stable_at_1e4():
    rng = np.random.default_rng(7)
    em = rng.choice([-1e4, 1e4], size=(9, 5))
    tr = rng.choice([-1e4, 0.0, 1e4], size=(5, 5))
    log_z, node, trans, pair = decode.forward_backward(em, tr, pairwise=True)
    assert np.isfinite(log_z) and np.isfinite(pair).all()
    np.testing.assert_allclose(pair.sum(axis=(1, 2)), 1.0)
    np.testing.assert_allclose(pair.sum(axis=0), trans, atol=1e-12)


# --- padded batch ----------------------------------------------------------


def test_batch_array_matches_single_calls():
    rng = np.random.default_rng(3)
    tr = rng.normal(size=(6, 6))
    start, stop = rng.normal(size=6), rng.normal(size=6)
    em = rng.normal(size=(300, 9, 6))
    labels, scores = decode.viterbi_batch(em, tr, start, stop)
    assert labels.shape == (300, 9) and labels.dtype == np.int64
    for k in range(300):
        y, s = decode.viterbi(em[k], tr, start, stop)
        np.testing.assert_array_equal(labels[k], y)
        assert scores[k] == s
    # The same through the list form.
    labels_l, scores_l = decode.viterbi_batch(list(em), tr, start, stop)
    np.testing.assert_array_equal(np.stack(labels_l), labels)
    np.testing.assert_array_equal(scores_l, scores)


def test_batch_array_padded_with_lengths():
    rng = np.random.default_rng(4)
    tr = rng.normal(size=(4, 4))
    lengths = rng.integers(1, 8, size=200)
    em = rng.normal(size=(200, 7, 4))
    for k, n in enumerate(lengths):
        em[k, n:] = np.nan  # padding is never read
    labels, scores = decode.viterbi_batch(em, tr, lengths=lengths)
    for k, n in enumerate(lengths):
        y, s = decode.viterbi(em[k, :n], tr)
        np.testing.assert_array_equal(labels[k, :n], y)
        assert (labels[k, n:] == -1).all()
        assert scores[k] == s
    # Non-contiguous input (every other chain, Fortran order).
    sub = np.asfortranarray(em[::2])
    labels2, scores2 = decode.viterbi_batch(sub, tr, lengths=lengths[::2])
    np.testing.assert_array_equal(labels2, labels[::2])
    np.testing.assert_array_equal(scores2, scores[::2])


def test_batch_array_rejects_bad_input():
    tr = np.zeros((3, 3))
    em = np.zeros((4, 5, 3))
    for lengths, match in (
        ([5, 5, 5], "lengths"),
        ([5, 5, 5, 0], "lengths"),
        ([5, 5, 5, 6], "lengths"),
        ([5, 5, -1, 5], "lengths"),
    ):
        with pytest.raises(ValueError, match=match):
            decode.viterbi_batch(em, tr, lengths=lengths)
    bad = em.copy()
    bad[2, 1, 0] = np.inf
    with pytest.raises(ValueError, match="item 2"):
        decode.viterbi_batch(bad, tr)
    with pytest.raises(ValueError, match="transitions"):
        decode.viterbi_batch(em, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="emissions"):
        decode.viterbi_batch(np.zeros((4, 0, 3)), tr)
    with pytest.raises(ValueError, match="lengths"):
        decode.viterbi_batch(list(em), tr, lengths=[5, 5, 5, 5])
    labels, scores = decode.viterbi_batch(np.zeros((0, 5, 3)), tr)
    assert labels.shape == (0, 5) and scores.shape == (0,)


# --- workspace reuse -------------------------------------------------------


def test_results_do_not_depend_on_earlier_calls():
    """Single calls reuse a per-thread workspace: interleaving sizes (and
    threads) must not change any result."""
    rng = np.random.default_rng(5)
    cases = []
    for n in (3, 40, 1, 17, 60, 2):
        s = rng.normal(size=(n + 1, n + 1))
        em, tr = rng.normal(size=(n, 1 + n % 7)), rng.normal(size=(1 + n % 7, 1 + n % 7))
        cases.append((s, em, tr))

    def run(case):
        s, em, tr = case
        h, v = decode.chu_liu_edmonds(s)
        hs, vs = decode.chu_liu_edmonds(s, single_root=True)
        he, ve = decode.eisner(s)
        z, mu = decode.matrix_tree(s)
        y, sy = decode.viterbi(em, tr)
        p, sp = decode.viterbi_nbest(em, tr, 3)
        fz, node, trans = decode.forward_backward(em, tr)
        return [h, v, hs, vs, he, ve, z, mu, y, sy, p, sp, fz, node, trans]

    first = [run(c) for c in cases]
    again = [run(c) for c in reversed(cases)][::-1]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(run, cases * 3))
    for want, got in itertools.chain(
        zip(first, again, strict=True), zip(first * 3, threaded, strict=True)
    ):
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(a, b)
