//! Choosing the B1-spline width `h` for a target sparsity of the Gram
//! matrix.

use super::gram::{check_matrix, gram_symmetric, sq_norms};
use super::Kernel;
use crate::error::{OmklError, Result};

/// Default number of rows sampled by [`b1_bandwidth`] for large inputs.
pub const DEFAULT_MAX_SAMPLE: usize = 2000;

/// The width `h` of the B1-spline kernel `max(0, 1 − ‖x − x'‖/h)` for which
/// a fraction `zero_fraction` of the entries of the training Gram matrix
/// of `x` (`n × d`, row-major) are zero (the paper used about 95%).
///
/// An entry is zero iff `‖x_i − x_j‖ ≥ h`. The `n` diagonal entries are
/// never zero, so the fraction counts over all `n²` entries: `h` is the
/// distance quantile at which `2 · #{i < j : ‖x_i − x_j‖ ≥ h} ≈
/// zero_fraction · n²`. `h` is placed midway between two consecutive
/// distinct pairwise distances, so no distance sits on the boundary, and
/// the pair of distinct values whose count is nearest the target is chosen
/// (with tied distances, as on binary inputs, the target may only be
/// approximated). When `n > max_sample`, the distances are those among
/// `max_sample` rows drawn uniformly without replacement by a fixed-seed
/// generator (deterministic), and the fraction is estimated from them.
///
/// # Complexity
/// O(s² d) for the GEMM plus O(s²) expected for selecting the quantile
/// (no sort), `s = min(n, max_sample)`; O(s²) memory.
///
/// # Example
/// ```
/// use omkl_core::kernel::bandwidth::b1_bandwidth;
/// let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
/// let h = b1_bandwidth(&x, 100, 1, 0.9, 2000).unwrap();
/// // points 0..99 on a line: pairs closer than h are non-zero.
/// let nonzero = (0..100).flat_map(|i| (0..100).map(move |j| (i, j)))
///     .filter(|&(i, j)| ((i as f64) - (j as f64)).abs() < h).count();
/// assert!((1.0 - nonzero as f64 / 1e4 - 0.9).abs() < 0.01);
/// ```
pub fn b1_bandwidth(
    x: &[f32],
    n: usize,
    d: usize,
    zero_fraction: f64,
    max_sample: usize,
) -> Result<f64> {
    check_matrix("X", x, n, d)?;
    if !(zero_fraction.is_finite() && (0.0..1.0).contains(&zero_fraction)) {
        return Err(OmklError::invalid(
            "zero_fraction",
            format!("expected a number in [0, 1), got {zero_fraction}"),
        ));
    }
    if max_sample < 2 {
        return Err(OmklError::invalid(
            "max_sample",
            format!("expected an integer >= 2, got {max_sample}"),
        ));
    }
    if n < 2 {
        return Err(OmklError::invalid(
            "X",
            "expected at least 2 rows to measure pairwise distances",
        ));
    }
    let sample: Vec<f32>;
    let (xs, s) = if n > max_sample {
        sample = sample_rows(x, n, d, max_sample);
        (sample.as_slice(), max_sample)
    } else {
        (x, n)
    };
    // Squared distances from a linear Gram, with the same f32 formula as
    // the B1-spline map.
    let ip = gram_symmetric(&Kernel::Linear { normalize: false }, xs, s, d)?;
    let norms: Vec<f32> = sq_norms(xs, d).into_iter().map(|v| v as f32).collect();
    let mut dist: Vec<f32> = Vec::with_capacity(s * (s - 1) / 2);
    for i in 0..s {
        let row = &ip[i * s..(i + 1) * s];
        for j in i + 1..s {
            let d2 = (norms[i] + norms[j] - 2.0 * row[j]).max(0.0);
            dist.push(d2.sqrt());
        }
    }
    let pairs = dist.len() as f64;
    // Target number of non-zero pairs i < j.
    let target = (pairs - zero_fraction * (s * s) as f64 / 2.0).clamp(0.0, pairs);
    pick_threshold(&mut dist, target).ok_or_else(|| {
        OmklError::invalid(
            "X",
            "all sampled rows are identical; no width h > 0 separates them",
        )
    })
}

