//! Alg. 1's reactions to a detected drift: restarting the step-size
//! schedule and zeroing the weights, and their persistence.

use omkl_core::features::{Grouping, SparseExample};
use omkl_core::learner::named::NamedLearner;
use omkl_core::learner::{Alg1Config, Loss, OnlineProximal, Schedule, Target};

fn config(loss: Loss, averaged: bool) -> Alg1Config {
    Alg1Config {
        loss,
        schedule: Schedule::InvSqrt { eta0: 0.5 },
        regularizers: vec![],
        radius: None,
        averaged,
        fit_intercept: false,
        clip_gradient: None,
    }
}

fn one_feature(v: f64) -> SparseExample {
    let mut x = SparseExample::default();
    x.push(0, 0, v);
    x
}

/// The weight change of one squared-loss round on `x = (1)`, target `y`.
fn step(m: &mut OnlineProximal, y: f64) -> (f64, f64) {
    let x = one_feature(1.0);
    let before = m.scores(&x).unwrap()[0];
    m.learn(&x, Target::Value(y)).unwrap();
    let after = m.scores(&x).unwrap()[0];
    (before, after - before)
}

#[test]
fn a_restarted_schedule_takes_the_first_step_again() {
    let mut m = OnlineProximal::new(config(Loss::Squared, false), 1, 4, 1).unwrap();
    for _ in 0..10 {
        step(&mut m, 1.0);
    }
    // without a restart the 11th step is eta0 / sqrt(11) times the residual
    let mut plain = m.clone();
    let (w, dw) = step(&mut plain, 3.0);
    assert!((dw - 0.5 / 11f64.sqrt() * (3.0 - w)).abs() < 1e-12);
    m.restart_schedule();
    assert_eq!(m.rounds(), 10);
    let (w, dw) = step(&mut m, 3.0);
    assert!(
        (dw - 0.5 * (3.0 - w)).abs() < 1e-12,
        "{dw} vs {}",
        0.5 * (3.0 - w)
    );
    // and the schedule goes on from there: the next step is eta0 / sqrt(2)
    let (w, dw) = step(&mut m, 3.0);
    assert!((dw - 0.5 / 2f64.sqrt() * (3.0 - w)).abs() < 1e-12);
}

#[test]
fn a_reset_zeroes_the_weights_and_keeps_the_average_of_the_rounds_before() {
    let mut m = OnlineProximal::new(config(Loss::Hinge, true), 2, 8, 3).unwrap();
    let mut x = SparseExample::default();
    x.push(0, 1, 1.0);
    x.push(1, 5, -2.0);
    for i in 0..6 {
        m.learn(&x, Target::Class(i % 3)).unwrap();
    }
    let averaged_before = m.dense_weights();
    let norms_before = m.group_norms();
    m.reset_weights();
    assert_eq!(m.rounds(), 6);
    // the averaged model still is the mean of the 6 iterates (the 7th, zero,
    // not yet counted)
    assert_eq!(m.dense_weights(), averaged_before);
    assert_eq!(m.group_norms(), norms_before);
    let mut fresh = OnlineProximal::new(config(Loss::Hinge, true), 2, 8, 3).unwrap();
    m.learn(&x, Target::Class(2)).unwrap();
    fresh.learn(&x, Target::Class(2)).unwrap();
    // the 7th round's iterate is a fresh model's first: the average over 7
    // rounds is (6 · before + first) / 7
    let first = fresh.dense_weights();
    for ((a, b), f) in m.dense_weights().iter().zip(&averaged_before).zip(&first) {
        assert!(
            (a - (6.0 * b + f) / 7.0).abs() < 1e-12,
            "{a} vs {}",
            (6.0 * b + f) / 7.0
        );
    }
}

#[test]
fn the_schedule_restart_survives_a_save() {
    let mut m =
        NamedLearner::new(config(Loss::Squared, true), Grouping::by_prefix("_"), 16).unwrap();
    for i in 0..5 {
        m.learn(&["a_x", "b_y"], &[1.0, i as f64], Target::Value(2.0))
            .unwrap();
    }
    m.model_mut().restart_schedule();
    m.learn(&["a_x"], &[1.0], Target::Value(1.0)).unwrap();
    let mut back = NamedLearner::from_bytes(&m.to_bytes()).unwrap();
    assert_eq!(back, m);
    m.learn(&["b_y"], &[2.0], Target::Value(0.0)).unwrap();
    back.learn(&["b_y"], &[2.0], Target::Value(0.0)).unwrap();
    assert_eq!(back, m);
}
