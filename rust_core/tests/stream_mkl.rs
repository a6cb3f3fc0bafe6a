//! The streaming Alg. 3: kernelised against explicit runs, the §3.4 norm
//! identity against `αᵀKα` recomputed from the expansion, equivalence with
//! Alg. 1 and with a slow dense kernel structured SVM, sparse against dense
//! scoring for the B1 kernel, the support budget, and bad input.

#![allow(clippy::needless_range_loop)]

use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::viterbi::{viterbi, viterbi_hamming, ViterbiWorkspace};
use omkl_core::features::SparseExample;
use omkl_core::kernel::Kernel;
use omkl_core::lcg::Lcg;
use omkl_core::learner::stream_mkl::persist::{FORMAT, VERSION};
use omkl_core::learner::stream_mkl::{BudgetRule, Iterate, StreamLoss, StreamMkl, StreamMklConfig};
use omkl_core::learner::{Alg1Config, Loss, OnlineProximal, Schedule, Target};
use omkl_core::persist;
use omkl_core::prox::Regularizer;

/// Deterministic pseudo-random numbers.
struct Rng(Lcg);
impl Rng {
    fn next(&mut self) -> u64 {
        u64::from(self.0.next_u32())
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unif(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0 * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unif()).collect()
    }
}

/// Every structure (`chain`: false for multiclass, true for a chain) with
/// every loss.
const STRUCTURES_AND_LOSSES: [(bool, StreamLoss); 4] = [
    (false, StreamLoss::Hinge),
    (true, StreamLoss::Hinge),
    (false, StreamLoss::Crf),
    (true, StreamLoss::Crf),
];

/// Labels that depend on the input (so that learning has something to do).
fn label_of(x: &[f32], l: usize) -> usize {
    let s: f32 = x
        .iter()
        .enumerate()
        .map(|(i, v)| v * (i as f32 + 1.0))
        .sum();
    ((s.abs() * 3.0) as usize) % l
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

fn config(
    kernels: Vec<Kernel>,
    explicit: Vec<Vec<usize>>,
    chain: bool,
    loss: StreamLoss,
) -> StreamMklConfig {
    StreamMklConfig {
        explicit_groups: explicit,
        chain,
        loss,
        ..StreamMklConfig::multiclass(kernels, 0.05, 0.5)
    }
}

/// Trains `a` and `b` on the same 300 random examples of `shape = (d, L,
/// chain)` drawn from `rng`, checking that they predict the same before
/// each and calling `after(a, b)` after each.
fn learn_alike(
    a: &mut StreamMkl,
    b: &mut StreamMkl,
    shape: (usize, usize, bool),
    rng: &mut Rng,
    mut after: impl FnMut(&StreamMkl, &StreamMkl),
) {
    let (d, l, chain) = shape;
    for _ in 0..300 {
        let (x, y) = example(rng, d, l, chain);
        assert_eq!(a.predict(&x).unwrap(), b.predict(&x).unwrap());
        a.learn(&x, &y).unwrap();
        b.learn(&x, &y).unwrap();
        after(a, b);
    }
}

/// A Gaussian (`σ² = 1`) and an unnormalised linear kernel.
fn gauss_linear() -> Vec<Kernel> {
    vec![
        Kernel::Gaussian { sigma2: 1.0 },
        Kernel::Linear { normalize: false },
    ]
}

/// `Σ_y α_yᵀ K α_y` of kernel group `k`, from the support inputs and the
/// coefficients, with `Kernel::eval`.
fn sq_norm_from_expansion(m: &StreamMkl, k: usize) -> f64 {
    let kern = &m.config().kernels[k];
    let (d, l, s) = (m.dim(), m.n_labels(), m.n_support());
    let x = m.support_inputs();
    let a = m.kernel_coefficients(k);
    let mut total = 0.0;
    for i in 0..s {
        for j in 0..s {
            let kij = kern.eval(&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d]);
            for y in 0..l {
                total += a[i * l + y] * a[j * l + y] * kij;
            }
        }
    }
    total
}

/// A random example: multiclass (one row) or a chain of 1..=5 positions
/// whose labels follow the inputs and, with probability 1/2, the previous
/// label.
fn example(rng: &mut Rng, d: usize, l: usize, chain: bool) -> (Vec<f32>, Vec<usize>) {
    let n = if chain { 1 + rng.below(5) } else { 1 };
    let x = rng.vec(n * d);
    let mut y = Vec::with_capacity(n);
    for p in 0..n {
        let own = label_of(&x[p * d..(p + 1) * d], l);
        y.push(if p > 0 && rng.below(2) == 0 {
            y[p - 1]
        } else {
            own
        });
    }
    (x, y)
}

#[test]
fn linear_kernel_group_equals_explicit_group_iterate_by_iterate() {
    let (d, l) = (4, 3);
    for (chain, loss) in STRUCTURES_AND_LOSSES {
        let gauss = Kernel::Gaussian { sigma2: 1.5 };
        let lin = Kernel::Linear { normalize: false };
        let mut a =
            StreamMkl::new(config(vec![lin, gauss.clone()], vec![], chain, loss), d, l).unwrap();
        let mut b = StreamMkl::new(
            config(vec![gauss], vec![(0..d).collect()], chain, loss),
            d,
            l,
        )
        .unwrap();
        let mut rng = Rng(Lcg(7));
        let mut updates = 0;
        for _ in 0..300 {
            let (x, y) = example(&mut rng, d, l, chain);
            assert_eq!(a.predict(&x).unwrap(), b.predict(&x).unwrap());
            let (la, lb) = (a.learn(&x, &y).unwrap(), b.learn(&x, &y).unwrap());
            assert!(rel(la, lb) < 1e-9 || (la - lb).abs() < 1e-12);
            if la > 0.0 {
                updates += 1;
            }
            let (na, nb) = (a.group_norms(), b.group_norms());
            // a: [linear, gaussian, (trans)], b: [gaussian, explicit, (trans)]
            assert!(
                rel(na[0], nb[1]) < 1e-9,
                "{chain} {loss:?}: {na:?} vs {nb:?}"
            );
            assert!(
                rel(na[1], nb[0]) < 1e-9,
                "{chain} {loss:?}: {na:?} vs {nb:?}"
            );
            if chain {
                assert!(rel(na[2], nb[2]) < 1e-9);
            }
        }
        assert!(updates > 20, "{chain} {loss:?}: only {updates} updates");
        // β is shared between kernel and explicit groups
        assert!(rel(a.beta()[0], b.beta()[1]) < 1e-9);
    }
}

