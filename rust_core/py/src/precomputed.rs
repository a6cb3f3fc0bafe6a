//! Python binding for the precomputed inputs of the streaming learner:
//! Gram matrices (`omkl.PrecomputedGram`) and feature matrices
//! (`omkl.PrecomputedFeatures`) over a fixed set of inputs `0..m`,
//! validated once and shared by every model built on them.

use numpy::{PyArray2, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use std::sync::Arc;

use omkl_core::learner::stream_mkl::{FeatureRows, GramStorage, PrecomputedGram};
use omkl_core::OmklError;
use pyo3::prelude::*;

use crate::convert::{ensure_shape, row_major, shown};
use crate::errors::IntoPyResult;
use crate::kernel::PySparseGram;

/// A Gram matrix precomputed over a fixed set of inputs `0..m`, validated
/// (square, symmetric, finite) once and shared by every model built on it.
#[pyclass(module = "omkl._omkl", name = "PrecomputedGram", frozen)]
pub struct PyPrecomputedGram {
    pub(crate) inner: PrecomputedGram,
}

/// The values of a C-contiguous float32 NumPy array that numpy will not
/// let anyone write (the array and every array it views are read-only),
/// read in place: the array is kept alive by the reference held here.
struct NumpyGram {
    _owner: Py<PyArray2<f32>>,
    ptr: *const f32,
    len: usize,
}

// SAFETY: the values are never written through this struct, and the owner
// reference keeps the buffer alive and unmoved (numpy does not reallocate
// the data of an array that is still referenced).
unsafe impl Send for NumpyGram {}
// SAFETY: as for `Send`: shared reads of immutable memory.
unsafe impl Sync for NumpyGram {}

impl GramStorage for NumpyGram {
    fn values(&self) -> &[f32] {
        // SAFETY: `ptr` points at `len` initialised f32 values of the
        // C-contiguous array held by `_owner` (checked when it was made).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// `true` when numpy refuses writes to `a` and to every array it is a view
/// of (a read-only view of a writeable array is not enough).
fn read_only(a: &Bound<'_, PyAny>) -> PyResult<bool> {
    let mut cur = a.clone();
    loop {
        if cur.getattr("flags")?.getattr("writeable")?.is_truthy()? {
            return Ok(false);
        }
        let base = cur.getattr("base")?;
        if base.is_none() || base.cast::<PyUntypedArray>().is_err() {
            return Ok(true);
        }
        cur = base;
    }
}

#[pymethods]
impl PyPrecomputedGram {
    /// `gram`: a float32 `m × m` array or a `SparseGram` (its CSR storage
    /// is shared). A C-contiguous array that is read-only (and not a view
    /// of a writeable one) is shared without a copy; any other is copied
    /// once.
    #[new]
    fn new(py: Python<'_>, gram: Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(g) = gram.cast::<PySparseGram>() {
            let sp = Arc::new(g.get().inner.clone());
            let inner = py.detach(|| PrecomputedGram::sparse(sp)).py()?;
            return Ok(PyPrecomputedGram { inner });
        }
        let a: PyReadonlyArray2<'_, f32> = gram
            .extract()
            .map_err(|_| OmklError::invalid("gram", "expected a 2-D float32 array or a SparseGram"))
            .py()?;
        let (rows, cols) = (a.shape()[0], a.shape()[1]);
        ensure_shape(
            rows == cols,
            "gram",
            "a square matrix",
            format!("{rows} x {cols}"),
        )?;
        let data: Arc<dyn GramStorage> = match a.as_slice() {
            Ok(v) if a.is_c_contiguous() && read_only(&gram)? => Arc::new(NumpyGram {
                _owner: a.as_unbound().clone_ref(py),
                ptr: v.as_ptr(),
                len: v.len(),
            }),
            _ => Arc::new(row_major("gram", &a)?.into_owned()),
        };
        let inner = py.detach(|| PrecomputedGram::dense(data, rows)).py()?;
        Ok(PyPrecomputedGram { inner })
    }

    /// Number of inputs `m`.
    #[getter]
    fn n_inputs(&self) -> usize {
        self.inner.n_inputs()
    }

    /// The matrix is immutable: a copy is the same object.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The matrix is immutable: a deep copy is the same object.
    fn __deepcopy__(slf: Py<Self>, _memo: Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// The rows of a float32 feature matrix over a fixed set of inputs `0..m`
/// (one row per input), validated (finite) and stored sparsely once, and
/// shared by every model built on it: an explicit group of a model over
/// precomputed inputs.
#[pyclass(module = "omkl._omkl", name = "PrecomputedFeatures", frozen)]
pub struct PyPrecomputedFeatures {
    pub(crate) inner: Arc<FeatureRows>,
}

impl PyPrecomputedFeatures {
    /// The rows of `x`, a float32 `m × d` array (any other value is a
    /// `ValueError` naming `name`).
    pub(crate) fn rows(
        py: Python<'_>,
        name: &str,
        x: &Bound<'_, PyAny>,
    ) -> PyResult<Arc<FeatureRows>> {
        let a = x.extract::<PyReadonlyArray2<'_, f32>>().map_err(|_| {
            let got = match (x.getattr("ndim"), x.getattr("dtype")) {
                (Ok(nd), Ok(dt)) => format!("a {nd}-D {dt} array"),
                _ => shown(&x.get_type().into_any()),
            };
            OmklError::invalid(name, format!("expected a 2-D float32 array, got {got}"))
        });
        let a = a.py()?;
        let x = row_major(name, &a)?;
        let (m, d) = (a.shape()[0], a.shape()[1]);
        Ok(Arc::new(py.detach(|| FeatureRows::new(&x, m, d)).py()?))
    }
}

#[pymethods]
impl PyPrecomputedFeatures {
    /// `features`: a float32 `m × d` array of finite values (copied if it
    /// is not C-contiguous).
    #[new]
    fn new(py: Python<'_>, features: Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyPrecomputedFeatures {
            inner: Self::rows(py, "features", &features)?,
        })
    }

    /// Number of inputs `m` (rows).
    #[getter]
    fn n_inputs(&self) -> usize {
        self.inner.n_rows()
    }

    /// Number of features `d` (columns).
    #[getter]
    fn n_features(&self) -> usize {
        self.inner.dim()
    }

    /// The rows are immutable: a copy is the same object.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The rows are immutable: a deep copy is the same object.
    fn __deepcopy__(slf: Py<Self>, _memo: Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPrecomputedGram>()?;
    m.add_class::<PyPrecomputedFeatures>()?;
    Ok(())
}
