//! The tiled Gram engine shared by every dense Gram routine.
//!
//! The output is cut into tiles. For each tile one f32 GEMM (faer's
//! single-threaded `matmul`, whose SIMD kernels include AVX-512) computes the
//! inner products `X_t Y_tᵀ` into a scratch buffer that stays in cache, and
//! the elementwise map of every requested kernel turns that buffer into the
//! kernel's output tile, written once. Several kernels therefore share one
//! GEMM ([`super::gram_many`]). Tiles run in parallel on the rayon pool
//! (small jobs run on the calling thread).
//!
//! * Rectangular: tiles of `RECT_ROWS × RECT_COLS`, mapped straight into
//!   the output rows.
//! * Symmetric: square tiles on and above the diagonal; each is mapped into
//!   a second scratch buffer, copied to its place and, transposed, to the
//!   mirror place below the diagonal. No other pass over the output.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::map::{b1_f32, Prepared};

/// Rows of a rectangular tile (also the row block of sparse builds).
pub(crate) const RECT_ROWS: usize = 128;
/// Columns of a rectangular tile.
const RECT_COLS: usize = 512;
/// Side of a symmetric tile.
const SYM_TILE: usize = 256;
/// Tiles with fewer rows use direct dot products instead of GEMM.
const GEMM_MIN_ROWS: usize = 4;
/// Jobs below this many multiply-adds run on the calling thread.
const PARALLEL_MIN_FLOPS: usize = 1 << 21;

/// A kernel with its per-row and per-column aux numbers (`(ax[i], bx[i])`
/// for row `i`, see [`Prepared::aux`]), and whether its map reads the inner
/// products of the rescaled inputs ([`Job::scaled`]).
pub(crate) struct Mapped {
    pub prep: Prepared,
    pub ax: Vec<f32>,
    pub bx: Vec<f32>,
    pub ay: Vec<f32>,
    pub by: Vec<f32>,
    pub scaled: bool,
}

/// The inputs of a Gram job: `x` (`nx × d`) against `y` (`ny × d`),
/// row-major, with one [`Mapped`] per requested kernel.
pub(crate) struct Job<'a> {
    pub x: &'a [f32],
    pub nx: usize,
    pub y: &'a [f32],
    pub ny: usize,
    pub d: usize,
    pub kernels: Vec<Mapped>,
    /// Copies of `x` and `y` with rows divided by powers of two, for the
    /// normalised kernels (see `super::map`); `None` when no row needs it.
    pub scaled: Option<Scaled>,
}

/// The rescaled copies of a [`Job`]'s inputs; `y = None` when `y` is `x`.
pub(crate) struct Scaled {
    pub x: Vec<f32>,
    pub y: Option<Vec<f32>>,
}

impl Job<'_> {
    /// The row-major `(x, y)` whose inner products a kernel maps: the
    /// rescaled copies for a kernel with [`Mapped::scaled`], else the
    /// inputs as they are.
    fn operands(&self, scaled: bool) -> (&[f32], &[f32]) {
        match &self.scaled {
            Some(s) if scaled => (&s.x, s.y.as_deref().unwrap_or(&s.x)),
            _ => (self.x, self.y),
        }
    }

    /// Whether some kernel maps the inner products of the inputs as they
    /// are, and whether some maps those of the rescaled copies.
    fn gemms(&self) -> (bool, bool) {
        let scaled = self.kernels.iter().filter(|m| m.scaled).count();
        (scaled < self.kernels.len(), scaled > 0)
    }

    /// The inner products of rows `r0..r1` with columns `c0..c1` into
    /// `plain` (inputs as they are) and `scaled` (rescaled copies), each
    /// computed only when a kernel reads it.
    fn inner_products(
        &self,
        (r0, r1): (usize, usize),
        (c0, c1): (usize, usize),
        plain: &mut Vec<f32>,
        scaled: &mut Vec<f32>,
    ) {
        let d = self.d;
        let (want_plain, want_scaled) = self.gemms();
        let len = (r1 - r0) * (c1 - c0);
        for (want, out, pick) in [(want_plain, plain, false), (want_scaled, scaled, true)] {
            if want {
                let (x, y) = self.operands(pick);
                out.resize(len, 0.0);
                inner_products(&x[r0 * d..r1 * d], &y[c0 * d..c1 * d], d, &mut out[..len]);
            }
        }
    }
}

