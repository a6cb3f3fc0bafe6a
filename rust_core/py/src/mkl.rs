//! Python binding for online MKL on chains (Alg. 3,
//! `omkl_core::learner::online_mkl`) and batch chain decoding.

use numpy::ndarray::{Array1, Array2, Array3};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use omkl_core::kernel::SparseGram;
use omkl_core::learner::mkl_config::{OnlineMklConfig, StepSize};
use omkl_core::learner::online_mkl::train_chain_mkl_with as core_train;
use omkl_core::learner::score_cache::GramRef;
use omkl_core::model::chain::ChainCorpus;
use omkl_core::model::chain_predict::decode_chains as core_decode;
use omkl_core::model::transitions::Transitions;
use omkl_core::prox::Regularizer;

use crate::errors::IntoPyResult;
use crate::kernel::PySparseGram;

/// A sparse Gram matrix from Python: a `SparseGram` object, used in place
/// (no copy, its symmetry checked at most once over its lifetime), or CSR
/// arrays `(indptr, indices, data)`, converted and validated on each call.
enum SparseArg<'py> {
    Object(Bound<'py, PySparseGram>),
    Arrays(Box<SparseGram>),
}

/// A CSR Gram matrix from Python: `(indptr, indices, data)`.
type SparseCsr<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, f32>,
);

fn indices(name: &str, a: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v).map_err(|_| {
                PyValueError::new_err(format!(
                    "`{name}` must hold non-negative integers, but element {i} is {v}"
                ))
            })
        })
        .collect()
}

fn sparse_type_error(k: usize) -> PyErr {
    PyValueError::new_err(format!(
        "`sparse_grams[{k}]` must be a SparseGram or a tuple (indptr int64, indices int64, \
         data float32) of 1-D arrays"
    ))
}

fn regularizer(name: &str, lam: f64) -> PyResult<Regularizer> {
    match name {
        "squared_l21" => Ok(Regularizer::SquaredL21 { lam }),
        "l2_squared" => Ok(Regularizer::L2Squared { lam }),
        other => Err(PyValueError::new_err(format!(
            "`regularizer` must be 'squared_l21' (MKL) or 'l2_squared', got {other:?}"
        ))),
    }
}

fn step_size(name: &str, eta0: f64) -> PyResult<StepSize> {
    match name {
        "constant" => Ok(StepSize::Constant { eta0 }),
        "inv_sqrt" => Ok(StepSize::InvSqrt { eta0 }),
        "inv_t" => Ok(StepSize::InvT { sigma: 1.0 / eta0 }),
        other => Err(PyValueError::new_err(format!(
            "`schedule` must be 'constant', 'inv_sqrt' or 'inv_t', got {other:?}"
        ))),
    }
}

fn stack(rows: &[Vec<f64>], l: usize, m: usize) -> Array3<f64> {
    if rows.is_empty() {
        return Array3::zeros((0, l, m));
    }
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    Array3::from_shape_vec((rows.len(), l, m), flat).expect("K x L x m coefficients")
}

