//! The row layout of a [`ScaledBlock`] (rows of `width` coefficients, one
//! per support input or feature, each holding the outputs): removing,
//! appending and re-laying out rows, and restoring checked saved
//! rows.

use std::mem::size_of;

use super::{zeroed, Real, ScaledBlock};
use crate::error::alloc_len;

impl<T: Real> ScaledBlock<T> {
    /// Removes row `j` (coefficients `j·stride .. (j+1)·stride`) by moving
    /// the last row into its place.
    ///
    /// # Complexity
    /// O(stride).
    pub fn swap_remove_row(&mut self, j: usize, stride: usize) {
        for v in [&mut self.a, &mut self.b] {
            if v.is_empty() {
                continue;
            }
            let last = v.len() / stride - 1;
            if j != last {
                let (head, tail) = v.split_at_mut(last * stride);
                head[j * stride..(j + 1) * stride].copy_from_slice(&tail[..stride]);
            }
            v.truncate(last * stride);
        }
    }

    /// Reserves room for `n` more coefficients (and their averaging sums),
    /// so that [`ScaledBlock::push_zeros`] of `n` does not allocate; fails
    /// with [`crate::OmklError::Alloc`] naming `what`, nothing changed.
    pub fn try_reserve_zeros(&mut self, n: usize, what: &str) -> crate::Result<()> {
        let avg = self.b.len() == self.a.len();
        let fail = |_| crate::OmklError::Alloc {
            what: what.to_string(),
            bytes: (n as u128) * size_of::<T>() as u128,
        };
        self.a.try_reserve(n).map_err(fail)?;
        if avg {
            self.b.try_reserve(n).map_err(fail)?;
        }
        Ok(())
    }

    /// Appends `n` zero coefficients.
    pub fn push_zeros(&mut self, n: usize) {
        let avg = self.b.len() == self.a.len();
        self.a.resize(self.a.len() + n, T::default());
        if avg {
            self.b.resize(self.a.len(), T::default());
        }
    }

    /// The raw coefficients and averaging sums with every row of `old`
    /// coefficients padded to `new ≥ old` with zeros, or cut to `new < old`,
    /// for [`ScaledBlock::set_rows`]; [`crate::OmklError::Alloc`] when the
    /// memory cannot be had.
    ///
    /// # Complexity
    /// O(len).
    pub fn relaid_rows(&self, old: usize, new: usize) -> crate::Result<[Vec<T>; 2]> {
        let rows = self.a.len() / old.max(1);
        let relayout = |v: &Vec<T>| -> crate::Result<Vec<T>> {
            if v.is_empty() {
                return Ok(Vec::new());
            }
            let mut w = zeroed(
                alloc_len("n_outputs", &[rows, new], size_of::<T>())?,
                "n_outputs",
            )?;
            let keep = old.min(new);
            for (dst, src) in w.chunks_exact_mut(new).zip(v.chunks_exact(old)) {
                // zero rows stay unwritten, so untouched pages stay unmapped
                if src.iter().any(|v| *v != T::default()) {
                    dst[..keep].copy_from_slice(&src[..keep]);
                }
            }
            Ok(w)
        };
        Ok([relayout(&self.a)?, relayout(&self.b)?])
    }

    /// Installs coefficients from [`ScaledBlock::relaid_rows`] with rows of
    /// `new` coefficients (a caller that cut rows accounts for the norm).
    pub fn set_rows(&mut self, [a, b]: [Vec<T>; 2], new: usize) {
        (self.a, self.b) = (a, b);
        if self.width > 0 {
            self.width = new;
        }
    }

    /// `true` when the coefficient vectors have consistent lengths and
    /// every number is finite, with `s > 0` (a check of loaded bytes).
    pub fn is_consistent(&self) -> bool {
        (self.b.is_empty() || self.b.len() == self.a.len())
            && self.s.is_finite()
            && self.s > 0.0
            && self.q.is_finite()
            && self.p.is_finite()
            && self.a.iter().chain(&self.b).all(|v| v.to_f64().is_finite())
    }

    /// Sets a tracked block from checked saved parts: `(s, q, P)`, the raw
    /// values and averaging sums of `rows` (`width` each), the row list.
    pub fn restore(
        &mut self,
        (s, q, p): (f64, f64, f64),
        rows: &[u32],
        a: &[T],
        b: &[T],
        live: Option<Vec<u32>>,
    ) {
        let w = self.width();
        for (j, &r) in rows.iter().enumerate() {
            let r = r as usize * w;
            self.a[r..r + w].copy_from_slice(&a[j * w..(j + 1) * w]);
            if !self.b.is_empty() && !b.is_empty() {
                self.b[r..r + w].copy_from_slice(&b[j * w..(j + 1) * w]);
            }
        }
        (self.s, self.q, self.p) = (s, q, p);
        self.marks.fill(0);
        if let Some(list) = &live {
            for &r in list {
                self.marks[r as usize / 64] |= 1 << (r % 64);
            }
        }
        self.live = live;
    }

    /// The raw coefficients and the averaging sums, to be filled with
    /// checked saved values.
    pub fn parts_mut(&mut self) -> (&mut [T], &mut [T]) {
        (&mut self.a, &mut self.b)
    }
}
