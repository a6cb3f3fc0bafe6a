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

use crate::convert::{
    add_functions, array2, each, each_core, ensure_shape, index_array, opt_vec, row_major,
};
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

/// A row-major view of a 2-D array, copied only if it is not C-contiguous.
fn rows<'a>(
    name: &str,
    a: &'a PyReadonlyArray2<'_, f64>,
) -> PyResult<(Cow<'a, [f64]>, usize, usize)> {
    Ok((row_major(name, a)?, a.shape()[0], a.shape()[1]))
}

/// The largest finite magnitude of any part, and the part's name.
fn largest<'a>(parts: &[(&'a str, &[f64])]) -> (&'a str, f64) {
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
    worst
}

/// Largest total a decoder may form: sums of `terms` scores stay below it,
/// so no partial sum (or log-sum-exp) overflows.
const MAX_TOTAL: f64 = 1e300;

/// Errors naming the argument with the largest finite magnitude unless
/// `terms` times that magnitude stays below [`MAX_TOTAL`] (non-finite
/// values are left to the core's checks, which name them).
fn check_sums(parts: &[(&str, &[f64])], terms: usize) -> PyResult<()> {
    let (name, m) = largest(parts);
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

/// The named score arrays of a chain.
fn chain_parts<'a>(
    em: &'a [f64],
    tr: &'a [f64],
    start: Option<&'a [f64]>,
    stop: Option<&'a [f64]>,
) -> Vec<(&'static str, &'a [f64])> {
    let mut parts = vec![("emissions", em), ("transitions", tr)];
    parts.extend(start.map(|s| ("start", s)));
    parts.extend(stop.map(|s| ("stop", s)));
    parts
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
    let mut parts = chain_parts(em, tr, start, stop);
    parts.extend(cost.as_ref().map(|c| ("cost", &c[..])));
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
    let (name, m) = largest(&chain_parts(em, tr, start, stop));
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

/// Runs a batch decoder with the GIL released: `make` builds the core view
/// of each item (an error names `name[k]`), `run` fills one output of
/// `len(item)` labels or heads per item and returns the scores.
fn decode_batch<'py, 'a, T: Sync, C>(
    py: Python<'py>,
    name: &str,
    items: &'a [T],
    len: impl Fn(&T) -> usize,
    make: impl Fn(&'a T) -> omkl_core::Result<C> + Send,
    run: impl FnOnce(&[C], &mut [Vec<usize>]) -> omkl_core::Result<Vec<f64>> + Send,
) -> PyResult<BatchOut<'py>> {
    let mut outs: Vec<Vec<usize>> = items.iter().map(|x| vec![0; len(x)]).collect();
    let scores = py
        .detach(|| run(&each_core(name, items, make)?, &mut outs))
        .py()?;
    let labels = outs.iter().map(|o| to_i64(py, o)).collect();
    Ok((labels, scores.into_pyarray(py)))
}

/// Converts integer labels or heads to `usize`, rejecting negative values.
fn indices(name: &str, a: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    crate::convert::to_indices(name, a, |i, v| format!("element {i} is {v}, expected >= 0"))
}

fn to_i64<'py>(py: Python<'py>, v: &[usize]) -> Bound<'py, PyArray1<i64>> {
    index_array(py, v.iter().copied())
}

/// Transitions must be square; the chain's own check names the rest.
fn chain_dims(em: (usize, usize), tr: (usize, usize)) -> PyResult<(usize, usize)> {
    let ok = tr.0 == tr.1 && tr.0 == em.1;
    let expected = format!("{} x {} (L x L, L = emissions.shape[1])", em.1, em.1);
    ensure_shape(ok, "transitions", expected, format!("{} x {}", tr.0, tr.1))?;
    Ok(em)
}

fn square(name: &str, r: usize, c: usize) -> PyResult<usize> {
    let expected = "(n + 1) x (n + 1) with n >= 1";
    ensure_shape(r == c && r != 0, name, expected, format!("{r} x {c}"))?;
    Ok(r - 1)
}

