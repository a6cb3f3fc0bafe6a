//! Saving and loading the parser: deterministic bytes of its configuration,
//! templates, weights, averaged weights, β trajectory and first-pass pruner
//! inside the checksummed envelope of [`crate::persist`].
//!
//! # Complexity
//! `O(table slots)` either way, one pass.

use crate::error::{OmklError, Result};
use crate::features::arc_templates::MAX_BITS;
use crate::features::arc_templates::{HASH_NAME, HASH_SEED};
use crate::learner::half_table;
use crate::model::parser_decode::TreeDecoder;
use crate::model::parser_input::ParserConfig;
use crate::model::parser_state::{ArcParser, ArcPruner};
use crate::model::template_weights::{zeroed_table, TemplateWeights};
use crate::persist::Reader;
use crate::prox::Regularizer;

/// Version of the byte format of [`ArcParser::to_bytes`]. 4: the payload
/// of version 3 inside the checksummed envelope of [`crate::persist`]
/// (format [`FORMAT`]); 5 adds a flag after the template indices: a frozen
/// parser ([`ArcParser::freeze`]) then holds only its table sizes, step
/// count and averaged table; 6 writes that table in half precision
/// ([`crate::learner::half_table`]). Version 4 and 5 bytes load; files of
/// earlier versions are refused.
pub const FORMAT_VERSION: u32 = 6;
/// The versions that load.
const VERSIONS: [u32; 3] = [4, 5, FORMAT_VERSION];
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
        out.push(u8::from(self.frozen));
        if self.frozen {
            let avg = self.averaged.as_ref().ok_or_else(|| {
                OmklError::invalid("parser", "a frozen parser holds no averaged table")
            })?;
            let nt = self.weights.n_groups();
            out.extend_from_slice(&(nt as u64).to_le_bytes());
            for t in 0..nt {
                out.extend_from_slice(&(self.weights.group_size(t) as u64).to_le_bytes());
            }
            out.extend_from_slice(&self.weights.steps().to_le_bytes());
            half_table::write_groups(avg, self.weights.offsets(), out);
        } else {
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
        let payload = crate::persist::open(bytes, FORMAT, &VERSIONS)?;
        let version = crate::persist::peek(bytes)?.version;
        let mut r = Reader::new(payload, "parser state");
        let p = Self::read_payload(&mut r, version)?;
        r.finish()?;
        Ok(p)
    }

    pub(super) fn read_payload(r: &mut Reader<'_>, version: u32) -> Result<Self> {
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
        let frozen = match if version >= 5 { r.u8()? } else { 0 } {
            0 => false,
            1 => true,
            f => return Err(r.error(format!("unknown frozen flag {f}"))),
        };
        if frozen {
            let count = r.count("group count", 8)?;
            let mut sizes = Vec::with_capacity(count);
            for _ in 0..count {
                let s = r.u64()?;
                if !s.is_power_of_two() || s > 1 << MAX_BITS {
                    return Err(r.error(format!("table size {s}")));
                }
                sizes.push(s as usize);
            }
            let steps = r.u64()?;
            let avg = if version >= 6 {
                let mut offsets = vec![0];
                for &s in &sizes {
                    offsets.push(offsets[offsets.len() - 1] + s);
                }
                half_table::read_groups(r, &offsets)?
            } else {
                read_averaged(r, sizes.iter().sum())?
            };
            p.set_frozen_state(&sizes, steps, avg)?;
        } else {
            Self::read_weights(r, &mut p)?;
        }
        Self::read_rest(r, &mut p, nt, version)?;
        Ok(p)
    }

    /// The training tables and the averaged table of an unfrozen parser.
    fn read_weights(r: &mut Reader<'_>, p: &mut ArcParser) -> Result<()> {
        let weights = TemplateWeights::read_from(r)?;
        let averaged = match r.u8()? {
            0 => None,
            1 => Some(read_averaged(r, weights.n_slots())?),
            f => return Err(r.error(format!("unknown averaged-table flag {f}"))),
        };
        p.set_state(weights, averaged)
    }

    /// The β trajectory and the pruner.
    fn read_rest(r: &mut Reader<'_>, p: &mut ArcParser, nt: usize, version: u32) -> Result<()> {
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
            let model = ArcParser::read_payload(&mut inner, version)?;
            inner.finish()?;
            if model.is_frozen() != p.is_frozen() {
                return Err(r.error("the pruner and the parser must both be frozen, or neither"));
            }
            p.pruner = Some(Box::new(ArcPruner::from_parts(model, k, margin)?));
        }
        Ok(())
    }
}

