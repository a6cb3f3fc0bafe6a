//! Saving and loading the parser: deterministic bytes of its configuration,
//! templates, weights, averaged weights, β trajectory and first-pass pruner
//! inside the checksummed envelope of [`crate::persist`].
//!
//! # Complexity
//! `O(table slots)` either way, one pass.

use crate::error::{OmklError, Result};
use crate::features::arc_templates::{HASH_NAME, HASH_SEED};
use crate::model::parser_decode::TreeDecoder;
use crate::model::parser_input::ParserConfig;
use crate::model::parser_state::{ArcParser, ArcPruner};
use crate::model::template_weights::{zeroed_table, TemplateWeights};
use crate::persist::Reader;
use crate::prox::Regularizer;

/// Version of the byte format of [`ArcParser::to_bytes`]. 4: the payload
/// of version 3 inside the checksummed envelope of [`crate::persist`]
/// (format [`FORMAT`]); files of earlier versions are refused.
pub const FORMAT_VERSION: u32 = 4;
/// Format name of the envelope.
pub const FORMAT: &str = "omkl-arc-parser";

impl ArcParser {
    /// Serialises the parser (deterministic bytes) inside the envelope of
    /// [`crate::persist`]: hash name and seed, configuration, template
    /// indices, weights, averaged weights, the β trajectory and the
    /// first-pass pruner, little-endian.
    ///
    /// # Complexity
    /// O(table slots), one pass (the payload is sealed in place).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let slots = self.weights.n_slots();
        let estimate = crate::persist::header_len(FORMAT)
            + 8 * slots
            + self.averaged.as_ref().map_or(0, |a| 4 * a.len())
            + 4096;
        let mut out = Vec::with_capacity(estimate);
        out.resize(crate::persist::header_len(FORMAT), 0);
        self.write_payload(&mut out)?;
        Ok(crate::persist::seal_in_place(FORMAT, FORMAT_VERSION, out))
    }

    pub(super) fn write_payload(&self, out: &mut Vec<u8>) -> Result<()> {
        let (kind, lam) = match self.config.regularizer {
            Regularizer::L2Squared { lam } => (0u8, lam),
            Regularizer::SquaredL21 { lam } => (1u8, lam),
            ref r => {
                return Err(OmklError::invalid(
                    "regularizer",
                    format!("cannot save a parser with {r:?}"),
                ))
            }
        };
        out.extend_from_slice(&(HASH_NAME.len() as u64).to_le_bytes());
        out.extend_from_slice(HASH_NAME.as_bytes());
        out.extend_from_slice(&HASH_SEED.to_le_bytes());
        out.push(kind);
        out.extend_from_slice(&lam.to_le_bytes());
        out.extend_from_slice(&self.config.eta.to_le_bytes());
        out.push(match self.config.decoder {
            TreeDecoder::ChuLiuEdmonds => 0,
            TreeDecoder::Eisner => 1,
        });
        out.extend_from_slice(&(self.template_ids.len() as u64).to_le_bytes());
        for &i in &self.template_ids {
            out.extend_from_slice(&(i as u64).to_le_bytes());
        }
        self.weights.write_bytes(out);
        match &self.averaged {
            None => out.push(0),
            Some(a) => {
                out.push(1);
                for x in a {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(&(self.beta_trajectory.len() as u64).to_le_bytes());
        for b in &self.beta_trajectory {
            for x in b {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        match &self.pruner {
            None => out.push(0),
            Some(p) => {
                // 1: top k; 2: top k within a finite margin (then the margin)
                let finite = p.margin().is_finite();
                out.push(if finite { 2 } else { 1 });
                out.extend_from_slice(&(p.k() as u64).to_le_bytes());
                if finite {
                    out.extend_from_slice(&p.margin().to_le_bytes());
                }
                let mut inner = Vec::new();
                p.model().write_payload(&mut inner)?;
                out.extend_from_slice(&(inner.len() as u64).to_le_bytes());
                out.extend_from_slice(&inner);
            }
        }
        Ok(())
    }

    /// Reads bytes written by [`ArcParser::to_bytes`]: checks the envelope
    /// (format, version, length, checksum), the hash name and seed, then
    /// every decoded value (sizes against the bytes left before
    /// allocating, finite positive scales, finite non-negative norms).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &[FORMAT_VERSION])?;
        let mut r = Reader::new(payload, "parser state");
        let p = Self::read_payload(&mut r)?;
        r.finish()?;
        Ok(p)
    }

    pub(super) fn read_payload(r: &mut Reader<'_>) -> Result<Self> {
        let name_len = r.count("hash name length", 1)?;
        let name = r.take(name_len)?;
        let seed = r.u64()?;
        if name != HASH_NAME.as_bytes() || seed != HASH_SEED {
            return Err(r.error(format!(
                "saved with hash {:?} seed {seed:#x}, expected {HASH_NAME:?} seed {HASH_SEED:#x}",
                String::from_utf8_lossy(name)
            )));
        }
        let kind = r.u8()?;
        let lam = r.f64()?;
        let eta = r.f64()?;
        let regularizer = match kind {
            0 => Regularizer::L2Squared { lam },
            1 => Regularizer::SquaredL21 { lam },
            k => return Err(r.error(format!("unknown regularizer code {k}"))),
        };
        let decoder = match r.u8()? {
            0 => TreeDecoder::ChuLiuEdmonds,
            1 => TreeDecoder::Eisner,
            k => return Err(r.error(format!("unknown decoder code {k}"))),
        };
        let nt = r.count("template count", 8)?;
        let mut ids = Vec::with_capacity(nt);
        for _ in 0..nt {
            let id = r.u64()?;
            ids.push(usize::try_from(id).map_err(|_| r.error(format!("template index {id}")))?);
        }
        let config = ParserConfig {
            regularizer,
            eta,
            decoder,
        };
        let mut p = ArcParser::with_templates(config, Some(&ids))?;
        let weights = TemplateWeights::read_from(r)?;
        let averaged = match r.u8()? {
            0 => None,
            1 => {
                let n = weights.n_slots();
                let need = n.checked_mul(4).filter(|&b| b <= r.remaining());
                if need.is_none() {
                    return Err(r.error(format!(
                        "truncated: averaged table of {n} weights, {} bytes left",
                        r.remaining()
                    )));
                }
                let mut avg = zeroed_table(n)?;
                r.f32s(n, &mut avg)?;
                if avg.iter().any(|v| !v.is_finite()) {
                    return Err(r.error("non-finite averaged weight"));
                }
                Some(avg)
            }
            f => return Err(r.error(format!("unknown averaged-table flag {f}"))),
        };
        p.set_state(weights, averaged)?;
        let epochs = r.count("trajectory length", 8 * nt)?;
        for _ in 0..epochs {
            let mut b = Vec::with_capacity(nt);
            for _ in 0..nt {
                b.push(r.f64()?);
            }
            p.beta_trajectory.push(b);
        }
        let flag = r.u8()?;
        if flag > 2 {
            return Err(r.error(format!("unknown pruner kind {flag}")));
        }
        if flag != 0 {
            let k = r.u64()? as usize;
            let margin = if flag == 2 { r.f64()? } else { f64::INFINITY };
            let len = r.count("pruner length", 1)?;
            let mut inner = Reader::new(r.take(len)?, "pruner state");
            let model = ArcParser::read_payload(&mut inner)?;
            inner.finish()?;
            p.pruner = Some(Box::new(ArcPruner::from_parts(model, k, margin)?));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parser_input::Epochs;
    use crate::model::parser_toy::{toy, trained_toy};

    #[test]
    fn bytes_round_trip_and_reject_other_versions() {
        let (data, p) = trained_toy(None);
        let b = p.to_bytes().unwrap();
        let q = ArcParser::from_bytes(&b).unwrap();
        assert_eq!(q.to_bytes().unwrap(), b);
        for (s, _) in &data {
            assert_eq!(p.predict(s).unwrap(), q.predict(s).unwrap());
        }
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        let other = crate::persist::seal(FORMAT, 99, payload);
        assert!(ArcParser::from_bytes(&other)
            .unwrap_err()
            .to_string()
            .contains("version 99"));
        assert!(ArcParser::from_bytes(&b[..b.len() - 3])
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }

    #[test]
    fn older_formats_are_refused_before_anything_else_is_read() {
        assert_eq!(FORMAT_VERSION, 4);
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&toy(), &mut |_| Ok(())).unwrap();
        let b = p.to_bytes().unwrap();
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        for old in [1u32, 2, 3] {
            // the files of versions 1 to 3: magic, version, then the payload
            let mut full = b"OMKLARC\0".to_vec();
            full.extend_from_slice(&old.to_le_bytes());
            full.extend_from_slice(payload);
            for bytes in [&full[..], &full[..12]] {
                let e = ArcParser::from_bytes(bytes).unwrap_err().to_string();
                assert!(e.contains("older omkl format"), "{e}");
            }
            // the envelope at an older version
            let e = ArcParser::from_bytes(&crate::persist::seal(FORMAT, old, payload))
                .unwrap_err()
                .to_string();
            assert!(e.contains("older omkl format"), "{e}");
        }
    }

    /// The payload with the weights' header edited, sealed again.
    fn with_weights_edit(p: &ArcParser, edit: impl Fn(&mut Vec<u8>, usize)) -> Vec<u8> {
        let b = p.to_bytes().unwrap();
        let mut payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION])
            .unwrap()
            .to_vec();
        // hash name, seed, kind, lam, eta, decoder, template ids
        let at = 8 + HASH_NAME.len() + 8 + 1 + 8 + 8 + 1 + 8 + 8 * p.template_ids().len();
        edit(&mut payload, at);
        crate::persist::seal(FORMAT, FORMAT_VERSION, &payload)
    }

    #[test]
    fn impossible_states_are_refused_before_allocating() {
        let mut p = ArcParser::with_templates(ParserConfig::default(), Some(&[0, 1, 2])).unwrap();
        p.fit_epoch(&toy(), &mut |_| Ok(())).unwrap();
        let t = p.weights().n_groups();
        // the first group's scale, running sum and squared norm
        let first = 8 + 8 * t + 8;
        let put = |v: f64, off: usize| {
            move |b: &mut Vec<u8>, at: usize| {
                b[at + off..at + off + 8].copy_from_slice(&v.to_le_bytes())
            }
        };
        for (edit, word) in [
            (
                Box::new(put(0.0, first)) as Box<dyn Fn(&mut Vec<u8>, usize)>,
                "scale",
            ),
            (Box::new(put(-1.0, first)), "scale"),
            (Box::new(put(f64::NAN, first)), "scale"),
            (Box::new(put(-1.0, first + 16)), "squared norm"),
            (Box::new(put(f64::from_bits(1 << 40), 8)), "group size"),
            (Box::new(put(f64::from_bits(1 << 62), 0)), "group count"),
        ] {
            let e = ArcParser::from_bytes(&with_weights_edit(&p, edit))
                .unwrap_err()
                .to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
        let same = with_weights_edit(&p, |_, _| {});
        assert_eq!(
            ArcParser::from_bytes(&same).unwrap().to_bytes().unwrap(),
            same
        );
    }
}
