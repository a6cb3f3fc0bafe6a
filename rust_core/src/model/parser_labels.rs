//! The label stage of the parser: a multiclass linear model trained by
//! Alg. 1 (hinge loss, averaged, [`NamedLearner`]) that predicts the
//! dependency relation (UD DEPREL) of each arc `h → m` from hashed features
//! of the head, the modifier, their neighbours, the direction and the binned
//! distance of the arc, and the rest of the tree (see
//! `parser_label_feats`). It is trained on gold trees and applied to the
//! predicted ones.
//!
//! Each feature name is written into a reused buffer and hashed there into
//! its bucket of the one table, so learning and predicting allocate nothing
//! per feature.
//!
//! # Complexity
//! One word costs `O(F L)` for `F ≈ 25` features and `L` relations.
//!
//! # Example
//! ```
//! use omkl_core::model::conllu::Token;
//! use omkl_core::model::parser_labels::ArcLabeler;
//! let tok = |f: &str, u: &str, h: usize, d: &str| Token {
//!     form: f.into(), lemma: f.into(), upos: u.into(), xpos: u.into(),
//!     feats: "_".into(), head: Some(h), deprel: d.into(),
//! };
//! let sent = vec![tok("the", "DET", 2, "det"), tok("dog", "NOUN", 3, "nsubj"),
//!                 tok("barks", "VERB", 0, "root")];
//! let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
//! for _ in 0..3 {
//!     lab.learn_sentence(&sent, &[2, 3, 0], "s1").unwrap();
//! }
//! assert_eq!(lab.predict(&sent, &[2, 3, 0]).unwrap(), ["det", "nsubj", "root"]);
//! ```

use std::cell::RefCell;

use crate::error::{OmklError, Result};
use crate::features::{hash_name, Grouping, SparseExample};
use crate::learner::frozen_linear::FrozenLinear;
use crate::learner::named::NamedLearner;
use crate::learner::{Alg1Config, Loss, Schedule, Target};
use crate::model::conllu::Token;
use crate::model::parser_input::{check_heads, check_words};
use crate::model::parser_label_feats::{write_arc_features, ArcTree, NameBufs};
use crate::prox::Regularizer;

/// Buckets of the one hashed feature table. Every feature of the label
/// stage shares it (the stage is ℓ2²-regularised, so it has no use for
/// groups): its ~20 feature kinds range from a handful of values (the bias,
/// the direction and distance) to tens of thousands (word pairs), and one
/// table spends its slots where the features are instead of giving each kind
/// a table of its own. Each slot holds the weights of all relations side by
/// side (relation-major rows), so scoring a feature reads one contiguous row.
/// 2^17 buckets gained 0.15 LAS on EWT dev over 2^15 (`docs/parser.md`).
pub const LABEL_TABLE_BUCKETS: usize = 1 << 17;

/// Buckets of the table of a labeler saved by format version 2.
pub const V2_TABLE_BUCKETS: usize = 1 << 15;

/// The group of every label feature: the part of its name (`arc_...`)
/// before the first `_`, by the labeler's grouping ([`label_grouping`]).
const LABEL_GROUP: &str = "arc";

/// How the label features' names map to groups: by the prefix before `_`,
/// so every feature is in [`LABEL_GROUP`].
fn label_grouping() -> Grouping {
    Grouping::by_prefix("_")
}