/// A raw output pointer shared by the tasks; each task writes a region no
/// other task touches.
#[derive(Clone, Copy)]
struct SyncPtr(*mut f32);
// SAFETY: tasks write disjoint regions (see `fill_rect`/`fill_symmetric`).
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

impl SyncPtr {
    /// The `len` elements from `offset`.
    ///
    /// # Safety
    /// The range is in bounds and no other live reference overlaps it.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, offset: usize, len: usize) -> &mut [f32] {
        std::slice::from_raw_parts_mut(self.0.add(offset), len)
    }
}

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

/// `ip ← xb ybᵀ` (`rows × w`, row-major) for `xb` (`rows × d`) and `yb`
/// (`w × d`).
fn inner_products(xb: &[f32], yb: &[f32], d: usize, ip: &mut [f32]) {
    let rows = xb.len() / d;
    let w = yb.len() / d;
    if rows < GEMM_MIN_ROWS {
        // Too few rows for GEMM's packing of `yb` to pay off.
        for (xr, out) in xb.chunks_exact(d).zip(ip.chunks_exact_mut(w)) {
            for (v, yr) in out.iter_mut().zip(yb.chunks_exact(d)) {
                *v = dot(xr, yr);
            }
        }
        return;
    }
    let a = MatRef::from_row_major_slice(xb, rows, d);
    let b = MatRef::from_row_major_slice(yb, w, d);
    let c = MatMut::from_row_major_slice_mut(&mut ip[..rows * w], rows, w);
    // One thread per tile: the tiles themselves run in parallel.
    matmul(c, Accum::Replace, a, b.transpose(), 1.0f32, Par::Seq);
}

/// Below this fraction of `‖x‖² + ‖y‖²`, a squared distance obtained from
/// norms and an f32 inner product is dominated by cancellation; the
/// B1-spline (whose `√` magnifies that error near 0) recomputes it directly.
const REFINE: f32 = 1e-2;

/// The squared distance `max(0, s − 2 ip)` of a pair (`s = ‖x‖² + ‖y‖²`),
/// recomputed from the vectors `xr` and `yr` in f64 when it is below
/// [`REFINE`]` · s`.
#[inline(always)]
fn refined_sq_dist(s: f32, ip: f32, xr: &[f32], yr: &[f32]) -> f32 {
    let d2 = (s - 2.0 * ip).max(0.0);
    if d2 >= REFINE * s {
        return d2;
    }
    xr.iter()
        .zip(yr)
        .map(|(&a, &b)| {
            let t = f64::from(a) - f64::from(b);
            t * t
        })
        .sum::<f64>() as f32
}

/// The B1-spline map of one row, recomputing close pairs' distances from
/// the vectors in f64 (see [`REFINE`]).
fn b1_row(inv_h: f32, ip: &[f32], dst: &mut [f32], ax: f32, ay: &[f32], xr: &[f32], ys: &[f32]) {
    let d = xr.len();
    for (j, ((v, &p), &n)) in dst.iter_mut().zip(ip).zip(ay).enumerate() {
        *v = b1_f32(
            refined_sq_dist(ax + n, p, xr, &ys[j * d..(j + 1) * d]),
            inv_h,
        );
    }
}