/// Trains the kernelised chain model of Alg. 3; see `_omkl.pyi`.
#[pyfunction]
#[pyo3(signature = (grams, inputs, labels, offsets, n_labels, features = Vec::new(), regularizer = "squared_l21", lam = 1e-3, eta0 = 1.0, schedule = "inv_sqrt", epochs = 20, average = true, cost = 1.0, shuffle = true, seed = 0, track_objective = false, sparse_grams = Vec::new(), transition_lam = None, objective_last_only = false))]
#[allow(clippy::too_many_arguments)]
fn train_chain_mkl<'py>(
    py: Python<'py>,
    grams: Vec<PyReadonlyArray2<'py, f32>>,
    inputs: PyReadonlyArray1<'py, i64>,
    labels: PyReadonlyArray1<'py, i64>,
    offsets: PyReadonlyArray1<'py, i64>,
    n_labels: usize,
    features: Vec<PyReadonlyArray2<'py, f32>>,
    regularizer: &str,
    lam: f64,
    eta0: f64,
    schedule: &str,
    epochs: usize,
    average: bool,
    cost: f64,
    shuffle: bool,
    seed: u64,
    track_objective: bool,
    sparse_grams: Vec<Bound<'py, PyAny>>,
    transition_lam: Option<f64>,
    objective_last_only: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let config = OnlineMklConfig {
        regularizer: self::regularizer(regularizer, lam)?,
        transition_lam,
        step: step_size(schedule, eta0)?,
        epochs,
        cost,
        average,
        shuffle,
        seed,
        track_objective,
        objective_last_only,
    };
    let first_sparse = match sparse_grams.first() {
        None => None,
        Some(obj) => Some(match obj.cast::<PySparseGram>() {
            Ok(g) => g.get().inner.shape().0,
            Err(_) => obj
                .extract::<SparseCsr<'py>>()
                .map_err(|_| sparse_type_error(0))?
                .0
                .len()
                .saturating_sub(1),
        }),
    };
    let m = grams
        .first()
        .or(features.first())
        .map(|g| g.shape()[0])
        .or(first_sparse)
        .unwrap_or(0);
    let mut sparse: Vec<SparseArg<'py>> = Vec::with_capacity(sparse_grams.len());
    for (k, obj) in sparse_grams.iter().enumerate() {
        let name = format!("sparse_grams[{k}]");
        if let Ok(g) = obj.cast::<PySparseGram>() {
            let shape = g.get().inner.shape();
            if shape != (m, m) {
                return Err(PyValueError::new_err(format!(
                    "`{name}` must be {m} x {m} (one row and column per input), got {} x {}",
                    shape.0, shape.1
                )));
            }
            sparse.push(SparseArg::Object(g.clone()));
            continue;
        }
        let (indptr, indices, data) = obj
            .extract::<SparseCsr<'py>>()
            .map_err(|_| sparse_type_error(k))?;
        let indptr = self::indices(&name, &indptr)?;
        let indices = indices.as_array();
        // one vectorisable range check, then plain conversions
        let in_range = indices
            .iter()
            .fold(true, |ok, &v| ok & (0..=i64::from(u32::MAX)).contains(&v));
        if !in_range {
            let v = indices
                .iter()
                .find(|&&v| u32::try_from(v).is_err())
                .copied()
                .unwrap_or_default();
            return Err(PyValueError::new_err(format!(
                "`{name}` column indices must be in 0..2^32, got {v}"
            )));
        }
        let indices: Vec<u32> = indices.iter().map(|&v| v as u32).collect();
        let g = SparseGram::from_csr(m, m, indptr, indices, data.as_array().to_vec())
            .map_err(|e| PyValueError::new_err(format!("`{name}`: {e}")))?;
        sparse.push(SparseArg::Arrays(Box::new(g)));
    }
    let mut slices: Vec<&[f32]> = Vec::with_capacity(grams.len());
    for (k, g) in grams.iter().enumerate() {
        let s = g.shape();
        if s[0] != m || s[1] != m {
            return Err(PyValueError::new_err(format!(
                "`grams[{k}]` must be {m} x {m} like grams[0], got {} x {}",
                s[0], s[1]
            )));
        }
        slices.push(g.as_slice().map_err(|_| {
            PyValueError::new_err(format!("`grams[{k}]` must be a C-contiguous float32 array"))
        })?);
    }
    let mut feats: Vec<(&[f32], usize)> = Vec::with_capacity(features.len());
    for (k, x) in features.iter().enumerate() {
        let s = x.shape();
        if s[0] != m {
            return Err(PyValueError::new_err(format!(
                "`features[{k}]` must have {m} rows (one per input), got {}",
                s[0]
            )));
        }
        let data = x.as_slice().map_err(|_| {
            PyValueError::new_err(format!(
                "`features[{k}]` must be a C-contiguous float32 array"
            ))
        })?;
        feats.push((data, s[1]));
    }
    let corpus = ChainCorpus::new(
        indices("inputs", &inputs)?,
        indices("labels", &labels)?,
        indices("offsets", &offsets)?,
        m,
        n_labels,
    )
    .py()?;
    let refs: Vec<GramRef<'_>> = slices
        .iter()
        .map(|g| GramRef::Dense(g))
        .chain(sparse.iter().map(|a| {
            GramRef::Sparse(match a {
                SparseArg::Object(g) => &g.get().inner,
                SparseArg::Arrays(g) => g,
            })
        }))
        .collect();
    let mut interrupt: Option<PyErr> = None;
    let result = py.detach(|| {
        core_train(&refs, &feats, &corpus, &config, |_| {
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => true,
                Err(e) => {
                    interrupt = Some(e);
                    false
                }
            }
        })
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let model = result.py()?;
    let (k, l, nk) = (model.coef.len(), model.n_labels, refs.len());
    let d = PyDict::new(py);
    d.set_item("coef", stack(&model.coef[..nk], l, m).into_pyarray(py))?;
    d.set_item(
        "last_coef",
        stack(&model.last_coef[..nk], l, m).into_pyarray(py),
    )?;
    let weights = pyo3::types::PyList::empty(py);
    for (w, &(_, dim)) in model.coef[nk..].iter().zip(&feats) {
        let a = Array2::from_shape_vec((l, dim), w.clone()).expect("L x d weights");
        weights.append(a.into_pyarray(py))?;
    }
    d.set_item("weights", weights)?;
    let t = &model.transitions;
    let tr = Array2::from_shape_vec((l, l), t.tr.clone()).expect("L x L");
    d.set_item("transitions", tr.into_pyarray(py))?;
    d.set_item("start", Array1::from(t.start.clone()).into_pyarray(py))?;
    d.set_item("stop", Array1::from(t.stop.clone()).into_pyarray(py))?;
    d.set_item("beta", Array1::from(model.beta.clone()).into_pyarray(py))?;
    d.set_item("norms", Array1::from(model.norms.clone()).into_pyarray(py))?;
    d.set_item(
        "last_sq_norms",
        Array1::from(model.last_sq_norms.clone()).into_pyarray(py),
    )?;
    let e = model.epochs.len();
    let traj: Vec<f64> = model.epochs.iter().flat_map(|r| r.beta.clone()).collect();
    let traj = Array2::from_shape_vec((e, k), traj).expect("epochs x K");
    d.set_item("beta_trajectory", traj.into_pyarray(py))?;
    let obj: Vec<f64> = model
        .epochs
        .iter()
        .map(|r| r.objective.unwrap_or(f64::NAN))
        .collect();
    d.set_item("objective", Array1::from(obj).into_pyarray(py))?;
    let mistakes: Vec<i64> = model.epochs.iter().map(|r| r.mistakes as i64).collect();
    d.set_item("mistakes", Array1::from(mistakes).into_pyarray(py))?;
    let hinge: Vec<f64> = model.epochs.iter().map(|r| r.mean_hinge).collect();
    d.set_item("mean_hinge", Array1::from(hinge).into_pyarray(py))?;
    Ok(d)
}

/// Viterbi decoding of many chains sharing one transition group.
#[pyfunction]
fn decode_chains<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    offsets: PyReadonlyArray1<'py, i64>,
    transitions: PyReadonlyArray2<'py, f64>,
    start: PyReadonlyArray1<'py, f64>,
    stop: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let l = emissions.shape()[1];
    let ts = transitions.shape();
    if ts[0] != l || ts[1] != l {
        return Err(PyValueError::new_err(format!(
            "`transitions` must be {l} x {l} (L from emissions), got {} x {}",
            ts[0], ts[1]
        )));
    }
    let trans = Transitions {
        l,
        tr: transitions.as_array().iter().copied().collect(),
        start: start.as_array().to_vec(),
        stop: stop.as_array().to_vec(),
    };
    let em: Vec<f64> = emissions.as_array().iter().copied().collect();
    let offsets = indices("offsets", &offsets)?;
    let out = py.detach(|| core_decode(&em, &offsets, &trans)).py()?;
    let out: Vec<i64> = out.into_iter().map(|v| v as i64).collect();
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(train_chain_mkl, m)?)?;
    m.add_function(wrap_pyfunction!(decode_chains, m)?)?;
    Ok(())
}
