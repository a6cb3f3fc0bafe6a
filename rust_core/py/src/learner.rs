//! Python binding for `omkl_core::learner`: Alg. 1 on named features.

use std::collections::BTreeMap;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use omkl_core::features::{Grouping, SparseBatch, SparseExample, HASH_NAME, HASH_SEED};
use omkl_core::learner::named::NamedLearner;
use omkl_core::learner::Target;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{key_str, shown, to_indices};
use crate::errors::IntoPyResult;
use crate::name_cache::NameCache;
use crate::named::{alg1_config, named_learner_class, Alg1Args};

/// A feature dict read once: its names (as Python strings, non-str keys
/// converted with `str()`), their Python hashes and their values.
struct Features<'py> {
    names: Vec<Bound<'py, PyString>>,
    hashes: Vec<isize>,
    values: Vec<f64>,
}

/// Reads a feature dict; its values must convert to float.
fn features<'py>(x: &Bound<'py, PyDict>) -> PyResult<Features<'py>> {
    let n = x.len();
    let mut f = Features {
        names: Vec::with_capacity(n),
        hashes: Vec::with_capacity(n),
        values: Vec::with_capacity(n),
    };
    for (k, v) in x.iter() {
        let name = key_str(&k)?;
        let value = v.extract::<f64>().map_err(|_| {
            PyValueError::new_err(format!(
                "invalid value for `x[{:?}]`: expected a real number, got {}",
                name.to_string(),
                shown(&v)
            ))
        })?;
        f.hashes.push(name.hash()?);
        f.names.push(name);
        f.values.push(value);
    }
    Ok(f)
}

