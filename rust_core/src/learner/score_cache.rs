//! A kernel group of Alg. 3 as a scaled expansion with a score cache.
//!
//! Group `k` holds `θ_k = s · Σ_{j,y} a[y, j] φ_k(x_j) ⊗ e_y` over the `m`
//! training inputs and `L` labels. The per-group scale `s` makes the prox
//! and projection steps O(1) per group, and the cache
//! `A[y, i] = Σ_j a[y, j] K(x_j, x_i)` (label-major, so an update is one
//! contiguous axpy) turns the score `f_k(x_i, y) = s · A[y, i]` of any
//! training input into a lookup. The squared norm is kept exactly by the
//! identity of the paper's §3.4: adding `δ` to `α[y, j]` changes `‖θ_k‖²` by
//! `2δ f_k(x_j, y) + δ² K(x_j, x_j)`.
//!
//! The averaged expansion `Σ_t α_t` is kept lazily: with `P = Σ_τ s_τ` over
//! finished rounds and `b[y, j] += δ' P` for every unscaled change `δ'`, the
//! running sum is `a P − b`. Whenever the scale leaves `[1e-4, 1e4]` (or the
//! group is zeroed) the running sum is banked (`base += a P − b`), the scale
//! folded into `a`, and `P`, `b` restart from zero; this bounds the
//! cancellation in `a P − b` (which otherwise grows like `1/s`).
//!
//! The Gram matrix is dense or, for compact-support kernels, sparse
//! ([`GramRef`]): a sparse update visits only the non-zeros of a Gram row.

use ndarray::Array2;

use super::chain_group::ChainGroup;

use crate::error::{OmklError, Result};
use crate::kernel::SparseGram;

/// A training Gram matrix, borrowed: dense row-major `m × m` f32, or CSR
/// (only non-zeros stored and visited).
#[derive(Debug, Clone, Copy)]
pub enum GramRef<'g> {
    /// Row-major `m × m`.
    Dense(&'g [f32]),
    /// Square CSR matrix.
    Sparse(&'g SparseGram),
}

/// Checks that a CSR Gram matrix is square and symmetric (`K[i, j]` stored
/// exactly when `K[j, i]` is, with the same value) and returns its diagonal.
/// The symmetry is known without a check for a matrix built from the same
/// inputs on both sides, and checked once otherwise
/// ([`SparseGram::is_symmetric`]).
///
/// # Complexity
/// O(m log(row length)), plus O(nnz + m) the first time a matrix of unknown
/// symmetry is checked.
fn sparse_diagonal(g: &SparseGram) -> Result<Vec<f64>> {
    let (r, c) = g.shape();
    if r != c {
        return Err(OmklError::shape(
            "gram",
            "a square sparse Gram matrix".to_string(),
            format!("{r} x {c}"),
        ));
    }
    if !g.is_symmetric() {
        let (i, j) = g.asymmetric_entry().unwrap_or((0, 0));
        return Err(OmklError::invalid(
            "gram",
            format!("expected a symmetric matrix, entries ({i}, {j}) and ({j}, {i}) differ"),
        ));
    }
    Ok(g.diagonal())
}

/// Scale factors outside `[TINY, 1/TINY]` are folded into the coefficients.
const TINY: f64 = 1e-4;

/// One kernel group: coefficients, scale, score cache, norm and average.
///
/// # Example
/// ```
/// use omkl_core::learner::score_cache::KernelExpansion;
/// let gram = [1.0f32, 0.5, 0.5, 1.0]; // m = 2 inputs
/// let mut g = KernelExpansion::new(&gram, 2, 1).unwrap();
/// g.add(0, 0, 2.0); // α[0, 0] = 2
/// assert_eq!(g.score(1, 0), 1.0); // 2 · K(x_0, x_1)
/// assert!((g.sq_norm() - 4.0).abs() < 1e-12);
/// g.scale_by(0.5);
/// assert_eq!(g.score(1, 0), 0.5);
/// ```
#[derive(Debug, Clone)]
pub struct KernelExpansion<'g> {
    gram: GramRef<'g>,
    diag: Vec<f64>,
    m: usize,
    l: usize,
    s: f64,
    a: Vec<f64>,
    cache: Vec<f64>,
    q: f64,
    b: Vec<f64>,
    p: f64,
    base: Vec<f64>,
}

