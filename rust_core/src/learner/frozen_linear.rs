//! [`FrozenLinear`]: the prediction model of a trained [`NamedLearner`]
//! (its averaged weights when it averages), frozen: the name registry, the
//! intercepts in `f64` and the template weights as [`FrozenWeights`] (the
//! non-zero entries, `f32`). It scores as the learner does, up to the
//! `f32` rounding of the weights, and cannot learn. A frozen chain tagger
//! ([`super::frozen_chain`]) and the parser's frozen label stage are built
//! on it.
//!
//! # Saved fields (little-endian)
//! `n_buckets`, `n_outputs`, the grouping (separator and mapping), the
//! group names, the hash name and seed, the intercepts, then the weights
//! ([`FrozenWeights::write`]). Strings are a `u64` length and UTF-8 bytes.
//!
//! # Example
//! ```
//! use omkl_core::features::Grouping;
//! use omkl_core::learner::frozen_linear::FrozenLinear;
//! use omkl_core::learner::named::NamedLearner;
//! use omkl_core::learner::spec::{parse_loss, parse_schedule};
//! use omkl_core::learner::{Alg1Config, Target};
//! let config = Alg1Config {
//!     loss: parse_loss("hinge").unwrap(),
//!     schedule: parse_schedule("constant", 1.0, 1.0).unwrap(),
//!     regularizers: vec![], radius: None, averaged: true, fit_intercept: true, clip_gradient: None,
//! };
//! let mut learner = NamedLearner::new(config, Grouping::by_prefix("_"), 64).unwrap();
//! for (x, k) in [("w_a", 0), ("w_b", 1), ("w_a", 0)] {
//!     learner.learn(&[x], &[1.0], Target::Class(k)).unwrap();
//! }
//! let frozen = FrozenLinear::freeze(&learner, None);
//! let (a, b) = (frozen.scores(&["w_b"], &[1.0]).unwrap(), learner.scores(&["w_b"], &[1.0]).unwrap());
//! assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6));
//! ```

use super::frozen_weights::FrozenWeights;
use super::named::NamedLearner;
use crate::error::{OmklError, Result};
use crate::features::{FeatureSpace, Grouping, SparseExample, HASH_NAME, HASH_SEED};
use crate::persist::Reader;

/// A frozen linear model over named features; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenLinear {
    space: FeatureSpace,
    intercept: Vec<f64>,
    weights: FrozenWeights,
}

impl FrozenLinear {
    /// The prediction model of `learner` (averaged weights when it
    /// averages), frozen; the group `skip` (a chain's transitions) keeps no
    /// entry.
    ///
    /// # Complexity
    /// O(groups × buckets × outputs).
    pub fn freeze(learner: &NamedLearner, skip: Option<usize>) -> Self {
        let m = learner.model();
        let w = &m.weights;
        let averaged = m.config.averaged;
        let weights = FrozenWeights::build(
            learner.space().n_groups(),
            w.n_buckets(),
            w.n_outputs(),
            |g, b, k| match () {
                _ if Some(g) == skip => 0.0,
                _ if averaged => w.averaged_weight(g, b, k),
                _ => w.weight(g, b, k),
            },
        );
        FrozenLinear {
            space: learner.space().clone(),
            intercept: if averaged {
                m.intercept()
            } else {
                m.intercept.clone()
            },
            weights,
        }
    }

    /// The name registry.
    pub fn space(&self) -> &FeatureSpace {
        &self.space
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.intercept.len()
    }

    /// The intercepts.
    pub fn intercept(&self) -> &[f64] {
        &self.intercept
    }

    /// The frozen weights.
    pub fn weights(&self) -> &FrozenWeights {
        &self.weights
    }

    /// The scores (one per output) of the features `names` with `values`;
    /// names of groups the model never learned add nothing.
    ///
    /// # Complexity
    /// O(Σ name lengths + entries of the rows read).
    pub fn scores(&self, names: &[&str], values: &[f64]) -> Result<Vec<f64>> {
        if names.len() != values.len() {
            return Err(OmklError::shape(
                "values",
                format!("one per name ({})", names.len()),
                values.len().to_string(),
            ));
        }
        let mut x = SparseExample::default();
        for (n, &v) in names.iter().zip(values) {
            if !v.is_finite() {
                return Err(OmklError::invalid(
                    format!("x[{n:?}]"),
                    format!("expected a finite number, got {v}"),
                ));
            }
            let (group, bucket) = self.space.locate(n);
            if let Some(g) = self.space.group_id(group) {
                x.push(g, bucket, v);
            }
        }
        let mut z = self.intercept.clone();
        self.weights
            .add_scores(&x.groups, &x.indices, &x.values, &mut z);
        Ok(z)
    }

    /// The scores (one per output, into `out`) of an example whose names
    /// are already located in the registry's groups: entry `i` is bucket
    /// `x.indices[i]` of group `x.groups[i]` with value `x.values[i]`. They
    /// are those of [`Self::scores`] on the names, in the same order, that
    /// [`FeatureSpace::locate`] puts there (names of groups the model never
    /// learned add nothing, so their entries are left out).
    ///
    /// # Complexity
    /// O(entries of the rows read), with no allocation once `out` has room
    /// for the outputs.
    pub fn scores_hashed(&self, x: &SparseExample, out: &mut Vec<f64>) -> Result<()> {
        x.check(self.space.n_groups(), self.space.n_buckets())?;
        out.clear();
        out.extend_from_slice(&self.intercept);
        self.weights
            .add_scores(&x.groups, &x.indices, &x.values, out);
        Ok(())
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.space.heap_bytes() + 8 * self.intercept.capacity() + self.weights.heap_bytes()
    }

