//! The hashed table slots of a sentence's arcs, computed once per sentence
//! and reused by scoring, loss-augmented decoding and the update.
//!
//! Hashing needs only the sentence and the templates (not the weights), so
//! during training the slots of the next sentences are computed on another
//! core while the current sentence is scored with the current weights.
//!
//! Per template, the slots are laid out by what the features depend on:
//! * a pair template with one feature per arc stores one slot per arc,
//!   hashed in batches ([`ArcFeaturizer::single_slots`]);
//! * a head-only (modifier-only) template stores one *entry* per distinct
//!   `(head, conjunction code)` (`(modifier, code)`), shared by the arcs
//!   that have it, so its weights are loaded once per entry; the map from
//!   arcs to entries is computed once per (side, conjunction) and shared by
//!   the templates that have them;
//! * templates with several features per arc (morphology, words between)
//!   store a list of slots per entry.
//!
//! Scoring sums in arc order into one accumulator per arc, template by
//! template, so one table is read at a time.
//!
//! # Complexity
//! Building is `O(A T)` hash mixes for `A` arcs and `T` templates (plus the
//! words between head and modifier for the between templates); scoring is
//! one table load per stored slot.
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
//! let slots = ArcSlots::new(&templates, &words, None).unwrap();
//! // 2 words: arcs 0->1, 0->2, 1->2, 2->1
//! assert_eq!(slots.arcs().len(), 4);
//! ```

use std::ops::Range;

use crate::error::{try_vec, Result};
use crate::features::arc_templates::{ArcFeaturizer, Conj, Side, Template, WordAtoms, CONJ_CODES};
use crate::features::try_room;

/// Slots reserved per entry beyond one per word between head and modifier
/// (the morphological features of a word are far fewer).
const MAX_FEATS: usize = 64;

/// Where template `t`'s slots are.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Not stored (inert or skipped templates).
    Skip,
    /// Arc `i` has the one slot `slots[start + i]`.
    PerArc { start: usize },
    /// Entry `e < n` has the one slot `slots[start + e]`; arc `i` has entry
    /// `maps[map + i]`.
    PerEntry { start: usize, n: usize, map: usize },
    /// Entry `e` (`e0 <= e < e1`) has `slots[ent_off[e]..ent_off[e + 1]]`;
    /// arc `i` has entry `e0 + i` (`map = None`) or `e0 + maps[map + i]`.
    Lists {
        e0: usize,
        e1: usize,
        map: Option<usize>,
    },
}

/// An arc-to-entry map shared by the one-sided templates of one side and
/// conjunction: where it starts in `maps`, and one arc per entry.
struct EntryMap {
    start: usize,
    reps: Vec<(u32, u32)>,
}

/// The slot lists of a list of arcs (see the module documentation),
/// without the featurizer they were computed with.
pub struct SlotLists {
    n1: usize,
    /// The lists hold arcs into modifiers `m0..m0 + width`.
    m0: usize,
    width: usize,
    arcs: Vec<(u32, u32)>,
    /// Position of arc `h -> m` in `arcs` at `h * width + m - m0`
    /// (`u32::MAX`: absent).
    index: Vec<u32>,
    per_tpl: Vec<Layout>,
    slots: Vec<u32>,
    ent_off: Vec<u32>,
    maps: Vec<u32>,
}

impl SlotLists {
    /// Slots of all arcs `h -> m` (`h != m`, `m >= 1`), or of those with
    /// `keep[h * n1 + m]` when `keep` is given, for every template but the
    /// inert ones ([`Template::is_inert`]) and those with `skip(t)`.
    /// Errors with [`OmklError::Alloc`](crate::error::OmklError::Alloc) if the lists do not fit in memory.
    pub fn build(
        fz: &ArcFeaturizer<'_>,
        templates: &[Template],
        keep: Option<&[bool]>,
        skip: impl Fn(usize) -> bool,
    ) -> Result<Self> {
        Self::build_range(fz, templates, keep, skip, 1..fz.len_with_root())
    }

