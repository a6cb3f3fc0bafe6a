//! [`FrozenChain`]: a trained chain tagger frozen for prediction. It keeps
//! the prediction model of a [`NamedLearner`] chain (the averaged weights
//! when it averages) and nothing of its training state: the template
//! weights as [`FrozenWeights`] (the non-zero entries, `f32`), the
//! intercepts and the `(L + 2) × L` transition scores in `f64`, and the
//! name registry. Its predictions are those of the learner it was frozen
//! from, its scores equal to `f32` rounding of the weights.
//!
//! # Saved bytes
//! The envelope of [`crate::persist`], format [`FORMAT`], around
//! little-endian fields: the rounds, the emission model
//! ([`FrozenLinear::write`]), then the `(L + 2) × L` transition scores.
//!
//! # Example
//! ```
//! use std::collections::BTreeMap;
//! use omkl_core::learner::frozen_chain::FrozenChain;
//! use omkl_core::learner::chain::NamedSequence;
//! use omkl_core::learner::named::NamedLearner;
//! use omkl_core::learner::spec::{parse_loss, parse_schedule};
//! use omkl_core::learner::Alg1Config;
//! let config = Alg1Config {
//!     loss: parse_loss("hinge").unwrap(),
//!     schedule: parse_schedule("constant", 1.0, 1.0).unwrap(),
//!     regularizers: vec![], radius: None, averaged: true, fit_intercept: false, clip_gradient: None,
//! };
//! let mut learner = NamedLearner::new_chain(config, BTreeMap::new(), 64).unwrap();
//! let x = NamedSequence { indptr: &[0, 1, 2], groups: &["w", "w"], buckets: &[3, 9], values: &[1.0, 1.0] };
//! for _ in 0..3 {
//!     learner.learn_sequence(&x, &[0, 1]).unwrap();
//! }
//! let frozen = FrozenChain::freeze(&learner).unwrap();
//! let w = learner.space().group_id("w").unwrap();
//! let seq = omkl_core::features::SparseBatch {
//!     indptr: vec![0, 1, 2], groups: vec![w, w], indices: vec![3, 9], values: vec![1.0, 1.0],
//! };
//! assert_eq!(frozen.predict(&seq).unwrap(), learner.model().predict_chain(&seq).unwrap());
//! let back = FrozenChain::from_bytes(&frozen.to_bytes()).unwrap();
//! assert_eq!(back, frozen);
//! ```

use super::chain::TRANSITIONS;
use super::frozen_linear::{read_finite, FrozenLinear};
use super::frozen_weights::{Found, FrozenWeights};
use super::named::NamedLearner;
use super::structure::{chain_argmax, chain_marginals, chain_of, ChainWorkspace};
use crate::decode::chain::{all_finite, ChainScores};
use crate::decode::forward_backward::{forward_backward_nodes, ForwardBackwardWorkspace};
use crate::decode::viterbi::{column_maxima, viterbi_with_column_max, ViterbiWorkspace};
use crate::error::{OmklError, Result};
use crate::features::{FeatureSpace, SparseBatch};
use crate::persist::Reader;

/// Format name of the envelope.
pub const FORMAT: &str = "omkl-frozen-chain";
/// Format version.
pub const VERSION: u32 = 1;

/// A frozen chain tagger; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenChain {
    /// The emission model: labels are its outputs, the transition group
    /// (group 0) holds no entry.
    linear: FrozenLinear,
    /// Rounds the learner had learned when it was frozen.
    rounds: u64,
    transitions: Vec<f64>,
    /// The largest transition score into each label (from a previous
    /// label), for the bounded Viterbi steps; made with the transitions.
    col_max: Vec<f64>,
    /// Whether every transition score is finite (so that a sentence's
    /// chain needs only its emissions checked).
    finite: bool,
}

/// Buffers of [`FrozenChain::predict_with`] and
/// [`FrozenChain::marginals_with`], reused from one sentence to the next.
#[derive(Debug, Clone, Default)]
pub struct FrozenChainWorkspace {
    found: Vec<Found>,
    em: Vec<f64>,
    viterbi: ViterbiWorkspace,
    fb: ForwardBackwardWorkspace,
    labels: Vec<usize>,
    node: Vec<f64>,
}

impl FrozenChainWorkspace {
    /// The labels of the last [`FrozenChain::predict_with`].
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }
}

fn bad(reason: impl Into<String>) -> OmklError {
    OmklError::invalid("frozen tagger", reason)
}

