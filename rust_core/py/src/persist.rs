//! The envelope of saved models (`omkl_core::persist`) for the Python
//! helper `omkl._persist`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::add_functions;
use crate::errors::IntoPyResult;

/// The envelope header of the payload `b"".join(parts)` for `format` at
/// `version` (magic, format, version, length, xxh3-64 checksum); the
/// header followed by the parts is the sealed file. GIL released while
/// hashing.
#[pyfunction]
fn seal_header<'py>(
    py: Python<'py>,
    format: &str,
    version: u32,
    parts: Vec<Bound<'py, PyBytes>>,
) -> PyResult<Bound<'py, PyBytes>> {
    if format.is_empty() || format.len() > 64 || !format.is_ascii() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "invalid value for `format`: expected 1 to 64 ASCII characters, got {format:?}"
        )));
    }
    let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
    let header = py.detach(|| omkl_core::persist::seal_header(format, version, &slices));
    Ok(PyBytes::new(py, &header))
}

/// Checks the envelope of `data` (format, one of `versions`, length,
/// checksum) and returns `(version, payload offset)`; `ValueError` saying
/// what is wrong otherwise. GIL released while hashing.
#[pyfunction]
fn open_sealed(
    py: Python<'_>,
    data: &[u8],
    format: &str,
    versions: Vec<u32>,
) -> PyResult<(u32, usize)> {
    py.detach(|| {
        let payload = omkl_core::persist::open(data, format, &versions)?;
        let version = omkl_core::persist::peek(data)?.version;
        Ok((version, data.len() - payload.len()))
    })
    .py()
}

/// [`open_sealed`] for a file read in pieces: `header` is the envelope
/// header, `parts` the payload's pieces in order; returns the version.
#[pyfunction]
fn open_sealed_parts<'py>(
    py: Python<'py>,
    header: &[u8],
    parts: Vec<Bound<'py, PyBytes>>,
    format: &str,
    versions: Vec<u32>,
) -> PyResult<u32> {
    let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
    py.detach(|| omkl_core::persist::open_parts(header, &slices, format, &versions))
        .py()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, seal_header, open_sealed, open_sealed_parts)?;
    Ok(())
}
