use super::*;
use crate::decode::arcs::ArcScores;
use crate::decode::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use crate::lcg::Lcg;

/// Every labelling of `n` positions with `l` labels.
fn all_labellings(n: usize, l: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for _ in 0..n {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..l).map(move |y| {
                    let mut q = p.clone();
                    q.push(y);
                    q
                })
            })
            .collect();
    }
    out
}

fn score(em: &[f64], tr: &[f64], l: usize, y: &[usize]) -> f64 {
    let mut s = tr[l * l + y[0]] + tr[(l + 1) * l + y[y.len() - 1]];
    for (i, &v) in y.iter().enumerate() {
        s += em[i * l + v];
        if i > 0 {
            s += tr[y[i - 1] * l + v];
        }
    }
    s
}

/// The parts of `y` as one indicator vector (emissions then transitions).
fn parts(n: usize, l: usize, y: &[usize]) -> Vec<f64> {
    let mut v = vec![0.0; n * l + (l + 2) * l];
    for (i, &t) in y.iter().enumerate() {
        v[i * l + t] += 1.0;
    }
    add_path(&mut v[n * l..], l, y, 1.0);
    v
}

/// Every tree over `n` words with one root child, as heads of words
/// `1..=n`.
fn all_trees(n: usize) -> Vec<Vec<usize>> {
    let zeros = vec![0.0; (n + 1) * (n + 1)];
    let arcs = ArcScores::new(&zeros, n).unwrap();
    let mut out = Vec::new();
    let mut heads = vec![0usize; n + 1];
    loop {
        if arcs.check_tree("t", &heads).is_ok()
            && heads[1..].iter().filter(|&&h| h == 0).count() == 1
        {
            out.push(heads[1..].to_vec());
        }
        let Some(i) = (1..=n).find(|&i| heads[i] < n) else {
            return out;
        };
        heads[i] += 1;
        heads[1..i].fill(0);
    }
}

/// Chu-Liu-Edmonds with one root child, as the parser decodes.
fn cle(s: &[f64], n1: usize) -> Result<Vec<usize>> {
    let mut heads = vec![0; n1];
    chu_liu_edmonds(
        &ArcScores::new(s, n1 - 1)?,
        true,
        &mut CleWorkspace::new(),
        &mut heads,
    )?;
    Ok(heads[1..].to_vec())
}

#[test]
fn tree_hinge_matches_brute_force_over_all_trees() {
    let mut rng = Lcg(11);
    for n in [3, 4] {
        let n1 = n + 1;
        let trees = all_trees(n);
        assert_eq!(trees.len(), if n == 3 { 9 } else { 64 });
        for round in 0..30 {
            let mut s: Vec<f64> = (0..n1 * n1)
                .map(|_| f64::from(rng.next_u32()) / (1u64 << 30) as f64 - 2.0)
                .collect();
            let gold = trees[round * 7 % trees.len()].clone();
            if round % 3 == 0 {
                // a gold tree that wins by a margin above the cost
                for m in 1..n1 {
                    s[gold[m - 1] * n1 + m] += 10.0;
                }
            }
            let score = |t: &[usize]| (1..n1).map(|m| s[t[m - 1] * n1 + m]).sum::<f64>();
            let (best, aug) = trees
                .iter()
                .map(|t| {
                    let ham = t.iter().zip(&gold).filter(|(a, b)| a != b).count() as f64;
                    (t.clone(), score(t) + ham)
                })
                .fold(
                    (vec![], f64::NEG_INFINITY),
                    |a, b| if b.1 > a.1 { b } else { a },
                );
            let (loss, pred) = tree_hinge(&mut s.clone(), n1, &gold, cle).unwrap();
            let want = (aug - score(&gold)).max(0.0);
            assert!((loss - want).abs() < 1e-12, "{loss} vs {want}");
            assert_eq!(pred, best);
            if round % 3 == 0 {
                assert_eq!((loss, &pred), (0.0, &gold));
            }
        }
    }
}

