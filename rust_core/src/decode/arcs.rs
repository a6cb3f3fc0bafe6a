//! Validated arc scores of a dependency graph (the input of Chu-Liu-Edmonds,
//! the matrix-tree theorem and Eisner).
//!
//! # Layout
//! A sentence of `n` words has nodes `0..=n`, node 0 being the root. Arc
//! scores form a row-major `(n+1) × (n+1)` slice `s` where
//! `s[h * (n+1) + m]` is the score of the arc head `h` → modifier `m`.
//! Column 0 (arcs into the root) and the diagonal (self-loops) are ignored
//! and may hold anything, including NaN or ±∞. A tree is written as `heads`
//! of length `n+1`: `heads[m]` is the head of word `m` for `m` in `1..=n`;
//! `heads[0]` is unused (decoders set it to 0).

use super::chain::all_finite;
use crate::error::{check_count, check_nonneg, check_table, OmklError, Result};

/// Calls `f(h, m)` for every arc of a sentence of `n` words, in row-major
/// order: heads `h` in `0..=n`, modifiers `m` in `1..=n`, `h ≠ m`.
///
/// # Example
/// ```
/// let mut arcs = Vec::new();
/// omkl_core::decode::arcs::for_each_arc(2, |h, m| arcs.push((h, m)));
/// assert_eq!(arcs, [(0, 1), (0, 2), (1, 2), (2, 1)]);
/// ```
#[inline]
pub fn for_each_arc(n: usize, mut f: impl FnMut(usize, usize)) {
    for h in 0..=n {
        // Two plain ranges around the diagonal: no branch in the inner loops.
        for m in 1..h {
            f(h, m);
        }
        for m in h + 1..=n {
            f(h, m);
        }
    }
}

/// A borrowed, validated view of the arc scores of one sentence.
///
/// # Example
/// ```
/// use omkl_core::decode::arcs::ArcScores;
/// // n = 2 words: 0 → 1 scores 1, 1 → 2 scores 2, 0 → 2 scores 0.5.
/// let s = [0.0, 1.0, 0.5,
///          0.0, 0.0, 2.0,
///          0.0, 0.3, 0.0];
/// let a = ArcScores::new(&s, 2).unwrap();
/// assert_eq!(a.score_of(&[0, 0, 1]).unwrap(), 3.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ArcScores<'a> {
    /// Arc scores, `(n+1) × (n+1)`, `s[h * (n+1) + m]`.
    pub s: &'a [f64],
    /// Number of words (nodes other than the root), at least 1.
    pub n: usize,
}

impl<'a> ArcScores<'a> {
    /// Checks that `n ≥ 1`, that `s` has `(n+1)²` elements, and that every
    /// arc score that is used (`h ≠ m`, `m ≥ 1`) is finite.
    ///
    /// # Complexity
    /// O(n²).
    pub fn new(s: &'a [f64], n: usize) -> Result<Self> {
        if n == 0 {
            return Err(OmklError::empty("scores (n = 0 words)"));
        }
        let side = n + 1;
        check_table("scores", s.len(), &[side, side], "(n+1)^2")?;
        if n >= u32::MAX as usize {
            return Err(OmklError::invalid("scores", "more than 2^32 - 2 words"));
        }
        // Row h holds the arcs h -> 1..h and h -> h+1..=n around its unused
        // entries (column 0 and the diagonal).
        let finite = s
            .chunks_exact(side)
            .enumerate()
            .all(|(h, row)| all_finite(&row[1..h.max(1)]) && all_finite(&row[h + 1..]));
        if finite {
            return Ok(ArcScores { s, n });
        }
        // Error path only: name the first bad arc in row-major order.
        let mut bad = None;
        for_each_arc(n, |h, m| {
            if !s[h * side + m].is_finite() && bad.is_none() {
                bad = Some((h, m));
            }
        });
        let (h, m) = bad.unwrap_or((0, 1));
        Err(OmklError::NonFinite {
            name: format!("scores (arc {h} -> {m})"),
            index: h * side + m,
            value: s[h * side + m],
        })
    }

    /// The score of arc `h → m`.
    #[inline]
    pub fn arc(&self, h: usize, m: usize) -> f64 {
        self.s[h * (self.n + 1) + m]
    }

