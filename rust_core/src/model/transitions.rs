//! The explicit transition group of a chain model: an `L × L` indicator
//! basis for label bigrams plus start and stop indicators; as plain weights
//! ([`Transitions`]) and as the scaled, lazily averaged group of an online
//! learner ([`LazyTransitions`]).

/// Transition, start and stop weights of a linear-chain model, laid out as
/// the decoders expect (`tr[prev * L + next]`).
///
/// # Example
/// ```
/// use omkl_core::model::transitions::Transitions;
/// let mut t = Transitions::zeros(2);
/// t.add_path(&[0, 1, 1], 1.0); // start 0, 0→1, 1→1, stop 1
/// assert_eq!(t.tr, vec![0.0, 1.0, 0.0, 1.0]);
/// assert_eq!(t.sq_norm(), 4.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Transitions {
    /// Number of labels `L`.
    pub l: usize,
    /// Bigram weights, `L × L`, row = previous label.
    pub tr: Vec<f64>,
    /// Weight of the first label.
    pub start: Vec<f64>,
    /// Weight of the last label.
    pub stop: Vec<f64>,
}

impl Transitions {
    /// All-zero weights for `l` labels.
    pub fn zeros(l: usize) -> Self {
        Transitions {
            l,
            tr: vec![0.0; l * l],
            start: vec![0.0; l],
            stop: vec![0.0; l],
        }
    }

    /// Adds `coef` times the transition features of `labels` (its start,
    /// bigrams and stop indicators). Labels must be below `L`.
    ///
    /// # Complexity
    /// O(n).
    pub fn add_path(&mut self, labels: &[usize], coef: f64) {
        let (Some(&first), Some(&last)) = (labels.first(), labels.last()) else {
            return;
        };
        self.start[first] += coef;
        self.stop[last] += coef;
        for w in labels.windows(2) {
            self.tr[w[0] * self.l + w[1]] += coef;
        }
    }

    /// `‖w‖²` over bigram, start and stop weights.
    pub fn sq_norm(&self) -> f64 {
        self.iter().map(|v| v * v).sum()
    }

    /// Multiplies every weight by `c`.
    pub fn scale(&mut self, c: f64) {
        for v in self.iter_mut() {
            *v *= c;
        }
    }

    /// `self += c · other` (same `L`).
    pub fn add_scaled(&mut self, other: &Transitions, c: f64) {
        for (a, b) in self.iter_mut().zip(other.iter()) {
            *a += c * b;
        }
    }

    fn get_mut(&mut self, i: usize) -> &mut f64 {
        let ll = self.l * self.l;
        if i < ll {
            &mut self.tr[i]
        } else if i < ll + self.l {
            &mut self.start[i - ll]
        } else {
            &mut self.stop[i - ll - self.l]
        }
    }

    fn iter(&self) -> impl Iterator<Item = &f64> {
        self.tr.iter().chain(&self.start).chain(&self.stop)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        self.tr
            .iter_mut()
            .chain(self.start.iter_mut())
            .chain(self.stop.iter_mut())
    }
}

/// Calls `f` with the flat index (order `tr`, `start`, `stop`) of every
/// transition feature of `labels`: its start, bigrams and stop.
fn path_features(l: usize, labels: &[usize], mut f: impl FnMut(usize)) {
    let (Some(&first), Some(&last)) = (labels.first(), labels.last()) else {
        return;
    };
    f(l * l + first);
    for w in labels.windows(2) {
        f(w[0] * l + w[1]);
    }
    f(l * l + l + last);
}

/// Scale factors outside `[TINY, 1/TINY]` are folded into the weights.
const TINY: f64 = 1e-4;

/// The transition group of an online learner: `θ_T = s · w` with a scale
/// `s` (so that a prox step costs O(1)), the exact squared norm, and the
/// lazy running sum of the iterates (`Σ_t θ_t = base + w P − b` with
/// `P = Σ s_t`, as in [`crate::learner::score_cache`]). Adding a path
/// costs O(n) instead of the O(L²) of summing every round's weights.
///
/// # Example
/// ```
/// use omkl_core::model::transitions::LazyTransitions;
/// let mut t = LazyTransitions::zeros(2);
/// t.add_path(&[0, 1], 1.0);
/// t.end_round();
/// t.scale_by(0.5);
/// t.end_round();
/// assert_eq!(t.current().tr, vec![0.0, 0.5, 0.0, 0.0]);
/// assert_eq!(t.sum().tr, vec![0.0, 1.5, 0.0, 0.0]);
/// assert_eq!(t.sq_norm(), 0.75);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LazyTransitions {
    w: Transitions,
    s: f64,
    q: f64,
    p: f64,
    b: Transitions,
    base: Transitions,
    eff: Transitions,
}

