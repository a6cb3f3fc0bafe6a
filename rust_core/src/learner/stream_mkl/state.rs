//! [`StreamMkl`]: the state of the streaming Alg. 3, its construction,
//! input validation, growth (labels, dimension) and accessors.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::config::StreamMklConfig;
use super::precomputed::{FeatureRows, PrecomputedGram};
use super::scratch::ScratchSlot;
use crate::error::{check_table_of, OmklError, Result};
use crate::kernel::gram::check_finite_f32;
use crate::kernel::SupportStore;
use crate::learner::weights::ScaledBlock;

/// The streaming (one example at a time) Alg. 3 learner for multiclass
/// problems (a chain of length 1 without transitions) and linear chains.
///
/// The model is `θ = (θ_1, …, θ_K, θ_{K+1}, …, θ_{K+E}[, θ_tr])`:
///
/// * kernel group `k`: `θ_k = Σ_{j,y} α_k[j, y] φ_k(x_j) ⊗ e_y` over the
///   shared support set (parts `(x_j, y)`, kernel
///   `K_k((x, y), (x', y')) = [y = y'] k_k(x, x')`);
/// * explicit group `e`: a dense `L × |cols_e|` weight matrix on the input
///   columns `cols_e` (the primal form of a linear kernel on them);
/// * chains: the transition group (label bigrams, start and stop).
///
/// A round ([`StreamMkl::learn`]) scores the example (kernel values against
/// every support input, one shared dot product per support for all
/// kernels), decodes (loss-augmented Viterbi for the hinge,
/// forward-backward for the CRF loss), takes the subgradient step (adds
/// coefficients for the parts that change, inserting new support inputs),
/// then applies the prox of `η_t Ω` through the group norms (Prop. 1) by
/// one scale factor per group, and optionally projects onto an ℓ2,1 ball
/// and enforces the support budget. Group norms follow the §3.4 identity
/// `‖θ + Δ‖² = ‖θ‖² + 2⟨θ, Δ⟩ + ‖Δ‖²`, where `⟨θ_k, Δ_k⟩` is read off the
/// round's scores and `‖Δ_k‖²` needs only kernel values between the
/// example's positions.
///
/// Every error is raised before anything changes: a failed round leaves the
/// model as it was.
///
/// # Complexity
/// A round on a chain of `n` positions with `S` support inputs of dimension
/// `d`, `K` kernels, `E` explicit groups of total width `D_E` and `L`
/// labels: O(n S (d + K L)) to score (kernel values equal to 0 are skipped
/// when `skip_zeros`), O(n D_E L) for the explicit groups, O(n L²) to
/// decode, O(n'² (d + L)) for the norm update over the `n'` changed
/// positions, O(K + E + L²) for the prox; a budget removal costs one more
/// scoring pass, O(S (d + K L)).
///
/// # Example
/// ```
/// use omkl_core::kernel::Kernel;
/// use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
/// let cfg = StreamMklConfig::multiclass(
///     vec![Kernel::Linear { normalize: false }, Kernel::Gaussian { sigma2: 1.0 }],
///     1e-3,
///     1.0,
/// );
/// let mut m = StreamMkl::new(cfg, 2, 2).unwrap();
/// for _ in 0..5 {
///     m.learn(&[1.0, 0.0], &[0]).unwrap();
///     m.learn(&[0.0, 1.0], &[1]).unwrap();
/// }
/// assert_eq!(m.predict(&[0.9, 0.1]).unwrap(), vec![0]);
/// assert_eq!(m.n_support(), 2); // each input is stored once
/// let beta = m.beta();
/// assert!((beta.iter().sum::<f64>() - 1.0).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamMkl {
    pub(super) config: StreamMklConfig,
    pub(super) d: usize,
    pub(super) l: usize,
    pub(super) support: SupportStore,
    /// Per kernel group, `α[j, y]` at `j·L + y`.
    pub(super) kgroups: Vec<ScaledBlock>,
    /// Per explicit group, `W[f, y]` at `f·L + y` (`f` indexes its columns).
    pub(super) egroups: Vec<ScaledBlock>,
    /// Chains: `(L + 2) × L`, rows `0..L` the bigrams `tr[prev, next]`,
    /// row `L` the start and row `L + 1` the stop weights.
    pub(super) trans: Option<ScaledBlock>,
    /// Finished rounds.
    pub(super) t: u64,
    /// The round at which the step-size schedule last (re)started: round
    /// `t + 1` takes the rate of round `t + 1 - schedule_start`.
    #[serde(default)]
    pub(super) schedule_start: u64,
    /// The round at which the averaged iterate last (re)started: it is the
    /// average of the iterates of rounds `average_start + 1 ..= t`.
    #[serde(default)]
    pub(super) average_start: u64,
    /// The rounds that would have forgotten but did not, up to
    /// `config.forget_after`.
    #[serde(default)]
    pub(super) forget_waited: u64,
    /// Per support input, the last round that changed its coefficients
    /// (the budget's `Oldest` rule removes the smallest).
    #[serde(default)]
    pub(super) support_stamp: Vec<u64>,
    pub(super) history_rounds: Vec<u64>,
    pub(super) history: Vec<Vec<f64>>,
    /// Precomputed Gram matrices and feature rows (a model over input ids).
    #[serde(skip)]
    pub(super) pre: Option<Box<Precomputed>>,
    /// Buffers reused by the rounds.
    #[serde(skip)]
    pub(super) scratch: ScratchSlot,
    /// Feature maps that fill the last columns from the first (`mapped`).
    #[serde(skip)]
    pub(super) maps: crate::kernel::feature_map::MapSlot,
    /// The scores of the last prediction, for the round that follows.
    #[serde(skip)]
    pub(super) memo: super::scratch::ScoreMemo,
}

