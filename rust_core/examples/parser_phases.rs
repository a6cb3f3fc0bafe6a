//! Per-phase timing of the dependency parser on a CoNLL-U treebank.
//!
//! `cargo run --release -p omkl-core --example parser_phases -- TRAIN DEV [N]`
//!
//! Tables and the pruner are set as `omkl.DependencyParser`'s defaults
//! (`MAXBITS=15`, `SLOTS_PER_FEATURE=1`, `PRUNE_MARGIN=5`); each can be set
//! in the environment.
use std::path::Path;
use std::time::Instant;

use omkl_core::features::arc_templates::{ArcFeaturizer, WordAtoms};
use omkl_core::model::conllu::{read_conllu_path, Sentence};
use omkl_core::model::parser::{ArcParser, ParserConfig, ParserInput, TreeDecoder};
use omkl_core::model::parser_slots::ArcSlots;

fn load(path: &str) -> Vec<(ParserInput, Vec<usize>)> {
    let sents: Vec<Sentence> = read_conllu_path(Path::new(path)).expect("readable treebank");
    sents
        .into_iter()
        .filter_map(|s| {
            let heads = s.heads()?;
            let words = s
                .tokens
                .iter()
                .map(|t| WordAtoms::new(&t.form, &t.lemma, &t.upos, &t.xpos, &t.feats))
                .collect();
            Some((
                ParserInput {
                    id: s.id.clone(),
                    words,
                },
                heads,
            ))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let train = load(&args[1]);
    let dev = load(&args[2]);
    let n: usize = args.get(3).map_or(2000, |x| x.parse().unwrap());
    let config = ParserConfig {
        eta: 0.003,
        ..ParserConfig::default()
    };
    let mut p = ArcParser::new(config).unwrap();
    let refs: Vec<(&ParserInput, Vec<usize>)> = train.iter().map(|(s, h)| (s, h.clone())).collect();
    // table sizes as `omkl.DependencyParser`'s defaults, unless overridden
    let maxbits: u32 = std::env::var("MAXBITS").map_or(15, |x| x.parse().unwrap());
    let spf: f64 = std::env::var("SLOTS_PER_FEATURE").map_or(1.0, |x| x.parse().unwrap());
    p.fit_table_sizes(&refs, spf, maxbits).unwrap();
    p.set_pruner(20).unwrap();
    let margin: f64 = std::env::var("PRUNE_MARGIN").map_or(5.0, |x| x.parse().unwrap());
    p.set_pruner_margin(margin).unwrap();
    let mut by_bits = std::collections::BTreeMap::new();
    for t in 0..p.weights().n_groups() {
        let n = p.weights().group_size(t);
        let e = by_bits
            .entry(n.trailing_zeros())
            .or_insert((0usize, 0usize));
        e.0 += 1;
        e.1 += 4 * n;
    }
    for (b, (k, bytes)) in &by_bits {
        println!(
            "tables of 2^{b} slots: {k} templates, {:.2} MB",
            *bytes as f64 / 1e6
        );
    }
    let t = Instant::now();
    p.fit_pruner_epoch(&train, &mut |_| Ok(())).unwrap();
    println!(
        "pruner epoch: {:.0} sent/s",
        train.len() as f64 / t.elapsed().as_secs_f64()
    );
    let part = &train[..n.min(train.len())];
    let t = Instant::now();
    let refs: Vec<(&ParserInput, &[usize])> = part.iter().map(|(s, h)| (s, h.as_slice())).collect();
    for c in refs.chunks(256) {
        p.fit_batch(c).unwrap();
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "fit_batch ({} sent): {:.0} sent/s wall",
        part.len(),
        part.len() as f64 / dt
    );
    // serial phases of training on the same sentences
    let pr = p.pruner().unwrap().clone();
    let tpl = p.templates().to_vec();
    let mut tk = 0.0;
    let mut ts = 0.0;
    let mut kept_arcs = 0usize;
    for (s, h) in part {
        let t = Instant::now();
        let k = pr.keep(&s.words, Some(h)).unwrap();
        tk += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sl = ArcSlots::new(&tpl, &s.words, Some(&k.keep)).unwrap();
        ts += t.elapsed().as_secs_f64();
        kept_arcs += sl.arcs().len();
        std::hint::black_box(sl);
    }
    let (mut tsc, mut tdec) = (0.0, 0.0);
    let dec = TreeDecoder::from_name("chu-liu-edmonds").unwrap();
    for (s, h) in part {
        let k = pr.keep(&s.words, Some(h)).unwrap();
        let sl = ArcSlots::new(&tpl, &s.words, Some(&k.keep)).unwrap();
        let n1 = sl.len_with_root();
        let t = Instant::now();
        let mut sc = vec![0.0f64; n1 * n1];
        sl.add_scores(&mut sc, |t| p.weights().raw(t));
        tsc += t.elapsed().as_secs_f64();
        for i in 0..n1 {
            sc[i * n1 + i] = f64::NEG_INFINITY;
            sc[i * n1] = f64::NEG_INFINITY;
        }
        let t = Instant::now();
        std::hint::black_box(dec.decode(&sc, n1).unwrap());
        tdec += t.elapsed().as_secs_f64();
    }
    println!(
        "per sentence: scoring stored slots {:.0} us, decoding {:.0} us",
        1e6 * tsc / part.len() as f64,
        1e6 * tdec / part.len() as f64
    );
    let mut q = p.clone();
    let t = Instant::now();
    for (s, h) in part {
        q.learn_one(s, h).unwrap();
    }
    let tl = t.elapsed().as_secs_f64();
    let m = part.len() as f64;
    println!(
        "per sentence: pruner keep {:.0} us, slots {:.0} us, learn_one (all serial) {:.0} us; kept arcs/sent {:.0}",
        1e6 * tk / m, 1e6 * ts / m, 1e6 * tl / m, kept_arcs as f64 / m
    );
    p.finalize().unwrap();
    let t = Instant::now();
    let out = p
        .predict_many(&dev.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>())
        .unwrap();
    let dt = t.elapsed().as_secs_f64();
    println!(
        "predict_many dev: {:.0} sent/s wall ({} sent)",
        dev.len() as f64 / dt,
        out.len()
    );
    let (mut tk, mut tf, mut tp) = (0.0, 0.0, 0.0);
    for (s, _) in &dev {
        let t = Instant::now();
        std::hint::black_box(pr.keep(&s.words, None).unwrap());
        tk += t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::hint::black_box(ArcFeaturizer::new(&tpl, &s.words));
        tf += t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::hint::black_box(p.predict(s).unwrap());
        tp += t.elapsed().as_secs_f64();
    }
    let m = dev.len() as f64;
    println!(
        "predict per sentence (serial): pruner keep {:.0} us, featurizer {:.0} us, predict total {:.0} us",
        1e6 * tk / m, 1e6 * tf / m, 1e6 * tp / m
    );
}