impl FrozenChain {
    /// The prediction model of the chain learner `learner` (its averaged
    /// weights when it averages), frozen. An error if `learner` is not a
    /// chain learner.
    ///
    /// # Complexity
    /// O(groups × buckets × labels).
    pub fn freeze(learner: &NamedLearner) -> Result<Self> {
        let m = learner.model();
        let gt = m.transition_group()?;
        let linear = FrozenLinear::freeze(learner, Some(gt));
        Ok(Self::with_transitions(
            linear,
            m.rounds(),
            m.transition_weights()?,
        ))
    }

    /// The chain of `linear`, `rounds` and `transitions`, with what is
    /// derived from the transitions.
    fn with_transitions(linear: FrozenLinear, rounds: u64, transitions: Vec<f64>) -> Self {
        let l = linear.n_outputs();
        let col_max = if transitions.len() >= l * l {
            column_maxima(&transitions, l)
        } else {
            Vec::new()
        };
        let finite = all_finite(&transitions) && col_max.len() == l;
        FrozenChain {
            linear,
            rounds,
            transitions,
            col_max,
            finite,
        }
    }

    /// The name registry (group names, grouping, buckets).
    pub fn space(&self) -> &FeatureSpace {
        self.linear.space()
    }

    /// Number of labels.
    pub fn n_labels(&self) -> usize {
        self.linear.n_outputs()
    }

    /// Rounds the learner had learned when it was frozen.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The frozen template weights.
    pub fn weights(&self) -> &FrozenWeights {
        self.linear.weights()
    }

    /// The transition scores, `(L + 2) × L` (rows: previous label, then
    /// start, then stop).
    pub fn transitions(&self) -> &[f64] {
        &self.transitions
    }

    /// The norm of each group's frozen weights, by group name (the
    /// transition group's is the norm of the transition scores).
    pub fn group_norms(&self) -> Vec<(String, f64)> {
        let names = self.space().group_names();
        names
            .iter()
            .zip(self.weights().groups())
            .map(|(n, g)| {
                let norm = if n == TRANSITIONS {
                    self.transitions.iter().map(|t| t * t).sum::<f64>().sqrt()
                } else {
                    g.norm()
                };
                (n.clone(), norm)
            })
            .collect()
    }

    /// The emission scores (`n × L`) of `seq`.
    fn emissions(&self, seq: &SparseBatch) -> Result<Vec<f64>> {
        let n = seq.n_examples();
        if n == 0 {
            return Err(OmklError::empty("xs (a sequence of at least one position)"));
        }
        seq.check(self.space().n_groups(), self.space().n_buckets())?;
        let l = self.n_labels();
        let mut em = Vec::with_capacity(n * l);
        for i in 0..n {
            em.extend_from_slice(self.linear.intercept());
            let (g, b, v) = seq.row(i);
            self.weights().add_scores(g, b, v, &mut em[i * l..]);
        }
        Ok(em)
    }

    /// The Viterbi labelling of `seq` (group ids of this model's registry).
    ///
    /// # Complexity
    /// O(non-zeros × entries per row + n × L²).
    pub fn predict(&self, seq: &SparseBatch) -> Result<Vec<usize>> {
        let em = self.emissions(seq)?;
        let chain = chain_of(&em, &self.transitions, seq.n_examples(), self.n_labels())?;
        chain_argmax(&chain, &mut ChainWorkspace::default())
    }

    /// The CRF position marginals (`n × L`) of `seq`.
    pub fn marginals(&self, seq: &SparseBatch) -> Result<Vec<f64>> {
        let em = self.emissions(seq)?;
        let chain = chain_of(&em, &self.transitions, seq.n_examples(), self.n_labels())?;
        chain_marginals(&chain, &mut ChainWorkspace::default())
    }

    /// The emission scores of `seq` into `ws.em` (the additions of
    /// [`Self::predict`]'s, in the same order).
    fn emissions_with(&self, seq: &SparseBatch, ws: &mut FrozenChainWorkspace) -> Result<()> {
        if seq.n_examples() == 0 {
            return Err(OmklError::empty("xs (a sequence of at least one position)"));
        }
        seq.check(self.space().n_groups(), self.space().n_buckets())?;
        self.weights().add_rows(
            &seq.indptr,
            (&seq.groups, &seq.indices, &seq.values),
            self.linear.intercept(),
            &mut ws.found,
            &mut ws.em,
        );
        Ok(())
    }

