//! The elementwise kernel map applied to a block of inner products.
//!
//! Every kernel of [`Kernel`] is a function of `⟨x, y⟩`, `‖x‖²` and `‖y‖²`,
//! so a Gram block is one GEMM followed by this map. Per input the map needs
//! one precomputed number (its "aux"): the squared norm for distance kernels
//! and the inverse square root of the diagonal for normalised ones.

use super::fast_exp::exp_f32;
use super::Kernel;

/// A kernel with its constants folded for the f32 hot loop.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Prepared {
    Linear,
    /// `ip · g_x · g_y`, with `g = 1/‖x‖` (0 for a zero input).
    Cosine,
    Poly {
        degree: i32,
        offset: f32,
    },
    /// `((ip + c) · g_x · g_y)^degree`, with `g = 1/√(‖x‖² + c)`.
    PolyNormalized {
        degree: i32,
        offset: f32,
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
                let offset = offset as f32;
                if normalize {
                    Prepared::PolyNormalized { degree, offset }
                } else {
                    Prepared::Poly { degree, offset }
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

    /// The per-input number the map needs, from the input's squared norm
    /// (computed in f64).
    pub(crate) fn aux(&self, sq_norm: f64) -> f32 {
        // 0 also when 1/√v overflows f32: such inputs (‖x‖² below about
        // 1e-76) are treated as zero vectors by the normalised kernels.
        let inv_sqrt = |v: f64| {
            let g = if v > 0.0 { 1.0 / v.sqrt() } else { 0.0 };
            if (g as f32).is_finite() {
                g
            } else {
                0.0
            }
        };
        match *self {
            Prepared::Linear | Prepared::Poly { .. } => 0.0,
            Prepared::Cosine => inv_sqrt(sq_norm) as f32,
            Prepared::PolyNormalized { offset, .. } => inv_sqrt(sq_norm + f64::from(offset)) as f32,
            Prepared::Gaussian { .. } | Prepared::B1 { .. } => sq_norm as f32,
        }
    }

    /// `K(x, x)` from `‖x‖²`, used to set Gram diagonals exactly.
    pub(crate) fn diag(&self, sq_norm: f64) -> f32 {
        match *self {
            Prepared::Linear => sq_norm as f32,
            Prepared::Poly { degree, offset } => (sq_norm + f64::from(offset)).powi(degree) as f32,
            Prepared::Cosine | Prepared::PolyNormalized { .. } => {
                if self.aux(sq_norm) > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Prepared::Gaussian { .. } | Prepared::B1 { .. } => 1.0,
        }
    }

    /// `dst[j] ← K` from the inner products `src[j] = ⟨x, y_j⟩`, `ax` = aux
    /// of `x` and `ay[j]` = aux of `y_j` (all slices of equal length).
    /// Runs an AVX2 build of the loop when the CPU has it; the result is the
    /// same bits on every code path. The B1-spline is not handled here
    /// (see `tiles::b1_row`, which refines close pairs).
    ///
    /// # Complexity
    /// O(len(src)), vectorised; no libm calls.
    #[inline]
    pub(crate) fn map_into(&self, src: &[f32], dst: &mut [f32], ax: f32, ay: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { map_into_avx2(self, src, dst, ax, ay) };
                return;
            }
        }
        map_into_generic(self, src, dst, ax, ay);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map_into_avx2(prep: &Prepared, src: &[f32], dst: &mut [f32], ax: f32, ay: &[f32]) {
    map_into_generic(prep, src, dst, ax, ay);
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
fn map_into_generic(prep: &Prepared, src: &[f32], dst: &mut [f32], ax: f32, ay: &[f32]) {
    let n = src.len().min(dst.len()).min(ay.len());
    let (src, dst, ay) = (&src[..n], &mut dst[..n], &ay[..n]);
    match *prep {
        Prepared::Linear => dst.copy_from_slice(src),
        Prepared::Cosine => {
            for ((v, &ip), &g) in dst.iter_mut().zip(src).zip(ay) {
                // Left to right: `ax * g` alone may overflow.
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
        Prepared::PolyNormalized { degree, offset } => {
            let mut chunks = dst.chunks_exact_mut(POW_CHUNK);
            let mut srcs = src.chunks_exact(POW_CHUNK);
            let mut ays = ay.chunks_exact(POW_CHUNK);
            for ((o, s), g) in (&mut chunks).zip(&mut srcs).zip(&mut ays) {
                let mut b = [0.0f32; POW_CHUNK];
                for t in 0..POW_CHUNK {
                    b[t] = (s[t] + offset) * ax * g[t];
                }
                o.copy_from_slice(&pow_chunk(&mut b, degree));
            }
            let rest = chunks.into_remainder().iter_mut().zip(srcs.remainder());
            for ((v, &ip), &g) in rest.zip(ays.remainder()) {
                *v = ((ip + offset) * ax * g).powi(degree);
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
            prep.map_into(&src, &mut dst, 0.0, &vec![0.0; src.len()]);
            for (&s, &v) in src.iter().zip(&dst) {
                assert_eq!(v, (s + 0.5).powi(degree), "degree {degree}");
            }
        }
    }
}
