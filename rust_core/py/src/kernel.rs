//! Python binding for `omkl_core::kernel`.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use omkl_core::kernel::{self as core, GramCache, Kernel, SparseGram, SupportStore};
use omkl_core::OmklError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::convert::{
    add_functions, array2 as to_matrix, contiguous as vector, ensure_shape, index_array, matrix,
};
use crate::errors::{to_py, IntoPyResult};

/// A float32 or float64 matrix result.
type Matrix<'py, T> = PyResult<Bound<'py, PyArray2<T>>>;

/// Coefficients to multiply a Gram matrix by.
type Alpha<'py, T> = PyReadonlyArray2<'py, T>;

/// A kernel function with its hyperparameters (validated on construction).
#[pyclass(module = "omkl._omkl", name = "Kernel", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyKernel {
    pub inner: Kernel,
}

/// A `TypeError` naming the argument `name`, what it expects and the value.
fn wrong_type(name: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let got = got
        .repr()
        .map_or_else(|_| "an unprintable value".to_owned(), |r| r.to_string());
    PyTypeError::new_err(format!(
        "invalid value for `{name}`: expected {expected}, got {got}"
    ))
}

/// Builds a core kernel from its name and keyword parameters.
fn build(
    kind: &str,
    degree: i64,
    offset: f64,
    normalize: bool,
    sigma2: f64,
    h: f64,
) -> omkl_core::Result<Kernel> {
    let kernel = match kind {
        "linear" => Kernel::Linear { normalize },
        "polynomial" | "poly" => {
            if !(1..=i64::from(u32::MAX)).contains(&degree) {
                return Err(OmklError::invalid(
                    "degree",
                    format!("expected an integer >= 1, got {degree}"),
                ));
            }
            Kernel::Polynomial {
                degree: degree as u32,
                offset,
                normalize,
            }
        }
        "gaussian" | "rbf" => Kernel::Gaussian { sigma2 },
        "b1" | "b1_spline" => Kernel::B1Spline { h },
        other => {
            return Err(OmklError::invalid(
                "kernel",
                format!(
                    "expected one of 'linear', 'polynomial', 'gaussian', 'b1_spline', got {other:?}"
                ),
            ))
        }
    };
    kernel.check()?;
    Ok(kernel)
}

