//! The entry points of a round: one example (feature vectors or ids of
//! precomputed inputs), with label and dimension growth, or many examples.

use super::scoring::Example;
use super::state::StreamMkl;
use crate::error::Result;

impl StreamMkl {
    /// One round on the example `(x, y)`: `x` is `n × d` row-major with
    /// `n = y.len()` (`n = 1` for multiclass models), labels `< L`.
    /// Returns the loss met before the update.
    pub fn learn(&mut self, x: &[f32], y: &[usize]) -> Result<f64> {
        self.learn_extending(x, self.d, y, self.l, false)
    }

    /// One round on the precomputed inputs `ids` labelled `y`. Everything
    /// is validated first: on error the model is unchanged.
    pub fn learn_ids(&mut self, ids: &[usize], y: &[usize]) -> Result<f64> {
        self.check_ids(ids)?;
        self.check_labels(ids.len(), y, self.l)?;
        self.round(Example::Ids(ids), y)
    }

    /// [`StreamMkl::learn`] that first adds labels up to `n_labels` and,
    /// when `grow_dim`, grows the dimension to `d` (new features are 0 in
    /// earlier inputs). Everything is validated first: on error the model
    /// is unchanged.
    pub fn learn_extending(
        &mut self,
        x: &[f32],
        d: usize,
        y: &[usize],
        n_labels: usize,
        grow_dim: bool,
    ) -> Result<f64> {
        self.check_example(x, d, y, n_labels, grow_dim)?;
        if n_labels > self.l || d > self.d {
            let mut next = self.clone();
            next.grow_labels(n_labels)?;
            next.grow_dim(d)?;
            let loss = next.round(Example::Vectors(x), y)?;
            *self = next;
            return Ok(loss);
        }
        self.round(Example::Vectors(x), y)
    }

    /// Learns the examples in order (`x` holds them row-major one after
    /// the other, `lens` their lengths), after validating all of them. Labels
    /// beyond the current `L` are added when first met (labels are expected
    /// to be numbered in order of first appearance), so the result equals
    /// one [`StreamMkl::learn_extending`] per example. `watch(i, model)` is
    /// called after the round of example `i` (0-based), before the next
    /// one: it may read the round's [`StreamMkl::last_mistakes`] and change
    /// the model (e.g. [`StreamMkl::react_to_drift`]), as a caller of one
    /// `learn_extending` per example would between them. Stops early (with
    /// the examples so far learned) at the first error of `watch`, or of
    /// `keep_going`, checked every 256 examples. Returns the summed loss.
    ///
    /// # Example
    /// ```
    /// use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
    /// let mut cfg = StreamMklConfig::multiclass(vec![], 1e-3, 1.0);
    /// cfg.explicit_groups = vec![vec![0, 1]];
    /// cfg.count_mistakes = true;
    /// let mut m = StreamMkl::new(cfg, 2, 2).unwrap();
    /// let x = [1.0f32, 0.0, 0.0, 1.0, 1.0, 0.0];
    /// let mut wrong = Vec::new();
    /// m.learn_many(&x, 2, &[1, 1, 1], &[0, 1, 0], 2, || Ok(()), |_, m| {
    ///     wrong.push(m.last_mistakes());
    ///     Ok(())
    /// })
    /// .unwrap();
    /// assert_eq!(wrong.len(), 3);
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn learn_many<F, W>(
        &mut self,
        x: &[f32],
        d: usize,
        lens: &[usize],
        y: &[usize],
        n_labels: usize,
        mut keep_going: F,
        mut watch: W,
    ) -> Result<f64>
    where
        F: FnMut() -> Result<()>,
        W: FnMut(usize, &mut Self) -> Result<()>,
    {
        let total: usize = lens.iter().sum();
        if y.len() != total {
            return Err(crate::error::OmklError::shape(
                "y",
                format!("{total} labels (the sum of the lengths)"),
                format!("{}", y.len()),
            ));
        }
        if x.len() != total * d {
            return Err(crate::error::OmklError::shape(
                "x",
                format!("{total} x {d} values"),
                format!("{} values", x.len()),
            ));
        }
        let mut off = 0;
        for &n in lens {
            let (xs, ys) = (&x[off * d..(off + n) * d], &y[off..off + n]);
            self.check_example(xs, d, ys, n_labels, false)?;
            off += n;
        }
        let (mut off, mut sum) = (0, 0.0);
        for (i, &n) in lens.iter().enumerate() {
            if i % 256 == 255 {
                keep_going()?;
            }
            let ys = &y[off..off + n];
            // labels enter as they are met, as with one `learn` per example
            let top = ys.iter().max().map_or(0, |&v| v + 1);
            self.grow_labels(top)?;
            sum += self.round(Example::Vectors(&x[off * d..(off + n) * d]), ys)?;
            off += n;
            watch(i, self)?;
        }
        self.grow_labels(n_labels)?;
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::StreamMklConfig;

    fn model(average: bool) -> StreamMkl {
        let cfg = StreamMklConfig {
            explicit_groups: vec![vec![0, 1]],
            count_mistakes: true,
            average,
            max_support: Some(5),
            ..StreamMklConfig::multiclass(vec![Kernel::Gaussian { sigma2: 0.8 }], 1e-3, 0.5)
        };
        StreamMkl::new(cfg, 3, 1).unwrap()
    }

    /// Three-class examples of one row each (labels met in order).
    fn data(n: usize) -> (Vec<f32>, Vec<usize>) {
        let x = (0..3 * n).map(|i| (i as f32 * 0.37).sin()).collect();
        let y = (0..n).map(|i| (i * 7 / 3) % 3).collect();
        (x, y)
    }

    #[test]
    fn watched_learning_equals_one_round_per_example_with_the_same_reactions() {
        let (x, y) = data(40);
        for (average, reset) in [(false, false), (true, false), (false, true), (true, true)] {
            let (mut many, mut one) = (model(average), model(average));
            let lens = vec![1; y.len()];
            let mut seen = Vec::new();
            many.learn_many(
                &x,
                3,
                &lens,
                &y,
                3,
                || Ok(()),
                |i, m| {
                    seen.push(m.last_mistakes());
                    if i % 9 == 4 {
                        m.react_to_drift(reset)?;
                    }
                    Ok(())
                },
            )
            .unwrap();
            for (i, &t) in y.iter().enumerate() {
                let top = y[..=i].iter().max().unwrap() + 1;
                one.learn_extending(&x[3 * i..3 * i + 3], 3, &[t], top, false)
                    .unwrap();
                assert_eq!(one.last_mistakes(), seen[i]);
                if i % 9 == 4 {
                    one.react_to_drift(reset).unwrap();
                }
            }
            assert!(seen.iter().any(|&k| k > 0) && seen.contains(&0));
            assert_eq!(many.to_bytes(), one.to_bytes());
        }
    }

    #[test]
    fn an_error_of_the_watcher_stops_after_its_example() {
        let (x, y) = data(10);
        let (mut many, mut one) = (model(false), model(false));
        let err = many
            .learn_many(
                &x,
                3,
                &[1; 10],
                &y,
                3,
                || Ok(()),
                |i, _| {
                    if i == 3 {
                        Err(crate::error::OmklError::invalid("watch", "stop"))
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("stop"));
        one.learn_many(
            &x[..12],
            3,
            &[1; 4],
            &y[..4],
            1 + y[..4].iter().max().unwrap(),
            || Ok(()),
            |_, _| Ok(()),
        )
        .unwrap();
        assert_eq!(many.to_bytes(), one.to_bytes());
    }
}
