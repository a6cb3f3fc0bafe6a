//! The B1-spline CSR Gram of 0/1 inputs (built from packed bits) equals the
//! dense GEMM-path Gram matrix bit for bit, for square, symmetric and
//! rectangular inputs and dimensions spanning several 64-bit words.

use omkl_core::kernel::{gram, gram_symmetric, Kernel, SparseGram};
use proptest::prelude::*;

fn binary(n: usize, d: usize, seed: u64, density: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n * d)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 100 < density) as u8 as f32
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn binary_b1_equals_dense(
        nx in 1usize..40,
        ny in 1usize..40,
        d in 1usize..300,
        h in 0.5f64..12.0,
        seed in any::<u64>(),
        density in 5u64..60,
    ) {
        let k = Kernel::B1Spline { h };
        let x = binary(nx, d, seed, density);
        let y = binary(ny, d, seed ^ 0xabcdef, density);
        let s = SparseGram::build(&k, &x, nx, Some((&y, ny)), d).unwrap();
        let dense = gram(&k, &x, nx, &y, ny, d).unwrap();
        prop_assert_eq!(s.to_dense(), dense.clone());
        prop_assert_eq!(s.nnz(), dense.iter().filter(|&&v| v != 0.0).count());
        let sym = SparseGram::build(&k, &x, nx, Some((&x, nx)), d).unwrap();
        prop_assert_eq!(sym.to_dense(), gram_symmetric(&k, &x, nx, d).unwrap());
    }
}

#[test]
fn large_binary_build_is_parallel_safe_and_exact() {
    // above the parallel threshold; 128 pixels as in the OCR data
    let (n, d) = (700, 128);
    let x = binary(n, d, 7, 30);
    let k = Kernel::B1Spline { h: 6.5 };
    let s = SparseGram::build(&k, &x, n, Some((&x, n)), d).unwrap();
    let dense = gram_symmetric(&k, &x, n, d).unwrap();
    assert_eq!(s.to_dense(), dense);
    let nnz = dense.iter().filter(|&&v| v != 0.0).count();
    assert!(nnz > n && nnz < n * n / 2, "nnz {nnz}");
}

#[test]
fn non_binary_inputs_still_match() {
    let (n, d) = (50, 9);
    let mut x = binary(n, d, 3, 40);
    x[17] = 0.5; // not 0/1: the GEMM path
    let k = Kernel::B1Spline { h: 2.0 };
    let s = SparseGram::build(&k, &x, n, Some((&x, n)), d).unwrap();
    let dense = gram(&k, &x, n, &x, n, d).unwrap();
    for (a, b) in s.to_dense().iter().zip(&dense) {
        assert!((a - b).abs() <= 1e-5);
    }
}
