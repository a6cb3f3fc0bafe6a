//! [`FrozenWeights`]: the weights of a trained grouped linear model, frozen
//! for prediction. Only the `(bucket, output)` entries with a non-zero
//! weight are kept, in `f32`, row by row: a model that was trained with
//! dense `buckets × outputs` tables is stored and loaded at the size of
//! what training actually wrote.
//!
//! Each group holds its rows (buckets) in increasing order, the start of
//! each row's entries, and per entry its output and weight, side by side
//! (one [`Entry`], so that a row is read from one run of memory). A row is found
//! through an open-addressing table over the row keys, built when the
//! weights are made or read (it is not saved), whose slots hold the key and
//! the row's entry range, so that a lookup is one or two probes into one
//! array and then the row's entries.
//!
//! # Layout of the saved bytes (little-endian)
//! ```text
//! u64 n_outputs, u64 n_groups, then per group:
//!   u64 rows, u32 × rows bucket keys (increasing), u32 × (rows + 1) row starts,
//!   u64 entries, (u16 or u32) × entries outputs (u16 when n_outputs <= 65,536),
//!   f32 × entries weights
//! ```
//!
//! # Example
//! ```
//! use omkl_core::learner::frozen_weights::FrozenWeights;
//! // two groups of 8 buckets, 3 outputs: w(g, b, k)
//! let w = FrozenWeights::build(2, 8, 3, |g, b, k| if (g, b) == (1, 5) { k as f64 } else { 0.0 });
//! assert_eq!(w.n_entries(), 2);
//! let mut out = vec![0.0; 3];
//! w.add_scores(&[1, 0], &[5, 5], &[2.0, 1.0], &mut out);
//! assert_eq!(out, vec![0.0, 2.0, 4.0]);
//! let back = FrozenWeights::read(&mut omkl_core::persist::Reader::new(&w.to_bytes(), "w"), 8).unwrap();
//! assert_eq!(back, w);
//! ```

use crate::error::Result;
use crate::persist::Reader;

/// Marks an empty slot of a lookup table.
const EMPTY: u32 = u32::MAX;

/// The slot of `key` in a table of `mask + 1` slots (a power of two).
#[inline(always)]
fn home(key: u32, mask: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B1) as usize ^ (key as usize >> 16)) & mask
}

/// A slot of a lookup table: a row key ([`EMPTY`] for none) and the range
/// of its entries.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u32,
    start: u32,
    end: u32,
}

const EMPTY_SLOT: Slot = Slot {
    key: EMPTY,
    start: 0,
    end: 0,
};

/// One stored weight: its output and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Entry {
    /// The output (label) of the weight.
    pub output: u32,
    /// The weight.
    pub weight: f32,
}

/// One group's rows; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct FrozenGroup {
    keys: Vec<u32>,
    starts: Vec<u32>,
    entries: Vec<Entry>,
    /// Open-addressing table of the rows by key.
    table: Vec<Slot>,
}

impl PartialEq for FrozenGroup {
    fn eq(&self, o: &Self) -> bool {
        self.keys == o.keys && self.starts == o.starts && self.entries == o.entries
    }
}

/// The entries that a row look-up found: the group and the range of its
/// entries (empty for a bucket without weights), kept between the look-ups
/// and the sums of [`FrozenWeights::add_rows`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Found {
    group: u32,
    start: u32,
    end: u32,
}

