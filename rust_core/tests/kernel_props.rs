//! Property tests of the kernel module against naive references.

use omkl_core::kernel::spec::dot_f32;
use omkl_core::kernel::support::sq_norm_f32;
use omkl_core::kernel::{gram, gram_many, gram_many_symmetric, gram_symmetric, Kernel};
use proptest::prelude::*;

fn kernels() -> impl Strategy<Value = Kernel> {
    prop_oneof![
        any::<bool>().prop_map(|normalize| Kernel::Linear { normalize }),
        (1u32..4, 0.0f64..2.0, any::<bool>()).prop_map(|(degree, offset, normalize)| {
            Kernel::Polynomial {
                degree,
                offset,
                normalize,
            }
        }),
        (0.1f64..10.0).prop_map(|sigma2| Kernel::Gaussian { sigma2 }),
        (0.2f64..6.0).prop_map(|h| Kernel::B1Spline { h }),
    ]
}

/// `(n, d, data)` with entries in [-1, 1].
fn matrix(max_n: usize, d: usize) -> impl Strategy<Value = (usize, Vec<f32>)> {
    (1..=max_n).prop_flat_map(move |n| (Just(n), prop::collection::vec(-1.0f32..1.0, n * d)))
}

/// Naive double loop over `Kernel::eval` (f64).
fn naive(k: &Kernel, x: &[f32], y: &[f32], d: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for a in x.chunks_exact(d) {
        for b in y.chunks_exact(d) {
            out.push(k.eval(a, b));
        }
    }
    out
}

/// Absolute tolerance for inputs in [-1, 1]^d: f32 rounding relative to the
/// values' scale, magnified by `1/h` for the B1-spline.
fn tolerance(k: &Kernel, v: &[f64], d: usize) -> f64 {
    let scale = v.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    match *k {
        Kernel::B1Spline { h } => 1e-5 * d as f64 / h,
        _ => 1e-5 * scale * d as f64,
    }
}