fn strs<'a>(names: &'a [Bound<'_, PyString>]) -> PyResult<Vec<&'a str>> {
    names.iter().map(|n| n.to_str()).collect()
}

/// Owned names and values of many feature dicts.
fn many(xs: &[Bound<'_, PyDict>]) -> PyResult<Vec<(Vec<String>, Vec<f64>)>> {
    xs.iter()
        .map(|x| {
            let f = features(x)?;
            let names = f.names.iter().map(|n| n.to_string()).collect();
            Ok((names, f.values))
        })
        .collect()
}

impl OnlineProximalLearner {
    /// Any learner loaded from bytes is accepted.
    fn check_loaded(_: &NamedLearner) -> PyResult<()> {
        Ok(())
    }

    /// The entries of `f` whose groups are registered, and whether that is
    /// all of them.
    fn locate(&self, f: &Features<'_>) -> PyResult<(SparseExample, bool)> {
        let mut cache = self.names();
        let space = self.inner.space();
        let n = f.names.len();
        let mut x = SparseExample {
            groups: Vec::with_capacity(n),
            indices: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
        };
        let mut all = true;
        for ((name, &hash), &v) in f.names.iter().zip(&f.hashes).zip(&f.values) {
            match cache.locate(space, name, hash)? {
                Some((g, b)) => x.push(g, b, v),
                None => all = false,
            }
        }
        Ok((x, all))
    }

    /// One round on a feature dict. An example whose groups are all
    /// registered, with finite values and a target the model already has,
    /// goes straight to the Alg. 1 state; any other takes the named
    /// learner's path, which registers groups and classes and names errors.
    fn learn_one(&mut self, x: &Bound<'_, PyDict>, target: Target) -> PyResult<f64> {
        let f = features(x)?;
        let (example, all) = self.locate(&f)?;
        let model = self.inner.model();
        if all
            && f.values.iter().all(|v| v.is_finite())
            && model
                .config()
                .loss
                .check_target(model.n_outputs(), target)
                .is_ok()
        {
            return self.inner.model_mut().learn(&example, target).py();
        }
        self.inner.learn(&strs(&f.names)?, &f.values, target).py()
    }

    /// Trains on many feature dicts with their targets, without the GIL;
    /// returns the mean loss.
    fn learn_many(
        &mut self,
        py: Python<'_>,
        xs: &[Bound<'_, PyDict>],
        targets: Vec<Target>,
    ) -> PyResult<f64> {
        let data = many(xs)?;
        let inner = &mut self.inner;
        py.detach(|| {
            let refs: Vec<(Vec<&str>, Vec<f64>)> = data
                .iter()
                .map(|(n, v)| (n.iter().map(String::as_str).collect(), v.clone()))
                .collect();
            inner.learn_many(&refs, &targets)
        })
        .py()
    }
}

named_learner_class! {
    /// Alg. 1 (online proximal learning) on named, grouped, hashed features.
    OnlineProximalLearner;

    #[new]
    fn new(
        loss: &str,
        alg1: Alg1Args,
        clip_gradient: Option<f64>,
        separator: &str,
        groups: BTreeMap<String, String>,
        n_buckets: usize,
    ) -> PyResult<Self> {
        let config = alg1_config(loss, &alg1, clip_gradient)?;
        let grouping = Grouping {
            separator: separator.to_string(),
            mapping: groups,
        };
        let inner = NamedLearner::new(config, grouping, n_buckets).py()?;
        Ok(Self::wrap(inner))
    }

    /// One round on a feature dict with class index `y`; returns the loss.
    fn learn_class(&mut self, x: &Bound<'_, PyDict>, y: usize) -> PyResult<f64> {
        self.learn_one(x, Target::Class(y))
    }

    /// One round on a feature dict with real target `y`; returns the loss.
    fn learn_value(&mut self, x: &Bound<'_, PyDict>, y: f64) -> PyResult<f64> {
        self.learn_one(x, Target::Value(y))
    }

    /// Scores of the prediction model, one per output (features of groups
    /// not seen in training have no weight).
    fn scores(&self, x: &Bound<'_, PyDict>) -> PyResult<Vec<f64>> {
        let f = features(x)?;
        if !f.values.iter().all(|v| v.is_finite()) {
            return self.inner.scores(&strs(&f.names)?, &f.values).py();
        }
        let (example, _) = self.locate(&f)?;
        self.inner.model().scores(&example).py()
    }

    /// Index of the highest score (the lowest index among ties).
    fn predict_class(&self, x: &Bound<'_, PyDict>) -> PyResult<usize> {
        let z = self.scores(x)?;
        let mut best = 0;
        for (k, &v) in z.iter().enumerate() {
            if v > z[best] {
                best = k;
            }
        }
        Ok(best)
    }

    /// Trains on many dicts with class indices, without the GIL; returns the
    /// mean loss.
    fn learn_many_classes(
        &mut self,
        py: Python<'_>,
        xs: Vec<Bound<'_, PyDict>>,
        ys: Vec<usize>,
    ) -> PyResult<f64> {
        self.learn_many(py, &xs, ys.into_iter().map(Target::Class).collect())
    }

    /// Trains on many dicts with real targets, without the GIL.
    fn learn_many_values(
        &mut self,
        py: Python<'_>,
        xs: Vec<Bound<'_, PyDict>>,
        ys: Vec<f64>,
    ) -> PyResult<f64> {
        self.learn_many(py, &xs, ys.into_iter().map(Target::Value).collect())
    }

    /// Registers groups by name; returns their ids (for pre-hashed data).
    fn add_groups(&mut self, names: Vec<String>) -> PyResult<Vec<u32>> {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        self.inner.add_groups(&refs).py()
    }

    /// Trains, without the GIL, on pre-hashed examples in compressed rows:
    /// example `i` has entries `indptr[i]..indptr[i+1]` of `(groups,
    /// indices, values)`; `classes[i]` is its class index (< n_outputs, see
    /// `set_n_outputs`). Returns the mean loss.
    fn learn_hashed_classes(
        &mut self,
        py: Python<'_>,
        indptr: PyReadonlyArray1<'_, i64>,
        groups: PyReadonlyArray1<'_, u32>,
        indices: PyReadonlyArray1<'_, u32>,
        values: PyReadonlyArray1<'_, f64>,
        classes: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<f64> {
        let to_usize = |name: &str, a: &PyReadonlyArray1<'_, i64>| {
            to_indices(name, a, |_, v| format!("expected integers >= 0, got {v}"))
        };
        let batch = SparseBatch {
            indptr: to_usize("indptr", &indptr)?,
            groups: groups.as_array().to_vec(),
            indices: indices.as_array().to_vec(),
            values: values.as_array().to_vec(),
        };
        let targets: Vec<Target> = to_usize("classes", &classes)?
            .into_iter()
            .map(Target::Class)
            .collect();
        let model = self.inner.model_mut();
        py.detach(|| model.learn_batch(&batch, &targets)).py()
    }

    /// Grows the number of outputs (classes) to `n` (never shrinks).
    fn set_n_outputs(&mut self, n: usize) -> PyResult<()> {
        self.inner.model_mut().ensure_outputs(n).py()
    }

    /// The prediction weights, laid out as `[(group · n_buckets + bucket) ·
    /// n_outputs + output]`.
    fn dense_weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.model().dense_weights().into_pyarray(py)
    }

    /// The prediction intercept, one per output.
    fn intercept(&self) -> Vec<f64> {
        self.inner.model().intercept()
    }
}

/// The stable 64-bit hash of a feature name (xxh3-64 with the fixed seed).
#[pyfunction]
fn hash_feature(name: &str) -> u64 {
    omkl_core::features::hash_name(name)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OnlineProximalLearner>()?;
    m.add_function(wrap_pyfunction!(hash_feature, m)?)?;
    m.add("HASH_NAME", HASH_NAME)?;
    m.add("HASH_SEED", HASH_SEED)?;
    Ok(())
}
