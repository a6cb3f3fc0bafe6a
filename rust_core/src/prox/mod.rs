//! Proximity operators and projections (Section 3 and the appendix).
//!
//! Every operator is a pure function on slices, in place. Groups are
//! contiguous blocks given by `offsets` (len G + 1, see
//! [`groups::check_offsets`]); [`groups::Grouping`] converts arbitrary
//! per-coefficient group ids. [`Regularizer`] gathers them for the learners.
//!
//! | file | operator |
//! |---|---|
//! | [`l1`] | soft-thresholding, `τ‖x‖₁` |
//! | [`l2_squared`] | `(τ/2)‖x‖²` |
//! | [`group_lasso`] | `τ Σ‖x_g‖` |
//! | [`squared_l1`] | Alg. 2, `(τ/2)‖x‖₁²`, by sorting or selection |
//! | [`weighted_squared_l1`] | appendix, `(τ/2)(Σ d_i|x_i|)²` |
//! | [`l1_ball`] | projection on `‖x‖₁ ≤ r` |
//! | [`l21_ball`] | projection on `Σ‖x_g‖ ≤ r` (Prop. 1) |
//! | [`sparse_group_lasso`] | `τ1‖x‖₁ + τ2 Σ‖x_g‖` |
//! | [`elastic_net`] | `τ[ρ Σ‖x_g‖ + (1−ρ)/2 Σ‖x_g‖²]` |
//! | [`l2q`] | `τ Σ‖x_g‖^q`, q ≥ 1 |
//! | [`reduction`] | Prop. 1: prox of `ψ(‖x_1‖, …, ‖x_G‖)` |

pub mod elastic_net;
pub mod group_lasso;
pub mod groups;
pub mod l1;
pub mod l1_ball;
pub mod l21_ball;
pub mod l2_squared;
pub mod l2q;
pub mod reduction;
pub mod regularizer;
pub mod sparse_group_lasso;
pub mod squared_l1;
pub mod threshold;
pub mod weighted_squared_l1;

pub use regularizer::Regularizer;
