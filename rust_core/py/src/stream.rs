//! Python binding for `omkl_core::learner::stream_mkl`: the streaming
//! Alg. 3 learner behind `omkl.MKLClassifier` and `omkl.SequenceTagger`.

use ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use omkl_core::learner::spec::{parse_regularizer, parse_schedule};
use omkl_core::learner::stream_mkl::{StreamLoss, StreamMkl, StreamMklConfig};
use omkl_core::OmklError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::IntoPyResult;
use crate::kernel::PyKernel;

/// A C-contiguous float32 matrix as (slice, rows, columns).
fn matrix<'a>(name: &str, x: &'a PyReadonlyArray2<'_, f32>) -> PyResult<(&'a [f32], usize, usize)> {
    let (n, d) = (x.shape()[0], x.shape()[1]);
    let s = x
        .as_slice()
        .map_err(|_| OmklError::invalid(name, "expected a C-contiguous array"))
        .py()?;
    Ok((s, n, d))
}

/// Labels as indices (negative values are refused).
fn labels(name: &str, y: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    y.as_array()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v)
                .map_err(|_| {
                    OmklError::invalid(name, format!("expected labels >= 0, but {name}[{i}] = {v}"))
                })
                .py()
        })
        .collect()
}

/// The streaming Alg. 3 learner (multiclass or linear chains).
#[pyclass(module = "omkl._omkl", name = "StreamMkl")]
pub struct PyStreamMkl {
    inner: StreamMkl,
}

