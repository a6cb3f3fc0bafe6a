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
            next.grow_dim(d);
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
    /// one [`StreamMkl::learn_extending`] per example. Stops
    /// early (with the examples so far learned) when `keep_going` returns
    /// an error, checked every 256 examples. Returns the summed loss.
    pub fn learn_many<F>(
        &mut self,
        x: &[f32],
        d: usize,
        lens: &[usize],
        y: &[usize],
        n_labels: usize,
        mut keep_going: F,
    ) -> Result<f64>
    where
        F: FnMut() -> Result<()>,
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
        }
        self.grow_labels(n_labels)?;
        Ok(sum)
    }
}
