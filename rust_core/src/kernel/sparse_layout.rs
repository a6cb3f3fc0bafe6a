//! The scoring layout of a [`super::SparseGram`]: its rows and columns
//! renumbered so that rows with common neighbours are adjacent, and so are
//! columns with common rows.
//!
//! Scoring gathers one row of coefficients per non-zero. In the stored
//! order, consecutive non-zeros of a row (and consecutive rows) may touch
//! coefficient rows anywhere in the matrix, so each gather comes from L2 or
//! further. After renumbering rows and columns in the order of a
//! breadth-first search of the bipartite row–column graph (Cuthill–McKee
//! order, without the final reversal, which matters for fill-in but not for
//! locality), a cluster of similar inputs becomes a block of consecutive
//! rows and columns, and its coefficients stay in L1 while its rows are
//! scored. Scores are computed in the new row order and written back to
//! the original rows; sums are taken over the same non-zeros in ascending
//! new column order.

use super::sparse_scores::{Acc, Isa, Job, Scratch};

/// Column counts up to this have u16 indices.
pub(crate) const U16_COLUMNS: usize = 1 << 16;

/// Column indices of the layout: u16 when there are at most
/// [`U16_COLUMNS`] columns.
#[derive(Clone, Debug)]
enum Indices {
    U16(Vec<u16>),
    U32(Vec<u32>),
}

/// A renumbered copy of a CSR matrix for scoring.
#[derive(Clone, Debug)]
pub(crate) struct ScoreLayout {
    /// `rows[r]`: the original row of new row `r`.
    rows: Vec<u32>,
    /// `cols[c]`: the original column of new column `c`.
    cols: Vec<u32>,
    indptr: Vec<usize>,
    indices: Indices,
    values: Vec<f32>,
    /// Padded coefficients, reused across calls.
    scratch: Scratch,
}

impl ScoreLayout {
    /// The layout of the CSR matrix `(indptr, indices, values)` with
    /// `ncols` columns (rows and columns fewer than 2^32).
    ///
    /// # Complexity
    /// O(rows + columns + nnz) time and memory.
    pub(crate) fn new(csr: (&[usize], &[u32], &[f32]), ncols: usize) -> Self {
        let (indptr, indices, values) = csr;
        let nrows = indptr.len() - 1;
        let nnz = indices.len();
        // The transpose's pattern: for each column, the positions of its
        // entries in the CSR arrays (rows ascending).
        let mut tptr = vec![0usize; ncols + 1];
        for &j in indices {
            tptr[j as usize + 1] += 1;
        }
        for c in 0..ncols {
            tptr[c + 1] += tptr[c];
        }
        let mut cursor = tptr[..ncols].to_vec();
        let mut tpos = vec![0u32; nnz];
        let mut trow = vec![0u32; nnz];
        for i in 0..nrows {
            let span = indptr[i]..indptr[i + 1];
            for (t, &c) in span.clone().zip(&indices[span]) {
                let c = c as usize;
                tpos[cursor[c]] = t as u32;
                trow[cursor[c]] = i as u32;
                cursor[c] += 1;
            }
        }
        let (rows, cols) = bfs_order(indptr, indices, &tptr, &trow, ncols);
        let mut row_new = vec![0u32; nrows];
        for (r, &i) in rows.iter().enumerate() {
            row_new[i as usize] = r as u32;
        }
        let mut new_ptr = Vec::with_capacity(nrows + 1);
        new_ptr.push(0usize);
        for &i in &rows {
            let i = i as usize;
            new_ptr.push(new_ptr[new_ptr.len() - 1] + indptr[i + 1] - indptr[i]);
        }
        // Columns in new order: each new row receives its entries with
        // ascending new column indices.
        let mut fill = new_ptr[..nrows].to_vec();
        let mut new_idx = vec![0u32; nnz];
        let mut new_val = vec![0.0f32; nnz];
        for (c_new, &c) in cols.iter().enumerate() {
            let c = c as usize;
            for s in tptr[c]..tptr[c + 1] {
                let r = row_new[trow[s] as usize] as usize;
                new_idx[fill[r]] = c_new as u32;
                new_val[fill[r]] = values[tpos[s] as usize];
                fill[r] += 1;
            }
        }
        let indices = if ncols <= U16_COLUMNS {
            Indices::U16(new_idx.iter().map(|&j| j as u16).collect())
        } else {
            Indices::U32(new_idx)
        };
        ScoreLayout {
            rows,
            cols,
            indptr: new_ptr,
            indices,
            values: new_val,
            scratch: Scratch::default(),
        }
    }

