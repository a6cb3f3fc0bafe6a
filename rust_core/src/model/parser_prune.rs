//! A first-pass arc pruner: a small arc-factored parser on a few
//! part-of-speech templates (plus one lemma template), trained in a first
//! pass over the corpus, that keeps the `k` best-scoring heads of every word.
//! The full model then scores only the kept arcs.
//!
//! During training the gold head of every word is always kept, so the gold
//! tree stays reachable by the loss-augmented decoder. At prediction time an
//! arc that was pruned keeps a finite score far below every kept arc
//! ([`PRUNED_SCORE`] plus its first-pass score), so the decoder still returns
//! a tree when the kept arcs alone do not contain one.
//!
//! # Complexity
//! Scoring all `n²` arcs with the pruner's `P` small templates is `O(n² P)`
//! (`P` = 20, tables of at most `2^16` slots that stay in cache); selecting
//! the `k` best heads of each word is `O(n²)`.
//!
//! # Example
//! ```
//! use omkl_core::model::parser_prune::{pruner_template_ids, ArcPruner};
//! let p = ArcPruner::new(8).unwrap();
//! assert_eq!(p.k(), 8);
//! assert_eq!(p.model().template_ids(), &pruner_template_ids()[..]);
//! ```

use crate::error::{OmklError, Result};
use crate::features::arc_templates::{default_templates, ArcFeaturizer, WordAtoms};
use crate::model::parser::{ArcParser, ParserConfig, ParserInput};
use crate::prox::Regularizer;

/// Score offset of a pruned arc (finite, so decoders accept it).
pub const PRUNED_SCORE: f64 = -1.0e6;

/// Names of the pruner's templates in [`default_templates`].
pub const PRUNER_TEMPLATES: [&str; 20] = [
    "h.upos|dir+dist",
    "m.upos|dir+dist",
    "h.upos|m.upos|dir+dist",
    "h.xpos|m.xpos|dir+dist",
    "h.upos|h-1.upos|m.upos|dir+dist",
    "h.upos|h+1.upos|m.upos|dir+dist",
    "h.upos|m.upos|m-1.upos|dir+dist",
    "h.upos|m.upos|m+1.upos|dir+dist",
    "h.upos|h+1.upos|m.upos|m-1.upos|dir+dist",
    "h.upos|h-1.upos|m.upos|m+1.upos|dir+dist",
    "h.xpos|h-1.xpos|h+1.xpos|m.xpos|m-1.xpos|m+1.xpos|dir",
    "h.upos|m.upos|b.upos|dir+dist",
    "h.xpos|m.xpos|b.xpos|dir",
    "h.lemma+upos|m.upos|dir",
    "h.upos|m.lemma+upos|dir",
    "h.form|m.xpos|dir+dist",
    "h.xpos|m.form|dir+dist",
    "h.lemma|m.lemma|dir",
    "h.lemma+upos|dir+dist",
    "m.lemma+upos|dir+dist",
];

/// Indices of [`PRUNER_TEMPLATES`] in [`default_templates`].
pub fn pruner_template_ids() -> Vec<usize> {
    let all = default_templates();
    PRUNER_TEMPLATES
        .iter()
        .map(|name| {
            all.iter()
                .position(|t| t.name == *name)
                .expect("pruner template names are default templates")
        })
        .collect()
}

/// The best head of every word by `scores[h * n1 + m]`, independently per
/// word (a "decoder" without the tree constraint).
fn best_head_per_word(scores: &[f64], n1: usize) -> Result<Vec<usize>> {
    Ok((1..n1)
        .map(|m| {
            (0..n1)
                .filter(|&h| h != m)
                .max_by(|&a, &b| scores[a * n1 + m].total_cmp(&scores[b * n1 + m]))
                .unwrap_or(0)
        })
        .collect())
}

/// The kept arcs of one sentence: `keep[h * n1 + m]`, and the first-pass
/// score of every arc.
#[derive(Debug, Clone)]
pub struct KeptArcs {
    pub n1: usize,
    pub keep: Vec<bool>,
    pub first_pass: Vec<f64>,
}

/// The first-pass model and the number `k` of heads kept per word.
#[derive(Debug, Clone)]
pub struct ArcPruner {
    model: ArcParser,
    k: usize,
}

impl ArcPruner {
    /// An untrained pruner keeping `k >= 1` heads per word.
    pub fn new(k: usize) -> Result<Self> {
        if k == 0 {
            return Err(OmklError::invalid(
                "prune_k",
                "expected at least 1 head kept per word, got 0",
            ));
        }
        let config = ParserConfig {
            regularizer: Regularizer::L2Squared { lam: 1e-6 },
            eta: 0.1,
            ..ParserConfig::default()
        };
        let ids = pruner_template_ids();
        Ok(ArcPruner {
            model: ArcParser::with_templates(config, Some(&ids))?,
            k,
        })
    }