impl<'g> KernelExpansion<'g> {
    /// A zero expansion over `m` inputs with Gram matrix `gram` (`m × m`,
    /// row-major, symmetric, finite) and `l` labels.
    ///
    /// # Complexity
    /// O(m²) to validate the Gram matrix, O(mL) memory.
    pub fn new(gram: &'g [f32], m: usize, l: usize) -> Result<Self> {
        if m == 0 {
            return Err(OmklError::empty("gram (m = 0 inputs)"));
        }
        if gram.len() != m * m {
            return Err(OmklError::shape(
                "gram",
                format!("{m} x {m} = {} elements", m * m),
                format!("{} elements", gram.len()),
            ));
        }
        if let Some(i) = gram.iter().position(|v| !v.is_finite()) {
            return Err(OmklError::NonFinite {
                name: "gram".into(),
                index: i,
                value: f64::from(gram[i]),
            });
        }
        if let Some((i, j)) = asymmetric_entry(gram, m) {
            return Err(OmklError::invalid(
                "gram",
                format!("expected a symmetric matrix, entries ({i}, {j}) and ({j}, {i}) differ"),
            ));
        }
        let diag = (0..m).map(|j| f64::from(gram[j * m + j])).collect();
        Ok(Self::zeros(GramRef::Dense(gram), diag, m, l))
    }

    /// A zero expansion over a sparse (CSR) Gram matrix, square and
    /// symmetric with finite values, and `l` labels.
    ///
    /// # Complexity
    /// O(nnz log(max row length)) to validate; updates then cost O(nnz of
    /// the Gram row) instead of O(m).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::SparseGram;
    /// use omkl_core::learner::score_cache::KernelExpansion;
    /// let g = SparseGram::from_csr(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap();
    /// let mut e = KernelExpansion::new_sparse(&g, 1).unwrap();
    /// e.add(0, 0, 2.0);
    /// assert_eq!((e.score(0, 0), e.score(1, 0)), (2.0, 0.0));
    /// ```
    pub fn new_sparse(gram: &'g SparseGram, l: usize) -> Result<Self> {
        let m = gram.shape().0;
        if m == 0 {
            return Err(OmklError::empty("gram (m = 0 inputs)"));
        }
        let diag = sparse_diagonal(gram)?;
        Ok(Self::zeros(GramRef::Sparse(gram), diag, m, l))
    }

    fn zeros(gram: GramRef<'g>, diag: Vec<f64>, m: usize, l: usize) -> Self {
        KernelExpansion {
            gram,
            diag,
            m,
            l,
            s: 1.0,
            a: vec![0.0; m * l],
            cache: vec![0.0; m * l],
            q: 0.0,
            b: vec![0.0; m * l],
            p: 0.0,
            base: vec![0.0; m * l],
        }
    }

    /// `f_k(x_i, y)`, the group's score of label `y` at training input `i`.
    #[inline]
    pub fn score(&self, i: usize, y: usize) -> f64 {
        self.s * self.cache[y * self.m + i]
    }

    /// Adds `delta` to the (scaled) coefficient `α[y, j]`, updating the
    /// score cache, the squared norm and the running average.
    ///
    /// # Complexity
    /// O(m): one axpy of a Gram row into the cache (O(row non-zeros) for a
    /// sparse Gram matrix).
    pub fn add(&mut self, j: usize, y: usize, delta: f64) {
        let m = self.m;
        let d = delta / self.s;
        let idx = y * m + j;
        self.q += 2.0 * d * self.cache[idx] + d * d * self.diag[j];
        self.a[idx] += d;
        self.b[idx] += d * self.p;
        let cache = &mut self.cache[y * m..(y + 1) * m];
        match self.gram {
            GramRef::Dense(g) => {
                for (c, &k) in cache.iter_mut().zip(&g[j * m..(j + 1) * m]) {
                    *c += d * f64::from(k);
                }
            }
            GramRef::Sparse(g) => {
                let (cols, vals) = g.row(j);
                for (&i, &k) in cols.iter().zip(vals) {
                    cache[i as usize] += d * f64::from(k);
                }
            }
        }
    }

