//! Viterbi decoding of a linear chain, plain and loss-augmented (Hamming).
//!
//! Scores use the layout of [`ChainScores`]: emissions `em[i * L + y]`,
//! transitions `tr[prev * L + next]`, optional `start[y]` and `stop[y]`.
//! Decoders write the best labelling into a caller-provided `out` buffer of
//! length `n` and return its score. A reused [`ViterbiWorkspace`] makes a call
//! allocation-free.

use super::chain::ChainScores;
use crate::error::{check_count, check_nonneg, try_resize, OmklError, Result};

/// Reusable buffers of [`viterbi`]: two score rows of length `L` and the
/// `n × L` back-pointer table. Buffers grow to the largest problem seen and
/// are never shrunk, so reusing one workspace in a loop allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct ViterbiWorkspace {
    delta: Vec<f64>,
    best: Vec<f64>,
    arg: Vec<f64>,
    back: Vec<u32>,
    /// For [`BOUNDED_LABELS`] labels or more: the largest transition into
    /// each label, the previous labels visited and the unsettled labels.
    col_max: Vec<f64>,
    visited: Vec<u32>,
    active: Vec<u32>,
}

/// From this many labels on, a max-plus step visits the previous labels in
/// decreasing order of score and stops for each label once no later one can
/// reach its best (`max_plus_bounded`): the same result, in far fewer
/// steps when a few labels lead.
pub const BOUNDED_LABELS: usize = 40;

impl ViterbiWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// A workspace already sized for chains of `n` positions and `l` labels,
    /// or [`OmklError::Alloc`] if that does not fit in memory.
    pub fn with_capacity(n: usize, l: usize) -> Result<Self> {
        let mut ws = Self::default();
        ws.reserve(n, l)?;
        Ok(ws)
    }

    #[inline]
    fn reserve(&mut self, n: usize, l: usize) -> Result<()> {
        // the common case: a workspace already grown for this size
        let fits = |v: &Vec<f64>| v.len() >= l;
        if fits(&self.delta)
            && fits(&self.best)
            && fits(&self.arg)
            && n.checked_mul(l).is_some_and(|nl| self.back.len() >= nl)
        {
            return Ok(());
        }
        let what = "Viterbi workspace";
        for v in [&mut self.delta, &mut self.best, &mut self.arg] {
            try_resize(what, v, &[l], 0.0)?;
        }
        try_resize(what, &mut self.back, &[n, l], 0)
    }
}

fn check_out(chain: &ChainScores<'_>, out: &[usize]) -> Result<()> {
    check_count("out", out.len(), chain.n, "elements", "")?;
    if chain.l > u32::MAX as usize {
        return Err(OmklError::invalid("labels", "more than 2^32 - 1 labels"));
    }
    Ok(())
}

/// The highest-scoring labelling of a chain, written into `out` (length `n`);
/// returns its score. Ties are broken towards smaller labels.
///
/// # Complexity
/// O(n·L²) time; the workspace holds O(n·L) back-pointers.
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::viterbi::{viterbi, ViterbiWorkspace};
/// // n = 3 positions, L = 2 labels; transitions reward staying put.
/// let em = [2.0, 0.0, 0.0, 0.5, 0.0, 0.5];
/// let tr = [1.0, 0.0, 0.0, 1.0];
/// let chain = ChainScores::new(&em, &tr, None, None, 3, 2).unwrap();
/// let mut ws = ViterbiWorkspace::new();
/// let mut out = [0; 3];
/// let score = viterbi(&chain, &mut ws, &mut out).unwrap();
/// assert_eq!(out, [0, 0, 0]);
/// assert_eq!(score, 4.0);
/// ```
pub fn viterbi(
    chain: &ChainScores<'_>,
    ws: &mut ViterbiWorkspace,
    out: &mut [usize],
) -> Result<f64> {
    check_out(chain, out)?;
    run(chain, None, ws, out, |_, row| row)
}

