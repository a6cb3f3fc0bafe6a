//! Validated score tables of a linear chain (the input of Viterbi and
//! forward-backward).
//!
//! # Layout
//! All tables are row-major `f64` slices:
//!
//! * emissions `em`: `n × L`, the score of label `y` at position `i` is
//!   `em[i * L + y]`;
//! * transitions `tr`: `L × L`, the score of label `prev` followed by `next`
//!   is `tr[prev * L + next]`;
//! * optional `start` and `stop`: `L`, added for the first and last label.
//!
//! The score of a labelling `y` of length `n` is
//! `start[y₀] + Σᵢ em[i, yᵢ] + Σᵢ₌₁ tr[yᵢ₋₁, yᵢ] + stop[yₙ₋₁]`.

use crate::error::{check_count, check_finite, check_table, OmklError, Result};

/// A borrowed, validated view of the scores of one chain.
///
/// Build it with [`ChainScores::new`], which checks shapes and finiteness once,
/// so that decoders can run without further checks.
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// let em = [1.0, 0.0, 0.0, 1.0]; // n = 2, L = 2
/// let tr = [0.0, -1.0, -1.0, 0.0];
/// let s = ChainScores::new(&em, &tr, None, None, 2, 2).unwrap();
/// assert_eq!(s.score_of(&[0, 1]).unwrap(), 1.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ChainScores<'a> {
    /// Emissions, `n × L`.
    pub em: &'a [f64],
    /// Transitions, `L × L`.
    pub tr: &'a [f64],
    /// Optional start scores, `L`.
    pub start: Option<&'a [f64]>,
    /// Optional stop scores, `L`.
    pub stop: Option<&'a [f64]>,
    /// Number of positions, at least 1.
    pub n: usize,
    /// Number of labels, at least 1.
    pub l: usize,
}

impl<'a> ChainScores<'a> {
    /// Checks the shapes (`em` has `n·L` elements, `tr` has `L·L`, `start` and
    /// `stop` have `L`), that `n ≥ 1` and `L ≥ 1`, and that every score is
    /// finite.
    ///
    /// # Complexity
    /// O(nL + L²).
    pub fn new(
        em: &'a [f64],
        tr: &'a [f64],
        start: Option<&'a [f64]>,
        stop: Option<&'a [f64]>,
        n: usize,
        l: usize,
    ) -> Result<Self> {
        Self::checked(em, tr, start, stop, n, l, true)
    }

    /// [`ChainScores::new`], which checks that `tr` is finite only when
    /// `check_tr`.
    fn checked(
        em: &'a [f64],
        tr: &'a [f64],
        start: Option<&'a [f64]>,
        stop: Option<&'a [f64]>,
        n: usize,
        l: usize,
        check_tr: bool,
    ) -> Result<Self> {
        if n == 0 {
            return Err(OmklError::empty("emissions (n = 0 positions)"));
        }
        if l == 0 {
            return Err(OmklError::empty("labels (L = 0)"));
        }
        check_table("emissions", em.len(), &[n, l], "n * L")?;
        check_table("transitions", tr.len(), &[l, l], "L * L")?;
        for (name, v) in [("start", start), ("stop", stop)] {
            if let Some(v) = v {
                check_count(name, v.len(), l, "elements", "")?;
                check_finite(name, v)?;
            }
        }
        let tr_checked: &[f64] = if check_tr { tr } else { &[] };
        for (name, v) in [("emissions", em), ("transitions", tr_checked)] {
            if !all_finite(v) {
                check_finite(name, v)?;
            }
        }
        Ok(ChainScores {
            em,
            tr,
            start,
            stop,
            n,
            l,
        })
    }

    /// [`ChainScores::new`] for transitions `tr` that the caller has
    /// checked to be finite: the rest is checked as there.
    pub(crate) fn with_finite_transitions(
        em: &'a [f64],
        tr: &'a [f64],
        start: Option<&'a [f64]>,
        stop: Option<&'a [f64]>,
        n: usize,
        l: usize,
    ) -> Result<Self> {
        Self::checked(em, tr, start, stop, n, l, false)
    }

    /// Checks that `labels` has `n` entries, each below `L`.
    pub fn check_labels(&self, name: &str, labels: &[usize]) -> Result<()> {
        check_count(name, labels.len(), self.n, "labels", "")?;
        if let Some((i, &y)) = labels.iter().enumerate().find(|(_, &y)| y >= self.l) {
            return Err(OmklError::invalid(
                name,
                format!("label {y} at position {i} is out of range 0..{}", self.l),
            ));
        }
        Ok(())
    }

