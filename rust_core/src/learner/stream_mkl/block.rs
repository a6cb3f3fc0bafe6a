//! [`ScaledBlock`]: the coefficients of one group of the streaming Alg. 3,
//! stored as scale × raw vector, with its squared norm and lazy average.

use serde::{Deserialize, Serialize};

/// Scale factors outside `[TINY, 1/TINY]` are folded into the coefficients.
const TINY: f64 = 1e-4;

/// The coefficients `θ = s · a` of one group.
///
/// * The prox and projection steps multiply the whole group by a factor:
///   [`ScaledBlock::scale_by`] does it in O(1) by changing `s`.
/// * `q = ‖a‖²` in the group's own geometry (for a kernel group `aᵀKa`,
///   for an explicit group the Euclidean norm). Kernel groups update `q`
///   through [`ScaledBlock::apply_norm_change`] (the §3.4 identity), explicit
///   groups entry by entry in [`ScaledBlock::add_orthonormal`].
/// * The average `Σ_τ θ_τ` over finished rounds is kept lazily as in the
///   batch trainer: with `P = Σ_τ s_τ` and `b += d P` for every raw change
///   `d`, the running sum is `base + a P − b`.
///
/// # Example
/// ```
/// use omkl_core::learner::stream_mkl::ScaledBlock;
/// let mut b = ScaledBlock::zeros(2);
/// b.add_orthonormal(0, 3.0);
/// b.add_orthonormal(1, 4.0);
/// assert_eq!(b.sq_norm(), 25.0);
/// b.scale_by(0.5);
/// assert_eq!(b.get(1), 2.0);
/// b.end_round();
/// assert_eq!(b.average_sum(1), 2.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaledBlock {
    s: f64,
    a: Vec<f64>,
    q: f64,
    p: f64,
    b: Vec<f64>,
    base: Vec<f64>,
}

impl ScaledBlock {
    /// A zero block of `len` coefficients.
    pub fn zeros(len: usize) -> Self {
        ScaledBlock {
            s: 1.0,
            a: vec![0.0; len],
            q: 0.0,
            p: 0.0,
            b: vec![0.0; len],
            base: vec![0.0; len],
        }
    }

    /// Number of coefficients.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// `true` when the block has no coefficient.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// The scale `s`.
    #[inline]
    pub fn scale(&self) -> f64 {
        self.s
    }

    /// The raw coefficients `a` (`θ = s · a`).
    #[inline]
    pub fn raw(&self) -> &[f64] {
        &self.a
    }

