//! The matrix-tree theorem for non-projective dependency trees (Koo et al.
//! 2007; Smith and Smith 2007): log-partition function and arc marginals,
//! with or without the single-root constraint.
//!
//! Scores use the layout of [`ArcScores`]. With arc weights
//! `A[h, m] = exp(s[h, m])`, the partition function `Z = Σ_trees Π A` is the
//! determinant of the `n × n` Laplacian over words `1..=n`:
//! `L[m, m] = Σ_{h ∈ 0..=n, h≠m} A[h, m]`, `L[h, m] = −A[h, m]`.
//!
//! # Accuracy
//! * Each column `m` is scaled by `exp(−max_h s[h, m])` (the scales are
//!   added back to `log Z`), and `L` is factorised by the subtraction-free
//!   elimination of [`super::lu`]: the root weights are the column excess,
//!   so every pivot and every entry of `L⁻¹` is a sum of non-negative terms
//!   with a small relative error. `log Z` is accurate to a few ulps times `n`
//!   however close the trees' scores are to cancelling (a plain LU loses
//!   all digits when a heavy cycle dominates, e.g. `s[1, 2] = 32`,
//!   `s[2, 1] = 16`).
//! * When the scaled weights of a column span more than `e^600` the same
//!   elimination runs on logarithms. Their absolute error `ε · range`
//!   becomes a relative error of the weights, so the range `max − min` of
//!   the scores is limited to `1e6` (scores of any magnitude with a smaller
//!   range are exact).
//! * Marginals: `μ[h, m] = A[h, m] (L⁻¹[m, m] − L⁻¹[m, h])`,
//!   `μ[0, m] = A[0, m] L⁻¹[m, m]`. The difference can cancel; its error is
//!   at most `ε · L⁻¹[m, m] Σ_h A[h, m]` for the relative error `ε` of the
//!   inverse. When that amplification exceeds `1e3` for some column, the
//!   marginals are computed without subtraction: `μ[h, m] = A[h, m] p[h, m]
//!   / (A[0, m] + Σ_h' A[h', m] p[h', m])`, where `p[h, m]` is the
//!   probability that following heads from `h` (each word `j` moving to head
//!   `i` with probability proportional to `A[i, j]`) reaches the root before
//!   `m`. All `n²` probabilities come from one divide-and-conquer state
//!   reduction (`reach_root`): the words of one half are eliminated (a
//!   subtraction-free factorisation and `n/2` solves), the reduced chain of
//!   the other half is solved recursively, and the eliminated words read
//!   their probabilities off their exit distributions. The cost is O(n³)
//!   in all (`T(n) = 2 T(n/2) + O(n³)`).
//! * Single root: `Z₁ = lim_{t→0} Z(t)/t` where `Z(t)` is the multi-root
//!   partition function with root weights multiplied by `t`. With
//!   `t = exp(−(D + ln n + 50))`, `D` the range of the arc scores, the trees
//!   with `k ≥ 2` root children weigh at most `e^−50` relative to `Z₁`
//!   (re-attaching a root child to another changes the weight by at most
//!   `e^D`), so `log Z₁ = log Z(t) − ln t` and the marginals are those of the
//!   multi-root model at `t`, both exact to `e^−50`.

use super::arcs::{for_each_arc, ArcScores};
use super::lu::{gth_factor, gth_inverse, gth_solve_left, Domain, Linear, Log};
use crate::error::{check_count, try_resize, try_vec, OmklError, Result};

/// Columns whose scaled weights span at most `e^LINEAR_SPREAD` are handled
/// in plain `f64`: every entry of the elimination then stays within
/// `[e^−600, n]`, so an addend that underflows is below `1e−47` of the entry
/// it is added to.
const LINEAR_SPREAD: f64 = 600.0;

/// Largest error amplification `L⁻¹[m, m] Σ_h A[h, m]` accepted for the
/// marginals read off the inverse.
const MAX_AMPLIFICATION: f64 = 1e3;

/// Largest range `max − min` of the arc scores: beyond `e^600` the weights
/// are handled as logarithms, whose absolute error `ε · range` becomes the
/// relative error of every weight (`2e−10` at this bound).
const MAX_RANGE: f64 = 1e6;

