//! The kernel functions: linear, polynomial, Gaussian and B1-spline.

use serde::{Deserialize, Serialize};

use crate::error::{check_nonneg, check_positive, OmklError, Result};
use crate::kernel::finite::check_finite_f32;

/// A positive (semi-)definite similarity `K(x, x')` between two input
/// vectors, with its hyperparameters.
///
/// | variant | `K(x, x')` |
/// |---|---|
/// | `Linear { normalize: false }` | `⟨x, x'⟩` |
/// | `Linear { normalize: true }` | `⟨x, x'⟩ / (‖x‖ ‖x'‖)` (cosine) |
/// | `Polynomial { degree, offset, normalize: false }` | `(⟨x, x'⟩ + c)^degree` |
/// | `Polynomial { degree, offset, normalize: true }` | `(⟨x, x'⟩ + c)^degree / √((‖x‖² + c)^degree (‖x'‖² + c)^degree)` |
/// | `Gaussian { sigma2 }` | `exp(−‖x − x'‖² / (2 σ²))` |
/// | `B1Spline { h }` | `max(0, 1 − ‖x − x'‖ / h)` |
///
/// **Normalised kernels** have unit diagonal, `K(x, x) = 1`. When the
/// normaliser `√(K(x,x) K(x',x'))` is zero (a zero input with `c = 0`), the
/// normalised value is defined as 0. A normalised kernel is the cosine of
/// the inputs augmented with `√c`, to the power `degree`, and is computed
/// as such: `((⟨x, x'⟩ + c) / (√(‖x‖² + c) √(‖x'‖² + c)))^degree`, never
/// forming the powers of the norms, so its value is right at any scale of
/// the inputs (the f32 Gram routines rescale inputs whose norm is far from
/// 1 before their inner products, see `gram`).
///
/// **Gaussian parametrisation.** `sigma2` is σ² in
/// `exp(−‖x − x'‖² / (2σ²))`, the textbook convention, which is the one used
/// here for the paper's "σ² = 5" on 128 binary pixels (for the other
/// convention, `exp(−‖x − x'‖² / s)`, pass `sigma2 = s / 2`).
///
/// **B1-spline.** The radial "hat" `max(0, 1 − ‖x − x'‖/h)` has compact
/// support: pairs farther apart than `h` have kernel value exactly 0, which
/// is what makes sparse Gram storage pay off (see
/// [`crate::kernel::bandwidth::b1_bandwidth`] to choose `h`). Unlike the
/// Gaussian and polynomial kernels, this radial hat is not guaranteed to be
/// positive semi-definite in more than one dimension.
///
/// # Example
/// ```
/// use omkl_core::kernel::Kernel;
/// let k = Kernel::Gaussian { sigma2: 0.5 };
/// k.check().unwrap();
/// let v = k.eval(&[0.0, 1.0], &[1.0, 1.0]);
/// assert!((v - (-1.0f64).exp()).abs() < 1e-12);
/// assert!(Kernel::B1Spline { h: 1.0 }.has_compact_support());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Kernel {
    /// Inner product, optionally normalised to unit diagonal (cosine).
    Linear { normalize: bool },
    /// `(⟨x, x'⟩ + offset)^degree`, optionally normalised to unit diagonal.
    Polynomial {
        degree: u32,
        offset: f64,
        normalize: bool,
    },
    /// `exp(−‖x − x'‖² / (2 sigma2))`.
    Gaussian { sigma2: f64 },
    /// `max(0, 1 − ‖x − x'‖ / h)`.
    B1Spline { h: f64 },
}

impl Kernel {
    /// Validates the hyperparameters: `degree >= 1`, `offset >= 0`,
    /// `sigma2 > 0`, `h > 0`, all finite.
    pub fn check(&self) -> Result<()> {
        match *self {
            Kernel::Linear { .. } => Ok(()),
            Kernel::Polynomial { degree, offset, .. } => {
                if degree == 0 {
                    return Err(OmklError::invalid(
                        "degree",
                        "expected an integer >= 1, got 0",
                    ));
                }
                check_nonneg("offset", offset)
            }
            Kernel::Gaussian { sigma2 } => {
                check_positive("sigma2", sigma2)?;
                check_f32_reciprocal("sigma2", sigma2)
            }
            Kernel::B1Spline { h } => {
                check_positive("h", h)?;
                check_f32_reciprocal("h", h)
            }
        }
    }

    /// `true` for kernels that are exactly zero beyond a finite distance
    /// (the B1-spline), whose Gram matrices can be stored sparsely.
    pub fn has_compact_support(&self) -> bool {
        matches!(self, Kernel::B1Spline { .. })
    }

    /// `true` for kernels normalised to unit diagonal (and for the Gaussian
    /// and B1-spline, whose diagonal is 1 by construction).
    pub fn has_unit_diagonal(&self) -> bool {
        match *self {
            Kernel::Linear { normalize } | Kernel::Polynomial { normalize, .. } => normalize,
            Kernel::Gaussian { .. } | Kernel::B1Spline { .. } => true,
        }
    }

