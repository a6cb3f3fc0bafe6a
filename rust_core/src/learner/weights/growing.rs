//! Growing blocks: a [`ScaledBlock`] over `buckets` logical rows of
//! `width` coefficients that holds only the rows written so far. Each
//! bucket has a slot (its row + 1, 0 when it has none); a row is appended,
//! all zero, on the first write to its bucket, so that the memory of a
//! hashed table follows the buckets that training wrote, not the table's
//! size. A bucket without a row reads as zeros.
//!
//! The scale, the squared norm, the lazy averaging sums and the list of
//! written rows are those of a tracked block of `buckets` rows: the list
//! holds rows (not buckets) in the order they were first written since the
//! block was last zero, and once it is given up the rows are visited in
//! the order of their buckets, so every sum is taken in the same order as
//! over the dense table.
//!
//! # Example
//! ```
//! use omkl_core::learner::weights::ScaledBlock;
//! let mut b: ScaledBlock = ScaledBlock::growing(1000, 2, true, "n_buckets").unwrap();
//! let r = b.try_add_row(700, "n_buckets").unwrap();
//! b.axpy_row(r, 1.0, &[1], &[0.0, 3.0]);
//! assert_eq!((b.row_of(700), b.row_of(3)), (Some(0), None));
//! assert_eq!((b.len(), b.get(1), b.sq_norm()), (2, 3.0, 9.0));
//! ```

use std::mem::size_of;

use super::{zeroed, Real, ScaledBlock};

impl<T: Real> ScaledBlock<T> {
    /// A zero Euclidean block of `buckets` logical rows of `width`
    /// coefficients that holds no row yet, with an average when
    /// `averaged`; [`crate::OmklError::Alloc`] naming `what` when the
    /// memory of its slots cannot be had.
    ///
    /// # Complexity
    /// O(1) time; 4 bytes per bucket (zeroed pages that are never written
    /// cost no memory).
    pub fn growing(
        buckets: usize,
        width: usize,
        averaged: bool,
        what: &str,
    ) -> crate::Result<Self> {
        let mut b = Self::tracked(0, width, averaged, what)?;
        b.slots = zeroed(buckets, what)?;
        b.marks = zeroed(buckets.div_ceil(64), what)?;
        b.row_sums = averaged;
        Ok(b)
    }

