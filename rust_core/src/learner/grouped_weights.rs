//! Grouped weights: one [`ScaledBlock`] per group, holding a row of
//! `n_outputs` coefficients for each bucket written so far.
//!
//! The weights of group `g` (all buckets of its table and all outputs) are
//! `w_g = s_g · v_g`. Rescaling a group, as the group-norm proximity
//! operators of Prop. 1 and the ℓ2² shrinkage do, costs O(1); adding to a
//! coordinate costs O(1) and keeps `‖v_g‖²` up to date incrementally, so the
//! group norms cost O(#groups) per round. Each block lists the buckets
//! written since it was last zero, so that folding a scale, zeroing a group
//! and entry-wise prox steps cost O(written coordinates), not O(dimension).
//!
//! Layout: the block of group `g` is a growing block
//! ([`ScaledBlock::growing`]): bucket `b` has a row `r` once it was first
//! written, and coordinate `(g, b, k)` (group, bucket, output) is then
//! coefficient `r · n_outputs + k` of block `g`; a bucket without a row
//! holds zeros. The memory of a group follows the buckets written to it
//! (`n_outputs` coefficients and as many averaging sums per bucket, plus
//! 4 bytes per bucket of the table), not the size of its hash table.
//!
//! Writing to a bucket without a row appends one: a caller that must not
//! abort when memory runs out first calls [`GroupedWeights::ensure_rows`]
//! (or [`GroupedWeights::ensure_row`]) for the buckets it will write.

use super::weights::ScaledBlock;

/// How many entries ahead [`GroupedWeights::add_scores`] prefetches rows.
const PREFETCH: usize = 8;

/// Weights of a grouped linear model with `n_outputs` outputs.
#[derive(Debug, Clone)]
pub struct GroupedWeights {
    pub(crate) n_buckets: usize,
    pub(crate) n_outputs: usize,
    pub(crate) averaged: bool,
    pub(crate) blocks: Vec<ScaledBlock>,
    pub(crate) rounds: u64,
}

impl GroupedWeights {
    /// All-zero weights (`n_buckets ≥ 1`), or [`crate::OmklError::Alloc`]
    /// when the memory cannot be had (see [`Self::reserve`]).
    pub fn new(
        n_groups: usize,
        n_buckets: usize,
        n_outputs: usize,
        averaged: bool,
    ) -> crate::Result<Self> {
        let mut w = GroupedWeights {
            n_buckets,
            n_outputs,
            averaged,
            blocks: Vec::new(),
            rounds: 0,
        };
        w.reserve(n_groups, n_outputs)?;
        Ok(w)
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.blocks.len()
    }

    /// Number of outputs (classes, or 1 for regression).
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// Buckets per group.
    pub fn n_buckets(&self) -> usize {
        self.n_buckets
    }

    /// The blocks of every group (rows of `n_outputs` coefficients, see
    /// the module docs).
    pub fn blocks(&self) -> &[ScaledBlock] {
        &self.blocks
    }

    /// Index of coordinate `(b, k)` in the block of group `g`, `None` when
    /// bucket `b` has no row (its weights are zero).
    #[inline]
    pub fn slot(&self, g: usize, b: usize, k: usize) -> Option<usize> {
        self.blocks[g].row_of(b).map(|r| r * self.n_outputs + k)
    }

    /// Number of buckets of group `g` that hold a row.
    pub fn n_rows(&self, g: usize) -> usize {
        self.blocks[g].row_buckets().len()
    }

    /// Gives bucket `b` of group `g` a row (all zero) if it has none, so
    /// that writing to it allocates nothing; [`crate::OmklError::Alloc`]
    /// when the memory cannot be had. The weights are unchanged either way.
    ///
    /// # Complexity
    /// O(n_outputs) (amortised).
    #[inline]
    pub fn ensure_row(&mut self, g: usize, b: usize) -> crate::Result<()> {
        if self.blocks[g].row_of(b).is_none() {
            self.blocks[g].try_add_row(b, "weights")?;
        }
        Ok(())
    }