    /// The update of a wrongly labelled position: `add(j, gold, delta)`
    /// then `add(j, pred, -delta)`, with one pass over the Gram row for
    /// both labels' caches. The result is exactly that of the two calls
    /// (the two labels' cache rows are disjoint, so every operation and its
    /// order per value are the same).
    ///
    /// # Complexity
    /// O(m) (O(row non-zeros) for a sparse Gram matrix), reading the Gram
    /// row once instead of twice.
    ///
    /// # Example
    /// ```
    /// use omkl_core::learner::score_cache::KernelExpansion;
    /// let gram = [1.0f32, 0.5, 0.5, 1.0];
    /// let mut g = KernelExpansion::new(&gram, 2, 2).unwrap();
    /// g.add_pair(0, 1, 0, 2.0); // α[1, 0] += 2, α[0, 0] -= 2
    /// assert_eq!((g.score(1, 1), g.score(1, 0)), (1.0, -1.0));
    /// ```
    pub fn add_pair(&mut self, j: usize, gold: usize, pred: usize, delta: f64) {
        let m = self.m;
        if gold == pred || gold >= self.l || pred >= self.l || j >= m {
            self.add(j, gold, delta);
            self.add(j, pred, -delta);
            return;
        }
        let d = delta / self.s;
        let e = -delta / self.s;
        for (y, c) in [(gold, d), (pred, e)] {
            let idx = y * m + j;
            self.q += 2.0 * c * self.cache[idx] + c * c * self.diag[j];
            self.a[idx] += c;
            self.b[idx] += c * self.p;
        }
        let (cg, cp) = two_rows(&mut self.cache, m, gold, pred);
        match self.gram {
            GramRef::Dense(g) => {
                for ((x, z), &k) in cg.iter_mut().zip(cp.iter_mut()).zip(&g[j * m..(j + 1) * m]) {
                    let k = f64::from(k);
                    *x += d * k;
                    *z += e * k;
                }
            }
            GramRef::Sparse(g) => {
                let (cols, vals) = g.row(j);
                for (&i, &k) in cols.iter().zip(vals) {
                    let (i, k) = (i as usize, f64::from(k));
                    cg[i] += d * k;
                    cp[i] += e * k;
                }
            }
        }
    }

    /// `‖θ_k‖²` as maintained incrementally.
    pub fn sq_norm(&self) -> f64 {
        self.s * self.s * self.q.max(0.0)
    }

    /// `‖θ_k‖`.
    pub fn norm(&self) -> f64 {
        self.sq_norm().sqrt()
    }

    /// `Σ_y α_yᵀ K α_y` recomputed from the coefficients (a check of
    /// [`KernelExpansion::sq_norm`]).
    ///
    /// # Complexity
    /// O(L m²).
    pub fn sq_norm_from_scratch(&self) -> f64 {
        self.s * self.s * self.sq_norm_of_coef(&self.a)
    }

    fn sq_norm_of_coef(&self, alpha: &[f64]) -> f64 {
        match self.gram {
            GramRef::Dense(g) => expansion_sq_norm(g, alpha, self.m),
            GramRef::Sparse(g) => sparse_expansion_sq_norm(g, alpha, self.m),
        }
    }

    /// Multiplies `θ_k` by `c ≥ 0` in O(1) (O(mL) when the group is zeroed
    /// or the scale leaves the safe range).
    pub fn scale_by(&mut self, c: f64) {
        if c == 0.0 {
            self.bank();
            self.a.fill(0.0);
            self.cache.fill(0.0);
            self.q = 0.0;
            self.s = 1.0;
            return;
        }
        self.s *= c;
        if !(TINY..=1.0 / TINY).contains(&self.s) {
            self.fold_scale();
        }
    }

    /// Moves the running sum into `base` and restarts `P` and `b` at zero.
    fn bank(&mut self) {
        let p = self.p;
        for ((base, b), a) in self.base.iter_mut().zip(self.b.iter_mut()).zip(&self.a) {
            *base += a * p - *b;
            *b = 0.0;
        }
        self.p = 0.0;
    }

    /// Banks the running sum and moves the scale into the coefficients:
    /// `a ← s·a`, `A ← s·A`, `q ← s²q`, `s ← 1`.
    fn fold_scale(&mut self) {
        self.bank();
        let s = self.s;
        for v in self.a.iter_mut().chain(self.cache.iter_mut()) {
            *v *= s;
        }
        self.q *= s * s;
        self.s = 1.0;
    }

