//! Forward-backward in log space for a linear chain: log-partition function,
//! position marginals and transition marginals.
//!
//! Scores use the layout of [`ChainScores`]. Outputs:
//! * `node`: `n × L`, `node[i * L + y] = P(yᵢ = y)`;
//! * `trans`: `L × L`, `trans[p * L + q] = Σᵢ P(yᵢ₋₁ = p, yᵢ = q)`, the expected
//!   number of `p → q` transitions **summed over positions** (what the
//!   gradient of shared transition weights needs);
//! * optionally `pair`: `(n−1) × L × L`, the per-position transition
//!   marginals `pair[((i−1) * L + p) * L + q] = P(yᵢ₋₁ = p, yᵢ = q)` for
//!   `i` in `1..n` (see [`forward_backward_pairwise`]).
//!
//! Every sum of exponentials subtracts its maximum first, so scores up to
//! ±1e4 (and beyond) neither overflow nor underflow to NaN.

use super::chain::ChainScores;
use crate::error::{check_count, try_resize, Result};

/// Reusable buffers of [`forward_backward`]: `α` and `β` tables (`n × L`)
/// and one row of length `L`.
#[derive(Debug, Clone, Default)]
pub struct ForwardBackwardWorkspace {
    alpha: Vec<f64>,
    beta: Vec<f64>,
    row: Vec<f64>,
}

impl ForwardBackwardWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }
}

/// `log Σᵢ exp(xᵢ)` over the values produced by `f(0..k)`, computed stably.
#[inline]
fn log_sum_exp(k: usize, f: impl Fn(usize) -> f64) -> f64 {
    let mut m = f64::NEG_INFINITY;
    for i in 0..k {
        m = m.max(f(i));
    }
    if m == f64::NEG_INFINITY {
        return m;
    }
    let mut s = 0.0;
    for i in 0..k {
        s += (f(i) - m).exp();
    }
    m + s.ln()
}

/// Runs forward-backward, fills `node` (`n × L`) and `trans` (`L × L`,
/// summed over positions), and returns `log Z`, the log of the sum of
/// `exp(score(y))` over all labellings.
///
/// # Complexity
/// O(n·L²) time (one `exp` per cell); the workspace holds O(n·L).
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::forward_backward::{forward_backward, ForwardBackwardWorkspace};
/// let em = [0.0, 0.0, 0.0, 0.0]; // n = 2, L = 2, all labellings score 0
/// let tr = [0.0; 4];
/// let c = ChainScores::new(&em, &tr, None, None, 2, 2).unwrap();
/// let (mut node, mut trans) = ([0.0; 4], [0.0; 4]);
/// let log_z = forward_backward(&c, &mut ForwardBackwardWorkspace::new(), &mut node, &mut trans).unwrap();
/// assert!((log_z - 4f64.ln()).abs() < 1e-12);
/// assert!(node.iter().all(|&p| (p - 0.5).abs() < 1e-12));
/// assert!(trans.iter().all(|&p| (p - 0.25).abs() < 1e-12));
/// ```
pub fn forward_backward(
    chain: &ChainScores<'_>,
    ws: &mut ForwardBackwardWorkspace,
    node: &mut [f64],
    trans: &mut [f64],
) -> Result<f64> {
    run(chain, ws, node, trans, None)
}

/// [`forward_backward`] that also fills `pair` (`(n−1) × L × L`) with the
/// per-position transition marginals `P(yᵢ₋₁ = p, yᵢ = q)` at
/// `pair[((i−1) * L + p) * L + q]`; `trans` is their sum over positions.
/// For `n = 1`, `pair` is empty.
///
/// # Complexity
/// O(n·L²) time, like [`forward_backward`].
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::forward_backward::{forward_backward_pairwise, ForwardBackwardWorkspace};
/// // n = 3, L = 2; staying put is worth much more than switching.
/// let em = [0.0; 6];
/// let tr = [20.0, 0.0, 0.0, 20.0];
/// let c = ChainScores::new(&em, &tr, None, None, 3, 2).unwrap();
/// let (mut node, mut trans, mut pair) = ([0.0; 6], [0.0; 4], [0.0; 8]);
/// let mut ws = ForwardBackwardWorkspace::new();
/// forward_backward_pairwise(&c, &mut ws, &mut node, &mut trans, &mut pair).unwrap();
/// assert!((pair[0] - 0.5).abs() < 1e-6 && pair[1] < 1e-6); // position 1: 0 → 0, 0 → 1
/// assert!((trans[0] - 1.0).abs() < 1e-6); // summed over both positions
/// ```
pub fn forward_backward_pairwise(
    chain: &ChainScores<'_>,
    ws: &mut ForwardBackwardWorkspace,
    node: &mut [f64],
    trans: &mut [f64],
    pair: &mut [f64],
) -> Result<f64> {
    let (n, l) = (chain.n, chain.l);
    let want = (n - 1) * l * l;
    check_count(
        "pairwise marginals",
        pair.len(),
        want,
        "elements",
        " ((n - 1) x L x L)",
    )?;
    run(chain, ws, node, trans, Some(pair))
}