/// The precomputed inputs of a model over input ids `0..m`: per kernel
/// group its Gram matrix and the score cache `A[y, i] = Σ_j a[j, y] K[j, i]`
/// (label-major, raw units: the score of `(x_i, y)` is `s · A[y, i]`), per
/// explicit group its feature rows.
#[derive(Debug, Clone)]
pub(super) struct Precomputed {
    pub(super) m: usize,
    pub(super) grams: Vec<PrecomputedGram>,
    pub(super) caches: Vec<Vec<f64>>,
    pub(super) features: Vec<Arc<FeatureRows>>,
}

impl PartialEq for Precomputed {
    /// Models over the same inputs compare by coefficients (the caches
    /// follow from them); the matrices are compared by size only.
    fn eq(&self, other: &Self) -> bool {
        self.m == other.m
            && self.grams.len() == other.grams.len()
            && self.features.len() == other.features.len()
    }
}

impl StreamMkl {
    /// A zero model for inputs of dimension `d ≥ 1` and `n_labels ≥ 1`
    /// labels.
    pub fn new(config: StreamMklConfig, d: usize, n_labels: usize) -> Result<Self> {
        if d == 0 {
            return Err(OmklError::invalid("d", "expected a dimension >= 1, got 0"));
        }
        let l = check_n_labels(n_labels)?;
        config.check(d)?;
        let kgroups = vec![ScaledBlock::zeros(0); config.kernels.len()];
        let egroups = config
            .explicit_groups
            .iter()
            .map(|c| ScaledBlock::zeros(l * c.len()))
            .collect();
        let support = SupportStore::new(config.kernel_columns.unwrap_or(d));
        Ok(Self::at_round_zero(
            config, d, l, kgroups, egroups, support, None,
        ))
    }

    /// A model of `l` labels over inputs of dimension `d` holding the given
    /// zero groups and empty support, before its first round.
    fn at_round_zero(
        config: StreamMklConfig,
        d: usize,
        l: usize,
        kgroups: Vec<ScaledBlock>,
        egroups: Vec<ScaledBlock>,
        support: SupportStore,
        pre: Option<Box<Precomputed>>,
    ) -> Self {
        StreamMkl {
            kgroups,
            egroups,
            trans: config.chain.then(|| ScaledBlock::zeros((l + 2) * l)),
            support,
            config,
            d,
            l,
            t: 0,
            schedule_start: 0,
            average_start: 0,
            forget_waited: 0,
            support_stamp: Vec::new(),
            history_rounds: Vec::new(),
            history: Vec::new(),
            pre,
            scratch: ScratchSlot::default(),
            maps: Default::default(),
            memo: Default::default(),
        }
    }