/// `−ln t − D − ln n` of the single-root limit (see the module docs).
const SINGLE_ROOT_MARGIN: f64 = 50.0;

/// Reusable buffers of [`matrix_tree`]: three `n × n` matrices and O(n).
#[derive(Debug, Clone, Default)]
pub struct MatrixTreeWorkspace {
    weights: Vec<f64>,
    lap: Vec<f64>,
    inv: Vec<f64>,
    excess: Vec<f64>,
    piv: Vec<f64>,
    shift: Vec<f64>,
}

impl MatrixTreeWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }

    fn grow(&mut self, n: usize) -> Result<()> {
        try_resize("scores", &mut self.weights, &[n + 1, n + 1], 0.0)?;
        try_resize("matrix-tree workspace", &mut self.lap, &[n, n], 0.0)?;
        try_resize("matrix-tree workspace", &mut self.inv, &[n, n], 0.0)?;
        for v in [&mut self.excess, &mut self.piv, &mut self.shift] {
            try_resize("matrix-tree workspace", v, &[n], 0.0)?;
        }
        Ok(())
    }
}

/// Computes `log Z` over all trees rooted at 0 (with `single_root`, trees
/// where the root has exactly one child) and writes the arc marginals into
/// `marginals` (`(n+1) × (n+1)`, `marginals[h * (n+1) + m] = P(h → m)`;
/// column 0 and the diagonal are 0). Each column `m ≥ 1` sums to 1.
///
/// Errors if the range of the scores (`max − min`) exceeds `1e6` (the
/// logarithms of the weights would carry absolute errors above `2e−10`) or
/// `log Z` is not a finite `f64`.
///
/// # Complexity
/// O(n³) time, O(n²) memory, with or without `single_root`.
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
    check_count(
        "marginals",
        marginals.len(),
        side * side,
        "elements",
        " ((n+1) x (n+1))",
    )?;
    ws.grow(n)?;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for_each_arc(n, |h, m| {
        lo = lo.min(arcs.arc(h, m));
        hi = hi.max(arcs.arc(h, m));
    });
    let range = hi - lo;
    if !range.is_finite() || range > MAX_RANGE {
        return Err(OmklError::invalid(
            "scores",
            format!(
                "the arc scores range from {lo:e} to {hi:e}; a range above {MAX_RANGE:e} \
                 leaves the marginals no precision in float64; scale the scores down"
            ),
        ));
    }
    let shifted = Shifted {
        arcs,
        root_offset: if single_root && n > 1 {
            range + (n as f64).ln() + SINGLE_ROOT_MARGIN
        } else {
            0.0
        },
    };
    let shift = &mut ws.shift[..n];
    let mut spread: f64 = 0.0;
    for m in 1..side {
        let (mut mx, mut mn) = (f64::NEG_INFINITY, f64::INFINITY);
        for h in 0..side {
            if h != m {
                let v = shifted.score(h, m);
                mx = mx.max(v);
                mn = mn.min(v);
            }
        }
        shift[m - 1] = mx;
        spread = spread.max(mx - mn);
    }
    let log_det = if spread <= LINEAR_SPREAD {
        solve::<Linear>(&shifted, ws, marginals)?
    } else {
        solve::<Log>(&shifted, ws, marginals)?
    };
    let log_z = log_det + ws.shift[..n].iter().sum::<f64>() + shifted.root_offset;
    if !log_z.is_finite() {
        return Err(OmklError::invalid(
            "scores",
            format!("log Z = {log_z} is not a finite f64; scale the scores down"),
        ));
    }
    Ok(log_z)
}

/// The arc scores with the root arcs lowered by `root_offset` (0 without a
/// single-root constraint).
struct Shifted<'a> {
    arcs: &'a ArcScores<'a>,
    root_offset: f64,
}

impl Shifted<'_> {
    /// Score of arc `h → m`, with the root arcs lowered by `root_offset`.
    #[inline]
    fn score(&self, h: usize, m: usize) -> f64 {
        if h == 0 {
            self.arcs.arc(0, m) - self.root_offset
        } else {
            self.arcs.arc(h, m)
        }
    }
}

