//! Property tests of the exact decoders against brute-force enumeration on
//! tiny instances.

use omkl_core::decode::arcs::ArcScores;
use omkl_core::decode::chain::ChainScores;
use omkl_core::decode::chu_liu_edmonds::{chu_liu_edmonds, chu_liu_edmonds_hamming, CleWorkspace};
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
        let (start, stop) = if ends { (Some(&st[..]), Some(&sp[..])) } else { (None, None) };
        let c = ChainScores::new(&em, &tr, start, stop, n, l).unwrap();
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
        let (start, stop) = if ends { (Some(&st[..]), Some(&sp[..])) } else { (None, None) };
        let c = ChainScores::new(&em, &tr, start, stop, n, l).unwrap();
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