    /// A zero model over precomputed inputs `0..m`: one kernel group per
    /// Gram matrix (all `m × m`), one explicit group per feature matrix
    /// (`m` rows), in that order. `config.kernels` and
    /// `config.explicit_groups` must be empty; examples are then lists of
    /// input ids ([`StreamMkl::learn_ids`], [`StreamMkl::predict_ids`]).
    /// Such a model has no support budget (`max_support` must be `None`).
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use omkl_core::learner::stream_mkl::{PrecomputedGram, StreamMkl, StreamMklConfig};
    /// let gram = PrecomputedGram::dense(Arc::new(vec![1.0f32, 0.0, 0.0, 1.0]), 2).unwrap();
    /// let cfg = StreamMklConfig::multiclass(vec![], 1e-3, 1.0);
    /// let mut m = StreamMkl::new_precomputed(cfg, vec![gram], vec![], 2).unwrap();
    /// m.learn_ids(&[0], &[0]).unwrap();
    /// m.learn_ids(&[1], &[1]).unwrap();
    /// assert_eq!(m.predict_ids(&[1]).unwrap(), vec![1]);
    /// ```
    pub fn new_precomputed(
        config: StreamMklConfig,
        grams: Vec<PrecomputedGram>,
        features: Vec<Arc<FeatureRows>>,
        n_labels: usize,
    ) -> Result<Self> {
        if !config.kernels.is_empty() || !config.explicit_groups.is_empty() {
            return Err(OmklError::invalid(
                "kernels",
                "expected no kernel functions or input columns with precomputed inputs",
            ));
        }
        if config.kernel_columns.is_some() {
            return Err(OmklError::invalid(
                "kernel_columns",
                "expected None with precomputed inputs",
            ));
        }
        if config.max_support.is_some() {
            return Err(OmklError::invalid(
                "max_support",
                "expected None with precomputed inputs (the support is the fixed input set)",
            ));
        }
        let m = grams
            .first()
            .map(PrecomputedGram::n_inputs)
            .or(features.first().map(|f| f.n_rows()))
            .unwrap_or(0);
        if let Some((k, n)) = first_other(grams.iter().map(PrecomputedGram::n_inputs), m) {
            return Err(OmklError::shape(
                format!("grams[{k}]"),
                format!("{m} x {m} (as the first matrix)"),
                format!("{n} x {n}"),
            ));
        }
        if let Some((e, n)) = first_other(features.iter().map(|f| f.n_rows()), m) {
            return Err(OmklError::shape(
                format!("features[{e}]"),
                format!("{m} rows (one per input)"),
                format!("{n} rows"),
            ));
        }
        config.check_groups(grams.len(), features.len())?;
        let l = check_n_labels(n_labels)?;
        let kgroups = vec![ScaledBlock::zeros(m * l); grams.len()];
        let egroups = features
            .iter()
            .map(|f| ScaledBlock::zeros(f.dim() * l))
            .collect();
        let pre = Precomputed {
            m,
            caches: vec![vec![0.0; l * m]; grams.len()],
            grams,
            features,
        };
        let support = SupportStore::new(m);
        Ok(Self::at_round_zero(
            config,
            m,
            l,
            kgroups,
            egroups,
            support,
            Some(Box::new(pre)),
        ))
    }

    /// `true` for a model over precomputed inputs.
    pub fn is_precomputed(&self) -> bool {
        self.pre.is_some()
    }

    /// Number of kernel groups.
    pub fn n_kernel_groups(&self) -> usize {
        self.kgroups.len()
    }

    /// Number of kernel and explicit groups (β is over these).
    pub fn n_groups(&self) -> usize {
        self.kgroups.len() + self.egroups.len()
    }

