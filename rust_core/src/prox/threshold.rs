//! Finding a soft threshold θ from the sorted magnitudes (Alg. 2 of the
//! paper, and Held et al. / Duchi et al. 2008 for the ℓ1 ball), either by
//! sorting or by expected-linear-time randomised selection.
//!
//! Both the squared-ℓ1 prox and the ℓ1-ball projection are soft-thresholding
//! by a θ that solves a monotone equation. If the support has `k` elements
//! with sum `S_k`, the threshold is a closed form `θ(S_k, k)`; the support is
//! the longest prefix of the magnitudes sorted in decreasing order with
//! `a_k > θ(S_k, k)`, and this condition holds on a prefix only.

use crate::error::{OmklError, Result};

/// How to find the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ThresholdMethod {
    /// Sort the magnitudes (Alg. 2 of the paper). O(p log p).
    #[default]
    Sort,
    /// Randomised pivot selection (Duchi et al. 2008). Expected O(p).
    Select,
}

impl std::str::FromStr for ThresholdMethod {
    type Err = OmklError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "sort" => Ok(ThresholdMethod::Sort),
            "select" => Ok(ThresholdMethod::Select),
            _ => Err(OmklError::invalid(
                "method",
                format!("expected \"sort\" or \"select\", got {s:?}"),
            )),
        }
    }
}

/// The threshold θ of `rule` on the magnitudes of `x`: one linear pass
/// ([`support_candidates`]) drops the entries that cannot be in the
/// support, then `method` searches the rest ([`threshold_by_sort`] or
/// [`threshold_by_select`]). 0 when no entry is in the support.
///
/// # Complexity
/// O(p) plus O(c log c) for sorting (expected O(c) for selection) the `c`
/// surviving candidates.
///
/// # Example
/// ```
/// use omkl_core::prox::{squared_l1::ThresholdMethod, threshold::{threshold, SquaredL1Rule}};
/// let rule = SquaredL1Rule { inv_tau: 1.0 };
/// assert_eq!(threshold(&[-3.0, 1.0], rule, ThresholdMethod::Select), 1.5);
/// ```
pub fn threshold<R: ThresholdRule>(x: &[f64], rule: R, method: ThresholdMethod) -> f64 {
    let mut a = Vec::new();
    support_candidates(x.iter().map(|v| v.abs()), rule, &mut a);
    let theta = match method {
        ThresholdMethod::Sort => threshold_by_sort(&mut a, rule),
        ThresholdMethod::Select => threshold_by_select(&mut a, rule),
    };
    refine(&a, rule, theta)
}

/// `θ(S, k)` again over the support `{a > θ}`, with `S` summed by
/// Neumaier's compensated summation: the searches sum in whatever order
/// they visit the entries, and under a huge `τ` the prox's output
/// `|x_i| − θ` is a small difference, whose relative error is that of `θ`
/// times `|x_i| / (|x_i| − θ)`.
///
/// # Complexity
/// O(len(a)).
fn refine<R: ThresholdRule>(a: &[f64], rule: R, theta: f64) -> f64 {
    let (mut s, mut c, mut k) = (0.0f64, 0.0f64, 0usize);
    for &v in a.iter().filter(|&&v| v > theta) {
        let t = s + v;
        c += if s.abs() >= v.abs() {
            (s - t) + v
        } else {
            (v - t) + s
        };
        s = t;
        k += 1;
    }
    if k == 0 {
        theta
    } else {
        rule.theta(s + c, k)
    }
}

/// A threshold rule: `θ(S, k)` for a candidate support of `k` elements whose
/// magnitudes sum to `S`.
pub trait ThresholdRule: Copy {
    /// The threshold if the support has `k ≥ 1` elements summing to `s`.
    fn theta(self, s: f64, k: usize) -> f64;
}

/// The squared-ℓ1 prox `(τ/2)‖·‖₁²`: `θ = τ S / (1 + kτ)`, written as
/// `S / (1/τ + k)` so that huge τ neither overflows nor loses accuracy.
#[derive(Clone, Copy, Debug)]
pub struct SquaredL1Rule {
    /// `1/τ` (infinite for τ = 0).
    pub inv_tau: f64,
}

impl ThresholdRule for SquaredL1Rule {
    #[inline]
    fn theta(self, s: f64, k: usize) -> f64 {
        s / (self.inv_tau + k as f64)
    }
}

