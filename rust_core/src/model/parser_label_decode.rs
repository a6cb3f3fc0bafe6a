//! Joint decoding of the relations of one head's dependents for the label
//! stage ([`crate::model::parser_labels`]).
//!
//! Some relations occur at most once per head (in UD English: `nsubj`,
//! `obj`, `iobj`, `det`, `cc`, `expl`, …), and the arc from the root takes
//! its own relation. [`RelationStats`] counts, on the training trees, how
//! often each relation occurs per head and on arcs from the root;
//! [`decode_head`] then gives the dependents of one head the relations with
//! the largest summed score such that each *single* relation (one that at
//! most 0.5% of the heads having it take twice, over at least
//! [`MIN_SINGLE_HEADS`] heads) is used at most once. The exact decoder
//! solves that small assignment problem with the Hungarian algorithm, and
//! only for the heads whose independent argmax breaks a constraint.
//!
//! # Example
//! ```
//! use omkl_core::model::parser_label_decode::{decode_head, LabelDecode};
//! // two dependents both prefer relation 0, which may occur once
//! let scores = vec![vec![2.0, 1.5], vec![1.8, 0.1]];
//! let single = [true, false];
//! let allowed = [true, true];
//! let got = decode_head(&scores, &single, &allowed, LabelDecode::Exact);
//! assert_eq!(got, [1, 0]); // 1.5 + 1.8 beats 2.0 + 0.1
//! assert_eq!(decode_head(&scores, &single, &allowed, LabelDecode::Argmax), [0, 0]);
//! ```

use std::str::FromStr;

use crate::error::{OmklError, Result};

/// Heads a relation must have been seen with before it can be single.
pub const MIN_SINGLE_HEADS: u64 = 20;

/// Largest share of a relation's heads that take it twice or more for it to
/// count as single.
pub const SINGLE_MAX_SHARE: f64 = 0.005;

/// How the label stage picks the relations of a tree's arcs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LabelDecode {
    /// Each arc's best relation on its own, with no constraint (the
    /// decoding of labelers saved before format version 4).
    Independent,
    /// Each arc's best relation among those allowed on arcs of its kind
    /// (from the root or between words).
    Argmax,
    /// Per head, the best-scoring conflict on a single relation is fixed
    /// first, and the other dependents move to their next best relation.
    Greedy,
    /// Per head, the best assignment under the constraints (Hungarian
    /// algorithm).
    Exact,
    /// Per head, the best assignment when each use of a single relation
    /// after its first costs this much score (Hungarian algorithm;
    /// `Exact` is an infinite cost).
    Soft(f64),
}

impl FromStr for LabelDecode {
    type Err = OmklError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "independent" => Ok(LabelDecode::Independent),
            "argmax" => Ok(LabelDecode::Argmax),
            "greedy" => Ok(LabelDecode::Greedy),
            "exact" => Ok(LabelDecode::Exact),
            _ => match s.strip_prefix("soft:").and_then(|c| c.parse::<f64>().ok()) {
                Some(c) if c >= 0.0 && c.is_finite() => Ok(LabelDecode::Soft(c)),
                _ => Err(OmklError::invalid(
                    "decode",
                    format!(
                        "expected 'exact', 'soft:COST' (COST ≥ 0), 'greedy', 'argmax' or \
                         'independent', got {s:?}"
                    ),
                )),
            },
        }
    }
}

/// Per relation, counts over the training trees: heads having it, heads
/// having it twice or more, arcs from the root with it, and all its arcs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelationStats {
    pub(crate) counts: Vec<[u64; 4]>,
}

impl RelationStats {
    /// Adds the relations `labels[i]` (class indices) of the arcs
    /// `heads[i] → i + 1` of one tree.
    pub fn add_tree(&mut self, heads: &[usize], labels: &[usize]) {
        let n = labels.iter().map(|&k| k + 1).max().unwrap_or(0);
        if self.counts.len() < n {
            self.counts.resize(n, [0; 4]);
        }
        let mut per_head: Vec<(usize, usize)> =
            heads.iter().copied().zip(labels.iter().copied()).collect();
        per_head.sort_unstable();
        let mut i = 0;
        while i < per_head.len() {
            let mut j = i;
            while j < per_head.len() && per_head[j] == per_head[i] {
                j += 1;
            }
            let c = &mut self.counts[per_head[i].1];
            c[0] += 1;
            c[1] += u64::from(j - i > 1);
            i = j;
        }
        for (&h, &k) in heads.iter().zip(labels) {
            self.counts[k][2] += u64::from(h == 0);
            self.counts[k][3] += 1;
        }
    }

