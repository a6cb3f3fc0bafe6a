"""Brute-force references shared by the decoder tests."""

from __future__ import annotations

import itertools


def chain_score(em, tr, y, start=None, stop=None) -> float:
    """Score of the labelling ``y``: emissions, transitions, start and stop."""
    s = sum(em[i, yi] for i, yi in enumerate(y)) + sum(tr[a, b] for a, b in itertools.pairwise(y))
    if start is not None:
        s += start[y[0]]
    if stop is not None:
        s += stop[y[-1]]
    return float(s)
