//! Alg. 1: online proximal learning on hashed grouped sparse features.
//!
//! Round `t` on example `(x_t, y_t)`:
//! 1. subgradient step on the loss, `w ← w − η_t ∇L(w; x_t, y_t)`;
//! 2. for each regulariser `Ω_j`, `j = 1..J`, in order: `w ← prox_{η_t Ω_j}(w)`;
//! 3. optionally, project onto the Euclidean ball `‖w‖₂ ≤ γ`.
//!
//! The learner returns the last iterate or the average of all iterates.
//!
//! # Cost of a round
//! * step 1: O(non-zeros × outputs);
//! * a group-norm regulariser (Prop. 1: compute the group norms, apply
//!   `prox_{ηψ}` to them, rescale each group by new/old norm): O(#groups),
//!   plus the regulariser's own cost on the norm vector, thanks to the
//!   scale-factor storage of [`GroupedWeights`]; ℓ2² shrinkage is one of them;
//! * the projection: O(#groups);
//! * coordinate-wise regularisers (`L1`, `SparseGroupLasso`, `L1Ball`) are
//!   applied exactly, to the coordinates written so far (the others are zero
//!   and stay zero): O(#groups + written coordinates) per round, that is
//!   proportional to the model's support rather than to the hashed
//!   dimension, but not to the example's non-zeros;
//! * averaging: O(1) per touched coordinate plus O(#groups) (see
//!   [`super::weights::ScaledBlock`]).
//!
//! An intercept per output (not regularised) is optional.

use serde::{Deserialize, Serialize};

use super::grouped_weights::GroupedWeights;
use super::loss::{Loss, Target};
use super::round::{prox_groups, NormScratch};
use super::schedule::Schedule;
use super::structure::{ChainScratch, Structure};
use crate::error::{check_finite, check_positive, OmklError, Result};
use crate::features::sparse::check_entries;
use crate::features::{SparseBatch, SparseExample};
use crate::prox::Regularizer;

/// Largest magnitude a weight may reach through an update.
const MAX_WEIGHT: f64 = 1e150;

/// Hyperparameters of Alg. 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alg1Config {
    pub loss: Loss,
    pub schedule: Schedule,
    /// The J regularisers whose prox steps follow each gradient step.
    pub regularizers: Vec<Regularizer>,
    /// Radius γ of the optional Euclidean-ball projection.
    pub radius: Option<f64>,
    /// Predict with the averaged model instead of the last iterate.
    pub averaged: bool,
    /// Learn an unregularised intercept per output.
    pub fit_intercept: bool,
    /// Clip each component of the loss gradient w.r.t. the scores to
    /// `[−c, c]` (a guard against divergence on unscaled data; for the
    /// squared loss this is the Huber loss's gradient).
    #[serde(default)]
    pub clip_gradient: Option<f64>,
}

impl Alg1Config {
    /// The configuration with `loss`, `schedule` and `regularizers`, no
    /// ball projection, predictions with the last iterate, an intercept
    /// and no gradient clipping; other values go in with struct update
    /// syntax.
    ///
    /// # Example
    /// ```
    /// use omkl_core::learner::{Alg1Config, Loss, Schedule};
    /// let c = Alg1Config {
    ///     averaged: true,
    ///     ..Alg1Config::new(Loss::Hinge, Schedule::Constant { eta0: 0.5 }, vec![])
    /// };
    /// assert!(c.averaged && c.fit_intercept && c.radius.is_none());
    /// ```
    pub fn new(loss: Loss, schedule: Schedule, regularizers: Vec<Regularizer>) -> Self {
        Alg1Config {
            loss,
            schedule,
            regularizers,
            radius: None,
            averaged: false,
            fit_intercept: true,
            clip_gradient: None,
        }
    }

    /// Validates every parameter for a model with `n_groups` groups.
    pub fn check(&self, n_groups: usize) -> Result<()> {
        self.schedule.check()?;
        for r in &self.regularizers {
            r.check(n_groups)?;
        }
        if let Some(r) = self.radius {
            check_positive("radius", r)?;
        }
        if let Some(c) = self.clip_gradient {
            check_positive("clip_gradient", c)?;
        }
        Ok(())
    }
}

