//! [`SupportStore`]: the deduplicated support inputs of kernel expansions,
//! used by the Gram caches and by the streaming Alg. 3 (with removal for
//! the support budget and growth of the dimension).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::finite::check_finite_f32;
use crate::error::{OmklError, Result};

/// Support inputs of dimension `d`, each stored once: an input seen again
/// (bitwise the same f32 values) gets its existing id back. Ids are
/// consecutive from 0 in order of first insertion, and the inputs are kept
/// row-major in one buffer, ready for the Gram routines, each with its
/// squared norm (summed in f64, as the Gram routines do).
///
/// Rows can be removed ([`SupportStore::swap_remove`]): the last row moves
/// into the freed slot, so ids stay `0..len` and coefficients kept in the
/// same row order are moved the same way by the caller. The dimension can
/// grow ([`SupportStore::grow_dim`]), padding every input with zeros.
///
/// Lookup hashes the f32 bit patterns with xxh3 and compares candidates
/// bit for bit, so distinct inputs are never merged (`0.0` and `-0.0` are
/// stored apart). The hash index is in memory only: it is not serialised,
/// and [`SupportStore::rebuild_index`] rebuilds it after loading.
///
/// # Complexity
/// `find`, `insert` and `swap_remove` are O(d) expected.
///
/// # Example
/// ```
/// use omkl_core::kernel::SupportStore;
/// let mut s = SupportStore::new(2);
/// assert_eq!(s.insert_checked(&[1.0, 2.0]).unwrap(), (0, true));
/// assert_eq!(s.insert(&[3.0, 4.0]), (1, true));
/// assert_eq!(s.insert(&[1.0, 2.0]), (0, false));
/// assert!(s.insert_checked(&[1.0]).is_err());
/// s.swap_remove(0);
/// assert_eq!(s.find(&[3.0, 4.0]), Some(0));
/// assert_eq!((s.len(), s.sq_norm(0)), (1, 25.0));
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SupportStore {
    d: usize,
    data: Vec<f32>,
    sq: Vec<f64>,
    #[serde(skip)]
    index: HashMap<u64, Vec<u32>>,
}

impl PartialEq for SupportStore {
    fn eq(&self, other: &Self) -> bool {
        self.d == other.d && self.data == other.data && self.sq == other.sq
    }
}

/// xxh3 of the in-memory bytes of `x` (the index lives in memory only, so
/// the byte order of the machine does not matter).
fn key(x: &[f32]) -> u64 {
    // SAFETY: `f32` has no padding and `u8` alignment 1; the byte slice
    // covers exactly the memory of `x` and lives no longer than it.
    let bytes = unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<u8>(), size_of_val(x)) };
    xxh3_64(bytes)
}

/// `‖x‖²` summed in f64.
#[inline]
pub fn sq_norm_f32(x: &[f32]) -> f64 {
    x.iter().map(|&v| f64::from(v) * f64::from(v)).sum()
}

impl SupportStore {
    /// An empty store of inputs of dimension `d` (`d = 0` for a store whose
    /// dimension only grows later).
    pub fn new(d: usize) -> Self {
        SupportStore {
            d,
            ..Default::default()
        }
    }

    /// An empty store of inputs of dimension `d >= 1` (an error names `d`
    /// otherwise).
    pub fn with_dim(d: usize) -> Result<Self> {
        if d == 0 {
            return Err(OmklError::invalid("d", "expected a dimension >= 1, got 0"));
        }
        Ok(SupportStore::new(d))
    }

