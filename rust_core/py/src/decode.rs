//! Python binding for `omkl_core::decode`: numpy arrays in, numpy arrays out.

use std::borrow::Cow;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use omkl_core::decode::arcs::ArcScores;
use omkl_core::decode::argmax as am;
use omkl_core::decode::batch;
use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::chu_liu_edmonds::{self as cle, CleWorkspace};
use omkl_core::decode::eisner::{self as eis, EisnerWorkspace};
use omkl_core::decode::forward_backward::{self as fb, ForwardBackwardWorkspace};
use omkl_core::decode::matrix_tree::{self as mt, MatrixTreeWorkspace};
use omkl_core::decode::viterbi::{self as vit, ViterbiWorkspace};
use omkl_core::OmklError;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// A row-major view of a 2-D array, copied only if it is not C-contiguous.
fn rows<'a>(a: &'a PyReadonlyArray2<'_, f64>) -> (Cow<'a, [f64]>, usize, usize) {
    let (r, c) = (a.shape()[0], a.shape()[1]);
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => (Cow::Borrowed(s), r, c),
        _ => (Cow::Owned(a.as_array().iter().copied().collect()), r, c),
    }
}

fn vec1<'a>(a: &'a PyReadonlyArray1<'_, f64>) -> Cow<'a, [f64]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

/// Outputs of a batch call: one index array per item, and the scores.
type BatchOut<'py> = (Vec<Bound<'py, PyArray1<i64>>>, Bound<'py, PyArray1<f64>>);

/// Converts integer labels or heads to `usize`, rejecting negative values.
fn indices(name: &str, a: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v)
                .map_err(|_| OmklError::invalid(name, format!("element {i} is {v}, expected >= 0")))
        })
        .collect::<Result<Vec<_>, _>>()
        .py()
}

fn to_i64<'py>(py: Python<'py>, v: &[usize]) -> Bound<'py, PyArray1<i64>> {
    v.iter()
        .map(|&x| x as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

/// Transitions must be square; the chain's own check names the rest.
fn chain_dims(em: (usize, usize), tr: (usize, usize)) -> PyResult<(usize, usize)> {
    if tr.0 != tr.1 || tr.0 != em.1 {
        return Err(OmklError::shape(
            "transitions",
            format!("{} x {} (L x L, L = emissions.shape[1])", em.1, em.1),
            format!("{} x {}", tr.0, tr.1),
        ))
        .py();
    }
    Ok(em)
}

fn square(name: &str, r: usize, c: usize) -> PyResult<usize> {
    if r != c || r == 0 {
        return Err(OmklError::shape(
            name,
            "(n + 1) x (n + 1) with n >= 1",
            format!("{r} x {c}"),
        ))
        .py();
    }
    Ok(r - 1)
}

/// Viterbi: the best labelling of a chain and its score.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, start=None, stop=None))]
fn viterbi<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let (em, n, l) = rows(&emissions);
    let (tr, a, b) = rows(&transitions);
    chain_dims((n, l), (a, b))?;
    let start = start.as_ref().map(vec1);
    let stop = stop.as_ref().map(vec1);
    let mut out = vec![0; n];
    let score = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            vit::viterbi(&c, &mut ViterbiWorkspace::new(), &mut out)
        })
        .py()?;
    Ok((to_i64(py, &out), score))
}

/// Loss-augmented Viterbi with a Hamming cost per wrong label.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, gold, cost=1.0, start=None, stop=None))]
#[allow(clippy::too_many_arguments)]
fn viterbi_hamming<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    gold: PyReadonlyArray1<'py, i64>,
    cost: f64,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let (em, n, l) = rows(&emissions);
    let (tr, a, b) = rows(&transitions);
    chain_dims((n, l), (a, b))?;
    let gold = indices("gold", &gold)?;
    let start = start.as_ref().map(vec1);
    let stop = stop.as_ref().map(vec1);
    let mut out = vec![0; n];
    let value = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            vit::viterbi_hamming(&c, &gold, cost, &mut ViterbiWorkspace::new(), &mut out)
        })
        .py()?;
    Ok((to_i64(py, &out), value))
}

