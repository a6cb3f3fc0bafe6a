"""Exact structured decoders on numpy arrays.

Multiclass (argmax), linear chains (Viterbi, loss-augmented Viterbi,
N-best Viterbi, forward-backward), non-projective dependency trees (Chu-Liu-Edmonds, the
matrix-tree theorem) and projective trees (Eisner). All run in the Rust core with the GIL released.

Layouts:

* chains: ``emissions`` is ``n x L`` (score of label ``y`` at position ``i`` is
  ``emissions[i, y]``), ``transitions`` is ``L x L`` (``transitions[prev, next]``),
  optional ``start`` and ``stop`` have length ``L``;
* trees: ``scores`` is ``(n+1) x (n+1)`` with ``scores[h, m]`` the score of the
  arc head ``h`` -> modifier ``m``, node 0 the root. Column 0 and the diagonal
  are ignored. ``heads[m]`` is the head of word ``m`` for ``m`` in ``1..n``;
  ``heads[0]`` is unused (0).

Every function raises ``ValueError`` naming the argument for bad input (wrong
shapes, NaN or infinite scores, ``n = 0``, labels out of range, scores so large
that a total of them would exceed about ``1e300``; for the log-space
computations, see :func:`forward_backward` and :func:`matrix_tree`), and an exception that is
both a ``TypeError`` and a ``ValueError`` for input of the wrong type (complex
numbers, strings, non-integer labels or heads). An output that cannot be
allocated raises ``MemoryError`` naming the argument and the bytes requested.

>>> import numpy as np
>>> from omkl import decode
>>> labels, score = decode.viterbi(np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros((2, 2)))
>>> labels.tolist(), score
([0, 1], 2.0)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from omkl import _omkl
from omkl.prox import ArgumentTypeError, _real_array, _scalar

__all__ = [
    "argmax",
    "argmax_hamming",
    "chu_liu_edmonds",
    "chu_liu_edmonds_batch",
    "chu_liu_edmonds_hamming",
    "eisner",
    "eisner_hamming",
    "forward_backward",
    "matrix_tree",
    "viterbi",
    "viterbi_batch",
    "viterbi_hamming",
    "viterbi_nbest",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _f64(x: npt.ArrayLike, ndim: int, name: str) -> FloatArray:
    a = _real_array(x, name).astype(np.float64, copy=False)
    if a.ndim != ndim:
        raise ValueError(f"`{name}` must be a {ndim}-D array, got shape {a.shape}")
    return a


def _opt(x: npt.ArrayLike | None, name: str) -> FloatArray | None:
    return None if x is None else _f64(x, 1, name)


def _labels(x: npt.ArrayLike, name: str) -> IntArray:
    a = np.asarray(x)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ArgumentTypeError(
            f"`{name}` must be a 1-D array of integers, got {a.dtype} {a.shape}"
        )
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be a 1-D array of integers, got {a.dtype} {a.shape}")
    if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"`{name}` has element {int(a.max())}, out of range")
    return a.astype(np.int64, copy=False)


def _int(v: Any, name: str, lo: int) -> int:
    """``v`` as an int in ``[lo, 2**63)``: a non-integer is refused (never
    truncated), an integer out of range is a ``ValueError`` naming ``name``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ArgumentTypeError(f"`{name}` must be an integer >= {lo}, got {v!r}")
    if not lo <= int(v) < 2**63:
        raise ValueError(f"`{name}` must be an integer >= {lo} and < 2**63, got {v!r}")
    return int(v)


def viterbi(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
) -> tuple[IntArray, float]:
    """Best labelling of a chain and its score, in O(n L^2).

    >>> import numpy as np
    >>> em = np.array([[2.0, 0.0], [0.0, 0.5], [0.0, 0.5]])
    >>> labels, score = viterbi(em, np.eye(2))
    >>> labels.tolist(), score
    ([0, 0, 0], 4.0)
    """
    return _omkl.viterbi(
        _f64(emissions, 2, "emissions"),
        _f64(transitions, 2, "transitions"),
        _opt(start, "start"),
        _opt(stop, "stop"),
    )


