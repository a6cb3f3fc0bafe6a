"""Table 1: online MKL for handwriting recognition on Taskar's OCR data.

Reproduces Martins et al. (2010), Table 1: a structured SVM on chains
(indicator basis for label transitions, kernels on the pixel images) trained
by the online proximal algorithm (Alg. 3) on one fold and tested on the other
nine, for each fold. Rows are single kernels (linear, quadratic, Gaussian,
B1-spline), their uniform averages, and MKL with the squared l2,1 penalty.

Protocol, per training fold and row:

* Gram matrices of the fold's deduplicated inputs are computed once (f32)
  and shared by every hyper-parameter trial and row.
* For each C = 1/(lambda m) in {0.1, 1, 10, 1e2, 1e3, 1e4}, eta0 is chosen
  from {0.01, 0.1, 1, 10} as the value with the lowest objective after 5
  epochs for that C; then C (with its eta0) is chosen by accuracy on
  held-out words carved from the training fold (20%; never the test folds).
* The final model is trained on the whole fold for ``--epochs`` epochs (20,
  the paper's protocol; constant step eta0, averaged iterates) and tested on
  the other nine folds.
* The B1-spline Gram matrix (h for about 95% zeros) is stored sparse (CSR):
  training and test scoring visit only its non-zeros. Averages involving it
  are trained as one group per base kernel ``K_b / n`` under the squared l2
  norm, the same model as one group with the averaged Gram matrix.
* The transitions are penalised by their own (lambda/2)|theta_T|^2 and the
  squared l2,1 norm of MKL rows runs over the kernel groups (Alg. 3's prox on
  the kernel groups' norms). Then MKL at beta = e_k is exactly the
  single-kernel SVM of kernel k at the same C, so the MKL model nests every
  row of its block. ``--shared-transitions`` puts the transitions inside the
  squared l2,1 norm as one more group instead, where they compete with the
  kernels for one budget.

Run ``omkl reproduce ocr`` (a representative subset: two folds, rows linear,
quadratic, gaussian and mkl_lqg) or ``omkl reproduce ocr --full``. It writes
``table.md``, ``results.json`` and ``beta.png`` (the β trajectory of the MKL
rows; drawn when matplotlib is installed, see ``--plot``) to ``--out``. The
results, and the studies behind this protocol (the number of epochs, the
transitions), are in ``docs/ocr.md``.

Examples
--------
The rows of Table 1 by name (``--rows``):

>>> from omkl.experiments.ocr import ROWS
>>> sorted(ROWS)
['average_lb1', 'average_lqg', 'b1', 'gaussian', 'linear', 'mkl_lb1', 'mkl_lqg', 'quadratic']
>>> ROWS["mkl_lqg"].groups, ROWS["mkl_lqg"].paper_accuracy
((('L',), ('Q',), ('G',)), 87.5)

``omkl reproduce ocr --folds 0 --rows linear --epochs 2`` from Python (a
quick run: one fold, the linear row, two epochs):

>>> import argparse, contextlib, io, json, pathlib, shutil, tempfile
>>> from omkl.experiments import ocr
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> cli = argparse.ArgumentParser()
>>> ocr.add_arguments(cli)
>>> args = cli.parse_args(
...     ["--folds", "0", "--rows", "linear", "--epochs", "2", "--out", str(folder)]
... )
>>> with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
...     status = ocr.run(args)  # prints the table and a progress bar
>>> status, sorted(p.name for p in folder.iterdir())
(0, ['beta.png', 'results.json', 'table.md'])
>>> row = json.loads((folder / "results.json").read_text())["rows"]["linear"]
>>> row["accuracy_mean"] > 70, row["paper_accuracy"]
(True, 72.8)
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from omkl import _omkl, kernels
from omkl.datasets import OCRDataset, load_ocr
from omkl.decode import viterbi_batch
from omkl.experiments import add_plot_option, plots_wanted
from omkl.mkl import PrecomputedFeatures, PrecomputedGram, SequenceTagger

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

C_GRID: tuple[float, ...] = (0.1, 1.0, 10.0, 1e2, 1e3, 1e4)
ETA_GRID: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
GAUSSIAN_SIGMA2 = 5.0
B1_ZERO_FRACTION = 0.95
HELDOUT_FRACTION = 0.2
DEFAULT_ROWS = ("linear", "quadratic", "gaussian", "mkl_lqg")
DEFAULT_FOLDS = (0, 1)
#: The paper's protocol; ``docs/ocr.md`` has results with ``--epochs 40``.
DEFAULT_EPOCHS = 20


@dataclass(frozen=True)
class Row:
    """One row of Table 1: kernel groups (each the mean of its base kernels)."""

    title: str
    groups: tuple[tuple[str, ...], ...]
    paper_accuracy: float
    paper_seconds: float

    @property
    def mkl(self) -> bool:
        return len(self.groups) > 1

    @property
    def bases(self) -> tuple[str, ...]:
        return tuple(sorted({b for g in self.groups for b in g}))


#: Table 1 rows; base kernels: L linear, Q quadratic, G Gaussian, B B1-spline.
ROWS: dict[str, Row] = {
    "linear": Row("Linear (L)", (("L",),), 72.8, 6),
    "quadratic": Row("Quadratic (Q)", (("Q",),), 85.5, 116),
    "gaussian": Row("Gaussian (G), sigma^2 = 5", (("G",),), 84.1, 123),
    "average_lqg": Row("Average (L+Q+G)/3", (("L", "Q", "G"),), 84.3, 118),
    "mkl_lqg": Row("MKL b1 L + b2 Q + b3 G", (("L",), ("Q",), ("G",)), 87.5, 279),
    "b1": Row("B1-spline (B1)", (("B",),), 75.4, 8),
    "average_lb1": Row("Average (L+B1)/2", (("L", "B"),), 83.0, 15),
    "mkl_lb1": Row("MKL b1 L + b2 B1", (("L",), ("B",)), 85.2, 15),
}


# --------------------------------------------------------------------------
# data


@dataclass
class Corpus:
    """The OCR data with deduplicated inputs."""

    X: F32  # unique images, f32 0/1
    sq: F32  # squared norms of the unique images
    char_input: I64  # unique-input id of every character
    char_label: I64  # label id of every character
    offsets: I64  # word w = characters offsets[w]:offsets[w+1]
    folds: I64  # fold of every word
    alphabet: list[str]

    @classmethod
    def load(cls, path: str | None = None) -> Corpus:
        return cls.from_dataset(load_ocr(path))

    @classmethod
    def from_dataset(cls, data: OCRDataset) -> Corpus:
        """Deduplicates the images of ``data`` (sorted like ``np.unique(axis=0)``)."""
        # 0/1 rows packed into 16 bytes (first pixel the most significant
        # bit) sort in the same order as the rows themselves, and a 1-D
        # unique of 16-byte keys is much faster than np.unique(axis=0)
        packed = np.ascontiguousarray(np.packbits(data.pixels, axis=1))
        keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        X = np.ascontiguousarray(data.pixels[first], dtype=np.float32)
        index = {c: i for i, c in enumerate(data.alphabet)}
        return cls(
            X=X,
            sq=(X * X).sum(axis=1),
            char_input=inverse.ravel().astype(np.int64),
            char_label=np.array([index[c] for c in data.letters], dtype=np.int64),
            offsets=data.offsets,
            folds=data.folds,
            alphabet=data.alphabet,
        )

    def chars_of(self, words: I64) -> I64:
        """Character indices of ``words``, in order."""
        starts, ends = self.offsets[words], self.offsets[words + 1]
        lens = ends - starts
        base = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
        return (np.arange(lens.sum()) + base).astype(np.int64)

    def word_offsets(self, words: I64) -> I64:
        lens = self.offsets[words + 1] - self.offsets[words]
        return np.concatenate(([0], np.cumsum(lens))).astype(np.int64)


# --------------------------------------------------------------------------
# kernels (all from one f32 GEMM of inner products)


def kernel_from_dots(name: str, D: F32, na: F32, nb: F32, h: float) -> F32:
    """Base kernel ``name`` from inner products ``D = Xa Xbᵀ`` and squared norms.

    An independent numpy reference, not used by the experiment (whose Gram
    matrices come from the Rust formulas through :func:`base_kernel` and
    :mod:`omkl.kernels`): the tests and ``benches/bench_ocr_grams.py``
    compare the Rust matrices with it. Linear and quadratic kernels are
    normalised to unit diagonal; the Gaussian is ``exp(-|x-x'|² / (2
    sigma²))`` with sigma² = 5 and the B1-spline ``max(0, 1 - |x-x'| / h)``.
    """
    if name == "L":
        inv_a = 1.0 / np.sqrt(np.maximum(na, 1e-12))
        inv_b = 1.0 / np.sqrt(np.maximum(nb, 1e-12))
        out: F32 = np.multiply.outer(inv_a, inv_b)  # symmetric rounding: K[i, j] == K[j, i]
        out *= D
        return out
    if name == "Q":
        out = np.multiply.outer(1.0 / np.sqrt(na + 1.0), 1.0 / np.sqrt(nb + 1.0))
        out *= D + np.float32(1.0)
        np.square(out, out=out)
        return out
    d2 = np.add.outer(na, nb)
    d2 -= D * np.float32(2.0)
    np.maximum(d2, 0.0, out=d2)
    if name == "G":
        d2 *= np.float32(-1.0 / (2.0 * GAUSSIAN_SIGMA2))
        np.exp(d2, out=d2)
        return d2
    if name == "B":
        np.sqrt(d2, out=d2)
        d2 *= np.float32(-1.0 / h)
        d2 += np.float32(1.0)
        np.maximum(d2, 0.0, out=d2)
        return d2
    raise ValueError(f"unknown base kernel {name!r}; expected one of L, Q, G, B")


def b1_bandwidth(X: F32, sq: F32, zero_fraction: float = B1_ZERO_FRACTION) -> float:
    """h such that about ``zero_fraction`` of distinct training pairs are farther than h.

    The squared distances of 200,000 random pairs (seeded) are computed as
    ``|x|² + |x'|² - 2 x·x'`` in f32; for 0/1 images (the OCR pixels) they are
    integers and equal to the number of differing pixels, which is counted
    from packed bits instead (the same values, O(d/64) per pair).

    >>> X = np.eye(4, dtype=np.float32)
    >>> b1_bandwidth(X, (X * X).sum(axis=1))  # every distinct pair is sqrt(2) apart
    1.4142135381698608
    """
    rng = np.random.default_rng(0)
    m = len(sq)
    i, j = rng.integers(0, m, 200_000), rng.integers(0, m, 200_000)
    keep = i != j
    i, j = i[keep], j[keep]
    binary = np.logical_or(X == 0, X == 1).all()
    if binary and X.shape[1] > 0:
        q: Any = _integer_quantile(_binary_sq_distance_counts(X, i, j), 1.0 - zero_fraction)
    else:
        dots = np.einsum("ij,ij->i", X[i], X[j], dtype=np.float32)
        q = np.quantile(sq[i] + sq[j] - 2.0 * dots, 1.0 - zero_fraction)
    return float(np.sqrt(max(q, 1e-12)))


def _integer_quantile(counts: npt.NDArray[np.intp], q: float) -> np.float32:
    """``np.quantile(v, q)`` (linear method) of the float32 values ``v`` that
    hold ``counts[k]`` copies of each integer ``k``, from the counts: the two
    order statistics around the virtual index ``q (n - 1)`` are read off
    the cumulative counts, then interpolated by ``np.quantile`` itself (on
    those two values, at the same fraction), so the result is the same.

    >>> v = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.float32)
    >>> bool(_integer_quantile(np.bincount(v.astype(int)), 0.3) == np.quantile(v, 0.3))
    True
    """
    n = int(counts.sum())
    virtual = q * (n - 1)
    below = np.floor(virtual)
    ends = np.cumsum(counts)
    lo, hi = np.searchsorted(ends, [below, min(below + 1, n - 1)], side="right")
    pair = np.array([lo, hi], dtype=np.float32)
    return cast(np.float32, np.float32(np.quantile(pair, float(virtual - below))))


def _binary_sq_distance_counts(X: F32, i: I64, j: I64) -> npt.NDArray[np.intp]:
    """How many pairs ``(i[t], j[t])`` of 0/1 rows are at each squared
    distance ``0..d``: the histogram of :func:`_popcount_distances`."""
    return np.bincount(_popcount_distances(X, i, j), minlength=X.shape[1] + 1)


def _popcount_distances(X: F32, i: I64, j: I64) -> npt.NDArray[np.integer[Any]]:
    """Number of differing coordinates of 0/1 rows ``i[t]`` and ``j[t]``
    (their squared distance ``|x_i - x_j|²``), from the rows packed into
    64-bit words, one word column at a time."""
    packed = np.packbits(X.astype(bool), axis=1)
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words = np.ascontiguousarray(packed).view(np.uint64)
    out = np.zeros(len(i), dtype=np.uint16 if X.shape[1] < 2**16 else np.int64)
    for c in range(words.shape[1]):
        col = np.ascontiguousarray(words[:, c])
        x = np.take(col, i)
        x ^= np.take(col, j)
        out += np.bitwise_count(x)
    return out


def base_kernel(name: str, h: float = float("nan")) -> kernels.Kernel:
    """The Rust kernel of base kernel ``name``, which every Gram matrix of
    the experiment uses (same definitions as the numpy reference
    :func:`kernel_from_dots`).

    >>> base_kernel("Q")
    Kernel('polynomial', degree=2, offset=1.0, normalize=True)
    """
    if name == "L":
        return kernels.linear(normalize=True)
    if name == "Q":
        return kernels.polynomial(2, 1.0, normalize=True)
    if name == "G":
        return kernels.gaussian(GAUSSIAN_SIGMA2)
    if name == "B":
        return kernels.b1_spline(h)
    raise ValueError(f"unknown base kernel {name!r}; expected one of L, Q, G, B")


#: a group made of the linear kernel alone is trained in its primal form
#: (explicit features x / |x|): the same model, with O(d) updates.
PRIMAL = ("L",)


def unit_rows(X: F32) -> F32:
    """Rows scaled to unit norm (zero rows stay zero): the features of the
    normalised linear kernel.

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    norms = np.sqrt((X * X).sum(axis=1, dtype=np.float32))
    return np.ascontiguousarray(X / np.maximum(norms, np.float32(1e-12))[:, None])


