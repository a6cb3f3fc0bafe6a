//! Streaming Alg. 3: online MKL one example at a time, for multiclass
//! problems and linear chains, with kernel groups over a growing (or
//! budgeted) support set, explicit feature groups and transitions.
//!
//! Unlike the batch trainer ([`crate::learner::online_mkl`]), which needs
//! the Gram matrices of a fixed training set, this learner keeps its own
//! deduplicated support set and computes kernel values on the fly, so it
//! runs on endless streams (in bounded memory with `max_support`).
//!
//! * [`config`]: hyperparameters ([`StreamMklConfig`], [`StreamLoss`]).
//! * [`state`]: the model ([`StreamMkl`]), validation, growth, accessors.
//! * [`scoring`]: per-group scores and prediction.
//! * [`round`]: one round (decode, step, §3.4 norm identity, prox).
//! * [`budget`]: the support budget and its removal rule.
//! * [`persist`]: versioned bytes.
//! * [`block`]: scale-factor storage with lazy averaging ([`ScaledBlock`]).
//! * [`support`]: deduplicated support inputs with removal ([`SupportSet`]).
//! * [`shared_dot`]: every kernel from one dot product.

pub mod block;
pub mod budget;
pub mod config;
pub mod fit;
pub mod persist;
pub mod precomputed;
pub mod round;
pub mod scoring;
pub mod shared_dot;
pub mod state;
pub mod support;

pub use block::ScaledBlock;
pub use config::{StreamLoss, StreamMklConfig};
pub use fit::{EpochReport, FitOptions};
pub use precomputed::{FeatureRows, GramStorage, PrecomputedGram};
pub use scoring::{Example, Iterate};
pub use shared_dot::{dot_f32, kernel_from_dot};
pub use state::StreamMkl;
pub use support::SupportSet;
