//! N-best Viterbi: the `k` highest-scoring labellings of a linear chain.
//!
//! Scores use the layout of [`ChainScores`]. Every (position, label) cell
//! keeps a list of at most `k` partial paths sorted best first; a cell's list
//! is built by repeatedly taking the best head among the `L` lists of the
//! previous position (shifted by the transition score), which is exact
//! because a partial path outside the `k` best of its cell is beaten by `k`
//! partial paths that share every completion.
//!
//! # Ties
//! Paths are ordered by decreasing score, and equal scores by increasing
//! lexicographic order of the labelling, so the output is deterministic and,
//! when sums are exact (e.g. integer-valued scores), it is the first `k`
//! labellings of the full enumeration sorted by `(-score, labelling)`.

use super::chain::ChainScores;
use crate::error::{check_count, try_resize, OmklError, Result};

const NONE: u32 = u32::MAX;

/// Reusable buffers of [`viterbi_nbest`]: `n × L × k` partial scores and
/// back-pointers, plus O(n + L) scratch. Buffers grow to the largest problem
/// seen and are never shrunk.
#[derive(Debug, Clone, Default)]
pub struct NbestWorkspace {
    score: Vec<f64>,
    back_label: Vec<u32>,
    back_rank: Vec<u32>,
    count: Vec<u32>,
    head: Vec<u32>,
    vals: Vec<f64>,
    heap: Vec<u32>,
    seq_a: Vec<u32>,
    seq_b: Vec<u32>,
}

impl NbestWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The tables of one run: cell `(i, y)` owns the slots
/// `((i * L + y) * k)..((i * L + y) * k + count)`.
struct Tables<'w> {
    l: usize,
    k: usize,
    score: &'w mut [f64],
    back_label: &'w mut [u32],
    back_rank: &'w mut [u32],
    count: &'w mut [u32],
    seq_a: &'w mut [u32],
    seq_b: &'w mut [u32],
}

impl Tables<'_> {
    #[inline]
    fn slot(&self, i: usize, y: usize, r: usize) -> usize {
        (i * self.l + y) * self.k + r
    }

    /// Writes the labels of the partial path `(i, y, r)` into `seq[..=i]`.
    fn trace(&self, seq: &mut [u32], i: usize, y: usize, r: usize) {
        let (mut y, mut r) = (y, r);
        for j in (0..=i).rev() {
            seq[j] = y as u32;
            if j > 0 {
                let s = self.slot(j, y, r);
                y = self.back_label[s] as usize;
                r = self.back_rank[s] as usize;
            }
        }
    }

    /// Whether the partial path `a = (y, r)` at position `i` comes before
    /// `b` in lexicographic order of labels (paths ending at different
    /// labels are always distinct).
    fn lex_less(&mut self, i: usize, a: (usize, usize), b: (usize, usize)) -> bool {
        let sa = std::mem::take(&mut self.seq_a);
        let sb = std::mem::take(&mut self.seq_b);
        self.trace(&mut *sa, i, a.0, a.1);
        self.trace(&mut *sb, i, b.0, b.1);
        let less = sa[..=i] < sb[..=i];
        self.seq_a = sa;
        self.seq_b = sb;
        less
    }
}

