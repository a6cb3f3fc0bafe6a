//! Python binding of parameter mixing (`omkl_core::learner::mix` and
//! `omkl_core::model::parser_mix`): models' learnable state as dicts of
//! 1-D numpy arrays, and the layout (groups, classes, table sizes,
//! relation labels) that models to be mixed must share.

use numpy::{IntoPyArray, PyArray1, PyArrayMethods};
use omkl_core::learner::mix::{Array, Params};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::add_functions;
use crate::errors::IntoPyResult;
use crate::learner::OnlineProximalLearner;
use crate::parser::{gold_batch, ArcLabelerCore, ArcParserCore, ParseCorpus};
use crate::tagger::SparseChainLearner;

fn to_dict(py: Python<'_>, p: Params) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, a) in p {
        match a {
            Array::F32(v) => d.set_item(k, v.into_pyarray(py))?,
            Array::F64(v) => d.set_item(k, v.into_pyarray(py))?,
        }
    }
    Ok(d)
}

fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut p = Params::new();
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("params: expected str keys, got {k:?}")))?;
        let a = if let Ok(a) = v.cast::<PyArray1<f32>>() {
            Array::F32(a.readonly().as_array().to_vec())
        } else if let Ok(a) = v.cast::<PyArray1<f64>>() {
            Array::F64(a.readonly().as_array().to_vec())
        } else {
            return Err(PyTypeError::new_err(format!(
                "params[{key:?}]: expected a 1-d numpy array of float32 or float64, got {}",
                v.get_type().name()?
            )));
        };
        p.insert(key, a);
    }
    Ok(p)
}

/// `TypeError`: `arg` is of none of the `expected` classes.
fn wrong_class(arg: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let name = got
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    PyTypeError::new_err(format!("{arg}: expected {expected}, got {name}"))
}

fn not_mixable(model: &Bound<'_, PyAny>) -> PyErr {
    let expected = "an OnlineProximalLearner, SparseChainLearner, ArcParserCore or ArcLabelerCore";
    wrong_class("model", expected, model)
}

/// The learnable state of a core model as `{name: 1-d array}`.
#[pyfunction]
fn export_params<'py>(py: Python<'py>, model: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let p = if let Ok(m) = model.cast::<OnlineProximalLearner>() {
        m.borrow().inner.export_params("")
    } else if let Ok(m) = model.cast::<SparseChainLearner>() {
        m.borrow().inner.export_params("")
    } else if let Ok(m) = model.cast::<ArcParserCore>() {
        let core = m.borrow();
        core.inner.check_learnable().py()?;
        core.inner.export_params()
    } else if let Ok(m) = model.cast::<ArcLabelerCore>() {
        m.borrow().inner.export_params().py()?
    } else {
        return Err(not_mixable(model));
    };
    to_dict(py, p)
}

/// Sets the learnable state of a core model from `export_params`'s layout;
/// on error (a missing, mistyped or mis-sized array, a value that is not
/// finite) nothing changes.
#[pyfunction]
fn import_params(model: &Bound<'_, PyAny>, params: &Bound<'_, PyDict>) -> PyResult<()> {
    let p = from_dict(params)?;
    if let Ok(m) = model.cast::<OnlineProximalLearner>() {
        m.borrow_mut().inner.import_params(&p, "").py()
    } else if let Ok(m) = model.cast::<SparseChainLearner>() {
        m.borrow_mut().inner.import_params(&p, "").py()
    } else if let Ok(m) = model.cast::<ArcParserCore>() {
        m.borrow_mut().inner.import_params(&p).py()
    } else if let Ok(m) = model.cast::<ArcLabelerCore>() {
        m.borrow_mut().inner.import_params(&p).py()
    } else {
        Err(not_mixable(model))
    }
}

/// The groups of the feature names `names`, each once, in order of first
/// appearance.
#[pyfunction]
fn feature_groups(learner: PyRef<'_, OnlineProximalLearner>, names: Vec<String>) -> Vec<String> {
    learner
        .inner
        .feature_groups(names.iter().map(String::as_str))
}

