//! The arc feature templates themselves: atoms (a word position and an
//! attribute), the optional multi-valued part, the conjunction with direction
//! and distance, each template's table size and side, and the
//! [`default_templates`] set.
//!
//! # Example
//! ```
//! use omkl_core::features::arc_template::{default_templates, Side};
//! let t = default_templates();
//! assert!(t.len() >= 300);
//! assert!(t.iter().any(|t| t.side() == Side::Pair));
//! ```

use crate::features::arc_distance::{distance_bin, fine_distance_bin, FINE_BINS};

/// Which word an atom looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    H,
    M,
    HPrev,
    HNext,
    MPrev,
    MNext,
}

impl Pos {
    pub(crate) fn is_head_side(self) -> bool {
        matches!(self, Pos::H | Pos::HPrev | Pos::HNext)
    }
    pub(crate) fn offset(self) -> isize {
        match self {
            Pos::H | Pos::M => 0,
            Pos::HPrev | Pos::MPrev => -1,
            Pos::HNext | Pos::MNext => 1,
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Pos::H => "h",
            Pos::M => "m",
            Pos::HPrev => "h-1",
            Pos::HNext => "h+1",
            Pos::MPrev => "m-1",
            Pos::MNext => "m+1",
        }
    }
}

/// What an atom reads from its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attr {
    Form,
    Lemma,
    Upos,
    Xpos,
    FormUpos,
    LemmaUpos,
    FormXpos,
    LemmaXpos,
    /// The first 5 characters of the lowercased form (McDonald et al. 2005).
    Prefix5,
    /// The last 3 characters of the lowercased form.
    Suffix3,
}

pub(crate) const N_ATTR: usize = 10;

impl Attr {
    pub(crate) fn index(self) -> usize {
        self as usize
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Attr::Form => "form",
            Attr::Lemma => "lemma",
            Attr::Upos => "upos",
            Attr::Xpos => "xpos",
            Attr::FormUpos => "form+upos",
            Attr::LemmaUpos => "lemma+upos",
            Attr::FormXpos => "form+xpos",
            Attr::LemmaXpos => "lemma+xpos",
            Attr::Prefix5 => "pre5",
            Attr::Suffix3 => "suf3",
        }
    }
    /// log2 of a generous estimate of the number of distinct values.
    pub(crate) fn bits(self) -> u32 {
        match self {
            Attr::Form | Attr::FormUpos | Attr::FormXpos => 15,
            Attr::Lemma | Attr::LemmaUpos | Attr::LemmaXpos => 14,
            Attr::Prefix5 => 13,
            Attr::Suffix3 => 11,
            Attr::Upos => 5,
            Attr::Xpos => 6,
        }
    }
    pub(crate) fn is_lexical(self) -> bool {
        !matches!(self, Attr::Upos | Attr::Xpos)
    }
}

/// The multi-valued part of a template, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Multi {
    None,
    /// Each morphological feature `Name=Value` of the head.
    FeatsH,
    /// Each morphological feature of the modifier.
    FeatsM,
    /// The UPOS of each word strictly between head and modifier.
    BetweenUpos,
    /// The XPOS of each word strictly between head and modifier.
    BetweenXpos,
    /// One feature per arc: the numbers of verbs (capped at 3), punctuation
    /// marks (capped at 3) and coordinating conjunctions (capped at 2)
    /// strictly between head and modifier.
    BetweenCounts,
}

/// Conjunction with direction and distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conj {
    None,
    Dir,
    DirDist,
    /// Direction and the finer distance of [`fine_distance_bin`].
    DirFineDist,
}

/// One feature template (one group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Human-readable name, e.g. `h.upos|m.form|dir+dist`.
    pub name: String,
    /// Head-side atoms first, then modifier-side atoms.
    pub atoms: Vec<(Pos, Attr)>,
    pub multi: Multi,
    pub conj: Conj,
    /// The template's table has `2^bits` slots.
    pub bits: u32,
}

/// Cap on a table's size (`2^MAX_BITS` slots).
pub const MAX_BITS: u32 = 18;
/// Floor on a table's size.
pub const MIN_BITS: u32 = 8;