/// Maps row `r` of a tile (`ip`, inner products of input row `gr` with
/// columns `c0..c0 + ip.len()`, of the inputs [`Job::operands`] gives `m`)
/// into `dst` for kernel `m`.
#[inline]
fn map_row(job: &Job, m: &Mapped, gr: usize, c0: usize, ip: &[f32], dst: &mut [f32]) {
    let w = ip.len();
    let ay = &m.ay[c0..c0 + w];
    if let Prepared::B1 { inv_h } = m.prep {
        let d = job.d;
        let xr = &job.x[gr * d..(gr + 1) * d];
        let ys = &job.y[c0 * d..(c0 + w) * d];
        b1_row(inv_h, ip, dst, m.ax[gr], ay, xr, ys);
    } else {
        let by = &m.by[c0..c0 + w];
        m.prep.map_into(ip, dst, (m.ax[gr], m.bx[gr]), (ay, by));
    }
}

/// The non-zeros of rows `r0..r1` of the first kernel of `job`, tile by
/// tile on the calling thread: row after row, each row's column indices
/// (ascending) are appended to `idx` and its values to `val`, and its
/// count to `counts`. The values are the same bits as [`fill_rect`]'s
/// (same tiles, same map), without writing the dense rows: the B1-spline
/// skips, before any square root, every pair whose squared distance is
/// clearly beyond `h²` (see [`b1_row_sparse`]); other kernels are mapped
/// one tile row at a time into scratch and compacted.
///
/// With `upper` (for `y = x`), only columns `j >= i` of row `i` are
/// computed and kept: tiles start at column `r0`, so the GEMM work is
/// about halved.
pub(crate) fn sparse_row_block(
    job: &Job,
    r0: usize,
    r1: usize,
    upper: bool,
    s: &mut SparseScratch,
) {
    let (d, ny) = (job.d, job.ny);
    let m = &job.kernels[0];
    let rows = r1 - r0;
    let (x, y) = job.operands(m.scaled);
    s.ip.resize(RECT_ROWS * RECT_COLS, 0.0);
    s.rows.resize_with(rows.max(s.rows.len()), Default::default);
    s.rows.iter_mut().for_each(|(i, v)| {
        i.clear();
        v.clear();
    });
    let thr = match m.prep {
        Prepared::B1 { inv_h } => b1_skip_threshold(inv_h),
        _ => 0.0,
    };
    let mut c0 = if upper { r0 } else { 0 };
    while c0 < ny {
        let c1 = (c0 + RECT_COLS).min(ny);
        let w = c1 - c0;
        let ipt = &mut s.ip[..rows * w];
        inner_products(&x[r0 * d..r1 * d], &y[c0 * d..c1 * d], d, ipt);
        for (r, src) in ipt.chunks_exact(w).enumerate() {
            let gr = r0 + r;
            // First column kept in this row of the tile.
            let cc = if upper { gr.clamp(c0, c1) } else { c0 };
            let src = &src[cc - c0..];
            let (idx, val) = &mut s.rows[r];
            if let Prepared::B1 { inv_h } = m.prep {
                let xr = &job.x[gr * d..(gr + 1) * d];
                let ys = &job.y[cc * d..c1 * d];
                let b1 = B1Sparse {
                    inv_h,
                    thr,
                    ax: m.ax[gr],
                    c0: cc,
                };
                b1_row_sparse(&b1, src, &m.ay[cc..c1], xr, ys, idx, val);
            } else {
                let wr = c1 - cc;
                s.mapped.resize(wr, 0.0);
                map_row(job, m, gr, cc, src, &mut s.mapped[..wr]);
                for (j, &v) in s.mapped[..wr].iter().enumerate() {
                    if v != 0.0 {
                        idx.push((cc + j) as u32);
                        val.push(v);
                    }
                }
            }
        }
        c0 = c1;
    }
    for (idx, val) in &s.rows[..rows] {
        s.counts.push(idx.len());
        s.idx.extend_from_slice(idx);
        s.val.extend_from_slice(val);
    }
}

