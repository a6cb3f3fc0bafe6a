//! Criterion benchmarks of the kernel module: dense Gram matrices (symmetric
//! and rectangular, one kernel or three sharing one GEMM), CSR versus dense
//! scoring (label columns and label-major), and Gram cache rows.
//!
//! ```text
//! cargo bench -p omkl-core --bench kernel
//! ```

use criterion::{criterion_group, criterion_main, Criterion};
use omkl_core::kernel::{
    b1_bandwidth, dense_scores, gram, gram_many, gram_many_symmetric, gram_symmetric, GramCache,
    Kernel, SparseGram,
};
use omkl_core::lcg::Lcg;
use std::hint::black_box;

/// `n × d` binary pixels: noisy copies of 26 prototypes (deterministic).
fn pixels(n: usize, d: usize) -> Vec<f32> {
    let mut rng = Lcg(42);
    let mut next = move || rng.next_u32();
    let protos: Vec<bool> = (0..26 * d).map(|_| next() % 10 < 3).collect();
    let mut x = Vec::with_capacity(n * d);
    for _ in 0..n {
        let p = (next() % 26) as usize;
        for j in 0..d {
            let flip = next() % 10 == 0;
            x.push(if protos[p * d + j] ^ flip { 1.0 } else { 0.0 });
        }
    }
    x
}

fn dense(c: &mut Criterion) {
    let (n, d) = (1500, 128);
    let x = pixels(n, d);
    let y = x.clone();
    let mut g = c.benchmark_group("gram_1500x128");
    g.sample_size(10);
    let gauss = Kernel::Gaussian { sigma2: 5.0 };
    let quad = Kernel::Polynomial {
        degree: 2,
        offset: 0.0,
        normalize: true,
    };
    g.bench_function("gaussian_symmetric", |b| {
        b.iter(|| gram_symmetric(&gauss, black_box(&x), n, d).unwrap())
    });
    g.bench_function("gaussian_rectangular", |b| {
        b.iter(|| gram(&gauss, black_box(&x), n, &y, n, d).unwrap())
    });
    g.bench_function("quadratic_normalised_symmetric", |b| {
        b.iter(|| gram_symmetric(&quad, black_box(&x), n, d).unwrap())
    });
    let lqg = [
        Kernel::Linear { normalize: true },
        Kernel::Polynomial {
            degree: 2,
            offset: 1.0,
            normalize: true,
        },
        gauss.clone(),
    ];
    g.bench_function("lqg_three_singles_symmetric", |b| {
        b.iter(|| {
            lqg.iter()
                .map(|k| gram_symmetric(k, black_box(&x), n, d).unwrap())
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("lqg_gram_many_symmetric", |b| {
        b.iter(|| gram_many_symmetric(&lqg, black_box(&x), n, d).unwrap())
    });
    g.bench_function("lqg_gram_many_rectangular", |b| {
        b.iter(|| gram_many(&lqg, black_box(&x), n, &y, n, d).unwrap())
    });
    g.finish();
}

fn cache_rows(c: &mut Criterion) {
    let (n, d) = (2000, 128);
    let x = pixels(n, d);
    let mut cache = GramCache::new(Kernel::Gaussian { sigma2: 5.0 }, d, 0).unwrap();
    for r in x.chunks_exact(d) {
        cache.add(r).unwrap();
    }
    let mut g = c.benchmark_group("gram_cache_2000x128");
    g.sample_size(20);
    // Budget 0: every request computes its row (the miss path).
    g.bench_function("row_miss", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = (i + 1) % n as u32;
            cache.row(black_box(i)).unwrap().len()
        })
    });
    g.finish();
}

fn scoring(c: &mut Criterion) {
    let (n, d, labels) = (5000, 128, 26);
    let x = pixels(n, d);
    let h = b1_bandwidth(&x, n, d, 0.95, 2000).unwrap();
    let k = Kernel::B1Spline { h };
    let s = SparseGram::build(&k, &x, n, Some((&x, n)), d).unwrap();
    let kd = s.to_dense();
    let alpha: Vec<f64> = (0..n * labels)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let alpha32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
    let mut g = c.benchmark_group("scores_5000x26_b1_95pct_zeros");
    g.sample_size(20);
    g.bench_function("sparse_csr", |b| {
        b.iter(|| s.scores(black_box(&alpha), labels).unwrap())
    });
    g.bench_function("sparse_csr_f32", |b| {
        b.iter(|| s.scores_f32(black_box(&alpha32), labels).unwrap())
    });
    g.bench_function("sparse_csr_label_major", |b| {
        b.iter(|| s.scores_label_major(black_box(&alpha), labels).unwrap())
    });
    g.bench_function("sparse_csr_one_label", |b| {
        b.iter(|| s.scores(black_box(&alpha[..n]), 1).unwrap())
    });
    g.bench_function("dense", |b| {
        b.iter(|| dense_scores(black_box(&kd), n, n, &alpha, labels).unwrap())
    });
    g.bench_function("sparse_build", |b| {
        b.iter(|| SparseGram::build(&k, black_box(&x), n, Some((&x, n)), d).unwrap())
    });
    g.finish();
}

criterion_group!(benches, dense, scoring, cache_rows);
criterion_main!(benches);