#[pymethods]
impl PyKernel {
    /// `Kernel(kind, degree=2, offset=1.0, normalize=False, sigma2=5.0,
    /// h=1.0)`; `None` stands for the default. A value of the wrong type is
    /// a `TypeError` and a bad value a `ValueError`, both naming the
    /// argument and what was expected.
    #[new]
    #[pyo3(
        signature = (kind, degree=None, offset=None, normalize=None, sigma2=None, h=None),
        text_signature = "(kind, degree=2, offset=1.0, normalize=False, sigma2=5.0, h=1.0)"
    )]
    fn new(
        kind: &Bound<'_, PyAny>,
        degree: Option<&Bound<'_, PyAny>>,
        offset: Option<&Bound<'_, PyAny>>,
        normalize: Option<&Bound<'_, PyAny>>,
        sigma2: Option<&Bound<'_, PyAny>>,
        h: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let kind: String = kind
            .extract()
            .map_err(|_| wrong_type("kind", "a kernel name (str)", kind))?;
        // An int too large for i64 is a bad value (ValueError), not an
        // OverflowError; a non-integer (a bool or a float too) is a TypeError.
        let degree: i64 = match degree.map(|d| (d, d.extract())) {
            None => 2,
            Some((d, _)) if d.is_instance_of::<PyBool>() => {
                return Err(wrong_type("degree", "an integer >= 1", d));
            }
            Some((_, Ok(v))) => v,
            Some((d, Err(_))) if d.is_instance_of::<PyInt>() => {
                return Err(to_py(OmklError::invalid(
                    "degree",
                    format!("expected an integer >= 1 and < 2**32, got {d}"),
                )));
            }
            Some((d, Err(_))) => return Err(wrong_type("degree", "an integer >= 1", d)),
        };
        let normalize = match normalize {
            None => false,
            Some(v) => v
                .extract()
                .map_err(|_| wrong_type("normalize", "True or False", v))?,
        };
        let real = |name: &str, v: Option<&Bound<'_, PyAny>>, default: f64| match v {
            None => Ok(default),
            Some(v) if v.is_instance_of::<PyString>() => Err(wrong_type(name, "a real number", v)),
            Some(v) => v
                .extract::<f64>()
                .map_err(|_| wrong_type(name, "a real number", v)),
        };
        let (offset, sigma2, h) = (
            real("offset", offset, 1.0)?,
            real("sigma2", sigma2, 5.0)?,
            real("h", h, 1.0)?,
        );
        Ok(PyKernel {
            inner: build(&kind, degree, offset, normalize, sigma2, h).py()?,
        })
    }

    /// The kernel's name: 'linear', 'polynomial', 'gaussian' or 'b1_spline'.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            Kernel::Linear { .. } => "linear",
            Kernel::Polynomial { .. } => "polynomial",
            Kernel::Gaussian { .. } => "gaussian",
            Kernel::B1Spline { .. } => "b1_spline",
        }
    }

    /// Constructor arguments `(kind, degree, offset, normalize, sigma2, h)`;
    /// parameters the kernel does not use hold their defaults.
    fn args(&self) -> (&'static str, i64, f64, bool, f64, f64) {
        let (mut degree, mut offset, mut normalize, mut sigma2, mut h) = (2, 1.0, false, 5.0, 1.0);
        match self.inner {
            Kernel::Linear { normalize: n } => normalize = n,
            Kernel::Polynomial {
                degree: g,
                offset: c,
                normalize: n,
            } => {
                degree = i64::from(g);
                offset = c;
                normalize = n;
            }
            Kernel::Gaussian { sigma2: s } => sigma2 = s,
            Kernel::B1Spline { h: b } => h = b,
        }
        (self.kind(), degree, offset, normalize, sigma2, h)
    }

    #[getter]
    fn has_compact_support(&self) -> bool {
        self.inner.has_compact_support()
    }

    #[getter]
    fn has_unit_diagonal(&self) -> bool {
        self.inner.has_unit_diagonal()
    }

    /// `K(x, y)` of two 1-D vectors, in double precision.
    fn eval(&self, x: Vec<f32>, y: Vec<f32>) -> PyResult<f64> {
        let v = self.inner.eval_checked(&x, &y).py()?;
        if !v.is_finite() {
            return Err(OmklError::invalid(
                "x",
                format!("K(x, y) = {v} exceeds the range of f64; scale `x` and `y` down"),
            ))
            .py();
        }
        Ok(v)
    }

    fn __repr__(&self) -> String {
        match self.inner {
            Kernel::Linear { normalize } => {
                format!("Kernel('linear', normalize={})", py_bool(normalize))
            }
            Kernel::Polynomial {
                degree,
                offset,
                normalize,
            } => format!(
                "Kernel('polynomial', degree={degree}, offset={offset:?}, normalize={})",
                py_bool(normalize)
            ),
            Kernel::Gaussian { sigma2 } => format!("Kernel('gaussian', sigma2={sigma2:?})"),
            Kernel::B1Spline { h } => format!("Kernel('b1_spline', h={h:?})"),
        }
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> (Bound<'py, PyAny>, (&'static str, i64, f64, bool, f64, f64)) {
        (slf.get_type().into_any(), slf.get().args())
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Row-major inputs of a Gram call: `x` with its rows and `y` (if given)
/// with its rows, and the common dimension.
struct Inputs<'a> {
    x: &'a [f32],
    nx: usize,
    y: Option<(&'a [f32], usize)>,
    d: usize,
}

/// Converts `x` and `y` (checking that they have equal columns), runs
/// `f` with the GIL released and maps its error to `ValueError`.
fn with_inputs<'py, T: Send>(
    py: Python<'py>,
    x: &PyReadonlyArray2<'py, f32>,
    y: Option<&PyReadonlyArray2<'py, f32>>,
    f: impl FnOnce(Inputs<'_>) -> omkl_core::Result<T> + Send,
) -> PyResult<T> {
    let (xs, nx, d) = matrix("X", x)?;
    let y = match y {
        None => None,
        Some(y) => {
            let (ys, ny, dy) = matrix("Y", y)?;
            let expected = format!("{d} columns (as many as X)");
            ensure_shape(dy == d, "Y", expected, format!("{dy} columns"))?;
            Some((ys, ny))
        }
    };
    py.detach(|| f(Inputs { x: xs, nx, y, d })).py()
}

/// Dense Gram matrix `K(x_i, y_j)` as a float32 `(n_x, n_y)` array; with
/// `y=None`, the symmetric Gram matrix of `x`.
#[pyfunction]
#[pyo3(signature = (kernel, x, y=None))]
fn gram<'py>(
    py: Python<'py>,
    kernel: &PyKernel,
    x: PyReadonlyArray2<'py, f32>,
    y: Option<PyReadonlyArray2<'py, f32>>,
) -> Matrix<'py, f32> {
    let k = &kernel.inner;
    let (out, nx, ny) = with_inputs(py, &x, y.as_ref(), |i| match i.y {
        None => Ok((core::gram_symmetric(k, i.x, i.nx, i.d)?, i.nx, i.nx)),
        Some((y, ny)) => Ok((core::gram(k, i.x, i.nx, y, ny, i.d)?, i.nx, ny)),
    })?;
    to_matrix(py, nx, ny, out)
}

