//! The row-indexed weights (a row per bucket written, appended on its
//! first write) against the dense table they replace: tracked blocks of
//! `n_buckets × n_outputs` coefficients driven by the same operations.
//! Every value, squared norm, averaging sum and group norm must be equal
//! bit for bit, since the arithmetic of each coordinate and the order of
//! every sum are the same; and only the buckets written hold a row.

use omkl_core::learner::{GroupedWeights, ScaledBlock};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// `w[g, b, k] += alpha · d[k]` on the outputs `k` where `d` is not 0.
    Axpy {
        g: usize,
        b: usize,
        alpha: f64,
        d: Vec<f64>,
    },
    Rescale {
        g: usize,
        c: f64,
    },
    /// The sparse-group-lasso prox on the written coordinates.
    Prox {
        tau: f64,
    },
    EndRound,
    /// New number of outputs (1..=4).
    Outputs(usize),
}

fn op(ng: usize, nb: usize) -> impl Strategy<Value = Op> {
    // a few hot buckets, so that rows are written again and again
    let bucket = prop_oneof![0..4usize, 0..nb];
    let d = prop::collection::vec(prop_oneof![Just(0.0), -1.0..1.0f64], 4);
    prop_oneof![
        8 => (0..ng, bucket, -2.0..2.0f64, d).prop_map(|(g, b, alpha, d)| Op::Axpy { g, b, alpha, d }),
        // c = 0 zeroes a group; tiny and huge c force the scale to be folded.
        3 => (0..ng, prop_oneof![Just(0.0), 0.2..1.5f64, Just(1e-5), Just(3e4)])
            .prop_map(|(g, c)| Op::Rescale { g, c }),
        1 => (0.0..0.2f64).prop_map(|tau| Op::Prox { tau }),
        3 => Just(Op::EndRound),
        1 => (1..=4usize).prop_map(Op::Outputs),
    ]
}

/// Soft thresholding by `tau`, then each group scaled down by `tau` over
/// its norm (summed in the order given): a prox whose result depends on
/// the order of the coordinates' sums.
fn prox(x: &mut [f64], offsets: &[usize], tau: f64) {
    for v in x.iter_mut() {
        *v = v.signum() * (v.abs() - tau).max(0.0);
    }
    for w in offsets.windows(2) {
        let g = &mut x[w[0]..w[1]];
        let n = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        let c = if n > tau { 1.0 - tau / n } else { 0.0 };
        g.iter_mut().for_each(|v| *v *= c);
    }
}

/// The dense table: one tracked block of `nb × k` coefficients per group.
struct Dense {
    nb: usize,
    k: usize,
    blocks: Vec<ScaledBlock>,
    rounds: u64,
}

impl Dense {
    fn new(ng: usize, nb: usize, k: usize) -> Self {
        let blocks = (0..ng)
            .map(|_| ScaledBlock::tracked(nb, k, true, "n_buckets").unwrap())
            .collect();
        Dense {
            nb,
            k,
            blocks,
            rounds: 0,
        }
    }

    fn rows(&self, g: usize) -> Vec<u32> {
        let nb = self.nb as u32;
        self.blocks[g]
            .live_rows()
            .map_or_else(|| (0..nb).collect(), <[u32]>::to_vec)
    }

    fn prox(&mut self, tau: f64) {
        let k = self.k;
        let mut compact = Vec::new();
        let mut offsets = vec![0];
        for g in 0..self.blocks.len() {
            let b = &self.blocks[g];
            for r in self.rows(g) {
                let base = r as usize * k;
                compact.extend(b.raw()[base..base + k].iter().map(|v| b.scale() * v));
            }
            offsets.push(compact.len());
        }
        if compact.iter().all(|&v| v == 0.0) {
            return;
        }
        prox(&mut compact, &offsets, tau);
        let mut pos = 0;
        for g in 0..self.blocks.len() {
            let rows = self.rows(g);
            let b = &mut self.blocks[g];
            b.scale_by(0.0);
            for r in rows {
                for kk in 0..k {
                    if compact[pos + kk] != 0.0 {
                        b.add_tracked(r as usize * k + kk, compact[pos + kk]);
                    }
                }
                pos += k;
            }
        }
    }

    fn resize(&mut self, k: usize) {
        if k == self.k {
            return;
        }
        for b in &mut self.blocks {
            let parts = b.relaid_rows(self.k, k).unwrap();
            b.set_rows(parts, k);
            if k < self.k {
                b.refresh_sq_norm();
            }
        }
        self.k = k;
    }

    fn norms(&self) -> Vec<f64> {
        let k = self.k;
        let sq =
            |b: &ScaledBlock, i: std::ops::Range<usize>| i.map(|i| b.get(i).powi(2)).sum::<f64>();
        self.blocks
            .iter()
            .map(|b| match b.live_rows() {
                Some(rows) => rows
                    .iter()
                    .map(|&r| sq(b, r as usize * k..(r as usize + 1) * k))
                    .sum::<f64>()
                    .sqrt(),
                None => sq(b, 0..b.len()).sqrt(),
            })
            .collect()
    }

