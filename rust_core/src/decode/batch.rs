//! Batch decoding of many independent sequences or sentences in parallel
//! (rayon), one workspace per worker thread.

use rayon::prelude::*;

use super::arcs::ArcScores;
use super::chain::ChainScores;
use super::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use super::viterbi::{viterbi, ViterbiWorkspace};
use crate::error::{check_count, check_finite, check_table, OmklError, Result};

/// Work (in n·L² cells) below which a rayon task is not split further, so
/// that short sequences are decoded in runs rather than one task each.
const MIN_CELLS_PER_TASK: usize = 1 << 16;

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
    check_count("outs", outs.len(), chains.len(), "buffers", "")?;
    chains
        .par_iter()
        .zip(outs.par_iter_mut())
        .enumerate()
        .map_init(ViterbiWorkspace::new, |ws, (i, (c, out))| {
            viterbi(c, ws, out).map_err(|e| at(i, e))
        })
        .collect()
}

/// A batch of chains sharing transitions, stored as one padded array.
///
/// `em` is `count × max_n × L` (row-major; chain `k` occupies
/// `em[k * max_n * L..]`), and chain `k` has `lengths[k]` positions (all
/// `max_n` when `lengths` is `None`). Emissions past a chain's length are
/// padding and are never read, so they may hold anything.
#[derive(Debug, Clone, Copy)]
pub struct PaddedChains<'a> {
    /// Emissions, `count × max_n × L`.
    pub em: &'a [f64],
    /// Optional lengths, each in `1..=max_n`.
    pub lengths: Option<&'a [usize]>,
    /// Number of chains.
    pub count: usize,
    /// Padded length.
    pub max_n: usize,
    /// Shared transitions, start and stop (checked once).
    pub shared: ChainScores<'a>,
}

impl<'a> PaddedChains<'a> {
    /// Checks the shapes, the lengths and the shared scores (`tr`, `start`,
    /// `stop`); the emissions of each chain are checked when it is decoded.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        em: &'a [f64],
        lengths: Option<&'a [usize]>,
        tr: &'a [f64],
        start: Option<&'a [f64]>,
        stop: Option<&'a [f64]>,
        count: usize,
        max_n: usize,
        l: usize,
    ) -> Result<Self> {
        if max_n == 0 {
            return Err(OmklError::empty("emissions (n = 0 positions)"));
        }
        check_table("emissions", em.len(), &[count, max_n, l], "count * n * L")?;
        if let Some(len) = lengths {
            check_count("lengths", len.len(), count, "elements", " (one per chain)")?;
            if let Some((k, &v)) = len.iter().enumerate().find(|(_, &v)| v == 0 || v > max_n) {
                return Err(OmklError::invalid(
                    "lengths",
                    format!("lengths[{k}] = {v}, expected 1..={max_n}"),
                ));
            }
        }
        // Validates tr, start and stop once, on a one-position dummy chain.
        let zeros = vec![0.0; l];
        ChainScores::new(&zeros, tr, start, stop, 1, l)?;
        let shared = ChainScores {
            em: &[],
            tr,
            start,
            stop,
            n: max_n,
            l,
        };
        Ok(PaddedChains {
            em,
            lengths,
            count,
            max_n,
            shared,
        })
    }

    /// The scores of chain `k`, its emissions checked for finiteness.
    pub fn chain(&self, k: usize) -> Result<ChainScores<'a>> {
        let l = self.shared.l;
        let n = self.lengths.map_or(self.max_n, |len| len[k]);
        let base = k * self.max_n * l;
        let em = &self.em[base..base + n * l];
        check_finite("emissions", em)?;
        Ok(ChainScores {
            em,
            n,
            ..self.shared
        })
    }
}

/// Viterbi on every chain of a padded batch. Writes chain `k`'s labels into
/// `out[k * max_n..][..n_k]` (the padding of `out` is left untouched) and
/// its score into `scores[k]`. On error, names the first failing chain.
///
/// # Complexity
/// O(Σ nₖ·L²) work, spread over the rayon thread pool in tasks of at least
/// ~65 000 cells.
///
/// # Example
/// ```
/// use omkl_core::decode::batch::{viterbi_padded, PaddedChains};
/// // Two chains of L = 2 labels padded to 2 positions; the second has 1.
/// let em = [1.0, 0.0, 0.0, 1.0, 0.0, 3.0, f64::NAN, f64::NAN];
/// let tr = [0.0; 4];
/// let b = PaddedChains::new(&em, Some(&[2, 1]), &tr, None, None, 2, 2, 2).unwrap();
/// let (mut out, mut scores) = ([9; 4], [0.0; 2]);
/// viterbi_padded(&b, &mut out, &mut scores).unwrap();
/// assert_eq!((out, scores), ([0, 1, 1, 9], [2.0, 3.0]));
/// ```
pub fn viterbi_padded(b: &PaddedChains<'_>, out: &mut [usize], scores: &mut [f64]) -> Result<()> {
    check_count(
        "out",
        out.len(),
        b.count * b.max_n,
        "elements",
        " (count x n)",
    )?;
    check_count("scores", scores.len(), b.count, "elements", "")?;
    if b.count == 0 {
        return Ok(());
    }
    let l = b.shared.l;
    let cells = (b.max_n * l * l).max(1);
    let min_len = (MIN_CELLS_PER_TASK / cells).max(1);
    let failed = out
        .par_chunks_mut(b.max_n)
        .zip(scores.par_iter_mut())
        .enumerate()
        .with_min_len(min_len)
        .map_init(ViterbiWorkspace::new, |ws, (k, (o, s))| {
            let c = b.chain(k)?;
            *s = viterbi(&c, ws, &mut o[..c.n])?;
            Ok::<(), OmklError>(())
        })
        .any(|r| r.is_err());
    if failed {
        // Error path only: find the first failing chain, in order.
        for k in 0..b.count {
            b.chain(k).map_err(|e| at(k, e))?;
        }
    }
    Ok(())
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
    check_count("heads", heads.len(), arcs.len(), "buffers", "")?;
    arcs.par_iter()
        .zip(heads.par_iter_mut())
        .enumerate()
        .map_init(CleWorkspace::new, |ws, (i, (a, h))| {
            chu_liu_edmonds(a, single_root, ws, h).map_err(|e| at(i, e))
        })
        .collect()
}
