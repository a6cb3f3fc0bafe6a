//! Python binding for `omkl_core::prox`: type conversion only. Group ids
//! are turned into contiguous blocks by `omkl_core::prox::groups`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use omkl_core::prox::groups::{apply_with_ids, group_norms_with_ids};
use omkl_core::prox::{
    elastic_net, group_lasso, l1, l1_ball, l21_ball, l2_squared, l2q, sparse_group_lasso,
    squared_l1, weighted_squared_l1,
};
use omkl_core::Result;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

type Out<'py> = PyResult<Bound<'py, PyArray1<f64>>>;

/// Copies `x`, applies `op` without the GIL, returns the new array.
fn elementwise<'py, F>(py: Python<'py>, x: PyReadonlyArray1<'py, f64>, op: F) -> Out<'py>
where
    F: FnOnce(&mut [f64]) -> Result<()> + Send,
{
    let mut out = x.as_array().to_vec();
    py.detach(|| op(&mut out)).py()?;
    Ok(out.into_pyarray(py))
}

/// Applies a grouped operator to `x` grouped by `groups` without the GIL.
fn grouped<'py, F>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    op: F,
) -> Out<'py>
where
    F: FnOnce(&mut [f64], &[usize]) -> Result<()> + Send,
{
    let xs = x.as_array().to_vec();
    let ids = groups.as_array();
    let out = match ids.as_slice() {
        Some(ids) => py.detach(|| apply_with_ids(xs, ids, op)),
        None => {
            let ids = ids.to_vec();
            py.detach(|| apply_with_ids(xs, &ids, op))
        }
    }
    .py()?;
    Ok(out.into_pyarray(py))
}

/// Soft-thresholding, the prox of `tau * ||x||_1`. Returns a new array.
#[pyfunction]
fn soft_threshold<'py>(py: Python<'py>, x: PyReadonlyArray1<'py, f64>, tau: f64) -> Out<'py> {
    elementwise(py, x, |v| l1::soft_threshold(v, tau))
}

/// The prox of `(tau/2) * ||x||^2`.
#[pyfunction]
fn prox_l2_squared<'py>(py: Python<'py>, x: PyReadonlyArray1<'py, f64>, tau: f64) -> Out<'py> {
    elementwise(py, x, |v| l2_squared::prox_l2_squared(v, tau))
}

/// The prox of `(tau/2) * ||x||_1^2` (Alg. 2), `method` "sort" or "select".
#[pyfunction]
#[pyo3(signature = (x, tau, method = "sort"))]
fn prox_squared_l1<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    tau: f64,
    method: &str,
) -> Out<'py> {
    let method: squared_l1::ThresholdMethod = method.parse().py()?;
    elementwise(py, x, |v| squared_l1::prox_squared_l1(v, tau, method))
}

/// The prox of `(tau/2) * (sum_i d_i |x_i|)^2`.
#[pyfunction]
fn prox_weighted_squared_l1<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    d: PyReadonlyArray1<'py, f64>,
    tau: f64,
) -> Out<'py> {
    let d = d.as_array().to_vec();
    elementwise(py, x, |v| {
        weighted_squared_l1::prox_weighted_squared_l1(v, &d, tau)
    })
}

/// Euclidean projection onto `{u : ||u||_1 <= radius}`.
#[pyfunction]
fn project_l1_ball<'py>(py: Python<'py>, x: PyReadonlyArray1<'py, f64>, radius: f64) -> Out<'py> {
    elementwise(py, x, |v| {
        l1_ball::project_l1_ball(v, radius, squared_l1::ThresholdMethod::Sort)
    })
}

/// Block soft-thresholding, the prox of `tau * sum_g ||x_g||`.
#[pyfunction]
fn prox_group_lasso<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    tau: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        group_lasso::prox_group_lasso(v, o, tau)
    })
}

/// Euclidean projection onto `{u : sum_g ||u_g|| <= radius}`.
#[pyfunction]
fn project_l21_ball<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    radius: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        l21_ball::project_l21_ball(v, o, radius)
    })
}

/// The prox of `tau1 * ||x||_1 + tau2 * sum_g ||x_g||`.
#[pyfunction]
fn prox_sparse_group_lasso<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    tau1: f64,
    tau2: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        sparse_group_lasso::prox_sparse_group_lasso(v, o, tau1, tau2)
    })
}

/// The prox of `tau * [rho sum ||x_g|| + (1 - rho)/2 sum ||x_g||^2]`.
#[pyfunction]
fn prox_elastic_net_mkl<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    tau: f64,
    l1_ratio: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        elastic_net::prox_elastic_net_mkl(v, o, tau, l1_ratio)
    })
}

/// The prox of `tau * sum_g ||x_g||^q`, `q >= 1`.
#[pyfunction]
fn prox_l2q<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    tau: f64,
    q: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| l2q::prox_l2q(v, o, tau, q))
}

/// The prox of `(tau/2) * (sum_g ||x_g||)^2` (the MKL regulariser).
#[pyfunction]
fn prox_squared_l21<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    tau: f64,
) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        squared_l1::prox_squared_l21(v, o, tau)
    })
}

/// Euclidean norms of the groups, indexed by group id.
#[pyfunction]
fn group_norms<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
) -> Out<'py> {
    let xs = x.as_array().to_vec();
    let ids = groups.as_array().to_vec();
    let out = py.detach(|| group_norms_with_ids(&xs, &ids)).py()?;
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(soft_threshold, m)?)?;
    m.add_function(wrap_pyfunction!(prox_l2_squared, m)?)?;
    m.add_function(wrap_pyfunction!(prox_squared_l1, m)?)?;
    m.add_function(wrap_pyfunction!(prox_weighted_squared_l1, m)?)?;
    m.add_function(wrap_pyfunction!(project_l1_ball, m)?)?;
    m.add_function(wrap_pyfunction!(prox_group_lasso, m)?)?;
    m.add_function(wrap_pyfunction!(project_l21_ball, m)?)?;
    m.add_function(wrap_pyfunction!(prox_sparse_group_lasso, m)?)?;
    m.add_function(wrap_pyfunction!(prox_elastic_net_mkl, m)?)?;
    m.add_function(wrap_pyfunction!(prox_l2q, m)?)?;
    m.add_function(wrap_pyfunction!(prox_squared_l21, m)?)?;
    m.add_function(wrap_pyfunction!(group_norms, m)?)?;
    Ok(())
}
