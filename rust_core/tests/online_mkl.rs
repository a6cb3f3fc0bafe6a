//! Alg. 3 on chains: the kernelised learner against an explicit-feature
//! reference, the §3.4 norm identity, and input validation.

#![allow(clippy::needless_range_loop)]

use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::viterbi::{viterbi, viterbi_hamming, ViterbiWorkspace};
use omkl_core::kernel::SparseGram;
use omkl_core::learner::mkl_config::{OnlineMklConfig, StepSize};
use omkl_core::learner::online_mkl::{train_chain_mkl, train_chain_mkl_with};
use omkl_core::learner::score_cache::{expansion_sq_norm, GramRef};
use omkl_core::model::chain::ChainCorpus;
use omkl_core::model::transitions::Transitions;
use omkl_core::prox::Regularizer;

/// Deterministic small-integer pseudo-random numbers.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

struct Problem {
    feats: Vec<Vec<Vec<f64>>>, // per group: m inputs × d features
    grams: Vec<Vec<f32>>,
    corpus: ChainCorpus,
    m: usize,
    l: usize,
}

/// Random chains whose labels depend on the inputs; features are small
/// integers so that f32 Gram matrices are exact.
fn problem(seed: u64, m: usize, l: usize, n_chains: usize, dims: &[usize]) -> Problem {
    let mut r = Lcg(seed);
    let feats: Vec<Vec<Vec<f64>>> = dims
        .iter()
        .map(|&d| {
            (0..m)
                .map(|_| (0..d).map(|_| r.below(3) as f64).collect())
                .collect()
        })
        .collect();
    let grams = feats
        .iter()
        .map(|x| {
            let mut g = vec![0f32; m * m];
            for i in 0..m {
                for j in 0..m {
                    g[i * m + j] = x[i].iter().zip(&x[j]).map(|(a, b)| a * b).sum::<f64>() as f32;
                }
            }
            g
        })
        .collect();
    let (mut inputs, mut labels, mut offsets) = (vec![], vec![], vec![0]);
    for _ in 0..n_chains {
        let n = 1 + r.below(4) as usize;
        for _ in 0..n {
            let i = r.below(m as u64) as usize;
            inputs.push(i);
            let y = (feats[0][i].iter().sum::<f64>() as usize + r.below(2) as usize) % l;
            labels.push(y);
        }
        offsets.push(inputs.len());
    }
    let corpus = ChainCorpus::new(inputs, labels, offsets, m, l).unwrap();
    Problem {
        feats,
        grams,
        corpus,
        m,
        l,
    }
}

