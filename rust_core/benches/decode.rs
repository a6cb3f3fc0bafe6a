//! Criterion benchmarks of the exact decoders. Viterbi reports throughput in
//! n·L² cells (criterion prints elements per second; ns per cell is its
//! inverse).
//!
//! Run with `cargo bench -p omkl-core --bench decode`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use omkl_core::decode::arcs::ArcScores;
use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use omkl_core::decode::eisner::{eisner, EisnerWorkspace};
use omkl_core::decode::forward_backward::{forward_backward, ForwardBackwardWorkspace};
use omkl_core::decode::matrix_tree::{matrix_tree, MatrixTreeWorkspace};
use omkl_core::decode::nbest::{viterbi_nbest, NbestWorkspace};
use omkl_core::decode::viterbi::{viterbi, ViterbiWorkspace};

/// Deterministic pseudo-random scores in [-1, 1) (xorshift).
fn scores(len: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn short(c: &mut Criterion) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group("decode");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    g
}

fn bench_chains(c: &mut Criterion) {
    let mut g = short(c);
    for (n, l) in [(8usize, 26usize), (100, 50)] {
        let em = scores(n * l, 1);
        let tr = scores(l * l, 2);
        let chain = ChainScores::new(&em, &tr, None, None, n, l).unwrap();
        let mut ws = ViterbiWorkspace::with_capacity(n, l).unwrap();
        let mut out = vec![0; n];
        g.throughput(Throughput::Elements((n * l * l) as u64));
        g.bench_function(BenchmarkId::new("viterbi", format!("n{n}_L{l}")), |b| {
            b.iter(|| viterbi(black_box(&chain), &mut ws, &mut out).unwrap())
        });
        let mut fw = ForwardBackwardWorkspace::new();
        let (mut node, mut trans) = (vec![0.0; n * l], vec![0.0; l * l]);
        g.bench_function(
            BenchmarkId::new("forward_backward", format!("n{n}_L{l}")),
            |b| {
                b.iter(|| {
                    forward_backward(black_box(&chain), &mut fw, &mut node, &mut trans).unwrap()
                })
            },
        );
    }
    // N-best at n = 20, L = 26: throughput in n·L²·k cells.
    let (n, l) = (20usize, 26usize);
    let em = scores(n * l, 3);
    let tr = scores(l * l, 4);
    let chain = ChainScores::new(&em, &tr, None, None, n, l).unwrap();
    let mut nw = NbestWorkspace::new();
    for k in [1usize, 10, 100] {
        let (mut paths, mut sc) = (vec![0; k * n], vec![0.0; k]);
        g.throughput(Throughput::Elements((n * l * l * k) as u64));
        g.bench_function(
            BenchmarkId::new("viterbi_nbest", format!("n{n}_L{l}_k{k}")),
            |b| {
                b.iter(|| {
                    viterbi_nbest(black_box(&chain), k, &mut nw, &mut paths, &mut sc).unwrap()
                })
            },
        );
    }
    g.finish();
}

fn bench_trees(c: &mut Criterion) {
    let mut g = short(c);
    // Eight random graphs per size: the number of contractions, hence the
    // time, varies a lot between graphs. Throughput is in n² arcs per graph.
    const GRAPHS: u64 = 8;
    for n in [10usize, 40, 100, 200] {
        let mats: Vec<Vec<f64>> = (0..GRAPHS)
            .map(|k| scores((n + 1) * (n + 1), 1000 * n as u64 + k))
            .collect();
        let arcs: Vec<ArcScores<'_>> = mats.iter().map(|s| ArcScores::new(s, n).unwrap()).collect();
        let mut ws = CleWorkspace::new();
        let mut heads = vec![0; n + 1];
        g.throughput(Throughput::Elements(GRAPHS * (n * n) as u64));
        for single_root in [false, true] {
            let name = if single_root {
                "chu_liu_edmonds_single_root_x8"
            } else {
                "chu_liu_edmonds_x8"
            };
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    for a in &arcs {
                        chu_liu_edmonds(black_box(a), single_root, &mut ws, &mut heads).unwrap();
                    }
                })
            });
        }
    }
    let n = 50;
    let s = scores((n + 1) * (n + 1), 7);
    let arcs = ArcScores::new(&s, n).unwrap();
    let mut mt = MatrixTreeWorkspace::new();
    let mut mu = vec![0.0; (n + 1) * (n + 1)];
    g.throughput(Throughput::Elements((n * n * n) as u64));
    g.bench_function(BenchmarkId::new("matrix_tree", n), |b| {
        b.iter(|| matrix_tree(black_box(&arcs), false, &mut mt, &mut mu).unwrap())
    });
    let mut ew = EisnerWorkspace::new();
    let mut heads = vec![0; n + 1];
    g.bench_function(BenchmarkId::new("eisner", n), |b| {
        b.iter(|| eisner(black_box(&arcs), false, &mut ew, &mut heads).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench_chains, bench_trees);
criterion_main!(benches);
