//! An arc-factored non-projective dependency parser trained online with a
//! structured hinge loss (Hamming cost on heads) and a group regulariser over
//! feature templates: `(λ/2)‖θ‖²` gives an SVM trained by Alg. 1, the squared
//! ℓ2,1 norm over templates `(λ/2)(Σ_t ‖θ_t‖)²` gives online MKL (Alg. 3),
//! whose proximal step zeroes whole templates.
//!
//! Each step: score all arcs, decode the loss-augmented tree, take a
//! subgradient step on the features of the gold and predicted arcs that
//! differ, then apply the regulariser's prox to the template norms (the
//! weights store one scale factor per template, so this costs `O(T)`).
//! Prediction uses the averaged parameters.
//!
//! # Complexity
//! One sentence of `n` words costs `O(n² T)` feature look-ups plus the
//! decoder (`O(n²)` to `O(n³)`).

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{check_positive, OmklError, Result};
use crate::features::arc_templates::{
    default_templates, fitted_bits, ArcFeaturizer, Template, WordAtoms, HASH_NAME, HASH_SEED,
    MAX_BITS, MIN_BITS,
};
use crate::model::parser_prune::{ArcPruner, KeptArcs, PRUNED_SCORE};
use crate::model::parser_slots::{ArcSlots, SlotLists};
use crate::model::template_weights::{zeroed_table, TemplateWeights};
use crate::persist::Reader;
use crate::prox::Regularizer;

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
        crate::model::parser_decode::decode_tree(self, scores, n1)
    }
}

/// A tree decoder: `(scores[h * n1 + m], n1) -> heads of words 1..n1`.
pub type DecodeFn<'a> = dyn FnMut(&[f64], usize) -> Result<Vec<usize>> + 'a;

/// Hyper-parameters of [`ArcParser`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParserConfig {
    /// Must act on group norms (`L2Squared`, `SquaredL21`, ...).
    pub regularizer: Regularizer,
    /// Learning rate η of each step (constant).
    pub eta: f64,
    pub decoder: TreeDecoder,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            regularizer: Regularizer::L2Squared { lam: 1e-6 },
            eta: 0.1,
            decoder: TreeDecoder::ChuLiuEdmonds,
        }
    }
}

/// Checks that `heads` (head of words 1..=n, 0 = root) is a tree rooted at 0.
pub fn check_tree(heads: &[usize], sentence_id: &str) -> Result<()> {
    let n = heads.len();
    if n == 0 {
        return Err(OmklError::invalid(
            "sentence",
            format!("sentence {sentence_id:?} is empty; expected at least one word"),
        ));
    }
    for (i, &h) in heads.iter().enumerate() {
        if h > n || h == i + 1 {
            return Err(OmklError::invalid(
                "heads",
                format!(
                    "sentence {sentence_id:?}: head {h} of word {} is out of range \
                     (expected 0..={n} and not the word itself)",
                    i + 1
                ),
            ));
        }
    }
    // every word must reach the root within n steps
    let mut state = vec![0u8; n + 1]; // 0 unknown, 1 on path, 2 reaches root
    state[0] = 2;
    for start in 1..=n {
        let mut path = Vec::new();
        let mut v = start;
        while state[v] == 0 {
            state[v] = 1;
            path.push(v);
            v = heads[v - 1];
        }
        if state[v] == 1 {
            return Err(OmklError::invalid(
                "heads",
                format!("sentence {sentence_id:?}: heads contain a cycle through word {v}"),
            ));
        }
        for p in path {
            state[p] = 2;
        }
    }
    Ok(())
}

/// Checks that `heads` has one head per word of `sent` and forms a tree.
fn check_gold(sent: &ParserInput, heads: &[usize]) -> Result<()> {
    if heads.len() != sent.words.len() {
        return Err(OmklError::shape(
            "heads",
            format!("{} heads for sentence {:?}", sent.words.len(), sent.id),
            heads.len().to_string(),
        ));
    }
    check_tree(heads, &sent.id)
}

/// The parser: templates, per-template weights and the β trajectory.
#[derive(Debug, Clone)]
pub struct ArcParser {
    pub config: ParserConfig,
    /// Shared with the featurisation of later sentences during training.
    templates: Arc<Vec<Template>>,
    /// Indices of `templates` in [`default_templates`].
    template_ids: Vec<usize>,
    weights: TemplateWeights,
    /// Averaged parameters (flattened), refreshed by [`ArcParser::finalize`].
    averaged: Option<Vec<f32>>,
    /// Templates whose averaged table is not all zero.
    live: Option<Vec<bool>>,
    /// β after each epoch.
    pub beta_trajectory: Vec<Vec<f64>>,
    /// First-pass arc pruner (scores only its kept arcs once it is trained).
    pruner: Option<Box<ArcPruner>>,
}

/// A sentence prepared for the parser.
#[derive(Debug, Clone)]
pub struct ParserInput {
    pub id: String,
    pub words: Vec<WordAtoms>,
}

impl ArcParser {
    /// A zero parser with all default templates.
    pub fn new(config: ParserConfig) -> Result<Self> {
        Self::with_templates(config, None)
    }

