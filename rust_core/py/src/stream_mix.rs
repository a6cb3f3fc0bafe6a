//! Python binding of mixing streaming MKL models
//! (`omkl_core::learner::stream_mkl::mix`): the weighted average of kernel
//! expansions over the union of their supports.

use omkl_core::learner::stream_mkl::StreamMkl;
use pyo3::prelude::*;

use crate::convert::add_functions;
use crate::errors::IntoPyResult;
use crate::stream::PyStreamMkl;

/// The weighted average of `models` (weights ≥ 0, e.g. shard sizes): an
/// expansion over the union of their supports, group norms recomputed,
/// then the budget applied. `ValueError` when the models differ in
/// configuration, dimension or labels.
#[pyfunction]
fn stream_mkl_mix(
    py: Python<'_>,
    models: Vec<PyRef<'_, PyStreamMkl>>,
    weights: Vec<f64>,
) -> PyResult<PyStreamMkl> {
    let refs: Vec<&StreamMkl> = models.iter().map(|m| &m.inner).collect();
    let inner = py.detach(|| StreamMkl::mixed(&refs, &weights)).py()?;
    Ok(PyStreamMkl {
        inner,
        mapped: Default::default(),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, stream_mkl_mix)
}