/// Buffers of the label stage reused from one sentence to the next (one
/// set per thread, so that sentences are labelled in parallel): the tree,
/// the feature name being written, the located features of a word and
/// its scores.
#[derive(Default)]
struct Scratch {
    tree: ArcTree,
    bufs: NameBufs,
    x: SparseExample,
    scores: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` on this thread's [`Scratch`] (a fresh one if it is in use).
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

/// Sets `x` to the features of the arc `h → m` of the tree `tree` of
/// `heads` (see [`write_arc_features`]), each as bucket
/// `hash_name(name) mod n_buckets` of group `group` with value 1: the
/// group and bucket that [`crate::features::FeatureSpace::locate`] gives
/// the name under [`label_grouping`], in the order of the names.
#[allow(clippy::too_many_arguments)]
fn locate_arc_features(
    toks: &[Token],
    heads: &[usize],
    tree: &ArcTree,
    bufs: &mut NameBufs,
    h: usize,
    m: usize,
    extended: bool,
    (group, n_buckets): (u32, usize),
    x: &mut SparseExample,
) {
    let nb = n_buckets as u64;
    x.clear();
    write_arc_features(toks, heads, tree, h, m, extended, bufs, |name| {
        x.push(group, (hash_name(name) % nb) as u32, 1.0)
    });
}

/// The relation classifier and its label vocabulary (in order of first
/// appearance, so the class indices are deterministic).
#[derive(Debug, Clone, PartialEq)]
pub struct ArcLabeler {
    pub(crate) learner: NamedLearner,
    /// The prediction model frozen ([`ArcLabeler::freeze`]): then the
    /// learner is empty, and the labeler predicts and cannot learn.
    pub(crate) frozen: Option<FrozenLinear>,
    pub(crate) labels: Vec<String>,
    /// The format version whose features the weights mean: new labelers
    /// are [`LABELER_VERSION`], one loaded from version 2 bytes keeps
    /// version 2's features and table.
    pub(crate) version: u32,
}

/// Buckets of the table of a labeler of format `version` (version 2 had
/// fewer features and [`V2_TABLE_BUCKETS`]).
fn table_buckets(version: u32) -> usize {
    if version >= 3 {
        LABEL_TABLE_BUCKETS
    } else {
        V2_TABLE_BUCKETS
    }
}

impl ArcLabeler {
    /// An empty labeler with constant learning rate `eta` and ℓ2²
    /// regularisation `lam`.
    pub fn new(eta: f64, lam: f64) -> Result<Self> {
        let config = Alg1Config {
            loss: Loss::Hinge,
            schedule: Schedule::Constant { eta0: eta },
            regularizers: vec![Regularizer::L2Squared { lam }],
            radius: None,
            averaged: true,
            fit_intercept: false,
            clip_gradient: None,
        };
        Ok(ArcLabeler {
            learner: NamedLearner::new(config, label_grouping(), LABEL_TABLE_BUCKETS)?,
            frozen: None,
            labels: Vec::new(),
            version: LABELER_VERSION,
        })
    }

    /// Freezes the labeler for prediction: it keeps the non-zero averaged
    /// weights in `f32` ([`FrozenLinear`]) and drops the learner's tables;
    /// it then predicts the relations it predicted (up to the rounding of
    /// the weights) and refuses to learn. Freezing a frozen labeler does
    /// nothing.
    ///
    /// # Complexity
    /// O(buckets × relations).
    pub fn freeze(&mut self) -> Result<()> {
        if self.frozen.is_none() {
            let frozen = FrozenLinear::freeze(&self.learner, None);
            self.learner = NamedLearner::new(
                self.learner.model().config.clone(),
                label_grouping(),
                self.learner.space().n_buckets(),
            )?;
            self.frozen = Some(frozen);
        }
        Ok(())
    }

    /// Whether the labeler is frozen ([`ArcLabeler::freeze`]).
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// An error if the labeler is frozen.
    pub fn check_learnable(&self) -> Result<()> {
        if self.frozen.is_some() {
            return Err(OmklError::invalid(
                "label stage",
                "it is frozen (a compact model for prediction) and cannot learn",
            ));
        }
        Ok(())
    }

    /// The relations seen in training, by class index.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    fn check(toks: &[Token], heads: &[usize], id: &str) -> Result<()> {
        check_words(toks.len(), id)?;
        check_heads(toks.len(), heads, id)
    }

    /// One Alg. 1 round per word on the tree `heads` with the gold relations
    /// `toks[i].deprel`; returns the summed hinge loss. Validates the whole
    /// sentence first.
    pub fn learn_sentence(&mut self, toks: &[Token], heads: &[usize], id: &str) -> Result<f64> {
        self.check_learnable()?;
        Self::check(toks, heads, id)?;
        if let Some(t) = toks.iter().find(|t| t.deprel.is_empty() || t.deprel == "_") {
            return Err(OmklError::invalid(
                "deprel",
                format!("sentence {id:?}: word {:?} has no relation", t.form),
            ));
        }
        let extended = self.version >= 3;
        with_scratch(|s| {
            s.tree.fill(heads);
            let mut total = 0.0;
            for (i, t) in toks.iter().enumerate() {
                let k = match self.labels.iter().position(|l| *l == t.deprel) {
                    Some(k) => k,
                    None => {
                        self.labels.push(t.deprel.clone());
                        self.labels.len() - 1
                    }
                };
                // the group is registered by the first round that sees it
                let space = self.learner.space();
                let (group, new) = match space.group_id(LABEL_GROUP) {
                    Some(g) => (g, &[][..]),
                    None => (space.n_groups() as u32, &[LABEL_GROUP][..]),
                };
                let at = (group, space.n_buckets());
                let (h, m) = (heads[i], i + 1);
                locate_arc_features(
                    toks,
                    heads,
                    &s.tree,
                    &mut s.bufs,
                    h,
                    m,
                    extended,
                    at,
                    &mut s.x,
                );
                match self.learner.learn_hashed(&s.x, new, Target::Class(k)) {
                    Ok(l) => total += l,
                    Err(e) => {
                        if k + 1 == self.labels.len() && k >= self.learner.model().n_outputs() {
                            self.labels.pop();
                        }
                        return Err(e);
                    }
                }
            }
            Ok(total)
        })
    }

    /// The relation of every arc of the tree `heads` (`"_"` for each word
    /// before any training).
    pub fn predict(&self, toks: &[Token], heads: &[usize]) -> Result<Vec<String>> {
        Self::check(toks, heads, "<predict>")?;
        if self.labels.is_empty() {
            return Ok(vec!["_".to_string(); toks.len()]);
        }
        let extended = self.version >= 3;
        let space = self
            .frozen
            .as_ref()
            .map_or(self.learner.space(), |f| f.space());
        // features of a group the model never learned add nothing
        let at = space.group_id(LABEL_GROUP).map(|g| (g, space.n_buckets()));
        with_scratch(|s| {
            s.tree.fill(heads);
            (0..toks.len())
                .map(|i| {
                    s.x.clear();
                    if let Some(at) = at {
                        let (h, m) = (heads[i], i + 1);
                        let (tree, bufs) = (&s.tree, &mut s.bufs);
                        locate_arc_features(toks, heads, tree, bufs, h, m, extended, at, &mut s.x);
                    }
                    match &self.frozen {
                        Some(f) => f.scores_hashed(&s.x, &mut s.scores)?,
                        None => self.learner.scores_hashed(&s.x, &mut s.scores)?,
                    }
                    let z = &s.scores;
                    let n = z.len().min(self.labels.len());
                    let best = (0..n).fold(0, |b, k| if z[k] > z[b] { k } else { b });
                    Ok(self.labels[best].clone())
                })
                .collect()
        })
    }

    /// Deterministic bytes inside the envelope of [`crate::persist`]
    /// (format [`LABELER_FORMAT`]): the label list, then the learner's
    /// own sealed bytes.
    /// A frozen labeler is sealed at [`FROZEN_LABELER_VERSION`]: its
    /// features' version, the labels, then its [`FrozenLinear`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.frozen.is_some() {
            out.extend_from_slice(&self.version.to_le_bytes());
        }
        out.extend_from_slice(&(self.labels.len() as u64).to_le_bytes());
        for l in &self.labels {
            out.extend_from_slice(&(l.len() as u64).to_le_bytes());
            out.extend_from_slice(l.as_bytes());
        }
        match &self.frozen {
            Some(f) => {
                f.write(&mut out);
                crate::persist::seal(LABELER_FORMAT, FROZEN_LABELER_VERSION, &out)
            }
            None => {
                out.extend_from_slice(&self.learner.to_bytes());
                crate::persist::seal(LABELER_FORMAT, self.version, &out)
            }
        }
    }

    /// Reads bytes written by [`ArcLabeler::to_bytes`] (envelope checked
    /// first; labels must be distinct UTF-8 strings).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let versions = [2, LABELER_VERSION, FROZEN_LABELER_VERSION];
        let payload = crate::persist::open(bytes, LABELER_FORMAT, &versions)?;
        let sealed = crate::persist::peek(bytes)?.version;
        let mut r = crate::persist::Reader::new(payload, "labeler state");
        let version = if sealed == FROZEN_LABELER_VERSION {
            let v = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
            if v != 2 && v != LABELER_VERSION {
                return Err(r.error(format!("unknown feature version {v}")));
            }
            v
        } else {
            sealed
        };
        let n = r.count("label count", 8)?;
        let mut labels: Vec<String> = Vec::with_capacity(n);
        for _ in 0..n {
            let len = r.count("label length", 1)?;
            let s = r.take(len)?;
            let s = std::str::from_utf8(s).map_err(|_| r.error("label is not UTF-8"))?;
            if labels.iter().any(|l| l == s) {
                return Err(r.error(format!("label {s:?} appears twice")));
            }
            labels.push(s.to_string());
        }
        let (learner, frozen) = if sealed == FROZEN_LABELER_VERSION {
            let f = FrozenLinear::read(&mut r)?;
            r.finish()?;
            if f.n_outputs() < labels.len() {
                return Err(r.error(format!(
                    "{} relations but {} outputs",
                    labels.len(),
                    f.n_outputs()
                )));
            }
            let empty = ArcLabeler::new(0.02, 1e-6)?.learner;
            (empty, Some(f))
        } else {
            (NamedLearner::from_bytes(r.take(r.remaining())?)?, None)
        };
        let space = frozen.as_ref().map_or(learner.space(), |f| f.space());
        if space.grouping() != &label_grouping() {
            return Err(r.error(format!(
                "the label features are grouped by {:?}, expected the prefix before \"_\"",
                space.grouping()
            )));
        }
        if space.n_buckets() != table_buckets(version)
            || space.group_names().iter().any(|g| g != LABEL_GROUP)
        {
            return Err(r.error(format!(
                "saved with an older layout of the label features ({} buckets, \
                 expected one table of {} for version {version}); retrain the label stage",
                space.n_buckets(),
                table_buckets(version)
            )));
        }
        Ok(ArcLabeler {
            learner,
            frozen,
            labels,
            version,
        })
    }
}

/// Format name of the label stage's envelope.
pub const LABELER_FORMAT: &str = "omkl-arc-labeler";
/// Version of the bytes of a frozen label stage ([`ArcLabeler::freeze`]).
pub const FROZEN_LABELER_VERSION: u32 = 4;
/// Format version of the label stage's bytes. Version 2 reads the rest of
/// the tree (the modifier's dependents, its siblings, the head's head);
/// version 3 adds the words around the modifier's subtree, the nominal
/// siblings, word forms and suffixes, and has a larger table. Version 2
/// bytes still load (and predict with version 2's features); weights saved
/// by version 1 mean other features and are refused.
pub const LABELER_VERSION: u32 = 3;

#[cfg(test)]
mod tests;
