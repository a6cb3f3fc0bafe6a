//! Explicit feature maps of a kernel, evaluated on one input at a time: the
//! random Fourier features `z(x) = s cos(Wᵀx + b)` of a Gaussian (Rahimi and
//! Recht, 2007) and the Nyström features `z(x) = M k_L(x)` on landmarks `L`
//! with `M = K_LL^{-1/2}` (Williams and Seeger, 2001).
//!
//! A map reads the first [`FeatureMap::input_dim`] values of a row and
//! writes [`FeatureMap::width`] features. The parameters (`W`, `b`, `s`;
//! the landmarks, the kernel and `M`) are drawn or computed by the caller:
//! the map only evaluates them, so that one set of parameters gives the
//! same features wherever it is evaluated.
//!
//! The Fourier map computes `Wᵀx + b` in f32 (`W` stored `d × D`, as the
//! caller draws it: one multiply-add pass over the `D` features per input
//! value) and its cosine with [`cos_f32`], a vectorisable cosine. The
//! Nyström map works in f64: kernel values through the formulas of
//! [`Kernel::from_sq_dist`] and [`Kernel::from_dot`], then the product with
//! `M` (whose entries can be large when `K_LL` is ill-conditioned).
//!
//! [`FeatureMaps`] appends several maps to an input row; [`MapSlot`] is how
//! a model holds them (shared by its copies, never saved).

use std::sync::Arc;

use crate::error::{check_count, check_finite, OmklError, Result};
use crate::kernel::finite::check_finite_f32;
use crate::kernel::Kernel;
use crate::macros::target_feature_fns;

/// `π / 4` in three parts (Cody–Waite): `y · DP1` and `y · DP2` are exact
/// for the quadrant numbers met (`|y| < 2^13`).
const DP1: f32 = 0.785_156_25;
const DP2: f32 = 2.418_756_5e-4;
const DP3: f32 = 3.774_895e-8;
/// `1.5 · 2^23`: integers `|n| < 2^22` added to it land in the mantissa.
const MAGIC: f32 = 12_582_912.0;
/// Beyond this the three-part reduction loses accuracy.
const MAX_ARG: f32 = 8192.0;

/// `cos(x)` in f32 without branches or a libm call, so that a loop over a
/// slice compiles to SIMD code. It is the Cephes `cosf` reduction: the even
/// quadrant `j` nearest to `|x| 4/π`, `r = |x| − j π/4` in three exact
/// parts, then the sine or cosine polynomial on `|r| ≤ π/4` and the sign of
/// the quadrant.
///
/// Accuracy: absolute error below `2e-7` for `|x| ≤ 8192`; larger
/// arguments are clamped to ±8192 (the features of a Gaussian with a
/// sensible bandwidth stay far below).
///
/// # Complexity
/// O(1): two short polynomials, a `floor` and bit operations.
///
/// # Example
/// ```
/// use omkl_core::kernel::feature_map::cos_f32;
/// for &x in &[0.0f32, 0.5, -1.0, 3.0, 100.0, -2500.25] {
///     assert!((cos_f32(x) - x.cos()).abs() < 2e-7);
/// }
/// ```
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    let a = x.abs().min(MAX_ARG);
    // j = 2 round(a 2/π): the even quadrant nearest to a, so that r lies in
    // [-π/4, π/4]; rounded by adding 1.5 · 2^23 (no `floor`, which is a libm
    // call without SSE4.1, nor a float-to-int conversion)
    let t = a * std::f32::consts::FRAC_2_PI + MAGIC;
    let j = (t.to_bits() as i32 - MAGIC.to_bits() as i32) * 2;
    let y = (t - MAGIC) * 2.0;
    let r = ((a - y * DP1) - y * DP2) - y * DP3;
    let z = r * r;
    let cos_p =
        ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0;
    let sin_p = ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * r + r;
    // j mod 8 is 0, 2, 4 or 6: cos r, −sin r, −cos r, sin r
    let q = j & 7;
    let v = if q & 2 == 0 { cos_p } else { sin_p };
    let neg = (q == 2) | (q == 4);
    if neg {
        -v
    } else {
        v
    }
}