    /// Rebuilds a store from its row-major data (as returned by
    /// [`SupportStore::data`]): `d >= 1`, finite values, distinct rows.
    pub fn from_data(d: usize, data: &[f32]) -> Result<Self> {
        let mut s = SupportStore::with_dim(d)?;
        if !data.len().is_multiple_of(d) {
            return Err(OmklError::shape(
                "data",
                format!("a multiple of d = {d} elements"),
                format!("{} elements", data.len()),
            ));
        }
        for row in data.chunks_exact(d) {
            if !s.insert_checked(row)?.1 {
                return Err(OmklError::invalid("data", "expected distinct rows"));
            }
        }
        Ok(s)
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

    /// Input `id`, if stored.
    pub fn get(&self, id: u32) -> Option<&[f32]> {
        let j = id as usize;
        (j < self.len()).then(|| self.row(j))
    }

    /// `‖x_j‖²`.
    #[inline]
    pub fn sq_norm(&self, j: usize) -> f64 {
        self.sq[j]
    }

    /// Squared norms of the inputs, in id order.
    pub fn sq_norms(&self) -> &[f64] {
        &self.sq
    }

    /// All inputs, row-major `len × d`, in id order.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// The id of `x` (length `d`) if it is stored.
    pub fn find(&self, x: &[f32]) -> Option<usize> {
        self.find_keyed(x, key(x))
    }

    fn find_keyed(&self, x: &[f32], k: u64) -> Option<usize> {
        let same = |id: &&u32| {
            self.row(**id as usize)
                .iter()
                .zip(x)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        };
        self.index.get(&k)?.iter().find(same).map(|&i| i as usize)
    }

    /// Stores `x` (length `d`, finite: checked by the caller, with room
    /// checked by [`SupportStore::check_room`]) unless it is stored
    /// already; returns its id and whether it is new.
    pub fn insert(&mut self, x: &[f32]) -> (usize, bool) {
        let k = key(x);
        if let Some(j) = self.find_keyed(x, k) {
            return (j, false);
        }
        let j = self.len();
        self.data.extend_from_slice(x);
        self.sq.push(sq_norm_f32(x));
        self.index.entry(k).or_default().push(j as u32);
        (j, true)
    }

    fn check(&self, x: &[f32]) -> Result<()> {
        if x.len() != self.d {
            return Err(OmklError::shape(
                "x",
                format!("{} elements", self.d),
                format!("{} elements", x.len()),
            ));
        }
        check_finite_f32("x", x)
    }

    /// [`SupportStore::find`] with the checks: length `d`, finite values.
    pub fn find_checked(&self, x: &[f32]) -> Result<Option<u32>> {
        self.check(x)?;
        Ok(self.find(x).map(|j| j as u32))
    }

    /// [`SupportStore::insert`] with the checks: length `d`, finite values
    /// and fewer than `2^32` inputs (the store is unchanged on failure).
    pub fn insert_checked(&mut self, x: &[f32]) -> Result<(u32, bool)> {
        self.check(x)?;
        if self.find(x).is_none() {
            self.check_room(1)?;
        }
        let (j, new) = self.insert(x);
        Ok((j as u32, new))
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

    /// `Σ_{i,j} (Σ_y c(i, y) c(j, y)) k(x_i, x_j)` over the stored inputs
    /// for kernel `kern` and `l` labels: the squared norm of the kernel
    /// expansion with coefficient `c(i, y)` on input `i` and label `y`
    /// (pairs whose label products sum to 0 are skipped).
    ///
    /// # Complexity
    /// O(S² (d + L)) for `S` stored inputs.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::{Kernel, SupportStore};
    /// let mut s = SupportStore::new(2);
    /// s.insert(&[1.0, 0.0]);
    /// s.insert(&[1.0, 1.0]);
    /// let c = [2.0, 3.0]; // one label
    /// let sq = s.expansion_sq_norm(&Kernel::Linear { normalize: false }, 1, |i, _| c[i]);
    /// assert_eq!(sq, 4.0 * 1.0 + 2.0 * 6.0 * 1.0 + 9.0 * 2.0);
    /// ```
    pub fn expansion_sq_norm(
        &self,
        kern: &super::Kernel,
        l: usize,
        c: impl Fn(usize, usize) -> f64,
    ) -> f64 {
        let s = self.len();
        let mut sq = 0.0;
        for i in 0..s {
            for j in 0..s {
                let cc: f64 = (0..l).map(|y| c(i, y) * c(j, y)).sum();
                if cc != 0.0 {
                    let dot = super::spec::dot_f32(self.row(i), self.row(j));
                    sq += cc * kern.from_dot(dot, self.sq_norm(i), self.sq_norm(j));
                }
            }
        }
        sq
    }

    /// Approximate heap bytes: the inputs and their norms plus the hash
    /// index (key, a small id list and table overhead per distinct key).
    pub fn nbytes(&self) -> usize {
        self.data.capacity() * 4
            + self.sq.capacity() * 8
            + self.index.capacity() * (8 + 24 + 8)
            + self.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_keeps_lookup_consistent() {
        let mut s = SupportStore::new(1);
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

    #[test]
    fn checked_calls_refuse_bad_inputs() {
        let mut s = SupportStore::new(2);
        assert!(s.insert_checked(&[1.0, f32::NAN]).is_err());
        assert!(s.find_checked(&[1.0]).is_err());
        assert!(s.is_empty());
        assert!(SupportStore::from_data(0, &[]).is_err());
        assert!(SupportStore::from_data(2, &[1.0, 2.0, 1.0, 2.0]).is_err());
        let t = SupportStore::from_data(2, &[1.0, 2.0, 0.0, -0.0]).unwrap();
        assert_eq!(t.find_checked(&[0.0, -0.0]).unwrap(), Some(1));
        assert_eq!(t.find_checked(&[0.0, 0.0]).unwrap(), None);
        assert_eq!(t.get(1), Some(&[0.0, -0.0][..]));
        assert_eq!(t.sq_norms(), &[5.0, 0.0]);
    }
}