/// The largest transition into each label, `col_max[y] = max_p tr[p, y]`
/// of the `L × L` transitions `tr`: what [`viterbi_with_column_max`] reads
/// (computed once for chains that share their transitions).
///
/// # Complexity
/// O(L²).
pub fn column_maxima(tr: &[f64], l: usize) -> Vec<f64> {
    let mut col_max = vec![0.0; l];
    if l > 0 {
        column_max(tr, l, &mut col_max);
    }
    col_max
}

/// [`viterbi`] given the [`column_maxima`] of `chain.tr` (`col_max`, `L`
/// values), which it would compute otherwise: the same labelling and
/// score, with no O(L²) step per call beyond the max-plus steps.
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::viterbi::{column_maxima, viterbi, viterbi_with_column_max, ViterbiWorkspace};
/// let (n, l) = (4, 50);
/// let em: Vec<f64> = (0..n * l).map(|k| ((k * 37) % 11) as f64).collect();
/// let tr: Vec<f64> = (0..l * l).map(|k| ((k * 13) % 7) as f64 - 3.0).collect();
/// let chain = ChainScores::new(&em, &tr, None, None, n, l).unwrap();
/// let mut ws = ViterbiWorkspace::new();
/// let (mut a, mut b) = (vec![0; n], vec![0; n]);
/// let s = viterbi(&chain, &mut ws, &mut a).unwrap();
/// let t = viterbi_with_column_max(&chain, &column_maxima(&tr, l), &mut ws, &mut b).unwrap();
/// assert_eq!((a, s), (b, t));
/// ```
pub fn viterbi_with_column_max(
    chain: &ChainScores<'_>,
    col_max: &[f64],
    ws: &mut ViterbiWorkspace,
    out: &mut [usize],
) -> Result<f64> {
    check_out(chain, out)?;
    check_count("col_max", col_max.len(), chain.l, "elements", "")?;
    run(chain, Some(col_max), ws, out, |_, row| row)
}

/// Loss-augmented Viterbi: maximises `score(y) + cost · #{i : yᵢ ≠ goldᵢ}`
/// (Hamming cost), writes the maximiser into `out` and returns that
/// augmented value. The scores are not copied: the cost is added on the fly.
/// The plain score of the result is `chain.score_of(out)`.
///
/// # Complexity
/// O(n·L²), like [`viterbi`].
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::viterbi::{viterbi_hamming, ViterbiWorkspace};
/// let em = [1.0, 0.0]; // n = 1, L = 2
/// let tr = [0.0; 4];
/// let chain = ChainScores::new(&em, &tr, None, None, 1, 2).unwrap();
/// let mut out = [0];
/// let v = viterbi_hamming(&chain, &[0], 2.0, &mut ViterbiWorkspace::new(), &mut out).unwrap();
/// assert_eq!((out[0], v), (1, 2.0));
/// ```
pub fn viterbi_hamming(
    chain: &ChainScores<'_>,
    gold: &[usize],
    cost: f64,
    ws: &mut ViterbiWorkspace,
    out: &mut [usize],
) -> Result<f64> {
    viterbi_hamming_with_column_max(chain, gold, cost, None, ws, out)
}

/// [`viterbi_hamming`], given the [`column_maxima`] of `chain.tr`
/// (`L` values, exact) when `col_max` is `Some`.
pub(crate) fn viterbi_hamming_with_column_max(
    chain: &ChainScores<'_>,
    gold: &[usize],
    cost: f64,
    col_max: Option<&[f64]>,
    ws: &mut ViterbiWorkspace,
    out: &mut [usize],
) -> Result<f64> {
    check_out(chain, out)?;
    chain.check_labels("gold", gold)?;
    check_nonneg("cost", cost)?;
    if let Some(c) = col_max {
        check_count("col_max", c.len(), chain.l, "elements", "")?;
    }
    run(chain, col_max, ws, out, |i, row| {
        for (y, v) in row.iter_mut().enumerate() {
            if y != gold[i] {
                *v += cost;
            }
        }
        row
    })
}

