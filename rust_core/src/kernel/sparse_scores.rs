//! The inner loops of CSR scoring `S = K α` (see [`super::SparseGram`]).
//!
//! The coefficients of a block of at most [`LABEL_BLOCK`] labels are copied
//! once per call into a zero-padded, 64-byte aligned `columns × P` buffer
//! (O(columns · P), cheap next to O(nnz · P)). A row's scores are then one
//! pass over its non-zeros: for each non-zero `(j, K_ij)`, broadcast `K_ij`
//! and multiply-add the `P` coefficients of column `j` into `P` sums held in
//! registers.
//!
//! * With AVX2 and FMA (checked at run time) the sums live in ymm registers
//!   and are updated with fused multiply-adds, in two independent sets
//!   (even and odd non-zeros of the row) so that consecutive non-zeros do
//!   not wait on each other's FMA latency; the two sets are added at the
//!   end. A coefficient row of 32 f32 labels is two aligned cache lines.
//! * Otherwise a portable loop takes each sum in the order of the row's
//!   non-zeros, without FMA.
//!
//! Both give the exact sum up to rounding; the bits may differ between the
//! two paths (order of summation and fused rounding), never between runs on
//! the same machine.

use rayon::prelude::*;

/// Labels accumulated in registers per pass over a row's non-zeros.
pub(crate) const LABEL_BLOCK: usize = 32;
/// Rows per parallel scoring task.
const SCORE_ROWS: usize = 32;
/// Scoring jobs below this many multiply-adds run on the calling thread.
const PARALLEL_MIN_WORK: usize = 1 << 16;
/// Alignment of the padded coefficients (one cache line).
const ALIGN: usize = 64;

/// The number types of the scoring loops (f64 and f32).
pub(crate) trait Acc:
    Copy + Default + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// Labels are padded to a multiple of this on the portable path (one
    /// AVX2 register).
    const LANES: usize;
    fn of(v: f32) -> Self;

    /// Scores rows `0..indptr.len() - 1` of a CSR block into `out` (one
    /// row of `labels` per CSR row), writing labels `l0..l1` from the
    /// padded coefficients `ap` (stride `nv · LANES`).
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; `ap` is 32-byte aligned and every
    /// column index `j` satisfies `(j + 1) · nv · LANES <= ap.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn rows_fma(nv: usize, rows: Rows<'_>, ap: &[Self], out: &mut [Self], lab: Labels);
}

/// A block of CSR rows: `indptr` holds absolute offsets into the full
/// `indices` and `values` arrays.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub indptr: &'a [usize],
    pub indices: &'a [u32],
    pub values: &'a [f32],
}

/// The labels of an output row written by one pass: `l0..l1` of `labels`.
#[derive(Clone, Copy)]
pub(crate) struct Labels {
    pub labels: usize,
    pub l0: usize,
    pub l1: usize,
}

