//! Subtraction-free LU factorisation of column-diagonally-dominant
//! M-matrices (the Laplacians of the matrix-tree theorem), in the manner of
//! the Grassmann-Taksar-Heyman (GTH) algorithm.
//!
//! A matrix `M = diag(d) − N` with `N ≥ 0` (off-diagonal, zero diagonal) and
//! `d[j] = e[j] + Σ_{i≠j} N[i, j]` for an "excess" `e ≥ 0` is represented by
//! `N` and `e` alone. Gaussian elimination without pivoting keeps that form:
//! the Schur complement has off-diagonals `N[i, j] + N[i, k] N[k, j] / d[k]`
//! and excess `e[j] + N[k, j] e[k] / d[k]`, and each pivot is recomputed as
//! `e[k] + Σ N[i, k]`. Every step adds, multiplies or divides non-negative
//! numbers, so each computed quantity (pivots, factors, inverse entries,
//! solutions) has a small *relative* error whatever the conditioning of `M`;
//! there is no cancellation. The arithmetic is generic over a [`Domain`]:
//! plain `f64` ([`Linear`]) or logarithms of the values ([`Log`]) when the
//! weights span more than the range of `f64`.

use crate::error::{OmklError, Result};

/// Arithmetic on non-negative numbers stored as `f64`: either the numbers
/// themselves ([`Linear`]) or their logarithms ([`Log`]).
pub trait Domain {
    /// The stored form of 0.
    const ZERO: f64;
    /// The stored form of `exp(x)`.
    fn from_ln(x: f64) -> f64;
    /// `ln` of the stored value.
    fn ln(a: f64) -> f64;
    /// Sum.
    fn add(a: f64, b: f64) -> f64;
    /// Product.
    fn mul(a: f64, b: f64) -> f64;
    /// Quotient (`b > 0`).
    fn div(a: f64, b: f64) -> f64;
    /// `max(a − b, 0)`.
    fn sub_clamped(a: f64, b: f64) -> f64;
    /// The number itself.
    fn value(a: f64) -> f64;
}

/// Plain `f64` arithmetic.
#[derive(Debug, Clone, Copy)]
pub struct Linear;

/// Arithmetic on logarithms: `add` is log-sum-exp, `mul` is `+`.
#[derive(Debug, Clone, Copy)]
pub struct Log;

