"""Exactness of omkl.decode against brute-force enumeration on tiny instances."""

from __future__ import annotations

import doctest
import functools
import itertools

import numpy as np
import pytest
from decode_reference import chain_score, chains, matrices
from hypothesis import given, settings
from hypothesis import strategies as st

import omkl
from omkl import decode

SETTINGS = settings(max_examples=60, deadline=None)


# --- brute force -----------------------------------------------------------


@functools.cache
def all_trees(n: int) -> np.ndarray:
    """Every head vector (heads[0] = 0) of a tree over 0..n rooted at 0, one per row."""
    return np.array(list(_trees(n)), dtype=np.int64)


def _trees(n: int):
    for hs in itertools.product(range(n + 1), repeat=n):
        heads = (0, *hs)
        if any(heads[m] == m for m in range(1, n + 1)):
            continue
        ok = True
        for m in range(1, n + 1):
            seen, v = set(), m
            while v != 0 and v not in seen:
                seen.add(v)
                v = heads[v]
            if v != 0:
                ok = False
                break
        if ok:
            yield heads


def tree_score(s, heads) -> float:
    return float(sum(s[heads[m], m] for m in range(1, len(heads))))


def tree_scores(s, trees: np.ndarray) -> np.ndarray:
    """Scores of every tree (row) of ``trees``."""
    n = trees.shape[1] - 1
    return s[trees[:, 1:], np.arange(1, n + 1)].sum(axis=1)


def candidates(n: int, single_root: bool) -> np.ndarray:
    trees = all_trees(n)
    if single_root:
        trees = trees[(trees[:, 1:] == 0).sum(axis=1) == 1]
    return trees


def is_tree(heads) -> bool:
    n = len(heads) - 1
    return bool((all_trees(n) == np.asarray(heads)).all(axis=1).any())


# --- strategies ------------------------------------------------------------


@st.composite
def arc_scores(draw, max_n=6):
    n = draw(st.integers(1, max_n))
    return draw(matrices((n + 1, n + 1)))


# --- chains ----------------------------------------------------------------


@SETTINGS
@given(chains())
def test_viterbi_equals_enumeration(case):
    em, tr, start, stop = case
    n, n_labels = em.shape
    brute = max(
        chain_score(em, tr, y, start, stop) for y in itertools.product(range(n_labels), repeat=n)
    )
    labels, score = decode.viterbi(em, tr, start, stop)
    assert labels.shape == (n,)
    assert score == pytest.approx(brute, abs=1e-9)
    assert chain_score(em, tr, labels, start, stop) == pytest.approx(score, abs=1e-9)


@SETTINGS
@given(chains(), st.data(), st.floats(0, 3))
def test_viterbi_hamming_equals_enumeration(case, data, cost):
    em, tr, start, stop = case
    n, n_labels = em.shape
    gold = np.array(data.draw(st.lists(st.integers(0, n_labels - 1), min_size=n, max_size=n)))

    def aug(y):
        return chain_score(em, tr, y, start, stop) + cost * np.sum(np.asarray(y) != gold)

    brute = max(aug(y) for y in itertools.product(range(n_labels), repeat=n))
    labels, value = decode.viterbi_hamming(em, tr, gold, cost, start, stop)
    assert value == pytest.approx(brute, abs=1e-9)
    assert aug(labels) == pytest.approx(value, abs=1e-9)


def test_viterbi_batch_matches_single_calls():
    rng = np.random.default_rng(1)
    tr = rng.normal(size=(5, 5))
    ems = [rng.normal(size=(int(n), 5)) for n in rng.integers(1, 12, size=40)]
    labels, scores = decode.viterbi_batch(ems, tr)
    for em, y, s in zip(ems, labels, scores, strict=True):
        y1, s1 = decode.viterbi(em, tr)
        np.testing.assert_array_equal(y, y1)
        assert s == s1


def test_viterbi_accepts_non_contiguous_input():
    rng = np.random.default_rng(2)
    em = rng.normal(size=(6, 8))[:, ::2]
    tr = np.asfortranarray(rng.normal(size=(4, 4)))
    y, s = decode.viterbi(em, tr)
    y2, s2 = decode.viterbi(np.ascontiguousarray(em), np.ascontiguousarray(tr))
    np.testing.assert_array_equal(y, y2)
    assert s == s2


# --- trees -----------------------------------------------------------------


