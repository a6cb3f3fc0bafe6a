//! The blocks of [`TokenTemplates`](super::token_templates::TokenTemplates):
//! each block emits, for one word of a sentence, the entries of its
//! templates in a fixed order, as the feature dicts of `omkl.tagging` and
//! `omkl.morphology` list their keys.
//!
//! | block | reads | templates |
//! | --- | --- | --- |
//! | `token` | the words | `token_features`: `w`, `lower`, `p1`..`p4`, `s1`..`s4`, `shape`, `short_shape`, six flags, `w±1`, `w±2`, `s3±1`, `s3±2`, `w-1\|w`, `w\|w+1`, `BOS`, `EOS` |
//! | `classes:N` | one column of classes | `N`, `N-1`, `N+1`, `N\|w` (`_add_classes`) |
//! | `tags:N` | one column of tags | `N`, `N-1`, `N+1` (`_add_tags`) |
//! | `casing` | one column of casing classes | `case`, `case\|title\|first`, `share\|title` (`_add_case`) |
//! | `lemma` | UPOS and XPOS columns | `_lemma_features` |
//! | `feats` | UPOS, XPOS and lexicon FEATS columns | `_feats_features` |
//! | `feats_suffixes` | the same | `_feats_features(..., suffixes=True)`: `feats`, then `upos`, `s1`, `s4`, `u\|s1`..`u\|s4` |
//!
//! A string value is the indicator `name=value` (value 1); a flag is the
//! real feature `name` with value 1 or 0 (a false flag is an entry of value
//! 0, as `False` is in a dict). Before the first word a neighbour is `<s>`,
//! after the last `</s>`.

use std::fmt;
use std::str::FromStr;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::hashing::HASH_SEED;
use super::py_str::{
    is_digit_char, is_digit_str, is_lower_str, is_title_str, is_upper_str, prefix, shape_into,
    short_shape_into, suffix,
};
use super::SparseBatch;
use crate::error::{OmklError, Result};

/// One block of templates (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The word's own features (`token_features`).
    Token,
    /// Ambiguity classes named `N` (one column).
    Classes(String),
    /// Another stage's tags named `N` (one column).
    Tags(String),
    /// Casing classes and the share of capitalised words (one column).
    Casing,
    /// The lemma stage's features (UPOS and XPOS columns).
    Lemma,
    /// The FEATS stage's features (UPOS, XPOS and lexicon FEATS columns).
    Feats,
    /// [`Block::Feats`] and the word's UPOS, its suffixes of 1 and 4
    /// characters and each suffix of 1 to 4 characters joined with its
    /// UPOS (an ending tells one thing of a noun, another of a verb).
    FeatsSuffixes,
}

impl FromStr for Block {
    type Err = OmklError;

    /// `token`, `classes:N`, `tags:N`, `casing`, `lemma`, `feats` or
    /// `feats_suffixes`.
    ///
    /// ```
    /// use omkl_core::features::token_blocks::Block;
    /// assert_eq!("tags:xpos".parse::<Block>().unwrap(), Block::Tags("xpos".into()));
    /// assert!("tags:".parse::<Block>().is_err() && "words".parse::<Block>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let named = |name: &str, make: fn(String) -> Block| {
            if name.is_empty() {
                Err(OmklError::invalid(
                    "blocks",
                    format!("{s:?} names no template (expected a name after ':')"),
                ))
            } else {
                Ok(make(name.to_string()))
            }
        };
        match s.split_once(':') {
            None => match s {
                "token" => Ok(Block::Token),
                "casing" => Ok(Block::Casing),
                "lemma" => Ok(Block::Lemma),
                "feats" => Ok(Block::Feats),
                "feats_suffixes" => Ok(Block::FeatsSuffixes),
                _ => Err(OmklError::invalid(
                    "blocks",
                    format!(
                        "unknown block {s:?}; expected 'token', 'classes:NAME', 'tags:NAME', \
                         'casing', 'lemma', 'feats' or 'feats_suffixes'"
                    ),
                )),
            },
            Some(("classes", name)) => named(name, Block::Classes),
            Some(("tags", name)) => named(name, Block::Tags),
            Some(_) => Err(OmklError::invalid(
                "blocks",
                format!("unknown block {s:?}; expected 'classes:NAME' or 'tags:NAME'"),
            )),
        }
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Block::Token => f.write_str("token"),
            Block::Classes(n) => write!(f, "classes:{n}"),
            Block::Tags(n) => write!(f, "tags:{n}"),
            Block::Casing => f.write_str("casing"),
            Block::Lemma => f.write_str("lemma"),
            Block::Feats => f.write_str("feats"),
            Block::FeatsSuffixes => f.write_str("feats_suffixes"),
        }
    }
}