    /// Bytes of the layout's arrays.
    pub(crate) fn nbytes(&self) -> usize {
        let idx = match &self.indices {
            Indices::U16(v) => v.len() * 2,
            Indices::U32(v) => v.len() * 4,
        };
        (self.rows.len() + self.cols.len()) * 4
            + self.indptr.len() * std::mem::size_of::<usize>()
            + idx
            + self.values.len() * 4
            + self.scratch.nbytes()
    }

    /// `out ← K α` (`rows × labels` in the original row order) for checked
    /// coefficients `alpha` of the original columns (`columns × labels`,
    /// or `labels × columns` if `label_major`).
    pub(crate) fn scores_into<T: Acc>(
        &self,
        isa: Isa,
        alpha: &[T],
        labels: usize,
        label_major: bool,
        out: &mut [T],
    ) {
        let job = Job {
            cols: Some(&self.cols),
            rows: Some(&self.rows),
            ..Job::new(isa, self.cols.len(), alpha, labels, label_major)
        };
        // Scores in the new row order, each written to its original row.
        let mut fresh = Vec::new();
        let mut held = T::scratch(&self.scratch).try_lock().ok();
        let buf = held.as_deref_mut().unwrap_or(&mut fresh);
        match &self.indices {
            Indices::U16(idx) => job.run((&self.indptr, idx, &self.values), out, buf),
            Indices::U32(idx) => job.run((&self.indptr, idx, &self.values), out, buf),
        }
    }
}

/// The breadth-first order of the bipartite graph whose row `i` and column
/// `j` are adjacent when `(i, j)` is stored: rows and columns in order of
/// discovery, each component started from its lowest unvisited row (then
/// columns with no entries, in order). Returns `(rows, cols)`, the original
/// index of each new row and column.
///
/// # Complexity
/// O(rows + columns + nnz).
fn bfs_order(
    indptr: &[usize],
    indices: &[u32],
    tptr: &[usize],
    trow: &[u32],
    ncols: usize,
) -> (Vec<u32>, Vec<u32>) {
    let nrows = indptr.len() - 1;
    let mut row_seen = vec![false; nrows];
    let mut col_seen = vec![false; ncols];
    let mut rows: Vec<u32> = Vec::with_capacity(nrows);
    let mut cols: Vec<u32> = Vec::with_capacity(ncols);
    let (mut next_row, mut next_col) = (0, 0);
    for start in 0..nrows {
        if row_seen[start] {
            continue;
        }
        row_seen[start] = true;
        rows.push(start as u32);
        // Rows and columns discovered but not yet expanded are the tails
        // of `rows` and `cols`; expand alternately until both are done.
        while next_row < rows.len() || next_col < cols.len() {
            expand(
                &rows,
                &mut next_row,
                (indptr, indices),
                &mut col_seen,
                &mut cols,
            );
            expand(&cols, &mut next_col, (tptr, trow), &mut row_seen, &mut rows);
        }
    }
    cols.extend((0..ncols as u32).filter(|&j| !col_seen[j as usize]));
    (rows, cols)
}

