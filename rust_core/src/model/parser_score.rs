//! Arc scoring of the parser: the weight tables as prediction or training
//! uses them and the score matrix `s[h * n1 + m]` of a sentence, template
//! by template, with or without the arcs a pruner kept.
//!
//! # Complexity
//! One sentence of `n` words costs `O(n² T)` feature look-ups.

use crate::features::arc_templates::ArcFeaturizer;
use crate::model::parser_slots::SlotLists;
use crate::model::parser_state::{ArcParser, KeptArcs, PRUNED_SCORE};

impl ArcParser {
    /// Scores of all arcs (averaged parameters when available).
    pub fn arc_scores(&self, fz: &ArcFeaturizer) -> Vec<f64> {
        self.scores_with(fz, None)
    }

    pub(super) fn scores_with(&self, fz: &ArcFeaturizer, kept: Option<&KeptArcs>) -> Vec<f64> {
        self.scores_by_template(fz, kept, &self.prediction_tables())
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

    /// Arc scores `s[h * n1 + m]`, template by template (one table hot in
    /// cache at a time), with `tabs[t] = (scale, table)` of template `t`;
    /// templates with scale 0 are skipped, and so are the inert templates
    /// ([`Template::is_inert`](crate::features::arc_templates::Template::is_inert)), whose weights stay zero. With `kept`, only
    /// the kept arcs are scored and a pruned arc scores [`PRUNED_SCORE`]
    /// plus its first-pass score.
    pub(super) fn scores_by_template(
        &self,
        fz: &ArcFeaturizer,
        kept: Option<&KeptArcs>,
        tabs: &[(f64, &[f32])],
    ) -> Vec<f64> {
        let (lists, mut s) = self.unscored(fz, kept, tabs);
        lists.add_scores(&mut s, |t| tabs[t]);
        close_scores(&mut s, fz.len_with_root());
        s
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
    ) -> (SlotLists, Vec<f64>) {
        let n1 = fz.len_with_root();
        let lists = SlotLists::build(fz, &self.templates, kept.map(|k| &k.keep[..]), |t| {
            tabs[t].0 == 0.0
        });
        let mut s = match kept {
            Some(k) => k.first_pass.iter().map(|&x| PRUNED_SCORE + x).collect(),
            None => vec![0.0f64; n1 * n1],
        };
        for &(h, m) in lists.arcs() {
            s[h as usize * n1 + m as usize] = 0.0;
        }
        (lists, s)
    }
}

/// Closes a score matrix for decoding: no arc into the root, no self-loop.
pub(super) fn close_scores(s: &mut [f64], n1: usize) {
    for i in 0..n1 {
        s[i * n1 + i] = f64::NEG_INFINITY;
        s[i * n1] = f64::NEG_INFINITY;
    }
}
