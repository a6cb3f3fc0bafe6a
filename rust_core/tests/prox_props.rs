//! Property tests: every prox against a slow independent reference
//! (bisection on the scalar that defines it), KKT conditions and Moreau
//! decompositions, on random inputs with ties, zeros and extreme λ.

use omkl_core::prox::groups::{group_norms, Grouping};
use omkl_core::prox::squared_l1::ThresholdMethod;
use omkl_core::prox::{
    elastic_net, group_lasso, l1, l1_ball, l21_ball, l2q, sparse_group_lasso, squared_l1,
    weighted_squared_l1, Regularizer,
};
use proptest::prelude::*;

const RTOL: f64 = 1e-9;

fn assert_close(got: &[f64], want: &[f64], scale: f64) {
    assert_eq!(got.len(), want.len());
    let tol = RTOL * scale.max(1.0);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol + RTOL * b.abs(),
            "element {i}: {a} vs {b}\n got {got:?}\nwant {want:?}"
        );
    }
}

fn maxabs(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// Root of an increasing `f` on `[lo, hi]` by plain bisection.
fn bisect(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..3000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

fn soft(x: &[f64], t: f64) -> Vec<f64> {
    x.iter()
        .map(|v| v.signum() * (v.abs() - t).max(0.0))
        .collect()
}

fn ref_squared_l1(x: &[f64], tau: f64) -> Vec<f64> {
    let top = maxabs(x);
    if tau == 0.0 || top == 0.0 {
        return x.to_vec();
    }
    let g = |t: f64| t - tau * x.iter().map(|v| (v.abs() - t).max(0.0)).sum::<f64>();
    soft(x, bisect(g, 0.0, top))
}

fn ref_l1_ball(x: &[f64], r: f64) -> Vec<f64> {
    let l1: f64 = x.iter().map(|v| v.abs()).sum();
    if l1 <= r {
        return x.to_vec();
    }
    let g = |t: f64| r - x.iter().map(|v| (v.abs() - t).max(0.0)).sum::<f64>();
    soft(x, bisect(g, 0.0, maxabs(x)))
}

fn ref_weighted(x: &[f64], d: &[f64], tau: f64) -> Vec<f64> {
    if tau == 0.0 {
        return x.to_vec();
    }
    let g = |t: f64| {
        t - tau
            * x.iter()
                .zip(d)
                .map(|(v, w)| w * (v.abs() - t * w).max(0.0))
                .sum::<f64>()
    };
    let top = tau * x.iter().zip(d).map(|(v, w)| w * v.abs()).sum::<f64>();
    let t = bisect(g, 0.0, top.max(0.0));
    x.iter()
        .zip(d)
        .map(|(v, w)| v.signum() * (v.abs() - t * w).max(0.0))
        .collect()
}

fn ref_power(n0: f64, tau: f64, q: f64) -> f64 {
    if n0 == 0.0 || tau == 0.0 {
        return n0;
    }
    if q == 1.0 {
        return (n0 - tau).max(0.0);
    }
    bisect(|n| n - n0 + tau * q * n.powf(q - 1.0), 0.0, n0)
}

/// Applies a map on group norms to `x` (the reduction, written out).
fn by_norms(x: &[f64], offsets: &[usize], f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let n = group_norms(x, offsets);
    let m = f(&n);
    let mut out = x.to_vec();
    for g in 0..n.len() {
        for v in &mut out[offsets[g]..offsets[g + 1]] {
            *v = if n[g] > 0.0 { *v * m[g] / n[g] } else { 0.0 };
        }
    }
    out
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1e3f64..1e3,
        1 => prop::sample::select(vec![0.0, 1.0, -1.0, 2.5, -2.5, 1e-9]),
    ]
}

fn vector() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(value(), 1..40)
}

fn tau() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => 0.0f64..100.0,
        1 => prop::sample::select(vec![0.0, 1e-12, 1e-6, 1.0, 1e6, 1e12]),
    ]
}

