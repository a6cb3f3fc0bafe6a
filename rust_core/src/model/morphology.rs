//! The morphology columns (UPOS, XPOS, FEATS, LEMMA) of sentences of word
//! forms, predicted by a chain of frozen taggers and lexicons: the
//! prediction path of `omkl.MorphologyTagger`, in the core, so that a
//! sentence is tagged with no Python object per word.
//!
//! For each sentence (see the Python class for why the stages are so):
//! 1. the lexicon columns of each lower-cased word: its UPOS and XPOS
//!    ambiguity classes and its casing class (`<unk>` when unknown);
//! 2. the first XPOS stage (when there is one) over the XPOS classes and
//!    the casing classes;
//! 3. UPOS over the UPOS classes (and the first XPOS tags and the casing
//!    classes);
//! 4. XPOS over the XPOS classes, the UPOS tags (and the casing classes);
//! 5. the lemma rule stage over the UPOS and XPOS tags, then the lemma: the
//!    rule of the (form, XPOS) in the lexicon, else of the (lower-cased form,
//!    XPOS) applied to the lower-cased form, else the stage's rule unless it
//!    is `<rare>` or strips more characters than the form has, else the form;
//! 6. the FEATS of the lexicons: of the (lower-cased form, UPOS, XPOS),
//!    else (lower-cased form, XPOS), else (UPOS, XPOS), else XPOS, else `_`;
//! 7. the FEATS stage over UPOS, XPOS and those FEATS, whose answer is
//!    kept for the UPOS of [`FEATS_UPOS`] unless it defers (`<lex>`).
//!
//! Each stage computes its token features with its
//! [`TokenTemplates`] and
//! decodes with its [`FrozenChain`].
//!
//! # Complexity
//! Per sentence of `n` words: O(Σ word lengths × templates + n × L²) per
//! stage, and O(n) lexicon look-ups.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{OmklError, Result};
use crate::features::py_str::lower_into;
use crate::features::token_templates::{Scratch, TokenTemplates};
use crate::features::SparseBatch;
use crate::learner::chain_text::{template_groups, to_group_ids};
use crate::learner::frozen_chain::FrozenChain;

/// The UPOS tags whose FEATS the FEATS stage predicts.
pub const FEATS_UPOS: [&str; 3] = ["VERB", "AUX", "PRON"];
/// The ambiguity (and casing) class of a word not in a lexicon.
pub const UNKNOWN: &str = "<unk>";
/// The FEATS class that defers to the lexicon.
pub const LEX: &str = "<lex>";
/// The lemma class of the rules too rare to be learned.
pub const RARE: &str = "<rare>";

/// Each word's second-best label and its marginal.
type Seconds = Vec<(usize, f64)>;

/// One stage: its templates, its frozen chain (shared with the tagger it
/// comes from) and its labels.
#[derive(Debug, Clone)]
pub struct Stage {
    templates: TokenTemplates,
    chain: Arc<FrozenChain>,
    groups: Vec<Option<u32>>,
    labels: Vec<String>,
}

impl Stage {
    /// A stage that computes `templates` and decodes with `chain`, whose
    /// label ids name `labels`; an error if the numbers of labels differ or
    /// a template names the transition group.
    pub fn new(
        templates: TokenTemplates,
        chain: Arc<FrozenChain>,
        labels: Vec<String>,
    ) -> Result<Self> {
        if labels.is_empty() || labels.len() != chain.n_labels() {
            return Err(OmklError::invalid(
                "labels",
                format!(
                    "expected the {} labels of the tagger, got {}",
                    chain.n_labels(),
                    labels.len()
                ),
            ));
        }
        let groups = template_groups(chain.space(), &templates)?;
        Ok(Stage {
            templates,
            chain,
            groups,
            labels,
        })
    }

    /// The stage's labels.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The features of a sentence as group ids of the chain, in `batch`.
    fn features(&self, words: &[&str], cols: &[&[&str]], buf: &mut Buffers) -> Result<()> {
        let batch = &mut buf.batch;
        batch.indptr.clear();
        batch.indptr.push(0);
        batch.groups.clear();
        batch.indices.clear();
        batch.values.clear();
        self.templates.sentence_into(
            words,
            cols,
            self.chain.space().n_buckets(),
            &mut buf.scratch,
            batch,
        )?;
        to_group_ids(batch, &self.groups);
        Ok(())
    }

    /// The label ids of a sentence.
    fn predict(&self, words: &[&str], cols: &[&[&str]], buf: &mut Buffers) -> Result<Vec<usize>> {
        self.features(words, cols, buf)?;
        self.chain.predict(&buf.batch)
    }

