//! Python binding for `omkl_core::learner::stream_mkl`: the streaming
//! Alg. 3 learner behind `omkl.MKLClassifier` and `omkl.SequenceTagger`.

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use std::sync::{Arc, Mutex};

use omkl_core::learner::spec::{parse_regularizer, parse_schedule};
use omkl_core::learner::stream_mkl::{
    FeatureMaps, FitOptions, Iterate, MappedRows, StreamLoss, StreamMkl, StreamMklConfig,
};
use omkl_core::OmklError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{array2, each, ensure_shape, index_array, matrix};
use crate::errors::IntoPyResult;
use crate::kernel::PyKernel;
use crate::precomputed::{PyPrecomputedFeatures, PyPrecomputedGram};
use crate::stream_maps::PyFeatureMap;

/// Input ids as indices (negative values are refused).
fn ids_of(name: &str, v: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    labels(name, v)
}

/// Chains of precomputed inputs: `(ids, labels, offsets)` as indices.
fn chains(
    ids: &PyReadonlyArray1<'_, i64>,
    labels: &PyReadonlyArray1<'_, i64>,
    offsets: &PyReadonlyArray1<'_, i64>,
) -> PyResult<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let ids = ids_of("ids", ids)?;
    let ys = self::labels("labels", labels)?;
    Ok((ids, ys, ids_of("offsets", offsets)?))
}

fn iterate(average: bool) -> Iterate {
    if average {
        Iterate::Average
    } else {
        Iterate::Last
    }
}

/// Labels as indices (negative values are refused).
fn labels(name: &str, y: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    crate::convert::to_indices(name, y, |i, v| {
        format!("expected labels >= 0, but {name}[{i}] = {v}")
    })
}

/// The streaming Alg. 3 learner (multiclass or linear chains).
#[pyclass(module = "omkl._omkl", name = "StreamMkl")]
pub struct PyStreamMkl {
    pub(crate) inner: StreamMkl,
    /// Input rows widened by the model's feature maps (the last input's).
    pub(crate) mapped: MappedRows,
}

/// The keyword options of the constructors, read with their defaults.
struct Options<'a, 'py> {
    dict: Option<&'a Bound<'py, PyDict>>,
    read: Vec<&'static str>,
    /// When given, every option's default is written into it.
    defaults: Option<&'a Bound<'py, PyDict>>,
}

impl<'py> Options<'_, 'py> {
    /// The option `key` (or `default` when absent or None-valued for an
    /// `Option`), a `ValueError` naming it when it has the wrong type.
    fn get<T>(&mut self, key: &'static str, default: T, what: &str) -> PyResult<T>
    where
        T: for<'b> FromPyObject<'b, 'py> + IntoPyObject<'py> + Clone,
    {
        self.read.push(key);
        if let Some(d) = self.defaults {
            d.set_item(key, default.clone())?;
        }
        let Some(v) = self.dict.map(|d| d.get_item(key)).transpose()?.flatten() else {
            return Ok(default);
        };
        v.extract::<T>()
            .map_err(|_| OmklError::invalid(key, format!("expected {what}, got {v}")))
            .py()
    }

    /// Refuses keys that were never read.
    fn finish(self) -> PyResult<()> {
        if let Some(d) = self.dict {
            for k in d.keys() {
                let k: String = k.extract()?;
                if !self.read.contains(&k.as_str()) {
                    return Err(OmklError::invalid(
                        "options",
                        format!("unexpected keyword argument {k:?}"),
                    ))
                    .py();
                }
            }
        }
        Ok(())
    }
}

