//! Precomputed inputs of Alg. 3: kernel groups whose Gram rows come from a
//! precomputed dense or sparse (CSR) Gram matrix over a fixed set of `m`
//! inputs, and explicit groups whose features are the rows of a fixed
//! feature matrix. A position is then the id (`0..m`) of its input.
//!
//! Both are shared read-only (`Arc`) between any number of learners, so
//! that many trainings over one fold's Gram matrices run side by side
//! without copies.

use std::fmt;
use std::sync::Arc;

use ndarray::Array2;

use crate::error::{OmklError, Result};
use crate::kernel::SparseGram;

/// Read-only row-major `m × m` f32 storage (a `Vec`, or memory owned by the
/// caller, e.g. a NumPy array kept alive by the binding).
pub trait GramStorage: Send + Sync {
    /// The `m²` values, row-major.
    fn values(&self) -> &[f32];
}

impl GramStorage for Vec<f32> {
    fn values(&self) -> &[f32] {
        self
    }
}

/// A symmetric Gram matrix over inputs `0..m`, validated once.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use omkl_core::learner::stream_mkl::PrecomputedGram;
/// let g = PrecomputedGram::dense(Arc::new(vec![2.0f32, 1.0, 1.0, 2.0]), 2).unwrap();
/// assert_eq!((g.n_inputs(), g.entry(0, 1), g.diag(1)), (2, 1.0, 2.0));
/// assert!(PrecomputedGram::dense(Arc::new(vec![2.0f32, 1.0, 0.0, 2.0]), 2).is_err());
/// ```
#[derive(Clone)]
pub enum PrecomputedGram {
    /// Dense row-major values.
    Dense {
        data: Arc<dyn GramStorage>,
        m: usize,
        diag: Arc<Vec<f64>>,
    },
    /// CSR values (only non-zeros stored and visited).
    Sparse {
        gram: Arc<SparseGram>,
        diag: Arc<Vec<f64>>,
    },
}

impl fmt::Debug for PrecomputedGram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            PrecomputedGram::Dense { .. } => "dense",
            PrecomputedGram::Sparse { .. } => "sparse",
        };
        write!(f, "PrecomputedGram({kind}, m = {})", self.n_inputs())
    }
}

