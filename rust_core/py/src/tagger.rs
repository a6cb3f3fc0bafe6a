//! Python binding of the chain structure of Alg. 1: a sequence tagger on
//! token dicts, grouped by template and hashed.
//!
//! A token is a dict `{key: value}`. A string value is the indicator
//! feature `key=value` (bucket `xxh3_64("key=value") mod n_buckets`, value
//! 1); a bool or a real number is the real-valued feature `key` (bucket
//! `xxh3_64(key) mod n_buckets`). The template (group) of a feature is its
//! key, or the group the explicit mapping gives it.

use std::collections::BTreeMap;

use numpy::{IntoPyArray, PyArray2};
use omkl_core::features::{hash_name, FeatureSpace, SparseBatch};
use omkl_core::learner::chain::{indicator_bucket, NamedSequence, TRANSITIONS};
use omkl_core::learner::frozen_chain::FrozenChain;
use omkl_core::learner::named::NamedLearner;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use crate::convert::{key_str, shown};
use crate::errors::IntoPyResult;
use crate::frozen_tagger::FrozenChainTagger;
use crate::name_cache::NameCache;
use crate::named::{alg1_config, named_learner_class, Alg1Args};
use crate::text::{decode_text, marginal_arrays, read, TokenTemplates};

/// The features of a sequence read once: per entry its key (a Python
/// string), the key's Python hash, the bucket of a string value (`None`
/// for a real value, whose bucket is the key's) and the value.
#[derive(Default)]
pub(crate) struct Parsed<'py> {
    indptr: Vec<usize>,
    keys: Vec<Bound<'py, PyString>>,
    hashes: Vec<isize>,
    buckets: Vec<Option<u32>>,
    values: Vec<f64>,
}

/// Reads the token dicts of `xs`; `ValueError`/`TypeError` naming the
/// token and key for anything else than a dict of str, bool or finite
/// real values.
pub(crate) fn parse<'py>(xs: &Bound<'py, PyAny>, n_buckets: usize) -> PyResult<Parsed<'py>> {
    if xs.is_instance_of::<PyString>() || xs.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!(
            "invalid value for `xs`: expected a list of token dicts, got {}",
            xs.repr()?
        )));
    }
    let mut p = Parsed {
        indptr: vec![0],
        ..Default::default()
    };
    for (i, tok) in xs.try_iter()?.enumerate() {
        let tok = tok?;
        let d = tok.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(format!(
                "invalid value for `xs[{i}]`: expected a dict of features, got {}",
                shown(&tok)
            ))
        })?;
        for (k, v) in d.iter() {
            let key = key_str(&k)?;
            let (bucket, value) = if let Ok(s) = v.cast::<PyString>() {
                (
                    Some(indicator_bucket(key.to_str()?, s.to_str()?, n_buckets)),
                    1.0,
                )
            } else if let Ok(b) = v.cast::<PyBool>() {
                (None, if b.is_true() { 1.0 } else { 0.0 })
            } else {
                let x = v.extract::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "invalid value for `xs[{i}][{:?}]`: expected a str, a bool or a finite real number, got {}",
                        key.to_string(),
                        shown(&v)
                    ))
                })?;
                (None, x)
            };
            p.hashes.push(key.hash()?);
            p.keys.push(key);
            p.buckets.push(bucket);
            p.values.push(value);
        }
        p.indptr.push(p.keys.len());
    }
    if p.indptr.len() == 1 {
        return Err(PyValueError::new_err(
            "invalid value for `xs`: expected a sequence of at least one token, got an empty one",
        ));
    }
    Ok(p)
}

/// The entries of `p` whose templates are registered in `space` (as a
/// sequence of group ids, resolved through the memo `cache`), and whether
/// that is all of them.
pub(crate) fn locate_in(
    cache: &mut NameCache,
    space: &FeatureSpace,
    p: &Parsed<'_>,
) -> PyResult<(SparseBatch, bool)> {
    let mut seq = SparseBatch {
        indptr: vec![0],
        ..Default::default()
    };
    let mut all = true;
    for w in p.indptr.windows(2) {
        for j in w[0]..w[1] {
            match cache.locate(space, &p.keys[j], p.hashes[j])? {
                Some((0, _)) => {
                    return Err(PyValueError::new_err(format!(
                        "invalid value for `xs`: the key {:?} names the transition group {TRANSITIONS:?}",
                        p.keys[j].to_string()
                    )))
                }
                Some((g, b)) => {
                    seq.groups.push(g);
                    seq.indices.push(p.buckets[j].unwrap_or(b));
                    seq.values.push(p.values[j]);
                }
                None => all = false,
            }
        }
        seq.indptr.push(seq.groups.len());
    }
    Ok((seq, all))
}