impl Template {
    /// Builds a template; its table size follows the product of its atoms'
    /// cardinalities, clamped to `[2^MIN_BITS, 2^MAX_BITS]` (lexical pairs
    /// get the cap, templates without words at most `2^16`).
    pub fn new(atoms: &[(Pos, Attr)], multi: Multi, conj: Conj) -> Self {
        let mut atoms = atoms.to_vec();
        atoms.sort_by_key(|(p, _)| !p.is_head_side());
        let mut bits: u32 = atoms.iter().map(|(_, a)| a.bits()).sum();
        bits += match multi {
            Multi::None => 0,
            Multi::FeatsH | Multi::FeatsM => 7,
            Multi::BetweenUpos => 5,
            Multi::BetweenXpos => 6,
            Multi::BetweenCounts => 6,
        };
        bits += match conj {
            Conj::None => 0,
            Conj::Dir => 1,
            Conj::DirDist => 4,
            Conj::DirFineDist => 6,
        };
        let lexical = atoms.iter().filter(|(_, a)| a.is_lexical()).count();
        let cap = match lexical {
            0 => 16,
            1 => 17,
            _ => MAX_BITS,
        };
        let bits = (bits + 1).clamp(MIN_BITS, cap);
        let mut parts: Vec<String> = atoms
            .iter()
            .map(|(p, a)| format!("{}.{}", p.name(), a.name()))
            .collect();
        match multi {
            Multi::None => {}
            Multi::FeatsH => parts.push("h.feat".into()),
            Multi::FeatsM => parts.push("m.feat".into()),
            Multi::BetweenUpos => parts.push("b.upos".into()),
            Multi::BetweenXpos => parts.push("b.xpos".into()),
            Multi::BetweenCounts => parts.push("b.counts".into()),
        }
        match conj {
            Conj::None => {}
            Conj::Dir => parts.push("dir".into()),
            Conj::DirDist => parts.push("dir+dist".into()),
            Conj::DirFineDist => parts.push("dir+fdist".into()),
        }
        Template {
            name: parts.join("|"),
            atoms,
            multi,
            conj,
            bits,
        }
    }

    /// Whether the template has exactly one feature per arc (no
    /// multi-valued part, or the single between-counts feature).
    pub fn is_single(&self) -> bool {
        matches!(self.multi, Multi::None | Multi::BetweenCounts)
    }

    /// Whether the template can never be updated: a modifier-only template
    /// without direction or distance has the same features for every head
    /// of a word, so they cancel between any two trees (each word has one
    /// head in both) and its weights stay zero; scoring skips it.
    pub fn is_inert(&self) -> bool {
        self.side() == Side::Modifier && self.conj == Conj::None
    }

    /// Number of slots of the template's table.
    pub fn table_size(&self) -> usize {
        1usize << self.bits
    }

    /// Which words the template's features depend on (besides the
    /// direction and distance of its conjunction).
    pub fn side(&self) -> Side {
        let head = self.atoms.iter().all(|(p, _)| p.is_head_side());
        let modifier = self.atoms.iter().all(|(p, _)| !p.is_head_side());
        match self.multi {
            Multi::None | Multi::FeatsH if head => Side::Head,
            Multi::None | Multi::FeatsM if modifier => Side::Modifier,
            _ => Side::Pair,
        }
    }

    /// The part of the arc `h -> m` that the conjunction reads, as a code
    /// in `0..CONJ_CODES`: the features of a [`Side::Head`] template are a
    /// function of `(h, conj_code(h, m))`, those of a [`Side::Modifier`]
    /// template of `(m, conj_code(h, m))`.
    #[inline(always)]
    pub fn conj_code(&self, h: usize, m: usize) -> usize {
        match self.conj {
            Conj::None => 0,
            Conj::Dir => (h < m) as usize,
            Conj::DirDist => (h < m) as usize * 8 + distance_bin(h, m) as usize,
            Conj::DirFineDist => {
                16 + (h < m) as usize * FINE_BINS + fine_distance_bin(h, m) as usize
            }
        }
    }
}

/// Number of distinct values of [`Template::conj_code`].
pub const CONJ_CODES: usize = 16 + 2 * FINE_BINS;

/// What the features of a template depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Only the head (and its neighbours and morphology).
    Head,
    /// Only the modifier (and its neighbours and morphology).
    Modifier,
    /// Both words, or the words between them.
    Pair,
}

