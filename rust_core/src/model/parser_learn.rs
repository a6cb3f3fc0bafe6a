//! One online step of the parser: the structured hinge step on checked gold
//! heads (or a step along any arc subgradient), the regulariser's prox on
//! the template norms, and the end of an epoch (averaged parameters and β).
//!
//! # Complexity
//! A step costs the scoring of its sentence, the decoder, `O(G)` for `G`
//! gradient entries and `O(T)` for the prox.

use crate::error::Result;
use crate::features::arc_templates::ArcFeaturizer;
use crate::learner::round::{prox_groups, NormScratch};
use crate::learner::structure::tree_hinge;
use crate::model::parser_decode::DecodeFn;
use crate::model::parser_input::{check_gold, ParserInput};
use crate::model::parser_slots::ArcSlots;
use crate::model::parser_state::{ArcParser, KeptArcs, PRUNED_SCORE};

impl ArcParser {
    /// [`ArcParser::learn_one_with`] on checked gold heads with the kept
    /// arcs and their table slots already computed (the slots of the kept
    /// arcs, or of all arcs without a pruner). The scores use the current
    /// weights and equal [`ArcParser::scores_by_template`]'s exactly.
    pub(super) fn learn_checked(
        &mut self,
        heads: &[usize],
        kept: Option<&KeptArcs>,
        slots: &ArcSlots<'_>,
        decode: &mut DecodeFn<'_>,
    ) -> Result<f64> {
        self.ready()?;
        let n1 = slots.len_with_root();
        let mut scores = match kept {
            Some(k) => k.first_pass.iter().map(|&x| PRUNED_SCORE + x).collect(),
            None => vec![0.0f64; n1 * n1],
        };
        for &(h, m) in slots.arcs() {
            scores[h as usize * n1 + m as usize] = 0.0;
        }
        let ws = &self.weights;
        slots.add_scores(&mut scores, |t| ws.raw(t));
        let (loss, pred) = tree_hinge(&mut scores, n1, heads, decode)?;
        let eta = self.config.eta;
        let mut grad: Vec<(u32, u32, f64)> = Vec::new();
        if loss > 0.0 {
            for m in 1..n1 {
                let (g, p) = (heads[m - 1], pred[m - 1]);
                if g != p {
                    slots.for_each_feature(g, m, |t, slot| grad.push((t as u32, slot as u32, 1.0)));
                    slots
                        .for_each_feature(p, m, |t, slot| grad.push((t as u32, slot as u32, -1.0)));
                }
            }
        }
        self.apply_step(grad, eta)?;
        Ok(loss)
    }

    /// Adds `eta * c` to the weight of every `(template, slot, c)` in
    /// `grad`, then applies the regulariser's prox and ends the step.
    /// Repeated features are merged first (their `c` summed in the order of
    /// `grad`), so that features shared by the gold and predicted arcs
    /// cancel exactly (the hinge step's ±1 counts are exact in f64: no
    /// rounding residue in the tables); non-finite sums are skipped.
    ///
    /// # Complexity
    /// `O(G + T)` to bucket the `G` entries by template, then a stable sort
    /// of each template's (few) entries by slot.
    pub(super) fn apply_step(&mut self, grad: Vec<(u32, u32, f64)>, eta: f64) -> Result<()> {
        self.ready()?;
        let n_t = self.templates.len();
        let mut start = vec![0usize; n_t + 1];
        for g in &grad {
            start[g.0 as usize + 1] += 1;
        }
        for t in 0..n_t {
            start[t + 1] += start[t];
        }
        let mut next = start.clone();
        let mut by_t: Vec<(u32, f64)> = vec![(0, 0.0); grad.len()];
        for &(t, slot, c) in &grad {
            by_t[next[t as usize]] = (slot, c);
            next[t as usize] += 1;
        }
        for t in 0..n_t {
            let run = &mut by_t[start[t]..start[t + 1]];
            run.sort_by_key(|g| g.0);
            for same in run.chunk_by(|a, b| a.0 == b.0) {
                let d: f64 = same.iter().map(|g| g.1).sum();
                if d != 0.0 && d.is_finite() {
                    self.weights.add(t, same[0].0 as usize, eta * d);
                }
            }
        }
        self.prox_step(eta)?;
        self.weights.end_step();
        self.averaged = None;
        self.live = None;
        Ok(())
    }

