//! Hyperparameters of online MKL on chains (Alg. 3): learning-rate
//! schedule, regulariser, epochs and averaging.

use crate::error::{check_positive, OmklError, Result};
use crate::prox::Regularizer;

/// Learning rate `η_t` of round `t = 1, 2, …`.
///
/// # Example
/// ```
/// use omkl_core::learner::mkl_config::StepSize;
/// assert_eq!(StepSize::InvSqrt { eta0: 2.0 }.eta(4), 1.0);
/// assert_eq!(StepSize::InvT { sigma: 0.5 }.eta(4), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepSize {
    /// `η_t = η0`.
    Constant { eta0: f64 },
    /// `η_t = η0 / √t`.
    InvSqrt { eta0: f64 },
    /// `η_t = 1 / (σ t)` (for a σ-strongly convex objective).
    InvT { sigma: f64 },
}

impl StepSize {
    /// The rate of round `t ≥ 1`.
    #[inline]
    pub fn eta(&self, t: u64) -> f64 {
        let t = t.max(1) as f64;
        match *self {
            StepSize::Constant { eta0 } => eta0,
            StepSize::InvSqrt { eta0 } => eta0 / t.sqrt(),
            StepSize::InvT { sigma } => 1.0 / (sigma * t),
        }
    }

    /// Checks that `η0` (or `σ`) is finite and positive.
    pub fn check(&self) -> Result<()> {
        match *self {
            StepSize::Constant { eta0 } | StepSize::InvSqrt { eta0 } => {
                check_positive("eta0", eta0)
            }
            StepSize::InvT { sigma } => check_positive("sigma", sigma),
        }
    }
}

/// Settings of [`crate::learner::online_mkl::train_chain_mkl`].
#[derive(Debug, Clone, PartialEq)]
pub struct OnlineMklConfig {
    /// `Ω` over the groups (K kernel groups, then the transition group
    /// unless `transition_lam` is set); must act on group norms (e.g.
    /// `SquaredL21` for MKL, `L2Squared`).
    pub regularizer: Regularizer,
    /// `None`: the transition group is one of the groups of `Ω` (Alg. 3 as
    /// written). `Some(λ_T)`: the penalty is `Ω(θ_1..θ_K) + (λ_T/2)‖θ_T‖²`,
    /// so the transitions are regularised apart from the kernel groups (with
    /// one kernel group and `Ω = (λ/2)‖·‖²` both choices coincide).
    pub transition_lam: Option<f64>,
    /// Learning-rate schedule.
    pub step: StepSize,
    /// Passes over the corpus.
    pub epochs: usize,
    /// Hamming cost per wrong label in the structured hinge loss.
    pub cost: f64,
    /// Return the averaged model (`true`) or the last one.
    pub average: bool,
    /// Visit chains in a fresh pseudo-random order each epoch (seeded).
    pub shuffle: bool,
    /// Seed of the visiting order.
    pub seed: u64,
    /// Evaluate the full objective after each epoch (one extra decoding pass).
    pub track_objective: bool,
    /// With `track_objective`, evaluate it after the last epoch only (the
    /// other epochs report `None`): what a selection by the final objective
    /// needs, at one decoding pass instead of one per epoch.
    pub objective_last_only: bool,
}

impl Default for OnlineMklConfig {
    fn default() -> Self {
        OnlineMklConfig {
            regularizer: Regularizer::SquaredL21 { lam: 1e-3 },
            transition_lam: None,
            step: StepSize::InvSqrt { eta0: 1.0 },
            epochs: 20,
            cost: 1.0,
            average: true,
            shuffle: true,
            seed: 0,
            track_objective: false,
            objective_last_only: false,
        }
    }
}

impl OnlineMklConfig {
    /// Validates every field for `n_kernel_groups` emission groups (`Ω`
    /// then has one more group unless the transitions are separate).
    pub fn check(&self, n_kernel_groups: usize) -> Result<()> {
        match self.transition_lam {
            Some(lam) => {
                crate::error::check_nonneg("transition_lam", lam)?;
                self.regularizer.check(n_kernel_groups)?;
            }
            None => self.regularizer.check(n_kernel_groups + 1)?,
        }
        if !self.regularizer.acts_on_group_norms() {
            return Err(OmklError::invalid(
                "regularizer",
                format!(
                    "expected a regulariser of the group norms (SquaredL21, L2Squared, ...), got {:?}",
                    self.regularizer
                ),
            ));
        }
        self.step.check()?;
        if self.epochs == 0 {
            return Err(OmklError::invalid("epochs", "expected at least 1, got 0"));
        }
        crate::error::check_nonneg("cost", self.cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        let mut c = OnlineMklConfig::default();
        assert!(c.check(4).is_ok());
        c.transition_lam = Some(-1.0);
        assert!(c
            .check(4)
            .unwrap_err()
            .to_string()
            .contains("transition_lam"));
        c.transition_lam = Some(0.5);
        assert!(c.check(4).is_ok());
        c.regularizer = Regularizer::WeightedSquaredL21 {
            lam: 1.0,
            weights: vec![1.0; 4],
        };
        assert!(c.check(4).is_ok());
        c.transition_lam = None;
        assert!(c.check(4).is_err()); // 5 groups, 4 weights
        c.regularizer = Regularizer::SquaredL21 { lam: 1e-3 };
        c.epochs = 0;
        assert!(c.check(4).unwrap_err().to_string().contains("epochs"));
        c.epochs = 1;
        c.step = StepSize::InvSqrt { eta0: -1.0 };
        assert!(c.check(4).unwrap_err().to_string().contains("eta0"));
        c.step = StepSize::Constant { eta0: 0.1 };
        c.regularizer = Regularizer::L1 { lam: 0.1 };
        assert!(c.check(4).is_err());
    }
}
