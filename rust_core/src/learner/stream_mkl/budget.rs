//! The streaming budget: removing a support input when the support set is
//! over `max_support`, with an exact update of the group norms.

use super::config::BudgetRule;
use super::scoring::Iterate;
use super::state::StreamMkl;

impl StreamMkl {
    /// The `Smallest` rule: the support input whose coefficients have the
    /// smallest `Σ_k Σ_y |α_k[j, y]|` (current iterate, over all kernel
    /// groups and labels); ties go to the lowest index.
    pub fn smallest_support(&self) -> Option<usize> {
        let l = self.l;
        let mut best: Option<(usize, f64)> = None;
        for j in 0..self.support.len() {
            let mass: f64 = self
                .kgroups
                .iter()
                .map(|b| {
                    b.scale().abs()
                        * b.raw()[j * l..(j + 1) * l]
                            .iter()
                            .map(|v| v.abs())
                            .sum::<f64>()
                })
                .sum();
            if best.is_none_or(|(_, m)| mass < m) {
                best = Some((j, mass));
            }
        }
        best.map(|(j, _)| j)
    }

    /// The `Oldest` rule: the support input whose coefficients changed
    /// longest ago; ties go to the lowest index.
    pub fn oldest_support(&self) -> Option<usize> {
        let stamps = &self.support_stamp;
        (0..stamps.len()).min_by_key(|&j| (stamps[j], j))
    }

    /// Removes the support input chosen by the configured [`BudgetRule`]
    /// (see [`StreamMkl::remove_support`]).
    pub(super) fn remove_support_by_rule(&mut self) {
        self.remove_support(self.config.budget_rule);
    }

    /// Removes the support input chosen by `rule` from the current (and
    /// averaged) expansion. Each group
    /// norm is updated exactly: with `θ_kj = Σ_y α_k[j, y] φ_k(x_j) ⊗ e_y`,
    /// `‖θ_k − θ_kj‖² = ‖θ_k‖² − 2 Σ_y α_k[j, y] f_k(x_j, y) + k_k(x_j, x_j) Σ_y α_k[j, y]²`.
    ///
    /// # Complexity
    /// O(S (d + K L)): one scoring pass of `x_j` over the kernel groups.
    pub(super) fn remove_support(&mut self, rule: BudgetRule) {
        let chosen = match rule {
            BudgetRule::Smallest => self.smallest_support(),
            BudgetRule::Oldest => self.oldest_support(),
        };
        let Some(j) = chosen else {
            return;
        };
        let l = self.l;
        let nk = self.kgroups.len();
        let xj = self.support.row(j).to_vec();
        let sjj = self.support.sq_norm(j);
        let mut gs = vec![0.0; nk * l];
        self.kernel_scores_into(&xj, Iterate::Last, &mut gs);
        for (k, kern) in self.config.kernels.iter().enumerate() {
            let b = &self.kgroups[k];
            let alpha: Vec<f64> = (0..l).map(|y| b.get(j * l + y)).collect();
            let ip: f64 = alpha
                .iter()
                .zip(&gs[k * l..(k + 1) * l])
                .map(|(a, f)| a * f)
                .sum();
            let kjj = kern.from_dot(sjj, sjj, sjj);
            let nn = kjj * alpha.iter().map(|a| a * a).sum::<f64>();
            let b = &mut self.kgroups[k];
            b.apply_norm_change(-ip, nn);
            b.swap_remove_row(j, l);
        }
        self.support.swap_remove(j);
        if j < self.support_stamp.len() {
            self.support_stamp.swap_remove(j);
        }
    }
}
