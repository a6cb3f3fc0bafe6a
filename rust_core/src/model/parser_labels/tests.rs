use super::*;
use crate::model::parser_label_feats::{arc_features, reference, test_sentences};

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
fn learns_hand_example_and_round_trips() {
    // "The dog saw a cat": det nsubj root det obj
    let s = vec![
        tok("The", "DET", "det"),
        tok("dog", "NOUN", "nsubj"),
        tok("saw", "VERB", "root"),
        tok("a", "DET", "det"),
        tok("cat", "NOUN", "obj"),
    ];
    let heads = [2, 3, 0, 5, 3];
    let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
    assert_eq!(lab.predict(&s, &heads).unwrap(), vec!["_"; 5]);
    for _ in 0..5 {
        lab.learn_sentence(&s, &heads, "s").unwrap();
    }
    let want = ["det", "nsubj", "root", "det", "obj"];
    assert_eq!(lab.predict(&s, &heads).unwrap(), want);
    let b = lab.to_bytes();
    let back = ArcLabeler::from_bytes(&b).unwrap();
    assert_eq!(back.to_bytes(), b);
    assert_eq!(back.predict(&s, &heads).unwrap(), want);
    assert!(ArcLabeler::from_bytes(&b[..b.len() - 2]).is_err());
    // a labeler with another table layout is refused, not misread
    let config = Alg1Config {
        loss: Loss::Hinge,
        schedule: Schedule::Constant { eta0: 0.1 },
        regularizers: vec![],
        radius: None,
        averaged: true,
        fit_intercept: false,
        clip_gradient: None,
    };
    let mut old = ArcLabeler {
        learner: NamedLearner::new(config, Grouping::by_prefix("_"), 1 << 13).unwrap(),
        frozen: None,
        labels: Vec::new(),
        version: LABELER_VERSION,
    };
    old.learn_sentence(&s, &heads, "s").unwrap();
    let err = ArcLabeler::from_bytes(&old.to_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("older layout"), "{err}");
    // weights of the version-1 features are refused, not misread
    let payload = crate::persist::open(&b, LABELER_FORMAT, &[LABELER_VERSION]).unwrap();
    let v1 = crate::persist::seal(LABELER_FORMAT, 1, payload);
    let err = ArcLabeler::from_bytes(&v1).unwrap_err().to_string();
    assert!(err.contains("version 1 is not supported"), "{err}");
}

#[test]
fn version_2_bytes_load_and_keep_their_features() {
    // "Sam, my friend, left": appos after a comma, nsubj, root
    let s = vec![
        tok("Sam", "PROPN", "nsubj"),
        tok(",", "PUNCT", "punct"),
        tok("my", "PRON", "nmod:poss"),
        tok("friend", "NOUN", "appos"),
        tok(",", "PUNCT", "punct"),
        tok("left", "VERB", "root"),
    ];
    let heads = [6, 4, 4, 1, 4, 0];
    let new = arc_features(&s, &heads, 1, 4, true);
    let old = arc_features(&s, &heads, 1, 4, false);
    // the subtree of "friend" spans ", my friend ," (words 2 to 5)
    assert!(
        new.contains(&"arc_span=Sam|left|NOUN|R".to_string()),
        "{new:?}"
    );
    assert!(new.contains(&"arc_spanf=,|NOUN|R".to_string()), "{new:?}");
    assert!(
        new.contains(&"arc_hlsib=sam|0|NOUN|R".to_string()),
        "{new:?}"
    );
    assert_eq!(new[..old.len()], old[..]);
    assert!(old.iter().all(|n| !n.starts_with("arc_span")));
    // a labeler of version 2 (its table and features) saves and loads as one
    let mut v2 = ArcLabeler::new(0.1, 1e-6).unwrap();
    v2.learner = NamedLearner::new(
        v2.learner.model().config.clone(),
        Grouping::by_prefix("_"),
        V2_TABLE_BUCKETS,
    )
    .unwrap();
    v2.version = 2;
    for _ in 0..5 {
        v2.learn_sentence(&s, &heads, "s").unwrap();
    }
    let b = v2.to_bytes();
    assert_eq!(crate::persist::peek(&b).unwrap().version, 2);
    let back = ArcLabeler::from_bytes(&b).unwrap();
    assert_eq!(back.version, 2);
    assert_eq!(back, v2);
    let want: Vec<String> = s.iter().map(|t| t.deprel.clone()).collect();
    assert_eq!(back.predict(&s, &heads).unwrap(), want);
    // version 2 bytes with version 3's table size are refused
    let v3 = ArcLabeler::new(0.1, 1e-6).unwrap();
    let v3_bytes = v3.to_bytes();
    let payload = crate::persist::open(&v3_bytes, LABELER_FORMAT, &[3]).unwrap();
    let err = ArcLabeler::from_bytes(&crate::persist::seal(LABELER_FORMAT, 2, payload));
    assert!(err.unwrap_err().to_string().contains("older layout"));
}

#[test]
fn the_modifiers_dependents_tell_relations_apart() {
    // "sat on mats" (obl, with a case marker) against "ate mats" (obj)
    let obl = vec![
        tok("sat", "VERB", "root"),
        tok("on", "ADP", "case"),
        tok("mats", "NOUN", "obl"),
    ];
    let obj = vec![tok("ate", "VERB", "root"), tok("mats", "NOUN", "obj")];
    let (h_obl, h_obj) = ([0, 3, 1], [0, 1]);
    let names = arc_features(&obl, &h_obl, 1, 3, true);
    assert!(
        names.contains(&"arc_kidw=ADP|on|NOUN|VERB".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"arc_nkids=1|NOUN".to_string()), "{names:?}");
    let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
    for _ in 0..5 {
        lab.learn_sentence(&obl, &h_obl, "a").unwrap();
        lab.learn_sentence(&obj, &h_obj, "b").unwrap();
    }
    assert_eq!(lab.predict(&obl, &h_obl).unwrap(), ["root", "case", "obl"]);
    assert_eq!(lab.predict(&obj, &h_obj).unwrap(), ["root", "obj"]);
}

