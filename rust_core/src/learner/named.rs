//! Alg. 1 on named features: grouping, hashing and growth of groups and
//! classes as they appear.

use super::loss::Target;
use super::online_proximal::{Alg1Config, OnlineProximal};
use crate::error::{OmklError, Result};
use crate::features::{FeatureSpace, Grouping, SparseExample};

/// A learner of Alg. 1 whose examples are `(feature name, value)` pairs.
///
/// Feature names are mapped to a group (see [`Grouping`]) and a bucket of
/// that group's own hash table; unseen groups are added as they appear, and
/// so are classes (a class index equal to the current number of outputs
/// adds an output). A failed round leaves the learner unchanged.
///
/// # Example
/// ```
/// use omkl_core::features::Grouping;
/// use omkl_core::learner::named::NamedLearner;
/// use omkl_core::learner::{Alg1Config, Loss, Schedule, Target};
/// let config = Alg1Config {
///     loss: Loss::Hinge,
///     schedule: Schedule::Constant { eta0: 0.1 },
///     regularizers: vec![],
///     radius: None,
///     averaged: false,
///     fit_intercept: false,
///     clip_gradient: None,
/// };
/// let mut m = NamedLearner::new(config, Grouping::by_prefix("_"), 64).unwrap();
/// m.learn(&["word_a", "len"], &[1.0, 2.0], Target::Class(0)).unwrap();
/// m.learn(&["word_b"], &[1.0], Target::Class(1)).unwrap();
/// assert_eq!(m.space().group_names(), ["word", "len"]);
/// assert_eq!(m.model().n_outputs(), 2);
/// assert!(m.learn(&["x"], &[f64::NAN], Target::Class(0)).unwrap_err().to_string().contains("\"x\""));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NamedLearner {
    pub(crate) space: FeatureSpace,
    pub(crate) model: OnlineProximal,
}

impl NamedLearner {
    /// An empty learner (no groups; one output).
    pub fn new(config: Alg1Config, grouping: Grouping, n_buckets: usize) -> Result<Self> {
        let space = FeatureSpace::new(grouping, n_buckets)?;
        let model = OnlineProximal::new(config, 0, n_buckets, 1)?;
        Ok(NamedLearner { space, model })
    }

    /// The name registry.
    pub fn space(&self) -> &FeatureSpace {
        &self.space
    }

    /// The underlying Alg. 1 state.
    pub fn model(&self) -> &OnlineProximal {
        &self.model
    }

    /// Mutable access to the underlying state (for pre-hashed batches).
    pub fn model_mut(&mut self) -> &mut OnlineProximal {
        &mut self.model
    }

    /// Registers groups by name (in order), returning their ids.
    pub fn add_groups(&mut self, names: &[&str]) -> Result<Vec<u32>> {
        let mut fresh = self.space.n_groups();
        for n in names {
            if self.space.group_id(n).is_none() {
                fresh += 1;
            }
        }
        self.model.config.check(fresh)?;
        let ids: Vec<u32> = names.iter().map(|n| self.space.intern(n)).collect();
        self.model.ensure_groups(self.space.n_groups())?;
        Ok(ids)
    }

    fn check_values(names: &[&str], values: &[f64]) -> Result<()> {
        if names.len() != values.len() {
            return Err(OmklError::shape(
                "values",
                format!("one per name ({})", names.len()),
                values.len().to_string(),
            ));
        }
        for (n, v) in names.iter().zip(values) {
            if !v.is_finite() {
                return Err(OmklError::invalid(
                    format!("x[{n:?}]"),
                    format!("expected a finite number, got {v}"),
                ));
            }
        }
        Ok(())
    }

    /// The example restricted to known groups (unknown groups have zero
    /// weights).
    fn known_example(&self, names: &[&str], values: &[f64]) -> SparseExample {
        let mut x = SparseExample::default();
        for (n, &v) in names.iter().zip(values) {
            let (group, bucket) = self.space.locate(n);
            if let Some(g) = self.space.group_id(group) {
                x.push(g, bucket, v);
            }
        }
        x
    }

    /// Scores of the prediction model (one per output).
    ///
    /// # Complexity
    /// O(Σ name lengths + non-zeros × outputs).
    pub fn scores(&self, names: &[&str], values: &[f64]) -> Result<Vec<f64>> {
        Self::check_values(names, values)?;
        self.model.scores(&self.known_example(names, values))
    }

    /// Index of the highest score (the lowest index among ties).
    pub fn predict_class(&self, names: &[&str], values: &[f64]) -> Result<usize> {
        let z = self.scores(names, values)?;
        let mut best = 0;
        for (k, &v) in z.iter().enumerate() {
            if v > z[best] {
                best = k;
            }
        }
        Ok(best)
    }

