//! The output structures of Alg. 1: what the parts of an output are, and
//! the loss and its (sub)gradient with respect to the part scores.
//!
//! * [`Structure::Multiclass`]: one part per output, the scores `z`
//!   (`1 × K`); the loss and gradient are [`super::Loss::loss_grad`].
//! * [`Structure::Chain`]: a labelling of `n` positions with `L` labels.
//!   Its parts are the `(position, label)` pairs, scored by the emission
//!   table `em` (`n × L`, as in [`ChainScores`]), and the label bigrams
//!   with start and stop, scored by the transition table `tr`
//!   (`(L + 2) × L`: rows `0..L` are `[previous, next]`, row `L` the start
//!   and row `L + 1` the stop scores). [`chain_loss_grad`] gives the
//!   structured hinge with Hamming cost 1 (loss-augmented Viterbi; the
//!   subgradient is the augmented labelling's parts minus the gold ones) or
//!   the CRF loss `log Z − score(gold)` (gradient: marginals minus gold
//!   parts, by forward-backward). A chain of length 1 without transitions
//!   is the multiclass case.
//! * The dependency tree (the parser's structure, with its own weight
//!   store): a head for each word `1..=n` of a sentence, the nodes being
//!   `0..n1` with `n1 = n + 1` and node 0 the root. Its parts are the arcs
//!   `(h, m)`, scored by `s[h * n1 + m]` (the layout of
//!   [`crate::decode::arcs::ArcScores`]). The argmax is the parser's
//!   decoder ([`crate::decode::chu_liu_edmonds`] or
//!   [`crate::decode::eisner`]); [`tree_hinge`] gives the structured hinge
//!   with Hamming cost 1 by the same decoder on the loss-augmented scores;
//!   the marginals of the CRF over trees are [`crate::decode::matrix_tree`]'s.
//!   [`head_softmax`] is the log-loss of choosing each word's head as one
//!   multiclass output (the loss of the parser's first-pass pruner).
//!
//! The transitions of a chain are stored by the learner as one more group
//! of [`super::GroupedWeights`], with output `next label` (see
//! [`super::chain`] for the buckets).

use serde::{Deserialize, Serialize};

use super::loss::Loss;
use crate::decode::chain::ChainScores;
use crate::decode::forward_backward::{forward_backward, ForwardBackwardWorkspace};
use crate::decode::viterbi::{viterbi, viterbi_hamming_with_column_max, ViterbiWorkspace};
use crate::error::{check_count, check_finite, check_table, OmklError, Result};

/// The output structure of a learner of Alg. 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Structure {
    /// One class (or one real value) per example.
    #[default]
    Multiclass,
    /// A label per position of a sequence; `transitions` is the group that
    /// holds the transition weights.
    Chain { transitions: u32 },
}

/// Reusable buffers of [`chain_loss_grad`] and of chain decoding.
#[derive(Debug, Clone, Default)]
pub struct ChainWorkspace {
    pub(crate) viterbi: ViterbiWorkspace,
    pub(crate) fb: ForwardBackwardWorkspace,
    pub(crate) out: Vec<usize>,
    pub(crate) trans: Vec<f64>,
}

/// Score and gradient buffers of a chain round (not part of the state).
#[derive(Debug, Clone, Default)]
pub struct ChainScratch {
    pub(crate) em: Vec<f64>,
    pub(crate) tr: Vec<f64>,
    pub(crate) gem: Vec<f64>,
    pub(crate) gtr: Vec<f64>,
    pub(crate) ws: ChainWorkspace,
    /// `gtr` holds only zeros (so a hinge round need not clear it).
    pub(crate) gtr_zero: bool,
    /// The rows of `gtr` that the last round's gradient may have written,
    /// in increasing order.
    pub(crate) gtr_rows: Vec<usize>,
    /// Read while `tr` was written: the column maxima of its bigram part
    /// (`L` values) and whether every value of `tr` is finite; used once,
    /// by the next [`chain_loss_grad_scratch`].
    pub(crate) col_max: Vec<f64>,
    pub(crate) tr_finite: bool,
}

/// The chain of `em` (`n × L`) and `tr` (`(L + 2) × L`), checked.
pub fn chain_of<'a>(em: &'a [f64], tr: &'a [f64], n: usize, l: usize) -> Result<ChainScores<'a>> {
    if tr.len() != (l + 2) * l {
        return Err(OmklError::shape(
            "transitions",
            format!("(L + 2) * L = {} scores", (l + 2) * l),
            tr.len().to_string(),
        ));
    }
    let (bigram, rest) = tr.split_at(l * l);
    let (start, stop) = rest.split_at(l);
    ChainScores::new(em, bigram, Some(start), Some(stop), n, l)
}

