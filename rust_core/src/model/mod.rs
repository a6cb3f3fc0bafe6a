//! Structured models: parts, features, decoder and loss.

pub mod conllu;
pub mod parser;
pub mod parser_decode;
pub mod parser_labels;
pub mod parser_prune;
pub mod parser_slots;
pub mod template_weights;
