//! The prox part of a round, shared by every learner: J prox steps on the
//! group norms (Prop. 1), then the optional projection onto `‖w‖₂ ≤ γ`,
//! composed on the vector of norms; each group is then rescaled once by
//! its new norm over its old one.
//!
//! # Example
//! ```
//! use omkl_core::learner::round::{prox_groups, NormScratch};
//! use omkl_core::model::template_weights::TemplateWeights;
//! use omkl_core::prox::Regularizer;
//! let mut w = TemplateWeights::new(&[1, 1]).unwrap();
//! w.add(0, 0, 3.0);
//! w.add(1, 0, 0.5);
//! let lasso = [Regularizer::GroupLasso { lam: 1.0 }];
//! prox_groups(&mut w, &lasso, 1.0, None, &mut NormScratch::default()).unwrap();
//! assert_eq!((w.get(0, 0), w.get(1, 0)), (2.0, 0.0));
//! ```

use crate::error::Result;
use crate::prox::Regularizer;

/// A set of groups whose squared norms are known and which can be rescaled.
pub trait GroupSet {
    /// Number of groups.
    fn n_groups(&self) -> usize;
    /// `‖w_g‖²`.
    fn group_sq_norm(&self, g: usize) -> f64;
    /// `w_g ← c · w_g` with `c ≥ 0`.
    fn rescale_group(&mut self, g: usize, c: f64);
}

/// Implements [`GroupSet`] for a type whose groups are the
/// [`crate::learner::weights::ScaledBlock`]s of its field `blocks`.
macro_rules! group_set_over_blocks {
    ($t:ty) => {
        impl $crate::learner::round::GroupSet for $t {
            fn n_groups(&self) -> usize {
                self.blocks.len()
            }
            fn group_sq_norm(&self, g: usize) -> f64 {
                self.blocks[g].sq_norm()
            }
            fn rescale_group(&mut self, g: usize, c: f64) {
                self.blocks[g].scale_by(c);
            }
        }
    };
}
pub(crate) use group_set_over_blocks;

/// The norm vectors a round reuses.
#[derive(Debug, Clone, Default)]
pub struct NormScratch {
    /// The group norms before the prox steps.
    pub norms: Vec<f64>,
    /// The group norms after them.
    pub shrunk: Vec<f64>,
}

/// `norms ← proj_{‖·‖₂ ≤ γ}(prox_{η Ω_J} ∘ … ∘ prox_{η Ω_1}(norms))` for
/// the group-norm regularisers `regs` and the optional radius `γ`. Errors
/// (on a regulariser that does not act on group norms, or invalid
/// parameters) leave `norms` in an unspecified state.
pub fn shrink_norms<'r>(
    norms: &mut [f64],
    regs: impl IntoIterator<Item = &'r Regularizer>,
    eta: f64,
    radius: Option<f64>,
) -> Result<()> {
    for r in regs {
        r.prox_group_norms(norms, eta)?;
    }
    if let Some(gamma) = radius {
        let norm = norms.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > gamma {
            let c = gamma / norm;
            norms.iter_mut().for_each(|v| *v *= c);
        }
    }
    Ok(())
}

/// Rescales every group `g` with `old[g] > 0` by `new[g] / old[g]`.
///
/// # Complexity
/// O(#groups) rescalings.
pub fn rescale_to<W: GroupSet + ?Sized>(w: &mut W, old: &[f64], new: &[f64]) {
    for (g, (&o, &n)) in old.iter().zip(new).enumerate() {
        if o > 0.0 && n != o {
            w.rescale_group(g, n / o);
        }
    }
}

/// The prox part of a round on the groups `w`: the group norms, the prox
/// steps of `regs` in order and the projection onto `‖w‖₂ ≤ radius` on
/// them ([`shrink_norms`]), then each group rescaled to its new norm. On
/// error `w` is unchanged.
///
/// # Complexity
/// O(#groups) plus the regularisers' own cost on the norm vector.
pub fn prox_groups<W: GroupSet + ?Sized>(
    w: &mut W,
    regs: &[Regularizer],
    eta: f64,
    radius: Option<f64>,
    s: &mut NormScratch,
) -> Result<()> {
    if regs.is_empty() && radius.is_none() {
        return Ok(());
    }
    s.norms.clear();
    s.norms
        .extend((0..w.n_groups()).map(|g| w.group_sq_norm(g).sqrt()));
    s.shrunk.clone_from(&s.norms);
    shrink_norms(&mut s.shrunk, regs, eta, radius)?;
    rescale_to(w, &s.norms, &s.shrunk);
    Ok(())
}
