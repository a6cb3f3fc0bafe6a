"""Chu-Liu-Edmonds against networkx's maximum spanning arborescence."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from omkl import decode


def networkx_best(s: np.ndarray) -> float:
    """Best arborescence score from networkx; node 0 has no incoming arcs."""
    n = s.shape[0] - 1
    g = nx.DiGraph()
    g.add_nodes_from(range(n + 1))
    g.add_weighted_edges_from(
        (h, m, float(s[h, m])) for h in range(n + 1) for m in range(1, n + 1) if h != m
    )
    tree = nx.maximum_spanning_arborescence(g, attr="weight", preserve_attrs=True)
    assert tree.in_degree(0) == 0
    return float(sum(d["weight"] for _, _, d in tree.edges(data=True)))


def sizes(seed: int) -> list[int]:
    """50 sizes per seed, 200 graphs in all: mostly n <= 20 (networkx is slow), some
    up to 40, one graph per seed in 41..60 and one at n = 60."""
    rng = np.random.default_rng(seed)
    large = [int(rng.integers(41, 60)), 60] if seed % 2 == 0 else [int(rng.integers(41, 61))]
    medium = rng.integers(21, 41, size=3).tolist()
    small = rng.integers(1, 21, size=50 - len(medium) - len(large)).tolist()
    return [int(n) for n in small + medium + large]


def is_tree(heads: np.ndarray) -> bool:
    n = len(heads) - 1
    for m in range(1, n + 1):
        v, steps = m, 0
        while v != 0 and steps <= n:
            v, steps = int(heads[v]), steps + 1
        if v != 0:
            return False
    return True


def random_cases(seed: int):
    rng = np.random.default_rng(100 + seed)
    for k, n in enumerate(sizes(seed)):
        if k % 2:
            s = rng.integers(-3, 4, size=(n + 1, n + 1)).astype(np.float64)  # many ties
        else:
            s = rng.normal(size=(n + 1, n + 1))
        yield s


@pytest.mark.parametrize("seed", range(4))
def test_tree_score_equals_networkx(seed):
    cases = list(random_cases(seed))
    assert len(cases) >= 50
    for s in cases:
        n = s.shape[0] - 1
        heads, score = decode.chu_liu_edmonds(s)
        assert is_tree(heads)
        ours = float(sum(s[heads[m], m] for m in range(1, n + 1)))
        assert ours == pytest.approx(score, abs=1e-9)
        assert score == pytest.approx(networkx_best(s), abs=1e-9)
        heads_aug, value = decode.chu_liu_edmonds_hamming(s, heads, cost=0.0)
        assert value == pytest.approx(score, abs=1e-9)


def test_single_root_equals_networkx_per_root_child():
    # With one root child c, the best tree is s[0, c] plus the best
    # arborescence of the words rooted at c.
    rng = np.random.default_rng(7)
    for _ in range(12):
        n = int(rng.integers(2, 16))
        s = rng.integers(-3, 4, size=(n + 1, n + 1)).astype(np.float64)
        best = -np.inf
        for c in range(1, n + 1):
            sub = np.full((n + 1, n + 1), -1e9)
            sub[c, :] = s[c, :]
            sub[1:, 1:] = s[1:, 1:]
            sub[0, :] = -1e9
            sub[0, c] = 0.0
            best = max(best, s[0, c] + networkx_best(sub))
        _, score = decode.chu_liu_edmonds(s, single_root=True)
        assert score == pytest.approx(best, abs=1e-6)
