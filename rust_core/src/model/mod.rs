//! Structured models: parts, features, decoder and loss.

pub mod conllu;
