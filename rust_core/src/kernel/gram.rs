//! Dense Gram matrices through a tuned GEMM.
//!
//! A tile of `K(x_i, y_j)` is computed as one f32 GEMM `X_t Y_tᵀ`
//! (faer's `matmul`, with runtime-selected AVX2/AVX-512 kernels)
//! whose result, still in cache, is turned into kernel values by the
//! vectorised elementwise map of `super::map` and written once to the
//! output (see `super::tiles`). Tiles run in parallel on the rayon pool.
//! The symmetric case ([`gram_symmetric`]) computes only the tiles on and
//! above the diagonal and writes each also to its mirror place.
//!
//! Several Gram matrices of the same inputs come from one shared GEMM
//! ([`gram_many`]): every kernel of [`Kernel`] is a function of `⟨x, y⟩`,
//! `‖x‖²` and `‖y‖²`, so the inner products, the dominant O(n m d) cost, are
//! computed once per tile and mapped to each kernel while the tile is in
//! cache. [`gram`] and [`gram_symmetric`] are the case of one kernel.

pub(crate) use super::finite::check_finite_f32;
use super::map::{scale_exponent, Prepared};
use super::tiles::{fill_rect, fill_symmetric, Job, Mapped, Scaled};
use super::Kernel;
use crate::error::{alloc_len, try_vec, OmklError, Result};

/// Checks that `x` is a finite row-major `n × d` matrix with `n, d >= 1`.
pub(crate) fn check_matrix(name: &str, x: &[f32], n: usize, d: usize) -> Result<()> {
    if n == 0 || d == 0 {
        return Err(OmklError::empty(name));
    }
    let len = n
        .checked_mul(d)
        .ok_or_else(|| OmklError::invalid(name, format!("{n} x {d} overflows")))?;
    if x.len() != len {
        return Err(OmklError::shape(
            name,
            format!("{n} x {d} = {len} elements"),
            format!("{} elements", x.len()),
        ));
    }
    check_finite_f32(name, x)
}

/// Squared norm of one input, summed in f64.
pub(crate) use super::support::sq_norm_f32 as sq_norm;

/// Squared row norms of a row-major `n × d` matrix, in f64.
pub(crate) fn sq_norms(x: &[f32], d: usize) -> Vec<f64> {
    x.chunks_exact(d).map(sq_norm).collect()
}

/// A tile job for already checked kernels and inputs; `y = None` means
/// `y = x` (the norms are then computed once). Also returns the squared
/// norms of `x`.
pub(crate) fn job<'a>(
    kernels: &[Kernel],
    x: &'a [f32],
    nx: usize,
    y: Option<(&'a [f32], usize)>,
    d: usize,
) -> (Job<'a>, Vec<f64>) {
    let nxs = sq_norms(x, d);
    let nys = y.map(|(y, _)| sq_norms(y, d));
    let job = job_with_norms(kernels, (x, nx, &nxs), y, nys.as_deref(), d);
    (job, nxs)
}

/// [`job`] with the squared norms of `x` (and of `y`, when given) already
/// known, e.g. kept by a [`super::SupportStore`].
///
/// When a kernel is normalised and some input's norm is outside
/// `super::map::SCALE_FREE`, the job also holds copies of `x` and `y` with
/// every such row divided by its power of two (exactly, in f64), whose
/// inner products the normalised kernels map; the other kernels map those
/// of the inputs as they are (see `super::map`).
pub(crate) fn job_with_norms<'a>(
    kernels: &[Kernel],
    (x, nx, nxs): (&'a [f32], usize, &[f64]),
    y: Option<(&'a [f32], usize)>,
    nys: Option<&[f64]>,
    d: usize,
) -> Job<'a> {
    let preps: Vec<Prepared> = kernels.iter().map(Prepared::new).collect();
    let exponents = |norms: &[f64]| -> Vec<i32> {
        if preps.iter().any(Prepared::is_normalised) {
            norms.iter().map(|&n| scale_exponent(n)).collect()
        } else {
            vec![0; norms.len()]
        }
    };
    let ex = exponents(nxs);
    let ey = nys.map(exponents);
    let rescale = ex.iter().chain(ey.iter().flatten()).any(|&e| e != 0);
    let scaled = rescale.then(|| Scaled {
        x: scale_rows(x, d, &ex),
        y: y.zip(ey.as_deref())
            .map(|((y, _), ey)| scale_rows(y, d, ey)),
    });
    let kernels = preps
        .into_iter()
        .map(|prep| {
            let scaled = rescale && prep.is_normalised();
            let aux = |norms: &[f64], es: &[i32]| -> (Vec<f32>, Vec<f32>) {
                norms
                    .iter()
                    .zip(es)
                    .map(|(&n, &e)| prep.aux(n, if scaled { e } else { 0 }))
                    .unzip()
            };
            let (ax, bx) = aux(nxs, &ex);
            let (ay, by) = match (nys, &ey) {
                (Some(n), Some(e)) => aux(n, e),
                _ => (ax.clone(), bx.clone()),
            };
            Mapped {
                prep,
                ax,
                bx,
                ay,
                by,
                scaled,
            }
        })
        .collect();
    let (y, ny) = y.unwrap_or((x, nx));
    Job {
        x,
        nx,
        y,
        ny,
        d,
        kernels,
        scaled,
    }
}

