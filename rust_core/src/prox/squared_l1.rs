//! Alg. 2: the prox of the squared ℓ1 norm `(τ/2)‖x‖₁²`, by sorting
//! (O(p log p)) or by randomised selection (expected O(p)).
//!
//! The solution is soft-thresholding by `θ = τ ‖u‖₁`, where `u` is the
//! solution itself; with `k` surviving coordinates whose magnitudes sum to
//! `S`, `θ = τ S / (1 + kτ)`.

use super::groups::checked;
use super::l1::soft_threshold_unchecked;
pub use super::threshold::ThresholdMethod;
use super::threshold::{threshold, SquaredL1Rule};
use crate::error::{check_nonneg, Result};

/// In place, `x ← prox_{(τ/2)‖·‖₁²}(x)`.
///
/// # Complexity
/// O(p log p) for [`ThresholdMethod::Sort`], expected O(p) for
/// [`ThresholdMethod::Select`]; O(p) extra memory.
///
/// # Example
/// ```
/// use omkl_core::prox::squared_l1::{prox_squared_l1, ThresholdMethod};
/// let mut x = [3.0, -1.0];
/// prox_squared_l1(&mut x, 1.0, ThresholdMethod::Sort).unwrap();
/// assert_eq!(x, [1.5, 0.0]);
/// ```
pub fn prox_squared_l1(x: &mut [f64], tau: f64, method: ThresholdMethod) -> Result<()> {
    checked(x, ("tau", tau), |x| {
        prox_squared_l1_unchecked(x, tau, method)
    })
}

/// [`prox_squared_l1`] without checks (`x` finite, `τ ≥ 0`).
pub fn prox_squared_l1_unchecked(x: &mut [f64], tau: f64, method: ThresholdMethod) {
    let theta = squared_l1_threshold(x, tau, method);
    soft_threshold_unchecked(x, theta);
}

/// The threshold θ of the squared-ℓ1 prox of `x` (unchanged).
pub fn squared_l1_threshold(x: &[f64], tau: f64, method: ThresholdMethod) -> f64 {
    if tau == 0.0 {
        return 0.0;
    }
    threshold(x, SquaredL1Rule { inv_tau: 1.0 / tau }, method)
}

/// In place, the prox of the squared ℓ2,1 norm `(τ/2)(Σ_g ‖x_g‖)²` (the
/// MKL regulariser of Alg. 3): by Prop. 1, Alg. 2 on the group norms.
///
/// # Complexity
/// O(p + G log G).
///
/// # Example
/// ```
/// let mut x = [6.0, 8.0, 1.0];
/// // norms [10, 1], τ = 1: θ = 10 / 2 = 5, norms → [5, 0].
/// omkl_core::prox::squared_l1::prox_squared_l21(&mut x, &[0, 2, 3], 1.0).unwrap();
/// assert_eq!(x, [3.0, 4.0, 0.0]);
/// ```
pub fn prox_squared_l21(x: &mut [f64], offsets: &[usize], tau: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    super::reduction::prox_by_group_norms_checked(x, offsets, |n| {
        prox_squared_l1_unchecked(n, tau, ThresholdMethod::Sort)
    })
}
