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
//!    kept for the UPOS of [`Lexicons::feats_upos`] unless it defers
//!    (`<lex>`).
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
use crate::features::block_rows::{assemble, BlockUnit, HashedRows};
use crate::features::py_str::lower_into;
use crate::features::token_templates::TokenTemplates;
use crate::features::SparseBatch;
use crate::learner::chain_text::template_groups;
use crate::learner::frozen_chain::{FrozenChain, FrozenChainWorkspace};

/// The UPOS tags whose FEATS the FEATS stage of a model of format
/// version 2 or older predicts (a newer model records its own).
pub const OLD_FEATS_UPOS: [&str; 3] = ["VERB", "AUX", "PRON"];
/// The ambiguity (and casing) class of a word not in a lexicon.
pub const UNKNOWN: &str = "<unk>";
/// The FEATS class that defers to the lexicon.
pub const LEX: &str = "<lex>";
/// The lemma class of the rules too rare to be learned.
pub const RARE: &str = "<rare>";

/// Each word's second-best label and its marginal.
type Seconds = Vec<(usize, f64)>;

/// What a column of a stage holds (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    AmbUpos,
    AmbXpos,
    Casing,
    First,
    Upos,
    Xpos,
    LexFeats,
}

/// One stage: its templates, its frozen chain (shared with the tagger it
/// comes from) and its labels.
#[derive(Debug, Clone)]
pub struct Stage {
    templates: TokenTemplates,
    chain: Arc<FrozenChain>,
    groups: Vec<Option<u32>>,
    labels: Vec<String>,
    /// Each block's unit (an index into the chain's units) and first
    /// template id, set by [`MorphologyChain::new`].
    parts: Vec<(usize, u32)>,
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
            parts: Vec::new(),
        })
    }

    /// The stage's labels.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Each word's label other than its own (`ids`) of largest marginal,
    /// with that marginal (the first such label on a tie; its own label
    /// and 0 with a single label), from the emissions that the prediction
    /// left in `ws`.
    fn seconds(&self, ids: &[usize], ws: &mut FrozenChainWorkspace) -> Result<Seconds> {
        let l = self.labels.len();
        if l < 2 {
            return Ok(ids.iter().map(|&y| (y, 0.0)).collect());
        }
        let mu = self.chain.marginals_with(ids.len(), ws)?;
        Ok(ids
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
            .collect())
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
    /// The UPOS tags whose FEATS the FEATS stage predicts; the lexicons
    /// give the others'.
    pub feats_upos: Vec<String>,
}

/// The number of words of a block of [`MorphologyChain::tag_many`].
pub const BLOCK: usize = 4096;

/// One sentence of a block, between the stages.
#[derive(Debug, Default)]
struct Work<'a> {
    words: &'a [&'a str],
    lowers: Vec<&'a str>,
    amb_upos: Vec<&'a str>,
    amb_xpos: Vec<&'a str>,
    casing: Vec<&'a str>,
    first: Vec<&'a str>,
    upos: Vec<&'a str>,
    upos_alt: Option<Seconds>,
    xpos: Vec<&'a str>,
    xpos_alt: Option<Seconds>,
    rules: Vec<usize>,
    lex_feats: Vec<&'a str>,
    /// The rows of the units read by a later stage.
    rows: Vec<Option<HashedRows>>,
}

impl<'a> Work<'a> {
    /// The column `c`.
    fn column(&self, c: Col) -> &[&'a str] {
        match c {
            Col::AmbUpos => &self.amb_upos,
            Col::AmbXpos => &self.amb_xpos,
            Col::Casing => &self.casing,
            Col::First => &self.first,
            Col::Upos => &self.upos,
            Col::Xpos => &self.xpos,
            Col::LexFeats => &self.lex_feats,
        }
    }
}

/// The buffers reused from one sentence to the next.
#[derive(Debug, Default)]
struct Buffers {
    batch: SparseBatch,
    chain: FrozenChainWorkspace,
    /// Rows no longer read, to be reused.
    pool: Vec<HashedRows>,
    key: String,
}

/// One block of a stage, computed once for the stages that read the same
/// block of the same columns.
#[derive(Debug, Clone)]
struct Unit {
    unit: BlockUnit,
    columns: Vec<Col>,
    /// The index (in the order of the stages) of the last stage that reads
    /// the unit.
    last: usize,
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
    units: Vec<Unit>,
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
fn lookup<'a>(lex: &'a HashMap<String, String>, lowers: &[&str]) -> Vec<&'a str> {
    lowers
        .iter()
        .map(|&w| lex.get(w).map_or(UNKNOWN, String::as_str))
        .collect()
}