/// `true` if the Cholesky factorisation of `K + eps I` succeeds (f64), i.e.
/// the smallest eigenvalue of `K` is above about `−eps`.
fn psd_with_jitter(k: &[f32], n: usize, eps: f64) -> bool {
    let mut a: Vec<f64> = k.iter().map(|&v| f64::from(v)).collect();
    for i in 0..n {
        a[i * n + i] += eps;
    }
    for j in 0..n {
        let mut diag = a[j * n + j];
        for p in 0..j {
            diag -= a[j * n + p] * a[j * n + p];
        }
        if diag <= 0.0 {
            return false;
        }
        let l = diag.sqrt();
        a[j * n + j] = l;
        for i in j + 1..n {
            let mut v = a[i * n + j];
            for p in 0..j {
                v -= a[i * n + p] * a[j * n + p];
            }
            a[i * n + j] = v / l;
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn gram_matches_naive_double_loop(
        k in kernels(),
        d in 1usize..9,
        seed in any::<u64>(),
        nx in 1usize..40,
        ny in 1usize..40,
    ) {
        let mut s = seed;
        let mut next = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let x: Vec<f32> = (0..nx * d).map(|_| next()).collect();
        let y: Vec<f32> = (0..ny * d).map(|_| next()).collect();
        let got = gram(&k, &x, nx, &y, ny, d).unwrap();
        let want = naive(&k, &x, &y, d);
        let tol = tolerance(&k, &want, d);
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((f64::from(*g) - w).abs() <= tol, "{k:?}: {g} vs {w}");
        }
    }

    #[test]
    fn symmetric_gram_matches_rectangular_and_is_symmetric(
        k in kernels(),
        (n, x) in matrix(30, 5),
    ) {
        let sym = gram_symmetric(&k, &x, n, 5).unwrap();
        let rect = gram(&k, &x, n, &x, n, 5).unwrap();
        let want = naive(&k, &x, &x, 5);
        let tol = tolerance(&k, &want, 5);
        for i in 0..n {
            for j in 0..n {
                prop_assert_eq!(sym[i * n + j], sym[j * n + i]);
                prop_assert!((sym[i * n + j] - rect[i * n + j]).abs() as f64 <= tol);
                prop_assert!((f64::from(sym[i * n + j]) - want[i * n + j]).abs() <= tol);
            }
            if k.has_unit_diagonal() {
                prop_assert_eq!(sym[i * n + i], 1.0);
            }
        }
    }

    #[test]
    fn gaussian_and_polynomial_grams_are_psd(
        sigma2 in 0.05f64..5.0,
        degree in 1u32..4,
        offset in 0.0f64..2.0,
        normalize in any::<bool>(),
        (n, x) in matrix(25, 3),
    ) {
        for k in [
            Kernel::Gaussian { sigma2 },
            Kernel::Polynomial { degree, offset, normalize },
        ] {
            let g = gram_symmetric(&k, &x, n, 3).unwrap();
            let trace: f64 = (0..n).map(|i| f64::from(g[i * n + i])).sum();
            prop_assert!(psd_with_jitter(&g, n, 1e-6 * trace.max(1e-12)), "{k:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn gram_many_equals_each_single_kernel_gram(
        ks in prop::collection::vec(kernels(), 1..4),
        (nx, x) in matrix(40, 4),
        (ny, y) in matrix(30, 4),
    ) {
        let many = gram_many(&ks, &x, nx, &y, ny, 4).unwrap();
        let sym = gram_many_symmetric(&ks, &x, nx, 4).unwrap();
        prop_assert_eq!(many.len(), ks.len());
        for (k, (m, s)) in ks.iter().zip(many.iter().zip(&sym)) {
            prop_assert_eq!(m, &gram(k, &x, nx, &y, ny, 4).unwrap());
            prop_assert_eq!(s, &gram_symmetric(k, &x, nx, 4).unwrap());
        }
    }
}

#[test]
fn gram_many_over_several_tiles_matches_naive() {
    // 300 x 700: three row blocks and two column tiles (rectangular), two
    // symmetric tiles, all with partial edges.
    let (nx, ny, d) = (300, 700, 6);
    let y: Vec<f32> = (0..ny * d)
        .map(|i| ((i * 53 % 97) as f32) / 97.0 - 0.4)
        .collect();
    let x = &y[..nx * d];
    let ks = [
        Kernel::Linear { normalize: true },
        Kernel::Polynomial {
            degree: 3,
            offset: 0.5,
            normalize: true,
        },
        Kernel::Gaussian { sigma2: 0.3 },
        Kernel::B1Spline { h: 1.2 },
    ];
    let many = gram_many(&ks, x, nx, &y, ny, d).unwrap();
    let sym = gram_many_symmetric(&ks, &y, ny, d).unwrap();
    for (k, (m, s)) in ks.iter().zip(many.iter().zip(&sym)) {
        let want = naive(k, x, &y, d);
        let tol = tolerance(k, &want, d);
        for (g, w) in m.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() <= tol, "{k:?}: {g} vs {w}");
        }
        for i in 0..nx {
            for j in 0..ny {
                assert_eq!(s[i * ny + j], s[j * ny + i]);
                assert!((s[i * ny + j] - m[i * ny + j]).abs() as f64 <= tol, "{k:?}");
            }
        }
        assert_eq!(m, &gram(k, x, nx, &y, ny, d).unwrap());
    }
    let e = gram_many(&[], x, nx, &y, ny, d).unwrap_err();
    assert!(e.to_string().contains("kernels"), "{e}");
    let bad = [Kernel::Gaussian { sigma2: 0.0 }];
    assert!(gram_many_symmetric(&bad, x, nx, d).is_err());
}

/// Normalised kernels at any scale of the inputs: each row of a fixed
/// matrix multiplied by a power of two from `2^-140` (subnormal f32) to
/// `2^120`, alone or mixed with rows of other scales, gives the Gram
/// matrix of `Kernel::eval` (f64) to f32 rounding in every Gram routine,
/// where products of small f32 inputs used to underflow to 0 (an identity
/// Gram matrix) and large ones to overflow. For `c = 0` the kernel does
/// not depend on the scale at all.
#[test]
fn normalised_kernels_are_right_at_any_scale() {
    use omkl_core::kernel::{GramCache, SparseGram};
    let (n, d) = (7, 5);
    let base: Vec<f32> = (0..n * d)
        .map(|i| ((i * 37 % 23) as f32) / 11.0 - 1.0)
        .collect();
    let kernels = [
        Kernel::Linear { normalize: true },
        Kernel::Polynomial {
            degree: 3,
            offset: 0.0,
            normalize: true,
        },
        Kernel::Polynomial {
            degree: 2,
            offset: 1.0,
            normalize: true,
        },
        Kernel::Polynomial {
            degree: 2,
            offset: 1e-30,
            normalize: true,
        },
        Kernel::Polynomial {
            degree: 3,
            offset: 1e30,
            normalize: true,
        },
    ];
    let scaled = |exps: &[i32]| -> Vec<f32> {
        base.chunks_exact(d)
            .zip(exps.iter().cycle())
            .flat_map(|(row, &e)| {
                row.iter()
                    .map(move |&v| (f64::from(v) * 2f64.powi(e)) as f32)
            })
            .collect()
    };
    let mut cases: Vec<Vec<i32>> = (-140..=120).step_by(20).map(|e| vec![e]).collect();
    cases.push(vec![-140, -60, -30, 0, 30, 60, 120]);
    let unit = naive(&kernels[0], &base, &base, d);
    for exps in &cases {
        let x = scaled(exps);
        let many = gram_many(&kernels, &x, n, &x, n, d).unwrap();
        let many_sym = gram_many_symmetric(&kernels, &x, n, d).unwrap();
        for (k, kern) in kernels.iter().enumerate() {
            let want = naive(kern, &x, &x, d);
            if exps.len() == 1 && k < 2 && exps[0] > -120 {
                // no offset: the scale changes nothing (but for the f32
                // rounding of subnormal inputs)
                let same = naive(kern, &base, &base, d);
                for (a, b) in want.iter().zip(&same) {
                    assert!((a - b).abs() <= 1e-12, "{kern:?} at 2^{exps:?}: {a} vs {b}");
                }
            }
            let rect = gram(kern, &x, n, &x, n, d).unwrap();
            let sym = gram_symmetric(kern, &x, n, d).unwrap();
            let sparse = SparseGram::build(kern, &x, n, Some((&x, n)), d)
                .unwrap()
                .to_dense();
            let mut cache = GramCache::new(kern.clone(), d, 1 << 20).unwrap();
            for row in x.chunks_exact(d) {
                cache.add(row).unwrap();
            }
            let cached: Vec<f32> = (0..n as u32)
                .flat_map(|i| cache.row(i).unwrap().to_vec())
                .collect();
            for (name, got) in [
                ("gram", &rect),
                ("gram_symmetric", &sym),
                ("sparse", &sparse),
                ("cache", &cached),
            ] {
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (f64::from(g) - w).abs() <= 1e-5 * d as f64,
                        "{name} {kern:?} at 2^{exps:?}, entry {i}: {g} vs {w}"
                    );
                }
            }
            assert_eq!(many[k], rect, "{kern:?}");
            assert_eq!(many_sym[k], sym, "{kern:?}");
            for i in 0..n {
                assert_eq!(sym[i * n + i], 1.0);
            }
        }
        // the cosine is not the identity: rows differ
        assert!(unit.iter().any(|&v| v.abs() > 0.1 && v < 0.99));
    }
    // a kernel that is not normalised maps the inner products of the
    // inputs as they are, bit for bit, next to a normalised one that
    // rescales rows
    let x = scaled(&[-60, -45, 0, 45, 50]);
    let ks = [
        Kernel::Linear { normalize: false },
        Kernel::Linear { normalize: true },
    ];
    let lin = gram(&ks[0], &x, n, &x, n, d).unwrap();
    assert_eq!(gram_many(&ks, &x, n, &x, n, d).unwrap()[0], lin);
    let want = naive(&ks[0], &x, &x, d);
    let norms: Vec<f64> = x.chunks_exact(d).map(|r| sq_norm_f32(r).sqrt()).collect();
    for (i, (&g, &w)) in lin.iter().zip(&want).enumerate() {
        let scale = norms[i / n] * norms[i % n];
        assert!((f64::from(g) - w).abs() <= 1e-5 * scale, "{g} vs {w}");
    }
}