/// The state of Alg. 1.
///
/// # Example
/// ```
/// use omkl_core::features::SparseExample;
/// use omkl_core::learner::{Alg1Config, Loss, OnlineProximal, Schedule, Target};
/// use omkl_core::prox::Regularizer;
/// let config = Alg1Config {
///     loss: Loss::Logistic,
///     schedule: Schedule::InvSqrt { eta0: 0.5 },
///     regularizers: vec![Regularizer::GroupLasso { lam: 0.01 }],
///     radius: None,
///     averaged: true,
///     fit_intercept: true,
///     clip_gradient: None,
/// };
/// let mut m = OnlineProximal::new(config, 2, 8, 2).unwrap();
/// let mut x = SparseExample::default();
/// x.push(0, 3, 1.0);
/// for _ in 0..20 {
///     m.learn(&x, Target::Class(1)).unwrap();
/// }
/// let z = m.scores(&x).unwrap();
/// assert!(z[1] > z[0]);
/// ```
#[derive(Debug, Clone)]
pub struct OnlineProximal {
    pub(crate) config: Alg1Config,
    pub(crate) weights: GroupedWeights,
    pub(crate) intercept: Vec<f64>,
    pub(crate) intercept_sum: Vec<f64>,
    pub(crate) t: u64,
    /// The round from which the step-size schedule counts (see
    /// [`OnlineProximal::restart_schedule`]).
    pub(crate) schedule_start: u64,
    /// Scratch buffers (not part of the state).
    pub(crate) norms: NormScratch,
    pub(crate) grad: Vec<f64>,
    pub(crate) scores_buf: Vec<f64>,
    pub(crate) nz: Vec<u32>,
    /// What an example's output is (a class, or a labelled chain).
    pub(crate) structure: Structure,
    pub(crate) chain: ChainScratch,
}

/// Equality of the learning state (scratch buffers are ignored).
impl PartialEq for OnlineProximal {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.weights == other.weights
            && self.intercept == other.intercept
            && self.intercept_sum == other.intercept_sum
            && self.t == other.t
            && self.schedule_start == other.schedule_start
            && self.structure == other.structure
    }
}

impl OnlineProximal {
    /// A zero model with `n_groups` groups of `n_buckets` buckets and
    /// `n_outputs` outputs (1 for the squared loss).
    pub fn new(
        config: Alg1Config,
        n_groups: usize,
        n_buckets: usize,
        n_outputs: usize,
    ) -> Result<Self> {
        config.check(n_groups)?;
        crate::features::hashing::check_n_buckets(n_buckets)?;
        if n_outputs == 0 {
            return Err(OmklError::invalid(
                "n_outputs",
                "expected at least 1 output",
            ));
        }
        if config.loss == Loss::Squared && n_outputs != 1 {
            return Err(OmklError::invalid(
                "n_outputs",
                format!("the squared loss has 1 output, got {n_outputs}"),
            ));
        }
        let averaged = config.averaged;
        Ok(OnlineProximal {
            config,
            weights: GroupedWeights::new(n_groups, n_buckets, n_outputs, averaged)?,
            intercept: vec![0.0; n_outputs],
            intercept_sum: vec![0.0; n_outputs],
            t: 0,
            schedule_start: 0,
            norms: NormScratch::default(),
            grad: Vec::new(),
            scores_buf: Vec::new(),
            nz: Vec::new(),
            structure: Structure::Multiclass,
            chain: ChainScratch::default(),
        })
    }

    /// Restarts the step-size schedule: the next round's step is the first
    /// one (`η0`, or `1/σ`), as after a detected concept drift. The weights,
    /// the round counter and the averaging sums are unchanged.
    ///
    /// # Complexity
    /// O(1).
    pub fn restart_schedule(&mut self) {
        self.schedule_start = self.t;
    }

