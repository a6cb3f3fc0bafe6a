//! A step size per group: with `group_rates = [r_1, ..., r_G]` the round's
//! subgradient step moves group `g` by `r_g η_t Δ_g` instead of `η_t Δ_g`
//! (a diagonal preconditioner of the step, one factor per group); the prox
//! steps on the group norms that follow are those of Alg. 3, on the exact
//! new norms.

use super::scratch::Scratch;
use super::state::StreamMkl;

/// The rate of group `g` (1 when `rates` is empty).
#[inline]
pub(super) fn rate(rates: &[f64], g: usize) -> f64 {
    rates.get(g).copied().unwrap_or(1.0)
}

impl StreamMkl {
    /// Scales the norm terms of this round's step (`s.ip[g] = ⟨θ_g, Δ_g⟩`,
    /// `s.dd[g] = ‖Δ_g‖²`, or a bound on `‖Δ_g‖` for an explicit group
    /// when `explicit_bounds`) to the groups' own rates.
    ///
    /// # Complexity
    /// O(number of groups).
    pub(super) fn scale_norm_terms(&self, s: &mut Scratch, explicit_bounds: bool) {
        let nk = self.kgroups.len();
        for (g, &r) in self.config.group_rates.iter().enumerate() {
            s.ip[g] *= r;
            s.dd[g] *= if explicit_bounds && g >= nk { r } else { r * r };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::{Iterate, StreamMklConfig};

    fn config(rates: Vec<f64>, pa: bool) -> StreamMklConfig {
        let kernels = vec![
            Kernel::Gaussian { sigma2: 1.0 },
            Kernel::Linear { normalize: false },
        ];
        let mut cfg = StreamMklConfig::multiclass(kernels, 0.05, 0.7);
        cfg.explicit_groups = vec![vec![0, 1], vec![1, 2]];
        cfg.group_rates = rates;
        cfg.passive_aggressive = pa;
        cfg
    }

    fn stream(n: usize) -> Vec<([f32; 3], usize)> {
        (0..n)
            .map(|i| {
                let u = ((i * 37) % 11) as f32 / 5.0 - 1.0;
                let v = ((i * 53) % 7) as f32 / 3.0 - 1.0;
                ([u, v, 1.0], (i * 7 + i / 3) % 3)
            })
            .collect()
    }

    fn all_coefs(m: &StreamMkl) -> Vec<Vec<f64>> {
        let mut out = vec![
            m.kernel_coef(0, Iterate::Last),
            m.kernel_coef(1, Iterate::Last),
        ];
        out.push(m.explicit_coef(0, Iterate::Last));
        out.push(m.explicit_coef(1, Iterate::Last));
        out
    }

    #[test]
    fn unit_rates_change_nothing() {
        for pa in [false, true] {
            let mut a = StreamMkl::new(config(Vec::new(), pa), 3, 3).unwrap();
            let mut b = StreamMkl::new(config(vec![1.0; 4], pa), 3, 3).unwrap();
            for (x, y) in stream(30) {
                a.learn(&x, &[y]).unwrap();
                b.learn(&x, &[y]).unwrap();
            }
            assert_eq!(all_coefs(&a), all_coefs(&b));
            assert_eq!(a.group_norms(), b.group_norms());
        }
    }

    /// One round from zero: no prox shrinks a zero model's first step but
    /// the regulariser's, so each group's first step is `r_g` times the
    /// step with unit rates, shrunk by the prox of the new norms; with a
    /// zero `λ` it is exactly `r_g` times.
    #[test]
    fn first_step_of_each_group_is_its_rate_times_the_step() {
        let rates = vec![0.5, 2.0, 0.1, 3.0];
        let mut c1 = config(Vec::new(), false);
        c1.regularizer = crate::prox::Regularizer::SquaredL21 { lam: 0.0 };
        let mut c2 = c1.clone();
        c2.group_rates = rates.clone();
        let mut a = StreamMkl::new(c1, 3, 3).unwrap();
        let mut b = StreamMkl::new(c2, 3, 3).unwrap();
        let (x, y) = ([0.3f32, -0.8, 1.0], 2);
        // a first label so that the model has one to predict, then the step
        a.learn(&x, &[y]).unwrap();
        b.learn(&x, &[y]).unwrap();
        for (g, (ga, gb)) in all_coefs(&a).iter().zip(all_coefs(&b)).enumerate() {
            assert_eq!(ga.len(), gb.len());
            assert!(ga.iter().any(|v| *v != 0.0), "group {g} did not move");
            for (u, v) in ga.iter().zip(&gb) {
                assert!(
                    (v - rates[g] * u).abs() <= 1e-12,
                    "group {g}: {v} vs {} * {u}",
                    rates[g]
                );
            }
        }
        let (na, nb) = (a.group_norms(), b.group_norms());
        for g in 0..4 {
            assert!((nb[g] - rates[g] * na[g]).abs() <= 1e-12);
        }
    }

    /// The group norms computed from the coefficients: `√(Σ_y α_yᵀ K α_y)`
    /// over the support inputs for a kernel group, Euclidean for an
    /// explicit one.
    fn exact_norms(m: &StreamMkl) -> Vec<f64> {
        let (x, s) = (m.support_inputs(), m.n_support());
        let d = x.len() / s.max(1);
        let row = |j: usize| &x[j * d..(j + 1) * d];
        let dot =
            |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(u, v)| f64::from(u * v)).sum::<f64>();
        let mut out = Vec::new();
        for (k, kern) in m.config().kernels.iter().enumerate() {
            let a = m.kernel_coef(k, Iterate::Last);
            let mut q = 0.0;
            for i in 0..s {
                for j in 0..s {
                    let kij = kern.from_dot(
                        dot(row(i), row(j)),
                        dot(row(i), row(i)),
                        dot(row(j), row(j)),
                    );
                    q += (0..3).map(|y| a[y * s + i] * a[y * s + j]).sum::<f64>() * kij;
                }
            }
            out.push(q.sqrt());
        }
        for e in 0..2 {
            out.push(
                m.explicit_coef(e, Iterate::Last)
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt(),
            );
        }
        out
    }

    #[test]
    fn norms_stay_exact_with_rates() {
        for pa in [false, true] {
            let mut m = StreamMkl::new(config(vec![0.3, 1.5, 0.05, 2.0], pa), 3, 3).unwrap();
            for (x, y) in stream(60) {
                m.learn(&x, &[y]).unwrap();
            }
            let tracked = m.group_norms();
            let exact = exact_norms(&m);
            for (t, e) in tracked.iter().zip(&exact) {
                assert!((t - e).abs() <= 1e-6 * (1.0 + e), "{t} vs {e}");
            }
        }
    }

    #[test]
    fn bad_rates_are_refused() {
        for rates in [
            vec![1.0; 3],
            vec![1.0, 0.0, 1.0, 1.0],
            vec![f64::NAN, 1.0, 1.0, 1.0],
        ] {
            let err = StreamMkl::new(config(rates, false), 3, 3).unwrap_err();
            assert!(err.to_string().contains("group_rates"), "{err}");
        }
    }
}