    /// Checks the input ids of an example of a precomputed model.
    pub fn check_ids(&self, ids: &[usize]) -> Result<()> {
        let Some(pre) = &self.pre else {
            return Err(OmklError::invalid(
                "x",
                "expected feature vectors: this model has no precomputed inputs",
            ));
        };
        if ids.is_empty() {
            return Err(OmklError::empty("x (a sequence of at least one position)"));
        }
        if !self.config.chain && ids.len() != 1 {
            return Err(OmklError::shape(
                "x",
                "one position for a multiclass model",
                format!("{} positions", ids.len()),
            ));
        }
        if let Some(p) = ids.iter().position(|&i| i >= pre.m) {
            return Err(OmklError::invalid(
                "x",
                format!("expected input ids < {}, but x[{p}] = {}", pre.m, ids[p]),
            ));
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &StreamMklConfig {
        &self.config
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Number of labels.
    pub fn n_labels(&self) -> usize {
        self.l
    }

    /// Number of finished rounds.
    pub fn rounds(&self) -> u64 {
        self.t
    }

    /// Number of support inputs (for precomputed inputs: the inputs with a
    /// non-zero coefficient).
    pub fn n_support(&self) -> usize {
        match &self.pre {
            None => self.support.len(),
            Some(pre) => {
                let l = self.l;
                (0..pre.m)
                    .filter(|&j| {
                        self.kgroups
                            .iter()
                            .any(|b| b.raw()[j * l..(j + 1) * l].iter().any(|&v| v != 0.0))
                    })
                    .count()
            }
        }
    }

    /// The support inputs, row-major `n_support × d`.
    pub fn support_inputs(&self) -> &[f32] {
        self.support.data()
    }

    /// Maintained group norms `‖θ_g‖`: kernel groups, explicit groups, then
    /// the transition group for chains.
    pub fn group_norms(&self) -> Vec<f64> {
        self.blocks().map(|b| b.sq_norm().sqrt()).collect()
    }

    pub(super) fn blocks(&self) -> impl Iterator<Item = &ScaledBlock> {
        self.kgroups
            .iter()
            .chain(&self.egroups)
            .chain(self.trans.as_ref())
    }

    pub(super) fn blocks_mut(&mut self) -> impl Iterator<Item = &mut ScaledBlock> {
        self.kgroups
            .iter_mut()
            .chain(self.egroups.iter_mut())
            .chain(self.trans.as_mut())
    }

    /// `β_g = ‖θ_g‖ / Σ_l ‖θ_l‖` over the kernel and explicit groups of the
    /// current iterate (uniform while all are zero).
    pub fn beta(&self) -> Vec<f64> {
        let g = self.n_groups();
        let norms = &self.group_norms()[..g];
        let total: f64 = norms.iter().sum();
        if total > 0.0 {
            norms.iter().map(|n| n / total).collect()
        } else {
            vec![1.0 / g as f64; g]
        }
    }

    /// Appends the current `β` to the trajectory.
    pub fn record_beta(&mut self) {
        let b = self.beta();
        self.history_rounds.push(self.t);
        self.history.push(b);
    }

    /// The `β` trajectory: the round at which each entry was recorded, and
    /// the entries.
    pub fn beta_history(&self) -> (&[u64], &[Vec<f64>]) {
        (&self.history_rounds, &self.history)
    }

    /// Approximate heap bytes of the model.
    pub fn nbytes(&self) -> usize {
        self.support.nbytes()
            + self.support_stamp.capacity() * 8
            + self.blocks().map(ScaledBlock::nbytes).sum::<usize>()
            + self.history.iter().map(|h| h.len() * 8 + 24).sum::<usize>()
            + self.history_rounds.len() * 8
            + self.maps.nbytes()
    }

    /// Checks an input block `x` of `n` rows of dimension `d`.
    pub(super) fn check_x(&self, x: &[f32], n: usize, d: usize) -> Result<()> {
        if n == 0 {
            return Err(OmklError::empty("x (a sequence of at least one position)"));
        }
        if !self.config.chain && n != 1 {
            return Err(OmklError::shape(
                "x",
                "one row for a multiclass model",
                format!("{n} rows"),
            ));
        }
        check_table_of("x", x.len(), &[n, d], "n * d", "values")?;
        check_finite_f32("x", x)
    }

    /// Validates a training example: `x` is `n × d` with `n = y.len()`,
    /// `d` equal to the model's dimension (or larger when `grow_dim`),
    /// finite; labels below `n_labels ≥ L`.
    pub fn check_example(
        &self,
        x: &[f32],
        d: usize,
        y: &[usize],
        n_labels: usize,
        grow_dim: bool,
    ) -> Result<()> {
        if d != self.d && !(grow_dim && d > self.d) {
            return Err(OmklError::shape(
                "x",
                format!("{} features per position (as in earlier rounds)", self.d),
                format!("{d}"),
            ));
        }
        if n_labels < self.l {
            return Err(OmklError::invalid(
                "n_labels",
                format!(
                    "expected at least the current {} labels, got {n_labels}",
                    self.l
                ),
            ));
        }
        self.check_x(x, y.len(), d)?;
        self.check_labels(y.len(), y, n_labels)?;
        self.support.check_room(y.len())
    }

    /// Checks `n` labels `< n_labels`.
    pub(super) fn check_labels(&self, n: usize, y: &[usize], n_labels: usize) -> Result<()> {
        if y.len() != n {
            return Err(OmklError::shape(
                "y",
                format!("{n} labels (one per position)"),
                y.len().to_string(),
            ));
        }
        if let Some(p) = y.iter().position(|&v| v >= n_labels) {
            return Err(OmklError::invalid(
                "y",
                format!("expected labels < {n_labels}, but y[{p}] = {}", y[p]),
            ));
        }
        Ok(())
    }

    /// Number of leading columns of a position that the kernel groups see.
    pub(super) fn kernel_dim(&self) -> usize {
        self.support.dim()
    }

    /// Restarts the step-size schedule: the next round takes the rate of
    /// round 1 (`η_0` for `InvSqrt`). The coefficients do not change.
    pub fn restart_schedule(&mut self) {
        self.schedule_start = self.t;
    }

    /// Number of positions that the last round's prediction, made before
    /// its update, got wrong (the prequential error of that round), when
    /// the configuration has `count_mistakes` (0 otherwise).
    pub fn last_mistakes(&self) -> usize {
        self.scratch.mistakes()
    }

    /// Rounds since the schedule last (re)started.
    pub fn schedule_rounds(&self) -> u64 {
        self.t - self.schedule_start
    }
}

/// `n_labels` if it is at least 1.
fn check_n_labels(n_labels: usize) -> Result<usize> {
    if n_labels == 0 {
        return Err(OmklError::invalid(
            "n_labels",
            "expected at least 1 label, got 0",
        ));
    }
    Ok(n_labels)
}

/// The index and value of the first of `sizes` that is not `m`.
fn first_other(sizes: impl Iterator<Item = usize>, m: usize) -> Option<(usize, usize)> {
    sizes.enumerate().find(|&(_, n)| n != m)
}
