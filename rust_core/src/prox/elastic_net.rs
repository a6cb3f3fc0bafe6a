//! Elastic-net MKL: `λ [ρ Σ_g ‖x_g‖ + (1 − ρ)/2 Σ_g ‖x_g‖²]`.

use super::reduction::prox_by_group_norms_checked;
use crate::error::{check_nonneg, OmklError, Result};

/// In place, `x ← prox_{τ[ρ Σ‖x_g‖ + (1−ρ)/2 Σ‖x_g‖²]}(x)`. Each group norm
/// becomes `max(0, ‖x_g‖ − τρ) / (1 + τ(1 − ρ))`.
///
/// # Complexity
/// O(p).
///
/// # Example
/// ```
/// let mut x = [3.0, 4.0];
/// // ρ = 0.5, τ = 2: norm 5 → (5 − 1) / (1 + 1) = 2.
/// omkl_core::prox::elastic_net::prox_elastic_net_mkl(&mut x, &[0, 2], 2.0, 0.5).unwrap();
/// assert!((x[0] - 1.2).abs() < 1e-15 && (x[1] - 1.6).abs() < 1e-15);
/// ```
pub fn prox_elastic_net_mkl(
    x: &mut [f64],
    offsets: &[usize],
    tau: f64,
    l1_ratio: f64,
) -> Result<()> {
    check_nonneg("tau", tau)?;
    check_l1_ratio(l1_ratio)?;
    prox_by_group_norms_checked(x, offsets, |n| elastic_net_norms(n, tau, l1_ratio))
}

/// Returns an error unless `0 ≤ ρ ≤ 1`.
pub fn check_l1_ratio(l1_ratio: f64) -> Result<()> {
    if (0.0..=1.0).contains(&l1_ratio) {
        Ok(())
    } else {
        Err(OmklError::invalid(
            "l1_ratio",
            format!("expected a number in [0, 1], got {l1_ratio}"),
        ))
    }
}

/// On a vector of norms, `n ← max(0, n − τρ) / (1 + τ(1 − ρ))`.
#[inline]
pub fn elastic_net_norms(norms: &mut [f64], tau: f64, l1_ratio: f64) {
    let t1 = tau * l1_ratio;
    let s = 1.0 / (1.0 + tau * (1.0 - l1_ratio));
    norms.iter_mut().for_each(|v| *v = (*v - t1).max(0.0) * s);
}