    /// Ends an online round: the current `α` enters the running sum.
    #[inline]
    pub fn end_round(&mut self) {
        self.p += self.s;
    }

    /// The current coefficients `α = s·a`, label-major `L × m`.
    pub fn coefficients(&self) -> Vec<f64> {
        self.a.iter().map(|v| v * self.s).collect()
    }

    /// The sum of `α` over all finished rounds, `base + a P − b`,
    /// label-major.
    pub fn coefficient_sum(&self) -> Vec<f64> {
        self.a
            .iter()
            .zip(&self.b)
            .zip(&self.base)
            .map(|((a, b), base)| base + a * self.p - b)
            .collect()
    }

    /// Number of inputs `m`.
    pub fn n_inputs(&self) -> usize {
        self.m
    }

    /// Number of labels `L`.
    pub fn n_labels(&self) -> usize {
        self.l
    }
}

impl ChainGroup for KernelExpansion<'_> {
    fn add_scores(&self, i: usize, row: &mut [f64]) {
        for (y, r) in row.iter_mut().enumerate().take(self.l) {
            *r += self.score(i, y);
        }
    }

    fn add(&mut self, j: usize, y: usize, delta: f64) {
        KernelExpansion::add(self, j, y, delta);
    }

    fn add_pair(&mut self, j: usize, gold: usize, pred: usize, delta: f64) {
        KernelExpansion::add_pair(self, j, gold, pred, delta);
    }

    fn sq_norm(&self) -> f64 {
        KernelExpansion::sq_norm(self)
    }

    fn scale_by(&mut self, c: f64) {
        KernelExpansion::scale_by(self, c);
    }

    fn end_round(&mut self) {
        KernelExpansion::end_round(self);
    }

    fn coefficients(&self) -> Vec<f64> {
        KernelExpansion::coefficients(self)
    }

    fn coefficient_sum(&self) -> Vec<f64> {
        KernelExpansion::coefficient_sum(self)
    }

    fn sq_norm_of(&self, coef: &[f64]) -> f64 {
        self.sq_norm_of_coef(coef)
    }
}

/// Rows `a` and `b` (`a != b`) of a row-major matrix with rows of length
/// `m`, both mutable.
fn two_rows(v: &mut [f64], m: usize, a: usize, b: usize) -> (&mut [f64], &mut [f64]) {
    if a < b {
        let (lo, hi) = v.split_at_mut(b * m);
        (&mut lo[a * m..(a + 1) * m], &mut hi[..m])
    } else {
        let (lo, hi) = v.split_at_mut(a * m);
        (&mut hi[..m], &mut lo[b * m..(b + 1) * m])
    }
}

/// The first `(i, j)` with `K[i, j] != K[j, i]`, scanning 64 × 64 tiles so
/// that both reads stay in cache.
fn asymmetric_entry(gram: &[f32], m: usize) -> Option<(usize, usize)> {
    const T: usize = 64;
    for bi in (0..m).step_by(T) {
        for bj in (0..=bi).step_by(T) {
            for i in bi..(bi + T).min(m) {
                for j in bj..(bj + T).min(i) {
                    if gram[i * m + j] != gram[j * m + i] {
                        return Some((i, j));
                    }
                }
            }
        }
    }
    None
}

/// `Σ_y α_yᵀ K α_y` for label-major coefficients `alpha` (`L × m`) and a
/// row-major `m × m` Gram matrix: the squared norm of a kernel expansion.
/// Computed as one GEMM `K[S, S] · α[·, S]ᵀ` over the support `S` (inputs
/// with a nonzero coefficient for some label).
///
/// # Complexity
/// O(|S|² L) flops, O(|S|²) memory.
///
/// # Example
/// ```
/// use omkl_core::learner::score_cache::expansion_sq_norm;
/// let gram = [2.0f32, 1.0, 1.0, 2.0];
/// assert_eq!(expansion_sq_norm(&gram, &[1.0, -1.0], 2), 2.0);
/// ```
pub fn expansion_sq_norm(gram: &[f32], alpha: &[f64], m: usize) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let l = alpha.len() / m;
    let support: Vec<usize> = (0..m)
        .filter(|&j| (0..l).any(|y| alpha[y * m + j] != 0.0))
        .collect();
    let s = support.len();
    let ks = Array2::from_shape_fn((s, s), |(a, b)| {
        f64::from(gram[support[a] * m + support[b]])
    });
    let a = Array2::from_shape_fn((s, l), |(j, y)| alpha[y * m + support[j]]);
    let ka = ks.dot(&a);
    (&ka * &a).sum()
}

