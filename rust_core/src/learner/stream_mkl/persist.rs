//! Saving and loading a [`StreamMkl`] as deterministic, versioned bytes:
//! the envelope of [`crate::persist`] (format `omkl-stream-mkl`, checksum)
//! around a JSON payload.

use serde::{Deserialize, Serialize};

use super::state::StreamMkl;
use crate::error::{OmklError, Result};
use crate::kernel::support::sq_norm_f32;
use crate::learner::weights::ScaledBlock;
use crate::persist::{check_scale, check_sq_norm};

/// Format name of the envelope.
pub const FORMAT: &str = "omkl-stream-mkl";
/// Format version: 2 is the JSON payload inside the checksummed envelope
/// (payloads whose groups still hold a `base` vector load too).
pub const VERSION: u32 = 2;

#[derive(Serialize)]
struct SavedRef<'a> {
    model: &'a StreamMkl,
}

#[derive(Deserialize)]
struct Saved {
    model: StreamMkl,
}

fn bad(reason: impl Into<String>) -> OmklError {
    OmklError::invalid("state", reason)
}

impl StreamMkl {
    /// The model as bytes: JSON with a format name and version, floats
    /// printed so that they read back exactly; no hash-map order enters
    /// the bytes, so equal models give equal bytes.
    ///
    /// # Complexity
    /// O(model size).
    pub fn to_bytes(&self) -> Vec<u8> {
        let payload = serde_json::to_vec(&SavedRef { model: self })
            .expect("serialising plain data cannot fail");
        crate::persist::seal(FORMAT, VERSION, &payload)
    }