/// The converted inputs of a chain decoder: row-major emissions (`n × L`)
/// and transitions (`L × L`, checked), and the optional start and stop
/// scores.
struct Chain<'a> {
    em: Cow<'a, [f64]>,
    tr: Cow<'a, [f64]>,
    start: Option<Cow<'a, [f64]>>,
    stop: Option<Cow<'a, [f64]>>,
    n: usize,
    l: usize,
}

impl<'a> Chain<'a> {
    fn new(
        emissions: &'a PyReadonlyArray2<'_, f64>,
        transitions: &'a PyReadonlyArray2<'_, f64>,
        start: &'a Option<PyReadonlyArray1<'_, f64>>,
        stop: &'a Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<Self> {
        let (em, n, l) = rows("emissions", emissions)?;
        let (tr, a, b) = rows("transitions", transitions)?;
        chain_dims((n, l), (a, b))?;
        let (start, stop) = (opt_vec("start", start)?, opt_vec("stop", stop)?);
        Ok(Chain {
            em,
            tr,
            start,
            stop,
            n,
            l,
        })
    }

    /// [`check_chain`] with a Hamming `cost` if given.
    fn check(&self, cost: Option<f64>) -> PyResult<()> {
        let (start, stop) = (self.start.as_deref(), self.stop.as_deref());
        check_chain(&self.em, &self.tr, start, stop, cost, self.n)
    }

