//! Sparse (CSR) Gram storage for compact-support kernels, and kernel
//! scoring `K α` from it.

use rayon::prelude::*;

use super::gram::{block, check_matrix, sq_norms};
use super::map::Prepared;
use super::Kernel;
use crate::error::{check_finite, OmklError, Result};

/// Rows per block while building (the only dense buffer ever allocated is
/// one `BUILD_ROWS × ncols` block per worker thread). Equal to the dense
/// Gram's row block, so both compute every entry the same way and the
/// sparse matrix equals the dense one with zeros dropped, bit for bit.
const BUILD_ROWS: usize = super::gram::ROW_BLOCK;

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
/// let s = SparseGram::build(&k, &x, 3, &x, 3, 1).unwrap();
/// assert_eq!(s.nnz(), 5); // 0–1 are neighbours, 5 is alone
/// let scores = s.scores(&[1.0, 0.0, 0.0], 1).unwrap();
/// assert_eq!(scores, vec![1.0, 0.5, 0.0]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SparseGram {
    nrows: usize,
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
}

impl SparseGram {
    /// Builds the CSR Gram matrix of `K(x_i, y_j)` (`x`: `nx × d`, `y`:
    /// `ny × d`, row-major f32) block by block: each block of rows is
    /// computed densely like [`super::gram`] and only its non-zeros are
    /// kept, so the dense `nx × ny` matrix is never materialised. Intended
    /// for kernels with compact support ([`Kernel::has_compact_support`]);
    /// any kernel is accepted, but then nearly every entry is stored.
    ///
    /// # Complexity
    /// O(nx · ny · d) time like the dense Gram; O(nnz + threads · 128 · ny)
    /// memory.
    pub fn build(
        kernel: &Kernel,
        x: &[f32],
        nx: usize,
        y: &[f32],
        ny: usize,
        d: usize,
    ) -> Result<Self> {
        kernel.check()?;
        check_matrix("X", x, nx, d)?;
        check_matrix("Y", y, ny, d)?;
        if ny > u32::MAX as usize {
            return Err(OmklError::invalid(
                "Y",
                format!("at most {} rows, got {ny}", u32::MAX),
            ));
        }
        let prep = Prepared::new(kernel);
        let ax: Vec<f32> = sq_norms(x, d).into_iter().map(|n| prep.aux(n)).collect();
        let ay: Vec<f32> = sq_norms(y, d).into_iter().map(|n| prep.aux(n)).collect();
        let nblocks = nx.div_ceil(BUILD_ROWS);
        let parts: Vec<(Vec<usize>, Vec<u32>, Vec<f32>)> = (0..nblocks)
            .into_par_iter()
            .map_init(Vec::new, |buf: &mut Vec<f32>, b| {
                let r0 = b * BUILD_ROWS;
                let r1 = (r0 + BUILD_ROWS).min(nx);
                buf.clear();
                buf.resize((r1 - r0) * ny, 0.0);
                block(&prep, &x[r0 * d..r1 * d], &ax[r0..r1], y, &ay, d, buf);
                let mut counts = Vec::with_capacity(r1 - r0);
                let (mut idx, mut val) = (Vec::new(), Vec::new());
                for row in buf.chunks_exact(ny) {
                    let before = idx.len();
                    for (j, &v) in row.iter().enumerate() {
                        if v != 0.0 {
                            idx.push(j as u32);
                            val.push(v);
                        }
                    }
                    counts.push(idx.len() - before);
                }
                (counts, idx, val)
            })
            .collect();
        let nnz = parts.iter().map(|p| p.1.len()).sum();
        let mut indptr = Vec::with_capacity(nx + 1);
        indptr.push(0);
        let (mut indices, mut values) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        for (counts, idx, val) in parts {
            for c in counts {
                indptr.push(indptr[indptr.len() - 1] + c);
            }
            indices.extend_from_slice(&idx);
            values.extend_from_slice(&val);
        }
        Ok(SparseGram {
            nrows: nx,
            ncols: ny,
            indptr,
            indices,
            values,
        })
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
        super::gram::check_finite_f32("values", &values)?;
        Ok(SparseGram {
            nrows,
            ncols,
            indptr,
            indices,
            values,
        })
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
        let mut out = vec![0.0f32; self.nrows * self.ncols];
        for (i, row) in out.chunks_exact_mut(self.ncols.max(1)).enumerate() {
            let (idx, val) = self.row(i);
            for (&j, &v) in idx.iter().zip(val) {
                row[j as usize] = v;
            }
        }
        out
    }

    /// Scores `S = K α` (`rows × labels`, row-major f64) of every query row,
    /// for coefficients `alpha` (`columns × labels`, row-major): one column
    /// of coefficients per label.
    ///
    /// # Complexity
    /// O(nnz · labels), in parallel over rows.
    pub fn scores(&self, alpha: &[f64], labels: usize) -> Result<Vec<f64>> {
        check_alpha(alpha, self.ncols, labels)?;
        let mut out = vec![0.0f64; self.nrows * labels];
        out.par_chunks_mut(labels)
            .enumerate()
            .for_each(|(i, s)| self.score_row_unchecked(i, alpha, s));
        Ok(out)
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
        let labels = s.len();
        s.fill(0.0);
        let (idx, val) = self.row(i);
        for (&j, &k) in idx.iter().zip(val) {
            let a = &alpha[j as usize * labels..(j as usize + 1) * labels];
            let k = f64::from(k);
            for (o, &w) in s.iter_mut().zip(a) {
                *o += k * w;
            }
        }
    }
}

/// Checks that `alpha` is a finite `m × labels` matrix with `labels >= 1`.
pub(crate) fn check_alpha(alpha: &[f64], m: usize, labels: usize) -> Result<()> {
    if labels == 0 {
        return Err(OmklError::empty("alpha"));
    }
    if alpha.len() != m * labels {
        return Err(OmklError::shape(
            "alpha",
            format!("{m} x {labels} = {} elements", m * labels),
            format!("{} elements", alpha.len()),
        ));
    }
    check_finite("alpha", alpha)
}

/// Dense scoring `S = K α` from a dense row-major Gram `k` (`rows × m`),
/// the reference that [`SparseGram::scores`] is compared with.
///
/// # Complexity
/// O(rows · m · labels), in parallel over rows.
pub fn dense_scores(
    k: &[f32],
    rows: usize,
    m: usize,
    alpha: &[f64],
    labels: usize,
) -> Result<Vec<f64>> {
    if k.len() != rows * m {
        return Err(OmklError::shape(
            "K",
            format!("{rows} x {m} elements"),
            format!("{} elements", k.len()),
        ));
    }
    check_alpha(alpha, m, labels)?;
    let mut out = vec![0.0f64; rows * labels];
    if m == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(labels)
        .zip(k.par_chunks(m))
        .for_each(|(s, krow)| {
            for (&kv, a) in krow.iter().zip(alpha.chunks_exact(labels)) {
                let kv = f64::from(kv);
                for (o, &w) in s.iter_mut().zip(a) {
                    *o += kv * w;
                }
            }
        });
    Ok(out)
}
