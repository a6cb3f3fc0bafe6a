//! Structured models: parts, features, decoder and loss.

pub mod chain;
pub mod chain_predict;
pub mod transitions;