impl PrecomputedGram {
    /// A dense Gram matrix: `m × m` row-major values, finite and symmetric.
    ///
    /// # Complexity
    /// O(m²) to validate (once).
    pub fn dense(data: Arc<dyn GramStorage>, m: usize) -> Result<Self> {
        let v = data.values();
        if m == 0 {
            return Err(OmklError::empty("gram (m = 0 inputs)"));
        }
        check_matrix_len("gram", v.len(), m, m)?;
        // One pass checks both; only a matrix that fails it is scanned
        // again, in order, for the error naming its first bad entry.
        if !finite_and_symmetric(v, m) {
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return Err(OmklError::NonFinite {
                    name: "gram".into(),
                    index: i,
                    value: f64::from(v[i]),
                });
            }
            let (i, j) = asymmetric_entry(v, m).unwrap_or((0, 0));
            return Err(OmklError::invalid(
                "gram",
                format!("expected a symmetric matrix, entries ({i}, {j}) and ({j}, {i}) differ"),
            ));
        }
        let diag = (0..m).map(|j| f64::from(v[j * m + j])).collect();
        Ok(PrecomputedGram::Dense {
            data,
            m,
            diag: Arc::new(diag),
        })
    }

    /// A sparse Gram matrix: square and symmetric (`K[i, j]` stored exactly
    /// when `K[j, i]` is, with the same value).
    ///
    /// # Complexity
    /// O(nnz) the first time the symmetry of a matrix is checked.
    pub fn sparse(gram: Arc<SparseGram>) -> Result<Self> {
        let (r, c) = gram.shape();
        if r != c {
            return Err(OmklError::shape(
                "gram",
                "a square sparse Gram matrix",
                format!("{r} x {c}"),
            ));
        }
        if r == 0 {
            return Err(OmklError::empty("gram (m = 0 inputs)"));
        }
        if !gram.is_symmetric() {
            let (i, j) = gram.asymmetric_entry().unwrap_or((0, 0));
            return Err(OmklError::invalid(
                "gram",
                format!("expected a symmetric matrix, entries ({i}, {j}) and ({j}, {i}) differ"),
            ));
        }
        let diag = Arc::new(gram.diagonal());
        Ok(PrecomputedGram::Sparse { gram, diag })
    }

    /// Number of inputs `m`.
    pub fn n_inputs(&self) -> usize {
        match self {
            PrecomputedGram::Dense { m, .. } => *m,
            PrecomputedGram::Sparse { gram, .. } => gram.shape().0,
        }
    }

    /// `K[j, j]`.
    #[inline]
    pub fn diag(&self, j: usize) -> f64 {
        match self {
            PrecomputedGram::Dense { diag, .. } | PrecomputedGram::Sparse { diag, .. } => diag[j],
        }
    }

    /// `K[i, j]`.
    ///
    /// # Complexity
    /// O(1) dense, O(log(row length)) sparse.
    pub fn entry(&self, i: usize, j: usize) -> f64 {
        match self {
            PrecomputedGram::Dense { data, m, .. } => f64::from(data.values()[i * m + j]),
            PrecomputedGram::Sparse { gram, .. } => {
                let (cols, vals) = gram.row(i);
                cols.binary_search(&(j as u32))
                    .map_or(0.0, |p| f64::from(vals[p]))
            }
        }
    }

    /// `out[i] += d · K[j, i]` for every input `i` (`out.len() == m`).
    ///
    /// # Complexity
    /// O(m) dense, O(row non-zeros) sparse.
    #[inline]
    pub fn axpy(&self, j: usize, d: f64, out: &mut [f64]) {
        match self {
            PrecomputedGram::Dense { data, m, .. } => {
                let row = &data.values()[j * m..(j + 1) * m];
                for (c, &k) in out.iter_mut().zip(row) {
                    *c += d * f64::from(k);
                }
            }
            PrecomputedGram::Sparse { gram, .. } => {
                let (cols, vals) = gram.row(j);
                for (&i, &k) in cols.iter().zip(vals) {
                    out[i as usize] += d * f64::from(k);
                }
            }
        }
    }

    /// [`PrecomputedGram::axpy`] of one Gram row into two outputs at once
    /// (the two labels of a wrongly labelled position), reading the row
    /// once; the same operations per value as two calls.
    #[inline]
    pub fn axpy2(&self, j: usize, d1: f64, out1: &mut [f64], d2: f64, out2: &mut [f64]) {
        match self {
            PrecomputedGram::Dense { data, m, .. } => {
                let row = &data.values()[j * m..(j + 1) * m];
                for ((a, b), &k) in out1.iter_mut().zip(out2.iter_mut()).zip(row) {
                    let k = f64::from(k);
                    *a += d1 * k;
                    *b += d2 * k;
                }
            }
            PrecomputedGram::Sparse { gram, .. } => {
                let (cols, vals) = gram.row(j);
                for (&i, &k) in cols.iter().zip(vals) {
                    let (i, k) = (i as usize, f64::from(k));
                    out1[i] += d1 * k;
                    out2[i] += d2 * k;
                }
            }
        }
    }

    /// `Σ_y α_yᵀ K α_y` for label-major coefficients `alpha` (`L × m`).
    ///
    /// # Complexity
    /// Dense: O(|S|² L) over the inputs `S` with a non-zero coefficient;
    /// sparse: O(nnz L).
    pub fn expansion_sq_norm(&self, alpha: &[f64]) -> f64 {
        match self {
            PrecomputedGram::Dense { data, m, .. } => {
                dense_expansion_sq_norm(data.values(), alpha, *m)
            }
            PrecomputedGram::Sparse { gram, .. } => {
                sparse_expansion_sq_norm(gram, alpha, gram.shape().0)
            }
        }
    }
}