#[test]
fn maintained_norms_match_the_expansion_after_ten_thousand_rounds() {
    let (d, l) = (3, 3);
    for (chain, loss) in STRUCTURES_AND_LOSSES {
        let kernels = vec![
            Kernel::Gaussian { sigma2: 0.5 },
            Kernel::Polynomial {
                degree: 2,
                offset: 1.0,
                normalize: true,
            },
            Kernel::Linear { normalize: false },
        ];
        let mut cfg = config(kernels, vec![], chain, loss);
        cfg.regularizer = Regularizer::SquaredL21 { lam: 0.01 };
        let mut m = StreamMkl::new(cfg, d, l).unwrap();
        let mut rng = Rng(Lcg(11));
        // a pool of 150 distinct inputs: the support set stays small
        let pool: Vec<Vec<f32>> = (0..150).map(|_| rng.vec(d)).collect();
        for _ in 0..10_000 {
            let n = if chain { 1 + rng.below(3) } else { 1 };
            let mut x = Vec::new();
            let mut y = Vec::new();
            for _ in 0..n {
                let p = &pool[rng.below(pool.len())];
                x.extend_from_slice(p);
                y.push(label_of(p, l));
            }
            m.learn(&x, &y).unwrap();
        }
        assert!(m.n_support() > 50 && m.n_support() <= 150);
        let norms = m.group_norms();
        for k in 0..3 {
            let exact = sq_norm_from_expansion(&m, k);
            let kept = norms[k] * norms[k];
            assert!(exact > 0.0);
            assert!(
                rel(kept, exact) < 1e-8,
                "{chain} {loss:?} group {k}: {kept} vs {exact}"
            );
        }
        if chain {
            let tr = m.transition_weights();
            let exact: f64 = tr.iter().map(|v| v * v).sum();
            assert!(rel(norms[3] * norms[3], exact) < 1e-8);
        }
    }
}

fn alg1(loss: Loss, lam: f64, d: usize, l: usize) -> OnlineProximal {
    let cfg = Alg1Config {
        loss,
        schedule: Schedule::InvSqrt { eta0: 0.5 },
        regularizers: vec![Regularizer::L2Squared { lam }],
        radius: None,
        averaged: false,
        fit_intercept: false,
        clip_gradient: None,
    };
    OnlineProximal::new(cfg, 1, d, l).unwrap()
}

#[test]
fn one_group_equals_alg1_on_explicit_features() {
    let (d, l, lam) = (5, 4, 0.1);
    for (loss, alg1_loss) in [
        (StreamLoss::Hinge, Loss::Hinge),
        (StreamLoss::Crf, Loss::Logistic),
    ] {
        for kernel_group in [true, false] {
            let mut cfg = if kernel_group {
                config(
                    vec![Kernel::Linear { normalize: false }],
                    vec![],
                    false,
                    loss,
                )
            } else {
                config(vec![], vec![(0..d).collect()], false, loss)
            };
            cfg.regularizer = Regularizer::L2Squared { lam };
            let mut m = StreamMkl::new(cfg, d, l).unwrap();
            let mut r = alg1(alg1_loss, lam, d, l);
            let mut rng = Rng(Lcg(3));
            for _ in 0..400 {
                let x = rng.vec(d);
                let y = label_of(&x, l);
                let mut sx = SparseExample::default();
                for (i, &v) in x.iter().enumerate() {
                    sx.push(0, i as u32, f64::from(v));
                }
                let (za, zb) = (m.scores(&x, 1).unwrap(), r.scores(&sx).unwrap());
                for (a, b) in za.iter().zip(&zb) {
                    assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{za:?} vs {zb:?}");
                }
                let la = m.learn(&x, &[y]).unwrap();
                let lb = r.learn(&sx, Target::Class(y)).unwrap();
                assert!((la - lb).abs() < 1e-9);
            }
        }
    }
}

/// A slow dense kernel structured SVM on chains (hinge, Hamming cost,
/// `(λ/2)‖θ‖²`): every part ever updated is kept as `(x, y, α)` and every
/// score is recomputed from scratch with `Kernel::eval`.
struct DenseSsvm {
    kernel: Kernel,
    l: usize,
    d: usize,
    parts: Vec<(Vec<f32>, usize, f64)>,
    tr: Vec<f64>, // (L + 2) × L
    t: u64,
    lam: f64,
}

impl DenseSsvm {
    fn emissions(&self, x: &[f32]) -> Vec<f64> {
        let n = x.len() / self.d;
        let mut em = vec![0.0; n * self.l];
        for p in 0..n {
            for (xs, y, a) in &self.parts {
                em[p * self.l + y] += a * self.kernel.eval(&x[p * self.d..(p + 1) * self.d], xs);
            }
        }
        em
    }
    fn chain<'a>(&self, em: &'a [f64], tr: &'a [f64], n: usize) -> ChainScores<'a> {
        let l = self.l;
        ChainScores::new(
            em,
            &tr[..l * l],
            Some(&tr[l * l..l * l + l]),
            Some(&tr[l * l + l..]),
            n,
            l,
        )
        .unwrap()
    }
    fn predict(&self, x: &[f32]) -> Vec<usize> {
        let n = x.len() / self.d;
        let em = self.emissions(x);
        let mut out = vec![0; n];
        viterbi(
            &self.chain(&em, &self.tr, n),
            &mut ViterbiWorkspace::new(),
            &mut out,
        )
        .unwrap();
        out
    }
    fn learn(&mut self, x: &[f32], y: &[usize]) {
        self.t += 1;
        let eta = 0.5 / (self.t as f64).sqrt();
        let (n, l) = (y.len(), self.l);
        let em = self.emissions(x);
        let tr = self.tr.clone();
        let mut out = vec![0; n];
        viterbi_hamming(
            &self.chain(&em, &tr, n),
            y,
            1.0,
            &mut ViterbiWorkspace::new(),
            &mut out,
        )
        .unwrap();
        for p in 0..n {
            if out[p] != y[p] {
                let xp = x[p * self.d..(p + 1) * self.d].to_vec();
                self.parts.push((xp.clone(), y[p], eta));
                self.parts.push((xp, out[p], -eta));
            }
        }
        if out != y {
            for (labels, c) in [(y, eta), (&out[..], -eta)] {
                self.tr[l * l + labels[0]] += c;
                self.tr[(l + 1) * l + labels[n - 1]] += c;
                for w in labels.windows(2) {
                    self.tr[w[0] * l + w[1]] += c;
                }
            }
        }
        let s = 1.0 / (1.0 + eta * self.lam);
        self.parts.iter_mut().for_each(|p| p.2 *= s);
        self.tr.iter_mut().for_each(|v| *v *= s);
    }
}

