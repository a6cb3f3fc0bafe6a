//! The inner loops of sparse scoring `S = K α` (see [`super::SparseGram`]).
//!
//! The coefficients of a block of at most [`LABEL_BLOCK`] labels are copied
//! once per call into a zero-padded, 64-byte aligned `columns × P` buffer
//! (O(columns · P), cheap next to O(nnz · P)). The matrix is read as column
//! panels (`sparse_panels`): chunk by chunk of rows, panel by panel, each
//! tile (the non-zeros of one row in one panel) is one pass over its
//! non-zeros: for each `(j, K_ij)`, broadcast `K_ij` and multiply-add the
//! `P` coefficients of column `j` into `P` sums held in registers, then add
//! the sums to the row's partial scores. A panel's coefficients stay in L1
//! while all the chunk's tiles in it are scored.
//!
//! The instruction set is chosen at run time ([`Isa::detect`]):
//!
//! * AVX-512F: zmm registers of 16 f32 (8 f64); 26 labels padded to 32 f32
//!   are two registers, so one non-zero costs two fused multiply-adds.
//! * AVX2 and FMA: ymm registers of 8 f32 (4 f64).
//! * Otherwise a portable loop takes each tile's sum in the order of its
//!   non-zeros, without FMA.
//!
//! Both SIMD paths share one loop body (`sparse_simd`), generic over the
//! register type, with several independent sets of sums (consecutive
//! non-zeros of a tile go to different sets, added at the end) so that
//! fused multiply-adds do not wait on each other's latency. Chunks are
//! split into parallel tasks of about equal numbers of non-zeros.
//!
//! Every path gives the exact sum up to rounding; the bits may differ
//! between paths (order of summation and fused rounding), never between
//! runs on the same machine (a row's sum does not depend on the split into
//! tasks).

use super::sparse_panels::{Panels, Tile, CHUNK_ROWS};
use rayon::prelude::*;
use std::sync::Mutex;

#[cfg(target_arch = "x86_64")]
use super::sparse_simd as simd;

/// Labels accumulated in registers per pass over a tile's non-zeros.
pub(crate) const LABEL_BLOCK: usize = 32;
/// Parallel tasks per worker thread (about equal numbers of non-zeros).
const TASKS_PER_THREAD: usize = 8;
/// Scoring jobs below this many multiply-adds run on the calling thread.
const PARALLEL_MIN_WORK: usize = 1 << 16;
/// Alignment of the padded coefficients (one cache line).
const ALIGN: usize = 64;

/// An instruction set of the scoring loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// Scalar loop, no FMA.
    Portable,
    /// ymm registers with fused multiply-adds.
    Avx2,
    /// zmm registers with fused multiply-adds.
    Avx512,
}

impl Isa {
    /// The widest instruction set this CPU supports.
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every instruction set this CPU supports (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut all = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                all.push(Isa::Avx512);
            }
        }
        all
    }
}

/// The number types of the scoring loops (f64 and f32).
pub(crate) trait Acc:
    Copy + Default + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// Labels are padded to a multiple of this (one register of `isa`; 4
    /// f64 or 8 f32 on the portable path).
    fn lanes(isa: Isa) -> usize;
    fn of(v: f32) -> Self;

    /// Adds the sums of the tiles of `chunk` to the partial scores `acc`
    /// (row `r` of the chunk at `acc[r · p..(r + 1) · p]`), from the padded
    /// coefficients `ap` (stride `p`).
    ///
    /// # Safety
    /// The CPU supports `isa` (not [`Isa::Portable`]); `p` is a multiple
    /// of `lanes(isa)` with `p <= 32`; `ap` and `acc` are 64-byte aligned;
    /// every column `j` of the chunk satisfies `(j + 1) · p <= ap.len()`
    /// and every tile row `r` satisfies `(r + 1) · p <= acc.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn tiles_simd(isa: Isa, p: usize, chunk: Chunk<'_>, ap: &[Self], acc: &mut [Self]);

    /// The reusable coefficient buffer of this number type.
    fn scratch(s: &Scratch) -> &Mutex<Vec<Self>>;
}

/// The tiles of one chunk (see `sparse_panels`): its non-zeros start at
/// `start` in `local` and `values`.
#[derive(Clone, Copy)]
pub(crate) struct Chunk<'a> {
    pub tiles: &'a [Tile],
    pub start: usize,
    pub local: &'a [u8],
    pub values: &'a [f32],
}