    fn dense(&self, averaged: bool) -> Vec<f64> {
        let t = self.rounds as f64;
        self.blocks
            .iter()
            .flat_map(|b| {
                (0..b.len()).map(move |i| {
                    if averaged && t > 0.0 {
                        b.average_sum(i) / t
                    } else {
                        b.get(i)
                    }
                })
            })
            .collect()
    }
}

/// Bit-for-bit equality (`-0.0` and `0.0` taken as equal).
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

fn run(ops: &[Op], nb: usize) -> Result<(), TestCaseError> {
    let ng = 2;
    let mut w = GroupedWeights::new(ng, nb, 2, true).unwrap();
    let mut d = Dense::new(ng, nb, 2);
    let mut written = vec![std::collections::BTreeSet::new(); ng];
    for o in ops {
        match o {
            Op::Axpy { g, b, alpha, d: dv } => {
                let k = d.k;
                let nz: Vec<u32> = (0..k).filter(|&i| dv[i] != 0.0).map(|i| i as u32).collect();
                if nz.is_empty() {
                    continue;
                }
                w.ensure_row(*g, *b).unwrap();
                w.axpy_bucket_sparse(*g, *b, *alpha, &nz, &dv[..k]);
                d.blocks[*g].axpy_row(*b, *alpha, &nz, &dv[..k]);
                written[*g].insert(*b);
            }
            Op::Rescale { g, c } => {
                w.rescale_group(*g, *c);
                d.blocks[*g].scale_by(*c);
            }
            Op::Prox { tau } => {
                w.apply_to_written(|x: &mut [f64], off: &[usize]| -> Result<(), ()> {
                    prox(x, off, *tau);
                    Ok(())
                })
                .unwrap();
                d.prox(*tau);
            }
            Op::EndRound => {
                w.end_round();
                d.blocks.iter_mut().for_each(ScaledBlock::end_round);
                d.rounds += 1;
            }
            Op::Outputs(k) => {
                w.resize_outputs(*k, true).unwrap();
                d.resize(*k);
            }
        }
        prop_assert!(same(&w.dense(), &d.dense(false)), "{o:?}: weights differ");
        prop_assert!(
            same(&w.averaged_dense(), &d.dense(true)),
            "{o:?}: averages differ"
        );
        prop_assert!(
            same(&w.exact_group_norms(), &d.norms()),
            "{o:?}: norms differ"
        );
        for (g, rows) in written.iter().enumerate() {
            let (x, y) = (&w.blocks()[g], &d.blocks[g]);
            prop_assert_eq!(x.raw_sq_norm(), y.raw_sq_norm());
            prop_assert_eq!(x.scale(), y.scale());
            prop_assert_eq!(x.average_parts().1, y.average_parts().1);
            prop_assert_eq!(x.live_rows().is_some(), y.live_rows().is_some());
            prop_assert_eq!(w.n_rows(g), rows.len());
            prop_assert_eq!(x.len(), rows.len() * d.k);
        }
    }
    // the dense arrays set back give the same weights and averages
    let mut back = w.clone();
    back.set_dense(&w.dense(), &w.dense_sums()).unwrap();
    prop_assert!(same(&back.dense(), &w.dense()));
    prop_assert!(same(&back.averaged_dense(), &w.averaged_dense()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn row_indexed_weights_equal_the_dense_table(
        ops in prop::collection::vec(op(2, 64), 1..120),
        nb in prop_oneof![Just(16usize), Just(64usize)],
    ) {
        let ops: Vec<Op> = ops
            .into_iter()
            .map(|o| match o {
                Op::Axpy { g, b, alpha, d } => Op::Axpy { g, b: b % nb, alpha, d },
                o => o,
            })
            .collect();
        run(&ops, nb)?;
    }
}

/// Reading a bucket that was never written gives zeros and allocates
/// nothing; the memory follows the rows written, not the table.
#[test]
fn unwritten_buckets_read_as_zeros_and_hold_no_row() {
    let mut w = GroupedWeights::new(3, 1 << 20, 40, true).unwrap();
    let before = w.heap_bytes();
    w.ensure_row(1, 123_456).unwrap();
    w.axpy_bucket(1, 123_456, 1.0, &[2.0; 40]);
    w.end_round();
    assert_eq!(w.weight(1, 123_456, 39), 2.0);
    assert_eq!(w.weight(1, 7, 3), 0.0);
    assert_eq!(w.averaged_weight(0, 123_456, 3), 0.0);
    assert_eq!((w.n_rows(0), w.n_rows(1)), (0, 1));
    let mut z = vec![0.0; 40];
    w.add_scores(&[0, 1, 2], &[5, 123_456, 9], &[1.0, 0.5, 1.0], true, &mut z);
    assert_eq!(z, vec![1.0; 40]);
    assert!(
        w.heap_bytes() - before < 4096,
        "{}",
        w.heap_bytes() - before
    );
    // slots: 4 bytes per bucket, no weight table
    assert!(before < 3 * (1 << 20) * 5, "{before}");
}
