//! Alg. 3: online multiple kernel learning for linear chains, kernelised.
//!
//! The model has K kernel groups (emission parts `(x_i, y)` with
//! `K_k((x, y), (x', y')) = [y = y'] k(x, x')`) and one explicit transition
//! group (label bigrams plus start and stop). Each round takes one chain,
//! finds the loss-augmented Viterbi labelling (Hamming cost), takes a
//! subgradient step on the structured hinge loss, then applies the prox of
//! `η_t Ω` through the group norms (Prop. 1): with `Ω = (λ/2)(Σ_g ‖θ_g‖)²`
//! this is MKL, with `(λ/2)‖θ‖²` a structured SVM.
//!
//! Kernel groups are [`KernelExpansion`]s: the scale factor makes the prox
//! O(#groups), the score cache makes scoring a training chain a lookup and
//! an update O(m) per changed coefficient, and the group norms follow the
//! §3.4 identity exactly.

use crate::decode::chain::ChainScores;
use crate::decode::viterbi::{viterbi_hamming, ViterbiWorkspace};
use crate::error::{OmklError, Result};
use crate::learner::chain_group::ChainGroup;
use crate::learner::explicit_group::ExplicitGroup;
use crate::learner::mkl_config::OnlineMklConfig;
use crate::learner::score_cache::{GramRef, KernelExpansion};
use crate::model::chain::ChainCorpus;
use crate::model::transitions::{LazyTransitions, Transitions};

/// What one epoch did, passed to the caller's callback.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochReport {
    /// 1-based epoch number.
    pub epoch: usize,
    /// `β_k = ‖θ_k‖ / Σ_l ‖θ_l‖` over the kernel groups (current iterate).
    pub beta: Vec<f64>,
    /// Positions labelled wrongly by loss-augmented decoding in the epoch.
    pub mistakes: usize,
    /// Mean structured hinge loss met online during the epoch.
    pub mean_hinge: f64,
    /// `Ω(θ) + (1/n) Σ hinge` at the epoch's end, if tracked.
    pub objective: Option<f64>,
}

/// A trained chain model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainMklModel {
    /// Number of training inputs `m`.
    pub n_inputs: usize,
    /// Number of labels `L`.
    pub n_labels: usize,
    /// Per group, the coefficients of the returned model (averaged or
    /// last): `α[y, j]` (label-major `L × m`) for kernel groups, `W[y, f]`
    /// (`L × d`) for explicit groups.
    pub coef: Vec<Vec<f64>>,
    /// Transition weights of the returned model.
    pub transitions: Transitions,
    /// `β` of the returned model.
    pub beta: Vec<f64>,
    /// Group norms of the returned model (K kernel groups, then transitions).
    pub norms: Vec<f64>,
    /// Coefficients of the last iterate.
    pub last_coef: Vec<Vec<f64>>,
    /// Squared group norms of the last iterate as maintained incrementally.
    pub last_sq_norms: Vec<f64>,
    /// One report per epoch.
    pub epochs: Vec<EpochReport>,
}

/// Splitmix64: a tiny seeded generator for the visiting order.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle(&mut self, v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn beta_of(norms: &[f64]) -> Vec<f64> {
    let total: f64 = norms.iter().sum();
    if total > 0.0 {
        norms.iter().map(|n| n / total).collect()
    } else {
        vec![1.0 / norms.len() as f64; norms.len()]
    }
}

/// Decoding state shared by the training rounds and the objective pass.
struct Scorer {
    em: Vec<f64>,
    ws: ViterbiWorkspace,
    out: Vec<usize>,
}