/// The labels of an output row written by one pass: `l0..l1` of `labels`.
#[derive(Clone, Copy)]
pub(crate) struct Labels {
    pub labels: usize,
    pub l0: usize,
    pub l1: usize,
}

/// `$entry::<$simd, NV, SETS>(chunk, ap, acc)` for the number `$nv` of
/// registers per coefficient row, each arm naming its sets of sums.
#[cfg(target_arch = "x86_64")]
macro_rules! by_registers {
    ($entry:ident, $simd:ty, $nv:expr, ($chunk:ident, $ap:ident, $acc:ident),
     $($n:literal => $sets:literal),+) => {
        match $nv {
            $($n => simd::$entry::<$simd, $n, $sets>($chunk, $ap, $acc),)+
            _ => unreachable!("at most 32 padded labels"),
        }
    };
}

impl Acc for f64 {
    #[inline(always)]
    fn lanes(isa: Isa) -> usize {
        match isa {
            Isa::Avx512 => 8,
            _ => 4,
        }
    }

    #[inline(always)]
    fn of(v: f32) -> Self {
        f64::from(v)
    }

    fn scratch(s: &Scratch) -> &Mutex<Vec<f64>> {
        &s.f64
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tiles_simd(isa: Isa, p: usize, chunk: Chunk<'_>, ap: &[f64], acc: &mut [f64]) {
        // Sums in at most 16 registers, the rest for loads and broadcasts.
        match isa {
            Isa::Avx512 => by_registers!(avx512, simd::Z64, p / 8, (chunk, ap, acc),
                1 => 8, 2 => 4, 3 => 4, 4 => 4),
            _ => by_registers!(avx2, simd::Y64, p / 4, (chunk, ap, acc),
                1 => 4, 2 => 4, 3 => 2, 4 => 2, 5 => 2, 6 => 2, 7 => 1, 8 => 1),
        }
    }
}

impl Acc for f32 {
    #[inline(always)]
    fn lanes(isa: Isa) -> usize {
        match isa {
            Isa::Avx512 => 16,
            _ => 8,
        }
    }

    #[inline(always)]
    fn of(v: f32) -> Self {
        v
    }

    fn scratch(s: &Scratch) -> &Mutex<Vec<f32>> {
        &s.f32
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tiles_simd(isa: Isa, p: usize, chunk: Chunk<'_>, ap: &[f32], acc: &mut [f32]) {
        match isa {
            Isa::Avx512 => by_registers!(avx512, simd::Z32, p / 16, (chunk, ap, acc),
                1 => 8, 2 => 4),
            _ => by_registers!(avx2, simd::Y32, p / 8, (chunk, ap, acc),
                1 => 4, 2 => 4, 3 => 2, 4 => 2),
        }
    }
}

/// Reusable buffers of padded coefficients, one per number type, so that
/// repeated scoring calls neither allocate nor page-fault them (a call
/// that finds its buffer in use takes a fresh one).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    f32: Mutex<Vec<f32>>,
    f64: Mutex<Vec<f64>>,
}

impl Clone for Scratch {
    /// A clone starts with empty buffers.
    fn clone(&self) -> Self {
        Scratch::default()
    }
}

impl Scratch {
    /// Bytes held by the buffers (0 while another call holds one).
    pub(crate) fn nbytes(&self) -> usize {
        let a = self.f32.try_lock().map_or(0, |v| v.capacity() * 4);
        let b = self.f64.try_lock().map_or(0, |v| v.capacity() * 8);
        a + b
    }
}

/// Fills `buf` with a zero-padded `m × p` copy of labels `l0..l1` of
/// `alpha` (`m × labels`, or `labels × m` if `label_major`) and returns
/// the copy, aligned to [`ALIGN`] bytes: row `c` holds the coefficients of
/// column `cols[c]` if `cols` is given, of `c` if not. Every value of the
/// copy is written, so `buf` may hold anything.
///
/// # Complexity
/// O(m · p).
pub(crate) fn pad_into<'b, T: Acc>(
    buf: &'b mut Vec<T>,
    alpha: &[T],
    m: usize,
    lab: Labels,
    p: usize,
    label_major: bool,
    cols: Option<&[u32]>,
) -> &'b [T] {
    let len = m * p;
    let extra = ALIGN / std::mem::size_of::<T>();
    if buf.len() < len + extra {
        buf.resize(len + extra, T::default());
    }
    let off = buf.as_ptr().align_offset(ALIGN).min(extra);
    let w = lab.l1 - lab.l0;
    let dst = &mut buf[off..off + len];
    let col = |c: usize| cols.map_or(c, |cols| cols[c] as usize);
    if label_major {
        for row in dst.chunks_exact_mut(p) {
            row[w..].fill(T::default());
        }
        for t in 0..w {
            let src = &alpha[(lab.l0 + t) * m..(lab.l0 + t + 1) * m];
            for (c, row) in dst.chunks_exact_mut(p).enumerate() {
                row[t] = src[col(c)];
            }
        }
    } else {
        for (c, row) in dst.chunks_exact_mut(p).enumerate() {
            let j = col(c) * lab.labels;
            row[..w].copy_from_slice(&alpha[j + lab.l0..j + lab.l1]);
            row[w..].fill(T::default());
        }
    }
    &buf[off..off + len]
}

