//! Saving and loading a [`NamedLearner`] as deterministic bytes.
//!
//! The bytes are the envelope of [`crate::persist`] (format `omkl-alg1`,
//! checksum) around a JSON payload (floats printed so that they read back
//! exactly). Only the buckets holding a non-zero weight or averaging sum
//! are stored, group by group in increasing order, so the size follows the
//! model's support and equal states give equal bytes. The hash name and seed are recorded, and bytes
//! saved with another hash are refused.

use serde::{Deserialize, Serialize};

use super::grouped_weights::GroupedWeights;
use super::named::NamedLearner;
use super::online_proximal::{Alg1Config, OnlineProximal};
use super::structure::Structure;
use crate::error::{check_finite, OmklError, Result};
use crate::features::{FeatureSpace, Grouping, HASH_NAME, HASH_SEED};
use crate::persist::{check_scale, check_sq_norm};

/// Format name of the envelope.
pub const FORMAT: &str = "omkl-alg1";
/// Format version: 2 is the JSON payload inside the checksummed envelope;
/// 3 adds the output structure (a chain's transitions are one more group).
/// Version 2 bytes load as multiclass learners.
pub const VERSION: u32 = 3;
/// Versions that load.
const VERSIONS: [u32; 2] = [2, 3];

/// One group's block `θ = scale · raw`. Its running sum `Σ_τ θ_τ` is, per
/// coordinate, `acc + raw · (cum − last)` (this version writes `last = 0`,
/// `acc = −b` of the block); a scale of 0 marks a group set to zero whose
/// raw values are stale.
#[derive(Serialize, Deserialize)]
struct SavedGroup {
    name: String,
    scale: f64,
    sq: f64,
    cum: f64,
    /// Buckets holding a value, with their `n_outputs` raw values each
    /// (and the averaging accumulators when averaging).
    touched: Vec<u32>,
    /// Buckets written since the group was last zero.
    live: Vec<u32>,
    raw: Vec<f64>,
    acc: Vec<f64>,
    last: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
struct Saved {
    format: String,
    version: u32,
    hash: String,
    seed: u64,
    grouping: Grouping,
    n_buckets: usize,
    n_outputs: usize,
    config: Alg1Config,
    rounds: u64,
    intercept: Vec<f64>,
    intercept_sum: Vec<f64>,
    groups: Vec<SavedGroup>,
    #[serde(default)]
    structure: Structure,
    /// The round the step-size schedule counts from (0 before restarts).
    #[serde(default)]
    schedule_start: u64,
}

fn bad(reason: impl Into<String>) -> OmklError {
    OmklError::invalid("state", reason)
}

/// Sizes that decide allocations, checked against what the payload holds
/// before anything is allocated: one intercept per output, a dense view of
/// `groups × buckets × outputs` values that can be addressed, and the
/// slots of `groups × buckets` that the machine can hold.
fn check_sizes(s: &Saved) -> Result<()> {
    let kk = s.n_outputs;
    if kk == 0 || s.intercept.len() != kk || s.intercept_sum.len() != kk {
        return Err(bad(format!(
            "n_outputs is {kk} but the state holds {} intercepts and {} intercept sums",
            s.intercept.len(),
            s.intercept_sum.len()
        )));
    }
    crate::features::hashing::check_n_buckets(s.n_buckets)?;
    let cells = s
        .groups
        .len()
        .checked_mul(s.n_buckets)
        .and_then(|c| c.checked_mul(kk))
        .filter(|&c| c <= isize::MAX as usize / 16);
    let Some(cells) = cells else {
        return Err(bad(format!(
            "{} groups x {} buckets x {kk} outputs do not fit in memory",
            s.groups.len(),
            s.n_buckets
        )));
    };
    // slots that cannot be allocated are an error here, not an abort later
    let slots = s.groups.len() * s.n_buckets;
    let mut probe: Vec<u32> = Vec::new();
    if probe.try_reserve_exact(slots).is_err() {
        return Err(bad(format!(
            "cannot allocate the slots of {cells} weights ({} groups x {} buckets x {kk} outputs)",
            s.groups.len(),
            s.n_buckets
        )));
    }
    Ok(())
}

impl NamedLearner {
    /// The learner as bytes (see the module docs).
    ///
    /// # Complexity
    /// O(#groups · n_buckets + written coordinates) (every bucket's slot
    /// is read, every row is checked for a value).
    pub fn to_bytes(&self) -> Vec<u8> {
        let w = &self.model.weights;
        let kk = w.n_outputs;
        let groups = w
            .blocks()
            .iter()
            .enumerate()
            .map(|(g, blk)| {
                let (b, p) = blk.average_parts();
                let a = blk.raw();
                let nz = |v: &[f64], r: usize| {
                    v.get(r * kk..(r + 1) * kk)
                        .is_some_and(|x| x.iter().any(|&x| x != 0.0))
                };
                let bucket_of = blk.row_buckets();
                // a row written to and cancelled out (e.g. +x and -x in one
                // round) is listed but holds no value: it is not saved
                let live = match blk.live_rows() {
                    Some(l) => l
                        .iter()
                        .map(|&r| r as usize)
                        .filter(|&r| nz(a, r) || nz(b, r))
                        .map(|r| bucket_of[r])
                        .collect(),
                    None => blk
                        .rows_by_bucket()
                        .filter(|&(_, r)| nz(a, r))
                        .map(|(bucket, _)| bucket as u32)
                        .collect(),
                };
                let mut s = SavedGroup {
                    name: self.space.group_names()[g].clone(),
                    scale: blk.scale(),
                    sq: blk.raw_sq_norm(),
                    cum: p,
                    touched: Vec::new(),
                    live,
                    raw: Vec::new(),
                    acc: Vec::new(),
                    last: Vec::new(),
                };
                for (bucket, r) in blk.rows_by_bucket() {
                    if nz(a, r) || nz(b, r) {
                        s.touched.push(bucket as u32);
                        s.raw.extend_from_slice(&a[r * kk..(r + 1) * kk]);
                        if !b.is_empty() {
                            s.acc.extend(b[r * kk..(r + 1) * kk].iter().map(|v| -v));
                            s.last.extend(std::iter::repeat_n(0.0, kk));
                        }
                    }
                }
                s
            })
            .collect();
        let saved = Saved {
            format: FORMAT.into(),
            version: VERSION,
            hash: HASH_NAME.into(),
            seed: HASH_SEED,
            grouping: self.space.grouping().clone(),
            n_buckets: w.n_buckets,
            n_outputs: kk,
            config: self.model.config.clone(),
            rounds: self.model.t,
            intercept: self.model.intercept.clone(),
            intercept_sum: self.model.intercept_sum.clone(),
            groups,
            structure: self.model.structure,
            schedule_start: self.model.schedule_start,
        };
        let payload = serde_json::to_vec(&saved).expect("serialising plain data cannot fail");
        crate::persist::seal(FORMAT, VERSION, &payload)
    }

