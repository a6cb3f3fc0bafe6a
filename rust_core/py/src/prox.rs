//! Python binding for `omkl_core::prox`: type conversion only. Group ids
//! are turned into contiguous blocks by `omkl_core::prox::groups`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use omkl_core::prox::groups::{apply_with_ids, group_norms_with_ids};
use omkl_core::prox::{
    elastic_net, group_lasso, l1, l1_ball, l21_ball, l2_squared, l2q, sparse_group_lasso,
    squared_l1, weighted_squared_l1,
};
use omkl_core::{OmklError, Result};
use pyo3::prelude::*;

use crate::convert::{add_functions, copy_elems, row_major};
use crate::errors::IntoPyResult;

type Out<'py> = PyResult<Bound<'py, PyArray1<f64>>>;

/// A float64 vector argument.
type F64s<'py> = PyReadonlyArray1<'py, f64>;

/// Group ids, one per entry of `x`.
type Ids<'py> = PyReadonlyArray1<'py, i64>;

/// Magnitudes in `[2^-SAFE_EXP, 2^SAFE_EXP]` need no rescaling: squares and
/// sums of squares of up to 2^63 of them stay normal and finite.
const SAFE_EXP: i32 = 480;

/// A power of two `c` such that `max |v| / c` is about `2^SAFE_EXP`, when
/// the largest magnitude of `v` lies outside `[2^-SAFE_EXP, 2^SAFE_EXP]`
/// (and is not 0). Dividing by a power of two is exact.
fn rescale_factor(v: &[f64]) -> Option<f64> {
    let m = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if m == 0.0 || !m.is_finite() {
        return None;
    }
    let e = m.log2().floor() as i32;
    if e > SAFE_EXP {
        Some(2f64.powi(e - SAFE_EXP))
    } else if e < -SAFE_EXP {
        Some(2f64.powi(e + SAFE_EXP))
    } else {
        None
    }
}

/// Runs `op` on `v / c` with parameters mapped by the caller, then scales
/// back; errors naming `x` if a result is not finite.
///
/// Entries far below the largest one can lose bits in `v / c` (below about
/// `2^-1500` of it). Such an entry that the operator leaves unchanged or
/// sets to 0 (the only outcomes when the operator's threshold is not itself
/// that small) is exact; any other change to it is refused with an error.
fn scaled<F>(v: &mut [f64], c: f64, op: F) -> Result<()>
where
    F: FnOnce(&mut [f64]) -> Result<()>,
{
    let orig = v.to_vec();
    for x in v.iter_mut() {
        *x /= c;
    }
    let before = v.to_vec();
    op(v)?;
    let lossy = |i: usize| before[i] * c != orig[i];
    // An entry that underflowed to 0 cannot show whether it was kept: it
    // was, if the operator left every exactly represented entry unchanged.
    let identity = (0..v.len()).all(|i| lossy(i) || v[i] == before[i]);
    for (i, x) in v.iter_mut().enumerate() {
        let lossy = lossy(i);
        if lossy && *x == before[i] && (before[i] != 0.0 || identity) {
            *x = orig[i];
        } else if lossy && *x != 0.0 {
            return Err(OmklError::invalid(
                "x",
                format!(
                    "element {i} ({:e}) is too small next to the largest magnitude for an \
                     exact result; the entries span more than 1e450",
                    orig[i]
                ),
            ));
        } else {
            *x *= c;
        }
    }
    check_result(v)
}

/// Errors naming `x` if an output is not finite (its true value exceeds
/// the range of f64).
fn check_result(v: &[f64]) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => Err(OmklError::invalid(
            "x",
            format!("element {i} of the result exceeds the range of f64; scale `x` down"),
        )),
    }
}

/// A rescaled parameter, or an error naming it if it leaves the range of f64.
fn param(name: &str, v: f64) -> Result<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(OmklError::invalid(
            name,
            format!("`{name}` rescaled to the magnitude of `x` is {v}; the inputs are too extreme"),
        ))
    }
}

/// Runs a group-separable operator `op(v, offsets, c)` one group at a time,
/// each group rescaled by its own power of two `c` (1 when not needed), when
/// `x` has magnitudes outside the safe range; otherwise once on all groups.
fn separable<F>(v: &mut [f64], offsets: &[usize], op: F) -> Result<()>
where
    F: Fn(&mut [f64], &[usize], f64) -> Result<()>,
{
    if rescale_factor(v).is_none() {
        return op(v, offsets, 1.0);
    }
    // Parameter errors name the values the caller passed.
    op(&mut [0.0], &[0, 1], 1.0)?;
    for w in offsets.windows(2) {
        let g = &mut v[w[0]..w[1]];
        let len = g.len();
        if len == 0 {
            continue;
        }
        match rescale_factor(g) {
            None => op(g, &[0, len], 1.0)?,
            Some(c) => scaled(g, c, |g| op(g, &[0, len], c))?,
        }
    }
    Ok(())
}

