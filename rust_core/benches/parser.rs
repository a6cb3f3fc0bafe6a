//! Criterion benchmarks of the dependency parser per sentence: feature
//! extraction, arc scoring with all 312 templates (with and without the
//! first-pass pruner), Chu-Liu-Edmonds decoding, one training step, a block
//! of training steps with the pruner pipelined and parallel parsing, on a
//! synthetic treebank (a toy grammar over random tag sequences; no data files
//! needed). Throughput is in sentences.
//!
//! Run with `cargo bench -p omkl-core --bench parser`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use omkl_core::features::arc_templates::{default_templates, ArcFeaturizer, WordAtoms};
use omkl_core::model::parser::{ArcParser, Epochs, ParserConfig, ParserInput, TreeDecoder};

const TAGS: [&str; 6] = ["DET", "ADJ", "NOUN", "VERB", "ADP", "ADV"];

/// A synthetic sentence of `n` words and its tree: every word attaches to
/// the nearest following NOUN/VERB (else the first VERB, else word 1); the
/// first VERB (or word 1) is the root's child.
fn sentence(n: usize, seed: u64) -> (ParserInput, Vec<usize>) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let tags: Vec<&str> = (0..n).map(|_| TAGS[(next() % 6) as usize]).collect();
    let words = tags
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let form = format!("{}{}", t.to_lowercase(), next() % 50);
            WordAtoms::new(
                &form,
                &form,
                t,
                t,
                if i % 3 == 0 { "Number=Sing" } else { "_" },
            )
        })
        .collect();
    let root = tags.iter().position(|&t| t == "VERB").unwrap_or(0);
    let heads = (0..n)
        .map(|i| {
            if i == root {
                return 0;
            }
            let h = (i + 1..n)
                .find(|&j| tags[j] == "NOUN" || tags[j] == "VERB")
                .unwrap_or(root);
            h + 1
        })
        .collect();
    (
        ParserInput {
            id: seed.to_string(),
            words,
        },
        heads,
    )
}

fn corpus(len: usize, n: usize) -> Vec<(ParserInput, Vec<usize>)> {
    (0..len as u64).map(|s| sentence(n, s + 1)).collect()
}

fn bench_parser(c: &mut Criterion) {
    let mut g = c.benchmark_group("parser");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .throughput(Throughput::Elements(1));
    let templates = default_templates();
    let data = corpus(64, 20);
    let inputs: Vec<ParserInput> = data.iter().map(|(s, _)| s.clone()).collect();
    let (s, gold) = &data[0];
    g.bench_function("featurize/n=20", |b| {
        b.iter(|| black_box(ArcFeaturizer::new(&templates, black_box(&s.words)).len_with_root()))
    });
    let mut full = ArcParser::new(ParserConfig::default()).unwrap();
    full.fit_epoch(&data, &mut |_| Ok(())).unwrap();
    g.bench_function("predict_all_arcs/n=20", |b| {
        b.iter(|| black_box(full.predict(black_box(s)).unwrap()))
    });
    let mut pruned = ArcParser::new(ParserConfig::default()).unwrap();
    pruned.set_pruner(8).unwrap();
    pruned.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
    pruned.fit_epoch(&data, &mut |_| Ok(())).unwrap();
    g.bench_function("predict_pruned_k8/n=20", |b| {
        b.iter(|| black_box(pruned.predict(black_box(s)).unwrap()))
    });
    g.bench_function("learn_one_pruned_k8/n=20", |b| {
        b.iter(|| black_box(pruned.learn_one(black_box(s), gold).unwrap()))
    });
    // a block of sentences: the pruner's pass over the next block runs on
    // the second thread while the current one is learned
    let refs: Vec<(&ParserInput, &[usize])> = data.iter().map(|(s, h)| (s, h.as_slice())).collect();
    g.throughput(Throughput::Elements(refs.len() as u64));
    g.bench_function("fit_batch_pruned_k8/64x20", |b| {
        b.iter(|| black_box(pruned.fit_batch(black_box(&refs)).unwrap()))
    });
    g.bench_function("predict_many_pruned_k8/64x20", |b| {
        b.iter(|| black_box(pruned.predict_many(black_box(&inputs)).unwrap()))
    });
    g.throughput(Throughput::Elements(1));
    let n1 = s.words.len() + 1;
    let fz = ArcFeaturizer::new(full.templates(), &s.words);
    let scores = full.arc_scores(&fz).unwrap();
    g.bench_function("chu_liu_edmonds/n=20", |b| {
        b.iter(|| {
            black_box(
                TreeDecoder::ChuLiuEdmonds
                    .decode(black_box(&scores), n1)
                    .unwrap(),
            )
        })
    });
    g.bench_function("eisner/n=20", |b| {
        b.iter(|| black_box(TreeDecoder::Eisner.decode(black_box(&scores), n1).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench_parser);
criterion_main!(benches);
