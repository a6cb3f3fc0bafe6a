//! The prox of the weighted squared ℓ1 norm `(τ/2)(Σ_i d_i |x_i|)²` with
//! weights `d_i ≥ 0` (zeros allowed), from the paper's appendix.
//!
//! The solution is `u_i = sign(x_i) max(0, |x_i| − θ d_i)` with
//! `θ = τ Σ_i d_i |u_i|`. Coordinates with `d_i = 0` are left unchanged.
//! Sorting the ratios `|x_i| / d_i` in decreasing order, the support is the
//! longest prefix with `|x_k|/d_k > θ_k`, where
//! `θ_k = τ Σ_{i≤k} d_i |x_i| / (1 + τ Σ_{i≤k} d_i²)`.

use super::groups::check_x;
use crate::error::{check_finite, check_nonneg, OmklError, Result};

/// In place, `x ← prox_{(τ/2)(Σ d_i|·_i|)²}(x)`.
///
/// # Complexity
/// O(p) for a one-pass filter of the coordinates that cannot be in the
/// support, then O(k log k) to sort the `k` survivors (O(p log p) at worst).
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
    check_x(x)?;
    check_weights("d", d, x.len())?;
    prox_weighted_squared_l1_unchecked(x, d, tau);
    Ok(())
}

/// Returns an error naming `name` unless `d` has length `n` and every
/// weight is finite and ≥ 0.
pub fn check_weights(name: &str, d: &[f64], n: usize) -> Result<()> {
    if d.len() != n {
        return Err(OmklError::shape(
            name,
            format!("length {n}"),
            format!("length {}", d.len()),
        ));
    }
    check_finite(name, d)?;
    if let Some(i) = d.iter().position(|&v| v < 0.0) {
        return Err(OmklError::invalid(
            name,
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

/// `(ratio |x_i| / d_i, i)` for a superset of the support, found in one
/// pass as in Condat (2016). `θ(T) = Σ_T d_i|x_i| / (1/τ + Σ_T d_i²)` of any
/// subset `T` is at most θ* (θ* maximises this ratio over subsets), so every
/// coordinate whose ratio is at or below the running θ of the kept
/// candidates is out of the support.
fn candidates(x: &[f64], d: &[f64], inv_tau: f64) -> Vec<(f64, usize)> {
    let mut out: Vec<(f64, usize)> = Vec::new();
    let mut waiting: Vec<(f64, usize)> = Vec::new();
    let (mut s, mut dd, mut rho) = (0.0f64, 0.0f64, 0.0f64);
    for (i, (v, &w)) in x.iter().zip(d).enumerate() {
        let a = v.abs();
        if w <= 0.0 || a == 0.0 {
            continue;
        }
        let r = a / w;
        if r <= rho {
            continue;
        }
        let grown = (s + w * a) / (inv_tau + dd + w * w);
        let alone = (w * a) / (inv_tau + w * w);
        if out.is_empty() || grown > alone {
            out.push((r, i));
            s += w * a;
            dd += w * w;
            rho = if out.len() == 1 { alone } else { grown };
        } else {
            waiting.append(&mut out);
            out.push((r, i));
            s = w * a;
            dd = w * w;
            rho = alone;
        }
    }
    for (r, i) in waiting {
        if r > rho {
            let (a, w) = (x[i].abs(), d[i]);
            out.push((r, i));
            s += w * a;
            dd += w * w;
            rho = s / (inv_tau + dd);
        }
    }
    let top = out.iter().fold(0.0f64, |m, c| m.max(c.0));
    out.retain(|c| c.0 > rho || c.0 == top);
    out
}

/// The multiplier θ of the weighted squared-ℓ1 prox of `x` (unchanged).
pub fn weighted_squared_l1_threshold(x: &[f64], d: &[f64], tau: f64) -> f64 {
    if tau == 0.0 {
        return 0.0;
    }
    let inv_tau = 1.0 / tau;
    let mut cand = candidates(x, d, inv_tau);
    cand.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    // The largest ratios (with ties) are always in the support; accepting
    // them outright keeps rounding (huge τ) from emptying it.
    let top = cand.first().map_or(0.0, |c| c.0);
    let (mut s, mut dd, mut theta) = (0.0f64, 0.0f64, 0.0f64);
    for &(r, i) in &cand {
        let (a, w) = (x[i].abs(), d[i]);
        let (s_new, dd_new) = (s + w * a, dd + w * w);
        let t = s_new / (inv_tau + dd_new);
        if r == top || r > t {
            s = s_new;
            dd = dd_new;
            theta = t;
        } else {
            break;
        }
    }
    theta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_tau_shrinks_to_zero_and_zero_weights_stay() {
        let mut x = [3.0, -1.0, 2.0, 5.0];
        prox_weighted_squared_l1(&mut x, &[1.0, 2.0, 0.5, 0.0], 1e300).unwrap();
        assert!(x[..3].iter().all(|v| v.abs() < 1e-12), "{x:?}");
        assert_eq!(x[3], 5.0);
    }

    #[test]
    fn rejects_bad_weights() {
        let mut x = [1.0, 2.0];
        assert!(prox_weighted_squared_l1(&mut x, &[1.0], 1.0).is_err());
        assert!(prox_weighted_squared_l1(&mut x, &[1.0, -1.0], 1.0).is_err());
        assert!(prox_weighted_squared_l1(&mut x, &[1.0, f64::NAN], 1.0).is_err());
        assert_eq!(x, [1.0, 2.0]);
    }
}