def kernel_bases(row: Row) -> tuple[str, ...]:
    """The base kernels whose Gram matrices ``row`` trains on: those of its
    training groups (:func:`components`) other than the primal linear one.

    >>> kernel_bases(ROWS["average_lb1"]), kernel_bases(ROWS["average_lqg"])
    (('B',), ('G', 'L', 'Q'))
    """
    return tuple(sorted({b for g, _ in components(row) if g != PRIMAL for b in g}))


#: base kernels whose training Gram matrix is stored sparse (CSR, only the
#: non-zeros): the compact-support B1-spline.
SPARSE = ("B",)


@dataclass
class FoldGrams:
    """Gram matrices (and linear features) of one training fold's inputs,
    shared by all rows and trials. Dense base kernels are in ``base``;
    compact-support ones (``SPARSE``) in ``sparse``."""

    inputs: I64  # global unique-input ids, in Gram order
    base: dict[str, F32]
    unit: F32  # unit-norm features of the inputs
    seconds: dict[str, float]  # "unit" and one entry per base kernel
    h: float
    sparse: dict[str, kernels.SparseGram] = field(default_factory=dict)
    _groups: dict[tuple[str, ...], F32] = field(default_factory=dict)
    _csr: dict[str, tuple[I64, I64, F32]] = field(default_factory=dict)
    _scaled: dict[tuple[str, float], _omkl.SparseGram] = field(default_factory=dict)
    _precomputed: dict[tuple[tuple[str, ...], float], PrecomputedGram] = field(default_factory=dict)
    _features: dict[float, PrecomputedFeatures] = field(default_factory=dict)

    def sparse_scaled(self, name: str, scale: float = 1.0) -> _omkl.SparseGram:
        """Sparse base kernel ``name`` times ``scale`` (float32 products, as
        :meth:`csr` computes them), made once per fold and passed to every
        training run as it is: no per-run copy or check of the CSR arrays."""
        key = (name, scale)
        if key not in self._scaled:
            inner = self.sparse[name]._inner
            self._scaled[key] = inner if scale == 1.0 else inner.scaled(scale)
        return self._scaled[key]

    def precomputed(self, names: tuple[str, ...], scale: float = 1.0) -> PrecomputedGram:
        """The kernel group ``names`` times ``scale`` as a validated
        :class:`omkl.PrecomputedGram`, made once per fold and shared by every
        training run; its making counts in the group's Gram time. A dense
        matrix is made read-only and shared with the PrecomputedGram (one
        copy in memory, which :meth:`group` and :meth:`scores` keep using)."""
        key = (names, scale)
        if key not in self._precomputed:
            t = time.perf_counter()
            if len(names) == 1 and names[0] in self.sparse:
                g = PrecomputedGram(self.sparse_scaled(names[0], scale))
            else:
                k = self.group(names)
                if scale != 1.0:
                    k = k * np.float32(scale)
                # read-only: PrecomputedGram reads the array in place, no copy
                k.flags.writeable = False
                g = PrecomputedGram(k)
            self._precomputed[key] = g
            self.seconds[f"precomputed {names} {scale}"] = time.perf_counter() - t
        return self._precomputed[key]

    def features(self, scale: float = 1.0) -> PrecomputedFeatures:
        """The unit-norm features times ``sqrt(scale)`` as a validated
        :class:`omkl.PrecomputedFeatures`, made once per fold and shared by
        every training run; its making counts in the primal group's time."""
        if scale not in self._features:
            t = time.perf_counter()
            x = self.unit if scale == 1.0 else self.unit * np.float32(np.sqrt(scale))
            self._features[scale] = PrecomputedFeatures(x)
            self.seconds[f"features {scale}"] = time.perf_counter() - t
        return self._features[scale]

    def csr(self, name: str, scale: float = 1.0) -> tuple[I64, I64, F32]:
        """CSR arrays of sparse base kernel ``name`` times ``scale``."""
        if name not in self._csr:
            self._csr[name] = self.sparse[name]._inner.csr()
        indptr, indices, data = self._csr[name]
        return indptr, indices, data if scale == 1.0 else data * np.float32(scale)

    def scores(self, names: tuple[str, ...], rows: I64, coef: npt.NDArray[np.float64]) -> Any:
        """Scores ``K[rows] @ coef.T`` of the kernel group ``names``."""
        if len(names) == 1 and names[0] in self.sparse:
            return self.sparse[names[0]].scores(coef.T)[rows]
        return self.group(names)[rows] @ coef.T.astype(np.float32)

    def group(self, names: tuple[str, ...]) -> F32:
        if len(names) == 1:
            return self.base[names[0]]
        if names not in self._groups:
            out = self.base[names[0]].copy()
            for n in names[1:]:
                out += self.base[n]
            out *= np.float32(1.0 / len(names))
            self._groups[names] = out
        return self._groups[names]

    def row_seconds(self, row: Row) -> float:
        bases = kernel_bases(row)
        t = sum(self.seconds[b] for b in bases)
        t += sum(
            self.seconds.get(f"precomputed {g} {c}", 0.0) for g, c in components(row) if g != PRIMAL
        )
        primal = [c for g, c in components(row) if g == PRIMAL]
        t += sum(self.seconds.get(f"features {c}", 0.0) for c in primal)
        return t + (self.seconds["unit"] if primal else 0.0)