/// The same algorithm with explicit weight vectors `W_k[y]` (slow reference).
fn explicit_run(p: &Problem, cfg: &OnlineMklConfig) -> (Vec<Vec<f64>>, Transitions, Vec<f64>) {
    let k = p.feats.len();
    let dims: Vec<usize> = p.feats.iter().map(|x| x[0].len()).collect();
    let mut w: Vec<Vec<f64>> = dims.iter().map(|d| vec![0.0; p.l * d]).collect();
    let mut w_sum = w.clone();
    let mut tr = Transitions::zeros(p.l);
    let mut tr_sum = Transitions::zeros(p.l);
    let mut ws = ViterbiWorkspace::new();
    let mut t = 0u64;
    for _ in 0..cfg.epochs {
        for c in 0..p.corpus.len() {
            t += 1;
            let eta = cfg.step.eta(t);
            let (inputs, gold) = p.corpus.chain(c);
            let n = inputs.len();
            let mut em = vec![0.0; n * p.l];
            for (q, &i) in inputs.iter().enumerate() {
                for y in 0..p.l {
                    for g in 0..k {
                        let x = &p.feats[g][i];
                        let wy = &w[g][y * dims[g]..(y + 1) * dims[g]];
                        em[q * p.l + y] += wy.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
                    }
                }
            }
            let chain =
                ChainScores::new(&em, &tr.tr, Some(&tr.start), Some(&tr.stop), n, p.l).unwrap();
            let mut out = vec![0; n];
            viterbi_hamming(&chain, gold, cfg.cost, &mut ws, &mut out).unwrap();
            if out != gold {
                for q in 0..n {
                    if out[q] != gold[q] {
                        for g in 0..k {
                            let d = dims[g];
                            for f in 0..d {
                                let x = p.feats[g][inputs[q]][f];
                                w[g][gold[q] * d + f] += eta * x;
                                w[g][out[q] * d + f] -= eta * x;
                            }
                        }
                    }
                }
                tr.add_path(gold, eta);
                tr.add_path(&out, -eta);
            }
            let mut norms: Vec<f64> = w
                .iter()
                .map(|v| v.iter().map(|a| a * a).sum::<f64>().sqrt())
                .collect();
            norms.push(tr.sq_norm().sqrt());
            let mut shrunk = norms.clone();
            match cfg.transition_lam {
                None => cfg.regularizer.prox_group_norms(&mut shrunk, eta).unwrap(),
                Some(lam_t) => {
                    cfg.regularizer
                        .prox_group_norms(&mut shrunk[..k], eta)
                        .unwrap();
                    shrunk[k] = norms[k] / (1.0 + eta * lam_t);
                }
            }
            for g in 0..k {
                if norms[g] > 0.0 {
                    let c = shrunk[g] / norms[g];
                    w[g].iter_mut().for_each(|v| *v *= c);
                }
            }
            if norms[k] > 0.0 {
                tr.scale(shrunk[k] / norms[k]);
            }
            for g in 0..k {
                for (s, v) in w_sum[g].iter_mut().zip(&w[g]) {
                    *s += v;
                }
            }
            tr_sum.add_scaled(&tr, 1.0);
        }
    }
    let last_norms = w.iter().map(|v| v.iter().map(|a| a * a).sum()).collect();
    let inv = 1.0 / t as f64;
    w_sum
        .iter_mut()
        .for_each(|v| v.iter_mut().for_each(|a| *a *= inv));
    tr_sum.scale(inv);
    (w_sum, tr_sum, last_norms)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

fn config(reg: Regularizer, eta0: f64, epochs: usize) -> OnlineMklConfig {
    OnlineMklConfig {
        regularizer: reg,
        step: StepSize::InvSqrt { eta0 },
        epochs,
        shuffle: false,
        ..OnlineMklConfig::default()
    }
}

#[test]
fn kernelised_run_equals_explicit_run() {
    for (seed, reg, lam_t) in [
        (1, Regularizer::SquaredL21 { lam: 0.05 }, None),
        (2, Regularizer::L2Squared { lam: 0.1 }, None),
        (3, Regularizer::SquaredL21 { lam: 2.0 }, None),
        (4, Regularizer::SquaredL21 { lam: 0.5 }, Some(0.3)),
        (
            5,
            Regularizer::WeightedSquaredL21 {
                lam: 0.2,
                weights: vec![1.0, 2.0],
            },
            Some(0.2),
        ),
    ] {
        let p = problem(seed, 12, 3, 15, &[4, 3]);
        let mut cfg = config(reg, 0.5, 4);
        cfg.transition_lam = lam_t;
        let grams: Vec<&[f32]> = p.grams.iter().map(|g| g.as_slice()).collect();
        let model = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
        let (w_avg, tr_avg, last_sq) = explicit_run(&p, &cfg);
        // norms of the last iterate and of the average
        for g in 0..2 {
            assert!(
                rel(model.last_sq_norms[g], last_sq[g]) < 1e-9,
                "seed {seed} group {g}: {} vs {}",
                model.last_sq_norms[g],
                last_sq[g]
            );
            let explicit: f64 = w_avg[g].iter().map(|a| a * a).sum::<f64>().sqrt();
            assert!(rel(model.norms[g], explicit) < 1e-9);
        }
        for (a, b) in model.transitions.tr.iter().zip(&tr_avg.tr) {
            assert!((a - b).abs() < 1e-9);
        }
        // predictions of the averaged models on every input, as 1-chains
        // and as one long chain
        let emissions = |kernelised: bool| -> Vec<f64> {
            let mut em = vec![0.0; p.m * p.l];
            for i in 0..p.m {
                for y in 0..p.l {
                    for g in 0..2 {
                        em[i * p.l + y] += if kernelised {
                            (0..p.m)
                                .map(|j| {
                                    model.coef[g][y * p.m + j] * f64::from(p.grams[g][j * p.m + i])
                                })
                                .sum::<f64>()
                        } else {
                            let d = p.feats[g][0].len();
                            (0..d)
                                .map(|f| w_avg[g][y * d + f] * p.feats[g][i][f])
                                .sum::<f64>()
                        };
                    }
                }
            }
            em
        };
        let (ek, ee) = (emissions(true), emissions(false));
        for (a, b) in ek.iter().zip(&ee) {
            assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()));
        }
        let tr = &model.transitions;
        let mut ws = ViterbiWorkspace::new();
        let (mut out_k, mut out_e) = (vec![0; p.m], vec![0; p.m]);
        let ck = ChainScores::new(&ek, &tr.tr, Some(&tr.start), Some(&tr.stop), p.m, p.l).unwrap();
        let ce = ChainScores::new(
            &ee,
            &tr_avg.tr,
            Some(&tr_avg.start),
            Some(&tr_avg.stop),
            p.m,
            p.l,
        )
        .unwrap();
        viterbi(&ck, &mut ws, &mut out_k).unwrap();
        viterbi(&ce, &mut ws, &mut out_e).unwrap();
        assert_eq!(out_k, out_e);
    }
}

