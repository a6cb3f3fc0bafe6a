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
//! The templates have one feature per arc (none lists the tags of the words
//! between head and modifier, whose `O(n³)` features per sentence would
//! dominate a first pass over all `n²` arcs; on EWT dev, dropping the two
//! such templates also raised the recall at `k = 20` from 99.23% to 99.95%).
//!
//! # Complexity
//! Scoring all `n²` arcs with the pruner's `P` templates is `O(n² P)`
//! (`P` = 23); selecting the `k` best heads of each word is `O(n²)`.
//!
//! # Example
//! ```
//! use omkl_core::model::parser_prune::{pruner_template_ids, ArcPruner};
//! let p = ArcPruner::new(8).unwrap();
//! assert_eq!(p.k(), 8);
//! assert_eq!(p.model().template_ids(), &pruner_template_ids()[..]);
//! ```

use crate::error::{try_vec, OmklError, Result};
use crate::features::arc_templates::{default_templates, ArcFeaturizer, WordAtoms};
use crate::learner::structure::head_softmax;
use crate::model::parser_input::{Epochs, GoldSentence, ParserConfig, ParserInput};
use crate::model::parser_score::abort_alloc;
use crate::model::parser_state::ArcParser;
pub use crate::model::parser_state::{ArcPruner, KeptArcs, PRUNED_SCORE};
use crate::prox::Regularizer;

