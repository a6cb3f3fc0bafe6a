//! Sparse (CSR) Gram storage for compact-support kernels, and kernel
//! scoring `K α` from it.

use rayon::prelude::*;

use super::gram::{check_matrix, job};
use std::sync::OnceLock;

pub use super::dense_reference::dense_scores;
use super::dense_reference::{check_alpha, check_alpha_with};
use super::sparse_binary::{b1_csr, Packed};
use super::sparse_csr::{concat_pieces, mirror_upper, Piece};
use super::sparse_layout::ScoreLayout;
use super::sparse_scores::{Acc, Isa};
use super::tiles::{sparse_row_block, SparseScratch, RECT_ROWS};
use super::Kernel;
use crate::error::{alloc_len, check_finite, try_vec, OmklError, Result};

/// Rows per block while building (the only dense buffer ever allocated is
/// one `BUILD_ROWS × ncols` block per worker thread). Equal to the dense
/// Gram's row block, so both compute every entry the same way and the
/// sparse matrix equals the dense one with zeros dropped, bit for bit.
const BUILD_ROWS: usize = RECT_ROWS;
/// Builds below this many multiply-adds run on the calling thread.
const PARALLEL_MIN_BUILD: usize = 1 << 21;

/// A Gram matrix in compressed sparse row form: row `i` holds the columns
/// `indices[indptr[i]..indptr[i+1]]` (ascending) with their values. Only
/// non-zero kernel values are stored.
///
/// Rows are query inputs and columns are support inputs, so
/// [`SparseGram::scores`] computes `K α` visiting only the neighbours of
/// each query: its cost is O(nnz · L), independent of the number of zeros.
///
/// # Example
/// ```
/// use omkl_core::kernel::{Kernel, SparseGram};
/// let x = [0.0f32, 1.0, 5.0];
/// let k = Kernel::B1Spline { h: 2.0 };
/// let s = SparseGram::build(&k, &x, 3, None, 1).unwrap();
/// assert_eq!(s.nnz(), 5); // 0–1 are neighbours, 5 is alone
/// let scores = s.scores(&[1.0, 0.0, 0.0], 1).unwrap();
/// assert_eq!(scores, vec![1.0, 0.5, 0.0]);
/// ```
#[derive(Clone, Debug)]
pub struct SparseGram {
    nrows: usize,
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    /// The renumbered copy that bulk scoring reads, built on its first call.
    layout: OnceLock<ScoreLayout>,
    /// Whether the matrix is square and exactly symmetric: known when built
    /// from the same inputs on both sides, else checked on first request.
    symmetric: OnceLock<bool>,
}

impl PartialEq for SparseGram {
    /// Equal shapes and CSR arrays (the scoring layout is derived from them).
    fn eq(&self, other: &Self) -> bool {
        (self.nrows, self.ncols) == (other.nrows, other.ncols)
            && self.indptr == other.indptr
            && self.indices == other.indices
            && self.values == other.values
    }
}