    /// [`Self::ensure_row`] for every entry `(groups[i], indices[i])` whose
    /// value is non-zero (the entries that a gradient step writes). On
    /// error the weights are unchanged (some buckets may hold zero rows).
    ///
    /// # Complexity
    /// O(non-zeros), plus O(n_outputs) per new row.
    pub fn ensure_rows(
        &mut self,
        groups: &[u32],
        indices: &[u32],
        values: &[f64],
    ) -> crate::Result<()> {
        for ((&g, &b), &x) in groups.iter().zip(indices).zip(values) {
            if x != 0.0 {
                self.ensure_row(g as usize, b as usize)?;
            }
        }
        Ok(())
    }

    /// Grows to `n_groups` all-zero groups, or returns
    /// [`crate::OmklError::Alloc`] (nothing else changes) when the memory
    /// cannot be had, so that growing the model never aborts. `n_outputs`
    /// must be the current number of outputs.
    ///
    /// # Complexity
    /// O(new groups); 4 bytes per bucket of each new group.
    pub fn reserve(&mut self, n_groups: usize, n_outputs: usize) -> crate::Result<()> {
        debug_assert!(self.blocks.is_empty() || n_outputs == self.n_outputs);
        self.n_outputs = n_outputs;
        let mut fresh = Vec::new();
        for _ in self.n_groups()..n_groups {
            let b = ScaledBlock::growing(self.n_buckets, n_outputs, self.averaged, "n_buckets")?;
            fresh.push(b);
        }
        self.blocks
            .try_reserve_exact(fresh.len())
            .map_err(|_| crate::OmklError::Alloc {
                what: "n_groups".into(),
                bytes: (fresh.len() * std::mem::size_of::<ScaledBlock>()) as u128,
            })?;
        self.blocks.extend(fresh);
        Ok(())
    }

    /// Changes the number of outputs to `n_outputs ≥ 1`: new outputs have
    /// zero weights, dropped ones are forgotten (their squared norms are
    /// recomputed when `recompute`; a caller dropping outputs that were
    /// never written passes `false` and every cached value stays as it
    /// was). Averages stay exact. Fails with [`crate::OmklError::Alloc`],
    /// nothing changed, when the memory cannot be had.
    ///
    /// # Complexity
    /// O(written buckets · n_outputs): it re-lays out every row. Happens
    /// once per new class.
    pub fn resize_outputs(&mut self, n_outputs: usize, recompute: bool) -> crate::Result<()> {
        if n_outputs == self.n_outputs || n_outputs == 0 {
            return Ok(());
        }
        let mut fresh = Vec::new();
        fresh
            .try_reserve_exact(self.blocks.len())
            .map_err(|_| crate::OmklError::Alloc {
                what: "n_outputs".into(),
                bytes: self.blocks.len() as u128 * 48,
            })?;
        for b in &self.blocks {
            fresh.push(b.relaid_rows(self.n_outputs, n_outputs)?);
        }
        for (b, parts) in self.blocks.iter_mut().zip(fresh) {
            b.set_rows(parts, n_outputs);
            if recompute && n_outputs < self.n_outputs {
                b.refresh_sq_norm();
            }
        }
        self.n_outputs = n_outputs;
        Ok(())
    }

    /// Drops the groups from `n_groups` on (undoes [`Self::reserve`]).
    pub fn truncate_groups(&mut self, n_groups: usize) {
        self.blocks.truncate(n_groups);
    }

    /// Current weight of `(g, b, k)`.
    #[inline]
    pub fn weight(&self, g: usize, b: usize, k: usize) -> f64 {
        self.slot(g, b, k).map_or(0.0, |i| self.blocks[g].get(i))
    }

    /// Averaged weight of `(g, b, k)`; the current weight when there is no
    /// averaging or no round has been completed.
    #[inline]
    pub fn averaged_weight(&self, g: usize, b: usize, k: usize) -> f64 {
        if self.averaged && self.rounds > 0 {
            self.slot(g, b, k)
                .map_or(0.0, |i| self.blocks[g].average_sum(i) / self.rounds as f64)
        } else {
            self.weight(g, b, k)
        }
    }

