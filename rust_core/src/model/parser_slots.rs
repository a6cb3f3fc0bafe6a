//! The hashed table slots of a sentence's arcs, computed once per sentence
//! and reused by scoring, loss-augmented decoding and the update.
//!
//! Hashing needs only the sentence and the templates (not the weights), so
//! during training the slots of the next sentences are computed on another
//! core while the current sentence is scored with the current weights.
//!
//! Per template, the features of the arcs are grouped into *entries*: a
//! pair template has one entry per arc; a head-only (modifier-only) template
//! has one entry per distinct `(head, conjunction code)` (`(modifier,
//! code)`), shared by the arcs that have it, so its weights are loaded once
//! per entry. An entry is the list of its feature slots.
//!
//! # Complexity
//! Building is `O(A T)` hash mixes for `A` arcs and `T` templates (plus the
//! words between head and modifier for the between templates); scoring is
//! one table load per stored slot, in batches with prefetching.
//!
//! # Example
//! ```
//! use omkl_core::features::arc_templates::{default_templates, WordAtoms};
//! use omkl_core::model::parser_slots::ArcSlots;
//! let templates = default_templates();
//! let words = vec![
//!     WordAtoms::new("the", "the", "DET", "DT", "_"),
//!     WordAtoms::new("dog", "dog", "NOUN", "NN", "Number=Sing"),
//! ];
//! let slots = ArcSlots::new(&templates, &words, None);
//! // 2 words: arcs 0->1, 0->2, 1->2, 2->1
//! assert_eq!(slots.arcs().len(), 4);
//! ```

use crate::features::arc_templates::{ArcFeaturizer, Side, Template, WordAtoms, CONJ_CODES};

/// Per template: its entries `ent_off[e0..=e1]` and, for one-sided
/// templates, the start of the arcs' entry indices in `arc_ent`.
#[derive(Debug, Clone, Copy)]
struct TemplateSlots {
    /// Scoring never reads the template (inert).
    skip: bool,
    e0: usize,
    e1: usize,
    /// `Some(start)`: arc `i` has entry `arc_ent[start + i]` (relative to
    /// `e0`); `None`: arc `i` has entry `e0 + i`.
    arc_ent: Option<usize>,
}

/// The slots of every template's features on a list of arcs (all arcs, or
/// the arcs kept by a pruner); see the module documentation.
pub struct ArcSlots<'a> {
    fz: ArcFeaturizer<'a>,
    n1: usize,
    arcs: Vec<(u32, u32)>,
    /// Position of arc `h -> m` in `arcs` at `h * n1 + m` (`u32::MAX`: absent).
    index: Vec<u32>,
    per_tpl: Vec<TemplateSlots>,
    /// Entry `e` holds `slots[ent_off[e]..ent_off[e + 1]]`.
    ent_off: Vec<u32>,
    slots: Vec<u32>,
    arc_ent: Vec<u32>,
}

