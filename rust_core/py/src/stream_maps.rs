//! Python binding of the feature maps of explicit groups
//! (`omkl_core::kernel::feature_map`): random Fourier and Nyström maps that
//! a `StreamMkl` evaluates itself on input rows.

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use omkl_core::kernel::feature_map::FeatureMap;
use pyo3::prelude::*;

use crate::convert::{array2, contiguous, matrix};
use crate::errors::IntoPyResult;
use crate::kernel::PyKernel;

/// One explicit feature map: `FeatureMap.fourier(w, b, scale)` for
/// `scale * cos(x @ w + b)` (`w`: d × D float32, `b`: D float32), or
/// `FeatureMap.nystroem(n_components, kernel, landmarks, whiten)` for
/// `k(x, landmarks) @ whiten` in the first `m` of `n_components` features
/// (`landmarks`: m × d float64, `whiten`: m × m float64, the kernel
/// Gaussian or polynomial) and 0 in the others.
#[pyclass(module = "omkl._omkl", name = "FeatureMap", frozen)]
pub struct PyFeatureMap {
    pub(crate) inner: FeatureMap,
}

#[pymethods]
impl PyFeatureMap {
    /// The random Fourier map `scale * cos(x @ w + b)`.
    #[staticmethod]
    fn fourier(
        w: PyReadonlyArray2<'_, f32>,
        b: PyReadonlyArray1<'_, f32>,
        scale: f32,
    ) -> PyResult<Self> {
        let (wv, d, n) = matrix("w", &w)?;
        let bv = contiguous("b", &b)?;
        if bv.len() != n {
            return Err(omkl_core::OmklError::shape(
                "b",
                format!("{n} values (the columns of w)"),
                format!("{}", bv.len()),
            ))
            .py();
        }
        Ok(PyFeatureMap {
            inner: FeatureMap::fourier(d, wv.to_vec(), bv.to_vec(), scale).py()?,
        })
    }

    /// The Nyström map of `n_components` features on `landmarks`.
    #[staticmethod]
    fn nystroem(
        n_components: usize,
        kernel: PyRef<'_, PyKernel>,
        landmarks: PyReadonlyArray2<'_, f64>,
        whiten: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Self> {
        let (lm, _, d) = matrix("landmarks", &landmarks)?;
        let wv = contiguous("whiten", &whiten)?;
        let inner = FeatureMap::nystroem(
            d,
            n_components,
            lm.to_vec(),
            kernel.inner.clone(),
            wv.to_vec(),
        )
        .py()?;
        Ok(PyFeatureMap { inner })
    }

    /// Input values read per row.
    #[getter]
    fn input_dim(&self) -> usize {
        self.inner.input_dim()
    }

    /// Features written per row.
    #[getter]
    fn width(&self) -> usize {
        self.inner.width()
    }

    /// The features of each row of `x` (n × d float32, finite, `d` at
    /// least `input_dim`; the first `input_dim` values are read), as an
    /// n × width float32 array.
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (xs, n, d) = matrix("x", &x)?;
        let need = self.inner.input_dim();
        if d < need || x.shape()[0] != n {
            return Err(omkl_core::OmklError::shape(
                "x",
                format!("rows of at least {need} values"),
                format!("{d}"),
            ))
            .py();
        }
        if xs.iter().any(|v| !v.is_finite()) {
            return Err(omkl_core::OmklError::invalid("x", "expected finite values")).py();
        }
        let w = self.inner.width();
        let out = py.detach(|| {
            let mut out = vec![0.0f32; n * w];
            let mut buf = Vec::new();
            for (row, z) in xs.chunks_exact(d.max(1)).zip(out.chunks_exact_mut(w)) {
                self.inner.fill(row, z, &mut buf);
            }
            out
        });
        array2(py, n, w, out)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFeatureMap>()
}
