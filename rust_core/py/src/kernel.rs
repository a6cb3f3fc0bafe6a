//! Python binding for `omkl_core::kernel`.

use ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2};
use omkl_core::kernel::{self as core, Kernel};
use omkl_core::OmklError;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// A kernel function with its hyperparameters (validated on construction).
#[pyclass(module = "omkl._omkl", name = "Kernel", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyKernel {
    pub inner: Kernel,
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
    #[new]
    #[pyo3(signature = (kind, degree=2, offset=1.0, normalize=false, sigma2=5.0, h=1.0))]
    fn new(
        kind: &str,
        degree: i64,
        offset: f64,
        normalize: bool,
        sigma2: f64,
        h: f64,
    ) -> PyResult<Self> {
        Ok(PyKernel {
            inner: build(kind, degree, offset, normalize, sigma2, h).py()?,
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
        self.inner.eval_checked(&x, &y).py()
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

/// A C-contiguous 2-D float32 array as `(slice, rows, cols)`.
fn matrix<'a>(name: &str, a: &'a PyReadonlyArray2<'_, f32>) -> PyResult<(&'a [f32], usize, usize)> {
    let (n, d) = a.as_array().dim();
    let s = a
        .as_slice()
        .map_err(|_| OmklError::invalid(name, "expected a C-contiguous array"))
        .py()?;
    Ok((s, n, d))
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
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (xs, nx, d) = matrix("X", &x)?;
    let k = &kernel.inner;
    let (out, ny) = match &y {
        None => (py.detach(|| core::gram_symmetric(k, xs, nx, d)).py()?, nx),
        Some(y) => {
            let (ys, ny, dy) = matrix("Y", y)?;
            if dy != d {
                return Err(OmklError::shape(
                    "Y",
                    format!("{d} columns (as many as X)"),
                    format!("{dy} columns"),
                ))
                .py();
            }
            (py.detach(|| core::gram(k, xs, nx, ys, ny, d)).py()?, ny)
        }
    };
    let arr = Array2::from_shape_vec((nx, ny), out)
        .map_err(|e| OmklError::invalid("X", e.to_string()))
        .py()?;
    Ok(arr.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyKernel>()?;
    m.add_function(wrap_pyfunction!(gram, m)?)?;
    Ok(())
}
