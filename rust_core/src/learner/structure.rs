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
//!
//! The transitions of a chain are stored by the learner as one more group
//! of [`super::GroupedWeights`], with output `next label` (see
//! [`super::chain`] for the buckets).

use serde::{Deserialize, Serialize};

use super::loss::Loss;
use crate::decode::chain::ChainScores;
use crate::decode::forward_backward::{forward_backward, ForwardBackwardWorkspace};
use crate::decode::viterbi::{viterbi, viterbi_hamming, ViterbiWorkspace};
use crate::error::{check_finite, OmklError, Result};

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
    let gold_score = chain.score_of_unchecked(gold);
    match loss {
        Loss::Hinge => {
            ws.out.resize(n, 0);
            let aug = viterbi_hamming(&chain, gold, 1.0, &mut ws.viterbi, &mut ws.out)?;
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
            let log_z = forward_backward(&chain, &mut ws.fb, gem, &mut ws.trans)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every labelling of `n` positions with `l` labels.
    fn all_labellings(n: usize, l: usize) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]];
        for _ in 0..n {
            out = out
                .into_iter()
                .flat_map(|p| {
                    (0..l).map(move |y| {
                        let mut q = p.clone();
                        q.push(y);
                        q
                    })
                })
                .collect();
        }
        out
    }

    fn score(em: &[f64], tr: &[f64], l: usize, y: &[usize]) -> f64 {
        let mut s = tr[l * l + y[0]] + tr[(l + 1) * l + y[y.len() - 1]];
        for (i, &v) in y.iter().enumerate() {
            s += em[i * l + v];
            if i > 0 {
                s += tr[y[i - 1] * l + v];
            }
        }
        s
    }

    /// The parts of `y` as one indicator vector (emissions then transitions).
    fn parts(n: usize, l: usize, y: &[usize]) -> Vec<f64> {
        let mut v = vec![0.0; n * l + (l + 2) * l];
        for (i, &t) in y.iter().enumerate() {
            v[i * l + t] += 1.0;
        }
        add_path(&mut v[n * l..], l, y, 1.0);
        v
    }

    #[test]
    fn crf_and_hinge_match_brute_force() {
        let (n, l) = (3, 3);
        let em: Vec<f64> = (0..n * l)
            .map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.37)
            .collect();
        let tr: Vec<f64> = (0..(l + 2) * l)
            .map(|i| ((i * 3 % 7) as f64 - 3.0) * 0.21)
            .collect();
        let gold = [2, 0, 1];
        let ys = all_labellings(n, l);
        // the loss and the gradient (emissions, then transitions) of `gold`
        let run = |loss: Loss, gold: &[usize]| {
            let (mut gem, mut gtr) = (vec![0.0; n * l], vec![0.0; (l + 2) * l]);
            let mut ws = ChainWorkspace::default();
            chain_loss_grad(loss, &em, &tr, n, l, gold, &mut ws, &mut gem, &mut gtr)
                .map(|v| (v, [gem, gtr].concat()))
        };
        // CRF: log Z - score(gold); gradient E[parts] - parts(gold)
        let scores: Vec<f64> = ys.iter().map(|y| score(&em, &tr, l, y)).collect();
        let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
        let log_z = m + z.ln();
        let mut expected = parts(n, l, &gold).iter().map(|v| -v).collect::<Vec<_>>();
        for (y, s) in ys.iter().zip(&scores) {
            let p = (s - log_z).exp();
            for (e, v) in expected.iter_mut().zip(parts(n, l, y)) {
                *e += p * v;
            }
        }
        let (loss, g) = run(Loss::Logistic, &gold).unwrap();
        assert!((loss - (log_z - score(&em, &tr, l, &gold))).abs() < 1e-12);
        for (a, b) in g.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // hinge: the augmented maximiser
        let (best, aug) = ys
            .iter()
            .map(|y| {
                let ham = y.iter().zip(&gold).filter(|(a, b)| a != b).count() as f64;
                (y.clone(), score(&em, &tr, l, y) + ham)
            })
            .fold(
                (vec![], f64::NEG_INFINITY),
                |a, b| if b.1 > a.1 { b } else { a },
            );
        let (loss, g) = run(Loss::Hinge, &gold).unwrap();
        assert!((loss - (aug - score(&em, &tr, l, &gold))).abs() < 1e-12);
        let want: Vec<f64> = parts(n, l, &best)
            .iter()
            .zip(parts(n, l, &gold))
            .map(|(a, b)| a - b)
            .collect();
        assert_eq!(g, want);
        assert!(run(Loss::Squared, &gold).is_err());
        assert!(run(Loss::Hinge, &[0, 3, 0]).is_err());
    }
}
