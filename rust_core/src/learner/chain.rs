//! Alg. 1 on the chain structure: a sequence tagger on hashed grouped
//! sparse features.
//!
//! A sequence of `n` positions is a [`SparseBatch`] whose row `i` holds the
//! features of position `i`. The emission score of label `y` at position
//! `i` is `b_y + Σ x w_{g,b,y}` over the entries of row `i` (the same
//! [`super::GroupedWeights`] as the multiclass learner, outputs = labels);
//! the transition scores live in one more group of the same weights (see
//! [`super::structure`]). A round computes the scores, the loss and its
//! gradient ([`chain_loss_grad`](super::structure::chain_loss_grad)), takes the gradient step of every
//! position and of the transitions, then the same prox steps, projection
//! and averaging as the multiclass round
//! (`OnlineProximal::finish_round`).
//!
//! # Cost of a round
//! O(non-zeros × labels + n × labels²) for the scores, the decoding and the
//! gradient step, plus the prox part of the multiclass round (O(#groups)
//! for ℓ2², the group lasso, the squared ℓ2,1 and the projection), so that
//! it does not depend on how many features were ever seen. The entry-wise
//! regularisers (`L1`, `SparseGroupLasso`, `L1Ball`) keep their exact prox
//! on every weight written so far, O(model support) per round.

use std::collections::BTreeMap;

use super::named::NamedLearner;
use super::online_proximal::{Alg1Config, OnlineProximal};
use super::structure::{
    chain_argmax, chain_loss_grad_scratch, chain_marginals, chain_of, ChainScratch, ChainWorkspace,
    Structure,
};
use crate::decode::chain::{all_finite, ChainScores};
use crate::error::{check_finite, OmklError, Result};
use crate::features::{FeatureSpace, Grouping, SparseBatch, HASH_SEED};

/// Name of the group that holds the transition weights of a chain learner.
pub const TRANSITIONS: &str = "<transitions>";

/// The bucket of the indicator feature `key=value`:
/// `xxh3_64("key=value", HASH_SEED) mod n_buckets`, without building the
/// string.
///
/// # Example
/// ```
/// use omkl_core::features::hash_name;
/// use omkl_core::learner::chain::indicator_bucket;
/// assert_eq!(indicator_bucket("word", "the", 1000) as u64, hash_name("word=the") % 1000);
/// ```
pub fn indicator_bucket(key: &str, value: &str, n_buckets: usize) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(HASH_SEED);
    h.update(key.as_bytes());
    h.update(b"=");
    h.update(value.as_bytes());
    (h.digest() % n_buckets as u64) as u32
}

/// The bucket of the transition group that holds row `r` of the `(L + 2)
/// × L` transition table: the start scores in bucket 0, the stop scores in
/// bucket 1, the scores after label `p` in bucket `p + 2`, so that the
/// layout does not change when labels are added.
#[inline]
fn transition_bucket(r: usize, l: usize) -> usize {
    match r.checked_sub(l) {
        Some(k) => k,
        None => r + 2,
    }
}

