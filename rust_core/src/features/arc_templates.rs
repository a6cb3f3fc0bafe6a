//! Arc-factored feature templates for dependency parsing, in the style of
//! McDonald, Crammer and Pereira (2005).
//!
//! A template is a conjunction of *atoms* (the form, lemma, UPOS, XPOS or a
//! form/lemma+tag pair of the head `h`, the modifier `m` or their neighbours
//! `h±1`, `m±1`), optionally one *multi-valued* part (each morphological
//! feature of `h` or `m`, or the tag of each word strictly between them), and
//! a *conjunction* with the attachment direction and the binned distance
//! (none, direction, or direction + distance). Every base template is used in
//! all three conjunctions, so the default set has well over 300 templates;
//! each template is one group for multiple kernel learning.
//!
//! # Hashing
//! Strings are hashed with xxh3-64 and the fixed seed [`HASH_SEED`]; atoms are
//! combined with a fixed 64-bit mixer ([`mix`]). Both are deterministic across
//! processes, machines and versions. A feature of template `t` indexes only
//! `t`'s own table (the top `bits_t` bits of its key), so hash collisions
//! never mix templates.
//!
//! # Complexity
//! [`ArcFeaturizer::new`] is `O(T n)` for `T` templates and `n` words; the
//! features of one arc cost `O(T)` plus `O(|h - m|)` for the between-word
//! templates.
//!
//! # Example
//! ```
//! use omkl_core::features::arc_templates::{default_templates, ArcFeaturizer, WordAtoms};
//! let templates = default_templates();
//! assert!(templates.len() >= 300);
//! let words = vec![WordAtoms::new("Dogs", "dog", "NOUN", "NNS", "Number=Plur"),
//!                  WordAtoms::new("bark", "bark", "VERB", "VBP", "_")];
//! let fz = ArcFeaturizer::new(&templates, &words);
//! let mut count = 0;
//! fz.for_each_feature(2, 1, |_t, _slot| count += 1);
//! // no morphology on the head and no word in between: 18 templates are silent
//! assert_eq!(count, templates.len() - 18);
//! ```

use crate::error::{try_vec, Result};
pub use crate::features::arc_distance::{distance_bin, fine_distance_bin, FINE_BINS};
pub use crate::features::arc_hash::{hash_str, mix, HASH_NAME, HASH_SEED};
use crate::features::arc_template::N_ATTR;
pub use crate::features::arc_template::{
    default_templates, Attr, Conj, Multi, Pos, Side, Template, CONJ_CODES, MAX_BITS, MIN_BITS,
};
use crate::features::batch_hash::{gather_mix, mix_into, shift_into};
use crate::features::try_room;
pub use crate::features::word_atoms::WordAtoms;
use crate::features::word_atoms::{IS_CCONJ, IS_PUNCT, IS_VERB};

/// Per-sentence feature extractor: the head-side and modifier-side hashes of
/// every template are computed once, each arc combines them.
pub struct ArcFeaturizer<'a> {
    templates: &'a [Template],
    /// Words 0..=n with the root at 0.
    words: Vec<WordAtoms>,
    n1: usize,
    /// `hpart[t * n1 + h]`, `mpart[t * n1 + m]`.
    hpart: Vec<u64>,
    mpart: Vec<u64>,
    /// `counts[i]`: verbs, punctuation marks and conjunctions among words
    /// `0..i` (prefix sums).
    counts: Vec<[u16; 3]>,
}

