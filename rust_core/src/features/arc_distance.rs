//! Binned head-modifier distances, conjoined with arc features: the coarse
//! [`distance_bin`] and the finer [`fine_distance_bin`].
//!
//! # Example
//! ```
//! use omkl_core::features::arc_distance::{distance_bin, fine_distance_bin, FINE_BINS};
//! assert_eq!(distance_bin(1, 9), 6);
//! assert_eq!(fine_distance_bin(1, 9), 8);
//! assert!((fine_distance_bin(0, 500) as usize) < FINE_BINS);
//! ```

/// Number of distinct values of [`fine_distance_bin`].
pub const FINE_BINS: usize = 20;

/// Binned distance `|h - m|`: 1, 2, 3, 4, 5, 6-10, 11+.
#[inline]
pub fn distance_bin(h: usize, m: usize) -> u64 {
    match h.abs_diff(m) {
        d @ 0..=5 => d as u64,
        6..=10 => 6,
        _ => 7,
    }
}

/// Finer binned distance `|h - m|`: exact up to 15, then 16-19, 20-24,
/// 25-34 and 35+ (values `1..FINE_BINS`). Long arcs, which the coarse
/// [`distance_bin`] lumps into "11+", are what a pruner misses most.
#[inline]
pub fn fine_distance_bin(h: usize, m: usize) -> u64 {
    match h.abs_diff(m) {
        d @ 0..=15 => d as u64,
        16..=19 => 16,
        20..=24 => 17,
        25..=34 => 18,
        _ => 19,
    }
}
