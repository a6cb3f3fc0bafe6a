//! One round of the streaming Alg. 3: decode, subgradient step with the
//! §3.4 norm identity, prox on the group norms, budget.

use super::config::StreamLoss;
use super::scoring::Iterate;
use super::shared_dot::{dot_f32, kernel_from_dot};
use super::state::StreamMkl;
use super::support::sq_norm_f32;
use crate::decode::forward_backward::{forward_backward, ForwardBackwardWorkspace};
use crate::decode::viterbi::{viterbi_hamming, ViterbiWorkspace};
use crate::error::{check_finite, Result};
use crate::prox::Regularizer;

/// The step of a round, computed before anything changes.
struct Step {
    /// `c[p, y]`: the change of the coefficient of part `(x_p, y)`.
    c: Vec<f64>,
    /// Positions with a non-zero row of `c`.
    touched: Vec<usize>,
    /// Change of the transition block, `(L + 2) × L` (chains).
    dtr: Vec<f64>,
    loss: f64,
}

impl StreamMkl {
    /// One round on the example `(x, y)`: `x` is `n × d` row-major with
    /// `n = y.len()` (`n = 1` for multiclass models), labels `< L`.
    /// Returns the loss met before the update.
    pub fn learn(&mut self, x: &[f32], y: &[usize]) -> Result<f64> {
        self.learn_extending(x, self.d, y, self.l, false)
    }

    /// [`StreamMkl::learn`] that first adds labels up to `n_labels` and,
    /// when `grow_dim`, grows the dimension to `d` (new features are 0 in
    /// earlier inputs). Everything is validated first: on error the model
    /// is unchanged.
    pub fn learn_extending(
        &mut self,
        x: &[f32],
        d: usize,
        y: &[usize],
        n_labels: usize,
        grow_dim: bool,
    ) -> Result<f64> {
        self.check_example(x, d, y, n_labels, grow_dim)?;
        if n_labels > self.l || d > self.d {
            let mut next = self.clone();
            next.grow_labels(n_labels);
            next.grow_dim(d);
            let loss = next.round(x, y)?;
            *self = next;
            return Ok(loss);
        }
        self.round(x, y)
    }

    /// Learns the examples in order (`x` holds them row-major one after
    /// the other, `lens` their lengths), after validating all of them. Labels
    /// beyond the current `L` are added when first met (labels are expected
    /// to be numbered in order of first appearance), so the result equals
    /// one [`StreamMkl::learn_extending`] per example. Stops
    /// early (with the examples so far learned) when `keep_going` returns
    /// an error, checked every 256 examples. Returns the summed loss.
    pub fn learn_many<F>(
        &mut self,
        x: &[f32],
        d: usize,
        lens: &[usize],
        y: &[usize],
        n_labels: usize,
        mut keep_going: F,
    ) -> Result<f64>
    where
        F: FnMut() -> Result<()>,
    {
        let total: usize = lens.iter().sum();
        if y.len() != total {
            return Err(crate::error::OmklError::shape(
                "y",
                format!("{total} labels (the sum of the lengths)"),
                format!("{}", y.len()),
            ));
        }
        if x.len() != total * d {
            return Err(crate::error::OmklError::shape(
                "x",
                format!("{total} x {d} values"),
                format!("{} values", x.len()),
            ));
        }
        let mut off = 0;
        for &n in lens {
            let (xs, ys) = (&x[off * d..(off + n) * d], &y[off..off + n]);
            self.check_example(xs, d, ys, n_labels, false)?;
            off += n;
        }
        let (mut off, mut sum) = (0, 0.0);
        for (i, &n) in lens.iter().enumerate() {
            if i % 256 == 255 {
                keep_going()?;
            }
            let ys = &y[off..off + n];
            // labels enter as they are met, as with one `learn` per example
            let top = ys.iter().max().map_or(0, |&v| v + 1);
            self.grow_labels(top);
            sum += self.round(&x[off * d..(off + n) * d], ys)?;
            off += n;
        }
        self.grow_labels(n_labels);
        Ok(sum)
    }