/// The `k` best labellings of a chain, best first: row `j` of `paths`
/// (`paths[j * n..(j + 1) * n]`) is the `j`-th best labelling and `scores[j]`
/// its score. Returns how many were written: `min(k, Lⁿ)`. `paths` must
/// hold `k · n` elements and `scores` `k`; rows past the returned count are
/// left untouched. Ties are broken towards the lexicographically smaller
/// labelling (see the module docs).
///
/// # Complexity
/// O(n·L²·k) time (plus O(n) per comparison of exactly tied scores), and
/// O(n·L·k) memory in the workspace.
///
/// # Example
/// ```
/// use omkl_core::decode::chain::ChainScores;
/// use omkl_core::decode::nbest::{viterbi_nbest, NbestWorkspace};
/// let em = [1.0, 0.0, 0.0, 2.0]; // n = 2, L = 2
/// let tr = [0.0; 4];
/// let c = ChainScores::new(&em, &tr, None, None, 2, 2).unwrap();
/// let (mut paths, mut scores) = ([0; 6], [0.0; 3]);
/// let m = viterbi_nbest(&c, 3, &mut NbestWorkspace::new(), &mut paths, &mut scores).unwrap();
/// assert_eq!(m, 3);
/// assert_eq!(paths, [0, 1, 1, 1, 0, 0]);
/// assert_eq!(scores, [3.0, 2.0, 1.0]);
/// ```
pub fn viterbi_nbest(
    chain: &ChainScores<'_>,
    k: usize,
    ws: &mut NbestWorkspace,
    paths: &mut [usize],
    scores: &mut [f64],
) -> Result<usize> {
    let (n, l) = (chain.n, chain.l);
    if k == 0 {
        return Err(OmklError::invalid("k", "k = 0, expected at least 1 path"));
    }
    if k >= NONE as usize {
        return Err(OmklError::invalid("k", format!("k = {k} is too large")));
    }
    if l >= NONE as usize {
        return Err(OmklError::invalid("labels", "more than 2^32 - 2 labels"));
    }
    let cells = n
        .checked_mul(l)
        .and_then(|c| c.checked_mul(k))
        .filter(|&c| c <= isize::MAX as usize / 16)
        .ok_or_else(|| OmklError::Alloc {
            what: "k".to_string(),
            bytes: 16 * n as u128 * l as u128 * k as u128,
        })?;
    check_count("paths", paths.len(), k * n, "elements", " (k x n)")?;
    check_count("scores", scores.len(), k, "elements", "")?;
    try_resize("k", &mut ws.score, &[n, l, k], 0.0)?;
    try_resize("k", &mut ws.back_label, &[n, l, k], NONE)?;
    try_resize("k", &mut ws.back_rank, &[n, l, k], NONE)?;
    let what = "N-best workspace";
    try_resize(what, &mut ws.count, &[n, l], 0)?;
    try_resize(what, &mut ws.head, &[l], 0)?;
    try_resize(what, &mut ws.vals, &[l], 0.0)?;
    try_resize(what, &mut ws.heap, &[l], 0)?;
    try_resize(what, &mut ws.seq_a, &[n], 0)?;
    try_resize(what, &mut ws.seq_b, &[n], 0)?;
    let head = &mut ws.head[..l];
    let vals = &mut ws.vals[..l];
    let heap = &mut ws.heap[..l];
    let mut t = Tables {
        l,
        k,
        score: &mut ws.score[..cells],
        back_label: &mut ws.back_label[..cells],
        back_rank: &mut ws.back_rank[..cells],
        count: &mut ws.count[..n * l],
        seq_a: &mut ws.seq_a[..n],
        seq_b: &mut ws.seq_b[..n],
    };
    let (em, tr) = (chain.em, chain.tr);

    for y in 0..l {
        let s = t.slot(0, y, 0);
        t.score[s] = em[y] + chain.start.map_or(0.0, |st| st[y]);
        t.count[y] = 1;
    }
    for i in 1..n {
        for y in 0..l {
            let cand =
                |t: &Tables<'_>, p: usize, r: usize| t.score[t.slot(i - 1, p, r)] + tr[p * l + y];
            let m = select(
                &mut t,
                i - 1,
                (&mut *head, &mut *vals, &mut *heap),
                cand,
                |t, rank, p, r, v| {
                    let s = t.slot(i, y, rank);
                    t.score[s] = v + em[i * l + y];
                    t.back_label[s] = p as u32;
                    t.back_rank[s] = r as u32;
                },
            );
            t.count[i * l + y] = m as u32;
        }
    }
    let stop = chain.stop;
    let last = n - 1;
    let cand = |t: &Tables<'_>, y: usize, r: usize| {
        t.score[t.slot(last, y, r)] + stop.map_or(0.0, |st| st[y])
    };
    let m = select(
        &mut t,
        last,
        (head, vals, heap),
        cand,
        |t, rank, y, r, v| {
            scores[rank] = v;
            let row = &mut paths[rank * n..(rank + 1) * n];
            let (mut yy, mut rr) = (y, r);
            for j in (0..n).rev() {
                row[j] = yy;
                if j > 0 {
                    let s = t.slot(j, yy, rr);
                    yy = t.back_label[s] as usize;
                    rr = t.back_rank[s] as usize;
                }
            }
        },
    );
    Ok(m)
}

