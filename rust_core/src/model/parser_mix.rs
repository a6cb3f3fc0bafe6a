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
use crate::learner::mix::{
    check_blocks, export_blocks, import_blocks, take, take_count, Array, Params,
};
use crate::learner::weights::{Real, ScaledBlock};
use crate::model::parser_input::ParserInput;
use crate::model::parser_labels::ArcLabeler;
use crate::model::parser_state::ArcParser;
use crate::model::template_weights::TemplateWeights;

impl ArcParser {
    fn export_own(&self, prefix: &str, sums: bool, out: &mut Params) {
        if self.weights.is_allocated() {
            export_blocks(&self.weights.blocks, sums, prefix, out);
        } else {
            // a parser that never learned: its zero tables, laid out alike
            let n = self.weights.n_slots();
            out.insert(format!("{prefix}weights"), Array::F32(vec![0.0; n]));
            if sums {
                out.insert(format!("{prefix}sums"), Array::F32(vec![0.0; n]));
            }
        }
        let steps = vec![self.weights.steps as f64];
        out.insert(format!("{prefix}steps"), Array::F64(steps));
    }

    fn check_own(&self, prefix: &str, p: &Params) -> Result<u64> {
        check_blocks(&self.weights.blocks, true, prefix, p)?;
        take_count(p, &format!("{prefix}steps"))
    }

    /// Whether importing a stage with `steps` steps ends an epoch.
    fn import_ends_epoch(&self, steps: u64) -> bool {
        steps > 0 && steps != self.weights.steps
    }

    /// The averaged table that ending the epoch of an import with `steps`
    /// steps needs, zeroed, when the parser has none of the right size to
    /// rewrite (`None` otherwise), so that the import itself allocates
    /// nothing large. Fails with [`OmklError::Alloc`] (nothing changed).
    fn table_for_import(&self, steps: u64) -> Result<Option<Vec<f32>>> {
        let n = self.weights.n_slots();
        let reusable = self.averaged.as_ref().is_some_and(|a| a.len() == n);
        if self.import_ends_epoch(steps) && !reusable {
            return crate::model::template_weights::zeroed_table(n).map(Some);
        }
        Ok(None)
    }

    /// Imports a checked stage; `table` is [`ArcParser::table_for_import`]'s.
    fn import_own(
        &mut self,
        prefix: &str,
        p: &Params,
        steps: u64,
        table: Option<Vec<f32>>,
    ) -> Result<()> {
        let ends = self.import_ends_epoch(steps);
        import_blocks(&mut self.weights.blocks, true, prefix, p)?;
        self.weights.steps = steps;
        if ends {
            if table.is_some() {
                self.averaged = table;
            }
            self.end_epoch()?;
        }
        Ok(())
    }

    /// The learnable state of the arc model (`arc/…`) and of the pruner
    /// (`pruner/…`, when there is one).
    pub fn export_params(&self) -> Params {
        let mut out = Params::new();
        self.export_own("arc/", true, &mut out);
        if let Some(p) = &self.pruner {
            p.model.export_own("pruner/", true, &mut out);
        }
        out
    }

    /// Sets the state exported by [`ArcParser::export_params`] from a parser
    /// with the same templates, table sizes and pruner. Everything is
    /// checked first: on error nothing changes.
    pub fn import_params(&mut self, p: &Params) -> Result<()> {
        self.ready()?;
        let steps = self.check_own("arc/", p)?;
        let pruner_steps = match &self.pruner {
            Some(pr) => Some(pr.model.check_own("pruner/", p)?),
            None => None,
        };
        // the averaged tables first: after them nothing can fail
        let table = self.table_for_import(steps)?;
        let pruner_table = match (&self.pruner, pruner_steps) {
            (Some(pr), Some(s)) => pr.model.table_for_import(s)?,
            _ => None,
        };
        self.import_own("arc/", p, steps, table)?;
        if let (Some(pr), Some(s)) = (self.pruner.as_deref_mut(), pruner_steps) {
            pr.model.import_own("pruner/", p, s, pruner_table)?;
        }
        Ok(())
    }

