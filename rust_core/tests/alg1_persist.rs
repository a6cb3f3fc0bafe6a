//! Alg. 1 bytes as earlier versions wrote them (a group zeroed with scale
//! 0, accumulators with `last ≠ 0`) load to the same running sums.

use omkl_core::features::Grouping;
use omkl_core::learner::named::NamedLearner;
use omkl_core::learner::persist::{FORMAT, VERSION};
use omkl_core::learner::{Alg1Config, Loss, Schedule, Target};
use omkl_core::persist::{open, seal};
use omkl_core::prox::Regularizer;

#[test]
fn zeroed_groups_and_shifted_accumulators_load_to_the_same_averages() {
    let config = Alg1Config {
        loss: Loss::Hinge,
        schedule: Schedule::Constant { eta0: 0.5 },
        regularizers: vec![Regularizer::GroupLasso { lam: 0.01 }],
        radius: None,
        averaged: true,
        fit_intercept: true,
        clip_gradient: None,
    };
    let mut m = NamedLearner::new(config, Grouping::by_prefix("_"), 8).unwrap();
    for i in 0..20 {
        let names = [format!("a_{}", i % 5), format!("b_{}", i % 2)];
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        m.learn(&names, &[1.0, 1.0], Target::Class(i % 2)).unwrap();
    }
    let w = m.model().weights();
    let (avg, per) = (w.averaged_dense(), w.n_buckets() * w.n_outputs());
    let bytes = m.to_bytes();
    let mut v: serde_json::Value =
        serde_json::from_slice(open(&bytes, FORMAT, &[VERSION]).unwrap()).unwrap();
    let g = &mut v["groups"][0];
    g["scale"] = 0.0.into();
    let n = g["raw"].as_array().unwrap().len();
    assert!((0..n).any(|i| g["raw"][i].as_f64() != Some(0.0)));
    for i in 0..n {
        let (raw, acc) = (g["raw"][i].as_f64().unwrap(), g["acc"][i].as_f64().unwrap());
        g["last"][i] = 0.75.into();
        g["acc"][i] = (acc + raw * 0.75).into();
    }
    let data = seal(FORMAT, VERSION, &serde_json::to_vec(&v).unwrap());
    let back = NamedLearner::from_bytes(&data).unwrap();
    let w = back.model().weights();
    assert!(w.dense()[..per].iter().all(|&v| v == 0.0));
    for (a, b) in w.averaged_dense().iter().zip(&avg) {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
    }
}
