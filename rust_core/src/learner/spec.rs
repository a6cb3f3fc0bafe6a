//! Building losses, schedules and regularisers from names and numbers, as
//! the Python estimators give them.

use super::loss::Loss;
use super::schedule::Schedule;
use crate::error::{OmklError, Result};
use crate::prox::Regularizer;

/// `"hinge"`, `"log"` (or `"logistic"`), `"squared"`.
pub fn parse_loss(name: &str) -> Result<Loss> {
    match name {
        "hinge" => Ok(Loss::Hinge),
        "log" | "logistic" => Ok(Loss::Logistic),
        "squared" => Ok(Loss::Squared),
        _ => Err(OmklError::invalid(
            "loss",
            format!("expected 'hinge', 'log' or 'squared', got {name:?}"),
        )),
    }
}

/// `"constant"` (η0), `"inv_sqrt"` (η0/√t), `"inv_linear"` (1/(σt)).
pub fn parse_schedule(name: &str, eta0: f64, sigma: f64) -> Result<Schedule> {
    let s = match name {
        "constant" => Schedule::Constant { eta0 },
        "inv_sqrt" => Schedule::InvSqrt { eta0 },
        "inv_linear" => Schedule::InvLinear { sigma },
        _ => {
            return Err(OmklError::invalid(
                "learning_rate",
                format!("expected 'constant', 'inv_sqrt' or 'inv_linear', got {name:?}"),
            ))
        }
    };
    s.check()?;
    Ok(s)
}

/// Names accepted by [`parse_regularizer`], with their parameters.
pub const REGULARIZER_NAMES: &str = "'l1' (lam), 'l2_squared' (lam), 'group_lasso' (lam), \
'squared_l21' (lam), 'weighted_squared_l21' (lam, *weights), 'elastic_net_mkl' (lam, l1_ratio), \
'l2q' (lam, q), 'sparse_group_lasso' (lam1, lam2), 'l1_ball' (radius), 'l21_ball' (radius)";

/// A regulariser from its name and parameters (see [`REGULARIZER_NAMES`]);
/// for `weighted_squared_l21` the parameters are `lam` then one weight per
/// group. Parameters are validated against `n_groups` only for the weights.
///
/// # Example
/// ```
/// use omkl_core::learner::spec::parse_regularizer;
/// use omkl_core::prox::Regularizer;
/// assert_eq!(parse_regularizer("group_lasso", &[0.1]).unwrap(), Regularizer::GroupLasso { lam: 0.1 });
/// assert!(parse_regularizer("group_lasso", &[0.1, 2.0]).is_err());
/// ```
pub fn parse_regularizer(name: &str, params: &[f64]) -> Result<Regularizer> {
    let want = |n: usize| -> Result<()> {
        if params.len() == n {
            Ok(())
        } else {
            Err(OmklError::invalid(
                "regularizer",
                format!("{name:?} takes {n} parameter(s), got {}", params.len()),
            ))
        }
    };
    let r = match name {
        "l1" => want(1).map(|_| Regularizer::L1 { lam: params[0] }),
        "l2_squared" => want(1).map(|_| Regularizer::L2Squared { lam: params[0] }),
        "group_lasso" => want(1).map(|_| Regularizer::GroupLasso { lam: params[0] }),
        "squared_l21" => want(1).map(|_| Regularizer::SquaredL21 { lam: params[0] }),
        "weighted_squared_l21" => {
            if params.is_empty() {
                Err(OmklError::invalid(
                    "regularizer",
                    "'weighted_squared_l21' takes lam then one weight per group",
                ))
            } else {
                Ok(Regularizer::WeightedSquaredL21 {
                    lam: params[0],
                    weights: params[1..].to_vec(),
                })
            }
        }
        "elastic_net_mkl" => want(2).map(|_| Regularizer::ElasticNetMkl {
            lam: params[0],
            l1_ratio: params[1],
        }),
        "l2q" => want(2).map(|_| Regularizer::L2q {
            lam: params[0],
            q: params[1],
        }),
        "sparse_group_lasso" => want(2).map(|_| Regularizer::SparseGroupLasso {
            lam1: params[0],
            lam2: params[1],
        }),
        "l1_ball" => want(1).map(|_| Regularizer::L1Ball { radius: params[0] }),
        "l21_ball" => want(1).map(|_| Regularizer::L21Ball { radius: params[0] }),
        _ => Err(OmklError::invalid(
            "regularizer",
            format!("unknown regulariser {name:?}; expected one of {REGULARIZER_NAMES}"),
        )),
    }?;
    // Weighted weights are checked against the group count when groups exist.
    let n_groups = match &r {
        Regularizer::WeightedSquaredL21 { weights, .. } => weights.len(),
        _ => 0,
    };
    r.check(n_groups)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name_and_rejects_bad_ones() {
        for (n, p) in [
            ("l1", vec![0.1]),
            ("l2_squared", vec![0.1]),
            ("group_lasso", vec![0.1]),
            ("squared_l21", vec![0.1]),
            ("weighted_squared_l21", vec![0.1, 1.0, 2.0]),
            ("elastic_net_mkl", vec![0.1, 0.5]),
            ("l2q", vec![0.1, 1.5]),
            ("sparse_group_lasso", vec![0.1, 0.2]),
            ("l1_ball", vec![1.0]),
            ("l21_ball", vec![1.0]),
        ] {
            assert!(parse_regularizer(n, &p).is_ok(), "{n}");
        }
        assert!(parse_regularizer("l1", &[-1.0])
            .unwrap_err()
            .to_string()
            .contains("lam"));
        assert!(parse_regularizer("l2q", &[0.1, 0.5]).is_err());
        assert!(parse_regularizer("nope", &[0.1]).is_err());
        assert_eq!(parse_loss("log").unwrap(), Loss::Logistic);
        assert!(parse_loss("x").is_err());
        assert!(parse_schedule("inv_sqrt", -1.0, 1.0).is_err());
        assert!(parse_schedule("soon", 1.0, 1.0).is_err());
    }
}