    /// Zeroes the weights and the intercept and restarts the schedule, as
    /// after a detected concept drift. The averaged model (when averaging)
    /// still counts the rounds before: the running sums are kept.
    ///
    /// # Complexity
    /// O(written buckets).
    pub fn reset_weights(&mut self) {
        for g in 0..self.weights.n_groups() {
            self.weights.rescale_group(g, 0.0);
        }
        self.intercept.fill(0.0);
        self.restart_schedule();
    }

    /// The output structure.
    pub fn structure(&self) -> Structure {
        self.structure
    }

    /// The hyperparameters.
    pub fn config(&self) -> &Alg1Config {
        &self.config
    }

    /// The weights.
    pub fn weights(&self) -> &GroupedWeights {
        &self.weights
    }

    /// Rounds done so far.
    pub fn rounds(&self) -> u64 {
        self.t
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.weights.n_groups()
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.weights.n_outputs()
    }

    /// Appends all-zero groups up to `n_groups` (checking the regularisers
    /// against the new count first; weighted ones need a weight per group).
    pub fn ensure_groups(&mut self, n_groups: usize) -> Result<()> {
        if n_groups > self.n_groups() {
            self.config.check(n_groups)?;
            self.weights.reserve(n_groups, self.n_outputs())?;
        }
        Ok(())
    }

    /// Grows the number of outputs (new classes) up to `n_outputs`.
    pub fn ensure_outputs(&mut self, n_outputs: usize) -> Result<()> {
        if n_outputs > self.n_outputs() {
            if !self.config.loss.is_multiclass() {
                return Err(OmklError::invalid(
                    "n_outputs",
                    "the squared loss has exactly 1 output",
                ));
            }
            self.weights.resize_outputs(n_outputs, true)?;
            self.intercept.resize(n_outputs, 0.0);
            self.intercept_sum.resize(n_outputs, 0.0);
        }
        Ok(())
    }

    /// Undoes [`Self::ensure_groups`] and [`Self::ensure_outputs`] (for a
    /// round that failed after growing the model, before any other change):
    /// every cached value is left exactly as it was before the growth.
    pub(crate) fn shrink_to(&mut self, n_groups: usize, n_outputs: usize) {
        self.weights.truncate_groups(n_groups);
        if n_outputs < self.n_outputs() {
            // shrinking re-lays out existing data and cannot run out of memory
            // in practice; on failure the model keeps the extra zero outputs.
            let _ = self.weights.resize_outputs(n_outputs, false);
            self.intercept.truncate(n_outputs);
            self.intercept_sum.truncate(n_outputs);
        }
    }

    /// The intercept used for prediction (averaged or last).
    pub fn intercept(&self) -> Vec<f64> {
        if self.config.averaged && self.t > 0 {
            self.intercept_sum
                .iter()
                .map(|s| s / self.t as f64)
                .collect()
        } else {
            self.intercept.clone()
        }
    }

    /// Scores `z_k = b_k + Σ_i x_i w_{g_i,b_i,k}` of the prediction model
    /// (averaged or last, as configured).
    ///
    /// # Complexity
    /// O(non-zeros × outputs).
    pub fn scores(&self, x: &SparseExample) -> Result<Vec<f64>> {
        x.check(self.n_groups(), self.weights.n_buckets())?;
        let mut z = self.intercept();
        self.weights.add_scores(
            &x.groups,
            &x.indices,
            &x.values,
            self.config.averaged,
            &mut z,
        );
        Ok(z)
    }

    /// One round of Alg. 1 on a valid example; returns the loss at the
    /// current iterate before the update. On error the model is unchanged.
    pub fn learn(&mut self, x: &SparseExample, target: Target) -> Result<f64> {
        x.check(self.n_groups(), self.weights.n_buckets())?;
        self.learn_entries(&x.groups, &x.indices, &x.values, target)
    }