/// Hints the CPU to fetch the cache line at `p`.
#[inline(always)]
fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching has no effect other than on the caches, whatever
    // the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl FrozenGroup {
    /// Builds the lookup table of the rows (at most half full).
    fn index(&mut self) {
        let cap = (self.keys.len() * 2).next_power_of_two().max(2);
        let mask = cap - 1;
        self.table = vec![EMPTY_SLOT; cap];
        for (r, &k) in self.keys.iter().enumerate() {
            let mut s = home(k, mask);
            while self.table[s].key != EMPTY {
                s = (s + 1) & mask;
            }
            self.table[s] = Slot {
                key: k,
                start: self.starts[r],
                end: self.starts[r + 1],
            };
        }
    }

    /// Hints the CPU to fetch the home slot of `key`.
    #[inline(always)]
    fn prefetch(&self, key: u32) {
        if !self.table.is_empty() {
            let s = home(key, self.table.len() - 1);
            prefetch_ptr(self.table[s..].as_ptr());
        }
    }

    /// The range of the entries of bucket `key` (empty when the bucket
    /// holds no weight).
    #[inline]
    fn find(&self, key: u32) -> (u32, u32) {
        let mask = self.table.len().wrapping_sub(1);
        if self.keys.is_empty() || key == EMPTY {
            return (0, 0);
        }
        let mut s = home(key, mask);
        loop {
            let slot = self.table[s];
            if slot.key == key {
                return (slot.start, slot.end);
            }
            if slot.key == EMPTY {
                return (0, 0);
            }
            s = (s + 1) & mask;
        }
    }

    /// The entries of bucket `key` (empty when the bucket holds no weight).
    #[inline]
    pub fn row(&self, key: u32) -> &[Entry] {
        let (a, b) = self.find(key);
        &self.entries[a as usize..b as usize]
    }

    /// The Euclidean norm of the group's weights.
    pub fn norm(&self) -> f64 {
        self.entries
            .iter()
            .map(|e| f64::from(e.weight) * f64::from(e.weight))
            .sum::<f64>()
            .sqrt()
    }

    /// Number of stored entries.
    pub fn n_entries(&self) -> usize {
        self.entries.len()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        4 * (self.keys.capacity() + self.starts.capacity())
            + std::mem::size_of::<Entry>() * self.entries.capacity()
            + std::mem::size_of::<Slot>() * self.table.capacity()
    }
}

/// Frozen weights of a grouped linear model; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenWeights {
    n_outputs: usize,
    groups: Vec<FrozenGroup>,
}

