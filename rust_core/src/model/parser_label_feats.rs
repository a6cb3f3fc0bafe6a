//! Features of the label stage ([`crate::model::parser_labels`]): the
//! feature names of an arc `h → m` of a tree, read from the two words,
//! their neighbours and the rest of the tree.
//!
//! Each name is written into one reused buffer and handed to a sink (a
//! closure) before the next is written: the label stage hashes it there
//! into its bucket, so a word's features cost no allocation. The names and
//! their order are fixed by the saved models that use them.
//!
//! # Complexity
//! [`ArcTree::fill`] is O(words) per sentence; [`write_arc_features`] is
//! O(Σ name lengths + dependents of `h` and of `m`) per arc.

use std::fmt::Write as _;

use crate::features::arc_templates::distance_bin;
use crate::features::py_str::{lower_into, suffix};
use crate::model::conllu::Token;

/// The dependents of every word of a tree (index 0 is the root), left to
/// right, and the first and last word of every word's subtree, in buffers
/// that are reused from one sentence to the next.
#[derive(Debug, Default, Clone)]
pub(crate) struct ArcTree {
    /// The dependents of word `w` are `kids[start[w]..start[w + 1]]`.
    start: Vec<usize>,
    kids: Vec<usize>,
    /// The first and last word of the subtree of each word.
    lo: Vec<usize>,
    hi: Vec<usize>,
    /// The words in an order where every word comes before its dependents.
    order: Vec<usize>,
}

impl ArcTree {
    /// The tree of `heads` (a valid tree: every head at most the number of
    /// words, no cycle).
    #[cfg(test)]
    pub(crate) fn new(heads: &[usize]) -> Self {
        let mut t = ArcTree::default();
        t.fill(heads);
        t
    }

    /// Sets the tree to that of `heads` (a valid tree).
    ///
    /// # Complexity
    /// O(words), with no allocation once the buffers are large enough.
    pub(crate) fn fill(&mut self, heads: &[usize]) {
        let n = heads.len();
        // counting sort of the words by head (0..=n), stable (so left to
        // right): the count of head `h` goes to `start[h + 2]`
        self.start.clear();
        self.start.resize(n + 3, 0);
        for &h in heads {
            self.start[h + 2] += 1;
        }
        for w in 2..n + 3 {
            self.start[w] += self.start[w - 1];
        }
        self.kids.clear();
        self.kids.resize(n, 0);
        for (i, &h) in heads.iter().enumerate() {
            self.kids[self.start[h + 1]] = i + 1;
            self.start[h + 1] += 1;
        }
        // subtree spans, each word after all of its dependents
        self.order.clear();
        self.order.push(0);
        let mut at = 0;
        while at < self.order.len() {
            let w = self.order[at];
            at += 1;
            let (a, b) = (self.start[w], self.start[w + 1]);
            self.order.extend_from_slice(&self.kids[a..b]);
        }
        self.lo.clear();
        self.lo.extend(0..=n);
        self.hi.clear();
        self.hi.extend(0..=n);
        for &w in self.order[1..].iter().rev() {
            let h = heads[w - 1];
            self.lo[h] = self.lo[h].min(self.lo[w]);
            self.hi[h] = self.hi[h].max(self.hi[w]);
        }
    }

    /// The dependents of word `w` (0 = root), left to right.
    #[inline]
    pub(crate) fn kids(&self, w: usize) -> &[usize] {
        &self.kids[self.start[w]..self.start[w + 1]]
    }

    /// The first and last word of the subtree of word `w ≥ 1`.
    #[inline]
    fn span(&self, w: usize) -> (usize, usize) {
        (self.lo[w], self.hi[w])
    }
}

/// One piece of a feature name, appended to the name's buffer.
trait Part {
    fn put(self, buf: &mut String);
}

impl Part for &str {
    #[inline(always)]
    fn put(self, buf: &mut String) {
        buf.push_str(self);
    }
}

impl Part for &String {
    #[inline(always)]
    fn put(self, buf: &mut String) {
        buf.push_str(self);
    }
}

impl Part for u64 {
    /// The decimal digits (as `format!("{n}")`).
    #[inline(always)]
    fn put(self, buf: &mut String) {
        if self < 10 {
            buf.push(char::from(b'0' + self as u8));
        } else {
            let _ = write!(buf, "{self}");
        }
    }
}

impl Part for usize {
    #[inline(always)]
    fn put(self, buf: &mut String) {
        (self as u64).put(buf);
    }
}

/// A string lowercased as `str::to_lowercase` does.
struct Lower<'a>(&'a str);

impl Part for Lower<'_> {
    #[inline(always)]
    fn put(self, buf: &mut String) {
        lower_into(self.0, buf);
    }
}

