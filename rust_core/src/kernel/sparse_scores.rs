//! The inner loops of CSR scoring `S = K α` (see [`super::SparseGram`]).
//!
//! The coefficients of a block of at most [`LABEL_BLOCK`] labels are copied
//! once per call into a zero-padded, 64-byte aligned `columns × P` buffer
//! (O(columns · P), cheap next to O(nnz · P)). A row's scores are then one
//! pass over its non-zeros: for each non-zero `(j, K_ij)`, broadcast `K_ij`
//! and multiply-add the `P` coefficients of column `j` into `P` sums held in
//! registers.
//!
//! The instruction set is chosen at run time ([`Isa::detect`]):
//!
//! * AVX-512F: zmm registers of 16 f32 (8 f64); 26 labels padded to 32 f32
//!   are two registers, so one non-zero costs two fused multiply-adds.
//! * AVX2 and FMA: ymm registers of 8 f32 (4 f64).
//! * Otherwise a portable loop takes each sum in the order of the row's
//!   non-zeros, without FMA.
//!
//! Both SIMD paths share one loop body (`sparse_simd`), generic over the
//! register type, with several independent sets of sums (consecutive
//! non-zeros of a row go to different sets, added at the end) so that
//! fused multiply-adds do not wait on each other's latency. Column indices
//! are u16 when the matrix has at most 65,536 columns (half the index
//! traffic), u32 otherwise. Rows are split into parallel tasks of about
//! equal numbers of non-zeros, not equal numbers of rows.
//!
//! Every path gives the exact sum up to rounding; the bits may differ
//! between paths (order of summation and fused rounding), never between
//! runs on the same machine (a row's sum does not depend on the split into
//! tasks).

use rayon::prelude::*;
use std::sync::Mutex;

pub(crate) use super::sparse_isa::Isa;
use super::sparse_rows::{Dest, Index, Labels, Pass, Rows};
#[cfg(target_arch = "x86_64")]
use super::sparse_simd as simd;

/// Labels accumulated in registers per pass over a row's non-zeros.
pub(crate) const LABEL_BLOCK: usize = 32;
/// Parallel tasks per worker thread (about equal numbers of non-zeros).
const TASKS_PER_THREAD: usize = 8;
/// Scoring jobs below this many multiply-adds run on the calling thread.
const PARALLEL_MIN_WORK: usize = 1 << 16;
/// Alignment of the padded coefficients (one cache line).
const ALIGN: usize = 64;

/// The number types of the scoring loops (f64 and f32).
pub(crate) trait Acc:
    Copy + Default + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// Labels are padded to a multiple of this (one register of `isa`; 4
    /// f64 or 8 f32 on the portable path).
    fn lanes(isa: Isa) -> usize;
    fn of(v: f32) -> Self;

    /// Scores rows `0..indptr.len() - 1` of the pass's CSR block into
    /// `out` (one row of `labels` per CSR row), writing labels `l0..l1`
    /// from the padded coefficients `ap` (stride `p`).
    ///
    /// # Safety
    /// The CPU supports `isa` (not [`Isa::Portable`]); `p` is a multiple
    /// of `lanes(isa)` with `p <= 32`; `ap` is 64-byte aligned and every
    /// column index `j` satisfies `(j + 1) · p <= ap.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn rows_simd<I: Index>(isa: Isa, pass: Pass<'_, I, Self>);

    /// The reusable coefficient buffer of this number type.
    fn scratch(s: &Scratch) -> &Mutex<Vec<Self>>;
}

/// `$entry::<$simd, I, NV, SETS>(pass)` for the number `$nv` of registers
/// per coefficient row, each arm naming its sets of sums.
#[cfg(target_arch = "x86_64")]
macro_rules! by_registers {
    ($entry:ident, $simd:ty, $nv:expr, $pass:ident, $($n:literal => $sets:literal),+) => {
        match $nv {
            $($n => simd::$entry::<$simd, I, $n, $sets>($pass),)+
            _ => unreachable!("at most 32 padded labels"),
        }
    };
}

