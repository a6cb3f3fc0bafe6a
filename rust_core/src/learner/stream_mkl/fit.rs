//! Training by epochs over a fixed corpus of chains (or single positions)
//! of precomputed inputs: the passes of Alg. 3 in a seeded order, with the
//! objective and `β` after each epoch.

use super::scoring::Example;
use super::scratch::Scratch;
use super::state::StreamMkl;
use crate::error::{OmklError, Result};

/// How [`StreamMkl::fit_ids`] passes over the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// Passes over the corpus.
    pub epochs: usize,
    /// Visit the examples in a fresh pseudo-random order each epoch.
    pub shuffle: bool,
    /// Seed of the visiting order.
    pub seed: u64,
    /// Evaluate `Ω(θ) + (1/n) Σ loss` after each epoch (one more pass).
    pub track_objective: bool,
    /// With `track_objective`, after the last epoch only.
    pub objective_last_only: bool,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            epochs: 1,
            shuffle: true,
            seed: 0,
            track_objective: false,
            objective_last_only: false,
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochReport {
    /// 1-based epoch number.
    pub epoch: usize,
    /// `β` of the current iterate at the epoch's end.
    pub beta: Vec<f64>,
    /// Mean loss met online during the epoch.
    pub mean_loss: f64,
    /// `Ω(θ) + (1/n) Σ loss` at the epoch's end, if tracked.
    pub objective: Option<f64>,
}

/// Splitmix64: a tiny seeded generator for the visiting order.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

impl StreamMkl {
    /// `Ω(θ)` of the current iterate: the regulariser of the group norms,
    /// plus `(λ_T/2)‖θ_T‖²` when the transitions are penalised apart.
    pub fn regularizer_value(&self) -> f64 {
        let norms = self.group_norms();
        let ng = self.n_groups();
        let omega = match (self.config.transition_lam, self.trans.is_some()) {
            (Some(_), true) => ng,
            _ => norms.len(),
        };
        let each: Vec<usize> = (0..=omega).collect();
        let separate = match (self.config.transition_lam, self.trans.is_some()) {
            (Some(lam_t), true) => 0.5 * lam_t * norms[ng] * norms[ng],
            _ => 0.0,
        };
        self.config.regularizer.value(&norms[..omega], &each) + separate
    }

    /// Trains by epochs on chains of precomputed inputs: chain `c` has the
    /// inputs `ids[offsets[c]..offsets[c + 1]]` labelled `labels[..]`
    /// (`labels < L`). Every chain is checked first; `on_epoch` is called
    /// after each epoch and stops training with its error. `β` is recorded
    /// after each epoch.
    ///
    /// # Complexity
    /// Per epoch, one round per chain (see [`StreamMkl`]), plus one
    /// decoding pass when the objective is tracked.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use omkl_core::learner::stream_mkl::{FitOptions, PrecomputedGram, StreamMkl, StreamMklConfig};
    /// let gram = PrecomputedGram::dense(Arc::new(vec![1.0f32, 0.0, 0.0, 1.0]), 2).unwrap();
    /// let mut cfg = StreamMklConfig::multiclass(vec![], 1e-3, 1.0);
    /// cfg.chain = true;
    /// let mut m = StreamMkl::new_precomputed(cfg, vec![gram], vec![], 2).unwrap();
    /// let opts = FitOptions { epochs: 3, ..FitOptions::default() };
    /// let reports = m.fit_ids(&[0, 1, 1, 0], &[0, 1, 1, 0], &[0, 2, 4], &opts, |_| Ok(())).unwrap();
    /// assert_eq!(reports.len(), 3);
    /// assert_eq!(m.predict_ids(&[1, 0]).unwrap(), vec![1, 0]);
    /// ```
    pub fn fit_ids<F>(
        &mut self,
        ids: &[usize],
        labels: &[usize],
        offsets: &[usize],
        opts: &FitOptions,
        mut on_epoch: F,
    ) -> Result<Vec<EpochReport>>
    where
        F: FnMut(&EpochReport) -> Result<()>,
    {
        if opts.epochs == 0 {
            return Err(OmklError::invalid("epochs", "expected at least 1, got 0"));
        }
        if labels.len() != ids.len() {
            return Err(OmklError::shape(
                "labels",
                format!("{} labels (one per input)", ids.len()),
                labels.len().to_string(),
            ));
        }
        if offsets.len() < 2
            || offsets[0] != 0
            || offsets[offsets.len() - 1] != ids.len()
            || offsets.windows(2).any(|w| w[1] <= w[0])
        {
            return Err(OmklError::invalid(
                "offsets",
                format!(
                    "expected strictly increasing offsets from 0 to {} (at least one chain)",
                    ids.len()
                ),
            ));
        }
        let n_chains = offsets.len() - 1;
        for c in 0..n_chains {
            let (a, b) = (offsets[c], offsets[c + 1]);
            self.check_ids(&ids[a..b])?;
            self.check_labels(b - a, &labels[a..b], self.l)?;
        }
        let mut order: Vec<usize> = (0..n_chains).collect();
        let mut rng = SplitMix(opts.seed);
        let mut reports = Vec::with_capacity(opts.epochs);
        for epoch in 1..=opts.epochs {
            if opts.shuffle {
                rng.shuffle(&mut order);
            }
            let mut sum = 0.0;
            for &c in &order {
                let (a, b) = (offsets[c], offsets[c + 1]);
                sum += self.round(Example::Ids(&ids[a..b]), &labels[a..b])?;
            }
            let objective =
                if opts.track_objective && (!opts.objective_last_only || epoch == opts.epochs) {
                    let mut s = Scratch::default();
                    let mut total = 0.0;
                    for c in 0..n_chains {
                        let (a, b) = (offsets[c], offsets[c + 1]);
                        total += self.loss_of(Example::Ids(&ids[a..b]), &labels[a..b], &mut s)?;
                    }
                    Some(self.regularizer_value() + total / n_chains as f64)
                } else {
                    None
                };
            self.record_beta();
            let report = EpochReport {
                epoch,
                beta: self.beta(),
                mean_loss: sum / n_chains as f64,
                objective,
            };
            on_epoch(&report)?;
            reports.push(report);
        }
        Ok(reports)
    }
}

impl StreamMkl {
    /// `Ω(θ) + (1/n) Σ loss` of the current iterate on chains of
    /// precomputed inputs (as in [`StreamMkl::fit_ids`]); no change.
    pub fn objective_ids(&self, ids: &[usize], labels: &[usize], offsets: &[usize]) -> Result<f64> {
        let n_chains = offsets.len().saturating_sub(1);
        if n_chains == 0 || offsets[0] != 0 || offsets[n_chains] != ids.len() {
            return Err(OmklError::invalid(
                "offsets",
                format!(
                    "expected offsets from 0 to {} (at least one chain)",
                    ids.len()
                ),
            ));
        }
        let mut s = Scratch::default();
        let mut total = 0.0;
        for c in 0..n_chains {
            let (a, b) = (offsets[c], offsets[c + 1]);
            if b <= a || b > ids.len() {
                return Err(OmklError::invalid(
                    "offsets",
                    "expected strictly increasing offsets",
                ));
            }
            self.check_ids(&ids[a..b])?;
            self.check_labels(b - a, &labels[a..b.min(labels.len())], self.l)?;
            total += self.loss_of(Example::Ids(&ids[a..b]), &labels[a..b], &mut s)?;
        }
        Ok(self.regularizer_value() + total / n_chains as f64)
    }
}