@SETTINGS
@given(arc_scores(), st.booleans())
def test_chu_liu_edmonds_equals_enumeration(s, single_root):
    n = s.shape[0] - 1
    brute = tree_scores(s, candidates(n, single_root)).max()
    heads, score = decode.chu_liu_edmonds(s, single_root=single_root)
    assert is_tree(heads)
    if single_root:
        assert list(heads[1:]).count(0) == 1
    assert score == pytest.approx(brute, abs=1e-9)
    assert tree_score(s, heads) == pytest.approx(score, abs=1e-9)


@SETTINGS
@given(arc_scores(max_n=5), st.data(), st.floats(0, 3), st.booleans())
def test_chu_liu_edmonds_hamming_equals_enumeration(s, data, cost, single_root):
    n = s.shape[0] - 1
    gold = np.array([0, *data.draw(st.lists(st.integers(0, n), min_size=n, max_size=n))])

    def aug(h):
        return tree_score(s, h) + cost * sum(h[m] != gold[m] for m in range(1, n + 1))

    trees = candidates(n, single_root)
    brute = (tree_scores(s, trees) + cost * (trees[:, 1:] != gold[1:]).sum(axis=1)).max()
    heads, value = decode.chu_liu_edmonds_hamming(s, gold, cost, single_root)
    assert value == pytest.approx(brute, abs=1e-9)
    assert aug(heads) == pytest.approx(value, abs=1e-9)


def test_chu_liu_edmonds_batch_matches_single_calls():
    rng = np.random.default_rng(3)
    mats = [rng.normal(size=(int(n) + 1, int(n) + 1)) for n in rng.integers(1, 30, size=30)]
    for single_root in (False, True):
        heads, scores = decode.chu_liu_edmonds_batch(mats, single_root)
        for s, h, v in zip(mats, heads, scores, strict=True):
            h1, v1 = decode.chu_liu_edmonds(s, single_root)
            np.testing.assert_array_equal(h, h1)
            assert v == v1


@SETTINGS
@given(chains())
def test_forward_backward_equals_enumeration(case):
    em, tr, start, stop = case
    n, n_labels = em.shape
    ys = list(itertools.product(range(n_labels), repeat=n))
    scores = np.array([chain_score(em, tr, y, start, stop) for y in ys])
    log_z = float(np.logaddexp.reduce(scores))
    node = np.zeros((n, n_labels))
    trans = np.zeros((n_labels, n_labels))
    for y, sc in zip(ys, scores, strict=True):
        p = np.exp(sc - log_z)
        node[np.arange(n), y] += p
        for a, b in itertools.pairwise(y):
            trans[a, b] += p
    got_z, got_node, got_trans = decode.forward_backward(em, tr, start, stop)
    assert got_z == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(got_node, node, atol=1e-9)
    np.testing.assert_allclose(got_trans, trans, atol=1e-9)


def test_forward_backward_stable_for_huge_scores():
    rng = np.random.default_rng(5)
    em = rng.choice([-1e4, 1e4], size=(7, 4))
    tr = rng.choice([-1e4, 0.0, 1e4], size=(4, 4))
    log_z, node, trans = decode.forward_backward(em, tr)
    assert np.isfinite(log_z)
    np.testing.assert_allclose(node.sum(axis=1), 1.0)
    assert trans.sum() == pytest.approx(6.0)
    _, best = decode.viterbi(em, tr)
    assert best <= log_z <= best + 7 * np.log(4) + 1e-9


@SETTINGS
@given(arc_scores(), st.booleans())
def test_matrix_tree_equals_enumeration(s, single_root):
    n = s.shape[0] - 1
    trees = candidates(n, single_root)
    scores = tree_scores(s, trees)
    log_z = float(np.logaddexp.reduce(scores))
    p = np.exp(scores - log_z)
    mu = np.zeros_like(s)
    for m in range(1, n + 1):
        np.add.at(mu[:, m], trees[:, m], p)
    got_z, got_mu = decode.matrix_tree(s, single_root)
    assert got_z == pytest.approx(log_z, abs=1e-8)
    np.testing.assert_allclose(got_mu, mu, atol=1e-8)