impl<'a> ArcFeaturizer<'a> {
    /// `words` are the sentence's words without the root.
    pub fn new(templates: &'a [Template], words: &[WordAtoms]) -> Self {
        let mut all = Vec::with_capacity(words.len() + 1);
        all.push(WordAtoms::special("<root>"));
        all.extend_from_slice(words);
        let n1 = all.len();
        let bos = WordAtoms::special("<s>");
        let eos = WordAtoms::special("</s>");
        // column of each attribute over positions -1..=n1 (sentence start,
        // the root and the words, sentence end), so an atom at offset
        // -1, 0 or +1 reads a contiguous slice
        let w = n1 + 2;
        let mut cols = vec![0u64; N_ATTR * w];
        for a in 0..N_ATTR {
            let col = &mut cols[a * w..(a + 1) * w];
            col[0] = bos.attrs[a];
            for (c, word) in col[1..=n1].iter_mut().zip(&all) {
                *c = word.attrs[a];
            }
            col[n1 + 1] = eos.attrs[a];
        }
        let mut hpart = vec![0u64; templates.len() * n1];
        let mut mpart = vec![0u64; templates.len() * n1];
        for (t, tpl) in templates.iter().enumerate() {
            let hp = &mut hpart[t * n1..(t + 1) * n1];
            let mp = &mut mpart[t * n1..(t + 1) * n1];
            hp.fill(mix(0x7e3a_11b5, t as u64 + 1));
            mp.fill(0x51ed_270b_u64);
            for &(p, a) in &tpl.atoms {
                let start = (a.index() * w) as isize + 1 + p.offset();
                let src = &cols[start as usize..start as usize + n1];
                mix_into(if p.is_head_side() { &mut *hp } else { &mut *mp }, src);
            }
        }
        let mut counts = Vec::with_capacity(n1 + 1);
        let mut c = [0u16; 3];
        counts.push(c);
        for w in &all {
            for (j, flag) in [IS_VERB, IS_PUNCT, IS_CCONJ].into_iter().enumerate() {
                c[j] = c[j].saturating_add(u16::from(w.class & flag != 0));
            }
            counts.push(c);
        }
        ArcFeaturizer {
            templates,
            words: all,
            n1,
            hpart,
            mpart,
            counts,
        }
    }

    /// Number of words including the root.
    pub fn len_with_root(&self) -> usize {
        self.n1
    }

    /// Appends to `out` the slot of every arc of `batch` for template `t`,
    /// which must have one feature per arc ([`Template::is_single`]); equal
    /// to [`ArcFeaturizer::template_features`] arc by arc, computed in
    /// batches (`keys` is scratch space). Errors with [`OmklError::Alloc`](crate::error::OmklError::Alloc)
    /// if `keys` or `out` cannot grow.
    ///
    /// # Panics
    /// If the template has several features per arc.
    pub fn single_slots(
        &self,
        t: usize,
        batch: &ArcBatch,
        keys: &mut Vec<u64>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let tpl = &self.templates[t];
        assert!(
            tpl.is_single(),
            "single_slots: template {t} has several features per arc"
        );
        let n1 = self.n1;
        let a = batch.ah.len();
        keys.clear();
        try_room("arc features", keys, a)?;
        keys.resize(a, 0);
        gather_mix(
            &self.hpart[t * n1..(t + 1) * n1],
            &self.mpart[t * n1..(t + 1) * n1],
            &batch.ah,
            &batch.am,
            keys,
        );
        match tpl.conj {
            Conj::None => {}
            Conj::Dir => mix_into(keys, &batch.dir),
            Conj::DirDist => mix_into(keys, &batch.dir_dist),
            Conj::DirFineDist => mix_into(keys, &batch.dir_fine),
        }
        if tpl.multi == Multi::BetweenCounts {
            mix_into(keys, &batch.counts);
        }
        let start = out.len();
        try_room("arc slot lists", out, a)?;
        out.resize(start + a, 0);
        shift_into(keys, 64 - tpl.bits, &mut out[start..]);
        Ok(())
    }

    /// The per-arc values that [`ArcFeaturizer::single_slots`] mixes in, or
    /// [`OmklError::Alloc`](crate::error::OmklError::Alloc) if they do not fit in memory.
    pub fn batch(&self, arcs: &[(u32, u32)]) -> Result<ArcBatch> {
        let dir = |h: usize, m: usize| (h < m) as u64 + 1;
        let a = arcs.len();
        let what = "arc features";
        let mut b = ArcBatch {
            ah: try_vec(what, &[a], 0)?,
            am: try_vec(what, &[a], 0)?,
            dir: try_vec(what, &[a], 0)?,
            dir_dist: try_vec(what, &[a], 0)?,
            dir_fine: try_vec(what, &[a], 0)?,
            counts: try_vec(what, &[a], 0)?,
        };
        for (i, &(h, m)) in arcs.iter().enumerate() {
            let (h, m) = (h as usize, m as usize);
            assert!(
                h < self.n1 && m < self.n1,
                "batch: arc {h} -> {m} out of range"
            );
            b.ah[i] = h as u32;
            b.am[i] = m as u32;
            b.dir[i] = dir(h, m);
            b.dir_dist[i] = dir(h, m) * 16 + distance_bin(h, m);
            b.dir_fine[i] = dir(h, m) * 64 + fine_distance_bin(h, m);
            b.counts[i] = self.between_counts(h, m);
        }
        Ok(b)
    }

