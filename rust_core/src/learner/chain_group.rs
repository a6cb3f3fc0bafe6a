//! The interface of one parameter group of the chain model of Alg. 3:
//! a kernel expansion ([`super::score_cache::KernelExpansion`]) or an
//! explicit feature map ([`super::explicit_group::ExplicitGroup`]).

/// One group `θ_g` of emission weights over labelled training inputs.
///
/// All implementations keep a per-group scale (so that the prox costs O(1)),
/// the exact squared norm, and a lazy running sum of the iterates.
pub trait ChainGroup {
    /// `row[y] += f_g(x_i, y)` for every label `y`.
    fn add_scores(&self, i: usize, row: &mut [f64]);
    /// Adds `delta · φ_g(x_j) ⊗ e_y` to `θ_g`.
    fn add(&mut self, j: usize, y: usize, delta: f64);
    /// The update of a wrongly labelled position: `add(j, gold, delta)`
    /// then `add(j, pred, -delta)` (`gold != pred`). Implementations may
    /// fuse the two; the result must be exactly that of the two calls.
    fn add_pair(&mut self, j: usize, gold: usize, pred: usize, delta: f64) {
        self.add(j, gold, delta);
        self.add(j, pred, -delta);
    }
    /// `‖θ_g‖²` as maintained incrementally.
    fn sq_norm(&self) -> f64;
    /// `θ_g ← c θ_g` for `c ≥ 0`.
    fn scale_by(&mut self, c: f64);
    /// Ends an online round: the current iterate enters the running sum.
    fn end_round(&mut self);
    /// The current coefficients (layout defined by the implementation).
    fn coefficients(&self) -> Vec<f64>;
    /// The running sum of the coefficients over finished rounds.
    fn coefficient_sum(&self) -> Vec<f64>;
    /// Squared norm of the group element with coefficients `coef`.
    fn sq_norm_of(&self, coef: &[f64]) -> f64;

    /// `‖θ_g‖`.
    fn norm(&self) -> f64 {
        self.sq_norm().sqrt()
    }
}
