//! What the parser is given: its hyper-parameters ([`ParserConfig`]), a
//! prepared sentence ([`ParserInput`]) and the checks of gold trees and
//! sentences.
//!
//! # Example
//! ```
//! use omkl_core::model::parser_input::check_tree;
//! assert!(check_tree(&[2, 0], "s1").is_ok());
//! assert!(check_tree(&[2, 1], "s1").is_err()); // a cycle
//! ```

use crate::error::{OmklError, Result};
use crate::features::arc_templates::WordAtoms;
use crate::model::parser_decode::TreeDecoder;
use crate::prox::Regularizer;

/// A sentence with its gold heads (`heads[m - 1]` is the head of word `m`).
pub type GoldSentence = (ParserInput, Vec<usize>);

/// A model trained on blocks of sentences, one epoch at a time (the arc
/// parser and its pruner).
pub trait Epochs {
    /// Learns the sentences of `block` in order, adding their losses to
    /// `total`.
    fn learn_block(&mut self, block: &[GoldSentence], total: &mut f64) -> Result<()>;

    /// Ends an epoch (averaged parameters and norms brought up to date), or
    /// fails with [`crate::OmklError::Alloc`].
    fn finish_epoch(&mut self) -> Result<()>;

    /// One pass over `sents` in order, in blocks of 256 sentences;
    /// `tick(done)` is called after each block and may abort (e.g. on a
    /// keyboard interrupt). Returns the summed loss.
    fn fit_epoch(
        &mut self,
        sents: &[GoldSentence],
        tick: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<f64> {
        let mut total = 0.0;
        for (c, block) in sents.chunks(256).enumerate() {
            self.learn_block(block, &mut total)?;
            tick(c * 256 + block.len())?;
        }
        self.finish_epoch()?;
        Ok(total)
    }
}

/// Hyper-parameters of [`ArcParser`](crate::model::parser::ArcParser).
#[derive(Debug, Clone, PartialEq)]
pub struct ParserConfig {
    /// Must act on group norms (`L2Squared`, `SquaredL21`, ...).
    pub regularizer: Regularizer,
    /// Learning rate η of each step (constant).
    pub eta: f64,
    pub decoder: TreeDecoder,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            regularizer: Regularizer::L2Squared { lam: 1e-6 },
            eta: 0.1,
            decoder: TreeDecoder::ChuLiuEdmonds,
        }
    }
}

/// Checks that `heads` (head of words 1..=n, 0 = root) is a tree rooted at 0.
pub fn check_tree(heads: &[usize], sentence_id: &str) -> Result<()> {
    let n = heads.len();
    if n == 0 {
        return Err(OmklError::invalid(
            "sentence",
            format!("sentence {sentence_id:?} is empty; expected at least one word"),
        ));
    }
    for (i, &h) in heads.iter().enumerate() {
        if h > n || h == i + 1 {
            return Err(OmklError::invalid(
                "heads",
                format!(
                    "sentence {sentence_id:?}: head {h} of word {} is out of range \
                     (expected 0..={n} and not the word itself)",
                    i + 1
                ),
            ));
        }
    }
    // every word must reach the root within n steps
    let mut state = vec![0u8; n + 1]; // 0 unknown, 1 on path, 2 reaches root
    state[0] = 2;
    for start in 1..=n {
        let mut path = Vec::new();
        let mut v = start;
        while state[v] == 0 {
            state[v] = 1;
            path.push(v);
            v = heads[v - 1];
        }
        if state[v] == 1 {
            return Err(OmklError::invalid(
                "heads",
                format!(
                    "sentence {sentence_id:?}: heads contain a cycle through word {v}; \
                     expected a tree, every word reaching the root 0"
                ),
            ));
        }
        for p in path {
            state[p] = 2;
        }
    }
    Ok(())
}

/// Checks that `heads` has one head per word of `sent` and forms a tree.
pub(super) fn check_gold(sent: &ParserInput, heads: &[usize]) -> Result<()> {
    check_heads(sent.words.len(), heads, &sent.id)
}

/// Checks that `heads` has one head per word of the sentence `id` of
/// `n_words` words and forms a tree.
pub(super) fn check_heads(n_words: usize, heads: &[usize], id: &str) -> Result<()> {
    if heads.len() != n_words {
        return Err(OmklError::shape(
            "heads",
            format!("{n_words} heads for sentence {id:?}"),
            heads.len().to_string(),
        ));
    }
    check_tree(heads, id)
}

/// A sentence prepared for the parser.
#[derive(Debug, Clone)]
pub struct ParserInput {
    pub id: String,
    pub words: Vec<WordAtoms>,
}

/// An empty sentence has no tree to predict.
pub(super) fn check_nonempty(sent: &ParserInput) -> Result<()> {
    check_words(sent.words.len(), &sent.id)
}

/// Errors when the sentence `id` has no words.
pub(super) fn check_words(n_words: usize, id: &str) -> Result<()> {
    if n_words == 0 {
        return Err(OmklError::invalid(
            "sentence",
            format!("sentence {id:?} is empty; expected at least one word"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_tree_rejects_bad_heads_naming_the_sentence() {
        assert!(check_tree(&[2, 0], "s").is_ok());
        let e = check_tree(&[2, 1], "s7").unwrap_err().to_string();
        assert!(e.contains("cycle") && e.contains("s7"), "{e}");
        let e = check_tree(&[3, 0], "s8").unwrap_err().to_string();
        assert!(e.contains("out of range") && e.contains("s8"), "{e}");
        assert!(check_tree(&[1], "x").is_err());
        assert!(check_tree(&[], "s9")
            .unwrap_err()
            .to_string()
            .contains("s9"));
    }
}