impl Acc for f64 {
    const LANES: usize = 4;
    #[inline(always)]
    fn of(v: f32) -> Self {
        f64::from(v)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn rows_fma(nv: usize, rows: Rows<'_>, ap: &[f64], out: &mut [f64], lab: Labels) {
        // 16 ymm registers: two sets of sums up to 4 registers each.
        match nv {
            1 => fma::rows::<f64, 1, true>(rows, ap, out, lab),
            2 => fma::rows::<f64, 2, true>(rows, ap, out, lab),
            3 => fma::rows::<f64, 3, true>(rows, ap, out, lab),
            4 => fma::rows::<f64, 4, true>(rows, ap, out, lab),
            5 => fma::rows::<f64, 5, false>(rows, ap, out, lab),
            6 => fma::rows::<f64, 6, false>(rows, ap, out, lab),
            7 => fma::rows::<f64, 7, false>(rows, ap, out, lab),
            _ => fma::rows::<f64, 8, false>(rows, ap, out, lab),
        }
    }
}

impl Acc for f32 {
    const LANES: usize = 8;
    #[inline(always)]
    fn of(v: f32) -> Self {
        v
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn rows_fma(nv: usize, rows: Rows<'_>, ap: &[f32], out: &mut [f32], lab: Labels) {
        match nv {
            1 => fma::rows::<f32, 1, true>(rows, ap, out, lab),
            2 => fma::rows::<f32, 2, true>(rows, ap, out, lab),
            3 => fma::rows::<f32, 3, true>(rows, ap, out, lab),
            _ => fma::rows::<f32, 4, true>(rows, ap, out, lab),
        }
    }
}

/// Whether the FMA loops can run on this CPU.
#[inline]
fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A zero-padded `m × p` copy of one block of coefficients, aligned to
/// [`ALIGN`] bytes.
struct Padded<T> {
    buf: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Acc> Padded<T> {
    /// Labels `l0..l1` of `alpha` (`m × labels`, or `labels × m` if
    /// `label_major`), each row padded with zeros to `p`.
    fn new(alpha: &[T], m: usize, lab: Labels, p: usize, label_major: bool) -> Self {
        let len = m * p;
        let extra = ALIGN / std::mem::size_of::<T>();
        let mut buf = vec![T::default(); len + extra];
        let off = buf.as_ptr().align_offset(ALIGN).min(extra);
        let w = lab.l1 - lab.l0;
        let dst = &mut buf[off..off + len];
        if label_major {
            for t in 0..w {
                let src = &alpha[(lab.l0 + t) * m..(lab.l0 + t + 1) * m];
                for (row, &v) in dst.chunks_exact_mut(p).zip(src) {
                    row[t] = v;
                }
            }
        } else {
            for (row, src) in dst.chunks_exact_mut(p).zip(alpha.chunks_exact(lab.labels)) {
                row[..w].copy_from_slice(&src[lab.l0..lab.l1]);
            }
        }
        Padded { buf, off, len }
    }

    fn as_slice(&self) -> &[T] {
        &self.buf[self.off..self.off + self.len]
    }
}

/// `out ← K α` (`rows × labels`, row-major) for the CSR matrix
/// `(indptr, indices, values)` with `m` columns and checked coefficients
/// `alpha` (`m × labels`, or `labels × m` if `label_major`). Column indices
/// must be `< m` (a [`super::SparseGram`] invariant).
///
/// # Complexity
/// O(nnz · labels + m · labels), in parallel over blocks of rows.
pub(crate) fn scores_into<T: Acc>(
    csr: (&[usize], &[u32], &[f32]),
    m: usize,
    alpha: &[T],
    labels: usize,
    label_major: bool,
    out: &mut [T],
) {
    let (indptr, indices, values) = csr;
    let nrows = indptr.len() - 1;
    debug_assert_eq!(out.len(), nrows * labels);
    let wide = has_fma();
    let mut l0 = 0;
    while l0 < labels {
        let l1 = (l0 + LABEL_BLOCK).min(labels);
        let lab = Labels { labels, l0, l1 };
        let p = (l1 - l0).next_multiple_of(T::LANES);
        let padded = Padded::new(alpha, m, lab, p, label_major);
        let ap = padded.as_slice();
        let task = |(b, chunk): (usize, &mut [T])| {
            let r0 = b * SCORE_ROWS;
            let r1 = r0 + chunk.len() / labels;
            let rows = Rows {
                indptr: &indptr[r0..=r1],
                indices,
                values,
            };
            #[cfg(target_arch = "x86_64")]
            {
                if wide {
                    // SAFETY: AVX2 and FMA were detected; `ap` is aligned by
                    // `Padded` and holds `m · p` values, every column index
                    // being `< m`.
                    unsafe { T::rows_fma(p / T::LANES, rows, ap, chunk, lab) };
                    return;
                }
            }
            rows_portable(p, rows, ap, chunk, lab);
        };
        if indices.len() * (l1 - l0) < PARALLEL_MIN_WORK {
            out.chunks_mut(SCORE_ROWS * labels)
                .enumerate()
                .for_each(task);
        } else {
            out.par_chunks_mut(SCORE_ROWS * labels)
                .enumerate()
                .for_each(task);
        }
        l0 = l1;
    }
}

/// The portable path of [`scores_into`] for one block of rows.
fn rows_portable<T: Acc>(p: usize, rows: Rows<'_>, ap: &[T], out: &mut [T], lab: Labels) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { rows_avx2(p, rows, ap, out, lab) };
            return;
        }
    }
    rows_generic(p, rows, ap, out, lab);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<T: Acc>(p: usize, rows: Rows<'_>, ap: &[T], out: &mut [T], lab: Labels) {
    rows_generic(p, rows, ap, out, lab);
}

#[inline(always)]
fn rows_generic<T: Acc>(p: usize, rows: Rows<'_>, ap: &[T], out: &mut [T], lab: Labels) {
    for (r, s) in out.chunks_exact_mut(lab.labels).enumerate() {
        let span = rows.indptr[r]..rows.indptr[r + 1];
        let (idx, val) = (&rows.indices[span.clone()], &rows.values[span]);
        let s = &mut s[lab.l0..lab.l1];
        match p {
            4 => score_fixed::<T, 4>(idx, val, ap, s),
            8 => score_fixed::<T, 8>(idx, val, ap, s),
            12 => score_fixed::<T, 12>(idx, val, ap, s),
            16 => score_fixed::<T, 16>(idx, val, ap, s),
            20 => score_fixed::<T, 20>(idx, val, ap, s),
            24 => score_fixed::<T, 24>(idx, val, ap, s),
            28 => score_fixed::<T, 28>(idx, val, ap, s),
            _ => score_fixed::<T, 32>(idx, val, ap, s),
        }
    }
}

/// `s[y] ← Σ_t val[t] · ap[idx[t] · P + y]`, each sum in the order of the
/// non-zeros (no FMA), all `P` sums in registers.
#[inline(always)]
fn score_fixed<T: Acc, const P: usize>(idx: &[u32], val: &[f32], ap: &[T], s: &mut [T]) {
    let mut acc = [T::default(); P];
    for (&j, &k) in idx.iter().zip(val) {
        let a = &ap[j as usize * P..][..P];
        let k = T::of(k);
        for t in 0..P {
            acc[t] = acc[t] + k * a[t];
        }
    }
    let w = s.len();
    s.copy_from_slice(&acc[..w]);
}

#[cfg(target_arch = "x86_64")]
mod fma {
    use super::{Labels, Rows};
    use std::arch::x86_64::*;

