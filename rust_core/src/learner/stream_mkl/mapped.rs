//! Explicit groups filled by feature maps of the input (random Fourier or
//! Nyström features, [`crate::kernel::feature_map`]).
//!
//! A model given [`FeatureMaps`] takes rows of the input alone (`input_dim`
//! values) as well as full rows: [`MappedRows::rows`] widens each input
//! row `x` to `[x | z_1(x) | … | z_G(x)]`, the model's `d` columns, whose
//! last columns are the maps' explicit groups. The maps are the model's
//! evaluation, not its state: they are neither saved nor compared (the
//! caller, which drew or computed their parameters, gives them again to a
//! loaded model).

use std::sync::Arc;

use super::state::StreamMkl;
use crate::error::{OmklError, Result};
use crate::kernel::feature_map::{FeatureMaps, MapSlot};

/// Widened rows for a model with feature maps, keeping the last input:
/// predicting and then learning the same input maps it once.
#[derive(Debug, Default, Clone)]
pub struct MappedRows {
    maps: Option<Arc<FeatureMaps>>,
    input: Vec<f32>,
    rows: Vec<f32>,
    buf: Vec<f64>,
}

impl MappedRows {
    /// The rows the model `model` takes for `x` (`d` values per row), and
    /// their width: `x` itself, unless the model has feature maps and `x`
    /// holds input rows (`d` is the maps' input dimension), which are then
    /// widened (or taken from the last call when `x` and the maps are the
    /// same).
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::{feature_map::FeatureMap, Kernel};
    /// use omkl_core::learner::stream_mkl::{FeatureMaps, MappedRows, StreamMkl, StreamMklConfig};
    /// let cfg = StreamMklConfig {
    ///     explicit_groups: vec![vec![0], vec![1, 2]],
    ///     ..StreamMklConfig::multiclass(vec![], 1e-3, 1.0)
    /// };
    /// let mut model = StreamMkl::new(cfg, 3, 2).unwrap();
    /// let rff = FeatureMap::fourier(1, vec![1.0, -1.0], vec![0.0, 0.0], 1.0).unwrap();
    /// model.set_feature_maps(Some(FeatureMaps::new(1, vec![rff]).unwrap())).unwrap();
    /// let mut mapped = MappedRows::default();
    /// let (rows, d) = mapped.rows(&model, &[0.0], 1).unwrap();
    /// assert_eq!((rows, d), (&[0.0f32, 1.0, 1.0][..], 3));
    /// let (rows, d) = mapped.rows(&model, &[5.0, 6.0, 7.0], 3).unwrap();
    /// assert_eq!((rows, d), (&[5.0f32, 6.0, 7.0][..], 3)); // full rows as they are
    /// ```
    pub fn rows<'a>(
        &'a mut self,
        model: &StreamMkl,
        x: &'a [f32],
        d: usize,
    ) -> Result<(&'a [f32], usize)> {
        let Some(maps) = model.maps.get() else {
            return Ok((x, d));
        };
        if d != maps.input_dim() || d == model.d {
            return Ok((x, d));
        }
        let w = maps.width();
        if w != model.d {
            return Err(OmklError::invalid(
                "x",
                format!(
                    "the feature maps fill {w} columns, but the model has {}",
                    model.d
                ),
            ));
        }
        self.trim(x.len() / d.max(1) * w);
        let same_maps = self.maps.as_ref().is_some_and(|m| Arc::ptr_eq(m, maps));
        if !(same_maps && self.input == x) {
            self.input.clear();
            maps.expand(x, &mut self.rows, &mut self.buf)?;
            self.input.extend_from_slice(x);
            self.maps = Some(Arc::clone(maps));
        }
        Ok((&self.rows, w))
    }
}

impl MappedRows {
    /// Above this many values the widened rows of a batch are not kept.
    const KEEP: usize = 1 << 16;

