//! Property tests of the exact decoders against brute-force enumeration on
//! tiny instances.

use omkl_core::decode::chain::ChainScores;
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
