//! The prox of the squared Euclidean norm `(τ/2)‖x‖²`: a plain shrinkage.

use super::groups::check_x;
use crate::error::{check_nonneg, Result};

/// In place, `x ← prox_{(τ/2)‖·‖²}(x) = x / (1 + τ)`.
///
/// # Complexity
/// O(p).
///
/// # Example
/// ```
/// let mut x = [2.0, -4.0];
/// omkl_core::prox::l2_squared::prox_l2_squared(&mut x, 1.0).unwrap();
/// assert_eq!(x, [1.0, -2.0]);
/// ```
pub fn prox_l2_squared(x: &mut [f64], tau: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    check_x(x)?;
    prox_l2_squared_unchecked(x, tau);
    Ok(())
}

/// [`prox_l2_squared`] without checks.
#[inline]
pub fn prox_l2_squared_unchecked(x: &mut [f64], tau: f64) {
    let s = 1.0 / (1.0 + tau);
    x.iter_mut().for_each(|v| *v *= s);
}