    /// Rebuilds a learner from [`Self::to_bytes`], validating everything.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &VERSIONS)?;
        let s: Saved = serde_json::from_slice(payload)
            .map_err(|e| bad(format!("unreadable model bytes: {e}")))?;
        if s.format != FORMAT || !VERSIONS.contains(&s.version) {
            return Err(bad(format!(
                "expected format {FORMAT} version {VERSION}, got {} version {}",
                s.format, s.version
            )));
        }
        if s.hash != HASH_NAME || s.seed != HASH_SEED {
            return Err(bad(format!(
                "the model was saved with hash {} seed {}, but this version uses {HASH_NAME} seed {HASH_SEED}",
                s.hash, s.seed
            )));
        }
        check_sizes(&s)?;
        let names = s.groups.iter().map(|g| g.name.clone()).collect();
        let space = FeatureSpace::with_groups(s.grouping, s.n_buckets, names)?;
        let ng = s.groups.len();
        let mut model = OnlineProximal::new(s.config, ng, s.n_buckets, s.n_outputs.max(1))?;
        let kk = s.n_outputs;
        if kk != model.n_outputs() {
            return Err(bad("inconsistent number of outputs"));
        }
        if let Structure::Chain { transitions } = s.structure {
            let named = space.group_names().get(transitions as usize);
            if named.map(String::as_str) != Some(super::chain::TRANSITIONS)
                || !model.config.loss.is_multiclass()
            {
                return Err(bad(format!(
                    "group {transitions} is not the transition group of a chain"
                )));
            }
            model.structure = s.structure;
            model.check_labels_fit(kk)?;
        }
        check_finite("intercept", &s.intercept)?;
        check_finite("intercept_sum", &s.intercept_sum)?;
        model.intercept = s.intercept;
        model.intercept_sum = s.intercept_sum;
        if s.schedule_start > s.rounds {
            return Err(bad(format!(
                "schedule_start {} is after the last round {}",
                s.schedule_start, s.rounds
            )));
        }
        model.t = s.rounds;
        model.schedule_start = s.schedule_start;
        let averaged = model.config.averaged;
        let w: &mut GroupedWeights = &mut model.weights;
        for (g, sg) in s.groups.into_iter().enumerate() {
            let n = sg.touched.len() * kk;
            let avg_len = if averaged { n } else { 0 };
            if sg.raw.len() != n || sg.acc.len() != avg_len || sg.last.len() != avg_len {
                return Err(bad(format!(
                    "group {g}: value arrays do not match its buckets"
                )));
            }
            let what = format!("state of group {g}");
            // 0 is a group zeroed by a prox step (its raw values are stale)
            if sg.scale != 0.0 {
                check_scale(&what, sg.scale)?;
            }
            check_sq_norm(&what, sg.sq)?;
            if !sg.cum.is_finite() {
                return Err(bad(format!("group {g}: non-finite running sum of scales")));
            }
            check_finite("raw", &sg.raw)?;
            check_finite("acc", &sg.acc)?;
            check_finite("last", &sg.last)?;
            let in_range = |l: &[u32]| {
                let mut v = l.to_vec();
                v.sort_unstable();
                v.dedup();
                (v.len() == l.len() && v.last().is_none_or(|&b| (b as usize) < w.n_buckets))
                    .then_some(v)
            };
            let Some(touched) = in_range(&sg.touched) else {
                return Err(bad(format!("group {g}: bad or repeated bucket")));
            };
            let Some(live_sorted) =
                in_range(&sg.live).filter(|l| l.iter().all(|b| touched.binary_search(b).is_ok()))
            else {
                return Err(bad(format!("group {g}: bad live bucket")));
            };
            // a weight outside the live list would survive zeroing (a group
            // zeroed with scale 0 clears every bucket it holds)
            let live = if sg.scale == 0.0 {
                sg.touched.clone()
            } else {
                for (j, b) in sg.touched.iter().enumerate() {
                    let nz = sg.raw[j * kk..(j + 1) * kk].iter().any(|&v| v != 0.0);
                    if nz && live_sorted.binary_search(b).is_err() {
                        return Err(bad(format!(
                            "group {g}: bucket {b} is not in the live list"
                        )));
                    }
                }
                sg.live
            };
            let b: Vec<f64> = (0..avg_len)
                .map(|i| sg.raw[i] * sg.last[i] - sg.acc[i])
                .collect();
            let blk = &mut w.blocks[g];
            let s = if sg.scale == 0.0 { 1.0 } else { sg.scale };
            blk.restore_buckets(
                (s, sg.sq.max(0.0), sg.cum),
                &sg.touched,
                &sg.raw,
                &b,
                Some(&live),
                &what,
            )?;
            if sg.scale == 0.0 {
                // the stale values enter the running sum and leave θ
                blk.scale_by(0.0);
            }
        }
        w.rounds = if averaged { model.t } else { 0 };
        Ok(NamedLearner { space, model })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::{Loss, Schedule, Target};
    use crate::persist::edits::{assert_refused, Edit};
    use crate::prox::Regularizer;

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        for averaged in [false, true] {
            let regularizers = vec![
                Regularizer::GroupLasso { lam: 0.05 },
                Regularizer::L1 { lam: 0.01 },
            ];
            let config = Alg1Config {
                radius: Some(10.0),
                averaged,
                ..Alg1Config::new(
                    Loss::Logistic,
                    Schedule::InvSqrt { eta0: 0.7 },
                    regularizers,
                )
            };
            let mut m = NamedLearner::new(config, Grouping::by_prefix("_"), 16).unwrap();
            for i in 0..50 {
                let names = [
                    format!("a_{}", i % 7),
                    format!("b_{}", i % 3),
                    "c".to_string(),
                ];
                let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                m.learn(&names, &[1.0, (i as f64).sin(), 0.5], Target::Class(i % 3))
                    .unwrap();
            }
            let bytes = m.to_bytes();
            let back = NamedLearner::from_bytes(&bytes).unwrap();
            assert_eq!(back, m);
            assert_eq!(back.to_bytes(), bytes);
            assert!(NamedLearner::from_bytes(&bytes[..bytes.len() - 3]).is_err());
            let payload = crate::persist::open(&bytes, FORMAT, &[VERSION]).unwrap();
            let other = String::from_utf8(payload.to_vec())
                .unwrap()
                .replace("xxh3-64", "murmur3");
            let other = crate::persist::seal(FORMAT, VERSION, other.as_bytes());
            assert!(NamedLearner::from_bytes(&other)
                .unwrap_err()
                .to_string()
                .contains("hash"));
        }
    }