#[test]
fn symmetric_case_spans_several_tiles() {
    // 600 rows cover 3 tiles of 256, so every off-diagonal tile is mirrored.
    let (n, d) = (600, 7);
    let x: Vec<f32> = (0..n * d)
        .map(|i| ((i * 37 % 101) as f32) / 101.0)
        .collect();
    let k = Kernel::Gaussian { sigma2: 0.7 };
    let sym = gram_symmetric(&k, &x, n, d).unwrap();
    let want = naive(&k, &x, &x, d);
    for (g, w) in sym.iter().zip(&want) {
        assert!((f64::from(*g) - w).abs() < 1e-5, "{g} vs {w}");
    }
}

#[test]
fn bad_inputs_are_named_errors() {
    let k = Kernel::Gaussian { sigma2: 1.0 };
    let e = gram(&k, &[1.0, f32::NAN], 1, &[0.0, 0.0], 1, 2).unwrap_err();
    assert!(e.to_string().contains("`X`"), "{e}");
    let e = gram(&k, &[1.0, 2.0], 1, &[0.0, 0.0, 1.0], 1, 2).unwrap_err();
    assert!(e.to_string().contains("`Y`"), "{e}");
    let e = gram(&k, &[], 0, &[0.0], 1, 1).unwrap_err();
    assert!(e.to_string().contains("`X`"), "{e}");
    let e = gram(&Kernel::Gaussian { sigma2: -5.0 }, &[1.0], 1, &[1.0], 1, 1).unwrap_err();
    assert!(e.to_string().contains("sigma2"), "{e}");
    let e = gram_symmetric(&Kernel::B1Spline { h: 0.0 }, &[1.0], 1, 1).unwrap_err();
    assert!(e.to_string().contains("`h`"), "{e}");
}

