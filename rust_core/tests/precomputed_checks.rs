//! The validation of precomputed inputs against brute-force references: a
//! dense Gram matrix is accepted exactly when every value is finite and it
//! equals its transpose, and a refusal names the first bad entry; feature
//! rows hold exactly the non-zeros of the matrix, in order.

use std::sync::Arc;

use omkl_core::learner::stream_mkl::{FeatureRows, PrecomputedGram};
use omkl_core::OmklError;
use proptest::prelude::*;

/// A symmetric `m × m` matrix with values from `seed`, some of them zero.
fn symmetric(m: usize, seed: u64) -> Vec<f32> {
    let mut k = vec![0.0f32; m * m];
    let mut s = seed;
    for i in 0..m {
        for j in 0..=i {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = if s >> 61 == 0 {
                0.0
            } else {
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            };
            k[i * m + j] = v;
            k[j * m + i] = v;
        }
    }
    k
}

/// What the checks must report, found by brute force: the first
/// non-finite value in row-major order, else whether any pair differs.
fn expected(k: &[f32], m: usize) -> Option<Result<usize, ()>> {
    if let Some(i) = k.iter().position(|v| !v.is_finite()) {
        return Some(Ok(i));
    }
    let asym = (0..m).any(|i| (0..m).any(|j| k[i * m + j] != k[j * m + i]));
    asym.then_some(Err(()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Sizes around the 64-wide tiles, one entry changed (or none): the
    /// dense check agrees with the brute-force one, and a refused matrix is
    /// refused with the first non-finite index, or as asymmetric naming a
    /// pair that really differs.
    #[test]
    fn dense_gram_check_matches_brute_force(
        m in prop_oneof![1usize..8, 60usize..70, 126usize..132, 190usize..200],
        seed in any::<u64>(),
        change in proptest::option::of((any::<usize>(), any::<usize>(), 0usize..5)),
    ) {
        let mut k = symmetric(m, seed);
        if let Some((i, j, kind)) = change {
            let (i, j) = (i % m, j % m);
            k[i * m + j] = match kind {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => k[i * m + j] + 0.25,
                _ => -k[i * m + j],
            };
            if kind == 1 && m > 1 {
                // a symmetric infinity: only the finiteness check sees it
                k[j * m + i] = f32::INFINITY;
            }
        }
        let got = PrecomputedGram::dense(Arc::new(k.clone()), m);
        match (expected(&k, m), got) {
            (None, Ok(g)) => {
                for j in 0..m {
                    prop_assert_eq!(g.diag(j), f64::from(k[j * m + j]));
                }
            }
            (Some(Ok(i)), Err(OmklError::NonFinite { index, .. })) => prop_assert_eq!(index, i),
            (Some(Err(())), Err(e)) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("symmetric"), "{}", msg);
                let pair = msg.split("entries (").nth(1).unwrap();
                let nums: Vec<usize> = pair
                    .split(|c: char| !c.is_ascii_digit())
                    .filter(|t| !t.is_empty())
                    .take(2)
                    .map(|t| t.parse().unwrap())
                    .collect();
                let (i, j) = (nums[0], nums[1]);
                prop_assert!(k[i * m + j] != k[j * m + i], "({}, {}) is symmetric", i, j);
            }
            (want, got) => prop_assert!(false, "expected {:?}, got {:?}", want, got.map(|_| ())),
        }
    }

    /// Feature rows hold the non-zeros of each row in column order, their
    /// squared norms, norms and dimension; a non-finite value is refused with its
    /// row-major index.
    #[test]
    fn feature_rows_hold_the_nonzeros(
        (m, d) in (1usize..20, 1usize..40),
        seed in any::<u64>(),
        bad in proptest::option::of(any::<usize>()),
    ) {
        let mut x = symmetric(m.max(d), seed)[..m * d].to_vec();
        if let Some(b) = bad {
            x[b % (m * d)] = f32::NAN;
        }
        match FeatureRows::new(&x, m, d) {
            Ok(f) => {
                prop_assert!(bad.is_none());
                prop_assert_eq!((f.n_rows(), f.dim()), (m, d));
                for r in 0..m {
                    let (idx, val) = f.row(r);
                    let want: Vec<(u32, f64)> = (0..d)
                        .filter(|&c| x[r * d + c] != 0.0)
                        .map(|c| (c as u32, f64::from(x[r * d + c])))
                        .collect();
                    let got: Vec<(u32, f64)> = idx.iter().copied().zip(val.iter().copied()).collect();
                    prop_assert_eq!(got, want);
                    let sq: f64 = val.iter().map(|v| v * v).sum();
                    prop_assert_eq!(f.sq_norm(r), sq);
                    prop_assert_eq!(f.norm(r), sq.sqrt());
                }
            }
            Err(OmklError::NonFinite { index, .. }) => {
                prop_assert_eq!(Some(index), bad.map(|b| b % (m * d)));
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }
}
