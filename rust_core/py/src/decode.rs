//! Python binding for `omkl_core::decode`: numpy arrays in, numpy arrays out.

use std::borrow::Cow;
use std::cell::RefCell;
use std::thread::LocalKey;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use omkl_core::decode::arcs::ArcScores;
use omkl_core::decode::argmax as am;
use omkl_core::decode::batch;
use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::chu_liu_edmonds::{self as cle, CleWorkspace};
use omkl_core::decode::eisner::{self as eis, EisnerWorkspace};
use omkl_core::decode::forward_backward::{self as fb, ForwardBackwardWorkspace};
use omkl_core::decode::matrix_tree::{self as mt, MatrixTreeWorkspace};
use omkl_core::decode::nbest::{self as nb, NbestWorkspace};
use omkl_core::decode::viterbi::{self as vit, ViterbiWorkspace};
use omkl_core::error::try_vec;
use omkl_core::OmklError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::IntoPyResult;

thread_local! {
    static VITERBI_WS: RefCell<ViterbiWorkspace> = RefCell::default();
    static NBEST_WS: RefCell<NbestWorkspace> = RefCell::default();
    static FB_WS: RefCell<ForwardBackwardWorkspace> = RefCell::default();
    static CLE_WS: RefCell<CleWorkspace> = RefCell::default();
    static MT_WS: RefCell<MatrixTreeWorkspace> = RefCell::default();
    static EISNER_WS: RefCell<EisnerWorkspace> = RefCell::default();
}

/// Problems with more table cells than this get a fresh workspace, so that
/// one huge call does not pin its buffers to the thread for good.
const MAX_CACHED_CELLS: usize = 1 << 20;

/// Runs `f` with this thread's cached workspace of type `W`, so that
/// repeated single calls allocate no buffers (the workspace grows to the
/// largest problem seen, up to `MAX_CACHED_CELLS` cells).
fn with_ws<W: Default + 'static, R>(
    key: &'static LocalKey<RefCell<W>>,
    cells: usize,
    f: impl FnOnce(&mut W) -> R,
) -> R {
    if cells > MAX_CACHED_CELLS {
        return f(&mut W::default());
    }
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut ws) => f(&mut ws),
        Err(_) => f(&mut W::default()),
    })
}

/// A copy of the elements of a (non-contiguous) array in row-major order,
/// or `MemoryError` naming `name` (a broadcast view can be far larger than
/// the memory behind it).
fn copy_elems<'a>(name: &str, it: impl ExactSizeIterator<Item = &'a f64>) -> PyResult<Vec<f64>> {
    let mut out = try_vec(name, &[it.len()], 0.0).py()?;
    for (o, v) in out.iter_mut().zip(it) {
        *o = *v;
    }
    Ok(out)
}

/// A row-major view of a 2-D array, copied only if it is not C-contiguous.
fn rows<'a>(
    name: &str,
    a: &'a PyReadonlyArray2<'_, f64>,
) -> PyResult<(Cow<'a, [f64]>, usize, usize)> {
    let (r, c) = (a.shape()[0], a.shape()[1]);
    Ok(match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => (Cow::Borrowed(s), r, c),
        _ => (Cow::Owned(copy_elems(name, a.as_array().iter())?), r, c),
    })
}

fn vec1<'a>(name: &str, a: &'a PyReadonlyArray1<'_, f64>) -> PyResult<Cow<'a, [f64]>> {
    Ok(match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(copy_elems(name, a.as_array().iter())?),
    })
}

/// Largest total a decoder may form: sums of `terms` scores stay below it,
/// so no partial sum (or log-sum-exp) overflows.
const MAX_TOTAL: f64 = 1e300;

/// Errors naming the argument with the largest finite magnitude unless
/// `terms` times that magnitude stays below [`MAX_TOTAL`] (non-finite
/// values are left to the core's checks, which name them).
fn check_sums(parts: &[(&str, &[f64])], terms: usize) -> PyResult<()> {
    let mut worst = ("", 0.0f64);
    for &(name, v) in parts {
        let m = v
            .iter()
            .filter(|x| x.is_finite())
            .fold(0.0f64, |m, x| m.max(x.abs()));
        if m > worst.1 {
            worst = (name, m);
        }
    }
    let (name, m) = worst;
    if m * terms.max(1) as f64 > MAX_TOTAL {
        return Err(OmklError::invalid(
            name,
            format!(
                "magnitude {m:e} is too large: a total of {terms} such scores would exceed \
                 {MAX_TOTAL:e}; scale the scores down"
            ),
        ))
        .py();
    }
    Ok(())
}

