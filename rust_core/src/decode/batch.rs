//! Batch decoding of many independent sequences or sentences in parallel
//! (rayon), one workspace per worker thread.

use rayon::prelude::*;

use super::arcs::ArcScores;
use super::chain::ChainScores;
use super::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use super::viterbi::{viterbi, ViterbiWorkspace};
use crate::error::{OmklError, Result};

/// Prefixes an error with the index of the failing item.
fn at(i: usize, e: OmklError) -> OmklError {
    OmklError::invalid(format!("item {i}"), e.to_string())
}

/// Viterbi on every chain; `outs[k]` must have `chains[k].n` elements.
/// Returns the scores. On error, names the first failing item.
///
/// # Complexity
/// O(Σ nₖ·L²) work, spread over the rayon thread pool.
///
/// # Example
/// ```
/// use omkl_core::decode::{batch::viterbi_batch, chain::ChainScores};
/// let (em, tr) = ([0.0, 1.0], [0.0; 4]);
/// let c = ChainScores::new(&em, &tr, None, None, 1, 2).unwrap();
/// let mut outs = vec![vec![0]; 3];
/// assert_eq!(viterbi_batch(&[c, c, c], &mut outs).unwrap(), vec![1.0; 3]);
/// ```
pub fn viterbi_batch(chains: &[ChainScores<'_>], outs: &mut [Vec<usize>]) -> Result<Vec<f64>> {
    if chains.len() != outs.len() {
        return Err(OmklError::shape(
            "outs",
            format!("{} buffers", chains.len()),
            format!("{} buffers", outs.len()),
        ));
    }
    chains
        .par_iter()
        .zip(outs.par_iter_mut())
        .enumerate()
        .map_init(ViterbiWorkspace::new, |ws, (i, (c, out))| {
            viterbi(c, ws, out).map_err(|e| at(i, e))
        })
        .collect()
}

/// Chu-Liu-Edmonds on every sentence; `heads[k]` must have `arcs[k].n + 1`
/// elements. Returns the tree scores.
///
/// # Complexity
/// O(Σ nₖ²) work, spread over the rayon thread pool.
pub fn chu_liu_edmonds_batch(
    arcs: &[ArcScores<'_>],
    single_root: bool,
    heads: &mut [Vec<usize>],
) -> Result<Vec<f64>> {
    if arcs.len() != heads.len() {
        return Err(OmklError::shape(
            "heads",
            format!("{} buffers", arcs.len()),
            format!("{} buffers", heads.len()),
        ));
    }
    arcs.par_iter()
        .zip(heads.par_iter_mut())
        .enumerate()
        .map_init(CleWorkspace::new, |ws, (i, (a, h))| {
            chu_liu_edmonds(a, single_root, ws, h).map_err(|e| at(i, e))
        })
        .collect()
}
