//! Dense Gram matrices through a tuned GEMM.
//!
//! A block of `K(x_i, y_j)` is computed as one f32 GEMM `X_b Y_bᵀ`
//! (ndarray's `general_mat_mul`, backed by `matrixmultiply`'s SIMD kernels)
//! followed by the elementwise kernel map of [`super::map`], which turns
//! inner products into kernel values using the precomputed squared norms.
//! Blocks run in parallel on the rayon pool. The symmetric case
//! ([`gram_symmetric`]) computes only the tiles on and above the diagonal and
//! mirrors them.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

use super::map::Prepared;
use super::Kernel;
use crate::error::{OmklError, Result};

/// Rows per parallel block of the rectangular case.
pub(crate) const ROW_BLOCK: usize = 128;
/// Columns per GEMM call (keeps the output tile in L2 for the map).
const COL_BLOCK: usize = 512;
/// Tile side of the symmetric case.
const TILE: usize = 256;
/// Blocks with fewer rows use direct dot products instead of GEMM.
const GEMM_MIN_ROWS: usize = 4;

/// `⟨a, b⟩` in f32 with 8 independent accumulators (vectorisable).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for t in 0..8 {
            acc[t] += x[t] * y[t];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Returns an error naming `name` if any element is NaN or infinite.
pub(crate) fn check_finite_f32(name: &str, xs: &[f32]) -> Result<()> {
    match xs.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(OmklError::NonFinite {
            name: name.to_string(),
            index,
            value: f64::from(xs[index]),
        }),
    }
}

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

/// Squared row norms of a row-major `n × d` matrix, in f64.
pub(crate) fn sq_norms(x: &[f32], d: usize) -> Vec<f64> {
    x.chunks_exact(d)
        .map(|r| r.iter().map(|&v| f64::from(v) * f64::from(v)).sum())
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
    let mut out = Vec::new();
    gram_into(kernel, x, nx, y, ny, d, &mut out)?;
    Ok(out)
}

/// [`gram`] writing into `out`, which is resized to `nx · ny` (reuse the
/// buffer to compute a large test-versus-train matrix block by block).
pub fn gram_into(
    kernel: &Kernel,
    x: &[f32],
    nx: usize,
    y: &[f32],
    ny: usize,
    d: usize,
    out: &mut Vec<f32>,
) -> Result<()> {
    kernel.check()?;
    check_matrix("X", x, nx, d)?;
    check_matrix("Y", y, ny, d)?;
    let len = nx
        .checked_mul(ny)
        .ok_or_else(|| OmklError::invalid("Y", format!("{nx} x {ny} output overflows")))?;
    let prep = Prepared::new(kernel);
    let ax: Vec<f32> = sq_norms(x, d).into_iter().map(|n| prep.aux(n)).collect();
    let ay: Vec<f32> = sq_norms(y, d).into_iter().map(|n| prep.aux(n)).collect();
    out.clear();
    out.resize(len, 0.0);
    out.par_chunks_mut(ROW_BLOCK * ny)
        .enumerate()
        .for_each(|(b, chunk)| {
            let r0 = b * ROW_BLOCK;
            let rows = chunk.len() / ny;
            block(
                &prep,
                &x[r0 * d..(r0 + rows) * d],
                &ax[r0..r0 + rows],
                y,
                &ay,
                d,
                chunk,
            );
        });
    Ok(())
}

/// Fills `out` (row-major `rows × ny`) with the kernel between the rows of
/// `xb` and all rows of `y`, column tile by column tile.
pub(crate) fn block(
    prep: &Prepared,
    xb: &[f32],
    ax: &[f32],
    y: &[f32],
    ay: &[f32],
    d: usize,
    out: &mut [f32],
) {
    let rows = ax.len();
    let ny = ay.len();
    let a = ArrayView2::from_shape((rows, d), xb).expect("block shape checked");
    let yv = ArrayView2::from_shape((ny, d), y).expect("shape checked");
    let mut c = ArrayViewMut2::from_shape((rows, ny), out).expect("block shape checked");
    let mut c0 = 0;
    while c0 < ny {
        let c1 = (c0 + COL_BLOCK).min(ny);
        let yb = yv.slice(s![c0..c1, ..]);
        let mut cb = c.slice_mut(s![.., c0..c1]);
        if rows < GEMM_MIN_ROWS {
            // Too few rows for GEMM's packing of `y` to pay off.
            for (r, mut row) in cb.rows_mut().into_iter().enumerate() {
                let xr = &xb[r * d..(r + 1) * d];
                for (v, yr) in row.iter_mut().zip(y[c0 * d..c1 * d].chunks_exact(d)) {
                    *v = dot(xr, yr);
                }
            }
        } else {
            general_mat_mul(1.0, &a, &yb.t(), 0.0, &mut cb);
        }
        for (r, mut row) in cb.rows_mut().into_iter().enumerate() {
            let row = row
                .as_slice_mut()
                .expect("rows of a row-major view are contiguous");
            if let Prepared::B1 { inv_h } = *prep {
                let xr = &xb[r * d..(r + 1) * d];
                let ys = &y[c0 * d..c1 * d];
                b1_row(inv_h, row, ax[r], &ay[c0..c1], xr, ys);
            } else {
                prep.map_row(row, ax[r], &ay[c0..c1]);
            }
        }
        c0 = c1;
    }
}

