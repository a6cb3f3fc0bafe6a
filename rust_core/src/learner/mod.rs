//! Alg. 1 (online proximal learning) and Alg. 3 (online MKL).
//!
//! * [`online_proximal`]: the loop of Alg. 1 on hashed grouped features.
//! * [`named`]: Alg. 1 on named features (grouping and hashing included),
//!   with saving and loading.
//! * [`schedule`]: learning rates `η0`, `η0/√t`, `1/(σt)`.
//! * [`loss`]: multiclass hinge, multiclass logistic and squared losses.
//! * [`weights`]: one group's weights as scale × vector, with its squared
//!   norm and lazy average ([`weights::ScaledBlock`]), under every learner.
//! * [`round`]: the prox part of a round (Prop. 1, then the ball).
//! * [`grouped_weights`]: one block per group of hashed features.
//! * [`stream_mkl`]: Alg. 3 (and Alg. 1 on its groups): one round over
//!   kernel groups (on the fly, or over precomputed Gram matrices),
//!   explicit groups and transitions, for multiclass problems and chains.

pub mod grouped_weights;
pub mod loss;
pub mod named;
pub mod online_proximal;
pub mod persist;
pub mod round;
pub mod schedule;
pub mod spec;
pub mod stream_mkl;
pub mod weights;

pub use grouped_weights::GroupedWeights;
pub use loss::{Loss, Target};
pub use online_proximal::{Alg1Config, OnlineProximal};
pub use schedule::Schedule;
pub use weights::ScaledBlock;
