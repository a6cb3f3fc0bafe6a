//! The ℓ2,q regulariser `τ Σ_g ‖x_g‖₂^q` for `q ≥ 1`.
//!
//! By Prop. 1 each group norm `n0` is replaced by the root `n ∈ [0, n0]` of
//! the scalar equation `n − n0 + τ q n^(q−1) = 0` (for q = 1 this is
//! soft-thresholding, for q = 2 the closed form `n0 / (1 + 2τ)`). The root
//! is found by a safeguarded Newton iteration inside a shrinking bracket,
//! which falls back to bisection whenever a Newton step leaves the bracket
//! or fails to shrink it enough, so it converges for every q ≥ 1, including
//! q close to 1 (where the root can be subnormal) and large q.

use super::reduction::prox_by_group_norms_checked;
use crate::error::{check_nonneg, OmklError, Result};

/// In place, `x ← prox_{τ Σ_g ‖·_g‖^q}(x)`.
///
/// # Complexity
/// O(p) plus O(G · iterations); the iteration count is about 5–10 for
/// moderate q and at most a few thousand bisection steps in extreme cases.
///
/// # Example
/// ```
/// let mut x = [3.0, 4.0];
/// // q = 2, τ = 1: norm 5 → 5 / 3.
/// omkl_core::prox::l2q::prox_l2q(&mut x, &[0, 2], 1.0, 2.0).unwrap();
/// assert!((x[0] - 1.0).abs() < 1e-15 && (x[1] - 4.0 / 3.0).abs() < 1e-15);
/// ```
pub fn prox_l2q(x: &mut [f64], offsets: &[usize], tau: f64, q: f64) -> Result<()> {
    check_nonneg("tau", tau)?;
    check_q(q)?;
    prox_by_group_norms_checked(x, offsets, |n| l2q_norms(n, tau, q))
}

/// Returns an error unless `q` is finite and `q ≥ 1`.
pub fn check_q(q: f64) -> Result<()> {
    if q.is_finite() && q >= 1.0 {
        Ok(())
    } else {
        Err(OmklError::invalid(
            "q",
            format!("expected a finite number >= 1, got {q}"),
        ))
    }
}

/// On a vector of norms, `n_g ← prox_{τ|·|^q}(n_g)` for each `g`.
pub fn l2q_norms(norms: &mut [f64], tau: f64, q: f64) {
    norms.iter_mut().for_each(|v| *v = prox_power(*v, tau, q));
}

/// The prox of `τ t^q` on `t ≥ 0` at `n0 ≥ 0`: the root in `[0, n0]` of
/// `h(n) = n − n0 + τ q n^(q−1)`.
///
/// # Example
/// ```
/// use omkl_core::prox::l2q::prox_power;
/// assert_eq!(prox_power(3.0, 1.0, 1.0), 2.0);
/// let n = prox_power(2.0, 0.5, 3.0); // n + 1.5 n² = 2 → n = (−1 + √13) / 3
/// assert!((n - (13f64.sqrt() - 1.0) / 3.0).abs() < 1e-15);
/// ```
pub fn prox_power(n0: f64, tau: f64, q: f64) -> f64 {
    if n0 <= 0.0 || tau == 0.0 {
        return n0.max(0.0);
    }
    if q == 1.0 {
        return (n0 - tau).max(0.0);
    }
    if q == 2.0 {
        return n0 / (1.0 + 2.0 * tau);
    }
    let c = tau * q;
    // scale · τ q n^e, in the log domain when a factor over- or underflows
    // (huge or tiny τ, n or q).
    let lc = tau.ln() + q.ln();
    let power = |n: f64, e: f64, scale: f64| {
        let direct = scale * c * n.powf(e);
        if direct.is_finite() && direct != 0.0 {
            direct
        } else {
            (lc + scale.ln() + e * n.ln()).exp()
        }
    };
    let h = |n: f64| n - n0 + power(n, q - 1.0, 1.0);
    // h(0) = −n0 < 0 and h(n0) = c n0^(q−1) > 0; h is increasing.
    let (mut lo, mut hi) = (0.0f64, n0);
    // Start where the dominant term alone gives the root: from the linear
    // part (n ≈ n0) or from the power part (n ≈ (n0 / c)^(1/(q−1))).
    let mut n = n0.min((n0 / c).powf(1.0 / (q - 1.0)));
    if !(n > lo && n < hi) {
        n = 0.5 * (lo + hi);
    }
    for _ in 0..4000 {
        let hn = h(n);
        if hn == 0.0 {
            return n;
        }
        if hn < 0.0 {
            lo = n;
        } else {
            hi = n;
        }
        if hi - lo <= 2.0 * f64::EPSILON * hi {
            break;
        }
        let dh = 1.0 + power(n, q - 2.0, q - 1.0);
        let step = hn / dh;
        let newton = n - step;
        if dh.is_finite() && step.abs() <= 2.0 * f64::EPSILON * n && newton > lo && newton < hi {
            return newton;
        }
        n = if newton.is_finite() && newton > lo && newton < hi {
            newton
        } else if lo == 0.0 {
            // Roots can be tiny (q close to 1): step down by 2^-64 at a
            // time until the bracket has a positive lower end.
            let down = (hi * 5.421_010_862_427_522e-20).max(f64::MIN_POSITIVE);
            if down < hi {
                down
            } else {
                0.5 * hi
            }
        } else if hi / lo > 4.0 {
            // Geometric bisection while the bracket spans orders of magnitude.
            (lo * hi).sqrt()
        } else {
            0.5 * (lo + hi)
        };
        if n <= lo || n >= hi {
            n = 0.5 * (lo + hi);
            if n <= lo || n >= hi {
                break;
            }
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `h` changes sign across the returned root (log-domain evaluation).
    fn check(n0: f64, tau: f64, q: f64) {
        let n = prox_power(n0, tau, q);
        assert!((0.0..=n0).contains(&n), "n0 {n0} tau {tau} q {q}: {n}");
        let h = |m: f64| m - n0 + (tau.ln() + q.ln() + (q - 1.0) * m.ln()).exp();
        // h itself is only accurate to about eps * n0 (cancellation of n0),
        // so the root is located to 1e-9 relative plus 1e-12 n0.
        let delta = 1e-9 * n + 1e-12 * n0;
        let up = n + delta;
        assert!(
            h(up) >= 0.0,
            "n0 {n0:e} tau {tau:e} q {q}: h({up:e}) = {:e}",
            h(up)
        );
        let down = n - delta;
        if down > 0.0 {
            let hd = h(down);
            assert!(
                hd <= 0.0,
                "n0 {n0:e} tau {tau:e} q {q}: h({down:e}) = {hd:e}"
            );
        }
    }

    #[test]
    fn extreme_parameters() {
        for q in [1.0 + 1e-12, 1.0 + 1e-6, 1.001, 1.3, 2.5, 7.0, 100.0, 1e4] {
            for tau in [1e-300, 1e-12, 1e-3, 1.0, 1e3, 1e12, 1e300] {
                for n0 in [1e-300, 1e-10, 0.5, 1.0, 3.0, 1e10, 1e300] {
                    check(n0, tau, q);
                }
            }
        }
    }
}