    /// [`Kernel::eval`] with every check: valid hyperparameters, non-empty
    /// finite `x` and `y` of equal length.
    pub fn eval_checked(&self, x: &[f32], y: &[f32]) -> Result<f64> {
        self.check()?;
        if x.is_empty() {
            return Err(OmklError::empty("x"));
        }
        if x.len() != y.len() {
            return Err(OmklError::shape(
                "y",
                format!("{} elements (as x)", x.len()),
                format!("{} elements", y.len()),
            ));
        }
        check_finite_f32("x", x)?;
        check_finite_f32("y", y)?;
        Ok(self.eval(x, y))
    }

    /// `K(x, y)` in f64, computed directly from the two vectors (the
    /// reference path; the Gram routines use GEMM instead): the radial
    /// kernels from `‖x − y‖²` summed coordinate by coordinate, the others
    /// from the inner products, both through the formulas of
    /// [`Kernel::from_dot`].
    /// Assumes [`Kernel::check`] passed and `x.len() == y.len()`; extra
    /// elements of the longer slice are ignored.
    ///
    /// # Complexity
    /// O(d).
    pub fn eval(&self, x: &[f32], y: &[f32]) -> f64 {
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a.iter()
                .zip(b)
                .map(|(&u, &v)| f64::from(u) * f64::from(v))
                .sum()
        };
        match *self {
            Kernel::Gaussian { .. } | Kernel::B1Spline { .. } => self.from_sq_dist(sq_dist(x, y)),
            Kernel::Linear { normalize: false } => dot(x, y),
            _ => self.from_dot(dot(x, y), dot(x, x), dot(y, y)),
        }
    }

    /// `K(x, y)` from `dot = ⟨x, y⟩`, `sxx = ‖x‖²` and `syy = ‖y‖²`, in
    /// f64: the one definition of every kernel formula (the f32 Gram map
    /// folds the same formulas' constants). Distances are formed as
    /// `sxx + syy − 2 dot`, clamped at 0; a normaliser of 0 gives 0; a
    /// normalised kernel is the power of a cosine (see [`Kernel`]), which
    /// neither overflows nor underflows before the power.
    ///
    /// # Complexity
    /// O(1).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::Kernel;
    /// let k = Kernel::Gaussian { sigma2: 0.5 };
    /// let (x, y) = ([0.0f32, 1.0], [1.0f32, 1.0]);
    /// assert!((k.from_dot(1.0, 1.0, 2.0) - k.eval(&x, &y)).abs() < 1e-12);
    /// let cos = Kernel::Linear { normalize: true };
    /// assert_eq!(cos.from_dot(3.0, 4.0, 9.0), 0.5);
    /// // the same at a scale where the product of the squared norms
    /// // would underflow f64
    /// let s = 2f64.powi(-700);
    /// assert_eq!(cos.from_dot(3.0 * s, 4.0 * s, 9.0 * s), 0.5);
    /// let quad = Kernel::Polynomial { degree: 2, offset: 0.0, normalize: true };
    /// assert_eq!(quad.from_dot(3.0 * s, 4.0 * s, 9.0 * s), 0.25);
    /// ```
    #[inline]
    pub fn from_dot(&self, dot: f64, sxx: f64, syy: f64) -> f64 {
        match *self {
            Kernel::Linear { normalize } => {
                if normalize {
                    normalise(dot, sxx, syy)
                } else {
                    dot
                }
            }
            Kernel::Polynomial {
                degree,
                offset,
                normalize,
            } => {
                if normalize {
                    pow_u32(normalise(dot + offset, sxx + offset, syy + offset), degree)
                } else {
                    pow_u32(dot + offset, degree)
                }
            }
            Kernel::Gaussian { .. } | Kernel::B1Spline { .. } => {
                self.from_sq_dist((sxx + syy - 2.0 * dot).max(0.0))
            }
        }
    }

    /// `K(x, y)` of a radial kernel (Gaussian, B1-spline) from
    /// `d2 = ‖x − y‖² ≥ 0`; NaN for the other kernels.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::Kernel;
    /// assert_eq!(Kernel::B1Spline { h: 2.0 }.from_sq_dist(1.0), 0.5);
    /// assert_eq!(Kernel::B1Spline { h: 2.0 }.from_sq_dist(9.0), 0.0);
    /// ```
    #[inline]
    pub fn from_sq_dist(&self, d2: f64) -> f64 {
        match *self {
            Kernel::Gaussian { sigma2 } => (-d2 / (2.0 * sigma2)).exp(),
            Kernel::B1Spline { h } => (1.0 - d2.sqrt() / h).max(0.0),
            Kernel::Linear { .. } | Kernel::Polynomial { .. } => f64::NAN,
        }
    }
}