    /// One register type of the FMA loop: 8 f32 or 4 f64 lanes.
    pub(super) trait Lane: Copy {
        type V: Copy;
        const W: usize;
        unsafe fn zero() -> Self::V;
        unsafe fn splat(k: f32) -> Self::V;
        unsafe fn load(p: *const Self) -> Self::V;
        unsafe fn fmadd(k: Self::V, a: Self::V, acc: Self::V) -> Self::V;
        unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
        unsafe fn store(p: *mut Self, v: Self::V);
    }

    impl Lane for f32 {
        type V = __m256;
        const W: usize = 8;
        #[inline(always)]
        unsafe fn zero() -> __m256 {
            _mm256_setzero_ps()
        }
        #[inline(always)]
        unsafe fn splat(k: f32) -> __m256 {
            _mm256_set1_ps(k)
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            _mm256_load_ps(p)
        }
        #[inline(always)]
        unsafe fn fmadd(k: __m256, a: __m256, acc: __m256) -> __m256 {
            _mm256_fmadd_ps(k, a, acc)
        }
        #[inline(always)]
        unsafe fn add(a: __m256, b: __m256) -> __m256 {
            _mm256_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            _mm256_storeu_ps(p, v)
        }
    }

    impl Lane for f64 {
        type V = __m256d;
        const W: usize = 4;
        #[inline(always)]
        unsafe fn zero() -> __m256d {
            _mm256_setzero_pd()
        }
        #[inline(always)]
        unsafe fn splat(k: f32) -> __m256d {
            _mm256_set1_pd(f64::from(k))
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m256d {
            _mm256_load_pd(p)
        }
        #[inline(always)]
        unsafe fn fmadd(k: __m256d, a: __m256d, acc: __m256d) -> __m256d {
            _mm256_fmadd_pd(k, a, acc)
        }
        #[inline(always)]
        unsafe fn add(a: __m256d, b: __m256d) -> __m256d {
            _mm256_add_pd(a, b)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m256d) {
            _mm256_storeu_pd(p, v)
        }
    }

