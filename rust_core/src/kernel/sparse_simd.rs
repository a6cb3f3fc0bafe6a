//! The SIMD loop of CSR scoring (see `sparse_scores`): one body, generic
//! over the register type (ymm or zmm, f32 or f64), compiled once for
//! AVX2 with FMA and once for AVX-512F.
//!
//! For each row, each non-zero `(j, K_ij)` multiplies the `P = NV · W`
//! padded coefficients of column `j` (`NV` aligned registers of `W` lanes)
//! by `K_ij` and adds them to one of `SETS` independent sets of sums, so
//! that up to `SETS · NV` fused multiply-adds are in flight.

use super::sparse_rows::{Index, Pass};
use std::arch::x86_64::*;

/// One SIMD register type: its number type, its lanes and the
/// operations of the scoring loop.
pub(super) trait Simd {
    type T: Copy + Default;
    type V: Copy;
    const W: usize;
    unsafe fn zero() -> Self::V;
    unsafe fn splat(k: f32) -> Self::V;
    unsafe fn load(p: *const Self::T) -> Self::V;
    unsafe fn fmadd(k: Self::V, a: Self::V, acc: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn store(p: *mut Self::T, v: Self::V);
}

/// Implements [`Simd`] for `$name` from the intrinsics of one width.
macro_rules! simd {
    ($name:ident, $t:ty, $v:ty, $w:expr, $conv:expr,
     $zero:ident, $set1:ident, $load:ident, $fmadd:ident, $add:ident, $store:ident) => {
        pub(super) struct $name;
        impl Simd for $name {
            type T = $t;
            type V = $v;
            const W: usize = $w;
            #[inline(always)]
            unsafe fn zero() -> $v {
                $zero()
            }
            #[inline(always)]
            unsafe fn splat(k: f32) -> $v {
                $set1($conv(k))
            }
            #[inline(always)]
            unsafe fn load(p: *const $t) -> $v {
                $load(p)
            }
            #[inline(always)]
            unsafe fn fmadd(k: $v, a: $v, acc: $v) -> $v {
                $fmadd(k, a, acc)
            }
            #[inline(always)]
            unsafe fn add(a: $v, b: $v) -> $v {
                $add(a, b)
            }
            #[inline(always)]
            unsafe fn store(p: *mut $t, v: $v) {
                $store(p, v)
            }
        }
    };
}

simd!(
    Y32,
    f32,
    __m256,
    8,
    |k| k,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_load_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
simd!(
    Y64,
    f64,
    __m256d,
    4,
    f64::from,
    _mm256_setzero_pd,
    _mm256_set1_pd,
    _mm256_load_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);
simd!(
    Z32,
    f32,
    __m512,
    16,
    |k| k,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_load_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
simd!(
    Z64,
    f64,
    __m512d,
    8,
    f64::from,
    _mm512_setzero_pd,
    _mm512_set1_pd,
    _mm512_load_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);

/// `$name`: [`body`] compiled with the target features `$features`.
macro_rules! compiled_for {
    ($($name:ident = $features:literal, $doc:literal;)+) => {$(
        #[doc = $doc]
        ///
        /// # Safety
        /// See [`super::sparse_scores::Acc::rows_simd`].
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name<S: Simd, I: Index, const NV: usize, const SETS: usize>(
            pass: Pass<'_, I, S::T>,
        ) {
            body::<S, I, NV, SETS>(pass)
        }
    )+};
}

compiled_for!(
    avx2 = "avx2,fma", "[`body`] compiled for AVX2 and FMA.";
    avx512 = "avx512f", "[`body`] compiled for AVX-512F.";
);

/// Scores of a block of rows, `NV` registers per coefficient row
/// (`P = NV · W` padded labels), `SETS` independent sets of sums: the
/// non-zero `t` of a row goes to set `t mod SETS` (a remainder to set
/// 0), and the sets are added at the end.
///
/// # Safety
/// See [`super::sparse_scores::Acc::rows_simd`].
#[inline(always)]
unsafe fn body<S: Simd, I: Index, const NV: usize, const SETS: usize>(pass: Pass<'_, I, S::T>) {
    let Pass {
        rows, ap, out, lab, ..
    } = pass;
    let p = NV * S::W;
    debug_assert_eq!(p, pass.p);
    let base = ap.as_ptr();
    let mut tmp = [S::T::default(); 32];
    for r in 0..rows.indptr.len() - 1 {
        let (b, e) = (rows.indptr[r], rows.indptr[r + 1]);
        let idx = &rows.indices[b..e];
        let val = &rows.values[b..e];
        let mut acc = [[S::zero(); NV]; SETS];
        let mut t = 0;
        while t + SETS <= idx.len() {
            for (u, set) in acc.iter_mut().enumerate() {
                let j = idx[t + u].at();
                debug_assert!((j + 1) * p <= ap.len());
                let k = S::splat(val[t + u]);
                let q = base.add(j * p);
                for (v, x) in set.iter_mut().enumerate() {
                    *x = S::fmadd(k, S::load(q.add(S::W * v)), *x);
                }
            }
            t += SETS;
        }
        while t < idx.len() {
            let j = idx[t].at();
            debug_assert!((j + 1) * p <= ap.len());
            let k = S::splat(val[t]);
            let q = base.add(j * p);
            for (v, x) in acc[0].iter_mut().enumerate() {
                *x = S::fmadd(k, S::load(q.add(S::W * v)), *x);
            }
            t += 1;
        }
        for v in 0..NV {
            let mut sum = acc[0][v];
            for set in &acc[1..] {
                sum = S::add(sum, set[v]);
            }
            S::store(tmp.as_mut_ptr().add(S::W * v), sum);
        }
        out.write(r, lab, &tmp);
    }
}