    /// A zero parser with the default templates of the given indices (all
    /// when `None`); indices must be distinct and in range.
    pub fn with_templates(config: ParserConfig, template_ids: Option<&[usize]>) -> Result<Self> {
        check_positive("eta", config.eta)?;
        let all = default_templates();
        let ids: Vec<usize> = match template_ids {
            None => (0..all.len()).collect(),
            Some(ids) => {
                let mut seen = vec![false; all.len()];
                for &i in ids {
                    if i >= all.len() || seen[i] {
                        return Err(OmklError::invalid(
                            "templates",
                            format!("expected distinct indices below {}, got {i}", all.len()),
                        ));
                    }
                    seen[i] = true;
                }
                ids.to_vec()
            }
        };
        if ids.is_empty() {
            return Err(OmklError::empty("templates"));
        }
        let templates: Vec<Template> = ids.iter().map(|&i| all[i].clone()).collect();
        config.regularizer.check(templates.len())?;
        if !config.regularizer.acts_on_group_norms() {
            return Err(OmklError::invalid(
                "regularizer",
                format!(
                    "expected a function of the template norms, got {:?}",
                    config.regularizer
                ),
            ));
        }
        let sizes: Vec<usize> = templates.iter().map(|t| t.table_size()).collect();
        Ok(ArcParser {
            config,
            template_ids: ids,
            weights: TemplateWeights::new(&sizes),
            templates: Arc::new(templates),
            averaged: None,
            live: None,
            beta_trajectory: Vec::new(),
            pruner: None,
        })
    }

    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// Indices of the parser's templates in [`default_templates`].
    pub fn template_ids(&self) -> &[usize] {
        &self.template_ids
    }

    pub fn weights(&self) -> &TemplateWeights {
        &self.weights
    }

    /// Replaces the weights (used when loading a saved model).
    pub fn set_state(
        &mut self,
        weights: TemplateWeights,
        averaged: Option<Vec<f32>>,
    ) -> Result<()> {
        let sizes_ok = (0..weights.n_groups()).all(|t| {
            let s = weights.group_size(t);
            s.is_power_of_two() && (MIN_BITS..=MAX_BITS).contains(&s.trailing_zeros())
        });
        if weights.n_groups() != self.templates.len() || !sizes_ok {
            return Err(OmklError::invalid(
                "state",
                "table sizes do not match the templates",
            ));
        }
        for (t, tpl) in Arc::make_mut(&mut self.templates).iter_mut().enumerate() {
            tpl.bits = weights.group_size(t).trailing_zeros();
        }
        if let Some(a) = &averaged {
            if a.len() != weights.n_slots() {
                return Err(OmklError::invalid(
                    "state",
                    "averaged table has the wrong size",
                ));
            }
        }
        self.weights = weights;
        self.averaged = None;
        self.live = None;
        if averaged.is_some() {
            self.finalize();
        }
        Ok(())
    }

    pub fn averaged(&self) -> Option<&[f32]> {
        self.averaged.as_deref()
    }

    /// Resizes every template's table to fit the number of distinct features
    /// seen on the gold arcs of `sents` (see [`fitted_bits`]); only before
    /// the first step.
    pub fn fit_table_sizes(
        &mut self,
        sents: &[(&ParserInput, Vec<usize>)],
        slots_per_feature: f64,
        max_bits: u32,
    ) -> Result<()> {
        check_positive("slots_per_feature", slots_per_feature)?;
        if self.weights.steps() > 0 {
            return Err(OmklError::invalid(
                "table sizes",
                "can only be fitted before the first training step",
            ));
        }
        let data: Vec<(&[WordAtoms], &[usize])> = sents
            .iter()
            .map(|(s, h)| (s.words.as_slice(), h.as_slice()))
            .collect();
        let bits = fitted_bits(&self.templates, &data, slots_per_feature, max_bits);
        for (tpl, b) in Arc::make_mut(&mut self.templates).iter_mut().zip(bits) {
            tpl.bits = b;
        }
        let sizes: Vec<usize> = self.templates.iter().map(|t| t.table_size()).collect();
        self.weights = TemplateWeights::new(&sizes);
        self.averaged = None;
        self.live = None;
        Ok(())
    }

    /// Installs an untrained first-pass pruner keeping `k` heads per word
    /// (replacing any previous one); `k = 0` removes the pruner.
    pub fn set_pruner(&mut self, k: usize) -> Result<()> {
        self.pruner = if k == 0 {
            None
        } else {
            Some(Box::new(ArcPruner::new(k)?))
        };
        Ok(())
    }

    pub fn pruner(&self) -> Option<&ArcPruner> {
        self.pruner.as_deref()
    }

    /// Sets the pruner's score margin (see [`ArcPruner`]); an error when
    /// there is no pruner.
    pub fn set_pruner_margin(&mut self, margin: f64) -> Result<()> {
        match self.pruner.as_deref_mut() {
            Some(p) => p.set_margin(margin),
            None => Err(OmklError::invalid(
                "prune_margin",
                "the parser has no pruner (prune_k = 0)",
            )),
        }
    }