/// Where the scores of a block of rows go: block row `r` (row `r0 + r` in
/// the scoring order) is output row `map[r0 + r]`, or `r0 + r` without a
/// map, in a row-major output of `labels` columns starting at `ptr`.
pub(crate) struct Dest<'a, T> {
    ptr: *mut T,
    map: Option<&'a [u32]>,
    r0: usize,
}

impl<T> Clone for Dest<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Dest<'_, T> {}

// SAFETY: a `Dest` is shared by tasks that write disjoint output rows (the
// map is a permutation and the tasks' row ranges are disjoint), while the
// output is mutably borrowed by `Job::run`.
unsafe impl<T: Send> Send for Dest<'_, T> {}
unsafe impl<T: Send> Sync for Dest<'_, T> {}

impl<T: Copy> Dest<'_, T> {
    /// Writes `s[..l1 - l0]` to labels `l0..l1` of the output row of block
    /// row `r`.
    ///
    /// # Safety
    /// That output row exists, `s` holds at least `l1 - l0` values and no
    /// other thread accesses those labels of that row.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, r: usize, lab: Labels, s: &[T]) {
        let i = self.map.map_or(self.r0 + r, |m| m[self.r0 + r] as usize);
        let w = lab.l1 - lab.l0;
        debug_assert!(s.len() >= w);
        // SAFETY: see the contract above.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), self.ptr.add(i * lab.labels + lab.l0), w)
        };
    }
}

/// Row boundaries `0 = b_0 <= … <= b_tasks = rows` splitting the rows into
/// `tasks` runs of about equal cost, a row costing its non-zeros plus one.
///
/// # Complexity
/// O(tasks · log rows).
fn balanced_bounds(indptr: &[usize], tasks: usize) -> Vec<usize> {
    let rows = indptr.len() - 1;
    let total = indptr[rows] + rows;
    let mut bounds = Vec::with_capacity(tasks + 1);
    bounds.push(0);
    for c in 1..tasks {
        let target = total * c / tasks;
        let r = partition_rows(indptr, target);
        bounds.push(r.max(bounds[bounds.len() - 1]));
    }
    bounds.push(rows);
    bounds
}

