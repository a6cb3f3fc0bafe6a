//! The parser's parameters as named flat arrays (see
//! [`crate::learner::mix`]), and the state outside them (table sizes,
//! relation labels) set from counts gathered over several corpora.
//!
//! [`ArcParser::export_params`] writes `arc/weights`, `arc/sums` (the
//! template tables and their running sums, template after template, as
//! `f32`) and `arc/steps`, and the same under `pruner/` for the first-pass
//! pruner. [`ArcParser::import_params`] sets them; a model whose step count
//! changes ends an epoch (its averaged parameters and β are recomputed, and
//! an imported pruner with steps counts as trained).

use std::sync::Arc;

use crate::error::{OmklError, Result};
use crate::features::arc_templates::{bits_for, distinct_keys, WordAtoms};
use crate::learner::mix::{check_blocks, export_blocks, import_blocks, take_count, Array, Params};
use crate::model::parser_input::ParserInput;
use crate::model::parser_labels::ArcLabeler;
use crate::model::parser_state::ArcParser;
use crate::model::template_weights::TemplateWeights;

impl ArcParser {
    fn export_own(&self, prefix: &str, out: &mut Params) {
        export_blocks(&self.weights.blocks, true, prefix, out);
        let steps = vec![self.weights.steps as f64];
        out.insert(format!("{prefix}steps"), Array::F64(steps));
    }

    fn check_own(&self, prefix: &str, p: &Params) -> Result<u64> {
        check_blocks(&self.weights.blocks, true, prefix, p)?;
        take_count(p, &format!("{prefix}steps"))
    }

    fn import_own(&mut self, prefix: &str, p: &Params, steps: u64) -> Result<()> {
        import_blocks(&mut self.weights.blocks, true, prefix, p)?;
        let old = std::mem::replace(&mut self.weights.steps, steps);
        if steps > 0 && steps != old {
            self.end_epoch();
        }
        Ok(())
    }

    /// The learnable state of the arc model (`arc/…`) and of the pruner
    /// (`pruner/…`, when there is one).
    pub fn export_params(&self) -> Params {
        let mut out = Params::new();
        self.export_own("arc/", &mut out);
        if let Some(p) = &self.pruner {
            p.model.export_own("pruner/", &mut out);
        }
        out
    }

    /// Sets the state exported by [`ArcParser::export_params`] from a parser
    /// with the same templates, table sizes and pruner. Everything is
    /// checked first: on error nothing changes.
    pub fn import_params(&mut self, p: &Params) -> Result<()> {
        let steps = self.check_own("arc/", p)?;
        let pruner_steps = match &self.pruner {
            Some(pr) => Some(pr.model.check_own("pruner/", p)?),
            None => None,
        };
        self.import_own("arc/", p, steps)?;
        if let (Some(pr), Some(s)) = (self.pruner.as_deref_mut(), pruner_steps) {
            pr.model.import_own("pruner/", p, s)?;
        }
        Ok(())
    }

    /// The number of distinct features of each template on the gold arcs
    /// of `sents` (summed over corpora, an upper bound of the count on
    /// their union, for [`ArcParser::set_table_counts`]).
    pub fn template_key_counts(&self, sents: &[(&ParserInput, Vec<usize>)]) -> Vec<usize> {
        let data: Vec<(&[WordAtoms], &[usize])> = sents
            .iter()
            .map(|(s, h)| (s.words.as_slice(), h.as_slice()))
            .collect();
        distinct_keys(&self.templates, &data)
    }

    /// Sizes every template's table for `counts[t]` distinct features, as
    /// [`ArcParser::fit_table_sizes`] does from a corpus (only before the
    /// first step).
    pub fn set_table_counts(
        &mut self,
        counts: &[usize],
        slots_per_feature: f64,
        max_bits: u32,
    ) -> Result<()> {
        crate::error::check_positive("slots_per_feature", slots_per_feature)?;
        if counts.len() != self.templates.len() {
            return Err(OmklError::shape(
                "counts",
                format!("one per template ({})", self.templates.len()),
                counts.len().to_string(),
            ));
        }
        if self.weights.steps > 0 {
            return Err(OmklError::invalid(
                "table sizes",
                "can only be fitted before the first training step",
            ));
        }
        let bits: Vec<u32> = counts
            .iter()
            .map(|&n| bits_for(n, slots_per_feature, max_bits))
            .collect();
        self.set_table_bits(&bits)
    }

    /// Gives template `t` a table of `2^bits[t]` zero slots (one value per
    /// template; only before the first step).
    pub(crate) fn set_table_bits(&mut self, bits: &[u32]) -> Result<()> {
        for (tpl, &b) in Arc::make_mut(&mut self.templates).iter_mut().zip(bits) {
            tpl.bits = b;
        }
        let sizes: Vec<usize> = self.templates.iter().map(|t| t.table_size()).collect();
        self.weights = TemplateWeights::new(&sizes);
        self.averaged = None;
        self.live = None;
        Ok(())
    }
}

impl ArcLabeler {
    /// The label stage's learnable state, under `label/` (see
    /// [`crate::learner::named::NamedLearner::export_params`]).
    pub fn export_params(&self) -> Params {
        self.learner.export_params("label/")
    }

    /// Sets the state exported by [`ArcLabeler::export_params`] from a
    /// labeler with the same labels; on error nothing changes.
    pub fn import_params(&mut self, p: &Params) -> Result<()> {
        self.learner.import_params(p, "label/")
    }

    /// Appends the labels of `labels` that are not known yet (in order) and
    /// gives the classifier its one feature group and an output per label,
    /// so that labelers which will be mixed share their layout.
    pub fn register_labels(&mut self, labels: &[String]) -> Result<()> {
        let mut all = self.labels.clone();
        for l in labels {
            if l.is_empty() || l == "_" {
                return Err(OmklError::invalid(
                    "labels",
                    format!("expected relation names, got {l:?}"),
                ));
            }
            if !all.contains(l) {
                all.push(l.clone());
            }
        }
        self.learner.register(&["arc"], all.len().max(1))?;
        self.labels = all;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parser_input::ParserConfig;
    use crate::model::parser_toy::trained_toy;

    #[test]
    fn export_then_import_gives_the_same_parameters_and_parses() {
        let (data, a) = trained_toy(Some(2));
        let mut b = ArcParser::new(ParserConfig::default()).unwrap();
        b.set_pruner(2).unwrap();
        b.import_params(&a.export_params()).unwrap();
        assert_eq!(b.export_params(), a.export_params());
        for (s, _) in &data {
            assert_eq!(b.predict(s).unwrap(), a.predict(s).unwrap());
        }
        let mut bad = a.export_params();
        bad.insert("arc/steps".into(), Array::F64(vec![-1.0]));
        let before = b.export_params();
        assert!(b
            .import_params(&bad)
            .unwrap_err()
            .to_string()
            .contains("arc/steps"));
        assert_eq!(b.export_params(), before);
    }
}