/// Viterbi on a list of chains sharing transitions, in parallel.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, start=None, stop=None))]
fn viterbi_batch<'py>(
    py: Python<'py>,
    emissions: Vec<PyReadonlyArray2<'py, f64>>,
    transitions: PyReadonlyArray2<'py, f64>,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<BatchOut<'py>> {
    let (tr, a, b) = rows(&transitions);
    let ems: Vec<_> = emissions.iter().map(rows).collect();
    for (k, e) in ems.iter().enumerate() {
        if a != b || a != e.2 {
            return Err(OmklError::shape(
                format!("transitions (for emissions[{k}])"),
                format!("{} x {}", e.2, e.2),
                format!("{a} x {b}"),
            ))
            .py();
        }
    }
    let start = start.as_ref().map(vec1);
    let stop = stop.as_ref().map(vec1);
    let mut outs: Vec<Vec<usize>> = ems.iter().map(|e| vec![0; e.1]).collect();
    let scores = py
        .detach(|| {
            let chains = ems
                .iter()
                .enumerate()
                .map(|(k, (em, n, l))| {
                    ChainScores::new(em, &tr, start.as_deref(), stop.as_deref(), *n, *l)
                        .map_err(|e| OmklError::invalid(format!("emissions[{k}]"), e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            batch::viterbi_batch(&chains, &mut outs)
        })
        .py()?;
    let labels = outs.iter().map(|o| to_i64(py, o)).collect();
    Ok((labels, scores.into_pyarray(py)))
}

/// Runs a tree decoder on a square `(n+1)×(n+1)` score matrix with the GIL
/// released; returns the heads and the decoder's value.
fn decode_tree<'py>(
    py: Python<'py>,
    scores: &PyReadonlyArray2<'py, f64>,
    decoder: impl FnOnce(&ArcScores<'_>, &mut [usize]) -> omkl_core::Result<f64> + Send,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let (s, r, c) = rows(scores);
    let n = square("scores", r, c)?;
    let mut heads = vec![0; n + 1];
    let value = py
        .detach(|| decoder(&ArcScores::new(&s, n)?, &mut heads))
        .py()?;
    Ok((to_i64(py, &heads), value))
}

/// Chu-Liu-Edmonds: the best non-projective tree and its score.
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn chu_liu_edmonds<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    single_root: bool,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    decode_tree(py, &scores, |a, heads| {
        cle::chu_liu_edmonds(a, single_root, &mut CleWorkspace::new(), heads)
    })
}

/// Loss-augmented Chu-Liu-Edmonds with a Hamming cost per wrong head.
#[pyfunction]
#[pyo3(signature = (scores, gold, cost=1.0, single_root=false))]
fn chu_liu_edmonds_hamming<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    gold: PyReadonlyArray1<'py, i64>,
    cost: f64,
    single_root: bool,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let gold = indices("gold", &gold)?;
    decode_tree(py, &scores, |a, heads| {
        let mut ws = CleWorkspace::new();
        cle::chu_liu_edmonds_hamming(a, &gold, cost, single_root, &mut ws, heads)
    })
}

/// Chu-Liu-Edmonds on a list of sentences, in parallel.
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn chu_liu_edmonds_batch<'py>(
    py: Python<'py>,
    scores: Vec<PyReadonlyArray2<'py, f64>>,
    single_root: bool,
) -> PyResult<BatchOut<'py>> {
    let mats: Vec<_> = scores.iter().map(rows).collect();
    let mut ns = Vec::with_capacity(mats.len());
    for (k, (_, r, c)) in mats.iter().enumerate() {
        ns.push(square(&format!("scores[{k}]"), *r, *c)?);
    }
    let mut heads: Vec<Vec<usize>> = ns.iter().map(|n| vec![0; n + 1]).collect();
    let out = py
        .detach(|| {
            let arcs = mats
                .iter()
                .zip(&ns)
                .enumerate()
                .map(|(k, ((s, _, _), n))| {
                    ArcScores::new(s, *n)
                        .map_err(|e| OmklError::invalid(format!("scores[{k}]"), e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            batch::chu_liu_edmonds_batch(&arcs, single_root, &mut heads)
        })
        .py()?;
    let hs = heads.iter().map(|h| to_i64(py, h)).collect();
    Ok((hs, out.into_pyarray(py)))
}

fn to_2d<'py>(py: Python<'py>, v: Vec<f64>, r: usize, c: usize) -> Bound<'py, PyArray2<f64>> {
    ndarray::Array2::from_shape_vec((r, c), v)
        .expect("buffer has r * c elements")
        .into_pyarray(py)
}

/// log Z, position marginals and transition marginals.
type ChainMarginals<'py> = (f64, Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// Forward-backward: log Z, position marginals (n x L) and transition
/// marginals summed over positions (L x L).
#[pyfunction]
#[pyo3(signature = (emissions, transitions, start=None, stop=None))]
fn forward_backward<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<ChainMarginals<'py>> {
    let (em, n, l) = rows(&emissions);
    let (tr, a, b) = rows(&transitions);
    chain_dims((n, l), (a, b))?;
    let start = start.as_ref().map(vec1);
    let stop = stop.as_ref().map(vec1);
    let mut node = vec![0.0; n * l];
    let mut trans = vec![0.0; l * l];
    let log_z = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            fb::forward_backward(
                &c,
                &mut ForwardBackwardWorkspace::new(),
                &mut node,
                &mut trans,
            )
        })
        .py()?;
    Ok((log_z, to_2d(py, node, n, l), to_2d(py, trans, l, l)))
}