    /// The label ids of a sentence and, when `alt`, each word's label other
    /// than its own of largest marginal, with that marginal (the first such
    /// label on a tie; its own label and 0 with a single label), from one
    /// computation of the features.
    fn predict_alt(
        &self,
        words: &[&str],
        cols: &[&[&str]],
        alt: bool,
        buf: &mut Buffers,
    ) -> Result<(Vec<usize>, Option<Seconds>)> {
        // the features stay in `buf` for the marginals
        let ids = self.predict(words, cols, buf)?;
        if !alt {
            return Ok((ids, None));
        }
        let l = self.labels.len();
        if l < 2 {
            let second = ids.iter().map(|&y| (y, 0.0)).collect();
            return Ok((ids, Some(second)));
        }
        let mu = self.chain.marginals(&buf.batch)?;
        let second = ids
            .iter()
            .zip(mu.chunks_exact(l))
            .map(|(&y, row)| {
                let mut best = (usize::MAX, f64::NEG_INFINITY);
                for (k, &p) in row.iter().enumerate() {
                    let p = if k == y { -1.0 } else { p };
                    if best.0 == usize::MAX || p > best.1 {
                        best = (k, p);
                    }
                }
                best
            })
            .collect();
        Ok((ids, Some(second)))
    }
}

/// The lexicons of a [`MorphologyChain`], keyed as the Python model's.
#[derive(Debug, Clone, Default)]
pub struct Lexicons {
    /// UPOS ambiguity class of each lower-cased word.
    pub amb_upos: HashMap<String, String>,
    /// XPOS ambiguity class of each lower-cased word.
    pub amb_xpos: HashMap<String, String>,
    /// Casing class of each lower-cased word (read with a first XPOS stage).
    pub casing: HashMap<String, String>,
    /// FEATS of `"lower\tUPOS\tXPOS"`.
    pub feats: HashMap<String, String>,
    /// FEATS of `"UPOS\tXPOS"`.
    pub feats_backoff: HashMap<String, String>,
    /// FEATS of `"lower\t\tXPOS"` and `"\t\tXPOS"`.
    pub feats_xpos: HashMap<String, String>,
    /// Lemma rule of `"form\tXPOS"`.
    pub lemma: HashMap<String, String>,
    /// Lemma rule of `"lower\tXPOS"`.
    pub lemma_lower: HashMap<String, String>,
}

/// The number of words of a block of [`MorphologyChain::tag_many`].
pub const BLOCK: usize = 4096;

/// One sentence of a block, between the stages.
#[derive(Debug, Default)]
struct Work<'w, 'm> {
    words: &'w [&'w str],
    lowers: Vec<String>,
    amb_upos: Vec<&'m str>,
    amb_xpos: Vec<&'m str>,
    casing: Option<Vec<&'m str>>,
    first: Vec<&'m str>,
    upos: Vec<&'m str>,
    upos_alt: Option<Seconds>,
    xpos: Vec<&'m str>,
    xpos_alt: Option<Seconds>,
    rules: Vec<usize>,
    lex_feats: Vec<String>,
}

/// The buffers reused from one sentence to the next.
#[derive(Debug, Default)]
struct Buffers {
    scratch: Scratch,
    batch: SparseBatch,
    key: String,
}

/// The stages and lexicons of a morphology tagger; see the module docs.
#[derive(Debug, Clone)]
pub struct MorphologyChain {
    first_xpos: Option<Stage>,
    upos: Stage,
    xpos: Stage,
    lemma: Stage,
    feats: Stage,
    lex: Lexicons,
}

/// The columns of one tagged sentence, one entry per word.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tagged {
    pub upos: Vec<String>,
    pub xpos: Vec<String>,
    pub feats: Vec<String>,
    pub lemma: Vec<String>,
    /// `(label, marginal)` of the second-best UPOS, when asked for.
    pub upos_alt: Option<Vec<(String, f64)>>,
    /// `(label, marginal)` of the second-best XPOS, when asked for.
    pub xpos_alt: Option<Vec<(String, f64)>>,
}