/// `g[part] += coef` for every transition part of `labels` (bigrams, start
/// and stop), in the `(L + 2) × L` layout.
fn add_path(g: &mut [f64], l: usize, labels: &[usize], coef: f64) {
    g[l * l + labels[0]] += coef;
    g[(l + 1) * l + labels[labels.len() - 1]] += coef;
    for w in labels.windows(2) {
        g[w[0] * l + w[1]] += coef;
    }
}

/// The loss of the gold labelling `gold` of a chain and its gradient with
/// respect to the emission scores (written into `gem`, `n × L`) and the
/// transition scores (into `gtr`, `(L + 2) × L`):
///
/// * `Loss::Hinge`: `max_y (score(y) + Hamming(y, gold)) − score(gold)`;
///   when the maximiser `ŷ` differs from the gold labelling, the gradient is
///   the parts of `ŷ` minus those of `gold` (zero otherwise);
/// * `Loss::Logistic` (the CRF): `log Z − score(gold)`, gradient the
///   marginals minus the gold parts.
///
/// # Complexity
/// O(n · L²).
///
/// # Example
/// ```
/// use omkl_core::learner::structure::{chain_loss_grad, ChainWorkspace};
/// use omkl_core::learner::Loss;
/// // n = 2, L = 2, all scores 0: Z = 4 labellings
/// let (em, tr) = ([0.0; 4], [0.0; 8]);
/// let (mut gem, mut gtr) = ([0.0; 4], [0.0; 8]);
/// let mut ws = ChainWorkspace::default();
/// let l = chain_loss_grad(Loss::Logistic, &em, &tr, 2, 2, &[0, 1], &mut ws, &mut gem, &mut gtr).unwrap();
/// assert!((l - 4f64.ln()).abs() < 1e-12);
/// assert_eq!(gem, [-0.5, 0.5, 0.5, -0.5]);
/// let h = chain_loss_grad(Loss::Hinge, &em, &tr, 2, 2, &[0, 1], &mut ws, &mut gem, &mut gtr).unwrap();
/// assert_eq!((h, gem), (2.0, [-1.0, 1.0, 1.0, -1.0]));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn chain_loss_grad(
    loss: Loss,
    em: &[f64],
    tr: &[f64],
    n: usize,
    l: usize,
    gold: &[usize],
    ws: &mut ChainWorkspace,
    gem: &mut [f64],
    gtr: &mut [f64],
) -> Result<f64> {
    let chain = chain_of(em, tr, n, l)?;
    chain.check_labels("ys", gold)?;
    if gem.len() != n * l || gtr.len() != (l + 2) * l {
        return Err(OmklError::shape(
            "gradient",
            format!("{} and {} values", n * l, (l + 2) * l),
            format!("{} and {}", gem.len(), gtr.len()),
        ));
    }
    gem.fill(0.0);
    gtr.fill(0.0);
    loss_grad_of(loss, &chain, gold, None, ws, gem, gtr)
}

/// [`chain_loss_grad`] into `s.gem` and `s.gtr` (sized here), whose
/// transition gradient starts from zero: `s.gtr` is cleared only when it
/// may hold values (`!s.gtr_zero`; the hinge writes a handful of rows, so
/// clearing all `(L + 2) × L` of them each round would cost more than the
/// round). `s.gtr_rows` receives the rows of `s.gtr` that may be non-zero,
/// in increasing order: the rows of the gold and predicted paths for the
/// hinge, every row for the CRF. The caller sets `s.gtr_zero` once it has
/// cleared those rows.
///
/// # Complexity
/// O(n · L²) for the CRF; for the hinge the Viterbi pass plus O(n · L).
pub(crate) fn chain_loss_grad_scratch(
    loss: Loss,
    n: usize,
    l: usize,
    gold: &[usize],
    s: &mut ChainScratch,
) -> Result<f64> {
    let summary = std::mem::take(&mut s.tr_finite) && s.col_max.len() == l;
    let chain = if summary && s.tr.len() == (l + 2) * l {
        let (bigram, rest) = s.tr.split_at(l * l);
        let (start, stop) = rest.split_at(l);
        ChainScores::with_finite_transitions(&s.em, bigram, Some(start), Some(stop), n, l)?
    } else {
        chain_of(&s.em, &s.tr, n, l)?
    };
    chain.check_labels("ys", gold)?;
    s.gem.clear();
    s.gem.resize(n * l, 0.0);
    if !s.gtr_zero || s.gtr.len() != (l + 2) * l {
        s.gtr.clear();
        s.gtr.resize((l + 2) * l, 0.0);
    }
    // from here on the buffer may hold the gradient
    s.gtr_zero = false;
    s.gtr_rows.clear();
    let col_max = if summary { Some(&s.col_max[..]) } else { None };
    let loss_value = loss_grad_of(
        loss, &chain, gold, col_max, &mut s.ws, &mut s.gem, &mut s.gtr,
    )?;
    match loss {
        Loss::Hinge => {
            let out = &s.ws.out;
            let rows = &mut s.gtr_rows;
            rows.extend([l, l + 1]);
            rows.extend(gold[..n.saturating_sub(1)].iter().copied());
            if out.len() == n {
                rows.extend(out[..n.saturating_sub(1)].iter().copied());
            }
            rows.sort_unstable();
            rows.dedup();
        }
        _ => s.gtr_rows.extend(0..l + 2),
    }
    Ok(loss_value)
}

