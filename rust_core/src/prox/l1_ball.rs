//! Euclidean projection onto the ℓ1 ball `{u : ‖u‖₁ ≤ r}`.

use super::groups::checked;
use super::l1::soft_threshold_unchecked;
use super::squared_l1::ThresholdMethod;
use super::threshold::{threshold, L1BallRule};
use crate::error::Result;

/// In place, `x ← argmin_{‖u‖₁ ≤ r} ‖u − x‖₂`: unchanged when already
/// inside, otherwise soft-thresholding by the θ > 0 with
/// `Σ max(0, |x_i| − θ) = r`.
///
/// # Complexity
/// O(p log p) for [`ThresholdMethod::Sort`], expected O(p) for
/// [`ThresholdMethod::Select`].
///
/// # Example
/// ```
/// use omkl_core::prox::{l1_ball::project_l1_ball, squared_l1::ThresholdMethod};
/// let mut x = [3.0, -1.0, 0.5];
/// project_l1_ball(&mut x, 2.0, ThresholdMethod::Sort).unwrap();
/// assert_eq!(x, [2.0, 0.0, 0.0]);
/// ```
pub fn project_l1_ball(x: &mut [f64], radius: f64, method: ThresholdMethod) -> Result<()> {
    checked(x, ("radius", radius), |x| {
        project_l1_ball_unchecked(x, radius, method)
    })
}

/// [`project_l1_ball`] without checks.
pub fn project_l1_ball_unchecked(x: &mut [f64], radius: f64, method: ThresholdMethod) {
    let theta = l1_ball_threshold(x, radius, method);
    if theta > 0.0 {
        soft_threshold_unchecked(x, theta);
    } else if radius == 0.0 {
        x.iter_mut().for_each(|v| *v = 0.0);
    }
}

/// The threshold of the projection of `x` on the ℓ1 ball of radius `r`
/// (0 when `x` lies inside). With `r = 0` the result is the largest
/// magnitude (everything is set to zero).
pub fn l1_ball_threshold(x: &[f64], radius: f64, method: ThresholdMethod) -> f64 {
    let l1: f64 = x.iter().map(|v| v.abs()).sum();
    if l1 <= radius {
        return 0.0;
    }
    if radius == 0.0 {
        return x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    }
    threshold(x, L1BallRule { radius }, method).max(0.0)
}
