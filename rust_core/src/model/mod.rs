//! Structured models: parts, features, decoder and loss.

pub mod conllu;
pub mod template_weights;