mod sparse {
    use omkl_core::kernel::{b1_bandwidth, dense_scores, gram, Kernel, SparseGram};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn sparse_gram_equals_dense_and_scores_agree(
            h in 0.2f64..2.0,
            (nx, x) in super::matrix(90, 3),
            (ny, y) in super::matrix(70, 3),
            labels in 1usize..41,
            seed in any::<u32>(),
        ) {
            let k = Kernel::B1Spline { h };
            let dense = gram(&k, &x, nx, &y, ny, 3).unwrap();
            let s = SparseGram::build(&k, &x, nx, Some((&y, ny)), 3).unwrap();
            prop_assert_eq!(s.to_dense(), dense.clone());
            prop_assert_eq!(s.nnz(), dense.iter().filter(|&&v| v != 0.0).count());
            let alpha: Vec<f64> = (0..ny * labels)
                .map(|i| f64::from((i as u32).wrapping_mul(2654435761) ^ seed) / 4e9 - 0.5)
                .collect();
            let got = s.scores(&alpha, labels).unwrap();
            let want = dense_scores(&dense, nx, ny, &alpha, labels).unwrap();
            for (a, b) in got.iter().zip(&want) {
                prop_assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()));
            }
            let lm_alpha: Vec<f64> = (0..labels * ny)
                .map(|t| alpha[(t % ny) * labels + t / ny])
                .collect();
            let lm = s.scores_label_major(&lm_alpha, labels).unwrap();
            for i in 0..nx {
                for l in 0..labels {
                    prop_assert_eq!(lm[l * nx + i], got[i * labels + l]);
                }
            }
            let mut row = vec![0.0; labels];
            s.score_row(nx - 1, &alpha, &mut row).unwrap();
            for (a, b) in row.iter().zip(&got[(nx - 1) * labels..]) {
                prop_assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
            }
        }
    }

    fn zero_fraction(k: &Kernel, x: &[f32], n: usize, d: usize) -> f64 {
        let s = SparseGram::build(k, x, n, Some((x, n)), d).unwrap();
        1.0 - s.density()
    }

    fn points(n: usize, d: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n * d)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 24) as f32
            })
            .collect()
    }

    #[test]
    fn b1_bandwidth_hits_target_zero_fraction() {
        for (n, d, target) in [(400, 8, 0.95), (300, 3, 0.8), (500, 16, 0.5)] {
            let x = points(n, d, n as u64);
            let h = b1_bandwidth(&x, n, d, target, 2000).unwrap();
            let z = zero_fraction(&Kernel::B1Spline { h }, &x, n, d);
            assert!((z - target).abs() <= 0.01, "n={n} target={target} got {z}");
        }
    }

    #[test]
    fn sampled_b1_bandwidth_hits_target_zero_fraction() {
        let (n, d) = (2500, 10);
        let x = points(n, d, 7);
        let h = b1_bandwidth(&x, n, d, 0.95, 800).unwrap();
        let z = zero_fraction(&Kernel::B1Spline { h }, &x, n, d);
        assert!((z - 0.95).abs() <= 0.01, "got {z}");
    }

    #[test]
    fn sparse_gram_over_several_blocks_equals_dense_and_label_blocks_agree() {
        // 300 rows (three build blocks) x 700 columns (two column tiles);
        // 37 labels: a register block of 32 and one of 5 (padded to 8).
        let (nx, ny, d, labels) = (300, 700, 5, 37);
        let y = points(ny, d, 11);
        let x = &y[..nx * d];
        let k = Kernel::B1Spline {
            h: b1_bandwidth(&y, ny, d, 0.9, 2000).unwrap(),
        };
        let dense = gram(&k, x, nx, &y, ny, d).unwrap();
        let s = SparseGram::build(&k, x, nx, Some((&y, ny)), d).unwrap();
        assert_eq!(s.to_dense(), dense);
        let alpha: Vec<f64> = (0..ny * labels)
            .map(|i| ((i * 31 % 17) as f64) - 8.0)
            .collect();
        let got = s.scores(&alpha, labels).unwrap();
        let alpha32: Vec<f32> = alpha.iter().map(|&v| v as f32).collect();
        let got32 = s.scores_f32(&alpha32, labels).unwrap();
        // Naive references, with the bound Σ_j |K_ij α_jl| of the rounding
        // error of any order of summation (n terms: n · eps · bound).
        let mut exact_nonzero = 0usize;
        for i in 0..nx {
            let row_nnz = dense[i * ny..(i + 1) * ny]
                .iter()
                .filter(|&&v| v != 0.0)
                .count();
            for l in 0..labels {
                let (mut want, mut want32, mut bound) = (0.0f64, 0.0f64, 0.0f64);
                for j in 0..ny {
                    let v = f64::from(dense[i * ny + j]);
                    want += v * alpha[j * labels + l];
                    want32 += v * f64::from(alpha32[j * labels + l]);
                    bound += (v * alpha[j * labels + l]).abs();
                }
                let (g, g32) = (got[i * labels + l], f64::from(got32[i * labels + l]));
                let tol = (row_nnz + 2) as f64 * 1.2e-16 * bound;
                assert!((g - want).abs() <= tol, "row {i} label {l}: {g} vs {want}");
                let tol32 = (row_nnz + 2) as f64 * 6.0e-8 * bound;
                assert!(
                    (g32 - want32).abs() <= tol32,
                    "f32 row {i} label {l}: {g32} vs {want32}"
                );
                exact_nonzero += usize::from(want != 0.0);
            }
        }
        assert!(
            exact_nonzero > nx * labels / 2,
            "a test with mostly zero scores"
        );
        assert!(s.scores_f32(&alpha32[1..], labels).is_err());
        assert!(s.scores_f32(&[f32::NAN; 700], 1).is_err());
    }

    #[test]
    fn symmetric_sparse_build_matches_the_dense_gram() {
        use omkl_core::kernel::gram_symmetric;
        // Binary pixels: inner products are exact, so every entry is equal.
        let (n, d) = (300, 64);
        let bin: Vec<f32> = points(n, d, 9)
            .iter()
            .map(|&v| (v < 0.3) as u8 as f32)
            .collect();
        let h = b1_bandwidth(&bin, n, d, 0.9, 2000).unwrap();
        let k = Kernel::B1Spline { h };
        let s = SparseGram::build(&k, &bin, n, Some((&bin, n)), d).unwrap();
        assert_eq!(s.to_dense(), gram(&k, &bin, n, &bin, n, d).unwrap());
        assert_eq!(s.to_dense(), gram_symmetric(&k, &bin, n, d).unwrap());
        // Real inputs: exactly symmetric; equal to the dense matrix up to
        // f32 rounding of the distances, the zero pattern included except
        // for pairs whose distance is within rounding of h.
        let (n, d) = (260, 7);
        let x = points(n, d, 4);
        let h = b1_bandwidth(&x, n, d, 0.9, 2000).unwrap();
        let k = Kernel::B1Spline { h };
        let got = SparseGram::build(&k, &x, n, Some((&x, n)), d)
            .unwrap()
            .to_dense();
        let want = gram_symmetric(&k, &x, n, d).unwrap();
        let mut differ = 0;
        for i in 0..n {
            for j in 0..n {
                let (g, w) = (got[i * n + j], want[i * n + j]);
                assert_eq!(g, got[j * n + i], "not symmetric at {i}, {j}");
                assert!((g - w).abs() <= 1e-5, "{i}, {j}: {g} vs {w}");
                if (g == 0.0) != (w == 0.0) {
                    let dist: f64 = (0..d)
                        .map(|t| f64::from(x[i * d + t] - x[j * d + t]).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(
                        (dist - h).abs() <= 1e-5 * h,
                        "{i}, {j}: distance {dist}, h {h}"
                    );
                }
                differ += usize::from(g != w);
            }
        }
        assert!(differ <= n * n / 100, "{differ} entries differ");
    }

    #[test]
    fn sparse_build_keeps_pairs_at_the_edge_of_the_support() {
        // Widths equal to pairwise distances, and one f32 step either side:
        // the build must skip no pair that the dense map keeps.
        let (n, d) = (120, 6);
        let x = points(n, d, 5);
        let mut widths = Vec::new();
        for (i, j) in [(0, 1), (3, 40), (7, 99), (50, 51)] {
            let d2: f32 = (0..d).map(|t| (x[i * d + t] - x[j * d + t]).powi(2)).sum();
            let r = d2.sqrt();
            for h in [
                r,
                f32::from_bits(r.to_bits() - 1),
                f32::from_bits(r.to_bits() + 1),
            ] {
                widths.push(f64::from(h));
            }
        }
        let line: Vec<f32> = (0..40).map(|i| i as f32).collect();
        // Columns: the rows of x and one more (the rectangular path).
        let y: Vec<f32> = x.iter().copied().chain((0..d).map(|t| t as f32)).collect();
        for h in widths {
            let k = Kernel::B1Spline { h };
            let dense = gram(&k, &x, n, &y, n + 1, d).unwrap();
            let s = SparseGram::build(&k, &x, n, Some((&y, n + 1)), d).unwrap();
            assert_eq!(s.to_dense(), dense);
        }
        for h in [1.0, 1.0 + 1e-7, 1.0 - 1e-7, 3.0, 2.999_999] {
            let k = Kernel::B1Spline { h };
            let dense = gram(&k, &line, 40, &line, 40, 1).unwrap();
            let s = SparseGram::build(&k, &line, 40, Some((&line, 40)), 1).unwrap();
            assert_eq!(s.to_dense(), dense, "h = {h}");
            assert!(s.nnz() >= 40);
        }
    }

    #[test]
    fn bad_csr_and_alpha_are_rejected() {
        assert!(SparseGram::from_csr(2, 2, vec![0, 1, 1], vec![5], vec![1.0]).is_err());
        assert!(SparseGram::from_csr(2, 2, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]).is_err());
        assert!(SparseGram::from_csr(1, 2, vec![0, 2], vec![1, 0], vec![1.0, 1.0]).is_err());
        let s = SparseGram::from_csr(1, 2, vec![0, 1], vec![1], vec![0.5]).unwrap();
        assert_eq!(s.to_dense(), vec![0.0, 0.5]);
        let e = s.scores(&[1.0, f64::NAN], 1).unwrap_err();
        assert!(e.to_string().contains("alpha"));
        assert!(s.scores(&[1.0], 1).is_err());
        assert!(b1_bandwidth(&[1.0, 2.0], 2, 1, 1.0, 10).is_err());
        assert!(b1_bandwidth(&[1.0, 1.0], 2, 1, 0.5, 10).is_err());
    }
}