/// [`check_sums`] for the arcs of a `side × side` tree score matrix that
/// are used (`h ≠ m`, `m ≥ 1`; column 0 and the diagonal are ignored) and
/// `n` costs: `2n` terms.
fn check_tree(name: &str, s: &[f64], side: usize, cost: f64) -> PyResult<()> {
    let mut m = 0.0f64;
    for h in 0..side {
        for (j, v) in s[h * side..(h + 1) * side].iter().enumerate().skip(1) {
            if j != h && v.is_finite() {
                m = m.max(v.abs());
            }
        }
    }
    check_sums(&[(name, &[m]), ("cost", &[cost])], 2 * (side - 1))
}

/// [`check_sums`] for a chain: `2n + 1` terms (plus `n` costs).
fn check_chain(
    em: &[f64],
    tr: &[f64],
    start: Option<&[f64]>,
    stop: Option<&[f64]>,
    cost: Option<f64>,
    n: usize,
) -> PyResult<()> {
    let cost = cost.map(|c| [c]);
    let mut parts = vec![("emissions", em), ("transitions", tr)];
    if let Some(s) = start {
        parts.push(("start", s));
    }
    if let Some(s) = stop {
        parts.push(("stop", s));
    }
    if let Some(c) = cost.as_ref() {
        parts.push(("cost", c));
    }
    check_sums(&parts, 3 * n + 1)
}

/// Largest total score magnitude forward-backward accepts: its log-space
/// sums carry an absolute error of about `ε` times the total, which becomes
/// the relative error of the marginals (`2e−10` at this bound).
const MAX_LOG_TOTAL: f64 = 1e6;

/// Errors naming the argument with the largest magnitude when `2n + 1`
/// scores of that magnitude exceed [`MAX_LOG_TOTAL`].
fn check_log_space(
    em: &[f64],
    tr: &[f64],
    start: Option<&[f64]>,
    stop: Option<&[f64]>,
    n: usize,
) -> PyResult<()> {
    let mut parts = vec![("emissions", em), ("transitions", tr)];
    parts.extend(start.map(|s| ("start", s)));
    parts.extend(stop.map(|s| ("stop", s)));
    let (mut name, mut m) = ("", 0.0f64);
    for (p, v) in parts {
        let pm = v
            .iter()
            .filter(|x| x.is_finite())
            .fold(0.0f64, |a, x| a.max(x.abs()));
        if pm > m {
            (name, m) = (p, pm);
        }
    }
    let total = m * (2 * n + 1) as f64;
    if total > MAX_LOG_TOTAL {
        return Err(OmklError::invalid(
            name,
            format!(
                "magnitude {m:e} is too large for forward-backward: {} such scores total \
                 {total:e}, above {MAX_LOG_TOTAL:e}, where the marginals lose precision in \
                 float64; scale the scores down",
                2 * n + 1
            ),
        ))
        .py();
    }
    Ok(())
}

/// Labels as rows of a 2-D array, and one score per row.
type LabelTable<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray1<f64>>);

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
    let (em, n, l) = rows("emissions", &emissions)?;
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((n, l), (a, b))?;
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    check_chain(&em, &tr, start.as_deref(), stop.as_deref(), None, n)?;
    let mut out = vec![0; n];
    let score = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            with_ws(&VITERBI_WS, n * l, |ws| vit::viterbi(&c, ws, &mut out))
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
    let (em, n, l) = rows("emissions", &emissions)?;
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((n, l), (a, b))?;
    let gold = indices("gold", &gold)?;
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    check_chain(&em, &tr, start.as_deref(), stop.as_deref(), Some(cost), n)?;
    let mut out = vec![0; n];
    let value = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            with_ws(&VITERBI_WS, n * l, |ws| {
                vit::viterbi_hamming(&c, &gold, cost, ws, &mut out)
            })
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
    let (tr, a, b) = rows("transitions", &transitions)?;
    let ems = emissions
        .iter()
        .enumerate()
        .map(|(k, e)| rows(&format!("emissions[{k}]"), e))
        .collect::<PyResult<Vec<_>>>()?;
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
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    for (em, n, _) in &ems {
        check_chain(em, &tr, start.as_deref(), stop.as_deref(), None, *n)?;
    }
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