impl FrozenWeights {
    /// The frozen form of the weights `weight(g, b, k)` of `n_groups` groups
    /// of `n_buckets` buckets and `n_outputs` outputs: the entries whose
    /// weight rounds to a non-zero `f32`.
    ///
    /// # Complexity
    /// O(n_groups · n_buckets · n_outputs) calls of `weight`.
    pub fn build(
        n_groups: usize,
        n_buckets: usize,
        n_outputs: usize,
        weight: impl Fn(usize, usize, usize) -> f64,
    ) -> Self {
        let groups = (0..n_groups)
            .map(|g| {
                let mut grp = FrozenGroup {
                    starts: vec![0],
                    ..Default::default()
                };
                for b in 0..n_buckets {
                    let before = grp.entries.len();
                    for k in 0..n_outputs {
                        let w = weight(g, b, k) as f32;
                        if w != 0.0 {
                            grp.entries.push(Entry {
                                output: k as u32,
                                weight: w,
                            });
                        }
                    }
                    if grp.entries.len() > before {
                        grp.keys.push(b as u32);
                        grp.starts.push(grp.entries.len() as u32);
                    }
                }
                grp.index();
                grp
            })
            .collect();
        FrozenWeights { n_outputs, groups }
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// The groups.
    pub fn groups(&self) -> &[FrozenGroup] {
        &self.groups
    }

    /// Number of stored entries over all groups.
    pub fn n_entries(&self) -> usize {
        self.groups.iter().map(FrozenGroup::n_entries).sum()
    }

    /// Adds `Σ_i x_i w_{g_i, b_i, k}` to `out[k]` for every output. The
    /// groups must exist; a bucket without weights adds nothing.
    ///
    /// # Complexity
    /// O(entries of the rows read).
    #[inline]
    pub fn add_scores(&self, groups: &[u32], buckets: &[u32], values: &[f64], out: &mut [f64]) {
        const AHEAD: usize = 6;
        for (i, ((&g, &b), &x)) in groups.iter().zip(buckets).zip(values).enumerate() {
            if let (Some(&ga), Some(&ba)) = (groups.get(i + AHEAD), buckets.get(i + AHEAD)) {
                if let Some(grp) = self.groups.get(ga as usize) {
                    grp.prefetch(ba);
                }
            }
            if x == 0.0 {
                continue;
            }
            for e in self.groups[g as usize].row(b) {
                out[e.output as usize] += x * f64::from(e.weight);
            }
        }
    }

    /// The scores of the rows of a sparse batch (`indptr`, `groups`,
    /// `buckets`, `values`): `out` becomes `n × L` (`n = indptr.len() - 1`,
    /// `L` outputs), row `i` the sum of `base` and of
    /// [`Self::add_scores`] over the entries of row `i`, with the same
    /// additions in the same order (so the same values, bit for bit). The
    /// rows of all the entries are looked up first (into `found`, the
    /// look-ups ahead prefetched), then summed, so that the memory reads
    /// of many look-ups overlap. The groups must exist and `indptr` must
    /// rise from 0 to the number of entries.
    ///
    /// # Complexity
    /// O(entries of the rows read + n × L).
    pub fn add_rows(
        &self,
        indptr: &[usize],
        batch: (&[u32], &[u32], &[f64]),
        base: &[f64],
        found: &mut Vec<Found>,
        out: &mut Vec<f64>,
    ) {
        const AHEAD: usize = 8;
        let (groups, buckets, values) = batch;
        let l = self.n_outputs;
        found.clear();
        found.reserve(groups.len());
        for (i, ((&g, &b), &x)) in groups.iter().zip(buckets).zip(values).enumerate() {
            if let (Some(&ga), Some(&ba)) = (groups.get(i + AHEAD), buckets.get(i + AHEAD)) {
                if let Some(grp) = self.groups.get(ga as usize) {
                    grp.prefetch(ba);
                }
            }
            let (start, end) = if x == 0.0 {
                (0, 0)
            } else {
                let grp = &self.groups[g as usize];
                let (a, e) = grp.find(b);
                if e > a {
                    prefetch_ptr(grp.entries[a as usize..].as_ptr());
                    prefetch_ptr(grp.entries[e as usize - 1..].as_ptr());
                }
                (a, e)
            };
            found.push(Found {
                group: g,
                start,
                end,
            });
        }
        let n = indptr.len().saturating_sub(1);
        out.clear();
        out.reserve(n * l);
        for r in indptr.windows(2) {
            let at = out.len();
            out.extend_from_slice(&base[..l]);
            let row = &mut out[at..at + l];
            for (f, &x) in found[r[0]..r[1]].iter().zip(&values[r[0]..r[1]]) {
                let entries = &self.groups[f.group as usize].entries;
                let entries = &entries[f.start as usize..f.end as usize];
                if x == 1.0 {
                    // an indicator: `1 * w` is `w`, exactly
                    for e in entries {
                        row[e.output as usize] += f64::from(e.weight);
                    }
                } else {
                    for e in entries {
                        row[e.output as usize] += x * f64::from(e.weight);
                    }
                }
            }
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.groups.iter().map(FrozenGroup::heap_bytes).sum()
    }

    /// Appends the weights to `out` (see the module docs).
    pub fn write(&self, out: &mut Vec<u8>) {
        let wide = self.n_outputs > 1 << 16;
        out.extend((self.n_outputs as u64).to_le_bytes());
        out.extend((self.groups.len() as u64).to_le_bytes());
        for g in &self.groups {
            out.extend((g.keys.len() as u64).to_le_bytes());
            g.keys.iter().for_each(|k| out.extend(k.to_le_bytes()));
            g.starts.iter().for_each(|s| out.extend(s.to_le_bytes()));
            out.extend((g.entries.len() as u64).to_le_bytes());
            for e in &g.entries {
                if wide {
                    out.extend(e.output.to_le_bytes());
                } else {
                    out.extend((e.output as u16).to_le_bytes());
                }
            }
            g.entries
                .iter()
                .for_each(|e| out.extend(e.weight.to_le_bytes()));
        }
    }

    /// The weights as bytes (see [`Self::write`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    /// Reads weights written by [`Self::write`] whose buckets are below
    /// `n_buckets`, checking every count, key, row start, output and
    /// weight before it is used.
    pub fn read(r: &mut Reader<'_>, n_buckets: usize) -> Result<Self> {
        let n_outputs = r.u64()?;
        if n_outputs == 0 || n_outputs >= u64::from(u32::MAX) {
            return Err(r.error(format!("expected 1 to 2^32 - 2 outputs, got {n_outputs}")));
        }
        let n_outputs = n_outputs as usize;
        let wide = n_outputs > 1 << 16;
        let n_groups = r.count("the number of groups", 8)?;
        let mut groups = Vec::with_capacity(n_groups);
        for g in 0..n_groups {
            let rows = r.count("the number of rows", 8)?;
            let keys = read_u32s(r, rows)?;
            if let Some(w) = keys.windows(2).find(|w| w[0] >= w[1]) {
                return Err(r.error(format!(
                    "group {g}: bucket keys must increase, got {} then {}",
                    w[0], w[1]
                )));
            }
            if let Some(&k) = keys.last().filter(|&&k| k as usize >= n_buckets) {
                return Err(r.error(format!("group {g}: bucket {k} is not < {n_buckets}")));
            }
            let starts = read_u32s(r, rows + 1)?;
            let n = r.count("the number of entries", if wide { 8 } else { 6 })?;
            if starts[0] != 0
                || starts.windows(2).any(|w| w[0] >= w[1])
                || starts[rows] as usize != n
            {
                return Err(r.error(format!(
                    "group {g}: row starts must increase from 0 to the {n} entries"
                )));
            }
            let outputs = if wide {
                read_u32s(r, n)?
            } else {
                r.take(2 * n)?
                    .chunks_exact(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                    .collect()
            };
            for (row, w) in starts.windows(2).enumerate() {
                let ks = &outputs[w[0] as usize..w[1] as usize];
                if ks.windows(2).any(|p| p[0] >= p[1]) || ks[ks.len() - 1] as usize >= n_outputs {
                    return Err(r.error(format!(
                        "group {g}, row {row}: outputs must increase and be < {n_outputs}"
                    )));
                }
            }
            let mut weights = vec![0.0f32; n];
            r.f32s(n, &mut weights)?;
            if let Some(w) = weights.iter().find(|w| !w.is_finite() || **w == 0.0) {
                return Err(r.error(format!(
                    "group {g}: expected finite non-zero weights, got {w}"
                )));
            }
            let entries = outputs
                .into_iter()
                .zip(weights)
                .map(|(output, weight)| Entry { output, weight })
                .collect();
            let mut grp = FrozenGroup {
                keys,
                starts,
                entries,
                table: Vec::new(),
            };
            grp.index();
            groups.push(grp);
        }
        Ok(FrozenWeights { n_outputs, groups })
    }
}

/// `n` little-endian `u32`s.
fn read_u32s(r: &mut Reader<'_>, n: usize) -> Result<Vec<u32>> {
    let need = n.checked_mul(4).ok_or_else(|| r.error("length overflow"))?;
    Ok(r.take(need)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dense(n_groups: usize, n_buckets: usize, n_outputs: usize, seed: u64) -> Vec<f64> {
        let mut s = seed | 1;
        (0..n_groups * n_buckets * n_outputs)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                if s.is_multiple_of(5) {
                    (s % 1000) as f64 / 100.0 - 5.0
                } else {
                    0.0
                }
            })
            .collect()
    }

    proptest! {
        #[test]
        fn scores_equal_the_dense_tables(
            n_groups in 1usize..4, n_buckets in 1usize..40, n_outputs in 1usize..6, seed in any::<u64>(),
            entries in proptest::collection::vec((0u32..4, 0u32..40, -3.0f64..3.0), 0..30),
        ) {
            let t = dense(n_groups, n_buckets, n_outputs, seed);
            let at = |g: usize, b: usize, k: usize| t[(g * n_buckets + b) * n_outputs + k];
            let w = FrozenWeights::build(n_groups, n_buckets, n_outputs, at);
            let entries: Vec<_> = entries
                .into_iter()
                .filter(|&(g, b, _)| (g as usize) < n_groups && (b as usize) < n_buckets)
                .collect();
            let groups: Vec<u32> = entries.iter().map(|e| e.0).collect();
            let buckets: Vec<u32> = entries.iter().map(|e| e.1).collect();
            let values: Vec<f64> = entries.iter().map(|e| e.2).collect();
            let mut got = vec![0.0; n_outputs];
            w.add_scores(&groups, &buckets, &values, &mut got);
            for (k, g) in got.iter().enumerate() {
                let want: f64 = entries
                    .iter()
                    .map(|&(g, b, x)| x * f64::from(at(g as usize, b as usize, k) as f32))
                    .sum();
                prop_assert!((g - want).abs() <= 1e-9 * (1.0 + want.abs()));
            }
            // the rows of a batch (the entries cut in up to three rows) are
            // scored bit for bit as one `add_scores` per row
            let base: Vec<f64> = (0..n_outputs).map(|k| k as f64 * 0.25 - 0.5).collect();
            let m = groups.len();
            let indptr = vec![0, m / 3, m / 2, m];
            let (mut found, mut rows) = (Vec::new(), Vec::new());
            w.add_rows(&indptr, (&groups, &buckets, &values), &base, &mut found, &mut rows);
            prop_assert_eq!(rows.len(), 3 * n_outputs);
            for (r, span) in indptr.windows(2).enumerate() {
                let mut want = base.clone();
                let s = span[0]..span[1];
                w.add_scores(&groups[s.clone()], &buckets[s.clone()], &values[s], &mut want);
                let got: Vec<u64> = rows[r * n_outputs..(r + 1) * n_outputs].iter().map(|v| v.to_bits()).collect();
                let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
                prop_assert_eq!(got, want);
            }
            let bytes = w.to_bytes();
            let back = FrozenWeights::read(&mut Reader::new(&bytes, "w"), n_buckets).unwrap();
            prop_assert_eq!(&back, &w);
            // every cut is refused, never a panic
            for cut in 0..bytes.len() {
                let mut r = Reader::new(&bytes[..cut], "w");
                prop_assert!(FrozenWeights::read(&mut r, n_buckets).is_err());
            }
        }
    }

    #[test]
    fn bad_keys_starts_outputs_and_weights_are_refused() {
        let w = FrozenWeights::build(1, 8, 70_000, |_, b, k| {
            if b % 3 == 0 && k % 30_000 == 1 {
                1.5
            } else {
                0.0
            }
        });
        let bytes = w.to_bytes();
        let back = FrozenWeights::read(&mut Reader::new(&bytes, "w"), 8).unwrap();
        assert_eq!(back, w);
        // the buckets must be below n_buckets
        let e = FrozenWeights::read(&mut Reader::new(&bytes, "w"), 4).unwrap_err();
        assert!(e.to_string().contains("bucket 6 is not < 4"), "{e}");
        // a zero weight, a decreasing output
        let small = FrozenWeights::build(1, 2, 3, |_, _, k| [1.0, 0.0, 2.0][k]);
        let mut b = small.to_bytes();
        let n = b.len();
        b[n - 4..].copy_from_slice(&0.0f32.to_le_bytes());
        let e = FrozenWeights::read(&mut Reader::new(&b, "w"), 2).unwrap_err();
        assert!(e.to_string().contains("non-zero"), "{e}");
        let mut b = small.to_bytes();
        // outputs of row 0 (after 8+8+8+8+12+8 bytes) are 0, 2: make them 2, 0
        let at = 8 + 8 + 8 + 4 * 2 + 4 * 3 + 8;
        b[at..at + 4].copy_from_slice(&[2, 0, 0, 0]);
        let e = FrozenWeights::read(&mut Reader::new(&b, "w"), 2).unwrap_err();
        assert!(e.to_string().contains("outputs must increase"), "{e}");
    }
}