/// An averaged table of `n` finite weights, its size checked against the
/// bytes left before it is allocated.
fn read_averaged(r: &mut Reader<'_>, n: usize) -> Result<Vec<f32>> {
    if n.checked_mul(4).is_none_or(|b| b > r.remaining()) {
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
    Ok(avg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::arc_templates::ArcFeaturizer;
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
        assert_eq!(FORMAT_VERSION, 6);
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

    #[test]
    fn frozen_files_of_version_5_load_with_their_float32_tables() {
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.fit_epoch(&toy(), &mut |_| Ok(())).unwrap();
        p.freeze().unwrap();
        assert!(p.pruner().is_none());
        let b = p.to_bytes().unwrap();
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        let nt = p.template_ids().len();
        // hash name, seed, kind, lam, eta, decoder, template ids, frozen
        // flag, group count, group sizes, steps
        let at = 8 + HASH_NAME.len() + 8 + 1 + 8 + 8 + 1 + 8 + 8 * nt + 1 + 8 + 8 * nt + 8;
        let avg = p.averaged().unwrap();
        let half = 4 * nt + 2 * avg.len();
        let mut old = payload[..at].to_vec();
        for x in avg {
            old.extend_from_slice(&x.to_le_bytes());
        }
        old.extend_from_slice(&payload[at + half..]);
        let back = ArcParser::from_bytes(&crate::persist::seal(FORMAT, 5, &old)).unwrap();
        assert!(back.is_frozen());
        assert_eq!(back.averaged(), p.averaged());
        assert_eq!(back.to_bytes().unwrap(), b);
        // the same payload at version 6 is not a half-precision table
        assert!(ArcParser::from_bytes(&crate::persist::seal(FORMAT, 6, &old)).is_err());
    }

    /// The payload with the weights' header edited, sealed again.
    fn with_weights_edit(p: &ArcParser, edit: impl Fn(&mut Vec<u8>, usize)) -> Vec<u8> {
        let b = p.to_bytes().unwrap();
        let mut payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION])
            .unwrap()
            .to_vec();
        // hash name, seed, kind, lam, eta, decoder, template ids, frozen flag
        let at = 8 + HASH_NAME.len() + 8 + 1 + 8 + 8 + 1 + 8 + 8 * p.template_ids().len() + 1;
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

    /// A parser with a trained pruner, trained one epoch on the toy data.
    fn pruned_toy() -> (
        Vec<(crate::model::parser_input::ParserInput, Vec<usize>)>,
        ArcParser,
    ) {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.set_pruner(2).unwrap();
        p.fit_pruner_epoch(&data, &mut |_| Ok(())).unwrap();
        for (s, h) in &data {
            p.learn_one(s, h).unwrap();
        }
        p.end_epoch().unwrap();
        (data, p)
    }

    #[test]
    fn a_frozen_parser_predicts_as_before_round_trips_and_refuses_to_learn() {
        for (data, p) in [trained_toy(None), pruned_toy()] {
            let mut f = p.clone();
            f.freeze().unwrap();
            assert!(f.is_frozen() && !p.is_frozen());
            f.freeze().unwrap(); // a second freeze changes nothing
            for (s, _) in &data {
                assert_eq!(f.predict(s).unwrap(), p.predict(s).unwrap());
            }
            let b = f.to_bytes().unwrap();
            assert!(b.len() * 2 < p.to_bytes().unwrap().len());
            let back = ArcParser::from_bytes(&b).unwrap();
            assert!(back.is_frozen());
            assert_eq!(back.to_bytes().unwrap(), b);
            for (s, _) in &data {
                assert_eq!(back.predict(s).unwrap(), p.predict(s).unwrap());
            }
            let (s, h) = &data[0];
            let mut g = back.clone();
            for e in [
                g.learn_one(s, h).unwrap_err(),
                g.fit_batch(&[(s, &h[..])]).unwrap_err(),
                g.end_epoch().unwrap_err(),
                g.set_pruner(1).unwrap_err(),
                g.import_params(&p.export_params()).unwrap_err(),
            ] {
                assert!(e.to_string().contains("frozen"), "{e}");
            }
            assert_eq!(g.to_bytes().unwrap(), b);
            for cut in [0, 10, b.len() / 2, b.len() - 1] {
                assert!(ArcParser::from_bytes(&b[..cut]).is_err());
            }
        }
    }

    #[test]
    fn a_new_parser_holds_no_tables_until_it_learns() {
        let data = toy();
        let mut p = ArcParser::new(ParserConfig::default()).unwrap();
        p.set_pruner(2).unwrap();
        assert!(!p.weights().is_allocated());
        // an untrained parser saves the zero tables, and scores as they do
        let (s, h) = &data[0];
        let b = p.to_bytes().unwrap();
        let back = ArcParser::from_bytes(&b).unwrap();
        assert!(back.weights().is_allocated());
        let fz = ArcFeaturizer::new(p.templates(), &s.words);
        assert_eq!(p.arc_scores(&fz).unwrap(), back.arc_scores(&fz).unwrap());
        assert_eq!(back.to_bytes().unwrap(), b);
        assert_eq!(back.export_params(), p.export_params());
        // learning allocates them, and learns as from allocated zero tables
        let mut q = back.clone();
        p.learn_one(s, h).unwrap();
        q.learn_one(s, h).unwrap();
        assert!(p.weights().is_allocated());
        assert_eq!(p.to_bytes().unwrap(), q.to_bytes().unwrap());
        // loading a saved parser allocates no training tables it replaces
        p.freeze().unwrap();
        let f = ArcParser::from_bytes(&p.to_bytes().unwrap()).unwrap();
        assert!(!f.weights().is_allocated());
    }

    #[test]
    fn version_4_bytes_load() {
        let (data, p) = trained_toy(None);
        let b = p.to_bytes().unwrap();
        let payload = crate::persist::open(&b, FORMAT, &[FORMAT_VERSION]).unwrap();
        // version 4 has no frozen flag after the template ids
        let at = 8 + HASH_NAME.len() + 8 + 1 + 8 + 8 + 1 + 8 + 8 * p.template_ids().len();
        assert_eq!(payload[at], 0);
        let v4: Vec<u8> = [&payload[..at], &payload[at + 1..]].concat();
        let q = ArcParser::from_bytes(&crate::persist::seal(FORMAT, 4, &v4)).unwrap();
        assert_eq!(q.to_bytes().unwrap(), b);
        for (s, _) in &data {
            assert_eq!(q.predict(s).unwrap(), p.predict(s).unwrap());
        }
    }
}
