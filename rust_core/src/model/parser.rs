//! An arc-factored non-projective dependency parser trained online with a
//! structured hinge loss (Hamming cost on heads) and a group regulariser over
//! feature templates: `(λ/2)‖θ‖²` gives an SVM trained by Alg. 1, the squared
//! ℓ2,1 norm over templates `(λ/2)(Σ_t ‖θ_t‖)²` gives online MKL (Alg. 3),
//! whose proximal step zeroes whole templates.
//!
//! Each step: score all arcs, decode the loss-augmented tree, take a
//! subgradient step on the features of the gold and predicted arcs that
//! differ, then apply the regulariser's prox to the template norms (the
//! weights store one scale factor per template, so this costs `O(T)`).
//! Prediction uses the averaged parameters.
//!
//! # Complexity
//! One sentence of `n` words costs `O(n² T)` feature look-ups plus the
//! decoder (`O(n²)` to `O(n³)`).

//!
//! This module holds the training and prediction pipeline (the pruner's
//! place in it included) and re-exports the parser's public items, which
//! live in the sibling `parser_*` modules.

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{OmklError, Result};
use crate::features::arc_templates::ArcFeaturizer;
pub use crate::model::parser_decode::{DecodeFn, TreeDecoder};
use crate::model::parser_input::{check_gold, check_nonempty};
pub use crate::model::parser_input::{check_tree, Epochs, GoldSentence, ParserConfig, ParserInput};
pub use crate::model::parser_persist::{FORMAT, FORMAT_VERSION};
use crate::model::parser_prune::ArcPruner;
use crate::model::parser_score::{close_scores, CHUNK_ARCS};
use crate::model::parser_slots::{ArcSlots, SlotLists};
pub use crate::model::parser_state::ArcParser;
use crate::model::parser_state::KeptArcs;

impl ArcParser {
    /// Installs an untrained first-pass pruner keeping `k` heads per word
    /// (replacing any previous one); `k = 0` removes the pruner.
    pub fn set_pruner(&mut self, k: usize) -> Result<()> {
        self.check_learnable()?;
        self.pruner = if k == 0 {
            None
        } else {
            Some(Box::new(ArcPruner::new(k)?))
        };
        Ok(())
    }

    pub fn pruner(&self) -> Option<&ArcPruner> {
        self.pruner.as_deref()
    }

    /// Sets the pruner's score margin (see [`ArcPruner`]); an error when
    /// there is no pruner.
    pub fn set_pruner_margin(&mut self, margin: f64) -> Result<()> {
        self.pruner
            .as_deref_mut()
            .ok_or_else(|| {
                OmklError::invalid("prune_margin", "the parser has no pruner (prune_k = 0)")
            })?
            .set_margin(margin)
    }

    /// The pruner to train, or an error naming `name` when there is none
    /// (or when the parser is frozen).
    fn pruner_or(&mut self, name: &str, note: &str) -> Result<&mut ArcPruner> {
        self.check_learnable()?;
        self.pruner
            .as_deref_mut()
            .ok_or_else(|| OmklError::invalid(name, format!("the parser has no pruner{note}")))
    }

