//! The prox of the weighted squared ℓ1 norm `(τ/2)(Σ_i d_i |x_i|)²` with
//! weights `d_i ≥ 0` (zeros allowed), from the paper's appendix.
//!
//! The solution is `u_i = sign(x_i) max(0, |x_i| − θ d_i)` with
//! `θ = τ Σ_i d_i |u_i|`. Coordinates with `d_i = 0` are left unchanged.
//! Sorting the ratios `|x_i| / d_i` in decreasing order, the support is the
//! longest prefix with `|x_k|/d_k > θ_k`, where
//! `θ_k = τ Σ_{i≤k} d_i |x_i| / (1 + τ Σ_{i≤k} d_i²)`.

use crate::error::{check_finite, check_nonneg, OmklError, Result};

/// In place, `x ← prox_{(τ/2)(Σ d_i|·_i|)²}(x)`.
///
/// # Complexity
/// O(p log p).
///
/// # Example
/// ```
/// use omkl_core::prox::weighted_squared_l1::prox_weighted_squared_l1;
/// // d = 1 everywhere is the plain squared ℓ1 prox; d = 0 leaves x_i alone.
/// let mut x = [3.0, -1.0, 7.0];
/// prox_weighted_squared_l1(&mut x, &[1.0, 1.0, 0.0], 1.0).unwrap();
/// assert_eq!(x, [1.5, 0.0, 7.0]);
/// ```
pub fn prox_weighted_squared_l1(x: &mut [f64], d: &[f64], tau: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    if x.is_empty() {
        return Err(OmklError::empty("x"));
    }
    check_finite("x", x)?;
    check_weights(d, x.len())?;
    prox_weighted_squared_l1_unchecked(x, d, tau);
    Ok(())
}

/// Returns an error unless `d` has length `n` and every weight is finite
/// and ≥ 0.
pub fn check_weights(d: &[f64], n: usize) -> Result<()> {
    if d.len() != n {
        return Err(OmklError::shape(
            "weights",
            format!("length {n}"),
            format!("length {}", d.len()),
        ));
    }
    check_finite("weights", d)?;
    if let Some(i) = d.iter().position(|&v| v < 0.0) {
        return Err(OmklError::invalid(
            "weights",
            format!("expected weights >= 0, but element {i} is {}", d[i]),
        ));
    }
    Ok(())
}

/// [`prox_weighted_squared_l1`] without checks.
pub fn prox_weighted_squared_l1_unchecked(x: &mut [f64], d: &[f64], tau: f64) {
    let theta = weighted_squared_l1_threshold(x, d, tau);
    if theta > 0.0 {
        for (v, &w) in x.iter_mut().zip(d) {
            let a = v.abs() - theta * w;
            *v = if a > 0.0 { a.copysign(*v) } else { 0.0 };
        }
    }
}

/// The multiplier θ of the weighted squared-ℓ1 prox of `x` (unchanged).
pub fn weighted_squared_l1_threshold(x: &[f64], d: &[f64], tau: f64) -> f64 {
    if tau == 0.0 {
        return 0.0;
    }
    let inv_tau = 1.0 / tau;
    // (ratio |x_i| / d_i, index) for the coordinates that can be shrunk.
    let mut cand: Vec<(f64, usize)> = x
        .iter()
        .zip(d)
        .enumerate()
        .filter(|(_, (v, &w))| w > 0.0 && **v != 0.0)
        .map(|(i, (v, &w))| (v.abs() / w, i))
        .collect();
    cand.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let (mut s, mut dd, mut theta) = (0.0f64, 0.0f64, 0.0f64);
    for &(r, i) in &cand {
        let (a, w) = (x[i].abs(), d[i]);
        let (s_new, dd_new) = (s + w * a, dd + w * w);
        let t = s_new / (inv_tau + dd_new);
        if r > t {
            s = s_new;
            dd = dd_new;
            theta = t;
        } else {
            break;
        }
    }
    theta
}
