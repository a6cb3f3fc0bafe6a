//! [`Regularizer`]: the regularisers of the online proximal learner (Alg. 1)
//! and of online MKL (Alg. 3), with their value and proximity operator.

use serde::{Deserialize, Serialize};

use super::elastic_net::{check_l1_ratio, elastic_net_norms};
use super::group_lasso::shrink_norms;
use super::groups::{check_grouped, check_offsets, group_norms, norm2};
use super::l1::soft_threshold_unchecked;
use super::l1_ball::project_l1_ball_unchecked;
use super::l2_squared::prox_l2_squared_unchecked;
use super::l2q::{check_q, l2q_norms};
use super::reduction::prox_by_group_norms;
use super::sparse_group_lasso::prox_sparse_group_lasso_unchecked;
use super::squared_l1::{prox_squared_l1_unchecked, ThresholdMethod};
use super::weighted_squared_l1::{check_weights, prox_weighted_squared_l1_unchecked};
use crate::error::{check_finite, check_nonneg, OmklError, Result};

/// A regulariser `Ω`, with its parameters. Groups (where they matter) are
/// given separately, by `offsets` (see [`super::groups::check_offsets`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Regularizer {
    /// `λ‖w‖₁`.
    L1 { lam: f64 },
    /// `(λ/2)‖w‖²`.
    L2Squared { lam: f64 },
    /// `λ Σ_g ‖w_g‖` (ℓ2,1, the group lasso).
    GroupLasso { lam: f64 },
    /// `(λ/2)(Σ_g ‖w_g‖)²` (the MKL regulariser of Alg. 3).
    SquaredL21 { lam: f64 },
    /// `(λ/2)(Σ_g d_g‖w_g‖)²` with `d_g ≥ 0`.
    WeightedSquaredL21 { lam: f64, weights: Vec<f64> },
    /// `λ[ρ Σ‖w_g‖ + (1−ρ)/2 Σ‖w_g‖²]` with `ρ = l1_ratio ∈ [0, 1]`.
    ElasticNetMkl { lam: f64, l1_ratio: f64 },
    /// `λ Σ_g ‖w_g‖^q` with `q ≥ 1`.
    L2q { lam: f64, q: f64 },
    /// `λ1‖w‖₁ + λ2 Σ_g‖w_g‖`.
    SparseGroupLasso { lam1: f64, lam2: f64 },
    /// Indicator of `‖w‖₁ ≤ r` (its prox is the Euclidean projection).
    L1Ball { radius: f64 },
    /// Indicator of `Σ_g‖w_g‖ ≤ r`.
    L21Ball { radius: f64 },
}

/// Relative slack with which [`Regularizer::value`] of a ball indicator
/// accepts points on the boundary (projections are exact up to rounding).
pub const BALL_TOLERANCE: f64 = 1e-12;

impl Regularizer {
    /// Validates the parameters: λ finite and ≥ 0, `q ≥ 1`, `0 ≤ ρ ≤ 1`,
    /// weights finite, ≥ 0 and of length `n_groups`, radius finite and ≥ 0.
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::Regularizer;
    /// assert!(Regularizer::L2q { lam: 1.0, q: 0.5 }.check(3).is_err());
    /// assert!(Regularizer::GroupLasso { lam: 0.1 }.check(3).is_ok());
    /// ```
    pub fn check(&self, n_groups: usize) -> Result<()> {
        match self {
            Regularizer::L1 { lam }
            | Regularizer::L2Squared { lam }
            | Regularizer::GroupLasso { lam }
            | Regularizer::SquaredL21 { lam } => check_nonneg("lam", *lam),
            Regularizer::WeightedSquaredL21 { lam, weights } => {
                check_nonneg("lam", *lam)?;
                check_weights("weights", weights, n_groups)
            }
            Regularizer::ElasticNetMkl { lam, l1_ratio } => {
                check_nonneg("lam", *lam)?;
                check_l1_ratio(*l1_ratio)
            }
            Regularizer::L2q { lam, q } => {
                check_nonneg("lam", *lam)?;
                check_q(*q)
            }
            Regularizer::SparseGroupLasso { lam1, lam2 } => {
                check_nonneg("lam1", *lam1)?;
                check_nonneg("lam2", *lam2)
            }
            Regularizer::L1Ball { radius } | Regularizer::L21Ball { radius } => {
                check_nonneg("radius", *radius)
            }
        }
    }