/// `out = scale · cos(Wᵀx + b)` (`W` row-major `x.len() × out.len()`):
/// one multiply-add pass over the features per non-zero input value, then
/// the cosine, in the widest SIMD the CPU has. Every version does the same
/// operations on each feature (separate products and sums, no fused
/// multiply-add), so the features are the same bit for bit on every CPU.
///
/// # Complexity
/// O(d D).
fn fourier_fill(x: &[f32], w: &[f32], b: &[f32], scale: f32, out: &mut [f32]) {
    #[inline(always)]
    fn fill(x: &[f32], w: &[f32], b: &[f32], scale: f32, out: &mut [f32]) {
        out.copy_from_slice(b);
        for (&xi, row) in x.iter().zip(w.chunks_exact(out.len().max(1))) {
            if xi != 0.0 {
                for (o, &wij) in out.iter_mut().zip(row) {
                    *o += xi * wij;
                }
            }
        }
        for o in out.iter_mut() {
            *o = scale * cos_f32(*o);
        }
    }
    target_feature_fns! {
        fill(x: &[f32], w: &[f32], b: &[f32], scale: f32, out: &mut [f32]);
        "avx512f" => fill_avx512,
        "avx2" => fill_avx2,
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F, checked just above.
        unsafe { fill_avx512(x, w, b, scale, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { fill_avx2(x, w, b, scale, out) };
        return;
    }
    fill(x, w, b, scale, out);
}

/// Checks that `name`, of `len` values, holds a `rows × cols` matrix; the
/// error reads `expected {rows·cols} values ({rows} x {cols}{note}), …`.
fn check_matrix_len(name: &str, len: usize, rows: usize, cols: usize, note: &str) -> Result<()> {
    check_count(
        name,
        len,
        rows * cols,
        "values",
        &format!(" ({rows} x {cols}{note})"),
    )
}

/// One explicit feature map: its parameters and how it is evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum FeatureMap {
    /// `z(x) = scale · cos(Wᵀx + b)`, `W` of `d × D` (row-major), `b` of
    /// `D`.
    Fourier {
        d: usize,
        n: usize,
        w: Vec<f32>,
        b: Vec<f32>,
        scale: f32,
    },
    /// `z(x)[..m] = M k_L(x)` and `z(x)[m..n] = 0`: `m ≤ n` landmarks
    /// (row-major, `m × d`), the kernel, `M` (`m × m`, symmetric).
    Nystroem {
        d: usize,
        n: usize,
        m: usize,
        landmarks: Vec<f64>,
        kernel: Kernel,
        whiten: Vec<f64>,
    },
}

impl FeatureMap {
    /// The random Fourier map `scale · cos(Wᵀx + b)` on inputs of
    /// dimension `d ≥ 1`: `w` holds `W` (`d × D`, row-major, `D = b.len() ≥ 1`).
    /// Errors on other lengths and on non-finite values.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::feature_map::FeatureMap;
    /// let m = FeatureMap::fourier(1, vec![1.0, 2.0], vec![0.0, 0.5], 0.5).unwrap();
    /// let mut z = [0.0f32; 2];
    /// m.fill(&[1.0], &mut z, &mut Vec::new());
    /// assert!((z[0] - 0.5 * 1.0f32.cos()).abs() < 1e-7);
    /// assert!((z[1] - 0.5 * 2.5f32.cos()).abs() < 1e-7);
    /// assert!(FeatureMap::fourier(2, vec![1.0], vec![0.0], 1.0).is_err());
    /// ```
    pub fn fourier(d: usize, w: Vec<f32>, b: Vec<f32>, scale: f32) -> Result<Self> {
        let n = b.len();
        if d == 0 || n == 0 {
            return Err(OmklError::invalid(
                "w",
                format!("expected at least one input and one feature, got {d} x {n}"),
            ));
        }
        check_matrix_len("w", w.len(), d, n, ", d x D")?;
        check_finite_f32("w", &w)?;
        check_finite_f32("b", &b)?;
        if !scale.is_finite() {
            return Err(OmklError::invalid(
                "scale",
                format!("expected a finite number, got {scale}"),
            ));
        }
        Ok(FeatureMap::Fourier { d, n, w, b, scale })
    }

    /// The Nyström map of `n ≥ 1` features on the `m ≤ n` landmarks
    /// (`m × d` row-major, `d ≥ 1`) under `kernel` (Gaussian or
    /// polynomial), with `whiten = K_LL^{-1/2}` (`m × m`). Errors on other
    /// lengths, other kernels and non-finite values.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::{feature_map::FeatureMap, Kernel};
    /// let k = Kernel::Gaussian { sigma2: 1.0 };
    /// // one landmark at the origin: K_LL = [1], M = [1]
    /// let m = FeatureMap::nystroem(2, 3, vec![0.0, 0.0], k, vec![1.0]).unwrap();
    /// let mut z = [9.0f32; 3];
    /// m.fill(&[1.0, 0.0], &mut z, &mut Vec::new());
    /// assert!((z[0] - (-0.5f32).exp()).abs() < 1e-7);
    /// assert_eq!(&z[1..], &[0.0, 0.0]);
    /// ```
    pub fn nystroem(
        d: usize,
        n: usize,
        landmarks: Vec<f64>,
        kernel: Kernel,
        whiten: Vec<f64>,
    ) -> Result<Self> {
        if d == 0 || n == 0 {
            return Err(OmklError::invalid(
                "landmarks",
                format!("expected at least one input and one feature, got {d} x {n}"),
            ));
        }
        if !landmarks.len().is_multiple_of(d) || landmarks.len() / d > n {
            return Err(OmklError::shape(
                "landmarks",
                format!("at most {n} rows of {d} values"),
                format!("{} values", landmarks.len()),
            ));
        }
        let m = landmarks.len() / d;
        check_matrix_len("whiten", whiten.len(), m, m, "")?;
        check_finite("landmarks", &landmarks)?;
        check_finite("whiten", &whiten)?;
        kernel.check()?;
        if !matches!(
            kernel,
            Kernel::Gaussian { .. }
                | Kernel::Polynomial {
                    normalize: false,
                    ..
                }
        ) {
            return Err(OmklError::invalid(
                "kernel",
                format!("expected a Gaussian or an unnormalised polynomial kernel, got {kernel:?}"),
            ));
        }
        Ok(FeatureMap::Nystroem {
            d,
            n,
            m,
            landmarks,
            kernel,
            whiten,
        })
    }

    /// The number of input values read (a prefix of the row).
    pub fn input_dim(&self) -> usize {
        match *self {
            FeatureMap::Fourier { d, .. } | FeatureMap::Nystroem { d, .. } => d,
        }
    }

    /// The number of features written.
    pub fn width(&self) -> usize {
        match *self {
            FeatureMap::Fourier { n, .. } | FeatureMap::Nystroem { n, .. } => n,
        }
    }

    /// Bytes held by the parameters.
    pub fn nbytes(&self) -> usize {
        match self {
            FeatureMap::Fourier { w, b, .. } => 4 * (w.len() + b.len()),
            FeatureMap::Nystroem {
                landmarks, whiten, ..
            } => 8 * (landmarks.len() + whiten.len()),
        }
    }

    /// Writes `z(x)` into `out` (`width()` values) from the first
    /// `input_dim()` values of `x` (finite, as the caller checks); `buf` is
    /// scratch space (the Nyström kernel column).
    ///
    /// # Complexity
    /// Fourier: O(d D). Nyström: O(m d + m²).
    ///
    /// # Panics
    /// If `x` is shorter than `input_dim()` or `out` is not `width()` long.
    pub fn fill(&self, x: &[f32], out: &mut [f32], buf: &mut Vec<f64>) {
        assert_eq!(out.len(), self.width(), "one output per feature");
        match self {
            FeatureMap::Fourier { d, w, b, scale, .. } => {
                fourier_fill(&x[..*d], w, b, *scale, out);
            }
            FeatureMap::Nystroem {
                d,
                m,
                landmarks,
                kernel,
                whiten,
                ..
            } => {
                let x = &x[..*d];
                buf.clear();
                buf.extend(landmarks.chunks_exact(*d).map(|l| match kernel {
                    Kernel::Gaussian { .. } => {
                        let d2 = x
                            .iter()
                            .zip(l)
                            .map(|(&u, &v)| (f64::from(u) - v) * (f64::from(u) - v))
                            .sum();
                        kernel.from_sq_dist(d2)
                    }
                    _ => {
                        let dot = x.iter().zip(l).map(|(&u, &v)| f64::from(u) * v).sum();
                        kernel.from_dot(dot, 0.0, 0.0)
                    }
                }));
                // z = k_L(x)ᵀ M: the rows of M weighted by the kernel values
                buf.resize(2 * *m, 0.0);
                let (k, acc) = buf.split_at_mut(*m);
                acc.fill(0.0);
                for (&kj, row) in k.iter().zip(whiten.chunks_exact((*m).max(1))) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        *a += kj * v;
                    }
                }
                for (o, a) in out.iter_mut().zip(acc.iter()) {
                    *o = *a as f32;
                }
                out[*m..].fill(0.0);
            }
        }
    }
}

