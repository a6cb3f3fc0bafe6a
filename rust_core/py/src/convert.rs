//! Conversions shared by the binding's files: numpy inputs to slices and
//! index vectors, with errors naming the argument, and results to numpy
//! arrays.

use std::borrow::Cow;

use ndarray::{Array2, Dimension};
use numpy::{
    Element, IntoPyArray, PyArray1, PyArray2, PyReadonlyArray, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use omkl_core::error::try_vec;
use omkl_core::OmklError;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// `repr(v)` for an error message (`?` when it fails).
pub fn shown(v: &Bound<'_, PyAny>) -> String {
    v.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A dict key as a Python string: the key itself if it is a `str`, else
/// its `str()`.
pub fn key_str<'py>(k: &Bound<'py, PyAny>) -> PyResult<Bound<'py, pyo3::types::PyString>> {
    match k.cast::<pyo3::types::PyString>() {
        Ok(s) => Ok(s.clone()),
        Err(_) => k.str(),
    }
}

/// The elements of `a` in row-major order without a copy; `ValueError`
/// naming `name` unless `a` is C-contiguous.
pub fn contiguous<'a, T: Element, D: Dimension>(
    name: &str,
    a: &'a PyReadonlyArray<'_, T, D>,
) -> PyResult<&'a [T]> {
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => Ok(s),
        _ => Err(OmklError::invalid(name, "expected a C-contiguous array")).py(),
    }
}

/// A C-contiguous 2-D array as `(slice, rows, cols)`.
pub fn matrix<'a, T: Element>(
    name: &str,
    a: &'a PyReadonlyArray2<'_, T>,
) -> PyResult<(&'a [T], usize, usize)> {
    let (r, c) = (a.shape()[0], a.shape()[1]);
    Ok((contiguous(name, a)?, r, c))
}

/// A copy of the elements of a (non-contiguous) array in row-major order,
/// or `MemoryError` naming `name` (a broadcast view can be far larger than
/// the memory behind it).
pub fn copy_elems<'a, T: Copy + Default + 'a>(
    name: &str,
    it: impl ExactSizeIterator<Item = &'a T>,
) -> PyResult<Vec<T>> {
    let mut out = try_vec(name, &[it.len()], T::default()).py()?;
    for (o, v) in out.iter_mut().zip(it) {
        *o = *v;
    }
    Ok(out)
}

/// The elements of `a` in row-major order, copied only if `a` is not
/// C-contiguous.
pub fn row_major<'a, T: Element + Copy + Default, D: Dimension>(
    name: &str,
    a: &'a PyReadonlyArray<'_, T, D>,
) -> PyResult<Cow<'a, [T]>> {
    Ok(match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => Cow::Borrowed(s),
        _ => Cow::Owned(copy_elems(name, a.as_array().iter())?),
    })
}

/// [`row_major`] of an optional 1-D array.
pub fn opt_vec<'a>(
    name: &str,
    a: &'a Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<Option<Cow<'a, [f64]>>> {
    a.as_ref().map(|a| row_major(name, a)).transpose()
}

/// Integers as indices; a negative one is a `ValueError` naming `name`,
/// with the reason `reason(position, value)`.
pub fn to_indices(
    name: &str,
    a: &PyReadonlyArray1<'_, i64>,
    reason: impl Fn(usize, i64) -> String,
) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .enumerate()
        .map(|(i, &v)| usize::try_from(v).map_err(|_| OmklError::invalid(name, reason(i, v))))
        .collect::<Result<Vec<_>, _>>()
        .py()
}

/// `f(name[k], item)` for every item `k`, stopping at the first error.
pub fn each<'a, T, U>(
    name: &str,
    items: &'a [T],
    mut f: impl FnMut(&str, &'a T) -> PyResult<U>,
) -> PyResult<Vec<U>> {
    items
        .iter()
        .enumerate()
        .map(|(k, x)| f(&format!("{name}[{k}]"), x))
        .collect()
}

/// `f(item)` for every item `k`, an error renamed to `name[k]`.
pub fn each_core<'a, T, U>(
    name: &str,
    items: &'a [T],
    f: impl Fn(&'a T) -> omkl_core::Result<U>,
) -> omkl_core::Result<Vec<U>> {
    items
        .iter()
        .enumerate()
        .map(|(k, x)| f(x).map_err(|e| OmklError::invalid(format!("{name}[{k}]"), e.to_string())))
        .collect()
}

/// A shape error naming `name` unless `ok`.
pub fn ensure_shape(
    ok: bool,
    name: impl Into<String>,
    expected: impl Into<String>,
    got: impl ToString,
) -> PyResult<()> {
    if ok {
        return Ok(());
    }
    Err(OmklError::shape(name, expected, got.to_string())).py()
}

/// Indices as an int64 numpy array.
pub fn index_array(py: Python<'_>, v: impl IntoIterator<Item = usize>) -> Bound<'_, PyArray1<i64>> {
    v.into_iter()
        .map(|x| x as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

/// A row-major vector as a 2-D numpy array of shape `(rows, cols)`.
pub fn array2<T: Element>(
    py: Python<'_>,
    rows: usize,
    cols: usize,
    data: Vec<T>,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    let arr = Array2::from_shape_vec((rows, cols), data)
        .map_err(|e| OmklError::invalid("output", e.to_string()))
        .py()?;
    Ok(arr.into_pyarray(py))
}

/// Adds `#[pyfunction]`s to the module `m`.
macro_rules! add_functions {
    ($m:expr, $($f:ident),+ $(,)?) => {{
        $($m.add_function(pyo3::wrap_pyfunction!($f, $m)?)?;)+
        Ok::<(), pyo3::PyErr>(())
    }};
}
pub(crate) use add_functions;
