import numpy as np
import pytest

from omkl import _omkl


def test_soft_threshold_matches_closed_form():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    out = _omkl.soft_threshold(x, 0.3)
    np.testing.assert_allclose(out, np.sign(x) * np.maximum(np.abs(x) - 0.3, 0.0))


def test_soft_threshold_rejects_bad_input():
    with pytest.raises(ValueError, match="tau"):
        _omkl.soft_threshold(np.ones(3), -1.0)
    with pytest.raises(ValueError, match="element 1"):
        _omkl.soft_threshold(np.array([0.0, np.nan]), 1.0)