impl SparseGram {
    /// Wraps checked CSR arrays.
    fn new(
        nrows: usize,
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Self {
        SparseGram {
            nrows,
            ncols,
            indptr,
            indices,
            values,
            layout: OnceLock::new(),
            symmetric: OnceLock::new(),
        }
    }

    /// Whether the matrix is square and exactly symmetric (`(i, j)` stored
    /// exactly when `(j, i)` is, with the same value). Known without a check
    /// for matrices built from the same inputs on both sides; otherwise
    /// checked once ([`SparseGram::asymmetric_entry`]) and remembered.
    ///
    /// # Complexity
    /// O(1) after the first call; O(nnz + rows) for it.
    pub fn is_symmetric(&self) -> bool {
        *self
            .symmetric
            .get_or_init(|| self.nrows == self.ncols && self.asymmetric_entry().is_none())
    }

    /// A stored entry `(i, j)` of a square matrix whose mirror `(j, i)` is
    /// missing or differs, if any.
    ///
    /// One pass over the rows in order with a cursor per row: an upper entry
    /// `(i, j)`, `j > i`, must be the next unmatched entry of row `j` (whose
    /// lower entries are met in increasing column order this way), and at the
    /// end every row's lower entries must all have been matched.
    ///
    /// # Complexity
    /// O(nnz + rows).
    pub fn asymmetric_entry(&self) -> Option<(usize, usize)> {
        let r = self.nrows.min(self.ncols);
        let (indptr, indices, values) = (&self.indptr, &self.indices, &self.values);
        let mut cursor: Vec<usize> = indptr[..r].to_vec();
        for i in 0..r {
            let (a, b) = (indptr[i], indptr[i + 1]);
            for (&j, &v) in indices[a..b].iter().zip(&values[a..b]) {
                let j = j as usize;
                if j <= i {
                    continue;
                }
                if j >= r {
                    return Some((i, j));
                }
                let p = cursor[j];
                if p >= indptr[j + 1] || indices[p] as usize != i || values[p] != v {
                    return Some((i, j));
                }
                cursor[j] = p + 1;
            }
        }
        for (j, &p) in cursor.iter().enumerate() {
            // every lower entry of row j was matched: the next one is not lower
            if p < indptr[j + 1] && (indices[p] as usize) < j {
                return Some((j, indices[p] as usize));
            }
        }
        None
    }

    /// The diagonal `K[i, i]` (0 where not stored) of the first
    /// `min(rows, columns)` rows.
    ///
    /// # Complexity
    /// O(rows · log(row length)).
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.nrows.min(self.ncols))
            .map(|i| {
                let (idx, val) = self.row(i);
                idx.binary_search(&(i as u32))
                    .map_or(0.0, |p| f64::from(val[p]))
            })
            .collect()
    }

    /// `c · K` (same pattern, each value multiplied by `c` in f32), keeping
    /// what is known of the symmetry; an error if `c` is not finite or some
    /// product is not.
    ///
    /// # Complexity
    /// O(nnz).
    pub fn scaled(&self, c: f32) -> Result<Self> {
        check_finite("c", &[f64::from(c)])?;
        let values: Vec<f32> = self.values.iter().map(|&v| v * c).collect();
        super::finite::check_finite_f32("values", &values)?;
        let out = SparseGram::new(
            self.nrows,
            self.ncols,
            self.indptr.clone(),
            self.indices.clone(),
            values,
        );
        if let Some(&s) = self.symmetric.get() {
            let _ = out.symmetric.set(s);
        }
        Ok(out)
    }

    /// Builds the CSR Gram matrix of `K(x_i, y_j)` (`x`: `nx × d`, `y =
    /// Some((y, ny))`: `ny × d`, row-major f32; `None` means `y = x`) block
    /// by block, blocks in parallel: each
    /// tile of inner products comes from one f32 GEMM like [`super::gram()`],
    /// and only its non-zeros are kept, so neither the dense `nx × ny`
    /// matrix nor a dense row block is ever written. For the B1-spline,
    /// pairs whose squared distance `‖x‖² + ‖y‖² − 2⟨x, y⟩` is clearly
    /// beyond `h²` are dropped before any square root; the stored values
    /// are the same bits as [`super::gram()`]'s non-zeros. When `y` equals `x`
    /// only the upper triangle is computed (half the GEMM) and mirrored, so
    /// the result is exactly symmetric; its entries then equal
    /// [`super::gram_symmetric`]'s up to the f32 rounding of inner products
    /// (bit for bit on integer inputs such as binary pixels), so a pair
    /// whose distance is within rounding of `h` may be stored in one and
    /// not the other. Intended
    /// for kernels with compact support ([`Kernel::has_compact_support`]);
    /// any kernel is accepted, but then nearly every entry is stored.
    ///
    /// # Complexity
    /// O(nx · ny · d) time (the GEMM) plus O(nx · ny) cheap comparisons and
    /// O(nnz) square roots; O(nnz + threads · 128 · 512) memory.
    pub fn build(
        kernel: &Kernel,
        x: &[f32],
        nx: usize,
        y: Option<(&[f32], usize)>,
        d: usize,
    ) -> Result<Self> {
        kernel.check()?;
        check_matrix("X", x, nx, d)?;
        if let Some((y, ny)) = y {
            check_matrix("Y", y, ny, d)?;
        }
        let (y, ny) = y.unwrap_or((x, nx));
        if ny > u32::MAX as usize {
            return Err(OmklError::invalid(
                "Y",
                format!("at most {} rows, got {ny}", u32::MAX),
            ));
        }
        if !kernel.has_compact_support() {
            // Nearly every entry is stored: the CSR arrays need about
            // 8 bytes per entry, and must be allocatable.
            let len = alloc_len("Y", &[nx, ny], 8)?;
            let mut probe: Vec<u64> = Vec::new();
            probe.try_reserve_exact(len).map_err(|_| OmklError::Alloc {
                what: "Y".to_string(),
                bytes: 8 * nx as u128 * ny as u128,
            })?;
        }
        if let Kernel::B1Spline { h } = *kernel {
            if let Some(g) = Self::build_binary_b1(h, x, nx, y, ny, d) {
                return g;
            }
        }
        let (job, _) = job(std::slice::from_ref(kernel), x, nx, Some((y, ny)), d);
        let nblocks = nx.div_ceil(BUILD_ROWS);
        // The same inputs on both sides: compute the upper triangle only.
        let upper = nx == ny && x == y;
        // One CSR piece per block of rows, in row order.
        let build = |s: &mut SparseScratch, b: usize| {
            let r0 = b * BUILD_ROWS;
            sparse_row_block(&job, r0, (r0 + BUILD_ROWS).min(nx), upper, s);
            Piece {
                counts: std::mem::take(&mut s.counts),
                idx: std::mem::take(&mut s.idx),
                val: std::mem::take(&mut s.val),
            }
        };
        let parts: Vec<Piece> = if nx * ny * d < PARALLEL_MIN_BUILD {
            let mut s = SparseScratch::default();
            (0..nblocks).map(|b| build(&mut s, b)).collect()
        } else {
            (0..nblocks)
                .into_par_iter()
                .map_init(SparseScratch::default, build)
                .collect()
        };
        let (mut indptr, mut indices, mut values) = concat_pieces(nx, parts)?;
        if upper {
            (indptr, indices, values) = mirror_upper(&indptr, &indices, &values)?;
        }
        let g = SparseGram::new(nx, ny, indptr, indices, values);
        if upper {
            // mirrored: exactly symmetric by construction
            let _ = g.symmetric.set(true);
        }
        Ok(g)
    }

    /// The B1-spline matrix (width `h`) of 0/1 inputs from packed bits (see
    /// `sparse_binary`), or `None` when some input value is not 0 or 1. Equal to the GEMM path's result bit
    /// for bit: both compute exact integer squared distances when `d <
    /// 2²⁴` and map them with the same f32 operations.
    fn build_binary_b1(
        h: f64,
        x: &[f32],
        nx: usize,
        y: &[f32],
        ny: usize,
        d: usize,
    ) -> Option<Result<Self>> {
        if d == 0 || d >= 1 << 24 {
            return None;
        }
        let px = Packed::new(x, nx, d)?;
        let same = nx == ny && x.as_ptr() == y.as_ptr();
        let py_owned;
        let py = if same {
            &px
        } else {
            py_owned = Packed::new(y, ny, d)?;
            &py_owned
        };
        let inv_h = (1.0 / h) as f32;
        let (indptr, indices, values) = match b1_csr(&px, nx, py, ny, d, inv_h) {
            Ok(csr) => csr,
            Err(e) => return Some(Err(e)),
        };
        let g = SparseGram::new(nx, ny, indptr, indices, values);
        if same {
            // |x_i xor x_j| is symmetric, and so is every stored value
            let _ = g.symmetric.set(true);
        }
        Some(Ok(g))
    }

    /// Builds from CSR arrays, validating them (monotone `indptr` starting
    /// at 0 and ending at `nnz`, column indices ascending within rows and
    /// `< ncols`, finite values).
    pub fn from_csr(
        nrows: usize,
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self> {
        if indptr.len() != nrows + 1 || indptr[0] != 0 {
            return Err(OmklError::shape(
                "indptr",
                format!("{} entries starting at 0", nrows + 1),
                format!("{} entries", indptr.len()),
            ));
        }
        if indices.len() != values.len() || indptr[nrows] != indices.len() {
            return Err(OmklError::shape(
                "indices",
                format!("indptr[-1] = {} entries, as many as values", indptr[nrows]),
                format!("{} indices and {} values", indices.len(), values.len()),
            ));
        }
        for w in indptr.windows(2) {
            if w[1] < w[0] {
                return Err(OmklError::invalid(
                    "indptr",
                    "expected a non-decreasing array",
                ));
            }
            let row = &indices[w[0]..w[1]];
            if row.windows(2).any(|p| p[1] <= p[0]) || row.iter().any(|&j| j as usize >= ncols) {
                return Err(OmklError::invalid(
                    "indices",
                    format!("expected strictly increasing column indices < {ncols} in each row"),
                ));
            }
        }
        super::finite::check_finite_f32("values", &values)?;
        Ok(SparseGram::new(nrows, ncols, indptr, indices, values))
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// Number of stored (non-zero) entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// `nnz / (rows · columns)` (0 for an empty shape).
    pub fn density(&self) -> f64 {
        let cells = self.nrows as f64 * self.ncols as f64;
        if cells > 0.0 {
            self.nnz() as f64 / cells
        } else {
            0.0
        }
    }

    /// Bytes of the three CSR arrays.
    pub fn nbytes(&self) -> usize {
        self.indptr.len() * std::mem::size_of::<usize>()
            + self.indices.len() * std::mem::size_of::<u32>()
            + self.values.len() * std::mem::size_of::<f32>()
    }

    /// Bytes of the scoring layout (0 before the first bulk scoring call):
    /// a copy of the matrix with rows and columns renumbered so that
    /// similar inputs are adjacent (breadth-first order of the row–column
    /// graph), u16 column indices when there are at most 65,536 columns,
    /// and the two renumberings. Held in addition to
    /// [`SparseGram::nbytes`].
    pub fn scoring_nbytes(&self) -> usize {
        self.layout.get().map_or(0, ScoreLayout::nbytes)
    }

    /// The CSR arrays `(indptr, indices, values)`.
    pub fn csr(&self) -> (&[usize], &[u32], &[f32]) {
        (&self.indptr, &self.indices, &self.values)
    }

    /// Row `i` as `(column indices, values)`; empty if `i` is out of range.
    pub fn row(&self, i: usize) -> (&[u32], &[f32]) {
        if i >= self.nrows {
            return (&[], &[]);
        }
        let r = self.indptr[i]..self.indptr[i + 1];
        (&self.indices[r.clone()], &self.values[r])
    }

    /// The dense row-major matrix (zeros filled in).
    pub fn to_dense(&self) -> Vec<f32> {
        self.try_to_dense()
            .expect("memory for the dense matrix (use try_to_dense to get an error)")
    }

    /// [`SparseGram::to_dense`], or [`OmklError::Alloc`] when the dense
    /// matrix cannot be allocated.
    pub fn try_to_dense(&self) -> Result<Vec<f32>> {
        let mut out = try_vec("to_dense", &[self.nrows, self.ncols], 0.0f32)?;
        for (i, row) in out.chunks_exact_mut(self.ncols.max(1)).enumerate() {
            let (idx, val) = self.row(i);
            for (&j, &v) in idx.iter().zip(val) {
                row[j as usize] = v;
            }
        }
        Ok(out)
    }

    /// Scores `S = K α` (`rows × labels`, row-major f64) of every query row,
    /// for coefficients `alpha` (`columns × labels`, row-major): one column
    /// of coefficients per label. One pass over a row's non-zeros updates
    /// a block of up to 32 labels held in registers (AVX-512 fused
    /// multiply-adds when the CPU has them, see `sparse_scores`); rows run
    /// in parallel. Sums are exact up to f64 rounding (the order of
    /// summation depends on the code path, not on the run).
    ///
    /// # Complexity
    /// O(nnz · labels), in parallel over rows.
    pub fn scores(&self, alpha: &[f64], labels: usize) -> Result<Vec<f64>> {
        check_alpha(alpha, self.ncols, labels)?;
        let mut out = try_vec("alpha", &[self.nrows, labels], 0.0f64)?;
        self.scores_unchecked(alpha, labels, false, &mut out);
        Ok(out)
    }

    /// [`SparseGram::scores`] entirely in f32 (coefficients, sums and
    /// scores), the precision of float32 BLAS scoring: half the memory
    /// traffic per non-zero and twice the SIMD lanes. Each sum has
    /// `nnz_row` terms, so its rounding error is at most about
    /// `nnz_row · 6e-8 · Σ|K_ij α_j|`.
    ///
    /// # Complexity
    /// O(nnz · labels), in parallel over rows.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::{Kernel, SparseGram};
    /// let x = [0.0f32, 1.0, 5.0];
    /// let s = SparseGram::build(&Kernel::B1Spline { h: 2.0 }, &x, 3, None, 1).unwrap();
    /// assert_eq!(s.scores_f32(&[1.0, 0.0, 0.0], 1).unwrap(), vec![1.0, 0.5, 0.0]);
    /// ```
    pub fn scores_f32(&self, alpha: &[f32], labels: usize) -> Result<Vec<f32>> {
        check_alpha_with(alpha, self.ncols, labels, super::finite::check_finite_f32)?;
        let mut out = try_vec("alpha", &[self.nrows, labels], 0.0f32)?;
        self.scores_unchecked(alpha, labels, false, &mut out);
        Ok(out)
    }

    /// [`SparseGram::scores`] with label-major coefficients and scores, the
    /// layout of the chain learners: `alpha` is `labels × columns` and the
    /// result `labels × rows` (row-major), `result[y, i] = Σ_j K[i, j]
    /// alpha[y, j]`. The coefficients are transposed once (O(columns ·
    /// labels)) so that each row's non-zeros are still visited once per
    /// block of 32 labels.
    ///
    /// # Complexity
    /// O(nnz · labels + (rows + columns) · labels).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::{Kernel, SparseGram};
    /// let x = [0.0f32, 1.0, 5.0];
    /// let s = SparseGram::build(&Kernel::B1Spline { h: 2.0 }, &x, 3, None, 1).unwrap();
    /// // two labels: e_0 and e_2
    /// let alpha = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    /// assert_eq!(s.scores_label_major(&alpha, 2).unwrap(), vec![1.0, 0.5, 0.0, 0.0, 0.0, 1.0]);
    /// ```
    pub fn scores_label_major(&self, alpha: &[f64], labels: usize) -> Result<Vec<f64>> {
        check_alpha(alpha, self.ncols, labels)?;
        let mut s = try_vec("alpha", &[self.nrows, labels], 0.0f64)?;
        self.scores_unchecked(alpha, labels, true, &mut s);
        let mut out = try_vec("alpha", &[self.nrows, labels], 0.0f64)?;
        for (i, row) in s.chunks_exact(labels).enumerate() {
            for (y, &v) in row.iter().enumerate() {
                out[y * self.nrows + i] = v;
            }
        }
        Ok(out)
    }

    /// `out ← K α` (`rows × labels`) for checked `alpha`, which is
    /// `columns × labels`, or `labels × columns` if `label_major`, from the
    /// scoring layout (built on the first call, O(rows + columns + nnz);
    /// see `sparse_layout` and `sparse_scores`).
    fn scores_unchecked<T: Acc>(
        &self,
        alpha: &[T],
        labels: usize,
        label_major: bool,
        out: &mut [T],
    ) {
        let layout = self.layout.get_or_init(|| {
            let csr = (&self.indptr[..], &self.indices[..], &self.values[..]);
            ScoreLayout::new(csr, self.ncols)
        });
        layout.scores_into(Isa::detect(), alpha, labels, label_major, out);
    }

    /// `s ← (K α)[i, :]` for one query row (see [`SparseGram::scores`]);
    /// `s.len()` is the number of labels.
    pub fn score_row(&self, i: usize, alpha: &[f64], s: &mut [f64]) -> Result<()> {
        if i >= self.nrows {
            return Err(OmklError::invalid(
                "row",
                format!("expected an index < {}, got {i}", self.nrows),
            ));
        }
        check_alpha(alpha, self.ncols, s.len())?;
        self.score_row_unchecked(i, alpha, s);
        Ok(())
    }

    fn score_row_unchecked(&self, i: usize, alpha: &[f64], s: &mut [f64]) {
        let (idx, val) = self.row(i);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { score_row_avx2(idx, val, alpha, s) };
                return;
            }
        }
        score_row_generic(idx, val, alpha, s);
    }
}