#[test]
fn all_features_share_one_table() {
    let s = vec![tok("The", "DET", "det"), tok("dog", "NOUN", "root")];
    let names = arc_features(&s, &[2, 0], 2, 1, true);
    assert!(names.len() > 15);
    assert!(names.iter().all(|n| n.starts_with("arc_")));
    let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
    lab.learn_sentence(&s, &[2, 0], "s").unwrap();
    assert_eq!(lab.learner.space().group_names(), ["arc"]);
}

#[test]
fn bad_input_is_an_error_and_changes_nothing() {
    let s = vec![tok("a", "X", "dep"), tok("b", "Y", "_")];
    let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
    let before = lab.to_bytes();
    assert!(lab
        .learn_sentence(&s, &[2, 0], "s3")
        .unwrap_err()
        .to_string()
        .contains("s3"));
    assert!(lab.learn_sentence(&s[..1], &[0, 1], "s4").is_err());
    assert!(lab
        .learn_sentence(&s, &[2, 1], "s5")
        .unwrap_err()
        .to_string()
        .contains("cycle"));
    assert!(lab.learn_sentence(&[], &[], "s6").is_err());
    assert_eq!(lab.to_bytes(), before);
}

/// A labeler that learns and predicts from the names of
/// [`reference::arc_features`] through [`NamedLearner::learn`] and
/// [`NamedLearner::scores`], one `String` per feature.
struct NamedReference {
    lab: ArcLabeler,
}

impl NamedReference {
    fn learn_sentence(&mut self, toks: &[Token], heads: &[usize]) -> f64 {
        let lab = &mut self.lab;
        let kids = reference::dependents(heads);
        let mut total = 0.0;
        for (i, t) in toks.iter().enumerate() {
            let k = match lab.labels.iter().position(|l| *l == t.deprel) {
                Some(k) => k,
                None => {
                    lab.labels.push(t.deprel.clone());
                    lab.labels.len() - 1
                }
            };
            let ext = lab.version >= 3;
            let names = reference::arc_features(toks, heads, &kids, heads[i], i + 1, ext);
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let values = vec![1.0; refs.len()];
            total += lab.learner.learn(&refs, &values, Target::Class(k)).unwrap();
        }
        total
    }

    fn predict(lab: &ArcLabeler, toks: &[Token], heads: &[usize]) -> Vec<String> {
        let kids = reference::dependents(heads);
        (0..toks.len())
            .map(|i| {
                let ext = lab.version >= 3;
                let names = reference::arc_features(toks, heads, &kids, heads[i], i + 1, ext);
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let values = vec![1.0; refs.len()];
                let z = match &lab.frozen {
                    Some(f) => f.scores(&refs, &values).unwrap(),
                    None => lab.learner.scores(&refs, &values).unwrap(),
                };
                let n = z.len().min(lab.labels.len());
                let best = (0..n).fold(0, |b, k| if z[k] > z[b] { k } else { b });
                lab.labels[best].clone()
            })
            .collect()
    }
}

#[test]
fn hashed_features_train_and_predict_as_the_named_ones() {
    let sents = test_sentences();
    for version in [2, LABELER_VERSION] {
        let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
        if version == 2 {
            let config = lab.learner.model().config.clone();
            lab.learner = NamedLearner::new(config, label_grouping(), V2_TABLE_BUCKETS).unwrap();
            lab.version = 2;
        }
        let mut named = NamedReference { lab: lab.clone() };
        for _ in 0..3 {
            for (toks, heads) in &sents {
                let a = lab.learn_sentence(toks, heads, "s").unwrap();
                let b = named.learn_sentence(toks, heads);
                assert_eq!(a.to_bits(), b.to_bits());
            }
        }
        // the same buckets and values: the same weights and bytes
        assert_eq!(lab, named.lab);
        assert_eq!(lab.to_bytes(), named.lab.to_bytes());
        let mut frozen = lab.clone();
        frozen.freeze().unwrap();
        let mut right = 0;
        for (toks, heads) in &sents {
            let got = lab.predict(toks, heads).unwrap();
            assert_eq!(got, NamedReference::predict(&lab, toks, heads));
            let got_frozen = frozen.predict(toks, heads).unwrap();
            assert_eq!(got_frozen, NamedReference::predict(&frozen, toks, heads));
            right += got
                .iter()
                .zip(toks)
                .filter(|(p, t)| **p == t.deprel)
                .count();
        }
        // the scores are not all ties: the model learned the relations
        let words: usize = sents.iter().map(|(t, _)| t.len()).sum();
        assert!(right * 2 > words, "{right} of {words}");
    }
}

#[test]
fn another_grouping_is_refused() {
    let s = vec![tok("The", "DET", "det"), tok("dog", "NOUN", "root")];
    let mut lab = ArcLabeler::new(0.1, 1e-6).unwrap();
    let config = lab.learner.model().config.clone();
    lab.learner = NamedLearner::new(config, Grouping::by_prefix("="), LABEL_TABLE_BUCKETS).unwrap();
    lab.learner
        .learn(&["arc=x"], &[1.0], Target::Class(0))
        .unwrap();
    lab.labels = vec!["det".into()];
    let err = ArcLabeler::from_bytes(&lab.to_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("grouped by"), "{err}");
    let _ = s;
}
