//! The elementwise kernel map applied to a block of inner products.
//!
//! Every kernel of [`Kernel`] is a function of `⟨x, y⟩`, `‖x‖²` and `‖y‖²`,
//! so a Gram block is one GEMM followed by this map. Per input the map needs
//! up to two precomputed numbers (its "aux", see [`Prepared::aux`]): the
//! squared norm for distance kernels, and the reciprocal norm and offset
//! share of the input for normalised ones.
//!
//! **Normalised kernels at any scale.** A normalised kernel is the cosine
//! of the inputs augmented with `√c`, to the power `degree`:
//! `K(x, y) = (⟨x, y⟩ / (|a_x| |a_y|) + u_x u_y)^degree` with
//! `|a_x| = √(‖x‖² + c)` and `u_x = √c / |a_x|` (the cosine: `c = 0`,
//! `degree = 1`). Only the first term needs the f32 GEMM, and only its
//! relative error matters, so an input whose norm is outside
//! [`SCALE_FREE`]` = [2^-40, 2^40]`, where f32 products would underflow or
//! overflow, is divided by the power of two `2^e` nearest below its norm
//! before the GEMM (exactly, see `gram::job_with_norms`), and its
//! reciprocal norm becomes `2^e / |a_x|`. The kernel values are then those
//! of the exact formula to f32 rounding, whatever the inputs' scale.

use super::fast_exp::exp_f32;
use super::Kernel;

/// Norms of the inputs whose f32 inner products a normalised kernel reads
/// as they are: `[2^-40, 2^40]`. The products of two such inputs neither
/// overflow nor lose more than about `d · 2^-69 ‖x‖ ‖y‖` to underflow.
pub(crate) const SCALE_FREE: (f64, f64) = (9.094947017729282e-13, 1099511627776.0);

/// The exponent `e` of the power of two `2^e` by which an input of squared
/// norm `sq_norm` is divided before the GEMM of a normalised kernel: 0 for
/// a zero input and for norms in [`SCALE_FREE`], else `⌊log2 ‖x‖⌋`, which
/// brings the norm into `[1, 2)`.
pub(crate) fn scale_exponent(sq_norm: f64) -> i32 {
    let r = sq_norm.sqrt();
    if r == 0.0 || (SCALE_FREE.0..=SCALE_FREE.1).contains(&r) {
        0
    } else {
        r.log2().floor() as i32
    }
}

/// A kernel with its constants folded for the f32 hot loop.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Prepared {
    Linear,
    /// `ip · g_x · g_y`, with `g = 2^e/‖x‖` (0 for a zero input) and `ip`
    /// the inner product of the inputs divided by `2^e` (see the module
    /// docs).
    Cosine,
    Poly {
        degree: i32,
        offset: f32,
    },
    /// `(ip · g_x · g_y + u_x · u_y)^degree`, with `g = 2^e/√(‖x‖² + c)`
    /// (0 for a zero input), `u = √(c / (‖x‖² + c))` and `ip` as for
    /// [`Prepared::Cosine`].
    PolyNormalized {
        degree: i32,
        offset: f64,
    },
    /// `exp(neg_inv · max(0, n_x + n_y − 2 ip))`, `neg_inv = −1/(2σ²)`.
    Gaussian {
        neg_inv: f32,
    },
    /// `max(0, 1 − √max(0, n_x + n_y − 2 ip) · inv_h)`.
    B1 {
        inv_h: f32,
    },
}

impl Prepared {
    /// Folds the constants of a (checked) kernel.
    pub(crate) fn new(kernel: &Kernel) -> Self {
        match *kernel {
            Kernel::Linear { normalize: false } => Prepared::Linear,
            Kernel::Linear { normalize: true } => Prepared::Cosine,
            Kernel::Polynomial {
                degree,
                offset,
                normalize,
            } => {
                let degree = super::spec::i32_degree(degree);
                if normalize {
                    Prepared::PolyNormalized { degree, offset }
                } else {
                    Prepared::Poly {
                        degree,
                        offset: offset as f32,
                    }
                }
            }
            Kernel::Gaussian { sigma2 } => Prepared::Gaussian {
                neg_inv: (-0.5 / sigma2) as f32,
            },
            Kernel::B1Spline { h } => Prepared::B1 {
                inv_h: (1.0 / h) as f32,
            },
        }
    }