impl SparseChainLearner {
    /// Refuses a multiclass learner loaded from bytes.
    fn check_loaded(inner: &NamedLearner) -> PyResult<()> {
        inner.model().transition_group().py()?;
        Ok(())
    }

    /// The entries of `p` whose templates are registered (as a sequence of
    /// group ids), and whether that is all of them.
    fn locate(&self, p: &Parsed<'_>) -> PyResult<(SparseBatch, bool)> {
        locate_in(&mut self.names(), self.inner.space(), p)
    }

    /// The buckets of every entry of `p` (for the named path).
    fn buckets(&self, p: &Parsed<'_>) -> PyResult<Vec<u32>> {
        let nb = self.inner.space().n_buckets() as u64;
        p.keys
            .iter()
            .zip(&p.buckets)
            .map(|(k, b)| Ok(b.unwrap_or((hash_name(k.to_str()?) % nb) as u32)))
            .collect()
    }

    /// The sequences of `xs` as group ids, registering every new template
    /// (nothing is registered when a token is bad).
    fn prepare_all(&mut self, seqs: &Bound<'_, PyAny>) -> PyResult<Vec<SparseBatch>> {
        let nb = self.inner.space().n_buckets();
        let parsed: Vec<Parsed<'_>> = seqs
            .try_iter()?
            .enumerate()
            .map(|(i, xs)| parse(&xs?, nb).map_err(|e| named(e, &format!("X[{i}]"))))
            .collect::<PyResult<_>>()?;
        let mut fresh: Vec<String> = Vec::new();
        for p in &parsed {
            let (_, all) = self.locate(p)?;
            if !all {
                for k in &p.keys {
                    let k = k.to_str()?;
                    let g = self.inner.space().grouping().group_of(k);
                    if self.inner.space().group_id(g).is_none() && !fresh.iter().any(|f| f == k) {
                        fresh.push(k.to_string());
                    }
                }
            }
        }
        let refs: Vec<&str> = fresh.iter().map(String::as_str).collect();
        self.inner.chain_groups(&refs).py()?;
        parsed.iter().map(|p| Ok(self.locate(p)?.0)).collect()
    }
}

/// `e` with `where` in front of its message.
pub(crate) fn named(e: PyErr, place: &str) -> PyErr {
    Python::attach(|py| {
        let msg = e.value(py).to_string();
        if e.is_instance_of::<PyTypeError>(py) {
            PyTypeError::new_err(format!("{place}: {msg}"))
        } else {
            PyValueError::new_err(format!("{place}: {msg}"))
        }
    })
}

/// Sequences prepared for training: group ids, buckets and values, with
/// label ids.
#[pyclass(module = "omkl._omkl")]
pub struct PreparedSequences {
    seqs: Vec<SparseBatch>,
    labels: Vec<Vec<usize>>,
    /// The model dimensions (`OnlineProximal::chain_dims`) that every
    /// sequence's entries were last checked against, so that the epochs
    /// of one model check them once.
    checked: std::sync::Mutex<Option<(usize, usize, usize)>>,
}

impl PreparedSequences {
    fn new(seqs: Vec<SparseBatch>, labels: Vec<Vec<usize>>) -> Self {
        PreparedSequences {
            seqs,
            labels,
            checked: std::sync::Mutex::new(None),
        }
    }
}

#[pymethods]
impl PreparedSequences {
    fn __len__(&self) -> usize {
        self.seqs.len()
    }

    /// Number of tokens.
    #[getter]
    fn n_tokens(&self) -> usize {
        self.labels.iter().map(Vec::len).sum()
    }
}