    /// Whether any tree was counted (labelers saved before format version
    /// 4 have no counts and decode each arc on its own).
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|c| c[3] == 0)
    }

    /// Per relation (of `n` classes), whether it occurs at most once per
    /// head: seen with at least [`MIN_SINGLE_HEADS`] heads, of which at most
    /// [`SINGLE_MAX_SHARE`] take it twice.
    pub fn single(&self, n: usize) -> Vec<bool> {
        (0..n)
            .map(|k| match self.counts.get(k) {
                Some(c) => {
                    c[0] >= MIN_SINGLE_HEADS && c[1] as f64 <= SINGLE_MAX_SHARE * c[0] as f64
                }
                None => false,
            })
            .collect()
    }

    /// Per relation (of `n` classes), whether it may label an arc from the
    /// root (`root = true`) or an arc between two words. An arc from the
    /// root takes only the relations of more than 0.5% of the training arcs
    /// from the root; an arc between two words takes the relations of which
    /// more than 0.5% of the arcs were between two words. When that leaves
    /// no relation, all are allowed.
    pub fn allowed(&self, n: usize, root: bool) -> Vec<bool> {
        let root_total: u64 = self.counts.iter().map(|c| c[2]).sum();
        let ok: Vec<bool> = (0..n)
            .map(|k| {
                self.counts.get(k).is_some_and(|c| {
                    if root {
                        c[2] as f64 > SINGLE_MAX_SHARE * root_total as f64
                    } else {
                        (c[3] - c[2]) as f64 > SINGLE_MAX_SHARE * c[3] as f64
                    }
                })
            })
            .collect();
        if ok.iter().any(|&b| b) {
            ok
        } else {
            vec![true; n]
        }
    }

    /// The counts in `n` rows (missing rows are zero), for saving.
    pub(crate) fn rows(&self, n: usize) -> Vec<[u64; 4]> {
        (0..n)
            .map(|k| self.counts.get(k).copied().unwrap_or([0; 4]))
            .collect()
    }
}

/// Index of the best score among the relations with `ok[k]` (the lowest
/// index among ties; `None` when none is ok).
fn best_of(z: &[f64], ok: impl Fn(usize) -> bool) -> Option<usize> {
    (0..z.len()).filter(|&k| ok(k)).fold(None, |b, k| match b {
        Some(b) if z[b] >= z[k] => Some(b),
        _ => Some(k),
    })
}

/// The relations of the dependents of one head, from their scores
/// `scores[d][k]` (all rows of one length), under `mode`: each relation
/// with `single[k]` is used at most once (unless there are more dependents
/// than relations to give them), and only relations with `allowed[k]` are
/// used (when any is). [`LabelDecode::Independent`] takes each row's
/// argmax and ignores `single` and `allowed`.
///
/// # Complexity
/// `O(D L)` for `D` dependents and `L` relations when the argmax is
/// consistent, `O(D² (D + S))` more for the exact decoder otherwise (`S`
/// single relations).
pub fn decode_head(
    scores: &[Vec<f64>],
    single: &[bool],
    allowed: &[bool],
    mode: LabelDecode,
) -> Vec<usize> {
    let any_ok = mode != LabelDecode::Independent && allowed.iter().any(|&a| a);
    let ok = |k: usize| !any_ok || allowed.get(k).copied().unwrap_or(false);
    let argmax: Vec<usize> = scores
        .iter()
        .map(|z| best_of(z, ok).or_else(|| best_of(z, |_| true)).unwrap_or(0))
        .collect();
    let is_single = |k: usize| single.get(k).copied().unwrap_or(false);
    let conflict = {
        let mut used: Vec<usize> = argmax.iter().copied().filter(|&k| is_single(k)).collect();
        used.sort_unstable();
        used.windows(2).any(|w| w[0] == w[1])
    };
    if matches!(mode, LabelDecode::Argmax | LabelDecode::Independent) || !conflict {
        return argmax;
    }
    // the best relation of each dependent that is not single, or is a
    // single relation's use after its first at a cost (its fallback)
    let cost = match mode {
        LabelDecode::Soft(c) => c,
        _ => f64::INFINITY,
    };
    let (free, free_score): (Vec<usize>, Vec<f64>) = scores
        .iter()
        .zip(&argmax)
        .map(|(z, &a)| {
            let paid = |k: usize| if is_single(k) { z[k] - cost } else { z[k] };
            let b = (0..z.len())
                .filter(|&k| ok(k) && paid(k) > f64::NEG_INFINITY)
                .fold(None, |b: Option<usize>, k| match b {
                    Some(b) if paid(b) >= paid(k) => Some(b),
                    _ => Some(k),
                });
            b.map_or((a, z[a]), |b| (b, paid(b)))
        })
        .collect();
    match mode {
        LabelDecode::Greedy => greedy(scores, &argmax, ok, is_single),
        _ => exact(scores, &free, &free_score, ok, is_single),
    }
}

