//! A deduplicating store of support inputs for kernel expansions.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::finite::check_finite_f32;
use super::gram::sq_norm;
use crate::error::{OmklError, Result};

/// Support inputs of dimension `d`, each stored once: an input seen again
/// (bitwise the same f32 values) gets its existing id back. Ids are
/// consecutive from 0 in order of first insertion, and the inputs are kept
/// row-major in one buffer, ready for the Gram routines.
///
/// Each input's squared norm (summed in f64, as the Gram routines do) is
/// kept beside it, so Gram rows against the store need not recompute them.
///
/// Lookup hashes the input's bytes (SipHash with fixed zero keys, in memory
/// only; the index is rebuilt on [`SupportStore::from_data`]) and compares
/// the bytes of the candidates, so distinct inputs are never merged. Note
/// that `0.0` and `-0.0` are different bytes and are stored apart.
///
/// # Complexity
/// `insert` and `find` are O(d) expected.
///
/// # Example
/// ```
/// use omkl_core::kernel::SupportStore;
/// let mut s = SupportStore::new(2).unwrap();
/// assert_eq!(s.insert(&[1.0, 2.0]).unwrap(), (0, true));
/// assert_eq!(s.insert(&[3.0, 4.0]).unwrap(), (1, true));
/// assert_eq!(s.insert(&[1.0, 2.0]).unwrap(), (0, false));
/// assert_eq!(s.len(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct SupportStore {
    d: usize,
    data: Vec<f32>,
    sq_norms: Vec<f64>,
    index: HashMap<u64, Vec<u32>>,
}

fn key(x: &[f32]) -> u64 {
    let mut h = DefaultHasher::new();
    for v in x {
        v.to_bits().hash(&mut h);
    }
    h.finish()
}

impl SupportStore {
    /// An empty store of inputs of dimension `d >= 1`.
    pub fn new(d: usize) -> Result<Self> {
        if d == 0 {
            return Err(OmklError::invalid("d", "expected a dimension >= 1, got 0"));
        }
        Ok(SupportStore {
            d,
            data: Vec::new(),
            sq_norms: Vec::new(),
            index: HashMap::new(),
        })
    }

    /// Rebuilds a store from its row-major data (as returned by
    /// [`SupportStore::data`]); rows must be distinct.
    pub fn from_data(d: usize, data: &[f32]) -> Result<Self> {
        let mut s = SupportStore::new(d)?;
        if !data.len().is_multiple_of(d) {
            return Err(OmklError::shape(
                "data",
                format!("a multiple of d = {d} elements"),
                format!("{} elements", data.len()),
            ));
        }
        for row in data.chunks_exact(d) {
            if !s.insert(row)?.1 {
                return Err(OmklError::invalid("data", "expected distinct rows"));
            }
        }
        Ok(s)
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

    /// The id of `x` if it is stored.
    pub fn find(&self, x: &[f32]) -> Result<Option<u32>> {
        self.check(x)?;
        Ok(self.find_unchecked(x, key(x)))
    }

    fn find_unchecked(&self, x: &[f32], k: u64) -> Option<u32> {
        let same = |id: &&u32| {
            let r = &self.data[**id as usize * self.d..(**id as usize + 1) * self.d];
            r.iter().zip(x).all(|(a, b)| a.to_bits() == b.to_bits())
        };
        self.index.get(&k)?.iter().find(same).copied()
    }

    /// Stores `x` unless an identical input is already stored; returns its
    /// id and whether it was new. Fails (store unchanged) on a wrong length,
    /// a non-finite value or more than `u32::MAX` inputs.
    pub fn insert(&mut self, x: &[f32]) -> Result<(u32, bool)> {
        self.check(x)?;
        let k = key(x);
        if let Some(id) = self.find_unchecked(x, k) {
            return Ok((id, false));
        }
        let id = u32::try_from(self.len())
            .map_err(|_| OmklError::invalid("x", "the store is full (2^32 inputs)"))?;
        self.data.extend_from_slice(x);
        self.sq_norms.push(sq_norm(x));
        self.index.entry(k).or_default().push(id);
        Ok((id, true))
    }

    /// Input `id`, if stored.
    pub fn get(&self, id: u32) -> Option<&[f32]> {
        let i = id as usize;
        (i < self.len()).then(|| &self.data[i * self.d..(i + 1) * self.d])
    }

    /// Number of distinct stored inputs.
    pub fn len(&self) -> usize {
        self.data.len() / self.d.max(1)
    }

    /// `true` when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Dimension of the inputs.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// All inputs, row-major `len × d`, in id order.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Squared norms of the inputs, in id order (each summed in f64).
    pub fn sq_norms(&self) -> &[f64] {
        &self.sq_norms
    }

    /// Approximate heap bytes: the inputs and their norms plus the hash
    /// index (key, a small id list and table overhead per distinct key).
    pub fn nbytes(&self) -> usize {
        self.data.capacity() * 4
            + self.sq_norms.capacity() * 8
            + self.index.capacity() * (8 + 24 + 8)
            + self.len() * 4
    }
}
