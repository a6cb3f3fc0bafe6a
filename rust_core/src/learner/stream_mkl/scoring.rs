//! Scoring: per-group scores of every `(position, label)` part, emission
//! and transition scores, and prediction.

use super::shared_dot::{dot_f32, kernel_from_dot};
use super::state::StreamMkl;
use super::support::sq_norm_f32;
use crate::decode::chain::ChainScores;
use crate::decode::viterbi::{viterbi, ViterbiWorkspace};
use crate::error::Result;

/// Which coefficients to score with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iterate {
    /// The current iterate `θ_t`.
    Last,
    /// The average of the iterates of all finished rounds.
    Average,
}

impl StreamMkl {
    /// The iterate used for prediction (the average when configured and at
    /// least one round is finished).
    pub(super) fn predict_iterate(&self) -> Iterate {
        if self.config.average && self.t > 0 {
            Iterate::Average
        } else {
            Iterate::Last
        }
    }

    /// Per-group scores `f_g(x_p, y)` for the `n` positions of `x`
    /// (`n × d`, checked by the caller), written as `n × G × L` into `out`
    /// (`G` = kernel plus explicit groups).
    ///
    /// # Complexity
    /// O(n S (d + K L) + n D_E L).
    pub(super) fn group_scores(&self, x: &[f32], n: usize, it: Iterate, out: &mut Vec<f64>) {
        let (d, l) = (self.d, self.l);
        let nk = self.kgroups.len();
        let g = self.config.n_groups();
        out.clear();
        out.resize(n * g * l, 0.0);
        let inv_t = if self.t > 0 { 1.0 / self.t as f64 } else { 0.0 };
        let mut kv = vec![0.0; nk];
        let mut avg = vec![0.0; l];
        for p in 0..n {
            let xp = &x[p * d..(p + 1) * d];
            let sxx = sq_norm_f32(xp);
            let row = &mut out[p * g * l..(p + 1) * g * l];
            if nk > 0 {
                for j in 0..self.support.len() {
                    let dot = dot_f32(xp, self.support.row(j));
                    let sjj = self.support.sq_norm(j);
                    for (v, kern) in kv.iter_mut().zip(&self.config.kernels) {
                        *v = kernel_from_dot(kern, dot, sxx, sjj);
                    }
                    for (k, &v) in kv.iter().enumerate() {
                        if v == 0.0 && self.config.skip_zeros {
                            continue;
                        }
                        let dst = &mut row[k * l..(k + 1) * l];
                        let block = &self.kgroups[k];
                        match it {
                            Iterate::Last => {
                                let a = &block.raw()[j * l..(j + 1) * l];
                                for (o, &c) in dst.iter_mut().zip(a) {
                                    *o += v * c;
                                }
                            }
                            Iterate::Average => {
                                for (y, c) in avg.iter_mut().enumerate() {
                                    *c = block.average_sum(j * l + y);
                                }
                                for (o, &c) in dst.iter_mut().zip(&avg) {
                                    *o += v * c;
                                }
                            }
                        }
                    }
                }
                for (k, block) in self.kgroups.iter().enumerate() {
                    let f = match it {
                        Iterate::Last => block.scale(),
                        Iterate::Average => inv_t,
                    };
                    row[k * l..(k + 1) * l].iter_mut().for_each(|o| *o *= f);
                }
            }
            for (e, (block, cols)) in self
                .egroups
                .iter()
                .zip(&self.config.explicit_groups)
                .enumerate()
            {
                let dst = &mut row[(nk + e) * l..(nk + e + 1) * l];
                let w = cols.len();
                for (y, o) in dst.iter_mut().enumerate() {
                    let mut s = 0.0;
                    for (f, &c) in cols.iter().enumerate() {
                        let coef = match it {
                            Iterate::Last => block.raw()[y * w + f],
                            Iterate::Average => block.average_sum(y * w + f),
                        };
                        s += coef * f64::from(xp[c]);
                    }
                    *o = s * match it {
                        Iterate::Last => block.scale(),
                        Iterate::Average => inv_t,
                    };
                }
            }
        }
    }

    /// Sums the group scores into emission scores `n × L`.
    pub(super) fn emissions(&self, gs: &[f64], n: usize) -> Vec<f64> {
        let (g, l) = (self.config.n_groups(), self.l);
        let mut em = vec![0.0; n * l];
        for p in 0..n {
            let dst = &mut em[p * l..(p + 1) * l];
            for k in 0..g {
                let src = &gs[(p * g + k) * l..(p * g + k + 1) * l];
                for (o, &v) in dst.iter_mut().zip(src) {
                    *o += v;
                }
            }
        }
        em
    }

    /// Transition scores `(L + 2) × L` (bigrams, start, stop); zeros (and
    /// unused) for multiclass models.
    pub(super) fn transition_scores(&self, it: Iterate) -> Vec<f64> {
        let l = self.l;
        match &self.trans {
            None => vec![0.0; (l + 2) * l],
            Some(b) => (0..b.len())
                .map(|i| match it {
                    Iterate::Last => b.get(i),
                    Iterate::Average => b.average_sum(i) / self.t as f64,
                })
                .collect(),
        }
    }

    /// The chain view of emission and transition scores.
    pub(super) fn chain_scores<'a>(
        &self,
        em: &'a [f64],
        tr: &'a [f64],
        n: usize,
    ) -> Result<ChainScores<'a>> {
        let l = self.l;
        let (bigrams, rest) = tr.split_at(l * l);
        let (start, stop) = rest.split_at(l);
        if self.config.chain {
            ChainScores::new(em, bigrams, Some(start), Some(stop), n, l)
        } else {
            ChainScores::new(em, bigrams, None, None, n, l)
        }
    }

    /// Emission scores `n × L` of the prediction iterate for `x` (`n × d`
    /// row-major; `n = 1` for multiclass models).
    pub fn scores(&self, x: &[f32], n: usize) -> Result<Vec<f64>> {
        self.check_x(x, n, self.d)?;
        let mut gs = Vec::new();
        self.group_scores(x, n, self.predict_iterate(), &mut gs);
        Ok(self.emissions(&gs, n))
    }

    /// The highest-scoring labelling of `x` (`n × d`, `n = x.len() / d`)
    /// under the prediction iterate (Viterbi for chains, argmax for
    /// multiclass; ties go to the smaller label).
    pub fn predict(&self, x: &[f32]) -> Result<Vec<usize>> {
        let n = x.len() / self.d;
        self.check_x(x, n.max(1), self.d)?;
        let it = self.predict_iterate();
        let mut gs = Vec::new();
        self.group_scores(x, n, it, &mut gs);
        let em = self.emissions(&gs, n);
        let tr = self.transition_scores(it);
        let chain = self.chain_scores(&em, &tr, n)?;
        let mut out = vec![0; n];
        viterbi(&chain, &mut ViterbiWorkspace::new(), &mut out)?;
        Ok(out)
    }
}