/// The configuration both constructors build from their keyword options
/// (`vectors`: the options of models over feature vectors are allowed); the
/// defaults of all options are written into `defaults` when given. Each
/// default is written here only.
fn config_from<'py>(
    options: Option<&Bound<'py, PyDict>>,
    vectors: bool,
    defaults: Option<&Bound<'py, PyDict>>,
) -> PyResult<StreamMklConfig> {
    let mut o = Options {
        dict: options,
        read: Vec::new(),
        defaults,
    };
    let lam = o.get("lam", 1e-4, "a float")?;
    let eta0 = o.get("eta0", 1.0, "a float")?;
    let sigma = o.get("sigma", 1.0, "a float")?;
    let schedule: String = o.get("schedule", "inv_sqrt".into(), "a name")?;
    let regularizer: String = o.get("regularizer", "squared_l21".into(), "a name")?;
    let loss: String = o.get("loss", "hinge".into(), "a name")?;
    let budget_rule: String = o.get("budget_rule", "oldest".into(), "a name")?;
    let mut config = StreamMklConfig {
        chain: o.get("chain", false, "a bool")?,
        loss: parse_loss(&loss)?,
        regularizer: parse_regularizer(&regularizer, &[lam]).py()?,
        schedule: parse_schedule(&schedule, eta0, sigma).py()?,
        cost: o.get("cost", 1.0, "a float")?,
        average: o.get("average", false, "a bool")?,
        radius: o.get("radius", None, "None or a float")?,
        history_every: o.get("history_every", 0, "an integer >= 0")?,
        passive_aggressive: o.get("passive_aggressive", false, "a bool")?,
        transition_lam: o.get("transition_lam", None, "None or a float")?,
        forgetting: o.get("forgetting", 1.0, "a float in (0, 1]")?,
        forget_on_mistakes: o.get("forget_on_mistakes", false, "a bool")?,
        forget_after: o.get("forget_after", 0, "an integer >= 0")?,
        budget_rule: budget_rule.parse().py()?,
        count_mistakes: o.get("count_mistakes", false, "a bool")?,
        group_rates: o.get("group_rates", Vec::new(), "a list of floats")?,
        ..StreamMklConfig::multiclass(Vec::new(), lam, eta0)
    };
    if vectors {
        config.max_support = o.get("max_support", None, "None or an integer >= 1")?;
        config.skip_zeros = o.get("skip_zeros", true, "a bool")?;
        config.kernel_columns = o.get("kernel_columns", None, "None or an integer >= 1")?;
    }
    o.finish()?;
    Ok(config)
}

#[pymethods]
impl PyStreamMkl {
    /// A model over feature vectors of dimension `d`; the keyword options
    /// (`chain`, `loss`, `regularizer`, `lam`, `schedule`, `eta0`, `sigma`,
    /// `cost`, `average`, `radius`, `history_every`, `passive_aggressive`,
    /// `transition_lam`, `forgetting`, `forget_on_mistakes`, `forget_after`, `budget_rule`,
    /// `count_mistakes`,
    /// `group_rates`, `max_support`,
    /// `skip_zeros`, `kernel_columns`) default as in `StreamMklConfig`.
    #[new]
    #[pyo3(signature = (kernels, explicit_groups, d, n_labels, **options))]
    fn new(
        kernels: Vec<PyRef<'_, PyKernel>>,
        explicit_groups: Vec<Vec<usize>>,
        d: usize,
        n_labels: usize,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut config = config_from(options, true, None)?;
        config.kernels = kernels.iter().map(|k| k.inner.clone()).collect();
        config.explicit_groups = explicit_groups;
        Ok(PyStreamMkl {
            inner: StreamMkl::new(config, d, n_labels).py()?,
            mapped: MappedRows::default(),
        })
    }

    /// A model over precomputed inputs `0..m`: one kernel group per
    /// `PrecomputedGram`, then one explicit group per feature matrix (a
    /// `PrecomputedFeatures`, or a float32 array with `m` rows, converted
    /// here); examples are then int64 arrays of input ids. The keyword
    /// options are those of the constructor but `max_support`, `skip_zeros`
    /// and `kernel_columns`.
    #[staticmethod]
    #[pyo3(signature = (grams, features, n_labels, **options))]
    fn precomputed(
        py: Python<'_>,
        grams: Vec<PyRef<'_, PyPrecomputedGram>>,
        features: Vec<Bound<'_, PyAny>>,
        n_labels: usize,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let config = config_from(options, false, None)?;
        let rows = each(
            "features",
            &features,
            |name, f| match f.cast::<PyPrecomputedFeatures>() {
                Ok(p) => Ok(Arc::clone(&p.get().inner)),
                Err(_) => PyPrecomputedFeatures::rows(py, name, f),
            },
        )?;
        let grams = grams.iter().map(|g| g.inner.clone()).collect();
        Ok(PyStreamMkl {
            inner: StreamMkl::new_precomputed(config, grams, rows, n_labels).py()?,
            mapped: MappedRows::default(),
        })
    }

