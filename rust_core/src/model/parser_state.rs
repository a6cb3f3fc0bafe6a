//! The state of the parser and of its first-pass pruner, which hold each
//! other (the parser owns an optional pruner, the pruner is a small parser):
//! [`ArcParser`] with its constructors and accessors, [`ArcPruner`], the
//! [`KeptArcs`] of one sentence and [`PRUNED_SCORE`]. Scoring, learning,
//! pruning, persistence and prediction are implemented in the sibling
//! `parser_*` modules.
//!
//! # Example
//! ```
//! use omkl_core::model::parser::{ArcParser, ParserConfig};
//! let p = ArcParser::with_templates(ParserConfig::default(), Some(&[0, 5])).unwrap();
//! assert_eq!(p.template_ids(), &[0, 5]);
//! assert!(p.pruner().is_none());
//! ```

use std::sync::Arc;

use crate::error::{check_positive, OmklError, Result};
use crate::features::arc_templates::{
    default_templates, fitted_bits, Template, WordAtoms, MAX_BITS, MIN_BITS,
};
use crate::learner::half_table;
use crate::model::parser_input::{ParserConfig, ParserInput};
use crate::model::template_weights::TemplateWeights;

/// Score offset of a pruned arc (finite, so decoders accept it).
pub const PRUNED_SCORE: f64 = -1.0e6;

/// The kept arcs of one sentence: `keep[h * n1 + m]`, and the first-pass
/// score of every arc.
#[derive(Debug, Clone)]
pub struct KeptArcs {
    pub n1: usize,
    pub keep: Vec<bool>,
    pub first_pass: Vec<f64>,
}

/// The first-pass model, the number `k` of heads kept per word and the
/// score margin: a word keeps its candidate heads that score within
/// `margin` of its best candidate, at most `k` of them (`margin = ∞` keeps
/// the top `k`). The first-pass scores are log-probabilities of head
/// selection up to a per-word constant, so the margin is a log-odds bound:
/// a head is dropped when it is `e^margin` times less likely than the best.
#[derive(Debug, Clone)]
pub struct ArcPruner {
    pub(super) model: ArcParser,
    pub(super) k: usize,
    pub(super) margin: f64,
}

/// The parser: templates, per-template weights and the β trajectory.
#[derive(Debug, Clone)]
pub struct ArcParser {
    pub config: ParserConfig,
    /// Shared with the featurisation of later sentences during training.
    pub(super) templates: Arc<Vec<Template>>,
    /// Indices of `templates` in [`default_templates`].
    pub(super) template_ids: Vec<usize>,
    pub(super) weights: TemplateWeights,
    /// Averaged parameters (flattened), refreshed by [`ArcParser::finalize`].
    pub(super) averaged: Option<Vec<f32>>,
    /// Templates whose averaged table is not all zero.
    pub(super) live: Option<Vec<bool>>,
    /// β after each epoch.
    pub beta_trajectory: Vec<Vec<f64>>,
    /// First-pass arc pruner (scores only its kept arcs once it is trained).
    pub(super) pruner: Option<Box<ArcPruner>>,
    /// Frozen for prediction ([`ArcParser::freeze`]): only the averaged
    /// table is held, and learning is refused.
    pub(super) frozen: bool,
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
        config.regularizer.check_acts_on_norms("template")?;
        let sizes: Vec<usize> = templates.iter().map(|t| t.table_size()).collect();
        Ok(ArcParser {
            config,
            template_ids: ids,
            weights: TemplateWeights::unallocated(&sizes),
            templates: Arc::new(templates),
            averaged: None,
            live: None,
            beta_trajectory: Vec::new(),
            pruner: None,
            frozen: false,
        })
    }

    /// Freezes the parser (and its pruner) for prediction: the averaged
    /// table, computed first if need be, is kept and the training tables
    /// (current weights and averaging sums, twice its size) are dropped. The
    /// averaged table is rounded to half precision, template by template
    /// ([`half_table::round_groups`]: each weight moves by at most 2^-11 of
    /// its template's largest `|w|`), which halves the saved file. It then
    /// predicts as before up to that rounding and refuses every learning
    /// call. Freezing a
    /// frozen parser does nothing; on an allocation error nothing changes.
    ///
    /// # Complexity
    /// O(table slots).
    pub fn freeze(&mut self) -> Result<()> {
        if self.frozen {
            return Ok(());
        }
        if self.averaged.is_none() {
            self.finalize()?;
        }
        if let Some(p) = self.pruner.as_deref_mut() {
            p.model.freeze()?;
        }
        if let Some(avg) = self.averaged.as_deref_mut() {
            half_table::round_groups(avg, self.weights.offsets());
        }
        let sizes: Vec<usize> = (0..self.weights.n_groups())
            .map(|t| self.weights.group_size(t))
            .collect();
        self.weights = TemplateWeights::sizes_only(&sizes, self.weights.steps());
        self.frozen = true;
        Ok(())
    }

    /// Whether the parser is frozen ([`ArcParser::freeze`]).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// An error if the parser is frozen; otherwise the training tables of
    /// the parser and its pruner are allocated (a new parser holds none
    /// until it first learns, so that one built to be loaded or frozen
    /// never pays for them), or [`OmklError::Alloc`] when they cannot be.
    pub(super) fn ready(&mut self) -> Result<()> {
        self.check_learnable()?;
        self.weights.allocate()?;
        if let Some(p) = self.pruner.as_deref_mut() {
            p.model.weights.allocate()?;
        }
        Ok(())
    }

    /// An error if the parser is frozen.
    pub fn check_learnable(&self) -> Result<()> {
        if self.frozen {
            return Err(OmklError::invalid(
                "parser",
                "it is frozen (a compact model for prediction) and cannot learn",
            ));
        }
        Ok(())
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
            self.finalize()?;
        }
        Ok(())
    }

    /// Makes this parser (with the templates it was built with) the frozen
    /// parser of the given table sizes, step count and averaged table.
    pub(crate) fn set_frozen_state(
        &mut self,
        sizes: &[usize],
        steps: u64,
        averaged: Vec<f32>,
    ) -> Result<()> {
        self.set_state(TemplateWeights::sizes_only(sizes, steps), None)?;
        if averaged.len() != self.weights.n_slots() {
            return Err(OmklError::invalid(
                "state",
                "averaged table has the wrong size",
            ));
        }
        let off = self.weights.offsets();
        self.live = Some(
            (0..self.templates.len())
                .map(|t| averaged[off[t]..off[t + 1]].iter().any(|&x| x != 0.0))
                .collect(),
        );
        self.averaged = Some(averaged);
        self.frozen = true;
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
        self.check_learnable()?;
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
        self.set_table_bits(&bits)
    }
}
