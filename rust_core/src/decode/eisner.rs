//! Eisner's O(n³) algorithm for the best projective dependency tree, with
//! an optional single-root constraint and Hamming loss augmentation.
//!
//! Scores use the layout of [`ArcScores`] (`s[h * (n+1) + m]`, root 0); the
//! output `heads[m]` is the head of word `m`, `heads[0]` is set to 0.
//!
//! The chart holds, for every span `s < t`, complete (`C`) and incomplete
//! (`I`) items headed at the left (`→`) or right (`←`) end:
//! * `I[s,t,←] = max_r C[s,r,→] + C[r+1,t,←] + score(t → s)` (and `→` alike);
//! * `C[s,t,←] = max_r C[s,r,←] + I[r,t,←]`;
//! * `C[s,t,→] = max_r I[s,r,→] + C[r,t,→]`.
//!
//! The best tree is `C[0,n,→]`. With the single-root constraint the root has
//! one child `m`: the best is `max_m score(0 → m) + C[1,m,←] + C[m,n,→]`.

use super::arcs::ArcScores;
use crate::error::{try_resize, Result};

/// Reusable buffers of [`eisner`]: four `(n+1) × (n+1)` score tables and
/// their split points.
#[derive(Debug, Clone, Default)]
pub struct EisnerWorkspace {
    score: Vec<f64>,
    split: Vec<u32>,
    stack: Vec<(u32, u32, u8)>,
}

impl EisnerWorkspace {
    /// An empty workspace; it grows on first use.
    pub fn new() -> Self {
        Self::default()
    }
}

// Item kinds, the last index of the tables.
const CL: usize = 0; // complete, head right (←)
const CR: usize = 1; // complete, head left (→)
const IL: usize = 2; // incomplete, head right (←)
const IR: usize = 3; // incomplete, head left (→)

/// The best projective tree rooted at 0, written into `heads` (length
/// `n+1`); returns its score. With `single_root`, the root has exactly one
/// child.
///
/// # Complexity
/// O(n³) time, O(n²) memory.
///
/// # Example
/// ```
/// use omkl_core::decode::arcs::ArcScores;
/// use omkl_core::decode::eisner::{eisner, EisnerWorkspace};
/// // The best tree 0 → 2, 2 → 1, 1 → 3 is not projective (arc 1 → 3
/// // crosses 0 → 2); Eisner returns the best projective one.
/// let mut s = [0.0; 16];
/// s[2] = 10.0; // 0 → 2
/// s[4 + 3] = 10.0; // 1 → 3
/// s[8 + 1] = 10.0; // 2 → 1
/// let arcs = ArcScores::new(&s, 3).unwrap();
/// let mut heads = [0; 4];
/// let v = eisner(&arcs, false, &mut EisnerWorkspace::new(), &mut heads).unwrap();
/// assert_eq!(v, 20.0);
/// ```
pub fn eisner(
    arcs: &ArcScores<'_>,
    single_root: bool,
    ws: &mut EisnerWorkspace,
    heads: &mut [usize],
) -> Result<f64> {
    arcs.check_heads_out(heads)?;
    run(arcs.n, single_root, ws, heads, |h, m| arcs.arc(h, m))?;
    Ok(arcs.score_of_unchecked(heads))
}

/// Loss-augmented Eisner: maximises `score(tree) + cost · #{m : heads[m] ≠
/// gold[m]}` over projective trees, writes the maximiser into `heads` and
/// returns that augmented value.
///
/// # Complexity
/// O(n³), like [`eisner`].
pub fn eisner_hamming(
    arcs: &ArcScores<'_>,
    gold: &[usize],
    cost: f64,
    single_root: bool,
    ws: &mut EisnerWorkspace,
    heads: &mut [usize],
) -> Result<f64> {
    arcs.check_heads_out(heads)?;
    let aug = arcs.hamming(gold, cost)?;
    run(arcs.n, single_root, ws, heads, aug)?;
    Ok((1..=arcs.n).map(|m| aug(heads[m], m)).sum())
}

/// The first `r` of `range` with the largest `f(r)` above −∞ and its value,
/// or `(−∞, default)` when there is none.
#[inline(always)]
fn argmax(
    range: impl Iterator<Item = usize>,
    default: usize,
    f: impl Fn(usize) -> f64,
) -> (f64, usize) {
    let (mut best, mut arg) = (f64::NEG_INFINITY, default);
    for r in range {
        let v = f(r);
        if v > best {
            best = v;
            arg = r;
        }
    }
    (best, arg)
}

fn run<F: Fn(usize, usize) -> f64>(
    n: usize,
    single_root: bool,
    ws: &mut EisnerWorkspace,
    heads: &mut [usize],
    score: F,
) -> Result<()> {
    let side = n + 1;
    let len = 4 * side * side;
    try_resize("scores", &mut ws.score, &[4, side, side], 0.0)?;
    try_resize("scores", &mut ws.split, &[4, side, side], 0)?;
    let c = &mut ws.score[..len];
    let b = &mut ws.split[..len];
    let at = |s: usize, t: usize, k: usize| (s * side + t) * 4 + k;
    for s in 0..side {
        for k in 0..4 {
            c[at(s, s, k)] = 0.0;
        }
    }
    for width in 1..side {
        for s in 0..side - width {
            let t = s + width;
            // Incomplete items: a new arc between s and t.
            let (best, arg) = argmax(s..t, s, |r| c[at(s, r, CR)] + c[at(r + 1, t, CL)]);
            c[at(s, t, IL)] = if s == 0 {
                f64::NEG_INFINITY // no arc into the root
            } else {
                best + score(t, s)
            };
            b[at(s, t, IL)] = arg as u32;
            c[at(s, t, IR)] = best + score(s, t);
            b[at(s, t, IR)] = arg as u32;
            // Complete items.
            let (best, arg) = argmax(s..t, s, |r| c[at(s, r, CL)] + c[at(r, t, IL)]);
            c[at(s, t, CL)] = best;
            b[at(s, t, CL)] = arg as u32;
            let (best, arg) = argmax(s + 1..=t, t, |r| c[at(s, r, IR)] + c[at(r, t, CR)]);
            c[at(s, t, CR)] = best;
            b[at(s, t, CR)] = arg as u32;
        }
    }

    heads[0] = 0;
    let stack = &mut ws.stack;
    stack.clear();
    if single_root {
        let (_, root_child) = argmax(1..side, 1, |m| {
            score(0, m) + c[at(1, m, CL)] + c[at(m, n, CR)]
        });
        heads[root_child] = 0;
        stack.push((1, root_child as u32, CL as u8));
        stack.push((root_child as u32, n as u32, CR as u8));
    } else {
        stack.push((0, n as u32, CR as u8));
    }
    while let Some((s, t, k)) = stack.pop() {
        let (s, t, k) = (s as usize, t as usize, k as usize);
        if s >= t {
            continue;
        }
        let r = b[at(s, t, k)] as usize;
        match k {
            IL | IR => {
                if k == IL {
                    heads[s] = t;
                } else {
                    heads[t] = s;
                }
                stack.push((s as u32, r as u32, CR as u8));
                stack.push((r as u32 + 1, t as u32, CL as u8));
            }
            CL => {
                stack.push((s as u32, r as u32, CL as u8));
                stack.push((r as u32, t as u32, IL as u8));
            }
            _ => {
                stack.push((s as u32, r as u32, IR as u8));
                stack.push((r as u32, t as u32, CR as u8));
            }
        }
    }
    Ok(())
}