    /// The state of one stage, `"arc"` or `"pruner"` (when there is one):
    /// `{stage}/weights` and `{stage}/steps`, and `{stage}/sums` when
    /// `sums` (the arrays of [`ArcParser::export_params`] of that stage).
    pub fn export_stage(&self, stage: &str, sums: bool) -> Result<Params> {
        let model = match stage {
            "arc" => self,
            "pruner" => match &self.pruner {
                Some(p) => &p.model,
                None => return Err(OmklError::invalid("stage", "the parser has no pruner")),
            },
            _ => {
                return Err(OmklError::invalid(
                    "stage",
                    format!("expected \"arc\" or \"pruner\", got {stage:?}"),
                ))
            }
        };
        let mut out = Params::new();
        model.export_own(&format!("{stage}/"), sums, &mut out);
        Ok(out)
    }

    /// Sets the stages whose arrays `p` holds (`arc/…`, `pruner/…` or
    /// both, laid out as by [`ArcParser::export_params`]), for a model
    /// that goes on learning from them (a worker of iterative parameter
    /// mixing). Without `arc/sums`, the arc model keeps its own running
    /// sums (and takes the weights and step count); the arc model's
    /// averaged parameters are dropped, not recomputed (until the next
    /// [`ArcParser::end_epoch`]). An imported pruner with steps ends its
    /// epoch (so that it is trained and prunes, whatever its step count
    /// was). Everything is checked first: on error
    /// nothing changes.
    ///
    /// # Complexity
    /// O(slots of the imported stages).
    pub fn import_stages(&mut self, p: &Params) -> Result<()> {
        self.ready()?;
        let arc = if p.contains_key("arc/weights") {
            let n = self.weights.n_slots();
            take::<f32>(p, "arc/weights", n)?;
            if p.contains_key("arc/sums") {
                take::<f32>(p, "arc/sums", n)?;
            }
            Some(take_count(p, "arc/steps")?)
        } else {
            None
        };
        let pruner_steps = match (&self.pruner, p.contains_key("pruner/weights")) {
            (Some(pr), true) => Some(pr.model.check_own("pruner/", p)?),
            (None, true) => {
                return Err(OmklError::invalid(
                    "params",
                    "holds a pruner's arrays, but the parser has no pruner",
                ))
            }
            _ => None,
        };
        if let Some(steps) = arc {
            if p.contains_key("arc/sums") {
                import_blocks(&mut self.weights.blocks, true, "arc/", p)?;
            } else {
                let w = take::<f32>(p, "arc/weights", self.weights.n_slots())?;
                import_keeping_sums(&mut self.weights.blocks, w);
            }
            self.weights.steps = steps;
            self.averaged = None;
            self.live = None;
        }
        if let (Some(pr), Some(s)) = (self.pruner.as_deref_mut(), pruner_steps) {
            import_blocks(&mut pr.model.weights.blocks, true, "pruner/", p)?;
            pr.model.weights.steps = s;
            if s > 0 {
                pr.model.end_epoch()?;
            }
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
        self.check_learnable()?;
        for (tpl, &b) in Arc::make_mut(&mut self.templates).iter_mut().zip(bits) {
            tpl.bits = b;
        }
        let sizes: Vec<usize> = self.templates.iter().map(|t| t.table_size()).collect();
        self.weights = TemplateWeights::unallocated(&sizes);
        self.averaged = None;
        self.live = None;
        Ok(())
    }
}

/// Sets the weights of `blocks` to `w` (materialised, block after block)
/// and keeps their running sums: each block gets scale 1, raw values `w`,
/// `P = 0` and `b = −Σ` for its materialised sums `Σ`, and its squared norm
/// recomputed from `w`.
fn import_keeping_sums(blocks: &mut [ScaledBlock<f32>], w: &[f32]) {
    let mut at = 0;
    for blk in blocks {
        let len = blk.len();
        let p = blk.average_parts().1;
        let (a, b) = blk.parts_mut();
        let mut q = 0.0;
        for ((av, bv), &wv) in a.iter_mut().zip(b.iter_mut()).zip(&w[at..at + len]) {
            *bv = -((av.to_f64() * p - bv.to_f64()) as f32);
            *av = wv;
            q += wv as f64 * wv as f64;
        }
        blk.restore((1.0, q, 0.0), &[], &[], &[], None);
        at += len;
    }
}

impl ArcLabeler {
    /// The label stage's learnable state, under `label/` (see
    /// [`crate::learner::named::NamedLearner::export_params`]).
    pub fn export_params(&self) -> Result<Params> {
        self.check_learnable()?;
        Ok(self.learner.export_params("label/"))
    }

