//! Parameters as named flat arrays, for iterative parameter mixing.
//!
//! A model's learnable state is exported as [`Params`]: for every list of
//! [`ScaledBlock`]s, the *materialised* weights `θ = s · a` of all blocks
//! one after the other, and (for averaged models) the materialised running
//! sums `Σ_τ θ_τ = a P − b`; round counters are one-element arrays. Mixing
//! models is then a plain weighted average of the arrays of the same name.
//! Importing sets every block to scale 1, raw values `θ`, running-sum
//! factor `P = 0` and sums `b = −Σ` (so that `a P − b` is the imported
//! sum), with the squared norm recomputed exactly from `θ`. State outside
//! the parameters (group names, classes, table sizes) is not exported: the
//! models that are mixed must agree on it, and a length that does not
//! match is an error.
//!
//! # Example
//! ```
//! use omkl_core::features::Grouping;
//! use omkl_core::learner::mix::Array;
//! use omkl_core::learner::named::NamedLearner;
//! use omkl_core::learner::{Alg1Config, Loss, Schedule, Target};
//! let config = Alg1Config {
//!     loss: Loss::Hinge,
//!     schedule: Schedule::Constant { eta0: 0.5 },
//!     regularizers: vec![],
//!     radius: None,
//!     averaged: true,
//!     fit_intercept: false,
//!     clip_gradient: None,
//! };
//! let mut a = NamedLearner::new(config, Grouping::by_prefix("_"), 4).unwrap();
//! a.register(&["w"], 2).unwrap();
//! let mut b = a.clone();
//! a.learn(&["w_x"], &[1.0], Target::Class(1)).unwrap();
//! b.import_params(&a.export_params(""), "").unwrap();
//! assert_eq!(b.export_params(""), a.export_params(""));
//! assert_eq!(a.export_params("")["rounds"], Array::F64(vec![1.0]));
//! ```

use std::collections::BTreeMap;

use super::named::NamedLearner;
use super::weights::{Real, ScaledBlock};
use crate::error::{OmklError, Result};

/// One exported array, in the storage type of its blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Array {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Array::F32(v) => v.len(),
            Array::F64(v) => v.len(),
        }
    }

    /// `true` when the array holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A model's parameters by name.
pub type Params = BTreeMap<String, Array>;

/// The storage types that can be exported.
pub trait MixReal: Real {
    /// Wraps values of this type.
    fn wrap(v: Vec<Self>) -> Array;
    /// The values of `a` when it holds this type.
    fn unwrap(a: &Array) -> Option<&[Self]>;
    /// Name of the type in messages.
    const NAME: &'static str;
}

/// `impl MixReal` for a storage type and its `Array` variant.
macro_rules! mix_real {
    ($t:ty, $variant:ident, $name:literal) => {
        impl MixReal for $t {
            fn wrap(v: Vec<Self>) -> Array {
                Array::$variant(v)
            }
            fn unwrap(a: &Array) -> Option<&[Self]> {
                match a {
                    Array::$variant(v) => Some(v),
                    _ => None,
                }
            }
            const NAME: &'static str = $name;
        }
    };
}

mix_real!(f32, F32, "float32");
mix_real!(f64, F64, "float64");

/// Adds `{prefix}weights` (and, when `averaged`, `{prefix}sums`) holding
/// the materialised weights (and running sums) of `blocks`, in order.
///
/// # Complexity
/// O(total length).
pub fn export_blocks<T: MixReal>(
    blocks: &[ScaledBlock<T>],
    averaged: bool,
    prefix: &str,
    out: &mut Params,
) {
    let n = blocks.iter().map(ScaledBlock::len).sum();
    let mut w = Vec::with_capacity(n);
    let mut s = Vec::with_capacity(if averaged { n } else { 0 });
    for b in blocks {
        w.extend((0..b.len()).map(|i| T::from_f64(b.get(i))));
        if averaged {
            s.extend((0..b.len()).map(|i| T::from_f64(b.average_sum(i))));
        }
    }
    out.insert(format!("{prefix}weights"), T::wrap(w));
    if averaged {
        out.insert(format!("{prefix}sums"), T::wrap(s));
    }
}

