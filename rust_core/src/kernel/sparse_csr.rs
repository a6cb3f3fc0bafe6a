//! Plain CSR arrays `(indptr, indices, values)` of sparse Gram matrices:
//! assembling them from blocks of rows built in parallel, and the full
//! symmetric matrix from its upper triangle.

use crate::error::{try_vec, Result};

/// The CSR arrays of one block of rows: the number of entries of each
/// row, then the rows' column indices and values.
#[derive(Default)]
pub(super) struct Piece {
    pub(super) counts: Vec<usize>,
    pub(super) idx: Vec<u32>,
    pub(super) val: Vec<f32>,
}

/// The CSR arrays `(indptr, indices, values)` of `nrows` rows given as
/// consecutive blocks, in row order.
pub(super) fn concat_pieces(nrows: usize, pieces: Vec<Piece>) -> Result<Csr> {
    let nnz = pieces.iter().map(|p| p.idx.len()).sum();
    let mut indptr = Vec::with_capacity(nrows + 1);
    indptr.push(0);
    let mut indices = try_vec("X", &[nnz], 0u32)?;
    let mut values = try_vec("X", &[nnz], 0.0f32)?;
    indices.clear();
    values.clear();
    for p in pieces {
        for c in p.counts {
            indptr.push(indptr[indptr.len() - 1] + c);
        }
        indices.extend_from_slice(&p.idx);
        values.extend_from_slice(&p.val);
    }
    Ok((indptr, indices, values))
}

/// CSR arrays `(indptr, indices, values)`.
pub(super) type Csr = (Vec<usize>, Vec<u32>, Vec<f32>);

/// The full symmetric CSR matrix from its upper triangle (row `i` holding
/// columns `j >= i`, ascending): entry `(i, j)`, `j > i`, is also stored
/// as `(j, i)`, so the result is exactly symmetric. Lower entries come
/// first in each row, in ascending order since rows are visited in order.
///
/// # Complexity
/// O(rows + nnz).
pub(super) fn mirror_upper(indptr: &[usize], indices: &[u32], values: &[f32]) -> Result<Csr> {
    let n = indptr.len() - 1;
    let mut lower = vec![0usize; n];
    for i in 0..n {
        for &j in &indices[indptr[i]..indptr[i + 1]] {
            if j as usize > i {
                lower[j as usize] += 1;
            }
        }
    }
    let mut ptr = Vec::with_capacity(n + 1);
    ptr.push(0);
    for i in 0..n {
        ptr.push(ptr[i] + lower[i] + indptr[i + 1] - indptr[i]);
    }
    let nnz = ptr[n];
    let (mut idx, mut val) = (try_vec("X", &[nnz], 0u32)?, try_vec("X", &[nnz], 0.0f32)?);
    let mut cursor = ptr[..n].to_vec();
    for i in 0..n {
        let (b, e) = (indptr[i], indptr[i + 1]);
        let start = ptr[i] + lower[i];
        idx[start..start + e - b].copy_from_slice(&indices[b..e]);
        val[start..start + e - b].copy_from_slice(&values[b..e]);
        for (&j, &v) in indices[b..e].iter().zip(&values[b..e]) {
            let j = j as usize;
            if j > i {
                idx[cursor[j]] = i as u32;
                val[cursor[j]] = v;
                cursor[j] += 1;
            }
        }
    }
    Ok((ptr, idx, val))
}