impl Domain for Linear {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn from_ln(x: f64) -> f64 {
        x.exp()
    }
    #[inline(always)]
    fn ln(a: f64) -> f64 {
        a.ln()
    }
    #[inline(always)]
    fn add(a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn mul(a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn div(a: f64, b: f64) -> f64 {
        a / b
    }
    #[inline(always)]
    fn sub_clamped(a: f64, b: f64) -> f64 {
        (a - b).max(0.0)
    }
    #[inline(always)]
    fn value(a: f64) -> f64 {
        a
    }
}

impl Domain for Log {
    const ZERO: f64 = f64::NEG_INFINITY;
    #[inline(always)]
    fn from_ln(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn ln(a: f64) -> f64 {
        a
    }
    #[inline(always)]
    fn add(a: f64, b: f64) -> f64 {
        let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
        if lo == f64::NEG_INFINITY {
            hi
        } else {
            hi + (lo - hi).exp().ln_1p()
        }
    }
    #[inline(always)]
    fn mul(a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn div(a: f64, b: f64) -> f64 {
        a - b
    }
    #[inline(always)]
    fn sub_clamped(a: f64, b: f64) -> f64 {
        if b >= a {
            f64::NEG_INFINITY
        } else if b == f64::NEG_INFINITY {
            a
        } else {
            a + (-(b - a).exp()).ln_1p()
        }
    }
    #[inline(always)]
    fn value(a: f64) -> f64 {
        a.exp()
    }
}

/// Factorises `M = diag(d) − N` (row-major `k × k` `n`, diagonal ignored,
/// excess `e`) in place as `M = (I − Ls)(D − Us)`: afterwards `n` holds the
/// strictly lower factor `Ls ≥ 0` below the diagonal and `Us ≥ 0` above it,
/// `d` the pivots `D > 0`; `e` is overwritten. Returns `ln det M = Σ ln D`.
///
/// Errors (naming `name`) if a pivot is zero, which for positive weights
/// only happens when the excess is zero (a singular Laplacian).
///
/// # Complexity
/// O(k³).
///
/// # Example
/// ```
/// use omkl_core::decode::lu::{gth_factor, Linear};
/// // M = [[2, -1], [-1, 3]]: N = [[_, 1], [1, _]], excess e = [1, 2].
/// let mut n = [0.0, 1.0, 1.0, 0.0];
/// let mut e = [1.0, 2.0];
/// let mut d = [0.0; 2];
/// let log_det = gth_factor::<Linear>(&mut n, &mut e, &mut d, 2, "m").unwrap();
/// assert!((log_det - 5f64.ln()).abs() < 1e-15);
/// ```
pub fn gth_factor<D: Domain>(
    n: &mut [f64],
    e: &mut [f64],
    d: &mut [f64],
    k: usize,
    name: &str,
) -> Result<f64> {
    let mut log_det = 0.0;
    for c in 0..k {
        let mut piv = e[c];
        for r in c + 1..k {
            piv = D::add(piv, n[r * k + c]);
        }
        if piv == D::ZERO || D::ln(piv).is_nan() {
            return Err(OmklError::invalid(
                name,
                "the Laplacian is singular (a zero pivot)",
            ));
        }
        d[c] = piv;
        log_det += D::ln(piv);
        let g = D::div(e[c], piv);
        for j in c + 1..k {
            e[j] = D::add(e[j], D::mul(n[c * k + j], g));
        }
        for r in c + 1..k {
            let f = D::div(n[r * k + c], piv);
            n[r * k + c] = f;
            if f != D::ZERO {
                let (top, bottom) = n.split_at_mut(r * k);
                let prow = &top[c * k + c + 1..c * k + k];
                let rrow = &mut bottom[c + 1..k];
                for (x, &y) in rrow.iter_mut().zip(prow) {
                    *x = D::add(*x, D::mul(f, y));
                }
            }
        }
    }
    Ok(log_det)
}

/// Writes `M⁻¹` (row-major `k × k`, every entry `≥ 0`) into `inv`, given the
/// factorisation from [`gth_factor`]. Only sums of non-negative terms are
/// formed.
///
/// # Complexity
/// O(k³).
pub fn gth_inverse<D: Domain>(lu: &[f64], d: &[f64], k: usize, inv: &mut [f64]) {
    inv.fill(D::ZERO);
    for i in 0..k {
        inv[i * k + i] = D::from_ln(0.0);
    }
    // X = (I − Ls)⁻¹: row r of X is e_r + Σ_{c<r} Ls[r, c] · row c.
    for r in 0..k {
        for c in 0..r {
            let f = lu[r * k + c];
            if f != D::ZERO {
                let (top, bottom) = inv.split_at_mut(r * k);
                for (x, &y) in bottom[..k].iter_mut().zip(&top[c * k..c * k + k]) {
                    *x = D::add(*x, D::mul(f, y));
                }
            }
        }
    }
    // Y = (D − Us)⁻¹ X: row r of Y is (row r of X + Σ_{c>r} Us[r, c] · row c of Y) / D[r].
    for r in (0..k).rev() {
        for c in r + 1..k {
            let f = lu[r * k + c];
            if f != D::ZERO {
                let (top, bottom) = inv.split_at_mut(c * k);
                for (x, &y) in top[r * k..r * k + k].iter_mut().zip(&bottom[..k]) {
                    *x = D::add(*x, D::mul(f, y));
                }
            }
        }
        for x in inv[r * k..r * k + k].iter_mut() {
            *x = D::div(*x, d[r]);
        }
    }
}

/// Solves `pᵀ M = aᵀ` for `p` (written into `a`), given the factorisation
/// from [`gth_factor`] and `a ≥ 0`; only non-negative terms are summed.
///
/// # Complexity
/// O(k²).
pub fn gth_solve_left<D: Domain>(lu: &[f64], d: &[f64], k: usize, a: &mut [f64]) {
    // zᵀ (D − Us) = aᵀ, forward over columns.
    for j in 0..k {
        let mut acc = a[j];
        for c in 0..j {
            acc = D::add(acc, D::mul(a[c], lu[c * k + j]));
        }
        a[j] = D::div(acc, d[j]);
    }
    // pᵀ (I − Ls) = zᵀ, backward.
    for i in (0..k).rev() {
        let mut acc = a[i];
        for c in i + 1..k {
            acc = D::add(acc, D::mul(a[c], lu[c * k + i]));
        }
        a[i] = acc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column-dominant M-matrix from weights, as (N, e, dense M).
    fn example(k: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut n = vec![0.0; k * k];
        let e: Vec<f64> = (0..k).map(|j| 0.1 + j as f64 * 0.3).collect();
        for i in 0..k {
            for j in 0..k {
                if i != j {
                    n[i * k + j] = ((i * 7 + j * 3) % 5) as f64 * 0.5 + 0.25;
                }
            }
        }
        let mut m = vec![0.0; k * k];
        for j in 0..k {
            let mut dj = e[j];
            for i in 0..k {
                if i != j {
                    m[i * k + j] = -n[i * k + j];
                    dj += n[i * k + j];
                }
            }
            m[j * k + j] = dj;
        }
        (n, e, m)
    }

    fn check<D: Domain>() {
        let k = 5;
        let (n0, e0, m) = example(k);
        let to = |v: &[f64]| v.iter().map(|&x| D::from_ln(x.ln())).collect::<Vec<_>>();
        let (mut n, mut e) = (to(&n0), to(&e0));
        let mut d = vec![0.0; k];
        let log_det = gth_factor::<D>(&mut n, &mut e, &mut d, k, "m").unwrap();
        let mut inv = vec![0.0; k * k];
        gth_inverse::<D>(&n, &d, k, &mut inv);
        let inv: Vec<f64> = inv.iter().map(|&x| D::value(x)).collect();
        for i in 0..k {
            for j in 0..k {
                let v: f64 = (0..k).map(|t| m[i * k + t] * inv[t * k + j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        // det by cofactor-free elimination with pivoting for comparison.
        let mut a = m.clone();
        let mut det = 1.0;
        for c in 0..k {
            let p = (c..k)
                .max_by(|&x, &y| a[x * k + c].abs().total_cmp(&a[y * k + c].abs()))
                .unwrap();
            if p != c {
                for j in 0..k {
                    a.swap(c * k + j, p * k + j);
                }
                det = -det;
            }
            det *= a[c * k + c];
            for r in c + 1..k {
                let f = a[r * k + c] / a[c * k + c];
                for j in c..k {
                    a[r * k + j] -= f * a[c * k + j];
                }
            }
        }
        assert!((log_det - det.ln()).abs() < 1e-12);
        // pᵀ M = aᵀ.
        let rhs = [1.0, 0.5, 0.0, 2.0, 0.25];
        let mut p = to(&rhs);
        gth_solve_left::<D>(&n, &d, k, &mut p);
        let p: Vec<f64> = p.iter().map(|&x| D::value(x)).collect();
        for j in 0..k {
            let v: f64 = (0..k).map(|i| p[i] * m[i * k + j]).sum();
            assert!((v - rhs[j]).abs() < 1e-12);
        }
    }

    #[test]
    fn factor_inverse_and_solve_agree_with_dense_algebra() {
        check::<Linear>();
        check::<Log>();
    }

    #[test]
    fn zero_excess_is_singular() {
        let mut n = [0.0, 1.0, 1.0, 0.0];
        let mut e = [0.0, 0.0];
        let mut d = [0.0; 2];
        assert!(gth_factor::<Linear>(&mut n, &mut e, &mut d, 2, "m").is_err());
    }
}
