//! Maximum spanning arborescence rooted at node 0 (non-projective dependency
//! trees) by the Chu-Liu-Edmonds algorithm, in Tarjan's O(n²) form for dense
//! graphs.
//!
//! Scores use the layout of [`ArcScores`]: `s[h * (n+1) + m]` is the score of
//! head `h` → modifier `m`; the output `heads[m]` (for `m` in `1..=n`) is the
//! head of word `m`, `heads[0]` is set to 0.
//!
//! # Method
//! Nodes are processed along a growing path: the current super-node picks
//! its best incoming arc; if the arc comes from a node that already reaches
//! the root, the whole path is settled; if it comes from a node on the path,
//! the cycle is contracted into one super-node whose incoming arcs get the
//! reduced weights `w(x, v) − w(in(v))` (Edmonds). Arc weights live in a
//! dense matrix stored by modifier, so that the incoming arcs of a super-node
//! are one contiguous row, indexed by original head. A contraction of a cycle
//! `C` merges the rows of its members in O(n·|C|) and never touches other
//! rows: arcs leaving `C` keep their original head as column, which a
//! representative map sends to its current super-node (no strided column
//! rewrites, no per-entry original-arc table except for merged rows). The
//! whole run is O(n²). Contractions are undone from the newest to the oldest
//! to read off the tree.
//!
//! The single-root constraint (exactly one child of the root) is exact: arc
//! weights become pairs `(−[h = 0], s)` compared lexicographically, the
//! ordered-group form of Gabow and Tarjan's large-penalty trick, so the
//! decoder first minimises the number of root children (to one) and then
//! maximises the score, with no large constant and no rounding.

use super::arcs::ArcScores;
use crate::error::{try_resize, OmklError, Result};

const NONE: u32 = u32::MAX;

/// An arc weight: an element of a totally ordered abelian group.
trait Weight: Copy {
    const NEG_INF: Self;
    fn sub(self, other: Self) -> Self;
    fn gt(self, other: Self) -> bool;
}

impl Weight for f64 {
    const NEG_INF: Self = f64::NEG_INFINITY;
    #[inline]
    fn sub(self, other: Self) -> Self {
        self - other
    }
    #[inline]
    fn gt(self, other: Self) -> bool {
        self > other
    }
}

/// `(k, s)`, ordered lexicographically: `k` counts minus the root arcs.
#[derive(Debug, Clone, Copy, Default)]
struct Penalised(i64, f64);

impl Weight for Penalised {
    const NEG_INF: Self = Penalised(i64::MIN / 4, f64::NEG_INFINITY);
    #[inline]
    fn sub(self, other: Self) -> Self {
        Penalised(self.0 - other.0, self.1 - other.1)
    }
    #[inline]
    fn gt(self, other: Self) -> bool {
        self.0 > other.0 || (self.0 == other.0 && self.1 > other.1)
    }
}

/// Buffers of one weight type.
#[derive(Debug, Clone, Default)]
struct Tables<W> {
    w: Vec<W>,
    in_w: Vec<W>,
}

/// Reusable buffers of [`chu_liu_edmonds`]: O(n²) for the weight matrix and
/// the original modifiers of contracted rows, O(n) for the rest. Buffers grow
/// to the largest sentence seen, so reusing one workspace allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct CleWorkspace {
    plain: Tables<f64>,
    penalised: Tables<Penalised>,
    /// Original modifier of each entry of a contracted row (rows of nodes
    /// never contracted hold their own arcs: the modifier is the row).
    orig_m: Vec<u32>,
    merged: Vec<bool>,
    status: Vec<u8>,
    rep: Vec<u32>,
    next: Vec<u32>,
    first: Vec<u32>,
    last: Vec<u32>,
    id_of: Vec<u32>,
    parent: Vec<u32>,
    in_h: Vec<u32>,
    in_m: Vec<u32>,
    path: Vec<u32>,
    cycle: Vec<u32>,
}

impl CleWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }
}

fn check_heads_out(arcs: &ArcScores<'_>, heads: &[usize]) -> Result<()> {
    if (arcs.n + 1) * (arcs.n + 1) > u32::MAX as usize {
        return Err(OmklError::invalid("scores", "more than 65534 words"));
    }
    arcs.check_heads_out(heads)
}