/// Labels per block of the single-row path.
const ROW_BLOCK: usize = 8;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn score_row_avx2(idx: &[u32], val: &[f32], alpha: &[f64], s: &mut [f64]) {
    score_row_generic(idx, val, alpha, s);
}

/// `s[y] ← Σ_t val[t] · alpha[idx[t], y]` (`alpha` is `m × s.len()`), each
/// sum taken in the order of the non-zeros. No fused multiply-add, so every
/// code path gives the same bits.
#[inline(always)]
fn score_row_generic(idx: &[u32], val: &[f32], alpha: &[f64], s: &mut [f64]) {
    let labels = s.len();
    let mut l0 = 0;
    while l0 + ROW_BLOCK <= labels {
        let mut acc = [0.0f64; ROW_BLOCK];
        for (&j, &k) in idx.iter().zip(val) {
            let a = &alpha[j as usize * labels + l0..][..ROW_BLOCK];
            let k = f64::from(k);
            for t in 0..ROW_BLOCK {
                acc[t] += k * a[t];
            }
        }
        s[l0..l0 + ROW_BLOCK].copy_from_slice(&acc);
        l0 += ROW_BLOCK;
    }
    if l0 < labels {
        let rest = &mut s[l0..];
        rest.fill(0.0);
        for (&j, &k) in idx.iter().zip(val) {
            let a = &alpha[j as usize * labels + l0..(j as usize + 1) * labels];
            let k = f64::from(k);
            for (o, &w) in rest.iter_mut().zip(a) {
                *o += k * w;
            }
        }
    }
}
