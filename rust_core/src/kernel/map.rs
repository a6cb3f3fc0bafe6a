//! The elementwise kernel map applied to a block of inner products.
//!
//! Every kernel of [`Kernel`] is a function of `⟨x, y⟩`, `‖x‖²` and `‖y‖²`,
//! so a Gram block is one GEMM followed by this map. Per input the map needs
//! one precomputed number (its "aux"): the squared norm for distance kernels
//! and the inverse square root of the diagonal for normalised ones.

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
                let degree = degree.min(i32::MAX as u32) as i32;
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

    /// In place, `row[j] ← K` from `row[j] = ⟨x, y_j⟩`, `ax` = aux of `x`
    /// and `ay[j]` = aux of `y_j`.
    ///
    /// # Complexity
    /// O(len(row)); one `exp` or `sqrt` per element for the distance
    /// kernels.
    #[inline]
    pub(crate) fn map_row(&self, row: &mut [f32], ax: f32, ay: &[f32]) {
        match *self {
            Prepared::Linear => {}
            Prepared::Cosine => {
                for (v, &g) in row.iter_mut().zip(ay) {
                    // Left to right: `ax * g` alone may overflow.
                    *v = *v * ax * g;
                }
            }
            Prepared::Poly { degree, offset } => {
                for v in row.iter_mut() {
                    *v = (*v + offset).powi(degree);
                }
            }
            Prepared::PolyNormalized { degree, offset } => {
                for (v, &g) in row.iter_mut().zip(ay) {
                    *v = ((*v + offset) * ax * g).powi(degree);
                }
            }
            Prepared::Gaussian { neg_inv } => {
                for (v, &n) in row.iter_mut().zip(ay) {
                    let d = (ax + n - 2.0 * *v).max(0.0);
                    *v = (neg_inv * d).exp();
                }
            }
            Prepared::B1 { inv_h } => {
                for (v, &n) in row.iter_mut().zip(ay) {
                    let d = (ax + n - 2.0 * *v).max(0.0);
                    *v = (1.0 - d.sqrt() * inv_h).max(0.0);
                }
            }
        }
    }
}
