//! The one place where core errors become Python exceptions.

use omkl_core::OmklError;
use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

/// Maps a core error to a Python exception. Every core error is bad input,
/// so every one becomes `ValueError` with the core's message, which names the
/// bad value and what was expected.
pub fn to_py(e: OmklError) -> PyErr {
    PyValueError::new_err(e.to_string())
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
