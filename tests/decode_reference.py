"""Brute-force references and hypothesis strategies shared by the decoder tests."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st


def chain_score(em, tr, y, start=None, stop=None) -> float:
    """Score of the labelling ``y``: emissions, transitions, start and stop."""
    s = sum(em[i, yi] for i, yi in enumerate(y)) + sum(tr[a, b] for a, b in itertools.pairwise(y))
    if start is not None:
        s += start[y[0]]
    if stop is not None:
        s += stop[y[-1]]
    return float(s)


@st.composite
def matrices(draw, shape):
    """Random scores; half the time small integers, which make many ties."""
    size = int(np.prod(shape))
    if draw(st.booleans()):
        vals = draw(st.lists(st.integers(-2, 2), min_size=size, max_size=size))
    else:
        finite = st.floats(-5, 5, allow_nan=False, allow_infinity=False)
        vals = draw(st.lists(finite, min_size=size, max_size=size))
    return np.array(vals, dtype=np.float64).reshape(shape)


@st.composite
def chains(draw):
    """A chain ``(em, tr, start, stop)`` of 1-6 positions and 1-4 labels; start
    and stop scores half the time, else ``None``."""
    n = draw(st.integers(1, 6))
    n_labels = draw(st.integers(1, 4))
    em = draw(matrices((n, n_labels)))
    tr = draw(matrices((n_labels, n_labels)))
    if draw(st.booleans()):
        return em, tr, draw(matrices((n_labels,))), draw(matrices((n_labels,)))
    return em, tr, None, None