#[pymethods]
impl PyStreamMkl {
    #[new]
    #[pyo3(signature = (
        kernels, explicit_groups, d, n_labels, chain=false, loss="hinge",
        regularizer="squared_l21", lam=1e-3, schedule="inv_sqrt", eta0=1.0, sigma=1.0,
        cost=1.0, average=false, radius=None, max_support=None, history_every=0,
        skip_zeros=true, passive_aggressive=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kernels: Vec<PyRef<'_, PyKernel>>,
        explicit_groups: Vec<Vec<usize>>,
        d: usize,
        n_labels: usize,
        chain: bool,
        loss: &str,
        regularizer: &str,
        lam: f64,
        schedule: &str,
        eta0: f64,
        sigma: f64,
        cost: f64,
        average: bool,
        radius: Option<f64>,
        max_support: Option<usize>,
        history_every: u64,
        skip_zeros: bool,
        passive_aggressive: bool,
    ) -> PyResult<Self> {
        let loss = match loss {
            "hinge" => StreamLoss::Hinge,
            "crf" | "log" => StreamLoss::Crf,
            other => {
                return Err(OmklError::invalid(
                    "loss",
                    format!("expected 'hinge' or 'crf' (alias 'log'), got {other:?}"),
                ))
                .py()
            }
        };
        let config = StreamMklConfig {
            kernels: kernels.iter().map(|k| k.inner.clone()).collect(),
            explicit_groups,
            chain,
            loss,
            regularizer: parse_regularizer(regularizer, &[lam]).py()?,
            schedule: parse_schedule(schedule, eta0, sigma).py()?,
            cost,
            average,
            radius,
            max_support,
            history_every,
            skip_zeros,
            passive_aggressive,
        };
        Ok(PyStreamMkl {
            inner: StreamMkl::new(config, d, n_labels).py()?,
        })
    }

    /// One round on the example `(x, y)` (`x`: n × d float32, `y`: n
    /// labels); adds labels up to `n_labels` and, with `grow_dim`, grows
    /// the dimension to `x`'s column count. Returns the loss.
    #[pyo3(signature = (x, y, n_labels, grow_dim=false))]
    fn learn(
        &mut self,
        x: PyReadonlyArray2<'_, f32>,
        y: PyReadonlyArray1<'_, i64>,
        n_labels: usize,
        grow_dim: bool,
    ) -> PyResult<f64> {
        let (xs, n, d) = matrix("x", &x)?;
        let ys = labels("y", &y)?;
        if ys.len() != n {
            return Err(OmklError::shape(
                "y",
                format!("{n} labels (one per row of x)"),
                ys.len().to_string(),
            ))
            .py();
        }
        self.inner
            .learn_extending(xs, d, &ys, n_labels, grow_dim)
            .py()
    }

    /// Learns the examples stored one after the other in `x` (lengths
    /// `lens`), with the GIL released; all are validated first. Returns the
    /// summed loss.
    fn learn_many(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        lens: PyReadonlyArray1<'_, i64>,
        y: PyReadonlyArray1<'_, i64>,
        n_labels: usize,
    ) -> PyResult<f64> {
        let (xs, _, d) = matrix("x", &x)?;
        let lens = labels("lens", &lens)?;
        let ys = labels("y", &y)?;
        let inner = &mut self.inner;
        py.detach(|| {
            inner.learn_many(xs, d, &lens, &ys, n_labels, || {
                Python::attach(|py| py.check_signals())
                    .map_err(|e| OmklError::invalid("training", format!("interrupted: {e}")))
            })
        })
        .py()
    }

    /// The best labelling of `x` (n × d) as int64 labels.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        if n > 0 && d != self.inner.dim() {
            return Err(OmklError::shape(
                "x",
                format!("{} columns", self.inner.dim()),
                d.to_string(),
            ))
            .py();
        }
        let out = py.detach(|| self.inner.predict(xs)).py()?;
        Ok(out
            .into_iter()
            .map(|v| v as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py))
    }

    /// The labellings of the examples stored one after the other in `x`
    /// (lengths `lens`), concatenated; GIL released.
    fn predict_many<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        lens: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        let lens = labels("lens", &lens)?;
        if d != self.inner.dim() {
            return Err(OmklError::shape(
                "x",
                format!("{} columns", self.inner.dim()),
                d.to_string(),
            ))
            .py();
        }
        if lens.iter().sum::<usize>() != n {
            return Err(OmklError::shape(
                "lens",
                format!("lengths summing to {n}"),
                format!("{lens:?}"),
            ))
            .py();
        }
        let out = py
            .detach(|| {
                let mut out = Vec::with_capacity(n);
                let mut off = 0;
                for &len in &lens {
                    out.extend(self.inner.predict(&xs[off * d..(off + len) * d])?);
                    off += len;
                }
                Ok(out)
            })
            .py()?;
        Ok(out
            .into_iter()
            .map(|v| v as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py))
    }

    /// Emission scores (n × L) of `x` (n × d); with `rows=True`, every row
    /// of `x` is scored as its own one-position example.
    #[pyo3(signature = (x, rows=false))]
    fn scores<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        rows: bool,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        if d != self.inner.dim() {
            return Err(OmklError::shape(
                "x",
                format!("{} columns", self.inner.dim()),
                d.to_string(),
            ))
            .py();
        }
        let l = self.inner.n_labels();
        let out = py
            .detach(|| {
                if rows {
                    let mut out = Vec::with_capacity(n * l);
                    for r in xs.chunks_exact(d) {
                        out.extend(self.inner.scores(r, 1)?);
                    }
                    Ok(out)
                } else {
                    self.inner.scores(xs, n)
                }
            })
            .py()?;
        let arr = Array2::from_shape_vec((n, l), out)
            .map_err(|e| OmklError::invalid("x", e.to_string()))
            .py()?;
        Ok(arr.into_pyarray(py))
    }

    /// Grows the dimension to `d` and the labels to `n_labels` (no score
    /// changes: new features are 0 in stored inputs, new labels score 0).
    fn grow(&mut self, d: usize, n_labels: usize) {
        self.inner.grow_dim(d);
        self.inner.grow_labels(n_labels);
    }

    /// `β` over the kernel and explicit groups (current iterate).
    fn beta(&self) -> Vec<f64> {
        self.inner.beta()
    }

    /// Group norms: kernel groups, explicit groups, then transitions.
    fn group_norms(&self) -> Vec<f64> {
        self.inner.group_norms()
    }

    /// Appends the current `β` to the trajectory.
    fn record_beta(&mut self) {
        self.inner.record_beta()
    }

    /// The trajectory: rounds and `β` entries.
    fn beta_history(&self) -> (Vec<u64>, Vec<Vec<f64>>) {
        let (r, b) = self.inner.beta_history();
        (r.to_vec(), b.to_vec())
    }

    #[getter]
    fn n_support(&self) -> usize {
        self.inner.n_support()
    }

    #[getter]
    fn n_labels(&self) -> usize {
        self.inner.n_labels()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    #[getter]
    fn rounds(&self) -> u64 {
        self.inner.rounds()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// Deterministic, versioned bytes of the model.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    /// Reads bytes from `to_bytes`; `ValueError` on another format,
    /// version or corrupt contents.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(PyStreamMkl {
            inner: StreamMkl::from_bytes(data).py()?,
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStreamMkl>()?;
    Ok(())
}