/// Registers `groups` (in order; known ones are skipped) and grows the
/// outputs to `n_outputs`: the groups and classes of a multiclass learner,
/// the templates and labels of a chain learner; on error nothing changes.
#[pyfunction]
fn register_layout(
    learner: &Bound<'_, PyAny>,
    groups: Vec<String>,
    n_outputs: usize,
) -> PyResult<()> {
    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    if let Ok(m) = learner.cast::<OnlineProximalLearner>() {
        m.borrow_mut().inner.register(&refs, n_outputs).py()
    } else if let Ok(m) = learner.cast::<SparseChainLearner>() {
        m.borrow_mut().inner.register_chain(&refs, n_outputs).py()
    } else {
        let expected = "an OnlineProximalLearner or SparseChainLearner";
        Err(wrong_class("learner", expected, learner))
    }
}

/// Distinct features of each template on the gold arcs of `corpus`.
#[pyfunction]
fn parser_key_counts(
    py: Python<'_>,
    core: PyRef<'_, ArcParserCore>,
    corpus: PyRef<'_, ParseCorpus>,
) -> PyResult<Vec<usize>> {
    let batch = gold_batch(&corpus, None)?;
    let parser = &core.inner;
    Ok(py.detach(|| parser.template_key_counts(&batch)))
}

/// Sizes the parser's tables for the given distinct-feature counts.
#[pyfunction]
fn parser_set_table_counts(
    mut core: PyRefMut<'_, ArcParserCore>,
    counts: Vec<usize>,
    slots_per_feature: f64,
    max_bits: u32,
) -> PyResult<()> {
    core.inner
        .set_table_counts(&counts, slots_per_feature, max_bits)
        .py()
}

/// Appends unknown relation labels (in order) to the label stage.
#[pyfunction]
fn labeler_register(
    mut labeler: PyRefMut<'_, ArcLabelerCore>,
    labels: Vec<String>,
) -> PyResult<()> {
    labeler.inner.register_labels(&labels).py()
}

/// The arrays of one stage of the parser (`"arc"` or `"pruner"`): its
/// weights and step count, and its running sums when `sums`.
#[pyfunction]
#[pyo3(signature = (core, stage, sums=true))]
fn parser_export_stage<'py>(
    py: Python<'py>,
    core: PyRef<'py, ArcParserCore>,
    stage: &str,
    sums: bool,
) -> PyResult<Bound<'py, PyDict>> {
    core.inner.check_learnable().py()?;
    let p = core.inner.export_stage(stage, sums).py()?;
    to_dict(py, p)
}

/// Sets the stages whose arrays `params` holds; without `arc/sums` the arc
/// model keeps its own running sums (see `ArcParser::import_stages`).
#[pyfunction]
fn parser_import_stages(
    py: Python<'_>,
    mut core: PyRefMut<'_, ArcParserCore>,
    params: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let p = from_dict(params)?;
    let parser = &mut core.inner;
    py.detach(|| parser.import_stages(&p)).py()
}

/// One pass of the arc model (or of the pruner, `first_pass`) over the
/// sentences of `corpus` in `order`, without ending the epoch (the norms,
/// averaged parameters and β are not recomputed); the summed loss.
#[pyfunction]
#[pyo3(signature = (core, corpus, order=None, first_pass=false))]
fn parser_fit_pass(
    py: Python<'_>,
    mut core: PyRefMut<'_, ArcParserCore>,
    corpus: PyRef<'_, ParseCorpus>,
    order: Option<Vec<usize>>,
    first_pass: bool,
) -> PyResult<f64> {
    let batch = gold_batch(&corpus, order)?;
    let parser = &mut core.inner;
    if first_pass && parser.pruner().is_none() {
        let e =
            omkl_core::OmklError::invalid("first_pass", "the parser has no pruner (prune_k = 0)");
        return Err(e).py();
    }
    let mut total = 0.0;
    for chunk in batch.chunks(256) {
        total += py
            .detach(|| {
                if first_pass {
                    return parser.fit_pruner_chunk(chunk);
                }
                let refs: Vec<(&_, &[usize])> =
                    chunk.iter().map(|(s, h)| (*s, h.as_slice())).collect();
                parser.fit_batch(&refs)
            })
            .py()?;
        py.check_signals()?;
    }
    Ok(total)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        export_params,
        import_params,
        feature_groups,
        register_layout,
        parser_key_counts,
        parser_set_table_counts,
        labeler_register,
        parser_export_stage,
        parser_import_stages,
        parser_fit_pass
    )
}