/// The maximum-score spanning arborescence rooted at 0, written into `heads`
/// (length `n+1`); returns its score. With `single_root`, the root has
/// exactly one child.
///
/// # Complexity
/// O(n²) time and memory.
///
/// # Example
/// ```
/// use omkl_core::decode::arcs::ArcScores;
/// use omkl_core::decode::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
/// // 1 and 2 prefer each other (a cycle); the root attaches one of them.
/// let s = [0.0, 1.0, 1.5,
///          0.0, 0.0, 5.0,
///          0.0, 4.0, 0.0];
/// let arcs = ArcScores::new(&s, 2).unwrap();
/// let mut heads = [0; 3];
/// let score = chu_liu_edmonds(&arcs, false, &mut CleWorkspace::new(), &mut heads).unwrap();
/// assert_eq!((heads, score), ([0, 0, 1], 6.0));
/// ```
pub fn chu_liu_edmonds(
    arcs: &ArcScores<'_>,
    single_root: bool,
    ws: &mut CleWorkspace,
    heads: &mut [usize],
) -> Result<f64> {
    check_heads_out(arcs, heads)?;
    decode(arcs, single_root, ws, heads, |h, m| arcs.arc(h, m))?;
    Ok(arcs.score_of_unchecked(heads))
}

/// Loss-augmented Chu-Liu-Edmonds: maximises
/// `score(tree) + cost · #{m : heads[m] ≠ gold[m]}` (Hamming cost on heads),
/// writes the maximiser into `heads` and returns that augmented value.
/// `gold` has length `n+1` (`gold[0]` unused) and need not be a tree.
///
/// # Complexity
/// O(n²), like [`chu_liu_edmonds`].
pub fn chu_liu_edmonds_hamming(
    arcs: &ArcScores<'_>,
    gold: &[usize],
    cost: f64,
    single_root: bool,
    ws: &mut CleWorkspace,
    heads: &mut [usize],
) -> Result<f64> {
    check_heads_out(arcs, heads)?;
    let aug = arcs.hamming(gold, cost)?;
    decode(arcs, single_root, ws, heads, aug)?;
    Ok((1..=arcs.n).map(|m| aug(heads[m], m)).sum())
}

fn decode<F: Fn(usize, usize) -> f64>(
    arcs: &ArcScores<'_>,
    single_root: bool,
    ws: &mut CleWorkspace,
    heads: &mut [usize],
    score: F,
) -> Result<()> {
    if single_root {
        let mut t = std::mem::take(&mut ws.penalised);
        let done = reserve(arcs.n, &mut t, ws);
        if done.is_ok() {
            run(arcs.n, &mut t, ws, heads, |h, m| {
                Penalised(if h == 0 { -1 } else { 0 }, score(h, m))
            });
        }
        ws.penalised = t;
        done
    } else {
        let mut t = std::mem::take(&mut ws.plain);
        let done = reserve(arcs.n, &mut t, ws);
        if done.is_ok() {
            run(arcs.n, &mut t, ws, heads, score);
        }
        ws.plain = t;
        done
    }
}

/// Grows the buffers to a sentence of `n` words, or [`OmklError::Alloc`].
fn reserve<W: Weight>(n: usize, t: &mut Tables<W>, ws: &mut CleWorkspace) -> Result<()> {
    let (side, ids) = (n + 1, 2 * n + 1);
    let what = "Chu-Liu-Edmonds workspace";
    try_resize(what, &mut t.w, &[side, side], W::NEG_INF)?;
    try_resize(what, &mut t.in_w, &[side], W::NEG_INF)?;
    try_resize(what, &mut ws.orig_m, &[side, side], 0)?;
    try_resize(what, &mut ws.merged, &[side], false)?;
    try_resize(what, &mut ws.status, &[side], 0)?;
    for v in [&mut ws.rep, &mut ws.first, &mut ws.last, &mut ws.id_of] {
        try_resize(what, v, &[side], 0)?;
    }
    try_resize(what, &mut ws.next, &[side], NONE)?;
    for v in [&mut ws.parent, &mut ws.in_h, &mut ws.in_m] {
        try_resize(what, v, &[ids], NONE)?;
    }
    Ok(())
}