/// One float32 Gram matrix per kernel from a single shared GEMM of inner
/// products; with `y=None`, the symmetric Gram matrices of `x`.
#[pyfunction]
#[pyo3(signature = (kernels, x, y=None))]
fn gram_many<'py>(
    py: Python<'py>,
    kernels: Vec<PyRef<'py, PyKernel>>,
    x: PyReadonlyArray2<'py, f32>,
    y: Option<PyReadonlyArray2<'py, f32>>,
) -> PyResult<Vec<Bound<'py, PyArray2<f32>>>> {
    let ks: Vec<Kernel> = kernels.iter().map(|k| k.inner.clone()).collect();
    let (outs, nx, ny) = with_inputs(py, &x, y.as_ref(), |i| match i.y {
        None => Ok((core::gram_many_symmetric(&ks, i.x, i.nx, i.d)?, i.nx, i.nx)),
        Some((y, ny)) => Ok((core::gram_many(&ks, i.x, i.nx, y, ny, i.d)?, i.nx, ny)),
    })?;
    outs.into_iter().map(|o| to_matrix(py, nx, ny, o)).collect()
}

/// A Gram matrix in CSR form (only non-zeros stored).
#[pyclass(module = "omkl._omkl", name = "SparseGram", frozen)]
pub struct PySparseGram {
    pub(crate) inner: SparseGram,
}

impl PySparseGram {
    /// Converts `alpha` (`columns × labels`, or `labels × columns` if
    /// `label_major`), runs `score` with the GIL released and returns its
    /// scores with the matching shape.
    fn score_with<'py, T: numpy::Element + Sync + Send>(
        &self,
        py: Python<'py>,
        alpha: &PyReadonlyArray2<'py, T>,
        label_major: bool,
        score: impl FnOnce(&SparseGram, &[T], usize) -> omkl_core::Result<Vec<T>> + Send,
    ) -> Matrix<'py, T> {
        let (a, r, c) = matrix("alpha", alpha)?;
        let labels = if label_major { r } else { c };
        let out = py.detach(|| score(&self.inner, a, labels)).py()?;
        let rows = self.inner.shape().0;
        if label_major {
            to_matrix(py, labels, rows, out)
        } else {
            to_matrix(py, rows, labels, out)
        }
    }
}

#[pymethods]
impl PySparseGram {
    /// Validates and wraps CSR arrays.
    #[staticmethod]
    fn from_csr(
        nrows: usize,
        ncols: usize,
        indptr: PyReadonlyArray1<'_, i64>,
        indices: PyReadonlyArray1<'_, i64>,
        data: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Self> {
        let indptr = crate::convert::to_indices("indptr", &indptr, |_, v| {
            format!("expected indices >= 0, got {v}")
        })?;
        let indices = indices
            .as_array()
            .iter()
            .map(|&v| {
                u32::try_from(v).map_err(|_| {
                    OmklError::invalid("indices", format!("expected 0 <= index < 2^32, got {v}"))
                })
            })
            .collect::<omkl_core::Result<Vec<_>>>()
            .py()?;
        let data = data.as_array().to_vec();
        Ok(PySparseGram {
            inner: SparseGram::from_csr(nrows, ncols, indptr, indices, data).py()?,
        })
    }

    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.inner.shape()
    }

