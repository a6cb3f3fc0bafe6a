//! The sparse group lasso `τ1 ‖x‖₁ + τ2 Σ_g ‖x_g‖₂`.
//!
//! Its prox is the composition of two prox steps: soft-thresholding by τ1,
//! then block soft-thresholding by τ2 (the ℓ1 norm and the group norm are
//! compatible in the sense of Jenatton et al. 2011, since the groups form a
//! partition).

use super::group_lasso::shrink_norms;
use super::groups::check_grouped;
use super::l1::soft_threshold_unchecked;
use super::reduction::prox_by_group_norms;
use crate::error::{check_nonneg, Result};

/// In place, `x ← prox_{τ1‖·‖₁ + τ2 Σ‖·_g‖}(x)`.
///
/// # Complexity
/// O(p).
///
/// # Example
/// ```
/// let mut x = [4.0, 5.0, 0.5];
/// omkl_core::prox::sparse_group_lasso::prox_sparse_group_lasso(&mut x, &[0, 2, 3], 1.0, 2.5)
///     .unwrap();
/// // soft-threshold: [3, 4, 0]; then the first group's norm 5 shrinks to 2.5.
/// assert_eq!(x, [1.5, 2.0, 0.0]);
/// ```
pub fn prox_sparse_group_lasso(
    x: &mut [f64],
    offsets: &[usize],
    tau1: f64,
    tau2: f64,
) -> Result<()> {
    check_nonneg("tau1", tau1)?;
    check_nonneg("tau2", tau2)?;
    check_grouped(x, offsets)?;
    prox_sparse_group_lasso_unchecked(x, offsets, tau1, tau2);
    Ok(())
}

/// [`prox_sparse_group_lasso`] without checks.
pub fn prox_sparse_group_lasso_unchecked(x: &mut [f64], offsets: &[usize], tau1: f64, tau2: f64) {
    soft_threshold_unchecked(x, tau1);
    prox_by_group_norms(x, offsets, |n| shrink_norms(n, tau2));
}
