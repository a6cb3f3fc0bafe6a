//! Property tests of the exact decoders against brute-force enumeration on
//! tiny instances.

use omkl_core::decode::arcs::ArcScores;
use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::chu_liu_edmonds::{chu_liu_edmonds, chu_liu_edmonds_hamming, CleWorkspace};
use omkl_core::decode::eisner::{eisner, eisner_hamming, EisnerWorkspace};
use omkl_core::decode::forward_backward::{
    forward_backward, forward_backward_pairwise, ForwardBackwardWorkspace,
};
use omkl_core::decode::matrix_tree::{matrix_tree, MatrixTreeWorkspace};
use omkl_core::decode::nbest::{viterbi_nbest, NbestWorkspace};
use omkl_core::decode::viterbi::{viterbi, viterbi_hamming, ViterbiWorkspace};
use proptest::prelude::*;

/// Every labelling of `n` positions with `l` labels, in lexicographic order.
fn all_labellings(n: usize, l: usize) -> Vec<Vec<usize>> {
    let mut out = vec![];
    let mut y = vec![0; n];
    loop {
        out.push(y.clone());
        let mut i = n;
        loop {
            if i == 0 {
                return out;
            }
            i -= 1;
            y[i] += 1;
            if y[i] < l {
                break;
            }
            y[i] = 0;
        }
    }
}

/// (n, l, em, tr, start, stop, use start/stop)
type ChainCase = (usize, usize, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, bool);

/// Random chain scores; some scores are drawn
/// from a small integer set to produce ties.
fn chain_case() -> impl Strategy<Value = ChainCase> {
    (1usize..=6, 1usize..=4, any::<bool>(), any::<bool>()).prop_flat_map(|(n, l, ties, ends)| {
        let val = if ties {
            (-2i32..=2).prop_map(f64::from).boxed()
        } else {
            (-5.0f64..5.0).boxed()
        };
        (
            Just(n),
            Just(l),
            prop::collection::vec(val.clone(), n * l),
            prop::collection::vec(val.clone(), l * l),
            prop::collection::vec(val.clone(), l),
            prop::collection::vec(val, l),
            Just(ends),
        )
    })
}

/// The scores of a [`ChainCase`], with its start and stop scores when
/// `ends`.
fn chain_of<'a>(
    n: usize,
    l: usize,
    em: &'a [f64],
    tr: &'a [f64],
    st: &'a [f64],
    sp: &'a [f64],
    ends: bool,
) -> ChainScores<'a> {
    let (start, stop) = if ends {
        (Some(st), Some(sp))
    } else {
        (None, None)
    };
    ChainScores::new(em, tr, start, stop, n, l).unwrap()
}

/// Every tree over nodes `0..=n` rooted at 0, as `heads` (heads[0] = 0).
fn all_trees(n: usize) -> Vec<Vec<usize>> {
    let arcs_ok = vec![0.0; (n + 1) * (n + 1)];
    let a = ArcScores::new(&arcs_ok, n).unwrap();
    let mut out = vec![];
    let mut h = vec![0; n + 1];
    fn rec(m: usize, n: usize, h: &mut Vec<usize>, a: &ArcScores<'_>, out: &mut Vec<Vec<usize>>) {
        if m > n {
            if a.check_tree("h", h).is_ok() {
                out.push(h.clone());
            }
            return;
        }
        for head in 0..=n {
            if head != m {
                h[m] = head;
                rec(m + 1, n, h, a, out);
            }
        }
    }
    rec(1, n, &mut h, &a, &mut out);
    out
}

fn root_children(h: &[usize]) -> usize {
    h.iter().skip(1).filter(|&&x| x == 0).count()
}