mod cache {
    use omkl_core::kernel::cache::{entry_bytes, RowCache};
    use omkl_core::kernel::{gram, GramCache, Kernel, SupportStore};
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Get(u64),
        Insert(u64, usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                (0u64..8).prop_map(Op::Get),
                (0u64..8, 0usize..40).prop_map(|(i, l)| Op::Insert(i, l)),
            ],
            1..80,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The cache agrees with a reference LRU list: same contents, same
        /// order, same evictions, and bytes never exceed the budget.
        #[test]
        fn row_cache_is_an_lru_within_budget(ops in ops(), budget in 0usize..600) {
            let mut c = RowCache::new(budget);
            // Reference: (id, len), least recent first.
            let mut model: Vec<(u64, usize)> = Vec::new();
            let (mut hits, mut misses, mut evictions) = (0u64, 0u64, 0u64);
            for op in ops {
                match op {
                    Op::Get(id) => {
                        let got = c.get(id).map(<[f32]>::len);
                        match model.iter().position(|&(i, _)| i == id) {
                            Some(p) => {
                                let e = model.remove(p);
                                prop_assert_eq!(got, Some(e.1));
                                model.push(e);
                                hits += 1;
                            }
                            None => {
                                prop_assert_eq!(got, None);
                                misses += 1;
                            }
                        }
                    }
                    Op::Insert(id, len) => {
                        let row: Vec<f32> = (0..len).map(|v| v as f32).collect();
                        let stored = c.insert(id, row);
                        model.retain(|&(i, _)| i != id);
                        if entry_bytes(len) <= budget {
                            prop_assert!(stored);
                            while model.iter().map(|&(_, l)| entry_bytes(l)).sum::<usize>()
                                + entry_bytes(len) > budget
                            {
                                model.remove(0);
                                evictions += 1;
                            }
                            model.push((id, len));
                        } else {
                            prop_assert!(!stored);
                        }
                    }
                }
                let s = c.stats();
                prop_assert!(s.bytes <= budget);
                prop_assert_eq!(s.bytes, model.iter().map(|&(_, l)| entry_bytes(l)).sum::<usize>());
                prop_assert_eq!(c.lru_order(), model.iter().map(|&(i, _)| i).collect::<Vec<_>>());
                prop_assert_eq!((s.hits, s.misses, s.evictions), (hits, misses, evictions));
            }
        }