/// Factorises the scaled Laplacian in domain `D`, writes the marginals and
/// returns `log det`.
fn solve<D: Domain>(
    shifted: &Shifted<'_>,
    ws: &mut MatrixTreeWorkspace,
    marginals: &mut [f64],
) -> Result<f64> {
    let n = shifted.arcs.n;
    let side = n + 1;
    let shift = &ws.shift[..n];
    let weights = &mut ws.weights[..side * side];
    for_each_arc(n, |h, m| {
        weights[h * side + m] = D::from_ln(shifted.score(h, m) - shift[m - 1]);
    });
    let weights = &ws.weights[..side * side];
    let w = |h: usize, m: usize| weights[h * side + m];
    let lap = &mut ws.lap[..n * n];
    let excess = &mut ws.excess[..n];
    for h in 1..side {
        for m in 1..side {
            lap[(h - 1) * n + (m - 1)] = if h == m { D::ZERO } else { w(h, m) };
        }
    }
    for m in 1..side {
        excess[m - 1] = w(0, m);
    }
    let piv = &mut ws.piv[..n];
    let log_det = gth_factor::<D>(lap, excess, piv, n, "scores")?;
    let inv = &mut ws.inv[..n * n];
    marginals.fill(0.0);
    // With a single root the amplification is about 1/t: every column takes
    // the subtraction-free path, and the inverse is not needed.
    if shifted.root_offset == 0.0 {
        gth_inverse::<D>(lap, piv, n, inv);
        let limit = MAX_AMPLIFICATION.ln();
        let mut exact = true;
        for m in 1..side {
            let im = m - 1;
            let gmm = inv[im * n + im];
            let mut in_words = D::ZERO;
            for h in (1..side).filter(|&h| h != m) {
                in_words = D::add(in_words, w(h, m));
            }
            if D::ln(D::mul(gmm, in_words)) > limit {
                exact = false;
                break;
            }
            marginals[m] = D::value(D::mul(w(0, m), gmm));
            for h in (1..side).filter(|&h| h != m) {
                let d = D::sub_clamped(gmm, inv[im * n + h - 1]);
                marginals[h * side + m] = D::value(D::mul(w(h, m), d));
            }
        }
        if exact {
            return Ok(log_det);
        }
    }
    // p[h, m] (words as 0..n) into `inv`, from the words' weights.
    let mut net = try_vec("matrix-tree workspace", &[n, n], D::ZERO)?;
    let mut root = try_vec("matrix-tree workspace", &[n], D::ZERO)?;
    for j in 0..n {
        root[j] = w(0, j + 1);
        for i in (0..n).filter(|&i| i != j) {
            net[i * n + j] = w(i + 1, j + 1);
        }
    }
    let ids: Vec<usize> = (0..n).collect();
    reach_root::<D>(&ids, &net, &root, n, inv)?;
    for m in 1..side {
        let mut denom = w(0, m);
        for h in (1..side).filter(|&h| h != m) {
            denom = D::add(denom, D::mul(w(h, m), inv[(h - 1) * n + m - 1]));
        }
        marginals[m] = D::value(D::div(w(0, m), denom));
        for h in (1..side).filter(|&h| h != m) {
            let p = inv[(h - 1) * n + m - 1];
            marginals[h * side + m] = D::value(D::div(D::mul(w(h, m), p), denom));
        }
    }
    Ok(log_det)
}