/// `Σ_y α_yᵀ K α_y` for a sparse Gram matrix (see [`expansion_sq_norm`]).
///
/// `α` is first copied input-major, so that row `i` of the Gram matrix is
/// applied to all labels at once (`acc += K[i, j] α[j, :]`, contiguous and
/// vectorised) instead of once per label with a gather per non-zero. Every
/// label's sum `Σ_j K[i, j] α[y, j]` still adds the same products in the
/// same (column) order, and `total` the same terms in the same order, so
/// the result is that of the plain loop (see the test), bit for bit.
///
/// # Complexity
/// O(nnz · L) over the rows of inputs with a non-zero coefficient, plus
/// O(mL) for the copy.
pub fn sparse_expansion_sq_norm(gram: &SparseGram, alpha: &[f64], m: usize) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let l = alpha.len() / m;
    let mut at = vec![0.0; m * l];
    for (y, row) in alpha.chunks_exact(m).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            at[j * l + y] = v;
        }
    }
    let mut acc = vec![0.0; l];
    let mut total = 0.0;
    for (i, ai) in at.chunks_exact(l).enumerate() {
        if ai.iter().all(|&v| v == 0.0) {
            continue;
        }
        // -0.0: the start of `Iterator::sum` for f64
        acc.fill(-0.0);
        let (cols, vals) = gram.row(i);
        for (&j, &k) in cols.iter().zip(vals) {
            let k = f64::from(k);
            let aj = &at[j as usize * l..(j as usize + 1) * l];
            for (a, &v) in acc.iter_mut().zip(aj) {
                *a += k * v;
            }
        }
        for (&a, &ka) in ai.iter().zip(&acc) {
            if a != 0.0 {
                total += a * ka;
            }
        }
    }
    total
}