def fold_grams(corpus: Corpus, inputs: I64, bases: Sequence[str]) -> FoldGrams:
    """Symmetric Gram matrices of the fold's inputs, one per base kernel, by
    the Rust core (:func:`omkl.kernels.gram`, blocked and parallel)."""
    t0 = time.perf_counter()
    Xs = np.ascontiguousarray(corpus.X[inputs])
    sq = corpus.sq[inputs]
    unit = unit_rows(Xs)
    seconds = {"unit": time.perf_counter() - t0}
    base, sparse = {}, {}
    h = float("nan")
    for b in bases:
        t = time.perf_counter()
        if b in SPARSE:
            h = b1_bandwidth(Xs, sq)
            sparse[b] = kernels.sparse_gram(Xs, kernel=base_kernel(b, h))
        else:
            base[b] = kernels.gram(Xs, kernel=base_kernel(b, h))
        seconds[b] = time.perf_counter() - t
    return FoldGrams(inputs=inputs, base=base, unit=unit, seconds=seconds, h=h, sparse=sparse)


# --------------------------------------------------------------------------
# BLAS threads


def single_threaded_blas() -> threadpool_limits:
    """A context in which BLAS runs on one thread (``threadpoolctl``).

    The small products of unit-norm features (``d = 128`` columns) are done
    on the calling thread: a threaded OpenBLAS call leaves its worker
    threads busy-waiting for a while afterwards, which on a 2-core machine
    slows the timed step that follows (the final training, the next fold's
    Gram matrices; measured by ``studies/ocr_blas_spin.py``, see
    ``docs/ocr.md``). The products agree with the threaded ones to float32
    rounding (OpenBLAS may split the 128-term sums differently).

    >>> with single_threaded_blas():
    ...     float((np.ones((2, 3), np.float32) @ np.ones(3, np.float32))[0])
    3.0
    """
    return threadpool_limits(limits=1, user_api="blas")