/// Viterbi on a padded 3-D batch (count x n x L) sharing transitions, in
/// parallel; returns a count x n label array (-1 past each chain's length)
/// and the scores.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, lengths=None, start=None, stop=None))]
fn viterbi_batch_array<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray3<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    lengths: Option<PyReadonlyArray1<'py, i64>>,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<LabelTable<'py>> {
    let shape = emissions.shape();
    let (count, max_n, l) = (shape[0], shape[1], shape[2]);
    let em: Cow<'_, [f64]> = match emissions.as_slice() {
        Ok(s) if emissions.is_c_contiguous() => Cow::Borrowed(s),
        _ => Cow::Owned(copy_elems("emissions", emissions.as_array().iter())?),
    };
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((max_n, l), (a, b))?;
    let lengths = lengths
        .as_ref()
        .map(|x| indices("lengths", x))
        .transpose()?;
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    check_chain(&em, &tr, start.as_deref(), stop.as_deref(), None, max_n)?;
    let mut out = try_vec("emissions", &[count, max_n], usize::MAX).py()?;
    let mut scores = try_vec("emissions", &[count], 0.0).py()?;
    py.detach(|| {
        let chains = batch::PaddedChains::new(
            &em,
            lengths.as_deref(),
            &tr,
            start.as_deref(),
            stop.as_deref(),
            count,
            max_n,
            l,
        )?;
        batch::viterbi_padded(&chains, &mut out, &mut scores)
    })
    .py()?;
    let labels: Vec<i64> = out
        .iter()
        .map(|&y| if y == usize::MAX { -1 } else { y as i64 })
        .collect();
    let labels = ndarray::Array2::from_shape_vec((count, max_n), labels)
        .expect("buffer has count * n elements")
        .into_pyarray(py);
    Ok((labels, scores.into_pyarray(py)))
}

