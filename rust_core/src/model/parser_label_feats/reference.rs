use crate::features::arc_templates::distance_bin;
use crate::model::conllu::Token;

/// The dependents of every word (index 0 is the root), left to right.
pub(crate) fn dependents(heads: &[usize]) -> Vec<Vec<usize>> {
    let mut kids = vec![Vec::new(); heads.len() + 1];
    for (i, &h) in heads.iter().enumerate() {
        kids[h].push(i + 1);
    }
    kids
}

/// The feature names of the arc `h → m` (1-based words, 0 = root) of the
/// tree `heads` (`kids` = [`dependents`] of `heads`). `extended` adds the
/// features of labeler format version 3 ([`span_features`], the modifier's
/// suffix and the word forms, the distance crossed with both tags); version
/// 2 reads the rest only.
pub(crate) fn arc_features(
    toks: &[Token],
    heads: &[usize],
    kids: &[Vec<usize>],
    h: usize,
    m: usize,
    extended: bool,
) -> Vec<String> {
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
    let lower = mf.to_lowercase();
    let mut f = vec![
        "arc_bias".to_string(),
        format!("arc_mform={lower}"),
        format!("arc_mlemma={ml}"),
        format!("arc_mupos={mu}"),
        format!("arc_mxpos={mx}"),
        format!("arc_hlemma={hl}"),
        format!("arc_hupos={hu}"),
        format!("arc_hxpos={hx}"),
        format!("arc_pair={hu}|{mu}|{dir}"),
        format!("arc_xpair={hx}|{mx}|{dir}"),
        format!("arc_dd={dir}{dist}"),
        format!("arc_mdd={mu}|{dir}{dist}"),
        format!("arc_hlm={hl}|{mu}|{dir}"),
        format!("arc_mlh={ml}|{hu}|{dir}"),
        format!("arc_lex={hl}|{ml}"),
        format!("arc_mctx={mpu}|{mu}|{mnu}"),
        format!("arc_hctx={hpu}|{hu}|{hnu}|{mu}|{dir}"),
    ];
    if m >= 1 && m <= toks.len() {
        for v in toks[m - 1].feats.split('|').filter(|v| *v != "_") {
            f.push(format!("arc_mfeat={v}"));
            f.push(format!("arc_mfeatp={v}|{hu}|{dir}"));
        }
    }
    if h >= 1 && h <= toks.len() {
        for v in toks[h - 1].feats.split('|').filter(|v| *v != "_") {
            f.push(format!("arc_hfeat={v}|{mu}"));
        }
    }
    tree_features(toks, heads, kids, h, m, &mut f);
    if extended {
        let chars: Vec<char> = lower.chars().collect();
        let suf: String = chars[chars.len().saturating_sub(3)..].iter().collect();
        f.push(format!("arc_msuf={suf}|{mu}"));
        f.push(format!("arc_hform={}|{mu}|{dir}", hf.to_lowercase()));
        f.push(format!("arc_mfh={lower}|{hu}|{dir}"));
        f.push(format!("arc_pdd={hu}|{mu}|{dir}{dist}"));
        span_features(toks, kids, h, m, hl, mu, dir, &mut f);
    }
    f
}

/// The words just outside the modifier's subtree (a comma or a bracket
/// before it marks `appos` and `parataxis`), the first word of that subtree,
/// and the number of nominal siblings on the modifier's side of the head
/// crossed with the head's lemma (a second object marks `iobj`).
///
/// # Complexity
/// O(size of the modifier's subtree + dependents of `h`).
#[allow(clippy::too_many_arguments)]
fn span_features(
    toks: &[Token],
    kids: &[Vec<usize>],
    h: usize,
    m: usize,
    hl: &str,
    mu: &str,
    dir: &str,
    f: &mut Vec<String>,
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
    let nominal = kids[h]
        .iter()
        .filter(|&&c| c != m && (c > h) == (m > h))
        .filter(|&&c| matches!(toks[c - 1].upos.as_str(), "NOUN" | "PRON" | "PROPN"))
        .count()
        .min(2);
    f.push(format!("arc_hlsib={hl}|{nominal}|{mu}|{dir}"));
    let (mut lo, mut hi) = (m, m);
    let mut stack = vec![m];
    while let Some(w) = stack.pop() {
        lo = lo.min(w);
        hi = hi.max(w);
        stack.extend(kids[w].iter().copied());
    }
    f.push(format!(
        "arc_span={}|{}|{mu}|{dir}",
        form(lo - 1),
        form(hi + 1)
    ));
    f.push(format!("arc_spanf={}|{mu}|{dir}", form(lo).to_lowercase()));
}

/// Features of the arc `h → m` that read the rest of the tree (`kids` =
/// [`dependents`] of its heads): the modifier's own dependents (a case
/// marker or an auxiliary below `m` tells `obl` from `obj` and `advcl` from
/// `xcomp`), the head's function words, the modifier's nearest siblings on
/// the same side of the head, and the head's own head.
///
/// # Complexity
/// O(dependents of `h` and of `m`).
fn tree_features(
    toks: &[Token],
    heads: &[usize],
    kids: &[Vec<usize>],
    h: usize,
    m: usize,
    f: &mut Vec<String>,
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
    for &c in &kids[m] {
        let t = &toks[c - 1];
        let side = if c < m { "L" } else { "R" };
        f.push(format!("arc_kid={}|{side}|{mu}", t.upos));
        if matches!(
            t.upos.as_str(),
            "ADP" | "SCONJ" | "AUX" | "PART" | "CCONJ" | "DET" | "PRON" | "PUNCT"
        ) {
            let w = t.form.to_lowercase();
            f.push(format!("arc_kidw={}|{w}|{mu}|{hu}", t.upos));
        }
    }
    f.push(format!("arc_nkids={}|{mu}", kids[m].len().min(3)));
    // the head's function words (a passive auxiliary marks nsubj:pass)
    for &c in &kids[h] {
        let t = &toks[c - 1];
        if c != m && matches!(t.upos.as_str(), "AUX" | "PART" | "SCONJ" | "ADP") {
            f.push(format!("arc_hkidw={}|{mu}|{dir}", t.form.to_lowercase()));
        }
    }
    // the nearest sibling between the head and the modifier, and beyond it
    let sibs = &kids[h];
    let at = sibs.partition_point(|&c| c < m);
    let before = at.checked_sub(1).map(|j| sibs[j]);
    let after = sibs.get(at + 1).copied();
    let (inner, outer) = if h < m {
        (before.filter(|&c| c > h), after)
    } else {
        (after.filter(|&c| c < h), before)
    };
    let name = |c: Option<usize>| c.map_or("<none>", upos);
    f.push(format!("arc_sib_in={}|{mu}|{hu}|{dir}", name(inner)));
    f.push(format!("arc_sib_out={}|{mu}|{hu}|{dir}", name(outer)));
    let g = if h == 0 { "<none>" } else { upos(heads[h - 1]) };
    f.push(format!("arc_gp={g}|{hu}|{mu}|{dir}"));
}