def unit_scores(unit: F32, weights: npt.NDArray[np.float64]) -> F32:
    """``unit @ weights.T`` (float32) on one BLAS thread (see
    :func:`single_threaded_blas`).

    >>> unit_scores(np.eye(2, dtype=np.float32), np.array([[1.0, 2.0]])).tolist()
    [[1.0], [2.0]]
    """
    with single_threaded_blas():
        return cast(F32, unit @ weights.T.astype(np.float32))


# --------------------------------------------------------------------------
# training and prediction


@dataclass
class Split:
    """Training words of one fold, as chains over the fold's Gram rows."""

    inputs: I64  # Gram row of every position
    labels: I64
    offsets: I64
    n_words: int

    @property
    def lengths(self) -> I64:
        """Length of each word."""
        return np.diff(self.offsets)


def make_split(corpus: Corpus, words: I64, local: I64) -> Split:
    chars = corpus.chars_of(words)
    return Split(
        inputs=local[corpus.char_input[chars]],
        labels=corpus.char_label[chars],
        offsets=corpus.word_offsets(words),
        n_words=len(words),
    )


def components(row: Row) -> list[tuple[tuple[str, ...], float]]:
    """The groups of Alg. 3 for ``row``, each with the factor of its kernel.

    MKL rows and dense averages map one row group to one training group. The
    average of a sparse kernel and others, ``(K_1 + ... + K_n) / n``, is
    trained as n groups ``K_b / n`` under the same plain squared-l2 penalty:
    the same model (a single group is the concatenation of the feature maps
    ``phi_b / sqrt(n)``), without a dense Gram matrix of the sum.

    >>> components(ROWS["mkl_lqg"])
    [(('L',), 1.0), (('Q',), 1.0), (('G',), 1.0)]
    >>> components(ROWS["average_lb1"])  # B1 is sparse: one group per base kernel
    [(('L',), 0.5), (('B',), 0.5)]
    """
    out: list[tuple[tuple[str, ...], float]] = []
    for g in row.groups:
        if len(g) > 1 and any(b in SPARSE for b in g):
            if row.mkl:
                raise ValueError(f"MKL groups must be single kernels, got {g}")
            out.extend(((b,), 1.0 / len(g)) for b in g)
        else:
            out.append((g, 1.0))
    return out