/// Below this fraction of `‖x‖² + ‖y‖²`, a squared distance obtained from
/// norms and an f32 inner product is dominated by cancellation; the
/// B1-spline (whose `√` magnifies that error near 0) recomputes it directly.
const REFINE: f32 = 1e-2;

/// The B1-spline map of one row, recomputing close pairs' distances from
/// the vectors in f64 (see [`REFINE`]).
fn b1_row(inv_h: f32, row: &mut [f32], ax: f32, ay: &[f32], xr: &[f32], ys: &[f32]) {
    let d = xr.len();
    for (j, (v, &n)) in row.iter_mut().zip(ay).enumerate() {
        let s = ax + n;
        let mut d2 = (s - 2.0 * *v).max(0.0);
        if d2 < REFINE * s {
            d2 = xr
                .iter()
                .zip(&ys[j * d..(j + 1) * d])
                .map(|(&a, &b)| {
                    let t = f64::from(a) - f64::from(b);
                    t * t
                })
                .sum::<f64>() as f32;
        }
        *v = (1.0 - d2.sqrt() * inv_h).max(0.0);
    }
}

/// The symmetric Gram matrix `K[i, j] = K(x_i, x_j)` of row-major `x`
/// (`n × d`), row-major `n × n` in f32. Only tiles on and above the
/// diagonal are computed (half the GEMM and kernel evaluations of
/// [`gram`]); the result is exactly symmetric and its diagonal is set
/// exactly (1 for normalised, Gaussian and B1-spline kernels).
///
/// # Complexity
/// About half of [`gram`]'s flops; O(n²) output plus O(n²/2) temporary
/// memory for the upper tiles.
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
    kernel.check()?;
    check_matrix("X", x, n, d)?;
    let len = n
        .checked_mul(n)
        .ok_or_else(|| OmklError::invalid("X", format!("{n} x {n} output overflows")))?;
    let prep = Prepared::new(kernel);
    let norms = sq_norms(x, d);
    let aux: Vec<f32> = norms.iter().map(|&v| prep.aux(v)).collect();
    let nb = n.div_ceil(TILE);
    let pairs: Vec<(usize, usize)> = (0..nb).flat_map(|i| (i..nb).map(move |j| (i, j))).collect();
    let range = |b: usize| b * TILE..((b + 1) * TILE).min(n);
    // Upper tiles, each row-major (rows of block i) x (columns of block j).
    let tiles: Vec<Vec<f32>> = pairs
        .par_iter()
        .map(|&(i, j)| {
            let (ri, rj) = (range(i), range(j));
            let mut t = vec![0.0f32; ri.len() * rj.len()];
            block(
                &prep,
                &x[ri.start * d..ri.end * d],
                &aux[ri.clone()],
                &x[rj.start * d..rj.end * d],
                &aux[rj],
                d,
                &mut t,
            );
            t
        })
        .collect();
    // Index of tile (i, j), j >= i, in `pairs`.
    let tile_index = |i: usize, j: usize| i * nb - i * i.saturating_sub(1) / 2 + (j - i);
    let mut out = vec![0.0f32; len];
    out.par_chunks_mut(TILE * n)
        .enumerate()
        .for_each(|(i, chunk)| {
            let ri = range(i);
            for j in 0..nb {
                let rj = range(j);
                let w = rj.len();
                if j >= i {
                    let t = &tiles[tile_index(i, j)];
                    for (r, src) in t.chunks_exact(w).enumerate() {
                        chunk[r * n + rj.start..r * n + rj.end].copy_from_slice(src);
                        if j == i {
                            // GEMM need not be bitwise symmetric: mirror the
                            // upper triangle of the diagonal tile.
                            for c in 0..r {
                                chunk[r * n + rj.start + c] = t[c * w + r];
                            }
                        }
                    }
                } else {
                    // Transpose of tile (j, i): rows of block j, columns of block i.
                    let t = &tiles[tile_index(j, i)];
                    let h = ri.len();
                    for (c, src) in t.chunks_exact(h).enumerate() {
                        for (r, &v) in src.iter().enumerate() {
                            chunk[r * n + rj.start + c] = v;
                        }
                    }
                }
            }
            for (r, g) in ri.enumerate() {
                chunk[r * n + g] = prep.diag(norms[g]);
            }
        });
    Ok(out)
}