    /// Appends the model's fields to `out` (see the module docs).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend((self.space.n_buckets() as u64).to_le_bytes());
        out.extend((self.intercept.len() as u64).to_le_bytes());
        let grouping = self.space.grouping();
        put_str(out, &grouping.separator);
        out.extend((grouping.mapping.len() as u64).to_le_bytes());
        for (k, v) in &grouping.mapping {
            put_str(out, k);
            put_str(out, v);
        }
        out.extend((self.space.n_groups() as u64).to_le_bytes());
        for name in self.space.group_names() {
            put_str(out, name);
        }
        put_str(out, HASH_NAME);
        out.extend(HASH_SEED.to_le_bytes());
        for v in &self.intercept {
            out.extend(v.to_le_bytes());
        }
        self.weights.write(out);
    }

    /// Reads the fields of [`Self::write`], checking each (sizes against
    /// the bytes left before allocating, finite intercepts, weights whose
    /// groups and outputs match the registry).
    pub fn read(r: &mut Reader<'_>) -> Result<Self> {
        let n_buckets = r.u64()? as usize;
        let n_outputs = r.count("the number of outputs", 8)?;
        let separator = read_str(r)?;
        let n_map = r.count("the number of mapped names", 16)?;
        let mut mapping = std::collections::BTreeMap::new();
        for _ in 0..n_map {
            let k = read_str(r)?;
            let v = read_str(r)?;
            mapping.insert(k, v);
        }
        let n_groups = r.count("the number of groups", 8)?;
        let names = (0..n_groups)
            .map(|_| read_str(r))
            .collect::<Result<Vec<_>>>()?;
        let hash = read_str(r)?;
        let seed = r.u64()?;
        if hash != HASH_NAME || seed != HASH_SEED {
            return Err(r.error(format!(
                "the model was saved with hash {hash} seed {seed}, but this version uses \
                 {HASH_NAME} seed {HASH_SEED}"
            )));
        }
        let space = FeatureSpace::with_groups(Grouping { separator, mapping }, n_buckets, names)?;
        if n_outputs == 0 {
            return Err(r.error("expected at least one output"));
        }
        let intercept = read_finite(r, n_outputs, "intercepts")?;
        let weights = FrozenWeights::read(r, n_buckets)?;
        if weights.n_outputs() != n_outputs || weights.groups().len() != n_groups {
            return Err(r.error(format!(
                "the weights have {} outputs and {} groups, expected {n_outputs} and {n_groups}",
                weights.n_outputs(),
                weights.groups().len()
            )));
        }
        Ok(FrozenLinear {
            space,
            intercept,
            weights,
        })
    }
}

/// Appends a string as a `u64` length and its UTF-8 bytes.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A string of a `u64` length and UTF-8 bytes.
pub(crate) fn read_str(r: &mut Reader<'_>) -> Result<String> {
    let n = r.count("a string length", 1)?;
    let b = r.take(n)?;
    String::from_utf8(b.to_vec()).map_err(|_| r.error("a string is not UTF-8"))
}

/// `n` finite little-endian `f64`s (`what` names them in errors).
pub(crate) fn read_finite(r: &mut Reader<'_>, n: usize, what: &str) -> Result<Vec<f64>> {
    if n.checked_mul(8).is_none_or(|b| b > r.remaining()) {
        return Err(r.error(format!("{n} {what} need more bytes than are left")));
    }
    (0..n)
        .map(|_| {
            let v = r.f64()?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(r.error(format!("expected finite {what}, got {v}")))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::spec::{parse_loss, parse_regularizer, parse_schedule};
    use crate::learner::{Alg1Config, Target};

    #[test]
    fn scores_are_the_learners_and_bytes_round_trip() {
        for averaged in [true, false] {
            let config = Alg1Config {
                loss: parse_loss("hinge").unwrap(),
                schedule: parse_schedule("constant", 0.3, 1.0).unwrap(),
                regularizers: vec![parse_regularizer("l2_squared", &[1e-3]).unwrap()],
                radius: None,
                averaged,
                fit_intercept: true,
                clip_gradient: None,
            };
            let mut l = NamedLearner::new(config, Grouping::by_prefix("_"), 16).unwrap();
            let xs = ["a_1", "a_2", "b_1", "b_x", "c_q"];
            for i in 0..60usize {
                let names = [xs[i % 5], xs[(i * 7) % 5]];
                l.learn(&names, &[1.0, 0.5], Target::Class(i % 3)).unwrap();
            }
            let f = FrozenLinear::freeze(&l, None);
            let mut bytes = Vec::new();
            f.write(&mut bytes);
            let mut r = Reader::new(&bytes, "w");
            let back = FrozenLinear::read(&mut r).unwrap();
            r.finish().unwrap();
            assert_eq!(back, f);
            for names in [&["a_1"][..], &["b_x", "c_q"], &["zz_unknown", "a_2"]] {
                let v = vec![1.0; names.len()];
                let (p, q) = (
                    back.scores(names, &v).unwrap(),
                    l.scores(names, &v).unwrap(),
                );
                for (a, b) in p.iter().zip(&q) {
                    assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} {b}");
                }
            }
            for cut in 0..bytes.len() {
                assert!(FrozenLinear::read(&mut Reader::new(&bytes[..cut], "w")).is_err());
            }
            assert!(back.scores(&["a_1"], &[f64::NAN]).is_err());
        }
    }
}