/// `true` when every value of the row-major `m × m` matrix `gram` is
/// finite and `K[i, j] == K[j, i]` for every pair, in one read of the
/// matrix: each 4 × 4 block on or below the diagonal is compared with its
/// mirror block, transposed in registers, without a branch; rows of blocks
/// are checked in parallel. Only the lower blocks' own values are checked
/// for finiteness: a mirror value equal to a finite one is finite. The
/// last `m mod 4` rows are checked entry by entry.
///
/// # Complexity
/// O(m²).
fn finite_and_symmetric(gram: &[f32], m: usize) -> bool {
    use rayon::prelude::*;
    const B: usize = 4;
    let bad = |a: f32, b: f32| (a.to_bits() & 0x7f80_0000 == 0x7f80_0000) | (a != b);
    let full = m / B * B;
    let row_of_blocks = |bi: usize| {
        let mut any = false;
        for bj in (0..=bi).step_by(B) {
            // t[i][j] = K[bj + j, bi + i]
            let mut t = [[0.0f32; B]; B];
            for j in 0..B {
                let r = &gram[(bj + j) * m + bi..][..B];
                for i in 0..B {
                    t[i][j] = r[i];
                }
            }
            for (i, ti) in t.iter().enumerate() {
                let r = &gram[(bi + i) * m + bj..][..B];
                for (&a, &b) in r.iter().zip(ti) {
                    any |= bad(a, b);
                }
            }
        }
        !any
    };
    (full..m).all(|i| (0..=i).all(|j| !bad(gram[i * m + j], gram[j * m + i])))
        && (0..full / B).into_par_iter().all(|k| row_of_blocks(k * B))
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

/// `Σ_y α_yᵀ K α_y` for label-major `alpha` (`L × m`) and a dense
/// row-major Gram matrix, as one GEMM over the support.
fn dense_expansion_sq_norm(gram: &[f32], alpha: &[f64], m: usize) -> f64 {
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

/// `Σ_y α_yᵀ K α_y` for a sparse Gram matrix: each Gram row is applied to
/// all labels at once through an input-major copy of `α`.
fn sparse_expansion_sq_norm(gram: &SparseGram, alpha: &[f64], m: usize) -> f64 {
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
        acc.fill(0.0);
        let (cols, vals) = gram.row(i);
        for (&j, &k) in cols.iter().zip(vals) {
            let k = f64::from(k);
            let aj = &at[j as usize * l..(j as usize + 1) * l];
            for (a, &v) in acc.iter_mut().zip(aj) {
                *a += k * v;
            }
        }
        total += ai.iter().zip(&acc).map(|(a, k)| a * k).sum::<f64>();
    }
    total
}

/// A fixed feature matrix (`m` rows of dimension `d`), kept sparse: the
/// features of an explicit group given per input id.
///
/// # Example
/// ```
/// use omkl_core::learner::stream_mkl::FeatureRows;
/// let f = FeatureRows::new(&[1.0, 0.0, 0.0, 2.0], 2, 2).unwrap();
/// assert_eq!(f.row(1), (&[1u32][..], &[2.0][..]));
/// assert_eq!(f.dot(0, 1), 0.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureRows {
    idx: Vec<u32>,
    val: Vec<f64>,
    ptr: Vec<usize>,
    sq: Vec<f64>,
    norm: Vec<f64>,
    d: usize,
}

impl FeatureRows {
    /// The rows of the row-major `m × d` matrix `x` (finite values).
    ///
    /// # Complexity
    /// O(m d).
    pub fn new(x: &[f32], m: usize, d: usize) -> Result<Self> {
        if d == 0 || m == 0 {
            return Err(OmklError::empty("features (m = 0 rows or d = 0 columns)"));
        }
        check_matrix_len("features", x.len(), m, d)?;
        // One counting pass (non-zeros, and whether any value is not
        // finite), then a copy of the non-zeros without a branch on the
        // values: each value is written at the end and kept when non-zero.
        let (nnz, finite) = x.iter().fold((0usize, true), |(n, ok), &v| {
            (n + usize::from(v != 0.0), ok & v.is_finite())
        });
        if !finite {
            let i = x.iter().position(|v| !v.is_finite()).unwrap_or(0);
            return Err(OmklError::NonFinite {
                name: "features".into(),
                index: i,
                value: f64::from(x[i]),
            });
        }
        let (mut idx, mut val) = (vec![0u32; nnz + 1], vec![0.0f64; nnz + 1]);
        let mut ptr = Vec::with_capacity(m + 1);
        ptr.push(0);
        let mut k = 0;
        for row in x.chunks_exact(d) {
            for (f, &v) in row.iter().enumerate() {
                // `k <= nnz`: at most `nnz` values are kept before this one
                idx[k] = f as u32;
                val[k] = f64::from(v);
                k += usize::from(v != 0.0);
            }
            ptr.push(k);
        }
        idx.truncate(nnz);
        val.truncate(nnz);
        let sq: Vec<f64> = ptr
            .windows(2)
            .map(|w| val[w[0]..w[1]].iter().map(|v| v * v).sum())
            .collect();
        let norm = sq.iter().map(|v| v.sqrt()).collect();
        Ok(FeatureRows {
            idx,
            val,
            ptr,
            sq,
            norm,
            d,
        })
    }

