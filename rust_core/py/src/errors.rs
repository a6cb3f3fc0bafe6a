//! The one place where core errors become Python exceptions.

use omkl_core::OmklError;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::PyErr;

/// Maps a core error to a Python exception with the core's message, which
/// names the bad value and what was expected: an allocation the input asks
/// for that cannot be met is `MemoryError`; every other core error is bad
/// input, `ValueError`.
pub fn to_py(e: OmklError) -> PyErr {
    match e {
        OmklError::Alloc { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `Result` of the core mapped to `PyResult`.
pub trait IntoPyResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for omkl_core::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