/// `{name}{d:+d}` for each offset.
fn around(name: &str, offsets: &[i32]) -> Vec<String> {
    offsets.iter().map(|d| format!("{name}{d:+}")).collect()
}

impl Block {
    /// The template names of the block, in the order of its entries.
    pub fn template_names(&self) -> Vec<String> {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Block::Token => {
                let mut v = own(&["w", "lower", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4"]);
                v.extend(own(&["shape", "short_shape", "has_digit", "all_digits"]));
                v.extend(own(&["has_hyphen", "is_title", "is_upper", "is_lower"]));
                for d in [-2, -1, 1, 2] {
                    v.extend(around("w", &[d]).into_iter().chain(around("s3", &[d])));
                }
                v.extend(own(&["w-1|w", "w|w+1", "BOS", "EOS"]));
                v
            }
            Block::Classes(n) => {
                let mut v = vec![n.clone()];
                v.extend(around(n, &[-1, 1]));
                v.push(format!("{n}|w"));
                v
            }
            Block::Tags(n) => {
                let mut v = vec![n.clone()];
                v.extend(around(n, &[-1, 1]));
                v
            }
            Block::Casing => own(&["case", "case|title|first", "share|title"]),
            Block::Lemma => {
                let mut v = own(&["lower", "upos", "xpos", "is_title"]);
                v.extend((1..=5).map(|k| format!("s{k}")));
                v.extend((1..=3).map(|k| format!("p{k}")));
                v
            }
            Block::Feats | Block::FeatsSuffixes => {
                let mut v = own(&["lower", "s2", "s3", "xpos", "lex", "lower|xpos"]);
                for d in [-3, -2, -1, 1, 2] {
                    v.extend(around("x", &[d]).into_iter().chain(around("u", &[d])));
                }
                v.extend(around("w", &[-2, -1, 1]));
                v.extend(own(&["x-1|x", "x|x+1"]));
                if *self == Block::FeatsSuffixes {
                    v.extend(own(&["upos", "s1", "s4"]));
                    v.extend((1..=4).map(|k| format!("u|s{k}")));
                }
                v
            }
        }
    }

    /// What each column that the block reads holds.
    pub fn column_names(&self) -> Vec<String> {
        match self {
            Block::Token => vec![],
            Block::Classes(n) => vec![format!("{n} classes")],
            Block::Tags(n) => vec![format!("{n} tags")],
            Block::Casing => vec!["casing classes".into()],
            Block::Lemma => vec!["upos".into(), "xpos".into()],
            Block::Feats | Block::FeatsSuffixes => {
                vec!["upos".into(), "xpos".into(), "lexicon feats".into()]
            }
        }
    }
}

/// Python's `str(bool)`.
fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A sentence as the blocks read it.
pub(crate) struct SentenceView<'a> {
    pub words: &'a [&'a str],
    pub lowers: &'a [&'a str],
    pub columns: &'a [&'a [&'a str]],
    /// `round(4 * capitalised / letters)` of `_add_case`, as a string.
    pub share: &'static str,
}

impl SentenceView<'_> {
    /// The `i`-th entry of `seq`, `<s>` before the start and `</s>` after
    /// the end.
    #[inline]
    fn at<'b>(&self, seq: &'b [&'b str], i: isize) -> &'b str {
        if i < 0 {
            "<s>"
        } else {
            seq.get(i as usize).copied().unwrap_or("</s>")
        }
    }
}

/// The share of capitalised words among the words that start with a
/// letter, in quarters (Python's `round`, half to even), as `_add_case`
/// computes it.
pub(crate) fn share_of_capitals(words: &[&str]) -> &'static str {
    let (mut alpha, mut upper) = (0u64, 0u64);
    for w in words {
        let first = prefix(w, 1);
        if super::py_str::is_alpha_str(first) {
            alpha += 1;
            upper += u64::from(is_upper_str(first));
        }
    }
    let q = (4.0 * upper as f64 / alpha.max(1) as f64).round_ties_even() as usize;
    ["0", "1", "2", "3", "4"][q.min(4)]
}

/// Where an [`Emitter`] writes its entries: template id, 64-bit key (the
/// hash of `name=value`, or of the name of a flag) and value.
pub(crate) trait Sink {
    fn push(&mut self, t: u32, key: u64, value: f64);
}

/// A [`SparseBatch`] whose groups are template ids, each key reduced to
/// its bucket (`key mod n_buckets`).
pub(crate) struct Reduce<'a> {
    pub out: &'a mut SparseBatch,
    pub n_buckets: u64,
}

impl Sink for Reduce<'_> {
    #[inline]
    fn push(&mut self, t: u32, key: u64, value: f64) {
        self.out.groups.push(t);
        self.out.indices.push((key % self.n_buckets) as u32);
        self.out.values.push(value);
    }
}

