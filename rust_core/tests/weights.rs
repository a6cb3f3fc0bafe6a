//! [`ScaledBlock`] against explicit sums, in every storage type.

use omkl_core::learner::weights::{Real, ScaledBlock};
use proptest::prelude::*;

fn lazy_average_matches_explicit_sum<T: Real>(tracked: bool, tol: f64) {
    let mut b: ScaledBlock<T> = if tracked {
        ScaledBlock::tracked(3, 1, true, "n").unwrap()
    } else {
        ScaledBlock::zeros(3)
    };
    let mut sum = [0.0; 3];
    let mut theta = [0.0; 3];
    for t in 0..50 {
        let i = t % 3;
        if tracked {
            b.add_tracked(i, 1.0 + t as f64);
        } else {
            b.add_orthonormal(i, 1.0 + t as f64);
        }
        theta[i] += 1.0 + t as f64;
        let c = [1e-3, 0.9, 0.0][usize::from(t % 7 != 0) + usize::from(t % 11 == 5)];
        b.scale_by(c);
        theta.iter_mut().for_each(|v| *v *= c);
        b.end_round();
        for (s, v) in sum.iter_mut().zip(&theta) {
            *s += v;
        }
        for i in 0..3 {
            assert!((b.get(i) - theta[i]).abs() <= tol * theta[i].abs().max(1.0));
            let (got, want) = (b.average_sum(i), sum[i]);
            assert!(
                (got - want).abs() <= tol * want.abs().max(1.0),
                "{} {tracked} {t} {i}: {got} vs {want}",
                std::any::type_name::<T>()
            );
        }
        let sq: f64 = theta.iter().map(|v| v * v).sum();
        assert!((b.sq_norm() - sq).abs() <= tol * sq.max(1.0));
    }
}

#[test]
fn lazy_average_matches_explicit_sum_in_every_storage() {
    lazy_average_matches_explicit_sum::<f64>(false, 1e-9);
    lazy_average_matches_explicit_sum::<f64>(true, 1e-9);
    lazy_average_matches_explicit_sum::<f32>(true, 1e-3);
}

#[test]
fn row_edits() {
    let mut b: ScaledBlock = ScaledBlock::zeros(0);
    b.push_zeros(6);
    for i in 0..6 {
        b.add(i, i as f64);
    }
    b.swap_remove_row(0, 2);
    assert_eq!(b.raw(), &[4.0, 5.0, 2.0, 3.0]);
    let parts = b.relaid_rows(2, 3).unwrap();
    b.set_rows(parts, 3);
    assert_eq!(b.raw(), &[4.0, 5.0, 0.0, 2.0, 3.0, 0.0]);
    let parts = b.relaid_rows(3, 1).unwrap();
    b.set_rows(parts, 1);
    assert_eq!(b.raw(), &[4.0, 2.0]);
}

#[test]
fn the_written_row_list_overflows_to_every_row() {
    let mut b: ScaledBlock<f32> = ScaledBlock::tracked(16, 2, false, "n").unwrap();
    b.add_tracked(3, 1.0);
    b.add_tracked(2, 1.0);
    assert_eq!(b.live_rows(), Some(&[1u32][..]));
    b.add_tracked(5, 2.0);
    assert_eq!(b.live_rows(), None);
    b.scale_by(0.0);
    assert_eq!(b.live_rows(), Some(&[][..]));
    assert!(b.raw().iter().all(|&v| v == 0.0));
}

/// One change of a block of 4 features × 3 labels: a sparse column (or
/// two) or one coefficient, or a rescaling.
#[derive(Debug, Clone)]
enum Op {
    Sparse(usize, Vec<(u32, f64)>, f64),
    Sparse2(usize, usize, Vec<(u32, f64)>, (f64, f64)),
    One(usize, f64),
    Scale(f64),
}

fn op() -> impl Strategy<Value = Op> {
    let row = proptest::collection::btree_map(0u32..4, -3.0f64..3.0, 0..4)
        .prop_map(|m| m.into_iter().collect::<Vec<_>>());
    prop_oneof![
        (0usize..3, row.clone(), -2.0f64..2.0).prop_map(|(y, r, d)| Op::Sparse(y, r, d)),
        (0usize..3, 1usize..3, row, (-2.0f64..2.0, -2.0f64..2.0))
            .prop_map(|(y, k, r, d)| Op::Sparse2(y, (y + k) % 3, r, d)),
        (0usize..12, -2.0f64..2.0).prop_map(|(i, d)| Op::One(i, d)),
        prop_oneof![Just(0.0), 1e-6f64..2.0, Just(3e4)].prop_map(Op::Scale),
    ]
}

proptest! {
    /// The raw squared norm kept by the orthonormal writes equals `‖θ‖²`
    /// recomputed from the coefficients, through rescalings that fold the
    /// scale into them.
    #[test]
    fn orthonormal_writes_keep_the_squared_norm_exact(ops in proptest::collection::vec(op(), 1..60)) {
        let mut b: ScaledBlock = ScaledBlock::zeros(12);
        // the largest raw squared norm since `q` was last recomputed: the
        // rounding of `Σ (new² − old²)` is relative to it
        let mut peak: f64 = 0.0;
        for o in &ops {
            match o {
                Op::Sparse(y, r, d) => {
                    let (idx, val): (Vec<u32>, Vec<f64>) = r.iter().copied().unzip();
                    b.add_raw_sparse((*y, 3), &idx, &val, *d);
                }
                Op::Sparse2(y1, y2, r, d) => {
                    let (idx, val): (Vec<u32>, Vec<f64>) = r.iter().copied().unzip();
                    b.add_raw_sparse2((*y1, *y2, 3), &idx, &val, *d);
                }
                // one coefficient: row 0 of a single row of width 12
                Op::One(i, d) => b.add_raw_sparse((*i, 12), &[0], &[1.0], *d),
                Op::Scale(c) => {
                    if b.scale_by(*c).is_some() {
                        peak = 0.0;
                    }
                }
            }
            b.end_round();
            let exact: f64 = b.raw().iter().map(|v| v * v).sum();
            peak = peak.max(exact);
            prop_assert!(
                (b.raw_sq_norm() - exact).abs() <= 1e-12 * peak,
                "{} vs {exact}", b.raw_sq_norm()
            );
            let theta: f64 = (0..12).map(|i| b.get(i) * b.get(i)).sum();
            prop_assert!((b.sq_norm() - theta).abs() <= 1e-12 * peak * b.scale() * b.scale() + 1e-300);
        }
    }
}