type DecodeFnTest<'a> = &'a dyn Fn(&[f64], usize) -> Result<Vec<usize>>;

#[test]
fn tree_hinge_rejects_bad_shapes_and_decoded_heads() {
    let s = vec![0.0; 16];
    let gold = [0, 1, 2];
    fn run(s: &[f64], n1: usize, gold: &[usize], dec: DecodeFnTest) -> String {
        tree_hinge(&mut s.to_vec(), n1, gold, dec)
            .unwrap_err()
            .to_string()
    }
    assert!(run(&s[..15], 4, &gold, &cle).contains("scores"));
    assert!(run(&s, 4, &gold[..2], &cle).contains("heads"));
    assert!(run(&s, 4, &[0, 1, 3], &cle).contains("head 3 of word 3"));
    assert!(run(&s, 4, &[0, 4, 1], &cle).contains("head 4 of word 2"));
    assert!(run(&s[..1], 1, &[], &cle).contains("sentence"));
    assert!(run(&s, 4, &gold, &|_, _| Ok(vec![0, 1])).contains("decoded heads"));
    assert!(run(&s, 4, &gold, &|_, _| Ok(vec![0, 1, 7])).contains("head 7 of word 3"));
}

#[test]
fn head_softmax_is_the_log_loss_and_its_gradient() {
    // 2 words, n1 = 3; scores s[h * 3 + m]
    let s = [0.0, 0.5, -1.0, 0.0, 0.0, 2.0, 0.0, 0.3, 0.0];
    let heads = [2usize, 0];
    let mut arcs = Vec::new();
    let loss = head_softmax(&s, 3, &heads, &mut arcs);
    // word 1: candidates 0 (0.5), 2 (0.3), gold 2; word 2: 0 (-1), 1 (2), gold 0
    let lse = |a: f64, b: f64| (a.exp() + b.exp()).ln();
    let want = (lse(0.5, 0.3) - 0.3) + (lse(-1.0, 2.0) + 1.0);
    assert!((loss - want).abs() < 1e-12, "{loss} vs {want}");
    let p = |a: f64, b: f64| a.exp() / (a.exp() + b.exp());
    let coef = |h: u32, m: u32| arcs.iter().find(|x| x.0 == h && x.1 == m).unwrap().2;
    assert!((coef(2, 1) - (1.0 - p(0.3, 0.5))).abs() < 1e-12);
    assert!((coef(0, 1) + p(0.5, 0.3)).abs() < 1e-12);
    assert!((coef(0, 2) - (1.0 - p(-1.0, 2.0))).abs() < 1e-12);
    assert!((coef(1, 2) + p(2.0, -1.0)).abs() < 1e-12);
    assert_eq!(arcs.len(), 4);
}

#[test]
fn crf_and_hinge_match_brute_force() {
    let (n, l) = (3, 3);
    let em: Vec<f64> = (0..n * l)
        .map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.37)
        .collect();
    let tr: Vec<f64> = (0..(l + 2) * l)
        .map(|i| ((i * 3 % 7) as f64 - 3.0) * 0.21)
        .collect();
    let gold = [2, 0, 1];
    let ys = all_labellings(n, l);
    // the loss and the gradient (emissions, then transitions) of `gold`
    let run = |loss: Loss, gold: &[usize]| {
        let (mut gem, mut gtr) = (vec![0.0; n * l], vec![0.0; (l + 2) * l]);
        let mut ws = ChainWorkspace::default();
        chain_loss_grad(loss, &em, &tr, n, l, gold, &mut ws, &mut gem, &mut gtr)
            .map(|v| (v, [gem, gtr].concat()))
    };
    // CRF: log Z - score(gold); gradient E[parts] - parts(gold)
    let scores: Vec<f64> = ys.iter().map(|y| score(&em, &tr, l, y)).collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
    let log_z = m + z.ln();
    let mut expected = parts(n, l, &gold).iter().map(|v| -v).collect::<Vec<_>>();
    for (y, s) in ys.iter().zip(&scores) {
        let p = (s - log_z).exp();
        for (e, v) in expected.iter_mut().zip(parts(n, l, y)) {
            *e += p * v;
        }
    }
    let (loss, g) = run(Loss::Logistic, &gold).unwrap();
    assert!((loss - (log_z - score(&em, &tr, l, &gold))).abs() < 1e-12);
    for (a, b) in g.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
    // hinge: the augmented maximiser
    let (best, aug) = ys
        .iter()
        .map(|y| {
            let ham = y.iter().zip(&gold).filter(|(a, b)| a != b).count() as f64;
            (y.clone(), score(&em, &tr, l, y) + ham)
        })
        .fold(
            (vec![], f64::NEG_INFINITY),
            |a, b| if b.1 > a.1 { b } else { a },
        );
    let (loss, g) = run(Loss::Hinge, &gold).unwrap();
    assert!((loss - (aug - score(&em, &tr, l, &gold))).abs() < 1e-12);
    let want: Vec<f64> = parts(n, l, &best)
        .iter()
        .zip(parts(n, l, &gold))
        .map(|(a, b)| a - b)
        .collect();
    assert_eq!(g, want);
    assert!(run(Loss::Squared, &gold).is_err());
    assert!(run(Loss::Hinge, &[0, 3, 0]).is_err());
}

