//! Weight tables in half precision: each group of a flat `f32` table is
//! stored as IEEE binary16 values times a power of two of its own, so that a
//! frozen model takes two bytes per weight on disk instead of four.
//!
//! [`round_groups`] rounds a table in place to the values that such a file
//! holds; [`write_groups`] writes them and [`read_groups`] reads them back
//! exactly (a rounded table is written and read without further change).
//!
//! For a group whose largest `|w|` is `m = f · 2^k` (`1 ≤ f < 2`), the scale is
//! `2^e` with `e = max(k − 14, −100)`: the largest weight becomes a half of at
//! least 2^14 (11 significant bits), and each weight is off by at most
//! `2^(e − 11) ≤ m · 2^-25` plus half a unit of its own last place, so by at
//! most `m · 2^-11` in all. The floor of `e` keeps every stored value a
//! normal `f32` (at least 2^-124 in magnitude), so that the rounding is
//! idempotent.
//!
//! # Layout of the saved bytes (little-endian), per group
//! ```text
//! i32 e, then u16 × (group size) binary16 bits
//! ```
//!
//! # Example
//! ```
//! use omkl_core::learner::half_table::{read_groups, round_groups, write_groups};
//! let mut t = vec![1.0f32, 1.0e-3, -0.3, 0.0, 5.0, 2.5];
//! round_groups(&mut t, &[0, 3, 6]);
//! assert_eq!(t[0], 1.0);
//! assert!((t[1] - 1.0e-3).abs() <= 1.0 / 2048.0);
//! let mut bytes = Vec::new();
//! write_groups(&t, &[0, 3, 6], &mut bytes);
//! assert_eq!(bytes.len(), 2 * 4 + 6 * 2);
//! let mut r = omkl_core::persist::Reader::new(&bytes, "table");
//! assert_eq!(read_groups(&mut r, &[0, 3, 6]).unwrap(), t);
//! ```

use half::f16;

use crate::error::Result;
use crate::persist::Reader;

/// The smallest scale exponent (see the module docs).
const MIN_EXP: i32 = -100;
/// The largest scale exponent: `f32::MAX < 2^128`.
const MAX_EXP: i32 = 127 - 14;
/// The largest half of a rounded group, below 2^15, so that rounding never
/// moves the largest weight to the next power of two.
const MAX_HALF: f64 = 32_752.0;

/// The scale exponent of a group whose largest `|w|` is `m`.
fn exponent(m: f32) -> i32 {
    if m == 0.0 || !m.is_finite() {
        return MIN_EXP;
    }
    // the exponent k of m = f · 2^k, 1 <= f < 2 (m may be subnormal)
    let k = (f64::from(m)).log2().floor() as i32;
    let k = if f64::from(m) < 2f64.powi(k) {
        k - 1
    } else {
        k
    };
    (k - 14).clamp(MIN_EXP, MAX_EXP)
}

/// The half that stands for `w` at scale `2^e` (`2^-e` is `inv`).
fn to_half(w: f32, inv: f64) -> f16 {
    let x = (f64::from(w) * inv).clamp(-MAX_HALF, MAX_HALF);
    f16::from_f64(x)
}

/// The weight that the half `q` at scale `2^e` (`scale`) stands for.
fn from_half(q: f16, scale: f64) -> f32 {
    (q.to_f64() * scale) as f32
}

/// Rounds each group `table[offsets[g]..offsets[g + 1]]` of finite weights
/// to the values that [`write_groups`] stores (see the module docs for the
/// error bound). Rounding a rounded table changes nothing.
///
/// # Complexity
/// O(table), two passes.
pub fn round_groups(table: &mut [f32], offsets: &[usize]) {
    for w in offsets.windows(2) {
        let group = &mut table[w[0]..w[1]];
        let e = exponent(group.iter().fold(0.0f32, |m, x| m.max(x.abs())));
        let (inv, scale) = (2f64.powi(-e), 2f64.powi(e));
        for x in group {
            *x = from_half(to_half(*x, inv), scale);
        }
    }
}

/// Appends the groups of a table rounded by [`round_groups`] (other
/// values are rounded as they are written).
///
/// # Complexity
/// O(table).
pub fn write_groups(table: &[f32], offsets: &[usize], out: &mut Vec<u8>) {
    out.reserve(2 * table.len() + 4 * offsets.len());
    for w in offsets.windows(2) {
        let group = &table[w[0]..w[1]];
        let e = exponent(group.iter().fold(0.0f32, |m, x| m.max(x.abs())));
        let inv = 2f64.powi(-e);
        out.extend_from_slice(&e.to_le_bytes());
        for &x in group {
            out.extend_from_slice(&to_half(x, inv).to_bits().to_le_bytes());
        }
    }
}