#: True (default): the transitions are penalised by (lambda/2)|theta_T|^2
#: apart from the kernel groups, the single-kernel SVM's treatment of them,
#: so that MKL at beta = e_k is that SVM. False (``--shared-transitions``):
#: one more group of the squared l2,1 norm. ``docs/ocr.md`` compares the two.
SEPARATE_TRANSITIONS = True


def train(
    fg: FoldGrams,
    row: Row,
    split: Split,
    C: float,
    eta0: float,
    epochs: int,
    objective: bool = False,
) -> dict[str, Any]:
    """One run of Alg. 3 (MKL with the squared l2,1 penalty when the row has
    several groups, a structured SVM otherwise) through
    :class:`omkl.SequenceTagger` over the fold's precomputed Gram matrices
    (constant step ``eta0``, averaged iterates, chains visited in a seeded
    random order). Returns ``parts``: per base group, ``(names,
    coefficients)`` such that the emission scores are ``sum K_names(x,
    support) @ coefficients.T`` (primal groups: unit-norm features times
    weights); ``transitions``, ``start`` and ``stop``; ``beta`` of the
    returned model and ``beta_trajectory`` (current iterate after each
    epoch), both following ``row.groups``; with ``objective``, the training
    objective of the last iterate."""
    comps = components(row)
    dense = [(g, c) for g, c in comps if g != PRIMAL and not (len(g) == 1 and g[0] in SPARSE)]
    sparse: list[tuple[tuple[str, ...], float]] = [
        (g, c) for g, c in comps if len(g) == 1 and g[0] in SPARSE
    ]
    primal = [(g, c) for g, c in comps if g == PRIMAL]
    internal = dense + sparse + primal
    names = [f"g{i}" for i in range(len(internal))]
    lam = 1.0 / (C * split.n_words)
    tagger = SequenceTagger(
        kernels={n: fg.precomputed(g, c) for n, (g, c) in zip(names, dense + sparse, strict=False)},
        explicit_groups={
            n: fg.features(c)
            for n, (_, c) in zip(names[len(dense) + len(sparse) :], primal, strict=True)
        },
        labels=list(range(26)),
        regularizer="squared_l21" if row.mkl else "l2_squared",
        lam=lam,
        eta0=eta0,
        schedule="constant",
        average=True,
        transition_lam=lam if SEPARATE_TRANSITIONS else None,
    )
    tagger.fit(split.inputs, split.labels, epochs=epochs, shuffle=True, lengths=split.lengths)
    coef = tagger.coef_
    trans = tagger.transitions_
    res: dict[str, Any] = {
        "transitions": np.ascontiguousarray(trans["bigram"]),
        "start": trans["start"],
        "stop": trans["stop"],
    }
    if objective:
        res["objective"] = tagger.objective(split.inputs, split.labels, lengths=split.lengths)
    # fold each kernel factor into the coefficients: (K / n) a = K (a / n),
    # (x / sqrt n) . w = x . (w / sqrt n)
    res["parts"] = [
        (g, coef[names[internal.index((g, c))]] * (np.sqrt(c) if g == PRIMAL else c))
        for g, c in comps
    ]
    norms = tagger.group_norms_
    history = [list(b.values()) for _, b in tagger.kernel_weights_history_]
    if row.mkl:
        perm = [internal.index((g, 1.0)) for g in row.groups]
        beta = np.array([norms[n] for n in names])
        res["beta"] = (beta / beta.sum() if beta.sum() > 0 else np.full(len(beta), 1 / len(beta)))[
            perm
        ]
        res["beta_trajectory"] = np.array(history)[:, perm]
    else:
        res["beta"] = np.ones(1)
        res["beta_trajectory"] = np.ones((len(history), 1))
    return res