/// The position marginals of [`forward_backward`] alone (`node`, `n × L`,
/// the same values bit for bit), without the transition marginals; returns
/// `log Z`.
///
/// # Complexity
/// O(n·L²) time (two thirds of the `exp` of [`forward_backward`]).
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::forward_backward::{forward_backward, forward_backward_nodes, ForwardBackwardWorkspace};
/// let em = [0.5, 0.0, 1.0, 0.25, 0.0, 2.0];
/// let tr = [1.0, -1.0, 0.0, 0.5];
/// let c = ChainScores::new(&em, &tr, None, None, 3, 2).unwrap();
/// let mut ws = ForwardBackwardWorkspace::new();
/// let (mut node, mut trans, mut alone) = ([0.0; 6], [0.0; 4], [0.0; 6]);
/// let z = forward_backward(&c, &mut ws, &mut node, &mut trans).unwrap();
/// assert_eq!(forward_backward_nodes(&c, &mut ws, &mut alone).unwrap(), z);
/// assert_eq!(alone, node);
/// ```
pub fn forward_backward_nodes(
    chain: &ChainScores<'_>,
    ws: &mut ForwardBackwardWorkspace,
    node: &mut [f64],
) -> Result<f64> {
    let (n, l) = (chain.n, chain.l);
    check_count("node marginals", node.len(), n * l, "elements", " (n x L)")?;
    nodes(chain, ws, node)
}

fn run(
    chain: &ChainScores<'_>,
    ws: &mut ForwardBackwardWorkspace,
    node: &mut [f64],
    trans: &mut [f64],
    mut pair: Option<&mut [f64]>,
) -> Result<f64> {
    let (n, l) = (chain.n, chain.l);
    check_count("node marginals", node.len(), n * l, "elements", " (n x L)")?;
    check_count(
        "transition marginals",
        trans.len(),
        l * l,
        "elements",
        " (L x L)",
    )?;
    let log_z = nodes(chain, ws, node)?;
    let (alpha, beta) = (&ws.alpha[..n * l], &ws.beta[..n * l]);
    let (em, tr) = (chain.em, chain.tr);
    trans.fill(0.0);
    for i in 1..n {
        for q in 0..l {
            let right = em[i * l + q] + beta[i * l + q] - log_z;
            for p in 0..l {
                let mu = (alpha[(i - 1) * l + p] + tr[p * l + q] + right).exp();
                trans[p * l + q] += mu;
                if let Some(pair) = pair.as_deref_mut() {
                    pair[((i - 1) * l + p) * l + q] = mu;
                }
            }
        }
    }
    Ok(log_z)
}

/// The forward and backward tables (in `ws`) and the position marginals
/// (`node`, whose length is checked); returns `log Z`.
fn nodes(
    chain: &ChainScores<'_>,
    ws: &mut ForwardBackwardWorkspace,
    node: &mut [f64],
) -> Result<f64> {
    let (n, l) = (chain.n, chain.l);
    try_resize("emissions", &mut ws.alpha, &[n, l], 0.0)?;
    try_resize("emissions", &mut ws.beta, &[n, l], 0.0)?;
    try_resize("transitions", &mut ws.row, &[l], 0.0)?;
    let alpha = &mut ws.alpha[..n * l];
    let beta = &mut ws.beta[..n * l];
    let row = &mut ws.row[..l];
    let (em, tr) = (chain.em, chain.tr);

    for y in 0..l {
        alpha[y] = em[y] + chain.start.map_or(0.0, |s| s[y]);
    }
    for i in 1..n {
        let (prev, cur) = alpha.split_at_mut(i * l);
        let prev = &prev[(i - 1) * l..];
        for y in 0..l {
            cur[y] = em[i * l + y] + log_sum_exp(l, |p| prev[p] + tr[p * l + y]);
        }
    }
    for y in 0..l {
        beta[(n - 1) * l + y] = chain.stop.map_or(0.0, |s| s[y]);
    }
    for i in (0..n - 1).rev() {
        // row[q] = em[i+1, q] + β[i+1, q]
        for q in 0..l {
            row[q] = em[(i + 1) * l + q] + beta[(i + 1) * l + q];
        }
        for y in 0..l {
            beta[i * l + y] = log_sum_exp(l, |q| tr[y * l + q] + row[q]);
        }
    }
    let last = &alpha[(n - 1) * l..];
    let log_z = log_sum_exp(l, |y| last[y] + chain.stop.map_or(0.0, |s| s[y]));

    for (k, p) in node.iter_mut().enumerate() {
        *p = (alpha[k] + beta[k] - log_z).exp();
    }
    Ok(log_z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_for_huge_scores() {
        let em = [1e4, -1e4, -1e4, 1e4, 1e4, 1e4];
        let tr = [1e4, -1e4, 0.0, 0.0];
        let c = ChainScores::new(&em, &tr, None, None, 3, 2).unwrap();
        let (mut node, mut trans) = ([0.0; 6], [0.0; 4]);
        let mut ws = ForwardBackwardWorkspace::new();
        let log_z = forward_backward(&c, &mut ws, &mut node, &mut trans).unwrap();
        assert!(log_z.is_finite());
        assert!(node.iter().chain(&trans).all(|p| p.is_finite()));
        assert!((node[0] - 1.0).abs() < 1e-12);
        let total: f64 = trans.iter().sum();
        assert!((total - 2.0).abs() < 1e-9);
        assert!(forward_backward(&c, &mut ws, &mut [0.0; 5], &mut trans).is_err());
    }
}