/// Runs a tree decoder on a square `(n+1)×(n+1)` score matrix with the GIL
/// released; returns the heads and the decoder's value.
fn decode_tree<'py, W: Default + 'static>(
    py: Python<'py>,
    scores: &PyReadonlyArray2<'py, f64>,
    cost: f64,
    key: &'static LocalKey<RefCell<W>>,
    decoder: impl FnOnce(&ArcScores<'_>, &mut W, &mut [usize]) -> omkl_core::Result<f64> + Send,
) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
    let (s, r, c) = rows("scores", scores)?;
    let n = square("scores", r, c)?;
    check_tree("scores", &s, r, cost)?;
    let mut heads = vec![0; n + 1];
    let value = py
        .detach(|| {
            let a = ArcScores::new(&s, n)?;
            with_ws(key, r * r, |ws| decoder(&a, ws, &mut heads))
        })
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
    decode_tree(py, &scores, 0.0, &CLE_WS, |a, ws, heads| {
        cle::chu_liu_edmonds(a, single_root, ws, heads)
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
    decode_tree(py, &scores, cost, &CLE_WS, |a, ws, heads| {
        cle::chu_liu_edmonds_hamming(a, &gold, cost, single_root, ws, heads)
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
    let mats = scores
        .iter()
        .enumerate()
        .map(|(k, e)| rows(&format!("scores[{k}]"), e))
        .collect::<PyResult<Vec<_>>>()?;
    let mut ns = Vec::with_capacity(mats.len());
    for (k, (s, r, c)) in mats.iter().enumerate() {
        let n = square(&format!("scores[{k}]"), *r, *c)?;
        check_tree(&format!("scores[{k}]"), s, *r, 0.0)?;
        ns.push(n);
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

/// Forward-backward: log Z, position marginals (n x L), transition
/// marginals summed over positions (L x L) and, with `pairwise`, the
/// per-position transition marginals ((n-1) x L x L) as a fourth element.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, start=None, stop=None, pairwise=false))]
fn forward_backward<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
    pairwise: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let (em, n, l) = rows("emissions", &emissions)?;
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((n, l), (a, b))?;
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    check_chain(&em, &tr, start.as_deref(), stop.as_deref(), None, n)?;
    check_log_space(&em, &tr, start.as_deref(), stop.as_deref(), n)?;
    let mut node = try_vec("emissions", &[n, l], 0.0).py()?;
    let mut trans = try_vec("transitions", &[l, l], 0.0).py()?;
    let pair_dims = if pairwise {
        [n.saturating_sub(1), l, l]
    } else {
        [0, 0, 0]
    };
    let mut pair = try_vec("pairwise", &pair_dims, 0.0).py()?;
    let log_z = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            with_ws(&FB_WS, n * l, |ws| {
                if pairwise {
                    fb::forward_backward_pairwise(&c, ws, &mut node, &mut trans, &mut pair)
                } else {
                    fb::forward_backward(&c, ws, &mut node, &mut trans)
                }
            })
        })
        .py()?;
    let node = to_2d(py, node, n, l);
    let trans = to_2d(py, trans, l, l);
    if pairwise {
        let pair = ndarray::Array3::from_shape_vec((n - 1, l, l), pair)
            .expect("buffer has (n - 1) * L * L elements")
            .into_pyarray(py);
        PyTuple::new(
            py,
            [
                log_z.into_pyobject(py)?.into_any(),
                node.into_any(),
                trans.into_any(),
                pair.into_any(),
            ],
        )
    } else {
        PyTuple::new(
            py,
            [
                log_z.into_pyobject(py)?.into_any(),
                node.into_any(),
                trans.into_any(),
            ],
        )
    }
}

/// N-best Viterbi: the k best labellings (rows of a 2-D array, best first)
/// and their scores.
#[pyfunction]
#[pyo3(signature = (emissions, transitions, k, start=None, stop=None))]
fn viterbi_nbest<'py>(
    py: Python<'py>,
    emissions: PyReadonlyArray2<'py, f64>,
    transitions: PyReadonlyArray2<'py, f64>,
    k: i64,
    start: Option<PyReadonlyArray1<'py, f64>>,
    stop: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<LabelTable<'py>> {
    let (em, n, l) = rows("emissions", &emissions)?;
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((n, l), (a, b))?;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| OmklError::invalid("k", format!("k = {k}, expected at least 1")))
        .py()?;
    let start = start.as_ref().map(|a| vec1("start", a)).transpose()?;
    let stop = stop.as_ref().map(|a| vec1("stop", a)).transpose()?;
    check_chain(&em, &tr, start.as_deref(), stop.as_deref(), None, n)?;
    let (paths, scores) = py
        .detach(|| {
            let c = ChainScores::new(&em, &tr, start.as_deref(), stop.as_deref(), n, l)?;
            // At most L^n labellings exist: never size buffers beyond that.
            let total = (0..n).try_fold(1usize, |acc, _| acc.checked_mul(l).filter(|&t| t < k));
            let k = total.map_or(k, |t| t.max(1));
            let mut paths = try_vec("k", &[k, n], 0)?;
            let mut scores = try_vec("k", &[k], 0.0)?;
            let cells = n.saturating_mul(l).saturating_mul(k);
            let m = with_ws(&NBEST_WS, cells, |ws| {
                nb::viterbi_nbest(&c, k, ws, &mut paths, &mut scores)
            })?;
            paths.truncate(m * n);
            scores.truncate(m);
            Ok::<_, OmklError>((paths, scores))
        })
        .py()?;
    let m = scores.len();
    let paths: Vec<i64> = paths.iter().map(|&y| y as i64).collect();
    let paths = ndarray::Array2::from_shape_vec((m, n), paths)
        .expect("buffer has m * n elements")
        .into_pyarray(py);
    Ok((paths, scores.into_pyarray(py)))
}

/// Matrix-tree theorem: log Z and arc marginals ((n+1) x (n+1)).
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn matrix_tree<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray2<'py, f64>,
    single_root: bool,
) -> PyResult<(f64, Bound<'py, PyArray2<f64>>)> {
    let (s, r, c) = rows("scores", &scores)?;
    let n = square("scores", r, c)?;
    let mut mu = try_vec("scores", &[r, r], 0.0).py()?;
    let log_z = py
        .detach(|| {
            let a = ArcScores::new(&s, n)?;
            with_ws(&MT_WS, r * r, |ws| {
                mt::matrix_tree(&a, single_root, ws, &mut mu)
            })
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
    decode_tree(py, &scores, 0.0, &EISNER_WS, |a, ws, heads| {
        eis::eisner(a, single_root, ws, heads)
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
    decode_tree(py, &scores, cost, &EISNER_WS, |a, ws, heads| {
        eis::eisner_hamming(a, &gold, cost, single_root, ws, heads)
    })
}

/// Multiclass argmax: the best label and its score.
#[pyfunction]
fn argmax(scores: PyReadonlyArray1<'_, f64>) -> PyResult<(usize, f64)> {
    am::argmax(&vec1("scores", &scores)?).py()
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
    let s = vec1("scores", &scores)?;
    check_sums(&[("scores", &s), ("cost", &[cost])], 2)?;
    am::argmax_hamming(&s, gold, cost).py()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(viterbi, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_hamming, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_batch, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_batch_array, m)?)?;
    m.add_function(wrap_pyfunction!(viterbi_nbest, m)?)?;
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
