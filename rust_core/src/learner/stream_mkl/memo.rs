//! The group scores of the last prediction, kept for the round that learns
//! the same example next (river's prequential loop predicts an example and
//! then learns it). The round would compute the same scores from the same
//! coefficients: reusing them changes no bit of the result.
//!
//! A memo is valid for one input, one round count `t`, dimension and label
//! count; every method that changes the coefficients or the layout without
//! a round ([`StreamMkl::scale_groups`], the growth methods, the averaging
//! restart, new feature maps) clears it, and a round always consumes it.

use super::scoring::{Example, Iterate};
use super::state::StreamMkl;
use crate::decode::viterbi::{viterbi, ViterbiWorkspace};
use crate::error::Result;

impl StreamMkl {
    /// [`StreamMkl::predict`], keeping the group scores of `x` when the
    /// prediction uses the current iterate, so that learning `x` next
    /// (with no change to the model in between) does not score it again.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::Kernel;
    /// use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
    /// let cfg = StreamMklConfig::multiclass(vec![Kernel::Gaussian { sigma2: 1.0 }], 1e-3, 1.0);
    /// let mut a = StreamMkl::new(cfg.clone(), 2, 2).unwrap();
    /// let mut b = StreamMkl::new(cfg, 2, 2).unwrap();
    /// for t in 0..20 {
    ///     let (x, y) = ([t as f32 * 0.1, 1.0], [t % 2]);
    ///     assert_eq!(a.predict_remembering(&x).unwrap(), b.predict(&x).unwrap());
    ///     a.learn(&x, &y).unwrap();
    ///     b.learn(&x, &y).unwrap();
    /// }
    /// assert_eq!(a, b);
    /// ```
    pub fn predict_remembering(&mut self, x: &[f32]) -> Result<Vec<usize>> {
        self.memo.clear();
        let n = x.len() / self.d;
        self.check_x(x, n.max(1), self.d)?;
        if self.predict_iterate() != Iterate::Last || self.pre.is_some() {
            return self.predict(x);
        }
        let mut gs = std::mem::take(&mut self.memo.gs);
        self.group_scores(Example::Vectors(x), Iterate::Last, &mut gs);
        let out = self.decode_group_scores(&gs, n, Iterate::Last);
        self.memo.x.clear();
        self.memo.x.extend_from_slice(x);
        self.memo.gs = gs;
        self.memo.key = out.is_ok().then_some((self.t, self.d, self.l));
        out
    }

    /// The best labelling of the `n` positions whose group scores are `gs`,
    /// with the transitions of iterate `it`.
    pub(super) fn decode_group_scores(
        &self,
        gs: &[f64],
        n: usize,
        it: Iterate,
    ) -> Result<Vec<usize>> {
        let mut em = Vec::new();
        self.emissions_into(gs, n, &mut em);
        let mut tr = Vec::new();
        self.transition_scores_into(it, &mut tr);
        let chain = self.chain_scores(&em, &tr, n)?;
        let mut out = vec![0; n];
        viterbi(&chain, &mut ViterbiWorkspace::new(), &mut out)?;
        Ok(out)
    }

    /// Writes into `gs` the current iterate's group scores of `ex`: the
    /// remembered ones when they are for the same rows, round and layout,
    /// else computed. The memo is consumed either way.
    pub(super) fn round_scores(&mut self, ex: Example<'_>, gs: &mut Vec<f64>) {
        let key = self.memo.key.take();
        if let Example::Vectors(x) = ex {
            if key == Some((self.t, self.d, self.l)) && self.memo.x == x {
                std::mem::swap(gs, &mut self.memo.gs);
                return;
            }
        }
        self.group_scores(ex, Iterate::Last, gs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::feature_map::{FeatureMap, FeatureMaps};
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::{MappedRows, StreamMklConfig};

    fn config(chain: bool) -> StreamMklConfig {
        StreamMklConfig {
            explicit_groups: vec![vec![0, 1, 2], vec![3, 4, 5, 6]],
            forgetting: 0.99,
            max_support: Some(7),
            kernel_columns: Some(3),
            count_mistakes: true,
            chain,
            ..StreamMklConfig::multiclass(
                vec![
                    Kernel::Gaussian { sigma2: 0.7 },
                    Kernel::Linear { normalize: false },
                ],
                1e-3,
                0.5,
            )
        }
    }

    fn maps() -> FeatureMaps {
        let w: Vec<f32> = (0..12).map(|i| (i as f32 * 0.71).sin()).collect();
        let rff = FeatureMap::fourier(3, w, vec![0.1, 1.3, 2.2, 4.0], 0.7).unwrap();
        FeatureMaps::new(3, vec![rff]).unwrap()
    }

    fn input(t: usize, n: usize) -> Vec<f32> {
        (0..3 * n)
            .map(|i| ((t * 7 + i) as f32 * 0.37).sin())
            .collect()
    }

    /// Predicting before each round (with the scores remembered) and
    /// scaling or growing the model between a prediction and a round give
    /// the same model, bit for bit, as rounds alone.
    #[test]
    fn remembered_scores_change_nothing() {
        for chain in [false, true] {
            let mut a = StreamMkl::new(config(chain), 7, 2).unwrap();
            a.set_feature_maps(Some(maps())).unwrap();
            let mut b = a.clone();
            let (mut ma, mut mb) = (MappedRows::default(), MappedRows::default());
            for t in 0..60 {
                let n = if chain { 1 + t % 3 } else { 1 };
                let x = input(t, n);
                let y: Vec<usize> = (0..n).map(|p| (t + p) % (2 + t / 20)).collect();
                let (rows, _) = ma.rows(&a, &x, 3).unwrap();
                let rows = rows.to_vec();
                let pa = a.predict_remembering(&rows).unwrap();
                let (wide, _) = mb.rows(&b, &x, 3).unwrap();
                let wide = wide.to_vec();
                assert_eq!(pa, b.predict(&wide).unwrap());
                if t % 7 == 3 {
                    a.scale_groups(0.5).unwrap();
                    b.scale_groups(0.5).unwrap();
                }
                let la = a.learn_extending(&rows, 7, &y, 2 + t / 20, false).unwrap();
                let lb = b.learn_extending(&wide, 7, &y, 2 + t / 20, false).unwrap();
                assert_eq!(la.to_bits(), lb.to_bits());
                assert_eq!(a, b);
                assert_eq!(a.last_mistakes(), b.last_mistakes());
            }
        }
    }

    /// Scores remembered for one input are not used for another.
    #[test]
    fn another_input_is_scored_again() {
        let mut a = StreamMkl::new(config(false), 7, 2).unwrap();
        let mut b = a.clone();
        let (x, z) = ([0.3f32, -1.0, 0.2, 0.5, 0.1, 0.0, 2.0], [1.0f32; 7]);
        for t in 0..10 {
            a.predict_remembering(&x).unwrap();
            a.learn(&z, &[t % 2]).unwrap();
            b.learn(&z, &[t % 2]).unwrap();
            a.learn(&x, &[(t + 1) % 2]).unwrap();
            b.learn(&x, &[(t + 1) % 2]).unwrap();
        }
        assert_eq!(a, b);
        assert!(a.predict_remembering(&[f32::NAN; 7]).is_err());
    }
}
