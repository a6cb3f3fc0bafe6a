//! [`SupportSet`]: the deduplicated support inputs of the streaming Alg. 3,
//! with removal (for the support budget) and growth of the dimension.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{OmklError, Result};

/// Support inputs of dimension `d`, each stored once, row-major in one
/// buffer with its squared norm. Unlike [`crate::kernel::SupportStore`]
/// (append-only, stable ids), rows can be removed: the last row moves into
/// the freed slot, so ids stay `0..len` and the kernel coefficients (kept
/// in the same row order) are moved the same way by the caller.
///
/// Lookup hashes the f32 bit patterns with xxh3 and compares candidates
/// bit for bit, so distinct inputs are never merged. The hash index is not
/// serialised; [`SupportSet::rebuild_index`] rebuilds it after loading.
///
/// # Complexity
/// `find`, `push` and `swap_remove` are O(d) expected.
///
/// # Example
/// ```
/// use omkl_core::learner::stream_mkl::SupportSet;
/// let mut s = SupportSet::new(2);
/// assert_eq!(s.insert(&[1.0, 2.0]), (0, true));
/// assert_eq!(s.insert(&[3.0, 4.0]), (1, true));
/// assert_eq!(s.insert(&[1.0, 2.0]), (0, false));
/// s.swap_remove(0);
/// assert_eq!(s.find(&[3.0, 4.0]), Some(0));
/// assert_eq!(s.sq_norm(0), 25.0);
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SupportSet {
    d: usize,
    data: Vec<f32>,
    sq: Vec<f64>,
    #[serde(skip)]
    index: HashMap<u64, Vec<u32>>,
}

impl PartialEq for SupportSet {
    fn eq(&self, other: &Self) -> bool {
        self.d == other.d && self.data == other.data && self.sq == other.sq
    }
}

fn key(x: &[f32]) -> u64 {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
    xxh3_64(&bytes)
}

/// `‖x‖²` in f64.
pub fn sq_norm_f32(x: &[f32]) -> f64 {
    x.iter().map(|&v| f64::from(v) * f64::from(v)).sum()
}

impl SupportSet {
    /// An empty set of inputs of dimension `d`.
    pub fn new(d: usize) -> Self {
        SupportSet {
            d,
            ..Default::default()
        }
    }

    /// Number of stored inputs.
    pub fn len(&self) -> usize {
        self.sq.len()
    }

    /// `true` when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.sq.is_empty()
    }

    /// Dimension of the inputs.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Input `j` (`j < len`).
    #[inline]
    pub fn row(&self, j: usize) -> &[f32] {
        &self.data[j * self.d..(j + 1) * self.d]
    }

    /// `‖x_j‖²`.
    #[inline]
    pub fn sq_norm(&self, j: usize) -> f64 {
        self.sq[j]
    }

    /// All inputs, row-major `len × d`.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// The id of `x` (length `d`) if it is stored.
    pub fn find(&self, x: &[f32]) -> Option<usize> {
        let same = |id: &&u32| {
            self.row(**id as usize)
                .iter()
                .zip(x)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        };
        self.index
            .get(&key(x))?
            .iter()
            .find(same)
            .map(|&i| i as usize)
    }

    /// Stores `x` (length `d`, finite: checked by the caller) unless it is
    /// stored already; returns its id and whether it is new.
    pub fn insert(&mut self, x: &[f32]) -> (usize, bool) {
        if let Some(j) = self.find(x) {
            return (j, false);
        }
        let j = self.len();
        self.data.extend_from_slice(x);
        self.sq.push(sq_norm_f32(x));
        self.index.entry(key(x)).or_default().push(j as u32);
        (j, true)
    }

    /// Checks that `extra` more inputs keep ids within `u32`.
    pub fn check_room(&self, extra: usize) -> Result<()> {
        if self.len() + extra > u32::MAX as usize {
            return Err(OmklError::invalid(
                "x",
                "the support set is full (2^32 inputs)",
            ));
        }
        Ok(())
    }

    fn unindex(&mut self, x_key: u64, j: u32) {
        if let Some(ids) = self.index.get_mut(&x_key) {
            ids.retain(|&i| i != j);
            if ids.is_empty() {
                self.index.remove(&x_key);
            }
        }
    }

    /// Removes input `j`; the last input takes id `j`.
    pub fn swap_remove(&mut self, j: usize) {
        let last = self.len() - 1;
        let kj = key(self.row(j));
        self.unindex(kj, j as u32);
        if j != last {
            let kl = key(self.row(last));
            if let Some(ids) = self.index.get_mut(&kl) {
                for i in ids.iter_mut().filter(|i| **i == last as u32) {
                    *i = j as u32;
                }
            }
            let d = self.d;
            self.data.copy_within(last * d..(last + 1) * d, j * d);
            self.sq[j] = self.sq[last];
        }
        self.data.truncate(last * self.d);
        self.sq.truncate(last);
    }

    /// Pads every input with zeros up to dimension `d_new ≥ d` (a feature
    /// first seen now was 0 in every earlier input): kernel values between
    /// stored inputs do not change.
    pub fn grow_dim(&mut self, d_new: usize) {
        if d_new <= self.d {
            return;
        }
        let mut data = vec![0.0f32; self.len() * d_new];
        if self.d > 0 {
            for (dst, src) in data
                .chunks_exact_mut(d_new)
                .zip(self.data.chunks_exact(self.d))
            {
                dst[..self.d].copy_from_slice(src);
            }
        }
        self.data = data;
        self.d = d_new;
        self.rebuild_index();
    }

    /// Rebuilds the hash index from the stored inputs.
    pub fn rebuild_index(&mut self) {
        self.index.clear();
        for j in 0..self.len() {
            let k = key(self.row(j));
            self.index.entry(k).or_default().push(j as u32);
        }
    }

    /// Approximate heap bytes: inputs, norms and the hash index.
    pub fn nbytes(&self) -> usize {
        self.data.capacity() * 4 + self.sq.capacity() * 8 + self.index.capacity() * (8 + 24 + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_keeps_lookup_consistent() {
        let mut s = SupportSet::new(1);
        for v in 0..10 {
            s.insert(&[v as f32]);
        }
        s.swap_remove(3);
        s.swap_remove(0);
        assert_eq!(s.len(), 8);
        for j in 0..s.len() {
            assert_eq!(s.find(s.row(j)), Some(j));
        }
        assert_eq!(s.find(&[3.0]), None);
        assert_eq!(s.find(&[0.0]), None);
        s.grow_dim(3);
        assert_eq!(s.find(&[9.0, 0.0, 0.0]), Some(3));
        assert_eq!(s.find(&[8.0, 0.0, 0.0]), Some(0));
        assert!(!s.insert(&[5.0, 0.0, 0.0]).1);
    }
}