def viterbi_hamming(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    gold: npt.ArrayLike,
    cost: float = 1.0,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
) -> tuple[IntArray, float]:
    """Loss-augmented Viterbi: maximises ``score(y) + cost * hamming(y, gold)``.

    Returns the maximiser and the augmented value.

    >>> import numpy as np
    >>> labels, value = viterbi_hamming(np.array([[1.0, 0.0]]), np.zeros((2, 2)), [0], 2.0)
    >>> labels.tolist(), value
    ([1], 2.0)
    """
    return _omkl.viterbi_hamming(
        _f64(emissions, 2, "emissions"),
        _f64(transitions, 2, "transitions"),
        _labels(gold, "gold"),
        _scalar(cost, "cost"),
        _opt(start, "start"),
        _opt(stop, "stop"),
    )


@overload
def viterbi_batch(
    emissions: Sequence[npt.ArrayLike],
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    lengths: npt.ArrayLike | None = None,
) -> tuple[list[IntArray], FloatArray]: ...


@overload
def viterbi_batch(
    emissions: FloatArray,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    lengths: npt.ArrayLike | None = None,
) -> tuple[IntArray, FloatArray]: ...


def viterbi_batch(
    emissions: Sequence[npt.ArrayLike] | FloatArray,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    lengths: npt.ArrayLike | None = None,
) -> tuple[list[IntArray], FloatArray] | tuple[IntArray, FloatArray]:
    """Viterbi on many chains sharing ``transitions``, in parallel without the GIL.

    ``emissions`` is either a sequence of ``n_k x L`` arrays, and the result is
    the list of labellings and the array of scores; or one 3-D numpy array
    ``N x n x L`` (equal lengths, or padded: chain ``k`` then has
    ``lengths[k]`` positions and the rest of its rows are ignored), and the
    result is an ``N x n`` int64 array of labels, ``-1`` past each chain's
    length, and the array of scores. The 3-D form creates no Python object
    per chain.

    >>> import numpy as np
    >>> labels, scores = viterbi_batch([np.eye(2), np.ones((1, 2))], np.zeros((2, 2)))
    >>> [y.tolist() for y in labels], scores.tolist()
    ([[0, 1], [0]], [2.0, 1.0])
    >>> em = np.stack([np.eye(2), [[0.0, 3.0], [np.nan, np.nan]]])
    >>> labels, scores = viterbi_batch(em, np.zeros((2, 2)), lengths=[2, 1])
    >>> labels.tolist(), scores.tolist()
    ([[0, 1], [1, -1]], [2.0, 3.0])
    """
    if isinstance(emissions, np.ndarray) and emissions.ndim == 3:
        lens = None if lengths is None else _labels(lengths, "lengths")
        return _omkl.viterbi_batch_array(
            _f64(emissions, 3, "emissions"),
            _f64(transitions, 2, "transitions"),
            lens,
            _opt(start, "start"),
            _opt(stop, "stop"),
        )
    if lengths is not None:
        raise ValueError("`lengths` applies to a 3-D emissions array, got a sequence of arrays")
    ems = [_f64(e, 2, f"emissions[{k}]") for k, e in enumerate(emissions)]
    return _omkl.viterbi_batch(
        ems, _f64(transitions, 2, "transitions"), _opt(start, "start"), _opt(stop, "stop")
    )


def viterbi_nbest(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    k: int,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
) -> tuple[IntArray, FloatArray]:
    """The ``k`` best labellings of a chain and their scores, best first, in O(n L^2 k).

    Returns ``(paths, scores)``: ``paths`` is ``m x n`` with ``m = min(k, L**n)``.
    Equal scores come in increasing lexicographic order of the labelling
    (exactly so when the sums are exact, e.g. integer scores).

    >>> import numpy as np
    >>> paths, scores = viterbi_nbest(np.array([[1.0, 0.0], [0.0, 2.0]]), np.zeros((2, 2)), k=3)
    >>> paths.tolist(), scores.tolist()
    ([[0, 1], [1, 1], [0, 0]], [3.0, 2.0, 1.0])
    """
    k = _int(k, "k", 1)
    return _omkl.viterbi_nbest(
        _f64(emissions, 2, "emissions"),
        _f64(transitions, 2, "transitions"),
        k,
        _opt(start, "start"),
        _opt(stop, "stop"),
    )