    fn scores(&self) -> omkl_core::Result<ChainScores<'_>> {
        let (start, stop) = (self.start.as_deref(), self.stop.as_deref());
        ChainScores::new(&self.em, &self.tr, start, stop, self.n, self.l)
    }
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
    let ch = Chain::new(&emissions, &transitions, &start, &stop)?;
    ch.check(None)?;
    let mut out = vec![0; ch.n];
    let score = py
        .detach(|| {
            let c = ch.scores()?;
            with_ws(&VITERBI_WS, ch.n * ch.l, |ws| {
                vit::viterbi(&c, ws, &mut out)
            })
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
    let ch = Chain::new(&emissions, &transitions, &start, &stop)?;
    let gold = indices("gold", &gold)?;
    ch.check(Some(cost))?;
    let mut out = vec![0; ch.n];
    let value = py
        .detach(|| {
            let c = ch.scores()?;
            with_ws(&VITERBI_WS, ch.n * ch.l, |ws| {
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
    let ems = each("emissions", &emissions, rows)?;
    for (k, e) in ems.iter().enumerate() {
        let name = format!("transitions (for emissions[{k}])");
        let expected = format!("{} x {}", e.2, e.2);
        ensure_shape(a == b && a == e.2, name, expected, format!("{a} x {b}"))?;
    }
    let (start, stop) = (opt_vec("start", &start)?, opt_vec("stop", &stop)?);
    let (start, stop) = (start.as_deref(), stop.as_deref());
    for (em, n, _) in &ems {
        check_chain(em, &tr, start, stop, None, *n)?;
    }
    decode_batch(
        py,
        "emissions",
        &ems,
        |e| e.1,
        |(em, n, l)| ChainScores::new(em, &tr, start, stop, *n, *l),
        batch::viterbi_batch,
    )
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
    let em = row_major("emissions", &emissions)?;
    let (tr, a, b) = rows("transitions", &transitions)?;
    chain_dims((max_n, l), (a, b))?;
    let lengths = lengths
        .as_ref()
        .map(|x| indices("lengths", x))
        .transpose()?;
    let (start, stop) = (opt_vec("start", &start)?, opt_vec("stop", &stop)?);
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
    Ok((array2(py, count, max_n, labels)?, scores.into_pyarray(py)))
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

/// Defines a tree decoder and its loss-augmented variant (Hamming cost per
/// wrong head) on top of [`decode_tree`].
macro_rules! tree_decoders {
    ($(#[$doc:meta])* $name:ident => $decode:path,
     $(#[$hdoc:meta])* $hamming:ident => $decode_hamming:path, $ws:ident) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (scores, single_root=false))]
        fn $name<'py>(
            py: Python<'py>,
            scores: PyReadonlyArray2<'py, f64>,
            single_root: bool,
        ) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
            decode_tree(py, &scores, 0.0, &$ws, |a, ws, heads| {
                $decode(a, single_root, ws, heads)
            })
        }

        $(#[$hdoc])*
        #[pyfunction]
        #[pyo3(signature = (scores, gold, cost=1.0, single_root=false))]
        fn $hamming<'py>(
            py: Python<'py>,
            scores: PyReadonlyArray2<'py, f64>,
            gold: PyReadonlyArray1<'py, i64>,
            cost: f64,
            single_root: bool,
        ) -> PyResult<(Bound<'py, PyArray1<i64>>, f64)> {
            let gold = indices("gold", &gold)?;
            decode_tree(py, &scores, cost, &$ws, |a, ws, heads| {
                $decode_hamming(a, &gold, cost, single_root, ws, heads)
            })
        }
    };
}

tree_decoders!(
    /// Chu-Liu-Edmonds: the best non-projective tree and its score.
    chu_liu_edmonds => cle::chu_liu_edmonds,
    /// Loss-augmented Chu-Liu-Edmonds with a Hamming cost per wrong head.
    chu_liu_edmonds_hamming => cle::chu_liu_edmonds_hamming,
    CLE_WS
);

tree_decoders!(
    /// Eisner: the best projective tree and its score.
    eisner => eis::eisner,
    /// Loss-augmented Eisner with a Hamming cost per wrong head.
    eisner_hamming => eis::eisner_hamming,
    EISNER_WS
);

/// Chu-Liu-Edmonds on a list of sentences, in parallel.
#[pyfunction]
#[pyo3(signature = (scores, single_root=false))]
fn chu_liu_edmonds_batch<'py>(
    py: Python<'py>,
    scores: Vec<PyReadonlyArray2<'py, f64>>,
    single_root: bool,
) -> PyResult<BatchOut<'py>> {
    let mats = each("scores", &scores, |name, e| {
        let (s, r, c) = rows(name, e)?;
        let n = square(name, r, c)?;
        check_tree(name, &s, r, 0.0)?;
        Ok((s, n))
    })?;
    decode_batch(
        py,
        "scores",
        &mats,
        |(_, n)| n + 1,
        |(s, n)| ArcScores::new(s, *n),
        |arcs, heads| batch::chu_liu_edmonds_batch(arcs, single_root, heads),
    )
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
    let ch = Chain::new(&emissions, &transitions, &start, &stop)?;
    let (n, l) = (ch.n, ch.l);
    ch.check(None)?;
    check_log_space(&ch.em, &ch.tr, ch.start.as_deref(), ch.stop.as_deref(), n)?;
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
            let c = ch.scores()?;
            with_ws(&FB_WS, n * l, |ws| {
                if pairwise {
                    fb::forward_backward_pairwise(&c, ws, &mut node, &mut trans, &mut pair)
                } else {
                    fb::forward_backward(&c, ws, &mut node, &mut trans)
                }
            })
        })
        .py()?;
    let node = array2(py, n, l, node)?;
    let trans = array2(py, l, l, trans)?;
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
    let ch = Chain::new(&emissions, &transitions, &start, &stop)?;
    let (n, l) = (ch.n, ch.l);
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| OmklError::invalid("k", format!("k = {k}, expected at least 1")))
        .py()?;
    ch.check(None)?;
    let (paths, scores) = py
        .detach(|| {
            let c = ch.scores()?;
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
    Ok((array2(py, m, n, paths)?, scores.into_pyarray(py)))
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
    Ok((log_z, array2(py, r, r, mu)?))
}

/// Multiclass argmax: the best label and its score.
#[pyfunction]
fn argmax(scores: PyReadonlyArray1<'_, f64>) -> PyResult<(usize, f64)> {
    am::argmax(&row_major("scores", &scores)?).py()
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
    let s = row_major("scores", &scores)?;
    check_sums(&[("scores", &s), ("cost", &[cost])], 2)?;
    am::argmax_hamming(&s, gold, cost).py()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        viterbi,
        viterbi_hamming,
        viterbi_batch,
        viterbi_batch_array,
        viterbi_nbest,
        chu_liu_edmonds,
        chu_liu_edmonds_hamming,
        chu_liu_edmonds_batch,
        forward_backward,
        matrix_tree,
        eisner,
        eisner_hamming,
        argmax,
        argmax_hamming
    )?;
    Ok(())
}
