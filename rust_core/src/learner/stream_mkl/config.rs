//! Hyperparameters of the streaming Alg. 3 and their validation.

use serde::{Deserialize, Serialize};

use crate::error::{check_positive, OmklError, Result};
use crate::kernel::Kernel;
use crate::learner::Schedule;
use crate::prox::Regularizer;

/// The structured loss of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamLoss {
    /// Structured hinge with Hamming cost: loss-augmented Viterbi, the
    /// subgradient touches the parts where the decoded labelling differs.
    Hinge,
    /// CRF (log) loss: the gradient is the gold features minus the
    /// expected features from forward-backward (every `(position, label)`
    /// part is touched).
    Crf,
}

/// Which support input the budget removes when the support set is over
/// `max_support`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BudgetRule {
    /// The one whose coefficients have the smallest `Σ_k Σ_y |α_k[j, y]|`
    /// (current iterate; ties: lowest index). With `forgetting < 1`, old
    /// coefficients have shrunk, so this favours old and small ones.
    #[default]
    Smallest,
    /// The one whose coefficients changed longest ago (least recently
    /// used; ties: lowest index): the expansion follows a moving concept.
    Oldest,
}

impl std::str::FromStr for BudgetRule {
    type Err = OmklError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "smallest" => Ok(BudgetRule::Smallest),
            "oldest" => Ok(BudgetRule::Oldest),
            other => Err(OmklError::invalid(
                "budget_rule",
                format!("expected 'smallest' or 'oldest', got {other:?}"),
            )),
        }
    }
}

/// Everything that defines a streaming Alg. 3 learner.
///
/// Groups are ordered: the `kernels.len()` kernel groups, then the explicit
/// groups (each a list of input columns, used as dense primal features),
/// then, for chains, the transition group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamMklConfig {
    /// Kernel groups over the shared support set.
    pub kernels: Vec<Kernel>,
    /// Explicit dense feature groups: the input columns of each.
    pub explicit_groups: Vec<Vec<usize>>,
    /// Linear chains (with a transition group) or multiclass (one position
    /// per example, no transitions).
    pub chain: bool,
    pub loss: StreamLoss,
    /// `Ω`, applied through the group norms (Prop. 1): `SquaredL21` is MKL,
    /// `L2Squared` a structured SVM.
    pub regularizer: Regularizer,
    pub schedule: Schedule,
    /// Hamming cost per wrong position (hinge).
    pub cost: f64,
    /// Predict with the averaged iterate.
    pub average: bool,
    /// Optional projection onto `Σ_g ‖θ_g‖ ≤ radius` after the prox.
    pub radius: Option<f64>,
    /// Optional cap on the number of support inputs.
    pub max_support: Option<usize>,
    /// Record `β` every this many rounds (0: only on request).
    pub history_every: u64,
    /// Skip zero kernel values when scoring (compact-support kernels).
    pub skip_zeros: bool,
    /// Passive-aggressive step (hinge only): the round's step is
    /// `τ = min(ℓ / ‖Δ‖², η_t)` instead of `η_t`, where `ℓ` is the hinge
    /// loss and `Δ` the subgradient direction (the closed-form step that
    /// brings the loss to 0 before the prox, PA-I of Crammer et al. 2006
    /// with cap `η_t`).
    #[serde(default)]
    pub passive_aggressive: bool,
    /// Chains: `None` puts the transition group inside `Ω` (Alg. 3 as
    /// written); `Some(λ_T)` penalises it apart, by `(λ_T/2)‖θ_T‖²`, so that
    /// with all weight on one kernel group MKL is exactly that kernel's
    /// structured SVM.
    #[serde(default)]
    pub transition_lam: Option<f64>,
    /// Forgetting factor in `(0, 1]`: after each round every group is
    /// multiplied by it (one scale change per group), so that a coefficient
    /// learned `a` rounds ago weighs `forgetting^a` of what it did.
    #[serde(default = "one")]
    pub forgetting: f64,
    /// Forget only in rounds whose hinge loss is at least `cost` (for one
    /// position: the rounds where a wrong label scores at least as high as
    /// the right one, the mistakes), instead of after every round: a
    /// model that is right keeps what it learned, and forgets as fast as
    /// it errs.
    #[serde(default)]
    pub forget_on_mistakes: bool,
    /// The first `forget_after` rounds that would forget (every round, or
    /// with `forget_on_mistakes` the mistakes) do not: the model forgets
    /// only once it has learned from that many, as a support budget of
    /// that size starts dropping inputs only once it is full. `0`: from
    /// the first.
    #[serde(default)]
    pub forget_after: u64,
    /// The budget's removal rule.
    #[serde(default)]
    pub budget_rule: BudgetRule,
    /// Kernel groups see the first `kernel_columns` columns of each
    /// position only (`None`: all); the other columns are for explicit
    /// groups (e.g. random features computed by the caller).
    #[serde(default)]
    pub kernel_columns: Option<usize>,
    /// Count the positions that each round's prediction, made before its
    /// update, gets wrong ([`super::StreamMkl::last_mistakes`]); costs one
    /// more Viterbi pass per round.
    #[serde(default)]
    pub count_mistakes: bool,
    /// A step-size multiplier per group (kernel groups, then explicit
    /// groups): group `g` moves by `r_g η_t Δ_g` ([`super::rates`]). Empty:
    /// every rate is 1.
    #[serde(default)]
    pub group_rates: Vec<f64>,
}