fn greedy(
    scores: &[Vec<f64>],
    argmax: &[usize],
    ok: impl Fn(usize) -> bool,
    is_single: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut out = argmax.to_vec();
    let mut fixed = vec![false; out.len()];
    let mut taken: Vec<usize> = Vec::new();
    loop {
        for d in 0..out.len() {
            if !fixed[d] {
                let z = &scores[d];
                out[d] = best_of(z, |k| ok(k) && !(is_single(k) && taken.contains(&k)))
                    .unwrap_or(out[d]);
            }
        }
        // the best-scoring dependent of a single relation that two want
        let mut pick: Option<(usize, usize)> = None;
        for d in 0..out.len() {
            let k = out[d];
            if fixed[d] || !is_single(k) {
                continue;
            }
            let twice = (0..out.len()).any(|e| e != d && !fixed[e] && out[e] == k);
            if twice && pick.is_none_or(|(b, _)| scores[d][k] > scores[b][out[b]]) {
                pick = Some((d, k));
            }
        }
        match pick {
            Some((d, k)) => {
                fixed[d] = true;
                taken.push(k);
            }
            None => return out,
        }
    }
}

/// Hungarian algorithm (shortest augmenting paths with potentials) on rows
/// = dependents and columns = the single relations, then one column per
/// dependent for its best other relation (`free`).
fn exact(
    scores: &[Vec<f64>],
    free: &[usize],
    free_score: &[f64],
    ok: impl Fn(usize) -> bool,
    is_single: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let n = scores.len();
    let l = scores.first().map_or(0, Vec::len);
    let singles: Vec<usize> = (0..l).filter(|&k| is_single(k) && ok(k)).collect();
    let m = singles.len() + n;
    // a column a row may not take costs more than any assignment gains
    let spread =
        scores.iter().flatten().fold(
            0.0f64,
            |a, &v| if v.is_finite() { a.max(v.abs()) } else { a },
        );
    let forbidden = 4.0 * (n as f64 + 1.0) * (spread + 1.0);
    let cost = |i: usize, j: usize| -> f64 {
        if j < singles.len() {
            -scores[i][singles[j]]
        } else if j - singles.len() == i {
            -free_score[i]
        } else {
            forbidden
        }
    };
    // 1-based arrays of the classic formulation (rows n ≤ columns m)
    let mut u = vec![0.0; n + 1];
    let mut v = vec![0.0; m + 1];
    let mut p = vec![0usize; m + 1];
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![f64::INFINITY; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=m {
                if !used[j] {
                    let cur = cost(i0 - 1, j - 1) - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = free.to_vec();
    for j in 1..=m {
        if p[j] != 0 && j - 1 < singles.len() {
            out[p[j] - 1] = singles[j - 1];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The best assignment by enumeration of all label vectors.
    fn brute(scores: &[Vec<f64>], single: &[bool], allowed: &[bool]) -> f64 {
        let (n, l) = (scores.len(), scores[0].len());
        let mut best = f64::NEG_INFINITY;
        let mut idx = vec![0usize; n];
        loop {
            let mut seen = vec![0; l];
            idx.iter().for_each(|&k| seen[k] += 1);
            let valid =
                (0..l).all(|k| !single[k] || seen[k] <= 1) && idx.iter().all(|&k| allowed[k]);
            if valid {
                best = best.max(idx.iter().enumerate().map(|(d, &k)| scores[d][k]).sum());
            }
            let mut d = 0;
            while d < n && idx[d] + 1 == l {
                idx[d] = 0;
                d += 1;
            }
            if d == n {
                return best;
            }
            idx[d] += 1;
        }
    }

    /// The best penalised assignment by enumeration.
    fn brute_soft(scores: &[Vec<f64>], single: &[bool], allowed: &[bool], c: f64) -> f64 {
        let (n, l) = (scores.len(), scores[0].len());
        let mut best = f64::NEG_INFINITY;
        let mut idx = vec![0usize; n];
        loop {
            if idx.iter().all(|&k| allowed[k]) {
                let mut seen = vec![0usize; l];
                idx.iter().for_each(|&k| seen[k] += 1);
                let extra: usize = (0..l)
                    .filter(|&k| single[k])
                    .map(|k| seen[k].saturating_sub(1))
                    .sum();
                let t: f64 = idx.iter().enumerate().map(|(d, &k)| scores[d][k]).sum();
                best = best.max(t - c * extra as f64);
            }
            let mut d = 0;
            while d < n && idx[d] + 1 == l {
                idx[d] = 0;
                d += 1;
            }
            if d == n {
                return best;
            }
            idx[d] += 1;
        }
    }

    fn check(got: &[usize], single: &[bool], allowed: &[bool]) {
        for (k, &s) in single.iter().enumerate() {
            assert!(
                !s || got.iter().filter(|&&g| g == k).count() <= 1,
                "{got:?}"
            );
        }
        assert!(got.iter().all(|&k| allowed[k]), "{got:?}");
    }

    #[test]
    fn exact_matches_enumeration_and_greedy_is_feasible() {
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f64) / (1u64 << 31) as f64
        };
        let mut greedy_worse = 0;
        for case in 0..400 {
            let n = 1 + case % 5;
            let l = 3 + case % 4;
            let scores: Vec<Vec<f64>> = (0..n)
                .map(|_| {
                    (0..l)
                        .map(|_| (next() * 10.0).round() / 2.0 - 2.0)
                        .collect()
                })
                .collect();
            // at least two relations are not single, so a valid labelling exists
            let single: Vec<bool> = (0..l).map(|k| k >= 2 && next() < 0.6).collect();
            let allowed: Vec<bool> = (0..l).map(|k| k < 2 || next() < 0.8).collect();
            let total = |g: &[usize]| {
                g.iter()
                    .enumerate()
                    .map(|(d, &k)| scores[d][k])
                    .sum::<f64>()
            };
            let want = brute(&scores, &single, &allowed);
            let got = decode_head(&scores, &single, &allowed, LabelDecode::Exact);
            check(&got, &single, &allowed);
            assert!(
                (total(&got) - want).abs() < 1e-9,
                "case {case}: {scores:?} {single:?} {got:?}"
            );
            let g = decode_head(&scores, &single, &allowed, LabelDecode::Greedy);
            check(&g, &single, &allowed);
            assert!(total(&g) <= want + 1e-9);
            greedy_worse += usize::from(total(&g) < want - 1e-9);
            let a = decode_head(&scores, &single, &allowed, LabelDecode::Argmax);
            assert!(a.iter().all(|&k| allowed[k]));
            assert!(total(&a) >= want - 1e-9);
            // a soft cost c: brute force over the duplicates' costs
            let c = 0.75;
            let soft = decode_head(&scores, &single, &allowed, LabelDecode::Soft(c));
            let paid = |g: &[usize]| {
                let extra: usize = (0..l)
                    .filter(|&k| single[k])
                    .map(|k| g.iter().filter(|&&x| x == k).count().saturating_sub(1))
                    .sum();
                total(g) - c * extra as f64
            };
            assert!(soft.iter().all(|&k| allowed[k]));
            assert!((paid(&soft) - brute_soft(&scores, &single, &allowed, c)).abs() < 1e-9);
            assert!(paid(&soft) >= want - 1e-9);
            let free = decode_head(&scores, &single, &allowed, LabelDecode::Independent);
            let each_best = scores
                .iter()
                .map(|z| z.iter().copied().fold(f64::MIN, f64::max));
            assert!((total(&free) - each_best.sum::<f64>()).abs() < 1e-9);
        }
        // the cases are hard enough for the greedy decoder to miss some
        assert!(greedy_worse > 0);
    }

    #[test]
    fn stats_find_single_and_root_relations() {
        let mut s = RelationStats::default();
        assert!(s.is_empty());
        // relation 0 = root, 1 = once per head, 2 = twice under word 1
        for _ in 0..MIN_SINGLE_HEADS {
            s.add_tree(&[0, 1, 1, 1], &[0, 1, 2, 2]);
        }
        assert!(!s.is_empty());
        assert_eq!(s.single(4), [true, true, false, false]);
        assert_eq!(s.allowed(3, true), [true, false, false]);
        assert_eq!(s.allowed(3, false), [false, true, true]);
        assert_eq!(s.rows(4)[1], [20, 0, 0, 20]);
        assert_eq!(s.rows(4)[2], [20, 20, 0, 40]);
        assert_eq!(s.rows(4)[3], [0; 4]);
        // a rare relation between words stays allowed there
        s.add_tree(&[0, 1, 1], &[0, 1, 3]);
        assert_eq!(s.allowed(4, false), [false, true, true, true]);
        assert_eq!(s.allowed(4, true), [true, false, false, false]);
        assert_eq!(
            "greedy".parse::<LabelDecode>().unwrap(),
            LabelDecode::Greedy
        );
        assert_eq!(
            "soft:0.5".parse::<LabelDecode>().unwrap(),
            LabelDecode::Soft(0.5)
        );
        assert!("soft:-1".parse::<LabelDecode>().is_err());
        let e = "best".parse::<LabelDecode>().unwrap_err().to_string();
        assert!(e.contains("decode") && e.contains("best"), "{e}");
    }
}