    /// The score of the labelling `labels` (see the module docs).
    ///
    /// # Complexity
    /// O(n).
    pub fn score_of(&self, labels: &[usize]) -> Result<f64> {
        self.check_labels("labels", labels)?;
        Ok(self.score_of_unchecked(labels))
    }

    /// [`ChainScores::score_of`] without the label check.
    pub fn score_of_unchecked(&self, labels: &[usize]) -> f64 {
        let l = self.l;
        let mut s = 0.0;
        for (i, &y) in labels.iter().enumerate() {
            s += self.em[i * l + y];
            if i > 0 {
                s += self.tr[labels[i - 1] * l + y];
            }
        }
        if let Some(st) = self.start {
            s += st[labels[0]];
        }
        if let Some(st) = self.stop {
            s += st[labels[self.n - 1]];
        }
        s
    }
}

/// Whether every value is finite: `v · 0` is `0` for finite `v` and NaN
/// for infinities and NaN, summed over 32 independent lanes, then 8 for
/// the tail (vectorised, with AVX2 or AVX-512 when the CPU has it; no
/// early exit).
/// [`check_finite`] then names the first bad value.
///
/// # Complexity
/// O(len).
pub(crate) fn all_finite(v: &[f64]) -> bool {
    #[inline(always)]
    fn lanes(v: &[f64]) -> bool {
        let mut acc = [0.0f64; 32];
        let mut chunks = v.chunks_exact(32);
        for c in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x * 0.0;
            }
        }
        // short rows (a sentence's arc scores) mostly end here
        let mut tail = chunks.remainder().chunks_exact(8);
        for c in &mut tail {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x * 0.0;
            }
        }
        let rest: f64 = tail.remainder().iter().map(|&x| x * 0.0).sum();
        acc.iter().sum::<f64>() + rest == 0.0
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn lanes_avx512(v: &[f64]) -> bool {
        lanes(v)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn lanes_avx2(v: &[f64]) -> bool {
        lanes(v)
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F, checked just above.
        return unsafe { lanes_avx512(v) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { lanes_avx2(v) };
    }
    lanes(v)
}

/// The chain of 2 positions and 2 labels whose scores are all 0 (for the
/// decoders' tests of bad buffers and arguments).
#[cfg(test)]
pub(crate) fn zero_chain() -> ChainScores<'static> {
    ChainScores::new(&[0.0; 4], &[0.0; 4], None, None, 2, 2).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_finite_finds_every_bad_value_in_every_lane_and_the_tail() {
        for len in 0..100 {
            let v = vec![1e300; len];
            assert!(all_finite(&v));
            for p in 0..len {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut w = v.clone();
                    w[p] = bad;
                    assert!(!all_finite(&w), "len {len}, {bad} at {p}");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_shapes_and_values() {
        let em = [0.0; 6];
        let tr = [0.0; 9];
        assert!(ChainScores::new(&em, &tr, None, None, 2, 3).is_ok());
        assert!(ChainScores::new(&em, &tr, None, None, 3, 3).is_err());
        assert!(ChainScores::new(&em, &tr[..4], None, None, 2, 3).is_err());
        assert!(ChainScores::new(&[], &tr, None, None, 0, 3).is_err());
        assert!(ChainScores::new(&em, &tr, Some(&[0.0; 2]), None, 2, 3).is_err());
        let bad = [0.0, f64::NAN, 0.0, 0.0, 0.0, 0.0];
        let e = ChainScores::new(&bad, &tr, None, None, 2, 3).unwrap_err();
        assert!(e.to_string().contains("emissions"));
        for bad_value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for pos in [0, 7, 8, 18, 19] {
                let mut em = vec![1e300; 20];
                em[pos] = bad_value;
                let e = ChainScores::new(&em, &[0.0; 4], None, None, 10, 2).unwrap_err();
                assert!(e.to_string().contains("emissions"), "{e}");
            }
        }
        assert!(ChainScores::new(&[-1e308; 20], &[1e308; 4], None, None, 10, 2).is_ok());
        let s = ChainScores::new(&em, &tr, None, None, 2, 3).unwrap();
        assert!(s.check_labels("gold", &[0, 3]).is_err());
        assert!(s.check_labels("gold", &[0]).is_err());
    }
}
