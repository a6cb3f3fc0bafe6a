//! A memo of feature names already resolved to `(group id, bucket)`, so
//! that a stream which repeats its feature names skips the grouping rule,
//! the name hash and the group lookup after the first time it sees a name.
//!
//! Entries are keyed by Python's own hash of the name (cached inside every
//! `str` object) and keep the name, so a hit is one table probe and one
//! comparison of the bytes; two names with the same Python hash simply miss
//! (the second is resolved the slow way each time). Only names of groups
//! that already exist are stored: a group id never changes once the learner
//! has accepted it, so an entry never goes stale. The memo holds at most
//! [`NameCache::CAPACITY`] names; later ones are resolved the slow way.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use omkl_core::features::FeatureSpace;

/// A hasher for keys that are already well-mixed hashes (Python's `str`
/// hash is SipHash): it passes them through.
#[derive(Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.0 = v as u64;
    }

    fn write_isize(&mut self, v: isize) {
        self.0 = v as u64;
    }
}

/// `(group id, bucket)` of feature names seen before; see the module docs.
#[derive(Default)]
pub struct NameCache {
    map: HashMap<isize, (Box<str>, u32, u32), BuildHasherDefault<PassThrough>>,
}

impl NameCache {
    /// The most names the memo keeps.
    pub const CAPACITY: usize = 1 << 16;

    /// `(group id, bucket)` of `name` (whose Python hash is `hash`), or
    /// `None` if its group is not registered in `space` yet.
    pub fn locate(&mut self, space: &FeatureSpace, name: &str, hash: isize) -> Option<(u32, u32)> {
        if let Some((known, g, b)) = self.map.get(&hash) {
            if **known == *name {
                return Some((*g, *b));
            }
        }
        let (group, bucket) = space.locate(name);
        let g = space.group_id(group)?;
        if self.map.len() < Self::CAPACITY && !self.map.contains_key(&hash) {
            self.map.insert(hash, (name.into(), g, bucket));
        }
        Some((g, bucket))
    }

    /// Heap bytes held by the memo (approximate).
    pub fn heap_bytes(&self) -> usize {
        let names: usize = self.map.values().map(|(n, _, _)| n.len()).sum();
        names + self.map.capacity() * (std::mem::size_of::<(isize, (Box<str>, u32, u32))>() + 1)
    }
}