/// The projection on `{‖u‖₁ ≤ r}` (when `‖x‖₁ > r`): `θ = (S − r) / k`.
#[derive(Clone, Copy, Debug)]
pub struct L1BallRule {
    /// The radius `r`.
    pub radius: f64,
}

impl ThresholdRule for L1BallRule {
    #[inline]
    fn theta(self, s: f64, k: usize) -> f64 {
        (s - self.radius) / k as f64
    }
}

/// Appends to `out` a superset of the support among the magnitudes `a`
/// (all ≥ 0), discarding in one pass the entries that cannot be in it, as
/// in the first pass of Condat (2016), *Fast projection onto the simplex
/// and the ℓ1 ball*.
///
/// For both rules here, `θ(T)` of any subset `T` is a lower bound on the
/// final threshold θ* (θ* is the largest `θ` over the prefixes of the sorted
/// magnitudes, and a subset's θ is at most its size's prefix's). So every
/// entry at or below the running `θ` of the kept candidates is out of the
/// support. The survivors are then given to [`threshold_by_sort`] or
/// [`threshold_by_select`], which are exact on any superset of the support.
///
/// # Complexity
/// O(p) time, O(survivors) memory.
///
/// # Example
/// ```
/// use omkl_core::prox::threshold::{support_candidates, threshold_by_sort, SquaredL1Rule};
/// let rule = SquaredL1Rule { inv_tau: 1.0 };
/// let mut c = Vec::new();
/// support_candidates([1.0, 3.0, 0.5, 2.0], rule, &mut c);
/// assert!(c.contains(&3.0) && !c.contains(&0.5));
/// assert_eq!(threshold_by_sort(&mut c, rule), threshold_by_sort(&mut [1.0, 3.0, 0.5, 2.0], rule));
/// ```
pub fn support_candidates<R, I>(a: I, rule: R, out: &mut Vec<f64>)
where
    R: ThresholdRule,
    I: IntoIterator<Item = f64>,
{
    out.clear();
    let mut waiting: Vec<f64> = Vec::new();
    let (mut s, mut rho) = (0.0f64, 0.0f64);
    for y in a {
        if y <= rho {
            continue;
        }
        if out.is_empty() {
            out.push(y);
            s = y;
            rho = rule.theta(s, 1);
            continue;
        }
        let grown = rule.theta(s + y, out.len() + 1);
        let alone = rule.theta(y, 1);
        if grown > alone {
            out.push(y);
            s += y;
            rho = grown;
        } else {
            // `y` alone gives a larger lower bound: restart from it and
            // re-check the old candidates at the end.
            waiting.append(out);
            out.push(y);
            s = y;
            rho = alone;
        }
    }
    for y in waiting {
        if y > rho {
            out.push(y);
            s += y;
            rho = rule.theta(s, out.len());
        }
    }
    // Final filter (one Michelot step); rounding aside θ(out) ≤ θ*, so the
    // largest entry always stays.
    let top = out.iter().fold(0.0f64, |m, &v| m.max(v));
    out.retain(|&y| y > rho || y == top);
}

/// θ by sorting the magnitudes `a` (all ≥ 0) in decreasing order and scanning
/// for the support. The rule must put the largest magnitude in the support
/// whenever it is positive (true of both rules here). `a` is reordered. Returns 0 when no element is in the
/// support.
///
/// # Complexity
/// O(p log p).
///
/// # Example
/// ```
/// use omkl_core::prox::threshold::{threshold_by_sort, SquaredL1Rule};
/// // (τ/2)‖·‖₁² with τ = 1 on |x| = [3, 1]: θ = 3 / 2 (the 1 drops out).
/// let t = threshold_by_sort(&mut [1.0, 3.0], SquaredL1Rule { inv_tau: 1.0 });
/// assert_eq!(t, 1.5);
/// ```
pub fn threshold_by_sort<R: ThresholdRule>(a: &mut [f64], rule: R) -> f64 {
    sort_decreasing(a);
    let top = match a.first() {
        Some(&v) if v > 0.0 => v,
        _ => return 0.0,
    };
    let mut s = 0.0;
    let mut theta = 0.0;
    for (i, &v) in a.iter().enumerate() {
        let cand = rule.theta(s + v, i + 1);
        // The largest magnitudes (with their ties) are always in the
        // support; accepting them outright keeps rounding in `cand` (huge
        // τ, tiny radius) from emptying the support.
        if v == top || v > cand {
            s += v;
            theta = cand;
        } else {
            break;
        }
    }
    theta
}

