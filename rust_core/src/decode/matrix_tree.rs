//! The matrix-tree theorem for non-projective dependency trees (Koo et al.
//! 2007; Smith and Smith 2007): log-partition function and arc marginals,
//! with or without the single-root constraint.
//!
//! Scores use the layout of [`ArcScores`]. With arc weights
//! `A[h, m] = exp(s[h, m])`, the partition function `Z = Σ_trees Π A` is the
//! determinant of the `n × n` Laplacian over words `1..=n`:
//! * multi-root: `L[m, m] = Σ_{h ∈ 0..=n, h≠m} A[h, m]`, `L[h, m] = −A[h, m]`;
//! * single-root: as above without the root in the diagonal, and the first
//!   row replaced by the root weights `A[0, m]`.
//!
//! Column `m` of either matrix holds only weights `A[·, m]`, so each column
//! is scaled by `exp(−max_h s[h, m])` before the LU factorisation (with
//! partial pivoting) and the scales are added back to `log Z`: no overflow
//! for scores up to ±1e4 and beyond. Marginals are `μ[h, m] = A[h, m] ·
//! ∂ log Z / ∂A[h, m]`, read off the inverse.

use super::arcs::ArcScores;
use super::lu::{lu_factor, lu_inverse};
use crate::error::{OmklError, Result};

/// Reusable buffers of [`matrix_tree`]: two `n × n` matrices and O(n).
#[derive(Debug, Clone, Default)]
pub struct MatrixTreeWorkspace {
    lap: Vec<f64>,
    inv: Vec<f64>,
    piv: Vec<usize>,
    shift: Vec<f64>,
}

impl MatrixTreeWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Computes `log Z` over all trees rooted at 0 (with `single_root`, trees
/// where the root has exactly one child) and writes the arc marginals into
/// `marginals` (`(n+1) × (n+1)`, `marginals[h * (n+1) + m] = P(h → m)`;
/// column 0 and the diagonal are 0). Each column `m ≥ 1` sums to 1.
///
/// # Complexity
/// O(n³) time, O(n²) memory.
///
/// # Example
/// ```
/// use omkl_core::decode::arcs::ArcScores;
/// use omkl_core::decode::matrix_tree::{matrix_tree, MatrixTreeWorkspace};
/// // n = 2 with zero scores: three trees (0→1→2, 0→2→1, 0→1 & 0→2).
/// let s = [0.0; 9];
/// let a = ArcScores::new(&s, 2).unwrap();
/// let mut mu = [0.0; 9];
/// let log_z = matrix_tree(&a, false, &mut MatrixTreeWorkspace::new(), &mut mu).unwrap();
/// assert!((log_z - 3f64.ln()).abs() < 1e-12);
/// assert!((mu[1] - 2.0 / 3.0).abs() < 1e-12); // P(0 → 1)
/// ```
pub fn matrix_tree(
    arcs: &ArcScores<'_>,
    single_root: bool,
    ws: &mut MatrixTreeWorkspace,
    marginals: &mut [f64],
) -> Result<f64> {
    let n = arcs.n;
    let side = n + 1;
    if marginals.len() != side * side {
        return Err(OmklError::shape(
            "marginals",
            format!("{} elements ((n+1) x (n+1))", side * side),
            format!("{} elements", marginals.len()),
        ));
    }
    if ws.lap.len() < n * n {
        ws.lap.resize(n * n, 0.0);
        ws.inv.resize(n * n, 0.0);
    }
    if ws.piv.len() < n {
        ws.piv.resize(n, 0);
        ws.shift.resize(n, 0.0);
    }
    let lap = &mut ws.lap[..n * n];
    let inv = &mut ws.inv[..n * n];
    let piv = &mut ws.piv[..n];
    let shift = &mut ws.shift[..n];
    // Scaled weight of arc h → m (word indices 1-based, matrix 0-based).
    for m in 1..side {
        let mut mx = f64::NEG_INFINITY;
        for h in 0..side {
            if h != m {
                mx = mx.max(arcs.arc(h, m));
            }
        }
        shift[m - 1] = mx;
    }
    let w = |h: usize, m: usize| (arcs.arc(h, m) - shift[m - 1]).exp();
    lap.fill(0.0);
    for m in 1..side {
        let mut diag = 0.0;
        for h in 1..side {
            if h != m {
                let a = w(h, m);
                lap[(h - 1) * n + (m - 1)] = -a;
                diag += a;
            }
        }
        if !single_root {
            diag += w(0, m);
        }
        lap[(m - 1) * n + (m - 1)] = diag;
    }
    if single_root {
        for m in 1..side {
            lap[m - 1] = w(0, m);
        }
    }
    let (sign, log_abs) = lu_factor(lap, n, piv)?;
    if sign < 0.0 {
        return Err(OmklError::invalid(
            "scores",
            "the Laplacian determinant is negative (numerically inaccurate)",
        ));
    }
    let log_z = log_abs + shift.iter().sum::<f64>();
    lu_inverse(lap, n, piv, inv);
    // ∂ log det / ∂ L[i, j] = inv[j, i]; word m is matrix index m - 1.
    marginals.fill(0.0);
    let first = |i: usize| single_root && i == 1;
    for m in 1..side {
        let im = m - 1;
        let root = if single_root {
            inv[im * n]
        } else {
            inv[im * n + im]
        };
        marginals[m] = w(0, m) * root;
        for h in 1..side {
            if h == m {
                continue;
            }
            let d = if first(m) { 0.0 } else { inv[im * n + im] };
            let o = if first(h) { 0.0 } else { inv[im * n + h - 1] };
            marginals[h * side + m] = w(h, m) * (d - o);
        }
    }
    Ok(log_z)
}