named_learner_class! {
    /// Alg. 1 on labelled chains of token dicts (see the module docs).
    SparseChainLearner;

    #[new]
    fn new(
        loss: &str,
        alg1: Alg1Args,
        groups: BTreeMap<String, String>,
        n_buckets: usize,
    ) -> PyResult<Self> {
        let config = alg1_config(loss, &alg1, None)?;
        Ok(Self::wrap(
            NamedLearner::new_chain(config, groups, n_buckets).py()?,
        ))
    }

    /// One round on the token dicts `xs` labelled with label ids `ys`
    /// (a new label's id is the number of labels before it); returns the
    /// loss. On error nothing changes.
    fn learn(&mut self, xs: &Bound<'_, PyAny>, ys: Vec<usize>) -> PyResult<f64> {
        let p = parse(xs, self.inner.space().n_buckets())?;
        let (seq, all) = self.locate(&p)?;
        let model = self.inner.model();
        if all && ys.iter().all(|&y| y < model.n_outputs()) {
            return self.inner.model_mut().learn_chain(&seq, &ys).py();
        }
        let names: Vec<&str> = p.keys.iter().map(|k| k.to_str()).collect::<PyResult<_>>()?;
        let buckets = self.buckets(&p)?;
        let x = NamedSequence {
            indptr: &p.indptr,
            groups: &names,
            buckets: &buckets,
            values: &p.values,
        };
        self.inner.learn_sequence(&x, &ys).py()
    }

    /// Reads many sequences with their label ids for [`Self::fit_epoch`],
    /// registering their templates. Nothing changes when a token is bad.
    fn prepare(
        &mut self,
        xs: &Bound<'_, PyAny>,
        ys: Vec<Vec<usize>>,
    ) -> PyResult<PreparedSequences> {
        let seqs = self.prepare_all(xs)?;
        if seqs.len() != ys.len() {
            return Err(PyValueError::new_err(format!(
                "invalid value for `Y`: expected one label sequence per sequence ({}), got {}",
                seqs.len(),
                ys.len()
            )));
        }
        for (i, (s, y)) in seqs.iter().zip(&ys).enumerate() {
            if s.n_examples() != y.len() {
                return Err(PyValueError::new_err(format!(
                    "invalid value for `Y[{i}]`: expected {} labels (one per token), got {}",
                    s.n_examples(),
                    y.len()
                )));
            }
        }
        Ok(PreparedSequences::new(seqs, ys))
    }

    /// One pass over prepared sequences, without the GIL (labels are added
    /// as they appear), in order or in the order of the indices `order`;
    /// returns the mean loss.
    #[pyo3(signature = (data, order=None))]
    fn fit_epoch(
        &mut self,
        py: Python<'_>,
        data: &PreparedSequences,
        order: Option<Vec<usize>>,
    ) -> PyResult<f64> {
        let n = data.seqs.len();
        let order = order.unwrap_or_else(|| (0..n).collect());
        if let Some(&i) = order.iter().find(|&&i| i >= n) {
            return Err(PyValueError::new_err(format!(
                "invalid value for `order`: index {i} is not < {n} sequences"
            )));
        }
        let model = self.inner.model_mut();
        let named = |i: usize, e: omkl_core::OmklError| {
            omkl_core::OmklError::invalid(format!("sequence {i}"), e.to_string())
        };
        py.detach(|| {
            // the entries are checked once per set of model dimensions, the
            // labels at each round (`ensure_chain_labels` adds outputs, and
            // no group or bucket)
            let dims = model.chain_dims()?;
            let mut checked = data.checked.lock().unwrap_or_else(|e| e.into_inner());
            if *checked != Some(dims) {
                for (i, s) in data.seqs.iter().enumerate() {
                    model.check_chain_entries(s).map_err(|e| named(i, e))?;
                }
                *checked = Some(dims);
            }
            let mut total = 0.0;
            for &i in &order {
                let (s, y) = (&data.seqs[i], &data.labels[i]);
                let need = y.iter().max().map_or(0, |m| m + 1);
                let r = model
                    .ensure_chain_labels(need)
                    .and_then(|_| model.learn_checked_chain(s, y))
                    .map_err(|e| named(i, e))?;
                total += r;
            }
            Ok(total / data.seqs.len().max(1) as f64)
        })
        .py()
    }

    /// The Viterbi labelling (label ids) of `xs` under the prediction model.
    fn predict(&self, xs: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let p = parse(xs, self.inner.space().n_buckets())?;
        let (seq, _) = self.locate(&p)?;
        self.inner.model().predict_chain(&seq).py()
    }

    /// Viterbi labellings of many sequences (decoded without the GIL).
    fn predict_many(&self, py: Python<'_>, seqs: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<usize>>> {
        let nb = self.inner.space().n_buckets();
        let mut batch = Vec::new();
        for (i, xs) in seqs.try_iter()?.enumerate() {
            let p = parse(&xs?, nb).map_err(|e| named(e, &format!("X[{i}]")))?;
            batch.push(self.locate(&p)?.0);
        }
        let model = self.inner.model();
        py.detach(|| {
            batch
                .iter()
                .map(|s| model.predict_chain(s))
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
        let p = parse(xs, self.inner.space().n_buckets())?;
        let (seq, _) = self.locate(&p)?;
        let l = self.inner.model().n_outputs();
        let mu = self.inner.model().chain_marginals(&seq).py()?;
        let n = mu.len() / l;
        let a = ndarray::Array2::from_shape_vec((n, l), mu)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// Reads the sentences of word forms `sentences` with the string
    /// `columns` of `templates` (one list per column, of one list of str per
    /// sentence) and their label ids for [`Self::fit_epoch`]: the features
    /// are computed in the core without the GIL, and the new templates are
    /// registered in order of first appearance, as [`Self::prepare`] does
    /// for the same features as dicts. Nothing changes on bad input.
    fn prepare_text(
        &mut self,
        py: Python<'_>,
        templates: &TokenTemplates,
        sentences: &Bound<'_, PyAny>,
        columns: &Bound<'_, PyAny>,
        ys: Vec<Vec<usize>>,
    ) -> PyResult<PreparedSequences> {
        let held = read(&templates.inner, sentences, columns)?;
        let text = held.view()?;
        if text.len() != ys.len() {
            return Err(PyValueError::new_err(format!(
                "invalid value for `Y`: expected one label sequence per sentence ({}), got {}",
                text.len(),
                ys.len()
            )));
        }
        let (t, nb) = (&templates.inner, self.inner.space().n_buckets());
        let mut seqs = py.detach(|| t.batch(&text, nb)).py()?;
        for (i, (s, y)) in seqs.iter().zip(&ys).enumerate() {
            if s.n_examples() != y.len() {
                return Err(PyValueError::new_err(format!(
                    "invalid value for `Y[{i}]`: expected {} labels (one per word), got {}",
                    s.n_examples(),
                    y.len()
                )));
            }
        }
        self.inner.register_templates(t, &mut seqs).py()?;
        Ok(PreparedSequences::new(seqs, ys))
    }

    /// Viterbi labellings of the sentences of word forms `sentences` with
    /// the string `columns` of `templates` (features computed in the core,
    /// decoded without the GIL).
    fn predict_many_text(
        &self,
        py: Python<'_>,
        templates: &TokenTemplates,
        sentences: &Bound<'_, PyAny>,
        columns: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Vec<usize>>> {
        let model = self.inner.model();
        let space = self.inner.space();
        decode_text(py, templates, space, sentences, columns, |s| model.predict_chain(s))
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
        let model = self.inner.model();
        let space = self.inner.space();
        let mus = decode_text(py, templates, space, sentences, columns, |s| {
            model.chain_marginals(s)
        })?;
        marginal_arrays(py, mus, model.n_outputs())
    }

    /// The transition weights of the prediction model, `(L + 2) × L`.
    fn transitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let t = self.inner.model().transition_weights().py()?;
        let l = self.inner.model().n_outputs();
        let a = ndarray::Array2::from_shape_vec((l + 2, l), t)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    #[getter]
    fn n_labels(&self) -> usize {
        self.inner.model().n_outputs()
    }

    /// The prediction model (the averaged weights when averaging), frozen:
    /// only its non-zero template weights, in `f32` (see
    /// [`FrozenChainTagger`]).
    fn freeze(&self, py: Python<'_>) -> PyResult<FrozenChainTagger> {
        let inner = &self.inner;
        let frozen = py.detach(|| FrozenChain::freeze(inner)).py()?;
        Ok(FrozenChainTagger::wrap(frozen))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SparseChainLearner>()?;
    m.add_class::<FrozenChainTagger>()?;
    m.add_class::<PreparedSequences>()?;
    Ok(())
}
