//! Mixing streaming MKL models: the weighted average of kernel expansions.
//!
//! With weights `w_m ≥ 0` (shard sizes, normalised to sum to 1), the mixed
//! model is `θ = Σ_m w_m θ_m` group by group:
//!
//! * kernel group `k`: `θ_mk = Σ_{j,y} α_mk[j, y] φ_k(x_mj) ⊗ e_y`, so the
//!   average is an expansion over the **union of the supports**, with
//!   coefficients `Σ_m w_m α_mk[j, y]` (an input held by several models —
//!   the same bits — is stored once and its coefficients are summed). The
//!   kernels are the same in every model (the configurations must be
//!   equal), so this is exact: the mixed model's scores are
//!   `f(x, y) = Σ_m w_m f_m(x, y)` for every input;
//! * explicit groups and transitions: the average of the weights;
//! * averaging sums: averaged the same way (the running sum of the
//!   averaged iterate is a sum of expansions over the same inputs);
//! * the round counter `t` and the schedule's start: the weighted average,
//!   rounded to the nearest integer;
//! * the group norms are **recomputed** exactly from the mixed
//!   coefficients, `‖θ_k‖² = Σ_{i,j} Σ_y α[i, y] α[j, y] k_k(x_i, x_j)`,
//!   not averaged (a norm of an average is not the average of norms), so
//!   the kernel weights `β_k = ‖θ_k‖ / Σ_l ‖θ_l‖` are those of the mixed
//!   model;
//! * each support input's stamp (the last round that changed it, which
//!   the budget's `Oldest` rule reads) is carried to the mixed clock,
//!   `stamp · t / t_m` rounded, and an input held by several models takes
//!   its largest.
//!
//! Then, with `max_support = B`, the support inputs with the smallest
//! coefficients are removed (with the exact norm update of a removal)
//! until at most `B` are left; the mixed model then differs from the exact
//! average by the removed inputs' terms. This cut keeps the largest terms
//! whatever the model's budget rule: the `Oldest` rule orders the inputs
//! of one stream, and the shards are streams with no common order (their
//! stamps only carry each worker's clock), so cutting the union by age
//! drops half of each worker's expansion.
//!
//! # Example
//! ```
//! use omkl_core::kernel::Kernel;
//! use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
//! let cfg = StreamMklConfig::multiclass(vec![Kernel::Gaussian { sigma2: 1.0 }], 1e-3, 1.0);
//! let mut a = StreamMkl::new(cfg.clone(), 2, 2).unwrap();
//! let mut b = StreamMkl::new(cfg, 2, 2).unwrap();
//! a.learn(&[1.0, 0.0], &[0]).unwrap();
//! b.learn(&[0.0, 1.0], &[1]).unwrap();
//! let m = StreamMkl::mixed(&[&a, &b], &[1.0, 3.0]).unwrap();
//! assert_eq!(m.n_support(), 2); // the union of the supports
//! let x = [0.5, 0.2];
//! let (sa, sb, sm) = (a.scores(&x, 1).unwrap(), b.scores(&x, 1).unwrap(), m.scores(&x, 1).unwrap());
//! for y in 0..2 {
//!     assert!((sm[y] - (0.25 * sa[y] + 0.75 * sb[y])).abs() < 1e-12);
//! }
//! ```

use super::config::BudgetRule;
use super::state::StreamMkl;
use crate::error::{OmklError, Result};
use crate::learner::weights::ScaledBlock;

/// A block of scale 1 holding the values `a` and the running sums `sums`
/// (no running sums when `sums` is `None`), with its squared norm `q`.
fn block(a: &[f64], sums: Option<&[f64]>, q: f64) -> ScaledBlock {
    let mut blk = ScaledBlock::zeros(a.len());
    let (ra, rb) = blk.parts_mut();
    ra.copy_from_slice(a);
    match sums {
        Some(s) if rb.len() == s.len() => {
            // the running sum is `a P − b` with `P = 0`
            for (bv, sv) in rb.iter_mut().zip(s) {
                *bv = -sv;
            }
        }
        _ => rb.iter_mut().for_each(|v| *v = 0.0),
    }
    blk.restore((1.0, q, 0.0), &[], &[], &[], None);
    blk
}