/// The width `h` placed between two consecutive distinct values of `dist`
/// (or, past the largest, at 1.5 times it) for which the number of values
/// below `h` is nearest `target` (the smaller count on a tie); `None` if no
/// such `h > 0` exists (all values 0). Only the run of values equal to the
/// one at rank `⌊target⌋` matters: the best count is the number of values
/// below that run or the number up to its end, so one selection
/// (`select_nth_unstable`) and one pass replace a sort. `dist` is permuted.
///
/// # Complexity
/// O(len) expected time, no extra memory.
fn pick_threshold(dist: &mut [f32], target: f64) -> Option<f64> {
    let len = dist.len();
    let max = f64::from(dist.iter().copied().fold(0.0f32, f32::max));
    let k = target.floor() as usize;
    if k >= len || len == 0 {
        // All values are below the target: h past the largest.
        return (max > 0.0).then_some(max * 1.5);
    }
    let (_, &mut v, _) = dist.select_nth_unstable_by(k, f32::total_cmp);
    // Counts below and up to the run of `v`, and its neighbouring values.
    let (mut below, mut upto) = (0usize, 0usize);
    let (mut prev, mut next) = (f32::NEG_INFINITY, f32::INFINITY);
    for &x in dist.iter() {
        if x < v {
            below += 1;
            prev = prev.max(x);
        } else if x == v {
            upto += 1;
        } else {
            next = next.min(x);
        }
    }
    upto += below;
    let v = f64::from(v);
    let mut best: Option<(f64, f64)> = None; // (error, h)
    let mut consider = |count: usize, h: f64| {
        if h > 0.0 && h.is_finite() {
            let err = (count as f64 - target).abs();
            if best.is_none_or(|(e, _)| err < e) {
                best = Some((err, h));
            }
        }
    };
    // h between the value below the run and the run: `below` values under it.
    consider(
        below,
        if below == 0 {
            v / 2.0
        } else {
            0.5 * (f64::from(prev) + v)
        },
    );
    // h between the run and the next value, or past the largest.
    if upto == len {
        if max > 0.0 {
            consider(len, max * 1.5);
        }
    } else {
        consider(upto, 0.5 * (v + f64::from(next)));
    }
    best.map(|(_, h)| h)
}

/// `k` distinct rows of `x` drawn uniformly by a fixed-seed partial
/// Fisher-Yates shuffle (SplitMix64), in their original order.
fn sample_rows(x: &[f32], n: usize, d: usize, k: usize) -> Vec<f32> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (next() % (n - i) as u64) as usize;
        idx.swap(i, j);
    }
    let mut chosen = idx[..k].to_vec();
    chosen.sort_unstable();
    chosen
        .iter()
        .flat_map(|&i| x[i * d..(i + 1) * d].iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::pick_threshold;
    use crate::lcg::Lcg;

    /// The reference: sort, then scan every boundary between distinct
    /// values (and past the largest), keeping the first nearest count.
    fn by_sorting(dist: &[f32], target: f64) -> Option<f64> {
        let mut d: Vec<f64> = dist.iter().map(|&v| f64::from(v)).collect();
        d.sort_unstable_by(f64::total_cmp);
        let mut best: Option<(f64, f64)> = None;
        let mut consider = |count: usize, h: f64| {
            if h > 0.0 && h.is_finite() {
                let err = (count as f64 - target).abs();
                if best.is_none_or(|(e, _)| err < e) {
                    best = Some((err, h));
                }
            }
        };
        let mut p = 0;
        while p < d.len() {
            let v = d[p];
            consider(
                p,
                if p == 0 {
                    v / 2.0
                } else {
                    0.5 * (d[p - 1] + v)
                },
            );
            while p < d.len() && d[p] == v {
                p += 1;
            }
        }
        if let Some(&max) = d.last() {
            if max > 0.0 {
                consider(d.len(), max * 1.5);
            }
        }
        best.map(|(_, h)| h)
    }

    #[test]
    fn selection_equals_sort_and_scan() {
        let mut rng = Lcg(3);
        let mut next = move || rng.next_u32();
        for case in 0..400 {
            let len = 1 + (next() % 60) as usize;
            // Few distinct values (ties, as with binary inputs) or many; zeros.
            let levels = [1, 2, 3, 7, 1000][case % 5];
            let dist: Vec<f32> = (0..len)
                .map(|_| ((next() % levels) as f32).sqrt() * 0.75)
                .collect();
            let pairs = len as f64;
            for target in [
                0.0,
                0.4,
                1.0,
                pairs / 3.0,
                pairs / 2.0 + 0.5,
                pairs - 1.0,
                pairs,
            ] {
                let target = target.clamp(0.0, pairs);
                let want = by_sorting(&dist, target);
                let got = pick_threshold(&mut dist.clone(), target);
                assert_eq!(got, want, "case {case} target {target} dist {dist:?}");
            }
        }
    }
}
