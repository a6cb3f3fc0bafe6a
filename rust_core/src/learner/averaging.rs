//! Lazy averaging of scaled weights.
//!
//! The averaged model of Alg. 1 is `w̄_T = (1/T) Σ_{t=1..T} w_t`. Each group
//! `g` is stored as `w_g = s_g · v_g` and the scale `s_g` may change every
//! round, but a raw coordinate `v_i` changes only when an example touches it.
//! So we keep, per group, the cumulative scale `S_g(t) = Σ_{τ≤t} s_g(τ)`
//! (O(#groups) per round), and per coordinate an accumulator `a_i` and the
//! value `ℓ_i` of `S_g` at its last change. Just before `v_i` changes in
//! round `t`, [`Averager::flush`] adds `v_i (S_g(t−1) − ℓ_i)` to `a_i` and
//! sets `ℓ_i = S_g(t−1)`. Then at any time
//! `T w̄_{T,i} = a_i + v_i (S_g(T) − ℓ_i)`, available in O(1).
//!
//! Layout: `a_i` and `ℓ_i` sit side by side (`pairs[i] = [a_i, ℓ_i]`), so a
//! flush touches one cache line instead of two.

use serde::{Deserialize, Serialize};

/// Accumulators of the lazy average (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Averager {
    /// `[a_i, ℓ_i]`, one pair per raw coordinate.
    pub pairs: Vec<[f64; 2]>,
    /// `S_g`, one per group.
    pub cum: Vec<f64>,
    /// Number of completed rounds `T`.
    pub rounds: u64,
}

impl Averager {
    /// Closes the interval of coordinate `i` of group `g` whose raw value
    /// is `v` (call before changing it).
    ///
    /// # Complexity
    /// O(1).
    #[inline]
    pub fn flush(&mut self, i: usize, g: usize, v: f64) {
        let s = self.cum[g];
        let p = &mut self.pairs[i];
        p[0] += v * (s - p[1]);
        p[1] = s;
    }

    /// `T w̄_i` for coordinate `i` of group `g` with raw value `v`.
    #[inline]
    pub fn total(&self, i: usize, g: usize, v: f64) -> f64 {
        let [a, l] = self.pairs[i];
        a + v * (self.cum[g] - l)
    }

    /// The accumulator `a_i`.
    #[inline]
    pub fn acc(&self, i: usize) -> f64 {
        self.pairs[i][0]
    }

    /// The last cumulative scale `ℓ_i`.
    #[inline]
    pub fn last(&self, i: usize) -> f64 {
        self.pairs[i][1]
    }

    /// Ends a round whose final group scales are `scales`.
    ///
    /// # Complexity
    /// O(#groups).
    pub fn end_round(&mut self, scales: &[f64]) {
        for (c, s) in self.cum.iter_mut().zip(scales) {
            *c += s;
        }
        self.rounds += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One group, one coordinate: the lazy average equals the explicit
    /// running average of `s_t · v_t`.
    #[test]
    fn lazy_equals_explicit_for_one_coordinate() {
        let mut a = Averager {
            pairs: vec![[0.0; 2]],
            cum: vec![0.0],
            rounds: 0,
        };
        let mut v = 0.0;
        let mut explicit = 0.0;
        for t in 1..=40u64 {
            if t % 3 == 1 {
                a.flush(0, 0, v);
                v += (t as f64).sin();
            }
            let s = 1.0 / (1.0 + 0.1 * t as f64);
            a.end_round(&[s]);
            explicit += s * v;
            let lazy = a.total(0, 0, v) / a.rounds as f64;
            assert!((lazy - explicit / t as f64).abs() < 1e-12);
        }
    }
}