#[test]
fn one_gaussian_group_equals_a_dense_kernel_structured_svm() {
    let (d, l, lam) = (3, 3, 0.05);
    let kernel = Kernel::Gaussian { sigma2: 0.8 };
    let mut cfg = config(vec![kernel.clone()], vec![], true, StreamLoss::Hinge);
    cfg.regularizer = Regularizer::L2Squared { lam };
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    let mut r = DenseSsvm {
        kernel,
        l,
        d,
        parts: Vec::new(),
        tr: vec![0.0; (l + 2) * l],
        t: 0,
        lam,
    };
    let mut rng = Rng(Lcg(5));
    let mut wrong = 0;
    for _ in 0..250 {
        let (x, y) = example(&mut rng, d, l, true);
        assert_eq!(m.predict(&x).unwrap(), r.predict(&x));
        let em_m = m.scores(&x, y.len()).unwrap();
        let em_r = r.emissions(&x);
        for (a, b) in em_m.iter().zip(&em_r) {
            assert!((a - b).abs() < 1e-9 * a.abs().max(1.0));
        }
        if m.predict(&x).unwrap() != y {
            wrong += 1;
        }
        m.learn(&x, &y).unwrap();
        r.learn(&x, &y);
        let tr = m.transition_weights();
        for (a, b) in tr.iter().zip(&r.tr) {
            assert!((a - b).abs() < 1e-9 * a.abs().max(1.0));
        }
    }
    assert!(wrong > 10);
}

#[test]
fn b1_sparse_scoring_equals_dense_scoring() {
    let (d, l) = (3, 3);
    let h = 0.6; // most pairs of inputs in [-1, 1]^3 are farther apart
    let kernels = vec![Kernel::B1Spline { h }, Kernel::Linear { normalize: false }];
    let sparse_cfg = config(kernels.clone(), vec![], true, StreamLoss::Hinge);
    let mut dense_cfg = sparse_cfg.clone();
    dense_cfg.skip_zeros = false;
    let mut a = StreamMkl::new(sparse_cfg, d, l).unwrap();
    let mut b = StreamMkl::new(dense_cfg, d, l).unwrap();
    let mut rng = Rng(Lcg(9));
    learn_alike(&mut a, &mut b, (d, l, true), &mut rng, |_, _| {});
    assert_eq!(a.kernel_coefficients(0), b.kernel_coefficients(0));
    // the B1 scores agree with a dense evaluation of the expansion, and
    // most kernel values were zero
    let sup = a.support_inputs().to_vec();
    let coef = a.kernel_coefficients(0);
    let (mut zeros, mut total) = (0, 0);
    for _ in 0..50 {
        let x = rng.vec(d);
        let mut em = vec![0.0; l];
        for j in 0..a.n_support() {
            let kv = kernels[0].eval(&x, &sup[j * d..(j + 1) * d]);
            total += 1;
            if kv == 0.0 {
                zeros += 1;
            }
            for y in 0..l {
                em[y] += kv * coef[j * l + y];
            }
        }
        let lin = Kernel::Linear { normalize: false };
        let coef_lin = a.kernel_coefficients(1);
        for j in 0..a.n_support() {
            let kv = lin.eval(&x, &sup[j * d..(j + 1) * d]);
            for y in 0..l {
                em[y] += kv * coef_lin[j * l + y];
            }
        }
        let got = a.scores(&x, 1).unwrap();
        for (g, e) in got.iter().zip(&em) {
            assert!((g - e).abs() < 1e-9 * e.abs().max(1.0));
        }
    }
    assert!(zeros * 2 > total, "{zeros} zeros of {total}");
}

#[test]
fn budget_bounds_the_support_and_keeps_norms_exact() {
    let (d, l, budget) = (4, 3, 40);
    for chain in [false, true] {
        let mut cfg = config(gauss_linear(), vec![vec![0, 2]], chain, StreamLoss::Hinge);
        cfg.max_support = Some(budget);
        cfg.average = true;
        let mut m = StreamMkl::new(cfg, d, l).unwrap();
        let mut rng = Rng(Lcg(21));
        let mut correct = 0;
        for t in 0..3000 {
            let (x, mut y) = example(&mut rng, d, l, chain);
            // an easy rule: the label is the argmax of the first L features
            for p in 0..y.len() {
                let r = &x[p * d..p * d + l];
                y[p] = (0..l).fold(0, |b, i| if r[i] > r[b] { i } else { b });
            }
            if t >= 2000 && m.predict(&x).unwrap() == y {
                correct += 1;
            }
            m.learn(&x, &y).unwrap();
            assert!(m.n_support() <= budget);
        }
        assert_eq!(m.n_support(), budget);
        let norms = m.group_norms();
        for k in 0..2 {
            let exact = sq_norm_from_expansion(&m, k);
            assert!(
                rel(norms[k] * norms[k], exact) < 1e-8,
                "{k}: {} vs {exact}",
                norms[k] * norms[k]
            );
        }
        // the next removal takes the input of smallest coefficient mass
        let j = m.smallest_support().unwrap();
        let mass = |j: usize| -> f64 {
            (0..2)
                .map(|k| {
                    m.kernel_coefficients(k)[j * l..(j + 1) * l]
                        .iter()
                        .map(|v| v.abs())
                        .sum::<f64>()
                })
                .sum()
        };
        for i in 0..m.n_support() {
            assert!(mass(j) <= mass(i));
        }
        // far better than chance (1/3) with 40 support inputs
        if !chain {
            assert!(correct > 650, "{correct} of 1000");
        }
    }
}