/// The Viterbi recursion. `augment(i, row)` adds a per-position cost to the
/// row of scores at position `i` (after the emission was added). The
/// column maxima of the transitions are `known_col_max` when given, else
/// computed.
#[inline]
fn run<F>(
    chain: &ChainScores<'_>,
    known_col_max: Option<&[f64]>,
    ws: &mut ViterbiWorkspace,
    out: &mut [usize],
    augment: F,
) -> Result<f64>
where
    F: Fn(usize, &mut [f64]) -> &mut [f64],
{
    let (n, l) = (chain.n, chain.l);
    ws.reserve(n, l)?;
    let delta = &mut ws.delta[..l];
    let best = &mut ws.best[..l];
    let arg = &mut ws.arg[..l];
    let back = &mut ws.back[..n * l];
    let em = chain.em;
    let tr = chain.tr;
    let bounded = l >= BOUNDED_LABELS && n > 1;
    if bounded {
        let what = "Viterbi workspace";
        try_resize(what, &mut ws.col_max, &[l], 0.0)?;
        try_resize(what, &mut ws.visited, &[l], 0)?;
        try_resize(what, &mut ws.active, &[l], 0)?;
        match known_col_max {
            Some(known) => ws.col_max[..l].copy_from_slice(&known[..l]),
            None => column_max(tr, l, &mut ws.col_max[..l]),
        }
    }
    let (col_max, visited, active) = (&ws.col_max, &mut ws.visited, &mut ws.active);

    // Position 0.
    delta.copy_from_slice(&em[..l]);
    if let Some(st) = chain.start {
        for (d, s) in delta.iter_mut().zip(st) {
            *d += s;
        }
    }
    augment(0, delta);

    for i in 1..n {
        if bounded {
            max_plus_bounded(delta, tr, &col_max[..l], best, arg, visited, active);
        } else {
            max_plus(delta, tr, best, arg);
        }
        for (bk, a) in back[i * l..(i + 1) * l].iter_mut().zip(arg.iter()) {
            *bk = *a as u32;
        }
        let erow = &em[i * l..(i + 1) * l];
        for ((d, b), e) in delta.iter_mut().zip(best.iter()).zip(erow) {
            *d = b + e;
        }
        augment(i, delta);
    }

    if let Some(st) = chain.stop {
        for (d, s) in delta.iter_mut().zip(st) {
            *d += s;
        }
    }
    let mut y = 0;
    let mut score = delta[0];
    for (k, &v) in delta.iter().enumerate().skip(1) {
        if v > score {
            score = v;
            y = k;
        }
    }
    out[n - 1] = y;
    for i in (1..n).rev() {
        y = back[i * l + y] as usize;
        out[i - 1] = y;
    }
    Ok(score)
}

/// `col_max[y] = max_p tr[p, y]` of an `L × L` matrix.
fn column_max(tr: &[f64], l: usize, col_max: &mut [f64]) {
    col_max.copy_from_slice(&tr[..l]);
    for row in tr[..l * l].chunks_exact(l).skip(1) {
        for (c, &t) in col_max.iter_mut().zip(row) {
            *c = c.max(t);
        }
    }
}