    /// [`SlotLists::build`] for the arcs into the modifiers `mods` only
    /// (clipped to `1..n1`), so that a long sentence can be scored a band of
    /// modifiers at a time.
    pub fn build_range(
        fz: &ArcFeaturizer<'_>,
        templates: &[Template],
        keep: Option<&[bool]>,
        skip: impl Fn(usize) -> bool,
        mods: Range<usize>,
    ) -> Result<Self> {
        const WHAT: &str = "arc slot lists";
        let n1 = fz.len_with_root();
        let m0 = mods.start.clamp(1, n1);
        let width = mods.end.clamp(m0, n1) - m0;
        let mut arcs = Vec::new();
        try_room(WHAT, &mut arcs, n1 * width)?;
        let mut index = try_vec(WHAT, &[n1, width], u32::MAX)?;
        for h in 0..n1 {
            for m in (m0..m0 + width).filter(|&m| m != h) {
                if keep.is_none_or(|k| k[h * n1 + m]) {
                    index[h * width + m - m0] = arcs.len() as u32;
                    arcs.push((h as u32, m as u32));
                }
            }
        }
        let a = arcs.len();
        let batch = fz.batch(&arcs)?;
        let mut keys: Vec<u64> = Vec::new();
        let mut per_tpl = Vec::with_capacity(templates.len());
        let mut slots: Vec<u32> = Vec::new();
        try_room(WHAT, &mut slots, a * templates.len())?;
        let mut ent_off: Vec<u32> = vec![0];
        let mut maps: Vec<u32> = Vec::new();
        // one map per (side, conjunction), built on first use
        let mut groups: [Option<EntryMap>; 8] = Default::default();
        let mut entry_of = vec![u32::MAX; n1 * CONJ_CODES];
        for (t, tpl) in templates.iter().enumerate() {
            if tpl.is_inert() || skip(t) {
                per_tpl.push(Layout::Skip);
                continue;
            }
            let side = tpl.side();
            if side == Side::Pair && tpl.is_single() {
                let start = slots.len();
                fz.single_slots(t, &batch, &mut keys, &mut slots)?;
                per_tpl.push(Layout::PerArc { start });
                continue;
            }
            let map = if side == Side::Pair {
                None
            } else {
                let g = (side == Side::Head) as usize * 4
                    + match tpl.conj {
                        Conj::None => 0,
                        Conj::Dir => 1,
                        Conj::DirDist => 2,
                        Conj::DirFineDist => 3,
                    };
                if groups[g].is_none() {
                    try_room(WHAT, &mut maps, a)?;
                }
                Some(groups[g].get_or_insert_with(|| {
                    entry_of.fill(u32::MAX);
                    let start = maps.len();
                    let mut reps = Vec::new();
                    for &(h, m) in &arcs {
                        let (h, m) = (h as usize, m as usize);
                        let word = if side == Side::Head { h } else { m };
                        let key = word * CONJ_CODES + tpl.conj_code(h, m);
                        if entry_of[key] == u32::MAX {
                            entry_of[key] = reps.len() as u32;
                            reps.push((h as u32, m as u32));
                        }
                        maps.push(entry_of[key]);
                    }
                    EntryMap { start, reps }
                }))
            };
            let map: Option<&EntryMap> = map.map(|g| &*g);
            match map {
                Some(g) if tpl.is_single() => {
                    let start = slots.len();
                    try_room(WHAT, &mut slots, g.reps.len())?;
                    for &(h, m) in &g.reps {
                        fz.template_features(t, h as usize, m as usize, |s| slots.push(s as u32));
                    }
                    per_tpl.push(Layout::PerEntry {
                        start,
                        n: g.reps.len(),
                        map: g.start,
                    });
                }
                _ => {
                    // entries start where the slots end (after any per-arc
                    // or per-entry slots of the templates before)
                    if *ent_off.last().unwrap_or(&0) as usize != slots.len() {
                        ent_off.push(slots.len() as u32);
                    }
                    let e0 = ent_off.len() - 1;
                    let reps = map.map_or(&arcs, |g| &g.reps);
                    try_room(WHAT, &mut ent_off, reps.len())?;
                    for &(h, m) in reps {
                        // at most one feature per word between, or per
                        // morphological feature
                        try_room(WHAT, &mut slots, n1 + MAX_FEATS)?;
                        fz.template_features(t, h as usize, m as usize, |s| slots.push(s as u32));
                        ent_off.push(slots.len() as u32);
                    }
                    per_tpl.push(Layout::Lists {
                        e0,
                        e1: ent_off.len() - 1,
                        map: map.map(|g| g.start),
                    });
                }
            }
        }
        Ok(SlotLists {
            n1,
            m0,
            width,
            arcs,
            index,
            per_tpl,
            slots,
            ent_off,
            maps,
        })
    }