#[test]
fn bad_input_leaves_the_model_unchanged() {
    let (d, l) = (3, 2);
    let cfg = config(
        vec![Kernel::Gaussian { sigma2: 1.0 }],
        vec![vec![1]],
        true,
        StreamLoss::Crf,
    );
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    m.learn(&[0.1, 0.2, 0.3, 0.3, 0.2, 0.1], &[0, 1]).unwrap();
    let before = m.clone();
    let bytes = m.to_bytes();
    let bad: Vec<(Vec<f32>, Vec<usize>, &str)> = vec![
        (vec![], vec![], "empty"),
        (vec![0.1, f32::NAN, 0.3], vec![0], "finite"),
        (vec![0.1, 0.2], vec![0], "values"),
        (vec![0.1, 0.2, 0.3], vec![2], "labels < 2"),
        (vec![0.1, 0.2, 0.3, 0.4], vec![0, 1], "values"),
    ];
    for (x, y, msg) in bad {
        let e = m.learn(&x, &y).unwrap_err().to_string();
        assert!(e.contains(msg), "{e}");
        assert_eq!(m, before);
    }
    // a dimension change is refused unless asked for
    let e = m
        .learn_extending(&[0.0; 4], 4, &[0], 2, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 features"), "{e}");
    assert!(m
        .learn_extending(&[0.0, f32::INFINITY, 0.0, 0.0], 4, &[0], 3, true)
        .is_err());
    assert_eq!(m.to_bytes(), bytes);
    // a valid extension grows labels and dimension without changing scores
    let x = [0.5f32, -0.5, 0.25];
    let s0 = m.scores(&x, 1).unwrap();
    let mut g = m.clone();
    // labels that no memory could hold are refused, the model unchanged
    let e = g.grow_labels(usize::MAX / 64).unwrap_err().to_string();
    assert!(e.contains("cannot allocate"), "{e}");
    assert_eq!(g, m);
    assert_eq!(g.to_bytes(), bytes);
    g.grow_labels(3).unwrap();
    g.grow_dim(4).unwrap();
    let s1 = g.scores(&[0.5, -0.5, 0.25, 0.0], 1).unwrap();
    assert_eq!(&s1[..2], &s0[..]);
    assert_eq!(s1[2], 0.0);
    assert!(m
        .learn_extending(&[0.5, -0.5, 0.25, 1.0], 4, &[2], 3, true)
        .is_ok());
    assert_eq!((m.dim(), m.n_labels()), (4, 3));
    // multiclass models take one row
    let mc = config(
        vec![Kernel::Linear { normalize: false }],
        vec![],
        false,
        StreamLoss::Hinge,
    );
    let mut m = StreamMkl::new(mc, 2, 2).unwrap();
    assert!(m.learn(&[1.0, 2.0, 3.0, 4.0], &[0, 1]).is_err());
}

#[test]
fn bytes_round_trip_and_corruption_is_an_error() {
    let (d, l) = (2, 3);
    let mut cfg = config(
        vec![Kernel::Gaussian { sigma2: 1.0 }],
        vec![vec![0]],
        true,
        StreamLoss::Hinge,
    );
    cfg.average = true;
    cfg.history_every = 10;
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    let mut rng = Rng(Lcg(1));
    for _ in 0..60 {
        let (x, y) = example(&mut rng, d, l, true);
        m.learn(&x, &y).unwrap();
    }
    assert_eq!(m.beta_history().0, &[10, 20, 30, 40, 50, 60]);
    let bytes = m.to_bytes();
    let back = StreamMkl::from_bytes(&bytes).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.to_bytes(), bytes);
    let x = rng.vec(3 * d);
    assert_eq!(back.predict(&x).unwrap(), m.predict(&x).unwrap());
    let text = payload_text(&bytes);
    let wrong_version = persist::seal(FORMAT, 99, text.as_bytes());
    assert!(StreamMkl::from_bytes(&wrong_version)
        .unwrap_err()
        .to_string()
        .contains("version 99"));
    assert!(StreamMkl::from_bytes(&bytes[..bytes.len() / 2])
        .unwrap_err()
        .to_string()
        .contains("truncated"));
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last / 2] ^= 4;
    assert!(StreamMkl::from_bytes(&flipped)
        .unwrap_err()
        .to_string()
        .contains("checksum"));
    let short_b = text.replacen("\"b\":[", "\"b\":[1.0,", 1);
    assert!(StreamMkl::from_bytes(&sealed(&short_b)).is_err());
    let wrong_s = text.replacen("\"s\":", "\"s\":-", 1);
    assert!(StreamMkl::from_bytes(&sealed(&wrong_s)).is_err());
    let wrong_l = text.replacen("\"l\":3", "\"l\":4", 1);
    assert!(StreamMkl::from_bytes(&sealed(&wrong_l)).is_err());
}

/// The JSON payload of saved bytes.
fn payload_text(bytes: &[u8]) -> String {
    String::from_utf8(persist::open(bytes, FORMAT, &[VERSION]).unwrap().to_vec()).unwrap()
}

/// A JSON payload sealed as saved bytes.
fn sealed(text: &str) -> Vec<u8> {
    persist::seal(FORMAT, VERSION, text.as_bytes())
}

#[test]
fn a_chain_task_needs_transitions() {
    // labels alternate 0, 1, 0, 1, ... whatever the inputs (pure noise):
    // only the transition group can learn this
    let (d, l) = (2, 2);
    let cfg = config(
        vec![Kernel::Gaussian { sigma2: 1.0 }],
        vec![],
        true,
        StreamLoss::Hinge,
    );
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    let mut rng = Rng(Lcg(4));
    for _ in 0..300 {
        let n = 2 + rng.below(5);
        let x = rng.vec(n * d);
        let y: Vec<usize> = (0..n).map(|p| p % 2).collect();
        m.learn(&x, &y).unwrap();
    }
    let mut correct = 0;
    let mut total = 0;
    for _ in 0..50 {
        let n = 2 + rng.below(5);
        let x = rng.vec(n * d);
        let out = m.predict(&x).unwrap();
        total += n;
        correct += out.iter().enumerate().filter(|(p, &v)| v == p % 2).count();
    }
    assert!(correct as f64 > 0.95 * total as f64, "{correct}/{total}");
}