/// The first row `r` with `indptr[r] + r >= target`.
fn partition_rows(indptr: &[usize], target: usize) -> usize {
    let (mut lo, mut hi) = (0, indptr.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if indptr[mid] + mid < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A chunk's partial scores: [`CHUNK_ROWS`] rows of at most
/// [`LABEL_BLOCK`] labels, aligned to a cache line.
#[repr(C, align(64))]
struct Partial<T>([T; CHUNK_ROWS * LABEL_BLOCK]);

/// A scoring job: coefficients `alpha` of `m` columns (`m × labels`, or
/// `labels × m` if `label_major`), checked, and the loops of `isa` (which
/// the CPU must support).
pub(crate) struct Job<'a, T> {
    pub isa: Isa,
    pub m: usize,
    pub alpha: &'a [T],
    pub labels: usize,
    pub label_major: bool,
    /// Column `c` of the panels is column `cols[c]` of `alpha`.
    pub cols: Option<&'a [u32]>,
    /// Row `r` of the panels is output row `rows[r]` (a permutation).
    pub rows: Option<&'a [u32]>,
}

impl<T: Acc> Job<'_, T> {
    /// `out ← K α` (`rows × labels`, row-major, rows permuted by
    /// `self.rows`) for the matrix stored in `panels`, whose column
    /// indices are `< m` (a [`super::SparseGram`] invariant), with the
    /// padded coefficients in `scratch`.
    ///
    /// # Complexity
    /// O(nnz · labels + tiles · labels + m · labels), in parallel over
    /// runs of chunks of about equal numbers of non-zeros.
    pub(crate) fn run(&self, panels: &Panels, out: &mut [T], scratch: &mut Vec<T>) {
        let (labels, isa) = (self.labels, self.isa);
        let nrows = panels.nrows;
        assert_eq!(out.len(), nrows * labels, "scores: output shape");
        if let Some(map) = self.rows {
            assert_eq!(map.len(), nrows, "scores: row map");
        }
        let tasks = if panels.nnz() * labels < PARALLEL_MIN_WORK {
            1
        } else {
            rayon::current_num_threads() * TASKS_PER_THREAD
        };
        let bounds = balanced_bounds(&panels.chunk_nnz, tasks);
        let base = Dest {
            ptr: out.as_mut_ptr(),
            map: self.rows,
            r0: 0,
        };
        let mut l0 = 0;
        while l0 < labels {
            let l1 = (l0 + LABEL_BLOCK).min(labels);
            let lab = Labels { labels, l0, l1 };
            let p = (l1 - l0).next_multiple_of(T::lanes(isa));
            let m = self.m;
            let ap = pad_into(scratch, self.alpha, m, lab, p, self.label_major, self.cols);
            let task = |w: &[usize]| {
                let mut part = Box::new(Partial([T::default(); CHUNK_ROWS * LABEL_BLOCK]));
                for c in w[0]..w[1] {
                    chunk_with(isa, p, panels, c, ap, &mut part.0, base, lab);
                }
            };
            if tasks == 1 {
                bounds.windows(2).for_each(task);
            } else {
                bounds.par_windows(2).for_each(task);
            }
            l0 = l1;
        }
    }
}

/// `out ← K α` (`rows × labels`, row-major) for the CSR matrix
/// `(indptr, indices, values)` (ascending columns in each row) with `m`
/// columns and checked coefficients `alpha` (`m × labels`, or `labels × m`
/// if `label_major`), with the loops of `isa` (see [`Job::run`]).
#[cfg(test)]
pub(crate) fn scores_into<T: Acc>(
    isa: Isa,
    csr: (&[usize], &[u32], &[f32]),
    m: usize,
    alpha: &[T],
    labels: usize,
    label_major: bool,
    out: &mut [T],
) {
    let job = Job {
        isa,
        m,
        alpha,
        labels,
        label_major,
        cols: None,
        rows: None,
    };
    job.run(&Panels::new(csr), out, &mut Vec::new());
}

/// Scores chunk `c` of `panels` with the loops of `isa` into the output
/// rows of `out`, using `part` for its partial scores.
#[allow(clippy::too_many_arguments)]
fn chunk_with<T: Acc>(
    isa: Isa,
    p: usize,
    panels: &Panels,
    c: usize,
    ap: &[T],
    part: &mut [T; CHUNK_ROWS * LABEL_BLOCK],
    out: Dest<'_, T>,
    lab: Labels,
) {
    let r0 = c * CHUNK_ROWS;
    let nr = (panels.nrows - r0).min(CHUNK_ROWS);
    let acc = &mut part[..nr * p];
    acc.fill(T::default());
    let (t0, t1) = (panels.chunk_ptr[c], panels.chunk_ptr[c + 1]);
    let chunk = Chunk {
        tiles: &panels.tiles[t0..t1],
        start: panels.chunk_nnz[c],
        local: &panels.local,
        values: &panels.values,
    };
    let mut done = false;
    #[cfg(target_arch = "x86_64")]
    {
        if isa != Isa::Portable {
            // SAFETY: `isa` is supported (callers pass `Isa::detect()` or
            // a member of `Isa::available()`); `p` is a multiple of its
            // lanes and at most 32; `ap` is aligned by `pad_into` and holds
            // `m · p` values, every column being `< m`; `part` is aligned
            // and every tile row is `< nr`.
            unsafe { T::tiles_simd(isa, p, chunk, ap, acc) };
            done = true;
        }
    }
    if !done {
        tiles_portable(p, chunk, ap, acc);
    }
    for (r, s) in acc.chunks_exact(p).enumerate() {
        // SAFETY: the chunk's rows belong to this task alone (chunks are
        // split between tasks, and the row map is a permutation).
        unsafe { out.write(r0 + r, lab, s) };
    }
}

