//! An explicit-feature group of the chain model: `θ = s · W` with `W` an
//! `L × d` matrix and emission score `f(x_i, y) = s ⟨W_y, x_i⟩`.
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

    fn bank(&mut self) {
        let p = self.p;
        for ((base, b), w) in self.base.iter_mut().zip(self.b.iter_mut()).zip(&self.w) {
            *base += w * p - *b;
            *b = 0.0;
        }
        self.p = 0.0;
    }
}

#[inline]
fn dot(w: &[f64], idx: &[u32], val: &[f64]) -> f64 {
    idx.iter().zip(val).map(|(&f, v)| w[f as usize] * v).sum()
}

impl ChainGroup for ExplicitGroup {
    fn add_scores(&self, i: usize, row: &mut [f64]) {
        let (idx, val) = self.row(i);
        for (y, r) in row.iter_mut().enumerate().take(self.l) {
            *r += self.s * dot(&self.w[y * self.d..(y + 1) * self.d], idx, val);
        }
    }

    fn add(&mut self, j: usize, y: usize, delta: f64) {
        let d = delta / self.s;
        let (a, b) = (self.ptr[j], self.ptr[j + 1]);
        let lo = y * self.d;
        let w = &mut self.w[lo..lo + self.d];
        let bb = &mut self.b[lo..lo + self.d];
        let (idx, val) = (&self.idx[a..b], &self.val[a..b]);
        self.q += 2.0 * d * dot(w, idx, val) + d * d * self.sq[j];
        let dp = d * self.p;
        for (&f, &v) in idx.iter().zip(val) {
            w[f as usize] += d * v;
            bb[f as usize] += dp * v;
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
        self.w.iter().map(|v| v * self.s).collect()
    }

    fn coefficient_sum(&self) -> Vec<f64> {
        self.w
            .iter()
            .zip(&self.b)
            .zip(&self.base)
            .map(|((w, b), base)| base + w * self.p - b)
            .collect()
    }

    fn sq_norm_of(&self, coef: &[f64]) -> f64 {
        coef.iter().map(|v| v * v).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
