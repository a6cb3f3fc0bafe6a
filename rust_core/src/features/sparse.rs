//! Sparse grouped examples: lists of `(group, index, value)`.

use crate::error::{OmklError, Result};

/// A sparse example: the `i`-th non-zero is feature `indices[i]` of group
/// `groups[i]` with value `values[i]`. Repeated `(group, index)` pairs add up.
///
/// # Example
/// ```
/// use omkl_core::features::SparseExample;
/// let mut x = SparseExample::default();
/// x.push(0, 3, 1.5);
/// x.push(2, 0, -1.0);
/// assert_eq!(x.len(), 2);
/// assert!(x.check(3, 4).is_ok());
/// assert!(x.check(2, 4).is_err()); // group 2 does not exist
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseExample {
    pub groups: Vec<u32>,
    pub indices: Vec<u32>,
    pub values: Vec<f64>,
}

impl SparseExample {
    /// Appends one non-zero.
    pub fn push(&mut self, group: u32, index: u32, value: f64) {
        self.groups.push(group);
        self.indices.push(index);
        self.values.push(value);
    }

    /// Number of stored entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Removes every entry, keeping the allocations.
    pub fn clear(&mut self) {
        self.groups.clear();
        self.indices.clear();
        self.values.clear();
    }

    /// Checks that the three arrays agree, that every group is `< n_groups`,
    /// every index `< n_buckets`, and every value finite.
    ///
    /// # Complexity
    /// O(number of entries).
    pub fn check(&self, n_groups: usize, n_buckets: usize) -> Result<()> {
        let (g, i, v) = (&self.groups, &self.indices, &self.values);
        check_entries(g, i, v, n_groups, n_buckets)
    }
}

/// Many examples in compressed rows: example `i` holds entries
/// `indptr[i]..indptr[i + 1]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseBatch {
    pub indptr: Vec<usize>,
    pub groups: Vec<u32>,
    pub indices: Vec<u32>,
    pub values: Vec<f64>,
}

impl SparseBatch {
    /// Number of examples.
    pub fn n_examples(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    /// Checks the row pointers and every entry (see [`SparseExample::check`]).
    pub fn check(&self, n_groups: usize, n_buckets: usize) -> Result<()> {
        if self.indptr.first() != Some(&0) {
            return Err(OmklError::invalid(
                "indptr",
                "expected a non-empty array starting with 0",
            ));
        }
        if let Some(i) = self.indptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(OmklError::invalid(
                "indptr",
                format!(
                    "expected non-decreasing row pointers, but indptr[{i}] > indptr[{}]",
                    i + 1
                ),
            ));
        }
        let nnz = *self.indptr.last().unwrap_or(&0);
        if nnz != self.values.len() {
            return Err(OmklError::shape(
                "indptr",
                format!(
                    "last row pointer = number of values ({})",
                    self.values.len()
                ),
                nnz.to_string(),
            ));
        }
        let (g, i, v) = (&self.groups, &self.indices, &self.values);
        check_entries(g, i, v, n_groups, n_buckets)
    }

    /// A borrowed view of example `i` (inputs must be valid).
    pub fn row(&self, i: usize) -> (&[u32], &[u32], &[f64]) {
        let r = self.indptr[i]..self.indptr[i + 1];
        (
            &self.groups[r.clone()],
            &self.indices[r.clone()],
            &self.values[r],
        )
    }
}

/// Shared validation of parallel `(group, index, value)` arrays.
pub fn check_entries(
    groups: &[u32],
    indices: &[u32],
    values: &[f64],
    n_groups: usize,
    n_buckets: usize,
) -> Result<()> {
    for (name, len) in [("groups", groups.len()), ("indices", indices.len())] {
        if len != values.len() {
            return Err(OmklError::shape(
                name,
                format!("length {} (as values)", values.len()),
                len.to_string(),
            ));
        }
    }
    crate::error::check_finite("values", values)?;
    for (name, what, ids, bound) in [
        ("groups", "group ids", groups, n_groups),
        ("indices", "indices", indices, n_buckets),
    ] {
        if let Some(i) = ids.iter().position(|&v| v as usize >= bound) {
            return Err(OmklError::invalid(
                name,
                format!("expected {what} < {bound}, but entry {i} is {}", ids[i]),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_entries_names_the_bad_array_and_entry() {
        let msg =
            |g: &[u32], i: &[u32], v: &[f64]| check_entries(g, i, v, 2, 8).unwrap_err().to_string();
        assert!(check_entries(&[0, 1], &[7, 0], &[1.0, 2.0], 2, 8).is_ok());
        assert_eq!(
            msg(&[0], &[0, 0], &[1.0, 2.0]),
            "shape mismatch for `groups`: expected length 2 (as values), got 1"
        );
        assert_eq!(
            msg(&[0, 0], &[0], &[1.0, 2.0]),
            "shape mismatch for `indices`: expected length 2 (as values), got 1"
        );
        assert_eq!(
            msg(&[0, 2], &[0, 9], &[1.0, 2.0]),
            "invalid value for `groups`: expected group ids < 2, but entry 1 is 2"
        );
        assert_eq!(
            msg(&[0, 1], &[0, 9], &[1.0, 2.0]),
            "invalid value for `indices`: expected indices < 8, but entry 1 is 9"
        );
        assert!(msg(&[0, 1], &[0, 1], &[1.0, f64::NAN]).contains("`values`"));
    }
}