/// Expands the nodes `from[*next..]` of one side: appends each unseen
/// neighbour (`adj`, CSR adjacency of that side) to `to`, marking it in
/// `seen`, and moves `next` to the end of `from`.
fn expand(
    from: &[u32],
    next: &mut usize,
    (ptr, adj): (&[usize], &[u32]),
    seen: &mut [bool],
    to: &mut Vec<u32>,
) {
    while *next < from.len() {
        let i = from[*next] as usize;
        *next += 1;
        for &j in &adj[ptr[i]..ptr[i + 1]] {
            if !seen[j as usize] {
                seen[j as usize] = true;
                to.push(j);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_is_a_permutation_of_rows_columns_and_entries() {
        // Two interleaved clusters {0, 2, 4} and {1, 3}, a lone row 5 and
        // an empty column 6.
        let dense: [[f32; 7]; 6] = [
            [1.0, 0.0, 0.5, 0.0, 0.2, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.3, 0.0, 0.0, 0.0],
            [0.5, 0.0, 1.0, 0.0, 0.4, 0.0, 0.0],
            [0.0, 0.3, 0.0, 1.0, 0.0, 0.0, 0.0],
            [0.2, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
        ];
        let (mut ptr, mut idx, mut val) = (vec![0], vec![], vec![]);
        for row in &dense {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    idx.push(j as u32);
                    val.push(v);
                }
            }
            ptr.push(idx.len());
        }
        let l = ScoreLayout::new((&ptr, &idx, &val), 7);
        // Clusters become contiguous.
        assert_eq!(l.rows, vec![0, 2, 4, 1, 3, 5]);
        assert_eq!(l.cols, vec![0, 2, 4, 1, 3, 5, 6]);
        let Indices::U16(ni) = &l.indices else {
            panic!("7 columns fit u16")
        };
        for (r, &i) in l.rows.iter().enumerate() {
            let span = l.indptr[r]..l.indptr[r + 1];
            assert!(ni[span.clone()].windows(2).all(|w| w[0] < w[1]));
            let mut got = [0.0f32; 7];
            for t in span {
                got[l.cols[ni[t] as usize] as usize] = l.values[t];
            }
            assert_eq!(got, dense[i as usize]);
        }
    }

    #[test]
    fn reused_coefficient_buffer_never_leaks_old_values() {
        // A dense 9 x 11 pattern with empty rows and columns, scored with
        // label counts that shrink and grow (the padded buffer keeps the
        // previous call's values beyond the new labels), in both layouts,
        // on every instruction set: each call equals the naive sum.
        let (nr, nc) = (9usize, 11usize);
        let (mut ptr, mut idx, mut val) = (vec![0], vec![], vec![]);
        for i in 0..nr {
            for j in 0..nc {
                if i != 4 && j != 7 && (i * 5 + j * 3) % 4 != 0 {
                    idx.push(j as u32);
                    val.push(((i * nc + j) % 13 + 1) as f32 / 8.0);
                }
            }
            ptr.push(idx.len());
        }
        let l = ScoreLayout::new((&ptr, &idx, &val), nc);
        for isa in Isa::available() {
            for (call, labels) in [26usize, 3, 40, 17, 1, 26].into_iter().enumerate() {
                let alpha: Vec<f64> = (0..nc * labels)
                    .map(|t| ((t * 37 + call * 11) % 19) as f64 - 9.0)
                    .collect();
                let mut want = vec![0.0f64; nr * labels];
                for i in 0..nr {
                    for t in ptr[i]..ptr[i + 1] {
                        let j = idx[t] as usize;
                        for y in 0..labels {
                            want[i * labels + y] += f64::from(val[t]) * alpha[j * labels + y];
                        }
                    }
                }
                // Small integers times multiples of 1/8: every sum is exact.
                let mut got = vec![f64::NAN; nr * labels];
                l.scores_into(isa, &alpha, labels, false, &mut got);
                assert_eq!(got, want, "{isa:?}, call {call}");
                let lm: Vec<f64> = (0..labels * nc)
                    .map(|t| alpha[(t % nc) * labels + t / nc])
                    .collect();
                let mut got_lm = vec![f64::NAN; nr * labels];
                l.scores_into(isa, &lm, labels, true, &mut got_lm);
                assert_eq!(got_lm, want, "{isa:?} label-major, call {call}");
                let a32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
                let mut got32 = vec![f32::NAN; nr * labels];
                l.scores_into(isa, &a32, labels, false, &mut got32);
                let w32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
                assert_eq!(got32, w32, "{isa:?} f32, call {call}");
            }
        }
        assert!(l.nbytes() >= nc * 32 * 8, "the reused buffers are counted");
    }
}