/// The round's scratch gradient equals the dense one of
/// [`chain_loss_grad`], its listed rows hold every non-zero entry, and
/// clearing them leaves the buffer zero for the next round (with ties,
/// labels that change from round to round, both losses, and column
/// maxima read beforehand or not).
#[test]
fn scratch_gradient_equals_the_dense_one_and_lists_its_rows() {
    let mut rng = Lcg(7);
    let mut s = ChainScratch::default();
    for case in 0..300 {
        let loss = if case % 3 == 0 {
            Loss::Logistic
        } else {
            Loss::Hinge
        };
        // from 40 labels on, Viterbi takes bounded steps that read the
        // column maxima (given here in every other case)
        let l = if case % 5 == 4 {
            40 + rng.next_u32() as usize % 6
        } else {
            1 + rng.next_u32() as usize % 6
        };
        let n = 1 + rng.next_u32() as usize % 5;
        // small integer scores make ties common
        let mut draw = |len: usize| -> Vec<f64> {
            (0..len)
                .map(|_| (rng.next_u32() % 3) as f64 - 1.0)
                .collect()
        };
        let (em, tr) = (draw(n * l), draw((l + 2) * l));
        let gold: Vec<usize> = (0..n).map(|_| rng.next_u32() as usize % l).collect();
        let (mut gem, mut gtr) = (vec![0.0; n * l], vec![0.0; (l + 2) * l]);
        let mut ws = ChainWorkspace::default();
        let want =
            chain_loss_grad(loss, &em, &tr, n, l, &gold, &mut ws, &mut gem, &mut gtr).unwrap();
        if case % 2 == 0 {
            s.col_max = (0..l)
                .map(|y| {
                    (0..l)
                        .map(|p| tr[p * l + y])
                        .fold(f64::NEG_INFINITY, f64::max)
                })
                .collect();
            s.tr_finite = true;
        }
        (s.em, s.tr) = (em, tr);
        let got = chain_loss_grad_scratch(loss, n, l, &gold, &mut s).unwrap();
        assert_eq!(got.to_bits(), want.to_bits(), "case {case}");
        assert_eq!(s.gem, gem, "case {case}");
        assert_eq!(s.gtr, gtr, "case {case}");
        assert!(s.gtr_rows.windows(2).all(|w| w[0] < w[1]), "case {case}");
        for (r, row) in gtr.chunks(l).enumerate() {
            if row.iter().any(|&v| v != 0.0) {
                assert!(s.gtr_rows.contains(&r), "case {case}: row {r} not listed");
            }
        }
        for &r in &s.gtr_rows {
            s.gtr[r * l..(r + 1) * l].fill(0.0);
        }
        assert!(s.gtr.iter().all(|&v| v == 0.0), "case {case}");
        s.gtr_zero = true;
    }
}