/// Writes entries into a [`Sink`]: an indicator's key is
/// `xxh3_64("name=value", HASH_SEED)`, with `name=` and the value's pieces
/// written into one reused buffer (no string is built per feature); a
/// flag's key is the hash of its name.
pub(crate) struct Emitter<'a, S: Sink> {
    /// `name=` of every template.
    pub prefixes: &'a [Box<[u8]>],
    /// The key of every template as a real feature (`hash_name`).
    pub real_keys: &'a [u64],
    pub buf: Vec<u8>,
    pub shape: String,
    pub short: String,
    pub out: &'a mut S,
}

impl<S: Sink> Emitter<'_, S> {
    /// The indicator of template `t` whose value is the concatenation of
    /// `parts`.
    #[inline]
    fn ind(&mut self, t: u32, parts: &[&str]) {
        self.buf.clear();
        self.buf.extend_from_slice(&self.prefixes[t as usize]);
        for p in parts {
            self.buf.extend_from_slice(p.as_bytes());
        }
        let key = xxh3_64_with_seed(&self.buf, HASH_SEED);
        self.out.push(t, key, 1.0);
    }

    /// The flag of template `t`.
    #[inline]
    fn flag(&mut self, t: u32, on: bool) {
        let key = self.real_keys[t as usize];
        self.out.push(t, key, if on { 1.0 } else { 0.0 });
    }
}

