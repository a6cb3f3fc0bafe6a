//! A memo of feature names already resolved to `(group id, bucket)`, so
//! that a stream which repeats its feature names skips the grouping rule,
//! the name hash and the group lookup after the first time it sees a name.
//!
//! Entries are keyed by Python's own hash of the name (cached inside every
//! `str` object) and keep a reference to the name's `str` object and its
//! text: a hit is one table probe and, when the name is that same object
//! (as when a stream reuses its keys), one pointer comparison, else one
//! comparison of the bytes. Two names with the same Python hash simply miss
//! (the second is resolved the slow way each time). Only names of groups
//! that already exist are stored: a group id never changes once the learner
//! has accepted it, so an entry never goes stale. The memo holds at most
//! [`NameCache::CAPACITY`] names; later ones are resolved the slow way.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use omkl_core::features::FeatureSpace;
use pyo3::prelude::*;
use pyo3::types::PyString;

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

/// A remembered name: its `str` object, its text, group id and bucket.
struct Entry {
    object: Py<PyString>,
    text: Box<str>,
    group: u32,
    bucket: u32,
}

/// `(group id, bucket)` of feature names seen before; see the module docs.
#[derive(Default)]
pub struct NameCache {
    map: HashMap<isize, Entry, BuildHasherDefault<PassThrough>>,
}

impl NameCache {
    /// The most names the memo keeps.
    pub const CAPACITY: usize = 1 << 16;

    /// `(group id, bucket)` of `name` (whose Python hash is `hash`), or
    /// `None` if its group is not registered in `space` yet. Fails only if
    /// the name cannot be read as UTF-8.
    pub fn locate(
        &mut self,
        space: &FeatureSpace,
        name: &Bound<'_, PyString>,
        hash: isize,
    ) -> PyResult<Option<(u32, u32)>> {
        let known = self.map.get(&hash);
        if let Some(e) = known {
            if e.object.as_ptr() == name.as_ptr() {
                return Ok(Some((e.group, e.bucket)));
            }
        }
        let text = name.to_str()?;
        if let Some(e) = known {
            if *e.text == *text {
                return Ok(Some((e.group, e.bucket)));
            }
        }
        let (group_name, bucket) = space.locate(text);
        let Some(group) = space.group_id(group_name) else {
            return Ok(None);
        };
        if known.is_none() && self.map.len() < Self::CAPACITY {
            let entry = Entry {
                object: name.clone().unbind(),
                text: text.into(),
                group,
                bucket,
            };
            self.map.insert(hash, entry);
        }
        Ok(Some((group, bucket)))
    }

    /// Heap bytes held by the memo (approximate; the `str` objects it keeps
    /// alive are counted by their text).
    pub fn heap_bytes(&self) -> usize {
        let names: usize = self.map.values().map(|e| e.text.len()).sum();
        names + self.map.capacity() * (std::mem::size_of::<(isize, Entry)>() + 1)
    }
}