def chu_liu_edmonds(scores: npt.ArrayLike, single_root: bool = False) -> tuple[IntArray, float]:
    """Maximum spanning arborescence rooted at node 0, in O(n^2).

    With ``single_root`` the root has exactly one child.

    >>> import numpy as np
    >>> s = np.array([[0.0, 1.0, 1.5], [0.0, 0.0, 5.0], [0.0, 4.0, 0.0]])
    >>> heads, score = chu_liu_edmonds(s)
    >>> heads.tolist(), score
    ([0, 0, 1], 6.0)
    """
    return _omkl.chu_liu_edmonds(_f64(scores, 2, "scores"), bool(single_root))


def chu_liu_edmonds_hamming(
    scores: npt.ArrayLike, gold: npt.ArrayLike, cost: float = 1.0, single_root: bool = False
) -> tuple[IntArray, float]:
    """Loss-augmented Chu-Liu-Edmonds: maximises ``score(t) + cost * #wrong heads``.

    ``gold`` has length ``n + 1`` (``gold[0]`` unused). Returns the maximiser and
    the augmented value.

    >>> import numpy as np
    >>> s = np.array([[0.0, 1.0, 1.5], [0.0, 0.0, 5.0], [0.0, 4.0, 0.0]])
    >>> heads, value = chu_liu_edmonds_hamming(s, [0, 0, 1], cost=10.0)
    >>> heads.tolist(), value
    ([0, 2, 0], 25.5)
    """
    return _omkl.chu_liu_edmonds_hamming(
        _f64(scores, 2, "scores"), _labels(gold, "gold"), _scalar(cost, "cost"), bool(single_root)
    )


def chu_liu_edmonds_batch(
    scores: Sequence[npt.ArrayLike], single_root: bool = False
) -> tuple[list[IntArray], FloatArray]:
    """Chu-Liu-Edmonds on many sentences, in parallel without the GIL.

    >>> import numpy as np
    >>> heads, values = chu_liu_edmonds_batch([np.ones((2, 2)), np.ones((3, 3))])
    >>> [h.tolist() for h in heads], values.tolist()
    ([[0, 0], [0, 0, 0]], [1.0, 2.0])
    """
    mats = [_f64(s, 2, f"scores[{k}]") for k, s in enumerate(scores)]
    return _omkl.chu_liu_edmonds_batch(mats, bool(single_root))


@overload
def forward_backward(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    pairwise: Literal[False] = False,
) -> tuple[float, FloatArray, FloatArray]: ...


@overload
def forward_backward(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    *,
    pairwise: Literal[True],
) -> tuple[float, FloatArray, FloatArray, FloatArray]: ...