/// `impl Acc` for one number type: its lanes per AVX-512 and AVX2 register,
/// its scratch buffer, and the register layouts (`registers => sets of
/// sums`) of its SIMD loops.
macro_rules! impl_acc {
    ($t:ty, $field:ident, $l512:literal, $z:ty, ($($n5:literal => $s5:literal),+),
     $l2:literal, $y:ty, ($($n2:literal => $s2:literal),+)) => {
        impl Acc for $t {
            #[inline(always)]
            fn lanes(isa: Isa) -> usize {
                match isa {
                    Isa::Avx512 => $l512,
                    _ => $l2,
                }
            }

            #[inline(always)]
            fn of(v: f32) -> Self {
                <$t>::from(v)
            }

            fn scratch(s: &Scratch) -> &Mutex<Vec<$t>> {
                &s.$field
            }

            #[cfg(target_arch = "x86_64")]
            unsafe fn rows_simd<I: Index>(isa: Isa, pass: Pass<'_, I, $t>) {
                // Sums in at most 16 registers, the rest for loads and broadcasts.
                match isa {
                    Isa::Avx512 => by_registers!(avx512, $z, pass.p / $l512, pass, $($n5 => $s5),+),
                    _ => by_registers!(avx2, $y, pass.p / $l2, pass, $($n2 => $s2),+),
                }
            }
        }
    };
}

impl_acc!(f64, f64, 8, simd::Z64, (1 => 8, 2 => 4, 3 => 4, 4 => 4),
    4, simd::Y64, (1 => 4, 2 => 4, 3 => 2, 4 => 2, 5 => 2, 6 => 2, 7 => 1, 8 => 1));
impl_acc!(f32, f32, 16, simd::Z32, (1 => 8, 2 => 4), 8, simd::Y32, (1 => 4, 2 => 4, 3 => 2, 4 => 2));

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
/// O(m · p); the row-major copy runs in parallel over rows once `m · p`
/// reaches `PARALLEL_MIN_WORK`.
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
        let fill = |(c, row): (usize, &mut [T])| {
            let j = col(c) * lab.labels;
            row[..w].copy_from_slice(&alpha[j + lab.l0..j + lab.l1]);
            row[w..].fill(T::default());
        };
        if len < PARALLEL_MIN_WORK {
            dst.chunks_exact_mut(p).enumerate().for_each(fill);
        } else {
            dst.par_chunks_exact_mut(p).enumerate().for_each(fill);
        }
    }
    &buf[off..off + len]
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

/// A scoring job: coefficients `alpha` of `m` columns (`m × labels`, or
/// `labels × m` if `label_major`), checked, and the loops of `isa` (which
/// the CPU must support).
pub(crate) struct Job<'a, T> {
    pub isa: Isa,
    pub m: usize,
    pub alpha: &'a [T],
    pub labels: usize,
    pub label_major: bool,
    /// Column `c` of the CSR matrix is column `cols[c]` of `alpha`.
    pub cols: Option<&'a [u32]>,
    /// Row `r` of the CSR matrix is output row `rows[r]` (a permutation).
    pub rows: Option<&'a [u32]>,
}

impl<'a, T: Acc> Job<'a, T> {
    /// A job on the CSR matrix's own row and column order.
    pub(crate) fn new(
        isa: Isa,
        m: usize,
        alpha: &'a [T],
        labels: usize,
        label_major: bool,
    ) -> Self {
        Job {
            isa,
            m,
            alpha,
            labels,
            label_major,
            cols: None,
            rows: None,
        }
    }

