"""Support store deduplication and the LRU Gram row cache."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omkl import kernels


def test_support_store_stores_identical_inputs_once():
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(10, 5))
    s = kernels.SupportStore(5)
    picks = rng.integers(0, 10, size=200)
    ids = [s.add(pool[p]) for p in picks]
    first = {}
    for p, i in zip(picks, ids, strict=True):
        first.setdefault(p, i)
        assert first[p] == i
    assert len(s) == len(set(picks.tolist()))
    assert sorted(set(ids)) == list(range(len(s)))
    np.testing.assert_array_equal(s.get(ids[0]), pool[picks[0]].astype(np.float32))
    assert s.find(pool[picks[0]]) == ids[0]
    assert s.find(np.full(5, 99.0)) is None
    assert s.nbytes >= len(s) * 5 * 4
    t = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(t.data(), s.data())
    assert t.add(pool[picks[1]]) == ids[1]


@settings(max_examples=50, deadline=None)
@given(
    queries=st.lists(st.integers(0, 7), min_size=1, max_size=40),
    budget_rows=st.integers(0, 5),
)
def test_gram_cache_rows_budget_and_lru_policy(queries, budget_rows):
    """All 8 inputs are added first, so rows have equal size: the cache then
    behaves exactly like an LRU of ``budget_rows`` rows."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 3)).astype(np.float32)
    row_bytes = 4 * 8 + 64
    c = kernels.GramCache(3, kernel="gaussian", sigma2=2.0, budget_bytes=budget_rows * row_bytes)
    for x in X:
        c.add(x)
    K = kernels.gram(X, X, kernel="gaussian", sigma2=2.0)
    lru: OrderedDict[int, None] = OrderedDict()
    hits = misses = evictions = 0
    for q in queries:
        np.testing.assert_allclose(c.row(q), K[q], atol=1e-6)
        if q in lru:
            hits += 1
            lru.move_to_end(q)
        else:
            misses += 1
            if budget_rows > 0:
                if len(lru) == budget_rows:
                    lru.popitem(last=False)
                    evictions += 1
                lru[q] = None
        s = c.stats()
        assert s["cache_bytes"] <= s["budget"] == budget_rows * row_bytes
        assert (s["hits"], s["misses"], s["evictions"]) == (hits, misses, evictions)
        assert s["entries"] == len(lru)


def test_gram_cache_extends_rows_as_support_grows():
    X = np.arange(12, dtype=np.float32).reshape(6, 2) / 4
    c = kernels.GramCache(2, kernel="b1_spline", h=2.0)
    c.add(X[0])
    c.row(0)
    for x in X[1:]:
        c.add(x)
        c.add(X[0])  # duplicate, stored once
    np.testing.assert_allclose(c.row(0), kernels.gram(X[:1], X, kernel="b1_spline", h=2.0)[0])
    s = c.stats()
    assert (s["misses"], s["extensions"], s["support_len"]) == (1, 1, 6)
    assert s["support_bytes"] >= 6 * 2 * 4


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: kernels.SupportStore(0), "d"),
        (lambda: kernels.SupportStore(2).add([1.0, 2.0, 3.0]), "x"),
        (lambda: kernels.SupportStore(2).add([1.0, np.nan]), "x"),
        (lambda: kernels.SupportStore(2).get(0), "id"),
        (lambda: kernels.GramCache(2, budget_bytes=-1), "budget_bytes"),
        (lambda: kernels.GramCache(2, sigma2=0.0), "sigma2"),
        (lambda: kernels.GramCache(2).row(3), "id"),
        (lambda: kernels.GramCache(2).row(-1), "id"),
        (lambda: kernels.GramCache(2).add([[1.0, 2.0]]), "x"),
    ],
)
def test_bad_input_raises_value_error_naming_it(call, match):
    with pytest.raises(ValueError, match=match):
        call()
