//! Python binding for `omkl_core::learner`: Alg. 1 on named features.

use std::collections::BTreeMap;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use omkl_core::features::{Grouping, SparseBatch, HASH_NAME, HASH_SEED};
use omkl_core::learner::named::NamedLearner;
use omkl_core::learner::spec::{parse_loss, parse_regularizer, parse_schedule};
use omkl_core::learner::{Alg1Config, Target};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::convert::to_indices;
use crate::errors::IntoPyResult;

/// Feature names (as Python strings) and values of a feature dict. Non-str
/// keys are converted with `str()`; values must convert to float.
fn features<'py>(x: &Bound<'py, PyDict>) -> PyResult<(Vec<Bound<'py, PyString>>, Vec<f64>)> {
    let mut names = Vec::with_capacity(x.len());
    let mut values = Vec::with_capacity(x.len());
    for (k, v) in x.iter() {
        let name = match k.cast::<PyString>() {
            Ok(s) => s.clone(),
            Err(_) => k.str()?,
        };
        let value = v.extract::<f64>().map_err(|_| {
            let shown = v
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| "?".into());
            PyValueError::new_err(format!(
                "invalid value for `x[{:?}]`: expected a real number, got {shown}",
                name.to_string()
            ))
        })?;
        names.push(name);
        values.push(value);
    }
    Ok((names, values))
}

fn strs<'a>(names: &'a [Bound<'_, PyString>]) -> PyResult<Vec<&'a str>> {
    names.iter().map(|n| n.to_str()).collect()
}

/// Owned names and values of many feature dicts.
fn many(xs: &[Bound<'_, PyDict>]) -> PyResult<Vec<(Vec<String>, Vec<f64>)>> {
    xs.iter()
        .map(|x| {
            let (names, values) = features(x)?;
            let names = names.iter().map(|n| n.to_string()).collect();
            Ok((names, values))
        })
        .collect()
}

impl OnlineProximalLearner {
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

/// Alg. 1 (online proximal learning) on named, grouped, hashed features.
#[pyclass(module = "omkl._omkl")]
pub struct OnlineProximalLearner {
    inner: NamedLearner,
}

#[pymethods]
impl OnlineProximalLearner {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        loss: &str,
        learning_rate: &str,
        eta0: f64,
        sigma: f64,
        regularizers: Vec<(String, Vec<f64>)>,
        radius: Option<f64>,
        averaged: bool,
        fit_intercept: bool,
        clip_gradient: Option<f64>,
        separator: &str,
        groups: BTreeMap<String, String>,
        n_buckets: usize,
    ) -> PyResult<Self> {
        let regularizers = regularizers
            .iter()
            .map(|(n, p)| parse_regularizer(n, p))
            .collect::<omkl_core::Result<Vec<_>>>()
            .py()?;
        let config = Alg1Config {
            loss: parse_loss(loss).py()?,
            schedule: parse_schedule(learning_rate, eta0, sigma).py()?,
            regularizers,
            radius,
            averaged,
            fit_intercept,
            clip_gradient,
        };
        let grouping = Grouping {
            separator: separator.to_string(),
            mapping: groups,
        };
        let inner = NamedLearner::new(config, grouping, n_buckets).py()?;
        Ok(OnlineProximalLearner { inner })
    }

    /// One round on a feature dict with class index `y`; returns the loss.
    fn learn_class(&mut self, x: &Bound<'_, PyDict>, y: usize) -> PyResult<f64> {
        let (names, values) = features(x)?;
        self.inner
            .learn(&strs(&names)?, &values, Target::Class(y))
            .py()
    }

    /// One round on a feature dict with real target `y`; returns the loss.
    fn learn_value(&mut self, x: &Bound<'_, PyDict>, y: f64) -> PyResult<f64> {
        let (names, values) = features(x)?;
        self.inner
            .learn(&strs(&names)?, &values, Target::Value(y))
            .py()
    }

    /// Scores of the prediction model, one per output.
    fn scores(&self, x: &Bound<'_, PyDict>) -> PyResult<Vec<f64>> {
        let (names, values) = features(x)?;
        self.inner.scores(&strs(&names)?, &values).py()
    }

    /// Index of the highest score.
    fn predict_class(&self, x: &Bound<'_, PyDict>) -> PyResult<usize> {
        let (names, values) = features(x)?;
        self.inner.predict_class(&strs(&names)?, &values).py()
    }

    /// Trains on many dicts with class indices, without the GIL; returns the
    /// mean loss.
    fn learn_many_classes(
        &mut self,
        py: Python<'_>,
        xs: Vec<Bound<'_, PyDict>>,
        ys: Vec<usize>,
    ) -> PyResult<f64> {
        let targets = ys.into_iter().map(Target::Class).collect();
        self.learn_many(py, &xs, targets)
    }

    /// Trains on many dicts with real targets, without the GIL.
    fn learn_many_values(
        &mut self,
        py: Python<'_>,
        xs: Vec<Bound<'_, PyDict>>,
        ys: Vec<f64>,
    ) -> PyResult<f64> {
        let targets = ys.into_iter().map(Target::Value).collect();
        self.learn_many(py, &xs, targets)
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

    /// `(group name, ‖w_g‖)` for every group of the prediction model.
    fn group_norms(&self) -> Vec<(String, f64)> {
        self.inner.group_norms()
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

    #[getter]
    fn n_groups(&self) -> usize {
        self.inner.model().n_groups()
    }

    #[getter]
    fn n_outputs(&self) -> usize {
        self.inner.model().n_outputs()
    }

    #[getter]
    fn n_buckets(&self) -> usize {
        self.inner.space().n_buckets()
    }

    #[getter]
    fn rounds(&self) -> u64 {
        self.inner.model().rounds()
    }

    /// The learner as deterministic bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    /// Rebuilds a learner from `to_bytes`.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(OnlineProximalLearner {
            inner: NamedLearner::from_bytes(data).py()?,
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let from = slf.get_type().getattr("from_bytes")?;
        Ok((from, (slf.borrow().to_bytes(py),)))
    }

    fn __sizeof__(&self) -> usize {
        std::mem::size_of::<Self>() + self.inner.heap_bytes()
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