    /// `out ← K α` (`rows × labels`, row-major, rows permuted by
    /// `self.rows`) for the CSR matrix `(indptr, indices, values)`, whose
    /// column indices are `< m` (a [`super::SparseGram`] invariant), with
    /// the padded coefficients in `scratch`.
    ///
    /// # Complexity
    /// O(nnz · labels + m · labels), in parallel over runs of rows of about
    /// equal numbers of non-zeros.
    pub(crate) fn run<I: Index>(
        &self,
        csr: (&[usize], &[I], &[f32]),
        out: &mut [T],
        scratch: &mut Vec<T>,
    ) {
        let (indptr, indices, values) = csr;
        let (labels, isa) = (self.labels, self.isa);
        let nrows = indptr.len() - 1;
        assert_eq!(out.len(), nrows * labels, "scores: output shape");
        if let Some(map) = self.rows {
            assert_eq!(map.len(), nrows, "scores: row map");
        }
        let tasks = if indices.len() * labels < PARALLEL_MIN_WORK {
            1
        } else {
            rayon::current_num_threads() * TASKS_PER_THREAD
        };
        let bounds = balanced_bounds(indptr, tasks);
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
                let rows = Rows {
                    indptr: &indptr[w[0]..=w[1]],
                    indices,
                    values,
                };
                let mut out = base;
                out.r0 = w[0];
                rows_with(
                    isa,
                    Pass {
                        rows,
                        ap,
                        p,
                        out,
                        lab,
                    },
                );
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

/// One block of rows with the loops of `isa`.
fn rows_with<T: Acc, I: Index>(isa: Isa, pass: Pass<'_, I, T>) {
    #[cfg(target_arch = "x86_64")]
    {
        if isa != Isa::Portable {
            // SAFETY: `isa` is supported (callers pass `Isa::detect()` or
            // a member of `Isa::available()`); `p` is a multiple of its
            // lanes and at most 32; `ap` is aligned by `Padded` and holds
            // `m · p` values, every column index being `< m`; `out`
            // holds this block's output rows, written by no other task.
            unsafe { T::rows_simd(isa, pass) };
            return;
        }
    }
    rows_portable(pass);
}

/// The portable path of [`Job::run`] for one block of rows.
fn rows_portable<T: Acc, I: Index>(pass: Pass<'_, I, T>) {
    let Pass {
        rows,
        ap,
        p,
        out,
        lab,
    } = pass;
    let mut tmp = [T::default(); LABEL_BLOCK];
    for r in 0..rows.indptr.len() - 1 {
        let span = rows.indptr[r]..rows.indptr[r + 1];
        let (idx, val) = (&rows.indices[span.clone()], &rows.values[span]);
        let s = &mut tmp[..lab.l1 - lab.l0];
        match p {
            4 => score_fixed::<T, I, 4>(idx, val, ap, s),
            8 => score_fixed::<T, I, 8>(idx, val, ap, s),
            12 => score_fixed::<T, I, 12>(idx, val, ap, s),
            16 => score_fixed::<T, I, 16>(idx, val, ap, s),
            20 => score_fixed::<T, I, 20>(idx, val, ap, s),
            24 => score_fixed::<T, I, 24>(idx, val, ap, s),
            28 => score_fixed::<T, I, 28>(idx, val, ap, s),
            _ => score_fixed::<T, I, 32>(idx, val, ap, s),
        }
        // SAFETY: the block's rows are its own (see `Job::run`).
        unsafe { out.write(r, lab, &tmp) };
    }
}

/// `s[y] ← Σ_t val[t] · ap[idx[t] · P + y]`, each sum in the order of the
/// non-zeros (no FMA), all `P` sums in registers.
#[inline(always)]
fn score_fixed<T: Acc, I: Index, const P: usize>(idx: &[I], val: &[f32], ap: &[T], s: &mut [T]) {
    let mut acc = [T::default(); P];
    for (&j, &k) in idx.iter().zip(val) {
        let a = &ap[j.at() * P..][..P];
        let k = T::of(k);
        for t in 0..P {
            acc[t] = acc[t] + k * a[t];
        }
    }
    let w = s.len();
    s.copy_from_slice(&acc[..w]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcg::Lcg;

    /// A random CSR matrix (`rows × m`, some rows empty, row lengths of
    /// every residue modulo 8) with values in (0, 1].
    fn csr(rows: usize, m: usize, seed: u64) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
        let mut rng = Lcg(seed);
        let mut next = move || rng.next_u32() as usize;
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

    #[test]
    fn padding_in_parallel_copies_every_permuted_row() {
        // m · p = 3000 · 32 is above PARALLEL_MIN_WORK, so the row-major
        // copy runs in parallel; 300 columns copy serially
        for m in [300usize, 3000] {
            let labels = 26;
            let alpha: Vec<f32> = (0..m * labels).map(|i| i as f32 * 0.5 - 7.0).collect();
            let cols: Vec<u32> = (0..m as u32).map(|c| (c * 7 + 3) % m as u32).collect();
            let lab = Labels {
                labels,
                l0: 0,
                l1: labels,
            };
            let mut buf = vec![f32::NAN; 5];
            let ap = pad_into(&mut buf, &alpha, m, lab, 32, false, Some(&cols)).to_vec();
            assert_eq!(ap.len(), m * 32);
            for c in 0..m {
                let j = cols[c] as usize;
                assert_eq!(
                    &ap[c * 32..c * 32 + labels],
                    &alpha[j * labels..(j + 1) * labels]
                );
                assert!(ap[c * 32 + labels..(c + 1) * 32].iter().all(|&x| x == 0.0));
            }
        }
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

    #[test]
    fn every_path_index_width_and_label_count_matches_naive_sums() {
        let (rows, m) = (70, 23);
        let isas = Isa::available();
        for (case, labels) in [1usize, 5, 8, 9, 16, 17, 26, 32, 33, 40, 65]
            .into_iter()
            .enumerate()
        {
            let c = csr(rows, m, case as u64);
            let idx16: Vec<u16> = c.1.iter().map(|&j| j as u16).collect();
            let alpha: Vec<f64> = (0..m * labels)
                .map(|i| ((i * 7919 + case) % 201) as f64 / 100.0 - 1.0)
                .collect();
            let alpha32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
            let alpha_lm: Vec<f64> = (0..labels * m)
                .map(|t| alpha[(t % m) * labels + t / m])
                .collect();
            let want = naive(&c, &alpha, labels);
            assert!(want.iter().filter(|w| w.0 != 0.0).count() > rows * labels / 2);
            for &isa in &isas {
                let wide = (&c.0[..], &c.1[..], &c.2[..]);
                let narrow = (&c.0[..], &idx16[..], &c.2[..]);
                let mut got = vec![0.0f64; rows * labels];
                Job::new(isa, m, &alpha, labels, false).run(wide, &mut got, &mut Vec::new());
                let mut got16 = vec![0.0f64; rows * labels];
                Job::new(isa, m, &alpha, labels, false).run(narrow, &mut got16, &mut Vec::new());
                let mut lm = vec![0.0f64; rows * labels];
                Job::new(isa, m, &alpha_lm, labels, true).run(narrow, &mut lm, &mut Vec::new());
                let mut got32 = vec![0.0f32; rows * labels];
                Job::new(isa, m, &alpha32, labels, false).run(narrow, &mut got32, &mut Vec::new());
                // u16 and u32 indices, and both coefficient layouts, take
                // the same sums in the same order.
                assert_eq!(got, got16, "{isa:?}, labels {labels}");
                assert_eq!(got, lm, "{isa:?}, labels {labels}");
                for (t, &(w, bound)) in want.iter().enumerate() {
                    let tol = 24.0 * 1.2e-16 * bound;
                    assert!(
                        (got[t] - w).abs() <= tol,
                        "{isa:?}, labels {labels} entry {t}"
                    );
                    let tol32 = 24.0 * 1.2e-7 * bound;
                    let g = f64::from(got32[t]);
                    assert!(
                        (g - w).abs() <= tol32,
                        "{isa:?} f32, labels {labels} entry {t}"
                    );
                }
            }
        }
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