    /// One first-pass epoch of the pruner (an error when there is none).
    pub fn fit_pruner_epoch(
        &mut self,
        sents: &[(ParserInput, Vec<usize>)],
        tick: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<f64> {
        match self.pruner.as_deref_mut() {
            Some(p) => p.fit_epoch(sents, tick),
            None => Err(OmklError::invalid(
                "prune_k",
                "the parser has no pruner (prune_k = 0)",
            )),
        }
    }

    /// First-pass steps on a chunk of sentences (no epoch end).
    pub fn fit_pruner_chunk(&mut self, sents: &[(&ParserInput, Vec<usize>)]) -> Result<f64> {
        let p = self
            .pruner
            .as_deref_mut()
            .ok_or_else(|| OmklError::invalid("prune_k", "the parser has no pruner"))?;
        let mut total = 0.0;
        for (s, h) in sents {
            total += p.learn_one(s, h)?;
        }
        Ok(total)
    }

    /// Ends a first-pass epoch (the pruner is used from then on).
    pub fn end_pruner_epoch(&mut self) -> Result<()> {
        let p = self
            .pruner
            .as_deref_mut()
            .ok_or_else(|| OmklError::invalid("prune_k", "the parser has no pruner"))?;
        p.model_mut().end_epoch();
        Ok(())
    }

    fn kept_arcs(&self, sent: &ParserInput, gold: Option<&[usize]>) -> Option<KeptArcs> {
        self.pruner
            .as_deref()
            .filter(|p| p.is_trained())
            .map(|p| p.keep(&sent.words, gold))
    }

    /// Scores of all arcs (averaged parameters when available).
    pub fn arc_scores(&self, fz: &ArcFeaturizer) -> Vec<f64> {
        self.scores_with(fz, None)
    }

    fn scores_with(&self, fz: &ArcFeaturizer, kept: Option<&KeptArcs>) -> Vec<f64> {
        self.scores_by_template(fz, kept, &self.prediction_tables())
    }

    /// `(scale, table)` of every template with the current weights.
    fn current_tables(&self) -> Vec<(f64, &[f32])> {
        (0..self.templates.len())
            .map(|t| self.weights.raw(t))
            .collect()
    }

    /// `(scale, table)` of every template as prediction uses them: the
    /// averaged tables (scale 0 for templates whose average is all zero)
    /// when available, else the current weights.
    fn prediction_tables(&self) -> Vec<(f64, &[f32])> {
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
    /// ([`Template::is_inert`]), whose weights stay zero. With `kept`, only
    /// the kept arcs are scored and a pruned arc scores [`PRUNED_SCORE`]
    /// plus its first-pass score.
    fn scores_by_template(
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
    fn unscored(
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

    /// One online step on a sentence with gold `heads`. Returns the hinge
    /// loss before the step. On error the parser is unchanged.
    pub fn learn_one(&mut self, sent: &ParserInput, heads: &[usize]) -> Result<f64> {
        let decoder = self.config.decoder;
        self.learn_one_with(sent, heads, &mut |s, n1| decoder.decode(s, n1))
    }

    /// [`ArcParser::learn_one`] with an explicit decoder.
    pub fn learn_one_with(
        &mut self,
        sent: &ParserInput,
        heads: &[usize],
        decode: &mut DecodeFn<'_>,
    ) -> Result<f64> {
        check_gold(sent, heads)?;
        let kept = self.kept_arcs(sent, Some(heads));
        let templates = Arc::clone(&self.templates);
        let slots = ArcSlots::new(&templates, &sent.words, kept.as_ref().map(|k| &k.keep[..]));
        self.learn_checked(heads, kept.as_ref(), &slots, decode)
    }

    /// [`ArcParser::learn_one_with`] on checked gold heads with the kept
    /// arcs and their table slots already computed (the slots of the kept
    /// arcs, or of all arcs without a pruner). The scores use the current
    /// weights and equal [`ArcParser::scores_by_template`]'s exactly.
    fn learn_checked(
        &mut self,
        heads: &[usize],
        kept: Option<&KeptArcs>,
        slots: &ArcSlots<'_>,
        decode: &mut DecodeFn<'_>,
    ) -> Result<f64> {
        let n1 = slots.len_with_root();
        let mut scores = match kept {
            Some(k) => k.first_pass.iter().map(|&x| PRUNED_SCORE + x).collect(),
            None => vec![0.0f64; n1 * n1],
        };
        for &(h, m) in slots.arcs() {
            scores[h as usize * n1 + m as usize] = 0.0;
        }
        let ws = &self.weights;
        slots.add_scores(&mut scores, |t| ws.raw(t));
        for i in 0..n1 {
            scores[i * n1 + i] = f64::NEG_INFINITY;
            scores[i * n1] = f64::NEG_INFINITY;
        }
        let gold_score: f64 = (1..n1).map(|m| scores[heads[m - 1] * n1 + m]).sum();
        for m in 1..n1 {
            for h in 0..n1 {
                if h != m && h != heads[m - 1] {
                    scores[h * n1 + m] += 1.0;
                }
            }
        }
        let pred = decode(&scores, n1)?;
        if pred.len() != heads.len() {
            return Err(OmklError::shape(
                "decoded heads",
                heads.len().to_string(),
                pred.len().to_string(),
            ));
        }
        let aug: f64 = (1..n1).map(|m| scores[pred[m - 1] * n1 + m]).sum();
        let loss = (aug - gold_score).max(0.0);
        let eta = self.config.eta;
        let mut grad: Vec<(u32, u32, f64)> = Vec::new();
        if loss > 0.0 {
            for m in 1..n1 {
                let (g, p) = (heads[m - 1], pred[m - 1]);
                if g != p {
                    slots.for_each_feature(g, m, |t, slot| grad.push((t as u32, slot as u32, 1.0)));
                    slots
                        .for_each_feature(p, m, |t, slot| grad.push((t as u32, slot as u32, -1.0)));
                }
            }
        }
        self.apply_step(grad, eta)?;
        Ok(loss)
    }

    /// One online step with a real-valued subgradient chosen by `grad`:
    /// given the current arc scores `s[h * n1 + m]` (all arcs, no pruning)
    /// and `n1`, it returns the loss and arcs `(h, m, c)`; the step is
    /// `θ += η Σ c f(h -> m)`, then the regulariser's prox. `heads` must
    /// be a tree; on error the parser is unchanged.
    pub fn learn_one_by_gradient(
        &mut self,
        sent: &ParserInput,
        heads: &[usize],
        grad: impl FnOnce(&[f64], usize, &mut Vec<(u32, u32, f64)>) -> f64,
    ) -> Result<f64> {
        check_gold(sent, heads)?;
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        let n1 = fz.len_with_root();
        let scores = self.scores_by_template(&fz, None, &self.current_tables());
        let mut arcs = Vec::new();
        let loss = grad(&scores, n1, &mut arcs);
        let eta = self.config.eta;
        let mut g: Vec<(u32, u32, f64)> = Vec::new();
        for &(h, m, c) in &arcs {
            let (h, m) = (h as usize, m as usize);
            if h >= n1 || m == 0 || m >= n1 || h == m {
                continue;
            }
            fz.for_each_feature(h, m, |t, slot| g.push((t as u32, slot as u32, c)));
        }
        self.apply_step(g, eta)?;
        Ok(loss)
    }

    /// Adds `eta * c` to the weight of every `(template, slot, c)` in
    /// `grad`, then applies the regulariser's prox and ends the step.
    /// Repeated features are merged first (their `c` summed in the order of
    /// `grad`), so that features shared by the gold and predicted arcs
    /// cancel exactly (the hinge step's ±1 counts are exact in f64: no
    /// rounding residue in the tables); non-finite sums are skipped.
    ///
    /// # Complexity
    /// `O(G + T)` to bucket the `G` entries by template, then a stable sort
    /// of each template's (few) entries by slot.
    fn apply_step(&mut self, grad: Vec<(u32, u32, f64)>, eta: f64) -> Result<()> {
        let n_t = self.templates.len();
        let mut start = vec![0usize; n_t + 1];
        for g in &grad {
            start[g.0 as usize + 1] += 1;
        }
        for t in 0..n_t {
            start[t + 1] += start[t];
        }
        let mut next = start.clone();
        let mut by_t: Vec<(u32, f64)> = vec![(0, 0.0); grad.len()];
        for &(t, slot, c) in &grad {
            by_t[next[t as usize]] = (slot, c);
            next[t as usize] += 1;
        }
        for t in 0..n_t {
            let run = &mut by_t[start[t]..start[t + 1]];
            run.sort_by_key(|g| g.0);
            for same in run.chunk_by(|a, b| a.0 == b.0) {
                let d: f64 = same.iter().map(|g| g.1).sum();
                if d != 0.0 && d.is_finite() {
                    self.weights.add(t, same[0].0 as usize, eta * d);
                }
            }
        }
        self.prox_step(eta)?;
        self.weights.end_step();
        self.averaged = None;
        self.live = None;
        Ok(())
    }

    fn prox_step(&mut self, eta: f64) -> Result<()> {
        let old = self.weights.group_norms();
        let mut new = old.clone();
        self.config.regularizer.prox_group_norms(&mut new, eta)?;
        for (t, (&o, &n)) in old.iter().zip(&new).enumerate() {
            if o > 0.0 && n != o {
                self.weights.scale_group(t, n / o);
            }
        }
        Ok(())
    }

    /// One pass over `sents` in order; `tick(done)` is called every 256
    /// sentences and may abort (e.g. on a keyboard interrupt).
    pub fn fit_epoch(
        &mut self,
        sents: &[(ParserInput, Vec<usize>)],
        tick: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<f64> {
        let mut total = 0.0;
        let refs: Vec<(&ParserInput, &[usize])> =
            sents.iter().map(|(s, h)| (s, h.as_slice())).collect();
        for (c, chunk) in refs.chunks(256).enumerate() {
            total += self.fit_batch(chunk)?;
            tick(c * 256 + chunk.len())?;
        }
        self.end_epoch();
        Ok(total)
    }

    /// [`ArcParser::learn_one`] on each sentence of `sents` in order (the
    /// same steps, the same result), returning the summed loss. The
    /// sentences are taken in blocks (at most 16 sentences and about
    /// 8,000 arcs): while one block is learned, the next one's gold trees
    /// are checked, its arcs pruned (with a trained pruner) and its table
    /// slots hashed on another thread; scoring reads the current weights. A
    /// gold tree that is not a tree stops it before the block that holds it.
    pub fn fit_batch(&mut self, sents: &[(&ParserInput, &[usize])]) -> Result<f64> {
        const BLOCK: usize = 16;
        const BLOCK_ARCS: usize = 8192;
        let pruner = self.pruner.take();
        let templates = Arc::clone(&self.templates);
        let trained = pruner.as_deref().filter(|p| p.is_trained());
        type Prepared<'t> = Vec<(Option<KeptArcs>, ArcSlots<'t>)>;
        let prep = |block: &[(&ParserInput, &[usize])]| -> Result<Prepared<'_>> {
            block
                .iter()
                .map(|&(s, h)| {
                    check_gold(s, h)?;
                    let kept = trained.map(|p| p.keep(&s.words, Some(h)));
                    let slots =
                        ArcSlots::new(&templates, &s.words, kept.as_ref().map(|k| &k.keep[..]));
                    Ok((kept, slots))
                })
                .collect()
        };
        let mut blocks: Vec<&[(&ParserInput, &[usize])]> = Vec::new();
        let mut start = 0;
        while start < sents.len() {
            let mut end = start;
            let mut arcs = 0;
            while end < sents.len() && end - start < BLOCK && (end == start || arcs < BLOCK_ARCS) {
                let n1 = sents[end].0.words.len() + 1;
                arcs += n1 * n1;
                end += 1;
            }
            blocks.push(&sents[start..end]);
            start = end;
        }
        let decoder = self.config.decoder;
        let mut run = || -> Result<f64> {
            let mut total = 0.0;
            let mut cur = match blocks.first() {
                Some(b) => prep(b)?,
                None => return Ok(0.0),
            };
            for i in 0..blocks.len() {
                let (done, next) = rayon::join(
                    || -> Result<f64> {
                        let mut t = 0.0;
                        for (&(_, h), (k, sl)) in blocks[i].iter().zip(&cur) {
                            t += self.learn_checked(h, k.as_ref(), sl, &mut |sc, n1| {
                                decoder.decode(sc, n1)
                            })?;
                        }
                        Ok(t)
                    },
                    || blocks.get(i + 1).map(|b| prep(b)),
                );
                total += done?;
                cur = next.transpose()?.unwrap_or_default();
            }
            Ok(total)
        };
        let out = run();
        self.pruner = pruner;
        out
    }

    /// Ends an epoch: exact norms, averaged parameters, β recorded.
    pub fn end_epoch(&mut self) {
        self.weights.refresh_norms();
        self.finalize();
        self.beta_trajectory.push(self.template_weights());
    }

    /// Computes the averaged parameters used by prediction.
    pub fn finalize(&mut self) {
        let avg = self.weights.averaged();
        let off = self.weights.offsets();
        self.live = Some(
            (0..self.templates.len())
                .map(|t| avg[off[t]..off[t + 1]].iter().any(|&x| x != 0.0))
                .collect(),
        );
        self.averaged = Some(avg);
    }

    /// β_t = ‖θ_t‖ / Σ_s ‖θ_s‖ of the current iterate θ (the output of the
    /// online proximal steps, which is exactly sparse under MKL; the
    /// averaged parameters used for prediction are not). All zero before any
    /// update.
    pub fn template_weights(&self) -> Vec<f64> {
        let norms = self.weights.group_norms();
        let total: f64 = norms.iter().sum();
        if total > 0.0 {
            norms.iter().map(|n| n / total).collect()
        } else {
            vec![0.0; norms.len()]
        }
    }

    /// β of the averaged parameters used for prediction (`None` before
    /// [`ArcParser::finalize`]): each template's share of the sum of the
    /// averaged tables' norms.
    pub fn averaged_template_weights(&self) -> Option<Vec<f64>> {
        let avg = self.averaged.as_ref()?;
        let off = self.weights.offsets();
        let norms: Vec<f64> = (0..self.templates.len())
            .map(|t| {
                avg[off[t]..off[t + 1]]
                    .iter()
                    .map(|&x| x as f64 * x as f64)
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        let total: f64 = norms.iter().sum();
        Some(if total > 0.0 {
            norms.iter().map(|n| n / total).collect()
        } else {
            norms
        })
    }

    /// Heads of one sentence (averaged parameters when available).
    pub fn predict(&self, sent: &ParserInput) -> Result<Vec<usize>> {
        check_nonempty(sent)?;
        let kept = self.kept_arcs(sent, None);
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        let scores = self.scores_with(&fz, kept.as_ref());
        self.config.decoder.decode(&scores, fz.len_with_root())
    }

    /// The score matrices of [`ArcParser::score_matrix`] for a block of
    /// sentences, scored together template by template
    /// ([`SlotLists::add_scores_many`]) so that each weight table is read
    /// for the whole block while it is in cache; bit for bit those of
    /// `score_matrix` on each sentence.
    fn score_block(&self, sents: &[ParserInput]) -> Result<Vec<Vec<f64>>> {
        let tabs = self.prediction_tables();
        let mut lists = Vec::with_capacity(sents.len());
        let mut scores = Vec::with_capacity(sents.len());
        for sent in sents {
            check_nonempty(sent)?;
            let kept = self.kept_arcs(sent, None);
            let fz = ArcFeaturizer::new(&self.templates, &sent.words);
            let (l, s) = self.unscored(&fz, kept.as_ref(), &tabs);
            lists.push(l);
            scores.push(s);
        }
        let refs: Vec<&SlotLists> = lists.iter().collect();
        let mut outs: Vec<&mut [f64]> = scores.iter_mut().map(|s| &mut s[..]).collect();
        SlotLists::add_scores_many(&refs, &mut outs, |t| tabs[t]);
        for (sent, s) in sents.iter().zip(&mut scores) {
            close_scores(s, sent.words.len() + 1);
        }
        Ok(scores)
    }

    /// The arc score matrix `s[h * n1 + m]` that [`ArcParser::predict`]
    /// decodes (pruned arcs included, at their finite low scores; column 0
    /// and the diagonal are `-inf`).
    pub fn score_matrix(&self, sent: &ParserInput) -> Result<Vec<f64>> {
        if sent.words.is_empty() {
            return Err(OmklError::empty("sentence"));
        }
        let kept = self.kept_arcs(sent, None);
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        Ok(self.scores_with(&fz, kept.as_ref()))
    }

    /// Heads of many sentences, in parallel.
    pub fn predict_many(&self, sents: &[ParserInput]) -> Result<Vec<Vec<usize>>> {
        let blocks: Vec<Vec<Vec<usize>>> = sents
            .par_chunks(PREDICT_BLOCK)
            .map(|b| {
                let scores = self.score_block(b)?;
                b.iter()
                    .zip(&scores)
                    .map(|(sent, s)| self.config.decoder.decode(s, sent.words.len() + 1))
                    .collect()
            })
            .collect::<Result<_>>()?;
        Ok(blocks.into_iter().flatten().collect())
    }
}

/// Sentences scored together by [`ArcParser::predict_many`].
const PREDICT_BLOCK: usize = 32;

/// Closes a score matrix for decoding: no arc into the root, no self-loop.
fn close_scores(s: &mut [f64], n1: usize) {
    for i in 0..n1 {
        s[i * n1 + i] = f64::NEG_INFINITY;
        s[i * n1] = f64::NEG_INFINITY;
    }
}

/// An empty sentence has no tree to predict.
fn check_nonempty(sent: &ParserInput) -> Result<()> {
    if sent.words.is_empty() {
        return Err(OmklError::invalid(
            "sentence",
            format!(
                "sentence {:?} is empty; expected at least one word",
                sent.id
            ),
        ));
    }
    Ok(())
}

/// Version of the byte format of [`ArcParser::to_bytes`]. 4: the payload
/// of version 3 inside the checksummed envelope of [`crate::persist`]
/// (format [`FORMAT`]); files of earlier versions are refused.
pub const FORMAT_VERSION: u32 = 4;
/// Format name of the envelope.
pub const FORMAT: &str = "omkl-arc-parser";

impl ArcParser {
    /// Serialises the parser (deterministic bytes) inside the envelope of
    /// [`crate::persist`]: hash name and seed, configuration, template
    /// indices, weights, averaged weights, the β trajectory and the
    /// first-pass pruner, little-endian.
    ///
    /// # Complexity
    /// O(table slots), one pass (the payload is sealed in place).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let slots = self.weights.n_slots();
        let estimate = crate::persist::header_len(FORMAT)
            + 8 * slots
            + self.averaged.as_ref().map_or(0, |a| 4 * a.len())
            + 4096;
        let mut out = Vec::with_capacity(estimate);
        out.resize(crate::persist::header_len(FORMAT), 0);
        self.write_payload(&mut out)?;
        Ok(crate::persist::seal_in_place(FORMAT, FORMAT_VERSION, out))
    }

    fn write_payload(&self, out: &mut Vec<u8>) -> Result<()> {
        let (kind, lam) = match self.config.regularizer {
            Regularizer::L2Squared { lam } => (0u8, lam),
            Regularizer::SquaredL21 { lam } => (1u8, lam),
            ref r => {
                return Err(OmklError::invalid(
                    "regularizer",
                    format!("cannot save a parser with {r:?}"),
                ))
            }
        };
        out.extend_from_slice(&(HASH_NAME.len() as u64).to_le_bytes());
        out.extend_from_slice(HASH_NAME.as_bytes());
        out.extend_from_slice(&HASH_SEED.to_le_bytes());
        out.push(kind);
        out.extend_from_slice(&lam.to_le_bytes());
        out.extend_from_slice(&self.config.eta.to_le_bytes());
        out.push(match self.config.decoder {
            TreeDecoder::ChuLiuEdmonds => 0,
            TreeDecoder::Eisner => 1,
        });
        out.extend_from_slice(&(self.template_ids.len() as u64).to_le_bytes());
        for &i in &self.template_ids {
            out.extend_from_slice(&(i as u64).to_le_bytes());
        }
        self.weights.write_bytes(out);
        match &self.averaged {
            None => out.push(0),
            Some(a) => {
                out.push(1);
                for x in a {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(&(self.beta_trajectory.len() as u64).to_le_bytes());
        for b in &self.beta_trajectory {
            for x in b {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        match &self.pruner {
            None => out.push(0),
            Some(p) => {
                // 1: top k; 2: top k within a finite margin (then the margin)
                let finite = p.margin().is_finite();
                out.push(if finite { 2 } else { 1 });
                out.extend_from_slice(&(p.k() as u64).to_le_bytes());
                if finite {
                    out.extend_from_slice(&p.margin().to_le_bytes());
                }
                let mut inner = Vec::new();
                p.model().write_payload(&mut inner)?;
                out.extend_from_slice(&(inner.len() as u64).to_le_bytes());
                out.extend_from_slice(&inner);
            }
        }
        Ok(())
    }

    /// Reads bytes written by [`ArcParser::to_bytes`]: checks the envelope
    /// (format, version, length, checksum), the hash name and seed, then
    /// every decoded value (sizes against the bytes left before
    /// allocating, finite positive scales, finite non-negative norms).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &[FORMAT_VERSION])?;
        let mut r = Reader::new(payload, "parser state");
        let p = Self::read_payload(&mut r)?;
        r.finish()?;
        Ok(p)
    }

    fn read_payload(r: &mut Reader<'_>) -> Result<Self> {
        let name_len = r.count("hash name length", 1)?;
        let name = r.take(name_len)?;
        let seed = r.u64()?;
        if name != HASH_NAME.as_bytes() || seed != HASH_SEED {
            return Err(r.error(format!(
                "saved with hash {:?} seed {seed:#x}, expected {HASH_NAME:?} seed {HASH_SEED:#x}",
                String::from_utf8_lossy(name)
            )));
        }
        let kind = r.u8()?;
        let lam = r.f64()?;
        let eta = r.f64()?;
        let regularizer = match kind {
            0 => Regularizer::L2Squared { lam },
            1 => Regularizer::SquaredL21 { lam },
            k => return Err(r.error(format!("unknown regularizer code {k}"))),
        };
        let decoder = match r.u8()? {
            0 => TreeDecoder::ChuLiuEdmonds,
            1 => TreeDecoder::Eisner,
            k => return Err(r.error(format!("unknown decoder code {k}"))),
        };
        let nt = r.count("template count", 8)?;
        let mut ids = Vec::with_capacity(nt);
        for _ in 0..nt {
            let id = r.u64()?;
            ids.push(usize::try_from(id).map_err(|_| r.error(format!("template index {id}")))?);
        }
        let config = ParserConfig {
            regularizer,
            eta,
            decoder,
        };
        let mut p = ArcParser::with_templates(config, Some(&ids))?;
        let weights = TemplateWeights::read_from(r)?;
        let averaged = match r.u8()? {
            0 => None,
            1 => {
                let n = weights.n_slots();
                let need = n.checked_mul(4).filter(|&b| b <= r.remaining());
                if need.is_none() {
                    return Err(r.error(format!(
                        "truncated: averaged table of {n} weights, {} bytes left",
                        r.remaining()
                    )));
                }
                let mut avg = zeroed_table(n);
                r.f32s(n, &mut avg)?;
                if avg.iter().any(|v| !v.is_finite()) {
                    return Err(r.error("non-finite averaged weight"));
                }
                Some(avg)
            }
            f => return Err(r.error(format!("unknown averaged-table flag {f}"))),
        };
        p.set_state(weights, averaged)?;
        let epochs = r.count("trajectory length", 8 * nt)?;
        for _ in 0..epochs {
            let mut b = Vec::with_capacity(nt);
            for _ in 0..nt {
                b.push(r.f64()?);
            }
            p.beta_trajectory.push(b);
        }
        let flag = r.u8()?;
        if flag > 2 {
            return Err(r.error(format!("unknown pruner kind {flag}")));
        }
        if flag != 0 {
            let k = r.u64()? as usize;
            let margin = if flag == 2 { r.f64()? } else { f64::INFINITY };
            let len = r.count("pruner length", 1)?;
            let mut inner = Reader::new(r.take(len)?, "pruner state");
            let model = ArcParser::read_payload(&mut inner)?;
            inner.finish()?;
            p.pruner = Some(Box::new(ArcPruner::from_parts(model, k, margin)?));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(id: &str, tags: &[&str]) -> ParserInput {
        ParserInput {
            id: id.into(),
            words: tags
                .iter()
                .enumerate()
                .map(|(i, t)| WordAtoms::new(&format!("w{i}{t}"), t, t, t, "_"))
                .collect(),
        }
    }

    /// A toy grammar: DET and ADJ attach to the next NOUN, NOUN to the VERB,
    /// the VERB to the root.
    fn toy() -> Vec<(ParserInput, Vec<usize>)> {
        vec![
            (sent("a", &["DET", "NOUN", "VERB"]), vec![2, 3, 0]),
            (
                sent("b", &["NOUN", "VERB", "DET", "NOUN"]),
                vec![2, 0, 4, 2],
            ),
            (
                sent("c", &["DET", "ADJ", "NOUN", "VERB", "NOUN"]),
                vec![3, 3, 4, 0, 4],
            ),
            (sent("d", &["VERB", "DET", "NOUN"]), vec![0, 3, 1]),
        ]
    }

    /// Arc scores by the definition: for every arc and template, the f32
    /// sum of the template's weights over the arc's features, times the
    /// template's scale, added in template order.
    fn reference_scores(p: &ArcParser, fz: &ArcFeaturizer, averaged: bool) -> Vec<f64> {
        let n1 = fz.len_with_root();
        let off = p.weights.offsets();
        let mut s = vec![0.0f64; n1 * n1];
        for h in 0..n1 {
            for m in 1..n1 {
                if h == m {
                    continue;
                }
                for t in 0..p.templates.len() {
                    let (sc, w) = if averaged {
                        let live = p.live.as_ref().unwrap()[t];
                        let a = p.averaged.as_ref().unwrap();
                        (if live { 1.0 } else { 0.0 }, &a[off[t]..off[t + 1]])
                    } else {
                        p.weights.raw(t)
                    };
                    if sc == 0.0 {
                        continue;
                    }
                    let mut acc = 0.0f32;
                    fz.template_features(t, h, m, |slot| acc += w[slot]);
                    s[h * n1 + m] += sc * acc as f64;
                }
            }
        }
        for i in 0..n1 {
            s[i * n1 + i] = f64::NEG_INFINITY;
            s[i * n1] = f64::NEG_INFINITY;
        }
        s
    }

    #[test]
    fn arc_scores_equal_the_per_arc_definition_exactly() {
        let feats = ["Number=Sing", "_", "Definite=Def|PronType=Art", "Mood=Ind"];
        let mut data = toy();
        for (s, _) in &mut data {
            for (i, w) in s.words.iter_mut().enumerate() {
                let t = ["DET", "NOUN", "VERB", "ADJ"][i % 4];
                *w = WordAtoms::new(&format!("x{i}"), t, t, t, feats[(i * 7 + 1) % 4]);
            }
        }
        let mut p = ArcParser::new(ParserConfig {
            regularizer: Regularizer::SquaredL21 { lam: 1e-3 },
            ..ParserConfig::default()
        })
        .unwrap();
        for (s, h) in data.iter().chain(&data) {
            p.learn_one(s, h).unwrap();
            let fz = ArcFeaturizer::new(&p.templates, &s.words);
            assert_eq!(p.arc_scores(&fz), reference_scores(&p, &fz, false));
        }
        p.end_epoch();
        for (s, _) in &data {
            let fz = ArcFeaturizer::new(&p.templates, &s.words);
            let got = p.arc_scores(&fz);
            assert_eq!(got, reference_scores(&p, &fz, true));
            assert!(got.iter().any(|&x| x.is_finite() && x != 0.0));
        }
    }

    #[test]
    fn block_scores_equal_the_per_sentence_scores_exactly() {
        let tags = ["DET", "NOUN", "VERB", "ADJ", "ADP", "PRON"];
        let feats = ["Number=Sing", "_", "Definite=Def|PronType=Art", "Mood=Ind"];
        // 70 sentences of 1..=12 words: blocks of PREDICT_BLOCK and a
        // shorter last one
        let data: Vec<(ParserInput, Vec<usize>)> = (0..70)
            .map(|i| {
                let n = 1 + (i * 5) % 12;
                let words = (0..n)
                    .map(|j| {
                        let t = tags[(i + j * 3) % tags.len()];
                        WordAtoms::new(&format!("x{}", (i + j) % 9), t, t, t, feats[(i + j) % 4])
                    })
                    .collect();
                let heads = (1..=n).map(|m| if m == 1 { 0 } else { m - 1 }).collect();
                (
                    ParserInput {
                        id: format!("s{i}"),
                        words,
                    },
                    heads,
                )
            })
            .collect();
        let sents: Vec<ParserInput> = data.iter().map(|(s, _)| s.clone()).collect();
        for (pruned, averaged) in [(false, false), (true, false), (true, true)] {
            let mut p = ArcParser::new(ParserConfig {
                regularizer: Regularizer::SquaredL21 { lam: 1e-3 },
                ..ParserConfig::default()
            })
            .unwrap();
            if pruned {
                p.set_pruner(3).unwrap();
                p.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
            }
            for (s, h) in &data {
                p.learn_one(s, h).unwrap();
            }
            if averaged {
                p.end_epoch();
            }
            let block = p.score_block(&sents[..40]).unwrap();
            for (s, got) in sents.iter().zip(&block) {
                assert_eq!(got, &p.score_matrix(s).unwrap(), "sentence {}", s.id);
            }
            let many = p.predict_many(&sents).unwrap();
            for (s, got) in sents.iter().zip(&many) {
                assert_eq!(got, &p.predict(s).unwrap(), "sentence {}", s.id);
            }
        }
        let mut bad = sents.clone();
        bad[45].words.clear();
        let p = ArcParser::new(ParserConfig::default()).unwrap();
        let e = p.predict_many(&bad).unwrap_err().to_string();
        assert!(e.contains("s45") && e.contains("empty"), "{e}");
    }

    #[test]
    fn check_tree_rejects_bad_heads_naming_the_sentence() {
        assert!(check_tree(&[2, 0], "s").is_ok());
        let e = check_tree(&[2, 1], "s7").unwrap_err().to_string();
        assert!(e.contains("cycle") && e.contains("s7"), "{e}");
        let e = check_tree(&[3, 0], "s8").unwrap_err().to_string();
        assert!(e.contains("out of range") && e.contains("s8"), "{e}");
        assert!(check_tree(&[1], "x").is_err());
        assert!(check_tree(&[], "s9")
            .unwrap_err()
            .to_string()
            .contains("s9"));
    }

    #[test]
    fn learns_a_toy_grammar_and_outputs_trees() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        for _ in 0..5 {
            p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        for (s, gold) in &data {
            let pred = p.predict(s).unwrap();
            check_tree(&pred, &s.id).unwrap();
            assert_eq!(pred.iter().filter(|&&h| h == 0).count(), 1);
            assert_eq!(&pred, gold);
        }
        let beta = p.template_weights();
        assert!((beta.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert_eq!(p.beta_trajectory.len(), 5);
    }

    #[test]
    fn modifier_only_templates_without_conjunction_stay_exactly_zero() {
        // their features are the same for every head, so they cancel
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        let beta = p.template_weights();
        let m_only = p
            .templates()
            .iter()
            .position(|t| t.name == "m.upos")
            .unwrap();
        assert_eq!(beta[m_only], 0.0);
        assert!(beta.iter().any(|&b| b > 0.0));
    }

    #[test]
    fn failed_learn_one_leaves_the_parser_unchanged() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.learn_one(&data[0].0, &data[0].1).unwrap();
        let before = p.to_bytes().unwrap();
        assert!(p.learn_one(&data[0].0, &[2, 1, 0]).is_err());
        assert!(p.learn_one(&data[0].0, &[2, 0]).is_err());
        assert_eq!(p.to_bytes().unwrap(), before);
    }

    #[test]
    fn mkl_with_large_lambda_zeroes_templates() {
        let data = toy();
        let config = ParserConfig {
            regularizer: Regularizer::SquaredL21 { lam: 0.5 },
            ..ParserConfig::default()
        };
        let mut p = ArcParser::new(config).unwrap();
        for _ in 0..3 {
            p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        let norms = p.weights().group_norms();
        let zero = norms.iter().filter(|&&n| n == 0.0).count();
        assert!(zero > 0 && zero < norms.len(), "{zero} of {}", norms.len());
    }

    #[test]
    fn bytes_round_trip_and_reject_other_versions() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        let b = p.to_bytes().unwrap();
        let q = ArcParser::from_bytes(&b).unwrap();
        assert_eq!(q.to_bytes().unwrap(), b);
        for (s, _) in &data {
            assert_eq!(p.predict(s).unwrap(), q.predict(s).unwrap());
        }
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        let other = crate::persist::seal(FORMAT, 99, payload);
        assert!(ArcParser::from_bytes(&other)
            .unwrap_err()
            .to_string()
            .contains("version 99"));
        assert!(ArcParser::from_bytes(&b[..b.len() - 3])
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }

    #[test]
    fn older_formats_are_refused_before_anything_else_is_read() {
        assert_eq!(FORMAT_VERSION, 4);
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&toy(), &mut |_| Ok(())).unwrap();
        let b = p.to_bytes().unwrap();
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        for old in [1u32, 2, 3] {
            // the files of versions 1 to 3: magic, version, then the payload
            let mut full = b"OMKLARC\0".to_vec();
            full.extend_from_slice(&old.to_le_bytes());
            full.extend_from_slice(payload);
            for bytes in [&full[..], &full[..12]] {
                let e = ArcParser::from_bytes(bytes).unwrap_err().to_string();
                assert!(e.contains("older omkl format"), "{e}");
            }
            // the envelope at an older version
            let e = ArcParser::from_bytes(&crate::persist::seal(FORMAT, old, payload))
                .unwrap_err()
                .to_string();
            assert!(e.contains("older omkl format"), "{e}");
        }
    }

    /// The payload with the weights' header edited, sealed again.
    fn with_weights_edit(p: &ArcParser, edit: impl Fn(&mut Vec<u8>, usize)) -> Vec<u8> {
        let b = p.to_bytes().unwrap();
        let mut payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION])
            .unwrap()
            .to_vec();
        // hash name, seed, kind, lam, eta, decoder, template ids
        let at = 8 + HASH_NAME.len() + 8 + 1 + 8 + 8 + 1 + 8 + 8 * p.template_ids().len();
        edit(&mut payload, at);
        crate::persist::seal(FORMAT, FORMAT_VERSION, &payload)
    }

    #[test]
    fn impossible_states_are_refused_before_allocating() {
        let mut p = ArcParser::with_templates(ParserConfig::default(), Some(&[0, 1, 2])).unwrap();
        p.fit_epoch(&toy(), &mut |_| Ok(())).unwrap();
        let t = p.weights().n_groups();
        // the first group's scale, running sum and squared norm
        let first = 8 + 8 * t + 8;
        let put = |v: f64, off: usize| {
            move |b: &mut Vec<u8>, at: usize| {
                b[at + off..at + off + 8].copy_from_slice(&v.to_le_bytes())
            }
        };
        for (edit, word) in [
            (
                Box::new(put(0.0, first)) as Box<dyn Fn(&mut Vec<u8>, usize)>,
                "scale",
            ),
            (Box::new(put(-1.0, first)), "scale"),
            (Box::new(put(f64::NAN, first)), "scale"),
            (Box::new(put(-1.0, first + 16)), "squared norm"),
            (Box::new(put(f64::from_bits(1 << 40), 8)), "group size"),
            (Box::new(put(f64::from_bits(1 << 62), 0)), "group count"),
        ] {
            let e = ArcParser::from_bytes(&with_weights_edit(&p, edit))
                .unwrap_err()
                .to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
        let same = with_weights_edit(&p, |_, _| {});
        assert_eq!(
            ArcParser::from_bytes(&same).unwrap().to_bytes().unwrap(),
            same
        );
    }
}