    /// `‖x_j‖²`.
    #[inline]
    pub fn sq_norm(&self, j: usize) -> f64 {
        self.sq[j]
    }

    /// `‖x_j‖` (the square root of [`FeatureRows::sq_norm`]).
    #[inline]
    pub fn norm(&self, j: usize) -> f64 {
        self.norm[j]
    }

    /// Number of rows `m`.
    pub fn n_rows(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Dimension `d`.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// The non-zero features `(indices, values)` of row `j`.
    #[inline]
    pub fn row(&self, j: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.ptr[j], self.ptr[j + 1]);
        (&self.idx[a..b], &self.val[a..b])
    }

    /// `⟨x_i, x_j⟩` (a merge of the two sorted rows).
    ///
    /// # Complexity
    /// O(nnz_i + nnz_j).
    pub fn dot(&self, i: usize, j: usize) -> f64 {
        let ((ia, va), (ib, vb)) = (self.row(i), self.row(j));
        let (mut p, mut q, mut s) = (0, 0, 0.0);
        while p < ia.len() && q < ib.len() {
            match ia[p].cmp(&ib[q]) {
                std::cmp::Ordering::Less => p += 1,
                std::cmp::Ordering::Greater => q += 1,
                std::cmp::Ordering::Equal => {
                    s += va[p] * vb[q];
                    p += 1;
                    q += 1;
                }
            }
        }
        s
    }
}

/// Checks that `name`, of `len` values, holds a row-major `rows × cols`
/// matrix.
fn check_matrix_len(name: &str, len: usize, rows: usize, cols: usize) -> Result<()> {
    if Some(len) != rows.checked_mul(cols) {
        return Err(OmklError::shape(
            name,
            format!("{rows} x {cols} values"),
            format!("{len} values"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn dense_and_sparse_agree() {
        let m = 9;
        let mut k = vec![0.0f32; m * m];
        for i in 0..m {
            for j in 0..=i {
                if i == j || (i * 7 + j * 3) % 4 == 0 {
                    let v = 0.25 + ((i + 2 * j) % 5) as f32 * 0.5;
                    k[i * m + j] = v;
                    k[j * m + i] = v;
                }
            }
        }
        let dense = PrecomputedGram::dense(Arc::new(k.clone()), m).unwrap();
        let sparse = PrecomputedGram::sparse(Arc::new(csr_of(&k, m))).unwrap();
        for i in 0..m {
            for j in 0..m {
                assert_eq!(dense.entry(i, j), sparse.entry(i, j));
            }
            assert_eq!(dense.diag(i), sparse.diag(i));
        }
        let l = 3;
        let alpha: Vec<f64> = (0..l * m)
            .map(|t| {
                if t % 4 == 0 {
                    0.0
                } else {
                    (t as f64 * 0.37).sin()
                }
            })
            .collect();
        let (a, b) = (
            dense.expansion_sq_norm(&alpha),
            sparse.expansion_sq_norm(&alpha),
        );
        // brute force Σ_y Σ_ij α_yi K_ij α_yj
        let mut want = 0.0;
        for y in 0..l {
            for i in 0..m {
                for j in 0..m {
                    want += alpha[y * m + i] * f64::from(k[i * m + j]) * alpha[y * m + j];
                }
            }
        }
        assert!((a - want).abs() < 1e-9 * want.abs().max(1.0));
        assert!((b - want).abs() < 1e-9 * want.abs().max(1.0));
        let (mut o1, mut o2) = (vec![0.0; m], vec![0.0; m]);
        dense.axpy(4, 0.5, &mut o1);
        sparse.axpy(4, 0.5, &mut o2);
        assert_eq!(o1, o2);
    }

    #[test]
    fn feature_rows_dot() {
        let x = [1.0f32, 0.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0];
        let f = FeatureRows::new(&x, 3, 3).unwrap();
        assert_eq!(f.dot(0, 1), 8.0);
        assert_eq!(f.dot(1, 1), 25.0);
        assert_eq!(f.dot(2, 0), 0.0);
        assert!(FeatureRows::new(&x, 2, 3).is_err());
    }
}
