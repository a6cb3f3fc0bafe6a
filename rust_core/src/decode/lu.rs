//! Dense LU factorisation with partial pivoting, for log-determinants and
//! inverses of the small Laplacians of the matrix-tree theorem.

use crate::error::{OmklError, Result};

/// Factorises the row-major `k × k` matrix `a` in place as `P·A = L·U`
/// (unit lower `L` below the diagonal, `U` on and above), records the row
/// permutation in `piv`, and returns `(sign, log |det A|)`.
///
/// Errors if a pivot is zero or not finite (numerically singular matrix).
///
/// # Complexity
/// O(k³).
///
/// # Example
/// ```
/// use omkl_core::decode::lu::lu_factor;
/// let mut a = [0.0, 2.0, 3.0, 1.0]; // det = -6
/// let mut piv = [0; 2];
/// let (sign, log_abs) = lu_factor(&mut a, 2, &mut piv).unwrap();
/// assert_eq!(sign, -1.0);
/// assert!((log_abs - 6f64.ln()).abs() < 1e-12);
/// ```
pub fn lu_factor(a: &mut [f64], k: usize, piv: &mut [usize]) -> Result<(f64, f64)> {
    let mut sign = 1.0;
    let mut log_abs = 0.0;
    for c in 0..k {
        let mut p = c;
        let mut best = a[c * k + c].abs();
        for r in c + 1..k {
            let v = a[r * k + c].abs();
            if v > best {
                best = v;
                p = r;
            }
        }
        if best == 0.0 || !best.is_finite() {
            return Err(OmklError::invalid(
                "scores",
                "the Laplacian is numerically singular (scores too extreme)",
            ));
        }
        piv[c] = p;
        if p != c {
            for j in 0..k {
                a.swap(c * k + j, p * k + j);
            }
            sign = -sign;
        }
        let d = a[c * k + c];
        if d < 0.0 {
            sign = -sign;
        }
        log_abs += d.abs().ln();
        for r in c + 1..k {
            let f = a[r * k + c] / d;
            a[r * k + c] = f;
            if f != 0.0 {
                let (top, bottom) = a.split_at_mut(r * k);
                let prow = &top[c * k + c + 1..c * k + k];
                let rrow = &mut bottom[c + 1..k];
                for (x, y) in rrow.iter_mut().zip(prow) {
                    *x -= f * y;
                }
            }
        }
    }
    Ok((sign, log_abs))
}

/// Writes `A⁻¹` (row-major `k × k`) into `inv`, given the factorisation
/// from [`lu_factor`].
///
/// # Complexity
/// O(k³).
pub fn lu_inverse(lu: &[f64], k: usize, piv: &[usize], inv: &mut [f64]) {
    // Solve A X = I column by column, X stored transposed then fixed up.
    inv.fill(0.0);
    for i in 0..k {
        inv[i * k + i] = 1.0;
    }
    // Apply the permutation to the rows of the identity.
    for (c, &p) in piv.iter().enumerate().take(k) {
        if p != c {
            for j in 0..k {
                inv.swap(c * k + j, p * k + j);
            }
        }
    }
    // Forward substitution with unit L, row-oriented over all right sides.
    for r in 0..k {
        for c in 0..r {
            let f = lu[r * k + c];
            if f != 0.0 {
                let (top, bottom) = inv.split_at_mut(r * k);
                for (x, y) in bottom[..k].iter_mut().zip(&top[c * k..c * k + k]) {
                    *x -= f * y;
                }
            }
        }
    }
    // Back substitution with U.
    for r in (0..k).rev() {
        for c in r + 1..k {
            let f = lu[r * k + c];
            if f != 0.0 {
                let (top, bottom) = inv.split_at_mut(c * k);
                for (x, y) in top[r * k..r * k + k].iter_mut().zip(&bottom[..k]) {
                    *x -= f * y;
                }
            }
        }
        let d = lu[r * k + r];
        for x in inv[r * k..r * k + k].iter_mut() {
            *x /= d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_times_matrix_is_identity() {
        let a0 = [
            4.0, 1.0, 2.0, 0.5, 0.0, 3.0, 1.0, 2.0, 1.0, 1.0, 5.0, 0.0, 2.0, 0.0, 1.0, 3.0,
        ];
        let k = 4;
        let mut a = a0;
        let mut piv = [0; 4];
        lu_factor(&mut a, k, &mut piv).unwrap();
        let mut inv = [0.0; 16];
        lu_inverse(&a, k, &piv, &mut inv);
        for i in 0..k {
            for j in 0..k {
                let v: f64 = (0..k).map(|t| a0[i * k + t] * inv[t * k + j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        let mut z = [0.0; 4];
        assert!(lu_factor(&mut z, 2, &mut piv).is_err());
    }
}