    /// Checks that `target` is a class index at most the current number of
    /// outputs `k0` (a new class only for a multiclass loss) or a target of
    /// the loss.
    fn check_target(&self, k0: usize, target: Target) -> Result<()> {
        if let Target::Class(k) = target {
            if k > k0 || (k == k0 && !self.model.config.loss.is_multiclass()) {
                return Err(OmklError::invalid(
                    "y",
                    format!("expected a class index <= {k0}, got {k}"),
                ));
            }
        }
        self.model.config.loss.check_target(k0 + 1, target)
    }

    /// One round of Alg. 1. A class index may be at most the current number
    /// of outputs (which then grows by one). On error nothing changes.
    pub fn learn(&mut self, names: &[&str], values: &[f64], target: Target) -> Result<f64> {
        Self::check_values(names, values)?;
        let (g0, k0) = (self.space.n_groups(), self.model.n_outputs());
        self.check_target(k0, target)?;
        let located: Vec<(&str, u32)> = names.iter().map(|n| self.space.locate(n)).collect();
        let (ids, new_groups) = self.group_ids(located.iter().map(|&(g, _)| g));
        let mut x = SparseExample::default();
        for ((g, &(_, bucket)), &v) in ids.into_iter().zip(&located).zip(values) {
            x.push(g, bucket, v);
        }
        let new_groups: Vec<String> = new_groups.into_iter().map(str::to_string).collect();
        let outputs = match target {
            Target::Class(k) => Some(k + 1),
            _ => None,
        };
        self.grow_then((g0, k0), &new_groups, outputs, |m| m.learn(&x, target))
    }