    /// Writes the weights of bucket `b` of group `g` into `out[k]` for the
    /// outputs `k < out.len()` (at most `n_outputs`): the averaged weights
    /// when `averaged` (as [`Self::averaged_weight`]), the current ones
    /// otherwise (as [`Self::weight`]); zeros when the bucket has no row.
    /// The values equal those of the per-coordinate accessors bit for bit.
    ///
    /// # Complexity
    /// O(`out.len()`), one lookup of the bucket's row.
    #[inline]
    pub fn row_into(&self, g: usize, b: usize, averaged: bool, out: &mut [f64]) {
        let blk = &self.blocks[g];
        let kk = out.len().min(self.n_outputs);
        let Some(r) = blk.row_of(b) else {
            out.fill(0.0);
            return;
        };
        let base = r * self.n_outputs;
        if averaged && self.averaged && self.rounds > 0 {
            let t = self.rounds as f64;
            for (k, o) in out.iter_mut().enumerate().take(kk) {
                *o = blk.average_sum(base + k) / t;
            }
        } else {
            // `get` of each coefficient: the scale times the raw value
            let s = blk.scale();
            for (o, a) in out[..kk].iter_mut().zip(&blk.raw()[base..base + kk]) {
                *o = s * a;
            }
        }
        out[kk..].fill(0.0);
    }

    /// Adds `Σ_i x_i w_{g_i, b_i, k}` to `out[k]` for every output, with the
    /// current (`averaged = false`) or averaged weights. Inputs must be valid.
    ///
    /// # Complexity
    /// O(non-zeros · n_outputs).
    pub fn add_scores(
        &self,
        groups: &[u32],
        indices: &[u32],
        values: &[f64],
        averaged: bool,
        out: &mut [f64],
    ) {
        let kk = self.n_outputs;
        if averaged && self.averaged && self.rounds > 0 {
            let t = self.rounds as f64;
            for ((&g, &b), &x) in groups.iter().zip(indices).zip(values) {
                // a bucket without a row adds zeros
                let blk = &self.blocks[g as usize];
                let Some(r) = blk.row_of(b as usize) else {
                    continue;
                };
                let base = r * kk;
                for (k, o) in out.iter_mut().enumerate().take(kk) {
                    *o += x * (blk.average_sum(base + k) / t);
                }
            }
            return;
        }
        let n = groups.len().min(indices.len()).min(values.len());
        for j in 0..n {
            // The rows are scattered: ask for the slot of a later entry and
            // for the row of a nearer one now, so that cache misses overlap.
            if let (Some(&pg), Some(&pb)) =
                (groups.get(j + 2 * PREFETCH), indices.get(j + 2 * PREFETCH))
            {
                self.prefetch_slot(pg as usize, pb as usize);
            }
            if let (Some(&pg), Some(&pb)) = (groups.get(j + PREFETCH), indices.get(j + PREFETCH)) {
                self.prefetch_row(pg as usize, pb as usize);
            }
            let blk = &self.blocks[groups[j] as usize];
            let c = values[j] * blk.scale();
            if c == 0.0 {
                continue;
            }
            let Some(r) = blk.row_of(indices[j] as usize) else {
                continue;
            };
            let base = r * kk;
            for (o, v) in out.iter_mut().zip(&blk.raw()[base..base + kk]) {
                *o += c * v;
            }
        }
    }

    /// Hints the processor to load the slot of bucket `(g, b)` (a no-op
    /// off x86-64; never faults, even out of bounds).
    #[inline(always)]
    fn prefetch_slot(&self, g: usize, b: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let Some(blk) = self.blocks.get(g) else {
                return;
            };
            let p = blk.slots_ptr().wrapping_add(b);
            // SAFETY: prefetching is a hint; it never dereferences.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>())
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (g, b);
    }