    /// `true` for the normalised kernels, whose map reads the inner
    /// products of the rescaled inputs (see the module docs).
    pub(crate) fn is_normalised(&self) -> bool {
        matches!(self, Prepared::Cosine | Prepared::PolyNormalized { .. })
    }

    /// The per-input numbers `(a, b)` the map needs, from the input's
    /// squared norm (computed in f64) and the exponent `e` of the power of
    /// two `2^e` its row was divided by before the GEMM (0 when it was not):
    /// the squared norm for distance kernels; `g` and `u` of the module
    /// docs for normalised ones (`b` is 0 for every other kernel).
    pub(crate) fn aux(&self, sq_norm: f64, e: i32) -> (f32, f32) {
        // `g = 2^e / √v`, 0 for a zero input (whose inner products are 0).
        let g = |v: f64| {
            if sq_norm > 0.0 {
                (2f64.powi(e) / v.sqrt()) as f32
            } else {
                0.0
            }
        };
        match *self {
            Prepared::Linear | Prepared::Poly { .. } => (0.0, 0.0),
            Prepared::Cosine => (g(sq_norm), 0.0),
            Prepared::PolyNormalized { offset, .. } => {
                let v = sq_norm + offset;
                let u = if v > 0.0 { (offset / v).sqrt() } else { 0.0 };
                (g(v), u as f32)
            }
            Prepared::Gaussian { .. } | Prepared::B1 { .. } => (sq_norm as f32, 0.0),
        }
    }

    /// `K(x, x)` from `‖x‖²`, used to set Gram diagonals exactly.
    pub(crate) fn diag(&self, sq_norm: f64) -> f32 {
        match *self {
            Prepared::Linear => sq_norm as f32,
            Prepared::Poly { degree, offset } => (sq_norm + f64::from(offset)).powi(degree) as f32,
            Prepared::Cosine => f32::from(u8::from(sq_norm > 0.0)),
            Prepared::PolyNormalized { offset, .. } => f32::from(u8::from(sq_norm + offset > 0.0)),
            Prepared::Gaussian { .. } | Prepared::B1 { .. } => 1.0,
        }
    }

    /// `dst[j] ← K` from the inner products `src[j] = ⟨x, y_j⟩`, `x` = the
    /// aux pair of `x` and `(ay[j], by[j])` = that of `y_j` (all slices of
    /// equal length).
    /// Runs an AVX2 build of the loop when the CPU has it; the result is the
    /// same bits on every code path. The B1-spline is not handled here
    /// (see `tiles::b1_row`, which refines close pairs).
    ///
    /// # Complexity
    /// O(len(src)), vectorised; no libm calls.
    #[inline]
    pub(crate) fn map_into(&self, src: &[f32], dst: &mut [f32], x: (f32, f32), y: Aux<'_>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { map_into_avx2(self, src, dst, x, y) };
                return;
            }
        }
        map_into_generic(self, src, dst, x, y);
    }
}

/// The aux numbers `(a, b)` of a run of inputs (see [`Prepared::aux`]).
pub(crate) type Aux<'a> = (&'a [f32], &'a [f32]);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map_into_avx2(prep: &Prepared, src: &[f32], dst: &mut [f32], x: (f32, f32), y: Aux<'_>) {
    map_into_generic(prep, src, dst, x, y);
}

/// Elements per chunk of the polynomial map (binary powering on a chunk).
const POW_CHUNK: usize = 16;

/// `b^e` by binary powering, for each element of a chunk (the same
/// sequence of multiplications as `f32::powi`).
#[inline(always)]
fn pow_chunk(b: &mut [f32; POW_CHUNK], e: i32) -> [f32; POW_CHUNK] {
    let mut acc = [1.0f32; POW_CHUNK];
    let mut e = e;
    loop {
        if e & 1 == 1 {
            for t in 0..POW_CHUNK {
                acc[t] *= b[t];
            }
        }
        e >>= 1;
        if e == 0 {
            return acc;
        }
        for v in b.iter_mut() {
            *v *= *v;
        }
    }
}