/// [`max_plus`] that visits the previous labels `p` by decreasing
/// `delta[p]` (smaller label first on a tie) and stops for label `y` once
/// `delta[p] + col_max[y] < best[y]`: no later `p` can then reach or tie
/// `best[y]` (rounding is monotone), so that the scores and the first
/// arg-maxes are exactly those of [`max_plus`]. `visited` and `active` hold
/// `L` values (overwritten).
///
/// # Complexity
/// O(L log L) to sort, plus one step per (label, previous label) visited:
/// O(L²) at worst, O(L) when one previous label leads every label by more
/// than the spread of the transitions.
fn max_plus_bounded(
    delta: &[f64],
    tr: &[f64],
    col_max: &[f64],
    best: &mut [f64],
    arg: &mut [f64],
    visited: &mut [u32],
    active: &mut [u32],
) {
    let l = delta.len();
    // visited[p] = 1 once p is visited
    visited.fill(0);
    best.fill(f64::NEG_INFINITY);
    arg.fill(0.0);
    for (k, a) in active.iter_mut().enumerate() {
        *a = k as u32;
    }
    let mut n_active = l;
    let mut lead = leading_two(delta, visited);
    while let Some((p, next)) = lead {
        if n_active == 0 {
            break;
        }
        let d = delta[p];
        let row = &tr[p * l..(p + 1) * l];
        let pp = p as f64;
        let mut kept = 0;
        for k in 0..n_active {
            let y = active[k] as usize;
            let v = d + row[y];
            if v > best[y] || (v == best[y] && pp < arg[y]) {
                best[y] = v;
                arg[y] = pp;
            }
            // settled when no later previous label can reach or tie best[y]
            if next.is_some_and(|dn| dn + col_max[y] >= best[y]) {
                active[kept] = y as u32;
                kept += 1;
            }
        }
        n_active = kept;
        visited[p] = 1;
        lead = if next.is_some() {
            leading_two(delta, visited)
        } else {
            None
        };
    }
}

/// The unvisited label of largest score (the smaller label on a tie) and
/// the largest score of the other unvisited labels (`None` when none is
/// left), or `None` when every label is visited (`visited[p] != 0`).
fn leading_two(delta: &[f64], visited: &[u32]) -> Option<(usize, Option<f64>)> {
    let mut first: Option<usize> = None;
    let mut second: Option<f64> = None;
    for (p, (&d, &v)) in delta.iter().zip(visited).enumerate() {
        if v != 0 {
            continue;
        }
        match first {
            Some(f) if d <= delta[f] => {
                if second.is_none_or(|s| d > s) {
                    second = Some(d);
                }
            }
            _ => {
                if let Some(f) = first {
                    second = Some(delta[f]);
                }
                first = Some(p);
            }
        }
    }
    first.map(|f| (f, second))
}

/// `best[y] = max_p delta[p] + tr[p, y]` and `arg[y]` its first arg-max,
/// iterating `p` outermost so that the inner loop runs over contiguous rows
/// of `tr` and vectorises (the arg-max is kept as f64 so that both selects
/// share one mask). Uses AVX2 when the CPU has it.
#[inline]
fn max_plus(delta: &[f64], tr: &[f64], best: &mut [f64], arg: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        let l = delta.len();
        if l <= 32
            && tr.len() >= l * l
            && best.len() == l
            && arg.len() == l
            && std::arch::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU supports AVX-512F, checked just above, and the
            // slice lengths are those `max_plus_avx512` requires.
            unsafe {
                match l.div_ceil(8) {
                    1 => max_plus_avx512::<1>(delta, tr, best, arg),
                    2 => max_plus_avx512::<2>(delta, tr, best, arg),
                    3 => max_plus_avx512::<3>(delta, tr, best, arg),
                    _ => max_plus_avx512::<4>(delta, tr, best, arg),
                }
            }
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { max_plus_avx2(delta, tr, best, arg) };
            return;
        }
    }
    max_plus_body(delta, tr, best, arg);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_plus_avx2(delta: &[f64], tr: &[f64], best: &mut [f64], arg: &mut [f64]) {
    max_plus_body(delta, tr, best, arg);
}

