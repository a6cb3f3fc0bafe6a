//! Python binding for `omkl_core::prox`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// Soft-thresholding, the prox of `tau * ||x||_1`. Returns a new array.
#[pyfunction]
fn soft_threshold<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    tau: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let mut out = x.as_array().to_vec();
    py.detach(|| omkl_core::prox::l1::soft_threshold(&mut out, tau))
        .py()?;
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(soft_threshold, m)?)?;
    Ok(())
}
