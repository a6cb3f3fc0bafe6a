//! The scale-factor storage and its lazy average against a dense reference,
//! iterate by iterate, on random operation sequences.

use omkl_core::learner::GroupedWeights;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Axpy {
        g: usize,
        b: usize,
        alpha: f64,
        d: Vec<f64>,
    },
    Rescale {
        g: usize,
        c: f64,
    },
    SoftThreshold {
        tau: f64,
    },
    EndRound,
}

fn op(n_groups: usize, n_buckets: usize, k: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..n_groups, 0..n_buckets, -2.0..2.0f64, prop::collection::vec(-1.0..1.0f64, k))
            .prop_map(|(g, b, alpha, d)| Op::Axpy { g, b, alpha, d }),
        // c = 0 zeroes a group; tiny and huge c force the scale to be folded.
        2 => (0..n_groups, prop_oneof![Just(0.0), 0.2..1.5f64, Just(1e-11), Just(3e10)])
            .prop_map(|(g, c)| Op::Rescale { g, c }),
        1 => (0.0..0.3f64).prop_map(|tau| Op::SoftThreshold { tau }),
        3 => Just(Op::EndRound),
    ]
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn scaled_storage_equals_dense_reference(ops in prop::collection::vec(op(3, 4, 2), 1..80)) {
        let (ng, nb, k) = (3, 4, 2);
        let mut w = GroupedWeights::new(ng, nb, k, true).unwrap();
        let per = nb * k;
        let mut dense = vec![0.0; ng * per];
        let mut sum = vec![0.0; ng * per];
        let mut rounds = 0u64;
        for o in &ops {
            match o {
                Op::Axpy { g, b, alpha, d } => {
                    w.axpy_bucket(*g, *b, *alpha, d);
                    for kk in 0..k {
                        dense[(g * nb + b) * k + kk] += alpha * d[kk];
                    }
                }
                Op::Rescale { g, c } => {
                    w.rescale_group(*g, *c);
                    for v in &mut dense[g * per..(g + 1) * per] {
                        *v *= c;
                    }
                }
                Op::SoftThreshold { tau } => {
                    let tau = *tau;
                    w.apply_to_written(|x: &mut [f64], _off: &[usize]| -> Result<(), ()> {
                        for v in x.iter_mut() {
                            *v = v.signum() * (v.abs() - tau).max(0.0);
                        }
                        Ok(())
                    }).unwrap();
                    for v in dense.iter_mut() {
                        *v = v.signum() * (v.abs() - tau).max(0.0);
                    }
                }
                Op::EndRound => {
                    w.end_round();
                    rounds += 1;
                    for (s, v) in sum.iter_mut().zip(&dense) {
                        *s += v;
                    }
                }
            }
            prop_assert!(close(&w.dense(), &dense), "{:?} vs {:?}", w.dense(), dense);
            let norms = w.exact_group_norms();
            for g in 0..ng {
                let n = dense[g * per..(g + 1) * per].iter().map(|v| v * v).sum::<f64>().sqrt();
                let tracked = w.blocks()[g].sq_norm().sqrt();
                prop_assert!((tracked - n).abs() <= 1e-8 * (1.0 + n));
                prop_assert!((norms[g] - n).abs() <= 1e-12 * (1.0 + n), "{} vs {n}", norms[g]);
            }
            if rounds > 0 {
                let avg: Vec<f64> = sum.iter().map(|s| s / rounds as f64).collect();
                prop_assert!(close(&w.averaged_dense(), &avg), "{:?} vs {:?}", w.averaged_dense(), avg);
            }
        }
    }
}

#[test]
fn growing_outputs_and_groups_keeps_weights_and_averages() {
    let mut w = GroupedWeights::new(1, 3, 1, true).unwrap();
    w.axpy_bucket(0, 2, 1.0, &[2.0]);
    w.end_round();
    w.rescale_group(0, 0.5);
    w.end_round();
    w.resize_outputs(3, true).unwrap();
    w.reserve(2, 3).unwrap();
    w.axpy_bucket(1, 0, 1.0, &[0.0, 0.0, 4.0]);
    w.end_round();
    assert_eq!(w.weight(0, 2, 0), 1.0);
    assert_eq!(w.weight(0, 2, 2), 0.0);
    assert_eq!(w.weight(1, 0, 2), 4.0);
    assert!((w.averaged_weight(0, 2, 0) - (2.0 + 1.0 + 1.0) / 3.0).abs() < 1e-12);
    assert!((w.averaged_weight(1, 0, 2) - 4.0 / 3.0).abs() < 1e-12);
}

/// Weights too large for memory are refused with an allocation error naming
/// what was asked, not a panic or an abort.
#[test]
fn weights_too_large_for_memory_are_an_allocation_error() {
    match GroupedWeights::new(1, 1 << 60, 4, true) {
        Err(omkl_core::OmklError::Alloc { what, bytes }) => {
            assert_eq!(what, "n_buckets");
            assert!(bytes >= 1 << 62, "{bytes}");
        }
        other => panic!("expected an allocation error, got {other:?}"),
    }
}