    /// Frees the widened rows of a large batch (more than `KEEP` values, or
    /// far more than `need`), so that a model does not hold a batch's rows
    /// after the batch.
    pub fn trim(&mut self, need: usize) {
        if self.rows.capacity() > Self::KEEP.max(4 * need) {
            *self = MappedRows::default();
        }
    }
}

impl StreamMkl {
    /// Gives the model feature maps whose widened rows have the model's
    /// `d` columns (`None` takes them away). Errors on a model over
    /// precomputed inputs and on another width.
    pub fn set_feature_maps(&mut self, maps: Option<FeatureMaps>) -> Result<()> {
        if let Some(m) = &maps {
            if self.is_precomputed() {
                return Err(OmklError::invalid(
                    "maps",
                    "expected feature vectors, not precomputed inputs",
                ));
            }
            if m.width() != self.d {
                return Err(OmklError::shape(
                    "maps",
                    format!("inputs and features filling the model's {} columns", self.d),
                    format!("{} columns", m.width()),
                ));
            }
        }
        self.memo.clear();
        self.maps = MapSlot::new(maps);
        Ok(())
    }

    /// The model's feature maps, if any.
    pub fn feature_maps(&self) -> Option<&FeatureMaps> {
        self.maps.get().map(|m| &**m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::feature_map::FeatureMap;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::StreamMklConfig;

    fn model_with_maps() -> (StreamMkl, FeatureMaps) {
        let rff = FeatureMap::fourier(2, vec![0.3, -0.7, 1.1, 0.2], vec![0.1, 2.0], 0.9).unwrap();
        let ny = FeatureMap::nystroem(
            2,
            2,
            vec![0.5, -0.5],
            Kernel::Gaussian { sigma2: 1.5 },
            vec![1.0],
        )
        .unwrap();
        let maps = FeatureMaps::new(3, vec![rff, ny]).unwrap();
        let cfg = StreamMklConfig {
            explicit_groups: vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]],
            ..StreamMklConfig::multiclass(vec![Kernel::Gaussian { sigma2: 1.0 }], 1e-3, 1.0)
        };
        let model = StreamMkl::new(cfg, maps.width(), 3).unwrap();
        (model, maps)
    }

    #[test]
    fn input_rows_learn_as_widened_rows() {
        let (mut a, maps) = model_with_maps();
        let mut b = a.clone();
        a.set_feature_maps(Some(maps.clone())).unwrap();
        let mut mapped = MappedRows::default();
        let mut wide = Vec::new();
        for t in 0..40 {
            let x = [
                (t as f32 * 0.37).sin(),
                (t as f32 * 0.11).cos(),
                t as f32 * 0.01,
            ];
            let y = [t % 3];
            maps.expand(&x, &mut wide, &mut Vec::new()).unwrap();
            let (rows, d) = mapped.rows(&a, &x, 3).unwrap();
            assert_eq!(a.predict(rows).unwrap(), b.predict(&wide).unwrap());
            let (rows, d2) = mapped.rows(&a, &x, 3).unwrap();
            assert_eq!(d, d2);
            let rows = rows.to_vec();
            let la = a.learn(&rows, &y).unwrap();
            let lb = b.learn(&wide, &y).unwrap();
            assert_eq!(la, lb);
        }
        assert_eq!(a.scores(&wide, 1).unwrap(), b.scores(&wide, 1).unwrap());
    }

    #[test]
    fn widths_and_inputs_are_checked() {
        let (mut a, maps) = model_with_maps();
        let narrow = FeatureMaps::new(3, vec![maps.maps()[0].clone()]).unwrap();
        assert!(a.set_feature_maps(Some(narrow)).is_err());
        a.set_feature_maps(Some(maps)).unwrap();
        let mut mapped = MappedRows::default();
        assert!(mapped.rows(&a, &[f32::NAN, 0.0, 0.0], 3).is_err());
        assert!(mapped.rows(&a, &[0.0, 0.0, 0.0, 1.0], 3).is_err());
        a.set_feature_maps(None).unwrap();
        assert!(a.feature_maps().is_none());
    }
}