/// Scratch and output of [`sparse_row_block`]: `counts`, `idx` and `val`
/// accumulate the CSR pieces of every block given to one worker.
#[derive(Default)]
pub(crate) struct SparseScratch {
    ip: Vec<f32>,
    mapped: Vec<f32>,
    rows: Vec<(Vec<u32>, Vec<f32>)>,
    pub counts: Vec<usize>,
    pub idx: Vec<u32>,
    pub val: Vec<f32>,
}

/// A squared distance (from norms and an inner product, before any
/// refinement) above which the B1-spline value is certainly 0: `h² (1 +
/// 10⁻⁴)`. Beyond it `√d² · (1/h)` exceeds 1 by far more than the f32
/// rounding of the square root and the product.
fn b1_skip_threshold(inv_h: f32) -> f32 {
    let h = 1.0 / f64::from(inv_h);
    (h * h * (1.0 + 1e-4)) as f32
}

/// The parameters of [`b1_row_sparse`] for one input row.
struct B1Sparse {
    inv_h: f32,
    thr: f32,
    ax: f32,
    c0: usize,
}

/// [`b1_row`] writing only the non-zeros (columns `c0 + j`, ascending).
/// A pair is skipped without a square root when its squared distance is
/// above [`b1_skip_threshold`] and not close enough to 0 to be refined;
/// every other pair gets exactly [`b1_row`]'s value.
fn b1_row_sparse(
    b: &B1Sparse,
    ip: &[f32],
    ay: &[f32],
    xr: &[f32],
    ys: &[f32],
    idx: &mut Vec<u32>,
    val: &mut Vec<f32>,
) {
    let d = xr.len();
    for (j, (&p, &n)) in ip.iter().zip(ay).enumerate() {
        let s = b.ax + n;
        let d2 = (s - 2.0 * p).max(0.0);
        if d2 > b.thr && d2 >= REFINE * s {
            continue;
        }
        let v = b1_f32(refined_sq_dist(s, p, xr, &ys[j * d..(j + 1) * d]), b.inv_h);
        if v != 0.0 {
            idx.push((b.c0 + j) as u32);
            val.push(v);
        }
    }
}

/// Runs `task` on every item, in parallel when the job is large enough,
/// with one scratch pair per worker.
fn run<T: Sync>(items: &[T], flops: usize, task: impl Fn(&T, &mut Scratch) + Sync) {
    if flops < PARALLEL_MIN_FLOPS || items.len() == 1 {
        let mut s = Scratch::default();
        items.iter().for_each(|t| task(t, &mut s));
    } else {
        items
            .par_iter()
            .for_each_init(Scratch::default, |s, t| task(t, s));
    }
}

#[derive(Default)]
struct Scratch {
    /// Inner products of the inputs as they are, and of their rescaled
    /// copies ([`Job::scaled`]).
    ip: Vec<f32>,
    ip_scaled: Vec<f32>,
    mapped: Vec<f32>,
}

/// Fills `outs[k]` (each `nx × ny`, row-major) with the Gram matrix of
/// kernel `k` of `job`.
///
/// # Complexity
/// One GEMM of O(nx · ny · d) for all kernels plus O(nx · ny) per kernel.
pub(crate) fn fill_rect(job: &Job, outs: &mut [&mut [f32]]) {
    let (nx, ny, d) = (job.nx, job.ny, job.d);
    let (plain, scaled) = job.gemms();
    let gemms = usize::from(plain) + usize::from(scaled);
    debug_assert!(outs.iter().all(|o| o.len() == nx * ny));
    let ptrs: Vec<SyncPtr> = outs.iter_mut().map(|o| SyncPtr(o.as_mut_ptr())).collect();
    let tiles: Vec<(usize, usize)> = (0..nx.div_ceil(RECT_ROWS))
        .flat_map(|i| (0..ny.div_ceil(RECT_COLS)).map(move |j| (i, j)))
        .collect();
    run(&tiles, nx * ny * d * gemms, |&(i, j), s| {
        let (r0, c0) = (i * RECT_ROWS, j * RECT_COLS);
        let (r1, c1) = ((r0 + RECT_ROWS).min(nx), (c0 + RECT_COLS).min(ny));
        let w = c1 - c0;
        job.inner_products((r0, r1), (c0, c1), &mut s.ip, &mut s.ip_scaled);
        for (m, p) in job.kernels.iter().zip(&ptrs) {
            let ip = if m.scaled { &s.ip_scaled } else { &s.ip };
            for (r, src) in ip.chunks_exact(w).enumerate() {
                // SAFETY: row r0 + r, columns c0..c1 belong to this tile only.
                let dst = unsafe { p.slice((r0 + r) * ny + c0, w) };
                map_row(job, m, r0 + r, c0, src, dst);
            }
        }
    });
}