/// The buffer of the name being written and the sink that takes each
/// finished name.
struct Names<'a, F: FnMut(&str)> {
    buf: &'a mut String,
    emit: F,
}

/// Writes the name made of the parts into the buffer and hands it to the
/// sink.
macro_rules! name {
    ($w:expr; $($part:expr),+ $(,)?) => {{
        let w = &mut *$w;
        w.buf.clear();
        $( Part::put($part, w.buf); )+
        (w.emit)(w.buf.as_str());
    }};
}

/// Buffers reused by [`write_arc_features`]: the name being written and
/// the modifier's lowercased form.
#[derive(Debug, Default, Clone)]
pub(crate) struct NameBufs {
    name: String,
    lower: String,
}

/// The feature names of the arc `h → m` (1-based words, 0 = root) of the
/// tree `heads` (`tree` = the [`ArcTree`] of `heads`), each handed to
/// `emit` in turn (the name is only valid during the call). `extended`
/// adds the features of labeler format version 3 (the words around the
/// modifier's subtree and the nominal siblings, the modifier's suffix and
/// the word forms, the distance crossed with both tags); version 2 reads
/// the rest only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_arc_features(
    toks: &[Token],
    heads: &[usize],
    tree: &ArcTree,
    h: usize,
    m: usize,
    extended: bool,
    bufs: &mut NameBufs,
    emit: impl FnMut(&str),
) {
    let word = |i: isize| -> (&str, &str, &str, &str) {
        if i == 0 {
            ("<root>", "<root>", "<root>", "<root>")
        } else if i < 0 {
            ("<s>", "<s>", "<s>", "<s>")
        } else if i as usize > toks.len() {
            ("</s>", "</s>", "</s>", "</s>")
        } else {
            let t = &toks[i as usize - 1];
            (&t.form, &t.lemma, &t.upos, &t.xpos)
        }
    };
    let (hi, mi) = (h as isize, m as isize);
    let (hf, hl, hu, hx) = word(hi);
    let (mf, ml, mu, mx) = word(mi);
    let (_, _, mpu, _) = word(mi - 1);
    let (_, _, mnu, _) = word(mi + 1);
    let (_, _, hpu, _) = word(hi - 1);
    let (_, _, hnu, _) = word(hi + 1);
    let dir = if h < m { "R" } else { "L" };
    let dist = distance_bin(h, m);
    let lower = &mut bufs.lower;
    lower.clear();
    lower_into(mf, lower);
    let lower = &*lower;
    let w = &mut Names {
        buf: &mut bufs.name,
        emit,
    };
    name!(w; "arc_bias");
    name!(w; "arc_mform=", lower);
    name!(w; "arc_mlemma=", ml);
    name!(w; "arc_mupos=", mu);
    name!(w; "arc_mxpos=", mx);
    name!(w; "arc_hlemma=", hl);
    name!(w; "arc_hupos=", hu);
    name!(w; "arc_hxpos=", hx);
    name!(w; "arc_pair=", hu, "|", mu, "|", dir);
    name!(w; "arc_xpair=", hx, "|", mx, "|", dir);
    name!(w; "arc_dd=", dir, dist);
    name!(w; "arc_mdd=", mu, "|", dir, dist);
    name!(w; "arc_hlm=", hl, "|", mu, "|", dir);
    name!(w; "arc_mlh=", ml, "|", hu, "|", dir);
    name!(w; "arc_lex=", hl, "|", ml);
    name!(w; "arc_mctx=", mpu, "|", mu, "|", mnu);
    name!(w; "arc_hctx=", hpu, "|", hu, "|", hnu, "|", mu, "|", dir);
    if m >= 1 && m <= toks.len() {
        for v in toks[m - 1].feats.split('|').filter(|v| *v != "_") {
            name!(w; "arc_mfeat=", v);
            name!(w; "arc_mfeatp=", v, "|", hu, "|", dir);
        }
    }
    if h >= 1 && h <= toks.len() {
        for v in toks[h - 1].feats.split('|').filter(|v| *v != "_") {
            name!(w; "arc_hfeat=", v, "|", mu);
        }
    }
    tree_features(toks, heads, tree, h, m, w);
    if extended {
        name!(w; "arc_msuf=", suffix(lower, 3), "|", mu);
        name!(w; "arc_hform=", Lower(hf), "|", mu, "|", dir);
        name!(w; "arc_mfh=", lower, "|", hu, "|", dir);
        name!(w; "arc_pdd=", hu, "|", mu, "|", dir, dist);
        span_features(toks, tree, h, m, hl, mu, dir, w);
    }
}