    /// Checks that `heads` (length `n+1`) is a tree rooted at 0: every word
    /// has a head in `0..=n` other than itself and following heads from any
    /// word reaches the root.
    ///
    /// # Complexity
    /// O(n).
    pub fn check_tree(&self, name: &str, heads: &[usize]) -> Result<()> {
        let n = self.n;
        check_count(
            name,
            heads.len(),
            n + 1,
            "heads",
            " (n + 1, heads[0] unused)",
        )?;
        for (m, &h) in heads.iter().enumerate().skip(1) {
            if h > n || h == m {
                return Err(OmklError::invalid(
                    name,
                    format!("head {h} of word {m} is not in 0..={n} or is the word itself"),
                ));
            }
        }
        // 0 = unseen, 1 = on the current walk, 2 = reaches the root.
        let mut state = vec![0u8; n + 1];
        state[0] = 2;
        for start in 1..=n {
            let mut v = start;
            while state[v] == 0 {
                state[v] = 1;
                v = heads[v];
            }
            if state[v] == 1 {
                return Err(OmklError::invalid(
                    name,
                    format!("heads contain a cycle through word {v}"),
                ));
            }
            let mut v = start;
            while state[v] == 1 {
                state[v] = 2;
                v = heads[v];
            }
        }
        Ok(())
    }

    /// The total score of the tree `heads` (checked with
    /// [`ArcScores::check_tree`]).
    pub fn score_of(&self, heads: &[usize]) -> Result<f64> {
        self.check_tree("heads", heads)?;
        Ok(self.score_of_unchecked(heads))
    }

    /// [`ArcScores::score_of`] without the tree check.
    pub fn score_of_unchecked(&self, heads: &[usize]) -> f64 {
        (1..=self.n).map(|m| self.arc(heads[m], m)).sum()
    }

    /// Checks gold heads for loss-augmented decoding: `n+1` entries, each
    /// word's head in `0..=n`. Gold heads need not form a tree.
    pub fn check_gold(&self, gold: &[usize]) -> Result<()> {
        let n = self.n;
        check_count(
            "gold",
            gold.len(),
            n + 1,
            "heads",
            " (n + 1, gold[0] unused)",
        )?;
        if let Some((m, &h)) = gold.iter().enumerate().skip(1).find(|(_, &h)| h > n) {
            return Err(OmklError::invalid(
                "gold",
                format!("head {h} of word {m} is not in 0..={n}"),
            ));
        }
        Ok(())
    }

    /// Checks an output buffer of heads: `n+1` entries.
    pub fn check_heads_out(&self, heads: &[usize]) -> Result<()> {
        check_count("heads", heads.len(), self.n + 1, "elements", " (n + 1)")
    }

    /// The arc scores of loss-augmented decoding, `s[h, m] + cost` unless
    /// `gold[m] == h` (Hamming cost on heads), after checking `gold`
    /// ([`ArcScores::check_gold`]) and `cost ≥ 0`.
    pub fn hamming<'g>(
        &'g self,
        gold: &'g [usize],
        cost: f64,
    ) -> Result<impl Fn(usize, usize) -> f64 + Copy + 'g> {
        self.check_gold(gold)?;
        check_nonneg("cost", cost)?;
        Ok(move |h: usize, m: usize| self.arc(h, m) + if gold[m] == h { 0.0 } else { cost })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let mut s = vec![0.0; 9];
        s[0] = f64::NAN; // ignored: arc into the root
        s[4] = f64::NEG_INFINITY; // ignored: self-loop
        let a = ArcScores::new(&s, 2).unwrap();
        assert!(a.check_tree("h", &[0, 2, 1]).is_err());
        assert!(a.check_tree("h", &[0, 1, 0]).is_err());
        assert!(a.check_tree("h", &[0, 0]).is_err());
        assert!(a.check_tree("h", &[0, 2, 0]).is_ok());
        s[1] = f64::NAN;
        assert!(ArcScores::new(&s, 2).is_err());
        assert!(ArcScores::new(&s[..4], 2).is_err());
        assert!(ArcScores::new(&[0.0], 0).is_err());
    }

    #[test]
    fn every_used_arc_is_checked_and_no_other_entry() {
        let n = 34; // rows longer than the 32 lanes of `all_finite`
        let side = n + 1;
        for p in 0..side * side {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut s = vec![1e300; side * side];
                s[p] = bad;
                let (h, m) = (p / side, p % side);
                match ArcScores::new(&s, n) {
                    Ok(_) => assert!(m == 0 || h == m, "{h} -> {m}"),
                    Err(OmklError::NonFinite { index, name, .. }) => {
                        assert!(m != 0 && h != m);
                        assert_eq!((index, name), (p, format!("scores (arc {h} -> {m})")));
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
}
