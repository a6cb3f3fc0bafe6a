//! Saving and loading a [`NamedLearner`] as deterministic bytes.
//!
//! The bytes are the envelope of [`crate::persist`] (format `omkl-alg1`,
//! checksum) around a JSON payload (floats printed so that they read back
//! exactly). Only
//! the buckets ever written are stored, group by group in the order they
//! were first written, so the size follows the model's support and equal
//! states give equal bytes. The hash name and seed are recorded, and bytes
//! saved with another hash are refused.

use serde::{Deserialize, Serialize};

use super::grouped_weights::GroupedWeights;
use super::named::NamedLearner;
use super::online_proximal::{Alg1Config, OnlineProximal};
use crate::error::{check_finite, OmklError, Result};
use crate::features::{FeatureSpace, Grouping, HASH_NAME, HASH_SEED};
use crate::persist::{check_scale, check_sq_norm};

/// Format name of the envelope.
pub const FORMAT: &str = "omkl-alg1";
/// Format version: 2 is the JSON payload inside the checksummed envelope.
pub const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
struct SavedGroup {
    name: String,
    scale: f64,
    sq: f64,
    cum: f64,
    /// Buckets ever written, with their `n_outputs` raw values each (and
    /// the averager's accumulators when averaging).
    touched: Vec<u32>,
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
}

fn bad(reason: impl Into<String>) -> OmklError {
    OmklError::invalid("state", reason)
}

/// Sizes that decide allocations, checked against what the payload holds
/// before anything is allocated: one intercept per output, and a dense
/// table of `groups × buckets × outputs` that the machine can hold.
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
    // a table that cannot be allocated is an error here, not an abort later
    let mut probe: Vec<f64> = Vec::new();
    if probe.try_reserve_exact(cells).is_err() {
        return Err(bad(format!(
            "cannot allocate the weight table of {cells} values ({} groups x {} buckets x {kk} outputs)",
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
    /// O(#groups + written coordinates).
    pub fn to_bytes(&self) -> Vec<u8> {
        let w = &self.model.weights;
        let kk = w.n_outputs;
        let groups = (0..w.n_groups())
            .map(|g| {
                let mut s = SavedGroup {
                    name: self.space.group_names()[g].clone(),
                    scale: w.scale[g],
                    sq: w.sq[g],
                    cum: w.avg.as_ref().map_or(0.0, |a| a.cum[g]),
                    touched: w.touched[g].clone(),
                    live: w.live[g].clone(),
                    raw: Vec::new(),
                    acc: Vec::new(),
                    last: Vec::new(),
                };
                for &b in &w.touched[g] {
                    let base = w.slot(g, b as usize, 0);
                    s.raw.extend_from_slice(&w.raw[base..base + kk]);
                    if let Some(a) = &w.avg {
                        s.acc.extend((base..base + kk).map(|i| a.acc(i)));
                        s.last.extend((base..base + kk).map(|i| a.last(i)));
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
        };
        let payload = serde_json::to_vec(&saved).expect("serialising plain data cannot fail");
        crate::persist::seal(FORMAT, VERSION, &payload)
    }

    /// Rebuilds a learner from [`Self::to_bytes`], validating everything.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let payload = crate::persist::open(bytes, FORMAT, &[VERSION])?;
        let s: Saved = serde_json::from_slice(payload)
            .map_err(|e| bad(format!("unreadable model bytes: {e}")))?;
        if s.format != FORMAT || s.version != VERSION {
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
        check_finite("intercept", &s.intercept)?;
        check_finite("intercept_sum", &s.intercept_sum)?;
        model.intercept = s.intercept;
        model.intercept_sum = s.intercept_sum;
        model.t = s.rounds;
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
            // 0 is a group zeroed by a prox step (cleared when next written)
            if sg.scale != 0.0 {
                check_scale(&format!("state of group {g}"), sg.scale)?;
            }
            check_sq_norm(&format!("state of group {g}"), sg.sq)?;
            if !sg.cum.is_finite() {
                return Err(bad(format!("group {g}: non-finite running sum of scales")));
            }
            check_finite("raw", &sg.raw)?;
            check_finite("acc", &sg.acc)?;
            check_finite("last", &sg.last)?;
            w.scale[g] = sg.scale;
            w.sq[g] = sg.sq.max(0.0);
            for (j, &b) in sg.touched.iter().enumerate() {
                let b = b as usize;
                if b >= w.n_buckets || w.marked[g * w.n_buckets + b] {
                    return Err(bad(format!("group {g}: bad or repeated bucket {b}")));
                }
                w.marked[g * w.n_buckets + b] = true;
                let base = w.slot(g, b, 0);
                w.raw[base..base + kk].copy_from_slice(&sg.raw[j * kk..(j + 1) * kk]);
                if let Some(a) = w.avg.as_mut() {
                    for k in 0..kk {
                        a.pairs[base + k] = [sg.acc[j * kk + k], sg.last[j * kk + k]];
                    }
                }
            }
            for &b in &sg.live {
                let b = b as usize;
                let m = g * w.n_buckets + b;
                if b >= w.n_buckets || !w.marked[m] || w.live_marked[m] {
                    return Err(bad(format!("group {g}: bad live bucket {b}")));
                }
                w.live_marked[m] = true;
            }
            w.touched[g] = sg.touched;
            w.live[g] = sg.live;
            if let Some(a) = w.avg.as_mut() {
                a.cum[g] = sg.cum;
            }
        }
        if let Some(a) = w.avg.as_mut() {
            a.rounds = model.t;
        }
        Ok(NamedLearner { space, model })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner::{Loss, Schedule, Target};
    use crate::prox::Regularizer;

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        for averaged in [false, true] {
            let config = Alg1Config {
                loss: Loss::Logistic,
                schedule: Schedule::InvSqrt { eta0: 0.7 },
                regularizers: vec![
                    Regularizer::GroupLasso { lam: 0.05 },
                    Regularizer::L1 { lam: 0.01 },
                ],
                radius: Some(10.0),
                averaged,
                fit_intercept: true,
                clip_gradient: None,
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

    fn trained() -> NamedLearner {
        let config = Alg1Config {
            loss: Loss::Hinge,
            schedule: Schedule::Constant { eta0: 0.5 },
            regularizers: vec![Regularizer::GroupLasso { lam: 0.01 }],
            radius: None,
            averaged: true,
            fit_intercept: true,
            clip_gradient: None,
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
        let bytes = m.to_bytes();
        let payload = crate::persist::open(&bytes, FORMAT, &[VERSION]).unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(payload).unwrap();
        edit(&mut v);
        crate::persist::seal(FORMAT, VERSION, &serde_json::to_vec(&v).unwrap())
    }

    #[test]
    fn impossible_states_are_refused_before_allocating() {
        let m = trained();
        type Edit = Box<dyn Fn(&mut serde_json::Value)>;
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
        for (edit, word) in cases {
            let e = NamedLearner::from_bytes(&edited(&m, edit))
                .unwrap_err()
                .to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
        assert_eq!(NamedLearner::from_bytes(&edited(&m, |_| {})).unwrap(), m);
    }
}