/// Deterministic pseudo-random inputs in `[-1, 1)`.
fn pa_inputs(n: usize, d: usize) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    (0..n * d)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn pa_config(eta0: f64, lam: f64, pa: bool) -> StreamMklConfig {
    let mut cfg = StreamMklConfig::multiclass(
        vec![
            Kernel::Linear { normalize: false },
            Kernel::Gaussian { sigma2: 1.5 },
        ],
        lam,
        eta0,
    );
    cfg.schedule = Schedule::Constant { eta0 };
    cfg.passive_aggressive = pa;
    cfg
}

#[test]
fn passive_aggressive_step_brings_the_margin_to_the_cost() {
    let (d, l, n) = (3, 3, 60);
    let xs = pa_inputs(n, d);
    // uncapped (eta = 1e9) and a negligible prox (eta * lam = 1e-11)
    let mut m = StreamMkl::new(pa_config(1e9, 1e-20, true), d, l).unwrap();
    let mut checked = 0;
    for i in 0..n {
        let x = &xs[i * d..(i + 1) * d];
        let y = label_of(x, l);
        let s = m.scores(x, 1).unwrap();
        let out = (0..l)
            .map(|k| (k, s[k] + if k == y { 0.0 } else { 1.0 }))
            .fold(
                (y, f64::NEG_INFINITY),
                |b, (k, v)| if v > b.1 { (k, v) } else { b },
            )
            .0;
        let loss = m.learn(x, &[y]).unwrap();
        let t = m.scores(x, 1).unwrap();
        if loss > 1e-9 && out != y {
            assert!(
                (t[y] - t[out] - 1.0).abs() < 1e-6,
                "round {i}: margin {} after the step, expected the cost 1",
                t[y] - t[out]
            );
            checked += 1;
        } else {
            // no loss: only the (negligible) prox shrinkage
            for (u, v) in s.iter().zip(&t) {
                assert!(rel(*u, *v) < 1e-9, "round {i}: {u} vs {v}");
            }
        }
    }
    assert!(checked > 5, "only {checked} rounds with a loss");
}

#[test]
fn passive_aggressive_step_is_capped_by_the_schedule() {
    // with a tiny eta the closed-form step exceeds it: PA equals plain steps
    let (d, l, n) = (3, 3, 30);
    let xs = pa_inputs(n, d);
    let mut a = StreamMkl::new(pa_config(1e-6, 1e-3, true), d, l).unwrap();
    let mut b = StreamMkl::new(pa_config(1e-6, 1e-3, false), d, l).unwrap();
    for i in 0..n {
        let x = &xs[i * d..(i + 1) * d];
        let y = label_of(x, l);
        a.learn(x, &[y]).unwrap();
        b.learn(x, &[y]).unwrap();
    }
    let all = |m: &StreamMkl| -> Vec<f64> {
        (0..n)
            .flat_map(|i| m.scores(&xs[i * d..(i + 1) * d], 1).unwrap())
            .collect()
    };
    for (u, v) in all(&a).iter().zip(&all(&b)) {
        assert!(rel(*u, *v) < 1e-9, "{u} vs {v}");
    }
    // and a large eta changes the result
    let mut c = StreamMkl::new(pa_config(10.0, 1e-3, true), d, l).unwrap();
    let mut e = StreamMkl::new(pa_config(10.0, 1e-3, false), d, l).unwrap();
    for i in 0..n {
        let x = &xs[i * d..(i + 1) * d];
        let y = label_of(x, l);
        c.learn(x, &[y]).unwrap();
        e.learn(x, &[y]).unwrap();
    }
    assert_ne!(all(&c), all(&e));
}

#[test]
fn bytes_saved_before_the_passive_aggressive_field_still_load() {
    let (d, l, n) = (3, 3, 10);
    let xs = pa_inputs(n, d);
    let mut m = StreamMkl::new(pa_config(0.5, 1e-3, false), d, l).unwrap();
    for i in 0..n {
        let x = &xs[i * d..(i + 1) * d];
        m.learn(x, &[label_of(x, l)]).unwrap();
    }
    let text = payload_text(&m.to_bytes());
    assert!(text.contains(",\"passive_aggressive\":false"));
    let old = text.replace(",\"passive_aggressive\":false", "");
    let back = StreamMkl::from_bytes(&sealed(&old)).unwrap();
    assert!(!back.config().passive_aggressive);
    assert_eq!(back.to_bytes(), m.to_bytes());
}