    /// A learner saved and loaded mid-training goes on exactly as the one
    /// that was not (the loaded rows are laid out in bucket order, the
    /// written-row lists are kept or given up as they were).
    #[test]
    fn a_loaded_learner_goes_on_as_the_original() {
        for n_buckets in [8, 4096] {
            let config = Alg1Config {
                averaged: true,
                ..Alg1Config::new(
                    Loss::Hinge,
                    Schedule::InvSqrt { eta0: 0.5 },
                    vec![
                        Regularizer::GroupLasso { lam: 0.02 },
                        Regularizer::L1 { lam: 0.001 },
                    ],
                )
            };
            let mut a = NamedLearner::new(config, Grouping::by_prefix("_"), n_buckets).unwrap();
            let rounds = |m: &mut NamedLearner, r: std::ops::Range<usize>| {
                for i in r {
                    let names = [format!("a_{}", (i * 7) % 23), format!("b_{}", i % 5)];
                    let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                    m.learn(&names, &[1.0, 0.5], Target::Class(i % 3)).unwrap();
                }
            };
            rounds(&mut a, 0..30);
            let mut b = NamedLearner::from_bytes(&a.to_bytes()).unwrap();
            rounds(&mut a, 30..60);
            rounds(&mut b, 30..60);
            assert_eq!(b.to_bytes(), a.to_bytes());
        }
    }