/// Fills `outs[k]` (each `n × n`) with the symmetric Gram matrix of kernel
/// `k` of `job` (which must have `y = x`), computing only tiles on and
/// above the diagonal. The result is exactly symmetric and its diagonal is
/// `diag[k][i]`.
///
/// # Complexity
/// About half the GEMM and kernel evaluations of [`fill_rect`].
pub(crate) fn fill_symmetric(job: &Job, diag: &[Vec<f32>], outs: &mut [&mut [f32]]) {
    let (n, d) = (job.nx, job.d);
    debug_assert!(outs.iter().all(|o| o.len() == n * n));
    let (plain, scaled) = job.gemms();
    let gemms = usize::from(plain) + usize::from(scaled);
    let ptrs: Vec<SyncPtr> = outs.iter_mut().map(|o| SyncPtr(o.as_mut_ptr())).collect();
    let nb = n.div_ceil(SYM_TILE);
    let tiles: Vec<(usize, usize)> = (0..nb).flat_map(|i| (i..nb).map(move |j| (i, j))).collect();
    run(&tiles, n * n * d / 2 * gemms, |&(i, j), s| {
        let (r0, c0) = (i * SYM_TILE, j * SYM_TILE);
        let (r1, c1) = ((r0 + SYM_TILE).min(n), (c0 + SYM_TILE).min(n));
        let (rows, w) = (r1 - r0, c1 - c0);
        s.mapped.resize(rows * w, 0.0);
        job.inner_products((r0, r1), (c0, c1), &mut s.ip, &mut s.ip_scaled);
        for ((m, p), dg) in job.kernels.iter().zip(&ptrs).zip(diag) {
            let ip = if m.scaled { &s.ip_scaled } else { &s.ip };
            let rows_iter = ip.chunks_exact(w).zip(s.mapped.chunks_exact_mut(w));
            for (r, (src, dst)) in rows_iter.enumerate() {
                map_row(job, m, r0 + r, c0, src, dst);
            }
            let t = &s.mapped;
            if i == j {
                // GEMM need not be bitwise symmetric: use the upper triangle.
                for r in 0..rows {
                    // SAFETY: the diagonal tile's rows belong to this task only.
                    let dst = unsafe { p.slice((r0 + r) * n + c0, w) };
                    for (c, v) in dst.iter_mut().enumerate() {
                        *v = if c >= r { t[r * w + c] } else { t[c * w + r] };
                    }
                    dst[r] = dg[r0 + r];
                }
            } else {
                for (r, src) in t.chunks_exact(w).enumerate() {
                    // SAFETY: tile (i, j), j > i, is written by this task only.
                    unsafe { p.slice((r0 + r) * n + c0, w) }.copy_from_slice(src);
                }
                for c in 0..w {
                    // SAFETY: its mirror tile (j, i) likewise.
                    let dst = unsafe { p.slice((c0 + c) * n + r0, rows) };
                    for (r, v) in dst.iter_mut().enumerate() {
                        *v = t[r * w + c];
                    }
                }
            }
        }
    });
}