    /// Reads bytes written by [`StreamMkl::to_bytes`]; errors (never
    /// panics) on another format or version and on inconsistent contents.
    ///
    /// # Example
    /// ```
    /// use omkl_core::kernel::Kernel;
    /// use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
    /// let cfg = StreamMklConfig::multiclass(vec![Kernel::Linear { normalize: false }], 0.1, 1.0);
    /// let mut m = StreamMkl::new(cfg, 2, 2).unwrap();
    /// m.learn(&[1.0, 2.0], &[1]).unwrap();
    /// let back = StreamMkl::from_bytes(&m.to_bytes()).unwrap();
    /// assert_eq!(back, m);
    /// assert!(StreamMkl::from_bytes(b"{}").is_err());
    /// let mut flipped = m.to_bytes();
    /// flipped[40] ^= 1;
    /// assert!(StreamMkl::from_bytes(&flipped).unwrap_err().to_string().contains("checksum"));
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &[VERSION])?;
        let saved: Saved =
            serde_json::from_slice(payload).map_err(|e| bad(format!("corrupt model: {e}")))?;
        let mut m = saved.model;
        if m.support_stamp.is_empty() {
            // bytes from before the stamps: every input counts as equally old
            m.support_stamp = vec![0; m.support.len()];
        }
        m.check_blocks()?;
        m.check_consistent()?;
        m.check_support()?;
        m.support.rebuild_index();
        m.check_distinct_support()?;
        Ok(m)
    }

    /// Scales finite and > 0, squared norms finite and >= 0.
    fn check_blocks(&self) -> Result<()> {
        let names = (0..self.kgroups.len())
            .map(|k| format!("kernel group {k}"))
            .chain((0..self.egroups.len()).map(|g| format!("explicit group {g}")))
            .chain(self.trans.iter().map(|_| "transitions".to_string()));
        for (b, name) in self.blocks().zip(names) {
            check_scale(&format!("state of {name}"), b.scale())?;
            check_sq_norm(&format!("state of {name}"), b.raw_sq_norm())?;
        }
        Ok(())
    }

    /// Support norms equal to their rows' and a support within
    /// `max_support` (after the sizes are checked).
    fn check_support(&self) -> Result<()> {
        let s = self.support.len();
        if let Some(max) = self.config.max_support {
            if s > max {
                return Err(bad(format!(
                    "corrupt model: {s} support inputs, more than max_support = {max}"
                )));
            }
        }
        if let Some(v) = self.support.data().iter().find(|v| !v.is_finite()) {
            return Err(bad(format!("corrupt model: support input value {v}")));
        }
        for j in 0..s {
            let sq = self.support.sq_norm(j);
            let want = sq_norm_f32(self.support.row(j));
            let close = (sq - want).abs() <= 1e-9 * (1.0 + want);
            if !close {
                return Err(bad(format!(
                    "corrupt model: squared norm {sq} of support input {j} differs from its row's"
                )));
            }
        }
        Ok(())
    }

    /// No support input stored twice (the index must be rebuilt).
    fn check_distinct_support(&self) -> Result<()> {
        for j in 0..self.support.len() {
            let row = self.support.row(j);
            if self.support.find(row) != Some(j) {
                return Err(bad(format!(
                    "corrupt model: support input {j} is stored twice"
                )));
            }
        }
        Ok(())
    }

    fn check_consistent(&self) -> Result<()> {
        self.config.check(self.d.max(1))?;
        let (d, l, s) = (self.d, self.l, self.support.len());
        let ok = d >= 1
            && l >= 1
            && self.support.dim() == self.config.kernel_columns.unwrap_or(d)
            && self.support.data().len() == s * self.support.dim()
            && self.support_stamp.len() == s
            && self.support_stamp.iter().all(|&t| t <= self.t)
            && self.schedule_start <= self.t
            && self.average_start <= self.t
            && self.kgroups.len() == self.config.kernels.len()
            && self.kgroups.iter().all(|b| b.len() == s * l)
            && self.egroups.len() == self.config.explicit_groups.len()
            && self
                .egroups
                .iter()
                .zip(&self.config.explicit_groups)
                .all(|(b, c)| b.len() == l * c.len())
            && self.trans.as_ref().map(|b| b.len()) == self.config.chain.then_some((l + 2) * l)
            && self.history.len() == self.history_rounds.len()
            && self
                .history
                .iter()
                .all(|h| h.len() == self.config.n_groups())
            && self.blocks().all(ScaledBlock::is_consistent);
        if ok {
            Ok(())
        } else {
            Err(bad("corrupt model: inconsistent sizes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::learner::stream_mkl::StreamMklConfig;
    use crate::persist::edits::{assert_refused, Edit};

    fn trained() -> StreamMkl {
        let kernels = vec![
            Kernel::Linear { normalize: false },
            Kernel::Gaussian { sigma2: 1.0 },
        ];
        let mut cfg = StreamMklConfig::multiclass(kernels, 0.01, 1.0);
        cfg.max_support = Some(50);
        let mut m = StreamMkl::new(cfg, 2, 2).unwrap();
        for i in 0..30 {
            let x = [(i as f32 * 0.7).sin(), (i as f32 * 1.3).cos()];
            m.learn(&x, &[i % 2]).unwrap();
        }
        assert!(m.support.len() >= 3);
        m
    }

    fn edited(m: &StreamMkl, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
        crate::persist::edits::edited(&m.to_bytes(), FORMAT, VERSION, Some("model"), &edit)
    }

    #[test]
    fn impossible_states_are_refused() {
        let m = trained();
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|v| v["kgroups"][0]["s"] = 0.0.into()), "scale"),
            (Box::new(|v| v["kgroups"][1]["s"] = (-1.0).into()), "scale"),
            (
                Box::new(|v| v["kgroups"][0]["q"] = (-1.0).into()),
                "squared norm",
            ),
            (
                Box::new(|v| v["config"]["max_support"] = 2.into()),
                "max_support",
            ),
            (
                Box::new(|v| v["support"]["sq"][0] = (-1.0).into()),
                "squared norm",
            ),
            (
                Box::new(|v| {
                    let d = v["support"]["d"].as_u64().unwrap() as usize;
                    for i in 0..d {
                        v["support"]["data"][d + i] = v["support"]["data"][i].clone();
                    }
                    v["support"]["sq"][1] = v["support"]["sq"][0].clone();
                }),
                "stored twice",
            ),
        ];
        assert_refused(&m, cases, |edit| StreamMkl::from_bytes(&edited(&m, edit)));
    }
}
