//! Restarting the averaged iterate, so that a model that predicts with
//! the average (`average = true`) averages only the iterates since the last
//! detected drift.

use super::state::StreamMkl;
use crate::learner::weights::ScaledBlock;

impl StreamMkl {
    /// Restarts the averaged iterate: the running sums of every group are
    /// zeroed, and from now on the average is over the rounds finished
    /// after this call (until one is finished, prediction uses the current
    /// iterate). The current iterate does not change.
    ///
    /// # Complexity
    /// O(number of coefficients).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::Kernel;
    /// use omkl_core::learner::stream_mkl::{Iterate, StreamMkl, StreamMklConfig};
    /// let mut cfg = StreamMklConfig::multiclass(vec![Kernel::Linear { normalize: false }], 0.1, 1.0);
    /// cfg.average = true;
    /// let mut m = StreamMkl::new(cfg, 1, 2).unwrap();
    /// m.learn(&[1.0], &[1]).unwrap();
    /// m.restart_average();
    /// assert_eq!(m.average_rounds(), 0);
    /// m.learn(&[-1.0], &[0]).unwrap();
    /// // the average of one round is that round's iterate
    /// assert_eq!(m.kernel_coef(0, Iterate::Average), m.kernel_coef(0, Iterate::Last));
    /// ```
    pub fn restart_average(&mut self) {
        self.memo.clear();
        for b in self.blocks_mut() {
            restart_sum(b);
        }
        self.average_start = self.t;
    }

    /// Rounds finished since the averaged iterate last (re)started.
    pub fn average_rounds(&self) -> u64 {
        self.t - self.average_start
    }
}

/// Zeroes the running sum `a P − b` of a block by setting `b = a P` (the
/// same product the sum is read with, so it reads back as exactly 0).
fn restart_sum(block: &mut ScaledBlock) {
    let p = block.average_parts().1;
    let (a, b) = block.parts_mut();
    for (bv, av) in b.iter_mut().zip(a.iter()) {
        *bv = *av * p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::{Iterate, StreamMklConfig};

    fn model(average: bool) -> StreamMkl {
        let kernels = vec![
            Kernel::Linear { normalize: false },
            Kernel::Gaussian { sigma2: 1.0 },
        ];
        let mut cfg = StreamMklConfig::multiclass(kernels, 0.05, 0.5);
        cfg.average = average;
        cfg.explicit_groups = vec![vec![0, 1]];
        StreamMkl::new(cfg, 2, 3).unwrap()
    }

    fn stream(n: usize) -> Vec<([f32; 2], usize)> {
        (0..n)
            .map(|i| {
                let u = ((i * 37) % 11) as f32 / 5.0 - 1.0;
                let v = ((i * 53) % 7) as f32 / 3.0 - 1.0;
                ([u, v], (i * 7) % 3)
            })
            .collect()
    }

    /// Kernel and explicit coefficients of the current iterate, label-major.
    fn last(m: &StreamMkl) -> Vec<f64> {
        let mut out = m.kernel_coef(0, Iterate::Last);
        out.extend(m.kernel_coef(1, Iterate::Last));
        out.extend(m.explicit_coef(0, Iterate::Last));
        out
    }

    fn averaged(m: &StreamMkl) -> Vec<f64> {
        let mut out = m.kernel_coef(0, Iterate::Average);
        out.extend(m.kernel_coef(1, Iterate::Average));
        out.extend(m.explicit_coef(0, Iterate::Average));
        out
    }

    #[test]
    fn average_after_a_restart_is_the_mean_of_the_later_iterates() {
        let data = stream(40);
        let mut m = model(true);
        for (x, y) in &data[..25] {
            m.learn(x, &[*y]).unwrap();
        }
        m.restart_average();
        assert_eq!(m.average_rounds(), 0);
        // the hand computation: the mean of the iterates after each later
        // round (support inputs are only added, never removed, without a
        // budget, so each iterate's coefficients pad with zeros)
        let mut iterates: Vec<Vec<f64>> = Vec::new();
        for (x, y) in &data[25..] {
            m.learn(x, &[*y]).unwrap();
            iterates.push(last(&m));
        }
        assert_eq!(m.average_rounds(), 15);
        let s = m.n_support();
        let l = 3;
        let pad = |v: &Vec<f64>| -> Vec<f64> {
            // a kernel group is L x S label-major; re-lay each on the final S
            let (ds, rest) = (v.len() - 2 * l, 2 * l);
            let s_then = (ds / 2) / l;
            let mut out = Vec::new();
            for k in 0..2 {
                for y in 0..l {
                    for j in 0..s {
                        out.push(if j < s_then {
                            v[k * l * s_then + y * s_then + j]
                        } else {
                            0.0
                        });
                    }
                }
            }
            out.extend_from_slice(&v[v.len() - rest..]);
            out
        };
        let padded: Vec<Vec<f64>> = iterates.iter().map(pad).collect();
        let got = averaged(&m);
        assert_eq!(got.len(), padded[0].len());
        for (i, g) in got.iter().enumerate() {
            let mean = padded.iter().map(|v| v[i]).sum::<f64>() / padded.len() as f64;
            assert!(
                (g - mean).abs() <= 1e-9 * (1.0 + mean.abs()),
                "{i}: {g} vs {mean}"
            );
        }
    }

    #[test]
    fn restart_leaves_the_current_iterate_and_predictions_until_the_next_round() {
        let data = stream(20);
        let mut m = model(true);
        for (x, y) in &data {
            m.learn(x, &[*y]).unwrap();
        }
        let before = last(&m);
        m.restart_average();
        assert_eq!(last(&m), before);
        // no round since the restart: prediction uses the current iterate
        let mut plain = model(false);
        for (x, y) in &data {
            plain.learn(x, &[*y]).unwrap();
        }
        for (x, _) in &data {
            assert_eq!(m.scores(x, 1).unwrap(), plain.scores(x, 1).unwrap());
        }
    }

    #[test]
    fn restart_survives_saving() {
        let data = stream(30);
        let mut m = model(true);
        for (i, (x, y)) in data.iter().enumerate() {
            if i == 12 {
                m.restart_average();
            }
            m.learn(x, &[*y]).unwrap();
        }
        let back = StreamMkl::from_bytes(&m.to_bytes()).unwrap();
        assert_eq!(back.average_rounds(), 18);
        assert_eq!(averaged(&back), averaged(&m));
    }
}