def single_root_by_root_child(s: np.ndarray) -> tuple[float, np.ndarray]:
    """log Z and marginals of single-root trees, one root child ``r`` at a time:
    the trees under ``r`` are the arborescences of the words rooted at ``r``,
    counted by a minor of the word Laplacian (numpy ``slogdet``/``inv``)."""
    n = s.shape[0] - 1
    a = np.exp(s - s[:, 1:].max())
    a[:, 0] = 0.0
    np.fill_diagonal(a, 0.0)
    lap = -a[1:, 1:]
    lap[np.arange(n), np.arange(n)] = a[1:, 1:].sum(axis=0)
    log_w, cond = np.zeros(n), np.zeros((n, n + 1, n + 1))
    for r in range(n):
        keep = [j for j in range(n) if j != r]
        cond[r, 0, r + 1] = 1.0
        if not keep:
            continue
        minor = lap[np.ix_(keep, keep)]
        log_w[r] = np.linalg.slogdet(minor)[1]
        g = np.zeros((n, n))
        g[np.ix_(keep, keep)] = np.linalg.inv(minor)
        for m in keep:
            for h in range(n):
                if h != m:
                    cond[r, h + 1, m + 1] = a[h + 1, m + 1] * (g[m, m] - g[m, h])
    terms = np.log(a[0, 1:]) + log_w
    log_z = float(np.logaddexp.reduce(terms))
    mu = np.tensordot(np.exp(terms - log_z), cond, axes=1)
    return log_z + n * s[:, 1:].max(), mu


@pytest.mark.parametrize("n", [1, 2, 9, 16, 33])
def test_single_root_matrix_tree_equals_sum_over_root_children(n):
    rng = np.random.default_rng(n)
    s = rng.normal(scale=2.0, size=(n + 1, n + 1))
    ref_z, ref_mu = single_root_by_root_child(s)
    got_z, got_mu = decode.matrix_tree(s, single_root=True)
    assert got_z == pytest.approx(ref_z, abs=1e-9)
    np.testing.assert_allclose(got_mu, ref_mu, atol=1e-9)
    np.testing.assert_allclose(got_mu.sum(axis=0)[1:], 1.0, atol=1e-12)


def is_projective(heads) -> bool:
    n = len(heads) - 1

    def descends(v, a):
        while v not in (0, a):
            v = heads[v]
        return v == a

    return all(
        descends(v, heads[m])
        for m in range(1, n + 1)
        for v in range(min(m, heads[m]) + 1, max(m, heads[m]))
    )


@functools.cache
def projective_trees(n: int) -> np.ndarray:
    trees = all_trees(n)
    return trees[[is_projective(h) for h in trees]]


@SETTINGS
@given(arc_scores(), st.booleans(), st.data(), st.floats(0, 2))
def test_eisner_equals_projective_enumeration(s, single_root, data, cost):
    n = s.shape[0] - 1
    trees = projective_trees(n)
    if single_root:
        trees = trees[(trees[:, 1:] == 0).sum(axis=1) == 1]
    heads, score = decode.eisner(s, single_root)
    assert is_tree(heads) and is_projective(heads)
    assert score == pytest.approx(tree_scores(s, trees).max(), abs=1e-9)
    gold = np.array([0, *data.draw(st.lists(st.integers(0, n), min_size=n, max_size=n))])
    aug = tree_scores(s, trees) + cost * (trees[:, 1:] != gold[1:]).sum(axis=1)
    heads, value = decode.eisner_hamming(s, gold, cost, single_root)
    assert is_projective(heads)
    assert value == pytest.approx(aug.max(), abs=1e-9)


@SETTINGS
@given(matrices((5,)), st.integers(0, 4), st.floats(0, 3))
def test_argmax_and_hamming(scores, gold, cost):
    y, v = decode.argmax(scores)
    assert v == scores.max() and y == int(np.argmax(scores))
    aug = scores + cost * (np.arange(5) != gold)
    y, v = decode.argmax_hamming(scores, gold, cost)
    assert v == pytest.approx(aug.max()) and aug[y] == pytest.approx(v)


# --- bad input -------------------------------------------------------------


