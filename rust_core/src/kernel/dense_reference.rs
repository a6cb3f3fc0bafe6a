//! Dense scoring `S = K α` from a dense Gram matrix, the reference that
//! sparse scoring is compared with, and the shape check of the coefficients
//! `α` that both share.
//!
//! # Example
//! ```
//! use omkl_core::kernel::dense_scores;
//! // K = [[1, 0.5], [0.5, 1]], one label
//! let s = dense_scores(&[1.0, 0.5, 0.5, 1.0], 2, 2, &[2.0, 4.0], 1).unwrap();
//! assert_eq!(s, vec![4.0, 5.0]);
//! ```

use rayon::prelude::*;

use crate::error::{check_finite, check_table, OmklError, Result};

/// Checks that `alpha` is a finite `m × labels` matrix with `labels >= 1`.
pub(crate) fn check_alpha(alpha: &[f64], m: usize, labels: usize) -> Result<()> {
    check_alpha_with(alpha, m, labels, check_finite)
}

/// [`check_alpha`] for coefficients of any precision, `finite` checking
/// that their values are finite.
pub(crate) fn check_alpha_with<T>(
    alpha: &[T],
    m: usize,
    labels: usize,
    finite: fn(&str, &[T]) -> Result<()>,
) -> Result<()> {
    if labels == 0 {
        return Err(OmklError::empty("alpha"));
    }
    check_table("alpha", alpha.len(), &[m, labels], "m * labels")?;
    finite("alpha", alpha)
}

/// Dense scoring `S = K α` from a dense row-major Gram `k` (`rows × m`),
/// the reference that [`SparseGram::scores`](super::SparseGram::scores) is compared with.
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
