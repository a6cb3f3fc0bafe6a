//! Kernels, Gram matrices, Gram caches and sparse Gram storage.
//!
//! * [`spec`]: the [`Kernel`] functions and their hyperparameters.
//! * [`gram`]: dense Gram blocks through GEMM plus an elementwise map.

pub mod gram;
mod map;
pub mod spec;

pub use gram::{gram, gram_into, gram_symmetric};
pub use spec::Kernel;