    /// Sets the state exported by [`ArcLabeler::export_params`] from a
    /// labeler with the same labels; on error nothing changes.
    pub fn import_params(&mut self, p: &Params) -> Result<()> {
        self.check_learnable()?;
        self.learner.import_params(p, "label/")
    }

    /// Appends the labels of `labels` that are not known yet (in order) and
    /// gives the classifier its one feature group and an output per label,
    /// so that labelers which will be mixed share their layout.
    pub fn register_labels(&mut self, labels: &[String]) -> Result<()> {
        self.check_learnable()?;
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

    /// The toy data, the parser trained on it (with a pruner of 2), and the
    /// same parser after one more pass (another model, its epoch open).
    fn toy_and_one_more_pass() -> (Vec<(ParserInput, Vec<usize>)>, ArcParser, ArcParser) {
        let (data, a) = trained_toy(Some(2));
        let mut b = a.clone();
        for (s, h) in &data {
            b.learn_one(s, h).unwrap();
        }
        (data, a, b)
    }

    #[test]
    fn an_import_rewrites_the_averaged_tables_in_place() {
        let (data, a, mut b) = toy_and_one_more_pass();
        b.end_epoch().unwrap();
        let table = |p: &ArcParser| p.averaged().map(<[f32]>::as_ptr);
        let arc = table(&b);
        assert!(arc.is_some());
        b.import_params(&a.export_params()).unwrap();
        // the same table, holding the imported model's averages
        assert_eq!(table(&b), arc);
        assert_eq!(b.averaged(), a.averaged());
        for (s, _) in &data {
            assert_eq!(b.predict(s).unwrap(), a.predict(s).unwrap());
        }
        // a parser without tables gets new ones
        let mut c = ArcParser::new(ParserConfig::default()).unwrap();
        c.set_pruner(2).unwrap();
        assert!(table(&c).is_none());
        c.import_params(&a.export_params()).unwrap();
        assert_eq!(c.averaged(), a.averaged());
    }

    #[test]
    fn importing_stages_sets_their_arrays_and_can_keep_the_running_sums() {
        let (_, a, mut b) = toy_and_one_more_pass();
        let before = b.export_params();
        assert_ne!(before["arc/weights"], a.export_params()["arc/weights"]);
        // the arc model's weights and steps only: its sums stay
        let mut part = a.export_stage("arc", false).unwrap();
        assert!(!part.contains_key("arc/sums"));
        part.insert("arc/steps".into(), Array::F64(vec![7.0]));
        b.import_stages(&part).unwrap();
        let after = b.export_params();
        assert_eq!(after["arc/weights"], a.export_params()["arc/weights"]);
        assert_eq!(after["arc/sums"], before["arc/sums"]);
        assert_eq!(after["arc/steps"], Array::F64(vec![7.0]));
        assert_eq!(after["pruner/weights"], before["pruner/weights"]);
        // both stages with their sums: as import_params
        let mut full = a.export_stage("arc", true).unwrap();
        full.extend(a.export_stage("pruner", true).unwrap());
        assert_eq!(full, a.export_params());
        b.import_stages(&full).unwrap();
        assert_eq!(b.export_params(), a.export_params());
        // a bad array changes nothing
        let mut bad = a.export_stage("arc", false).unwrap();
        bad.insert("arc/weights".into(), Array::F32(vec![0.0; 3]));
        let keep = b.export_params();
        assert!(b.import_stages(&bad).is_err());
        assert_eq!(b.export_params(), keep);
        assert!(a.export_stage("label", false).is_err());
    }
}
