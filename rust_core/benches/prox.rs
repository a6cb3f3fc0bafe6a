//! Criterion benchmarks of the proximity operators on p = 10^6 coefficients.
//!
//!     cargo bench -p omkl-core --bench prox

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use omkl_core::prox::squared_l1::{prox_squared_l1, ThresholdMethod};
use omkl_core::prox::threshold::{threshold_by_select, threshold_by_sort, SquaredL1Rule};
use omkl_core::prox::{group_lasso, l2q, weighted_squared_l1};
use std::hint::black_box;
use std::time::Duration;

const P: usize = 1_000_000;
const G: usize = 1_000;

/// Deterministic pseudo-Gaussian data (sum of uniforms from a xorshift).
fn data(p: usize) -> Vec<f64> {
    let mut s: u64 = 0x2545_F491_4F6C_DD1D;
    (0..p)
        .map(|_| {
            let mut acc = 0.0;
            for _ in 0..4 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                acc += (s >> 11) as f64 / (1u64 << 53) as f64;
            }
            (acc - 2.0) * 1.732
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let x = data(P);
    let offsets: Vec<usize> = (0..=G).map(|g| g * P / G).collect();
    let d: Vec<f64> = (0..P).map(|i| (i % 7) as f64 * 0.3).collect();
    let mut group = c.benchmark_group("prox_1e6");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("sort_unstable_f64", |b| {
        b.iter_batched(
            || x.clone(),
            |mut v| v.sort_unstable_by(f64::total_cmp),
            BatchSize::LargeInput,
        )
    });
    // The threshold searches alone on all 10^6 magnitudes (no pre-filter).
    let mags: Vec<f64> = x.iter().map(|v| v.abs()).collect();
    let rule = SquaredL1Rule { inv_tau: 1e4 };
    group.bench_function("threshold_by_sort_unfiltered", |b| {
        b.iter_batched(
            || mags.clone(),
            |mut v| threshold_by_sort(black_box(&mut v), rule),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("threshold_by_select_unfiltered", |b| {
        b.iter_batched(
            || mags.clone(),
            |mut v| threshold_by_select(black_box(&mut v), rule),
            BatchSize::LargeInput,
        )
    });
    for (name, m) in [
        ("squared_l1_sort", ThresholdMethod::Sort),
        ("squared_l1_select", ThresholdMethod::Select),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || x.clone(),
                |mut v| prox_squared_l1(black_box(&mut v), 1e-4, m).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.bench_function("weighted_squared_l1", |b| {
        b.iter_batched(
            || x.clone(),
            |mut v| {
                weighted_squared_l1::prox_weighted_squared_l1(black_box(&mut v), &d, 1e-4).unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("group_lasso_1e3_groups", |b| {
        b.iter_batched(
            || x.clone(),
            |mut v| group_lasso::prox_group_lasso(black_box(&mut v), &offsets, 15.0).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("l2q_q1.5_1e3_groups", |b| {
        b.iter_batched(
            || x.clone(),
            |mut v| l2q::prox_l2q(black_box(&mut v), &offsets, 1.0, 1.5).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
