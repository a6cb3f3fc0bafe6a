//! Arc scoring of the parser: the weight tables as prediction or training
//! uses them and the score matrix `s[h * n1 + m]` of a sentence, template
//! by template, with or without the arcs a pruner kept.
//!
//! # Complexity
//! One sentence of `n` words costs `O(n² T)` feature look-ups.

use crate::error::{try_vec, Result};
use crate::features::arc_templates::ArcFeaturizer;
use crate::model::parser_slots::SlotLists;
use crate::model::parser_state::{ArcParser, KeptArcs, PRUNED_SCORE};

/// Sentences with more arcs than this (`n1² > CHUNK_ARCS`) are scored a
/// band of modifiers at a time ([`modifier_bands`]).
pub(super) const CHUNK_ARCS: usize = 1 << 16;

/// Budget of one band of modifiers, in arcs plus the words between their
/// heads and modifiers (what the slot lists grow with).
const BAND_COST: usize = 1 << 18;

/// Consecutive ranges of the modifiers `1..n1` whose arcs `h -> m` cost
/// `1 + |h − m|` each (the arc and the words between) and about
/// [`BAND_COST`] per range (at least one modifier per range).
fn modifier_bands(n1: usize) -> Vec<std::ops::Range<usize>> {
    // Σ_{h ≠ m} (1 + |h − m|) over the heads 0..n1
    let cost = |m: usize| (n1 - 1) + m * (m + 1) / 2 + (n1 - 1 - m) * (n1 - m) / 2;
    let mut bands = Vec::new();
    let (mut start, mut acc) = (1, 0);
    for m in 1..n1 {
        if acc > 0 && acc + cost(m) > BAND_COST {
            bands.push(start..m);
            (start, acc) = (m, 0);
        }
        acc += cost(m);
    }
    bands.push(start..n1);
    bands
}

impl ArcParser {
    /// Scores of all arcs (averaged parameters when available), or
    /// [`OmklError::Alloc`](crate::error::OmklError::Alloc) if the score
    /// matrix does not fit in memory.
    pub fn arc_scores(&self, fz: &ArcFeaturizer) -> Result<Vec<f64>> {
        self.scores_with(fz, None)
    }

    pub(super) fn scores_with(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
    ) -> Result<Vec<f64>> {
        self.scores_checked(fz, kept, &self.prediction_tables())
    }

    /// `(scale, table)` of every template with the current weights.
    pub(super) fn current_tables(&self) -> Vec<(f64, &[f32])> {
        (0..self.templates.len())
            .map(|t| self.weights.raw(t))
            .collect()
    }

    /// `(scale, table)` of every template as prediction uses them: the
    /// averaged tables (scale 0 for templates whose average is all zero)
    /// when available, else the current weights.
    pub(super) fn prediction_tables(&self) -> Vec<(f64, &[f32])> {
        let Some(flat) = &self.averaged else {
            return self.current_tables();
        };
        let off = self.weights.offsets();
        (0..self.templates.len())
            .map(|t| {
                let live = self.live.as_ref().is_none_or(|l| l[t]);
                (if live { 1.0 } else { 0.0 }, &flat[off[t]..off[t + 1]])
            })
            .collect()
    }

    /// [`ArcParser::scores_checked`] for callers that cannot fail: an
    /// allocation failure ends the process, as for any `Vec`.
    pub(super) fn scores_by_template(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
        tabs: &[(f64, &[f32])],
    ) -> Vec<f64> {
        self.scores_checked(fz, kept, tabs)
            .unwrap_or_else(|_| abort_alloc(fz.len_with_root()))
    }