    /// One first-pass epoch of the pruner (an error when there is none).
    pub fn fit_pruner_epoch(
        &mut self,
        sents: &[(ParserInput, Vec<usize>)],
        tick: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<f64> {
        self.pruner_or("prune_k", " (prune_k = 0)")?
            .fit_epoch(sents, tick)
    }

    /// First-pass steps on a chunk of sentences (no epoch end).
    pub fn fit_pruner_chunk(&mut self, sents: &[(&ParserInput, Vec<usize>)]) -> Result<f64> {
        let p = self.pruner_or("prune_k", "")?;
        let mut total = 0.0;
        for (s, h) in sents {
            total += p.learn_one(s, h)?;
        }
        Ok(total)
    }

    /// Ends a first-pass epoch (the pruner is used from then on).
    pub fn end_pruner_epoch(&mut self) -> Result<()> {
        self.pruner_or("prune_k", "")?.model_mut().end_epoch()
    }

    fn kept_arcs(&self, sent: &ParserInput, gold: Option<&[usize]>) -> Result<Option<KeptArcs>> {
        self.pruner
            .as_deref()
            .filter(|p| p.is_trained())
            .map(|p| p.keep(&sent.words, gold))
            .transpose()
    }

    /// One online step on a sentence with gold `heads`. Returns the hinge
    /// loss before the step. On error the parser is unchanged.
    pub fn learn_one(&mut self, sent: &ParserInput, heads: &[usize]) -> Result<f64> {
        let decoder = self.config.decoder;
        self.learn_one_with(sent, heads, &mut |s, n1| decoder.decode(s, n1))
    }

    /// [`ArcParser::learn_one`] with an explicit decoder.
    pub fn learn_one_with(
        &mut self,
        sent: &ParserInput,
        heads: &[usize],
        decode: &mut DecodeFn<'_>,
    ) -> Result<f64> {
        check_gold(sent, heads)?;
        let kept = self.kept_arcs(sent, Some(heads))?;
        let templates = Arc::clone(&self.templates);
        let slots = ArcSlots::new(&templates, &sent.words, kept.as_ref().map(|k| &k.keep[..]))?;
        self.learn_checked(heads, kept.as_ref(), &slots, decode)
    }

    /// [`ArcParser::learn_one`] on each sentence of `sents` in order (the
    /// same steps, the same result), returning the summed loss. The
    /// sentences are taken in blocks (at most 16 sentences and about
    /// 8,000 arcs): while one block is learned, the next one's gold trees
    /// are checked, its arcs pruned (with a trained pruner) and its table
    /// slots hashed on another thread; scoring reads the current weights. A
    /// gold tree that is not a tree stops it before the block that holds it.
    pub fn fit_batch(&mut self, sents: &[(&ParserInput, &[usize])]) -> Result<f64> {
        self.check_learnable()?;
        const BLOCK: usize = 16;
        const BLOCK_ARCS: usize = 8192;
        let pruner = self.pruner.take();
        let templates = Arc::clone(&self.templates);
        let trained = pruner.as_deref().filter(|p| p.is_trained());
        type Prepared<'t> = Vec<(Option<KeptArcs>, ArcSlots<'t>)>;
        let prep = |block: &[(&ParserInput, &[usize])]| -> Result<Prepared<'_>> {
            block
                .iter()
                .map(|&(s, h)| {
                    check_gold(s, h)?;
                    let kept = trained.map(|p| p.keep(&s.words, Some(h))).transpose()?;
                    let slots =
                        ArcSlots::new(&templates, &s.words, kept.as_ref().map(|k| &k.keep[..]))?;
                    Ok((kept, slots))
                })
                .collect()
        };
        let mut blocks: Vec<&[(&ParserInput, &[usize])]> = Vec::new();
        let mut start = 0;
        while start < sents.len() {
            let mut end = start;
            let mut arcs = 0;
            while end < sents.len() && end - start < BLOCK && (end == start || arcs < BLOCK_ARCS) {
                let n1 = sents[end].0.words.len() + 1;
                arcs += n1 * n1;
                end += 1;
            }
            blocks.push(&sents[start..end]);
            start = end;
        }
        let decoder = self.config.decoder;
        let mut run = || -> Result<f64> {
            let mut total = 0.0;
            let mut cur = match blocks.first() {
                Some(b) => prep(b)?,
                None => return Ok(0.0),
            };
            for i in 0..blocks.len() {
                let (done, next) = rayon::join(
                    || -> Result<f64> {
                        let mut t = 0.0;
                        for (&(_, h), (k, sl)) in blocks[i].iter().zip(&cur) {
                            t += self.learn_checked(h, k.as_ref(), sl, &mut |sc, n1| {
                                decoder.decode(sc, n1)
                            })?;
                        }
                        Ok(t)
                    },
                    || blocks.get(i + 1).map(|b| prep(b)),
                );
                total += done?;
                cur = next.transpose()?.unwrap_or_default();
            }
            Ok(total)
        };
        let out = run();
        self.pruner = pruner;
        out
    }

    /// Heads of one sentence (averaged parameters when available).
    pub fn predict(&self, sent: &ParserInput) -> Result<Vec<usize>> {
        check_nonempty(sent)?;
        let kept = self.kept_arcs(sent, None)?;
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        let scores = self.scores_with(&fz, kept.as_ref())?;
        self.config.decoder.decode(&scores, fz.len_with_root())
    }

    /// The score matrices of [`ArcParser::score_matrix`] for a block of
    /// sentences, scored together template by template
    /// ([`SlotLists::add_scores_many`]) so that each weight table is read
    /// for the whole block while it is in cache; bit for bit those of
    /// `score_matrix` on each sentence.
    fn score_block(&self, sents: &[ParserInput]) -> Result<Vec<Vec<f64>>> {
        let tabs = self.prediction_tables();
        let mut lists = Vec::with_capacity(sents.len());
        let mut scores = Vec::with_capacity(sents.len());
        // long sentences are scored alone, a band of modifiers at a time
        let mut shared = Vec::with_capacity(sents.len());
        for sent in sents {
            check_nonempty(sent)?;
            let kept = self.kept_arcs(sent, None)?;
            let fz = ArcFeaturizer::new(&self.templates, &sent.words);
            let n1 = fz.len_with_root();
            shared.push(n1 * n1 <= CHUNK_ARCS);
            if n1 * n1 <= CHUNK_ARCS {
                let (l, s) = self.unscored(&fz, kept.as_ref(), &tabs)?;
                lists.push(l);
                scores.push(s);
            } else {
                scores.push(self.scores_checked(&fz, kept.as_ref(), &tabs)?);
            }
        }
        let refs: Vec<&SlotLists> = lists.iter().collect();
        let mut outs: Vec<&mut [f64]> = scores
            .iter_mut()
            .zip(&shared)
            .filter(|(_, &sh)| sh)
            .map(|(s, _)| &mut s[..])
            .collect();
        SlotLists::add_scores_many(&refs, &mut outs, |t| tabs[t]);
        for ((sent, s), _) in sents
            .iter()
            .zip(&mut scores)
            .zip(&shared)
            .filter(|(_, &sh)| sh)
        {
            close_scores(s, sent.words.len() + 1);
        }
        Ok(scores)
    }

    /// The arc score matrix `s[h * n1 + m]` that [`ArcParser::predict`]
    /// decodes (pruned arcs included, at their finite low scores; column 0
    /// and the diagonal are `-inf`).
    pub fn score_matrix(&self, sent: &ParserInput) -> Result<Vec<f64>> {
        if sent.words.is_empty() {
            return Err(OmklError::empty("sentence"));
        }
        let kept = self.kept_arcs(sent, None)?;
        let fz = ArcFeaturizer::new(&self.templates, &sent.words);
        self.scores_with(&fz, kept.as_ref())
    }

    /// Heads of many sentences, in parallel.
    pub fn predict_many(&self, sents: &[ParserInput]) -> Result<Vec<Vec<usize>>> {
        let blocks: Vec<Vec<Vec<usize>>> = sents
            .par_chunks(PREDICT_BLOCK)
            .map(|b| {
                let scores = self.score_block(b)?;
                b.iter()
                    .zip(&scores)
                    .map(|(sent, s)| self.config.decoder.decode(s, sent.words.len() + 1))
                    .collect()
            })
            .collect::<Result<_>>()?;
        Ok(blocks.into_iter().flatten().collect())
    }
}

