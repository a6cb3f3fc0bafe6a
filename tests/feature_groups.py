"""A check shared by the tests of explicit feature groups (random Fourier
and Nyström features): a kernel given as a feature map trains the same
model as an explicit group on the same precomputed columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from omkl import MKLClassifier
from omkl.mkl import UNBOUNDED_CONFIG


def assert_feature_group_equals_explicit_group(
    features: Any, name: str, X: np.ndarray, y: list[str], rel: float, abs_: float
) -> tuple[MKLClassifier, MKLClassifier]:
    """Trains ``kernels=["linear", features]`` on ``X`` and an explicit-group
    model on ``[X, features.transform(X)]`` side by side, checking at every
    round that they predict alike and that the group norms agree; returns
    both models."""
    Z = features.transform(X)
    XZ = np.hstack([X, Z])
    d = X.shape[1]
    a = MKLClassifier(kernels=["linear", features], lam=1e-3, **UNBOUNDED_CONFIG)
    b = MKLClassifier(
        kernels=[],
        explicit_groups={"linear": list(range(d)), name: list(range(d, d + Z.shape[1]))},
        lam=1e-3,
        **UNBOUNDED_CONFIG,
    )
    for i in range(len(y)):
        assert a.predict_one(X[i]) == b.predict_one(XZ[i])
        a.learn_one(X[i], y[i])
        b.learn_one(XZ[i], y[i])
        na, nb = a.group_norms_, b.group_norms_
        assert na[name] == pytest.approx(nb[name], rel=rel, abs=abs_)
        assert na["linear"] == pytest.approx(nb["linear"], rel=rel, abs=abs_)
    return a, b
