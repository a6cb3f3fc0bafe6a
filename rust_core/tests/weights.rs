//! [`ScaledBlock`] against explicit sums, in every storage type.

use omkl_core::learner::weights::{Real, ScaledBlock};

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
    b.widen_rows(2, 3);
    assert_eq!(b.raw(), &[4.0, 5.0, 0.0, 2.0, 3.0, 0.0]);
    b.insert_zeros(3, 1);
    assert_eq!(b.raw(), &[4.0, 5.0, 0.0, 0.0, 2.0, 3.0, 0.0]);
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