#[test]
fn tracked_norms_match_from_scratch_after_many_rounds() {
    let p = problem(7, 40, 5, 200, &[6, 9, 2]);
    let grams: Vec<&[f32]> = p.grams.iter().map(|g| g.as_slice()).collect();
    for reg in [
        Regularizer::SquaredL21 { lam: 0.01 },
        Regularizer::L2Squared { lam: 0.01 },
    ] {
        let mut cfg = config(reg, 1.0, 10);
        cfg.shuffle = true;
        cfg.track_objective = true;
        let model = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
        for g in 0..3 {
            let scratch = expansion_sq_norm(grams[g], &model.last_coef[g], p.m);
            assert!(scratch > 0.0);
            assert!(
                rel(model.last_sq_norms[g], scratch) < 1e-8,
                "{} vs {scratch}",
                model.last_sq_norms[g]
            );
        }
        let beta_sum: f64 = model.beta.iter().sum();
        assert!((beta_sum - 1.0).abs() < 1e-12 && model.beta.iter().all(|b| *b >= 0.0));
        assert_eq!(model.epochs.len(), 10);
        // the objective decreases overall on this separable-ish problem
        let obj: Vec<f64> = model.epochs.iter().map(|e| e.objective.unwrap()).collect();
        assert!(obj[9] < obj[0], "{obj:?}");
        // objective after the last epoch only: the same run, the same value
        cfg.objective_last_only = true;
        let last = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
        assert!(last.epochs[..9].iter().all(|e| e.objective.is_none()));
        assert_eq!(last.epochs[9].objective, Some(obj[9]));
        assert_eq!(last.coef, model.coef);
    }
}

#[test]
fn strong_mkl_penalty_switches_off_kernel_groups() {
    // with a huge λ the squared ℓ2,1 prox zeroes groups: β stays a distribution
    let p = problem(11, 20, 3, 30, &[3, 3]);
    let grams: Vec<&[f32]> = p.grams.iter().map(|g| g.as_slice()).collect();
    let cfg = config(Regularizer::SquaredL21 { lam: 1e3 }, 1.0, 2);
    let model = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
    assert!(model.last_sq_norms.iter().all(|v| v.is_finite()));
    let s: f64 = model.beta.iter().sum();
    assert!((s - 1.0).abs() < 1e-12);
}

#[test]
fn rejects_bad_input_and_stops_on_request() {
    let p = problem(5, 6, 2, 4, &[2]);
    let cfg = config(Regularizer::SquaredL21 { lam: 0.1 }, 1.0, 3);
    let g = p.grams[0].as_slice();
    let err = train_chain_mkl(&[&g[..35]], &[], &p.corpus, &cfg, |_| true).unwrap_err();
    assert!(err.to_string().contains("gram"));
    let err = train_chain_mkl(&[], &[], &p.corpus, &cfg, |_| true).unwrap_err();
    assert!(err.to_string().contains("grams"));
    let mut bad = cfg.clone();
    bad.regularizer = Regularizer::L2Squared { lam: -1.0 };
    assert!(train_chain_mkl(&[g], &[], &p.corpus, &bad, |_| true).is_err());
    let mut calls = 0;
    let err = train_chain_mkl(&[g], &[], &p.corpus, &cfg, |_| {
        calls += 1;
        false
    })
    .unwrap_err();
    assert!(err.to_string().contains("interrupted") && calls == 1);
}

