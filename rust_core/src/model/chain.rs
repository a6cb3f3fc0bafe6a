//! Labelled chains over indexed inputs: the training data of kernelised
//! learners on sequences.
//!
//! Every position of every chain refers to an input by its index
//! `0..n_inputs` (inputs are deduplicated and stored once, e.g. as rows of a
//! Gram matrix) and carries a gold label `0..n_labels`. Chains are stored
//! flat: chain `c` is positions `offsets[c]..offsets[c + 1]`.

use crate::error::{OmklError, Result};

/// A validated corpus of labelled chains.
///
/// # Example
/// ```
/// use omkl_core::model::chain::ChainCorpus;
/// // two chains: inputs [0, 1] labelled [0, 1], and input [1] labelled [1]
/// let c = ChainCorpus::new(vec![0, 1, 1], vec![0, 1, 1], vec![0, 2, 3], 2, 2).unwrap();
/// assert_eq!(c.len(), 2);
/// assert_eq!(c.chain(1), (&[1usize][..], &[1usize][..]));
/// assert!(ChainCorpus::new(vec![0, 5], vec![0, 0], vec![0, 2], 2, 2).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ChainCorpus {
    inputs: Vec<usize>,
    labels: Vec<usize>,
    offsets: Vec<usize>,
    n_inputs: usize,
    n_labels: usize,
}

impl ChainCorpus {
    /// Checks that `offsets` starts at 0, strictly increases (no empty
    /// chain) and ends at `inputs.len() == labels.len()`, that every input
    /// index is below `n_inputs` and every label below `n_labels`.
    ///
    /// # Complexity
    /// O(number of positions).
    pub fn new(
        inputs: Vec<usize>,
        labels: Vec<usize>,
        offsets: Vec<usize>,
        n_inputs: usize,
        n_labels: usize,
    ) -> Result<Self> {
        if offsets.len() < 2 {
            return Err(OmklError::empty(
                "chains (offsets needs at least 2 entries)",
            ));
        }
        if n_labels == 0 {
            return Err(OmklError::empty("labels (n_labels = 0)"));
        }
        if inputs.len() != labels.len() {
            return Err(OmklError::shape(
                "labels",
                format!("{} entries, one per input", inputs.len()),
                format!("{} entries", labels.len()),
            ));
        }
        if offsets[0] != 0 || *offsets.last().unwrap_or(&0) != inputs.len() {
            return Err(OmklError::invalid(
                "offsets",
                format!(
                    "expected to start at 0 and end at {} (the number of positions)",
                    inputs.len()
                ),
            ));
        }
        if let Some(c) = offsets.windows(2).position(|w| w[1] <= w[0]) {
            return Err(OmklError::invalid(
                "offsets",
                format!("expected strictly increasing offsets, chain {c} is empty or reversed"),
            ));
        }
        if let Some(p) = inputs.iter().position(|&i| i >= n_inputs) {
            return Err(OmklError::invalid(
                "inputs",
                format!(
                    "input index {} at position {p} is out of range 0..{n_inputs}",
                    inputs[p]
                ),
            ));
        }
        if let Some(p) = labels.iter().position(|&y| y >= n_labels) {
            return Err(OmklError::invalid(
                "labels",
                format!(
                    "label {} at position {p} is out of range 0..{n_labels}",
                    labels[p]
                ),
            ));
        }
        Ok(ChainCorpus {
            inputs,
            labels,
            offsets,
            n_inputs,
            n_labels,
        })
    }

    /// Number of chains.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Always `false`: a corpus holds at least one chain.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of positions.
    pub fn n_positions(&self) -> usize {
        self.inputs.len()
    }

    /// Number of distinct inputs the chains may refer to.
    pub fn n_inputs(&self) -> usize {
        self.n_inputs
    }

    /// Number of labels.
    pub fn n_labels(&self) -> usize {
        self.n_labels
    }

    /// Input indices and gold labels of chain `c` (panics if `c >= len()`).
    pub fn chain(&self, c: usize) -> (&[usize], &[usize]) {
        let (a, b) = (self.offsets[c], self.offsets[c + 1]);
        (&self.inputs[a..b], &self.labels[a..b])
    }

    /// Length of the longest chain.
    pub fn max_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_layouts() {
        let ok = |i: Vec<usize>, y: Vec<usize>, o: Vec<usize>| ChainCorpus::new(i, y, o, 3, 2);
        assert!(ok(vec![0, 1, 2], vec![0, 1, 1], vec![0, 1, 3]).is_ok());
        assert!(ok(vec![0, 1, 2], vec![0, 1], vec![0, 1, 3]).is_err());
        assert!(ok(vec![0, 1, 2], vec![0, 1, 1], vec![0, 1, 1, 3]).is_err());
        assert!(ok(vec![0, 1, 2], vec![0, 1, 1], vec![1, 3]).is_err());
        assert!(ok(vec![0, 1, 2], vec![0, 1, 2], vec![0, 3]).is_err());
        assert!(ok(vec![], vec![], vec![0]).is_err());
        let c = ok(vec![0, 1, 2], vec![0, 1, 1], vec![0, 1, 3]).unwrap();
        assert_eq!((c.len(), c.n_positions(), c.max_len()), (2, 3, 2));
    }
}