/// The loss and gradients of [`chain_loss_grad`] on a checked chain, added
/// to `gem` and `gtr` (which hold zeros); the hinge's Viterbi reads the
/// column maxima `col_max` of the transitions when given.
fn loss_grad_of(
    loss: Loss,
    chain: &ChainScores<'_>,
    gold: &[usize],
    col_max: Option<&[f64]>,
    ws: &mut ChainWorkspace,
    gem: &mut [f64],
    gtr: &mut [f64],
) -> Result<f64> {
    let (n, l) = (chain.n, chain.l);
    let gold_score = chain.score_of_unchecked(gold);
    match loss {
        Loss::Hinge => {
            ws.out.resize(n, 0);
            let aug = viterbi_hamming_with_column_max(
                chain,
                gold,
                1.0,
                col_max,
                &mut ws.viterbi,
                &mut ws.out,
            )?;
            let out = &ws.out;
            if out[..] != *gold {
                for p in 0..n {
                    if out[p] != gold[p] {
                        gem[p * l + out[p]] += 1.0;
                        gem[p * l + gold[p]] -= 1.0;
                    }
                }
                add_path(gtr, l, out, 1.0);
                add_path(gtr, l, gold, -1.0);
            }
            Ok((aug - gold_score).max(0.0))
        }
        Loss::Logistic => {
            ws.trans.resize(l * l, 0.0);
            let log_z = forward_backward(chain, &mut ws.fb, gem, &mut ws.trans)?;
            gtr[..l * l].copy_from_slice(&ws.trans);
            gtr[l * l..(l + 1) * l].copy_from_slice(&gem[..l]);
            gtr[(l + 1) * l..].copy_from_slice(&gem[(n - 1) * l..]);
            for (p, &y) in gold.iter().enumerate() {
                gem[p * l + y] -= 1.0;
            }
            add_path(gtr, l, gold, -1.0);
            check_finite("gradient", gem)?;
            Ok((log_z - gold_score).max(0.0))
        }
        Loss::Squared => Err(OmklError::invalid(
            "loss",
            "a chain takes the hinge or the log (CRF) loss, not the squared loss",
        )),
    }
}

/// The highest-scoring labelling of a chain (see [`chain_of`]), written
/// into `ws.out`.
///
/// # Complexity
/// O(n · L²).
pub fn chain_argmax(chain: &ChainScores<'_>, ws: &mut ChainWorkspace) -> Result<Vec<usize>> {
    ws.out.resize(chain.n, 0);
    viterbi(chain, &mut ws.viterbi, &mut ws.out)?;
    Ok(ws.out.clone())
}

/// The position marginals `P(y_i = y)` (`n × L`) of the CRF of a chain
/// (see [`chain_of`]).
///
/// # Complexity
/// O(n · L²).
pub fn chain_marginals(chain: &ChainScores<'_>, ws: &mut ChainWorkspace) -> Result<Vec<f64>> {
    let (n, l) = (chain.n, chain.l);
    let mut node = vec![0.0; n * l];
    ws.trans.resize(l * l, 0.0);
    forward_backward(chain, &mut ws.fb, &mut node, &mut ws.trans)?;
    Ok(node)
}

