//! The hashed atoms of one word (form, lemma, tags, their pairs, prefix and
//! suffix, morphological features and coarse class).
//!
//! # Example
//! ```
//! use omkl_core::features::word_atoms::WordAtoms;
//! let a = WordAtoms::new("Dogs", "dog", "NOUN", "NNS", "Number=Plur");
//! assert_eq!(a, WordAtoms::new("Dogs", "dog", "NOUN", "NNS", "Number=Plur"));
//! ```

use crate::features::arc_hash::{hash_str, mix};
use crate::features::arc_template::N_ATTR;

/// The hashed atoms of one word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordAtoms {
    pub(crate) attrs: [u64; N_ATTR],
    pub(crate) feats: Vec<u64>,
    /// [`IS_VERB`], [`IS_PUNCT`], [`IS_CCONJ`] flags.
    pub(crate) class: u8,
}

impl WordAtoms {
    /// Hashes the columns of one word; `feats` is `_` or `A=B|C=D`.
    pub fn new(form: &str, lemma: &str, upos: &str, xpos: &str, feats: &str) -> Self {
        let tag = |prefix: u64, s: &str| mix(prefix, hash_str(s));
        let f = tag(1, form);
        let l = tag(2, lemma);
        let u = tag(3, upos);
        let x = tag(4, xpos);
        let feats = if feats.is_empty() || feats == "_" {
            Vec::new()
        } else {
            feats.split('|').map(|v| tag(5, v)).collect()
        };
        let lower = form.to_lowercase();
        let chars: Vec<char> = lower.chars().collect();
        let pre: String = chars.iter().take(5).collect();
        let suf: String = chars[chars.len().saturating_sub(3)..].iter().collect();
        let class = match upos {
            "VERB" | "AUX" => IS_VERB,
            "PUNCT" => IS_PUNCT,
            "CCONJ" => IS_CCONJ,
            _ => 0,
        };
        WordAtoms {
            attrs: [
                f,
                l,
                u,
                x,
                mix(f, u),
                mix(l, u),
                mix(f, x),
                mix(l, x),
                tag(7, &pre),
                tag(8, &suf),
            ],
            feats,
            class,
        }
    }

    /// Atoms of a pseudo-word (root, sentence start or end).
    pub(crate) fn special(name: &str) -> Self {
        let h = mix(6, hash_str(name));
        WordAtoms {
            attrs: [h; N_ATTR],
            feats: Vec::new(),
            class: 0,
        }
    }
}

/// Bit flags of a word's coarse class, for [`Multi::BetweenCounts`].
pub(crate) const IS_VERB: u8 = 1;
pub(crate) const IS_PUNCT: u8 = 2;
pub(crate) const IS_CCONJ: u8 = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::arc_distance::{fine_distance_bin, FINE_BINS};
    use crate::features::arc_template::Attr;

    #[test]
    fn fine_distance_is_exact_up_to_15_then_binned() {
        for d in 1..16 {
            assert_eq!(fine_distance_bin(0, d), d as u64);
            assert_eq!(fine_distance_bin(d + 3, 3), d as u64);
        }
        let bins: Vec<u64> = [16, 19, 20, 24, 25, 34, 35, 500]
            .iter()
            .map(|&d| fine_distance_bin(d, 0))
            .collect();
        assert_eq!(bins, [16, 16, 17, 17, 18, 18, 19, 19]);
        assert!(bins.iter().all(|&b| (b as usize) < FINE_BINS));
        // prefixes and suffixes are of the lowercased form
        let a = WordAtoms::new("Running", "run", "VERB", "VBG", "_");
        let b = WordAtoms::new("runnings", "run", "NOUN", "NNS", "_");
        let c = WordAtoms::new("go", "go", "VERB", "VB", "_");
        assert_eq!(
            a.attrs[Attr::Prefix5.index()],
            b.attrs[Attr::Prefix5.index()]
        );
        assert_ne!(
            a.attrs[Attr::Suffix3.index()],
            b.attrs[Attr::Suffix3.index()]
        );
        assert_ne!(
            a.attrs[Attr::Prefix5.index()],
            c.attrs[Attr::Prefix5.index()]
        );
        let d = WordAtoms::new("SING", "sing", "VERB", "VB", "_");
        assert_eq!(
            a.attrs[Attr::Suffix3.index()],
            d.attrs[Attr::Suffix3.index()]
        );
    }
}