/// A model over precomputed inputs (Gram matrix and feature rows of a
/// fixed input set) equals the same model over the feature vectors,
/// round by round: scores, norms, coefficients and predictions, for the
/// hinge and the CRF loss.
#[test]
fn precomputed_inputs_equal_feature_vectors() {
    use omkl_core::learner::stream_mkl::{Example, FeatureRows, Iterate, PrecomputedGram};
    use std::sync::Arc;
    let (m, d, l) = (7usize, 3usize, 4usize);
    // small integers: the f32 Gram matrix of the linear kernel is exact
    let x: Vec<f32> = (0..m * d).map(|k| ((k * 5 + 1) % 7) as f32 - 3.0).collect();
    let mut gram = vec![0.0f32; m * m];
    for i in 0..m {
        for j in 0..m {
            gram[i * m + j] = (0..d).map(|f| x[i * d + f] * x[j * d + f]).sum();
        }
    }
    let cols = vec![0usize, 2];
    let feats: Vec<f32> = (0..m)
        .flat_map(|i| cols.iter().map(move |&c| (i, c)))
        .map(|(i, c)| x[i * d + c])
        .collect();
    for loss in [StreamLoss::Hinge, StreamLoss::Crf] {
        let mut cv = config(
            vec![Kernel::Linear { normalize: false }],
            vec![cols.clone()],
            true,
            loss,
        );
        cv.average = true;
        cv.transition_lam = Some(0.05);
        let mut cp = cv.clone();
        cp.kernels.clear();
        cp.explicit_groups.clear();
        let mut a = StreamMkl::new(cv, d, l).unwrap();
        let g = PrecomputedGram::dense(Arc::new(gram.clone()), m).unwrap();
        let f = Arc::new(FeatureRows::new(&feats, m, cols.len()).unwrap());
        let mut b = StreamMkl::new_precomputed(cp, vec![g], vec![f], l).unwrap();
        for t in 0..60 {
            let n = 1 + t % 4;
            let ids: Vec<usize> = (0..n).map(|p| (t * 3 + p * 5) % m).collect();
            let ys: Vec<usize> = ids.iter().map(|&i| (i * 3 + t / 20) % l).collect();
            let xs: Vec<f32> = ids
                .iter()
                .flat_map(|&i| x[i * d..(i + 1) * d].to_vec())
                .collect();
            let la = a.learn(&xs, &ys).unwrap();
            let lb = b.learn_ids(&ids, &ys).unwrap();
            assert!(
                (la - lb).abs() <= 1e-9 * la.abs().max(1.0),
                "{loss:?} round {t}"
            );
            for (u, v) in a.group_norms().iter().zip(b.group_norms()) {
                assert!((u - v).abs() <= 1e-9 * u.max(1.0), "{loss:?} round {t}");
            }
            let sa = a.scores(&xs, n).unwrap();
            let sb = b.example_scores(Example::Ids(&ids)).unwrap();
            for (u, v) in sa.iter().zip(&sb) {
                assert!(
                    (u - v).abs() <= 1e-9 * u.abs().max(1.0),
                    "{loss:?} round {t}"
                );
            }
            assert_eq!(a.predict(&xs).unwrap(), b.predict_ids(&ids).unwrap());
        }
        for it in [Iterate::Last, Iterate::Average] {
            let (ta, tb) = (a.transition_coef(it), b.transition_coef(it));
            for (u, v) in ta.iter().zip(&tb) {
                assert!((u - v).abs() <= 1e-9 * u.abs().max(1.0));
            }
            let (ea, eb) = (a.explicit_coef(0, it), b.explicit_coef(0, it));
            for (u, v) in ea.iter().zip(&eb) {
                assert!((u - v).abs() <= 1e-9 * u.abs().max(1.0));
            }
            for (u, v) in a.iterate_norms(it).iter().zip(b.iterate_norms(it)) {
                assert!((u - v).abs() <= 1e-9 * u.max(1.0), "{it:?}");
            }
        }
        // the support of the vector model is a permutation of the inputs
        let s = a.n_support();
        let (ka, kb) = (
            a.kernel_coef(0, Iterate::Average),
            b.kernel_coef(0, Iterate::Average),
        );
        for j in 0..s {
            let row = &a.support_inputs()[j * d..(j + 1) * d];
            let i = (0..m).find(|&i| x[i * d..(i + 1) * d] == *row).unwrap();
            for y in 0..l {
                let (u, v) = (ka[y * s + j], kb[y * m + i]);
                assert!((u - v).abs() <= 1e-9 * u.abs().max(1.0));
            }
        }
    }
}

#[test]
fn forgetting_shrinks_every_group_and_the_average_is_the_mean_of_the_iterates() {
    let (d, l, f) = (3, 3, 0.95);
    for chain in [false, true] {
        let mut cfg = config(gauss_linear(), vec![vec![0, 2]], chain, StreamLoss::Hinge);
        cfg.average = true;
        cfg.forgetting = f;
        let mut m = StreamMkl::new(cfg.clone(), d, l).unwrap();
        cfg.forgetting = 1.0;
        let mut rng = Rng(Lcg(5));
        // running sums of the current iterates, per support input (the
        // support only grows without a budget)
        let mut sums: Vec<Vec<f64>> = vec![Vec::new(); 2];
        let mut esum = vec![0.0; l * 2];
        let mut tsum: Vec<f64> = Vec::new();
        let rounds = 200;
        for t in 0..rounds {
            let (x, y) = example(&mut rng, d, l, chain);
            // one round of the forgetting model is the same round without
            // forgetting, then every group times f
            let text = payload_text(&m.to_bytes());
            let text = text.replace("\"forgetting\":0.95", "\"forgetting\":1.0");
            let mut plain = StreamMkl::from_bytes(&sealed(&text)).unwrap();
            assert_eq!(plain.config(), &cfg);
            plain.learn(&x, &y).unwrap();
            m.learn(&x, &y).unwrap();
            let (na, nb) = (m.group_norms(), plain.group_norms());
            for (a, b) in na.iter().zip(&nb) {
                assert!(
                    (a - f * b).abs() <= 1e-9 * b.max(1.0),
                    "{t}: {na:?} vs {nb:?}"
                );
            }
            for k in 0..2 {
                let c = m.kernel_coefficients(k);
                sums[k].resize(c.len(), 0.0);
                for (s, v) in sums[k].iter_mut().zip(&c) {
                    *s += v;
                }
            }
            for (s, v) in esum.iter_mut().zip(m.explicit_coef(0, Iterate::Last)) {
                *s += v;
            }
            let tr = m.transition_weights();
            tsum.resize(tr.len(), 0.0);
            for (s, v) in tsum.iter_mut().zip(&tr) {
                *s += v;
            }
        }
        let s = m.n_support();
        for k in 0..2 {
            let avg = m.kernel_coef(k, Iterate::Average);
            for j in 0..s {
                for y in 0..l {
                    let want = sums[k][j * l + y] / rounds as f64;
                    assert!((avg[y * s + j] - want).abs() < 1e-9 * (1.0 + want.abs()));
                }
            }
        }
        for (a, s) in m.explicit_coef(0, Iterate::Average).iter().zip(&esum) {
            assert!((a - s / rounds as f64).abs() < 1e-9 * (1.0 + s.abs()));
        }
        for (a, s) in m.transition_coef(Iterate::Average).iter().zip(&tsum) {
            assert!((a - s / rounds as f64).abs() < 1e-9 * (1.0 + s.abs()));
        }
    }
}