/// The plain loop [`sparse_expansion_sq_norm`] reorganises (tests only).
#[cfg(test)]
fn sparse_expansion_sq_norm_plain(gram: &SparseGram, alpha: &[f64], m: usize) -> f64 {
    let l = alpha.len() / m;
    let mut total = 0.0;
    for i in 0..m {
        let (cols, vals) = gram.row(i);
        for y in 0..l {
            let ai = alpha[y * m + i];
            if ai != 0.0 {
                let row = &alpha[y * m..(y + 1) * m];
                let ka: f64 = cols
                    .iter()
                    .zip(vals)
                    .map(|(&j, &k)| f64::from(k) * row[j as usize])
                    .sum();
                total += ai * ka;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSR matrix of the non-zeros of the dense `m × m` matrix `k`.
    fn csr_of(k: &[f32], m: usize) -> SparseGram {
        let mut indptr = vec![0];
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        for row in k.chunks_exact(m) {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    idx.push(j as u32);
                    val.push(v);
                }
            }
            indptr.push(idx.len());
        }
        SparseGram::from_csr(m, m, indptr, idx, val).unwrap()
    }

    fn gram() -> Vec<f32> {
        // Gram of points 1, 2, -1 under k(x, x') = x x' + 1
        let x = [1.0f32, 2.0, -1.0];
        let mut g = vec![0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                g[i * 3 + j] = x[i] * x[j] + 1.0;
            }
        }
        g
    }

    #[test]
    fn norm_identity_and_average_survive_scaling() {
        let g = gram();
        let mut e = KernelExpansion::new(&g, 3, 2).unwrap();
        let mut sum = [0.0; 6];
        let steps = [(0, 1, 0.5), (2, 0, -1.0), (1, 1, 0.25), (0, 1, -0.3)];
        for (t, &(j, y, d)) in steps.iter().enumerate() {
            e.add(j, y, d);
            e.scale_by([0.7, 1e-5, 0.0, 0.7][t]);
            e.end_round();
            for (s, c) in sum.iter_mut().zip(e.coefficients()) {
                *s += c;
            }
            let (a, b) = (e.sq_norm(), e.sq_norm_from_scratch());
            assert!((a - b).abs() <= 1e-12 * b.max(1.0), "{a} vs {b}");
        }
        for (a, b) in sum.iter().zip(e.coefficient_sum()) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // the cache equals K α
        let alpha = e.coefficients();
        for y in 0..2 {
            for i in 0..3 {
                let f: f64 = (0..3)
                    .map(|j| alpha[y * 3 + j] * f64::from(g[j * 3 + i]))
                    .sum();
                assert!((e.score(i, y) - f).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn tiny_scales_are_folded() {
        let g = gram();
        let mut e = KernelExpansion::new(&g, 3, 1).unwrap();
        e.add(1, 0, 1.0);
        for _ in 0..15 {
            e.scale_by(1e-10);
            e.end_round();
        }
        assert!(e.s >= TINY);
        let (a, b) = (e.sq_norm(), e.sq_norm_from_scratch());
        assert!((a - b).abs() <= 1e-12 * b);
    }

    #[test]
    fn sparse_gram_gives_the_dense_expansion() {
        // a Gram matrix with zeros, dense and CSR
        let dense = [1.0f32, 0.5, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0, 2.0];
        let sp = SparseGram::from_csr(
            3,
            3,
            vec![0, 2, 4, 5],
            vec![0, 1, 0, 1, 2],
            vec![1.0, 0.5, 0.5, 1.0, 2.0],
        )
        .unwrap();
        let mut a = KernelExpansion::new(&dense, 3, 2).unwrap();
        let mut b = KernelExpansion::new_sparse(&sp, 2).unwrap();
        for &(j, y, d, c) in &[(0, 1, 0.5, 0.7), (2, 0, -1.0, 1e-5), (1, 1, 0.25, 1.0)] {
            a.add(j, y, d);
            b.add(j, y, d);
            a.scale_by(c);
            b.scale_by(c);
            a.end_round();
            b.end_round();
        }
        assert_eq!(a.coefficients(), b.coefficients());
        assert_eq!(a.coefficient_sum(), b.coefficient_sum());
        for i in 0..3 {
            for y in 0..2 {
                assert_eq!(a.score(i, y), b.score(i, y));
            }
        }
        assert_eq!(a.sq_norm(), b.sq_norm());
        let (x, z) = (a.sq_norm_from_scratch(), b.sq_norm_from_scratch());
        assert!((x - z).abs() <= 1e-12 * x.max(1.0));
        // an asymmetric or non-square CSR matrix is rejected
        let asym =
            SparseGram::from_csr(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![1.0, 0.5, 1.0]).unwrap();
        assert!(KernelExpansion::new_sparse(&asym, 1).is_err());
        let rect = SparseGram::from_csr(1, 2, vec![0, 1], vec![0], vec![1.0]).unwrap();
        assert!(KernelExpansion::new_sparse(&rect, 1).is_err());
    }

    /// The one-pass symmetry check agrees with the dense definition on
    /// random sparse matrices, symmetric and slightly perturbed.
    #[test]
    fn sparse_symmetry_check_matches_brute_force() {
        let mut state = 7u64;
        let mut rand = move |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        for case in 0..400 {
            let m = 1 + rand(7) as usize;
            let mut k = vec![0.0f32; m * m];
            for i in 0..m {
                for j in 0..=i {
                    if rand(3) > 0 {
                        let v = 1.0 + rand(4) as f32;
                        k[i * m + j] = v;
                        k[j * m + i] = v;
                    }
                }
            }
            if case % 2 == 1 {
                // perturb one entry: drop, add or change it on one side only
                let (i, j) = (rand(m as u64) as usize, rand(m as u64) as usize);
                k[i * m + j] = [0.0, 9.0, k[i * m + j] + 1.0][rand(3) as usize];
            }
            let g = csr_of(&k, m);
            let symmetric = (0..m).all(|i| (0..m).all(|j| k[i * m + j] == k[j * m + i]));
            let got = sparse_diagonal(&g);
            assert_eq!(got.is_ok(), symmetric, "case {case}: {k:?}");
            if let Ok(d) = got {
                let want: Vec<f64> = (0..m).map(|i| f64::from(k[i * m + i])).collect();
                assert_eq!(d, want);
            }
        }
    }

    /// `add_pair` leaves exactly the state of `add(gold)` then
    /// `add(pred, -delta)`: scores, norm, coefficients and running sums, for
    /// dense and sparse Gram matrices, with labels in either order.
    #[test]
    fn add_pair_equals_two_adds_exactly() {
        let (m, l) = (5, 4);
        let x = [0.3f32, -1.0, 2.0, 0.0, 1.5];
        let mut k = vec![0.0f32; m * m];
        for i in 0..m {
            for j in 0..m {
                // compact support: zero for far-apart inputs
                k[i * m + j] = (1.0 - (x[i] - x[j]).abs() / 2.0).max(0.0);
            }
        }
        let sp = csr_of(&k, m);
        let steps = [
            (0, 1, 3, 0.5),
            (4, 3, 1, 0.7),
            (2, 0, 2, -1.3),
            (2, 2, 2, 0.4),
        ];
        for sparse in [false, true] {
            let new = || {
                if sparse {
                    KernelExpansion::new_sparse(&sp, l).unwrap()
                } else {
                    KernelExpansion::new(&k, m, l).unwrap()
                }
            };
            let (mut fused, mut two) = (new(), new());
            for (t, &(j, yg, yp, d)) in steps.iter().enumerate() {
                fused.add_pair(j, yg, yp, d);
                two.add(j, yg, d);
                two.add(j, yp, -d);
                for e in [&mut fused, &mut two] {
                    e.scale_by([0.9, 1e-5, 1.0, 0.6][t]);
                    e.end_round();
                }
                assert_eq!(fused.sq_norm().to_bits(), two.sq_norm().to_bits());
                for i in 0..m {
                    for y in 0..l {
                        assert_eq!(fused.score(i, y).to_bits(), two.score(i, y).to_bits());
                    }
                }
                assert_eq!(fused.coefficients(), two.coefficients());
                assert_eq!(fused.coefficient_sum(), two.coefficient_sum());
            }
        }
    }

    #[test]
    fn rejects_bad_grams() {
        assert!(KernelExpansion::new(&[1.0, 0.5, 0.4, 1.0], 2, 1).is_err());
        assert!(KernelExpansion::new(&[1.0, f32::NAN, f32::NAN, 1.0], 2, 1).is_err());
        assert!(KernelExpansion::new(&[1.0; 3], 2, 1).is_err());
        assert!(KernelExpansion::new(&[], 0, 1).is_err());
    }

    /// The input-major norm equals the plain per-label loop bit for bit
    /// (zero and non-zero coefficients, empty rows, several label counts),
    /// and the dense quadratic form up to rounding.
    #[test]
    fn sparse_norm_equals_plain_loop_bit_for_bit() {
        let m = 23;
        let mut k = vec![0.0f32; m * m];
        for i in 0..m {
            for j in 0..=i {
                let h = (i * 31 + j * 17) % 7;
                if i == j || h < 3 {
                    let v = 0.1 + 0.13 * ((i + j) % 5) as f32 + if i == j { 1.0 } else { 0.0 };
                    k[i * m + j] = v;
                    k[j * m + i] = v;
                }
            }
        }
        let g = csr_of(&k, m);
        for l in [1usize, 3, 8, 26] {
            let alpha: Vec<f64> = (0..l * m)
                .map(|t| {
                    if (t * 7) % 5 == 0 {
                        0.0
                    } else {
                        ((t * 37 % 101) as f64 - 50.0) * 0.0137
                    }
                })
                .collect();
            let fast = sparse_expansion_sq_norm(&g, &alpha, m);
            let plain = sparse_expansion_sq_norm_plain(&g, &alpha, m);
            assert_eq!(fast.to_bits(), plain.to_bits(), "L = {l}");
            let dense = expansion_sq_norm(&k, &alpha, m);
            assert!(
                (fast - dense).abs() <= 1e-9 * dense.abs().max(1.0),
                "L = {l}"
            );
        }
        assert_eq!(sparse_expansion_sq_norm(&g, &vec![0.0; 2 * m], m), 0.0);
    }
}