/// Names of the pruner's templates in [`default_templates`] (each has one
/// feature per arc).
pub const PRUNER_TEMPLATES: [&str; 23] = [
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
    "h.lemma+upos|m.upos|dir",
    "h.upos|m.lemma+upos|dir",
    "h.form|m.xpos|dir+dist",
    "h.xpos|m.form|dir+dist",
    "h.lemma|m.lemma|dir",
    "h.lemma+upos|dir+dist",
    "m.lemma+upos|dir+dist",
    "h.upos|dir+fdist",
    "m.upos|dir+fdist",
    "h.upos|m.upos|dir+fdist",
    "h.xpos|m.xpos|dir+fdist",
    "h.upos|m.upos|b.counts|dir+fdist",
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
            margin: f64::INFINITY,
        })
    }

    /// Rebuilds a pruner from a saved first-pass model.
    pub fn from_parts(model: ArcParser, k: usize, margin: f64) -> Result<Self> {
        if k == 0 {
            return Err(OmklError::invalid("prune_k", "expected at least 1, got 0"));
        }
        let mut p = ArcPruner {
            model,
            k,
            margin: f64::INFINITY,
        };
        p.set_margin(margin)?;
        Ok(p)
    }

    pub fn k(&self) -> usize {
        self.k
    }

    /// The score margin (`∞` = plain top `k`).
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// Sets the score margin; it must be positive (`∞` allowed).
    pub fn set_margin(&mut self, margin: f64) -> Result<()> {
        if margin.is_nan() || margin <= 0.0 {
            return Err(OmklError::invalid(
                "prune_margin",
                format!("expected a positive score margin (or inf), got {margin}"),
            ));
        }
        self.margin = margin;
        Ok(())
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

    /// One first-pass step of head selection (no tree constraint): for
    /// every word, a softmax over all candidate heads trained by the
    /// log-loss. Unlike a hinge loss, which stops once the gold head is
    /// first by a margin, the log-loss keeps pushing down every candidate
    /// in proportion to its probability, which orders the whole list and is
    /// what top-`k` recall needs. Returns the summed loss.
    pub fn learn_one(&mut self, sent: &ParserInput, heads: &[usize]) -> Result<f64> {
        self.model
            .learn_one_by_gradient(sent, heads, |s, n1, arcs| head_softmax(s, n1, heads, arcs))
    }

    /// The kept arcs of a sentence: the `k` best heads of every word by the
    /// first-pass score, less those scoring more than `margin` below the
    /// word's best, plus `gold[m - 1]` for every word when given. Errors
    /// with [`OmklError::Alloc`] if the
    /// sentence's arcs do not fit in memory.
    pub fn keep(&self, words: &[WordAtoms], gold: Option<&[usize]>) -> Result<KeptArcs> {
        let fz = ArcFeaturizer::new(self.model.templates(), words);
        let n1 = fz.len_with_root();
        let first_pass = self.model.arc_scores(&fz)?;
        let mut keep = try_vec("kept arcs", &[n1, n1], false)?;
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
            let best = col.iter().map(|c| c.0).fold(f64::NEG_INFINITY, f64::max);
            for &(s, h) in &col {
                if s >= best - self.margin {
                    keep[h * n1 + m] = true;
                }
            }
            if let Some(g) = gold {
                keep[g[m - 1] * n1 + m] = true;
            }
        }
        Ok(KeptArcs {
            n1,
            keep,
            first_pass,
        })
    }

    /// [`ArcPruner::keep`] without gold arcs, for the corpus statistics,
    /// which cannot fail (an allocation failure ends the process).
    fn keep_or_abort(&self, words: &[WordAtoms]) -> KeptArcs {
        self.keep(words, None)
            .unwrap_or_else(|_| abort_alloc(words.len() + 1))
    }

    /// The rank of every gold arc among its word's candidate heads by the
    /// first-pass score (0 = best; the number of heads scoring strictly
    /// higher), concatenated over `sents`. The recall at `k` is the share of
    /// ranks below `k`.
    pub fn gold_ranks(&self, sents: &[(ParserInput, Vec<usize>)]) -> Vec<u32> {
        use rayon::prelude::*;
        sents
            .par_iter()
            .flat_map_iter(|(s, heads)| {
                let fz = ArcFeaturizer::new(self.model.templates(), &s.words);
                let n1 = fz.len_with_root();
                let sc = self
                    .model
                    .arc_scores(&fz)
                    .unwrap_or_else(|_| abort_alloc(n1));
                (1..n1)
                    .map(|m| {
                        let g = sc[heads[m - 1] * n1 + m];
                        (0..n1).filter(|&h| h != m && sc[h * n1 + m] > g).count() as u32
                    })
                    .collect::<Vec<u32>>()
            })
            .collect()
    }

    /// `(kept gold arcs, gold arcs, kept arcs, candidate arcs)` over
    /// `sents` at prediction time (no gold arc forced in): the recall and
    /// the share of arcs the full model scores.
    pub fn stats(&self, sents: &[(ParserInput, Vec<usize>)]) -> [usize; 4] {
        use rayon::prelude::*;
        sents
            .par_iter()
            .map(|(s, heads)| {
                let kept = self.keep_or_abort(&s.words);
                let n1 = kept.n1;
                let hit = (1..n1)
                    .filter(|&m| kept.keep[heads[m - 1] * n1 + m])
                    .count();
                let k = kept.keep.iter().filter(|&&x| x).count();
                [hit, heads.len(), k, (n1 - 1) * (n1 - 1)]
            })
            .reduce(
                || [0; 4],
                |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]],
            )
    }

    /// `(kept gold arcs, gold arcs)` over `sents`: the pruner's recall.
    pub fn recall(&self, sents: &[(ParserInput, Vec<usize>)]) -> (usize, usize) {
        use rayon::prelude::*;
        sents
            .par_iter()
            .map(|(s, heads)| {
                let kept = self.keep_or_abort(&s.words);
                let hit = (1..kept.n1)
                    .filter(|&m| kept.keep[heads[m - 1] * kept.n1 + m])
                    .count();
                (hit, heads.len())
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

/// First-pass epochs of [`ArcPruner::learn_one`] steps.
impl Epochs for ArcPruner {
    fn learn_block(&mut self, block: &[GoldSentence], total: &mut f64) -> Result<()> {
        for (s, h) in block {
            *total += self.learn_one(s, h)?;
        }
        Ok(())
    }

    fn finish_epoch(&mut self) -> Result<()> {
        self.model.end_epoch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parser_input::check_tree;
    use crate::model::parser_toy::sent;

    #[test]
    fn pruner_templates_are_distinct_single_feature_templates() {
        let all = default_templates();
        let ids = pruner_template_ids();
        assert_eq!(ids.len(), PRUNER_TEMPLATES.len());
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "repeated pruner template");
        for &i in &ids {
            assert!(
                all[i].is_single(),
                "{} has several features per arc",
                all[i].name
            );
            assert!(!all[i].is_inert(), "{} is inert", all[i].name);
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
        let kept = p.keep(&s.words, Some(gold)).unwrap();
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
    fn fit_batch_equals_learning_one_sentence_at_a_time() {
        let data: Vec<_> = toy().into_iter().cycle().take(37).collect();
        let mut a = ArcParser::new(ParserConfig::default()).unwrap();
        a.set_pruner(2).unwrap();
        a.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
        let mut b = a.clone();
        for (s, h) in &data {
            a.learn_one(s, h).unwrap();
        }
        let refs: Vec<(&ParserInput, &[usize])> =
            data.iter().map(|(s, h)| (s, h.as_slice())).collect();
        b.fit_batch(&refs).unwrap();
        assert_eq!(a.to_bytes().unwrap(), b.to_bytes().unwrap());
        assert!(b.pruner().unwrap().is_trained());
        // a bad tree is an error and the pruner stays in place
        let bad = [(refs[0].0, &[2usize, 1, 0][..])];
        assert!(b.fit_batch(&bad).is_err());
        assert!(b.pruner().is_some());
        // ranks: the trained pruner ranks every toy gold head first
        let ranks = a.pruner().unwrap().gold_ranks(&data[..4]);
        assert_eq!(ranks.len(), 17);
        let (hit, total) = a.pruner().unwrap().recall(&data[..4]);
        assert_eq!(total, 17);
        assert!(hit >= ranks.iter().filter(|&&r| r < 1).count());
    }

    #[test]
    fn a_margin_keeps_the_heads_near_the_best_within_the_top_k() {
        let data = toy();
        let mut p = ArcPruner::new(3).unwrap();
        for _ in 0..3 {
            p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        assert!(p.set_margin(0.0).is_err() && p.set_margin(f64::NAN).is_err());
        let (s, _) = &data[2];
        let top = p.keep(&s.words, None).unwrap();
        for margin in [0.5, 2.0, 1e9] {
            p.set_margin(margin).unwrap();
            let kept = p.keep(&s.words, None).unwrap();
            let n1 = kept.n1;
            for m in 1..n1 {
                let best = (0..n1)
                    .filter(|&h| h != m)
                    .map(|h| kept.first_pass[h * n1 + m])
                    .fold(f64::NEG_INFINITY, f64::max);
                for h in 0..n1 {
                    let i = h * n1 + m;
                    // kept = in the top k and within the margin of the best
                    let want = top.keep[i] && kept.first_pass[i] >= best - margin;
                    assert_eq!(kept.keep[i], want, "margin {margin} arc {h}->{m}");
                }
            }
        }
        let st = p.stats(&data);
        assert_eq!(st[1], 17);
        assert!(st[0] <= st[1] && st[2] <= st[3]);
        // the margin is saved with the parser; without one the bytes are
        // those of a plain top-k pruner
        let mut parser = ArcParser::new(ParserConfig::default()).unwrap();
        assert!(parser.set_pruner_margin(1.0).is_err());
        parser.set_pruner(3).unwrap();
        parser.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
        let plain = parser.to_bytes().unwrap();
        parser.set_pruner_margin(1.5).unwrap();
        let b = parser.to_bytes().unwrap();
        assert_eq!(b.len(), plain.len() + 8);
        let q = ArcParser::from_bytes(&b).unwrap();
        assert_eq!(q.pruner().unwrap().margin(), 1.5);
        assert_eq!(q.to_bytes().unwrap(), b);
        let q = ArcParser::from_bytes(&plain).unwrap();
        assert_eq!(q.pruner().unwrap().margin(), f64::INFINITY);
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