        /// Rows served by the cache (hit, extension or miss) equal the
        /// Gram matrix of the distinct inputs; duplicates are stored once.
        #[test]
        fn gram_cache_rows_equal_the_gram_matrix(
            picks in prop::collection::vec((0usize..6, any::<bool>()), 1..40),
            budget in 0usize..400,
        ) {
            let pool: Vec<[f32; 2]> = (0..6).map(|i| [i as f32 * 0.5, (i * i) as f32 * 0.1]).collect();
            let k = Kernel::Gaussian { sigma2: 0.8 };
            let mut c = GramCache::new(k.clone(), 2, budget).unwrap();
            let mut distinct: Vec<usize> = Vec::new();
            for (p, query) in picks {
                let id = c.add(&pool[p]).unwrap() as usize;
                if !distinct.contains(&p) {
                    prop_assert_eq!(id, distinct.len());
                    distinct.push(p);
                }
                prop_assert_eq!(distinct[id], p);
                if query {
                    let x: Vec<f32> = distinct.iter().flat_map(|&q| pool[q]).collect();
                    let want = gram(&k, &pool[p], 1, &x, distinct.len(), 2).unwrap();
                    let got = c.row(id as u32).unwrap().to_vec();
                    prop_assert_eq!(got.len(), want.len());
                    for (a, b) in got.iter().zip(&want) {
                        prop_assert!((a - b).abs() < 1e-6);
                    }
                }
                prop_assert!(c.stats().cache_bytes <= budget);
            }
            prop_assert_eq!(c.support().len(), distinct.len());
        }
    }

    /// Rows use the norms kept by the store: bitwise the same values as
    /// the checked Gram routine, on a miss and on an extension, and the
    /// kept norms are the inputs' squared norms.
    #[test]
    fn gram_cache_rows_with_kept_norms_equal_gram_bitwise() {
        let d = 5;
        let xs: Vec<f32> = (0..40)
            .map(|i| ((i * 7919) % 13) as f32 * 0.25 - 1.0)
            .collect();
        for k in [
            Kernel::Gaussian { sigma2: 1.5 },
            Kernel::B1Spline { h: 3.0 },
            Kernel::Linear { normalize: true },
        ] {
            let mut c = GramCache::new(k.clone(), d, 1 << 20).unwrap();
            for r in xs.chunks(d).take(5) {
                c.add(r).unwrap();
            }
            let miss = c.row(2).unwrap().to_vec();
            assert_eq!(
                miss,
                gram(&k, &xs[2 * d..3 * d], 1, &xs[..5 * d], 5, d).unwrap()
            );
            for r in xs.chunks(d).skip(5) {
                c.add(r).unwrap();
            }
            let ext = c.row(2).unwrap().to_vec();
            assert_eq!(c.stats().extensions, 1);
            assert_eq!(ext, gram(&k, &xs[2 * d..3 * d], 1, &xs, 8, d).unwrap());
            for (r, &n) in xs.chunks(d).zip(c.support().sq_norms()) {
                let want: f64 = r.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                assert_eq!(n, want);
            }
        }
    }

    #[test]
    fn gram_cache_counts_hits_extensions_and_misses() {
        let mut c = GramCache::new(Kernel::Linear { normalize: false }, 1, 1 << 20).unwrap();
        let a = c.add(&[2.0]).unwrap();
        c.row(a).unwrap();
        c.row(a).unwrap();
        c.add(&[3.0]).unwrap();
        assert_eq!(c.row(a).unwrap(), &[4.0, 6.0]);
        let s = c.stats();
        assert_eq!((s.misses, s.hits, s.extensions), (1, 1, 1));
        assert!(c.row(7).is_err());
        assert!(c.add(&[f32::NAN]).is_err());
        assert!(c.add(&[1.0, 2.0]).is_err());
        assert_eq!(c.support().len(), 2);
    }

    #[test]
    fn support_store_dedups_and_round_trips() {
        let mut s = SupportStore::with_dim(3).unwrap();
        let rows = [
            [1.0f32, 2.0, 3.0],
            [0.0, 0.0, 0.0],
            [-0.0, 0.0, 0.0],
            [1.0, 2.0, 3.0],
        ];
        let ids: Vec<u32> = rows
            .iter()
            .map(|r| s.insert_checked(r).unwrap().0)
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 0]);
        assert_eq!(s.len(), 3);
        let t = SupportStore::from_data(3, s.data()).unwrap();
        assert_eq!(t.find_checked(&[1.0, 2.0, 3.0]).unwrap(), Some(0));
        assert_eq!(t.find_checked(&[9.0, 2.0, 3.0]).unwrap(), None);
        assert!(SupportStore::from_data(3, &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]).is_err());
        assert!(SupportStore::with_dim(0).is_err());
    }
}

proptest! {
    /// `Kernel::from_dot` (the formulas behind the streaming scores) from
    /// the dot product and squared norms agrees with `Kernel::eval` from
    /// the vectors; distances formed from norms lose up to `ε (‖x‖² +
    /// ‖y‖²)` to cancellation, which the B1-spline's `√` magnifies.
    #[test]
    fn from_dot_agrees_with_eval(
        k in kernels(),
        xy in prop::collection::vec(-1.0f32..1.0, 10),
        same in any::<bool>(),
    ) {
        let (x, y) = if same { (&xy[..5], &xy[..5]) } else { (&xy[..5], &xy[5..]) };
        let (sxx, syy) = (sq_norm_f32(x), sq_norm_f32(y));
        let got = k.from_dot(dot_f32(x, y), sxx, syy);
        let want = k.eval(x, y);
        let tol = match k {
            Kernel::B1Spline { h } => 1e-12 + (1e-15 * (sxx + syy)).sqrt() / h,
            _ => 1e-12,
        };
        prop_assert!((got - want).abs() <= tol, "{:?}: {} vs {}", k, got, want);
    }
}
