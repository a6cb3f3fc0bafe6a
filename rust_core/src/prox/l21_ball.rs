//! Euclidean projection onto the ℓ2,1 ball `{u : Σ_g ‖u_g‖₂ ≤ r}`, by
//! Prop. 1: project the vector of group norms onto the ℓ1 ball, then rescale
//! each group.

use super::l1_ball::project_l1_ball_unchecked;
use super::reduction::prox_by_group_norms_checked;
use super::squared_l1::ThresholdMethod;
use crate::error::{check_nonneg, Result};

/// In place, `x ← argmin_{Σ‖u_g‖ ≤ r} ‖u − x‖₂`.
///
/// # Complexity
/// O(p + G log G).
///
/// # Example
/// ```
/// let mut x = [3.0, 4.0, 1.0];
/// // norms [5, 1] projected on the ℓ1 ball of radius 2 → [2, 0].
/// omkl_core::prox::l21_ball::project_l21_ball(&mut x, &[0, 2, 3], 2.0).unwrap();
/// assert!((x[0] - 1.2).abs() < 1e-15 && (x[1] - 1.6).abs() < 1e-15 && x[2] == 0.0);
/// ```
pub fn project_l21_ball(x: &mut [f64], offsets: &[usize], radius: f64) -> Result<()> {
    check_nonneg("radius", radius)?;
    prox_by_group_norms_checked(x, offsets, |n| {
        project_l1_ball_unchecked(n, radius, ThresholdMethod::Sort)
    })
}