impl<'a> ArcSlots<'a> {
    /// Slots of all arcs `h -> m` (`h != m`, `m >= 1`) of `words`, or of
    /// those with `keep[h * n1 + m]` when `keep` is given; inert templates
    /// ([`Template::is_inert`]) are not hashed.
    pub fn new(templates: &'a [Template], words: &[WordAtoms], keep: Option<&[bool]>) -> Self {
        let fz = ArcFeaturizer::new(templates, words);
        let n1 = fz.len_with_root();
        let mut arcs = Vec::new();
        let mut index = vec![u32::MAX; n1 * n1];
        for h in 0..n1 {
            for m in 1..n1 {
                if h != m && keep.is_none_or(|k| k[h * n1 + m]) {
                    index[h * n1 + m] = arcs.len() as u32;
                    arcs.push((h as u32, m as u32));
                }
            }
        }
        let mut per_tpl = Vec::with_capacity(templates.len());
        let mut ent_off: Vec<u32> = vec![0];
        let mut slots: Vec<u32> = Vec::with_capacity(arcs.len() * templates.len());
        let mut arc_ent: Vec<u32> = Vec::new();
        let mut entry_of = vec![u32::MAX; n1 * CONJ_CODES];
        for (t, tpl) in templates.iter().enumerate() {
            let e0 = ent_off.len() - 1;
            if tpl.is_inert() {
                per_tpl.push(TemplateSlots {
                    skip: true,
                    e0,
                    e1: e0,
                    arc_ent: None,
                });
                continue;
            }
            let side = tpl.side();
            let mut push_entry = |h: usize, m: usize, slots: &mut Vec<u32>| {
                fz.template_features(t, h, m, |s| slots.push(s as u32));
                ent_off.push(slots.len() as u32);
            };
            if side == Side::Pair {
                for &(h, m) in &arcs {
                    push_entry(h as usize, m as usize, &mut slots);
                }
                per_tpl.push(TemplateSlots {
                    skip: false,
                    e0,
                    e1: e0 + arcs.len(),
                    arc_ent: None,
                });
                continue;
            }
            entry_of.fill(u32::MAX);
            let start = arc_ent.len();
            let mut n_ent = 0u32;
            for &(h, m) in &arcs {
                let (h, m) = (h as usize, m as usize);
                let word = if side == Side::Head { h } else { m };
                let key = word * CONJ_CODES + tpl.conj_code(h, m);
                if entry_of[key] == u32::MAX {
                    entry_of[key] = n_ent;
                    n_ent += 1;
                    push_entry(h, m, &mut slots);
                }
                arc_ent.push(entry_of[key]);
            }
            per_tpl.push(TemplateSlots {
                skip: false,
                e0,
                e1: e0 + n_ent as usize,
                arc_ent: Some(start),
            });
        }
        ArcSlots {
            fz,
            n1,
            arcs,
            index,
            per_tpl,
            ent_off,
            slots,
            arc_ent,
        }
    }

    /// Number of words including the root.
    pub fn len_with_root(&self) -> usize {
        self.n1
    }

    /// The arcs `(h, m)`, in row-major order.
    pub fn arcs(&self) -> &[(u32, u32)] {
        &self.arcs
    }

    /// The per-sentence feature extractor the slots were computed with.
    pub fn featurizer(&self) -> &ArcFeaturizer<'a> {
        &self.fz
    }

    /// Bytes held by the slot lists (a measure of the per-sentence cost).
    pub fn heap_bytes(&self) -> usize {
        4 * (self.slots.len() + self.ent_off.len() + self.arc_ent.len() + self.index.len())
    }

    /// Adds `scale_t · Σ w_t[slot]` (the sum in `f32`, in feature order)
    /// of every template to `s[h * n1 + m]` of every arc, templates in
    /// order; `table(t)` gives `(scale_t, w_t)`, and templates with scale 0
    /// are skipped.
    pub fn add_scores<'w>(&self, s: &mut [f64], table: impl Fn(usize) -> (f64, &'w [f32])) {
        let n1 = self.n1;
        let mut vals: Vec<f32> = Vec::with_capacity(self.arcs.len());
        for (t, ts) in self.per_tpl.iter().enumerate() {
            if ts.skip {
                continue;
            }
            let (sc, w) = table(t);
            if sc == 0.0 {
                continue;
            }
            entry_values(w, &self.ent_off[ts.e0..=ts.e1], &self.slots, &mut vals);
            match ts.arc_ent {
                None => {
                    for (&(h, m), &v) in self.arcs.iter().zip(&vals) {
                        s[h as usize * n1 + m as usize] += sc * v as f64;
                    }
                }
                Some(start) => {
                    let ents = &self.arc_ent[start..start + self.arcs.len()];
                    for (&(h, m), &e) in self.arcs.iter().zip(ents) {
                        s[h as usize * n1 + m as usize] += sc * vals[e as usize] as f64;
                    }
                }
            }
        }
    }

    /// Calls `f(template, slot)` for every feature of the arc `h -> m`
    /// (from the stored slots when the arc is listed, else hashed).
    pub fn for_each_feature(&self, h: usize, m: usize, mut f: impl FnMut(usize, usize)) {
        let i = self.index[h * self.n1 + m];
        if i == u32::MAX {
            self.fz.for_each_feature(h, m, f);
            return;
        }
        let i = i as usize;
        for (t, ts) in self.per_tpl.iter().enumerate() {
            if ts.skip {
                // not stored: hash (an inert template's steps cancel)
                self.fz.template_features(t, h, m, |slot| f(t, slot));
                continue;
            }
            let e = match ts.arc_ent {
                None => ts.e0 + i,
                Some(start) => ts.e0 + self.arc_ent[start + i] as usize,
            };
            let (a, b) = (self.ent_off[e] as usize, self.ent_off[e + 1] as usize);
            for &slot in &self.slots[a..b] {
                f(t, slot as usize);
            }
        }
    }
}

