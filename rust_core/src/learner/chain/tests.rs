use super::*;
use crate::learner::{Loss, Schedule};
use crate::prox::Regularizer;

fn config(loss: Loss) -> Alg1Config {
    let regularizers = vec![Regularizer::SquaredL21 { lam: 1e-3 }];
    Alg1Config {
        averaged: true,
        ..Alg1Config::new(loss, Schedule::InvSqrt { eta0: 0.5 }, regularizers)
    }
}

/// Position features "w=<i>" (the label is the token id mod 3) and a
/// noise template.
/// Offsets, groups, buckets, values and labels of a sentence.
type Sentence = (
    Vec<usize>,
    Vec<&'static str>,
    Vec<u32>,
    Vec<f64>,
    Vec<usize>,
);

fn sentence(i: usize) -> Sentence {
    let n = 2 + i % 4;
    let (mut indptr, mut groups, mut buckets, mut values, mut y) =
        (vec![0], vec![], vec![], vec![], vec![]);
    for p in 0..n {
        let tok = (i * 7 + p * 3) % 11;
        groups.extend(["w", "noise"]);
        buckets.extend([tok as u32, ((i * 13 + p) % 17) as u32]);
        values.extend([1.0, 1.0]);
        indptr.push(groups.len());
        y.push(tok % 3);
    }
    (indptr, groups, buckets, values, y)
}

#[test]
fn learns_a_chain_and_fails_without_change() {
    for loss in [Loss::Hinge, Loss::Logistic] {
        let mut m = NamedLearner::new_chain(config(loss), BTreeMap::new(), 32).unwrap();
        let mut label_ids: Vec<usize> = Vec::new();
        for i in 0..300 {
            let (indptr, groups, buckets, values, y) = sentence(i);
            // labels get ids in order of first appearance
            let labels: Vec<usize> = y
                .iter()
                .map(|&v| match label_ids.iter().position(|&u| u == v) {
                    Some(j) => j,
                    None => {
                        label_ids.push(v);
                        label_ids.len() - 1
                    }
                })
                .collect();
            let x = NamedSequence {
                indptr: &indptr,
                groups: &groups,
                buckets: &buckets,
                values: &values,
            };
            m.learn_sequence(&x, &labels).unwrap();
        }
        assert_eq!(m.model().n_outputs(), 3);
        let (indptr, groups, buckets, values, y) = sentence(5);
        let ids = m.chain_groups(&groups).unwrap();
        let seq = SparseBatch {
            indptr,
            groups: ids,
            indices: buckets.clone(),
            values: values.clone(),
        };
        let want: Vec<usize> = y
            .iter()
            .map(|v| label_ids.iter().position(|u| u == v).unwrap())
            .collect();
        assert_eq!(m.model().predict_chain(&seq).unwrap(), want);
        let mu = m.model().chain_marginals(&seq).unwrap();
        for row in mu.chunks(3) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        let back = NamedLearner::from_bytes(&m.to_bytes()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.model().predict_chain(&seq).unwrap(), want);
        let before = m.clone();
        let bad = NamedSequence {
            indptr: &[0, 1],
            groups: &["w"],
            buckets: &[0],
            values: &[f64::NAN],
        };
        assert!(m
            .learn_sequence(&bad, &[0])
            .unwrap_err()
            .to_string()
            .contains("\"w\""));
        let bad = NamedSequence {
            indptr: &[0, 1],
            groups: &["new"],
            buckets: &[0],
            values: &[1.0],
        };
        assert!(m.learn_sequence(&bad, &[9]).is_err());
        let bad = NamedSequence {
            indptr: &[0, 1],
            groups: &[TRANSITIONS],
            buckets: &[0],
            values: &[1.0],
        };
        assert!(m.learn_sequence(&bad, &[0]).is_err());
        assert_eq!(m, before);
        assert_eq!(m.space().n_groups(), before.space().n_groups());
    }
}

#[test]
fn a_checked_round_is_the_round_and_the_check_refuses_what_the_round_does() {
    let mut a = NamedLearner::new_chain(config(Loss::Hinge), BTreeMap::new(), 32).unwrap();
    let seqs: Vec<(SparseBatch, Vec<usize>)> = (0..60)
        .map(|i| {
            let (indptr, groups, buckets, values, y) = sentence(i);
            let ids = a.chain_groups(&groups).unwrap();
            let seq = SparseBatch {
                indptr,
                groups: ids,
                indices: buckets,
                values,
            };
            (seq, y)
        })
        .collect();
    let mut b = a.clone();
    let dims = a.model().chain_dims().unwrap();
    for (seq, y) in &seqs {
        a.model_mut().ensure_chain_labels(3).unwrap();
        b.model_mut().ensure_chain_labels(3).unwrap();
        b.model().check_chain_entries(seq).unwrap();
        let la = a.model_mut().learn_chain(seq, y).unwrap();
        let lb = b.model_mut().learn_checked_chain(seq, y).unwrap();
        assert_eq!(la.to_bits(), lb.to_bits());
    }
    assert_eq!(a, b);
    assert_eq!(b.model().chain_dims().unwrap(), dims);
    // the labels are still checked, and a refused round changes nothing
    let before = b.clone();
    assert!(b.model_mut().learn_checked_chain(&seqs[0].0, &[0]).is_err());
    assert!(b
        .model_mut()
        .learn_checked_chain(&seqs[0].0, &[7, 0])
        .is_err());
    assert_eq!(b, before);
    let gt = dims.2 as u32;
    for (group, bucket, value) in [(gt, 0, 1.0), (0, 32, 1.0), (0, 0, f64::NAN)] {
        let bad = SparseBatch {
            indptr: vec![0, 1],
            groups: vec![group],
            indices: vec![bucket],
            values: vec![value],
        };
        assert!(b.model().check_chain_entries(&bad).is_err());
        assert!(b.model_mut().learn_chain(&bad, &[0]).is_err());
    }
    assert_eq!(b, before);
}
