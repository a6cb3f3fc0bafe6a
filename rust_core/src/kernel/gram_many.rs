//! Several Gram matrices of the same inputs from one shared GEMM.
//!
//! Every kernel of [`Kernel`] is a function of `⟨x, y⟩`, `‖x‖²` and `‖y‖²`,
//! so the inner products, the dominant O(n m d) cost, are computed once per
//! tile and mapped to each kernel while the tile is in cache (see
//! `super::tiles`). Each output equals, bit for bit, what [`super::gram()`]
//! (or [`super::gram_symmetric`]) returns for that kernel alone.

use super::gram::{check_matrix, job};
use super::tiles::{fill_rect, fill_symmetric};
use super::Kernel;
use crate::error::{alloc_len, try_vec, OmklError, Result};

fn check_kernels(kernels: &[Kernel]) -> Result<()> {
    if kernels.is_empty() {
        return Err(OmklError::empty("kernels"));
    }
    kernels.iter().try_for_each(Kernel::check)
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
    check_kernels(kernels)?;
    check_matrix("X", x, nx, d)?;
    check_matrix("Y", y, ny, d)?;
    let mut outs = outputs("Y", kernels.len(), nx, ny)?;
    let (job, _) = job(kernels, x, nx, Some((y, ny)), d);
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
    check_kernels(kernels)?;
    check_matrix("X", x, n, d)?;
    let mut outs = outputs("X", kernels.len(), n, n)?;
    let (job, norms) = job(kernels, x, n, None, d);
    let diag: Vec<Vec<f32>> = job
        .kernels
        .iter()
        .map(|m| norms.iter().map(|&v| m.prep.diag(v)).collect())
        .collect();
    let mut views: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    fill_symmetric(&job, &diag, &mut views);
    Ok(outs)
}

/// `count` zeroed `rows × cols` outputs, refused by name (`name`) when
/// their total size cannot be allocated.
fn outputs(name: &str, count: usize, rows: usize, cols: usize) -> Result<Vec<Vec<f32>>> {
    alloc_len(name, &[count, rows, cols], 4)?;
    (0..count)
        .map(|_| try_vec(name, &[rows, cols], 0.0f32))
        .collect()
}