/// Writes `p[h, m]` into `out[ids[h] * stride + ids[m]]` for every pair
/// `h ≠ m` of the `k = ids.len()` states of a chain: the probability that
/// the walk started at `h` is absorbed by the root before it visits `m`.
/// State `j` moves to state `i` with weight `net[i * k + j]` and to the root
/// with weight `root[j]` (all in domain `D`, the diagonal of `net` ignored).
///
/// Divide and conquer over the states: for each half `T` (the other half
/// `R`), the walk is watched only on `T`: `R` is eliminated with one
/// [`gth_factor`] and the exit distributions `H[x][h]` (the probability that
/// the walk from `h ∈ R` first leaves `R` at `x ∈ T` or at the root) come
/// from `|T| + 1` solves. The chain watched on `T` has weights
/// `net[i, j] + Σ_r net[r, j] H[i][r]` and is solved recursively; then
/// `p[h, m] = H[root][h] + Σ_{x ∈ T, x ≠ m} H[x][h] p[x, m]` for `h ∈ R`.
/// Only non-negative terms are added.
///
/// # Complexity
/// O(k³) time, O(k²) memory.
fn reach_root<D: Domain>(
    ids: &[usize],
    net: &[f64],
    root: &[f64],
    stride: usize,
    out: &mut [f64],
) -> Result<()> {
    let k = ids.len();
    if k < 2 {
        return Ok(());
    }
    let what = "matrix-tree workspace";
    let half = k / 2;
    for (t_range, r_range) in [(0..half, half..k), (half..k, 0..half)] {
        let tset: Vec<usize> = t_range.collect();
        let rset: Vec<usize> = r_range.collect();
        let (t, r) = (tset.len(), rset.len());
        // R's sub-chain: leaving R (to T or the root) is its excess.
        let mut lu = try_vec(what, &[r, r], D::ZERO)?;
        let mut exc = try_vec(what, &[r], D::ZERO)?;
        let mut piv = try_vec(what, &[r], D::ZERO)?;
        for (b, &j) in rset.iter().enumerate() {
            let mut e = root[j];
            for &i in &tset {
                e = D::add(e, net[i * k + j]);
            }
            exc[b] = e;
            for (a, &i) in rset.iter().enumerate() {
                if a != b {
                    lu[a * r + b] = net[i * k + j];
                }
            }
        }
        gth_factor::<D>(&mut lu, &mut exc, &mut piv, r, "scores")?;
        // Row x of `exit`: the probabilities of leaving R at T[x] (x < t) or
        // at the root (x = t), from each state of R.
        let mut exit = try_vec(what, &[t + 1, r], D::ZERO)?;
        for (x, row) in exit.chunks_exact_mut(r).enumerate() {
            for (b, &j) in rset.iter().enumerate() {
                row[b] = if x < t { net[tset[x] * k + j] } else { root[j] };
            }
            gth_solve_left::<D>(&lu, &piv, r, row);
        }
        // The chain watched on T: column j gathers its weights into R once.
        let mut sub_net = try_vec(what, &[t, t], D::ZERO)?;
        let mut sub_root = try_vec(what, &[t], D::ZERO)?;
        let mut col = try_vec(what, &[r], D::ZERO)?;
        for (b, &j) in tset.iter().enumerate() {
            for (c, &q) in rset.iter().enumerate() {
                col[c] = net[q * k + j];
            }
            let via_r = |row: &[f64]| {
                row.iter()
                    .zip(&col)
                    .fold(D::ZERO, |acc, (&x, &y)| D::add(acc, D::mul(x, y)))
            };
            for (a, &i) in tset.iter().enumerate().filter(|&(a, _)| a != b) {
                sub_net[a * t + b] = D::add(net[i * k + j], via_r(&exit[a * r..(a + 1) * r]));
            }
            sub_root[b] = D::add(root[j], via_r(&exit[t * r..]));
        }
        let sub_ids: Vec<usize> = tset.iter().map(|&i| ids[i]).collect();
        reach_root::<D>(&sub_ids, &sub_net, &sub_root, stride, out)?;
        // p[h, m] for h in R, accumulated over the exits x (rows of `exit`).
        for &m in &tset {
            let gm = ids[m];
            col.copy_from_slice(&exit[t * r..]);
            for (x, &i) in tset.iter().enumerate().filter(|&(_, &i)| i != m) {
                let p = out[ids[i] * stride + gm];
                for (v, &e) in col.iter_mut().zip(&exit[x * r..(x + 1) * r]) {
                    *v = D::add(*v, D::mul(e, p));
                }
            }
            for (c, &h) in rset.iter().enumerate() {
                out[ids[h] * stride + gm] = col[c];
            }
        }
    }
    Ok(())
}