/// Sentences scored together by [`ArcParser::predict_many`].
const PREDICT_BLOCK: usize = 32;

/// Epochs of [`ArcParser::fit_batch`] steps.
impl Epochs for ArcParser {
    fn learn_block(&mut self, block: &[GoldSentence], total: &mut f64) -> Result<()> {
        let refs: Vec<(&ParserInput, &[usize])> =
            block.iter().map(|(s, h)| (s, h.as_slice())).collect();
        *total += self.fit_batch(&refs)?;
        Ok(())
    }

    fn finish_epoch(&mut self) -> Result<()> {
        self.end_epoch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::arc_templates::WordAtoms;
    use crate::model::parser_toy::toy;
    use crate::prox::Regularizer;

    /// Arc scores by the definition: for every arc and template, the f32
    /// sum of the template's weights over the arc's features, times the
    /// template's scale, added in template order.
    fn reference_scores(p: &ArcParser, fz: &ArcFeaturizer, averaged: bool) -> Vec<f64> {
        let n1 = fz.len_with_root();
        let off = p.weights.offsets();
        let mut s = vec![0.0f64; n1 * n1];
        for h in 0..n1 {
            for m in 1..n1 {
                if h == m {
                    continue;
                }
                for t in 0..p.templates.len() {
                    let (sc, w) = if averaged {
                        let live = p.live.as_ref().unwrap()[t];
                        let a = p.averaged.as_ref().unwrap();
                        (if live { 1.0 } else { 0.0 }, &a[off[t]..off[t + 1]])
                    } else {
                        p.weights.raw(t)
                    };
                    if sc == 0.0 {
                        continue;
                    }
                    let mut acc = 0.0f32;
                    fz.template_features(t, h, m, |slot| acc += w[slot]);
                    s[h * n1 + m] += sc * acc as f64;
                }
            }
        }
        for i in 0..n1 {
            s[i * n1 + i] = f64::NEG_INFINITY;
            s[i * n1] = f64::NEG_INFINITY;
        }
        s
    }

    #[test]
    fn arc_scores_equal_the_per_arc_definition_exactly() {
        let feats = ["Number=Sing", "_", "Definite=Def|PronType=Art", "Mood=Ind"];
        let mut data = toy();
        for (s, _) in &mut data {
            for (i, w) in s.words.iter_mut().enumerate() {
                let t = ["DET", "NOUN", "VERB", "ADJ"][i % 4];
                *w = WordAtoms::new(&format!("x{i}"), t, t, t, feats[(i * 7 + 1) % 4]);
            }
        }
        let mut p = ArcParser::new(ParserConfig {
            regularizer: Regularizer::SquaredL21 { lam: 1e-3 },
            ..ParserConfig::default()
        })
        .unwrap();
        for (s, h) in data.iter().chain(&data) {
            p.learn_one(s, h).unwrap();
            let fz = ArcFeaturizer::new(&p.templates, &s.words);
            assert_eq!(p.arc_scores(&fz).unwrap(), reference_scores(&p, &fz, false));
        }
        p.end_epoch().unwrap();
        for (s, _) in &data {
            let fz = ArcFeaturizer::new(&p.templates, &s.words);
            let got = p.arc_scores(&fz).unwrap();
            assert_eq!(got, reference_scores(&p, &fz, true));
            assert!(got.iter().any(|&x| x.is_finite() && x != 0.0));
        }
    }

    #[test]
    fn block_scores_equal_the_per_sentence_scores_exactly() {
        let tags = ["DET", "NOUN", "VERB", "ADJ", "ADP", "PRON"];
        let feats = ["Number=Sing", "_", "Definite=Def|PronType=Art", "Mood=Ind"];
        // 70 sentences of 1..=12 words: blocks of PREDICT_BLOCK and a
        // shorter last one
        let data: Vec<(ParserInput, Vec<usize>)> = (0..70)
            .map(|i| {
                let n = 1 + (i * 5) % 12;
                let words = (0..n)
                    .map(|j| {
                        let t = tags[(i + j * 3) % tags.len()];
                        WordAtoms::new(&format!("x{}", (i + j) % 9), t, t, t, feats[(i + j) % 4])
                    })
                    .collect();
                let heads = (1..=n).map(|m| if m == 1 { 0 } else { m - 1 }).collect();
                (
                    ParserInput {
                        id: format!("s{i}"),
                        words,
                    },
                    heads,
                )
            })
            .collect();
        let sents: Vec<ParserInput> = data.iter().map(|(s, _)| s.clone()).collect();
        for (pruned, averaged) in [(false, false), (true, false), (true, true)] {
            let mut p = ArcParser::new(ParserConfig {
                regularizer: Regularizer::SquaredL21 { lam: 1e-3 },
                ..ParserConfig::default()
            })
            .unwrap();
            if pruned {
                p.set_pruner(3).unwrap();
                p.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
            }
            for (s, h) in &data {
                p.learn_one(s, h).unwrap();
            }
            if averaged {
                p.end_epoch().unwrap();
            }
            let block = p.score_block(&sents[..40]).unwrap();
            for (s, got) in sents.iter().zip(&block) {
                assert_eq!(got, &p.score_matrix(s).unwrap(), "sentence {}", s.id);
            }
            let many = p.predict_many(&sents).unwrap();
            for (s, got) in sents.iter().zip(&many) {
                assert_eq!(got, &p.predict(s).unwrap(), "sentence {}", s.id);
            }
        }
        let mut bad = sents.clone();
        bad[45].words.clear();
        let p = ArcParser::new(ParserConfig::default()).unwrap();
        let e = p.predict_many(&bad).unwrap_err().to_string();
        assert!(e.contains("s45") && e.contains("empty"), "{e}");
    }

    #[test]
    fn long_sentences_scored_band_by_band_equal_the_definition_exactly() {
        let tags = ["DET", "NOUN", "VERB", "ADJ", "PUNCT", "CCONJ"];
        let feats = ["Number=Sing", "_", "Definite=Def|PronType=Art", "Mood=Ind"];
        let sent = |n: usize, id: &str| ParserInput {
            id: id.to_string(),
            words: (0..n)
                .map(|j| {
                    let t = tags[(j * 5) % tags.len()];
                    WordAtoms::new(&format!("x{}", j % 13), t, t, t, feats[j % 4])
                })
                .collect(),
        };
        // 270 words: two bands of modifiers
        let long = sent(270, "long");
        assert!(long.words.len().pow(2) > CHUNK_ARCS);
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        for (s, h) in &toy() {
            p.learn_one(s, h).unwrap();
        }
        p.end_epoch().unwrap();
        let fz = ArcFeaturizer::new(&p.templates, &long.words);
        assert_eq!(p.arc_scores(&fz).unwrap(), reference_scores(&p, &fz, true));
        let short = sent(7, "short");
        let block = p
            .score_block(&[short.clone(), long.clone(), short.clone()])
            .unwrap();
        for (s, got) in [&short, &long, &short].into_iter().zip(&block) {
            assert_eq!(got, &p.score_matrix(s).unwrap(), "sentence {}", s.id);
        }
        let heads = p.predict(&long).unwrap();
        check_tree(&heads, "long").unwrap();
    }

    #[test]
    fn learns_a_toy_grammar_and_outputs_trees() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        for _ in 0..5 {
            p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        for (s, gold) in &data {
            let pred = p.predict(s).unwrap();
            check_tree(&pred, &s.id).unwrap();
            assert_eq!(pred.iter().filter(|&&h| h == 0).count(), 1);
            assert_eq!(&pred, gold);
        }
        let beta = p.template_weights();
        assert!((beta.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert_eq!(p.beta_trajectory.len(), 5);
    }

    #[test]
    fn modifier_only_templates_without_conjunction_stay_exactly_zero() {
        // their features are the same for every head, so they cancel
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        let beta = p.template_weights();
        let m_only = p
            .templates()
            .iter()
            .position(|t| t.name == "m.upos")
            .unwrap();
        assert_eq!(beta[m_only], 0.0);
        assert!(beta.iter().any(|&b| b > 0.0));
    }

    #[test]
    fn failed_learn_one_leaves_the_parser_unchanged() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.learn_one(&data[0].0, &data[0].1).unwrap();
        let before = p.to_bytes().unwrap();
        assert!(p.learn_one(&data[0].0, &[2, 1, 0]).is_err());
        assert!(p.learn_one(&data[0].0, &[2, 0]).is_err());
        assert_eq!(p.to_bytes().unwrap(), before);
    }

    #[test]
    fn mkl_with_large_lambda_zeroes_templates() {
        let data = toy();
        let config = ParserConfig {
            regularizer: Regularizer::SquaredL21 { lam: 0.5 },
            ..ParserConfig::default()
        };
        let mut p = ArcParser::new(config).unwrap();
        for _ in 0..3 {
            p.fit_epoch(&data, &mut |_| Ok(())).unwrap();
        }
        let norms = p.weights().group_norms();
        let zero = norms.iter().filter(|&&n| n == 0.0).count();
        assert!(zero > 0 && zero < norms.len(), "{zero} of {}", norms.len());
    }
}
