//! Grouped weights: one [`ScaledBlock`] per group, laid out buckets ×
//! outputs inside the block.
//!
//! The weights of group `g` (all buckets of its table and all outputs) are
//! `w_g = s_g · v_g`. Rescaling a group, as the group-norm proximity
//! operators of Prop. 1 and the ℓ2² shrinkage do, costs O(1); adding to a
//! coordinate costs O(1) and keeps `‖v_g‖²` up to date incrementally, so the
//! group norms cost O(#groups) per round. Each block lists the buckets
//! written since it was last zero, so that folding a scale, zeroing a group
//! and entry-wise prox steps cost O(written coordinates), not O(dimension).
//!
//! Layout: coordinate `(g, b, k)` (group, bucket, output) is coefficient
//! `b · n_outputs + k` of block `g`.

use super::weights::ScaledBlock;

/// How many entries ahead [`GroupedWeights::add_scores`] prefetches rows.
const PREFETCH: usize = 8;

/// Weights of a grouped linear model with `n_outputs` outputs.
#[derive(Debug, Clone, PartialEq)]
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

    /// The blocks of every group.
    pub fn blocks(&self) -> &[ScaledBlock] {
        &self.blocks
    }

    /// Index of coordinate `(b, k)` in the block of its group.
    #[inline]
    pub fn slot(&self, b: usize, k: usize) -> usize {
        b * self.n_outputs + k
    }

    /// Grows to `n_groups` all-zero groups, or returns
    /// [`crate::OmklError::Alloc`] (nothing else changes) when the memory
    /// cannot be had, so that growing the model never aborts. `n_outputs`
    /// must be the current number of outputs.
    ///
    /// # Complexity
    /// O(new groups · n_buckets · n_outputs).
    pub fn reserve(&mut self, n_groups: usize, n_outputs: usize) -> crate::Result<()> {
        debug_assert!(self.blocks.is_empty() || n_outputs == self.n_outputs);
        self.n_outputs = n_outputs;
        let mut fresh = Vec::new();
        for _ in self.n_groups()..n_groups {
            let b = ScaledBlock::tracked(self.n_buckets, n_outputs, self.averaged, "n_buckets")?;
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
    /// O(dimension): it re-lays out every array. Happens once per new class.
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
        self.blocks[g].get(self.slot(b, k))
    }

    /// Averaged weight of `(g, b, k)`; the current weight when there is no
    /// averaging or no round has been completed.
    #[inline]
    pub fn averaged_weight(&self, g: usize, b: usize, k: usize) -> f64 {
        if self.averaged && self.rounds > 0 {
            self.blocks[g].average_sum(self.slot(b, k)) / self.rounds as f64
        } else {
            self.weight(g, b, k)
        }
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
            for ((&g, &b), &x) in groups.iter().zip(indices).zip(values) {
                let (g, b) = (g as usize, b as usize);
                for (k, o) in out.iter_mut().enumerate().take(kk) {
                    *o += x * self.averaged_weight(g, b, k);
                }
            }
            return;
        }
        let n = groups.len().min(indices.len()).min(values.len());
        for j in 0..n {
            // The rows are scattered over the whole table: ask for the row
            // of a later entry now so that its cache misses overlap.
            if let (Some(&pg), Some(&pb)) = (groups.get(j + PREFETCH), indices.get(j + PREFETCH)) {
                self.prefetch_row(pg as usize, pb as usize);
            }
            let blk = &self.blocks[groups[j] as usize];
            let c = values[j] * blk.scale();
            if c == 0.0 {
                continue;
            }
            let base = indices[j] as usize * kk;
            for (o, v) in out.iter_mut().zip(&blk.raw()[base..base + kk]) {
                *o += c * v;
            }
        }
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
            let kk = self.n_outputs;
            let p = blk.raw().as_ptr().wrapping_add(b * kk);
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

    /// `w_{g,b,k} += alpha · d_k` for every output `k`.
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
        self.blocks[g].axpy_row(b, alpha, nz, d);
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
        let sq =
            |b: &ScaledBlock, i: std::ops::Range<usize>| i.map(|i| b.get(i).powi(2)).sum::<f64>();
        self.blocks
            .iter()
            .map(|b| match b.live_rows() {
                Some(rows) => {
                    let w = b.len() / self.n_buckets.max(1);
                    rows.iter()
                        .map(|&r| sq(b, r as usize * w..(r as usize + 1) * w))
                        .sum::<f64>()
                        .sqrt()
                }
                None => sq(b, 0..b.len()).sqrt(),
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
        let nb = self.n_buckets as u32;
        let rows = |b: &ScaledBlock| {
            b.live_rows()
                .map_or_else(|| (0..nb).collect(), <[u32]>::to_vec)
        };
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

    /// The current weights as a dense vector (group after group).
    pub fn dense(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.n_groups() * self.n_buckets * self.n_outputs);
        for b in &self.blocks {
            out.extend((0..b.len()).map(|i| b.get(i)));
        }
        out
    }

    /// The averaged weights as a dense vector (the current ones without
    /// averaging or before the first round).
    pub fn averaged_dense(&self) -> Vec<f64> {
        if !(self.averaged && self.rounds > 0) {
            return self.dense();
        }
        let t = self.rounds as f64;
        let mut out = Vec::with_capacity(self.n_groups() * self.n_buckets * self.n_outputs);
        for b in &self.blocks {
            out.extend((0..b.len()).map(|i| b.average_sum(i) / t));
        }
        out
    }

    /// Number of completed rounds seen by the averager (0 without one).
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Heap bytes held by the weights.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(ScaledBlock::nbytes).sum::<usize>()
            + self.blocks.capacity() * std::mem::size_of::<ScaledBlock>()
    }
}

crate::learner::round::group_set_over_blocks!(GroupedWeights);