    /// Coefficient `i` of `θ`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.s * self.a[i]
    }

    /// Coefficient `i` of the running sum `Σ_τ θ_τ` over finished rounds.
    #[inline]
    pub fn average_sum(&self, i: usize) -> f64 {
        self.base[i] + self.a[i] * self.p - self.b[i]
    }

    /// `‖θ‖²` as maintained.
    pub fn sq_norm(&self) -> f64 {
        self.s * self.s * self.q.max(0.0)
    }

    /// The maintained raw squared norm `q` (`‖θ‖² = s² q`).
    pub fn raw_sq_norm(&self) -> f64 {
        self.q
    }

    /// Adds `delta` to coefficient `i` of `θ` without touching the norm
    /// (kernel groups account for the norm change with
    /// [`ScaledBlock::apply_norm_change`]).
    #[inline]
    pub fn add(&mut self, i: usize, delta: f64) {
        let d = delta / self.s;
        self.a[i] += d;
        self.b[i] += d * self.p;
    }

    /// Adds `d` to raw coefficient `i` (`θ_i` changes by `s · d`), without
    /// touching the norm: for a caller that divides a change by the scale
    /// once and applies it to many coefficients.
    #[inline]
    pub fn add_raw(&mut self, i: usize, d: f64) {
        self.a[i] += d;
        self.b[i] += d * self.p;
    }

    /// Adds `d · v_f` to raw coefficient `f · stride + offset` for every
    /// non-zero feature `(f, v_f)` of a sparse row: one column of a
    /// feature-major weight matrix (see [`ScaledBlock::add_raw`]).
    #[inline]
    pub fn add_raw_sparse(
        &mut self,
        offset: usize,
        stride: usize,
        idx: &[u32],
        val: &[f64],
        d: f64,
    ) {
        let dp = d * self.p;
        for (&f, &v) in idx.iter().zip(val) {
            let i = f as usize * stride + offset;
            self.a[i] += d * v;
            self.b[i] += dp * v;
        }
    }

    /// Adds `delta` to coefficient `i` of `θ` when the coordinates are
    /// orthonormal (explicit features, transitions): `‖θ‖²` changes by
    /// `2 θ_i δ + δ²`.
    #[inline]
    pub fn add_orthonormal(&mut self, i: usize, delta: f64) {
        let d = delta / self.s;
        self.q += 2.0 * self.a[i] * d + d * d;
        self.a[i] += d;
        self.b[i] += d * self.p;
    }

    /// Records a change `Δ` of `θ` made through [`ScaledBlock::add`]:
    /// `‖θ + Δ‖² = ‖θ‖² + 2⟨θ, Δ⟩ + ‖Δ‖²`, with `ip = ⟨θ, Δ⟩` and
    /// `dd = ‖Δ‖²` in the units of `θ`.
    pub fn apply_norm_change(&mut self, ip: f64, dd: f64) {
        self.q += (2.0 * ip + dd) / (self.s * self.s);
    }

    /// Sets `‖θ‖²` (used after recomputing it exactly).
    pub fn set_sq_norm(&mut self, sq: f64) {
        self.q = sq / (self.s * self.s);
    }

    /// Multiplies `θ` by `c ≥ 0`. Returns `Some(f)` when the raw
    /// coefficients were multiplied by `f` (the scale folded into them, or
    /// `f = 0` when the block was zeroed), so that an owner of quantities
    /// linear in the raw coefficients (a score cache) can follow.
    ///
    /// # Complexity
    /// O(1), or O(len) when the block is zeroed or the scale leaves
    /// `[1e-4, 1e4]` (then it is folded into the coefficients).
    pub fn scale_by(&mut self, c: f64) -> Option<f64> {
        if c == 0.0 {
            self.bank();
            self.a.fill(0.0);
            self.q = 0.0;
            self.s = 1.0;
            return Some(0.0);
        }
        self.s *= c;
        if !(TINY..=1.0 / TINY).contains(&self.s) {
            self.bank();
            let s = self.s;
            self.a.iter_mut().for_each(|v| *v *= s);
            self.q *= s * s;
            self.s = 1.0;
            return Some(s);
        }
        None
    }

    fn bank(&mut self) {
        let p = self.p;
        for ((base, b), a) in self.base.iter_mut().zip(self.b.iter_mut()).zip(&self.a) {
            *base += a * p - *b;
            *b = 0.0;
        }
        self.p = 0.0;
    }

    /// Ends a round: the current `θ` enters the running sum.
    #[inline]
    pub fn end_round(&mut self) {
        self.p += self.s;
    }

    /// Removes row `j` (coefficients `j·stride .. (j+1)·stride`) by moving
    /// the last row into its place.
    ///
    /// # Complexity
    /// O(stride).
    pub fn swap_remove_row(&mut self, j: usize, stride: usize) {
        for v in [&mut self.a, &mut self.b, &mut self.base] {
            let last = v.len() / stride - 1;
            if j != last {
                let (head, tail) = v.split_at_mut(last * stride);
                head[j * stride..(j + 1) * stride].copy_from_slice(&tail[..stride]);
            }
            v.truncate(last * stride);
        }
    }

    /// Appends `n` zero coefficients.
    pub fn push_zeros(&mut self, n: usize) {
        for v in [&mut self.a, &mut self.b, &mut self.base] {
            v.resize(v.len() + n, 0.0);
        }
    }

    /// Pads every row of `old` coefficients to `new ≥ old` with zeros.
    ///
    /// # Complexity
    /// O(len).
    pub fn widen_rows(&mut self, old: usize, new: usize) {
        if old == new {
            return;
        }
        for v in [&mut self.a, &mut self.b, &mut self.base] {
            let rows = v.len() / old.max(1);
            let mut w = vec![0.0; rows * new];
            for (dst, src) in w.chunks_exact_mut(new).zip(v.chunks_exact(old)) {
                dst[..old].copy_from_slice(src);
            }
            *v = w;
        }
    }

    /// Inserts `count` zero coefficients before position `at`.
    pub fn insert_zeros(&mut self, at: usize, count: usize) {
        for v in [&mut self.a, &mut self.b, &mut self.base] {
            v.splice(at..at, std::iter::repeat_n(0.0, count));
        }
    }

    /// `true` when the three coefficient vectors have the same length and
    /// every number is finite, with `s > 0` (a check of loaded bytes).
    pub fn is_consistent(&self) -> bool {
        let n = self.a.len();
        self.b.len() == n
            && self.base.len() == n
            && self.s.is_finite()
            && self.s > 0.0
            && self.q.is_finite()
            && self.p.is_finite()
            && self
                .a
                .iter()
                .chain(&self.b)
                .chain(&self.base)
                .all(|v| v.is_finite())
    }

    /// Approximate heap bytes.
    pub fn nbytes(&self) -> usize {
        (self.a.capacity() + self.b.capacity() + self.base.capacity()) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_average_matches_explicit_sum() {
        let mut b = ScaledBlock::zeros(3);
        let mut sum = [0.0; 3];
        let mut theta = [0.0; 3];
        for t in 0..50 {
            let i = t % 3;
            b.add_orthonormal(i, 1.0 + t as f64);
            theta[i] += 1.0 + t as f64;
            let c = if t % 7 == 0 { 1e-3 } else { 0.9 };
            b.scale_by(c);
            theta.iter_mut().for_each(|v| *v *= c);
            b.end_round();
            for (s, v) in sum.iter_mut().zip(&theta) {
                *s += v;
            }
            for i in 0..3 {
                assert!((b.get(i) - theta[i]).abs() <= 1e-9 * theta[i].abs().max(1.0));
                assert!((b.average_sum(i) - sum[i]).abs() <= 1e-9 * sum[i].abs().max(1.0));
            }
            let sq: f64 = theta.iter().map(|v| v * v).sum();
            assert!((b.sq_norm() - sq).abs() <= 1e-9 * sq.max(1.0));
        }
    }

    #[test]
    fn row_edits() {
        let mut b = ScaledBlock::zeros(0);
        b.push_zeros(6);
        for i in 0..6 {
            b.add(i, i as f64);
        }
        b.swap_remove_row(0, 2);
        assert_eq!(b.raw(), &[4.0, 5.0, 2.0, 3.0]);
        b.widen_rows(2, 3);
        assert_eq!(b.raw(), &[4.0, 5.0, 0.0, 2.0, 3.0, 0.0]);
        b.insert_zeros(3, 1);
        assert_eq!(b.raw(), &[4.0, 5.0, 0.0, 0.0, 2.0, 3.0, 0.0]);
    }
}
