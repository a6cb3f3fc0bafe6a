#![allow(clippy::needless_range_loop)]
//! Alg. 1 with the scale-factor storage against a plain dense implementation
//! (gradient step, `Regularizer::prox` on the whole vector, projection,
//! explicit running average), iterate by iterate on random data.

use omkl_core::features::SparseExample;
use omkl_core::learner::{Alg1Config, Loss, OnlineProximal, Schedule, Target};
use omkl_core::prox::Regularizer;
use proptest::prelude::*;

struct Dense {
    w: Vec<f64>,
    b: Vec<f64>,
    sum: Vec<f64>,
    t: u64,
}

const NG: usize = 3;
const NB: usize = 4;

fn dense_round(d: &mut Dense, c: &Alg1Config, x: &SparseExample, y: Target, k: usize) {
    let mut z = d.b.clone();
    for i in 0..x.len() {
        let base = (x.groups[i] as usize * NB + x.indices[i] as usize) * k;
        for (kk, zk) in z.iter_mut().enumerate() {
            *zk += x.values[i] * d.w[base + kk];
        }
    }
    let mut g = vec![0.0; k];
    c.loss.loss_grad(&z, y, &mut g).unwrap();
    d.t += 1;
    let eta = c.schedule.rate(d.t);
    for i in 0..x.len() {
        let base = (x.groups[i] as usize * NB + x.indices[i] as usize) * k;
        for kk in 0..k {
            d.w[base + kk] -= eta * x.values[i] * g[kk];
        }
    }
    if c.fit_intercept {
        for kk in 0..k {
            d.b[kk] -= eta * g[kk];
        }
    }
    let offsets: Vec<usize> = (0..=NG).map(|gi| gi * NB * k).collect();
    for r in &c.regularizers {
        r.prox(&mut d.w, &offsets, eta).unwrap();
    }
    if let Some(gamma) = c.radius {
        let n = d.w.iter().map(|v| v * v).sum::<f64>().sqrt();
        if n > gamma {
            d.w.iter_mut().for_each(|v| *v *= gamma / n);
        }
    }
    for (s, v) in d.sum.iter_mut().zip(&d.w) {
        *s += v;
    }
}

fn regs() -> impl Strategy<Value = Vec<Regularizer>> {
    let one = prop_oneof![
        (0.0..0.5f64).prop_map(|lam| Regularizer::GroupLasso { lam }),
        (0.0..0.5f64).prop_map(|lam| Regularizer::SquaredL21 { lam }),
        (0.0..0.5f64).prop_map(|lam| Regularizer::L2Squared { lam }),
        (0.0..0.2f64).prop_map(|lam| Regularizer::L1 { lam }),
        (0.0..0.2f64, 0.0..0.2f64)
            .prop_map(|(lam1, lam2)| Regularizer::SparseGroupLasso { lam1, lam2 }),
        (0.0..0.5f64, 0.0..1.0f64)
            .prop_map(|(lam, l1_ratio)| Regularizer::ElasticNetMkl { lam, l1_ratio }),
        (0.0..0.5f64, 1.0..3.0f64).prop_map(|(lam, q)| Regularizer::L2q { lam, q }),
        (0.5..3.0f64).prop_map(|radius| Regularizer::L21Ball { radius }),
    ];
    prop::collection::vec(one, 0..3)
}

fn example() -> impl Strategy<Value = (SparseExample, usize)> {
    (
        prop::collection::vec((0..NG as u32, 0..NB as u32, -2.0..2.0f64), 1..5),
        0..3usize,
    )
        .prop_map(|(es, y)| {
            let mut x = SparseExample::default();
            for (g, b, v) in es {
                x.push(g, b, v);
            }
            (x, y)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn scaled_alg1_equals_dense_alg1(
        regularizers in regs(),
        loss in prop_oneof![Just(Loss::Hinge), Just(Loss::Logistic), Just(Loss::Squared)],
        schedule in prop_oneof![
            (0.05..1.0f64).prop_map(|eta0| Schedule::Constant { eta0 }),
            (0.05..1.0f64).prop_map(|eta0| Schedule::InvSqrt { eta0 }),
            (0.5..5.0f64).prop_map(|sigma| Schedule::InvLinear { sigma }),
        ],
        radius in prop::option::of(0.5..5.0f64),
        fit_intercept in any::<bool>(),
        data in prop::collection::vec(example(), 1..40),
    ) {
        let k = if loss == Loss::Squared { 1 } else { 3 };
        for averaged in [false, true] {
            let c = Alg1Config { loss, schedule, regularizers: regularizers.clone(), radius, averaged, fit_intercept, clip_gradient: None };
            let mut m = OnlineProximal::new(c.clone(), NG, NB, k).unwrap();
            let mut d = Dense { w: vec![0.0; NG * NB * k], b: vec![0.0; k], sum: vec![0.0; NG * NB * k], t: 0 };
            for (x, y) in &data {
                let target = if loss == Loss::Squared { Target::Value(*y as f64 - 1.0) } else { Target::Class(*y) };
                m.learn(x, target).unwrap();
                dense_round(&mut d, &c, x, target, k);
                let want: Vec<f64> = if averaged {
                    d.sum.iter().map(|s| s / d.t as f64).collect()
                } else {
                    d.w.clone()
                };
                let got = m.dense_weights();
                for (a, b) in got.iter().zip(&want) {
                    prop_assert!((a - b).abs() <= 1e-8 * (1.0 + b.abs()), "round {}: {:?} vs {:?}", d.t, got, want);
                }
                let norms = m.group_norms();
                for g in 0..NG {
                    let per = NB * k;
                    let n = want[g * per..(g + 1) * per].iter().map(|v| v * v).sum::<f64>().sqrt();
                    prop_assert!((norms[g] - n).abs() <= 1e-8 * (1.0 + n));
                }
                let z = m.scores(x).unwrap();
                prop_assert_eq!(z.len(), k);
            }
        }
    }
}

#[test]
fn failed_learn_leaves_the_model_unchanged() {
    let c = Alg1Config {
        loss: Loss::Logistic,
        schedule: Schedule::Constant { eta0: 0.1 },
        regularizers: vec![Regularizer::GroupLasso { lam: 0.1 }],
        radius: None,
        averaged: true,
        fit_intercept: true,
        clip_gradient: None,
    };
    let mut m = OnlineProximal::new(c, 2, 4, 2).unwrap();
    let mut x = SparseExample::default();
    x.push(0, 1, 1.0);
    m.learn(&x, Target::Class(1)).unwrap();
    let before = m.clone();
    let mut bad = x.clone();
    bad.push(1, 0, f64::NAN);
    assert!(m
        .learn(&bad, Target::Class(0))
        .unwrap_err()
        .to_string()
        .contains("values"));
    let mut bad = x.clone();
    bad.push(2, 0, 1.0);
    assert!(m.learn(&bad, Target::Class(0)).is_err());
    assert!(m.learn(&x, Target::Class(2)).is_err());
    assert!(m.learn(&x, Target::Value(1.0)).is_err());
    let mut huge = x.clone();
    huge.values[0] = 1e200;
    assert!(m
        .learn(&huge, Target::Class(0))
        .unwrap_err()
        .to_string()
        .contains("too large"));
    huge.values[0] = 1e308;
    huge.push(0, 1, 1e308);
    assert!(m.learn(&huge, Target::Class(0)).is_err());
    assert_eq!(m, before);
}
