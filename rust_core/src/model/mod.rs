//! Structured models: parts, features, decoder and loss.

pub mod chain;
pub mod chain_predict;
pub mod conllu;
pub mod parser;
pub mod parser_decode;
pub mod parser_labels;
pub mod parser_prune;
pub mod parser_slots;
pub mod template_weights;
pub mod transitions;