def decode(model: dict[str, Any], emissions: npt.NDArray[np.float64], offsets: I64) -> I64:
    """Viterbi labelling of every chain (rows ``offsets[k]:offsets[k + 1]``
    of ``emissions``), concatenated, by :func:`omkl.decode.viterbi_batch`."""
    chains = np.split(np.asarray(emissions, dtype=np.float64), offsets[1:-1])
    labels, _ = viterbi_batch(chains, model["transitions"], model["start"], model["stop"])
    return np.concatenate(labels)


def heldout_accuracy(model: dict[str, Any], fg: FoldGrams, split: Split) -> float:
    """Accuracy on chains whose inputs are rows of the training Gram matrices."""
    rows, where = np.unique(split.inputs, return_inverse=True)
    em = np.zeros((len(rows), 26))
    for names, coef in model["parts"]:
        if names == PRIMAL:
            em += unit_scores(fg.unit[rows], coef)
        else:
            em += fg.scores(names, rows, coef)
    pred = decode(model, em[where.ravel()], split.offsets)
    return float((pred == split.labels).mean())


def other_folds_accuracy(
    corpus: Corpus, fg: FoldGrams, row: Row, model: dict[str, Any], fold: int
) -> float:
    """Character accuracy of ``model`` (trained on ``fold``) on the words of
    every other fold: emission scores of each distinct test input once,
    then Viterbi per word."""
    test_words = np.flatnonzero(corpus.folds != fold)
    chars = corpus.chars_of(test_words)
    uniq, where = np.unique(corpus.char_input[chars], return_inverse=True)
    em = emission_scores(corpus, fg, row, model, uniq)[where.ravel()]
    pred = decode(model, em, corpus.word_offsets(test_words))
    return float((pred == corpus.char_label[chars]).mean())


def emission_scores(
    corpus: Corpus,
    fg: FoldGrams,
    row: Row,
    model: dict[str, Any],
    test_inputs: I64,
    chunk: int = 4096,
) -> npt.NDArray[np.float64]:
    """Scores of every label at every test input: one Gram block per kernel
    against the support of the expansion, times the coefficients (GEMM);
    primal groups multiply the unit-norm test features by their weights."""
    kernel = [(names, c) for names, c in model["parts"] if names != PRIMAL]
    primal = [c for names, c in model["parts"] if names == PRIMAL]
    out = np.zeros((len(test_inputs), 26))
    for w in primal:
        for a in range(0, len(test_inputs), chunk):
            ids = test_inputs[a : a + chunk]
            out[a : a + chunk] += unit_scores(unit_rows(corpus.X[ids]), w)
    if not kernel:
        return out
    support = np.flatnonzero(sum(np.abs(c).sum(axis=0) for _, c in kernel) > 0)
    Xs = np.ascontiguousarray(corpus.X[fg.inputs[support]])
    coefs = [np.ascontiguousarray(c[:, support].T, dtype=np.float32) for _, c in kernel]
    ks = {b: base_kernel(b, fg.h) for names, _ in kernel for b in names}
    for a in range(0, len(test_inputs), chunk):
        Xt = np.ascontiguousarray(corpus.X[test_inputs[a : a + chunk]])
        blocks: dict[str, Any] = {
            # compact-support kernels: CSR blocks, scored over their non-zeros
            b: kernels.sparse_gram(Xt, Xs, kernel=k)
            if b in SPARSE
            else kernels.gram(Xt, Xs, kernel=k)
            for b, k in ks.items()
        }
        for (names, _), c in zip(kernel, coefs, strict=True):
            if len(names) == 1 and names[0] in SPARSE:
                out[a : a + chunk] += blocks[names[0]].scores(c)
                continue
            k = blocks[names[0]] if len(names) == 1 else sum(blocks[n] for n in names) / len(names)
            out[a : a + chunk] += k @ c
    return out


@dataclass
class FoldResult:
    fold: int
    accuracy: float
    gram_seconds: float
    update_seconds: float
    selection_seconds: float
    test_seconds: float
    C: float
    eta0: float
    beta: list[float]
    beta_trajectory: list[list[float]]
    heldout: dict[str, float] = field(default_factory=dict)
    eta_by_C: dict[str, float] = field(default_factory=dict)


