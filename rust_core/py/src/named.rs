//! What the binding classes of Alg. 1 on named features share: the
//! constructor's Alg. 1 arguments, and a macro that declares such a class
//! around a [`NamedLearner`](omkl_core::learner::named::NamedLearner) with
//! its persistence, group norms and counters.

use omkl_core::learner::spec::{parse_loss, parse_regularizer, parse_schedule};
use omkl_core::learner::Alg1Config;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// The Alg. 1 arguments of the learners' constructors, as one tuple: the
/// schedule name, `eta0`, `sigma`, the regularisers by name with their
/// parameters, the radius, `averaged` and `fit_intercept`.
#[derive(FromPyObject)]
pub(crate) struct Alg1Args(
    String,
    f64,
    f64,
    Vec<(String, Vec<f64>)>,
    Option<f64>,
    bool,
    bool,
);

/// The configuration of Alg. 1 from the loss name, the shared arguments
/// `args` and the gradient clip.
pub(crate) fn alg1_config(
    loss: &str,
    args: &Alg1Args,
    clip_gradient: Option<f64>,
) -> PyResult<Alg1Config> {
    let Alg1Args(schedule, eta0, sigma, regularizers, radius, averaged, fit_intercept) = args;
    let regularizers = regularizers
        .iter()
        .map(|(n, p)| parse_regularizer(n, p))
        .collect::<omkl_core::Result<Vec<_>>>()
        .py()?;
    Ok(Alg1Config {
        loss: parse_loss(loss).py()?,
        schedule: parse_schedule(schedule, *eta0, *sigma).py()?,
        regularizers,
        radius: *radius,
        averaged: *averaged,
        fit_intercept: *fit_intercept,
        clip_gradient,
    })
}

/// Declares a binding class over a `NamedLearner` (fields `inner` and
/// `names`, the memo of resolved feature names; constructor `Self::wrap`)
/// whose `#[pymethods]` are the methods given in the body followed by the
/// ones every such class has: `group_norms`, the `rounds`, `n_buckets`,
/// `n_groups` and `n_outputs` getters, `restart_schedule`,
/// `reset_weights`, `to_bytes`, `from_bytes` (which
/// refuses what `Self::check_loaded` refuses), `__reduce__` and
/// `__sizeof__`.
macro_rules! named_learner_class {
    ($(#[$doc:meta])* $name:ident; $($own:tt)*) => {
        $(#[$doc])*
        #[pyclass(module = "omkl._omkl")]
        pub struct $name {
            pub(crate) inner: NamedLearner,
            names: std::sync::Mutex<NameCache>,
        }

        impl $name {
            fn wrap(inner: NamedLearner) -> Self {
                $name {
                    inner,
                    names: std::sync::Mutex::default(),
                }
            }

            /// The memo of resolved feature names.
            fn names(&self) -> std::sync::MutexGuard<'_, NameCache> {
                self.names
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            }
        }

        #[pymethods]
        impl $name {
            $($own)*

            /// `(group, ‖w_g‖)` for every group of the prediction model (for
            /// a chain, the templates after the transition group).
            fn group_norms(&self) -> Vec<(String, f64)> {
                self.inner.group_norms()
            }

            // The counters, one line each (rustfmt leaves a macro's body as
            // it is).
            #[getter]
            fn rounds(&self) -> u64 { self.inner.model().rounds() }
            #[getter]
            fn n_buckets(&self) -> usize { self.inner.space().n_buckets() }
            /// The number of groups (for a chain, its transition group and templates).
            #[getter]
            fn n_groups(&self) -> usize { self.inner.model().n_groups() }
            /// The number of outputs (for a chain, of labels).
            #[getter]
            fn n_outputs(&self) -> usize { self.inner.model().n_outputs() }

            /// Restarts the step-size schedule (a reaction to a detected
            /// drift); the weights are kept.
            fn restart_schedule(&mut self) { self.inner.model_mut().restart_schedule() }
            /// Zeroes the weights and the intercept and restarts the
            /// schedule (a reaction to a detected drift); the averaging
            /// sums are kept.
            fn reset_weights(&mut self) { self.inner.model_mut().reset_weights() }

            /// The learner as deterministic bytes.
            fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
                pyo3::types::PyBytes::new(py, &self.inner.to_bytes())
            }

            /// Rebuilds a learner from `to_bytes` (refusing a learner of
            /// another structure).
            #[staticmethod]
            fn from_bytes(data: &[u8]) -> PyResult<Self> {
                let inner = NamedLearner::from_bytes(data).py()?;
                Self::check_loaded(&inner)?;
                Ok(Self::wrap(inner))
            }

            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
                py: Python<'py>,
            ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyBytes>,))> {
                let from = slf.get_type().getattr("from_bytes")?;
                Ok((from, (slf.borrow().to_bytes(py),)))
            }

            fn __sizeof__(&self) -> usize {
                std::mem::size_of::<Self>() + self.inner.heap_bytes() + self.names().heap_bytes()
            }
        }
    };
}

pub(crate) use named_learner_class;