/// Random arc scores for n words; integer scores in a small range give ties.
fn arcs_case(max_n: usize) -> impl Strategy<Value = (usize, Vec<f64>)> {
    (1usize..=max_n, any::<bool>()).prop_flat_map(|(n, ties)| {
        let val = if ties {
            (-2i32..=2).prop_map(f64::from).boxed()
        } else {
            (-5.0f64..5.0).boxed()
        };
        (Just(n), prop::collection::vec(val, (n + 1) * (n + 1)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn viterbi_equals_enumeration((n, l, em, tr, st, sp, ends) in chain_case()) {
        let c = chain_of(n, l, &em, &tr, &st, &sp, ends);
        let brute = all_labellings(n, l)
            .iter()
            .map(|y| c.score_of(y).unwrap())
            .fold(f64::NEG_INFINITY, f64::max);
        let mut out = vec![0; n];
        let s = viterbi(&c, &mut ViterbiWorkspace::new(), &mut out).unwrap();
        prop_assert!((s - brute).abs() < 1e-9, "viterbi {} brute {}", s, brute);
        prop_assert!((c.score_of(&out).unwrap() - s).abs() < 1e-9);
    }

    #[test]
    fn hamming_viterbi_equals_enumeration(
        (n, l, em, tr, st, sp, ends) in chain_case(),
        gold_seed in prop::collection::vec(0usize..4, 6),
        cost in 0.0f64..3.0,
    ) {
        let gold: Vec<usize> = gold_seed[..n].iter().map(|g| g % l).collect();
        let c = chain_of(n, l, &em, &tr, &st, &sp, ends);
        let aug = |y: &[usize]| {
            c.score_of(y).unwrap()
                + cost * y.iter().zip(&gold).filter(|(a, b)| a != b).count() as f64
        };
        let brute = all_labellings(n, l).iter().map(|y| aug(y)).fold(f64::NEG_INFINITY, f64::max);
        let mut out = vec![0; n];
        let s = viterbi_hamming(&c, &gold, cost, &mut ViterbiWorkspace::new(), &mut out).unwrap();
        prop_assert!((s - brute).abs() < 1e-9, "augmented {} brute {}", s, brute);
        prop_assert!((aug(&out) - s).abs() < 1e-9);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn cle_equals_enumeration((n, s) in arcs_case(6), single_root in any::<bool>()) {
        let a = ArcScores::new(&s, n).unwrap();
        let brute = all_trees(n)
            .iter()
            .filter(|h| !single_root || root_children(h) == 1)
            .map(|h| a.score_of(h).unwrap())
            .fold(f64::NEG_INFINITY, f64::max);
        let mut heads = vec![0; n + 1];
        let v = chu_liu_edmonds(&a, single_root, &mut CleWorkspace::new(), &mut heads).unwrap();
        prop_assert!(a.check_tree("heads", &heads).is_ok(), "not a tree: {:?}", heads);
        if single_root {
            prop_assert_eq!(root_children(&heads), 1);
        }
        prop_assert!((a.score_of(&heads).unwrap() - v).abs() < 1e-9);
        prop_assert!((v - brute).abs() < 1e-9, "cle {} brute {} heads {:?}", v, brute, heads);
    }

    #[test]
    fn hamming_cle_equals_enumeration(
        (n, s) in arcs_case(5),
        gold_seed in prop::collection::vec(0usize..6, 6),
        cost in 0.0f64..3.0,
        single_root in any::<bool>(),
    ) {
        let a = ArcScores::new(&s, n).unwrap();
        let mut gold: Vec<usize> = gold_seed[..=n].iter().map(|g| g % (n + 1)).collect();
        gold[0] = 0;
        let aug = |h: &[usize]| {
            a.score_of(h).unwrap()
                + cost * (1..=n).filter(|&m| h[m] != gold[m]).count() as f64
        };
        let brute = all_trees(n)
            .iter()
            .filter(|h| !single_root || root_children(h) == 1)
            .map(|h| aug(h))
            .fold(f64::NEG_INFINITY, f64::max);
        let mut heads = vec![0; n + 1];
        let mut ws = CleWorkspace::new();
        let v = chu_liu_edmonds_hamming(&a, &gold, cost, single_root, &mut ws, &mut heads).unwrap();
        prop_assert!(a.check_tree("heads", &heads).is_ok());
        prop_assert!((aug(&heads) - v).abs() < 1e-9);
        prop_assert!((v - brute).abs() < 1e-9, "cle {} brute {}", v, brute);
    }
}

/// Whether every arc h → m spans only descendants of h.
fn is_projective(h: &[usize]) -> bool {
    let n = h.len() - 1;
    let descends = |mut v: usize, a: usize| {
        while v != 0 && v != a {
            v = h[v];
        }
        v == a
    };
    (1..=n).all(|m| {
        let (lo, hi) = (m.min(h[m]), m.max(h[m]));
        (lo + 1..hi).all(|v| descends(v, h[m]))
    })
}

fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn forward_backward_equals_enumeration((n, l, em, tr, st, sp, ends) in chain_case()) {
        let c = chain_of(n, l, &em, &tr, &st, &sp, ends);
        let ys = all_labellings(n, l);
        let scores: Vec<f64> = ys.iter().map(|y| c.score_of(y).unwrap()).collect();
        let log_z = log_sum_exp(&scores);
        let mut node_b = vec![0.0; n * l];
        let mut trans_b = vec![0.0; l * l];
        for (y, sc) in ys.iter().zip(&scores) {
            let p = (sc - log_z).exp();
            for i in 0..n {
                node_b[i * l + y[i]] += p;
                if i > 0 {
                    trans_b[y[i - 1] * l + y[i]] += p;
                }
            }
        }
        let mut node = vec![0.0; n * l];
        let mut trans = vec![0.0; l * l];
        let got = forward_backward(&c, &mut ForwardBackwardWorkspace::new(), &mut node, &mut trans).unwrap();
        prop_assert!((got - log_z).abs() < 1e-9, "log Z {} brute {}", got, log_z);
        for (a, b) in node.iter().zip(&node_b).chain(trans.iter().zip(&trans_b)) {
            prop_assert!((a - b).abs() < 1e-9, "marginal {} brute {}", a, b);
        }
    }

    #[test]
    fn matrix_tree_equals_enumeration((n, s) in arcs_case(6), single_root in any::<bool>()) {
        let a = ArcScores::new(&s, n).unwrap();
        let (log_z, mu_b) = matrix_tree_brute(&s, n, single_root);
        let mut mu = vec![0.0; (n + 1) * (n + 1)];
        let got = matrix_tree(&a, single_root, &mut MatrixTreeWorkspace::new(), &mut mu).unwrap();
        prop_assert!((got - log_z).abs() < 1e-8, "log Z {} brute {}", got, log_z);
        for (x, y) in mu.iter().zip(&mu_b) {
            prop_assert!((x - y).abs() < 1e-8, "marginal {} brute {}", x, y);
        }
    }

    #[test]
    fn eisner_equals_projective_enumeration(
        (n, s) in arcs_case(6),
        single_root in any::<bool>(),
        gold_seed in prop::collection::vec(0usize..7, 7),
        cost in 0.0f64..2.0,
    ) {
        let a = ArcScores::new(&s, n).unwrap();
        let trees: Vec<Vec<usize>> = all_trees(n)
            .into_iter()
            .filter(|h| is_projective(h) && (!single_root || root_children(h) == 1))
            .collect();
        let brute = trees.iter().map(|h| a.score_of(h).unwrap()).fold(f64::NEG_INFINITY, f64::max);
        let mut heads = vec![0; n + 1];
        let mut ws = EisnerWorkspace::new();
        let v = eisner(&a, single_root, &mut ws, &mut heads).unwrap();
        prop_assert!(a.check_tree("heads", &heads).is_ok(), "not a tree {:?}", heads);
        prop_assert!(is_projective(&heads), "not projective {:?}", heads);
        if single_root {
            prop_assert_eq!(root_children(&heads), 1);
        }
        prop_assert!((a.score_of(&heads).unwrap() - v).abs() < 1e-9);
        prop_assert!((v - brute).abs() < 1e-9, "eisner {} brute {}", v, brute);

        let mut gold: Vec<usize> = gold_seed[..=n].iter().map(|g| g % (n + 1)).collect();
        gold[0] = 0;
        let aug = |h: &[usize]| {
            a.score_of(h).unwrap() + cost * (1..=n).filter(|&m| h[m] != gold[m]).count() as f64
        };
        let brute = trees.iter().map(|h| aug(h)).fold(f64::NEG_INFINITY, f64::max);
        let v = eisner_hamming(&a, &gold, cost, single_root, &mut ws, &mut heads).unwrap();
        prop_assert!(is_projective(&heads));
        prop_assert!((aug(&heads) - v).abs() < 1e-9);
        prop_assert!((v - brute).abs() < 1e-9, "eisner {} brute {}", v, brute);
    }
}

/// Brute-force log Z and marginals over the (single-root) trees of `s`.
fn matrix_tree_brute(s: &[f64], n: usize, single_root: bool) -> (f64, Vec<f64>) {
    let a = ArcScores::new(s, n).unwrap();
    let side = n + 1;
    let trees: Vec<Vec<usize>> = all_trees(n)
        .into_iter()
        .filter(|h| !single_root || root_children(h) == 1)
        .collect();
    let scores: Vec<f64> = trees.iter().map(|h| a.score_of(h).unwrap()).collect();
    let log_z = log_sum_exp(&scores);
    let mut mu = vec![0.0; side * side];
    for (h, sc) in trees.iter().zip(&scores) {
        let p = (sc - log_z).exp();
        for m in 1..=n {
            mu[h[m] * side + m] += p;
        }
    }
    (log_z, mu)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Scores of scale σ up to 1000 (heavy cycles, weights spanning far more
    /// than the range of f64): log Z to 1e-12 relative and every marginal to
    /// 1e-9 of the enumeration, columns summing to 1.
    #[test]
    fn matrix_tree_is_exact_at_every_scale(
        n in 1usize..=6,
        sigma_idx in 0usize..4,
        unit in prop::collection::vec(-1.0f64..1.0, 49),
        single_root in any::<bool>(),
    ) {
        let sigma = [1.0, 10.0, 100.0, 1000.0][sigma_idx];
        let side = n + 1;
        let s: Vec<f64> = unit[..side * side].iter().map(|u| 1.7 * sigma * u).collect();
        let (log_z, mu_b) = matrix_tree_brute(&s, n, single_root);
        let a = ArcScores::new(&s, n).unwrap();
        let mut mu = vec![0.0; side * side];
        let got = matrix_tree(&a, single_root, &mut MatrixTreeWorkspace::new(), &mut mu).unwrap();
        prop_assert!((got - log_z).abs() <= 1e-12 * log_z.abs().max(10.0), "log Z {} brute {}", got, log_z);
        for (x, y) in mu.iter().zip(&mu_b) {
            prop_assert!((x - y).abs() < 1e-9, "marginal {} brute {}", x, y);
        }
        for m in 1..=n {
            let col: f64 = (0..side).map(|h| mu[h * side + m]).sum();
            prop_assert!((col - 1.0).abs() < 1e-9, "column {} sums to {}", m, col);
        }
    }
}

#[test]
fn matrix_tree_heavy_cycle_is_exact() {
    // Trees: {0→1, 0→2} = -33, {0→1, 1→2} = 2, {0→2, 2→1} = 13.
    let s = [0.0, -30.0, -3.0, 0.0, 0.0, 32.0, 0.0, 16.0, 0.0];
    let a = ArcScores::new(&s, 2).unwrap();
    let mut mu = vec![0.0; 9];
    let log_z = matrix_tree(&a, false, &mut MatrixTreeWorkspace::new(), &mut mu).unwrap();
    let exact = 13.0 + (1.0 + (-11f64).exp() + (-46f64).exp()).ln();
    assert!((log_z - exact).abs() < 1e-13, "{log_z} vs {exact}");
    let (_, mu_b) = matrix_tree_brute(&s, 2, false);
    for (x, y) in mu.iter().zip(&mu_b) {
        assert!((x - y).abs() < 1e-14, "{x} vs {y}");
    }
}

#[test]
fn matrix_tree_is_stable_for_huge_scores() {
    let n = 8;
    let side = n + 1;
    let s: Vec<f64> = (0..side * side)
        .map(|k| if k % 3 == 0 { 1e4 } else { -1e4 + (k as f64) })
        .collect();
    let a = ArcScores::new(&s, n).unwrap();
    for single_root in [false, true] {
        let mut mu = vec![0.0; side * side];
        let log_z = matrix_tree(&a, single_root, &mut MatrixTreeWorkspace::new(), &mut mu).unwrap();
        assert!(log_z.is_finite());
        for m in 1..=n {
            let col: f64 = (0..side).map(|h| mu[h * side + m]).sum();
            assert!((col - 1.0).abs() < 1e-8, "column {m} sums to {col}");
        }
        assert!(mu.iter().all(|&p| (-1e-9..=1.0 + 1e-9).contains(&p)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The k best labellings equal the head of the enumeration sorted by
    /// decreasing score; with integer scores (exact sums, many ties) the
    /// labellings themselves match, ties in lexicographic order.
    #[test]
    fn nbest_equals_sorted_enumeration(
        (n, l, em, tr, st, sp, ends) in chain_case(),
        k_frac in 0.0f64..1.1,
    ) {
        let c = chain_of(n, l, &em, &tr, &st, &sp, ends);
        let mut all: Vec<(f64, Vec<usize>)> = all_labellings(n, l)
            .into_iter()
            .map(|y| (c.score_of(&y).unwrap(), y))
            .collect();
        all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then_with(|| a.1.cmp(&b.1)));
        let total = all.len();
        let k = ((k_frac * total as f64).ceil() as usize).clamp(1, total + 2);
        let mut paths = vec![usize::MAX; k * n];
        let mut scores = vec![f64::NAN; k];
        let m = viterbi_nbest(&c, k, &mut NbestWorkspace::new(), &mut paths, &mut scores).unwrap();
        prop_assert_eq!(m, k.min(total));
        let integer = em.iter().chain(&tr).chain(&st).chain(&sp).all(|v| v.fract() == 0.0);
        let mut seen = std::collections::BTreeSet::new();
        for j in 0..m {
            let y = &paths[j * n..(j + 1) * n];
            prop_assert!(seen.insert(y.to_vec()), "duplicate path {:?}", y);
            prop_assert!((c.score_of(y).unwrap() - scores[j]).abs() < 1e-9);
            prop_assert!((scores[j] - all[j].0).abs() < 1e-9, "rank {} got {} want {}", j, scores[j], all[j].0);
            if j > 0 {
                prop_assert!(scores[j] <= scores[j - 1]);
            }
            if integer {
                prop_assert_eq!(y, &all[j].1[..], "rank {}", j);
            }
        }
        prop_assert!(paths[m * n..].iter().all(|&x| x == usize::MAX));
        // The best path is Viterbi's.
        let mut out = vec![0; n];
        let best = viterbi(&c, &mut ViterbiWorkspace::new(), &mut out).unwrap();
        prop_assert!((best - scores[0]).abs() < 1e-9);
    }

    #[test]
    fn pairwise_marginals_equal_enumeration(
        (n, l, em, tr, st, sp, ends) in chain_case(),
        scale in prop::sample::select(vec![1.0, 1e3, 1e4]),
    ) {
        let em: Vec<f64> = em.iter().map(|v| v * scale).collect();
        let tr: Vec<f64> = tr.iter().map(|v| v * scale).collect();
        let c = chain_of(n, l, &em, &tr, &st, &sp, ends);
        let ys = all_labellings(n, l);
        let scores: Vec<f64> = ys.iter().map(|y| c.score_of(y).unwrap()).collect();
        let log_z = log_sum_exp(&scores);
        let mut pair_b = vec![0.0; (n - 1) * l * l];
        for (y, sc) in ys.iter().zip(&scores) {
            let p = (sc - log_z).exp();
            for i in 1..n {
                pair_b[((i - 1) * l + y[i - 1]) * l + y[i]] += p;
            }
        }
        let (mut node, mut trans) = (vec![0.0; n * l], vec![0.0; l * l]);
        let mut pair = vec![f64::NAN; (n - 1) * l * l];
        let mut ws = ForwardBackwardWorkspace::new();
        let got = forward_backward_pairwise(&c, &mut ws, &mut node, &mut trans, &mut pair).unwrap();
        prop_assert!((got - log_z).abs() < 1e-9 * (1.0 + log_z.abs()));
        for (a, b) in pair.iter().zip(&pair_b) {
            prop_assert!(a.is_finite() && (a - b).abs() < 1e-9, "pairwise {} brute {}", a, b);
        }
        for p in 0..l * l {
            let summed: f64 = (1..n).map(|i| pair[(i - 1) * l * l + p]).sum();
            prop_assert!((summed - trans[p]).abs() < 1e-9);
        }
        for i in 1..n {
            // Each position's table sums to one and its row sums are the
            // previous position's marginals.
            let t = &pair[(i - 1) * l * l..i * l * l];
            prop_assert!((t.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            for p in 0..l {
                let row: f64 = t[p * l..(p + 1) * l].iter().sum();
                prop_assert!((row - node[(i - 1) * l + p]).abs() < 1e-9);
            }
        }
        let mut long = vec![0.0; (n - 1) * l * l + 1];
        prop_assert!(forward_backward_pairwise(&c, &mut ws, &mut node, &mut trans, &mut long).is_err());
    }
}
