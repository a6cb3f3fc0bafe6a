"""Accuracy of decode.matrix_tree against brute-force enumeration.

For each scale sigma and sentence length n, draws random arc scores
N(0, sigma^2), enumerates every dependency tree (and, with single_root, every
tree whose root has one child), and compares log Z (log-sum-exp of the tree
scores) and the arc marginals with the decoder's output. Prints one row per
(sigma, n, single_root): trials, max |log Z error| relative to max(1, |log Z|),
max |column sum of marginals - 1|, max |marginal error|, and how many inputs
the decoder rejected.

    python benches/matrix_tree_accuracy.py [--trials 40] [--max-n 7]
"""

from __future__ import annotations

import argparse
import functools
import itertools

import numpy as np

from omkl import decode


@functools.cache
def all_trees(n: int, single_root: bool) -> list[tuple[int, ...]]:
    """Every head assignment of words 1..n forming a tree rooted at 0."""
    out = []
    for heads in itertools.product(range(n + 1), repeat=n):
        h = (0, *heads)
        if any(h[m] == m for m in range(1, n + 1)):
            continue
        if single_root and sum(1 for m in range(1, n + 1) if h[m] == 0) != 1:
            continue
        ok = True
        for m in range(1, n + 1):
            seen, v = set(), m
            while v != 0:
                if v in seen:
                    ok = False
                    break
                seen.add(v)
                v = h[v]
            if not ok:
                break
        if ok:
            out.append(h)
    return out


def brute(s: np.ndarray, trees: list[tuple[int, ...]]) -> tuple[float, np.ndarray]:
    """log Z and marginals by enumeration (log-sum-exp in float64)."""
    n = s.shape[0] - 1
    heads = np.array(trees)[:, 1:]
    words = np.arange(1, n + 1)
    scores = s[heads, words].sum(axis=1)
    top = scores.max()
    log_z = float(top + np.log(np.exp(scores - top).sum()))
    p = np.exp(scores - log_z)
    mu = np.zeros_like(s)
    for col, m in enumerate(words):
        np.add.at(mu[:, m], heads[:, col], p)
    return log_z, mu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--max-n", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    header = (
        f"{'sigma':>6} {'n':>2} {'root':>6} {'trials':>6} {'max|dlogZ|':>11} "
        f"{'max|colsum-1|':>13} {'max|dmu|':>10} {'rejected':>8}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for sigma in (1.0, 10.0, 100.0, 1000.0):
        for n in range(2, args.max_n + 1):
            for single_root in (False, True):
                trees = all_trees(n, single_root)
                e_z = e_col = e_mu = 0.0
                rejected = 0
                for _ in range(args.trials):
                    s = rng.normal(scale=sigma, size=(n + 1, n + 1))
                    ref_z, ref_mu = brute(s, trees)
                    try:
                        log_z, mu = decode.matrix_tree(s, single_root=single_root)
                    except ValueError:
                        rejected += 1
                        continue
                    e_z = max(e_z, abs(log_z - ref_z) / max(1.0, abs(ref_z)))
                    e_col = max(e_col, float(np.abs(mu[:, 1:].sum(axis=0) - 1.0).max()))
                    e_mu = max(e_mu, float(np.abs(mu - ref_mu).max()))
                worst = max(worst, e_col, e_mu)
                print(
                    f"{sigma:6.0f} {n:2d} {'single' if single_root else 'multi':>6} "
                    f"{args.trials:6d} {e_z:11.2e} {e_col:13.2e} {e_mu:10.2e} {rejected:8d}"
                )
    print(f"worst marginal or column-sum error: {worst:.2e}")


if __name__ == "__main__":
    main()