/// `x` (row-major, `d` columns) with row `i` divided by `2^e[i]`, exactly
/// but for entries that the division takes below the normal f32 range.
fn scale_rows(x: &[f32], d: usize, e: &[i32]) -> Vec<f32> {
    x.chunks_exact(d)
        .zip(e)
        .flat_map(|(row, &e)| {
            let s = 2f64.powi(-e);
            row.iter().map(move |&v| (f64::from(v) * s) as f32)
        })
        .collect()
}

/// The Gram matrix `K[i, j] = K(x_i, y_j)` of row-major inputs `x`
/// (`nx × d`) and `y` (`ny × d`), returned row-major `nx × ny` in **f32**.
///
/// Inputs are f32 and inner products are accumulated in f32 by the GEMM,
/// so values carry f32 rounding (relative error about `1e-6 · d` on the
/// inner products). Squared distances `‖x‖² + ‖y‖² − 2⟨x, y⟩` are clamped at 0.
///
/// Errors name `kernel`'s bad hyperparameter, or `X`/`Y` when they are
/// empty, non-finite or of the wrong length.
///
/// # Complexity
/// O(nx · ny · d) flops in GEMM plus O(nx · ny) kernel evaluations, in
/// parallel; O(nx · ny) memory for the output only.
///
/// # Example
/// ```
/// use omkl_core::kernel::{gram, Kernel};
/// let x = [0.0f32, 0.0, 1.0, 0.0];
/// let k = gram(&Kernel::Linear { normalize: false }, &x, 2, &x, 2, 2).unwrap();
/// assert_eq!(k, vec![0.0, 0.0, 0.0, 1.0]);
/// ```
pub fn gram(
    kernel: &Kernel,
    x: &[f32],
    nx: usize,
    y: &[f32],
    ny: usize,
    d: usize,
) -> Result<Vec<f32>> {
    let mut outs = gram_many(std::slice::from_ref(kernel), x, nx, y, ny, d)?;
    Ok(outs.swap_remove(0))
}

/// [`gram`] into `out` (resized to `nx · ny`) for inputs already checked (finite, `x.len() == nx · d`,
/// `y.len() == ny · d`, `nx, ny >= 1`) whose squared norms are known:
/// no validation pass and no norm pass over `y`. Same values as
/// [`gram`] (the norms are summed the same way).
///
/// # Complexity
/// O(nx · ny · d) flops in GEMM plus O(nx · ny) kernel evaluations.
pub(crate) fn gram_into_with_norms(
    kernel: &Kernel,
    (x, nx, nxs): (&[f32], usize, &[f64]),
    (y, ny, nys): (&[f32], usize, &[f64]),
    d: usize,
    out: &mut Vec<f32>,
) {
    out.clear();
    out.resize(nx * ny, 0.0);
    let job = job_with_norms(
        std::slice::from_ref(kernel),
        (x, nx, nxs),
        Some((y, ny)),
        Some(nys),
        d,
    );
    fill_rect(&job, &mut [out.as_mut_slice()]);
}

/// The symmetric Gram matrix `K[i, j] = K(x_i, x_j)` of row-major `x`
/// (`n × d`), row-major `n × n` in f32. Only tiles on and above the
/// diagonal are computed (half the GEMM and kernel evaluations of
/// [`gram`]); the result is exactly symmetric and its diagonal is set
/// exactly (1 for normalised, Gaussian and B1-spline kernels).
///
/// # Complexity
/// About half of [`gram`]'s flops; O(n²) output and no other O(n²)
/// memory.
///
/// # Example
/// ```
/// use omkl_core::kernel::{gram_symmetric, Kernel};
/// let x = [0.0f32, 1.0, 1.0, 1.0];
/// let k = gram_symmetric(&Kernel::Gaussian { sigma2: 0.5 }, &x, 2, 2).unwrap();
/// assert_eq!(k[0], 1.0);
/// assert_eq!(k[1], k[2]);
/// assert!((k[1] - (-1.0f32).exp()).abs() < 1e-6);
/// ```
pub fn gram_symmetric(kernel: &Kernel, x: &[f32], n: usize, d: usize) -> Result<Vec<f32>> {
    let mut outs = gram_many_symmetric(std::slice::from_ref(kernel), x, n, d)?;
    Ok(outs.swap_remove(0))
}

