//! Learning-rate schedules of Alg. 1.

use serde::{Deserialize, Serialize};

use crate::error::{check_positive, Result};

/// The step size `η_t` at round `t = 1, 2, ...`.
///
/// * `Constant { eta0 }`: `η_t = η0`.
/// * `InvSqrt { eta0 }`: `η_t = η0 / √t` (the rate of the paper's regret
///   bound for convex losses).
/// * `InvLinear { sigma }`: `η_t = 1 / (σ t)` (for σ-strongly convex
///   objectives).
///
/// # Example
/// ```
/// use omkl_core::learner::Schedule;
/// let s = Schedule::InvSqrt { eta0: 2.0 };
/// assert_eq!(s.rate(4), 1.0);
/// assert_eq!(Schedule::InvLinear { sigma: 0.5 }.rate(4), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Schedule {
    Constant { eta0: f64 },
    InvSqrt { eta0: f64 },
    InvLinear { sigma: f64 },
}

impl Schedule {
    /// Checks that the parameter is finite and positive.
    pub fn check(&self) -> Result<()> {
        match *self {
            Schedule::Constant { eta0 } | Schedule::InvSqrt { eta0 } => {
                check_positive("eta0", eta0)
            }
            Schedule::InvLinear { sigma } => check_positive("sigma", sigma),
        }
    }

    /// The step size at round `t` (`t = 0` is treated as `t = 1`).
    ///
    /// # Complexity
    /// O(1).
    #[inline]
    pub fn rate(&self, t: u64) -> f64 {
        let t = t.max(1) as f64;
        match *self {
            Schedule::Constant { eta0 } => eta0,
            Schedule::InvSqrt { eta0 } => eta0 / t.sqrt(),
            Schedule::InvLinear { sigma } => 1.0 / (sigma * t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_their_formulas() {
        for t in 1..50u64 {
            let tf = t as f64;
            assert_eq!(Schedule::Constant { eta0: 0.3 }.rate(t), 0.3);
            assert!((Schedule::InvSqrt { eta0: 0.3 }.rate(t) - 0.3 / tf.sqrt()).abs() < 1e-15);
            assert!((Schedule::InvLinear { sigma: 0.1 }.rate(t) - 10.0 / tf).abs() < 1e-12);
        }
        assert_eq!(Schedule::InvSqrt { eta0: 1.0 }.rate(0), 1.0);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Schedule::Constant { eta0: 0.0 }.check().is_err());
        assert!(Schedule::InvSqrt { eta0: f64::NAN }.check().is_err());
        assert!(Schedule::InvLinear { sigma: -1.0 }.check().is_err());
        assert!(Schedule::InvLinear { sigma: 1.0 }.check().is_ok());
    }
}
