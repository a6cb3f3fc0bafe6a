//! The explicit transition group of a chain model: an `L × L` indicator
//! basis for label bigrams plus start and stop indicators.

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

#[cfg(test)]
mod tests {
    use super::*;

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