    /// The default of every keyword option of the constructors.
    #[staticmethod]
    fn option_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        config_from(None, true, Some(&d))?;
        Ok(d)
    }

    /// Restarts the step-size schedule (the next round takes the rate of
    /// round 1); the coefficients do not change.
    fn restart_schedule(&mut self) {
        self.inner.restart_schedule()
    }

    /// Restarts the averaged iterate: it averages the rounds from now on.
    fn restart_average(&mut self) {
        self.inner.restart_average()
    }

    /// Positions that the last round's prediction (made before its update)
    /// got wrong.
    #[getter]
    fn last_mistakes(&self) -> usize {
        self.inner.last_mistakes()
    }

    /// Multiplies every group by `c` in `[0, 1]` (`c = 0`: a zero model).
    fn scale_groups(&mut self, c: f64) -> PyResult<()> {
        self.inner.scale_groups(c).py()
    }

    /// An independent copy of the model (precomputed matrices are shared:
    /// they are immutable).
    fn __copy__(&self) -> Self {
        PyStreamMkl {
            inner: self.inner.clone(),
            mapped: MappedRows::default(),
        }
    }

    /// As `__copy__`: nothing of the model is shared but immutable data.
    fn __deepcopy__(&self, _memo: Bound<'_, PyAny>) -> Self {
        self.__copy__()
    }

    /// `True` for a model over precomputed inputs.
    #[getter]
    fn is_precomputed(&self) -> bool {
        self.inner.is_precomputed()
    }

    /// One round on the precomputed inputs `ids` labelled `y`; returns the
    /// loss.
    fn learn_ids(
        &mut self,
        ids: PyReadonlyArray1<'_, i64>,
        y: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<f64> {
        let ids = ids_of("x", &ids)?;
        let ys = labels("y", &y)?;
        self.inner.learn_ids(&ids, &ys).py()
    }

    /// The best labelling of the precomputed inputs `ids`.
    fn predict_ids<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let ids = ids_of("x", &ids)?;
        let out = py.detach(|| self.inner.predict_ids(&ids)).py()?;
        Ok(index_array(py, out))
    }

    /// Emission scores (n × L) of the precomputed inputs `ids` under the
    /// prediction iterate.
    fn scores_ids<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let ids = ids_of("x", &ids)?;
        self.inner.check_ids(&ids).py()?;
        let out = py
            .detach(|| {
                self.inner
                    .example_scores(omkl_core::learner::stream_mkl::Example::Ids(&ids))
            })
            .py()?;
        array2(py, ids.len(), self.inner.n_labels(), out)
    }

    /// Trains by epochs on chains of precomputed inputs (chain `c`:
    /// `ids[offsets[c]:offsets[c + 1]]`), GIL released; `on_epoch(report)`
    /// is called after each epoch with a dict (`epoch`, `beta`,
    /// `mean_loss`, `objective`). Returns the reports.
    #[pyo3(signature = (ids, labels, offsets, epochs=1, shuffle=true, seed=0, track_objective=false, objective_last_only=false, on_epoch=None))]
    #[allow(clippy::too_many_arguments)]
    fn fit_ids<'py>(
        &mut self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, i64>,
        labels: PyReadonlyArray1<'py, i64>,
        offsets: PyReadonlyArray1<'py, i64>,
        epochs: usize,
        shuffle: bool,
        seed: u64,
        track_objective: bool,
        objective_last_only: bool,
        on_epoch: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let (ids, ys, offsets) = chains(&ids, &labels, &offsets)?;
        let opts = FitOptions {
            epochs,
            shuffle,
            seed,
            track_objective,
            objective_last_only,
        };
        let callback = on_epoch.map(|f| f.unbind());
        let mut failure: Option<PyErr> = None;
        let inner = &mut self.inner;
        let reports = py.detach(|| {
            inner.fit_ids(&ids, &ys, &offsets, &opts, |r| {
                Python::attach(|py| {
                    let res = py.check_signals().and_then(|()| match &callback {
                        None => Ok(()),
                        Some(f) => {
                            let d = report_dict(py, r)?;
                            f.call1(py, (d,)).map(|_| ())
                        }
                    });
                    res.map_err(|e| {
                        failure = Some(e);
                        OmklError::invalid("training", "interrupted")
                    })
                })
            })
        });
        if let Some(e) = failure {
            return Err(e);
        }
        reports.py()?.iter().map(|r| report_dict(py, r)).collect()
    }

    /// `Ω(θ) + (1/n) Σ loss` of the current iterate on chains of
    /// precomputed inputs; GIL released.
    fn objective_ids(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<'_, i64>,
        labels: PyReadonlyArray1<'_, i64>,
        offsets: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<f64> {
        let (ids, ys, offsets) = chains(&ids, &labels, &offsets)?;
        py.detach(|| self.inner.objective_ids(&ids, &ys, &offsets))
            .py()
    }

    /// Coefficients of kernel group `k` (L × S, or L × m over precomputed
    /// inputs), of the averaged iterate when `average`.
    fn kernel_coef<'py>(
        &self,
        py: Python<'py>,
        k: usize,
        average: bool,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.group_index(k, self.inner.n_kernel_groups())?;
        let v = self.inner.kernel_coef(k, iterate(average));
        self.by_label(py, v)
    }

    /// Weights of explicit group `e` (L × width).
    fn explicit_coef<'py>(
        &self,
        py: Python<'py>,
        e: usize,
        average: bool,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.group_index(e, self.inner.n_groups() - self.inner.n_kernel_groups())?;
        let v = self.inner.explicit_coef(e, iterate(average));
        self.by_label(py, v)
    }

    /// Transition weights ((L + 2) × L: bigrams, start row, stop row).
    fn transition_coef<'py>(
        &self,
        py: Python<'py>,
        average: bool,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let l = self.inner.n_labels();
        let v = self.inner.transition_coef(iterate(average));
        array2(py, v.len() / l.max(1), l, v)
    }

    /// Group norms (kernel, explicit, then transitions) of the averaged
    /// iterate when `average`, else of the current one.
    fn iterate_norms(&self, py: Python<'_>, average: bool) -> Vec<f64> {
        py.detach(|| self.inner.iterate_norms(iterate(average)))
    }

    /// One round on the example `(x, y)` (`x`: n × d float32, `y`: n
    /// labels); adds labels up to `n_labels` and, with `grow_dim`, grows
    /// the dimension to `x`'s column count. Returns the loss.
    #[pyo3(signature = (x, y, n_labels, grow_dim=false))]
    fn learn(
        &mut self,
        x: PyReadonlyArray2<'_, f32>,
        y: PyReadonlyArray1<'_, i64>,
        n_labels: usize,
        grow_dim: bool,
    ) -> PyResult<f64> {
        let (xs, n, d) = matrix("x", &x)?;
        let (xs, d) = self.mapped.rows(&self.inner, xs, d).py()?;
        let ys = labels("y", &y)?;
        let expected = format!("{n} labels (one per row of x)");
        ensure_shape(ys.len() == n, "y", expected, ys.len())?;
        self.inner
            .learn_extending(xs, d, &ys, n_labels, grow_dim)
            .py()
    }

    /// Learns the examples stored one after the other in `x` (lengths
    /// `lens`), with the GIL released; all are validated first. Returns the
    /// summed loss and the mistakes of each example's prediction (made
    /// before its update; see `last_mistakes`). With `on_round`,
    /// `on_round(n, wrong)` is called (with the GIL) after each example of
    /// `n` positions, `wrong` of them mistaken, before the next example;
    /// when it returns true the model reacts to a drift
    /// (`react_to_drift(reset)`). An error of `on_round`, or Ctrl-C, stops
    /// learning, with the examples so far learned, and is raised as it is.
    #[pyo3(signature = (x, lens, y, n_labels, on_round=None, reset=false))]
    #[allow(clippy::too_many_arguments)]
    fn learn_many<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        lens: PyReadonlyArray1<'py, i64>,
        y: PyReadonlyArray1<'py, i64>,
        n_labels: usize,
        on_round: Option<Bound<'py, PyAny>>,
        reset: bool,
    ) -> PyResult<(f64, Bound<'py, PyArray1<i64>>)> {
        let (xs, _, d) = matrix("x", &x)?;
        let (xs, d) = self.mapped.rows(&self.inner, xs, d).py()?;
        let lens = labels("lens", &lens)?;
        let ys = labels("y", &y)?;
        let callback = on_round.map(|f| f.unbind());
        // the Python error that stopped learning, raised as it is
        let failure: Mutex<Option<PyErr>> = Mutex::new(None);
        let mut wrong = Vec::with_capacity(lens.len());
        let inner = &mut self.inner;
        let out = py.detach(|| {
            let stop = |e: PyErr| {
                if let Ok(mut slot) = failure.lock() {
                    *slot = Some(e);
                }
                OmklError::invalid("training", "interrupted")
            };
            inner.learn_many(
                xs,
                d,
                &lens,
                &ys,
                n_labels,
                || Python::attach(|py| py.check_signals()).map_err(stop),
                |i, m| {
                    let k = m.last_mistakes();
                    wrong.push(k);
                    let Some(f) = &callback else {
                        return Ok(());
                    };
                    let fired =
                        Python::attach(|py| f.call1(py, (lens[i], k))?.bind(py).is_truthy())
                            .map_err(stop)?;
                    if fired {
                        m.react_to_drift(reset)?;
                    }
                    Ok(())
                },
            )
        });
        self.mapped.trim(0);
        if let Some(e) = failure.into_inner().ok().flatten() {
            return Err(e);
        }
        let loss = out.py()?;
        Ok((loss, index_array(py, wrong)))
    }

    /// The reaction to a drift alarm: with `reset`, every group is zeroed;
    /// the step-size schedule restarts, and so does the averaged iterate
    /// of a model that averages.
    fn react_to_drift(&mut self, reset: bool) -> PyResult<()> {
        self.inner.react_to_drift(reset).py()
    }

    /// The best labelling of `x` (n × d) as int64 labels.
    fn predict<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        let (xs, d) = self.mapped.rows(&self.inner, xs, d).py()?;
        if n > 0 {
            check_dim(&self.inner, d)?;
        }
        // the scores are kept for a `learn` of the same rows next
        let out = py.detach(|| self.inner.predict_remembering(xs)).py()?;
        Ok(index_array(py, out))
    }

    /// The best label of one input given as a 1-D float64 or float32
    /// array `x` of the model's input columns (with `one`, all but the
    /// last, an intercept's, which is 1), as `predict` gives it for the
    /// row; its scores are kept for a `learn_row` of the same input next.
    /// `None` when `x` is another object or another length: the caller
    /// then converts it itself.
    fn predict_row(&mut self, x: &Bound<'_, PyAny>, one: bool) -> PyResult<Option<usize>> {
        let Some(row) = array_row(x, one, self.input_width()) else {
            return Ok(None);
        };
        let (xs, d) = self.mapped.rows(&self.inner, &row, row.len()).py()?;
        check_dim(&self.inner, d)?;
        let out = self.inner.predict_remembering(xs).py()?;
        Ok(out.first().copied())
    }

    /// One round on one input given as `predict_row` takes it, labelled
    /// `y`; adds labels up to `n_labels`. Returns the loss, or `None`
    /// (nothing learned) when `x` is not such an array.
    fn learn_row(
        &mut self,
        x: &Bound<'_, PyAny>,
        one: bool,
        y: usize,
        n_labels: usize,
    ) -> PyResult<Option<f64>> {
        let Some(row) = array_row(x, one, self.input_width()) else {
            return Ok(None);
        };
        let (xs, d) = self.mapped.rows(&self.inner, &row, row.len()).py()?;
        self.inner
            .learn_extending(xs, d, &[y], n_labels, false)
            .py()
            .map(Some)
    }

    /// The labellings of the examples stored one after the other in `x`
    /// (lengths `lens`), concatenated; GIL released.
    fn predict_many<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        lens: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        let (xs, d) = self.mapped.rows(&self.inner, xs, d).py()?;
        let lens = labels("lens", &lens)?;
        check_dim(&self.inner, d)?;
        let total = lens.iter().sum::<usize>();
        ensure_shape(
            total == n,
            "lens",
            format!("lengths summing to {n}"),
            format!("{lens:?}"),
        )?;
        let out = py
            .detach(|| {
                let mut out = Vec::with_capacity(n);
                let mut off = 0;
                for &len in &lens {
                    out.extend(self.inner.predict(&xs[off * d..(off + len) * d])?);
                    off += len;
                }
                Ok(out)
            })
            .py()?;
        self.mapped.trim(0);
        Ok(index_array(py, out))
    }

    /// Emission scores (n × L) of `x` (n × d); with `rows=True`, every row
    /// of `x` is scored as its own one-position example.
    #[pyo3(signature = (x, rows=false))]
    fn scores<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        rows: bool,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let (xs, n, d) = matrix("x", &x)?;
        let (xs, d) = self.mapped.rows(&self.inner, xs, d).py()?;
        check_dim(&self.inner, d)?;
        let l = self.inner.n_labels();
        let out = py
            .detach(|| {
                if rows {
                    let mut out = Vec::with_capacity(n * l);
                    for r in xs.chunks_exact(d) {
                        out.extend(self.inner.scores(r, 1)?);
                    }
                    Ok(out)
                } else {
                    self.inner.scores(xs, n)
                }
            })
            .py()?;
        array2(py, n, l, out)
    }

    /// Grows the dimension to `d` and the labels to `n_labels` (no score
    /// changes: new features are 0 in stored inputs, new labels score 0);
    /// on error (an allocation too large) the model is unchanged.
    fn grow(&mut self, d: usize, n_labels: usize) -> PyResult<()> {
        self.inner.grow(d, n_labels).py()
    }

    /// `β` over the kernel and explicit groups (current iterate).
    fn beta(&self) -> Vec<f64> {
        self.inner.beta()
    }

    /// Group norms: kernel groups, explicit groups, then transitions.
    fn group_norms(&self) -> Vec<f64> {
        self.inner.group_norms()
    }

    /// Appends the current `β` to the trajectory.
    fn record_beta(&mut self) {
        self.inner.record_beta()
    }

    /// The trajectory: rounds and `β` entries.
    fn beta_history(&self) -> (Vec<u64>, Vec<Vec<f64>>) {
        let (r, b) = self.inner.beta_history();
        (r.to_vec(), b.to_vec())
    }

    #[getter]
    fn n_support(&self) -> usize {
        self.inner.n_support()
    }

    #[getter]
    fn n_labels(&self) -> usize {
        self.inner.n_labels()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    #[getter]
    fn rounds(&self) -> u64 {
        self.inner.rounds()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    /// Gives the model feature maps (`FeatureMap`s, in the order of their
    /// explicit groups, which fill the last columns), read from the first
    /// `input_dim` columns; `None` takes them away. With maps, `learn`,
    /// `predict`, `scores` and their batch forms take rows of `input_dim`
    /// values and compute the maps' columns themselves (rows of `dim`
    /// values are taken as they are). The maps are not saved.
    #[pyo3(signature = (input_dim, maps))]
    fn set_feature_maps(
        &mut self,
        input_dim: usize,
        maps: Option<Vec<PyRef<'_, PyFeatureMap>>>,
    ) -> PyResult<()> {
        let maps = match maps {
            None => None,
            Some(v) => Some(
                FeatureMaps::new(input_dim, v.iter().map(|m| m.inner.clone()).collect()).py()?,
            ),
        };
        self.mapped = MappedRows::default();
        self.inner.set_feature_maps(maps).py()
    }

    /// The input dimension of the model's feature maps (`None` without).
    #[getter]
    fn feature_maps_input_dim(&self) -> Option<usize> {
        self.inner.feature_maps().map(FeatureMaps::input_dim)
    }

    /// Deterministic, versioned bytes of the model.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if self.inner.is_precomputed() {
            return Err(OmklError::invalid(
                "model",
                "a model over precomputed Gram matrices cannot be saved or pickled: the \
                 matrices are not part of it (keep them, and the coefficients in `coef_`)",
            ))
            .py();
        }
        Ok(PyBytes::new(py, &self.inner.to_bytes()))
    }

    /// Reads bytes from `to_bytes`; `ValueError` on another format,
    /// version or corrupt contents.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(PyStreamMkl {
            inner: StreamMkl::from_bytes(data).py()?,
            mapped: MappedRows::default(),
        })
    }
}