#[inline(always)]
fn map_into_generic(
    prep: &Prepared,
    src: &[f32],
    dst: &mut [f32],
    (ax, bx): (f32, f32),
    (ay, by): Aux<'_>,
) {
    let n = src.len().min(dst.len()).min(ay.len()).min(by.len());
    let (src, dst, ay, by) = (&src[..n], &mut dst[..n], &ay[..n], &by[..n]);
    match *prep {
        Prepared::Linear => dst.copy_from_slice(src),
        Prepared::Cosine => {
            for ((v, &ip), &g) in dst.iter_mut().zip(src).zip(ay) {
                *v = ip * ax * g;
            }
        }
        Prepared::Poly { degree, offset } => {
            let mut chunks = dst.chunks_exact_mut(POW_CHUNK);
            let mut srcs = src.chunks_exact(POW_CHUNK);
            for (o, s) in (&mut chunks).zip(&mut srcs) {
                let mut b = [0.0f32; POW_CHUNK];
                for t in 0..POW_CHUNK {
                    b[t] = s[t] + offset;
                }
                o.copy_from_slice(&pow_chunk(&mut b, degree));
            }
            for (v, &ip) in chunks.into_remainder().iter_mut().zip(srcs.remainder()) {
                *v = (ip + offset).powi(degree);
            }
        }
        Prepared::PolyNormalized { degree, .. } => {
            let mut chunks = dst.chunks_exact_mut(POW_CHUNK);
            let mut srcs = src.chunks_exact(POW_CHUNK);
            let mut ays = ay.chunks_exact(POW_CHUNK);
            let mut bys = by.chunks_exact(POW_CHUNK);
            for (((o, s), g), u) in (&mut chunks).zip(&mut srcs).zip(&mut ays).zip(&mut bys) {
                let mut b = [0.0f32; POW_CHUNK];
                for t in 0..POW_CHUNK {
                    b[t] = s[t] * ax * g[t] + bx * u[t];
                }
                o.copy_from_slice(&pow_chunk(&mut b, degree));
            }
            let rest = chunks.into_remainder().iter_mut().zip(srcs.remainder());
            for (((v, &ip), &g), &u) in rest.zip(ays.remainder()).zip(bys.remainder()) {
                *v = (ip * ax * g + bx * u).powi(degree);
            }
        }
        Prepared::Gaussian { neg_inv } => {
            for ((v, &ip), &n) in dst.iter_mut().zip(src).zip(ay) {
                let d = (ax + n - 2.0 * ip).max(0.0);
                *v = exp_f32(neg_inv * d);
            }
        }
        Prepared::B1 { inv_h } => {
            for ((v, &ip), &n) in dst.iter_mut().zip(src).zip(ay) {
                *v = b1_f32((ax + n - 2.0 * ip).max(0.0), inv_h);
            }
        }
    }
}

/// `max(0, 1 − √d2 · inv_h)`: the B1-spline of a squared distance in f32
/// (the f32 form of [`Kernel::from_sq_dist`], shared by every Gram path).
#[inline(always)]
pub(crate) fn b1_f32(d2: f32, inv_h: f32) -> f32 {
    (1.0 - d2.sqrt() * inv_h).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_power_equals_powi() {
        for degree in 1..7 {
            let prep = Prepared::Poly {
                degree,
                offset: 0.5,
            };
            let src: Vec<f32> = (0..37).map(|i| i as f32 * 0.37 - 5.0).collect();
            let mut dst = vec![0.0f32; src.len()];
            let zeros = vec![0.0; src.len()];
            prep.map_into(&src, &mut dst, (0.0, 0.0), (&zeros, &zeros));
            for (&s, &v) in src.iter().zip(&dst) {
                assert_eq!(v, (s + 0.5).powi(degree), "degree {degree}");
            }
        }
    }
}
