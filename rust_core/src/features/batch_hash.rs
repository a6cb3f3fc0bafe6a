//! Batched hashing of arc features: the same [`mix`] as
//! [`arc_templates`](crate::features::arc_templates), applied lane by lane
//! to whole arrays so that the compiler vectorises it (eight 64-bit lanes
//! with AVX-512, detected at run time; a plain loop elsewhere). Results are
//! bit-identical to hashing one value at a time.
//!
//! # Complexity
//! Each function is `O(len)` with no allocation.
//!
//! # Example
//! ```
//! use omkl_core::features::arc_hash::mix;
//! use omkl_core::features::batch_hash::{mix_into, shift_into};
//! let mut keys = vec![1u64, 2, 3];
//! mix_into(&mut keys, &[7, 8, 9]);
//! assert_eq!(keys[1], mix(2, 8));
//! let mut slots = vec![0u32; 3];
//! shift_into(&keys, 60, &mut slots);
//! assert_eq!(slots[2], (mix(3, 9) >> 60) as u32);
//! ```

use crate::features::arc_hash::mix;

/// Runs `$body` (an `#[inline(always)]` function) through a copy compiled
/// for AVX-512 when the CPU has it.
macro_rules! dispatch {
    ($fast:ident, $plain:ident ( $($arg:ident : $ty:ty),* )) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
        unsafe fn $fast($($arg: $ty),*) {
            $plain($($arg),*)
        }
    };
}

#[inline(always)]
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[inline(always)]
fn mix_into_body(dst: &mut [u64], src: &[u64]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = mix(*d, s);
    }
}
dispatch!(mix_into_avx512, mix_into_body(dst: &mut [u64], src: &[u64]));

/// `dst[i] = mix(dst[i], src[i])` over the common length.
pub fn mix_into(dst: &mut [u64], src: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU supports the enabled features.
        unsafe { mix_into_avx512(dst, src) };
        return;
    }
    mix_into_body(dst, src)
}

#[inline(always)]
fn gather_mix_body(a: &[u64], b: &[u64], ia: &[u32], ib: &[u32], out: &mut [u64]) {
    for ((o, &i), &j) in out.iter_mut().zip(ia).zip(ib) {
        // SAFETY: `gather_mix` checked every index against the lengths.
        let (x, y) = unsafe { (*a.get_unchecked(i as usize), *b.get_unchecked(j as usize)) };
        *o = mix(x, y);
    }
}
dispatch!(gather_mix_avx512, gather_mix_body(a: &[u64], b: &[u64], ia: &[u32], ib: &[u32], out: &mut [u64]));

/// `out[i] = mix(a[ia[i]], b[ib[i]])` over the common length of `ia`,
/// `ib` and `out`.
///
/// # Panics
/// If an index is out of range of `a` or `b`.
pub fn gather_mix(a: &[u64], b: &[u64], ia: &[u32], ib: &[u32], out: &mut [u64]) {
    let n = out.len().min(ia.len()).min(ib.len());
    let (ia, ib, out) = (&ia[..n], &ib[..n], &mut out[..n]);
    let max = |ix: &[u32]| ix.iter().copied().max().map_or(0, |m| m as usize + 1);
    assert!(
        max(ia) <= a.len() && max(ib) <= b.len(),
        "gather_mix: index out of range"
    );
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU supports the enabled features; indices checked.
        unsafe { gather_mix_avx512(a, b, ia, ib, out) };
        return;
    }
    gather_mix_body(a, b, ia, ib, out)
}

#[inline(always)]
fn shift_into_body(keys: &[u64], shift: u32, out: &mut [u32]) {
    for (o, &k) in out.iter_mut().zip(keys) {
        *o = (k >> shift) as u32;
    }
}
dispatch!(shift_into_avx512, shift_into_body(keys: &[u64], shift: u32, out: &mut [u32]));

/// `out[i] = keys[i] >> shift` (the slot of a key in a table of
/// `2^(64 - shift)` slots; `shift >= 32`).
pub fn shift_into(keys: &[u64], shift: u32, out: &mut [u32]) {
    assert!(
        (32..64).contains(&shift),
        "shift_into: shift must be in 32..64"
    );
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU supports the enabled features.
        unsafe { shift_into_avx512(keys, shift, out) };
        return;
    }
    shift_into_body(keys, shift, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u64) -> Vec<u64> {
        (0..n as u64).map(|i| mix(seed, i)).collect()
    }

    #[test]
    fn batched_hashing_equals_one_at_a_time() {
        for n in [0, 1, 7, 8, 9, 33] {
            let (a, b) = (data(n, 1), data(n, 2));
            let mut d = a.clone();
            mix_into(&mut d, &b);
            let want: Vec<u64> = a.iter().zip(&b).map(|(&x, &y)| mix(x, y)).collect();
            assert_eq!(d, want);
            mix_into_body(&mut d, &b);
            let want2: Vec<u64> = want.iter().zip(&b).map(|(&x, &y)| mix(x, y)).collect();
            assert_eq!(d, want2);

            let ia: Vec<u32> = (0..n as u32).map(|i| (i * 5) % (n as u32).max(1)).collect();
            let ib: Vec<u32> = (0..n as u32).rev().collect();
            let mut out = vec![0u64; n];
            gather_mix(&a, &b, &ia, &ib, &mut out);
            for i in 0..n {
                assert_eq!(out[i], mix(a[ia[i] as usize], b[ib[i] as usize]));
            }
            let mut s = vec![0u32; n];
            shift_into(&out, 46, &mut s);
            for i in 0..n {
                assert_eq!(s[i], (out[i] >> 46) as u32);
            }
        }
    }

    #[test]
    #[should_panic(expected = "index out of range")]
    fn gather_checks_indices() {
        let mut out = vec![0u64; 1];
        gather_mix(&[1], &[2], &[1], &[0], &mut out);
    }
}