/// `⟨x, y⟩` in f64 over the first `min(len)` elements, in four running
/// sums (the scoring loops' dot product).
#[inline]
pub fn dot_f32(x: &[f32], y: &[f32]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for k in 0..4 {
            acc[k] += f64::from(a[k]) * f64::from(b[k]);
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (a, b) in xr.iter().zip(yr) {
        s += f64::from(*a) * f64::from(*b);
    }
    s
}

/// The Gram routines work in f32 with `1/v`: reject `v` so small that it
/// overflows.
fn check_f32_reciprocal(name: &str, v: f64) -> Result<()> {
    if ((0.5 / v) as f32).is_finite() {
        Ok(())
    } else {
        Err(OmklError::invalid(
            name,
            format!("expected a number >= 1e-38 (f32 range), got {v}"),
        ))
    }
}

/// `k / (√kxx √kyy)`, or 0 when the normaliser is 0. The square roots
/// are taken apart (and `k` divided by each) so that neither their product
/// nor the quotient leaves the f64 range before the result does.
fn normalise(k: f64, kxx: f64, kyy: f64) -> f64 {
    let (a, b) = (kxx.sqrt(), kyy.sqrt());
    if a > 0.0 && b > 0.0 {
        k / a / b
    } else {
        0.0
    }
}

/// `‖x − y‖²` in f64.
fn sq_dist(x: &[f32], y: &[f32]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(&u, &v)| {
            let t = f64::from(u) - f64::from(v);
            t * t
        })
        .sum()
}

/// `x` to the power `n`, exact in sign and to rounding for every `u32`
/// degree (`powi` takes an `i32`: a cast would wrap 2^31 to −2^31).
pub(crate) fn pow_u32(x: f64, n: u32) -> f64 {
    match i32::try_from(n) {
        Ok(e) => x.powi(e),
        Err(_) => {
            let half = x.powi((n / 2) as i32);
            let even = half * half;
            if n % 2 == 1 {
                even * x
            } else {
                even
            }
        }
    }
}

/// The `i32` exponent of the f32 kernel loops for a `u32` degree: degrees
/// beyond `i32::MAX` clamp to the largest `i32` of the same parity, which
/// keeps the sign of a negative base and the limits 0, ±1 and ±inf.
pub(crate) fn i32_degree(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(if n % 2 == 1 { i32::MAX } else { i32::MAX - 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_beyond_i32_keep_their_sign_and_value() {
        let big = 1u32 << 31;
        for n in [1u32, 2, 7, 1000, i32::MAX as u32] {
            assert_eq!(pow_u32(1.5, n), 1.5f64.powi(n as i32));
        }
        assert_eq!(pow_u32(-1.0, big), 1.0);
        assert_eq!(pow_u32(-1.0, big + 1), -1.0);
        assert_eq!(pow_u32(6.0, big), f64::INFINITY);
        assert_eq!(pow_u32(0.5, big), 0.0);
        let x: f64 = 1.0 + 1e-10;
        let want = (f64::from(big) * x.ln()).exp();
        assert!((pow_u32(x, big) / want - 1.0).abs() < 1e-9);
        assert_eq!(i32_degree(big), i32::MAX - 1);
        assert_eq!(i32_degree(big + 1), i32::MAX);
        assert_eq!(i32_degree(3), 3);
        let k = Kernel::Polynomial {
            degree: big,
            offset: 1.0,
            normalize: false,
        };
        assert_eq!(k.eval(&[1.0, 2.0], &[1.0, 2.0]), f64::INFINITY);
    }

    #[test]
    fn check_rejects_bad_hyperparameters() {
        let bad = [
            Kernel::Gaussian { sigma2: -1.0 },
            Kernel::Gaussian { sigma2: 0.0 },
            Kernel::Gaussian { sigma2: f64::NAN },
            Kernel::B1Spline { h: 0.0 },
            Kernel::Polynomial {
                degree: 0,
                offset: 1.0,
                normalize: false,
            },
            Kernel::Polynomial {
                degree: 2,
                offset: -1.0,
                normalize: false,
            },
        ];
        for k in bad {
            assert!(k.check().is_err(), "{k:?}");
        }
        let e = Kernel::Gaussian { sigma2: -1.0 }.check().unwrap_err();
        assert!(e.to_string().contains("sigma2"));
    }

    #[test]
    fn closed_forms() {
        let x = [1.0f32, 2.0];
        let y = [3.0f32, -1.0];
        let lin = Kernel::Linear { normalize: false };
        assert_eq!(lin.eval(&x, &y), 1.0);
        let poly = Kernel::Polynomial {
            degree: 2,
            offset: 1.0,
            normalize: true,
        };
        let expected = 4.0 / (36.0f64 * 121.0).sqrt();
        assert!((poly.eval(&x, &y) - expected).abs() < 1e-12);
        let b1 = Kernel::B1Spline { h: 10.0 };
        assert!((b1.eval(&x, &y) - (1.0 - 13.0f64.sqrt() / 10.0)).abs() < 1e-12);
        assert_eq!(Kernel::B1Spline { h: 1.0 }.eval(&x, &y), 0.0);
        let cos = Kernel::Linear { normalize: true };
        assert_eq!(cos.eval(&[0.0, 0.0], &x), 0.0);
    }
}