def run_fold(
    corpus: Corpus,
    fg: FoldGrams,
    row: Row,
    fold: int,
    epochs: int,
    pool: ThreadPoolExecutor,
    c_grid: Sequence[float] = C_GRID,
    eta_grid: Sequence[float] = ETA_GRID,
) -> FoldResult:
    """Hyper-parameter selection on held-out training words, final training
    on the whole fold, test on the other folds.

    Each (C, eta0) trial of the grids runs 5 epochs on 80% of the fold's
    words; each C then trains ``epochs`` epochs with its best eta0 and is
    scored on the other 20%; the chosen C and eta0 train the final model on
    the whole fold. Runs are submitted to ``pool``.

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> corpus = Corpus.load()  # the bundled data, images deduplicated
    >>> words = np.flatnonzero(corpus.folds == 0)
    >>> inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
    >>> row = ROWS["linear"]
    >>> fg = fold_grams(corpus, inputs, kernel_bases(row))  # none: linear is primal
    >>> with ThreadPoolExecutor(max_workers=1) as pool:
    ...     res = run_fold(corpus, fg, row, 0, 2, pool, c_grid=(1e3,), eta_grid=(0.1,))
    >>> res.C, res.eta0, res.accuracy > 0.7
    (1000.0, 0.1, True)
    """
    local = np.full(len(corpus.X), -1, dtype=np.int64)
    local[fg.inputs] = np.arange(len(fg.inputs))
    words = np.flatnonzero(corpus.folds == fold)
    rng = np.random.default_rng(1000 + fold)
    perm = rng.permutation(words)
    n_held = max(1, int(round(HELDOUT_FRACTION * len(words))))
    held, sub = np.sort(perm[:n_held]), np.sort(perm[n_held:])
    # the row's Gram groups and feature matrices, made and validated once here
    # rather than by the first trials side by side (their time counts in the
    # Gram time)
    for g, c in components(row):
        if g != PRIMAL:
            fg.precomputed(g, c)
        else:
            fg.features(c)
    t0 = time.perf_counter()
    sub_split, held_split = make_split(corpus, sub, local), make_split(corpus, held, local)
    trials = {
        (C, eta): pool.submit(train, fg, row, sub_split, C, eta, 5, objective=True)
        for C in c_grid
        for eta in eta_grid
    }
    objective = {}
    for key, fut in trials.items():
        value = float(fut.result()["objective"])
        objective[key] = value if np.isfinite(value) else np.inf
    best_eta = {C: min(eta_grid, key=lambda e: (objective[C, e], e)) for C in c_grid}
    runs = {C: pool.submit(train, fg, row, sub_split, C, best_eta[C], epochs) for C in c_grid}
    heldout = {C: heldout_accuracy(runs[C].result(), fg, held_split) for C in c_grid}
    C = max(c_grid, key=lambda c: (heldout[c], -c))
    eta0 = best_eta[C]
    selection = time.perf_counter() - t0

    split = make_split(corpus, words, local)
    t1 = time.perf_counter()
    model = train(fg, row, split, C, eta0, epochs)
    update = time.perf_counter() - t1

    t2 = time.perf_counter()
    accuracy = other_folds_accuracy(corpus, fg, row, model, fold)
    test = time.perf_counter() - t2
    return FoldResult(
        fold=fold,
        accuracy=accuracy,
        gram_seconds=fg.row_seconds(row),
        update_seconds=update,
        selection_seconds=selection,
        test_seconds=test,
        C=C,
        eta0=eta0,
        beta=[float(b) for b in model["beta"]],
        beta_trajectory=model["beta_trajectory"].tolist(),
        heldout={str(c): a for c, a in heldout.items()},
        eta_by_C={str(c): e for c, e in best_eta.items()},
    )


# --------------------------------------------------------------------------
# reporting