def forward_backward(
    emissions: npt.ArrayLike,
    transitions: npt.ArrayLike,
    start: npt.ArrayLike | None = None,
    stop: npt.ArrayLike | None = None,
    pairwise: bool = False,
) -> tuple[float, FloatArray, FloatArray] | tuple[float, FloatArray, FloatArray, FloatArray]:
    """Log-partition function and marginals of a chain, in log space.

    Returns ``(log_z, node, trans)``: ``node[i, y] = P(y_i = y)`` (``n x L``) and
    ``trans[p, q] = sum_i P(y_{i-1} = p, y_i = q)``, summed over positions (``L x L``).
    With ``pairwise=True`` a fourth element ``pair`` (``(n-1) x L x L``) holds the
    per-position transition marginals ``pair[i-1, p, q] = P(y_{i-1} = p, y_i = q)``.
    Log-space sums carry an absolute error of about ``2e-16`` times the total
    magnitude of the scores, so ``(2n + 1) * max|score|`` above ``1e6`` raises
    ``ValueError`` naming the argument.

    >>> import numpy as np
    >>> log_z, node, trans = forward_backward(np.zeros((2, 2)), np.zeros((2, 2)))
    >>> round(float(np.exp(log_z)), 6), node.tolist(), trans.tolist()
    (4.0, [[0.5, 0.5], [0.5, 0.5]], [[0.25, 0.25], [0.25, 0.25]])
    >>> _, _, _, pair = forward_backward(np.zeros((3, 2)), np.eye(2) * 50, pairwise=True)
    >>> pair.shape, np.round(pair[0], 6).tolist()
    ((2, 2, 2), [[0.5, 0.0], [0.0, 0.5]])
    """
    return _omkl.forward_backward(
        _f64(emissions, 2, "emissions"),
        _f64(transitions, 2, "transitions"),
        _opt(start, "start"),
        _opt(stop, "stop"),
        bool(pairwise),
    )


def matrix_tree(scores: npt.ArrayLike, single_root: bool = False) -> tuple[float, FloatArray]:
    """Log-partition function and arc marginals over non-projective trees.

    Returns ``(log_z, marginals)`` with ``marginals[h, m] = P(h -> m)``; every
    column ``m >= 1`` sums to one. The Laplacian is factorised without
    subtractions (every pivot and inverse entry is a sum of non-negative
    terms), so both are exact to rounding however close to cancelling the
    trees' weights are; a score range ``max - min`` above ``1e6`` raises
    ``ValueError``. O(n^3) time with or without ``single_root``.

    >>> import numpy as np
    >>> log_z, mu = matrix_tree(np.zeros((3, 3)))
    >>> round(float(np.exp(log_z)), 6), round(float(mu[0, 1]), 6)
    (3.0, 0.666667)
    """
    return _omkl.matrix_tree(_f64(scores, 2, "scores"), bool(single_root))


def eisner(scores: npt.ArrayLike, single_root: bool = False) -> tuple[IntArray, float]:
    """Best projective tree rooted at node 0 (Eisner's algorithm, O(n^3)).

    >>> import numpy as np
    >>> s = np.zeros((4, 4))
    >>> s[0, 2] = s[1, 3] = s[2, 1] = 10.0  # the best tree is not projective
    >>> heads, score = eisner(s)
    >>> score
    20.0
    """
    return _omkl.eisner(_f64(scores, 2, "scores"), bool(single_root))


def eisner_hamming(
    scores: npt.ArrayLike, gold: npt.ArrayLike, cost: float = 1.0, single_root: bool = False
) -> tuple[IntArray, float]:
    """Loss-augmented Eisner: maximises ``score(t) + cost * #wrong heads``.

    >>> import numpy as np
    >>> heads, value = eisner_hamming(np.zeros((3, 3)), [0, 0, 1], cost=1.0)
    >>> value
    2.0
    """
    return _omkl.eisner_hamming(
        _f64(scores, 2, "scores"), _labels(gold, "gold"), _scalar(cost, "cost"), bool(single_root)
    )


def argmax(scores: npt.ArrayLike) -> tuple[int, float]:
    """Best label of a multiclass score vector and its score (ties: smallest label).

    >>> argmax([0.5, 2.0, 2.0])
    (1, 2.0)
    """
    return _omkl.argmax(_f64(scores, 1, "scores"))


def argmax_hamming(scores: npt.ArrayLike, gold: int, cost: float = 1.0) -> tuple[int, float]:
    """Loss-augmented argmax: maximises ``scores[y] + cost * (y != gold)``.

    >>> argmax_hamming([1.0, 0.5], gold=0, cost=1.0)
    (1, 1.5)
    """
    return _omkl.argmax_hamming(
        _f64(scores, 1, "scores"), _int(gold, "gold", 0), _scalar(cost, "cost")
    )