/// The lemma that the edit `rule` (`"K<k>|<suffix>"` or `"L<k>|<suffix>"`)
/// makes of `form` (whose lower-cased form is `lower`); `None` when `rule`
/// is not a rule or strips more characters than the form has.
///
/// ```
/// use omkl_core::model::morphology::apply_lemma_rule;
/// assert_eq!(apply_lemma_rule("K1|", "dogs", "dogs").as_deref(), Some("dog"));
/// assert_eq!(apply_lemma_rule("L3|be", "Was", "was").as_deref(), Some("be"));
/// assert_eq!(apply_lemma_rule("K9|", "dogs", "dogs"), None);
/// ```
pub fn apply_lemma_rule(rule: &str, form: &str, lower: &str) -> Option<String> {
    let src = match rule.as_bytes().first()? {
        b'K' => form,
        b'L' => lower,
        _ => return None,
    };
    let (k, suffix) = rule[1..].split_once('|')?;
    if k.is_empty() || (k.len() > 1 && k.starts_with('0')) || !k.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let k: usize = k.parse().ok()?;
    let n = src.chars().count();
    if k > n {
        return None;
    }
    let cut = src.char_indices().nth(n - k).map_or(src.len(), |(i, _)| i);
    Some(format!("{}{suffix}", &src[..cut]))
}

/// The entry of each lower-cased word in `lex` (`<unk>` if none).
fn lookup<'a>(lex: &'a HashMap<String, String>, lowers: &[String]) -> Vec<&'a str> {
    lowers
        .iter()
        .map(|w| lex.get(w).map_or(UNKNOWN, String::as_str))
        .collect()
}

/// The labels of `stage` of the label ids `ids`.
fn names<'a>(stage: &'a Stage, ids: &[usize]) -> Vec<&'a str> {
    ids.iter().map(|&i| stage.labels[i].as_str()).collect()
}

impl MorphologyChain {
    /// A chain of the given stages and lexicons. The casing classes are
    /// read when there is a first XPOS stage.
    pub fn new(
        first_xpos: Option<Stage>,
        upos: Stage,
        xpos: Stage,
        lemma: Stage,
        feats: Stage,
        lex: Lexicons,
    ) -> Self {
        MorphologyChain {
            first_xpos,
            upos,
            xpos,
            lemma,
            feats,
            lex,
        }
    }

    /// The columns of the sentence `words`, with the second-best UPOS and
    /// XPOS when `upos_alt` and `xpos_alt`; an error for an empty sentence.
    pub fn tag(&self, words: &[&str], upos_alt: bool, xpos_alt: bool) -> Result<Tagged> {
        let mut out = self.tag_block(&[words], upos_alt, xpos_alt, &mut Buffers::default())?;
        Ok(out.pop().unwrap_or_default())
    }