/// A shape error naming `x` unless it has `d` = `dim` columns.
/// The row of `width` values a model takes for the 1-D float64 or
/// float32 array `x` (any strides): its values as float32, then `1.0` when
/// `one`; `None` when `x` is another object or does not hold
/// `width - one` values.
fn array_row(x: &Bound<'_, PyAny>, one: bool, width: usize) -> Option<Vec<f32>> {
    fn take<T: numpy::Element + Copy>(
        x: &Bound<'_, PyAny>,
        n: usize,
        row: &mut Vec<f32>,
        f: fn(T) -> f32,
    ) -> Option<()> {
        let a = x.cast::<PyArray1<T>>().ok()?.try_readonly().ok()?;
        let v = a.as_array();
        (v.len() == n).then(|| row.extend(v.iter().map(|&e| f(e))))
    }
    let n = width.checked_sub(usize::from(one))?;
    let mut row = Vec::with_capacity(width);
    take::<f64>(x, n, &mut row, |v| v as f32).or_else(|| take::<f32>(x, n, &mut row, |v| v))?;
    if one {
        row.push(1.0);
    }
    Some(row)
}

fn check_dim(inner: &StreamMkl, d: usize) -> PyResult<()> {
    let dim = inner.dim();
    ensure_shape(d == dim, "x", format!("{dim} columns"), d)
}