/// A chain decoder: the chain's scores, workspace.
type ChainDecoder<T> = fn(&ChainScores<'_>, &mut ChainWorkspace) -> Result<T>;

impl OnlineProximal {
    /// The group of the transitions, or an error if the learner is not a
    /// chain learner.
    pub fn transition_group(&self) -> Result<usize> {
        match self.structure {
            Structure::Chain { transitions } => Ok(transitions as usize),
            Structure::Multiclass => Err(OmklError::invalid(
                "structure",
                "this learner is multiclass, not a chain",
            )),
        }
    }

    /// Checks that `n_labels` labels fit the transition group (`L + 2`
    /// buckets: previous label, start, stop).
    pub(crate) fn check_labels_fit(&self, n_labels: usize) -> Result<()> {
        let nb = self.weights.n_buckets();
        if n_labels + 2 > nb {
            return Err(OmklError::invalid(
                "ys",
                format!(
                    "{n_labels} labels need n_buckets >= {}, but n_buckets is {nb}",
                    n_labels + 2
                ),
            ));
        }
        Ok(())
    }

    /// Grows the labels to `n_labels` (never shrinks), checking that they
    /// fit the transition group.
    pub fn ensure_chain_labels(&mut self, n_labels: usize) -> Result<()> {
        if n_labels > self.n_outputs() {
            self.check_labels_fit(n_labels)?;
            self.ensure_outputs(n_labels)?;
        }
        Ok(())
    }

    /// The emission (`n × L`) and transition (`(L + 2) × L`) scores of
    /// `seq` under the last or the averaged iterate. `seq` must be valid.
    ///
    /// # Complexity
    /// O(non-zeros × L + L²).
    fn chain_scores_into(
        &self,
        seq: &SparseBatch,
        averaged: bool,
        em: &mut Vec<f64>,
        tr: &mut Vec<f64>,
    ) {
        self.chain_scores_read(seq, averaged, em, tr, None);
    }

    /// [`Self::chain_scores_into`] that also reads, while each row of the
    /// transitions is in cache, the column maxima of the bigram part into
    /// `summary.0` and whether every transition is finite into `summary.1`
    /// (so that decoding need not read the `(L + 2) × L` matrix again).
    fn chain_scores_read(
        &self,
        seq: &SparseBatch,
        averaged: bool,
        em: &mut Vec<f64>,
        tr: &mut Vec<f64>,
        mut summary: Option<(&mut Vec<f64>, &mut bool)>,
    ) {
        let (n, l) = (seq.n_examples(), self.n_outputs());
        let gt = self.transition_group().unwrap_or(0);
        let b0 = if averaged {
            self.intercept()
        } else {
            self.intercept.clone()
        };
        em.clear();
        for i in 0..n {
            em.extend_from_slice(&b0);
            let (g, b, v) = seq.row(i);
            self.weights.add_scores(g, b, v, averaged, &mut em[i * l..]);
        }
        // every row is written below
        tr.resize((l + 2) * l, 0.0);
        let avg = averaged && self.config.averaged;
        let mut finite = true;
        if let Some((col_max, _)) = summary.as_mut() {
            col_max.clear();
        }
        for (r, row) in tr.chunks_exact_mut(l.max(1)).enumerate() {
            self.weights.row_into(gt, transition_bucket(r, l), avg, row);
            if let Some((col_max, _)) = summary.as_mut() {
                if r == 0 {
                    col_max.extend_from_slice(row);
                } else if r < l {
                    for (c, &t) in col_max.iter_mut().zip(row.iter()) {
                        *c = c.max(t);
                    }
                }
                finite &= all_finite(row);
            }
        }
        if let Some((_, f)) = summary {
            *f = finite;
        }
    }

    /// Checks the positions and entries of a sequence against the model's
    /// groups, buckets and transition group: what [`Self::learn_chain`]
    /// checks of `seq` before its round. A sequence that passes may be given
    /// to [`Self::learn_checked_chain`] for as long as the model has the
    /// same [`Self::chain_dims`].
    pub fn check_chain_entries(&self, seq: &SparseBatch) -> Result<()> {
        let gt = self.transition_group()?;
        if seq.n_examples() == 0 {
            return Err(OmklError::empty("xs (a sequence of at least one position)"));
        }
        seq.check(self.n_groups(), self.weights.n_buckets())?;
        if let Some(i) = seq.groups.iter().position(|&g| g as usize == gt) {
            return Err(OmklError::invalid(
                "xs",
                format!("entry {i} uses the transition group {gt}"),
            ));
        }
        Ok(())
    }

    /// What [`Self::check_chain_entries`] checks against: the numbers of
    /// groups and buckets and the transition group.
    pub fn chain_dims(&self) -> Result<(usize, usize, usize)> {
        Ok((
            self.n_groups(),
            self.weights.n_buckets(),
            self.transition_group()?,
        ))
    }

    /// [`Self::learn_chain`] on a sequence that [`Self::check_chain_entries`]
    /// accepted while the model had its current [`Self::chain_dims`]: the
    /// entries are not checked again, the labels are. A corpus read once
    /// and learned from for many epochs is then checked once.
    pub fn learn_checked_chain(&mut self, seq: &SparseBatch, labels: &[usize]) -> Result<f64> {
        self.check_labels(seq.n_examples(), labels)?;
        let mut s = std::mem::take(&mut self.chain);
        let r = self.chain_round(seq, labels, &mut s);
        self.chain = s;
        r
    }

    /// Checks a sequence (and its labels, if any) against the model.
    fn check_sequence(&self, seq: &SparseBatch, labels: Option<&[usize]>) -> Result<usize> {
        self.check_chain_entries(seq)?;
        let n = seq.n_examples();
        if let Some(y) = labels {
            self.check_labels(n, y)?;
        }
        Ok(n)
    }

    /// Checks one label per position, each below the number of outputs.
    fn check_labels(&self, n: usize, y: &[usize]) -> Result<()> {
        if y.len() != n {
            return Err(OmklError::shape(
                "ys",
                format!("one label per position ({n})"),
                y.len().to_string(),
            ));
        }
        if let Some((i, &k)) = y.iter().enumerate().find(|(_, &k)| k >= self.n_outputs()) {
            return Err(OmklError::invalid(
                "ys",
                format!("label {k} at position {i} is not < {}", self.n_outputs()),
            ));
        }
        Ok(())
    }

    /// One round of Alg. 1 on the labelled sequence `(seq, labels)`;
    /// returns the loss at the current iterate before the update. On error
    /// the model is unchanged.
    ///
    /// # Complexity
    /// O(non-zeros × L + n × L² + #groups) (see the module docs).
    pub fn learn_chain(&mut self, seq: &SparseBatch, labels: &[usize]) -> Result<f64> {
        self.check_sequence(seq, Some(labels))?;
        let mut s = std::mem::take(&mut self.chain);
        let r = self.chain_round(seq, labels, &mut s);
        self.chain = s;
        r
    }

    /// The round on a checked sequence.
    fn chain_round(&mut self, seq: &SparseBatch, y: &[usize], s: &mut ChainScratch) -> Result<f64> {
        let (n, l) = (y.len(), self.n_outputs());
        self.chain_scores_read(
            seq,
            false,
            &mut s.em,
            &mut s.tr,
            Some((&mut s.col_max, &mut s.tr_finite)),
        );
        check_finite("scores (feature values too large)", &s.em)?;
        let loss = chain_loss_grad_scratch(self.config.loss, n, l, y, s)?;
        let r = self.chain_step(seq, n, l, s);
        // the transition gradient is written only in the rows listed
        for &prev in &s.gtr_rows {
            s.gtr[prev * l..(prev + 1) * l].fill(0.0);
        }
        s.gtr_zero = true;
        r.map(|()| loss)
    }

    /// Steps of a chain round from the gradients in `s` (see
    /// [`chain_loss_grad_scratch`]); on error the model is unchanged.
    fn chain_step(
        &mut self,
        seq: &SparseBatch,
        n: usize,
        l: usize,
        s: &mut ChainScratch,
    ) -> Result<()> {
        if let Some(c) = self.config.clip_gradient {
            s.gem.iter_mut().for_each(|v| *v = v.clamp(-c, c));
            for &prev in &s.gtr_rows {
                s.gtr[prev * l..(prev + 1) * l]
                    .iter_mut()
                    .for_each(|v| *v = v.clamp(-c, c));
            }
        }
        check_finite("loss gradient", &s.gem)?;
        for i in 0..n {
            let (g, b, v) = seq.row(i);
            self.check_update(g, b, v, &s.gem[i * l..(i + 1) * l])?;
        }
        // the rows that the steps write, before anything changes
        let gt = self.transition_group()?;
        for i in 0..n {
            if s.gem[i * l..(i + 1) * l].iter().any(|&v| v != 0.0) {
                let (g, b, v) = seq.row(i);
                self.weights.ensure_rows(g, b, v)?;
            }
        }
        for &prev in &s.gtr_rows {
            if s.gtr[prev * l..(prev + 1) * l].iter().any(|&v| v != 0.0) {
                self.weights.ensure_row(gt, transition_bucket(prev, l))?;
            }
        }
        let eta = self.config.schedule.rate(self.t + 1);
        for i in 0..n {
            let (g, b, v) = seq.row(i);
            self.gradient_rows(g, b, v, &s.gem[i * l..(i + 1) * l], eta);
        }
        for &prev in &s.gtr_rows {
            let row = &s.gtr[prev * l..(prev + 1) * l];
            self.nz.clear();
            self.nz
                .extend((0..l).filter(|&k| row[k] != 0.0).map(|k| k as u32));
            if !self.nz.is_empty() {
                self.weights.axpy_bucket_sparse(
                    gt,
                    transition_bucket(prev, l),
                    -eta,
                    &self.nz,
                    row,
                );
            }
        }
        self.finish_round(eta)
    }

    /// The highest-scoring labelling of `seq` under the prediction model.
    ///
    /// # Complexity
    /// O(non-zeros × L + n × L²).
    pub fn predict_chain(&self, seq: &SparseBatch) -> Result<Vec<usize>> {
        self.decode_chain(seq, chain_argmax)
    }

    /// The position marginals (`n × L`) of the CRF of `seq` under the
    /// prediction model.
    ///
    /// # Complexity
    /// O(non-zeros × L + n × L²).
    pub fn chain_marginals(&self, seq: &SparseBatch) -> Result<Vec<f64>> {
        self.decode_chain(seq, chain_marginals)
    }

    /// `decode` (emissions, transitions, n, L, workspace) applied to the
    /// prediction model's scores of `seq`.
    fn decode_chain<T>(&self, seq: &SparseBatch, decode: ChainDecoder<T>) -> Result<T> {
        let n = self.check_sequence(seq, None)?;
        let (mut em, mut tr) = (Vec::new(), Vec::new());
        self.chain_scores_into(seq, true, &mut em, &mut tr);
        let chain = chain_of(&em, &tr, n, self.n_outputs())?;
        decode(&chain, &mut ChainWorkspace::default())
    }

    /// The transition weights of the prediction model, `(L + 2) × L`.
    pub fn transition_weights(&self) -> Result<Vec<f64>> {
        self.transition_group()?;
        let (mut em, mut tr) = (Vec::new(), Vec::new());
        self.chain_scores_into(
            &SparseBatch {
                indptr: vec![0],
                ..Default::default()
            },
            true,
            &mut em,
            &mut tr,
        );
        Ok(tr)
    }
}

/// A labelled sequence whose features are named by their group: position
/// `i` holds entries `indptr[i]..indptr[i + 1]` of `(groups, buckets,
/// values)`.
#[derive(Debug, Clone, Copy)]
pub struct NamedSequence<'a> {
    pub indptr: &'a [usize],
    pub groups: &'a [&'a str],
    pub buckets: &'a [u32],
    pub values: &'a [f64],
}