/// The words just outside the modifier's subtree (a comma or a bracket
/// before it marks `appos` and `parataxis`), the first word of that subtree,
/// and the number of nominal siblings on the modifier's side of the head
/// crossed with the head's lemma (a second object marks `iobj`).
///
/// # Complexity
/// O(dependents of `h`).
#[allow(clippy::too_many_arguments)]
fn span_features<F: FnMut(&str)>(
    toks: &[Token],
    tree: &ArcTree,
    h: usize,
    m: usize,
    hl: &str,
    mu: &str,
    dir: &str,
    w: &mut Names<'_, F>,
) {
    let form = |i: usize| -> &str {
        if i == 0 {
            "<s>"
        } else if i > toks.len() {
            "</s>"
        } else {
            &toks[i - 1].form
        }
    };
    let nominal = tree
        .kids(h)
        .iter()
        .filter(|&&c| c != m && (c > h) == (m > h))
        .filter(|&&c| matches!(toks[c - 1].upos.as_str(), "NOUN" | "PRON" | "PROPN"))
        .count()
        .min(2);
    name!(w; "arc_hlsib=", hl, "|", nominal, "|", mu, "|", dir);
    let (lo, hi) = tree.span(m);
    name!(w; "arc_span=", form(lo - 1), "|", form(hi + 1), "|", mu, "|", dir);
    name!(w; "arc_spanf=", Lower(form(lo)), "|", mu, "|", dir);
}

/// Features of the arc `h → m` that read the rest of the tree: the
/// modifier's own dependents (a case marker or an auxiliary below `m` tells
/// `obl` from `obj` and `advcl` from `xcomp`), the head's function words,
/// the modifier's nearest siblings on the same side of the head, and the
/// head's own head.
///
/// # Complexity
/// O(dependents of `h` and of `m`).
fn tree_features<F: FnMut(&str)>(
    toks: &[Token],
    heads: &[usize],
    tree: &ArcTree,
    h: usize,
    m: usize,
    w: &mut Names<'_, F>,
) {
    let upos = |i: usize| -> &str {
        if i == 0 {
            "<root>"
        } else {
            &toks[i - 1].upos
        }
    };
    let (hu, mu) = (upos(h), upos(m));
    let dir = if h < m { "R" } else { "L" };
    let kids = tree.kids(m);
    for &c in kids {
        let t = &toks[c - 1];
        let side = if c < m { "L" } else { "R" };
        name!(w; "arc_kid=", &t.upos, "|", side, "|", mu);
        if matches!(
            t.upos.as_str(),
            "ADP" | "SCONJ" | "AUX" | "PART" | "CCONJ" | "DET" | "PRON" | "PUNCT"
        ) {
            name!(w; "arc_kidw=", &t.upos, "|", Lower(&t.form), "|", mu, "|", hu);
        }
    }
    name!(w; "arc_nkids=", kids.len().min(3), "|", mu);
    // the head's function words (a passive auxiliary marks nsubj:pass)
    let sibs = tree.kids(h);
    for &c in sibs {
        let t = &toks[c - 1];
        if c != m && matches!(t.upos.as_str(), "AUX" | "PART" | "SCONJ" | "ADP") {
            name!(w; "arc_hkidw=", Lower(&t.form), "|", mu, "|", dir);
        }
    }
    // the nearest sibling between the head and the modifier, and beyond it
    let at = sibs.partition_point(|&c| c < m);
    let before = at.checked_sub(1).map(|j| sibs[j]);
    let after = sibs.get(at + 1).copied();
    let (inner, outer) = if h < m {
        (before.filter(|&c| c > h), after)
    } else {
        (after.filter(|&c| c < h), before)
    };
    let name = |c: Option<usize>| c.map_or("<none>", upos);
    name!(w; "arc_sib_in=", name(inner), "|", mu, "|", hu, "|", dir);
    name!(w; "arc_sib_out=", name(outer), "|", mu, "|", hu, "|", dir);
    let g = if h == 0 { "<none>" } else { upos(heads[h - 1]) };
    name!(w; "arc_gp=", g, "|", hu, "|", mu, "|", dir);
}

/// The feature names of the arc `h → m` as strings (see
/// [`write_arc_features`]).
#[cfg(test)]
pub(crate) fn arc_features(
    toks: &[Token],
    heads: &[usize],
    h: usize,
    m: usize,
    extended: bool,
) -> Vec<String> {
    let mut names = Vec::new();
    let tree = ArcTree::new(heads);
    let mut bufs = NameBufs::default();
    write_arc_features(toks, heads, &tree, h, m, extended, &mut bufs, |n| {
        names.push(n.to_string())
    });
    names
}