    /// Decodes and computes the step of this round (no change to `self`).
    fn step(&self, gs: &[f64], x_n: usize, y: &[usize], eta: f64) -> Result<Step> {
        let (n, l) = (x_n, self.l);
        let em = self.emissions(gs, n);
        let tr = self.transition_scores(Iterate::Last);
        let chain = self.chain_scores(&em, &tr, n)?;
        let mut c = vec![0.0; n * l];
        let mut dtr = vec![0.0; if self.config.chain { (l + 2) * l } else { 0 }];
        let loss;
        match self.config.loss {
            StreamLoss::Hinge => {
                let mut out = vec![0; n];
                let aug = viterbi_hamming(
                    &chain,
                    y,
                    self.config.cost,
                    &mut ViterbiWorkspace::new(),
                    &mut out,
                )?;
                loss = (aug - chain.score_of_unchecked(y)).max(0.0);
                if out != y {
                    for p in 0..n {
                        if out[p] != y[p] {
                            c[p * l + y[p]] += eta;
                            c[p * l + out[p]] -= eta;
                        }
                    }
                    if self.config.chain {
                        add_path(&mut dtr, l, y, eta);
                        add_path(&mut dtr, l, &out, -eta);
                    }
                }
            }
            StreamLoss::Crf => {
                let mut node = vec![0.0; n * l];
                let mut pair = vec![0.0; l * l];
                let log_z = forward_backward(
                    &chain,
                    &mut ForwardBackwardWorkspace::new(),
                    &mut node,
                    &mut pair,
                )?;
                loss = (log_z - chain.score_of_unchecked(y)).max(0.0);
                for (ci, mu) in c.iter_mut().zip(&node) {
                    *ci = -eta * mu;
                }
                for (p, &yp) in y.iter().enumerate() {
                    c[p * l + yp] += eta;
                }
                if self.config.chain {
                    add_path(&mut dtr, l, y, eta);
                    for (dv, mu) in dtr[..l * l].iter_mut().zip(&pair) {
                        *dv -= eta * mu;
                    }
                    for yy in 0..l {
                        dtr[l * l + yy] -= eta * node[yy];
                        dtr[(l + 1) * l + yy] -= eta * node[(n - 1) * l + yy];
                    }
                }
            }
        }
        check_finite("gradient", &c)?;
        check_finite("gradient", &dtr)?;
        let touched = (0..n)
            .filter(|&p| c[p * l..(p + 1) * l].iter().any(|&v| v != 0.0))
            .collect();
        Ok(Step {
            c,
            touched,
            dtr,
            loss,
        })
    }