def test_bad_chain_input_raises_value_error():
    em, tr = np.zeros((3, 2)), np.zeros((2, 2))
    with pytest.raises(ValueError, match="transitions"):
        decode.viterbi(em, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="emissions"):
        decode.viterbi(np.zeros((0, 2)), tr)
    with pytest.raises(ValueError, match="emissions"):
        decode.viterbi(np.array([[0.0, np.nan]]), tr)
    with pytest.raises(ValueError, match="transitions"):
        decode.viterbi(em, np.array([[0.0, np.inf], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="start"):
        decode.viterbi(em, tr, start=np.zeros(3))
    with pytest.raises(ValueError, match="emissions"):
        decode.viterbi(np.zeros(3), tr)
    with pytest.raises(ValueError, match="gold"):
        decode.viterbi_hamming(em, tr, [0, 1, 2])
    with pytest.raises(ValueError, match="gold"):
        decode.viterbi_hamming(em, tr, [0, -1, 0])
    with pytest.raises(ValueError, match="gold"):
        decode.viterbi_hamming(em, tr, [0, 1])
    with pytest.raises(ValueError, match="cost"):
        decode.viterbi_hamming(em, tr, [0, 1, 0], cost=-1.0)
    with pytest.raises(ValueError, match=r"emissions\[1\]"):
        decode.viterbi_batch([em, np.full((2, 2), np.nan)], tr)


def test_bad_tree_input_raises_value_error():
    with pytest.raises(ValueError, match="scores"):
        decode.chu_liu_edmonds(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="scores"):
        decode.chu_liu_edmonds(np.zeros((1, 1)))
    bad = np.zeros((3, 3))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="1 -> 2"):
        decode.chu_liu_edmonds(bad)
    with pytest.raises(ValueError, match="gold"):
        decode.chu_liu_edmonds_hamming(np.zeros((3, 3)), [0, 0, 3])
    with pytest.raises(ValueError, match=r"scores\[1\]"):
        decode.chu_liu_edmonds_batch([np.zeros((3, 3)), np.zeros((2, 3))])
    for f in (decode.matrix_tree, decode.eisner):
        with pytest.raises(ValueError, match="1 -> 2"):
            f(bad)
        with pytest.raises(ValueError, match="scores"):
            f(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="gold"):
        decode.eisner_hamming(np.zeros((3, 3)), [0, 0])
    with pytest.raises(ValueError, match="emissions"):
        decode.forward_backward(np.array([[np.inf]]), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="scores"):
        decode.argmax([])
    with pytest.raises(ValueError, match="gold"):
        decode.argmax_hamming([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="gold"):
        decode.argmax_hamming([1.0, 2.0], -1)


def test_ignored_entries_may_be_non_finite():
    s = np.random.default_rng(4).normal(size=(4, 4))
    s[:, 0] = np.nan
    np.fill_diagonal(s, -np.inf)
    heads, score = decode.chu_liu_edmonds(s)
    assert np.isfinite(score)


def test_docstring_examples():
    result = doctest.testmod(omkl.decode)
    assert result.attempted > 0
    assert result.failed == 0


# --- hostile input -------------------------------------------------------------


def test_scores_near_the_float_limit_are_refused_by_name():
    em, tr = np.full((3, 2), 1e308), np.zeros((2, 2))
    for call in (
        lambda: decode.forward_backward(em, tr),
        lambda: decode.viterbi(em, tr),
        lambda: decode.viterbi_nbest(em, tr, 2),
    ):
        with pytest.raises(ValueError, match="`emissions`"):
            call()
    with pytest.raises(ValueError, match="`transitions`"):
        decode.viterbi(np.zeros((3, 2)), np.full((2, 2), -1e308))
    for fn in (decode.eisner, decode.chu_liu_edmonds):
        with pytest.raises(ValueError, match="`scores`"):
            fn(np.full((3, 3), 1e308))
    # Large but summable scores are decoded exactly.
    labels, score = decode.viterbi(np.array([[1e299, 0.0], [0.0, 1e299]]), np.zeros((2, 2)))
    assert labels.tolist() == [0, 1] and score == 2e299


def test_wrong_types_are_refused_by_name():
    with pytest.raises(TypeError, match="`gold`"):
        decode.argmax_hamming([1.0, 2.0], gold=1.7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`gold`"):
        decode.argmax_hamming([1.0, 2.0], gold="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`k`"):
        decode.viterbi_nbest(np.zeros((2, 2)), np.zeros((2, 2)), k=2**63)
    with pytest.raises(TypeError, match="`emissions`"):
        decode.viterbi(np.zeros((2, 2)) + 1j, np.zeros((2, 2)))
    with pytest.raises(TypeError, match="`scores`"):
        decode.matrix_tree(np.array([["0", "1"], ["0", "0"]]))
    with pytest.raises(TypeError, match="`cost`"):
        decode.viterbi_hamming(np.zeros((2, 2)), np.zeros((2, 2)), [0, 1], cost="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`gold`"):
        decode.eisner_hamming(np.zeros((3, 3)), [0.0, 0.5, 1.0])
