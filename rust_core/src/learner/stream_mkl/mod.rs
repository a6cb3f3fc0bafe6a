//! Alg. 3: online MKL one example at a time, for multiclass problems and
//! linear chains, with kernel groups, explicit feature groups and
//! transitions.
//!
//! Positions are either feature vectors (kernel values are computed on the
//! fly against a deduplicated support set, so the learner runs on endless
//! streams, in bounded memory with `max_support`) or the ids of inputs of
//! precomputed Gram matrices and feature rows ([`precomputed`]; the support
//! is the fixed input set and a score cache makes scoring a lookup). Both
//! go through the same round.
//!
//! * [`config`]: hyperparameters ([`StreamMklConfig`], [`StreamLoss`]).
//! * [`state`]: the model ([`StreamMkl`]), validation, accessors.
//! * [`adapt`]: more labels or columns, and the reactions to drift.
//! * [`scoring`]: per-group scores and prediction.
//! * [`learn`]: the entry points of a round.
//! * [`round`]: one round (decode, step, prox, averaging).
//! * [`scratch`]: the buffers a round reuses.
//! * [`norms`]: the §3.4 norm identity of a round.
//! * [`coefficients`]: coefficients and norms of either iterate.
//! * [`fit`]: epochs over a corpus of precomputed inputs, the objective.
//! * [`precomputed`]: precomputed Gram matrices and feature rows.
//! * [`budget`]: the support budget and its removal rule.
//! * [`average`]: restarting the averaged iterate.
//! * [`rates`]: a step size per group.
//! * [`mix`]: the weighted average of models (parameter mixing).
//! * [`persist`]: versioned bytes.
//! * [`mapped`]: explicit groups filled by feature maps of the input.
//! * [`memo`]: the scores of the last prediction, for the round that learns it.
//!
//! Weights are [`crate::learner::weights::ScaledBlock`]s. The support inputs are a [`crate::kernel::SupportStore`]; kernel values
//! come from one dot product through [`crate::kernel::Kernel::from_dot`].

pub mod adapt;
pub mod average;
pub mod budget;
pub mod coefficients;
pub mod config;
pub mod fit;
pub mod learn;
pub mod mapped;
pub mod memo;
pub mod mix;
pub mod norms;
pub mod persist;
pub mod precomputed;
pub mod rates;
pub mod round;
pub mod scoring;
pub mod scratch;
pub mod state;

pub use crate::kernel::feature_map::FeatureMaps;
pub use crate::learner::weights::ScaledBlock;
pub use config::{BudgetRule, StreamLoss, StreamMklConfig};
pub use fit::{EpochReport, FitOptions};
pub use mapped::MappedRows;
pub use precomputed::{FeatureRows, GramStorage, PrecomputedGram};
pub use scoring::{Example, Iterate};
pub use state::StreamMkl;