def _mean_std(xs: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(xs, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def summarize(results: dict[str, list[FoldResult]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, folds in results.items():
        row = ROWS[name]
        acc_m, acc_s = _mean_std([100 * f.accuracy for f in folds])
        gram = float(np.mean([f.gram_seconds for f in folds]))
        update = float(np.mean([f.update_seconds for f in folds]))
        out[name] = {
            "title": row.title,
            "accuracy_mean": acc_m,
            "accuracy_std": acc_s,
            "train_seconds_per_fold": gram + update,
            "gram_seconds_per_fold": gram,
            "update_seconds_per_fold": update,
            "selection_seconds_per_fold": float(np.mean([f.selection_seconds for f in folds])),
            "test_seconds_per_fold": float(np.mean([f.test_seconds for f in folds])),
            "paper_accuracy": row.paper_accuracy,
            "paper_train_seconds": row.paper_seconds,
            "folds": [asdict(f) for f in folds],
        }
    return out


def table_markdown(summary: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# OCR (Taskar et al.): accuracy per character, train on 1 fold, test on 9",
        "",
        f"Folds: {', '.join(str(f) for f in args.folds)}; epochs: {args.epochs}; "
        "eta0 chosen per C by the lowest objective after 5 epochs, then C by accuracy "
        "on held-out words carved from the training fold "
        f"({int(HELDOUT_FRACTION * 100)}% of its words), never on the test folds.",
        "Train s/fold = Gram + update (final run); selection and test times are separate.",
        "Transitions: "
        + (
            "penalised by (lambda/2)|theta_T|^2 apart from the kernel groups "
            "(MKL rows: squared l2,1 over the kernel groups only)."
            if SEPARATE_TRANSITIONS
            else "one group of the squared l2,1 norm (Alg. 3 as written)."
        ),
        "",
        "| row | accuracy % (ours) | paper % | train s/fold (Gram + update) | paper s/fold "
        "| selection s/fold | test s/fold | C | eta0 | beta |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary.values():
        Cs = sorted({f["C"] for f in s["folds"]})
        etas = sorted({f["eta0"] for f in s["folds"]})
        beta = np.mean([f["beta"] for f in s["folds"]], axis=0)
        lines.append(
            f"| {s['title']} | {s['accuracy_mean']:.1f} ± {s['accuracy_std']:.1f} "
            f"| {s['paper_accuracy']:.1f} "
            f"| {s['train_seconds_per_fold']:.2f} ({s['gram_seconds_per_fold']:.2f} + "
            f"{s['update_seconds_per_fold']:.2f}) | {s['paper_train_seconds']:g} "
            f"| {s['selection_seconds_per_fold']:.1f} | {s['test_seconds_per_fold']:.2f} "
            f"| {', '.join(f'{c:g}' for c in Cs)} | {', '.join(f'{e:g}' for e in etas)} "
            f"| {', '.join(f'{b:.2f}' for b in beta)} |"
        )
    folds = [f["fold"] for f in next(iter(summary.values()))["folds"]] if summary else []
    lines += [
        "",
        "Per fold: test accuracy % (held-out accuracy % at the chosen C)",
        "",
        "| row | " + " | ".join(f"fold {f}" for f in folds) + " |",
        "|---" * (1 + len(folds)) + "|",
    ]
    for s in summary.values():
        cells = [
            f"{100 * f['accuracy']:.2f} ({100 * f['heldout'][str(f['C'])]:.2f})" for f in s["folds"]
        ]
        lines.append(f"| {s['title']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_beta(summary: dict[str, Any], path: pathlib.Path) -> None:
    from omkl.plotting import pyplot

    plt = pyplot(headless=True)
    mkl = {k: v for k, v in summary.items() if ROWS[k].mkl}
    fig, axes = plt.subplots(1, max(1, len(mkl)), figsize=(5 * max(1, len(mkl)), 3.5))
    axes = np.atleast_1d(axes)
    for ax, (name, s) in zip(axes, mkl.items(), strict=False):
        traj = np.asarray(s["folds"][0]["beta_trajectory"])
        for k, groups in enumerate(ROWS[name].groups):
            ax.plot(np.arange(1, len(traj) + 1), traj[:, k], marker="o", label="+".join(groups))
        ax.set_title(f"{ROWS[name].title} (fold {s['folds'][0]['fold']})")
        ax.set_xlabel("epoch")
        ax.set_ylabel("beta")
        ax.set_ylim(0, 1)
        ax.legend()
    if not mkl:
        axes[0].text(0.5, 0.5, "no MKL row was run", ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------
# command line


def _int_list(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def _row_list(text: str) -> list[str]:
    rows = [t.strip() for t in text.split(",") if t.strip()]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown rows {bad}; expected some of {list(ROWS)}")
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("ocr-results"))
    parser.add_argument("--folds", type=_int_list, default=list(DEFAULT_FOLDS))
    parser.add_argument("--rows", type=_row_list, default=list(DEFAULT_ROWS))
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--full", action="store_true", help="all rows on all 10 folds")
    parser.add_argument("--jobs", type=int, default=2, help="parallel training runs")
    parser.add_argument("--data", default=None, help="letter.data(.gz); default: bundled copy")
    parser.add_argument(
        "--shared-transitions",
        action="store_true",
        help="put the transitions of MKL rows inside the squared l2,1 norm as one more "
        "group, instead of their own (lambda/2)|theta_T|^2",
    )
    add_plot_option(parser, "beta.png")


def run(args: argparse.Namespace, progress: Callable[..., Any] | None = None) -> int:
    from tqdm import tqdm

    global SEPARATE_TRANSITIONS
    if args.full:
        args.folds, args.rows = list(range(10)), list(ROWS)
    SEPARATE_TRANSITIONS = not getattr(args, "shared_transitions", False)
    if args.epochs < 1 or args.jobs < 1:
        raise ValueError("--epochs and --jobs must be >= 1")
    if any(not 0 <= f <= 9 for f in args.folds):
        raise ValueError(f"--folds must be in 0..9, got {args.folds}")
    plot = plots_wanted(args, "beta.png")
    corpus = Corpus.load(args.data)
    rows = [ROWS[r] for r in args.rows]
    bases = sorted({b for r in rows for b in kernel_bases(r)})
    results: dict[str, list[FoldResult]] = {r: [] for r in args.rows}
    bar = tqdm(total=len(args.folds) * len(rows), desc="ocr", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for fold in args.folds:
            words = np.flatnonzero(corpus.folds == fold)
            inputs = np.unique(corpus.char_input[corpus.chars_of(words)])
            fg = fold_grams(corpus, inputs, bases)
            for name in args.rows:
                bar.set_postfix(fold=fold, row=name)
                res = run_fold(corpus, fg, ROWS[name], fold, args.epochs, pool)
                results[name].append(res)
                bar.update()
            del fg
    bar.close()
    summary = summarize(results)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = table_markdown(summary, args)
    (out / "table.md").write_text(table)
    meta = {
        "folds": args.folds,
        "epochs": args.epochs,
        "c_grid": C_GRID,
        "eta_grid": ETA_GRID,
        "separate_transitions": SEPARATE_TRANSITIONS,
    }
    (out / "results.json").write_text(json.dumps({"settings": meta, "rows": summary}, indent=1))
    written = [out / "table.md", out / "results.json"]
    if plot:
        plot_beta(summary, out / "beta.png")
        written.append(out / "beta.png")
    print(table)
    print("wrote " + ", ".join(map(str, written)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omkl.experiments.ocr", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