    /// Hints the processor to load the raw row of bucket `(g, b)` (a no-op
    /// off x86-64; never faults, even out of bounds).
    #[inline(always)]
    fn prefetch_row(&self, g: usize, b: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let Some(blk) = self.blocks.get(g) else {
                return;
            };
            let Some(r) = blk.row_of(b) else {
                return;
            };
            let kk = self.n_outputs;
            let p = blk.raw().as_ptr().wrapping_add(r * kk);
            let mut k = 0;
            while k < kk {
                // SAFETY: prefetching is a hint; it never dereferences.
                #[allow(unused_unsafe)]
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(k).cast::<i8>())
                };
                k += 8;
            }
            #[allow(unused_unsafe)]
            // SAFETY: as above.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(kk - 1).cast::<i8>())
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (g, b);
    }

    /// `w_{g,b,k} += alpha · d_k` for every output `k` (a bucket without a
    /// row gets one, see the module docs).
    ///
    /// # Complexity
    /// O(n_outputs).
    pub fn axpy_bucket(&mut self, g: usize, b: usize, alpha: f64, d: &[f64]) {
        let nz: Vec<u32> = (0..self.n_outputs.min(d.len()))
            .filter(|&k| d[k] != 0.0)
            .map(|k| k as u32)
            .collect();
        self.axpy_bucket_sparse(g, b, alpha, &nz, d);
    }

    /// [`Self::axpy_bucket`] given the outputs `nz` (increasing, all below
    /// `n_outputs`) where `d` is non-zero: the other outputs are skipped
    /// without being looked at, which matters when `d` is sparse (the
    /// multiclass hinge loss has at most 2 non-zeros).
    ///
    /// # Complexity
    /// O(`nz.len()`).
    #[inline]
    pub fn axpy_bucket_sparse(&mut self, g: usize, b: usize, alpha: f64, nz: &[u32], d: &[f64]) {
        let blk = &mut self.blocks[g];
        let r = blk.row_or_add(b);
        blk.axpy_row(r, alpha, nz, d);
    }

    /// `w_g ← c · w_g` (`c ≥ 0`).
    ///
    /// # Complexity
    /// O(1), or O(written coordinates of the group) when the scale is
    /// folded or the group zeroed.
    pub fn rescale_group(&mut self, g: usize, c: f64) {
        self.blocks[g].scale_by(c);
    }

    /// `‖w_g‖₂` of every group, with the squares summed over the written
    /// rows, so the result is free of the rounding drift that the
    /// maintained norms gather: a group whose weights cancelled back to
    /// zero reports about zero, not the square root of the drift.
    ///
    /// # Complexity
    /// O(written coordinates).
    pub fn exact_group_norms(&self) -> Vec<f64> {
        let w = self.n_outputs;
        let sq =
            |b: &ScaledBlock, i: std::ops::Range<usize>| i.map(|i| b.get(i).powi(2)).sum::<f64>();
        self.blocks
            .iter()
            .map(|b| match b.live_rows() {
                Some(rows) => rows
                    .iter()
                    .map(|&r| sq(b, r as usize * w..(r as usize + 1) * w))
                    .sum::<f64>()
                    .sqrt(),
                // one running sum over the rows in the order of their buckets
                None => b
                    .rows_by_bucket()
                    .flat_map(|(_, r)| r * w..(r + 1) * w)
                    .map(|i| b.get(i).powi(2))
                    .sum::<f64>()
                    .sqrt(),
            })
            .collect()
    }

    /// `‖w̄_g‖₂` of the averaged weights of every group (the current ones
    /// without averaging or before the first round).
    ///
    /// # Complexity
    /// O(written coordinates + #groups · n_buckets).
    pub fn averaged_group_norms(&self) -> Vec<f64> {
        if !(self.averaged && self.rounds > 0) {
            return self.exact_group_norms();
        }
        let (t, w) = (self.rounds as f64, self.n_outputs);
        self.blocks
            .iter()
            .map(|b| {
                b.rows_by_bucket()
                    .flat_map(|(_, r)| r * w..(r + 1) * w)
                    .map(|i| (b.average_sum(i) / t).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }

    /// Applies `f` to the written coordinates of the model, gathered group by
    /// group into a compact vector with group `offsets` (`offsets.len() =
    /// #groups + 1`). Coordinates never written are zero and stay zero under
    /// any coordinate-wise or group-wise shrinkage, so this equals applying
    /// `f` to the whole weight vector. Does nothing when nothing was written.
    ///
    /// # Complexity
    /// O(#groups + written coordinates), plus the cost of `f`.
    pub fn apply_to_written<E>(
        &mut self,
        f: impl FnOnce(&mut [f64], &[usize]) -> Result<(), E>,
    ) -> Result<(), E> {
        let kk = self.n_outputs;
        let mut compact = Vec::new();
        let mut offsets = Vec::with_capacity(self.n_groups() + 1);
        offsets.push(0);
        let rows = ScaledBlock::rows_in_order;
        for b in &self.blocks {
            let s = b.scale();
            for r in rows(b) {
                let base = r as usize * kk;
                compact.extend(b.raw()[base..base + kk].iter().map(|v| s * v));
            }
            offsets.push(compact.len());
        }
        if compact.iter().all(|&v| v == 0.0) {
            return Ok(());
        }
        f(&mut compact, &offsets)?;
        let mut pos = 0;
        for b in &mut self.blocks {
            let rows = rows(b);
            b.scale_by(0.0);
            for r in rows {
                for k in 0..kk {
                    let v = compact[pos + k];
                    if v != 0.0 {
                        b.add_tracked(r as usize * kk + k, v);
                    }
                }
                pos += kk;
            }
        }
        Ok(())
    }

    /// Ends a round (updates the lazy average).
    ///
    /// # Complexity
    /// O(#groups).
    pub fn end_round(&mut self) {
        if self.averaged {
            self.blocks.iter_mut().for_each(ScaledBlock::end_round);
            self.rounds += 1;
        }
    }

    /// `f(i)` of every coefficient `i` of every block, laid out densely:
    /// group after group, bucket after bucket, zeros for a bucket without
    /// a row.
    fn dense_by(&self, f: impl Fn(&ScaledBlock, usize) -> f64) -> Vec<f64> {
        let kk = self.n_outputs;
        let mut out = vec![0.0; self.n_groups() * self.n_buckets * kk];
        for (g, b) in self.blocks.iter().enumerate() {
            let at = g * self.n_buckets * kk;
            for (bucket, r) in b.rows_by_bucket() {
                let dst = &mut out[at + bucket * kk..at + (bucket + 1) * kk];
                for (k, v) in dst.iter_mut().enumerate() {
                    *v = f(b, r * kk + k);
                }
            }
        }
        out
    }

    /// The current weights as a dense vector (group after group, buckets ×
    /// outputs each).
    ///
    /// # Complexity
    /// O(dimension).
    pub fn dense(&self) -> Vec<f64> {
        self.dense_by(|b, i| b.get(i))
    }

    /// The averaged weights as a dense vector (the current ones without
    /// averaging or before the first round).
    ///
    /// # Complexity
    /// O(dimension).
    pub fn averaged_dense(&self) -> Vec<f64> {
        if !(self.averaged && self.rounds > 0) {
            return self.dense();
        }
        let t = self.rounds as f64;
        self.dense_by(|b, i| b.average_sum(i) / t)
    }

    /// The running sums `Σ_τ w_τ` over completed rounds as a dense vector
    /// laid out as [`Self::dense`] (empty without averaging).
    ///
    /// # Complexity
    /// O(dimension).
    pub fn dense_sums(&self) -> Vec<f64> {
        if !self.averaged {
            return Vec::new();
        }
        self.dense_by(|b, i| b.average_sum(i))
    }

    /// Sets every group from dense arrays laid out as [`Self::dense`]: the
    /// current weights `w` and, when averaging, the running sums `sums`
    /// (with scale 1, the running-sum factor 0 and the squared norm summed
    /// from `w`); a bucket gets a row when it holds a non-zero value.
    /// `w` (and `sums`) must have the dense length. Fails with
    /// [`crate::OmklError::Alloc`], nothing changed, when the memory cannot
    /// be had.
    ///
    /// # Complexity
    /// O(dimension).
    pub fn set_dense(&mut self, w: &[f64], sums: &[f64]) -> crate::Result<()> {
        let (nb, kk) = (self.n_buckets, self.n_outputs);
        let per = nb * kk;
        let mut fresh = Vec::new();
        fresh
            .try_reserve_exact(self.n_groups())
            .map_err(|_| crate::OmklError::Alloc {
                what: "n_groups".into(),
                bytes: (self.n_groups() * std::mem::size_of::<ScaledBlock>()) as u128,
            })?;
        for g in 0..self.n_groups() {
            let gw = &w[g * per..(g + 1) * per];
            let gs = if self.averaged {
                &sums[g * per..(g + 1) * per]
            } else {
                &[]
            };
            let held = |b: usize| {
                let r = b * kk..(b + 1) * kk;
                gw[r.clone()].iter().any(|&v| v != 0.0)
                    || gs.get(r).is_some_and(|s| s.iter().any(|&v| v != 0.0))
            };
            let buckets: Vec<u32> = (0..nb).filter(|&b| held(b)).map(|b| b as u32).collect();
            let mut a = Vec::new();
            let mut neg = Vec::new();
            for &b in &buckets {
                let r = b as usize * kk..(b as usize + 1) * kk;
                a.extend_from_slice(&gw[r.clone()]);
                if self.averaged {
                    neg.extend(gs[r].iter().map(|v| -v));
                }
            }
            // one running sum over the whole group, as over a dense table
            let q = gw.iter().map(|v| v * v).sum();
            let mut blk = ScaledBlock::growing(nb, kk, self.averaged, "n_buckets")?;
            blk.restore_buckets((1.0, q, 0.0), &buckets, &a, &neg, None, "weights")?;
            fresh.push(blk);
        }
        self.blocks = fresh;
        Ok(())
    }

    /// Number of completed rounds seen by the averager (0 without one).
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Heap bytes held by the weights.
    ///
    /// # Complexity
    /// O(#groups).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(ScaledBlock::nbytes).sum::<usize>()
            + self.blocks.capacity() * std::mem::size_of::<ScaledBlock>()
    }
}

/// Equal values: the same shape, rounds and, group by group, scale,
/// squared norm, running sum of scales and value of every coordinate and
/// of its averaging sum (a bucket without a row equals a row of zeros);
/// the order in which rows were allocated does not enter.
impl PartialEq for GroupedWeights {
    fn eq(&self, o: &Self) -> bool {
        let kk = self.n_outputs;
        let zero = vec![0.0; kk];
        let row = |b: &ScaledBlock, v: &'_ [f64], bucket: usize| -> Vec<f64> {
            match b.row_of(bucket) {
                Some(r) if !v.is_empty() => v[r * kk..(r + 1) * kk].to_vec(),
                _ => zero.clone(),
            }
        };
        let same = |x: &ScaledBlock, y: &ScaledBlock| {
            let ((xs, xp), (ys, yp)) = (x.average_parts(), y.average_parts());
            (x.scale(), x.raw_sq_norm(), xp) == (y.scale(), y.raw_sq_norm(), yp)
                && xs.is_empty() == ys.is_empty()
                && (0..self.n_buckets).all(|b| {
                    row(x, x.raw(), b) == row(y, y.raw(), b) && row(x, xs, b) == row(y, ys, b)
                })
        };
        (self.n_buckets, self.n_outputs, self.averaged, self.rounds)
            == (o.n_buckets, o.n_outputs, o.averaged, o.rounds)
            && self.blocks.len() == o.blocks.len()
            && self.blocks.iter().zip(&o.blocks).all(|(x, y)| same(x, y))
    }
}

crate::learner::round::group_set_over_blocks!(GroupedWeights);