/// Feature maps appended to inputs of `input_dim` values, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMaps {
    input_dim: usize,
    maps: Vec<FeatureMap>,
}

impl FeatureMaps {
    /// The maps `maps` on inputs of `input_dim ≥ 1` values; each map reads
    /// at most `input_dim` of them (a prefix).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::feature_map::FeatureMap;
    /// use omkl_core::kernel::feature_map::FeatureMaps;
    /// let rff = FeatureMap::fourier(2, vec![1.0, 0.0, 0.0, 1.0], vec![0.0, 0.0], 1.0).unwrap();
    /// let maps = FeatureMaps::new(3, vec![rff.clone()]).unwrap();
    /// assert_eq!(maps.width(), 5);
    /// let mut rows = Vec::new();
    /// maps.expand(&[0.0, 0.0, 7.0], &mut rows, &mut Vec::new()).unwrap();
    /// assert_eq!(rows, vec![0.0, 0.0, 7.0, 1.0, 1.0]);
    /// assert!(FeatureMaps::new(1, vec![rff]).is_err()); // reads 2 values
    /// ```
    pub fn new(input_dim: usize, maps: Vec<FeatureMap>) -> Result<Self> {
        if input_dim == 0 {
            return Err(OmklError::invalid(
                "input_dim",
                "expected an input dimension >= 1, got 0",
            ));
        }
        if let Some((i, m)) = maps
            .iter()
            .enumerate()
            .find(|(_, m)| m.input_dim() > input_dim)
        {
            return Err(OmklError::shape(
                format!("maps[{i}]"),
                format!("a map of at most {input_dim} input values"),
                format!("{}", m.input_dim()),
            ));
        }
        Ok(FeatureMaps { input_dim, maps })
    }

