//! The group lasso (ℓ2,1 norm) `τ Σ_g ‖x_g‖₂`: block soft-thresholding.

use super::reduction::prox_by_group_norms_checked;
use crate::error::{check_nonneg, Result};

/// In place, `x ← prox_{τ Σ_g ‖·_g‖}(x)`: each group is scaled by
/// `max(0, 1 − τ / ‖x_g‖)`.
///
/// # Complexity
/// O(p).
///
/// # Example
/// ```
/// let mut x = [6.0, 8.0, 0.5];
/// omkl_core::prox::group_lasso::prox_group_lasso(&mut x, &[0, 2, 3], 5.0).unwrap();
/// assert_eq!(x, [3.0, 4.0, 0.0]);
/// ```
pub fn prox_group_lasso(x: &mut [f64], offsets: &[usize], tau: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    prox_by_group_norms_checked(x, offsets, |n| shrink_norms(n, tau))
}

/// On a vector of norms (≥ 0), `n ← max(0, n − τ)`: the prox of `τ‖·‖₁`
/// restricted to the non-negative orthant.
#[inline]
pub fn shrink_norms(norms: &mut [f64], tau: f64) {
    norms.iter_mut().for_each(|v| *v = (*v - tau).max(0.0));
}