    #[inline(always)]
    fn between_counts(&self, h: usize, m: usize) -> u64 {
        let (lo, hi) = if h < m { (h, m) } else { (m, h) };
        // words strictly between: lo + 1 .. hi
        let (a, b) = (self.counts[lo + 1], self.counts[hi]);
        let verbs = (b[0] - a[0]).min(3) as u64;
        let punct = (b[1] - a[1]).min(3) as u64;
        let cconj = (b[2] - a[2]).min(2) as u64;
        1 + verbs * 16 + punct * 4 + cconj
    }

    /// Calls `f(template, slot)` for every feature of the arc `h -> m`
    /// (`slot < 2^bits` of that template). `h` may be 0 (root); `m >= 1`.
    #[inline]
    pub fn for_each_feature(&self, h: usize, m: usize, mut f: impl FnMut(usize, usize)) {
        for t in 0..self.templates.len() {
            self.template_features(t, h, m, |slot| f(t, slot));
        }
    }

    /// Calls `f(slot)` for every feature of template `t` on the arc `h -> m`.
    /// Scoring template by template keeps one table hot in cache.
    #[inline(always)]
    pub fn template_features(&self, t: usize, h: usize, m: usize, mut f: impl FnMut(usize)) {
        let shift = 64 - self.templates[t].bits;
        self.template_keys(t, h, m, |k| f((k >> shift) as usize));
    }

    /// Calls `f(key)` with the full 64-bit key of every feature of template
    /// `t` on the arc `h -> m` (the slot is the top `bits` bits of the key).
    #[inline(always)]
    pub fn template_keys(&self, t: usize, h: usize, m: usize, mut f: impl FnMut(u64)) {
        let tpl = &self.templates[t];
        let n1 = self.n1;
        let mut k = mix(self.hpart[t * n1 + h], self.mpart[t * n1 + m]);
        k = match tpl.conj {
            Conj::None => k,
            Conj::Dir => mix(k, (h < m) as u64 + 1),
            Conj::DirDist => mix(k, ((h < m) as u64 + 1) * 16 + distance_bin(h, m)),
            Conj::DirFineDist => mix(k, ((h < m) as u64 + 1) * 64 + fine_distance_bin(h, m)),
        };
        match tpl.multi {
            Multi::None => f(k),
            Multi::FeatsH | Multi::FeatsM => {
                let w = if tpl.multi == Multi::FeatsH { h } else { m };
                for &v in &self.words[w].feats {
                    f(mix(k, v));
                }
            }
            Multi::BetweenUpos | Multi::BetweenXpos => {
                let a = if tpl.multi == Multi::BetweenUpos {
                    Attr::Upos
                } else {
                    Attr::Xpos
                };
                let (lo, hi) = if h < m { (h, m) } else { (m, h) };
                for b in lo + 1..hi {
                    f(mix(k, self.words[b].attrs[a.index()]));
                }
            }
            Multi::BetweenCounts => f(mix(k, self.between_counts(h, m))),
        }
    }
}

/// Per-arc columns of a list of arcs for [`ArcFeaturizer::single_slots`]:
/// heads, modifiers, and the values mixed in by each conjunction and by
/// the between-words counts.
#[derive(Debug, Clone, Default)]
pub struct ArcBatch {
    pub ah: Vec<u32>,
    pub am: Vec<u32>,
    dir: Vec<u64>,
    dir_dist: Vec<u64>,
    dir_fine: Vec<u64>,
    counts: Vec<u64>,
}

/// Table sizes (log2 of the slots) fitted to observed feature counts: for
/// each template, the smallest power of two of at least `slots_per_feature`
/// times the number of distinct features on the gold arcs of `sentences`,
/// clamped to `[MIN_BITS, max_bits]`.
///
/// # Complexity
/// `O(T A log A)` for `A` gold arcs, `O(A)` memory per template (templates
/// are counted one at a time).
pub fn fitted_bits(
    templates: &[Template],
    sentences: &[(&[WordAtoms], &[usize])],
    slots_per_feature: f64,
    max_bits: u32,
) -> Vec<u32> {
    distinct_keys(templates, sentences)
        .into_iter()
        .map(|n| bits_for(n, slots_per_feature, max_bits))
        .collect()
}