/// Sorts non-negative finite numbers in decreasing order. Their IEEE-754
/// bit patterns order like the numbers, so an integer sort suffices.
pub fn sort_decreasing(a: &mut [f64]) {
    let mut bits: Vec<u64> = a.iter().map(|v| v.to_bits()).collect();
    bits.sort_unstable_by(|x, y| y.cmp(x));
    for (d, b) in a.iter_mut().zip(bits) {
        *d = f64::from_bits(b);
    }
}

/// θ by randomised selection (quickselect with three-way partitions), as in
/// Duchi et al. (2008): no full sort. `a` (all ≥ 0) is reordered. Returns
/// 0 when no element is in the support. Deterministic (fixed pivot seed).
///
/// # Complexity
/// Expected O(p), worst case O(p²).
///
/// # Example
/// ```
/// use omkl_core::prox::threshold::{threshold_by_select, SquaredL1Rule};
/// let t = threshold_by_select(&mut [1.0, 3.0], SquaredL1Rule { inv_tau: 1.0 });
/// assert_eq!(t, 1.5);
/// ```
pub fn threshold_by_select<R: ThresholdRule>(a: &mut [f64], rule: R) -> f64 {
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut s, mut k) = (0.0f64, 0usize);
    let (mut lo, mut hi) = (0usize, a.len());
    while lo < hi {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pivot = a[lo + (rng % (hi - lo) as u64) as usize];
        let (gt, ge, sum_ge) = partition3(&mut a[lo..hi], pivot);
        // `pivot` is the smallest of the `ge` candidates ≥ pivot: they all
        // join the support exactly when the pivot does.
        // While nothing is accepted the candidates include the maximum, so
        // `gt == 0` means the pivot is the maximum: always in the support.
        if (k == 0 && gt == 0 && pivot > 0.0) || pivot > rule.theta(s + sum_ge, k + ge) {
            s += sum_ge;
            k += ge;
            lo += ge;
        } else {
            hi = lo + gt;
        }
    }
    if k == 0 {
        0.0
    } else {
        rule.theta(s, k)
    }
}

/// Reorders `a` as `[> p | == p | < p]`; returns the sizes of the first
/// block and of the first two, and the sum of the first two.
fn partition3(a: &mut [f64], p: f64) -> (usize, usize, f64) {
    let (mut lt_start, mut i, mut gt_end) = (a.len(), 0usize, 0usize);
    let mut sum = 0.0;
    while i < lt_start {
        let v = a[i];
        if v > p {
            sum += v;
            a.swap(i, gt_end);
            gt_end += 1;
            i += 1;
        } else if v < p {
            lt_start -= 1;
            a.swap(i, lt_start);
        } else {
            sum += v;
            i += 1;
        }
    }
    (gt_end, lt_start, sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_three_ways() {
        let mut a = [1.0, 3.0, 2.0, 3.0, 0.0, 2.0];
        let (gt, ge, s) = partition3(&mut a, 2.0);
        assert_eq!((gt, ge, s), (2, 4, 10.0));
        assert!(a[..2].iter().all(|&v| v > 2.0));
        assert!(a[2..4].iter().all(|&v| v == 2.0));
        assert!(a[4..].iter().all(|&v| v < 2.0));
    }

    #[test]
    fn sort_and_select_agree_with_ties() {
        let a = [5.0, 5.0, 1.0, 0.0, 3.0, 3.0, 3.0, 0.5];
        for inv in [0.01, 0.5, 1.0, 10.0, f64::INFINITY] {
            let r = SquaredL1Rule { inv_tau: inv };
            let t1 = threshold_by_sort(&mut a.clone(), r);
            let t2 = threshold_by_select(&mut a.clone(), r);
            assert!((t1 - t2).abs() <= 1e-12 * (1.0 + t1), "{t1} {t2}");
        }
        for radius in [0.0, 0.5, 3.0, 10.0] {
            let r = L1BallRule { radius };
            let t1 = threshold_by_sort(&mut a.clone(), r);
            let t2 = threshold_by_select(&mut a.clone(), r);
            assert!((t1 - t2).abs() <= 1e-12 * (1.0 + t1), "{t1} {t2}");
        }
    }
}
