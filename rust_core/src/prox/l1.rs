//! Soft-thresholding: the proximity operator of the ℓ1 norm.

use crate::error::{check_finite, check_nonneg, Result};

/// In place, `x ← prox_{τ‖·‖₁}(x)`, i.e. `x_i ← sign(x_i) max(0, |x_i| − τ)`.
///
/// # Complexity
/// O(p).
///
/// # Example
/// ```
/// let mut x = [3.0, -0.5, -2.0];
/// omkl_core::prox::l1::soft_threshold(&mut x, 1.0).unwrap();
/// assert_eq!(x, [2.0, 0.0, -1.0]);
/// ```
pub fn soft_threshold(x: &mut [f64], tau: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    check_finite("x", x)?;
    soft_threshold_unchecked(x, tau);
    Ok(())
}

/// [`soft_threshold`] without input checks, for inner loops whose inputs are
/// already validated.
#[inline]
pub fn soft_threshold_unchecked(x: &mut [f64], tau: f64) {
    for v in x.iter_mut() {
        let a = v.abs() - tau;
        *v = if a > 0.0 { a.copysign(*v) } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_negative_tau_and_nan() {
        assert!(soft_threshold(&mut [1.0], -1.0).is_err());
        assert!(soft_threshold(&mut [f64::NAN], 1.0).is_err());
    }
}