/// [`max_plus_body`] for `L ≤ 8 NC` labels held in `NC` AVX-512 registers
/// (best scores and arg-maxes), rows of `tr` read with masked loads: the
/// same additions and comparisons, so the same results.
///
/// # Safety
/// The CPU must support AVX-512F; `8 (NC - 1) < L = delta.len() ≤ 8 NC`,
/// `tr.len() ≥ L²` and `best`, `arg` hold `L` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max_plus_avx512<const NC: usize>(
    delta: &[f64],
    tr: &[f64],
    best: &mut [f64],
    arg: &mut [f64],
) {
    use std::arch::x86_64::*;
    let l = delta.len();
    let mut masks = [0xffu8; NC];
    masks[NC - 1] = (0xffu32 >> (8 * NC - l)) as u8;
    let mut b = [_mm512_setzero_pd(); NC];
    let mut a = [_mm512_setzero_pd(); NC];
    let d0 = _mm512_set1_pd(delta[0]);
    for c in 0..NC {
        let t = _mm512_maskz_loadu_pd(masks[c], tr.as_ptr().add(8 * c));
        b[c] = _mm512_add_pd(d0, t);
    }
    for (p, &dp) in delta.iter().enumerate().skip(1) {
        let d = _mm512_set1_pd(dp);
        let pp = _mm512_set1_pd(p as f64);
        let row = tr.as_ptr().add(p * l);
        for c in 0..NC {
            let v = _mm512_add_pd(d, _mm512_maskz_loadu_pd(masks[c], row.add(8 * c)));
            let better = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(v, b[c]);
            b[c] = _mm512_mask_mov_pd(b[c], better, v);
            a[c] = _mm512_mask_mov_pd(a[c], better, pp);
        }
    }
    for c in 0..NC {
        _mm512_mask_storeu_pd(best.as_mut_ptr().add(8 * c), masks[c], b[c]);
        _mm512_mask_storeu_pd(arg.as_mut_ptr().add(8 * c), masks[c], a[c]);
    }
}