    /// True when `Ω(w) = ψ(‖w_1‖, …, ‖w_G‖)` for every grouping (Prop. 1).
    ///
    /// False for `L1` and `SparseGroupLasso`, and also for `L1Ball`: the
    /// ℓ1 norm is a function of the group norms only when every group has
    /// one element, so its projection ignores the grouping.
    pub fn acts_on_group_norms(&self) -> bool {
        !matches!(
            self,
            Regularizer::L1 { .. }
                | Regularizer::SparseGroupLasso { .. }
                | Regularizer::L1Ball { .. }
        )
    }

    /// An error naming `regularizer` unless
    /// [`Regularizer::acts_on_group_norms`]; it reads `expected a function
    /// of the {groups} norms, got …`, `groups` naming the model's groups.
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::Regularizer;
    /// assert!(Regularizer::GroupLasso { lam: 0.1 }.check_acts_on_norms("group").is_ok());
    /// let e = Regularizer::L1 { lam: 0.1 }.check_acts_on_norms("template").unwrap_err();
    /// assert!(e.to_string().contains("expected a function of the template norms"));
    /// ```
    pub fn check_acts_on_norms(&self, groups: &str) -> Result<()> {
        if self.acts_on_group_norms() {
            return Ok(());
        }
        Err(OmklError::invalid(
            "regularizer",
            format!("expected a function of the {groups} norms, got {self:?}"),
        ))
    }

    /// For group-norm regularisers, in place `norms ← prox_{ηψ}(norms)`.
    /// Input and output are ≥ 0. Ball variants ignore η (projection).
    /// Errors for the variants where [`Regularizer::acts_on_group_norms`] is
    /// false, and on invalid parameters, η or norms.
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::Regularizer;
    /// let mut n = [3.0, 1.0];
    /// Regularizer::SquaredL21 { lam: 1.0 }.prox_group_norms(&mut n, 1.0).unwrap();
    /// assert_eq!(n, [1.5, 0.0]);
    /// ```
    pub fn prox_group_norms(&self, norms: &mut [f64], eta: f64) -> Result<()> {
        check_nonneg("eta", eta)?;
        self.check(norms.len())?;
        check_finite("norms", norms)?;
        if let Some(i) = norms.iter().position(|&v| v < 0.0) {
            return Err(OmklError::invalid(
                "norms",
                format!("expected norms >= 0, but element {i} is {}", norms[i]),
            ));
        }
        self.prox_norms_unchecked(norms, eta)
    }

    fn prox_norms_unchecked(&self, n: &mut [f64], eta: f64) -> Result<()> {
        match self {
            Regularizer::L2Squared { lam } => prox_l2_squared_unchecked(n, eta * lam),
            Regularizer::GroupLasso { lam } => shrink_norms(n, eta * lam),
            Regularizer::SquaredL21 { lam } => {
                prox_squared_l1_unchecked(n, eta * lam, ThresholdMethod::Sort)
            }
            Regularizer::WeightedSquaredL21 { lam, weights } => {
                prox_weighted_squared_l1_unchecked(n, weights, eta * lam)
            }
            Regularizer::ElasticNetMkl { lam, l1_ratio } => {
                elastic_net_norms(n, eta * lam, *l1_ratio)
            }
            Regularizer::L2q { lam, q } => l2q_norms(n, eta * lam, *q),
            Regularizer::L21Ball { radius } => {
                project_l1_ball_unchecked(n, *radius, ThresholdMethod::Sort)
            }
            Regularizer::L1 { .. }
            | Regularizer::SparseGroupLasso { .. }
            | Regularizer::L1Ball { .. } => {
                return Err(OmklError::invalid(
                    "regularizer",
                    format!("{self:?} is not a function of the group norms"),
                ))
            }
        }
        Ok(())
    }