    /// One round of Alg. 1 on an example whose names are already located:
    /// entry `i` is bucket `x.indices[i]` of group `x.groups[i]` with value
    /// `x.values[i]`, where a group id below [`FeatureSpace::n_groups`] is a
    /// registered group and id `n_groups + j` the new group
    /// `new_groups[j]`, registered by the round. It is the round
    /// [`Self::learn`] makes on names that [`FeatureSpace::locate`] puts in
    /// these groups and buckets, in the same order, so the two give the
    /// same model. A class index may be at most the current number of
    /// outputs (which then grows by one). On error nothing changes.
    ///
    /// # Complexity
    /// O(non-zeros × outputs), with no allocation when `new_groups` is
    /// empty and no class is new (beyond the model's own per round).
    ///
    /// # Example
    /// ```
    /// use omkl_core::features::{Grouping, SparseExample};
    /// use omkl_core::learner::named::NamedLearner;
    /// use omkl_core::learner::{Alg1Config, Loss, Schedule, Target};
    /// let config = Alg1Config {
    ///     loss: Loss::Hinge,
    ///     schedule: Schedule::Constant { eta0: 0.1 },
    ///     regularizers: vec![],
    ///     radius: None,
    ///     averaged: true,
    ///     fit_intercept: false,
    ///     clip_gradient: None,
    /// };
    /// let mut a = NamedLearner::new(config, Grouping::by_prefix("_"), 64).unwrap();
    /// let mut b = a.clone();
    /// a.learn(&["word_a", "word_b"], &[1.0, 2.0], Target::Class(0)).unwrap();
    /// let mut x = SparseExample::default();
    /// for (name, v) in [("word_a", 1.0), ("word_b", 2.0)] {
    ///     x.push(0, b.space().locate(name).1, v);
    /// }
    /// b.learn_hashed(&x, &["word"], Target::Class(0)).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn learn_hashed(
        &mut self,
        x: &SparseExample,
        new_groups: &[&str],
        target: Target,
    ) -> Result<f64> {
        let (g0, k0) = (self.space.n_groups(), self.model.n_outputs());
        for (j, name) in new_groups.iter().enumerate() {
            if self.space.group_id(name).is_some() || new_groups[..j].contains(name) {
                return Err(OmklError::invalid(
                    "new_groups",
                    format!("group {name:?} is registered or listed twice"),
                ));
            }
        }
        x.check(g0 + new_groups.len(), self.space.n_buckets())?;
        self.check_target(k0, target)?;
        let new_groups: Vec<String> = new_groups.iter().map(|g| g.to_string()).collect();
        let outputs = match target {
            Target::Class(k) => Some(k + 1),
            _ => None,
        };
        self.grow_then((g0, k0), &new_groups, outputs, |m| m.learn(x, target))
    }

    /// The scores of the prediction model (one per output, into `out`) of an
    /// example whose names are already located in registered groups (see
    /// [`Self::learn_hashed`]): those of [`Self::scores`] on the names, in
    /// the same order, that [`FeatureSpace::locate`] puts there (names of
    /// unregistered groups add nothing, so their entries are left out).
    ///
    /// # Complexity
    /// O(non-zeros × outputs), with no allocation once `out` has room for
    /// the outputs.
    pub fn scores_hashed(&self, x: &SparseExample, out: &mut Vec<f64>) -> Result<()> {
        x.check(self.space.n_groups(), self.space.n_buckets())?;
        // the intercept of the prediction model, as `OnlineProximal::intercept`
        let m = &self.model;
        out.clear();
        if m.config.averaged && m.t > 0 {
            out.extend(m.intercept_sum.iter().map(|s| s / m.t as f64));
        } else {
            out.extend_from_slice(&m.intercept);
        }
        m.weights
            .add_scores(&x.groups, &x.indices, &x.values, m.config.averaged, out);
        Ok(())
    }

    /// Registers the `new_groups` (once the configuration is checked for
    /// them), grows the model to the space's groups and to `n_outputs`
    /// outputs, then runs `learn` on it; on error the model and the space
    /// go back to `g0` groups and `k0` outputs.
    pub(crate) fn grow_then<T>(
        &mut self,
        (g0, k0): (usize, usize),
        new_groups: &[String],
        n_outputs: Option<usize>,
        learn: impl FnOnce(&mut OnlineProximal) -> Result<T>,
    ) -> Result<T> {
        self.model.config.check(g0 + new_groups.len())?;
        for name in new_groups {
            self.space.intern(name);
        }
        let result = self
            .model
            .ensure_groups(self.space.n_groups())
            .and_then(|_| n_outputs.map_or(Ok(()), |k| self.model.ensure_outputs(k)))
            .and_then(|_| learn(&mut self.model));
        if result.is_err() {
            self.model.shrink_to(g0, k0);
            self.space.truncate(g0);
        }
        result
    }

    /// The id of every group of `groups`: registered groups keep theirs,
    /// new ones are numbered from the current count in order of first
    /// appearance (as [`FeatureSpace::intern`] will number them). Also
    /// returns the new group names, in that order.
    pub(crate) fn group_ids<'a>(
        &self,
        groups: impl IntoIterator<Item = &'a str>,
    ) -> (Vec<u32>, Vec<&'a str>) {
        let g0 = self.space.n_groups();
        let mut new_groups: Vec<&str> = Vec::new();
        let ids = groups
            .into_iter()
            .map(|group| match self.space.group_id(group) {
                Some(g) => g,
                None => match new_groups.iter().position(|s| *s == group) {
                    Some(j) => (g0 + j) as u32,
                    None => {
                        new_groups.push(group);
                        (g0 + new_groups.len() - 1) as u32
                    }
                },
            })
            .collect();
        (ids, new_groups)
    }

    /// Trains on many named examples in order. Every example is validated
    /// as it comes; on error the examples before it stay learned and the
    /// error names the example.
    pub fn learn_many(
        &mut self,
        examples: &[(Vec<&str>, Vec<f64>)],
        targets: &[Target],
    ) -> Result<f64> {
        if examples.len() != targets.len() {
            return Err(OmklError::shape(
                "y",
                format!("one target per example ({})", examples.len()),
                targets.len().to_string(),
            ));
        }
        let mut total = 0.0;
        for (i, ((names, values), &t)) in examples.iter().zip(targets).enumerate() {
            total += self.learn(names, values, t).map_err(|e| match e {
                // memory that cannot be had stays a MemoryError
                OmklError::Alloc { .. } => e,
                e => OmklError::invalid(format!("example {i}"), e.to_string()),
            })?;
        }
        Ok(total / examples.len().max(1) as f64)
    }

    /// `(group name, ‖w_g‖)` for every group of the prediction model.
    pub fn group_norms(&self) -> Vec<(String, f64)> {
        self.space
            .group_names()
            .iter()
            .cloned()
            .zip(self.model.group_norms())
            .collect()
    }

    /// Heap bytes held by the learner (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.space.heap_bytes() + self.model.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::frozen_linear::FrozenLinear;
    use crate::learner::{Loss, Schedule};
    use crate::prox::Regularizer;

    fn learner(averaged: bool) -> NamedLearner {
        let config = Alg1Config {
            loss: Loss::Hinge,
            schedule: Schedule::Constant { eta0: 0.3 },
            regularizers: vec![Regularizer::L2Squared { lam: 1e-3 }],
            radius: None,
            averaged,
            fit_intercept: true,
            clip_gradient: None,
        };
        NamedLearner::new(config, Grouping::by_prefix("_"), 16).unwrap()
    }

    /// The located example of `names`: registered groups by id, new ones
    /// numbered on from the registry's count (returned in order).
    fn locate<'a>(
        l: &NamedLearner,
        names: &[&'a str],
        values: &[f64],
    ) -> (SparseExample, Vec<&'a str>) {
        let mut x = SparseExample::default();
        let mut fresh: Vec<&str> = Vec::new();
        for (n, &v) in names.iter().zip(values) {
            let (group, bucket) = l.space().locate(n);
            let g = match l.space().group_id(group) {
                Some(g) => g as usize,
                None => {
                    let group = &n[..group.len()];
                    let j = fresh.iter().position(|f| *f == group).unwrap_or_else(|| {
                        fresh.push(group);
                        fresh.len() - 1
                    });
                    l.space().n_groups() + j
                }
            };
            x.push(g as u32, bucket, v);
        }
        (x, fresh)
    }

    #[test]
    fn hashed_rounds_and_scores_are_the_named_ones() {
        let rounds: [(&[&str], &[f64], usize); 6] = [
            (&["a_1", "b_2"], &[1.0, 0.5], 0),
            (&["a_1", "c_x", "a_1"], &[1.0, -2.0, 1.0], 1),
            (&["b_3", "d_q", "c_y"], &[0.25, 1.0, 3.0], 2),
            (&["a_2"], &[1.0], 0),
            (&["d_q", "b_2"], &[1.0, 1.0], 3),
            (&["c_x", "a_9", "e_1"], &[2.0, 1.0, 1.0], 1),
        ];
        for averaged in [false, true] {
            let (mut named, mut hashed) = (learner(averaged), learner(averaged));
            for _ in 0..3 {
                for (names, values, k) in rounds {
                    let (x, fresh) = locate(&hashed, names, values);
                    let a = named.learn(names, values, Target::Class(k)).unwrap();
                    let b = hashed.learn_hashed(&x, &fresh, Target::Class(k)).unwrap();
                    assert_eq!(a.to_bits(), b.to_bits());
                    assert_eq!(named, hashed);
                    let mut z = vec![7.0; 2];
                    for (n, v) in [
                        (names, values),
                        (&["a_1", "zz_unknown"][..], &[1.0, 1.0][..]),
                    ] {
                        let (x, fresh) = locate(&hashed, n, v);
                        // entries of unregistered groups are left out
                        let keep: Vec<usize> = (0..x.len())
                            .filter(|&i| (x.groups[i] as usize) < hashed.space().n_groups())
                            .collect();
                        assert!(fresh.is_empty() || keep.len() < x.len());
                        let mut known = SparseExample::default();
                        for i in keep {
                            known.push(x.groups[i], x.indices[i], x.values[i]);
                        }
                        hashed.scores_hashed(&known, &mut z).unwrap();
                        let want = named.scores(n, v).unwrap();
                        let bits = |z: &[f64]| z.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&z), bits(&want));
                        let frozen = FrozenLinear::freeze(&hashed, None);
                        frozen.scores_hashed(&known, &mut z).unwrap();
                        assert_eq!(bits(&z), bits(&frozen.scores(n, v).unwrap()));
                    }
                }
            }
            assert_eq!(named.to_bytes(), hashed.to_bytes());
        }
    }

    #[test]
    fn bad_hashed_rounds_change_nothing() {
        let mut l = learner(true);
        l.learn(&["a_1"], &[1.0], Target::Class(0)).unwrap();
        let before = l.clone();
        let mut x = SparseExample::default();
        x.push(0, 3, 1.0);
        // a registered group listed as new, a group listed twice
        assert!(l.learn_hashed(&x, &["a"], Target::Class(0)).is_err());
        assert!(l.learn_hashed(&x, &["b", "b"], Target::Class(0)).is_err());
        // a group id past the new ones, a bucket past the table
        x.push(2, 0, 1.0);
        assert!(l.learn_hashed(&x, &["b"], Target::Class(0)).is_err());
        let mut y = SparseExample::default();
        y.push(0, 16, 1.0);
        assert!(l.learn_hashed(&y, &[], Target::Class(0)).is_err());
        // a class index past the new one, a value that is not finite
        y = SparseExample::default();
        y.push(0, 1, 1.0);
        assert!(l.learn_hashed(&y, &[], Target::Class(2)).is_err());
        y.values[0] = f64::NAN;
        assert!(l.learn_hashed(&y, &["b"], Target::Class(1)).is_err());
        assert!(l.scores_hashed(&y, &mut Vec::new()).is_err());
        assert_eq!(l, before);
        assert_eq!(l.space().n_groups(), 1);
    }
}