    /// The arcs `(h, m)`, in row-major order.
    pub fn arcs(&self) -> &[(u32, u32)] {
        &self.arcs
    }

    /// Bytes held by the slot lists (a measure of the per-sentence cost).
    pub fn heap_bytes(&self) -> usize {
        4 * (self.slots.len() + self.ent_off.len() + self.maps.len() + self.index.len())
    }

    /// Adds `scale_t · Σ w_t[slot]` (the sum in `f32`, in feature order)
    /// of every stored template to `s[h * n1 + m]` of every arc: the terms
    /// are summed per arc in template order from 0, then added to `s`, so
    /// where `s` is 0 the result equals adding them to `s` one by one.
    /// `table(t)` gives `(scale_t, w_t)`; templates with scale 0 are
    /// skipped.
    ///
    /// # Panics
    /// If a table is shorter than its template's slots.
    pub fn add_scores<'w>(&self, s: &mut [f64], table: impl Fn(usize) -> (f64, &'w [f32])) {
        Self::add_scores_many(&[self], &mut [s], table)
    }

    /// [`SlotLists::add_scores`] for several sentences at once, with the
    /// same tables: the outer loop runs over templates, so each table is
    /// read for all the sentences while it is hot in cache. The sums are
    /// those of `add_scores` on each sentence alone, bit for bit.
    ///
    /// # Panics
    /// If `lists` and `outs` differ in length, if the lists were built for
    /// different numbers of templates, or if a table is shorter than its
    /// template's slots.
    pub fn add_scores_many<'w>(
        lists: &[&SlotLists],
        outs: &mut [&mut [f64]],
        table: impl Fn(usize) -> (f64, &'w [f32]),
    ) {
        assert_eq!(lists.len(), outs.len(), "one output per slot list");
        let Some(first) = lists.first() else {
            return;
        };
        let nt = first.per_tpl.len();
        assert!(
            lists.iter().all(|l| l.per_tpl.len() == nt),
            "slot lists built for different templates"
        );
        let mut accs: Vec<Vec<f64>> = lists.iter().map(|l| vec![0.0f64; l.arcs.len()]).collect();
        let mut vals: Vec<f32> = Vec::new();
        for t in 0..nt {
            if lists.iter().all(|l| matches!(l.per_tpl[t], Layout::Skip)) {
                continue;
            }
            let (sc, w) = table(t);
            if sc == 0.0 {
                continue;
            }
            for (l, acc) in lists.iter().zip(&mut accs) {
                l.add_template(t, sc, w, acc, &mut vals);
            }
        }
        for ((l, acc), s) in lists.iter().zip(&accs).zip(outs.iter_mut()) {
            let n1 = l.n1;
            for (&(h, m), &x) in l.arcs.iter().zip(acc) {
                s[h as usize * n1 + m as usize] += x;
            }
        }
    }

    /// `acc[i] += sc · Σ w[slot]` over template `t`'s slots of arc `i`.
    fn add_template(&self, t: usize, sc: f64, w: &[f32], acc: &mut [f64], vals: &mut Vec<f32>) {
        let a = self.arcs.len();
        match self.per_tpl[t] {
            Layout::Skip => {}
            Layout::PerArc { start } => add_gathered(acc, sc, w, &self.slots[start..start + a]),
            Layout::PerEntry { start, n, map } => {
                vals.clear();
                vals.extend(self.slots[start..start + n].iter().map(|&x| w[x as usize]));
                add_mapped(acc, sc, vals, &self.maps[map..map + a]);
            }
            Layout::Lists { e0, e1, map } => {
                entry_values(w, &self.ent_off[e0..=e1], &self.slots, vals);
                match map {
                    None => {
                        for (x, &v) in acc.iter_mut().zip(vals.iter()) {
                            *x += sc * v as f64;
                        }
                    }
                    Some(mp) => add_mapped(acc, sc, vals, &self.maps[mp..mp + a]),
                }
            }
        }
    }

    /// Calls `f(template, slot)` for every feature of the arc `h -> m`
    /// (from the stored slots when the arc and template are stored, else
    /// hashed by `fz`, which must be the featurizer the lists were built
    /// with).
    pub fn for_each_feature(
        &self,
        fz: &ArcFeaturizer<'_>,
        h: usize,
        m: usize,
        mut f: impl FnMut(usize, usize),
    ) {
        let i = if (self.m0..self.m0 + self.width).contains(&m) {
            self.index[h * self.width + m - self.m0]
        } else {
            u32::MAX
        };
        if i == u32::MAX {
            fz.for_each_feature(h, m, f);
            return;
        }
        let i = i as usize;
        for (t, lay) in self.per_tpl.iter().enumerate() {
            match *lay {
                Layout::Skip => fz.template_features(t, h, m, |slot| f(t, slot)),
                Layout::PerArc { start } => f(t, self.slots[start + i] as usize),
                Layout::PerEntry { start, map, .. } => {
                    f(t, self.slots[start + self.maps[map + i] as usize] as usize)
                }
                Layout::Lists { e0, map, .. } => {
                    let e = e0 + map.map_or(i, |mp| self.maps[mp + i] as usize);
                    let (a, b) = (self.ent_off[e] as usize, self.ent_off[e + 1] as usize);
                    for &slot in &self.slots[a..b] {
                        f(t, slot as usize);
                    }
                }
            }
        }
    }
}

