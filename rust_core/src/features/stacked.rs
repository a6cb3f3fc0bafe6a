//! Features of a first-stage tree, read by a stacked parser (Martins, Das,
//! Smith and Xing 2008, "Stacking dependency parsers").
//!
//! A first parser predicts a tree; the second parser's words then carry
//! features that describe it, so its arc-factored templates see what a
//! first-order model cannot: where the first stage attached each word, with
//! which relation, to a word of which tag (and its head's tag and
//! relation), and which relations the first stage gave the word's own
//! dependents. The features join the word's FEATS
//! column, so every arc template that reads FEATS conjoins them with the
//! other word's tags and lemma and with the arc's direction and distance
//! (the modifier's feature "first-stage head 3 words to the left" in the
//! template `m.feat|dir+dist` fires, on the arc from the word 3 to the left,
//! the indicator "this is the first stage's arc"), and so do the label
//! stage's FEATS features. Their names start with `@`, which no UD feature
//! name does.
//!
//! # Example
//! ```
//! use omkl_core::features::stacked::{tree_feats, with_tree_feats};
//! let f = tree_feats(&["NOUN", "VERB"], &[2, 0], &["nsubj", "root"]).unwrap();
//! assert_eq!(f[0], "@off=+1|@rel=nsubj|@hupos=VERB|@gupos=<root>|@hrel=root");
//! assert_eq!(f[1], "@off=root|@rel=root|@hupos=<root>|@gupos=<none>|@hrel=<none>|@kid=nsubj<");
//! assert_eq!(with_tree_feats("_", &f[0]), f[0]);
//! assert_eq!(with_tree_feats("Number=Plur", &f[0]), format!("Number=Plur|{}", f[0]));
//! assert!(tree_feats(&["NOUN", "VERB"], &[3, 0], &["nsubj", "root"]).is_err());
//! ```

use crate::error::{OmklError, Result};
use crate::features::arc_distance::distance_bin;

/// The signed head offset `head - word`, its distance binned by
/// [`distance_bin`] as the arc templates bin it, or `root`.
fn offset_feat(word: usize, head: usize) -> String {
    if head == 0 {
        return "@off=root".to_string();
    }
    let bin = distance_bin(head, word);
    format!("@off={}{bin}", if head > word { '+' } else { '-' })
}

/// The FEATS items (joined by `|`) that describe the first-stage tree
/// `heads` (1-based, 0 = root, one per word) with relations `rels`, for
/// each word; `upos` is each word's UPOS. Per word: its head's offset, its
/// relation, the UPOS of its head and of its head's head, its head's
/// relation, and each distinct relation of its dependents with their side
/// (`<` left of it, `>` right). An error names the first
/// bad head or a length mismatch.
pub fn tree_feats(upos: &[&str], heads: &[usize], rels: &[&str]) -> Result<Vec<String>> {
    let n = upos.len();
    for (what, len) in [("heads", heads.len()), ("rels", rels.len())] {
        if len != n {
            return Err(OmklError::shape(
                what,
                format!("{n} entries (one per word)"),
                len.to_string(),
            ));
        }
    }
    if let Some((i, &h)) = heads
        .iter()
        .enumerate()
        .find(|&(i, &h)| h > n || h == i + 1)
    {
        return Err(OmklError::invalid(
            "heads",
            format!("word {} has head {h}; expected 0..={n}, not itself", i + 1),
        ));
    }
    let clean = |r: &str| r.replace(['|', ' ', '\t'], "_");
    let mut kids: Vec<Vec<String>> = vec![Vec::new(); n + 1];
    for (i, (&h, r)) in heads.iter().zip(rels).enumerate() {
        let side = if i + 1 < h { '<' } else { '>' };
        kids[h].push(format!("@kid={}{side}", clean(r)));
    }
    Ok((0..n)
        .map(|i| {
            let h = heads[i];
            let (head_tag, grand_tag, head_rel) = match h {
                0 => ("<root>", "<none>", "<none>"),
                h => {
                    let g = heads[h - 1];
                    (
                        upos[h - 1],
                        if g == 0 { "<root>" } else { upos[g - 1] },
                        rels[h - 1],
                    )
                }
            };
            let mut items = vec![
                offset_feat(i + 1, h),
                format!("@rel={}", clean(rels[i])),
                format!("@hupos={}", clean(head_tag)),
                format!("@gupos={}", clean(grand_tag)),
                format!("@hrel={}", clean(head_rel)),
            ];
            let mine = &mut kids[i + 1];
            mine.sort_unstable();
            mine.dedup();
            items.append(mine);
            items.join("|")
        })
        .collect())
}

/// A FEATS column (`_` or `A=B|C=D`) with the items `extra` appended.
pub fn with_tree_feats(feats: &str, extra: &str) -> String {
    if feats.is_empty() || feats == "_" {
        extra.to_string()
    } else {
        format!("{feats}|{extra}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_the_distance_bins() {
        assert_eq!(offset_feat(3, 0), "@off=root");
        assert_eq!(offset_feat(3, 1), "@off=-2");
        assert_eq!(offset_feat(3, 8), "@off=+5");
        assert_eq!(offset_feat(1, 9), "@off=+6");
        assert_eq!(offset_feat(20, 1), "@off=-7");
    }

    #[test]
    fn bad_trees_are_named() {
        let e = tree_feats(&["X"], &[1], &["root"]).unwrap_err().to_string();
        assert!(e.contains("word 1 has head 1"), "{e}");
        assert!(tree_feats(&["X"], &[0, 0], &["root"]).is_err());
        assert!(tree_feats(&["X", "Y"], &[0, 3], &["root", "dep"]).is_err());
    }

    #[test]
    fn dependents_are_listed_once_per_relation_and_side() {
        let f = tree_feats(
            &["A", "B", "C", "D"],
            &[2, 0, 2, 2],
            &["x", "root", "y", "y"],
        )
        .unwrap();
        assert_eq!(
            f[1],
            "@off=root|@rel=root|@hupos=<root>|@gupos=<none>|@hrel=<none>|@kid=x<|@kid=y>"
        );
        assert_eq!(f[3], "@off=-2|@rel=y|@hupos=B|@gupos=<root>|@hrel=root");
    }
}