    /// Trains on every example of `batch` in order (validating all of them
    /// first, so on invalid input the model is unchanged; when memory for a
    /// new row cannot be had, [`OmklError::Alloc`] after the examples
    /// before). Returns the mean loss.
    pub fn learn_batch(&mut self, batch: &SparseBatch, targets: &[Target]) -> Result<f64> {
        batch.check(self.n_groups(), self.weights.n_buckets())?;
        if targets.len() != batch.n_examples() {
            return Err(OmklError::shape(
                "targets",
                format!("one per example ({})", batch.n_examples()),
                targets.len().to_string(),
            ));
        }
        for (i, &t) in targets.iter().enumerate() {
            self.config
                .loss
                .check_target(self.n_outputs(), t)
                .map_err(|e| OmklError::invalid(format!("targets[{i}]"), e.to_string()))?;
        }
        let mut total = 0.0;
        for (i, &t) in targets.iter().enumerate() {
            let (g, b, v) = batch.row(i);
            total += self.learn_entries(g, b, v, t).map_err(|e| match e {
                // memory that cannot be had stays a MemoryError
                OmklError::Alloc { .. } => e,
                e => OmklError::invalid(format!("example {i}"), e.to_string()),
            })?;
        }
        Ok(total / targets.len().max(1) as f64)
    }

    /// A round on entries already checked against the model's shape.
    pub(crate) fn learn_entries(
        &mut self,
        groups: &[u32],
        indices: &[u32],
        values: &[f64],
        target: Target,
    ) -> Result<f64> {
        debug_assert!(check_entries(
            groups,
            indices,
            values,
            self.n_groups(),
            self.weights.n_buckets()
        )
        .is_ok());
        let kk = self.n_outputs();
        // Scores and gradient at the current iterate (no mutation yet).
        let mut z = self.intercept.clone();
        self.weights
            .add_scores(groups, indices, values, false, &mut z);
        if let Err(e) = check_finite("scores (feature values too large)", &z) {
            self.scores_buf = z;
            return Err(e);
        }
        self.grad.resize(kk, 0.0);
        let mut grad = std::mem::take(&mut self.grad);
        let loss = self.config.loss.loss_grad(&z, target, &mut grad);
        if let Some(c) = self.config.clip_gradient {
            grad.iter_mut().for_each(|v| *v = v.clamp(-c, c));
        }
        let result = loss.and_then(|l| {
            check_finite("loss gradient", &grad)?;
            self.check_update(groups, indices, values, &grad)?;
            if grad.iter().any(|&v| v != 0.0) {
                self.weights.ensure_rows(groups, indices, values)?;
            }
            self.step(groups, indices, values, &grad)?;
            Ok(l)
        });
        self.grad = grad;
        self.scores_buf = z;
        result
    }

