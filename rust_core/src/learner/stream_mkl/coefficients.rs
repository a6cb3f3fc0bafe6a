//! Reading the model: coefficients of every group under the current or
//! the averaged iterate, and the group norms of either.

use super::scoring::Iterate;
use super::state::StreamMkl;
use crate::learner::weights::ScaledBlock;

impl StreamMkl {
    /// Coefficients of kernel group `k` of the current iterate,
    /// `α[j, y]` at `j·L + y`.
    pub fn kernel_coefficients(&self, k: usize) -> Vec<f64> {
        let b = &self.kgroups[k];
        (0..b.len()).map(|i| b.get(i)).collect()
    }

    /// Weights of explicit group `e` of the current iterate, `W[y, f]` at
    /// `y·|cols_e| + f` ([`StreamMkl::explicit_coef`] of the last iterate).
    pub fn explicit_weights(&self, e: usize) -> Vec<f64> {
        self.explicit_coef(e, Iterate::Last)
    }

    /// Transition weights `(L + 2) × L` (bigrams, start row, stop row) of
    /// the current iterate; empty for multiclass models.
    pub fn transition_weights(&self) -> Vec<f64> {
        self.transition_coef(Iterate::Last)
    }
}

impl StreamMkl {
    /// Coefficient `i` of a block under iterate `it` (the average over the
    /// rounds finished since the average (re)started, or the current iterate when none is finished).
    fn coef_of(&self, b: &ScaledBlock, i: usize, it: Iterate) -> f64 {
        match it {
            Iterate::Average if self.average_rounds() > 0 => {
                b.average_sum(i) / self.average_rounds() as f64
            }
            _ => b.get(i),
        }
    }

    /// Coefficients of kernel group `k` under `it`, label-major `α[y, j]`
    /// at `y·S + j` over the `S` support inputs (the `m` inputs of a
    /// precomputed model).
    pub fn kernel_coef(&self, k: usize, it: Iterate) -> Vec<f64> {
        let b = &self.kgroups[k];
        let l = self.l;
        let s = b.len() / l;
        let mut out = vec![0.0; b.len()];
        for j in 0..s {
            for y in 0..l {
                out[y * s + j] = self.coef_of(b, j * l + y, it);
            }
        }
        out
    }

    /// Weights of explicit group `e` under `it`, `W[y, f]` at `y·D + f`.
    pub fn explicit_coef(&self, e: usize, it: Iterate) -> Vec<f64> {
        let b = &self.egroups[e];
        let (l, w) = (self.l, b.len() / self.l);
        let mut out = vec![0.0; b.len()];
        for f in 0..w {
            for y in 0..l {
                out[y * w + f] = self.coef_of(b, f * l + y, it);
            }
        }
        out
    }

    /// Transition weights `(L + 2) × L` (bigrams, start row, stop row)
    /// under `it`; empty for multiclass models.
    pub fn transition_coef(&self, it: Iterate) -> Vec<f64> {
        self.trans.as_ref().map_or_else(Vec::new, |b| {
            (0..b.len()).map(|i| self.coef_of(b, i, it)).collect()
        })
    }

    /// Group norms under `it` (kernel groups, explicit groups, then the
    /// transitions): the maintained norms for the current iterate, norms
    /// recomputed from the averaged coefficients otherwise.
    ///
    /// # Complexity
    /// Average: O(S² (d + L)) per kernel group (O(|S|² L) with a dense
    /// precomputed Gram matrix), O(len) per other group.
    pub fn iterate_norms(&self, it: Iterate) -> Vec<f64> {
        if it == Iterate::Last || self.t == 0 {
            return self.group_norms();
        }
        let l = self.l;
        let mut out = Vec::with_capacity(self.n_groups() + 1);
        for k in 0..self.kgroups.len() {
            let a = self.kernel_coef(k, it);
            let sq = match &self.pre {
                Some(pre) => pre.grams[k].expansion_sq_norm(&a),
                None => {
                    let s = self.support.len();
                    let kern = &self.config.kernels[k];
                    self.support.expansion_sq_norm(kern, l, |i, y| a[y * s + i])
                }
            };
            out.push(sq.max(0.0).sqrt());
        }
        for e in 0..self.egroups.len() {
            let w = self.explicit_coef(e, it);
            out.push(w.iter().map(|v| v * v).sum::<f64>().sqrt());
        }
        if self.trans.is_some() {
            let t = self.transition_coef(it);
            out.push(t.iter().map(|v| v * v).sum::<f64>().sqrt());
        }
        out
    }
}