/// The array `name` of `p`: present, of type `T`, of length `len`, every
/// value finite; otherwise an error naming it and what was expected.
pub fn take<'a, T: MixReal>(p: &'a Params, name: &str, len: usize) -> Result<&'a [T]> {
    let what = format!("params[{name:?}]");
    let a = p
        .get(name)
        .ok_or_else(|| OmklError::invalid(&what, "missing: the model exports this array"))?;
    let v = T::unwrap(a)
        .ok_or_else(|| OmklError::invalid(&what, format!("expected an array of {}", T::NAME)))?;
    if v.len() != len {
        return Err(OmklError::shape(
            what,
            format!("{len} values (the model's layout)"),
            v.len().to_string(),
        ));
    }
    if let Some(i) = v.iter().position(|x| !x.to_f64().is_finite()) {
        return Err(OmklError::invalid(
            what,
            format!("expected finite values, got {:?} at {i}", v[i]),
        ));
    }
    Ok(v)
}

/// The round counter `name` of `p` (a one-element array holding a finite
/// number ≥ 0), rounded to the nearest integer.
pub fn take_count(p: &Params, name: &str) -> Result<u64> {
    let v = take::<f64>(p, name, 1)?[0];
    if v < 0.0 || v > u64::MAX as f64 {
        return Err(OmklError::invalid(
            format!("params[{name:?}]"),
            format!("expected a count >= 0, got {v}"),
        ));
    }
    Ok(v.round() as u64)
}

/// Checks that `p` holds what [`export_blocks`] writes for `blocks`.
pub fn check_blocks<T: MixReal>(
    blocks: &[ScaledBlock<T>],
    averaged: bool,
    prefix: &str,
    p: &Params,
) -> Result<()> {
    let n = blocks.iter().map(ScaledBlock::len).sum();
    take::<T>(p, &format!("{prefix}weights"), n)?;
    if averaged {
        take::<T>(p, &format!("{prefix}sums"), n)?;
    }
    Ok(())
}

/// Sets `blocks` from arrays checked by [`check_blocks`] (see the module
/// documentation); without `averaged`, the running sums are left as they
/// are (the blocks keep none).
///
/// # Complexity
/// O(total length).
pub fn import_blocks<T: MixReal>(
    blocks: &mut [ScaledBlock<T>],
    averaged: bool,
    prefix: &str,
    p: &Params,
) -> Result<()> {
    check_blocks(blocks, averaged, prefix, p)?;
    let n = blocks.iter().map(ScaledBlock::len).sum();
    let w = take::<T>(p, &format!("{prefix}weights"), n)?;
    let s = if averaged {
        take::<T>(p, &format!("{prefix}sums"), n)?
    } else {
        &[]
    };
    let mut at = 0;
    for blk in blocks {
        let len = blk.len();
        let (a, b) = blk.parts_mut();
        a.copy_from_slice(&w[at..at + len]);
        if averaged {
            for (bv, sv) in b.iter_mut().zip(&s[at..at + len]) {
                *bv = T::from_f64(-sv.to_f64());
            }
        }
        let q = a.iter().map(|v| v.to_f64() * v.to_f64()).sum();
        blk.restore((1.0, q, 0.0), &[], &[], &[], None);
        at += len;
    }
    Ok(())
}

impl NamedLearner {
    /// The learnable state as named arrays (names start with `prefix`):
    /// `weights` (group after group, buckets × outputs each), `sums` (the
    /// running sums, averaged learners only), `intercept`,
    /// `intercept_sums`, and the counters `rounds` (the schedule's clock)
    /// and `average_rounds` (rounds in the running sums).
    pub fn export_params(&self, prefix: &str) -> Params {
        let m = &self.model;
        let mut out = Params::new();
        out.insert(format!("{prefix}weights"), Array::F64(m.weights.dense()));
        if m.weights.averaged {
            out.insert(format!("{prefix}sums"), Array::F64(m.weights.dense_sums()));
        }
        let f = |v: &[f64]| Array::F64(v.to_vec());
        out.insert(format!("{prefix}intercept"), f(&m.intercept));
        out.insert(format!("{prefix}intercept_sums"), f(&m.intercept_sum));
        out.insert(format!("{prefix}rounds"), f(&[m.t as f64]));
        out.insert(
            format!("{prefix}average_rounds"),
            f(&[m.weights.rounds as f64]),
        );
        out
    }

    /// Sets the learnable state from arrays laid out as by
    /// [`NamedLearner::export_params`] for this learner's groups and
    /// outputs. Everything is checked first: on error nothing changes.
    pub fn import_params(&mut self, p: &Params, prefix: &str) -> Result<()> {
        let k = self.model.n_outputs();
        let w = &self.model.weights;
        let averaged = w.averaged;
        let n = w.n_groups() * w.n_buckets() * w.n_outputs();
        let weights = take::<f64>(p, &format!("{prefix}weights"), n)?;
        let sums = if averaged {
            take::<f64>(p, &format!("{prefix}sums"), n)?
        } else {
            &[]
        };
        let b = take::<f64>(p, &format!("{prefix}intercept"), k)?.to_vec();
        let bs = take::<f64>(p, &format!("{prefix}intercept_sums"), k)?.to_vec();
        let t = take_count(p, &format!("{prefix}rounds"))?;
        let r = take_count(p, &format!("{prefix}average_rounds"))?;
        self.model.weights.set_dense(weights, sums)?;
        let m = &mut self.model;
        (m.intercept, m.intercept_sum, m.t, m.weights.rounds) = (b, bs, t, r);
        Ok(())
    }