impl PyStreamMkl {
    /// The columns of an input row before the feature maps widen it: the
    /// maps' input dimension, or the model's dimension without maps.
    fn input_width(&self) -> usize {
        self.inner
            .feature_maps()
            .map_or(self.inner.dim(), FeatureMaps::input_dim)
    }

    /// Coefficients laid out label by label as an `L × (len / L)` array.
    fn by_label<'py>(&self, py: Python<'py>, v: Vec<f64>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let l = self.inner.n_labels();
        array2(py, l, v.len() / l.max(1), v)
    }

    fn group_index(&self, g: usize, n: usize) -> PyResult<()> {
        if g >= n {
            return Err(OmklError::invalid(
                "group",
                format!("expected an index < {n}, got {g}"),
            ))
            .py();
        }
        Ok(())
    }
}

fn parse_loss(loss: &str) -> PyResult<StreamLoss> {
    match loss {
        "hinge" => Ok(StreamLoss::Hinge),
        "crf" | "log" => Ok(StreamLoss::Crf),
        other => Err(OmklError::invalid(
            "loss",
            format!("expected 'hinge' or 'crf' (alias 'log'), got {other:?}"),
        ))
        .py(),
    }
}

fn report_dict<'py>(
    py: Python<'py>,
    r: &omkl_core::learner::stream_mkl::EpochReport,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("epoch", r.epoch)?;
    d.set_item("beta", r.beta.clone())?;
    d.set_item("mean_loss", r.mean_loss)?;
    d.set_item("objective", r.objective)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStreamMkl>()?;
    Ok(())
}