    /// The chain of the emissions in `ws.em` (`n` positions), its
    /// transitions checked once when the chain was made; `None` when a
    /// score is not finite (the checked path then reports it).
    fn chain_with<'a>(&'a self, em: &'a [f64], n: usize) -> Option<ChainScores<'a>> {
        let l = self.n_labels();
        if !self.finite || !all_finite(em) {
            return None;
        }
        let (bigram, rest) = self.transitions.split_at(l * l);
        let (start, stop) = rest.split_at(l);
        Some(ChainScores {
            em,
            tr: bigram,
            start: Some(start),
            stop: Some(stop),
            n,
            l,
        })
    }

    /// [`Self::predict`] with reused buffers: the same labels, left in
    /// `ws` (and returned). The emissions stay in `ws` for
    /// [`Self::marginals_with`].
    ///
    /// # Complexity
    /// O(non-zeros × entries per row + n × L²), with no O(L²) work that
    /// does not depend on the sentence.
    pub fn predict_with<'w>(
        &self,
        seq: &SparseBatch,
        ws: &'w mut FrozenChainWorkspace,
    ) -> Result<&'w [usize]> {
        self.emissions_with(seq, ws)?;
        let n = seq.n_examples();
        ws.labels.clear();
        ws.labels.resize(n, 0);
        match self.chain_with(&ws.em, n) {
            Some(chain) => {
                viterbi_with_column_max(&chain, &self.col_max, &mut ws.viterbi, &mut ws.labels)?;
            }
            None => {
                let chain = chain_of(&ws.em, &self.transitions, n, self.n_labels())?;
                ws.labels = chain_argmax(&chain, &mut ChainWorkspace::default())?;
            }
        }
        Ok(&ws.labels)
    }

    /// [`Self::marginals`] of the sequence whose emissions
    /// [`Self::predict_with`] left in `ws` (`n` positions): the same
    /// values, bit for bit, left in `ws` (and returned).
    pub fn marginals_with<'w>(
        &self,
        n: usize,
        ws: &'w mut FrozenChainWorkspace,
    ) -> Result<&'w [f64]> {
        let l = self.n_labels();
        if ws.em.len() != n * l {
            return Err(OmklError::shape(
                "emissions",
                format!("{n} x {l} scores"),
                ws.em.len().to_string(),
            ));
        }
        ws.node.clear();
        ws.node.resize(n * l, 0.0);
        match self.chain_with(&ws.em, n) {
            Some(chain) => {
                forward_backward_nodes(&chain, &mut ws.fb, &mut ws.node)?;
            }
            None => {
                let chain = chain_of(&ws.em, &self.transitions, n, l)?;
                ws.node = chain_marginals(&chain, &mut ChainWorkspace::default())?;
            }
        }
        Ok(&ws.node)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.linear.heap_bytes() + 8 * (self.transitions.capacity() + self.col_max.capacity())
    }

    /// The frozen tagger as bytes (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(self.rounds.to_le_bytes());
        self.linear.write(&mut out);
        for v in &self.transitions {
            out.extend(v.to_le_bytes());
        }
        crate::persist::seal(FORMAT, VERSION, &out)
    }

    /// Reads bytes of [`Self::to_bytes`], checking the envelope and every
    /// field (never a panic, and no allocation larger than the bytes can
    /// back).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &[VERSION])?;
        let mut r = Reader::new(payload, "frozen tagger");
        let rounds = r.u64()?;
        let linear = FrozenLinear::read(&mut r)?;
        let l = linear.n_outputs();
        if linear.space().group_names().first().map(String::as_str) != Some(TRANSITIONS) {
            return Err(bad(format!("group 0 must be {TRANSITIONS:?}")));
        }
        if l + 2 > linear.space().n_buckets() {
            return Err(bad(format!(
                "expected at most n_buckets - 2 = {} labels, got {l}",
                linear.space().n_buckets().saturating_sub(2)
            )));
        }
        if linear.weights().groups()[0].n_entries() != 0 {
            return Err(bad("the transition group holds template weights"));
        }
        let transitions = read_finite(&mut r, (l + 2) * l, "transition scores")?;
        r.finish()?;
        Ok(Self::with_transitions(linear, rounds, transitions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::chain::NamedSequence;
    use crate::learner::spec::{parse_loss, parse_regularizer, parse_schedule};
    use crate::learner::Alg1Config;
    use std::collections::BTreeMap;

    fn learner(averaged: bool, loss: &str) -> NamedLearner {
        let config = Alg1Config {
            loss: parse_loss(loss).unwrap(),
            schedule: parse_schedule("constant", 0.5, 1.0).unwrap(),
            regularizers: vec![parse_regularizer("l2_squared", &[1e-3]).unwrap()],
            radius: None,
            averaged,
            fit_intercept: true,
            clip_gradient: None,
        };
        NamedLearner::new_chain(config, BTreeMap::new(), 32).unwrap()
    }

    /// A named sequence: offsets, group names, buckets, values, labels.
    type Example = (
        Vec<usize>,
        Vec<&'static str>,
        Vec<u32>,
        Vec<f64>,
        Vec<usize>,
    );

    /// Sequences of 1 to 5 positions over 3 templates and 4 labels.
    fn data(seed: u64) -> Vec<Example> {
        let mut s = seed | 1;
        let mut next = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        // a label is at most the number of labels seen before it
        let mut known = 0;
        (0..40)
            .map(|_| {
                let n = 1 + next(5) as usize;
                let mut indptr = vec![0];
                let (mut g, mut b, mut v, mut y) = (vec![], vec![], vec![], vec![]);
                for _ in 0..n {
                    let label = (next(4) as usize).min(known);
                    known = known.max(label + 1);
                    for t in ["w", "s", "p"] {
                        g.push(t);
                        b.push((label as u64 * 5 + next(3)) as u32);
                        v.push(1.0);
                    }
                    indptr.push(g.len());
                    y.push(label);
                }
                (indptr, g, b, v, y)
            })
            .collect()
    }

    /// The sequence `x` with the group ids of `l`'s registry.
    fn batch(l: &NamedLearner, x: &NamedSequence<'_>) -> SparseBatch {
        SparseBatch {
            indptr: x.indptr.to_vec(),
            groups: x
                .groups
                .iter()
                .map(|g| l.space().group_id(g).unwrap())
                .collect(),
            indices: x.buckets.to_vec(),
            values: x.values.to_vec(),
        }
    }

    #[test]
    fn frozen_predictions_and_marginals_are_the_learners() {
        for (averaged, loss) in [(true, "hinge"), (false, "hinge"), (true, "log")] {
            let mut l = learner(averaged, loss);
            let d = data(7);
            for _ in 0..3 {
                for (indptr, g, b, v, y) in &d {
                    let x = NamedSequence {
                        indptr,
                        groups: g,
                        buckets: b,
                        values: v,
                    };
                    l.learn_sequence(&x, y).unwrap();
                }
            }
            let f = FrozenChain::freeze(&l).unwrap();
            let back = FrozenChain::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(back, f);
            for (indptr, g, b, v, _) in &d {
                let x = NamedSequence {
                    indptr,
                    groups: g,
                    buckets: b,
                    values: v,
                };
                let seq = batch(&l, &x);
                let m = l.model();
                assert_eq!(back.predict(&seq).unwrap(), m.predict_chain(&seq).unwrap());
                // the reused buffers give the same labels and, bit for bit,
                // the same marginals
                let mut ws = FrozenChainWorkspace::default();
                let ids = back.predict_with(&seq, &mut ws).unwrap().to_vec();
                assert_eq!(ids, back.predict(&seq).unwrap());
                let mu = back.marginals_with(seq.n_examples(), &mut ws).unwrap();
                assert_eq!(mu, &back.marginals(&seq).unwrap()[..]);
                let (p, q) = (
                    back.marginals(&seq).unwrap(),
                    m.chain_marginals(&seq).unwrap(),
                );
                for (a, b) in p.iter().zip(&q) {
                    assert!((a - b).abs() <= 1e-5, "{a} {b}");
                }
            }
            assert!(f.weights().n_entries() > 0);
        }
    }

    #[test]
    fn every_cut_and_a_multiclass_learner_are_refused() {
        let mut l = learner(true, "hinge");
        let d = data(3);
        let (indptr, g, b, v, y) = &d[0];
        let x = NamedSequence {
            indptr,
            groups: g,
            buckets: b,
            values: v,
        };
        l.learn_sequence(&x, y).unwrap();
        let bytes = FrozenChain::freeze(&l).unwrap().to_bytes();
        for cut in 0..bytes.len() {
            assert!(FrozenChain::from_bytes(&bytes[..cut]).is_err());
        }
        let config = l.model().config.clone();
        let multi =
            NamedLearner::new(config, crate::features::Grouping::by_prefix("_"), 32).unwrap();
        assert!(FrozenChain::freeze(&multi).is_err());
    }
}