/// Matrix-tree theorem: log Z and arc marginals ((n+1) x (n+1)).
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn matrix_tree<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    single_root: bool,
) -> PyResult<(f64, Bound<'py, PyArray2<f64>>)> {
    let (s, r, c) = rows(&scores);
    let n = square("scores", r, c)?;
    let mut mu = vec![0.0; r * r];
    let log_z = py
        .detach(|| {
            let a = ArcScores::new(&s, n)?;
            mt::matrix_tree(&a, single_root, &mut MatrixTreeWorkspace::new(), &mut mu)
        })
        .py()?;
    Ok((log_z, to_2d(py, mu, r, r)))
}

/// Eisner: the best projective tree and its score.
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn eisner<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    single_root: bool,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    decode_tree(py, &scores, |a, heads| {
        eis::eisner(a, single_root, &mut EisnerWorkspace::new(), heads)
    })
}

/// Loss-augmented Eisner with a Hamming cost per wrong head.
#[pyfunction]
#[pyo3(signature = (scores, gold, cost=1.0, single_root=false))]
fn eisner_hamming<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    gold: PyReadonlyArray1<'py, i64>,
    cost: f64,
    single_root: bool,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let gold = indices("gold", &gold)?;
    decode_tree(py, &scores, |a, heads| {
        let mut ws = EisnerWorkspace::new();
        eis::eisner_hamming(a, &gold, cost, single_root, &mut ws, heads)
    })
}

/// Multiclass argmax: the best label and its score.
#[pyfunction]
fn argmax(scores: PyReadonlyArray1<'_, f64>) -> PyResult<(usize, f64)> {
    am::argmax(&vec1(&scores)).py()
}

/// Loss-augmented argmax with cost for every label other than `gold`.
#[pyfunction]
#[pyo3(signature = (scores, gold, cost=1.0))]
fn argmax_hamming(
    scores: PyReadonlyArray1<'_, f64>,
    gold: i64,
    cost: f64,
) -> PyResult<(usize, f64)> {
    let gold = usize::try_from(gold)
        .map_err(|_| OmklError::invalid("gold", format!("label {gold}, expected >= 0")))
        .py()?;
    am::argmax_hamming(&vec1(&scores), gold, cost).py()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(viterbi, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_hamming, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_batch, m)?)?;
    m.add_function(wrap_pyfunction!(chu_liu_edmonds, m)?)?;
    m.add_function(wrap_pyfunction!(chu_liu_edmonds_hamming, m)?)?;
    m.add_function(wrap_pyfunction!(chu_liu_edmonds_batch, m)?)?;
    m.add_function(wrap_pyfunction!(forward_backward, m)?)?;
    m.add_function(wrap_pyfunction!(matrix_tree, m)?)?;
    m.add_function(wrap_pyfunction!(eisner, m)?)?;
    m.add_function(wrap_pyfunction!(eisner_hamming, m)?)?;
    m.add_function(wrap_pyfunction!(argmax, m)?)?;
    m.add_function(wrap_pyfunction!(argmax_hamming, m)?)?;
    Ok(())
}