    /// In place, `x ← prox_{ηΩ}(x)`, with groups given by `offsets`. Ball
    /// variants ignore η. Errors on invalid parameters, η, `x` (empty or not
    /// finite) or `offsets`; `x` is then left unchanged.
    ///
    /// # Complexity
    /// O(p) for the closed forms, O(p + G log G) for the squared and
    /// weighted squared ℓ2,1 and the ℓ2,1 ball, O(p log p) for the ℓ1 ball.
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::Regularizer;
    /// let mut x = [6.0, 8.0, 0.5];
    /// Regularizer::GroupLasso { lam: 10.0 }.prox(&mut x, &[0, 2, 3], 0.5).unwrap();
    /// assert_eq!(x, [3.0, 4.0, 0.0]);
    /// ```
    pub fn prox(&self, x: &mut [f64], offsets: &[usize], eta: f64) -> Result<()> {
        check_nonneg("eta", eta)?;
        let n_groups = check_grouped(x, offsets)?;
        self.check(n_groups)?;
        match self {
            Regularizer::L1 { lam } => soft_threshold_unchecked(x, eta * lam),
            Regularizer::SparseGroupLasso { lam1, lam2 } => {
                prox_sparse_group_lasso_unchecked(x, offsets, eta * lam1, eta * lam2)
            }
            Regularizer::L1Ball { radius } => {
                project_l1_ball_unchecked(x, *radius, ThresholdMethod::Sort)
            }
            Regularizer::L2Squared { lam } => prox_l2_squared_unchecked(x, eta * lam),
            _ => {
                let mut result = Ok(());
                prox_by_group_norms(x, offsets, |n| {
                    result = self.prox_norms_unchecked(n, eta);
                });
                result?;
            }
        }
        Ok(())
    }