    /// `true` for a block made by [`ScaledBlock::growing`].
    #[inline]
    pub fn is_growing(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Number of logical rows: the buckets of a growing block, the rows of
    /// a tracked one.
    pub(super) fn logical_rows(&self) -> usize {
        if self.is_growing() {
            self.slots.len()
        } else {
            self.a.len() / self.width.max(1)
        }
    }

    /// The row of `bucket` in a growing block (`None`: it has none, or the
    /// block is not growing).
    #[inline(always)]
    pub fn row_of(&self, bucket: usize) -> Option<usize> {
        match self.slots.get(bucket) {
            Some(&s) if s != 0 => Some(s as usize - 1),
            _ => None,
        }
    }

    /// The row of `bucket` in a growing block, appended (all zero) when it
    /// has none; [`crate::OmklError::Alloc`] naming `what` when the memory
    /// cannot be had (nothing changed).
    ///
    /// # Complexity
    /// O(width) (amortised).
    pub fn try_add_row(&mut self, bucket: usize, what: &str) -> crate::Result<usize> {
        if let Some(r) = self.row_of(bucket) {
            return Ok(r);
        }
        debug_assert!(bucket < self.slots.len(), "a bucket of the table");
        let w = self.width.max(1);
        let fail = |_| crate::OmklError::Alloc {
            what: what.to_string(),
            bytes: (w * size_of::<T>()) as u128,
        };
        self.a.try_reserve(w).map_err(fail)?;
        if self.row_sums {
            self.b.try_reserve(w).map_err(fail)?;
        }
        self.keys
            .try_reserve(1)
            .map_err(|_| crate::OmklError::Alloc {
                what: what.to_string(),
                bytes: size_of::<u32>() as u128,
            })?;
        Ok(self.push_row(bucket))
    }

    /// Appends a zero row for `bucket` (which has none), growing the arrays
    /// as `Vec::push` does.
    fn push_row(&mut self, bucket: usize) -> usize {
        let r = self.keys.len();
        let n = self.a.len() + self.width.max(1);
        self.a.resize(n, T::default());
        if self.row_sums {
            self.b.resize(n, T::default());
        }
        self.keys.push(bucket as u32);
        self.slots[bucket] = r as u32 + 1;
        r
    }

    /// The row of `bucket`, appended when it has none (memory as
    /// `Vec::push`, for callers that did not reserve it with
    /// [`ScaledBlock::try_add_row`]).
    #[inline]
    pub fn row_or_add(&mut self, bucket: usize) -> usize {
        match self.row_of(bucket) {
            Some(r) => r,
            None => self.push_row(bucket),
        }
    }

    /// The address of the slots (for prefetching).
    #[inline(always)]
    pub(crate) fn slots_ptr(&self) -> *const u32 {
        self.slots.as_ptr()
    }

    /// The bucket of each row of a growing block, in the order of the rows.
    pub fn row_buckets(&self) -> &[u32] {
        &self.keys
    }

    /// `(bucket, row)` of every row of a growing block, in increasing
    /// bucket order.
    ///
    /// # Complexity
    /// O(buckets).
    pub fn rows_by_bucket(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .map(|(b, &s)| (b, s as usize - 1))
    }

    /// The rows that may hold a non-zero value, in the order every sum over
    /// the block takes them: the written-row list while it is kept,
    /// otherwise every row in the order of the buckets.
    pub fn rows_in_order(&self) -> Vec<u32> {
        match &self.live {
            Some(list) => list.clone(),
            None => self.rows_by_bucket().map(|(_, r)| r as u32).collect(),
        }
    }

    /// Sets a growing block with no row from checked saved parts: `(s, q,
    /// P)`, the buckets `buckets` with their raw values `a` and averaging
    /// sums `b` (`width` each, `b` empty without an average) and the
    /// buckets written since the block was last zero (`None`: all of them
    /// may have been). [`crate::OmklError::Alloc`] when the memory cannot
    /// be had.
    ///
    /// # Complexity
    /// O(`buckets.len()` · width).
    pub fn restore_buckets(
        &mut self,
        (s, q, p): (f64, f64, f64),
        buckets: &[u32],
        a: &[T],
        b: &[T],
        live: Option<&[u32]>,
        what: &str,
    ) -> crate::Result<()> {
        debug_assert!(self.is_growing() && self.keys.is_empty());
        let w = self.width.max(1);
        let fail = |n: usize| crate::OmklError::Alloc {
            what: what.to_string(),
            bytes: (n * size_of::<T>()) as u128,
        };
        let n = buckets.len() * w;
        self.a.try_reserve_exact(n).map_err(|_| fail(n))?;
        if self.row_sums {
            self.b.try_reserve_exact(n).map_err(|_| fail(n))?;
        }
        self.keys
            .try_reserve_exact(buckets.len())
            .map_err(|_| fail(buckets.len()))?;
        let rows: Option<Vec<u32>> = match live {
            Some(l) => {
                let mut v = Vec::new();
                v.try_reserve_exact(l.len()).map_err(|_| fail(l.len()))?;
                Some(v)
            }
            None => None,
        };
        for (j, &bucket) in buckets.iter().enumerate() {
            let r = self.push_row(bucket as usize) * w;
            self.a[r..r + w].copy_from_slice(&a[j * w..(j + 1) * w]);
            if self.row_sums && !b.is_empty() {
                self.b[r..r + w].copy_from_slice(&b[j * w..(j + 1) * w]);
            }
        }
        (self.s, self.q, self.p) = (s, q, p);
        self.marks.fill(0);
        self.live = rows;
        if let Some(v) = &mut self.live {
            for &bucket in live.unwrap_or(&[]) {
                if let Some(&slot) = self.slots.get(bucket as usize).filter(|&&s| s != 0) {
                    let r = slot as usize - 1;
                    self.marks[r / 64] |= 1 << (r % 64);
                    v.push(r as u32);
                }
            }
        }
        Ok(())
    }
}