impl LazyTransitions {
    /// All-zero weights for `l` labels.
    pub fn zeros(l: usize) -> Self {
        let z = Transitions::zeros(l);
        LazyTransitions {
            w: z.clone(),
            s: 1.0,
            q: 0.0,
            p: 0.0,
            b: z.clone(),
            base: z.clone(),
            eff: z,
        }
    }

    /// Adds `coef` times the transition features of `labels`.
    ///
    /// # Complexity
    /// O(n).
    pub fn add_path(&mut self, labels: &[usize], coef: f64) {
        let d = coef / self.s;
        let dp = d * self.p;
        let (w, b, q) = (&mut self.w, &mut self.b, &mut self.q);
        path_features(w.l, labels, |i| {
            let wi = w.get_mut(i);
            *q += 2.0 * d * *wi + d * d;
            *wi += d;
            *b.get_mut(i) += dp;
        });
    }

    /// `‖θ_T‖²` as maintained incrementally.
    pub fn sq_norm(&self) -> f64 {
        self.s * self.s * self.q.max(0.0)
    }

    /// `θ_T ← c θ_T` for `c ≥ 0`, in O(1) (O(L²) when the scale is folded).
    pub fn scale_by(&mut self, c: f64) {
        if c == 0.0 {
            self.bank();
            self.w.scale(0.0);
            self.q = 0.0;
            self.s = 1.0;
            return;
        }
        self.s *= c;
        if !(TINY..=1.0 / TINY).contains(&self.s) {
            self.bank();
            self.w.scale(self.s);
            self.q *= self.s * self.s;
            self.s = 1.0;
        }
    }

    fn bank(&mut self) {
        self.base.add_scaled(&self.w, self.p);
        self.base.add_scaled(&self.b, -1.0);
        self.b.scale(0.0);
        self.p = 0.0;
    }

    /// Ends an online round: the current iterate enters the running sum.
    pub fn end_round(&mut self) {
        self.p += self.s;
    }

    /// The current weights `s · w`, materialised in a buffer kept for reuse.
    ///
    /// # Complexity
    /// O(L²).
    pub fn current(&mut self) -> &Transitions {
        let s = self.s;
        for (e, w) in [
            (&mut self.eff.tr, &self.w.tr),
            (&mut self.eff.start, &self.w.start),
            (&mut self.eff.stop, &self.w.stop),
        ] {
            for (e, w) in e.iter_mut().zip(w) {
                *e = s * w;
            }
        }
        &self.eff
    }

    /// The sum of the iterates over finished rounds.
    pub fn sum(&self) -> Transitions {
        let mut out = self.base.clone();
        out.add_scaled(&self.w, self.p);
        out.add_scaled(&self.b, -1.0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_transitions_track_explicit_sums() {
        let mut lazy = LazyTransitions::zeros(3);
        let mut cur = Transitions::zeros(3);
        let mut sum = Transitions::zeros(3);
        let steps: [(&[usize], f64, f64); 5] = [
            (&[0, 1, 1, 2], 0.5, 0.9),
            (&[2, 2], -0.25, 1e-5),
            (&[1], 1.0, 0.0),
            (&[1, 0, 1, 0], 0.3, 0.7),
            (&[2, 1], -0.1, 1e5),
        ];
        for (labels, coef, c) in steps {
            lazy.add_path(labels, coef);
            cur.add_path(labels, coef);
            lazy.scale_by(c);
            cur.scale(c);
            lazy.end_round();
            sum.add_scaled(&cur, 1.0);
            let now = lazy.current().clone();
            for (a, b) in now.iter().zip(cur.iter()) {
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
            }
            let exact = cur.sq_norm();
            assert!((lazy.sq_norm() - exact).abs() <= 1e-10 * exact.max(1.0));
        }
        for (a, b) in lazy.sum().iter().zip(sum.iter()) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn scale_and_add() {
        let mut a = Transitions::zeros(3);
        a.add_path(&[2], 2.0);
        assert_eq!((a.start[2], a.stop[2]), (2.0, 2.0));
        let mut b = Transitions::zeros(3);
        b.add_scaled(&a, 0.5);
        b.scale(3.0);
        assert_eq!(b.start[2], 3.0);
        assert_eq!(b.sq_norm(), 18.0);
    }
}
