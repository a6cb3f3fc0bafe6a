//! An explicit-feature group of the chain model: `θ = s · W` with `W` an
//! `L × d` matrix and emission score `f(x_i, y) = s ⟨W_y, x_i⟩`.
//!
//! `W` is stored feature-major (`d × L`), so that scoring an input adds one
//! contiguous (vectorised) row of `L` weights per non-zero feature.
//!
//! This is the primal form of a kernel group whose kernel is the inner
//! product of the given features (e.g. the normalised linear kernel, with
//! features `x / ‖x‖`): updates cost O(d) instead of O(m). Norm and lazy
//! averaging follow [`super::score_cache`]: adding `δ x_j` to `W_y` changes
//! `‖W‖²` by `2δ⟨W_y, x_j⟩ + δ²‖x_j‖²`.

use super::chain_group::ChainGroup;
use crate::error::{OmklError, Result};

const TINY: f64 = 1e-4;

/// A scaled `L × d` weight matrix over `m` fixed feature vectors.
///
/// # Example
/// ```
/// use omkl_core::learner::chain_group::ChainGroup;
/// use omkl_core::learner::explicit_group::ExplicitGroup;
/// let x = [1.0f32, 0.0, 0.0, 2.0]; // m = 2 inputs, d = 2
/// let mut g = ExplicitGroup::new(&x, 2, 2, 3).unwrap();
/// g.add(1, 2, 0.5); // W_2 += 0.5 x_1
/// let mut row = [0.0; 3];
/// g.add_scores(1, &mut row);
/// assert_eq!(row, [0.0, 0.0, 2.0]);
/// assert_eq!(g.sq_norm(), 1.0);
/// ```
#[derive(Debug, Clone)]
pub struct ExplicitGroup {
    /// Nonzero features of every input (CSR: `idx`, `val`, row `ptr`).
    idx: Vec<u32>,
    val: Vec<f64>,
    ptr: Vec<usize>,
    sq: Vec<f64>,
    d: usize,
    l: usize,
    s: f64,
    w: Vec<f64>,
    q: f64,
    b: Vec<f64>,
    p: f64,
    base: Vec<f64>,
}

impl ExplicitGroup {
    /// A zero group over `m` feature vectors of dimension `d` (row-major
    /// `x`, finite) and `l` labels. The features are kept sparse (nonzeros
    /// only), so scores and updates cost O(nnz) per input.
    pub fn new(x: &[f32], m: usize, d: usize, l: usize) -> Result<Self> {
        if d == 0 {
            return Err(OmklError::empty("features (d = 0)"));
        }
        if x.len() != m * d {
            return Err(OmklError::shape(
                "features",
                format!("{m} x {d} = {} elements", m * d),
                format!("{} elements", x.len()),
            ));
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            return Err(OmklError::NonFinite {
                name: "features".into(),
                index: i,
                value: f64::from(x[i]),
            });
        }
        let sq = x
            .chunks_exact(d)
            .map(|r| r.iter().map(|&v| f64::from(v) * f64::from(v)).sum())
            .collect();
        let (mut idx, mut val, mut ptr) = (Vec::new(), Vec::new(), vec![0]);
        for r in x.chunks_exact(d) {
            for (f, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    idx.push(f as u32);
                    val.push(f64::from(v));
                }
            }
            ptr.push(idx.len());
        }
        Ok(ExplicitGroup {
            idx,
            val,
            ptr,
            sq,
            d,
            l,
            s: 1.0,
            w: vec![0.0; l * d],
            q: 0.0,
            b: vec![0.0; l * d],
            p: 0.0,
            base: vec![0.0; l * d],
        })
    }

    #[inline]
    fn row(&self, j: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.ptr[j], self.ptr[j + 1]);
        (&self.idx[a..b], &self.val[a..b])
    }

    /// A feature-major `d × L` matrix as label-major `L × d`.
    fn label_major(&self, v: impl Fn(usize) -> f64) -> Vec<f64> {
        let (d, l) = (self.d, self.l);
        let mut out = vec![0.0; l * d];
        for f in 0..d {
            for y in 0..l {
                out[y * d + f] = v(f * l + y);
            }
        }
        out
    }

    fn bank(&mut self) {
        let p = self.p;
        for ((base, b), w) in self.base.iter_mut().zip(self.b.iter_mut()).zip(&self.w) {
            *base += w * p - *b;
            *b = 0.0;
        }
        self.p = 0.0;
    }
}

