//! Token template blocks computed once for several template sets: the
//! entries of one [`Block`] over a sentence, hashed but not yet reduced to
//! buckets ([`HashedRows`]), so that stages which read the same block of
//! the same columns (the word features of the UPOS and XPOS stages, say)
//! hash it once, each stage then reducing the keys to its own buckets and
//! template ids ([`assemble`]).
//!
//! The entries are those of
//! [`TokenTemplates::sentence_into`](super::token_templates::TokenTemplates::sentence_into),
//! in the same order: for each word, the blocks of a set in order, each
//! block's entries in its order.
//!
//! # Complexity
//! [`BlockUnit::rows_into`]: O(Σ word lengths × templates of the block);
//! [`assemble`]: O(entries).
//!
//! # Example
//! ```
//! use omkl_core::features::block_rows::{assemble, BlockUnit, HashedRows};
//! use omkl_core::features::token_templates::TokenTemplates;
//! use omkl_core::features::SparseBatch;
//! let words = ["The", "dog"];
//! let lowers = ["the", "dog"];
//! let t = TokenTemplates::parse(&["token", "tags:upos"]).unwrap();
//! let want = t.sentence(&words, &[&["DET", "NOUN"]], 1 << 16).unwrap();
//! // each block hashed on its own, then reduced with the set's template ids
//! let (token, tags) = (BlockUnit::new("token".parse().unwrap()), BlockUnit::new("tags:upos".parse().unwrap()));
//! let (mut a, mut b) = (HashedRows::default(), HashedRows::default());
//! token.rows_into(&words, &lowers, &[], &mut a);
//! tags.rows_into(&words, &lowers, &[&["DET", "NOUN"]], &mut b);
//! let ids: Vec<Option<u32>> = (0..t.names().len() as u32).map(Some).collect();
//! let mut got = SparseBatch::default();
//! assemble(&[(&a, 0), (&b, 30)], &ids, 1 << 16, &mut got);
//! assert_eq!(got, want);
//! ```

use super::hashing::hash_name;
use super::token_blocks::{share_of_capitals, Block, Emitter, SentenceView, Sink};
use super::SparseBatch;

/// The entries of one block over the words of a sentence: per entry the
/// block's own template index (from 0), the 64-bit key (the hash of
/// `name=value`, or of a flag's name) and the value; word `i`'s entries
/// are `indptr[i]..indptr[i + 1]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HashedRows {
    pub indptr: Vec<usize>,
    pub templates: Vec<u32>,
    pub keys: Vec<u64>,
    pub values: Vec<f64>,
}

impl HashedRows {
    /// Empties the rows, keeping their memory.
    pub fn clear(&mut self) {
        self.indptr.clear();
        self.templates.clear();
        self.keys.clear();
        self.values.clear();
    }

    /// Number of words.
    pub fn n_words(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }
}

impl Sink for HashedRows {
    #[inline]
    fn push(&mut self, t: u32, key: u64, value: f64) {
        self.templates.push(t);
        self.keys.push(key);
        self.values.push(value);
    }
}

/// One block with the names of its templates prepared for hashing.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockUnit {
    block: Block,
    prefixes: Vec<Box<[u8]>>,
    real_keys: Vec<u64>,
}

impl BlockUnit {
    /// The unit of `block`.
    pub fn new(block: Block) -> Self {
        let names = block.template_names();
        BlockUnit {
            prefixes: names
                .iter()
                .map(|n| format!("{n}=").into_bytes().into_boxed_slice())
                .collect(),
            real_keys: names.iter().map(|n| hash_name(n)).collect(),
            block,
        }
    }

    /// The block.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// Number of templates of the block.
    pub fn n_templates(&self) -> usize {
        self.prefixes.len()
    }

    /// Writes into `out` (emptied first) the entries of the block for
    /// every word of the sentence `words`, whose lower-cased forms are
    /// `lowers` (as `str.lower()`), with the block's `columns` (one entry
    /// per word each; their number is the block's).
    ///
    /// # Panics
    /// If `lowers` or a column has another length than `words`, or
    /// `columns` has fewer columns than the block reads.
    pub fn rows_into(
        &self,
        words: &[&str],
        lowers: &[&str],
        columns: &[&[&str]],
        out: &mut HashedRows,
    ) {
        let n = words.len();
        assert!(
            lowers.len() == n && columns.iter().all(|c| c.len() == n),
            "rows_into: one lower-cased form and one entry per column per word"
        );
        assert!(
            columns.len() >= self.block.column_names().len(),
            "rows_into: too few columns"
        );
        out.clear();
        out.indptr.push(0);
        let view = SentenceView {
            words,
            lowers,
            columns,
            share: if self.block == Block::Casing {
                share_of_capitals(words)
            } else {
                "0"
            },
        };
        let mut e = Emitter {
            prefixes: &self.prefixes,
            real_keys: &self.real_keys,
            buf: Vec::new(),
            shape: String::new(),
            short: String::new(),
            out,
        };
        for i in 0..n {
            self.block.emit(0, 0, i, &view, &mut e);
            let len = e.out.templates.len();
            e.out.indptr.push(len);
        }
    }
}

/// The rows of a sentence for one set of templates, from its blocks'
/// [`HashedRows`] (`parts`: each block's rows and its first template id in
/// the set, in the set's order), written into `out` (emptied first): for
/// each word, each part's entries in order, template `t` as group
/// `groups[t]` and its key as bucket `key mod n_buckets`; the entries of a
/// template without a group (`None`, or beyond `groups`) are left out.
/// The same rows as the set's
/// [`TokenTemplates::sentence_into`](super::token_templates::TokenTemplates::sentence_into)
/// followed by `to_group_ids`.
///
/// # Panics
/// If the parts have different numbers of words, or `n_buckets` is 0.
pub fn assemble(
    parts: &[(&HashedRows, u32)],
    groups: &[Option<u32>],
    n_buckets: u64,
    out: &mut SparseBatch,
) {
    let n = parts.first().map_or(0, |(r, _)| r.n_words());
    assert!(
        parts.iter().all(|(r, _)| r.n_words() == n),
        "assemble: parts of different sentences"
    );
    assert!(n_buckets > 0, "assemble: no bucket");
    out.indptr.clear();
    out.groups.clear();
    out.indices.clear();
    out.values.clear();
    out.indptr.push(0);
    let mask = n_buckets.is_power_of_two().then(|| n_buckets - 1);
    for i in 0..n {
        for &(rows, t0) in parts {
            let r = rows.indptr[i]..rows.indptr[i + 1];
            for ((&t, &key), &v) in rows.templates[r.clone()]
                .iter()
                .zip(&rows.keys[r.clone()])
                .zip(&rows.values[r])
            {
                if let Some(Some(g)) = groups.get((t0 + t) as usize) {
                    let b = match mask {
                        Some(m) => key & m,
                        None => key % n_buckets,
                    };
                    out.groups.push(*g);
                    out.indices.push(b as u32);
                    out.values.push(v);
                }
            }
        }
        out.indptr.push(out.groups.len());
    }
}
