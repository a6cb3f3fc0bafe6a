//! The prox of the squared Euclidean norm `(τ/2)‖x‖²`: a plain shrinkage.

use super::groups::checked;
use crate::error::Result;

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
    checked(x, ("tau", tau), |x| prox_l2_squared_unchecked(x, tau))
}

/// [`prox_l2_squared`] without checks.
#[inline]
pub fn prox_l2_squared_unchecked(x: &mut [f64], tau: f64) {
    let s = 1.0 / (1.0 + tau);
    x.iter_mut().for_each(|v| *v *= s);
}