/// The path-growing Chu-Liu-Edmonds on nodes `0..=n` with arc weights
/// `weight(h, m)`.
///
/// Row `m` of the matrix holds the arcs entering the super-node whose
/// representative is `m`, indexed by the **original** head `h`; `rep[h]` is
/// the super-node that currently contains `h`. A contraction therefore only
/// merges the rows of the cycle (contiguous, O(n·|C|)) and never moves
/// columns: duplicate arcs out of a super-node stay in place and the best
/// one wins the arg-max, and the arcs inside the new super-node are masked
/// in its row. The head of an entry is always its column, so only the
/// modifiers of contracted rows need to be remembered.
fn run<W: Weight, F: Fn(usize, usize) -> W>(
    n: usize,
    t: &mut Tables<W>,
    ws: &mut CleWorkspace,
    heads: &mut [usize],
    weight: F,
) {
    const UNVISITED: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    const DEAD: u8 = 3;
    /// Heads per block of the transposing fill: as many source rows are read
    /// in step, each one sequentially.
    const BLOCK: usize = 16;
    let side = n + 1;
    let ids = 2 * n + 1;
    let w = &mut t.w[..side * side];
    let in_w = &mut t.in_w[..side];
    let orig_m = &mut ws.orig_m[..side * side];
    let merged = &mut ws.merged[..side];
    let status = &mut ws.status[..side];
    let rep = &mut ws.rep[..side];
    let next = &mut ws.next[..side];
    let first = &mut ws.first[..side];
    let last = &mut ws.last[..side];
    let id_of = &mut ws.id_of[..side];
    let parent = &mut ws.parent[..ids];
    let in_h = &mut ws.in_h[..ids];
    let in_m = &mut ws.in_m[..ids];
    let path = &mut ws.path;
    let cycle = &mut ws.cycle;
    path.clear();

    // w[m * side + h] is the weight of arc h → m, filled by blocks of heads
    // so that the scores are read row by row. Row 0 and the diagonal hold
    // NEG_INF.
    for h0 in (0..side).step_by(BLOCK) {
        let h1 = (h0 + BLOCK).min(side);
        w[h0..h1].fill(W::NEG_INF);
        for m in 1..side {
            let row = &mut w[m * side..(m + 1) * side];
            for (h, x) in row.iter_mut().enumerate().take(h1).skip(h0) {
                *x = if h == m { W::NEG_INF } else { weight(h, m) };
            }
        }
    }
    for v in 0..side {
        merged[v] = false;
        status[v] = UNVISITED;
        rep[v] = v as u32;
        next[v] = NONE;
        first[v] = v as u32;
        last[v] = v as u32;
        id_of[v] = v as u32;
    }
    parent.fill(NONE);
    in_h.fill(NONE);
    in_m.fill(NONE);
    status[0] = DONE;
    let mut next_id = side as u32;

    for v0 in 1..side {
        if status[v0] != UNVISITED {
            continue;
        }
        status[v0] = ON_PATH;
        path.push(v0 as u32);
        while let Some(&cur) = path.last() {
            let cur = cur as usize;
            // Best incoming arc of `cur`. The root is never contracted and
            // every word has a finite arc from it, so one exists.
            let row = &w[cur * side..(cur + 1) * side];
            let mut best_h = 0;
            let mut best = row[0];
            for (h, &x) in row.iter().enumerate().skip(1) {
                if x.gt(best) {
                    best = x;
                    best_h = h;
                }
            }
            let u = rep[best_h] as usize;
            in_w[cur] = best;
            let id = id_of[cur] as usize;
            in_h[id] = best_h as u32;
            in_m[id] = if merged[cur] {
                orig_m[cur * side + best_h]
            } else {
                cur as u32
            };
            match status[u] {
                DONE => {
                    for &p in path.iter() {
                        status[p as usize] = DONE;
                    }
                    path.clear();
                }
                UNVISITED => {
                    status[u] = ON_PATH;
                    path.push(u as u32);
                }
                _ => {
                    // `u` is on the path: the path from `u` to `cur` closes a
                    // cycle. Contract it into super-node `c`.
                    cycle.clear();
                    while let Some(p) = path.pop() {
                        cycle.push(p);
                        if p as usize == u {
                            break;
                        }
                    }
                    let c = cycle[0] as usize;
                    let cid = next_id;
                    next_id += 1;
                    for &v in cycle.iter() {
                        parent[id_of[v as usize] as usize] = cid;
                    }
                    // Arcs x → C: row c becomes the max over the rows of the
                    // members of the reduced weights w(x, v) − w(in(v)).
                    if !merged[c] {
                        orig_m[c * side..(c + 1) * side].fill(c as u32);
                        merged[c] = true;
                    }
                    let wc = in_w[c];
                    for x in &mut w[c * side..(c + 1) * side] {
                        *x = x.sub(wc);
                    }
                    for &v in cycle.iter().skip(1) {
                        let v = v as usize;
                        let wv = in_w[v];
                        let (lo, hi) = w.split_at_mut(c.max(v) * side);
                        let (wrow_c, wrow_v) = if c < v {
                            (&mut lo[c * side..(c + 1) * side], &hi[..side])
                        } else {
                            (&mut hi[..side], &lo[v * side..(v + 1) * side])
                        };
                        let orow_c = c * side;
                        if merged[v] {
                            for x in 0..side {
                                let r = wrow_v[x].sub(wv);
                                if r.gt(wrow_c[x]) {
                                    wrow_c[x] = r;
                                    orig_m[orow_c + x] = orig_m[v * side + x];
                                }
                            }
                        } else {
                            for x in 0..side {
                                let r = wrow_v[x].sub(wv);
                                if r.gt(wrow_c[x]) {
                                    wrow_c[x] = r;
                                    orig_m[orow_c + x] = v as u32;
                                }
                            }
                        }
                        // Append v's original nodes to c's.
                        next[last[c] as usize] = first[v];
                        last[c] = last[v];
                        status[v] = DEAD;
                    }
                    // Arcs inside C are self-loops of the super-node.
                    let mut x = first[c];
                    while x != NONE {
                        rep[x as usize] = c as u32;
                        w[c * side + x as usize] = W::NEG_INF;
                        x = next[x as usize];
                    }
                    id_of[c] = cid;
                    path.push(c as u32);
                }
            }
        }
    }

    // Undo contractions, newest first: the arc entering a super-node enters
    // the child that contains its original modifier, replacing that child's
    // cycle arc.
    for id in (side..next_id as usize).rev() {
        let m = in_m[id];
        let mut child = m;
        while parent[child as usize] != id as u32 {
            child = parent[child as usize];
        }
        in_h[child as usize] = in_h[id];
        in_m[child as usize] = m;
    }
    heads[0] = 0;
    for m in 1..side {
        heads[m] = in_h[m] as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_root_picks_one_child() {
        // The root prefers both words; with one root child allowed, the best
        // tree is 0 → 1 → 2 (score 10 + 1) rather than 0 → 2 → 1 (9 + 0).
        let s = [0.0, 10.0, 9.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let arcs = ArcScores::new(&s, 2).unwrap();
        let mut ws = CleWorkspace::new();
        let mut heads = [0; 3];
        let v = chu_liu_edmonds(&arcs, false, &mut ws, &mut heads).unwrap();
        assert_eq!((heads, v), ([0, 0, 0], 19.0));
        let v = chu_liu_edmonds(&arcs, true, &mut ws, &mut heads).unwrap();
        assert_eq!((heads, v), ([0, 0, 1], 11.0));
    }

    #[test]
    fn rejects_bad_buffers() {
        let s = [0.0; 9];
        let arcs = ArcScores::new(&s, 2).unwrap();
        let mut ws = CleWorkspace::new();
        assert!(chu_liu_edmonds(&arcs, false, &mut ws, &mut [0; 2]).is_err());
        let mut h = [0; 3];
        assert!(chu_liu_edmonds_hamming(&arcs, &[0, 0], 1.0, false, &mut ws, &mut h).is_err());
        assert!(chu_liu_edmonds_hamming(&arcs, &[0, 0, 3], 1.0, false, &mut ws, &mut h).is_err());
        assert!(chu_liu_edmonds_hamming(&arcs, &[0, 0, 1], -1.0, false, &mut ws, &mut h).is_err());
    }

    #[test]
    fn workspaces_too_large_for_memory_are_errors() {
        let mut ws = CleWorkspace::new();
        let mut t = std::mem::take(&mut ws.plain);
        let e = reserve(1 << 40, &mut t, &mut ws).unwrap_err();
        assert!(matches!(e, OmklError::Alloc { ref what, .. } if what.contains("Chu-Liu-Edmonds")));
    }
}
