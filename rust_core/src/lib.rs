//! # omkl-core
//!
//! Online multiple kernel learning and structured-sparsity learning for
//! structured prediction, after Martins, Smith, Xing, Aguiar and Figueiredo
//! (2010), *Online Multiple Kernel Learning for Structured Prediction*.
//!
//! This crate is pure Rust and knows nothing of Python.
//!
//! * [`prox`]: proximity operators and projections (Section 3 and appendix).
//! * [`learner`]: Alg. 1 (online proximal learning) and Alg. 3 (online MKL).
//! * [`features`]: stable hashed sparse features, grouped by template.
//! * [`kernel`]: kernels, Gram matrices, caches and sparse Gram storage.
//! * [`decode`]: argmax, Viterbi, forward-backward, Chu-Liu-Edmonds,
//!   matrix-tree and Eisner.
//! * [`model`]: structured models (parts, features, decoder and loss).
//! * [`persist`]: the one envelope of every saved model (format, version,
//!   length, checksum).

pub mod decode;
pub mod error;
pub mod features;
pub mod kernel;
pub mod lcg;
pub mod learner;
mod macros;
pub mod model;
pub mod persist;
pub mod prox;

pub use error::{OmklError, Result};