#[test]
fn forgetting_on_mistakes_shrinks_the_groups_only_in_rounds_of_hinge_loss_at_least_cost() {
    let (d, l, f) = (3, 3, 0.95);
    for chain in [false, true] {
        let mut cfg = config(gauss_linear(), vec![vec![0, 2]], chain, StreamLoss::Hinge);
        cfg.forgetting = f;
        cfg.forget_on_mistakes = true;
        cfg.passive_aggressive = !chain;
        let mut m = StreamMkl::new(cfg.clone(), d, l).unwrap();
        let mut rng = Rng(Lcg(7));
        let (mut forgot, mut kept) = (0, 0);
        for t in 0..300 {
            let (x, y) = example(&mut rng, d, l, chain);
            // the same round without forgetting, from the same model
            let text = payload_text(&m.to_bytes());
            let text = text.replace("\"forgetting\":0.95", "\"forgetting\":1.0");
            let mut plain = StreamMkl::from_bytes(&sealed(&text)).unwrap();
            let loss = plain.learn(&x, &y).unwrap();
            assert_eq!(m.learn(&x, &y).unwrap(), loss);
            let c = if loss >= cfg.cost { f } else { 1.0 };
            if c < 1.0 {
                forgot += 1;
            } else {
                kept += 1;
            }
            let (na, nb) = (m.group_norms(), plain.group_norms());
            for (a, b) in na.iter().zip(&nb) {
                assert!(
                    (a - c * b).abs() <= 1e-9 * b.max(1.0),
                    "{t}: loss {loss}: {na:?} vs {nb:?}"
                );
            }
        }
        // both kinds of rounds occur (the check is not vacuous)
        assert!(forgot > 10 && kept > 10, "{forgot} {kept}");
    }
}

#[test]
fn forgetting_waits_for_forget_after_rounds_that_would_forget_and_the_count_is_saved() {
    let (d, l, f, wait) = (3, 3, 0.95, 12);
    for on_mistakes in [false, true] {
        let mut cfg = config(gauss_linear(), vec![vec![0, 2]], false, StreamLoss::Hinge);
        cfg.forgetting = f;
        cfg.forget_on_mistakes = on_mistakes;
        cfg.forget_after = wait;
        let mut m = StreamMkl::new(cfg.clone(), d, l).unwrap();
        let mut plain_cfg = cfg.clone();
        plain_cfg.forgetting = 1.0;
        let mut plain = StreamMkl::new(plain_cfg, d, l).unwrap();
        let mut rng = Rng(Lcg(11));
        let mut would = 0;
        for t in 0..200 {
            let (x, y) = example(&mut rng, d, l, false);
            let loss = m.learn(&x, &y).unwrap();
            let plain_loss = plain.learn(&x, &y).unwrap();
            would += u64::from(!on_mistakes || loss >= cfg.cost);
            if would <= wait {
                // no forgetting yet: the model without it, bit for bit
                assert_eq!(plain_loss, loss, "{t}");
                assert_eq!(m.group_norms(), plain.group_norms(), "{t}");
            }
            if t == 100 {
                // the count of waited rounds is saved with the model
                let back = StreamMkl::from_bytes(&m.to_bytes()).unwrap();
                assert_eq!(back, m);
            }
        }
        assert!(would > wait + 10, "{would}");
        // after the wait, forgetting makes another model
        assert_ne!(m.group_norms(), plain.group_norms());
        // bytes of a model saved without the count load with none waited
        let text = payload_text(&m.to_bytes());
        let waited = format!("\"forget_waited\":{wait},");
        assert!(text.contains(&waited), "{text:.300}");
        let old = StreamMkl::from_bytes(&sealed(&text.replace(&waited, ""))).unwrap();
        assert_ne!(old, m);
    }
}

#[test]
fn oldest_rule_keeps_the_most_recently_changed_inputs_and_exact_norms() {
    let (d, l, budget) = (3, 3, 25);
    let mut cfg = config(gauss_linear(), vec![], false, StreamLoss::Hinge);
    cfg.max_support = Some(budget);
    cfg.budget_rule = BudgetRule::Oldest;
    cfg.forgetting = 0.99;
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    let mut rng = Rng(Lcg(9));
    // a least-recently-changed list: a hinge round with a positive loss
    // changes the coefficients of its input (and only then)
    let mut recent: Vec<Vec<u32>> = Vec::new();
    let key = |r: &[f32]| r.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    for _ in 0..1500 {
        // inputs from a small pool, so that stored inputs come back
        let (mut x, y) = example(&mut rng, d, l, false);
        let pool = rng.below(60) as f32;
        x[0] = (pool / 60.0).sin();
        x[1] = (pool / 7.0).cos();
        x[2] = pool / 60.0;
        let loss = m.learn(&x, &y).unwrap();
        if loss > 0.0 {
            let k = key(&x);
            recent.retain(|r| *r != k);
            recent.push(k);
            if recent.len() > budget {
                recent.remove(0);
            }
        }
        let mut have: Vec<Vec<u32>> = m.support_inputs().chunks_exact(d).map(key).collect();
        let mut want = recent.clone();
        have.sort();
        want.sort();
        assert_eq!(have, want);
    }
    assert_eq!(m.n_support(), budget);
    let norms = m.group_norms();
    for k in 0..2 {
        let exact = sq_norm_from_expansion(&m, k);
        assert!(rel(norms[k] * norms[k], exact) < 1e-8, "{k}");
    }
}

#[test]
fn a_restarted_schedule_steps_with_eta0_again() {
    let (d, l) = (2, 2);
    let mut cfg = config(
        vec![Kernel::Linear { normalize: false }],
        vec![],
        false,
        StreamLoss::Hinge,
    );
    cfg.regularizer = Regularizer::SquaredL21 { lam: 1e-12 };
    cfg.schedule = Schedule::InvSqrt { eta0: 0.5 };
    let mut m = StreamMkl::new(cfg, d, l).unwrap();
    for t in 0..15 {
        m.learn(&[1.0, 0.0], &[t % 2]).unwrap();
    }
    let mut restarted = m.clone();
    restarted.restart_schedule();
    assert_eq!(restarted.schedule_rounds(), 0);
    // a new input that is misclassified: its coefficient is the step
    let x = [0.0, 3.0];
    let y = 1 - m.predict(&x).unwrap()[0];
    m.learn(&x, &[y]).unwrap();
    restarted.learn(&x, &[y]).unwrap();
    let step = |m: &StreamMkl| m.kernel_coefficients(0)[m.n_support() * l - l + y];
    assert!(rel(step(&m), 0.5 / 16f64.sqrt()) < 1e-9, "{}", step(&m));
    assert!(rel(step(&restarted), 0.5) < 1e-9, "{}", step(&restarted));
    assert_eq!(restarted.schedule_rounds(), 1);
    let back = StreamMkl::from_bytes(&restarted.to_bytes()).unwrap();
    assert_eq!(back, restarted);
}