    /// The round proper, on validated input.
    fn round(&mut self, x: &[f32], y: &[usize]) -> Result<f64> {
        let (n, d, l) = (y.len(), self.d, self.l);
        let nk = self.kgroups.len();
        let ng = self.config.n_groups();
        let eta = self.config.schedule.rate(self.t + 1);
        let mut gs = Vec::new();
        self.group_scores(x, n, Iterate::Last, &mut gs);
        let pa = self.config.passive_aggressive;
        let mut step = self.step(&gs, n, y, if pa { 1.0 } else { eta })?;
        let touched = &step.touched.clone();
        let (c, dtr) = (&step.c, &step.dtr);

        // ⟨θ_g, Δ_g⟩ and ‖Δ_g‖² for every group, before any change.
        let n_blocks = ng + usize::from(self.config.chain);
        let mut ip = vec![0.0; n_blocks];
        let mut dd = vec![0.0; n_blocks];
        for &p in touched {
            for (g, v) in ip[..ng].iter_mut().enumerate() {
                let s = &gs[(p * ng + g) * l..(p * ng + g + 1) * l];
                *v += s
                    .iter()
                    .zip(&c[p * l..(p + 1) * l])
                    .map(|(a, b)| a * b)
                    .sum::<f64>();
            }
        }
        if nk > 0 {
            let sq: Vec<f64> = touched
                .iter()
                .map(|&p| sq_norm_f32(&x[p * d..(p + 1) * d]))
                .collect();
            for (a, &p) in touched.iter().enumerate() {
                for (b, &q) in touched.iter().enumerate() {
                    let cc: f64 = c[p * l..(p + 1) * l]
                        .iter()
                        .zip(&c[q * l..(q + 1) * l])
                        .map(|(u, v)| u * v)
                        .sum();
                    if cc == 0.0 {
                        continue;
                    }
                    let dot = dot_f32(&x[p * d..(p + 1) * d], &x[q * d..(q + 1) * d]);
                    for (k, kern) in self.config.kernels.iter().enumerate() {
                        dd[k] += cc * kernel_from_dot(kern, dot, sq[a], sq[b]);
                    }
                }
            }
        }
        let mut deltas: Vec<Vec<f64>> = Vec::with_capacity(self.egroups.len());
        for (e, cols) in self.config.explicit_groups.iter().enumerate() {
            let w = cols.len();
            let mut delta = vec![0.0; l * w];
            for &p in touched {
                let xp = &x[p * d..(p + 1) * d];
                for yy in 0..l {
                    let cv = c[p * l + yy];
                    if cv != 0.0 {
                        for (f, &col) in cols.iter().enumerate() {
                            delta[yy * w + f] += cv * f64::from(xp[col]);
                        }
                    }
                }
            }
            dd[nk + e] = delta.iter().map(|v| v * v).sum();
            deltas.push(delta);
        }
        if let Some(b) = &self.trans {
            ip[ng] = dtr.iter().enumerate().map(|(i, v)| b.get(i) * v).sum();
            dd[ng] = dtr.iter().map(|v| v * v).sum();
        }
        if pa {
            // Everything above is for the unit step; scale it to τ.
            let q: f64 = dd.iter().sum();
            let tau = if q > 0.0 {
                (step.loss / q).min(eta)
            } else {
                0.0
            };
            step.c.iter_mut().for_each(|v| *v *= tau);
            step.dtr.iter_mut().for_each(|v| *v *= tau);
            ip.iter_mut().for_each(|v| *v *= tau);
            dd.iter_mut().for_each(|v| *v *= tau * tau);
            deltas.iter_mut().flatten().for_each(|v| *v *= tau);
        }
        let Step { c, dtr, .. } = &step;
        let old: Vec<f64> = self.blocks().map(|b| b.sq_norm()).collect();
        let norms: Vec<f64> = (0..n_blocks)
            .map(|g| (old[g] + 2.0 * ip[g] + dd[g]).max(0.0).sqrt())
            .collect();
        let mut shrunk = norms.clone();
        self.config.regularizer.prox_group_norms(&mut shrunk, eta)?;
        if let Some(radius) = self.config.radius {
            Regularizer::L21Ball { radius }.prox_group_norms(&mut shrunk, eta)?;
        }

        // From here on nothing fails.
        if nk > 0 {
            for &p in touched {
                let (j, new) = self.support.insert(&x[p * d..(p + 1) * d]);
                if new {
                    for b in &mut self.kgroups {
                        b.push_zeros(l);
                    }
                }
                for b in &mut self.kgroups {
                    for yy in 0..l {
                        let cv = c[p * l + yy];
                        if cv != 0.0 {
                            b.add(j * l + yy, cv);
                        }
                    }
                }
            }
        }
        for (g, (i, dq)) in ip.iter().zip(&dd).enumerate().take(nk) {
            self.kgroups[g].apply_norm_change(*i, *dq);
        }
        for (e, delta) in deltas.iter().enumerate() {
            let b = &mut self.egroups[e];
            for (i, &v) in delta.iter().enumerate() {
                if v != 0.0 {
                    b.add(i, v);
                }
            }
            b.apply_norm_change(ip[nk + e], dd[nk + e]);
        }
        if let Some(b) = &mut self.trans {
            for (i, &v) in dtr.iter().enumerate() {
                if v != 0.0 {
                    b.add(i, v);
                }
            }
            b.apply_norm_change(ip[ng], dd[ng]);
        }
        for (b, (&nv, &sv)) in self.blocks_mut().zip(norms.iter().zip(&shrunk)) {
            if nv > 0.0 {
                b.scale_by(sv / nv);
            }
        }
        if let Some(budget) = self.config.max_support {
            while self.support.len() > budget {
                self.remove_smallest_support();
            }
        }
        for b in self.blocks_mut() {
            b.end_round();
        }
        self.t += 1;
        if self.config.history_every > 0 && self.t.is_multiple_of(self.config.history_every) {
            self.record_beta();
        }
        Ok(step.loss)
    }
}

/// `dtr += coef ·` the transition features of `labels`.
fn add_path(dtr: &mut [f64], l: usize, labels: &[usize], coef: f64) {
    dtr[l * l + labels[0]] += coef;
    dtr[(l + 1) * l + labels[labels.len() - 1]] += coef;
    for w in labels.windows(2) {
        dtr[w[0] * l + w[1]] += coef;
    }
}