/// The Gram matrices `K_k[i, j] = K_k(x_i, y_j)` of `x` (`nx × d`) and `y`
/// (`ny × d`), row-major f32, one `nx × ny` matrix per kernel, from one
/// GEMM of inner products.
///
/// Errors name the bad kernel hyperparameter, an empty `kernels` list, or
/// `X`/`Y` when empty, non-finite or of the wrong length.
///
/// # Complexity
/// O(nx · ny · d) GEMM flops once, plus O(nx · ny) per kernel; memory is
/// the outputs only.
///
/// # Example
/// ```
/// use omkl_core::kernel::{gram, gram_many, Kernel};
/// let x = [0.0f32, 1.0, 1.0, 1.0, 2.0, 0.5];
/// let ks = [Kernel::Linear { normalize: false }, Kernel::Gaussian { sigma2: 2.0 }];
/// let gs = gram_many(&ks, &x, 3, &x[..4], 2, 2).unwrap();
/// assert_eq!(gs.len(), 2);
/// assert_eq!(gs[1], gram(&ks[1], &x, 3, &x[..4], 2, 2).unwrap());
/// ```
pub fn gram_many(
    kernels: &[Kernel],
    x: &[f32],
    nx: usize,
    y: &[f32],
    ny: usize,
    d: usize,
) -> Result<Vec<Vec<f32>>> {
    let (mut outs, job, _) = start(kernels, x, nx, Some((y, ny)), d)?;
    let mut views: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    fill_rect(&job, &mut views);
    Ok(outs)
}

/// The symmetric Gram matrices `K_k[i, j] = K_k(x_i, x_j)` of `x`
/// (`n × d`), one `n × n` matrix per kernel, from one GEMM over the tiles
/// on and above the diagonal. Each equals [`super::gram_symmetric`] for
/// that kernel: exactly symmetric with an exact diagonal.
///
/// # Complexity
/// About half of [`gram_many`]'s flops.
///
/// # Example
/// ```
/// use omkl_core::kernel::{gram_many_symmetric, gram_symmetric, Kernel};
/// let x = [0.0f32, 1.0, 1.0, 1.0, 2.0, 0.5];
/// let ks = [Kernel::Gaussian { sigma2: 2.0 }, Kernel::B1Spline { h: 2.0 }];
/// let gs = gram_many_symmetric(&ks, &x, 3, 2).unwrap();
/// assert_eq!(gs[1], gram_symmetric(&ks[1], &x, 3, 2).unwrap());
/// ```
pub fn gram_many_symmetric(
    kernels: &[Kernel],
    x: &[f32],
    n: usize,
    d: usize,
) -> Result<Vec<Vec<f32>>> {
    let (mut outs, job, norms) = start(kernels, x, n, None, d)?;
    let diag: Vec<Vec<f32>> = job
        .kernels
        .iter()
        .map(|m| norms.iter().map(|&v| m.prep.diag(v)).collect())
        .collect();
    let mut views: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    fill_symmetric(&job, &diag, &mut views);
    Ok(outs)
}

/// Checks `kernels` (not empty, valid hyperparameters), `x` and `y` (the
/// one named `Y`, or `X` when `y` is `None`, i.e. `y = x`), then allocates
/// one zeroed `nx × ny` output per kernel (refused by name when their total
/// size cannot be allocated) and prepares the tile job (with the squared
/// norms of `x`).
#[allow(clippy::type_complexity)]
fn start<'a>(
    kernels: &[Kernel],
    x: &'a [f32],
    nx: usize,
    y: Option<(&'a [f32], usize)>,
    d: usize,
) -> Result<(Vec<Vec<f32>>, Job<'a>, Vec<f64>)> {
    if kernels.is_empty() {
        return Err(OmklError::empty("kernels"));
    }
    kernels.iter().try_for_each(Kernel::check)?;
    check_matrix("X", x, nx, d)?;
    let (name, ny) = match y {
        Some((y, ny)) => {
            check_matrix("Y", y, ny, d)?;
            ("Y", ny)
        }
        None => ("X", nx),
    };
    alloc_len(name, &[kernels.len(), nx, ny], 4)?;
    let outs = (0..kernels.len())
        .map(|_| try_vec(name, &[nx, ny], 0.0f32))
        .collect::<Result<_>>()?;
    let (job, norms) = job(kernels, x, nx, y, d);
    Ok((outs, job, norms))
}
