//! Structured models: parts, features, decoder and loss.

pub mod conllu;
pub mod morphology;
pub mod parser;
pub mod parser_decode;
pub mod parser_input;
mod parser_label_feats;
pub mod parser_labels;
mod parser_learn;
pub mod parser_mix;
mod parser_persist;
pub mod parser_prune;
mod parser_score;
pub mod parser_slots;
pub mod parser_state;
#[cfg(test)]
mod parser_toy;
pub mod template_weights;