    /// `Ω(x)`. Ball indicators are 0 inside the ball (with a relative slack
    /// of [`BALL_TOLERANCE`]) and +∞ outside. Returns NaN when `offsets` is
    /// not a valid grouping of `x` or the weights do not match the groups.
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::Regularizer;
    /// let r = Regularizer::SquaredL21 { lam: 2.0 };
    /// assert_eq!(r.value(&[3.0, 4.0, 1.0], &[0, 2, 3]), 36.0);
    /// ```
    pub fn value(&self, x: &[f64], offsets: &[usize]) -> f64 {
        let n_groups = match check_offsets(offsets, x.len()) {
            Ok(g) => g,
            Err(_) => return f64::NAN,
        };
        let l1 = || x.iter().map(|v| v.abs()).sum::<f64>();
        let norms = || group_norms(x, offsets);
        let ball = |size: f64, radius: f64| {
            if size <= radius * (1.0 + BALL_TOLERANCE) {
                0.0
            } else {
                f64::INFINITY
            }
        };
        match self {
            Regularizer::L1 { lam } => lam * l1(),
            Regularizer::L2Squared { lam } => {
                let n = norm2(x);
                0.5 * lam * n * n
            }
            Regularizer::GroupLasso { lam } => lam * norms().iter().sum::<f64>(),
            Regularizer::SquaredL21 { lam } => {
                let s: f64 = norms().iter().sum();
                0.5 * lam * s * s
            }
            Regularizer::WeightedSquaredL21 { lam, weights } => {
                if weights.len() != n_groups {
                    return f64::NAN;
                }
                let s: f64 = norms().iter().zip(weights).map(|(n, d)| n * d).sum();
                0.5 * lam * s * s
            }
            Regularizer::ElasticNetMkl { lam, l1_ratio } => {
                let (s1, s2) = norms()
                    .iter()
                    .fold((0.0, 0.0), |(a, b), n| (a + n, b + n * n));
                lam * (l1_ratio * s1 + 0.5 * (1.0 - l1_ratio) * s2)
            }
            Regularizer::L2q { lam, q } => lam * norms().iter().map(|n| n.powf(*q)).sum::<f64>(),
            Regularizer::SparseGroupLasso { lam1, lam2 } => {
                lam1 * l1() + lam2 * norms().iter().sum::<f64>()
            }
            Regularizer::L1Ball { radius } => ball(l1(), *radius),
            Regularizer::L21Ball { radius } => ball(norms().iter().sum(), *radius),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prox_errors_leave_x_unchanged() {
        let mut x = [1.0, 2.0];
        let r = Regularizer::WeightedSquaredL21 {
            lam: 1.0,
            weights: vec![1.0],
        };
        assert!(r.prox(&mut x, &[0, 1, 2], 1.0).is_err());
        assert!(Regularizer::L1 { lam: -1.0 }
            .prox(&mut x, &[0, 2], 1.0)
            .is_err());
        assert!(Regularizer::L1 { lam: 1.0 }
            .prox(&mut x, &[0, 3], 1.0)
            .is_err());
        assert!(Regularizer::L1 { lam: 1.0 }
            .prox(&mut x, &[0, 2], f64::NAN)
            .is_err());
        assert_eq!(x, [1.0, 2.0]);
        assert!(Regularizer::L1 { lam: 1.0 }
            .prox_group_norms(&mut x, 1.0)
            .is_err());
    }

    #[test]
    fn group_norm_variants_agree_with_the_coefficient_prox() {
        let x0 = [3.0, -4.0, 1.0, 0.0, 0.0, 2.0, 2.0, -1.0];
        let offsets = [0, 2, 3, 5, 8];
        let regs = [
            Regularizer::L2Squared { lam: 0.7 },
            Regularizer::GroupLasso { lam: 0.7 },
            Regularizer::SquaredL21 { lam: 0.7 },
            Regularizer::WeightedSquaredL21 {
                lam: 0.7,
                weights: vec![1.0, 0.0, 2.0, 0.5],
            },
            Regularizer::ElasticNetMkl {
                lam: 0.7,
                l1_ratio: 0.3,
            },
            Regularizer::L2q { lam: 0.7, q: 1.5 },
            Regularizer::L21Ball { radius: 2.0 },
        ];
        for r in regs {
            assert!(r.acts_on_group_norms());
            let mut x = x0;
            r.prox(&mut x, &offsets, 0.9).unwrap();
            let mut n = group_norms(&x0, &offsets);
            r.prox_group_norms(&mut n, 0.9).unwrap();
            let got = group_norms(&x, &offsets);
            for (a, b) in n.iter().zip(&got) {
                assert!((a - b).abs() < 1e-12, "{r:?}: {n:?} vs {got:?}");
            }
        }
    }

    #[test]
    fn values() {
        let x = [3.0, -4.0, 1.0];
        let o = [0, 2, 3];
        assert_eq!(Regularizer::L1 { lam: 2.0 }.value(&x, &o), 16.0);
        assert_eq!(Regularizer::GroupLasso { lam: 2.0 }.value(&x, &o), 12.0);
        assert_eq!(Regularizer::L2q { lam: 1.0, q: 2.0 }.value(&x, &o), 26.0);
        assert_eq!(Regularizer::L21Ball { radius: 6.0 }.value(&x, &o), 0.0);
        assert_eq!(
            Regularizer::L1Ball { radius: 7.9 }.value(&x, &o),
            f64::INFINITY
        );
        assert!(Regularizer::L1 { lam: 1.0 }.value(&x, &[0, 2]).is_nan());
    }
}