    /// Refuses an update that would push a weight beyond ±1e150 (so that
    /// squared norms stay finite), before anything is changed: each entry's
    /// change is added to the weight it writes, so a large weight elsewhere
    /// in the group never blocks later rounds.
    ///
    /// # Complexity
    /// O(non-zeros × non-zero gradient entries).
    pub(crate) fn check_update(
        &self,
        groups: &[u32],
        indices: &[u32],
        values: &[f64],
        d: &[f64],
    ) -> Result<()> {
        let eta = self.config.schedule.rate(self.t + 1 - self.schedule_start);
        let w = &self.weights;
        // the outputs that the step writes (most gradients have a few)
        let nz: Vec<(usize, f64)> = d
            .iter()
            .copied()
            .enumerate()
            .take(w.n_outputs())
            .filter(|&(_, dk)| dk != 0.0)
            .collect();
        if nz.is_empty() {
            return Ok(());
        }
        for (i, ((&g, &b), &x)) in groups.iter().zip(indices).zip(values).enumerate() {
            let base = w.slot(g as usize, b as usize, 0);
            let blk = &w.blocks[g as usize];
            for &(k, dk) in &nz {
                let old = base.map_or(0.0, |r| blk.get(r + k));
                let new = old.abs() + (eta * x * dk).abs();
                if new.is_nan() || new > MAX_WEIGHT {
                    return Err(OmklError::invalid(
                        "values",
                        format!("feature value {x} (entry {i}) is too large: the update would make a weight as large as {new:e}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Steps 1-3 of the round with the loss gradient `d` w.r.t. the scores.
    fn step(&mut self, groups: &[u32], indices: &[u32], values: &[f64], d: &[f64]) -> Result<()> {
        let eta = self.config.schedule.rate(self.t + 1 - self.schedule_start);
        self.gradient_rows(groups, indices, values, d, eta);
        self.finish_round(eta)
    }

    /// Step 1 of the round for one part of the output (the example of a
    /// multiclass round, one position of a chain): `w ← w − η x dᵀ` on the
    /// entries `(groups, indices, values)` and the outputs where the
    /// gradient `d` w.r.t. the part's scores is non-zero, and the intercept.
    ///
    /// # Complexity
    /// O(non-zeros × non-zero gradient entries).
    pub(crate) fn gradient_rows(
        &mut self,
        groups: &[u32],
        indices: &[u32],
        values: &[f64],
        d: &[f64],
        eta: f64,
    ) {
        let kk = self.n_outputs();
        self.nz.clear();
        self.nz.extend(
            (0..kk.min(d.len()))
                .filter(|&k| d[k] != 0.0)
                .map(|k| k as u32),
        );
        if !self.nz.is_empty() {
            let nz = std::mem::take(&mut self.nz);
            for ((&g, &b), &x) in groups.iter().zip(indices).zip(values) {
                if x != 0.0 {
                    self.weights
                        .axpy_bucket_sparse(g as usize, b as usize, -eta * x, &nz, d);
                }
            }
            self.nz = nz;
            if self.config.fit_intercept {
                for (b, dk) in self.intercept.iter_mut().zip(d) {
                    *b -= eta * dk;
                }
            }
        }
    }

    /// Steps 2-3 of the round (the J prox steps and the projection) and
    /// the averaging, after the gradient steps of every part.
    ///
    /// # Complexity
    /// O(#groups) for group-norm regularisers and the projection;
    /// O(written coordinates) for coordinate-wise ones (see the module docs).
    pub(crate) fn finish_round(&mut self, eta: f64) -> Result<()> {
        // 2. The J prox steps (a run of group-norm regularisers at once),
        for run in self
            .config
            .regularizers
            .split_inclusive(|r| !r.acts_on_group_norms())
        {
            let (group, entry) = match run.split_last() {
                Some((r, rest)) if !r.acts_on_group_norms() => (rest, Some(r)),
                _ => (run, None),
            };
            prox_groups(&mut self.weights, group, eta, None, &mut self.norms)?;
            if let Some(r) = entry {
                self.weights.apply_to_written(|x, o| r.prox(x, o, eta))?;
            }
        }
        // 3. then the projection onto the ball ‖w‖ ≤ γ.
        let radius = self.config.radius;
        prox_groups(&mut self.weights, &[], eta, radius, &mut self.norms)?;
        self.weights.end_round();
        for (s, b) in self.intercept_sum.iter_mut().zip(&self.intercept) {
            *s += b;
        }
        self.t += 1;
        Ok(())
    }

    /// The prediction weights (averaged or last) as a dense vector, laid out
    /// as in [`GroupedWeights`].
    pub fn dense_weights(&self) -> Vec<f64> {
        if self.config.averaged {
            self.weights.averaged_dense()
        } else {
            self.weights.dense()
        }
    }

    /// Norms `‖w_g‖` of the prediction weights (averaged or last), summed
    /// exactly from the coefficients.
    ///
    /// # Complexity
    /// O(written coordinates) for the last iterate; O(written coordinates
    /// + #groups · n_buckets) for the averaged model.
    pub fn group_norms(&self) -> Vec<f64> {
        if self.config.averaged {
            self.weights.averaged_group_norms()
        } else {
            self.weights.exact_group_norms()
        }
    }

    /// Heap bytes held by the model.
    pub fn heap_bytes(&self) -> usize {
        self.weights.heap_bytes()
            + (self.intercept.capacity()
                + self.intercept_sum.capacity()
                + self.norms.norms.capacity()
                + self.norms.shrunk.capacity()
                + self.grad.capacity())
                * 8
    }
}
