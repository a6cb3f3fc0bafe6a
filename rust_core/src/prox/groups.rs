//! Groupings of coefficients: contiguous blocks given by `offsets`, group
//! norms, and the conversion from arbitrary per-coefficient group ids.

use crate::error::{check_finite, check_nonneg, OmklError, Result};

/// Checks that `offsets` describes a partition of `0..p` into contiguous
/// blocks: `offsets.len() = G + 1 ≥ 1`, `offsets[0] = 0`, non-decreasing,
/// and `offsets[G] = p`. Empty groups are allowed. Returns `G`.
///
/// # Complexity
/// O(G).
///
/// # Example
/// ```
/// use omkl_core::prox::groups::check_offsets;
/// assert_eq!(check_offsets(&[0, 2, 5], 5).unwrap(), 2);
/// assert!(check_offsets(&[0, 3, 2], 3).is_err());
/// ```
pub fn check_offsets(offsets: &[usize], p: usize) -> Result<usize> {
    let (first, last) = match (offsets.first(), offsets.last()) {
        (Some(f), Some(l)) => (*f, *l),
        _ => {
            return Err(OmklError::shape(
                "offsets",
                "at least one element (G + 1 boundaries)",
                "an empty array",
            ))
        }
    };
    if first != 0 {
        return Err(OmklError::invalid(
            "offsets",
            format!("expected offsets[0] = 0, got {first}"),
        ));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(OmklError::invalid(
            "offsets",
            format!(
                "expected non-decreasing offsets, but offsets[{}] = {} > offsets[{}] = {}",
                i,
                offsets[i],
                i + 1,
                offsets[i + 1]
            ),
        ));
    }
    if last != p {
        return Err(OmklError::shape(
            "offsets",
            format!("last offset equal to len(x) = {p}"),
            last.to_string(),
        ));
    }
    Ok(offsets.len() - 1)
}

/// Returns an error unless `x` is non-empty and finite.
pub fn check_x(x: &[f64]) -> Result<()> {
    if x.is_empty() {
        return Err(OmklError::empty("x"));
    }
    check_finite("x", x)
}

/// Checks `x` ([`check_x`]) and the parameter `name = value` (finite and
/// `≥ 0`), then runs the unchecked operator `f` on `x`.
pub(crate) fn checked(
    x: &mut [f64],
    (name, value): (&str, f64),
    f: impl FnOnce(&mut [f64]),
) -> Result<()> {
    check_nonneg(name, value)?;
    check_x(x)?;
    f(x);
    Ok(())
}

/// Validates a grouped input: `x` non-empty and finite, `offsets` a valid
/// grouping of `0..x.len()`. Returns the number of groups `G`.
pub fn check_grouped(x: &[f64], offsets: &[usize]) -> Result<usize> {
    check_x(x)?;
    check_offsets(offsets, x.len())
}

/// Euclidean norms of the groups, `out[g] = ‖x[offsets[g]..offsets[g+1]]‖₂`.
/// Inputs must be valid (see [`check_offsets`]).
///
/// # Complexity
/// O(p).
pub fn group_norms_into(x: &[f64], offsets: &[usize], out: &mut Vec<f64>) {
    out.clear();
    out.extend(offsets.windows(2).map(|w| norm2(&x[w[0]..w[1]])));
}

/// Allocating form of [`group_norms_into`].
///
/// # Example
/// ```
/// let n = omkl_core::prox::groups::group_norms(&[3.0, 4.0, 1.0], &[0, 2, 3]);
/// assert_eq!(n, vec![5.0, 1.0]);
/// ```
pub fn group_norms(x: &[f64], offsets: &[usize]) -> Vec<f64> {
    let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
    group_norms_into(x, offsets, &mut out);
    out
}

/// Euclidean norm, computed with a scaled sum of squares when the plain sum
/// would overflow or underflow.
#[inline]
pub fn norm2(x: &[f64]) -> f64 {
    let s: f64 = x.iter().map(|v| v * v).sum();
    if s.is_finite() && s > 1e-280 {
        return s.sqrt();
    }
    let m = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if m == 0.0 || !m.is_finite() {
        return m;
    }
    let s: f64 = x.iter().map(|v| (v / m) * (v / m)).sum();
    m * s.sqrt()
}

/// A grouping given by arbitrary per-coefficient group ids, turned into
/// contiguous blocks by a stable counting sort.
///
/// `order[k]` is the original index of the `k`-th coefficient in
/// group-sorted order; it is `None` when the ids are already sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct Grouping {
    /// Block boundaries in group-sorted order (len G + 1).
    pub offsets: Vec<usize>,
    /// Permutation to group-sorted order, or `None` for the identity.
    pub order: Option<Vec<usize>>,
}

