//! Kernels, Gram matrices, Gram caches and sparse Gram storage.
//!
//! * [`spec`]: the [`Kernel`] functions and their hyperparameters.
//! * [`gram`]: dense Gram blocks through GEMM plus an elementwise map.
//! * [`sparse`]: CSR Gram storage for compact-support kernels and scoring.
//! * [`bandwidth`]: the B1-spline width for a target sparsity.

pub mod bandwidth;
pub mod gram;
mod map;
pub mod sparse;
pub mod spec;

pub use bandwidth::b1_bandwidth;
pub use gram::{gram, gram_into, gram_symmetric};
pub use sparse::{dense_scores, SparseGram};
pub use spec::Kernel;
