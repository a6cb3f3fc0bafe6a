//! Stacked features of the label stage: the relations that a first labeler
//! predicted for the same tree, read around the arc `h → m` (the arc's own
//! relation, the head's, the nearest siblings', the modifier's
//! dependents', and whether a sibling got the same relation). A second
//! labeler trained on these (with first-pass relations predicted by
//! jackknifing, so that it sees the first pass's errors) corrects the
//! first.

use crate::model::conllu::Token;

/// Appends the stacked features of the arc `h → m` (1-based words, 0 =
/// root) of the tree whose dependents are `kids`, from the first pass's
/// relations `prev` (one per word).
///
/// # Complexity
/// O(dependents of `h` and of `m`).
pub(crate) fn stack_features(
    toks: &[Token],
    kids: &[Vec<usize>],
    prev: &[String],
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
    let rel = |i: usize| -> &str {
        if i == 0 {
            "<root>"
        } else {
            &prev[i - 1]
        }
    };
    let (mu, hu) = (upos(m), upos(h));
    let dir = if h < m { "R" } else { "L" };
    let own = rel(m);
    f.push(format!("arc_s_own={own}"));
    f.push(format!("arc_s_ownp={own}|{hu}|{mu}|{dir}"));
    f.push(format!("arc_s_h={}|{own}", rel(h)));
    f.push(format!("arc_s_hm={}|{mu}|{dir}", rel(h)));
    let sibs = &kids[h];
    let at = sibs.iter().position(|&s| s == m).unwrap_or(0);
    let left = if at > 0 { rel(sibs[at - 1]) } else { "<none>" };
    let right = sibs.get(at + 1).map_or("<none>", |&s| rel(s));
    f.push(format!("arc_s_ls={left}|{own}"));
    f.push(format!("arc_s_rs={right}|{own}"));
    let same = sibs.iter().filter(|&&s| s != m && rel(s) == own).count();
    f.push(format!("arc_s_dup={own}|{}|{dir}", same.min(2)));
    for &c in &kids[m] {
        f.push(format!("arc_s_kid={}|{own}", rel(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parser_label_feats::dependents;
    use crate::model::parser_labels::ArcLabeler;

    fn tok(f: &str, u: &str, d: &str) -> Token {
        Token {
            form: f.into(),
            lemma: f.to_lowercase(),
            upos: u.into(),
            xpos: u.into(),
            feats: "_".into(),
            head: None,
            deprel: d.into(),
        }
    }

    #[test]
    fn reads_the_first_pass_around_the_arc_and_checks_its_length() {
        // "dogs cats chase": two words the first pass called nsubj
        let s = vec![
            tok("dogs", "NOUN", "nsubj"),
            tok("cats", "NOUN", "obj"),
            tok("chase", "VERB", "root"),
        ];
        let heads = [3, 3, 0];
        let prev: Vec<String> = ["nsubj", "nsubj", "root"].map(String::from).to_vec();
        let mut f = Vec::new();
        stack_features(&s, &dependents(&heads), &prev, 3, 2, &mut f);
        for want in [
            "arc_s_own=nsubj",
            "arc_s_h=root|nsubj",
            "arc_s_ls=nsubj|nsubj",
            "arc_s_rs=<none>|nsubj",
            "arc_s_dup=nsubj|1|L",
        ] {
            assert!(f.contains(&want.to_string()), "{want}: {f:?}");
        }
        let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
        let before = lab.to_bytes();
        let e = lab.learn_sentence_stacked(&s, &heads, &prev[..2], "s1");
        assert!(e.unwrap_err().to_string().contains("expected 3 relations"));
        assert_eq!(lab.to_bytes(), before);
        for _ in 0..5 {
            lab.learn_sentence_stacked(&s, &heads, &prev, "s1").unwrap();
        }
        let got = lab.predict_stacked(
            &s,
            &heads,
            &prev,
            crate::model::parser_label_decode::LabelDecode::Exact,
        );
        assert_eq!(got.unwrap(), ["nsubj", "obj", "root"]);
    }
}