    /// Rebuilds a pruner from a saved first-pass model.
    pub fn from_parts(model: ArcParser, k: usize) -> Result<Self> {
        if k == 0 {
            return Err(OmklError::invalid("prune_k", "expected at least 1, got 0"));
        }
        Ok(ArcPruner { model, k })
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn model(&self) -> &ArcParser {
        &self.model
    }

    pub fn model_mut(&mut self) -> &mut ArcParser {
        &mut self.model
    }

    /// Whether at least one first-pass epoch is done (only then does the
    /// parser prune).
    pub fn is_trained(&self) -> bool {
        !self.model.beta_trajectory.is_empty()
    }

    /// One first-pass step: the sum over words of the multiclass hinge loss
    /// of choosing the word's head among all words (head selection, no tree
    /// constraint), which is what top-`k` recall needs. Returns the loss.
    pub fn learn_one(&mut self, sent: &ParserInput, heads: &[usize]) -> Result<f64> {
        self.model
            .learn_one_with(sent, heads, &mut best_head_per_word)
    }

    /// One first-pass epoch.
    pub fn fit_epoch(
        &mut self,
        sents: &[(ParserInput, Vec<usize>)],
        tick: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<f64> {
        let mut total = 0.0;
        for (i, (s, h)) in sents.iter().enumerate() {
            total += self.learn_one(s, h)?;
            if (i + 1) % 256 == 0 {
                tick(i + 1)?;
            }
        }
        self.model.end_epoch();
        Ok(total)
    }

    /// The kept arcs of a sentence: the `k` best heads of every word by the
    /// first-pass score, plus `gold[m - 1]` for every word when given.
    pub fn keep(&self, words: &[WordAtoms], gold: Option<&[usize]>) -> KeptArcs {
        let fz = ArcFeaturizer::new(self.model.templates(), words);
        let n1 = fz.len_with_root();
        let first_pass = self.model.arc_scores(&fz);
        let mut keep = vec![false; n1 * n1];
        let mut col: Vec<(f64, usize)> = Vec::with_capacity(n1);
        for m in 1..n1 {
            col.clear();
            col.extend(
                (0..n1)
                    .filter(|&h| h != m)
                    .map(|h| (first_pass[h * n1 + m], h)),
            );
            if col.len() > self.k {
                col.select_nth_unstable_by(self.k - 1, |a, b| b.0.total_cmp(&a.0));
                col.truncate(self.k);
            }
            for &(_, h) in &col {
                keep[h * n1 + m] = true;
            }
            if let Some(g) = gold {
                keep[g[m - 1] * n1 + m] = true;
            }
        }
        KeptArcs {
            n1,
            keep,
            first_pass,
        }
    }

    /// `(kept gold arcs, gold arcs)` over `sents`: the pruner's recall.
    pub fn recall(&self, sents: &[(ParserInput, Vec<usize>)]) -> (usize, usize) {
        use rayon::prelude::*;
        sents
            .par_iter()
            .map(|(s, heads)| {
                let kept = self.keep(&s.words, None);
                let hit = (1..kept.n1)
                    .filter(|&m| kept.keep[heads[m - 1] * kept.n1 + m])
                    .count();
                (hit, heads.len())
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parser::check_tree;

    fn sent(id: &str, tags: &[&str]) -> ParserInput {
        ParserInput {
            id: id.into(),
            words: tags
                .iter()
                .enumerate()
                .map(|(i, t)| WordAtoms::new(&format!("w{i}{t}"), t, t, t, "_"))
                .collect(),
        }
    }

    fn toy() -> Vec<(ParserInput, Vec<usize>)> {
        vec![
            (sent("a", &["DET", "NOUN", "VERB"]), vec![2, 3, 0]),
            (
                sent("b", &["NOUN", "VERB", "DET", "NOUN"]),
                vec![2, 0, 4, 2],
            ),
            (
                sent("c", &["DET", "ADJ", "NOUN", "VERB", "DET", "ADJ", "NOUN"]),
                vec![3, 3, 4, 0, 7, 7, 4],
            ),
            (sent("d", &["VERB", "DET", "NOUN"]), vec![0, 3, 1]),
        ]
    }

    #[test]
    fn keeps_k_heads_per_word_plus_gold() {
        let data = toy();
        let p = ArcPruner::new(2).unwrap();
        let (s, gold) = &data[2];
        let kept = p.keep(&s.words, Some(gold));
        for m in 1..kept.n1 {
            let n = (0..kept.n1).filter(|&h| kept.keep[h * kept.n1 + m]).count();
            assert!((2..=3).contains(&n), "word {m} keeps {n}");
            assert!(kept.keep[gold[m - 1] * kept.n1 + m]);
            assert!(!kept.keep[m * kept.n1 + m]);
        }
        assert!(ArcPruner::new(0).is_err());
    }

    #[test]
    fn trained_pruner_recalls_gold_arcs_and_the_parser_still_learns() {
        let data = toy();
        let mut parser = ArcParser::new(ParserConfig::default()).unwrap();
        parser.set_pruner(2).unwrap();
        for _ in 0..3 {
            parser.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        let (hit, total) = parser.pruner().unwrap().recall(&data);
        assert_eq!(total, 17);
        assert_eq!(hit, total);
        for _ in 0..5 {
            parser.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        for (s, gold) in &data {
            let pred = parser.predict(s).unwrap();
            check_tree(&pred, &s.id).unwrap();
            assert_eq!(&pred, gold);
        }
        // the pruner is saved with the parser
        let b = parser.to_bytes().unwrap();
        let q = ArcParser::from_bytes(&b).unwrap();
        assert_eq!(q.to_bytes().unwrap(), b);
        assert_eq!(q.pruner().unwrap().k(), 2);
    }

    #[test]
    fn pruned_prediction_is_a_tree_even_when_kept_arcs_are_not() {
        // k = 1 with an untrained-like pruner: kept arcs may form cycles, the
        // pruned arcs' finite scores still let the decoder return a tree.
        let data = toy();
        let mut parser = ArcParser::new(ParserConfig::default()).unwrap();
        parser.set_pruner(1).unwrap();
        parser
            .fit_pruner_epoch(&data[..1], &mut |_| Ok(()))
            .unwrap();
        for (s, _) in &data {
            let pred = parser.predict(s).unwrap();
            check_tree(&pred, &s.id).unwrap();
            assert_eq!(pred.iter().filter(|&&h| h == 0).count(), 1);
        }
    }
}