/// The label features as they were first written, one `format!` per name:
/// the reference that [`write_arc_features`] must reproduce name for name.
#[cfg(test)]
pub(crate) mod reference;

/// Sentences that exercise every feature: random trees (projective or
/// not) over words with upper-case and non-ASCII forms (final sigma, a
/// dotted capital I, a German sharp s), several or no FEATS, function
/// words, long arcs and many dependents.
#[cfg(test)]
pub(crate) fn test_sentences() -> Vec<(Vec<Token>, Vec<usize>)> {
    let words: [(&str, &str, &str, &str); 16] = [
        ("The", "DET", "DT", "Definite=Def|PronType=Art"),
        ("dog", "NOUN", "NN", "Number=Sing"),
        ("ΣΟΦΟΣ", "PROPN", "NNP", "_"),
        ("İstanbul", "PROPN", "NNP", "Number=Sing"),
        (
            "was",
            "AUX",
            "VBD",
            "Mood=Ind|Number=Sing|Person=3|Tense=Past|VerbForm=Fin",
        ),
        ("SEEN", "VERB", "VBN", "Tense=Past|VerbForm=Part|Voice=Pass"),
        ("in", "ADP", "IN", "_"),
        (",", "PUNCT", ",", "_"),
        ("to", "PART", "TO", "_"),
        ("that", "SCONJ", "IN", "_"),
        ("And", "CCONJ", "CC", "_"),
        (
            "him",
            "PRON",
            "PRP",
            "Case=Acc|Gender=Masc|Number=Sing|Person=3|PronType=Prs",
        ),
        ("Straße", "NOUN", "NN", "Gender=Fem"),
        ("12", "NUM", "CD", "NumType=Card"),
        ("quickly", "ADV", "RB", "_"),
        ("a", "X", "_", "_"),
    ];
    let rels = ["det", "nsubj", "obl", "case", "punct", "aux", "obj", "conj"];
    let mut rng = crate::lcg::Lcg(0x5eed);
    let mut out = Vec::new();
    for n in [1usize, 2, 3, 5, 8, 13, 21, 34] {
        for _ in 0..3 {
            let toks: Vec<Token> = (0..n)
                .map(|_| {
                    let (f, u, x, feats) = words[rng.next_u32() as usize % words.len()];
                    Token {
                        form: f.into(),
                        lemma: f.to_lowercase(),
                        upos: u.into(),
                        xpos: x.into(),
                        feats: feats.into(),
                        head: None,
                        deprel: rels[rng.next_u32() as usize % rels.len()].into(),
                    }
                })
                .collect();
            // a random tree: each word in a random order attaches to the
            // root or to a word attached before it
            let mut order: Vec<usize> = (1..=n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.next_u32() as usize % (i + 1));
            }
            let mut heads = vec![0; n];
            for (j, &w) in order.iter().enumerate().skip(1) {
                let k = rng.next_u32() as usize % (j + 1);
                heads[w - 1] = if k == j { order[0] } else { order[k] };
            }
            out.push((toks, heads));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_reference_names() {
        let mut seen = 0;
        for (toks, heads) in test_sentences() {
            crate::model::parser_input::check_heads(toks.len(), &heads, "s").unwrap();
            let kids = reference::dependents(&heads);
            let tree = ArcTree::new(&heads);
            for (w, want) in kids.iter().enumerate() {
                assert_eq!(tree.kids(w), &want[..]);
            }
            // every arc of the tree, and arcs from other heads
            for m in 1..=toks.len() {
                for h in [heads[m - 1], 0, m - 1, (m + 3) % (toks.len() + 1)] {
                    if h == m {
                        continue;
                    }
                    for extended in [false, true] {
                        let want = reference::arc_features(&toks, &heads, &kids, h, m, extended);
                        let got = arc_features(&toks, &heads, h, m, extended);
                        assert_eq!(got, want, "arc {h} -> {m} of {heads:?}");
                        seen += got.len();
                    }
                }
            }
        }
        assert!(seen > 10_000, "{seen}");
    }

    #[test]
    fn the_buffer_is_reused_across_sentences() {
        let sents = test_sentences();
        let mut tree = ArcTree::default();
        let mut bufs = NameBufs::default();
        // a long sentence first, then shorter ones reuse the same buffers
        for (toks, heads) in sents.iter().rev() {
            tree.fill(heads);
            let kids = reference::dependents(heads);
            for m in 1..=toks.len() {
                let mut got = Vec::new();
                let h = heads[m - 1];
                write_arc_features(toks, heads, &tree, h, m, true, &mut bufs, |n| {
                    got.push(n.to_string())
                });
                assert_eq!(got, reference::arc_features(toks, heads, &kids, h, m, true));
            }
        }
    }
}