impl NamedLearner {
    /// An empty chain learner (no feature group, one label): group 0 holds
    /// the transitions. `mapping` names the group of the features it lists;
    /// any other feature is a group of its own (its template).
    pub fn new_chain(
        config: Alg1Config,
        mapping: BTreeMap<String, String>,
        n_buckets: usize,
    ) -> Result<Self> {
        if !config.loss.is_multiclass() {
            return Err(OmklError::invalid(
                "loss",
                "a chain takes the hinge or the log (CRF) loss, not the squared loss",
            ));
        }
        if let Some((k, _)) = mapping.iter().find(|(_, g)| g.as_str() == TRANSITIONS) {
            return Err(OmklError::invalid(
                format!("groups[{k:?}]"),
                format!("{TRANSITIONS:?} is the name of the transition group"),
            ));
        }
        let grouping = Grouping {
            separator: "\0".into(),
            mapping,
        };
        let space = FeatureSpace::with_groups(grouping, n_buckets, vec![TRANSITIONS.into()])?;
        let mut model = OnlineProximal::new(config, 1, n_buckets, 1)?;
        model.structure = Structure::Chain { transitions: 0 };
        model.check_labels_fit(1)?;
        Ok(NamedLearner { space, model })
    }

    /// Checks the shape of a named sequence and returns its length.
    fn check_named(&self, x: &NamedSequence<'_>, labels: &[usize]) -> Result<usize> {
        let n = labels.len();
        let m = x.groups.len();
        if n == 0 {
            return Err(OmklError::empty("xs (a sequence of at least one position)"));
        }
        if x.indptr.len() != n + 1 {
            return Err(OmklError::shape(
                "ys",
                format!(
                    "one label per position ({})",
                    x.indptr.len().saturating_sub(1)
                ),
                n.to_string(),
            ));
        }
        if x.indptr[0] != 0 || x.indptr[n] != m || x.indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(OmklError::invalid(
                "indptr",
                "expected non-decreasing offsets from 0 to the number of entries",
            ));
        }
        if x.buckets.len() != m || x.values.len() != m {
            return Err(OmklError::shape(
                "values",
                format!("{m} entries"),
                x.values.len().to_string(),
            ));
        }
        let nb = self.space.n_buckets();
        for (i, w) in x.indptr.windows(2).enumerate() {
            for j in w[0]..w[1] {
                if !x.values[j].is_finite() {
                    return Err(OmklError::invalid(
                        format!("xs[{i}][{:?}]", x.groups[j]),
                        format!("expected a finite number, got {}", x.values[j]),
                    ));
                }
                if x.buckets[j] as usize >= nb {
                    return Err(OmklError::invalid(
                        "buckets",
                        format!("bucket {} is not < {nb}", x.buckets[j]),
                    ));
                }
            }
        }
        Ok(n)
    }

    /// One round on a sequence named by groups; groups and labels are
    /// added as they appear (a label may be at most the number of labels
    /// known at its position). On error nothing changes.
    pub fn learn_sequence(&mut self, x: &NamedSequence<'_>, labels: &[usize]) -> Result<f64> {
        self.model.transition_group()?;
        self.check_named(x, labels)?;
        let (g0, k0) = (self.space.n_groups(), self.model.n_outputs());
        let mut known = if self.model.rounds() == 0 && k0 == 1 {
            0
        } else {
            k0
        };
        for (i, &k) in labels.iter().enumerate() {
            if k > known {
                return Err(OmklError::invalid(
                    "ys",
                    format!("label {k} at position {i}: expected a label index <= {known}"),
                ));
            }
            known = known.max(k + 1);
        }
        self.model.check_labels_fit(known)?;
        let groups: Vec<&str> = x
            .groups
            .iter()
            .map(|n| self.space.grouping().group_of(n))
            .collect();
        if let Some(j) = groups.iter().position(|&g| g == TRANSITIONS) {
            return Err(OmklError::invalid(
                format!("xs[...][{:?}]", x.groups[j]),
                format!("{TRANSITIONS:?} is the name of the transition group"),
            ));
        }
        let (ids, new_groups) = self.group_ids(groups.iter().copied());
        let seq = SparseBatch {
            indptr: x.indptr.to_vec(),
            groups: ids,
            indices: x.buckets.to_vec(),
            values: x.values.to_vec(),
        };
        let new_groups: Vec<String> = new_groups.into_iter().map(str::to_string).collect();
        self.grow_then((g0, k0), &new_groups, Some(known.max(k0)), |m| {
            m.learn_chain(&seq, labels)
        })
    }

    /// The group ids of `names` (registering new ones; an error, nothing
    /// registered, for the transition group's name).
    pub fn chain_groups(&mut self, names: &[&str]) -> Result<Vec<u32>> {
        if let Some(n) = names
            .iter()
            .find(|n| self.space.grouping().group_of(n) == TRANSITIONS)
        {
            return Err(OmklError::invalid(
                format!("xs[...][{n:?}]"),
                format!("{TRANSITIONS:?} is the name of the transition group"),
            ));
        }
        let groups: Vec<&str> = names
            .iter()
            .map(|n| self.space.grouping().group_of(n))
            .collect();
        let groups: Vec<String> = groups.into_iter().map(str::to_string).collect();
        let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
        self.add_groups(&refs)
    }
}

#[cfg(test)]
mod tests;
