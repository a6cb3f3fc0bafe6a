//! The parser's tree decoders ([`TreeDecoder`]): glue between its score
//! matrices and the decoders of [`crate::decode`], with one reusable
//! workspace per thread.

use std::cell::RefCell;

use crate::decode::arcs::ArcScores;
use crate::decode::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use crate::decode::eisner::{eisner, EisnerWorkspace};
use crate::error::{OmklError, Result};

/// The tree decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeDecoder {
    /// Non-projective maximum spanning arborescence with one root child.
    ChuLiuEdmonds,
    /// Projective trees (Eisner's algorithm).
    Eisner,
}

impl TreeDecoder {
    /// Parses `"chu-liu-edmonds"` or `"eisner"`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "chu-liu-edmonds" => Ok(TreeDecoder::ChuLiuEdmonds),
            "eisner" => Ok(TreeDecoder::Eisner),
            _ => Err(OmklError::invalid(
                "decoder",
                format!("expected \"chu-liu-edmonds\" or \"eisner\", got {name:?}"),
            )),
        }
    }

    /// The name accepted by [`TreeDecoder::from_name`].
    pub fn name(self) -> &'static str {
        match self {
            TreeDecoder::ChuLiuEdmonds => "chu-liu-edmonds",
            TreeDecoder::Eisner => "eisner",
        }
    }

    /// Best tree for `scores[h * n1 + m]` (`n1` = words + 1); returns the
    /// head of each word `1..n1`.
    pub fn decode(self, scores: &[f64], n1: usize) -> Result<Vec<usize>> {
        decode_tree(self, scores, n1)
    }
}

/// A tree decoder: `(scores[h * n1 + m], n1) -> heads of words 1..n1`.
pub type DecodeFn<'a> = dyn FnMut(&[f64], usize) -> Result<Vec<usize>> + 'a;

thread_local! {
    static CLE: RefCell<CleWorkspace> = RefCell::new(CleWorkspace::new());
    static EISNER: RefCell<EisnerWorkspace> = RefCell::new(EisnerWorkspace::new());
}

/// Best tree (one root child) for `scores[h * n1 + m]`; returns the heads of
/// words `1..n1`. Chu-Liu-Edmonds gives the best tree, Eisner the best
/// projective tree.
///
/// # Complexity
/// `O(n²)` to `O(n³)` for Chu-Liu-Edmonds, `O(n³)` for Eisner.
pub fn decode_tree(decoder: TreeDecoder, scores: &[f64], n1: usize) -> Result<Vec<usize>> {
    if n1 < 2 {
        return Err(OmklError::empty("sentence"));
    }
    let arcs = ArcScores::new(scores, n1 - 1)?;
    let mut heads = vec![0usize; n1];
    match decoder {
        TreeDecoder::ChuLiuEdmonds => {
            CLE.with(|ws| chu_liu_edmonds(&arcs, true, &mut ws.borrow_mut(), &mut heads))?;
        }
        TreeDecoder::Eisner => {
            EISNER.with(|ws| eisner(&arcs, true, &mut ws.borrow_mut(), &mut heads))?;
        }
    }
    heads.remove(0);
    Ok(heads)
}