    /// Values per input row.
    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// Values per widened row: the input and every map's features.
    pub fn width(&self) -> usize {
        self.input_dim + self.maps.iter().map(FeatureMap::width).sum::<usize>()
    }

    /// The maps, in order.
    pub fn maps(&self) -> &[FeatureMap] {
        &self.maps
    }

    /// Bytes held by the maps' parameters.
    pub fn nbytes(&self) -> usize {
        self.maps.iter().map(FeatureMap::nbytes).sum()
    }

    /// Writes the widened rows of `x` (row-major, `n × input_dim`, finite)
    /// into `out` (`n × width`); `buf` is scratch space. Returns `n`.
    ///
    /// # Complexity
    /// O(n) times the maps' cost per row.
    pub fn expand(&self, x: &[f32], out: &mut Vec<f32>, buf: &mut Vec<f64>) -> Result<usize> {
        let d = self.input_dim;
        if !x.len().is_multiple_of(d) {
            return Err(OmklError::shape(
                "x",
                format!("rows of {d} values"),
                format!("{} values", x.len()),
            ));
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Err(OmklError::invalid("x", "expected finite values"));
        }
        let (n, w) = (x.len() / d, self.width());
        out.clear();
        out.resize(n * w, 0.0);
        for (row, xr) in out.chunks_exact_mut(w).zip(x.chunks_exact(d)) {
            let (head, mut rest) = row.split_at_mut(d);
            head.copy_from_slice(xr);
            for m in &self.maps {
                let (z, tail) = rest.split_at_mut(m.width());
                m.fill(xr, z, buf);
                rest = tail;
            }
        }
        Ok(n)
    }
}

/// A model's [`FeatureMaps`], shared by its copies; never saved, and
/// ignored when models are compared.
#[derive(Debug, Clone, Default)]
pub struct MapSlot(Option<Arc<FeatureMaps>>);

crate::macros::ignored_when_compared!(MapSlot);

impl MapSlot {
    /// A slot holding `maps`.
    pub fn new(maps: Option<FeatureMaps>) -> Self {
        MapSlot(maps.map(Arc::new))
    }

    /// The maps, if any.
    pub fn get(&self) -> Option<&Arc<FeatureMaps>> {
        self.0.as_ref()
    }