impl Buffers {
    /// The label ids that the last Viterbi left in the chain workspace.
    fn chain_labels(&self) -> Vec<usize> {
        self.chain.labels().to_vec()
    }
}

/// The labels of `stage` of the label ids `ids`.
fn names<'a>(stage: &'a Stage, ids: &[usize]) -> Vec<&'a str> {
    ids.iter().map(|&i| stage.labels[i].as_str()).collect()
}

/// The index of each stage in the order of the stages.
const FIRST: usize = 0;
const UPOS: usize = 1;
const XPOS: usize = 2;
const LEMMA: usize = 3;
const FEATS: usize = 4;

impl MorphologyChain {
    /// A chain of the given stages and lexicons. The casing classes are
    /// read when there is a first XPOS stage. An error if a stage's
    /// templates read other columns than the stage has (module docs).
    pub fn new(
        first_xpos: Option<Stage>,
        upos: Stage,
        xpos: Stage,
        lemma: Stage,
        feats: Stage,
        lex: Lexicons,
    ) -> Result<Self> {
        use Col::*;
        let casing = first_xpos.is_some();
        let mut chain = MorphologyChain {
            first_xpos,
            upos,
            xpos,
            lemma,
            feats,
            lex,
            units: Vec::new(),
        };
        let columns: [Vec<Col>; 5] = [
            vec![AmbXpos, Casing],
            if casing {
                vec![AmbUpos, First, Casing]
            } else {
                vec![AmbUpos]
            },
            if casing {
                vec![AmbXpos, Upos, Casing]
            } else {
                vec![AmbXpos, Upos]
            },
            vec![Upos, Xpos],
            vec![Upos, Xpos, LexFeats],
        ];
        let names = ["first xpos", "upos", "xpos", "lemma", "feats"];
        let mut units: Vec<Unit> = Vec::new();
        let stages = [
            chain.first_xpos.as_mut(),
            Some(&mut chain.upos),
            Some(&mut chain.xpos),
            Some(&mut chain.lemma),
            Some(&mut chain.feats),
        ];
        for (k, stage) in stages.into_iter().enumerate() {
            let Some(stage) = stage else { continue };
            let t = &stage.templates;
            if t.columns().len() != columns[k].len() {
                return Err(OmklError::shape(
                    format!("the templates of the {} stage", names[k]),
                    format!("{} columns", columns[k].len()),
                    format!("{} ({})", t.columns().len(), t.columns().join(", ")),
                ));
            }
            stage.parts = t
                .blocks()
                .iter()
                .zip(t.offsets())
                .map(|(b, &(t0, c0))| {
                    let cols = &columns[k][c0..c0 + b.column_names().len()];
                    let id = match units
                        .iter()
                        .position(|u| u.unit.block() == b && u.columns == cols)
                    {
                        Some(id) => id,
                        None => {
                            units.push(Unit {
                                unit: BlockUnit::new(b.clone()),
                                columns: cols.to_vec(),
                                last: k,
                            });
                            units.len() - 1
                        }
                    };
                    units[id].last = k;
                    (id, t0)
                })
                .collect();
        }
        chain.units = units;
        Ok(chain)
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

    /// Computes the rows of `stage` for the sentence `w` into `buf.batch`
    /// (the units it shares with a later stage kept in `w`), runs its
    /// Viterbi and returns the label ids (in `buf.chain`).
    fn run_stage<'b>(
        &self,
        k: usize,
        stage: &Stage,
        w: &mut Work<'_>,
        buf: &'b mut Buffers,
    ) -> Result<&'b [usize]> {
        for &(u, _) in &stage.parts {
            if w.rows[u].is_none() {
                let unit = &self.units[u];
                let cols: Vec<&[&str]> = unit.columns.iter().map(|&c| w.column(c)).collect();
                let mut rows = buf.pool.pop().unwrap_or_default();
                unit.unit.rows_into(w.words, &w.lowers, &cols, &mut rows);
                w.rows[u] = Some(rows);
            }
        }
        let parts: Vec<(&HashedRows, u32)> = stage
            .parts
            .iter()
            .filter_map(|&(u, t0)| w.rows[u].as_ref().map(|r| (r, t0)))
            .collect();
        let nb = stage.chain.space().n_buckets() as u64;
        assemble(&parts, &stage.groups, nb, &mut buf.batch);
        // the units read by no later stage go back to the pool
        for (u, unit) in self.units.iter().enumerate() {
            if unit.last == k {
                if let Some(rows) = w.rows[u].take() {
                    buf.pool.push(rows);
                }
            }
        }
        stage.chain.predict_with(&buf.batch, &mut buf.chain)
    }

    /// The columns of the sentences of one block, stage after stage.
    fn tag_block(
        &self,
        sentences: &[&[&str]],
        upos_alt: bool,
        xpos_alt: bool,
        buf: &mut Buffers,
    ) -> Result<Vec<Tagged>> {
        let mut lower = String::new();
        let mut ends = Vec::new();
        for &words in sentences {
            if words.is_empty() {
                return Err(OmklError::empty("sentence"));
            }
            for w in words {
                lower_into(w, &mut lower);
                ends.push(lower.len());
            }
        }
        let mut work = Vec::with_capacity(sentences.len());
        let (mut at, mut from) = (0, 0);
        for &words in sentences {
            let lowers: Vec<&str> = ends[at..at + words.len()]
                .iter()
                .map(|&e| {
                    let s = &lower[from..e];
                    from = e;
                    s
                })
                .collect();
            at += words.len();
            let amb_upos = lookup(&self.lex.amb_upos, &lowers);
            let amb_xpos = lookup(&self.lex.amb_xpos, &lowers);
            let casing = match self.first_xpos {
                Some(_) => lookup(&self.lex.casing, &lowers),
                None => Vec::new(),
            };
            work.push(Work {
                words,
                lowers,
                amb_upos,
                amb_xpos,
                casing,
                rows: vec![None; self.units.len()],
                ..Work::default()
            });
        }
        if let Some(stage) = &self.first_xpos {
            for w in &mut work {
                let ids = self.run_stage(FIRST, stage, w, buf)?;
                w.first = names(stage, ids);
            }
        }
        for w in &mut work {
            let stage = &self.upos;
            let ids = self.run_stage(UPOS, stage, w, buf)?;
            w.upos = names(stage, ids);
            if upos_alt {
                let ids = buf.chain_labels();
                w.upos_alt = Some(stage.seconds(&ids, &mut buf.chain)?);
            }
        }
        for w in &mut work {
            let stage = &self.xpos;
            let ids = self.run_stage(XPOS, stage, w, buf)?;
            w.xpos = names(stage, ids);
            if xpos_alt {
                let ids = buf.chain_labels();
                w.xpos_alt = Some(stage.seconds(&ids, &mut buf.chain)?);
            }
        }
        for w in &mut work {
            w.rules = self.run_stage(LEMMA, &self.lemma, w, buf)?.to_vec();
            w.lex_feats = self.lexicon_feats(&w.lowers, &w.upos, &w.xpos, &mut buf.key);
        }
        let mut out = Vec::with_capacity(work.len());
        for mut w in work {
            let feats_ids = self.run_stage(FEATS, &self.feats, &mut w, buf)?;
            let n = w.words.len();
            let mut t = Tagged {
                upos: w.upos.iter().map(|s| s.to_string()).collect(),
                xpos: w.xpos.iter().map(|s| s.to_string()).collect(),
                feats: Vec::with_capacity(n),
                lemma: Vec::with_capacity(n),
                ..Tagged::default()
            };
            for (i, &f) in feats_ids.iter().enumerate() {
                let f = self.feats.labels[f].as_str();
                let keep = f != LEX && self.lex.feats_upos.iter().any(|u| u == w.upos[i]);
                t.feats
                    .push(if keep { f } else { w.lex_feats[i] }.to_string());
            }
            for i in 0..n {
                let rule = self.lemma.labels[w.rules[i]].as_str();
                t.lemma
                    .push(self.lemma_of(w.words[i], w.lowers[i], w.xpos[i], rule, &mut buf.key));
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
    fn lexicon_feats<'a>(
        &'a self,
        lowers: &[&str],
        upos: &[&str],
        xpos: &[&str],
        key: &mut String,
    ) -> Vec<&'a str> {
        let lex = &self.lex;
        let mut get = |m: &'a HashMap<String, String>, parts: &[&str]| -> Option<&'a str> {
            key.clear();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    key.push('\t');
                }
                key.push_str(p);
            }
            m.get(key.as_str()).map(String::as_str)
        };
        (0..lowers.len())
            .map(|i| {
                let (low, u, x) = (lowers[i], upos[i], xpos[i]);
                get(&lex.feats, &[low, u, x])
                    .or_else(|| get(&lex.feats_xpos, &[low, "", x]))
                    .or_else(|| get(&lex.feats_backoff, &[u, x]))
                    .or_else(|| get(&lex.feats_xpos, &["", "", x]))
                    .unwrap_or("_")
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
