//! Exact decoders: multiclass argmax, Viterbi and forward-backward for
//! linear chains, Chu-Liu-Edmonds, matrix-tree and Eisner for dependency trees.
//!
//! Every decoder takes row-major `&[f64]` score tables, a reusable workspace,
//! and a caller-provided output buffer, and returns the score of its output.

pub mod arcs;
pub mod argmax;
pub mod batch;
pub mod chain;
pub mod chu_liu_edmonds;
pub mod eisner;
pub mod forward_backward;
pub mod lu;
pub mod matrix_tree;
pub mod nbest;
pub mod viterbi;
