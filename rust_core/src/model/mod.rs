//! Structured models: parts, features, decoder and loss.

pub mod conllu;
pub mod parser;
pub mod parser_decode;
pub mod template_weights;