    /// Registers the groups `groups` (in order, known ones skipped) and
    /// grows the outputs to `n_outputs`, so that learners which will be
    /// mixed share their layout before the first round.
    pub fn register(&mut self, groups: &[&str], n_outputs: usize) -> Result<()> {
        let (g0, k0) = (self.space.n_groups(), self.model.n_outputs());
        let done = self
            .add_groups(groups)
            .and_then(|_| self.model.ensure_outputs(n_outputs));
        if done.is_err() {
            self.model.shrink_to(g0, k0);
            self.space.truncate(g0);
        }
        done
    }

    /// A chain learner's [`NamedLearner::register`]: registers the
    /// templates `groups` and grows the labels to `n_labels`, checking
    /// that they fit the transition group. On error nothing changes.
    pub fn register_chain(&mut self, groups: &[&str], n_labels: usize) -> Result<()> {
        self.model.transition_group()?;
        self.model.check_labels_fit(n_labels)?;
        self.register(groups, n_labels)
    }

    /// The groups of the feature names `names`, each once, in order of
    /// first appearance.
    pub fn feature_groups<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<String> = Vec::new();
        for n in names {
            let (g, _) = self.space.locate(n);
            if seen.insert(g.to_string()) {
                out.push(g.to_string());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::Grouping;
    use crate::learner::{Alg1Config, Loss, Schedule, Target};
    use crate::prox::Regularizer;

    fn learner() -> NamedLearner {
        let config = Alg1Config {
            loss: Loss::Logistic,
            schedule: Schedule::InvSqrt { eta0: 0.5 },
            regularizers: vec![Regularizer::GroupLasso { lam: 0.01 }],
            radius: Some(3.0),
            averaged: true,
            fit_intercept: true,
            clip_gradient: None,
        };
        NamedLearner::new(config, Grouping::by_prefix("_"), 8).unwrap()
    }

    fn rounds(m: &mut NamedLearner, from: usize, to: usize) {
        for i in from..to {
            let v = (i as f64 * 0.7).sin();
            let names = ["a_x", "a_y", "b_z"];
            m.learn(&names, &[v, 1.0 - v, 0.5], Target::Class(i % 3))
                .unwrap();
        }
    }

    fn assert_close(a: &Params, b: &Params) {
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (k, x) in a {
            let (Array::F64(x), Array::F64(y)) = (x, &b[k]) else {
                panic!("{k}: not f64")
            };
            for (u, v) in x.iter().zip(y) {
                assert!((u - v).abs() <= 1e-12 * (1.0 + u.abs()), "{k}: {u} vs {v}");
            }
        }
    }

    #[test]
    fn an_imported_learner_goes_on_as_the_original() {
        let mut a = learner();
        rounds(&mut a, 0, 20);
        let mut b = learner();
        b.register(&["a", "b"], 3).unwrap();
        b.import_params(&a.export_params(""), "").unwrap();
        assert_eq!(b.export_params(""), a.export_params(""));
        rounds(&mut a, 20, 40);
        rounds(&mut b, 20, 40);
        assert_close(&b.export_params(""), &a.export_params(""));
    }

    #[test]
    fn bad_arrays_are_refused_and_change_nothing() {
        let mut a = learner();
        rounds(&mut a, 0, 5);
        let before = a.export_params("");
        let mut short = before.clone();
        short.insert("weights".into(), Array::F64(vec![0.0; 3]));
        let e = a.import_params(&short, "").unwrap_err().to_string();
        assert!(e.contains("params[\"weights\"]"), "{e}");
        let mut nan = before.clone();
        nan.insert("intercept".into(), Array::F64(vec![f64::NAN; 3]));
        assert!(a.import_params(&nan, "").is_err());
        let mut f32s = before.clone();
        f32s.insert("sums".into(), Array::F32(vec![0.0; before["sums"].len()]));
        assert!(a
            .import_params(&f32s, "")
            .unwrap_err()
            .to_string()
            .contains("float64"));
        assert_eq!(a.export_params(""), before);
    }
}
