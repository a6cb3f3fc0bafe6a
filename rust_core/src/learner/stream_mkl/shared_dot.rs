//! Kernel values from one shared dot product: scoring an input against a
//! support input computes `⟨x, x'⟩` once and derives every kernel from it
//! and the two squared norms.

use crate::kernel::Kernel;

/// `⟨x, y⟩` in f64 over the first `min(len)` elements.
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

/// `K(x, y)` from `dot = ⟨x, y⟩`, `sxx = ‖x‖²` and `syy = ‖y‖²`; agrees
/// with [`Kernel::eval`] up to rounding (distances are formed as
/// `sxx + syy − 2 dot`, clamped at 0).
///
/// # Complexity
/// O(1).
///
/// # Example
/// ```
/// use omkl_core::kernel::Kernel;
/// use omkl_core::learner::stream_mkl::kernel_from_dot;
/// let k = Kernel::Gaussian { sigma2: 0.5 };
/// let (x, y) = ([0.0f32, 1.0], [1.0f32, 1.0]);
/// let v = kernel_from_dot(&k, 1.0, 1.0, 2.0);
/// assert!((v - k.eval(&x, &y)).abs() < 1e-12);
/// ```
#[inline]
pub fn kernel_from_dot(kernel: &Kernel, dot: f64, sxx: f64, syy: f64) -> f64 {
    match *kernel {
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
            let p = |v: f64| (v + offset).powi(degree as i32);
            if normalize {
                normalise(p(dot), p(sxx), p(syy))
            } else {
                p(dot)
            }
        }
        Kernel::Gaussian { sigma2 } => (-(sxx + syy - 2.0 * dot).max(0.0) / (2.0 * sigma2)).exp(),
        Kernel::B1Spline { h } => (1.0 - (sxx + syy - 2.0 * dot).max(0.0).sqrt() / h).max(0.0),
    }
}

fn normalise(k: f64, kxx: f64, kyy: f64) -> f64 {
    let z = (kxx * kyy).sqrt();
    if z > 0.0 {
        k / z
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::stream_mkl::support::sq_norm_f32;

    #[test]
    fn agrees_with_eval() {
        let x = [0.3f32, -1.2, 2.0, 0.5, 0.1];
        let y = [1.1f32, 0.4, -0.7, 0.0, 2.5];
        let kernels = [
            Kernel::Linear { normalize: false },
            Kernel::Linear { normalize: true },
            Kernel::Polynomial {
                degree: 3,
                offset: 1.0,
                normalize: true,
            },
            Kernel::Polynomial {
                degree: 2,
                offset: 0.5,
                normalize: false,
            },
            Kernel::Gaussian { sigma2: 2.0 },
            Kernel::B1Spline { h: 5.0 },
            Kernel::B1Spline { h: 1.0 },
        ];
        for k in &kernels {
            let v = kernel_from_dot(k, dot_f32(&x, &y), sq_norm_f32(&x), sq_norm_f32(&y));
            assert!((v - k.eval(&x, &y)).abs() < 1e-12, "{k:?}");
        }
    }
}
