//! The one place where core errors become Python exceptions.

use omkl_core::OmklError;
use pyo3::exceptions::{
    PyFileNotFoundError, PyMemoryError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::PyErr;

pyo3::create_exception!(
    omkl,
    ParseError,
    PyValueError,
    "A malformed input file or record (a ``ValueError``).\n\n\
     The message starts with ``path:line:`` (``path:`` when the fault is in the\n\
     file as a whole); the attributes ``path`` and ``line`` (1-based, ``None``\n\
     for the whole file) hold the same."
);

/// Maps a core error to a Python exception: a malformed file is
/// [`ParseError`] (a `ValueError`) with `path` and `line` attributes; a file
/// that cannot be opened is `OSError` of the matching subclass
/// (`FileNotFoundError`, `PermissionError`, ...); an allocation the input
/// asks for that cannot be met is `MemoryError`; every other core error is
/// bad input, a `ValueError` with the core's message, which names the bad
/// value and what was expected.
pub fn to_py(e: OmklError) -> PyErr {
    match &e {
        OmklError::Parse {
            source_name, line, ..
        } => Python::attach(|py| {
            let err = ParseError::new_err(e.to_string());
            let value = err.value(py);
            let line = (*line > 0).then_some(*line);
            match value
                .setattr("path", source_name)
                .and_then(|_| value.setattr("line", line))
            {
                Ok(()) => err,
                Err(set_err) => set_err,
            }
        }),
        OmklError::Io {
            path,
            kind,
            errno,
            reason,
        } => match errno {
            // OSError(errno, strerror, filename) picks the subclass by errno
            // (FileNotFoundError, IsADirectoryError, ...) and sets `filename`.
            Some(code) => PyOSError::new_err((*code, reason.clone(), path.clone())),
            None => {
                let msg = e.to_string();
                match kind {
                    std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
                    std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
                    _ => PyOSError::new_err(msg),
                }
            }
        },
        OmklError::Alloc { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Registers the exception classes of this file in the module; `path` and
/// `line` default to `None` on the class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let cls = py.get_type::<ParseError>();
    cls.setattr("path", py.None())?;
    cls.setattr("line", py.None())?;
    m.add("ParseError", cls)
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