    /// [`MorphologyChain::tag`] of every sentence. The sentences are taken
    /// in blocks of [`BLOCK`] words, each block stage after stage (so that
    /// one stage's weights stay in cache over the block), and the blocks in
    /// parallel (rayon's pool).
    pub fn tag_many<'a, S: AsRef<[&'a str]> + Sync>(
        &self,
        sentences: &[S],
        upos_alt: bool,
        xpos_alt: bool,
    ) -> Result<Vec<Tagged>> {
        use rayon::prelude::*;
        let mut blocks = Vec::new();
        let (mut start, mut words) = (0, 0);
        for (i, s) in sentences.iter().enumerate() {
            words += s.as_ref().len();
            if words >= BLOCK || i + 1 == sentences.len() {
                blocks.push(start..i + 1);
                (start, words) = (i + 1, 0);
            }
        }
        let tagged = blocks
            .into_par_iter()
            .map_init(Buffers::default, |buf, r| {
                let block: Vec<&[&str]> = sentences[r].iter().map(AsRef::as_ref).collect();
                self.tag_block(&block, upos_alt, xpos_alt, buf)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(tagged.into_iter().flatten().collect())
    }

    /// The columns of the sentences of one block, stage after stage.
    fn tag_block(
        &self,
        sentences: &[&[&str]],
        upos_alt: bool,
        xpos_alt: bool,
        buf: &mut Buffers,
    ) -> Result<Vec<Tagged>> {
        let mut work = Vec::with_capacity(sentences.len());
        for &words in sentences {
            if words.is_empty() {
                return Err(OmklError::empty("sentence"));
            }
            let lowers: Vec<String> = words
                .iter()
                .map(|w| {
                    let mut low = String::new();
                    lower_into(w, &mut low);
                    low
                })
                .collect();
            let amb_upos = lookup(&self.lex.amb_upos, &lowers);
            let amb_xpos = lookup(&self.lex.amb_xpos, &lowers);
            let casing = self
                .first_xpos
                .as_ref()
                .map(|_| lookup(&self.lex.casing, &lowers));
            work.push(Work {
                words,
                lowers,
                amb_upos,
                amb_xpos,
                casing,
                ..Work::default()
            });
        }
        if let Some(stage) = &self.first_xpos {
            for w in &mut work {
                let case = w.casing.as_deref().unwrap_or_default();
                let ids = stage.predict(w.words, &[&w.amb_xpos, case], buf)?;
                w.first = names(stage, &ids);
            }
        }
        for w in &mut work {
            let mut cols: Vec<&[&str]> = vec![&w.amb_upos];
            if let Some(case) = &w.casing {
                cols.extend([&w.first[..], case]);
            }
            let (ids, alt) = self.upos.predict_alt(w.words, &cols, upos_alt, buf)?;
            w.upos_alt = alt;
            w.upos = names(&self.upos, &ids);
        }
        for w in &mut work {
            let mut cols: Vec<&[&str]> = vec![&w.amb_xpos, &w.upos];
            if let Some(case) = &w.casing {
                cols.push(case);
            }
            let (ids, alt) = self.xpos.predict_alt(w.words, &cols, xpos_alt, buf)?;
            w.xpos_alt = alt;
            w.xpos = names(&self.xpos, &ids);
        }
        for w in &mut work {
            w.rules = self.lemma.predict(w.words, &[&w.upos, &w.xpos], buf)?;
            w.lex_feats = self.lexicon_feats(&w.lowers, &w.upos, &w.xpos, &mut buf.key);
        }
        let mut out = Vec::with_capacity(work.len());
        for w in work {
            let lex_refs: Vec<&str> = w.lex_feats.iter().map(String::as_str).collect();
            let feats_ids = self
                .feats
                .predict(w.words, &[&w.upos, &w.xpos, &lex_refs], buf)?;
            let mut t = Tagged {
                upos: w.upos.iter().map(|s| s.to_string()).collect(),
                xpos: w.xpos.iter().map(|s| s.to_string()).collect(),
                ..Tagged::default()
            };
            for i in 0..w.words.len() {
                let f = self.feats.labels[feats_ids[i]].as_str();
                let keep = FEATS_UPOS.contains(&w.upos[i]) && f != LEX;
                t.feats.push(if keep { f } else { lex_refs[i] }.to_string());
                let rule = self.lemma.labels[w.rules[i]].as_str();
                t.lemma.push(self.lemma_of(
                    w.words[i],
                    &w.lowers[i],
                    w.xpos[i],
                    rule,
                    &mut buf.key,
                ));
            }
            let alts = |stage: &Stage, second: Option<Vec<(usize, f64)>>| {
                second.map(|v| {
                    v.into_iter()
                        .map(|(k, p)| (stage.labels[k].clone(), p))
                        .collect()
                })
            };
            t.upos_alt = alts(&self.upos, w.upos_alt);
            t.xpos_alt = alts(&self.xpos, w.xpos_alt);
            out.push(t);
        }
        Ok(out)
    }

    /// The FEATS of each word from the lexicons (see the module docs).
    fn lexicon_feats(
        &self,
        lowers: &[String],
        upos: &[&str],
        xpos: &[&str],
        key: &mut String,
    ) -> Vec<String> {
        let lex = &self.lex;
        let mut get = |m: &HashMap<String, String>, parts: &[&str]| -> Option<String> {
            key.clear();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    key.push('\t');
                }
                key.push_str(p);
            }
            m.get(key.as_str()).cloned()
        };
        (0..lowers.len())
            .map(|i| {
                let (low, u, x) = (lowers[i].as_str(), upos[i], xpos[i]);
                get(&lex.feats, &[low, u, x])
                    .or_else(|| get(&lex.feats_xpos, &[low, "", x]))
                    .or_else(|| get(&lex.feats_backoff, &[u, x]))
                    .or_else(|| get(&lex.feats_xpos, &["", "", x]))
                    .unwrap_or_else(|| "_".to_string())
            })
            .collect()
    }

    /// The lemma of `word` (see the module docs).
    fn lemma_of(
        &self,
        word: &str,
        lower: &str,
        xpos: &str,
        rule: &str,
        key: &mut String,
    ) -> String {
        let mut keyed = |m: &HashMap<String, String>, w: &str| -> Option<String> {
            key.clear();
            key.push_str(w);
            key.push('\t');
            key.push_str(xpos);
            m.get(key.as_str()).cloned()
        };
        if let Some(known) = keyed(&self.lex.lemma, word) {
            if let Some(l) = apply_lemma_rule(&known, word, lower) {
                return l;
            }
        } else if let Some(known) = keyed(&self.lex.lemma_lower, lower) {
            let mut low_low = String::new();
            lower_into(lower, &mut low_low);
            if let Some(l) = apply_lemma_rule(&known, lower, &low_low) {
                return l;
            }
        } else if rule != RARE {
            if let Some(l) = apply_lemma_rule(rule, word, lower) {
                return l;
            }
        }
        word.to_string()
    }
}