impl Block {
    /// Emits the entries of word `i` of `s`; the block's templates start at
    /// `t0` and its columns at `c0`.
    pub(crate) fn emit<S: Sink>(
        &self,
        t0: u32,
        c0: usize,
        i: usize,
        s: &SentenceView<'_>,
        e: &mut Emitter<'_, S>,
    ) {
        let n = s.words.len();
        let (w, low) = (s.words[i], s.lowers[i]);
        let ii = i as isize;
        match self {
            Block::Token => {
                e.ind(t0, &[w]);
                e.ind(t0 + 1, &[low]);
                for k in 1..=4u32 {
                    e.ind(t0 + 1 + k, &[prefix(w, k as usize)]);
                }
                for k in 1..=4u32 {
                    e.ind(t0 + 5 + k, &[suffix(w, k as usize)]);
                }
                let (mut shape, mut short) =
                    (std::mem::take(&mut e.shape), std::mem::take(&mut e.short));
                shape.clear();
                short.clear();
                shape_into(w, &mut shape);
                short_shape_into(&shape, &mut short);
                e.ind(t0 + 10, &[&shape]);
                e.ind(t0 + 11, &[&short]);
                (e.shape, e.short) = (shape, short);
                e.flag(t0 + 12, w.chars().any(is_digit_char));
                e.flag(t0 + 13, is_digit_str(w));
                e.flag(t0 + 14, w.contains('-'));
                e.flag(t0 + 15, is_title_str(w));
                e.flag(t0 + 16, is_upper_str(w));
                e.flag(t0 + 17, is_lower_str(w));
                for (k, d) in [-2isize, -1, 1, 2].into_iter().enumerate() {
                    let o = s.at(s.lowers, ii + d);
                    e.ind(t0 + 18 + 2 * k as u32, &[o]);
                    e.ind(t0 + 19 + 2 * k as u32, &[suffix(o, 3)]);
                }
                e.ind(t0 + 26, &[s.at(s.lowers, ii - 1), "|", low]);
                e.ind(t0 + 27, &[low, "|", s.at(s.lowers, ii + 1)]);
                if i == 0 {
                    e.flag(t0 + 28, true);
                }
                if i + 1 == n {
                    e.flag(t0 + 29, true);
                }
            }
            Block::Classes(_) | Block::Tags(_) => {
                let col = s.columns[c0];
                e.ind(t0, &[col[i]]);
                e.ind(t0 + 1, &[s.at(col, ii - 1)]);
                e.ind(t0 + 2, &[s.at(col, ii + 1)]);
                if matches!(self, Block::Classes(_)) {
                    e.ind(t0 + 3, &[col[i], "|", low]);
                }
            }
            Block::Casing => {
                let (c, first) = (s.columns[c0][i], py_bool(i == 0));
                e.ind(t0, &[c]);
                e.ind(t0 + 1, &[c, "|", py_bool(is_title_str(w)), "|", first]);
                let capital = py_bool(is_upper_str(prefix(w, 1)));
                e.ind(t0 + 2, &[s.share, "|", capital, "|", first]);
            }
            Block::Lemma => {
                let (u, x) = (s.columns[c0][i], s.columns[c0 + 1][i]);
                e.ind(t0, &[low]);
                e.ind(t0 + 1, &[u]);
                e.ind(t0 + 2, &[x]);
                e.flag(t0 + 3, is_title_str(w));
                for k in 1..=5u32 {
                    e.ind(t0 + 3 + k, &[x, "|", suffix(low, k as usize)]);
                }
                for k in 1..=3u32 {
                    e.ind(t0 + 8 + k, &[prefix(low, k as usize)]);
                }
            }
            Block::Feats | Block::FeatsSuffixes => {
                let (u, x) = (s.columns[c0], s.columns[c0 + 1]);
                e.ind(t0, &[low]);
                e.ind(t0 + 1, &[suffix(low, 2)]);
                e.ind(t0 + 2, &[suffix(low, 3)]);
                e.ind(t0 + 3, &[x[i]]);
                e.ind(t0 + 4, &[s.columns[c0 + 2][i]]);
                e.ind(t0 + 5, &[low, "|", x[i]]);
                for (k, d) in [-3isize, -2, -1, 1, 2].into_iter().enumerate() {
                    e.ind(t0 + 6 + 2 * k as u32, &[s.at(x, ii + d)]);
                    e.ind(t0 + 7 + 2 * k as u32, &[s.at(u, ii + d)]);
                }
                for (k, d) in [-2isize, -1, 1].into_iter().enumerate() {
                    e.ind(t0 + 16 + k as u32, &[s.at(s.lowers, ii + d)]);
                }
                e.ind(t0 + 19, &[s.at(x, ii - 1), "|", x[i]]);
                e.ind(t0 + 20, &[x[i], "|", s.at(x, ii + 1)]);
                if *self == Block::FeatsSuffixes {
                    e.ind(t0 + 21, &[u[i]]);
                    e.ind(t0 + 22, &[suffix(low, 1)]);
                    e.ind(t0 + 23, &[suffix(low, 4)]);
                    for k in 1..=4u32 {
                        e.ind(t0 + 23 + k, &[u[i], "|", suffix(low, k as usize)]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_columns_follow_the_python_dicts() {
        let token = Block::Token.template_names();
        assert_eq!(token.len(), 30);
        assert_eq!(token[18..22], ["w-2", "s3-2", "w-1", "s3-1"]);
        assert_eq!(token[26..], ["w-1|w", "w|w+1", "BOS", "EOS"]);
        let amb = Block::Classes("amb".into()).template_names();
        assert_eq!(amb, ["amb", "amb-1", "amb+1", "amb|w"]);
        assert_eq!(
            Block::Tags("x".into()).template_names(),
            ["x", "x-1", "x+1"]
        );
        assert_eq!(Block::Lemma.template_names().len(), 12);
        let feats = Block::Feats.template_names();
        assert_eq!(feats.len(), 21);
        assert_eq!(feats[6..10], ["x-3", "u-3", "x-2", "u-2"]);
        assert_eq!(feats[16..19], ["w-2", "w-1", "w+1"]);
        assert_eq!(Block::Feats.column_names().len(), 3);
        let more = Block::FeatsSuffixes.template_names();
        assert_eq!(more[..21], feats[..]);
        assert_eq!(
            more[21..],
            ["upos", "s1", "s4", "u|s1", "u|s2", "u|s3", "u|s4"]
        );
        assert_eq!(
            Block::FeatsSuffixes.column_names(),
            Block::Feats.column_names()
        );
        for s in [
            "token",
            "classes:amb",
            "tags:upos",
            "casing",
            "lemma",
            "feats",
            "feats_suffixes",
        ] {
            assert_eq!(s.parse::<Block>().unwrap().to_string(), s);
        }
        for s in ["", "classes", "tags:", "case", "foo:bar"] {
            assert!(s.parse::<Block>().is_err(), "{s}");
        }
    }

    #[test]
    fn share_rounds_half_to_even() {
        // 1 of 2 capitalised: round(2.0) = 2; 1 of 8: round(0.5) = 0;
        // 3 of 8: round(1.5) = 2; 5 of 8: round(2.5) = 2; no letter: 0
        assert_eq!(share_of_capitals(&["A", "b", "1"]), "2");
        let eight =
            |k: usize| -> Vec<&str> { (0..8).map(|i| if i < k { "A" } else { "a" }).collect() };
        assert_eq!(share_of_capitals(&eight(1)), "0");
        assert_eq!(share_of_capitals(&eight(3)), "2");
        assert_eq!(share_of_capitals(&eight(5)), "2");
        assert_eq!(share_of_capitals(&eight(8)), "4");
        assert_eq!(share_of_capitals(&["1", "-"]), "0");
        assert_eq!(share_of_capitals(&["Σ", "ǅa", "é"]), "1");
    }
}