fn one() -> f64 {
    1.0
}

impl StreamMklConfig {
    /// A multiclass hinge MKL configuration with the given kernels.
    pub fn multiclass(kernels: Vec<Kernel>, lam: f64, eta0: f64) -> Self {
        StreamMklConfig {
            kernels,
            explicit_groups: Vec::new(),
            chain: false,
            loss: StreamLoss::Hinge,
            regularizer: Regularizer::SquaredL21 { lam },
            schedule: Schedule::InvSqrt { eta0 },
            cost: 1.0,
            average: false,
            radius: None,
            max_support: None,
            history_every: 0,
            skip_zeros: true,
            passive_aggressive: false,
            transition_lam: None,
            forgetting: 1.0,
            forget_on_mistakes: false,
            forget_after: 0,
            budget_rule: BudgetRule::Smallest,
            kernel_columns: None,
            count_mistakes: false,
            group_rates: Vec::new(),
        }
    }

    /// Number of kernel and explicit groups (β is over these).
    pub fn n_groups(&self) -> usize {
        self.kernels.len() + self.explicit_groups.len()
    }

    /// Validates every field for inputs of dimension `d`.
    pub fn check(&self, d: usize) -> Result<()> {
        for k in &self.kernels {
            k.check()?;
        }
        for (g, cols) in self.explicit_groups.iter().enumerate() {
            if cols.is_empty() {
                return Err(OmklError::empty(format!("explicit_groups[{g}]")));
            }
            if let Some(&c) = cols.iter().find(|&&c| c >= d) {
                return Err(OmklError::invalid(
                    format!("explicit_groups[{g}]"),
                    format!("expected column indices < d = {d}, got {c}"),
                ));
            }
        }
        if let Some(kc) = self.kernel_columns {
            if kc == 0 || kc > d {
                return Err(OmklError::invalid(
                    "kernel_columns",
                    format!("expected None or an integer in [1, d = {d}], got {kc}"),
                ));
            }
        }
        self.check_groups(self.kernels.len(), self.explicit_groups.len())
    }