/// Number of non-projective arcs of a tree given by `heads[m - 1]`, the
/// head of word `m` (0 is the root): arcs `h → m` with a word strictly
/// between `h` and `m` that `h` does not dominate. A tree is projective when
/// this is 0, and Eisner's decoder can then return it. On heads that do not
/// form a tree it still ends: a word whose ancestor walk does not meet `h`
/// within `n` steps is not dominated by `h`.
///
/// # Example
/// ```
/// use omkl_core::model::parser_decode::nonprojective_arcs;
/// // 0 → 2, 2 → 1, 1 → 3: the arc 1 → 3 crosses 0 → 2 over word 2
/// assert_eq!(nonprojective_arcs(&[2, 0, 1]), 1);
/// assert_eq!(nonprojective_arcs(&[2, 0, 2]), 0);
/// ```
///
/// # Complexity
/// `O(n²)` in the worst case (one ancestor walk per word between an arc's
/// ends, each at most `n` steps; usually short).
pub fn nonprojective_arcs(heads: &[usize]) -> usize {
    let n = heads.len();
    // does `h` dominate `k` (k's ancestor walk meets h before the root)?
    let dominates = |h: usize, mut k: usize| {
        for _ in 0..=n {
            if k == h {
                return true;
            }
            if k == 0 || k > n {
                return false;
            }
            k = heads[k - 1];
        }
        false
    };
    (1..=n)
        .filter(|&m| {
            let h = heads[m - 1];
            let (lo, hi) = (h.min(m), h.max(m));
            (lo + 1..hi).any(|k| !dominates(h, k))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcg::Lcg;
    use crate::model::parser_input::check_tree;

    fn projective(heads: &[usize]) -> bool {
        // no two arcs (h, m), (h', m') cross
        let arcs: Vec<(usize, usize)> = heads
            .iter()
            .enumerate()
            .map(|(i, &h)| (h.min(i + 1), h.max(i + 1)))
            .collect();
        arcs.iter().all(|&(a, b)| {
            arcs.iter()
                .all(|&(c, d)| !((a < c && c < b && b < d) || (c < a && a < d && d < b)))
        })
    }

    fn all_trees(n: usize) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut heads = vec![0usize; n];
        loop {
            if check_tree(&heads, "t").is_ok() && heads.iter().filter(|&&h| h == 0).count() == 1 {
                out.push(heads.clone());
            }
            let mut i = 0;
            while i < n {
                heads[i] += 1;
                if heads[i] <= n {
                    break;
                }
                heads[i] = 0;
                i += 1;
            }
            if i == n {
                return out;
            }
        }
    }

    #[test]
    fn eisner_is_the_best_projective_single_root_tree_by_brute_force() {
        let mut rng = Lcg(7);
        let mut rnd = || f64::from(rng.next_u32()) / (1u64 << 31) as f64 - 0.5;
        for n in 1..=5 {
            let trees = all_trees(n);
            for _ in 0..20 {
                let n1 = n + 1;
                let s: Vec<f64> = (0..n1 * n1).map(|_| rnd()).collect();
                let score = |t: &[usize]| (1..n1).map(|m| s[t[m - 1] * n1 + m]).sum::<f64>();
                let e = decode_tree(TreeDecoder::Eisner, &s, n1).unwrap();
                check_tree(&e, "e").unwrap();
                assert!(projective(&e));
                assert_eq!(e.iter().filter(|&&h| h == 0).count(), 1);
                let best_proj = trees
                    .iter()
                    .filter(|t| projective(t))
                    .map(|t| score(t))
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!((score(&e) - best_proj).abs() < 1e-9);
                let c = decode_tree(TreeDecoder::ChuLiuEdmonds, &s, n1).unwrap();
                let best = trees
                    .iter()
                    .map(|t| score(t))
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!((score(&c) - best).abs() < 1e-9);
                assert!(score(&c) >= score(&e) - 1e-12);
            }
        }
    }

    #[test]
    fn nonprojective_arcs_is_zero_exactly_for_projective_trees() {
        for n in 1..=5 {
            for t in all_trees(n) {
                let bad = nonprojective_arcs(&t);
                assert_eq!(bad == 0, projective(&t), "{t:?}");
                assert!(bad <= n);
            }
        }
        // 0 → 3, 3 → 1, 1 → 4, 4 → 2: 1 → 4 passes over 3 (the root's
        // child) and 4 → 2 over 3; 3 → 1 passes over 2, which 3 dominates
        assert_eq!(nonprojective_arcs(&[3, 4, 0, 1]), 2);
        // heads with a cycle (among words 1, 2, 3, cut off from the root):
        // the walks end; 0 → 4 passes over the cycle, which the root does
        // not dominate; 1 → 4 passes over 2 and 3, which 1 does
        assert_eq!(nonprojective_arcs(&[3, 1, 2, 0]), 1);
        assert_eq!(nonprojective_arcs(&[2, 3, 1, 1]), 0);
    }
}