    /// Arc scores `s[h * n1 + m]`, template by template (one table hot in
    /// cache at a time), with `tabs[t] = (scale, table)` of template `t`;
    /// templates with scale 0 are skipped, and so are the inert templates
    /// ([`Template::is_inert`](crate::features::arc_templates::Template::is_inert)), whose weights stay zero. With `kept`, only
    /// the kept arcs are scored and a pruned arc scores [`PRUNED_SCORE`]
    /// plus its first-pass score. The slot lists are built for bands of
    /// modifiers ([`modifier_bands`]), so the memory beyond the
    /// `n1 × n1` scores stays bounded however long the sentence; errors with
    /// [`OmklError::Alloc`](crate::error::OmklError::Alloc) if that does not
    /// fit.
    pub(super) fn scores_checked(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
        tabs: &[(f64, &[f32])],
    ) -> Result<Vec<f64>> {
        let n1 = fz.len_with_root();
        let mut s = initial_scores(kept, n1)?;
        for mods in modifier_bands(n1) {
            let lists = self.lists(fz, kept, tabs, mods, &mut s)?;
            lists.add_scores(&mut s, |t| tabs[t]);
        }
        close_scores(&mut s, n1);
        Ok(s)
    }

    /// The slot lists of the arcs into `mods` to score (templates with scale
    /// 0 in `tabs` skipped), after setting their entries of `s` to 0.
    fn lists(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
        tabs: &[(f64, &[f32])],
        mods: std::ops::Range<usize>,
        s: &mut [f64],
    ) -> Result<SlotLists> {
        let keep = kept.map(|k| &k.keep[..]);
        let lists = SlotLists::build_range(fz, &self.templates, keep, |t| tabs[t].0 == 0.0, mods)?;
        let n1 = fz.len_with_root();
        for &(h, m) in lists.arcs() {
            s[h as usize * n1 + m as usize] = 0.0;
        }
        Ok(lists)
    }

    /// The slot lists of the arcs to score (templates with scale 0 in
    /// `tabs` skipped) and the score matrix before their scores are added:
    /// 0 for listed arcs, [`PRUNED_SCORE`] plus the first-pass score for
    /// pruned ones.
    pub(super) fn unscored(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
        tabs: &[(f64, &[f32])],
    ) -> Result<(SlotLists, Vec<f64>)> {
        let n1 = fz.len_with_root();
        let mut s = initial_scores(kept, n1)?;
        let lists = self.lists(fz, kept, tabs, 1..n1, &mut s)?;
        Ok((lists, s))
    }
}

/// The score matrix before the model's scores are added: 0 without a
/// pruner, else [`PRUNED_SCORE`] plus the first-pass score (the kept arcs
/// are set to 0 when their lists are built).
fn initial_scores(kept: Option<&KeptArcs>, n1: usize) -> Result<Vec<f64>> {
    match kept {
        Some(k) => {
            let mut s = try_vec("arc scores", &[k.first_pass.len()], 0.0)?;
            for (x, &f) in s.iter_mut().zip(&k.first_pass) {
                *x = PRUNED_SCORE + f;
            }
            Ok(s)
        }
        None => try_vec("arc scores", &[n1, n1], 0.0),
    }
}

/// Ends the process on an allocation failure for a sentence of `n1 - 1`
/// words, as an infallible `Vec` does, for callers that cannot fail.
pub(super) fn abort_alloc(n1: usize) -> ! {
    let layout = std::alloc::Layout::array::<f64>(n1.saturating_mul(n1))
        .unwrap_or(std::alloc::Layout::new::<f64>());
    std::alloc::handle_alloc_error(layout)
}

/// Closes a score matrix for decoding: no arc into the root, no self-loop.
pub(super) fn close_scores(s: &mut [f64], n1: usize) {
    for i in 0..n1 {
        s[i * n1 + i] = f64::NEG_INFINITY;
        s[i * n1] = f64::NEG_INFINITY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifier_bands_cover_the_modifiers_within_the_budget() {
        for n1 in [2, 3, 50, 257, 1201, 3000] {
            let bands = modifier_bands(n1);
            assert_eq!(bands.first().unwrap().start, 1);
            assert_eq!(bands.last().unwrap().end, n1);
            for (a, b) in bands.iter().zip(&bands[1..]) {
                assert_eq!(a.end, b.start);
            }
            for band in &bands {
                assert!(!band.is_empty());
                // brute-force cost of the band's arcs
                let cost: usize = band
                    .clone()
                    .flat_map(|m| {
                        (0..n1)
                            .filter(move |&h| h != m)
                            .map(move |h| 1 + h.abs_diff(m))
                    })
                    .sum();
                assert!(
                    band.len() == 1 || cost <= BAND_COST,
                    "{n1}: {band:?} costs {cost}"
                );
            }
        }
    }
}