impl Grouping {
    /// Builds a grouping from ids in `0..G`, with `G = max(ids) + 1` (groups
    /// without coefficients are allowed). Errors on negative ids or an
    /// empty array.
    ///
    /// # Complexity
    /// O(p + G).
    ///
    /// # Example
    /// ```
    /// use omkl_core::prox::groups::Grouping;
    /// let g = Grouping::from_ids(&[1, 0, 1]).unwrap();
    /// assert_eq!(g.offsets, vec![0, 1, 3]);
    /// assert_eq!(g.order, Some(vec![1, 0, 2]));
    /// ```
    pub fn from_ids(ids: &[i64]) -> Result<Self> {
        if ids.is_empty() {
            return Err(OmklError::empty("groups"));
        }
        if let Some(i) = ids.iter().position(|&g| g < 0) {
            return Err(OmklError::invalid(
                "groups",
                format!("expected group ids >= 0, but element {i} is {}", ids[i]),
            ));
        }
        let max = *ids.iter().max().unwrap_or(&0);
        let n_groups = usize::try_from(max)
            .ok()
            .and_then(|m| m.checked_add(1))
            .filter(|&g| g <= ids.len().saturating_mul(16).max(1 << 20))
            .ok_or_else(|| {
                OmklError::invalid(
                    "groups",
                    format!("group id {max} is far larger than the number of coefficients"),
                )
            })?;
        let mut offsets = vec![0usize; n_groups + 1];
        for &g in ids {
            offsets[g as usize + 1] += 1;
        }
        for g in 0..n_groups {
            offsets[g + 1] += offsets[g];
        }
        let sorted = ids.windows(2).all(|w| w[0] <= w[1]);
        let order = if sorted {
            None
        } else {
            let mut next = offsets[..n_groups].to_vec();
            let mut order = vec![0usize; ids.len()];
            for (i, &g) in ids.iter().enumerate() {
                let slot = &mut next[g as usize];
                order[*slot] = i;
                *slot += 1;
            }
            Some(order)
        };
        Ok(Grouping { offsets, order })
    }

    /// Number of groups `G`.
    pub fn n_groups(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Copies `x` into group-sorted order. `x.len()` must equal the number
    /// of ids the grouping was built from.
    pub fn gather(&self, x: &[f64]) -> Vec<f64> {
        match &self.order {
            None => x.to_vec(),
            Some(order) => order.iter().map(|&i| x[i]).collect(),
        }
    }

    /// Inverse of [`Grouping::gather`]: puts group-sorted values back in the
    /// original order.
    pub fn scatter(&self, sorted: Vec<f64>) -> Vec<f64> {
        match &self.order {
            None => sorted,
            Some(order) => {
                let mut out = vec![0.0; sorted.len()];
                for (k, &i) in order.iter().enumerate() {
                    out[i] = sorted[k];
                }
                out
            }
        }
    }
}

/// Checks that `x` is non-empty and finite, with one group id per
/// coefficient.
fn check_x_and_ids(x: &[f64], ids: &[i64]) -> Result<()> {
    check_x(x)?;
    if ids.len() != x.len() {
        return Err(OmklError::shape(
            "groups",
            format!("one group id per coefficient (length {})", x.len()),
            format!("length {}", ids.len()),
        ));
    }
    Ok(())
}

/// Applies a grouped operator `op(x, offsets)` to `x` (taken by value and
/// reused when the ids are already sorted) grouped by arbitrary
/// ids (one per coefficient, see [`Grouping::from_ids`]) and returns the
/// result in the original order. Errors when the lengths differ, the ids
/// are invalid, `x` is empty or not finite, or `op` fails.
///
/// # Complexity
/// O(p + G) plus the cost of `op`.
///
/// # Example
/// ```
/// use omkl_core::prox::{group_lasso::prox_group_lasso, groups::apply_with_ids};
/// let out = apply_with_ids(vec![6.0, 1.0, 8.0], &[0, 1, 0], |x, o| prox_group_lasso(x, o, 5.0))
///     .unwrap();
/// assert_eq!(out, vec![3.0, 0.0, 4.0]);
/// ```
pub fn apply_with_ids<F>(x: Vec<f64>, ids: &[i64], op: F) -> Result<Vec<f64>>
where
    F: FnOnce(&mut [f64], &[usize]) -> Result<()>,
{
    check_x_and_ids(&x, ids)?;
    let grouping = Grouping::from_ids(ids)?;
    let mut sorted = match grouping.order {
        None => x,
        Some(_) => grouping.gather(&x),
    };
    op(&mut sorted, &grouping.offsets)?;
    Ok(grouping.scatter(sorted))
}

/// Group norms of `x` grouped by ids: `out[g] = ‖x_g‖₂` for `g` in
/// `0..max(ids) + 1` (0 for ids without coefficients).
///
/// # Complexity
/// O(p + G).
pub fn group_norms_with_ids(x: &[f64], ids: &[i64]) -> Result<Vec<f64>> {
    check_x_and_ids(x, ids)?;
    let grouping = Grouping::from_ids(ids)?;
    Ok(group_norms(&grouping.gather(x), &grouping.offsets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_validation() {
        assert!(check_offsets(&[], 0).is_err());
        assert!(check_offsets(&[1, 2], 2).is_err());
        assert!(check_offsets(&[0, 2], 3).is_err());
        assert_eq!(check_offsets(&[0, 0, 2, 2], 2).unwrap(), 3);
    }

    #[test]
    fn ids_roundtrip() {
        let g = Grouping::from_ids(&[2, 0, 2, 1, 0]).unwrap();
        assert_eq!(g.offsets, vec![0, 2, 3, 5]);
        let x = [10.0, 11.0, 12.0, 13.0, 14.0];
        let s = g.gather(&x);
        assert_eq!(s, vec![11.0, 14.0, 13.0, 10.0, 12.0]);
        assert_eq!(g.scatter(s), x.to_vec());
        assert!(Grouping::from_ids(&[0, -1]).is_err());
        assert!(Grouping::from_ids(&[]).is_err());
    }

    #[test]
    fn norm_is_scaled() {
        assert!((norm2(&[3e200, 4e200]) / 5e200 - 1.0).abs() < 1e-15);
        assert!((norm2(&[3e-200, 4e-200]) / 5e-200 - 1.0).abs() < 1e-15);
    }
}