/// Runs an operator `op(v, offsets, c)` that is not separable over the
/// groups once: on `v` itself (`c` = 1), or, when `v` has magnitudes outside
/// the safe range, on `v / c` for a power of two `c` (after a call on a zero
/// vector, so that parameter errors name the values the caller passed).
fn whole<F>(v: &mut [f64], offsets: &[usize], op: F) -> Result<()>
where
    F: Fn(&mut [f64], &[usize], f64) -> Result<()>,
{
    match rescale_factor(v) {
        None => op(v, offsets, 1.0),
        Some(c) => {
            op(&mut [0.0], &[0, 1], 1.0)?;
            scaled(v, c, |v| op(v, offsets, c))
        }
    }
}

/// A fresh copy of `x`, or `MemoryError` naming `name`.
fn copy(name: &str, x: &PyReadonlyArray1<'_, f64>) -> PyResult<Vec<f64>> {
    copy_elems(name, x.as_array().iter())
}

/// Copies `x`, applies `op` without the GIL, returns the new array.
fn elementwise<'py, F>(py: Python<'py>, x: F64s<'py>, op: F) -> Out<'py>
where
    F: FnOnce(&mut [f64]) -> Result<()> + Send,
{
    let mut out = copy("x", &x)?;
    py.detach(|| op(&mut out)).py()?;
    Ok(out.into_pyarray(py))
}

/// Applies a grouped operator to `x` grouped by `groups` without the GIL.
fn grouped<'py, F>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, op: F) -> Out<'py>
where
    F: FnOnce(&mut [f64], &[usize]) -> Result<()> + Send,
{
    let xs = copy("x", &x)?;
    let ids = row_major("groups", &groups)?;
    let out = py.detach(|| apply_with_ids(xs, &ids, op)).py()?;
    Ok(out.into_pyarray(py))
}

/// [`grouped`] for an operator separable over the groups (see [`separable`]).
fn grouped_separable<'py, F>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, op: F) -> Out<'py>
where
    F: Fn(&mut [f64], &[usize], f64) -> Result<()> + Send,
{
    grouped(py, x, groups, |v, o| separable(v, o, op))
}

/// Soft-thresholding, the prox of `tau * ||x||_1`. Returns a new array.
#[pyfunction]
fn soft_threshold<'py>(py: Python<'py>, x: F64s<'py>, tau: f64) -> Out<'py> {
    elementwise(py, x, |v| l1::soft_threshold(v, tau))
}

/// The prox of `(tau/2) * ||x||^2`.
#[pyfunction]
fn prox_l2_squared<'py>(py: Python<'py>, x: F64s<'py>, tau: f64) -> Out<'py> {
    elementwise(py, x, |v| l2_squared::prox_l2_squared(v, tau))
}

/// The prox of `(tau/2) * ||x||_1^2` (Alg. 2), `method` "sort" or "select".
#[pyfunction]
#[pyo3(signature = (x, tau, method = "sort"))]
fn prox_squared_l1<'py>(py: Python<'py>, x: F64s<'py>, tau: f64, method: &str) -> Out<'py> {
    let method: squared_l1::ThresholdMethod = method.parse().py()?;
    // (tau/2) ||x||_1^2 is 2-homogeneous: prox(c v) = c prox(v).
    elementwise(py, x, |v| {
        let o = [0, v.len()];
        whole(v, &o, |v, _, _| squared_l1::prox_squared_l1(v, tau, method))
    })
}

/// The prox of `(tau/2) * (sum_i d_i |x_i|)^2`.
#[pyfunction]
fn prox_weighted_squared_l1<'py>(
    py: Python<'py>,
    x: F64s<'py>,
    d: F64s<'py>,
    tau: f64,
) -> Out<'py> {
    let mut d = copy("d", &d)?;
    elementwise(py, x, move |v| {
        // (tau/2) (sum d|x|)^2 with d = b d', x = c x': tau b^2 (sum d'|x'|)^2 c^2.
        weighted_squared_l1::prox_weighted_squared_l1(&mut [0.0], &[0.0], tau)?;
        let mut tau = tau;
        if d.iter().all(|w| w.is_finite()) {
            if let Some(b) = rescale_factor(&d) {
                d.iter_mut().for_each(|w| *w /= b);
                tau = param("tau", tau * b * b)?;
            }
        }
        match rescale_factor(v) {
            None => weighted_squared_l1::prox_weighted_squared_l1(v, &d, tau),
            Some(c) => {
                // Coordinates with d = 0 are returned unchanged: keep them exact.
                let orig = v.to_vec();
                scaled(v, c, |v| {
                    weighted_squared_l1::prox_weighted_squared_l1(v, &d, tau)
                })?;
                for (i, x) in v.iter_mut().enumerate() {
                    if d[i] == 0.0 {
                        *x = orig[i];
                    }
                }
                Ok(())
            }
        }
    })
}