    /// Bytes held by the maps' parameters (0 without maps).
    pub fn nbytes(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.nbytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cos_matches_std_over_a_grid() {
        let mut worst = 0.0f64;
        for i in -400_000..400_000 {
            let x = i as f32 * 1e-3;
            worst = worst.max((f64::from(cos_f32(x)) - f64::from(x).cos()).abs());
        }
        for i in 0..10_000 {
            let x = 8000.0 * (i as f32 / 10_000.0) - 4000.0;
            worst = worst.max((f64::from(cos_f32(x)) - f64::from(x).cos()).abs());
        }
        assert!(worst < 2e-7, "worst error {worst}");
    }

    #[test]
    fn fourier_equals_the_formula() {
        let (d, n) = (3, 5);
        let w: Vec<f32> = (0..d * n).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..n).map(|i| i as f32 * 1.1).collect();
        let map = FeatureMap::fourier(d, w.clone(), b.clone(), 0.3).unwrap();
        let x = [0.5f32, -1.5, 2.0, 99.0]; // the last value is not read
        let mut z = vec![0.0f32; n];
        map.fill(&x, &mut z, &mut Vec::new());
        for j in 0..n {
            let arg: f64 = f64::from(b[j])
                + (0..d)
                    .map(|i| f64::from(x[i]) * f64::from(w[i * n + j]))
                    .sum::<f64>();
            assert!((f64::from(z[j]) - 0.3 * arg.cos()).abs() < 1e-6);
        }
    }

    /// The SIMD versions of the Fourier map give the scalar loop's
    /// features bit for bit.
    #[test]
    fn fourier_fill_is_the_same_on_every_cpu() {
        let (d, n) = (5, 203);
        let w: Vec<f32> = (0..d * n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let b: Vec<f32> = (0..n).map(|i| i as f32 * 0.031).collect();
        let x = [0.5f32, -1.5, 0.0, 2.0, 7.25];
        let mut want = vec![0.0f32; n];
        want.copy_from_slice(&b);
        for (i, &xi) in x.iter().enumerate() {
            if xi != 0.0 {
                for j in 0..n {
                    want[j] += xi * w[i * n + j];
                }
            }
        }
        want.iter_mut().for_each(|v| *v = 0.3 * cos_f32(*v));
        let mut got = vec![0.0f32; n];
        fourier_fill(&x, &w, &b, 0.3, &mut got);
        assert_eq!(got, want);
    }

    #[test]
    fn nystroem_polynomial_equals_the_formula() {
        let k = Kernel::Polynomial {
            degree: 2,
            offset: 1.0,
            normalize: false,
        };
        let lm = vec![1.0, 0.0, 0.0, 2.0];
        let whiten = vec![0.5, 0.25, 0.25, 2.0];
        let map = FeatureMap::nystroem(2, 3, lm, k, whiten).unwrap();
        let mut z = [7.0f32; 3];
        map.fill(&[1.0, 1.0], &mut z, &mut Vec::new());
        let (k0, k1) = (4.0, 9.0); // (1 + 1)^2, (2 + 1)^2
        assert!((f64::from(z[0]) - (0.5 * k0 + 0.25 * k1)).abs() < 1e-6);
        assert!((f64::from(z[1]) - (0.25 * k0 + 2.0 * k1)).abs() < 1e-5);
        assert_eq!(z[2], 0.0);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(FeatureMap::fourier(0, vec![], vec![], 1.0).is_err());
        assert!(FeatureMap::fourier(1, vec![f32::NAN], vec![0.0], 1.0).is_err());
        assert!(FeatureMap::fourier(1, vec![1.0], vec![0.0], f32::INFINITY).is_err());
        let g = Kernel::Gaussian { sigma2: 1.0 };
        assert!(FeatureMap::nystroem(2, 1, vec![0.0; 4], g.clone(), vec![0.0; 4]).is_err());
        assert!(FeatureMap::nystroem(2, 2, vec![0.0; 2], g, vec![0.0; 4]).is_err());
        let lin = Kernel::Linear { normalize: false };
        assert!(FeatureMap::nystroem(1, 1, vec![0.0], lin, vec![1.0]).is_err());
        // no landmarks yet: all features 0
        let g = Kernel::Gaussian { sigma2: 1.0 };
        let map = FeatureMap::nystroem(2, 2, vec![], g, vec![]).unwrap();
        let mut z = [1.0f32; 2];
        map.fill(&[1.0, 2.0], &mut z, &mut Vec::new());
        assert_eq!(z, [0.0, 0.0]);
    }
}