/// `vals[e] = Σ w[slot]` (`f32`, in order) of every entry `e` whose slots
/// are `slots[off[e]..off[e + 1]]`; the loads are prefetched ahead so that
/// they overlap in the memory system.
#[inline]
fn entry_values(w: &[f32], off: &[u32], slots: &[u32], vals: &mut Vec<f32>) {
    const AHEAD: usize = 24;
    vals.clear();
    let (a, b) = (off[0] as usize, off[off.len() - 1] as usize);
    let seg = &slots[a..b];
    for &s in seg.iter().take(AHEAD) {
        prefetch(w, s as usize);
    }
    for e in 0..off.len() - 1 {
        let (x, y) = (off[e] as usize - a, off[e + 1] as usize - a);
        let mut acc = 0.0f32;
        for k in x..y {
            if let Some(&ahead) = seg.get(k + AHEAD) {
                prefetch(w, ahead as usize);
            }
            acc += w[seg[k] as usize];
        }
        vals.push(acc);
    }
}

/// Hints the CPU to load `w[i]` into cache (no effect off x86-64).
#[inline(always)]
pub(crate) fn prefetch(w: &[f32], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < w.len() {
        // SAFETY: the pointer is in bounds; prefetching has no other effect.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch(w.as_ptr().add(i) as *const i8, _MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (w, i);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::arc_templates::default_templates;

    fn words() -> Vec<WordAtoms> {
        let tags = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"];
        let feats = ["Definite=Def", "Number=Sing", "Mood=Ind|Tense=Past", "_"];
        tags.iter()
            .enumerate()
            .map(|(i, t)| WordAtoms::new(&format!("w{i}"), t, t, t, feats[i % 4]))
            .collect()
    }

    #[test]
    fn stored_features_equal_the_hashed_ones_for_every_arc() {
        let tpls = default_templates();
        let ws = words();
        let n1 = ws.len() + 1;
        let keep: Vec<bool> = (0..n1 * n1).map(|i| i % 3 != 0).collect();
        for k in [None, Some(keep.as_slice())] {
            let sl = ArcSlots::new(&tpls, &ws, k);
            let fz = ArcFeaturizer::new(&tpls, &ws);
            for h in 0..n1 {
                for m in 1..n1 {
                    if h == m {
                        continue;
                    }
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    sl.for_each_feature(h, m, |t, s| a.push((t, s)));
                    fz.for_each_feature(h, m, |t, s| b.push((t, s)));
                    assert_eq!(a, b, "arc {h} -> {m}");
                }
            }
        }
    }

    #[test]
    fn scores_are_the_per_arc_sums() {
        let tpls = default_templates();
        let ws = words();
        let n1 = ws.len() + 1;
        let sizes: Vec<usize> = tpls.iter().map(|t| t.table_size()).collect();
        let tables: Vec<Vec<f32>> = sizes
            .iter()
            .enumerate()
            .map(|(t, &n)| {
                (0..n)
                    .map(|i| ((i * 31 + t * 7) % 97) as f32 * 0.01 - 0.4)
                    .collect()
            })
            .collect();
        let scale = |t: usize| {
            if t.is_multiple_of(5) {
                0.0
            } else {
                1.0 + t as f64 * 0.01
            }
        };
        let sl = ArcSlots::new(&tpls, &ws, None);
        let mut got = vec![0.0f64; n1 * n1];
        sl.add_scores(&mut got, |t| (scale(t), tables[t].as_slice()));
        let fz = ArcFeaturizer::new(&tpls, &ws);
        for h in 0..n1 {
            for m in 1..n1 {
                if h == m {
                    continue;
                }
                let mut want = 0.0f64;
                for (t, tpl) in tpls.iter().enumerate() {
                    if scale(t) == 0.0 || tpl.is_inert() {
                        continue;
                    }
                    let mut acc = 0.0f32;
                    fz.template_features(t, h, m, |s| acc += tables[t][s]);
                    want += scale(t) * acc as f64;
                }
                assert_eq!(got[h * n1 + m], want, "arc {h} -> {m}");
            }
        }
    }
}