/// The default template set, 346 templates: the 104 original base
/// templates, each with no conjunction, direction, and direction + binned
/// distance (indices `0..312`), then 9 base templates of word shapes and
/// between-word counts in the same 3 conjunctions (`312..339`), then 7
/// templates conjoined with direction and the finer distance of
/// [`fine_distance_bin`] (`339..346`). The 16 modifier-only templates
/// without conjunction are inert ([`Template::is_inert`]), so 330 templates
/// can carry weight.
pub fn default_templates() -> Vec<Template> {
    use Attr::*;
    use Pos::*;
    let mut base: Vec<(Vec<(Pos, Attr)>, Multi)> = Vec::new();
    let side_attrs = [
        Form, Lemma, Upos, Xpos, FormUpos, LemmaUpos, FormXpos, LemmaXpos,
    ];
    // Unigram: one side alone (8 + 2 per side).
    for side in [H, M] {
        for a in side_attrs {
            base.push((vec![(side, a)], Multi::None));
        }
        let feats = if side == H {
            Multi::FeatsH
        } else {
            Multi::FeatsM
        };
        base.push((vec![], feats));
        base.push((vec![(side, Upos)], feats));
    }
    // Bigram: head attribute x modifier attribute (36 + 4).
    let pair_attrs = [Form, Lemma, Upos, Xpos, FormUpos, LemmaUpos];
    for a in pair_attrs {
        for b in pair_attrs {
            base.push((vec![(H, a), (M, b)], Multi::None));
        }
    }
    base.push((vec![(M, Upos)], Multi::FeatsH));
    base.push((vec![(H, Upos)], Multi::FeatsM));
    base.push((vec![(M, Lemma)], Multi::FeatsH));
    base.push((vec![(H, Lemma)], Multi::FeatsM));
    // Surrounding tags: h and m with every subset of {h-1, h+1, m-1, m+1}
    // (15 per tag set), and each side with its own neighbours (6 per tag set).
    for tag in [Upos, Xpos] {
        for mask in 1u32..16 {
            let mut atoms = vec![(H, tag), (M, tag)];
            for (bit, p) in [HPrev, HNext, MPrev, MNext].into_iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    atoms.push((p, tag));
                }
            }
            base.push((atoms, Multi::None));
        }
        for (c, s, n) in [(H, HPrev, HNext), (M, MPrev, MNext)] {
            base.push((vec![(s, tag), (c, tag)], Multi::None));
            base.push((vec![(c, tag), (n, tag)], Multi::None));
            base.push((vec![(s, tag), (c, tag), (n, tag)], Multi::None));
        }
        // Between: (tag h, tag b, tag m).
        let between = if tag == Upos {
            Multi::BetweenUpos
        } else {
            Multi::BetweenXpos
        };
        base.push((vec![(H, tag), (M, tag)], between));
    }
    let mut out = Vec::with_capacity(base.len() * 6 + 8);
    for conj in [Conj::None, Conj::Dir, Conj::DirDist] {
        for (atoms, multi) in &base {
            out.push(Template::new(atoms, *multi, conj));
        }
    }
    // Word shapes (McDonald et al. 2005): 5-character prefixes and
    // 3-character suffixes of forms, alone on the head and with the other
    // word's tag.
    base.clear();
    base.push((vec![(H, Prefix5)], Multi::None));
    base.push((vec![(H, Suffix3)], Multi::None));
    base.push((vec![(H, Prefix5), (M, Prefix5)], Multi::None));
    base.push((vec![(H, Prefix5), (M, Upos)], Multi::None));
    base.push((vec![(H, Upos), (M, Prefix5)], Multi::None));
    base.push((vec![(H, Suffix3), (M, Upos)], Multi::None));
    base.push((vec![(H, Upos), (M, Suffix3)], Multi::None));
    // Counts of verbs, punctuation and conjunctions in between.
    base.push((vec![(H, Upos), (M, Upos)], Multi::BetweenCounts));
    base.push((vec![(H, Xpos), (M, Xpos)], Multi::BetweenCounts));
    for conj in [Conj::None, Conj::Dir, Conj::DirDist] {
        for (atoms, multi) in &base {
            out.push(Template::new(atoms, *multi, conj));
        }
    }
    // Finer distance (exact up to 15) on the tag pairs and the tag of each
    // side alone.
    for (atoms, multi) in [
        (vec![(H, Upos)], Multi::None),
        (vec![(M, Upos)], Multi::None),
        (vec![(H, Upos), (M, Upos)], Multi::None),
        (vec![(H, Xpos), (M, Xpos)], Multi::None),
        (vec![(H, Upos), (M, Upos)], Multi::BetweenCounts),
        (vec![(H, Lemma), (M, Upos)], Multi::None),
        (vec![(H, Upos), (M, Lemma)], Multi::None),
    ] {
        out.push(Template::new(&atoms, multi, Conj::DirFineDist));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_300_distinct_templates() {
        let t = default_templates();
        assert!(t.len() >= 300, "{}", t.len());
        let mut names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), t.len());
        assert!(t.iter().all(|t| (MIN_BITS..=MAX_BITS).contains(&t.bits)));
    }
}