    #[getter]
    fn nnz(&self) -> usize {
        self.inner.nnz()
    }

    /// `c * K` with the same pattern (values multiplied in float32).
    fn scaled(&self, c: f32) -> PyResult<Self> {
        Ok(PySparseGram {
            inner: self.inner.scaled(c).py()?,
        })
    }

    #[getter]
    fn density(&self) -> f64 {
        self.inner.density()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// Bytes of the scoring layout, held in addition to `nbytes` (0 before
    /// the first bulk scoring call).
    #[getter]
    fn scoring_nbytes(&self) -> usize {
        self.inner.scoring_nbytes()
    }

    /// Copies of the CSR arrays `(indptr int64, indices int64, data float32)`.
    #[allow(clippy::type_complexity)]
    fn csr<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f32>>,
    ) {
        let (p, i, v) = self.inner.csr();
        let i: Vec<i64> = i.iter().map(|&x| i64::from(x)).collect();
        let p = index_array(py, p.iter().copied());
        (p, i.into_pyarray(py), v.to_vec().into_pyarray(py))
    }

    fn to_dense<'py>(&self, py: Python<'py>) -> Matrix<'py, f32> {
        let (r, c) = self.inner.shape();
        let dense = py.detach(|| self.inner.try_to_dense()).py()?;
        to_matrix(py, r, c, dense)
    }

    /// `K @ alpha` for `alpha` of shape `(columns, labels)`.
    fn scores<'py>(&self, py: Python<'py>, alpha: Alpha<'py, f64>) -> Matrix<'py, f64> {
        self.score_with(py, &alpha, false, SparseGram::scores)
    }

    /// `K @ alpha` in float32 for float32 `alpha` of shape `(columns, labels)`.
    fn scores_f32<'py>(&self, py: Python<'py>, alpha: Alpha<'py, f32>) -> Matrix<'py, f32> {
        self.score_with(py, &alpha, false, SparseGram::scores_f32)
    }

    /// `(K @ alpha.T).T` for label-major `alpha` of shape `(labels, columns)`:
    /// the scores as `(labels, rows)`.
    fn scores_label_major<'py>(&self, py: Python<'py>, alpha: Alpha<'py, f64>) -> Matrix<'py, f64> {
        self.score_with(py, &alpha, true, SparseGram::scores_label_major)
    }

    /// Row `i` of `K @ alpha`.
    fn score_row<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        alpha: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (a, _, labels) = matrix("alpha", &alpha)?;
        let mut out = vec![0.0; labels];
        self.inner.score_row(i, a, &mut out).py()?;
        Ok(out.into_pyarray(py))
    }
}

/// CSR Gram matrix of `x` against `y` (or itself), built block by block.
#[pyfunction]
#[pyo3(signature = (kernel, x, y=None))]
fn sparse_gram<'py>(
    py: Python<'py>,
    kernel: &PyKernel,
    x: PyReadonlyArray2<'py, f32>,
    y: Option<PyReadonlyArray2<'py, f32>>,
) -> PyResult<PySparseGram> {
    let k = &kernel.inner;
    let inner = with_inputs(py, &x, y.as_ref(), |i| {
        SparseGram::build(k, i.x, i.nx, i.y, i.d)
    })?;
    Ok(PySparseGram { inner })
}

/// B1-spline width for a target fraction of zeros in the Gram matrix of `x`.
#[pyfunction]
#[pyo3(signature = (x, zero_fraction=0.95, max_sample=2000))]
fn b1_bandwidth(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f32>,
    zero_fraction: f64,
    max_sample: usize,
) -> PyResult<f64> {
    let (xs, n, d) = matrix("X", &x)?;
    py.detach(|| core::b1_bandwidth(xs, n, d, zero_fraction, max_sample))
        .py()
}

