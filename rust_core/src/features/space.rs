//! Mapping feature names to groups and buckets.
//!
//! A feature's group is found either by **prefix** (the part of the name
//! before the first occurrence of a separator; a name without the separator
//! is its own group) or by an **explicit mapping** `feature name → group
//! name` (names missing from the mapping fall back to the prefix rule).
//! Groups get ids `0, 1, 2, ...` in order of first appearance. Inside its
//! group a feature goes to bucket `hash_name(name) mod n_buckets`.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::hashing::{check_n_buckets, hash_name};
use crate::error::{OmklError, Result};

/// How feature names are assigned to groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grouping {
    /// Separator of the prefix rule (non-empty).
    pub separator: String,
    /// Explicit `feature name → group name` assignments, which take
    /// precedence over the prefix rule.
    pub mapping: BTreeMap<String, String>,
}

impl Grouping {
    /// The prefix rule alone.
    pub fn by_prefix(separator: &str) -> Self {
        Grouping {
            separator: separator.to_string(),
            mapping: BTreeMap::new(),
        }
    }

    /// Checks that the separator is non-empty.
    pub fn check(&self) -> Result<()> {
        if self.separator.is_empty() {
            return Err(OmklError::invalid(
                "separator",
                "expected a non-empty string",
            ));
        }
        Ok(())
    }

    /// The group name of a feature name.
    ///
    /// # Example
    /// ```
    /// use omkl_core::features::Grouping;
    /// let g = Grouping::by_prefix("_");
    /// assert_eq!(g.group_of("word_the"), "word");
    /// assert_eq!(g.group_of("suffix_ing_2"), "suffix");
    /// assert_eq!(g.group_of("length"), "length");
    /// ```
    pub fn group_of<'a>(&'a self, name: &'a str) -> &'a str {
        if let Some(g) = self.mapping.get(name) {
            return g;
        }
        match name.find(self.separator.as_str()) {
            Some(i) => &name[..i],
            None => name,
        }
    }
}

/// The registry of groups seen so far, and the name resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSpace {
    grouping: Grouping,
    n_buckets: usize,
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl FeatureSpace {
    /// An empty registry.
    pub fn new(grouping: Grouping, n_buckets: usize) -> Result<Self> {
        grouping.check()?;
        check_n_buckets(n_buckets)?;
        Ok(FeatureSpace {
            grouping,
            n_buckets,
            names: Vec::new(),
            ids: HashMap::new(),
        })
    }

    /// Rebuilds a registry from its group names in id order.
    pub fn with_groups(grouping: Grouping, n_buckets: usize, names: Vec<String>) -> Result<Self> {
        let mut space = FeatureSpace::new(grouping, n_buckets)?;
        for name in names {
            if space.ids.contains_key(&name) {
                return Err(OmklError::invalid(
                    "group names",
                    format!("group {name:?} appears twice"),
                ));
            }
            space.intern(&name);
        }
        Ok(space)
    }

    /// The grouping rule.
    pub fn grouping(&self) -> &Grouping {
        &self.grouping
    }

    /// Buckets per group.
    pub fn n_buckets(&self) -> usize {
        self.n_buckets
    }

    /// Number of groups seen so far.
    pub fn n_groups(&self) -> usize {
        self.names.len()
    }

    /// Group names in id order.
    pub fn group_names(&self) -> &[String] {
        &self.names
    }

    /// The id of a group name, if it was seen.
    pub fn group_id(&self, group: &str) -> Option<u32> {
        self.ids.get(group).copied()
    }

    /// The id of a group name, registering it if new.
    pub fn intern(&mut self, group: &str) -> u32 {
        if let Some(&id) = self.ids.get(group) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(group.to_string());
        self.ids.insert(group.to_string(), id);
        id
    }

    /// Forgets the groups from id `n_groups` on.
    pub fn truncate(&mut self, n_groups: usize) {
        for name in self.names.drain(n_groups.min(self.names.len())..) {
            self.ids.remove(&name);
        }
    }

    /// The group name and bucket of a feature name (no registration).
    ///
    /// # Complexity
    /// O(length of the name).
    pub fn locate<'a>(&'a self, name: &'a str) -> (&'a str, u32) {
        let group = self.grouping.group_of(name);
        let bucket = (hash_name(name) % self.n_buckets as u64) as u32;
        (group, bucket)
    }

    /// Heap bytes used by the registry (approximate).
    pub fn heap_bytes(&self) -> usize {
        let names: usize = self.names.iter().map(|s| s.capacity() + 24).sum();
        let mapping: usize = self
            .grouping
            .mapping
            .iter()
            .map(|(k, v)| k.capacity() + v.capacity() + 64)
            .sum();
        2 * names + mapping + self.ids.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_mapping_wins_over_prefix() {
        let mut g = Grouping::by_prefix("_");
        g.mapping.insert("a_b".into(), "special".into());
        assert_eq!(g.group_of("a_b"), "special");
        assert_eq!(g.group_of("a_c"), "a");
    }

    #[test]
    fn groups_are_numbered_in_order_of_appearance() {
        let mut s = FeatureSpace::new(Grouping::by_prefix("::"), 8).unwrap();
        assert_eq!(s.intern("x"), 0);
        assert_eq!(s.intern("y"), 1);
        assert_eq!(s.intern("x"), 0);
        assert_eq!(s.locate("y::1").0, "y");
        assert!(s.locate("y::1").1 < 8);
        assert!(FeatureSpace::new(Grouping::by_prefix(""), 8).is_err());
        assert!(FeatureSpace::with_groups(
            Grouping::by_prefix("_"),
            8,
            vec!["a".into(), "a".into()]
        )
        .is_err());
    }
}
