//! The per-template tables against a dense reference: current and averaged
//! parameters, norms, and saved bytes.

use omkl_core::model::template_weights::TemplateWeights;
use omkl_core::persist::Reader;
use proptest::prelude::*;

/// Dense reference: explicit θ and explicit running sum.
struct Dense {
    theta: Vec<Vec<f64>>,
    sum: Vec<Vec<f64>>,
    steps: u64,
}

proptest! {
    #[test]
    fn matches_a_dense_reference(
        ops in proptest::collection::vec(
            (0usize..3, 0usize..4, -2.0f64..2.0, prop_oneof![Just(0.0), 0.3f64..1.0, Just(1.0)]),
            1..60,
        )
    ) {
        let sizes = [4usize, 4, 4];
        let mut w = TemplateWeights::new(&sizes).unwrap();
        let mut d = Dense {
            theta: vec![vec![0.0; 4]; 3],
            sum: vec![vec![0.0; 4]; 3],
            steps: 0,
        };
        for (i, &(t, slot, delta, r)) in ops.iter().enumerate() {
            w.add(t, slot, delta);
            d.theta[t][slot] += delta;
            if i % 3 == 0 {
                w.scale_group(t, r);
                for x in &mut d.theta[t] { *x *= r; }
            }
            if i % 2 == 0 {
                // tiny factors force folding the scale into the table
                w.scale_group((t + 1) % 3, 1e-5);
                w.scale_group((t + 1) % 3, 1e5);
                w.scale_group((t + 2) % 3, 1e-30);
                w.scale_group((t + 2) % 3, 1e30);
                for x in &mut d.theta[(t + 2) % 3] { *x = (*x * 1e-30) * 1e30; }
            }
            w.end_step();
            for g in 0..3 { for s in 0..4 { d.sum[g][s] += d.theta[g][s]; } }
            d.steps += 1;
        }
        let mut bytes = Vec::new();
        w.write_bytes(&mut bytes);
        let mut r = Reader::new(&bytes, "state");
        let back = TemplateWeights::read_from(&mut r).unwrap();
        prop_assert_eq!(r.remaining(), 0);
        prop_assert_eq!(back.averaged().unwrap(), w.averaged().unwrap());
        prop_assert!(TemplateWeights::read_from(&mut Reader::new(&bytes[..bytes.len() - 1], "state")).is_err());
        let avg = w.averaged().unwrap();
        let cur = w.current().unwrap();
        let norms = w.group_norms();
        for g in 0..3 {
            let n: f64 = d.theta[g].iter().map(|x| x * x).sum::<f64>().sqrt();
            prop_assert!((norms[g] - n).abs() <= 1e-3 * (1.0 + n), "norm {} vs {}", norms[g], n);
            for s in 0..4 {
                let a = d.sum[g][s] / d.steps as f64;
                prop_assert!((avg[g * 4 + s] as f64 - a).abs() <= 1e-3 * (1.0 + a.abs()));
                prop_assert!((cur[g * 4 + s] as f64 - d.theta[g][s]).abs() <= 1e-3 * (1.0 + d.theta[g][s].abs()));
                let got = w.get(g, s);
                prop_assert!((got - d.theta[g][s]).abs() <= 1e-3 * (1.0 + d.theta[g][s].abs()));
            }
        }
    }
}

/// A group saved with the zero flag (scale 0, stale table) loads as zero
/// with its running sum kept.
#[test]
fn a_group_saved_as_zero_loads_as_zero_with_its_average() {
    let mut w = TemplateWeights::new(&[4, 2]).unwrap();
    for step in 0..5 {
        w.add(0, step % 4, 1.0 + step as f64);
        w.add(1, 1, -2.0);
        w.scale_group(0, 0.5);
        w.end_step();
    }
    let mut bytes = Vec::new();
    w.write_bytes(&mut bytes);
    let head = 8 + 8 * 2 + 8;
    bytes[head..head + 8].copy_from_slice(&0.0f64.to_le_bytes());
    bytes[head + 24] = 1;
    let back = TemplateWeights::read_from(&mut Reader::new(&bytes, "state")).unwrap();
    for (a, b) in back.averaged().unwrap().iter().zip(w.averaged().unwrap()) {
        assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "{a} vs {b}");
    }
    assert_eq!(back.group_norms()[0], 0.0);
    assert_eq!(&back.current().unwrap()[..4], &[0.0; 4]);
    assert_eq!(&back.current().unwrap()[4..], &w.current().unwrap()[4..]);
    bytes[head + 24] = 2;
    assert!(TemplateWeights::read_from(&mut Reader::new(&bytes, "state")).is_err());
}

/// Tables too large for memory are refused with an allocation error naming
/// the table size, not a panic or an abort.
#[test]
fn tables_too_large_for_memory_are_an_allocation_error() {
    match TemplateWeights::new(&[4, 1 << 61]) {
        Err(omkl_core::OmklError::Alloc { what, bytes }) => {
            assert_eq!(what, "table size");
            assert!(bytes >= 1 << 63, "{bytes}");
        }
        other => panic!("expected an allocation error, got {other:?}"),
    }
}