/// Euclidean projection onto `{u : ||u||_1 <= radius}`.
#[pyfunction]
fn project_l1_ball<'py>(py: Python<'py>, x: F64s<'py>, radius: f64) -> Out<'py> {
    let sort = squared_l1::ThresholdMethod::Sort;
    elementwise(py, x, |v| {
        let o = [0, v.len()];
        whole(v, &o, |v, _, c| {
            l1_ball::project_l1_ball(v, radius / c, sort)
        })
    })
}

/// Block soft-thresholding, the prox of `tau * sum_g ||x_g||`.
#[pyfunction]
fn prox_group_lasso<'py>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, tau: f64) -> Out<'py> {
    grouped_separable(py, x, groups, |g, o, c| {
        group_lasso::prox_group_lasso(g, o, tau / c)
    })
}

/// Euclidean projection onto `{u : sum_g ||u_g|| <= radius}`.
#[pyfunction]
fn project_l21_ball<'py>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, radius: f64) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        whole(v, o, |v, o, c| l21_ball::project_l21_ball(v, o, radius / c))
    })
}

/// Defines a `#[pyfunction]` `$name(x, groups, $a, $b)`: the prox with
/// the two real parameters `$a` and `$b`, separable over the groups, whose
/// step on groups `g` (offsets `o`) scaled down by `c` is `$step` (see
/// [`grouped_separable`]).
macro_rules! grouped_prox2 {
    ($(#[$doc:meta])* $name:ident($a:ident, $b:ident), |$g:ident, $o:ident, $c:ident| $step:block) => {
        $(#[$doc])*
        #[pyfunction]
        fn $name<'py>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, $a: f64, $b: f64) -> Out<'py> {
            grouped_separable(py, x, groups, |$g, $o, $c| $step)
        }
    };
}

grouped_prox2! {
    /// The prox of `tau1 * ||x||_1 + tau2 * sum_g ||x_g||`.
    prox_sparse_group_lasso(tau1, tau2), |g, o, c| {
        sparse_group_lasso::prox_sparse_group_lasso(g, o, tau1 / c, tau2 / c)
    }
}

grouped_prox2! {
    /// The prox of `tau * [rho sum ||x_g|| + (1 - rho)/2 sum ||x_g||^2]`.
    prox_elastic_net_mkl(tau, l1_ratio), |g, o, c| {
        // On x = c x': the l1 part scales by 1/c, the squared part is unchanged.
        if c == 1.0 || !(0.0..=1.0).contains(&l1_ratio) || tau.is_nan() {
            return elastic_net::prox_elastic_net_mkl(g, o, tau, l1_ratio);
        }
        let (l1, l2) = (tau * l1_ratio / c, tau * (1.0 - l1_ratio));
        let t = param("tau", l1 + l2)?;
        let rho = if t > 0.0 { l1 / t } else { l1_ratio };
        elastic_net::prox_elastic_net_mkl(g, o, t, rho)
    }
}

grouped_prox2! {
    /// The prox of `tau * sum_g ||x_g||^q`, `q >= 1`.
    prox_l2q(tau, q), |g, o, c| {
        // tau ||c x'||^q = c^2 (tau c^(q-2)) ||x'||^q.
        let t = if c == 1.0 || !q.is_finite() {
            tau
        } else {
            param("tau", tau * c.powf(q - 2.0))?
        };
        l2q::prox_l2q(g, o, t, q)
    }
}

/// The prox of `(tau/2) * (sum_g ||x_g||)^2` (the MKL regulariser).
#[pyfunction]
fn prox_squared_l21<'py>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>, tau: f64) -> Out<'py> {
    grouped(py, x, groups, |v, o| {
        whole(v, o, |v, o, _| squared_l1::prox_squared_l21(v, o, tau))
    })
}

/// Euclidean norms of the groups, indexed by group id.
#[pyfunction]
fn group_norms<'py>(py: Python<'py>, x: F64s<'py>, groups: Ids<'py>) -> Out<'py> {
    let xs = copy("x", &x)?;
    let ids = row_major("groups", &groups)?;
    let out = py
        .detach(|| {
            let out = group_norms_with_ids(&xs, &ids)?;
            match out.iter().position(|v| !v.is_finite()) {
                None => Ok(out),
                Some(g) => Err(OmklError::invalid(
                    "x",
                    format!("the norm of group {g} exceeds the range of f64; scale `x` down"),
                )),
            }
        })
        .py()?;
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        soft_threshold,
        prox_l2_squared,
        prox_squared_l1,
        prox_weighted_squared_l1,
        project_l1_ball,
        prox_group_lasso,
        project_l21_ball,
        prox_sparse_group_lasso,
        prox_elastic_net_mkl,
        prox_l2q,
        prox_squared_l21,
        group_norms,
    )
}