#[test]
fn explicit_groups_equal_linear_kernel_groups() {
    let p = problem(21, 15, 3, 25, &[4, 5]);
    let grams: Vec<&[f32]> = p.grams.iter().map(|g| g.as_slice()).collect();
    let flat: Vec<Vec<f32>> = p
        .feats
        .iter()
        .map(|x| x.iter().flatten().map(|&v| v as f32).collect())
        .collect();
    let feats: Vec<(&[f32], usize)> = flat
        .iter()
        .zip(&p.feats)
        .map(|(f, x)| (f.as_slice(), x[0].len()))
        .collect();
    let cfg = config(Regularizer::SquaredL21 { lam: 0.05 }, 0.5, 5);
    let a = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
    let b = train_chain_mkl(&[], &feats, &p.corpus, &cfg, |_| true).unwrap();
    let mixed = train_chain_mkl(&grams[..1], &feats[1..], &p.corpus, &cfg, |_| true).unwrap();
    for g in 0..2 {
        assert!(rel(a.norms[g], b.norms[g]) < 1e-9);
        assert!(rel(a.last_sq_norms[g], b.last_sq_norms[g]) < 1e-9);
        assert!(rel(a.norms[g], mixed.norms[g]) < 1e-9);
        // W_y = Σ_j α[y, j] x_j
        let d = feats[g].1;
        for y in 0..p.l {
            for f in 0..d {
                let w: f64 = (0..p.m)
                    .map(|j| a.coef[g][y * p.m + j] * p.feats[g][j][f])
                    .sum();
                assert!((w - b.coef[g][y * d + f]).abs() < 1e-9);
            }
        }
    }
    assert_eq!(a.beta.len(), 2);
    for (x, y) in a.transitions.tr.iter().zip(&b.transitions.tr) {
        assert!((x - y).abs() < 1e-9);
    }
}

/// A CSR copy of a dense Gram matrix (zeros dropped).
fn to_sparse(g: &[f32], m: usize) -> SparseGram {
    let (mut ptr, mut idx, mut val) = (vec![0], vec![], vec![]);
    for row in g.chunks_exact(m) {
        for (j, &v) in row.iter().enumerate() {
            if v != 0.0 {
                idx.push(j as u32);
                val.push(v);
            }
        }
        ptr.push(idx.len());
    }
    SparseGram::from_csr(m, m, ptr, idx, val).unwrap()
}

#[test]
fn sparse_grams_train_the_same_model_as_dense_grams() {
    // features in {0, 1, 2} with many zero inner products
    let p = problem(31, 25, 4, 40, &[3, 5]);
    let sparse: Vec<SparseGram> = p.grams.iter().map(|g| to_sparse(g, p.m)).collect();
    assert!(sparse.iter().any(|s| s.nnz() < p.m * p.m));
    for lam_t in [None, Some(0.1)] {
        let mut cfg = config(Regularizer::SquaredL21 { lam: 0.05 }, 0.5, 5);
        cfg.transition_lam = lam_t;
        cfg.shuffle = true;
        cfg.track_objective = true;
        let grams: Vec<&[f32]> = p.grams.iter().map(|g| g.as_slice()).collect();
        let dense = train_chain_mkl(&grams, &[], &p.corpus, &cfg, |_| true).unwrap();
        let refs = [GramRef::Dense(grams[0]), GramRef::Sparse(&sparse[1])];
        let mixed = train_chain_mkl_with(&refs, &[], &p.corpus, &cfg, |_| true).unwrap();
        let refs: Vec<GramRef<'_>> = sparse.iter().map(GramRef::Sparse).collect();
        let sp = train_chain_mkl_with(&refs, &[], &p.corpus, &cfg, |_| true).unwrap();
        for other in [&mixed, &sp] {
            // same updates in the same order: identical coefficients,
            // transitions and mistakes; norms equal up to summation order
            assert_eq!(other.coef, dense.coef);
            assert_eq!(other.transitions, dense.transitions);
            let (a, b): (Vec<usize>, Vec<usize>) = other
                .epochs
                .iter()
                .zip(&dense.epochs)
                .map(|(x, y)| (x.mistakes, y.mistakes))
                .unzip();
            assert_eq!(a, b);
            for (x, y) in other.norms.iter().zip(&dense.norms) {
                assert!(rel(*x, *y) < 1e-12);
            }
        }
    }
    let bad = to_sparse(&p.grams[0][..24 * 24], 24);
    let err = train_chain_mkl_with(
        &[GramRef::Sparse(&bad)],
        &[],
        &p.corpus,
        &config(Regularizer::SquaredL21 { lam: 0.05 }, 0.5, 1),
        |_| true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("gram"), "{err}");
}