/// Reads the groups written by [`write_groups`] for these `offsets`: the
/// sizes are checked against the bytes left before anything is allocated,
/// and an exponent out of range or a half that is not finite is refused.
pub fn read_groups(r: &mut Reader<'_>, offsets: &[usize]) -> Result<Vec<f32>> {
    let n = offsets.last().copied().unwrap_or(0);
    let groups = offsets.len().saturating_sub(1);
    let need = n.checked_mul(2).and_then(|b| b.checked_add(4 * groups));
    if need.is_none_or(|b| b > r.remaining()) {
        return Err(r.error(format!(
            "truncated: half-precision table of {n} weights, {} bytes left",
            r.remaining()
        )));
    }
    let mut table = crate::learner::zeroed(n, "table size")?;
    for w in offsets.windows(2) {
        let e = i32::from_le_bytes(r.take(4)?.try_into().expect("four bytes"));
        if !(MIN_EXP..=MAX_EXP).contains(&e) {
            return Err(r.error(format!(
                "scale exponent {e}, expected {MIN_EXP}..={MAX_EXP}"
            )));
        }
        let scale = 2f64.powi(e);
        let bytes = r.take(2 * (w[1] - w[0]))?;
        for (x, b) in table[w[0]..w[1]].iter_mut().zip(bytes.chunks_exact(2)) {
            let q = f16::from_bits(u16::from_le_bytes([b[0], b[1]]));
            if !q.is_finite() || q.to_f64().abs() > MAX_HALF {
                return Err(r.error("a half-precision weight out of range"));
            }
            *x = from_half(q, scale);
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn rounding_is_close_idempotent_and_read_back_exactly(
            groups in proptest::collection::vec(
                proptest::collection::vec(
                    prop_oneof![Just(0.0f32), -1.0e3f32..1.0e3, -1.0e-30f32..1.0e-30], 0..40),
                1..5),
            big in prop_oneof![Just(1.0f32), Just(1.0e30), Just(1.0e-35)],
        ) {
            let mut offsets = vec![0];
            let mut table = Vec::new();
            for g in &groups {
                table.extend(g.iter().map(|x| x * big));
                offsets.push(table.len());
            }
            let mut rounded = table.clone();
            round_groups(&mut rounded, &offsets);
            for w in offsets.windows(2) {
                let m = table[w[0]..w[1]].iter().fold(0.0f32, |m, x| m.max(x.abs()));
                for i in w[0]..w[1] {
                    let err = f64::from(rounded[i]) - f64::from(table[i]);
                    prop_assert!(err.abs() <= f64::from(m) / 2048.0, "{} -> {}", table[i], rounded[i]);
                }
            }
            let mut again = rounded.clone();
            round_groups(&mut again, &offsets);
            prop_assert_eq!(&again, &rounded);
            let mut bytes = Vec::new();
            write_groups(&rounded, &offsets, &mut bytes);
            let mut r = Reader::new(&bytes, "table");
            let back = read_groups(&mut r, &offsets).unwrap();
            r.finish().unwrap();
            prop_assert_eq!(back, rounded);
        }
    }

    #[test]
    fn truncated_and_altered_bytes_are_refused() {
        let mut t = vec![0.5f32, -2.0, 0.25];
        round_groups(&mut t, &[0, 3]);
        let mut bytes = Vec::new();
        write_groups(&t, &[0, 3], &mut bytes);
        let mut r = Reader::new(&bytes[..bytes.len() - 1], "table");
        assert!(read_groups(&mut r, &[0, 3])
            .unwrap_err()
            .to_string()
            .contains("truncated"));
        let mut bad = bytes.clone();
        bad[..4].copy_from_slice(&1000i32.to_le_bytes());
        let mut r = Reader::new(&bad, "table");
        assert!(read_groups(&mut r, &[0, 3])
            .unwrap_err()
            .to_string()
            .contains("exponent 1000"));
        let mut bad = bytes;
        bad[4..6].copy_from_slice(&f16::INFINITY.to_bits().to_le_bytes());
        let mut r = Reader::new(&bad, "table");
        assert!(read_groups(&mut r, &[0, 3])
            .unwrap_err()
            .to_string()
            .contains("out of range"));
    }
}