    /// One online step with a real-valued subgradient chosen by `grad`:
    /// given the current arc scores `s[h * n1 + m]` (all arcs, no pruning)
    /// and `n1`, it returns the loss and arcs `(h, m, c)`; the step is
    /// `θ += η Σ c f(h -> m)`, then the regulariser's prox. `heads` must
    /// be a tree; on error the parser is unchanged.
    pub fn learn_one_by_gradient(
        &mut self,
        sent: &ParserInput,
        heads: &[usize],
        grad: impl FnOnce(&[f64], usize, &mut Vec<(u32, u32, f64)>) -> f64,
    ) -> Result<f64> {
        self.ready()?;
        check_gold(sent, heads)?;
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        let n1 = fz.len_with_root();
        let scores = self.scores_by_template(&fz, None, &self.current_tables());
        let mut arcs = Vec::new();
        let loss = grad(&scores, n1, &mut arcs);
        let eta = self.config.eta;
        let mut g: Vec<(u32, u32, f64)> = Vec::new();
        for &(h, m, c) in &arcs {
            let (h, m) = (h as usize, m as usize);
            if h >= n1 || m == 0 || m >= n1 || h == m {
                continue;
            }
            fz.for_each_feature(h, m, |t, slot| g.push((t as u32, slot as u32, c)));
        }
        self.apply_step(g, eta)?;
        Ok(loss)
    }

    fn prox_step(&mut self, eta: f64) -> Result<()> {
        let regs = std::slice::from_ref(&self.config.regularizer);
        prox_groups(
            &mut self.weights,
            regs,
            eta,
            None,
            &mut NormScratch::default(),
        )
    }

    /// Ends an epoch: exact norms, averaged parameters, β recorded. Fails
    /// with [`crate::OmklError::Alloc`] when the averaged table cannot be
    /// had; then the parameters and β's history are as they were.
    pub fn end_epoch(&mut self) -> Result<()> {
        self.ready()?;
        self.weights.refresh_norms();
        self.finalize()?;
        self.beta_trajectory.push(self.template_weights());
        Ok(())
    }

    /// Computes the averaged parameters used by prediction, or fails with
    /// [`crate::OmklError::Alloc`] (nothing changed).
    pub fn finalize(&mut self) -> Result<()> {
        if self.frozen {
            return Ok(()); // the averaged table is final
        }
        // the table of an earlier epoch is rewritten in place: ending an
        // epoch then allocates nothing large, and cannot fail
        let avg = match self.averaged.take() {
            Some(mut table) if table.len() == self.weights.n_slots() => {
                self.weights.average_into(&mut table)?; // the sizes agree
                table
            }
            old => {
                self.averaged = old;
                self.weights.averaged()?
            }
        };
        let off = self.weights.offsets();
        self.live = Some(
            (0..self.templates.len())
                .map(|t| avg[off[t]..off[t + 1]].iter().any(|&x| x != 0.0))
                .collect(),
        );
        self.averaged = Some(avg);
        Ok(())
    }

    /// β_t = ‖θ_t‖ / Σ_s ‖θ_s‖ of the current iterate θ (the output of the
    /// online proximal steps, which is exactly sparse under MKL; the
    /// averaged parameters used for prediction are not). All zero before any
    /// update.
    pub fn template_weights(&self) -> Vec<f64> {
        let norms = self.weights.group_norms();
        let total: f64 = norms.iter().sum();
        if total > 0.0 {
            norms.iter().map(|n| n / total).collect()
        } else {
            vec![0.0; norms.len()]
        }
    }

    /// β of the averaged parameters used for prediction (`None` before
    /// [`ArcParser::finalize`]): each template's share of the sum of the
    /// averaged tables' norms.
    pub fn averaged_template_weights(&self) -> Option<Vec<f64>> {
        let avg = self.averaged.as_ref()?;
        let off = self.weights.offsets();
        let norms: Vec<f64> = (0..self.templates.len())
            .map(|t| {
                avg[off[t]..off[t + 1]]
                    .iter()
                    .map(|&x| x as f64 * x as f64)
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let total: f64 = norms.iter().sum();
        Some(if total > 0.0 {
            norms.iter().map(|n| n / total).collect()
        } else {
            norms
        })
    }
}