/// The number of distinct features of each template on the gold arcs of
/// `sentences` (see [`fitted_bits`]).
pub fn distinct_keys(templates: &[Template], sentences: &[(&[WordAtoms], &[usize])]) -> Vec<usize> {
    use rayon::prelude::*;
    (0..templates.len())
        .into_par_iter()
        .map(|t| {
            let one = std::slice::from_ref(&templates[t]);
            let mut keys: Vec<u64> = Vec::new();
            for &(words, heads) in sentences {
                let fz = ArcFeaturizer::new(one, words);
                for (i, &h) in heads.iter().enumerate() {
                    fz.template_keys(0, h, i + 1, |k| keys.push(k));
                }
            }
            keys.sort_unstable();
            keys.dedup();
            keys.len()
        })
        .collect()
}

/// Log2 of the table size for `n` distinct features (see [`fitted_bits`]).
pub fn bits_for(n: usize, slots_per_feature: f64, max_bits: u32) -> u32 {
    let want = (n as f64 * slots_per_feature).max(1.0);
    (want.log2().ceil() as u32).clamp(MIN_BITS, max_bits.clamp(MIN_BITS, MAX_BITS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<WordAtoms> {
        vec![
            WordAtoms::new("The", "the", "DET", "DT", "Definite=Def|PronType=Art"),
            WordAtoms::new("dog", "dog", "NOUN", "NN", "Number=Sing"),
            WordAtoms::new("barks", "bark", "VERB", "VBZ", "_"),
        ]
    }

    #[test]
    fn features_are_deterministic_and_in_range() {
        let t = default_templates();
        let w = words();
        let a = ArcFeaturizer::new(&t, &w);
        let b = ArcFeaturizer::new(&t, &w);
        let mut fa = Vec::new();
        let mut fb = Vec::new();
        a.for_each_feature(0, 3, |t, s| fa.push((t, s)));
        b.for_each_feature(0, 3, |t, s| fb.push((t, s)));
        assert_eq!(fa, fb);
        for &(ti, s) in &fa {
            assert!(s < t[ti].table_size());
        }
        // the between templates fire once per word strictly between
        let between: Vec<usize> = (0..t.len())
            .filter(|&i| matches!(t[i].multi, Multi::BetweenUpos | Multi::BetweenXpos))
            .collect();
        for ti in between {
            assert_eq!(fa.iter().filter(|x| x.0 == ti).count(), 2);
        }
    }

    #[test]
    fn direction_changes_conjoined_features_only() {
        let t = default_templates();
        let w = words();
        let a = ArcFeaturizer::new(&t, &w);
        let mut f12 = Vec::new();
        let mut f21 = Vec::new();
        a.for_each_feature(1, 2, |t, s| f12.push((t, s)));
        a.for_each_feature(2, 1, |t, s| f21.push((t, s)));
        // "h.upos|m.upos" with no conjunction: DET->NOUN differs from NOUN->DET,
        // but a head-only unigram without conjunction must agree for the same head.
        let mut g = Vec::new();
        a.for_each_feature(1, 3, |t, s| g.push((t, s)));
        let unigram = t.iter().position(|t| t.name == "h.form").unwrap();
        let s12: Vec<_> = f12.iter().filter(|x| x.0 == unigram).collect();
        let s13: Vec<_> = g.iter().filter(|x| x.0 == unigram).collect();
        assert_eq!(s12, s13);
        let dir = t.iter().position(|t| t.name == "h.form|dir").unwrap();
        let d12: Vec<_> = f12.iter().filter(|x| x.0 == dir).collect();
        let d21: Vec<_> = f21.iter().filter(|x| x.0 == dir).collect();
        assert_ne!(d12, d21);
    }

    #[test]
    fn one_sided_templates_depend_on_one_word_and_the_conjunction_code() {
        let t = default_templates();
        let w = words();
        let fz = ArcFeaturizer::new(&t, &w);
        let n1 = fz.len_with_root();
        let keys = |ti: usize, h: usize, m: usize| {
            let mut k = Vec::new();
            fz.template_keys(ti, h, m, |x| k.push(x));
            k
        };
        let mut sided = [0usize; 3];
        for (ti, tpl) in t.iter().enumerate() {
            let side = tpl.side();
            sided[side as usize] += 1;
            for (h, m) in (0..n1).flat_map(|h| (1..n1).map(move |m| (h, m))) {
                for (h2, m2) in (0..n1).flat_map(|h| (1..n1).map(move |m| (h, m))) {
                    if h == m || h2 == m2 || tpl.conj_code(h, m) != tpl.conj_code(h2, m2) {
                        continue;
                    }
                    let same = match side {
                        Side::Head => h == h2,
                        Side::Modifier => m == m2,
                        Side::Pair => false,
                    };
                    if same {
                        assert_eq!(keys(ti, h, m), keys(ti, h2, m2), "{}", tpl.name);
                    }
                }
                assert!(tpl.conj_code(h, m) < CONJ_CODES);
            }
        }
        // 18 head-only and 16 modifier-only base templates in 3
        // conjunctions, and one of each with the finer distance
        assert_eq!(sided, [55, 49, t.len() - 104]);
        assert_eq!(t.len(), 346);
        assert_eq!(t.iter().filter(|x| x.is_inert()).count(), 16);
        // the original 312 templates keep their indices
        assert_eq!(t[0].name, "h.form");
        assert_eq!(t[104].name, "h.form|dir");
        assert_eq!(t[208].name, "h.form|dir+dist");
        assert_eq!(t[312].name, "h.pre5");
        let pair = t.iter().position(|t| t.name == "h.upos|m.upos").unwrap();
        assert_eq!(t[pair].side(), Side::Pair);
        let feats = t.iter().position(|t| t.name == "h.upos|h.feat").unwrap();
        assert_eq!(t[feats].side(), Side::Head);
    }

    #[test]
    fn between_counts_match_a_brute_force_count() {
        let tags = [
            "NOUN", "VERB", "PUNCT", "CCONJ", "AUX", "PUNCT", "PUNCT", "PUNCT", "PUNCT", "VERB",
            "CCONJ", "CCONJ", "CCONJ", "NOUN",
        ];
        let w: Vec<WordAtoms> = tags
            .iter()
            .map(|t| WordAtoms::new("x", "x", t, t, "_"))
            .collect();
        let t = vec![Template::new(
            &[(Pos::H, Attr::Upos), (Pos::M, Attr::Upos)],
            Multi::BetweenCounts,
            Conj::None,
        )];
        assert!(t[0].is_single() && t[0].side() == Side::Pair);
        let fz = ArcFeaturizer::new(&t, &w);
        let n1 = fz.len_with_root();
        // the same tag pair with counts that differ must give different keys,
        // the same counts the same key
        let mut seen: std::collections::HashMap<(usize, usize, [u64; 3]), u64> = Default::default();
        let mut distinct = std::collections::HashSet::new();
        for h in 0..n1 {
            for m in 1..n1 {
                if h == m {
                    continue;
                }
                let (lo, hi) = (h.min(m), h.max(m));
                let mut c = [0u64; 3];
                for b in lo + 1..hi {
                    match tags[b - 1] {
                        "VERB" | "AUX" => c[0] += 1,
                        "PUNCT" => c[1] += 1,
                        "CCONJ" => c[2] += 1,
                        _ => {}
                    }
                }
                let c = [c[0].min(3), c[1].min(3), c[2].min(2)];
                let mut keys = Vec::new();
                fz.template_keys(0, h, m, |k| keys.push(k));
                assert_eq!(keys.len(), 1);
                let tag = |i: usize| {
                    if i == 0 {
                        usize::MAX
                    } else {
                        tags.iter().position(|x| *x == tags[i - 1]).unwrap()
                    }
                };
                let id = (tag(h), tag(m), c);
                if let Some(&k) = seen.get(&id) {
                    assert_eq!(k, keys[0], "{h}->{m}");
                } else {
                    assert!(distinct.insert(keys[0]), "{h}->{m} collides");
                    seen.insert(id, keys[0]);
                }
            }
        }
        assert!(seen.keys().any(|k| k.2 == [1, 3, 2]));
    }
}