    /// Scores of a block of rows with `NV` registers of sums per set
    /// (`P = NV · W` padded labels). With `TWO`, two sets of sums (even
    /// and odd non-zeros of the row, added at the end) keep twice as many
    /// fused multiply-adds in flight; without, one set (for `NV` large
    /// enough to hide the latency on its own).
    ///
    /// # Safety
    /// See [`super::Acc::rows_fma`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn rows<T: Lane + Default, const NV: usize, const TWO: bool>(
        rows: Rows<'_>,
        ap: &[T],
        out: &mut [T],
        lab: Labels,
    ) {
        let p = NV * T::W;
        let base = ap.as_ptr();
        let mut tmp = [T::default(); 32];
        for (r, s) in out.chunks_exact_mut(lab.labels).enumerate() {
            let (b, e) = (rows.indptr[r], rows.indptr[r + 1]);
            let idx = &rows.indices[b..e];
            let val = &rows.values[b..e];
            let mut a = [T::zero(); NV];
            let mut c = [T::zero(); NV];
            let mut t = 0;
            if TWO {
                while t + 2 <= idx.len() {
                    let (j0, j1) = (idx[t] as usize, idx[t + 1] as usize);
                    debug_assert!((j0.max(j1) + 1) * p <= ap.len());
                    let (k0, k1) = (T::splat(val[t]), T::splat(val[t + 1]));
                    let (p0, p1) = (base.add(j0 * p), base.add(j1 * p));
                    for (v, (x, y)) in a.iter_mut().zip(c.iter_mut()).enumerate() {
                        *x = T::fmadd(k0, T::load(p0.add(T::W * v)), *x);
                        *y = T::fmadd(k1, T::load(p1.add(T::W * v)), *y);
                    }
                    t += 2;
                }
            }
            while t < idx.len() {
                let j = idx[t] as usize;
                debug_assert!((j + 1) * p <= ap.len());
                let k = T::splat(val[t]);
                let p0 = base.add(j * p);
                for (v, x) in a.iter_mut().enumerate() {
                    *x = T::fmadd(k, T::load(p0.add(T::W * v)), *x);
                }
                t += 1;
            }
            for (v, (x, y)) in a.iter().zip(&c).enumerate() {
                T::store(tmp.as_mut_ptr().add(T::W * v), T::add(*x, *y));
            }
            let w = lab.l1 - lab.l0;
            s[lab.l0..lab.l1].copy_from_slice(&tmp[..w]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random CSR matrix (`rows × m`, some rows empty, odd and even row
    /// lengths) with values in (0, 1].
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

    #[test]
    fn every_path_and_label_count_matches_naive_sums() {
        let (rows, m) = (70, 23);
        for (case, labels) in [1usize, 5, 8, 9, 16, 17, 26, 32, 33, 40]
            .into_iter()
            .enumerate()
        {
            let c = csr(rows, m, case as u64);
            let alpha: Vec<f64> = (0..m * labels)
                .map(|i| ((i * 7919 + case) % 201) as f64 / 100.0 - 1.0)
                .collect();
            let alpha32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
            let want = naive(&c, &alpha, labels);
            let csr_ref = (&c.0[..], &c.1[..], &c.2[..]);
            let mut got = vec![0.0f64; rows * labels];
            scores_into(csr_ref, m, &alpha, labels, false, &mut got);
            let mut got32 = vec![0.0f32; rows * labels];
            scores_into(csr_ref, m, &alpha32, labels, false, &mut got32);
            // The portable loop on its own (the path of CPUs without AVX2 and FMA).
            let mut port = vec![0.0f64; rows * labels];
            let mut l0 = 0;
            while l0 < labels {
                let l1 = (l0 + LABEL_BLOCK).min(labels);
                let lab = Labels { labels, l0, l1 };
                let p = (l1 - l0).next_multiple_of(f64::LANES);
                let ap = Padded::new(&alpha, m, lab, p, false);
                let rows_ref = Rows {
                    indptr: &c.0,
                    indices: &c.1,
                    values: &c.2,
                };
                rows_portable(p, rows_ref, ap.as_slice(), &mut port, lab);
                l0 = l1;
            }
            for (t, &(w, bound)) in want.iter().enumerate() {
                let tol = 24.0 * 1.2e-16 * bound;
                assert!((got[t] - w).abs() <= tol, "labels {labels} entry {t}");
                assert!(
                    (port[t] - w).abs() <= tol,
                    "portable, labels {labels} entry {t}"
                );
                let tol32 = 24.0 * 1.2e-7 * bound;
                let g = f64::from(got32[t]);
                assert!((g - w).abs() <= tol32, "f32, labels {labels} entry {t}");
            }
            assert!(want.iter().filter(|w| w.0 != 0.0).count() > rows * labels / 2);
        }
    }
}
