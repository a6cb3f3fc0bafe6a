//! A vectorisable single-precision `exp` for the Gaussian kernel map.
//!
//! `f32::exp` is a call into libm, one element at a time. This version uses
//! only multiplications, additions, `floor` and integer bit operations, so a
//! loop over a slice compiles to SIMD code. It is the Cephes `expf`
//! reduction: `exp(x) = 2^n · exp(r)` with `n = ⌊x log₂e + ½⌋`, `r = x − n ln 2`
//! (ln 2 split in two parts so the reduction is exact) and a degree-5
//! polynomial for `exp(r)` on `|r| ≤ ln2/2`.
//!
//! Accuracy: relative error below `2.5e-7` (about two units in the last
//! place) for `x ∈ [−87.3, 88.7]`; arguments below `ln(f32::MIN_POSITIVE) ≈
//! −87.34` return 0 (the true value is below `1.2e-38`), arguments above
//! `88.7` return `+∞`. NaN is not expected (the Gram inputs are checked).
//!
//! No fused multiply-add is used, so the result is the same bits on every
//! x86-64 and aarch64 code path (scalar, SSE2 or AVX2).

const LOG2E: f32 = std::f32::consts::LOG2_E;
const C1: f32 = 0.693_359_4;
const C2: f32 = -2.121_944_4e-4;
const P0: f32 = 1.987_569_1e-4;
const P1: f32 = 1.398_199_9e-3;
const P2: f32 = 8.333_452e-3;
const P3: f32 = 4.166_579_6e-2;
const P4: f32 = 1.666_666_5e-1;
const P5: f32 = 0.5;
/// `ln(f32::MIN_POSITIVE)`: below this the result would be subnormal.
const MIN_ARG: f32 = -87.336_55;
/// `1.5 · 2^23`: integers `|n| < 2^22` added to it land in the mantissa.
const MAGIC: f32 = 12_582_912.0;
/// Above this `exp` overflows f32.
const MAX_ARG: f32 = 88.722_83;

/// `e^x` in f32, branch-free (see the module documentation for accuracy).
///
/// # Complexity
/// O(1): 12 multiply-adds, a `floor` and bit operations.
///
/// # Example
/// ```
/// use omkl_core::kernel::fast_exp::exp_f32;
/// assert_eq!(exp_f32(0.0), 1.0);
/// assert!((exp_f32(-1.0) / (-1.0f32).exp() - 1.0).abs() < 3e-7);
/// assert_eq!(exp_f32(-100.0), 0.0);
/// ```
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let xc = x.clamp(MIN_ARG, MAX_ARG);
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * C1 - n * C2;
    let z = r * r;
    let p = (((((P0 * r + P1) * r + P2) * r + P3) * r + P4) * r + P5) * z + r + 1.0;
    // 2^n for n in [-126, 128]; n = 128 only at MAX_ARG, where the doubled
    // power of two keeps the exponent field in range.
    // n as i32 without a (scalar, saturating) float-to-int conversion:
    // adding 1.5 · 2^23 puts the integer n in the low mantissa bits.
    let ni = (n + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32;
    let half = ni >> 1;
    let s1 = f32::from_bits(((half + 127) as u32) << 23);
    let s2 = f32::from_bits(((ni - half + 127) as u32) << 23);
    let v = p * s1 * s2;
    if x < MIN_ARG {
        0.0
    } else if x > MAX_ARG {
        f32::INFINITY
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::exp_f32;

    #[test]
    fn matches_f64_exp_within_two_ulps() {
        let mut worst = 0.0f64;
        let mut x = -87.3f32;
        while x < 88.7 {
            let want = f64::from(x).exp();
            let got = f64::from(exp_f32(x));
            worst = worst.max(((got - want) / want).abs());
            x += 0.000_37;
        }
        assert!(worst < 2.5e-7, "max relative error {worst}");
    }

    #[test]
    fn limits() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-87.5), 0.0);
        assert_eq!(exp_f32(-1e30), 0.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert!(exp_f32(88.7).is_finite());
        assert!(exp_f32(-87.3) > 0.0);
    }
}