    /// Validates every field but the groups' own definitions, for
    /// `n_kernel` kernel groups and `n_explicit` explicit groups.
    pub fn check_groups(&self, n_kernel: usize, n_explicit: usize) -> Result<()> {
        let n_groups = n_kernel + n_explicit;
        if n_groups == 0 {
            return Err(OmklError::empty(
                "kernels and explicit_groups (at least one group)",
            ));
        }
        self.regularizer.check_acts_on_norms("group")?;
        check_group_rates(&self.group_rates, n_groups)?;
        let in_omega = self.chain && self.transition_lam.is_none();
        self.regularizer.check(n_groups + usize::from(in_omega))?;
        if let Some(lam) = self.transition_lam {
            crate::error::check_nonneg("transition_lam", lam)?;
        }
        self.schedule.check()?;
        crate::error::check_nonneg("cost", self.cost)?;
        if self.passive_aggressive && self.loss != StreamLoss::Hinge {
            return Err(OmklError::invalid(
                "passive_aggressive",
                "expected False with loss='crf' (the passive-aggressive step is for the hinge loss)",
            ));
        }
        if self.forget_on_mistakes && self.loss != StreamLoss::Hinge {
            return Err(OmklError::invalid(
                "forget_on_mistakes",
                "expected False with loss='crf' (mistakes are rounds of hinge loss >= cost)",
            ));
        }
        if let Some(r) = self.radius {
            check_positive("radius", r)?;
        }
        if !(self.forgetting > 0.0 && self.forgetting <= 1.0) {
            return Err(OmklError::invalid(
                "forgetting",
                format!("expected a factor in (0, 1], got {}", self.forgetting),
            ));
        }
        if self.max_support == Some(0) {
            return Err(OmklError::invalid(
                "max_support",
                "expected None or an integer >= 1, got 0",
            ));
        }
        Ok(())
    }
}

/// Checks `group_rates` for `n_groups` groups: empty (every rate 1), or one
/// finite rate > 0 per group.
fn check_group_rates(rates: &[f64], n_groups: usize) -> Result<()> {
    if rates.is_empty() {
        return Ok(());
    }
    if rates.len() != n_groups {
        return Err(OmklError::invalid(
            "group_rates",
            format!(
                "expected one rate per group ({n_groups}), got {}",
                rates.len()
            ),
        ));
    }
    if let Some(r) = rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        return Err(OmklError::invalid(
            "group_rates",
            format!("expected finite rates > 0, got {r}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_fields() {
        let good = StreamMklConfig::multiclass(vec![Kernel::Linear { normalize: false }], 0.1, 1.0);
        assert!(good.check(3).is_ok());
        let mut c = good.clone();
        c.kernels.clear();
        assert!(c.check(3).is_err());
        let mut c = good.clone();
        c.explicit_groups = vec![vec![0, 3]];
        assert!(c
            .check(3)
            .unwrap_err()
            .to_string()
            .contains("explicit_groups[0]"));
        let mut c = good.clone();
        c.regularizer = Regularizer::L1 { lam: 1.0 };
        assert!(c.check(3).is_err());
        let mut c = good.clone();
        c.max_support = Some(0);
        assert!(c.check(3).is_err());
        // options of the hinge loss, refused with the CRF loss by name
        type Set = fn(&mut StreamMklConfig);
        let hinge_only: [(Set, &str); 2] = [
            (|c| c.passive_aggressive = true, "passive_aggressive"),
            (|c| c.forget_on_mistakes = true, "forget_on_mistakes"),
        ];
        for (set, name) in hinge_only {
            let mut c = good.clone();
            set(&mut c);
            assert!(c.check(3).is_ok());
            c.loss = StreamLoss::Crf;
            assert!(c.check(3).unwrap_err().to_string().contains(name));
        }
        for f in [0.0, -0.5, 1.5, f64::NAN] {
            let mut c = good.clone();
            c.forgetting = f;
            assert!(c.check(3).unwrap_err().to_string().contains("forgetting"));
        }
        let mut c = good.clone();
        c.kernel_columns = Some(4);
        assert!(c
            .check(3)
            .unwrap_err()
            .to_string()
            .contains("kernel_columns"));
        assert!("newest".parse::<BudgetRule>().is_err());
        assert_eq!("oldest".parse::<BudgetRule>().unwrap(), BudgetRule::Oldest);
        let mut c = good;
        c.kernels.push(Kernel::Gaussian { sigma2: -1.0 });
        assert!(c.check(3).unwrap_err().to_string().contains("sigma2"));
    }
}
