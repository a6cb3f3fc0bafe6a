//! Losses of Alg. 1 and their (sub)gradients with respect to the scores.

use serde::{Deserialize, Serialize};

use crate::error::{OmklError, Result};

/// What an example is labelled with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// A class index (multiclass losses).
    Class(usize),
    /// A real value (squared loss).
    Value(f64),
}

/// A loss on the score vector `z` (one score per class, or one score for
/// regression).
///
/// * `Hinge`: the loss-augmented multiclass hinge with cost 1,
///   `max(0, max_{k≠y} (z_k + 1) − z_y)`; its subgradient is `e_ŷ − e_y`
///   for the most violating wrong class ŷ (or 0 when the loss is 0).
/// * `Logistic`: `log Σ_k exp z_k − z_y`, gradient `softmax(z) − e_y`.
/// * `Squared`: `(z − y)² / 2` for regression, gradient `z − y`.
///
/// # Example
/// ```
/// use omkl_core::learner::{Loss, Target};
/// let mut g = [0.0; 3];
/// let l = Loss::Hinge.loss_grad(&[1.0, 0.5, 0.0], Target::Class(0), &mut g).unwrap();
/// assert_eq!(l, 0.5);
/// assert_eq!(g, [-1.0, 1.0, 0.0]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Loss {
    Hinge,
    Logistic,
    Squared,
}

impl Loss {
    /// Whether the loss is for classification.
    pub fn is_multiclass(&self) -> bool {
        !matches!(self, Loss::Squared)
    }

    /// Checks that the target suits the loss and the number of scores.
    pub fn check_target(&self, n_scores: usize, target: Target) -> Result<()> {
        match (self, target) {
            (Loss::Squared, Target::Value(v)) => {
                if v.is_finite() {
                    Ok(())
                } else {
                    Err(OmklError::invalid(
                        "y",
                        format!("expected a finite target, got {v}"),
                    ))
                }
            }
            (Loss::Squared, Target::Class(_)) => Err(OmklError::invalid(
                "y",
                "the squared loss expects a real target, got a class",
            )),
            (_, Target::Class(k)) => {
                if k < n_scores {
                    Ok(())
                } else {
                    Err(OmklError::invalid(
                        "y",
                        format!("expected a class index < {n_scores}, got {k}"),
                    ))
                }
            }
            (_, Target::Value(_)) => Err(OmklError::invalid(
                "y",
                "a multiclass loss expects a class index, got a real value",
            )),
        }
    }

    /// Writes the gradient of the loss with respect to `scores` into `grad`
    /// and returns the loss value.
    ///
    /// # Complexity
    /// O(number of scores).
    pub fn loss_grad(&self, scores: &[f64], target: Target, grad: &mut [f64]) -> Result<f64> {
        if grad.len() != scores.len() {
            return Err(OmklError::shape(
                "grad",
                format!("length {}", scores.len()),
                grad.len().to_string(),
            ));
        }
        self.check_target(scores.len(), target)?;
        grad.fill(0.0);
        Ok(match (self, target) {
            (Loss::Squared, Target::Value(y)) => {
                let r = scores[0] - y;
                grad[0] = r;
                0.5 * r * r
            }
            (Loss::Hinge, Target::Class(y)) => {
                let mut best = None;
                let mut best_score = f64::NEG_INFINITY;
                for (k, &z) in scores.iter().enumerate() {
                    if k != y && z > best_score {
                        best_score = z;
                        best = Some(k);
                    }
                }
                match best {
                    Some(k) if best_score + 1.0 - scores[y] > 0.0 => {
                        grad[k] = 1.0;
                        grad[y] = -1.0;
                        best_score + 1.0 - scores[y]
                    }
                    _ => 0.0,
                }
            }
            (Loss::Logistic, Target::Class(y)) => {
                softmax_into(scores, grad);
                let lse = log_sum_exp(scores);
                grad[y] -= 1.0;
                lse - scores[y]
            }
            _ => unreachable!("checked by check_target"),
        })
    }
}

/// `log Σ exp z`, computed stably.
pub fn log_sum_exp(z: &[f64]) -> f64 {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// `out = softmax(z)`, computed stably.
pub fn softmax_into(z: &[f64], out: &mut [f64]) {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for (o, v) in out.iter_mut().zip(z) {
        *o = (v - m).exp();
        s += *o;
    }
    for o in out.iter_mut() {
        *o /= s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(loss: Loss, z: &[f64], t: Target) -> f64 {
        let mut g = vec![0.0; z.len()];
        loss.loss_grad(z, t, &mut g).unwrap()
    }

    #[test]
    fn gradients_match_finite_differences() {
        let z = [0.3, -1.2, 0.9, 0.95];
        let cases = [
            (Loss::Logistic, Target::Class(1)),
            (Loss::Hinge, Target::Class(2)),
            (Loss::Hinge, Target::Class(0)),
        ];
        for (loss, t) in cases {
            let mut g = vec![0.0; z.len()];
            loss.loss_grad(&z, t, &mut g).unwrap();
            for k in 0..z.len() {
                let h = 1e-6;
                let mut zp = z;
                zp[k] += h;
                let mut zm = z;
                zm[k] -= h;
                let fd = (value(loss, &zp, t) - value(loss, &zm, t)) / (2.0 * h);
                assert!((fd - g[k]).abs() < 1e-6, "{loss:?} k={k}: {fd} vs {}", g[k]);
            }
        }
        let mut g = [0.0];
        let l = Loss::Squared
            .loss_grad(&[2.0], Target::Value(0.5), &mut g)
            .unwrap();
        assert_eq!((l, g[0]), (1.125, 1.5));
    }

    #[test]
    fn hinge_is_zero_with_margin_and_single_class() {
        assert_eq!(value(Loss::Hinge, &[3.0, 1.0], Target::Class(0)), 0.0);
        assert_eq!(value(Loss::Hinge, &[3.0], Target::Class(0)), 0.0);
        assert_eq!(value(Loss::Logistic, &[3.0], Target::Class(0)), 0.0);
    }

    #[test]
    fn rejects_mismatched_targets() {
        let mut g = [0.0; 2];
        assert!(Loss::Hinge
            .loss_grad(&[0.0, 0.0], Target::Class(2), &mut g)
            .is_err());
        assert!(Loss::Hinge
            .loss_grad(&[0.0, 0.0], Target::Value(1.0), &mut g)
            .is_err());
        let mut g1 = [0.0];
        assert!(Loss::Squared
            .loss_grad(&[0.0], Target::Value(f64::NAN), &mut g1)
            .is_err());
    }
}