/// The portable path of [`chunk_with`]: each tile's sums in the order of
/// its non-zeros (no FMA), then added to its row's partial scores.
fn tiles_portable<T: Acc>(p: usize, chunk: Chunk<'_>, ap: &[T], acc: &mut [T]) {
    let mut b = chunk.start;
    for tile in chunk.tiles {
        let (idx, val) = (&chunk.local[b..tile.end], &chunk.values[b..tile.end]);
        let a = &ap[tile.col0 as usize * p..];
        let s = &mut acc[tile.row as usize * p..][..p];
        match p {
            4 => tile_fixed::<T, 4>(idx, val, a, s),
            8 => tile_fixed::<T, 8>(idx, val, a, s),
            12 => tile_fixed::<T, 12>(idx, val, a, s),
            16 => tile_fixed::<T, 16>(idx, val, a, s),
            20 => tile_fixed::<T, 20>(idx, val, a, s),
            24 => tile_fixed::<T, 24>(idx, val, a, s),
            28 => tile_fixed::<T, 28>(idx, val, a, s),
            _ => tile_fixed::<T, 32>(idx, val, a, s),
        }
        b = tile.end;
    }
}

/// `s[y] += Σ_t val[t] · a[idx[t] · P + y]`, each sum in the order of the
/// non-zeros (no FMA), all `P` sums in registers.
#[inline(always)]
fn tile_fixed<T: Acc, const P: usize>(idx: &[u8], val: &[f32], a: &[T], s: &mut [T]) {
    let mut acc = [T::default(); P];
    for (&j, &k) in idx.iter().zip(val) {
        let a = &a[usize::from(j) * P..][..P];
        let k = T::of(k);
        for t in 0..P {
            acc[t] = acc[t] + k * a[t];
        }
    }
    for (s, a) in s.iter_mut().zip(acc) {
        *s = *s + a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random CSR matrix (`rows × m`, some rows empty, row lengths of
    /// every residue modulo 8) with values in (0, 1].
    fn csr(rows: usize, m: usize, seed: u64) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for _ in 0..rows {
            for j in 0..m {
                if next() % 3 == 0 {
                    idx.push(j as u32);
                    val.push(((next() % 1000) + 1) as f32 / 1000.0);
                }
            }
            ptr.push(idx.len());
        }
        (ptr, idx, val)
    }

    /// Naive `K α` in f64 and the bound `Σ_j |K_ij α_jl|`.
    fn naive(
        c: &(Vec<usize>, Vec<u32>, Vec<f32>),
        alpha: &[f64],
        labels: usize,
    ) -> Vec<(f64, f64)> {
        let rows = c.0.len() - 1;
        let mut out = vec![(0.0, 0.0); rows * labels];
        for i in 0..rows {
            for t in c.0[i]..c.0[i + 1] {
                let (j, k) = (c.1[t] as usize, f64::from(c.2[t]));
                for l in 0..labels {
                    let o = &mut out[i * labels + l];
                    o.0 += k * alpha[j * labels + l];
                    o.1 += (k * alpha[j * labels + l]).abs();
                }
            }
        }
        out
    }

    /// Checks every instruction set, both coefficient layouts and f32
    /// against the naive sums of the CSR matrix `c` with `m` columns.
    fn check_all_paths(c: &(Vec<usize>, Vec<u32>, Vec<f32>), m: usize, labels: usize, seed: usize) {
        let rows = c.0.len() - 1;
        let alpha: Vec<f64> = (0..m * labels)
            .map(|i| ((i * 7919 + seed) % 201) as f64 / 100.0 - 1.0)
            .collect();
        let alpha32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
        let alpha_lm: Vec<f64> = (0..labels * m)
            .map(|t| alpha[(t % m) * labels + t / m])
            .collect();
        let want = naive(c, &alpha, labels);
        let csr = (&c.0[..], &c.1[..], &c.2[..]);
        for isa in Isa::available() {
            let mut got = vec![f64::NAN; rows * labels];
            scores_into(isa, csr, m, &alpha, labels, false, &mut got);
            let mut lm = vec![f64::NAN; rows * labels];
            scores_into(isa, csr, m, &alpha_lm, labels, true, &mut lm);
            let mut got32 = vec![f32::NAN; rows * labels];
            scores_into(isa, csr, m, &alpha32, labels, false, &mut got32);
            // Both coefficient layouts take the same sums in the same order.
            assert_eq!(got, lm, "{isa:?}, labels {labels}");
            for (t, &(w, bound)) in want.iter().enumerate() {
                // The error bound of a sum of n products, each rounded
                // once: n · u · Σ|terms| (n = the row's non-zeros + 1).
                let i = t / labels;
                let n = (c.0[i + 1] - c.0[i] + 1) as f64;
                let tol = n * 1.12e-16 * bound;
                assert!(
                    (got[t] - w).abs() <= tol,
                    "{isa:?}, labels {labels} entry {t}"
                );
                let tol32 = n * 6.0e-8 * bound;
                let g = f64::from(got32[t]);
                assert!(
                    (g - w).abs() <= tol32,
                    "{isa:?} f32, labels {labels} entry {t}"
                );
            }
        }
    }

    #[test]
    fn every_path_and_label_count_matches_naive_sums() {
        // 70 rows: one full chunk and a partial one; 23 columns: one panel.
        for (case, labels) in [1usize, 5, 8, 9, 16, 17, 26, 32, 33, 40, 65]
            .into_iter()
            .enumerate()
        {
            let c = csr(70, 23, case as u64);
            assert!(c.1.len() > 70 * 23 / 4);
            check_all_paths(&c, 23, labels, case);
        }
    }

    #[test]
    fn many_panels_and_chunks_match_naive_sums() {
        // 200 rows (3 full chunks and a partial one) over 600 columns (two
        // full panels and a partial one), and a banded matrix whose rows
        // cross panel boundaries at every offset, with empty rows.
        let c = csr(200, 600, 7);
        for labels in [1, 26, 40] {
            check_all_paths(&c, 600, labels, labels);
        }
        let (n, m) = (300usize, 1000usize);
        let (mut ptr, mut idx, mut val) = (vec![0], vec![], vec![]);
        for i in 0..n {
            if i % 37 != 5 {
                let lo = (i * 3).saturating_sub(40);
                for j in lo..(i * 3 + 40).min(m) {
                    idx.push(j as u32);
                    val.push(((i + j) % 9 + 1) as f32 / 9.0);
                }
            }
            ptr.push(idx.len());
        }
        check_all_paths(&(ptr, idx, val), m, 26, 3);
    }

    #[test]
    fn balanced_bounds_split_by_non_zeros() {
        // Rows of uneven lengths: every run costs at most an equal share
        // plus one row (a row is never split), where equal row counts
        // would put most of the work in one run.
        let mut indptr = vec![0usize];
        for r in 0..100 {
            let len = if r == 10 { 1000 } else { r % 7 };
            indptr.push(indptr[r] + len);
        }
        let cost = |a: usize, b: usize| indptr[b] + b - indptr[a] - a;
        for tasks in [1, 2, 4, 16] {
            let b = balanced_bounds(&indptr, tasks);
            assert_eq!(b.len(), tasks + 1);
            assert_eq!((b[0], b[tasks]), (0, 100));
            assert!(b.windows(2).all(|w| w[0] <= w[1]));
            let share = cost(0, 100).div_ceil(tasks);
            for w in b.windows(2) {
                assert!(cost(w[0], w[1]) <= share + 1001, "{tasks} tasks: {b:?}");
            }
        }
        // The heavy row closes the first run.
        let b = balanced_bounds(&indptr, 4);
        assert_eq!(b[1], 11, "{b:?}");
        // Equal rows: equal runs.
        let even: Vec<usize> = (0..=64).map(|r| 3 * r).collect();
        assert_eq!(balanced_bounds(&even, 4), vec![0, 16, 32, 48, 64]);
        // More tasks than rows, and no rows.
        assert_eq!(balanced_bounds(&[0, 5], 3).last(), Some(&1));
        assert_eq!(balanced_bounds(&[0], 3), vec![0, 0, 0, 0]);
    }
}
