//! Python binding of [`FrozenChain`]: a trained chain tagger frozen for
//! prediction (`SparseChainLearner.freeze()`), reading the same token dicts
//! as the learner. Templates it never learned add nothing.

use numpy::{IntoPyArray, PyArray2};
use omkl_core::learner::frozen_chain::FrozenChain;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::IntoPyResult;
use crate::name_cache::NameCache;
use crate::tagger::{locate_in, named, parse};
use crate::text::{decode_text, marginal_arrays, TokenTemplates};

/// A chain tagger frozen for prediction: the non-zero weights of the
/// prediction model in `f32`, no training state. It predicts as the
/// learner it was frozen from did, and cannot learn.
#[pyclass(module = "omkl._omkl")]
pub struct FrozenChainTagger {
    inner: std::sync::Arc<FrozenChain>,
    names: std::sync::Mutex<NameCache>,
}

impl FrozenChainTagger {
    pub(crate) fn wrap(inner: FrozenChain) -> Self {
        FrozenChainTagger {
            inner: std::sync::Arc::new(inner),
            names: std::sync::Mutex::default(),
        }
    }

    /// The frozen chain, shared.
    pub(crate) fn chain(&self) -> std::sync::Arc<FrozenChain> {
        std::sync::Arc::clone(&self.inner)
    }

    /// The memo of resolved feature names.
    fn names(&self) -> std::sync::MutexGuard<'_, NameCache> {
        self.names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The sequence of token dicts `xs` as group ids of the model.
    fn sequence(&self, xs: &Bound<'_, PyAny>) -> PyResult<omkl_core::features::SparseBatch> {
        let p = parse(xs, self.inner.space().n_buckets())?;
        Ok(locate_in(&mut self.names(), self.inner.space(), &p)?.0)
    }
}

#[pymethods]
impl FrozenChainTagger {
    /// The Viterbi labelling (label ids) of the token dicts `xs`.
    fn predict(&self, xs: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let seq = self.sequence(xs)?;
        self.inner.predict(&seq).py()
    }

    /// Viterbi labellings of many sequences (decoded without the GIL).
    fn predict_many(&self, py: Python<'_>, seqs: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<usize>>> {
        let mut batch = Vec::new();
        for (i, xs) in seqs.try_iter()?.enumerate() {
            batch.push(
                self.sequence(&xs?)
                    .map_err(|e| named(e, &format!("X[{i}]")))?,
            );
        }
        let model = &self.inner;
        py.detach(|| {
            batch
                .iter()
                .map(|s| model.predict(s))
                .collect::<omkl_core::Result<Vec<_>>>()
        })
        .py()
    }

    /// The CRF position marginals (`n × L`) of `xs`.
    fn marginals<'py>(
        &self,
        py: Python<'py>,
        xs: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let seq = self.sequence(xs)?;
        let l = self.inner.n_labels();
        let mu = self.inner.marginals(&seq).py()?;
        let a = ndarray::Array2::from_shape_vec((mu.len() / l, l), mu)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// Viterbi labellings of the sentences of word forms `sentences` with
    /// the string `columns` of `templates` (features computed in the core,
    /// decoded without the GIL); templates the model never learned add
    /// nothing.
    fn predict_many_text(
        &self,
        py: Python<'_>,
        templates: &TokenTemplates,
        sentences: &Bound<'_, PyAny>,
        columns: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Vec<usize>>> {
        let model = &self.inner;
        decode_text(py, templates, model.space(), sentences, columns, |s| {
            model.predict(s)
        })
    }

    /// The CRF position marginals (`n × L`) of each sentence, read as
    /// [`Self::predict_many_text`] reads them.
    fn marginals_many_text<'py>(
        &self,
        py: Python<'py>,
        templates: &TokenTemplates,
        sentences: &Bound<'py, PyAny>,
        columns: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
        let model = &self.inner;
        let mus = decode_text(py, templates, model.space(), sentences, columns, |s| {
            model.marginals(s)
        })?;
        marginal_arrays(py, mus, model.n_labels())
    }

    /// The transition scores, `(L + 2) × L`.
    fn transitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let l = self.inner.n_labels();
        let a = ndarray::Array2::from_shape_vec((l + 2, l), self.inner.transitions().to_vec())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// `(group, ‖w_g‖)` of the frozen weights of every group.
    fn group_norms(&self) -> Vec<(String, f64)> {
        self.inner.group_norms()
    }

    /// The number of labels.
    #[getter]
    fn n_labels(&self) -> usize {
        self.inner.n_labels()
    }

    /// The number of stored (bucket, label) weights.
    #[getter]
    fn n_entries(&self) -> usize {
        self.inner.weights().n_entries()
    }

    /// Rounds the learner had learned when it was frozen.
    #[getter]
    fn rounds(&self) -> u64 {
        self.inner.rounds()
    }

    #[getter]
    fn n_buckets(&self) -> usize {
        self.inner.space().n_buckets()
    }

    /// The frozen tagger as deterministic bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    /// Rebuilds a frozen tagger from `to_bytes`.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        Ok(Self::wrap(
            py.detach(|| FrozenChain::from_bytes(data)).py()?,
        ))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let from = slf.get_type().getattr("from_bytes")?;
        Ok((from, (slf.borrow().to_bytes(py),)))
    }

    fn __sizeof__(&self) -> usize {
        std::mem::size_of::<Self>() + self.inner.heap_bytes() + self.names().heap_bytes()
    }
}
