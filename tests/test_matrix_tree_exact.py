"""decode.matrix_tree against brute-force enumeration at every score scale.

Scores N(0, sigma^2) with sigma up to 1000 make heavy cycles and weights far
beyond the float64 range; log Z must match the log-sum-exp over all trees and
every marginal the enumerated probability, each column summing to 1.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from omkl import decode

_spec = importlib.util.spec_from_file_location(
    "matrix_tree_accuracy", Path(__file__).parent.parent / "benches" / "matrix_tree_accuracy.py"
)
assert _spec is not None and _spec.loader is not None
_acc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_acc)


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("sigma", [1.0, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_matrix_tree_matches_enumeration(n: int, sigma: float, single_root: bool) -> None:
    rng = np.random.default_rng(int(1000 * sigma) + 10 * n + single_root)
    trees = _acc.all_trees(n, single_root)
    for _ in range(6 if n == 7 else 15):
        s = rng.normal(scale=sigma, size=(n + 1, n + 1))
        ref_z, ref_mu = _acc.brute(s, trees)
        log_z, mu = decode.matrix_tree(s, single_root=single_root)
        assert abs(log_z - ref_z) <= 1e-12 * max(10.0, abs(ref_z)), (log_z, ref_z)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, rtol=0, atol=1e-9)
        np.testing.assert_allclose(mu, ref_mu, rtol=0, atol=1e-9)
        assert (mu >= 0).all()


def test_heavy_cycle_example_is_exact() -> None:
    # Trees {0->1, 0->2} = -33, {0->1, 1->2} = 2, {0->2, 2->1} = 13.
    s = np.array([[0, -30, -3], [0, 0, 32], [0, 16, 0.0]])
    log_z, mu = decode.matrix_tree(s)
    exact = 13.0 + np.log1p(np.exp(-11.0) + np.exp(-46.0))
    assert abs(log_z - exact) < 1e-13
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, rtol=0, atol=1e-15)
    p = np.exp(np.array([-33.0, 2.0, 13.0]) - exact)
    assert abs(mu[1, 2] - p[1]) < 1e-16 and abs(mu[0, 2] - p[0] - p[2]) < 1e-15


def test_scores_beyond_the_float_range_are_refused_by_name() -> None:
    s = np.array([[0, 1e308, -1e308], [0, 0, 1e308], [0, -1e308, 0.0]])
    with pytest.raises(ValueError, match="scores"):
        decode.matrix_tree(s)
    # Huge but with a finite range: exact.
    big = np.array([[0, 1e300, 1e300], [0, 0, 1e300], [0, 1e300, 0.0]])
    log_z, mu = decode.matrix_tree(big)
    assert log_z == 2e300
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-12)
