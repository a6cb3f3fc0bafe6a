//! Saving and loading a [`StreamMkl`] as deterministic, versioned bytes.

use serde::{Deserialize, Serialize};

use super::block::ScaledBlock;
use super::state::StreamMkl;
use crate::error::{OmklError, Result};

const FORMAT: &str = "omkl-stream-mkl";
const VERSION: u32 = 1;

#[derive(Serialize)]
struct SavedRef<'a> {
    format: &'a str,
    version: u32,
    model: &'a StreamMkl,
}

#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
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
        serde_json::to_vec(&SavedRef {
            format: FORMAT,
            version: VERSION,
            model: self,
        })
        .expect("serialising plain data cannot fail")
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
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let header: Header =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a saved model: {e}")))?;
        if header.format != FORMAT {
            return Err(bad(format!(
                "expected format {FORMAT:?}, got {:?}",
                header.format
            )));
        }
        if header.version != VERSION {
            return Err(bad(format!(
                "expected format version {VERSION}, got {}",
                header.version
            )));
        }
        let saved: Saved =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("corrupt model: {e}")))?;
        let mut m = saved.model;
        m.check_consistent()?;
        m.support.rebuild_index();
        Ok(m)
    }

    fn check_consistent(&self) -> Result<()> {
        self.config.check(self.d.max(1))?;
        let (d, l, s) = (self.d, self.l, self.support.len());
        let ok = d >= 1
            && l >= 1
            && self.support.dim() == d
            && self.support.data().len() == s * d
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