/// The structured hinge of the dependency tree `heads` (`heads[m - 1]` is
/// the head of word `m`, for the nodes `0..n1`, node 0 the root) under the
/// arc scores `scores[h * n1 + m]`: `max_y (score(y) + Hamming(y, heads)) −
/// score(heads)`, clamped at 0, and the loss-augmented maximiser `y` (its
/// heads, in the layout of `heads`) found by `decode` (given the scores and
/// `n1`, it returns the best tree's heads). The Hamming cost is 1 per word
/// whose head differs from the gold one.
///
/// `scores` is overwritten: the self-arcs and the arcs into the root are
/// set to `-∞` and every other arc that is not gold gets `+1`; `decode` sees
/// these augmented scores. The gold heads need not form a tree (the
/// parser checks its gold trees before).
///
/// Errors if `scores` is not `n1 × n1`, `n1 < 2`, `heads` is not one head
/// per word in `0..n1` other than the word itself, `decode` fails, or it
/// returns a number of heads other than `n1 − 1`.
///
/// # Complexity
/// `O(n1²)` plus the decoder.
///
/// # Example
/// ```
/// use omkl_core::learner::structure::tree_hinge;
/// use omkl_core::model::parser_decode::TreeDecoder;
/// // two words, all arcs score 0, gold tree 0 -> 1 -> 2: the augmented
/// // maximiser 0 -> 2 -> 1 gets both heads wrong
/// let mut s = [0.0; 9];
/// let cle = |s: &[f64], n1: usize| TreeDecoder::ChuLiuEdmonds.decode(s, n1);
/// let (loss, pred) = tree_hinge(&mut s, 3, &[0, 1], cle).unwrap();
/// assert_eq!((loss, pred), (2.0, vec![2, 0]));
/// ```
pub fn tree_hinge(
    scores: &mut [f64],
    n1: usize,
    heads: &[usize],
    mut decode: impl FnMut(&[f64], usize) -> Result<Vec<usize>>,
) -> Result<(f64, Vec<usize>)> {
    if n1 < 2 {
        return Err(OmklError::empty("sentence (n1 < 2 nodes)"));
    }
    check_table("scores", scores.len(), &[n1, n1], "n1 x n1")?;
    check_count(
        "heads",
        heads.len(),
        n1 - 1,
        "heads",
        " (n1 - 1, one per word)",
    )?;
    if let Some((i, &h)) = heads
        .iter()
        .enumerate()
        .find(|&(i, &h)| h >= n1 || h == i + 1)
    {
        return Err(OmklError::invalid(
            "heads",
            format!(
                "head {h} of word {} is not in 0..{n1} or is the word itself",
                i + 1
            ),
        ));
    }
    for i in 0..n1 {
        scores[i * n1 + i] = f64::NEG_INFINITY;
        scores[i * n1] = f64::NEG_INFINITY;
    }
    let gold_score: f64 = (1..n1).map(|m| scores[heads[m - 1] * n1 + m]).sum();
    for m in 1..n1 {
        for h in 0..n1 {
            if h != m && h != heads[m - 1] {
                scores[h * n1 + m] += 1.0;
            }
        }
    }
    let pred = decode(scores, n1)?;
    if pred.len() != heads.len() {
        return Err(OmklError::shape(
            "decoded heads",
            heads.len().to_string(),
            pred.len().to_string(),
        ));
    }
    if let Some((i, &h)) = pred.iter().enumerate().find(|&(_, &h)| h >= n1) {
        return Err(OmklError::invalid(
            "decoded heads",
            format!("head {h} of word {} is not in 0..{n1}", i + 1),
        ));
    }
    let aug: f64 = (1..n1).map(|m| scores[pred[m - 1] * n1 + m]).sum();
    Ok(((aug - gold_score).max(0.0), pred))
}

/// The log-loss of head selection under the arc scores `s[h * n1 + m]`: for
/// every word `m`, the negative log of the softmax probability of its gold
/// head `heads[m - 1]` among all candidate heads `h ≠ m`, summed over words.
/// Pushes `(h, m, 1{h = gold} - p(h | m))` (the negative gradient) onto
/// `arcs` for every candidate whose coefficient exceeds `1e-4` in absolute
/// value. `s` holds `n1 × n1` scores and `heads` `n1 − 1` heads in `0..n1`
/// (not checked: indexing panics otherwise).
///
/// # Complexity
/// `O(n1²)`.
///
/// # Example
/// ```
/// use omkl_core::learner::structure::head_softmax;
/// // two words, all arcs score 0: each word has two candidate heads
/// let mut arcs = Vec::new();
/// let loss = head_softmax(&[0.0; 9], 3, &[0, 1], &mut arcs);
/// assert!((loss - 2.0 * 2f64.ln()).abs() < 1e-12);
/// assert_eq!(arcs, [(0, 1, 0.5), (2, 1, -0.5), (0, 2, -0.5), (1, 2, 0.5)]);
/// ```
pub fn head_softmax(s: &[f64], n1: usize, heads: &[usize], arcs: &mut Vec<(u32, u32, f64)>) -> f64 {
    let mut loss = 0.0;
    let mut p = vec![0.0f64; n1];
    for m in 1..n1 {
        let g = heads[m - 1];
        let best = (0..n1)
            .filter(|&h| h != m)
            .map(|h| s[h * n1 + m])
            .fold(f64::NEG_INFINITY, f64::max);
        let mut z = 0.0;
        for (h, ph) in p.iter_mut().enumerate() {
            *ph = if h == m {
                0.0
            } else {
                (s[h * n1 + m] - best).exp()
            };
            z += *ph;
        }
        loss += z.ln() - (s[g * n1 + m] - best);
        for (h, &ph) in p.iter().enumerate() {
            let c = f64::from(h == g) - ph / z;
            if h != m && c.abs() > 1e-4 {
                arcs.push((h as u32, m as u32, c));
            }
        }
    }
    loss
}

#[cfg(test)]
mod tests;