/// The slots of every template's features on a list of arcs (all arcs, or
/// the arcs kept by a pruner), with the featurizer that hashed them; see
/// the module documentation.
pub struct ArcSlots<'a> {
    fz: ArcFeaturizer<'a>,
    lists: SlotLists,
}

impl<'a> ArcSlots<'a> {
    /// Slots of all arcs `h -> m` (`h != m`, `m >= 1`) of `words`, or of
    /// those with `keep[h * n1 + m]` when `keep` is given; inert templates
    /// ([`Template::is_inert`]) are not hashed.
    /// Errors with [`OmklError::Alloc`](crate::error::OmklError::Alloc) if the slots do not fit in memory.
    pub fn new(
        templates: &'a [Template],
        words: &[WordAtoms],
        keep: Option<&[bool]>,
    ) -> Result<Self> {
        let fz = ArcFeaturizer::new(templates, words);
        let lists = SlotLists::build(&fz, templates, keep, |_| false)?;
        Ok(ArcSlots { fz, lists })
    }

    /// Number of words including the root.
    pub fn len_with_root(&self) -> usize {
        self.lists.n1
    }

    /// The arcs `(h, m)`, in row-major order.
    pub fn arcs(&self) -> &[(u32, u32)] {
        self.lists.arcs()
    }

    /// Bytes held by the slot lists (a measure of the per-sentence cost).
    pub fn heap_bytes(&self) -> usize {
        self.lists.heap_bytes()
    }

    /// See [`SlotLists::add_scores`].
    pub fn add_scores<'w>(&self, s: &mut [f64], table: impl Fn(usize) -> (f64, &'w [f32])) {
        self.lists.add_scores(s, table)
    }

    /// Calls `f(template, slot)` for every feature of the arc `h -> m`
    /// (from the stored slots when the arc is listed, else hashed).
    pub fn for_each_feature(&self, h: usize, m: usize, f: impl FnMut(usize, usize)) {
        self.lists.for_each_feature(&self.fz, h, m, f)
    }
}

/// `acc[i] += sc · w[slots[i]]` (the product in `f64`).
#[inline(always)]
fn add_gathered_body(acc: &mut [f64], sc: f64, w: &[f32], slots: &[u32]) {
    for (x, &j) in acc.iter_mut().zip(slots) {
        // SAFETY: `add_gathered` checked every slot against `w.len()`.
        *x += sc * unsafe { *w.get_unchecked(j as usize) } as f64;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn add_gathered_avx512(acc: &mut [f64], sc: f64, w: &[f32], slots: &[u32]) {
    add_gathered_body(acc, sc, w, slots)
}

fn add_gathered(acc: &mut [f64], sc: f64, w: &[f32], slots: &[u32]) {
    let max = slots.iter().copied().max().unwrap_or(0) as usize;
    assert!(
        slots.is_empty() || max < w.len(),
        "table shorter than its slots"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        // SAFETY: the CPU supports the enabled features; slots checked.
        unsafe { add_gathered_avx512(acc, sc, w, slots) };
        return;
    }
    add_gathered_body(acc, sc, w, slots)
}

/// `acc[i] += sc · vals[map[i]]`.
#[inline]
fn add_mapped(acc: &mut [f64], sc: f64, vals: &[f32], map: &[u32]) {
    for (x, &e) in acc.iter_mut().zip(map) {
        *x += sc * vals[e as usize] as f64;
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
            let sl = ArcSlots::new(&tpls, &ws, k).unwrap();
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
        let sl = ArcSlots::new(&tpls, &ws, None).unwrap();
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