/// Whether the head of list `a` comes before the head of list `b`: higher
/// value, or equal value and lexicographically smaller path.
#[inline]
fn before(t: &mut Tables<'_>, i: usize, head: &[u32], vals: &[f64], a: u32, b: u32) -> bool {
    let (a, b) = (a as usize, b as usize);
    vals[a] > vals[b]
        || (vals[a] == vals[b] && t.lex_less(i, (a, head[a] as usize), (b, head[b] as usize)))
}

/// `cand(t, p, r)`: the value of entry `r` of the sorted list of label `p`.
trait Cand: Fn(&Tables<'_>, usize, usize) -> f64 {}
impl<F: Fn(&Tables<'_>, usize, usize) -> f64> Cand for F {}

/// `emit(t, rank, p, r, value)`: entry `r` of label `p`'s list is the
/// `rank`-th best, of value `value`.
trait Emit: FnMut(&mut Tables<'_>, usize, usize, usize, f64) {}
impl<F: FnMut(&mut Tables<'_>, usize, usize, usize, f64)> Emit for F {}

/// Restores the heap order below `pos` (the best list at the top).
fn sift_down(
    t: &mut Tables<'_>,
    i: usize,
    head: &[u32],
    vals: &[f64],
    heap: &mut [u32],
    mut pos: usize,
) {
    loop {
        let left = 2 * pos + 1;
        if left >= heap.len() {
            return;
        }
        let mut c = left;
        if left + 1 < heap.len() && before(t, i, head, vals, heap[left + 1], heap[left]) {
            c = left + 1;
        }
        if !before(t, i, head, vals, heap[c], heap[pos]) {
            return;
        }
        heap.swap(c, pos);
        pos = c;
    }
}

/// Merges the sorted lists of the cells `(i, p)` for every label `p`, each
/// entry valued by `cand(t, p, r)`, and emits the best `k` as
/// `emit(t, rank, p, r, value)`; returns how many were emitted. The heads
/// of the lists (values in `vals`) sit in a binary heap, so a pick costs
/// O(log L) after an O(L) start: the fastest for large `k`.
fn select_heap(
    t: &mut Tables<'_>,
    i: usize,
    bufs: (&mut [u32], &mut [f64], &mut [u32]),
    cand: impl Cand,
    mut emit: impl Emit,
) -> usize {
    let (head, vals, heap_buf) = bufs;
    let l = t.l;
    let mut len = 0;
    for p in 0..l {
        head[p] = 0;
        if t.count[i * l + p] > 0 {
            vals[p] = cand(t, p, 0);
            heap_buf[len] = p as u32;
            len += 1;
        }
    }
    // Heapify: sift down every inner node, last first.
    for pos in (0..len / 2).rev() {
        sift_down(t, i, head, vals, &mut heap_buf[..len], pos);
    }
    let mut rank = 0;
    while rank < t.k && len > 0 {
        let p = heap_buf[0] as usize;
        let r = head[p] as usize;
        emit(t, rank, p, r, vals[p]);
        head[p] += 1;
        if r + 1 < t.count[i * l + p] as usize {
            vals[p] = cand(t, p, r + 1);
        } else {
            len -= 1;
            heap_buf[0] = heap_buf[len];
        }
        sift_down(t, i, head, vals, &mut heap_buf[..len], 0);
        rank += 1;
    }
    rank
}

/// Merges the sorted lists of the cells `(i, p)` for every label `p`, each
/// entry valued by `cand(t, p, r)`, and emits the best `k` as
/// `emit(t, rank, p, r, value)`; returns how many were emitted. The current
/// head of every list is kept in `vals` (NEG_INFINITY once exhausted), so a
/// pick is one contiguous arg-max over `L` values: the fastest for small `k`.
fn select_scan(
    t: &mut Tables<'_>,
    i: usize,
    head: &mut [u32],
    vals: &mut [f64],
    cand: impl Cand,
    mut emit: impl Emit,
) -> usize {
    let l = t.l;
    let counts = &t.count[i * l..(i + 1) * l];
    for p in 0..l {
        head[p] = 0;
        vals[p] = if counts[p] > 0 {
            cand(t, p, 0)
        } else {
            f64::NEG_INFINITY
        };
    }
    let mut rank = 0;
    while rank < t.k {
        let mut best_p = usize::MAX;
        let mut bv = f64::NEG_INFINITY;
        for (p, &v) in vals.iter().enumerate() {
            // Branch-free select: the winner is hard to predict.
            let better = v > bv;
            bv = if better { v } else { bv };
            best_p = if better { p } else { best_p };
        }
        if best_p == usize::MAX {
            break; // every list is exhausted (scores are finite)
        }
        for p in best_p + 1..l {
            if vals[p] == bv
                && t.lex_less(i, (p, head[p] as usize), (best_p, head[best_p] as usize))
            {
                best_p = p;
            }
        }
        let r = head[best_p] as usize;
        emit(t, rank, best_p, r, bv);
        head[best_p] += 1;
        vals[best_p] = if r + 1 < t.count[i * l + best_p] as usize {
            cand(t, best_p, r + 1)
        } else {
            f64::NEG_INFINITY
        };
        rank += 1;
    }
    rank
}

/// Below this `k`, a linear arg-max per pick beats the heap.
const HEAP_MIN_K: usize = 8;

/// [`select_scan`] or [`select_heap`], by `k`; both give the same output.
fn select(
    t: &mut Tables<'_>,
    i: usize,
    bufs: (&mut [u32], &mut [f64], &mut [u32]),
    cand: impl Cand,
    emit: impl Emit,
) -> usize {
    if t.k < HEAP_MIN_K {
        select_scan(t, i, bufs.0, bufs.1, cand, emit)
    } else {
        select_heap(t, i, bufs, cand, emit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_ties_come_in_lexicographic_order() {
        let em = [0.0; 6]; // n = 3, L = 2: all 8 labellings score 0
        let tr = [0.0; 4];
        let c = ChainScores::new(&em, &tr, None, None, 3, 2).unwrap();
        let mut paths = vec![9; 10 * 3];
        let mut scores = vec![f64::NAN; 10];
        let m = viterbi_nbest(&c, 10, &mut NbestWorkspace::new(), &mut paths, &mut scores).unwrap();
        assert_eq!(m, 8);
        for j in 0..8 {
            let want: Vec<usize> = (0..3).map(|b| (j >> (2 - b)) & 1).collect();
            assert_eq!(&paths[j * 3..(j + 1) * 3], &want[..]);
            assert_eq!(scores[j], 0.0);
        }
        assert!(paths[24..].iter().all(|&x| x == 9));
    }

    #[test]
    fn rejects_bad_k_and_buffers() {
        let c = crate::decode::chain::zero_chain();
        let mut ws = NbestWorkspace::new();
        assert!(viterbi_nbest(&c, 0, &mut ws, &mut [], &mut []).is_err());
        assert!(viterbi_nbest(&c, 2, &mut ws, &mut [0; 3], &mut [0.0; 2]).is_err());
        assert!(viterbi_nbest(&c, 2, &mut ws, &mut [0; 4], &mut [0.0; 1]).is_err());
        assert!(viterbi_nbest(&c, usize::MAX / 2, &mut ws, &mut [], &mut []).is_err());
    }
}