impl Scorer {
    /// Loss-augmented decoding of chain `(inputs, gold)`; leaves the
    /// labelling in `self.out[..n]` and returns the hinge loss.
    fn decode(
        &mut self,
        groups: &[Box<dyn ChainGroup + '_>],
        trans: &Transitions,
        inputs: &[usize],
        gold: &[usize],
        cost: f64,
    ) -> Result<f64> {
        let (n, l) = (inputs.len(), trans.l);
        let em = &mut self.em[..n * l];
        for (p, &i) in inputs.iter().enumerate() {
            let row = &mut em[p * l..(p + 1) * l];
            row.fill(0.0);
            for g in groups {
                g.add_scores(i, row);
            }
        }
        let chain = ChainScores::new(em, &trans.tr, Some(&trans.start), Some(&trans.stop), n, l)?;
        let aug = viterbi_hamming(&chain, gold, cost, &mut self.ws, &mut self.out[..n])?;
        Ok((aug - chain.score_of_unchecked(gold)).max(0.0))
    }
}

/// Trains the kernelised chain model of Alg. 3.
///
/// * `grams`: one `m × m` row-major f32 Gram matrix per kernel group over
///   the `m = corpus.n_inputs()` deduplicated training inputs (symmetric,
///   finite), shared read-only so that many trainings can run in parallel.
/// * `features`: one `(x, d)` per explicit group, `x` row-major `m × d`
///   (the primal form of a kernel group; see [`ExplicitGroup`]). Groups are
///   ordered kernel groups first, then explicit groups.
/// * `on_epoch`: called after each epoch; returning `false` stops training
///   with an error (used for Ctrl-C).
///
/// Errors name the bad argument (`grams`, `config` fields, ...).
///
/// # Complexity
/// Per round O(n K L + n L²) to score and decode a chain of length `n`,
/// O(K m) per wrongly labelled position for the cache updates, O(K + L²)
/// for the prox; memory O(K m (m + L)).
///
/// # Example
/// ```
/// use omkl_core::learner::mkl_config::OnlineMklConfig;
/// use omkl_core::learner::online_mkl::train_chain_mkl;
/// use omkl_core::model::chain::ChainCorpus;
/// // two inputs, label = input; one chain of each
/// let corpus = ChainCorpus::new(vec![0, 1], vec![0, 1], vec![0, 1, 2], 2, 2).unwrap();
/// let gram = [1.0f32, 0.0, 0.0, 1.0];
/// let cfg = OnlineMklConfig::default();
/// let model = train_chain_mkl(&[&gram], &[], &corpus, &cfg, |_| true).unwrap();
/// assert!(model.coef[0][0] > 0.0 && model.coef[0][3] > 0.0); // α[0, 0], α[1, 1]
/// ```
pub fn train_chain_mkl<F>(
    grams: &[&[f32]],
    features: &[(&[f32], usize)],
    corpus: &ChainCorpus,
    config: &OnlineMklConfig,
    on_epoch: F,
) -> Result<ChainMklModel>
where
    F: FnMut(&EpochReport) -> bool,
{
    let grams: Vec<GramRef<'_>> = grams.iter().map(|g| GramRef::Dense(g)).collect();
    train_chain_mkl_with(&grams, features, corpus, config, on_epoch)
}

/// [`train_chain_mkl`] with kernel groups given as dense or sparse (CSR)
/// Gram matrices: a sparse group's updates visit only the non-zeros of a
/// Gram row, and its predictions equal the dense group's.
///
/// # Complexity
/// As [`train_chain_mkl`], with O(nnz of the Gram row) instead of O(m) per
/// cache update of a sparse group.
pub fn train_chain_mkl_with<F>(
    grams: &[GramRef<'_>],
    features: &[(&[f32], usize)],
    corpus: &ChainCorpus,
    config: &OnlineMklConfig,
    mut on_epoch: F,
) -> Result<ChainMklModel>
where
    F: FnMut(&EpochReport) -> bool,
{
    if grams.is_empty() && features.is_empty() {
        return Err(OmklError::empty(
            "grams and features (at least one kernel or explicit group)",
        ));
    }
    let k = grams.len() + features.len();
    config.check(k)?;
    let (m, l) = (corpus.n_inputs(), corpus.n_labels());
    let mut groups: Vec<Box<dyn ChainGroup + '_>> = Vec::with_capacity(k);
    for g in grams {
        let e = match *g {
            GramRef::Dense(d) => KernelExpansion::new(d, m, l)?,
            GramRef::Sparse(sp) => {
                if sp.shape().0 != m {
                    return Err(OmklError::shape(
                        "gram",
                        format!("{m} x {m} (one row per input)"),
                        format!("{:?}", sp.shape()),
                    ));
                }
                KernelExpansion::new_sparse(sp, l)?
            }
        };
        groups.push(Box::new(e));
    }
    for &(x, d) in features {
        groups.push(Box::new(ExplicitGroup::new(x, m, d, l)?));
    }
    let mut trans = LazyTransitions::zeros(l);
    // groups of Ω: the K kernel groups, plus the transitions if shared
    let n_omega = if config.transition_lam.is_some() {
        k
    } else {
        k + 1
    };
    let max_len = corpus.max_len();
    let mut scorer = Scorer {
        em: vec![0.0; max_len * l],
        ws: ViterbiWorkspace::with_capacity(max_len, l),
        out: vec![0; max_len],
    };
    let mut order: Vec<usize> = (0..corpus.len()).collect();
    let mut rng = SplitMix(config.seed);
    let mut norms = vec![0.0; k + 1];
    let mut shrunk = vec![0.0; k + 1];
    let mut reports = Vec::with_capacity(config.epochs);
    let mut t: u64 = 0;
    for epoch in 1..=config.epochs {
        if config.shuffle {
            rng.shuffle(&mut order);
        }
        let (mut mistakes, mut hinge_sum) = (0usize, 0.0);
        for &c in &order {
            t += 1;
            let eta = config.step.eta(t);
            let (inputs, gold) = corpus.chain(c);
            hinge_sum += scorer.decode(&groups, trans.current(), inputs, gold, config.cost)?;
            let out = &scorer.out[..inputs.len()];
            if out != gold {
                for (p, (&yg, &yp)) in gold.iter().zip(out).enumerate() {
                    if yg != yp {
                        mistakes += 1;
                        for g in groups.iter_mut() {
                            g.add_pair(inputs[p], yg, yp, eta);
                        }
                    }
                }
                trans.add_path(gold, eta);
                trans.add_path(out, -eta);
            }
            for (n, g) in norms.iter_mut().zip(&groups) {
                *n = g.norm();
            }
            norms[k] = trans.sq_norm().sqrt();
            shrunk.copy_from_slice(&norms);
            config
                .regularizer
                .prox_group_norms(&mut shrunk[..n_omega], eta)?;
            if let Some(lam_t) = config.transition_lam {
                shrunk[k] = norms[k] / (1.0 + eta * lam_t);
            }
            for (i, g) in groups.iter_mut().enumerate() {
                if norms[i] > 0.0 {
                    g.scale_by(shrunk[i] / norms[i]);
                }
                g.end_round();
            }
            if norms[k] > 0.0 {
                trans.scale_by(shrunk[k] / norms[k]);
            }
            trans.end_round();
        }
        for (n, g) in norms.iter_mut().zip(&groups) {
            *n = g.norm();
        }
        norms[k] = trans.sq_norm().sqrt();
        let objective =
            if config.track_objective && (!config.objective_last_only || epoch == config.epochs) {
                let mut total = 0.0;
                for c in 0..corpus.len() {
                    let (inputs, gold) = corpus.chain(c);
                    total += scorer.decode(&groups, trans.current(), inputs, gold, config.cost)?;
                }
                let each: Vec<usize> = (0..=n_omega).collect();
                let separate = config
                    .transition_lam
                    .map_or(0.0, |lam_t| 0.5 * lam_t * norms[k] * norms[k]);
                Some(
                    config.regularizer.value(&norms[..n_omega], &each)
                        + separate
                        + total / corpus.len() as f64,
                )
            } else {
                None
            };
        let report = EpochReport {
            epoch,
            beta: beta_of(&norms[..k]),
            mistakes,
            mean_hinge: hinge_sum / corpus.len() as f64,
            objective,
        };
        let go_on = on_epoch(&report);
        reports.push(report);
        if !go_on {
            return Err(OmklError::invalid(
                "training",
                format!("interrupted after epoch {epoch}"),
            ));
        }
    }
    let last_coef: Vec<Vec<f64>> = groups.iter().map(|g| g.coefficients()).collect();
    let mut last_sq_norms: Vec<f64> = groups.iter().map(|g| g.sq_norm()).collect();
    last_sq_norms.push(trans.sq_norm());
    let (coef, transitions) = if config.average {
        let inv = 1.0 / t as f64;
        let coef = groups
            .iter()
            .map(|g| g.coefficient_sum().iter().map(|v| v * inv).collect())
            .collect();
        let mut trans_sum = trans.sum();
        trans_sum.scale(inv);
        (coef, trans_sum)
    } else {
        (last_coef.clone(), trans.current().clone())
    };
    let mut out_norms: Vec<f64> = coef
        .iter()
        .zip(&groups)
        .map(|(a, g)| g.sq_norm_of(a).max(0.0).sqrt())
        .collect();
    out_norms.push(transitions.sq_norm().sqrt());
    Ok(ChainMklModel {
        n_inputs: m,
        n_labels: l,
        beta: beta_of(&out_norms[..k]),
        coef,
        transitions,
        norms: out_norms,
        last_coef,
        last_sq_norms,
        epochs: reports,
    })
}