/// A vector with its grouping, as offsets (group sizes may be zero).
fn grouped() -> impl Strategy<Value = (Vec<f64>, Vec<usize>)> {
    vector().prop_flat_map(|x| {
        let p = x.len();
        (Just(x), prop::collection::vec(0..=p, 0..6)).prop_map(move |(x, mut cuts)| {
            cuts.push(0);
            cuts.push(p);
            cuts.sort_unstable();
            (x, cuts)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn squared_l1_sort_and_select_match_bisection(x in vector(), t in tau()) {
        let want = ref_squared_l1(&x, t);
        for m in [ThresholdMethod::Sort, ThresholdMethod::Select] {
            let mut got = x.clone();
            squared_l1::prox_squared_l1(&mut got, t, m).unwrap();
            assert_close(&got, &want, maxabs(&x));
        }
    }

    #[test]
    fn squared_l1_kkt(x in vector(), t in tau()) {
        let mut u = x.clone();
        squared_l1::prox_squared_l1(&mut u, t, ThresholdMethod::Select).unwrap();
        let theta = t * u.iter().map(|v| v.abs()).sum::<f64>();
        // θ = τ‖u‖₁ carries the rounding error of u amplified by τ p.
        let tol = maxabs(&x).max(1.0) * (1e-9 + 4.0 * f64::EPSILON * t * x.len() as f64);
        for (xi, ui) in x.iter().zip(&u) {
            if *ui != 0.0 {
                prop_assert!((xi - ui - theta * ui.signum()).abs() <= tol + 1e-9 * theta);
            } else {
                prop_assert!(xi.abs() <= theta + tol);
            }
        }
    }

    #[test]
    fn weighted_matches_bisection(
        xd in vector().prop_flat_map(|x| {
            let n = x.len();
            let w = prop_oneof![2 => 0.0f64..10.0, 1 => prop::sample::select(vec![0.0, 1e-6, 1.0])];
            (Just(x), prop::collection::vec(w, n))
        }),
        t in tau(),
    ) {
        let (x, d) = xd;
        let mut got = x.clone();
        weighted_squared_l1::prox_weighted_squared_l1(&mut got, &d, t).unwrap();
        assert_close(&got, &ref_weighted(&x, &d, t), maxabs(&x));
        for i in 0..x.len() {
            if d[i] == 0.0 {
                prop_assert_eq!(got[i], x[i]);
            }
        }
    }

    #[test]
    fn l1_ball_matches_bisection(x in vector(), r in prop_oneof![0.0f64..1e4, Just(0.0), Just(1.0)]) {
        let want = ref_l1_ball(&x, r);
        for m in [ThresholdMethod::Sort, ThresholdMethod::Select] {
            let mut got = x.clone();
            l1_ball::project_l1_ball(&mut got, r, m).unwrap();
            assert_close(&got, &want, maxabs(&x));
            // feasible up to the rounding of θ, about eps * max|x| per coordinate
            let l1: f64 = got.iter().map(|v| v.abs()).sum();
            prop_assert!(l1 <= r + 4.0 * x.len() as f64 * f64::EPSILON * maxabs(&x).max(1.0));
        }
    }

    #[test]
    fn grouped_operators_match_references((x, o) in grouped(), t in tau(), t2 in tau(),
                                          rho in 0.0f64..=1.0, r in 0.0f64..1e3) {
        let s = maxabs(&x);
        let mut got = x.clone();
        group_lasso::prox_group_lasso(&mut got, &o, t).unwrap();
        assert_close(&got, &by_norms(&x, &o, |n| n.iter().map(|v| (v - t).max(0.0)).collect()), s);

        let mut got = x.clone();
        sparse_group_lasso::prox_sparse_group_lasso(&mut got, &o, t, t2).unwrap();
        let st = soft(&x, t);
        assert_close(&got, &by_norms(&st, &o, |n| n.iter().map(|v| (v - t2).max(0.0)).collect()), s);

        let mut got = x.clone();
        elastic_net::prox_elastic_net_mkl(&mut got, &o, t, rho).unwrap();
        let want = by_norms(&x, &o, |n| {
            n.iter().map(|&n0| bisect(|m| m - n0 + t * (rho + (1.0 - rho) * m), 0.0, n0)).collect()
        });
        assert_close(&got, &want, s);

        let mut got = x.clone();
        squared_l1::prox_squared_l21(&mut got, &o, t).unwrap();
        assert_close(&got, &by_norms(&x, &o, |n| ref_squared_l1(n, t)), s);

        let mut got = x.clone();
        l21_ball::project_l21_ball(&mut got, &o, r).unwrap();
        assert_close(&got, &by_norms(&x, &o, |n| ref_l1_ball(n, r)), s);
    }

    #[test]
    fn l2q_matches_scalar_bisection(
        (x, o) in grouped(), t in tau(),
        q in prop_oneof![1.0f64..20.0, prop::sample::select(vec![1.0, 1.0 + 1e-9, 1.0 + 1e-6, 1.001, 1.5, 2.0, 3.0, 50.0])],
    ) {
        let mut got = x.clone();
        l2q::prox_l2q(&mut got, &o, t, q).unwrap();
        let want = by_norms(&x, &o, |n| n.iter().map(|&n0| ref_power(n0, t, q)).collect());
        assert_close(&got, &want, maxabs(&x));
    }

    #[test]
    fn moreau_decompositions((x, o) in grouped(), t in tau()) {
        let s = maxabs(&x);
        // ℓ1 and the ℓ∞ ball
        let mut p = x.clone();
        l1::soft_threshold(&mut p, t).unwrap();
        let sum: Vec<f64> = p.iter().zip(&x).map(|(a, v)| a + v.clamp(-t, t)).collect();
        assert_close(&sum, &x, s);
        // group lasso and the ℓ2,∞ ball
        let mut p = x.clone();
        group_lasso::prox_group_lasso(&mut p, &o, t).unwrap();
        let proj = by_norms(&x, &o, |n| n.iter().map(|v| v.min(t)).collect());
        let sum: Vec<f64> = p.iter().zip(&proj).map(|(a, b)| a + b).collect();
        assert_close(&sum, &x, s);
    }

    #[test]
    fn moreau_l1_ball_and_linf_norm(x in vector(), r in 1e-3f64..1e3) {
        // prox of r‖·‖∞ clips at the level t minimising ½Σ(|x_i| − t)₊² + r t,
        // found here by bisection on its derivative r − Σ(|x_i| − t)₊.
        let a: Vec<f64> = x.iter().map(|v| v.abs()).collect();
        let l1: f64 = a.iter().sum();
        let t = if l1 <= r { 0.0 } else {
            bisect(|t| r - a.iter().map(|v| (v - t).max(0.0)).sum::<f64>(), 0.0, maxabs(&x))
        };
        let mut p = x.clone();
        l1_ball::project_l1_ball(&mut p, r, ThresholdMethod::Select).unwrap();
        let sum: Vec<f64> = p.iter().zip(&x).map(|(a, v)| a + v.clamp(-t, t)).collect();
        assert_close(&sum, &x, maxabs(&x));
    }

    #[test]
    fn regularizer_prox_matches_the_functions((x, o) in grouped(), t in tau(), eta in 0.0f64..3.0) {
        let s = maxabs(&x);
        let g = o.len() - 1;
        let w: Vec<f64> = (0..g).map(|i| (i % 3) as f64 * 0.7).collect();
        let cases: Vec<(Regularizer, Vec<f64>)> = vec![
            (Regularizer::L1 { lam: t }, soft(&x, eta * t)),
            (Regularizer::L2Squared { lam: t }, x.iter().map(|v| v / (1.0 + eta * t)).collect()),
            (Regularizer::SquaredL21 { lam: t }, by_norms(&x, &o, |n| ref_squared_l1(n, eta * t))),
            (Regularizer::WeightedSquaredL21 { lam: t, weights: w.clone() },
             by_norms(&x, &o, |n| ref_weighted(n, &w, eta * t))),
            (Regularizer::L2q { lam: t, q: 1.7 },
             by_norms(&x, &o, |n| n.iter().map(|&n0| ref_power(n0, eta * t, 1.7)).collect())),
            (Regularizer::L1Ball { radius: t }, ref_l1_ball(&x, t)),
            (Regularizer::L21Ball { radius: t }, by_norms(&x, &o, |n| ref_l1_ball(n, t))),
        ];
        for (reg, want) in cases {
            let mut got = x.clone();
            reg.prox(&mut got, &o, eta).unwrap();
            assert_close(&got, &want, s);
            if matches!(reg, Regularizer::L1Ball { .. } | Regularizer::L21Ball { .. }) {
                let slack = 4.0 * x.len() as f64 * f64::EPSILON * s.max(1.0);
                let inner = Regularizer::L1Ball { radius: t + slack };
                let shrunk = if matches!(reg, Regularizer::L1Ball { .. }) {
                    inner.value(&got, &o)
                } else {
                    Regularizer::L21Ball { radius: t + slack }.value(&got, &o)
                };
                prop_assert_eq!(shrunk, 0.0);
            }
        }
    }

    #[test]
    fn support_candidates_keep_the_whole_support(x in vector(), t in tau(), r in 0.0f64..1e3) {
        use omkl_core::prox::threshold::{
            support_candidates, threshold_by_sort, L1BallRule, SquaredL1Rule,
        };
        let a: Vec<f64> = x.iter().map(|v| v.abs()).collect();
        let l1: f64 = a.iter().sum();
        let check = |theta: f64, cand: &[f64]| {
            let want = a.iter().filter(|&&v| v > theta).count();
            let kept = cand.iter().filter(|&&v| v > theta).count();
            assert_eq!(want, kept, "theta {theta}, a {a:?}, candidates {cand:?}");
        };
        let mut c = Vec::new();
        if t > 0.0 {
            let rule = SquaredL1Rule { inv_tau: 1.0 / t };
            support_candidates(a.iter().copied(), rule, &mut c);
            check(threshold_by_sort(&mut a.clone(), rule), &c);
        }
        if l1 > r && r > 0.0 {
            let rule = L1BallRule { radius: r };
            support_candidates(a.iter().copied(), rule, &mut c);
            check(threshold_by_sort(&mut a.clone(), rule), &c);
        }
    }

    #[test]
    fn grouping_by_ids_matches_sorted_blocks(ids in prop::collection::vec(0i64..5, 1..30)) {
        let g = Grouping::from_ids(&ids).unwrap();
        let x: Vec<f64> = (0..ids.len()).map(|i| i as f64 + 1.0).collect();
        let sorted = g.gather(&x);
        for k in 0..g.n_groups() {
            for &v in &sorted[g.offsets[k]..g.offsets[k + 1]] {
                prop_assert_eq!(ids[v as usize - 1], k as i64);
            }
        }
        prop_assert_eq!(g.scatter(sorted), x);
    }
}