/// The weighted average `Σ_m w_m v_m(i)` of a value of every model.
fn average(ws: &[f64], f: impl Fn(usize) -> f64) -> f64 {
    ws.iter().enumerate().map(|(m, w)| w * f(m)).sum()
}

impl StreamMkl {
    /// The weighted average of `models` (see the module documentation),
    /// weighted by `weights` (e.g. shard sizes; ≥ 0 with a positive sum).
    /// The models must have the same configuration (kernels,
    /// regulariser, groups, budget), input dimension and labels, and none
    /// may be over precomputed inputs; otherwise an error names the first
    /// model that differs from model 0 and how.
    ///
    /// # Complexity
    /// O(Σ_m S_m (d + K L)) for the union, O(S² (d + K L)) for the norms
    /// of the `S` mixed support inputs, plus the budget's removals.
    pub fn mixed(models: &[&StreamMkl], weights: &[f64]) -> Result<StreamMkl> {
        let first = *models
            .first()
            .ok_or_else(|| OmklError::empty("models (at least one model to mix)"))?;
        if weights.len() != models.len() {
            return Err(OmklError::shape(
                "weights",
                format!("one weight per model ({})", models.len()),
                weights.len().to_string(),
            ));
        }
        let total: f64 = weights.iter().sum();
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || total <= 0.0 {
            return Err(OmklError::invalid(
                "weights",
                format!("expected finite weights >= 0 with a positive sum, got {weights:?}"),
            ));
        }
        for (m, model) in models.iter().enumerate() {
            let what = format!("models[{m}]");
            if model.pre.is_some() {
                return Err(OmklError::invalid(
                    what,
                    "a model over precomputed Gram matrices cannot be mixed",
                ));
            }
            if model.config != first.config {
                return Err(OmklError::invalid(
                    what,
                    "has a different configuration (kernels, regulariser, groups or budget) \
                     from models[0]",
                ));
            }
            if (model.d, model.l) != (first.d, first.l) {
                return Err(OmklError::invalid(
                    what,
                    format!(
                        "has {} features and {} labels, models[0] has {} and {}",
                        model.d, model.l, first.d, first.l
                    ),
                ));
            }
        }
        let ws: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let l = first.l;
        let nk = first.kgroups.len();
        let averaged = first
            .kgroups
            .iter()
            .all(|b| b.average_parts().0.len() == b.len());
        let mut out = StreamMkl::new(first.config.clone(), first.d, l)?;
        out.history_rounds = first.history_rounds.clone();
        out.history = first.history.clone();
        // the union of the supports, coefficients summed with the weights
        let mut alpha: Vec<Vec<f64>> = vec![Vec::new(); nk];
        let mut sums: Vec<Vec<f64>> = vec![Vec::new(); nk];
        let mut stamps: Vec<u64> = Vec::new();
        let t = average(&ws, |m| models[m].t as f64).round() as u64;
        for (model, w) in models.iter().zip(&ws) {
            for j in 0..model.support.len() {
                let (i, new) = out.support.insert(model.support.row(j));
                if new {
                    for k in 0..nk {
                        alpha[k].resize((i + 1) * l, 0.0);
                        sums[k].resize((i + 1) * l, 0.0);
                    }
                    stamps.push(0);
                }
                for k in 0..nk {
                    let b = &model.kgroups[k];
                    for y in 0..l {
                        alpha[k][i * l + y] += w * b.get(j * l + y);
                        sums[k][i * l + y] += w * b.average_sum(j * l + y);
                    }
                }
                let stamp = model.support_stamp.get(j).copied().unwrap_or(0);
                let stamp = if model.t == 0 {
                    0
                } else {
                    ((stamp as f64 * t as f64 / model.t as f64).round() as u64).min(t)
                };
                stamps[i] = stamps[i].max(stamp);
            }
        }
        for k in 0..nk {
            let kern = &out.config.kernels[k];
            let a = &alpha[k];
            let sq = out.support.expansion_sq_norm(kern, l, |i, y| a[i * l + y]);
            let avg = averaged.then_some(sums[k].as_slice());
            out.kgroups[k] = block(a, avg, sq.max(0.0));
        }
        out.support_stamp = stamps;
        let linear = |blocks: &dyn Fn(&StreamMkl) -> &ScaledBlock| {
            let n = blocks(first).len();
            let a: Vec<f64> = (0..n)
                .map(|i| average(&ws, |m| blocks(models[m]).get(i)))
                .collect();
            let s: Vec<f64> = (0..n)
                .map(|i| average(&ws, |m| blocks(models[m]).average_sum(i)))
                .collect();
            let q = a.iter().map(|v| v * v).sum();
            block(&a, averaged.then_some(s.as_slice()), q)
        };
        for e in 0..first.egroups.len() {
            out.egroups[e] = linear(&|m: &StreamMkl| &m.egroups[e]);
        }
        if first.trans.is_some() {
            out.trans = Some(linear(&|m: &StreamMkl| {
                m.trans
                    .as_ref()
                    .expect("equal configurations have transitions")
            }));
        }
        out.t = t;
        out.schedule_start = average(&ws, |m| models[m].schedule_start as f64)
            .round()
            .min(out.t as f64) as u64;
        out.average_start = average(&ws, |m| models[m].average_start as f64)
            .round()
            .min(out.t as f64) as u64;
        out.forget_waited = average(&ws, |m| models[m].forget_waited as f64)
            .round()
            .min(out.config.forget_after as f64) as u64;
        if let Some(budget) = out.config.max_support {
            while out.support.len() > budget {
                out.remove_support(BudgetRule::Smallest);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::StreamMklConfig;

    fn config(budget: Option<usize>) -> StreamMklConfig {
        let mut c = StreamMklConfig::multiclass(
            vec![
                Kernel::Linear { normalize: false },
                Kernel::Gaussian { sigma2: 0.5 },
            ],
            1e-2,
            1.0,
        );
        c.max_support = budget;
        c
    }

    fn trained(cfg: &StreamMklConfig, seed: u64, n: usize) -> StreamMkl {
        let mut m = StreamMkl::new(cfg.clone(), 2, 3).unwrap();
        for i in 0..n {
            // a shared grid of inputs, so that the supports overlap
            let v = ((i as u64 * 7 + seed * 3) % 11) as f32;
            let x = [v / 10.0, 1.0 - v / 10.0];
            m.learn(&x, &[(i + seed as usize) % 3]).unwrap();
        }
        m
    }

    #[test]
    fn scores_and_norms_are_those_of_the_weighted_average() {
        let cfg = config(None);
        let (a, b) = (trained(&cfg, 0, 30), trained(&cfg, 1, 20));
        let m = StreamMkl::mixed(&[&a, &b], &[30.0, 20.0]).unwrap();
        assert!(m.n_support() < a.n_support() + b.n_support());
        for i in 0..7 {
            let x = [i as f32 * 0.3 - 1.0, 0.5];
            let (sa, sb, sm) = (
                a.scores(&x, 1).unwrap(),
                b.scores(&x, 1).unwrap(),
                m.scores(&x, 1).unwrap(),
            );
            for y in 0..3 {
                let want = 0.6 * sa[y] + 0.4 * sb[y];
                assert!((sm[y] - want).abs() <= 1e-9 * (1.0 + want.abs()));
            }
        }
        // the maintained norms equal norms recomputed from the coefficients
        let norms = m.group_norms();
        let again = StreamMkl::mixed(&[&m], &[1.0]).unwrap().group_norms();
        for (u, v) in norms.iter().zip(&again) {
            assert!((u - v).abs() <= 1e-9 * (1.0 + u.abs()));
        }
        assert_eq!(m.rounds(), 26);
        // a consistent model: its bytes load
        assert_eq!(StreamMkl::from_bytes(&m.to_bytes()).unwrap(), m);
    }

    #[test]
    fn the_rounds_waited_before_forgetting_are_averaged_up_to_the_wait() {
        let mut cfg = config(None);
        cfg.forgetting = 0.9;
        cfg.forget_after = 1000;
        let (a, b) = (trained(&cfg, 0, 30), trained(&cfg, 1, 20));
        // every round would forget: each waited all of its rounds
        assert_eq!((a.forget_waited, b.forget_waited), (30, 20));
        let m = StreamMkl::mixed(&[&a, &b], &[30.0, 20.0]).unwrap();
        assert_eq!(m.forget_waited, 26);
        cfg.forget_after = 22;
        let (a, b) = (trained(&cfg, 0, 30), trained(&cfg, 1, 20));
        assert_eq!((a.forget_waited, b.forget_waited), (22, 20));
        let m = StreamMkl::mixed(&[&a, &b], &[1.0, 3.0]).unwrap();
        assert_eq!(m.forget_waited, 21); // 20.5, rounded
    }

    #[test]
    fn the_budget_holds_after_mixing() {
        let cfg = config(Some(4));
        let (a, b) = (trained(&cfg, 0, 30), trained(&cfg, 2, 30));
        assert!(a.n_support() <= 4 && b.n_support() <= 4);
        let m = StreamMkl::mixed(&[&a, &b], &[1.0, 1.0]).unwrap();
        assert_eq!(m.n_support(), 4);
    }

    #[test]
    fn the_cut_after_mixing_keeps_the_largest_terms_whatever_the_rule() {
        let mut cfg = config(Some(4));
        cfg.budget_rule = BudgetRule::Oldest;
        let (a, b) = (trained(&cfg, 0, 30), trained(&cfg, 2, 30));
        let m = StreamMkl::mixed(&[&a, &b], &[1.0, 3.0]).unwrap();
        let (mut fa, mut fb) = (a.clone(), b.clone());
        fa.config.max_support = None;
        fb.config.max_support = None;
        let full = StreamMkl::mixed(&[&fa, &fb], &[1.0, 3.0]).unwrap();
        assert!(full.n_support() > 4);
        let mass = |j: usize| -> f64 {
            full.kgroups
                .iter()
                .map(|g| {
                    (0..full.l)
                        .map(|y| g.get(j * full.l + y).abs())
                        .sum::<f64>()
                })
                .sum()
        };
        let mut order: Vec<usize> = (0..full.n_support()).collect();
        order.sort_by(|&i, &j| mass(j).total_cmp(&mass(i)));
        let mut want: Vec<Vec<f32>> = order[..4]
            .iter()
            .map(|&j| full.support.row(j).to_vec())
            .collect();
        let mut got: Vec<Vec<f32>> = (0..4).map(|j| m.support.row(j).to_vec()).collect();
        want.sort_by(|x, y| x.partial_cmp(y).unwrap());
        got.sort_by(|x, y| x.partial_cmp(y).unwrap());
        assert_eq!(got, want);
    }

    #[test]
    fn models_that_differ_are_refused() {
        let a = trained(&config(None), 0, 5);
        let b = trained(&config(Some(3)), 0, 5);
        let e = StreamMkl::mixed(&[&a, &b], &[1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("models[1]"), "{e}");
        let mut c = a.clone();
        c.grow_labels(4).unwrap();
        let e = StreamMkl::mixed(&[&a, &c], &[1.0, 1.0]).unwrap_err();
        assert!(e.to_string().contains("labels"), "{e}");
        assert!(StreamMkl::mixed(&[&a], &[-1.0]).is_err());
        assert!(StreamMkl::mixed(&[], &[]).is_err());
    }
}