#[inline(always)]
fn max_plus_body(delta: &[f64], tr: &[f64], best: &mut [f64], arg: &mut [f64]) {
    let l = delta.len();
    let d0 = delta[0];
    for ((b, a), t) in best.iter_mut().zip(arg.iter_mut()).zip(&tr[..l]) {
        *b = d0 + t;
        *a = 0.0;
    }
    for p in 1..l {
        let d = delta[p];
        let row = &tr[p * l..(p + 1) * l];
        let pp = p as f64;
        for ((b, a), t) in best.iter_mut().zip(arg.iter_mut()).zip(row) {
            let v = d + t;
            let better = v > *b;
            *b = if better { v } else { *b };
            *a = if better { pp } else { *a };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_too_large_for_memory_are_errors() {
        let e = ViterbiWorkspace::with_capacity(1 << 40, 1 << 61).unwrap_err();
        assert!(matches!(e, OmklError::Alloc { ref what, .. } if what.contains("Viterbi")));
    }

    #[test]
    fn single_position_is_argmax_with_start_stop() {
        let em = [0.0, 1.0, 0.5];
        let tr = [0.0; 9];
        let start = [0.0, 0.0, 1.0];
        let stop = [0.0, -0.1, 0.0];
        let c = ChainScores::new(&em, &tr, Some(&start), Some(&stop), 1, 3).unwrap();
        let mut out = [9];
        let s = viterbi(&c, &mut ViterbiWorkspace::new(), &mut out).unwrap();
        assert_eq!(out, [2]);
        assert_eq!(s, 1.5);
    }

    #[test]
    fn rejects_bad_out_gold_and_cost() {
        let c = crate::decode::chain::zero_chain();
        let mut ws = ViterbiWorkspace::new();
        assert!(viterbi(&c, &mut ws, &mut [0; 3]).is_err());
        assert!(viterbi_hamming(&c, &[0, 2], 1.0, &mut ws, &mut [0; 2]).is_err());
        assert!(viterbi_hamming(&c, &[0, 1], -1.0, &mut ws, &mut [0; 2]).is_err());
        assert!(viterbi_hamming(&c, &[0, 1], f64::NAN, &mut ws, &mut [0; 2]).is_err());
    }

    /// The dispatched max-plus step (AVX-512 or AVX2 when available) gives
    /// exactly the portable body's scores and arg-maxes, ties included.
    #[test]
    fn max_plus_paths_agree_exactly() {
        for l in 1..=40usize {
            let delta: Vec<f64> = (0..l).map(|k| ((k * 13) % 7) as f64 * 0.25).collect();
            let tr: Vec<f64> = (0..l * l)
                .map(|k| ((k * 5) % 11) as f64 * 0.5 - 2.0)
                .collect();
            let (mut b1, mut a1) = (vec![0.0; l], vec![0.0; l]);
            let (mut b2, mut a2) = (vec![0.0; l], vec![0.0; l]);
            max_plus(&delta, &tr, &mut b1, &mut a1);
            max_plus_body(&delta, &tr, &mut b2, &mut a2);
            assert_eq!((b1, a1), (b2, a2), "L = {l}");
        }
    }

    /// The bounded max-plus step gives exactly the portable body's scores
    /// and first arg-maxes, on spread and on tied scores.
    #[test]
    fn bounded_max_plus_agrees_exactly() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for trial in 0..200 {
            let l = 1 + (rand() % 90) as usize;
            // small integers force ties; trial % 3 == 0 spreads the scores
            let spread = if trial % 3 == 0 { 50.0 } else { 1.0 };
            let delta: Vec<f64> = (0..l).map(|_| (rand() % 5) as f64 * spread).collect();
            let tr: Vec<f64> = (0..l * l).map(|_| (rand() % 4) as f64 - 2.0).collect();
            let mut cm = vec![0.0; l];
            column_max(&tr, l, &mut cm);
            let (mut b1, mut a1) = (vec![0.0; l], vec![0.0; l]);
            let (mut b2, mut a2) = (vec![0.0; l], vec![0.0; l]);
            let (mut visited, mut active) = (vec![0; l], vec![0; l]);
            max_plus_bounded(
                &delta,
                &tr,
                &cm,
                &mut b1,
                &mut a1,
                &mut visited,
                &mut active,
            );
            max_plus_body(&delta, &tr, &mut b2, &mut a2);
            assert_eq!((b1, a1), (b2, a2), "trial {trial}, L = {l}");
        }
    }

    /// Viterbi over many labels (the bounded steps) equals the brute force
    /// over all labellings' scores, ties towards smaller labels.
    #[test]
    fn viterbi_with_many_labels_equals_the_plain_recursion() {
        let (n, l) = (5, 70);
        let em: Vec<f64> = (0..n * l).map(|k| ((k * 7919) % 13) as f64 * 0.5).collect();
        let tr: Vec<f64> = (0..l * l)
            .map(|k| ((k * 104_729) % 9) as f64 - 4.0)
            .collect();
        let c = ChainScores::new(&em, &tr, None, None, n, l).unwrap();
        let mut out = vec![0; n];
        let s = viterbi(&c, &mut ViterbiWorkspace::new(), &mut out).unwrap();
        // the plain recursion with the portable step
        let mut delta = em[..l].to_vec();
        let mut back = vec![0usize; n * l];
        for i in 1..n {
            let (mut b, mut a) = (vec![0.0; l], vec![0.0; l]);
            max_plus_body(&delta, &tr, &mut b, &mut a);
            for y in 0..l {
                back[i * l + y] = a[y] as usize;
                delta[y] = b[y] + em[i * l + y];
            }
        }
        let mut y = 0;
        for k in 1..l {
            if delta[k] > delta[y] {
                y = k;
            }
        }
        let mut want = vec![0; n];
        want[n - 1] = y;
        for i in (1..n).rev() {
            y = back[i * l + y];
            want[i - 1] = y;
        }
        assert_eq!(
            (out, s),
            (want, delta.iter().cloned().fold(f64::MIN, f64::max))
        );
    }

    #[test]
    fn workspace_reuse_across_sizes() {
        let mut ws = ViterbiWorkspace::with_capacity(4, 3).unwrap();
        for (n, l) in [(4, 3), (1, 1), (6, 2), (2, 5)] {
            let em: Vec<f64> = (0..n * l).map(|k| ((k * 7) % 5) as f64).collect();
            let tr: Vec<f64> = (0..l * l).map(|k| ((k * 3) % 4) as f64 - 1.0).collect();
            let c = ChainScores::new(&em, &tr, None, None, n, l).unwrap();
            let mut out = vec![0; n];
            let s = viterbi(&c, &mut ws, &mut out).unwrap();
            assert!((c.score_of(&out).unwrap() - s).abs() < 1e-12);
        }
    }
}
