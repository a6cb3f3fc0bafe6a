//! Token feature templates of sequence tagging computed in the core from a
//! sentence's word forms and string columns (ambiguity classes, another
//! stage's tags, casing classes, lexicon FEATS), with the names, buckets and
//! values of the feature dicts that `omkl.tagging.token_features` and the
//! stages of `omkl.morphology` build in Python, entry for entry and in the
//! same order.
//!
//! A set of templates is a list of [blocks](super::token_blocks::Block)
//! (`token`, `classes:amb`, `tags:xpos`, `casing`, `lemma`, `feats`); its
//! templates are the blocks' templates in order and its columns the blocks'
//! columns in order. [`TokenTemplates::sentence_into`] writes one row per
//! word into a [`SparseBatch`] whose *groups are template ids* (indices
//! into [`TokenTemplates::names`]); a learner turns them into its group ids
//! (`NamedLearner::register_templates`, `template_groups`).
//!
//! # Hashing
//! As for a dict, a string value `v` of template `t` is the indicator
//! `t=v` in bucket `xxh3_64("t=v", HASH_SEED) mod n_buckets` (see
//! [`indicator_bucket`](crate::learner::chain::indicator_bucket)); a flag is
//! the real feature `t` in bucket `hash_name(t) mod n_buckets`.
//!
//! # Complexity
//! O(Σ word lengths × templates) per sentence, with one reused buffer for
//! the hashed names and no allocation per entry.
//!
//! # Example
//! ```
//! use omkl_core::features::token_templates::TokenTemplates;
//! use omkl_core::features::hash_name;
//! let t = TokenTemplates::parse(&["token", "tags:upos"]).unwrap();
//! assert_eq!(t.columns(), ["upos tags"]);
//! let rows = t.sentence(&["The", "dog"], &[&["DET", "NOUN"]], 1 << 20).unwrap();
//! assert_eq!(rows.n_examples(), 2);
//! // the first entry of the first word is `w=The`
//! let w = t.names().iter().position(|n| n == "w").unwrap() as u32;
//! assert_eq!((rows.groups[0], rows.indices[0] as u64), (w, hash_name("w=The") % (1 << 20)));
//! ```

use super::hashing::{check_n_buckets, hash_name};
use super::py_str::lower_into;
use super::token_blocks::{share_of_capitals, Block, Emitter, Reduce, SentenceView};
use super::{try_room, SparseBatch};
use crate::error::{OmklError, Result};

/// A set of token templates (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenTemplates {
    blocks: Vec<Block>,
    names: Vec<String>,
    columns: Vec<String>,
    /// First template id and first column of each block.
    offsets: Vec<(u32, usize)>,
    /// `name=` of every template.
    prefixes: Vec<Box<[u8]>>,
    /// The key of every template as a real feature (`hash_name`).
    real_keys: Vec<u64>,
}

/// Buffers reused from one sentence to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    lower: String,
    ends: Vec<usize>,
    buf: Vec<u8>,
    shape: String,
    short: String,
}

