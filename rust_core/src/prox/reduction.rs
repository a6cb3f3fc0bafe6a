//! The reduction of Prop. 1: when `Ω(x) = ψ(‖x_1‖, …, ‖x_G‖)` with ψ
//! non-decreasing in each argument, `prox_Ω(x)_g = prox_ψ(n)_g · x_g / ‖x_g‖`
//! where `n` is the vector of group norms.

use super::groups::{check_grouped, group_norms_into};
use crate::error::Result;

/// [`prox_by_group_norms`] after checking `x` and `offsets`
/// ([`check_grouped`]).
///
/// # Example
/// ```
/// use omkl_core::prox::reduction::prox_by_group_norms_checked;
/// let mut x = [6.0, 8.0];
/// prox_by_group_norms_checked(&mut x, &[0, 2], |n| n[0] /= 2.0).unwrap();
/// assert_eq!(x, [3.0, 4.0]);
/// assert!(prox_by_group_norms_checked(&mut x, &[0, 3], |_| ()).is_err());
/// ```
pub fn prox_by_group_norms_checked<F>(x: &mut [f64], offsets: &[usize], prox_norms: F) -> Result<()>
where
    F: FnOnce(&mut [f64]),
{
    check_grouped(x, offsets)?;
    prox_by_group_norms(x, offsets, prox_norms);
    Ok(())
}

/// In place, `x ← prox_Ω(x)` given `prox_norms`, which maps the vector of
/// group norms to `prox_ψ` of it (in place; input and output ≥ 0). Groups
/// whose norm is zero stay zero. `offsets` must be valid.
///
/// # Complexity
/// O(p) plus the cost of `prox_norms` on a vector of length G.
///
/// # Example
/// ```
/// use omkl_core::prox::reduction::prox_by_group_norms;
/// // group lasso with τ = 5: norms shrink by 5.
/// let mut x = [6.0, 8.0, 0.5];
/// prox_by_group_norms(&mut x, &[0, 2, 3], |n| {
///     n.iter_mut().for_each(|v| *v = (*v - 5.0).max(0.0));
/// });
/// assert_eq!(x, [3.0, 4.0, 0.0]);
/// ```
pub fn prox_by_group_norms<F>(x: &mut [f64], offsets: &[usize], prox_norms: F)
where
    F: FnOnce(&mut [f64]),
{
    let mut norms = Vec::new();
    group_norms_into(x, offsets, &mut norms);
    let old = norms.clone();
    prox_norms(&mut norms);
    rescale_groups(x, offsets, &old, &norms);
}

/// Scales each group `g` of `x` by `new[g] / old[g]` (zero when `old[g]` is
/// zero or `new[g]` is zero).
pub fn rescale_groups(x: &mut [f64], offsets: &[usize], old: &[f64], new: &[f64]) {
    for (g, w) in offsets.windows(2).enumerate() {
        let block = &mut x[w[0]..w[1]];
        if new[g] <= 0.0 || old[g] <= 0.0 {
            block.iter_mut().for_each(|v| *v = 0.0);
        } else if new[g] != old[g] {
            let s = new[g] / old[g];
            block.iter_mut().for_each(|v| *v *= s);
        }
    }
}