/// Deduplicating store of support inputs.
#[pyclass(module = "omkl._omkl", name = "SupportStore")]
pub struct PySupportStore {
    inner: SupportStore,
}

#[pymethods]
impl PySupportStore {
    #[new]
    fn new(d: usize) -> PyResult<Self> {
        Ok(PySupportStore {
            inner: SupportStore::with_dim(d).py()?,
        })
    }

    /// Rebuilds a store from `(n, d)` distinct rows.
    #[staticmethod]
    fn from_data(data: PyReadonlyArray2<'_, f32>) -> PyResult<Self> {
        let (s, _, d) = matrix("data", &data)?;
        Ok(PySupportStore {
            inner: SupportStore::from_data(d, s).py()?,
        })
    }

    /// Stores `x` once; returns `(id, is_new)`.
    fn add(&mut self, x: PyReadonlyArray1<'_, f32>) -> PyResult<(u32, bool)> {
        self.inner.insert_checked(vector("x", &x)?).py()
    }

    /// The id of `x`, or None.
    fn find(&self, x: PyReadonlyArray1<'_, f32>) -> PyResult<Option<u32>> {
        self.inner.find_checked(vector("x", &x)?).py()
    }

    fn get<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let n = self.inner.len();
        let row = self
            .inner
            .get(id)
            .ok_or_else(|| {
                OmklError::invalid("id", format!("expected a stored id < {n}, got {id}"))
            })
            .py()?;
        Ok(row.to_vec().into_pyarray(py))
    }

    /// All inputs as an `(n, d)` float32 array, in id order.
    fn data<'py>(&self, py: Python<'py>) -> Matrix<'py, f32> {
        let s = &self.inner;
        to_matrix(py, s.len(), s.dim(), s.data().to_vec())
    }

    #[getter]
    fn d(&self) -> usize {
        self.inner.dim()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// Gram rows of support inputs, computed on demand and LRU-cached.
#[pyclass(module = "omkl._omkl", name = "GramCache")]
pub struct PyGramCache {
    inner: GramCache,
}

#[pymethods]
impl PyGramCache {
    #[new]
    fn new(kernel: &PyKernel, d: usize, budget_bytes: usize) -> PyResult<Self> {
        Ok(PyGramCache {
            inner: GramCache::new(kernel.inner.clone(), d, budget_bytes).py()?,
        })
    }

    /// Adds a support input (deduplicated); returns its id.
    fn add(&mut self, x: PyReadonlyArray1<'_, f32>) -> PyResult<u32> {
        self.inner.add(vector("x", &x)?).py()
    }

    /// `K(x_id, x_j)` for every stored `j`.
    fn row<'py>(&mut self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let row = self.inner.row(id).py()?.to_vec();
        Ok(row.into_pyarray(py))
    }

    #[getter]
    fn kernel(&self) -> PyKernel {
        PyKernel {
            inner: self.inner.kernel().clone(),
        }
    }

    /// All support inputs, `(n, d)` float32.
    fn support<'py>(&self, py: Python<'py>) -> Matrix<'py, f32> {
        let s = self.inner.support();
        to_matrix(py, s.len(), s.dim(), s.data().to_vec())
    }

    fn __len__(&self) -> usize {
        self.inner.support().len()
    }

    /// Counters: hits, extensions, misses, evictions, cache_bytes, entries,
    /// budget, support_bytes, support_len.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("extensions", s.extensions)?;
        d.set_item("misses", s.misses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("cache_bytes", s.cache_bytes)?;
        d.set_item("entries", s.entries)?;
        d.set_item("budget", s.budget)?;
        d.set_item("support_bytes", s.support_bytes)?;
        d.set_item("support_len", s.support_len)?;
        Ok(d)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyKernel>()?;
    m.add_class::<PySupportStore>()?;
    m.add_class::<PyGramCache>()?;
    m.add_class::<PySparseGram>()?;
    add_functions!(m, gram, gram_many, sparse_gram, b1_bandwidth)?;
    Ok(())
}