    fn trained() -> NamedLearner {
        let regularizers = vec![Regularizer::GroupLasso { lam: 0.01 }];
        let config = Alg1Config {
            averaged: true,
            ..Alg1Config::new(Loss::Hinge, Schedule::Constant { eta0: 0.5 }, regularizers)
        };
        let mut m = NamedLearner::new(config, Grouping::by_prefix("_"), 8).unwrap();
        for i in 0..20 {
            let names = [format!("a_{}", i % 5), format!("b_{}", i % 2)];
            let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            m.learn(&names, &[1.0, 1.0], Target::Class(i % 2)).unwrap();
        }
        m
    }

    /// The saved state edited as JSON and sealed again.
    fn edited(m: &NamedLearner, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
        crate::persist::edits::edited(&m.to_bytes(), FORMAT, VERSION, None, &edit)
    }

    #[test]
    fn impossible_states_are_refused_before_allocating() {
        let m = trained();
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|v| v["groups"][0]["scale"] = (-0.5).into()),
                "scale",
            ),
            (
                Box::new(|v| v["groups"][0]["scale"] = (-1.0).into()),
                "scale",
            ),
            (
                Box::new(|v| v["groups"][1]["sq"] = (-1.0).into()),
                "squared norm",
            ),
            (
                Box::new(|v| v["n_outputs"] = 1_000_000_000_000u64.into()),
                "n_outputs",
            ),
            (Box::new(|v| v["n_buckets"] = 0.into()), "n_buckets"),
            (
                Box::new(|v| {
                    let t = v["groups"][0]["touched"].clone();
                    v["groups"][0]["touched"][1] = t[0].clone();
                }),
                "repeated bucket",
            ),
        ];
        assert_refused(&m, cases, |edit| {
            NamedLearner::from_bytes(&edited(&m, edit))
        });
    }

    /// Version 2 bytes (no structure) load as the same multiclass learner.
    #[test]
    fn version_2_bytes_load() {
        let m = trained();
        let bytes = m.to_bytes();
        let payload = crate::persist::open(&bytes, FORMAT, &[VERSION]).unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(payload).unwrap();
        v.as_object_mut().unwrap().remove("structure");
        v["version"] = 2.into();
        let old = crate::persist::seal(FORMAT, 2, &serde_json::to_vec(&v).unwrap());
        assert_eq!(NamedLearner::from_bytes(&old).unwrap(), m);
    }

    /// Bytes as earlier versions wrote them (a group zeroed with scale 0,
    /// accumulators with `last ≠ 0`) load to the same running sums.
    #[test]
    fn zeroed_groups_and_shifted_accumulators_load_to_the_same_averages() {
        let m = trained();
        let w = m.model().weights();
        let (avg, per) = (w.averaged_dense(), w.n_buckets() * w.n_outputs());
        let data = edited(&m, |v| {
            let g = &mut v["groups"][0];
            g["scale"] = 0.0.into();
            let n = g["raw"].as_array().unwrap().len();
            assert!((0..n).any(|i| g["raw"][i].as_f64() != Some(0.0)));
            for i in 0..n {
                let (raw, acc) = (g["raw"][i].as_f64().unwrap(), g["acc"][i].as_f64().unwrap());
                g["last"][i] = 0.75.into();
                g["acc"][i] = (acc + raw * 0.75).into();
            }
        });
        let back = NamedLearner::from_bytes(&data).unwrap();
        let w = back.model().weights();
        assert!(w.dense()[..per].iter().all(|&v| v == 0.0));
        for (a, b) in w.averaged_dense().iter().zip(&avg) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
}