#[test]
fn kernel_columns_leave_the_rest_to_explicit_groups() {
    // a linear kernel on columns 0..2 is the explicit group on those columns
    let (d, l) = (4, 3);
    for chain in [false, true] {
        let lin = Kernel::Linear { normalize: false };
        let mut ca = config(vec![lin], vec![vec![2, 3]], chain, StreamLoss::Hinge);
        ca.kernel_columns = Some(2);
        let mut a = StreamMkl::new(ca, d, l).unwrap();
        let cb = config(
            vec![],
            vec![vec![0, 1], vec![2, 3]],
            chain,
            StreamLoss::Hinge,
        );
        let mut b = StreamMkl::new(cb, d, l).unwrap();
        learn_alike(&mut a, &mut b, (d, l, chain), &mut Rng(Lcg(3)), |a, b| {
            for (u, v) in a.group_norms().iter().zip(b.group_norms()) {
                assert!(rel(*u, v) < 1e-9);
            }
        });
        assert_eq!(a.support_inputs().len(), 2 * a.n_support());
        let back = StreamMkl::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(back, a);
    }
}

#[test]
fn scaling_to_zero_resets_the_model_which_still_learns_and_saves() {
    let (d, l) = (3, 3);
    let kernels = vec![Kernel::Gaussian { sigma2: 1.0 }];
    let mut m = StreamMkl::new(
        config(kernels, vec![vec![1]], true, StreamLoss::Hinge),
        d,
        l,
    )
    .unwrap();
    let mut rng = Rng(Lcg(4));
    for _ in 0..50 {
        let (x, y) = example(&mut rng, d, l, true);
        m.learn(&x, &y).unwrap();
    }
    assert!(m.n_support() > 0);
    assert!(m
        .scale_groups(1.5)
        .unwrap_err()
        .to_string()
        .contains("[0, 1]"));
    m.scale_groups(0.5).unwrap();
    m.scale_groups(0.0).unwrap();
    assert_eq!(m.n_support(), 0);
    assert!(m.group_norms().iter().all(|&n| n == 0.0));
    let (x, y) = example(&mut rng, d, l, true);
    m.predict(&x).unwrap();
    m.learn(&x, &y).unwrap();
    assert_eq!(StreamMkl::from_bytes(&m.to_bytes()).unwrap(), m);
}

#[test]
fn counted_mistakes_are_those_of_the_prediction_before_the_update() {
    let (d, l) = (3, 3);
    for chain in [false, true] {
        let kernels = vec![Kernel::Gaussian { sigma2: 1.0 }];
        let mut cfg = config(kernels, vec![vec![0]], chain, StreamLoss::Hinge);
        cfg.count_mistakes = true;
        let mut m = StreamMkl::new(cfg, d, l).unwrap();
        let mut rng = Rng(Lcg(8));
        let mut total = 0;
        for _ in 0..200 {
            let (x, y) = example(&mut rng, d, l, chain);
            let pred = m.predict(&x).unwrap();
            let wrong = pred.iter().zip(&y).filter(|(a, b)| a != b).count();
            m.learn(&x, &y).unwrap();
            assert_eq!(m.last_mistakes(), wrong);
            total += wrong;
        }
        assert!(total > 0);
    }
}

#[test]
fn explicit_group_norms_tracked_while_written_match_recomputation() {
    let (d, l) = (5, 3);
    for (chain, loss) in STRUCTURES_AND_LOSSES {
        for pa in [false, true] {
            let mut cfg = config(
                vec![Kernel::Gaussian { sigma2: 1.0 }],
                vec![vec![0, 2, 4], vec![1, 3]],
                chain,
                loss,
            );
            cfg.passive_aggressive = pa && loss == StreamLoss::Hinge;
            cfg.regularizer = Regularizer::SquaredL21 { lam: 0.01 };
            let mut m = StreamMkl::new(cfg, d, l).unwrap();
            let mut rng = Rng(Lcg(23));
            for t in 0..3_000 {
                let (x, y) = example(&mut rng, d, l, chain);
                m.learn(&x, &y).unwrap();
                if t % 500 != 499 {
                    continue;
                }
                let norms = m.group_norms();
                for e in 0..2 {
                    let exact: f64 = m
                        .explicit_coef(e, Iterate::Last)
                        .iter()
                        .map(|v| v * v)
                        .sum();
                    let kept = norms[1 + e] * norms[1 + e];
                    assert!(exact > 0.0, "{chain} {loss:?} {pa} group {e}");
                    assert!(
                        rel(kept, exact) < 1e-9,
                        "{chain} {loss:?} {pa} group {e}: {kept} vs {exact}"
                    );
                }
            }
        }
    }
}

/// Growing the input dimension extends an explicit group over every input
/// column (the primal linear group) with the new columns, and no other
/// group; scores do not change, and a model grown as it learns equals one
/// that had every column from the start.
#[test]
fn growing_the_dimension_extends_the_groups_over_every_column() {
    let narrow = config(
        vec![Kernel::Gaussian { sigma2: 1.0 }],
        vec![vec![0, 1], vec![1]],
        false,
        StreamLoss::Hinge,
    );
    let mut wide_cfg = narrow.clone();
    wide_cfg.explicit_groups[0] = vec![0, 1, 2];
    let mut grown = StreamMkl::new(narrow, 2, 2).unwrap();
    let mut wide = StreamMkl::new(wide_cfg, 3, 2).unwrap();
    let mut rng = Rng(Lcg(5));
    for t in 0..80 {
        let (x, y) = example(&mut rng, 2, 2, false);
        let new = if t < 40 { 0.0 } else { x[0] - x[1] };
        let x3 = [x[0], x[1], new];
        if t < 40 {
            grown.learn(&x, &y).unwrap();
        } else {
            if t == 40 {
                let mut g = grown.clone();
                g.grow_dim(3).unwrap();
                assert_eq!(g.config().explicit_groups, vec![vec![0, 1, 2], vec![1]]);
                let at_zero = [x[0], x[1], 0.0];
                assert_eq!(g.scores(&at_zero, 1).unwrap(), grown.scores(&x, 1).unwrap());
            }
            grown.learn_extending(&x3, 3, &y, 2, true).unwrap();
        }
        wide.learn(&x3, &y).unwrap();
    }
    assert_eq!(grown.config().explicit_groups, vec![vec![0, 1, 2], vec![1]]);
    assert_eq!(grown.to_bytes(), wide.to_bytes());
}