/// `row += s Σ_f v_f W[f, :]` over the non-zero features `(idx, val)` of
/// an input, with `W` feature-major (`d × L`, `L = row.len()`).
#[inline(always)]
fn add_rows(w: &[f64], idx: &[u32], val: &[f64], s: f64, row: &mut [f64]) {
    let l = row.len();
    for (&f, &v) in idx.iter().zip(val) {
        let sv = s * v;
        let f = f as usize;
        for (r, &w) in row.iter_mut().zip(&w[f * l..(f + 1) * l]) {
            *r += sv * w;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_rows_avx2(w: &[f64], idx: &[u32], val: &[f64], s: f64, row: &mut [f64]) {
    add_rows(w, idx, val, s, row);
}

/// [`add_rows`] for `L ≤ 8 NC` labels: the row is accumulated in `NC`
/// AVX-512 registers and the weight rows read with masked loads. Each lane
/// computes `r + (s v) w` with a separate product and sum, as [`add_rows`]
/// does, so the results are the same.
///
/// # Safety
/// The CPU must support AVX-512F; `8 (NC - 1) < L = row.len() ≤ 8 NC`, and
/// `w` holds a row of `L` weights for every feature index in `idx`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_rows_avx512<const NC: usize>(
    w: &[f64],
    idx: &[u32],
    val: &[f64],
    s: f64,
    row: &mut [f64],
) {
    use std::arch::x86_64::*;
    let l = row.len();
    let mut masks = [0xffu8; NC];
    masks[NC - 1] = (0xffu32 >> (8 * NC - l)) as u8;
    let mut acc = [_mm512_setzero_pd(); NC];
    for c in 0..NC {
        acc[c] = _mm512_maskz_loadu_pd(masks[c], row.as_ptr().add(8 * c));
    }
    for (&f, &v) in idx.iter().zip(val) {
        let sv = _mm512_set1_pd(s * v);
        let wr = w.as_ptr().add(f as usize * l);
        for c in 0..NC {
            let x = _mm512_maskz_loadu_pd(masks[c], wr.add(8 * c));
            acc[c] = _mm512_add_pd(acc[c], _mm512_mul_pd(sv, x));
        }
    }
    for c in 0..NC {
        _mm512_mask_storeu_pd(row.as_mut_ptr().add(8 * c), masks[c], acc[c]);
    }
}

impl ChainGroup for ExplicitGroup {
    fn add_scores(&self, i: usize, row: &mut [f64]) {
        let (idx, val) = self.row(i);
        let row = &mut row[..self.l];
        #[cfg(target_arch = "x86_64")]
        {
            if self.l <= 32 && std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F is available (checked), `row` holds L
                // values and every feature index is < d, with `w` of L x d.
                unsafe {
                    match self.l.div_ceil(8) {
                        1 => add_rows_avx512::<1>(&self.w, idx, val, self.s, row),
                        2 => add_rows_avx512::<2>(&self.w, idx, val, self.s, row),
                        3 => add_rows_avx512::<3>(&self.w, idx, val, self.s, row),
                        _ => add_rows_avx512::<4>(&self.w, idx, val, self.s, row),
                    }
                }
                return;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { add_rows_avx2(&self.w, idx, val, self.s, row) };
                return;
            }
        }
        add_rows(&self.w, idx, val, self.s, row);
    }

    fn add(&mut self, j: usize, y: usize, delta: f64) {
        let d = delta / self.s;
        let (a, b) = (self.ptr[j], self.ptr[j + 1]);
        let l = self.l;
        let (idx, val) = (&self.idx[a..b], &self.val[a..b]);
        let dot: f64 = idx
            .iter()
            .zip(val)
            .map(|(&f, v)| self.w[f as usize * l + y] * v)
            .sum();
        self.q += 2.0 * d * dot + d * d * self.sq[j];
        let dp = d * self.p;
        for (&f, &v) in idx.iter().zip(val) {
            let k = f as usize * l + y;
            self.w[k] += d * v;
            self.b[k] += dp * v;
        }
    }

    /// Both labels' updates in one pass over the input's non-zeros: the
    /// two inner products are taken first (label `pred`'s weights are not
    /// changed by label `gold`'s update), then `q` gains the two terms in
    /// the order of two [`ChainGroup::add`] calls, and every weight the
    /// same sums; so the result is exactly theirs.
    fn add_pair(&mut self, j: usize, gold: usize, pred: usize, delta: f64) {
        let l = self.l;
        if gold == pred || gold >= l || pred >= l {
            self.add(j, gold, delta);
            self.add(j, pred, -delta);
            return;
        }
        let (dg, dq) = (delta / self.s, -delta / self.s);
        let (a, b) = (self.ptr[j], self.ptr[j + 1]);
        let (idx, val) = (&self.idx[a..b], &self.val[a..b]);
        // -0.0: the start of `Iterator::sum` for f64, as in `add`
        let (mut dot_g, mut dot_p) = (-0.0, -0.0);
        for (&f, &v) in idx.iter().zip(val) {
            let k = f as usize * l;
            dot_g += self.w[k + gold] * v;
            dot_p += self.w[k + pred] * v;
        }
        self.q += 2.0 * dg * dot_g + dg * dg * self.sq[j];
        self.q += 2.0 * dq * dot_p + dq * dq * self.sq[j];
        let (pg, pq) = (dg * self.p, dq * self.p);
        for (&f, &v) in idx.iter().zip(val) {
            let k = f as usize * l;
            self.w[k + gold] += dg * v;
            self.b[k + gold] += pg * v;
            self.w[k + pred] += dq * v;
            self.b[k + pred] += pq * v;
        }
    }

    fn sq_norm(&self) -> f64 {
        self.s * self.s * self.q.max(0.0)
    }

    fn scale_by(&mut self, c: f64) {
        if c == 0.0 {
            self.bank();
            self.w.fill(0.0);
            self.q = 0.0;
            self.s = 1.0;
            return;
        }
        self.s *= c;
        if !(TINY..=1.0 / TINY).contains(&self.s) {
            self.bank();
            let s = self.s;
            self.w.iter_mut().for_each(|v| *v *= s);
            self.q *= s * s;
            self.s = 1.0;
        }
    }

    fn end_round(&mut self) {
        self.p += self.s;
    }

    fn coefficients(&self) -> Vec<f64> {
        self.label_major(|k| self.w[k] * self.s)
    }

    fn coefficient_sum(&self) -> Vec<f64> {
        self.label_major(|k| self.base[k] + self.w[k] * self.p - self.b[k])
    }

    fn sq_norm_of(&self, coef: &[f64]) -> f64 {
        coef.iter().map(|v| v * v).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dispatched scoring (AVX-512 or AVX2 when available) gives exactly
    /// the portable loop's scores for every label count.
    #[test]
    fn scoring_paths_agree_exactly() {
        let (m, d) = (3, 5);
        let x: Vec<f32> = (0..m * d).map(|k| ((k * 7) % 4) as f32 * 0.5).collect();
        for l in 1..=40 {
            let mut g = ExplicitGroup::new(&x, m, d, l).unwrap();
            for t in 0..3 * l {
                g.add(t % m, (t * 7) % l, 0.3 + 0.01 * t as f64);
            }
            g.scale_by(0.7);
            for i in 0..m {
                let mut got: Vec<f64> = (0..l).map(|y| y as f64 * 0.1).collect();
                let mut want = got.clone();
                g.add_scores(i, &mut got);
                let (idx, val) = g.row(i);
                add_rows(&g.w, idx, val, g.s, &mut want);
                assert_eq!(got, want, "L = {l}, input {i}");
            }
        }
    }

    /// The fused update of a wrongly labelled position equals two `add`
    /// calls bit for bit: weights, norm, running sum, any scale.
    #[test]
    fn add_pair_equals_two_adds_exactly() {
        let (m, d, l) = (4, 9, 26);
        let x: Vec<f32> = (0..m * d)
            .map(|k| {
                if (k * 5) % 3 == 0 {
                    0.0
                } else {
                    ((k * 7) % 11) as f32 * 0.17 - 0.6
                }
            })
            .collect();
        let mut fused = ExplicitGroup::new(&x, m, d, l).unwrap();
        let mut plain = fused.clone();
        for t in 0..200 {
            let (j, g, p) = (t % m, (t * 7) % l, (t * 11 + 3) % l);
            let delta = 0.3 + 0.01 * t as f64;
            fused.add_pair(j, g, p, delta);
            plain.add(j, g, delta);
            plain.add(j, p, -delta);
            let c = if t % 17 == 0 { 1e-5 } else { 0.97 };
            for e in [&mut fused, &mut plain] {
                e.scale_by(c);
                e.end_round();
            }
            assert_eq!(fused.q.to_bits(), plain.q.to_bits(), "round {t}");
        }
        assert_eq!(fused.w, plain.w);
        assert_eq!(fused.b, plain.b);
        assert_eq!(fused.coefficient_sum(), plain.coefficient_sum());
        assert_eq!(fused.sq_norm().to_bits(), plain.sq_norm().to_bits());
    }

    #[test]
    fn norm_and_average_track_explicit_sums() {
        let x = [1.0f32, 2.0, 0.0, -1.0, 3.0, 1.0];
        let mut g = ExplicitGroup::new(&x, 3, 2, 2).unwrap();
        let mut sum = [0.0; 4];
        for (t, &(j, y, dl, c)) in [
            (0, 1, 0.5, 0.7),
            (2, 0, -1.0, 1e-5),
            (1, 1, 0.3, 0.0),
            (2, 1, 0.2, 0.9),
        ]
        .iter()
        .enumerate()
        {
            g.add(j, y, dl);
            g.scale_by(c);
            g.end_round();
            let w = g.coefficients();
            for (s, v) in sum.iter_mut().zip(&w) {
                *s += v;
            }
            let exact: f64 = w.iter().map(|v| v * v).sum();
            assert!(
                (g.sq_norm() - exact).abs() <= 1e-12 * exact.max(1.0),
                "round {t}"
            );
        }
        for (a, b) in sum.iter().zip(g.coefficient_sum()) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!(ExplicitGroup::new(&x, 2, 2, 2).is_err());
        assert!(ExplicitGroup::new(&[f32::NAN, 0.0], 1, 2, 2).is_err());
    }
}
