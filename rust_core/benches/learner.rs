//! Batch training throughput of Alg. 1: 100 hashed non-zeros per example
//! (10 groups of 2^12 buckets), 20 classes, multiclass hinge loss, and a
//! group-lasso prox step every round.
//!
//! `cargo bench -p omkl-core --bench learner` prints criterion's throughput
//! (examples per second) for the last iterate and the averaged model, and
//! first the medians of a few plain one-shot runs of the same workload, in
//! examples per wall-clock second and per CPU-second of the thread. To print
//! only those: `cargo bench -p omkl-core --bench learner -- nomatch`.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use omkl_core::features::{hash_name, SparseBatch};
use omkl_core::learner::{Alg1Config, Loss, OnlineProximal, Schedule, Target};
use omkl_core::prox::Regularizer;

const GROUPS: usize = 10;
const BUCKETS: usize = 1 << 12;
const NNZ: usize = 100;
const CLASSES: usize = 20;
const EXAMPLES: usize = 20_000;
const REPEATS: usize = 5;

/// A deterministic synthetic stream: each example has 10 features in each
/// group, hashed from names; its class depends on one feature of group 0.
fn data() -> (SparseBatch, Vec<Target>) {
    let mut b = SparseBatch {
        indptr: vec![0],
        ..Default::default()
    };
    let mut targets = Vec::with_capacity(EXAMPLES);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..EXAMPLES {
        let class = (next() % CLASSES as u64) as usize;
        for j in 0..NNZ {
            let g = j % GROUPS;
            let id = if j == 0 { class as u64 } else { next() % 5000 };
            let bucket = hash_name(&format!("g{g}={id}")) % BUCKETS as u64;
            b.groups.push(g as u32);
            b.indices.push(bucket as u32);
            b.values.push(1.0);
        }
        b.indptr.push(b.values.len());
        targets.push(Target::Class(class));
    }
    (b, targets)
}

fn model(averaged: bool) -> OnlineProximal {
    let config = Alg1Config {
        loss: Loss::Hinge,
        schedule: Schedule::InvSqrt { eta0: 0.1 },
        regularizers: vec![Regularizer::GroupLasso { lam: 1e-4 }],
        radius: None,
        averaged,
        fit_intercept: true,
        clip_gradient: None,
    };
    OnlineProximal::new(config, GROUPS, BUCKETS, CLASSES).unwrap()
}

/// Time this thread has spent on a CPU, in seconds (Linux), which is what
/// matters on a shared, loaded machine; `None` elsewhere.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// The median of `v` (`None` when empty).
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn bench(c: &mut Criterion) {
    let (batch, targets) = data();
    for averaged in [false, true] {
        // The median of a few one-shot runs (the machine may be shared).
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..REPEATS {
            let mut m = model(averaged);
            let (t0, c0) = (Instant::now(), thread_cpu_seconds());
            black_box(m.learn_batch(&batch, &targets).unwrap());
            walls.push(EXAMPLES as f64 / t0.elapsed().as_secs_f64());
            if let Some(c) = thread_cpu_seconds().zip(c0).map(|(b, a)| b - a) {
                cpus.push(EXAMPLES as f64 / c);
            }
        }
        println!(
            "alg1 (averaged = {averaged}): {:.0} examples/s wall-clock, {} examples per CPU-second \
             (medians of {REPEATS} runs; {EXAMPLES} examples, {NNZ} non-zeros, {CLASSES} classes, \
             group lasso every round)",
            median(&mut walls).unwrap_or(f64::NAN),
            median(&mut cpus).map_or("n/a".to_string(), |c| format!("{c:.0}")),
        );
    }
    let mut group = c.benchmark_group("alg1_batch");
    group.throughput(Throughput::Elements(EXAMPLES as u64));
    group.sample_size(10);
    for averaged in [false, true] {
        group.bench_function(if averaged { "averaged" } else { "last" }, |bch| {
            bch.iter(|| {
                let mut m = model(averaged);
                black_box(m.learn_batch(&batch, &targets).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