impl TokenTemplates {
    /// The templates of `blocks`; an error if there is no block or two
    /// templates share a name.
    pub fn new(blocks: Vec<Block>) -> Result<Self> {
        if blocks.is_empty() {
            return Err(OmklError::invalid("blocks", "expected at least one block"));
        }
        let (mut names, mut columns, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
        for b in &blocks {
            offsets.push((names.len() as u32, columns.len()));
            for name in b.template_names() {
                if names.contains(&name) {
                    return Err(OmklError::invalid(
                        "blocks",
                        format!("block {:?} repeats the template {name:?}", b.to_string()),
                    ));
                }
                names.push(name);
            }
            columns.extend(b.column_names());
        }
        let prefixes = names
            .iter()
            .map(|n| format!("{n}=").into_bytes().into_boxed_slice())
            .collect();
        let real_keys = names.iter().map(|n| hash_name(n)).collect();
        Ok(TokenTemplates {
            blocks,
            names,
            columns,
            offsets,
            prefixes,
            real_keys,
        })
    }

    /// The templates of blocks named as [`Block::from_str`](std::str::FromStr) reads them.
    pub fn parse<S: AsRef<str>>(blocks: &[S]) -> Result<Self> {
        let blocks = blocks
            .iter()
            .map(|b| b.as_ref().parse())
            .collect::<Result<Vec<Block>>>()?;
        Self::new(blocks)
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The template names; a template's id is its index here.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// What each column read by the blocks holds, in the order expected.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The first template id and first column of each block.
    pub fn offsets(&self) -> &[(u32, usize)] {
        &self.offsets
    }

    /// Appends one row per word of the sentence `words` (with its `columns`,
    /// one entry per word each) to `out`, whose groups are template ids.
    /// `out.indptr` must start with 0. An error for an empty sentence or a
    /// column of another length.
    pub fn sentence_into(
        &self,
        words: &[&str],
        columns: &[&[&str]],
        n_buckets: usize,
        scratch: &mut Scratch,
        out: &mut SparseBatch,
    ) -> Result<()> {
        check_n_buckets(n_buckets)?;
        self.rows(words, columns, n_buckets, scratch, out)
    }

    /// [`Self::sentence_into`] of a new batch.
    pub fn sentence(
        &self,
        words: &[&str],
        columns: &[&[&str]],
        n_buckets: usize,
    ) -> Result<SparseBatch> {
        let mut out = SparseBatch {
            indptr: vec![0],
            ..Default::default()
        };
        self.sentence_into(words, columns, n_buckets, &mut Scratch::default(), &mut out)?;
        Ok(out)
    }

    /// The rows of each sentence of `text`, one batch per sentence.
    ///
    /// # Complexity
    /// O(Σ word lengths × templates).
    pub fn batch(&self, text: &Sentences<'_>, n_buckets: usize) -> Result<Vec<SparseBatch>> {
        check_n_buckets(n_buckets)?;
        if text.columns.len() != self.columns.len() {
            return Err(OmklError::shape(
                "columns",
                format!(
                    "{} columns ({})",
                    self.columns.len(),
                    self.columns.join(", ")
                ),
                text.columns.len().to_string(),
            ));
        }
        let mut scratch = Scratch::default();
        let mut cols: Vec<&[&str]> = Vec::with_capacity(self.columns.len());
        let mut out = Vec::new();
        try_room("sentences", &mut out, text.len())?;
        for s in 0..text.len() {
            let r = text.starts[s]..text.starts[s + 1];
            cols.clear();
            cols.extend(text.columns.iter().map(|c| &c[r.clone()]));
            let mut rows = SparseBatch {
                indptr: vec![0],
                ..Default::default()
            };
            self.rows(&text.words[r], &cols, n_buckets, &mut scratch, &mut rows)
                .map_err(|e| OmklError::invalid(format!("sentences[{s}]"), e.to_string()))?;
            out.push(rows);
        }
        Ok(out)
    }

    fn rows(
        &self,
        words: &[&str],
        columns: &[&[&str]],
        n_buckets: usize,
        scratch: &mut Scratch,
        out: &mut SparseBatch,
    ) -> Result<()> {
        let n = words.len();
        if n == 0 {
            return Err(OmklError::empty("words (a sentence of at least one word)"));
        }
        if columns.len() != self.columns.len() {
            return Err(OmklError::shape(
                "columns",
                format!(
                    "{} columns ({})",
                    self.columns.len(),
                    self.columns.join(", ")
                ),
                columns.len().to_string(),
            ));
        }
        if let Some(k) = columns.iter().position(|c| c.len() != n) {
            return Err(OmklError::shape(
                format!("columns[{k}] ({})", self.columns[k]),
                format!("{n} values (one per word)"),
                columns[k].len().to_string(),
            ));
        }
        if out.indptr.is_empty() {
            out.indptr.push(0);
        }
        let Scratch {
            lower,
            ends,
            buf,
            shape,
            short,
        } = scratch;
        lower.clear();
        ends.clear();
        for w in words {
            lower_into(w, lower);
            ends.push(lower.len());
        }
        let mut start = 0;
        let lowers: Vec<&str> = ends
            .iter()
            .map(|&e| {
                let s = &lower[start..e];
                start = e;
                s
            })
            .collect();
        let has_casing = self.blocks.contains(&Block::Casing);
        let view = SentenceView {
            words,
            lowers: &lowers,
            columns,
            share: if has_casing {
                share_of_capitals(words)
            } else {
                "0"
            },
        };
        let per_word = self.names.len();
        try_room("token features", &mut out.groups, n * per_word)?;
        try_room("token features", &mut out.indices, n * per_word)?;
        try_room("token features", &mut out.values, n * per_word)?;
        try_room("token features", &mut out.indptr, n)?;
        let mut sink = Reduce {
            out,
            n_buckets: n_buckets as u64,
        };
        let mut e = Emitter {
            prefixes: &self.prefixes,
            real_keys: &self.real_keys,
            buf: std::mem::take(buf),
            shape: std::mem::take(shape),
            short: std::mem::take(short),
            out: &mut sink,
        };
        for i in 0..n {
            for (b, &(t0, c0)) in self.blocks.iter().zip(&self.offsets) {
                b.emit(t0, c0, i, &view, &mut e);
            }
            let len = e.out.out.groups.len();
            e.out.out.indptr.push(len);
        }
        (*buf, *shape, *short) = (e.buf, e.shape, e.short);
        Ok(())
    }
}

/// Template ids in order of first appearance in `batches` (row by row).
///
/// # Complexity
/// O(entries).
pub fn first_seen(batches: &[SparseBatch], n_templates: usize) -> Vec<u32> {
    let mut seen = vec![false; n_templates];
    let mut order = Vec::new();
    for b in batches {
        for &t in &b.groups {
            if let Some(s) = seen.get_mut(t as usize) {
                if !*s {
                    *s = true;
                    order.push(t);
                }
            }
        }
    }
    order
}

/// Sentences of words with their string columns, flattened: sentence `s`
/// is words `starts[s]..starts[s + 1]`, and so is its part of each column.
#[derive(Debug, Clone, Default)]
pub struct Sentences<'a> {
    starts: Vec<usize>,
    words: Vec<&'a str>,
    columns: Vec<Vec<&'a str>>,
}

impl<'a> Sentences<'a> {
    /// An error unless `starts` rises from 0 to the number of words, every
    /// sentence has a word and every column has one entry per word.
    pub fn new(
        starts: Vec<usize>,
        words: Vec<&'a str>,
        columns: Vec<Vec<&'a str>>,
    ) -> Result<Self> {
        if starts.first() != Some(&0) || starts.last() != Some(&words.len()) {
            return Err(OmklError::invalid(
                "starts",
                format!(
                    "expected offsets from 0 to the number of words ({})",
                    words.len()
                ),
            ));
        }
        if let Some(s) = starts.windows(2).position(|w| w[1] <= w[0]) {
            return Err(OmklError::invalid(
                format!("sentences[{s}]"),
                "expected at least one word",
            ));
        }
        if let Some(k) = columns.iter().position(|c| c.len() != words.len()) {
            return Err(OmklError::shape(
                format!("columns[{k}]"),
                format!("{} values (one per word)", words.len()),
                columns[k].len().to_string(),
            ));
        }
        Ok(Sentences {
            starts,
            words,
            columns,
        })
    }

    /// Number of sentences.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether there is no sentence.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of words.
    pub fn n_words(&self) -> usize {
        self.words.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::chain::indicator_bucket;
    use proptest::prelude::*;

    /// The entries of word `i` as (name, bucket, value), by a slow reference:
    /// the dict of the Python code built with `String`s.
    fn reference(words: &[&str], upos: &[&str], i: usize, nb: usize) -> Vec<(String, u32, f64)> {
        let low: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let n = words.len() as isize;
        let near = |j: isize| -> String {
            if j < 0 {
                "<s>".into()
            } else if j >= n {
                "</s>".into()
            } else {
                low[j as usize].clone()
            }
        };
        let chars: Vec<char> = words[i].chars().collect();
        let pre = |k: usize| chars[..k.min(chars.len())].iter().collect::<String>();
        let suf = |s: &str, k: usize| {
            let c: Vec<char> = s.chars().collect();
            c[c.len().saturating_sub(k)..].iter().collect::<String>()
        };
        let mut d: Vec<(String, String)> = vec![
            ("w".into(), words[i].into()),
            ("lower".into(), low[i].clone()),
        ];
        for k in 1..=4 {
            d.push((format!("p{k}"), pre(k)));
        }
        for k in 1..=4 {
            d.push((format!("s{k}"), suf(words[i], k)));
        }
        let mut out: Vec<(String, u32, f64)> = d
            .into_iter()
            .map(|(k, v)| {
                let b = indicator_bucket(&k, &v, nb);
                (k, b, 1.0)
            })
            .collect();
        let ii = i as isize;
        let mut more = vec![];
        for dd in [-2isize, -1, 1, 2] {
            let o = near(ii + dd);
            more.push((format!("w{dd:+}"), o.clone()));
            more.push((format!("s3{dd:+}"), suf(&o, 3)));
        }
        more.push(("w-1|w".into(), format!("{}|{}", near(ii - 1), low[i])));
        more.push(("w|w+1".into(), format!("{}|{}", low[i], near(ii + 1))));
        more.push(("upos".into(), upos[i].into()));
        more.push((
            "upos-1".into(),
            if i > 0 {
                upos[i - 1].into()
            } else {
                "<s>".into()
            },
        ));
        out.extend(more.into_iter().map(|(k, v)| {
            let b = indicator_bucket(&k, &v, nb);
            (k, b, 1.0)
        }));
        out
    }

    /// The entries of `rows` whose templates `keep` names, as (name, bucket, value).
    fn named(
        t: &TokenTemplates,
        rows: &SparseBatch,
        i: usize,
        keep: &[&str],
    ) -> Vec<(String, u32, f64)> {
        (rows.indptr[i]..rows.indptr[i + 1])
            .map(|j| {
                (
                    t.names()[rows.groups[j] as usize].clone(),
                    rows.indices[j],
                    rows.values[j],
                )
            })
            .filter(|(n, _, _)| keep.contains(&n.as_str()))
            .collect()
    }

    proptest! {
        #[test]
        fn indicators_equal_a_string_reference(
            words in prop::collection::vec("[a-zA-Z0-9\\-ΣσςάéİǅЖ𐌰]{0,7}", 1..6),
            nb in 1usize..5000,
        ) {
            let refs: Vec<&str> = words.iter().map(String::as_str).collect();
            let upos: Vec<String> = (0..refs.len()).map(|i| format!("T{}", i % 3)).collect();
            let upos: Vec<&str> = upos.iter().map(String::as_str).collect();
            let t = TokenTemplates::parse(&["token", "tags:upos"]).unwrap();
            let rows = t.sentence(&refs, &[&upos], nb).unwrap();
            let keep = [
                "w", "lower", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4", "w-2", "s3-2",
                "w-1", "s3-1", "w+1", "s3+1", "w+2", "s3+2", "w-1|w", "w|w+1", "upos", "upos-1",
            ];
            for i in 0..refs.len() {
                prop_assert_eq!(named(&t, &rows, i, &keep), reference(&refs, &upos, i, nb));
            }
        }
    }

    #[test]
    fn flags_are_real_features_and_only_at_the_ends() {
        let t = TokenTemplates::parse(&["token"]).unwrap();
        let nb = 1 << 12;
        let rows = t.sentence(&["New", "York", "2-3"], &[], nb).unwrap();
        let flags = [
            "has_digit",
            "all_digits",
            "has_hyphen",
            "is_title",
            "is_upper",
            "is_lower",
            "BOS",
            "EOS",
        ];
        let got: Vec<Vec<(String, u32, f64)>> =
            (0..3).map(|i| named(&t, &rows, i, &flags)).collect();
        let real = |n: &str, v: f64| (n.to_string(), (hash_name(n) % nb as u64) as u32, v);
        let base = |d, a, h, t| {
            vec![
                real("has_digit", d),
                real("all_digits", a),
                real("has_hyphen", h),
                real("is_title", t),
                real("is_upper", 0.0),
                real("is_lower", 0.0),
            ]
        };
        let mut first = base(0.0, 0.0, 0.0, 1.0);
        first.push(real("BOS", 1.0));
        assert_eq!(got[0], first);
        assert_eq!(got[1], base(0.0, 0.0, 0.0, 1.0));
        let mut last = base(1.0, 0.0, 1.0, 0.0);
        last.push(real("EOS", 1.0));
        assert_eq!(got[2], last);
        assert_eq!(rows.indptr, [0, 29, 57, 86]);
    }

    #[test]
    fn bad_sets_and_sentences_are_refused() {
        assert!(TokenTemplates::parse::<&str>(&[]).is_err());
        let e = TokenTemplates::parse(&["token", "lemma"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"lower\""), "{e}");
        assert!(TokenTemplates::parse(&["tags:a", "classes:a"]).is_err());
        let t = TokenTemplates::parse(&["token", "classes:amb", "casing"]).unwrap();
        assert_eq!(t.columns(), ["amb classes", "casing classes"]);
        assert!(t.sentence(&[], &[&[], &[]], 8).is_err());
        assert!(t.sentence(&["a"], &[&["x"]], 8).is_err());
        let e = t
            .sentence(&["a", "b"], &[&["x", "y"], &["l"]], 8)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("columns[1] (casing classes)") && e.contains("2 values"),
            "{e}"
        );
        assert!(t.sentence(&["a"], &[&["x"], &["l"]], 0).is_err());
        assert!(Sentences::new(vec![0, 0, 1], vec!["a"], vec![]).is_err());
        assert!(Sentences::new(vec![0, 2], vec!["a"], vec![]).is_err());
        assert!(Sentences::new(vec![0, 1], vec!["a"], vec![vec![]]).is_err());
        let text =
            Sentences::new(vec![0, 1, 3], vec!["a", "B", "c"], vec![vec!["x"; 3]; 2]).unwrap();
        let rows = t.batch(&text, 64).unwrap();
        assert_eq!((text.len(), text.n_words(), rows.len()), (2, 3, 2));
        assert_eq!(
            rows[1],
            t.sentence(&["B", "c"], &[&["x", "x"], &["x", "x"]], 64)
                .unwrap()
        );
        let order = first_seen(&rows, t.names().len());
        assert_eq!(order.len(), t.names().len());
        // EOS (template 29) appears on the only word of the first sentence
        assert_eq!(order[28..31], [28, 29, 30]);
    }
}
