//! Grouped weights stored as a scale times a vector (the scale-factor trick).
//!
//! The weights of group `g` (all buckets of its table and all outputs) are
//! `w_g = s_g · v_g`. Rescaling a group, as the group-norm proximity
//! operators of Prop. 1 and the ℓ2² shrinkage do, costs O(1); adding to a
//! coordinate costs O(1) and keeps `‖v_g‖²` up to date incrementally, so the
//! group norms `‖w_g‖ = |s_g| ‖v_g‖` cost O(#groups) per round.
//!
//! Layout: coordinate `(g, b, k)` (group, bucket, output) is
//! `raw[(g · n_buckets + b) · n_outputs + k]`; a group's block is contiguous.
//!
//! Housekeeping, all O(coordinates touched) and never O(dimension):
//! * a group set to zero (`s_g = 0`) has its raw vector cleared lazily, the
//!   next time an example touches it, through the list of buckets written
//!   since the last clearing (the "live" list; a second list keeps every
//!   bucket ever written, for the average and for saving);
//! * a scale that drifts below 1e-3 or above 1e3 is folded into the raw
//!   vector (`v_g ← s_g v_g`, `s_g ← 1`) through the same list, and the
//!   group's cumulative scale in the averager is re-based to 0, which keeps
//!   the lazy average accurate when scales span many orders of magnitude.
//!
//! The optional [`Averager`] keeps the averaged model lazily.

use super::averaging::Averager;

const SCALE_MIN: f64 = 1e-3;
const SCALE_MAX: f64 = 1e3;
/// How many entries ahead [`GroupedWeights::add_scores`] prefetches rows.
const PREFETCH: usize = 8;

/// Weights of a grouped linear model with `n_outputs` outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedWeights {
    pub(crate) n_buckets: usize,
    pub(crate) n_outputs: usize,
    pub(crate) raw: Vec<f64>,
    pub(crate) scale: Vec<f64>,
    pub(crate) sq: Vec<f64>,
    /// Per group, the buckets ever written (for the average and saving).
    pub(crate) touched: Vec<Vec<u32>>,
    pub(crate) marked: Vec<bool>,
    /// Per group, the buckets written since the group was last cleared.
    pub(crate) live: Vec<Vec<u32>>,
    pub(crate) live_marked: Vec<bool>,
    pub(crate) avg: Option<Averager>,
}

impl GroupedWeights {
    /// All-zero weights. Arguments must be valid (`n_buckets ≥ 1`).
    pub fn new(n_groups: usize, n_buckets: usize, n_outputs: usize, averaged: bool) -> Self {
        let mut w = GroupedWeights {
            n_buckets,
            n_outputs,
            raw: Vec::new(),
            scale: Vec::new(),
            sq: Vec::new(),
            touched: Vec::new(),
            marked: Vec::new(),
            live: Vec::new(),
            live_marked: Vec::new(),
            avg: averaged.then(Averager::default),
        };
        w.add_groups(n_groups);
        w
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.scale.len()
    }

    /// Number of outputs (classes, or 1 for regression).
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// Buckets per group.
    pub fn n_buckets(&self) -> usize {
        self.n_buckets
    }

    /// Index of coordinate `(g, b, k)` in the raw vector.
    #[inline]
    pub fn slot(&self, g: usize, b: usize, k: usize) -> usize {
        (g * self.n_buckets + b) * self.n_outputs + k
    }

    /// Reserves room for `n_groups` groups of `n_outputs` outputs, or
    /// [`crate::OmklError::Alloc`] (nothing else changes) when the memory
    /// cannot be had, so that growing the model never aborts.
    ///
    /// # Complexity
    /// O(1) beyond the allocation.
    pub fn reserve(&mut self, n_groups: usize, n_outputs: usize) -> crate::Result<()> {
        use crate::error::alloc_len;
        fn room<T>(v: &mut Vec<T>, what: &str, dims: &[usize]) -> crate::Result<()> {
            let len = alloc_len(what, dims, std::mem::size_of::<T>())?;
            if len > v.len() {
                v.try_reserve_exact(len - v.len())
                    .map_err(|_| crate::OmklError::Alloc {
                        what: what.to_string(),
                        bytes: (len as u128) * std::mem::size_of::<T>() as u128,
                    })?;
            }
            Ok(())
        }
        let dims = [n_groups, self.n_buckets, n_outputs];
        room(&mut self.raw, "n_buckets", &dims)?;
        room(&mut self.marked, "n_buckets", &[n_groups, self.n_buckets])?;
        room(
            &mut self.live_marked,
            "n_buckets",
            &[n_groups, self.n_buckets],
        )?;
        if let Some(a) = self.avg.as_mut() {
            room(&mut a.pairs, "n_buckets", &dims)?;
        }
        Ok(())
    }

    /// Appends `n` all-zero groups.
    ///
    /// # Complexity
    /// O(n · n_buckets · n_outputs).
    pub fn add_groups(&mut self, n: usize) {
        let g_new = self.n_groups() + n;
        let len = g_new * self.n_buckets * self.n_outputs;
        self.raw.resize(len, 0.0);
        self.scale.resize(g_new, 1.0);
        self.sq.resize(g_new, 0.0);
        self.touched.resize(g_new, Vec::new());
        self.marked.resize(g_new * self.n_buckets, false);
        self.live.resize(g_new, Vec::new());
        self.live_marked.resize(g_new * self.n_buckets, false);
        if let Some(a) = self.avg.as_mut() {
            a.pairs.resize(len, [0.0; 2]);
            a.cum.resize(g_new, 0.0);
        }
    }

    /// Changes the number of outputs to `n_outputs ≥ 1`: new outputs have
    /// zero weights, dropped ones are forgotten; averages stay exact.
    ///
    /// # Complexity
    /// O(dimension): it re-lays out every array. Happens once per new class.
    pub fn set_n_outputs(&mut self, n_outputs: usize) {
        if n_outputs == self.n_outputs || n_outputs == 0 {
            return;
        }
        let (k_old, rows) = (self.n_outputs, self.n_groups() * self.n_buckets);
        let keep = k_old.min(n_outputs);
        fn relayout<T: Copy + Default>(
            v: &[T],
            rows: usize,
            k_old: usize,
            n_outputs: usize,
            keep: usize,
        ) -> Vec<T> {
            let mut out = vec![T::default(); rows * n_outputs];
            for r in 0..rows {
                out[r * n_outputs..r * n_outputs + keep]
                    .copy_from_slice(&v[r * k_old..r * k_old + keep]);
            }
            out
        }
        self.raw = relayout(&self.raw, rows, k_old, n_outputs, keep);
        let nb = self.n_buckets;
        if let Some(a) = self.avg.as_mut() {
            // A new coordinate has raw value 0, so its `last` does not
            // matter; 0 keeps unwritten coordinates all-zero.
            a.pairs = relayout(&a.pairs, rows, k_old, n_outputs, keep);
        }
        self.n_outputs = n_outputs;
        if n_outputs < k_old {
            for g in 0..self.n_groups() {
                self.sq[g] = self.live[g]
                    .iter()
                    .map(|&b| {
                        let base = (g * nb + b as usize) * n_outputs;
                        self.raw[base..base + n_outputs]
                            .iter()
                            .map(|v| v * v)
                            .sum::<f64>()
                    })
                    .sum();
            }
        }
    }

    /// Drops the groups from `n_groups` on (undoes [`Self::add_groups`]).
    pub fn truncate_groups(&mut self, n_groups: usize) {
        if n_groups >= self.n_groups() {
            return;
        }
        let len = n_groups * self.n_buckets * self.n_outputs;
        self.raw.truncate(len);
        self.scale.truncate(n_groups);
        self.sq.truncate(n_groups);
        self.touched.truncate(n_groups);
        self.live.truncate(n_groups);
        self.marked.truncate(n_groups * self.n_buckets);
        self.live_marked.truncate(n_groups * self.n_buckets);
        if let Some(a) = self.avg.as_mut() {
            a.pairs.truncate(len);
            a.cum.truncate(n_groups);
        }
    }

    /// Current weight of `(g, b, k)`.
    #[inline]
    pub fn weight(&self, g: usize, b: usize, k: usize) -> f64 {
        self.scale[g] * self.raw[self.slot(g, b, k)]
    }

    /// Averaged weight of `(g, b, k)`; the current weight when there is no
    /// averaging or no round has been completed.
    #[inline]
    pub fn averaged_weight(&self, g: usize, b: usize, k: usize) -> f64 {
        match &self.avg {
            Some(a) if a.rounds > 0 => {
                let i = self.slot(g, b, k);
                a.total(i, g, self.raw[i]) / a.rounds as f64
            }
            _ => self.weight(g, b, k),
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
        if averaged && self.avg.as_ref().is_some_and(|a| a.rounds > 0) {
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
            let (g, b, x) = (groups[j] as usize, indices[j] as usize, values[j]);
            let c = x * self.scale[g];
            if c == 0.0 {
                continue;
            }
            let base = self.slot(g, b, 0);
            for (o, v) in out.iter_mut().zip(&self.raw[base..base + kk]) {
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
            let kk = self.n_outputs;
            let p = self.raw.as_ptr().wrapping_add(self.slot(g, b, 0));
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
    /// O(n_outputs), plus the amortised lazy clearing of a zeroed group.
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
    /// O(`nz.len()`), plus the amortised lazy clearing of a zeroed group.
    #[inline]
    pub fn axpy_bucket_sparse(&mut self, g: usize, b: usize, alpha: f64, nz: &[u32], d: &[f64]) {
        if self.scale[g] == 0.0 {
            self.clear_group(g);
        }
        let mark = g * self.n_buckets + b;
        if !self.marked[mark] {
            self.marked[mark] = true;
            self.touched[g].push(b as u32);
        }
        if !self.live_marked[mark] {
            self.live_marked[mark] = true;
            self.live[g].push(b as u32);
        }
        let c = alpha / self.scale[g];
        let kk = self.n_outputs;
        let base = self.slot(g, b, 0);
        let row = &mut self.raw[base..base + kk];
        let mut dsq = 0.0;
        match self.avg.as_mut() {
            Some(a) => {
                let s = a.cum[g];
                let pairs = &mut a.pairs[base..base + kk];
                for &k in nz {
                    let k = k as usize;
                    let old = row[k];
                    // Averager::flush, inlined on the row.
                    let p = &mut pairs[k];
                    p[0] += old * (s - p[1]);
                    p[1] = s;
                    let new = old + c * d[k];
                    row[k] = new;
                    dsq += new * new - old * old;
                }
            }
            None => {
                for &k in nz {
                    let k = k as usize;
                    let old = row[k];
                    let new = old + c * d[k];
                    row[k] = new;
                    dsq += new * new - old * old;
                }
            }
        }
        self.sq[g] = (self.sq[g] + dsq).max(0.0);
    }

    /// Sets group `g` to zero for good: clears the raw entries it wrote.
    fn clear_group(&mut self, g: usize) {
        let kk = self.n_outputs;
        let live = std::mem::take(&mut self.live[g]);
        for &b in &live {
            let base = self.slot(g, b as usize, 0);
            for i in base..base + kk {
                if let Some(a) = self.avg.as_mut() {
                    a.flush(i, g, self.raw[i]);
                }
                self.raw[i] = 0.0;
            }
            self.live_marked[g * self.n_buckets + b as usize] = false;
        }
        self.live[g] = live;
        self.live[g].clear();
        self.scale[g] = 1.0;
        self.sq[g] = 0.0;
        self.rebase(g);
    }

    /// Re-bases the cumulative scale of group `g` to 0. Every written
    /// coordinate of the group must have just been flushed (`ℓ_i = S_g`);
    /// unwritten ones are zero, so their `ℓ_i` does not matter.
    fn rebase(&mut self, g: usize) {
        let kk = self.n_outputs;
        let Some(a) = self.avg.as_mut() else { return };
        a.cum[g] = 0.0;
        for &b in &self.live[g] {
            let base = (g * self.n_buckets + b as usize) * kk;
            for p in &mut a.pairs[base..base + kk] {
                p[1] = 0.0;
            }
        }
    }

    /// Folds the scale of group `g` into its raw vector (`s_g ← 1`) and
    /// recomputes `‖v_g‖²` exactly.
    pub fn fold_scale(&mut self, g: usize) {
        let s = self.scale[g];
        if s == 0.0 {
            self.clear_group(g);
            return;
        }
        let kk = self.n_outputs;
        let mut sq = 0.0;
        for j in 0..self.live[g].len() {
            let base = self.slot(g, self.live[g][j] as usize, 0);
            for i in base..base + kk {
                if let Some(a) = self.avg.as_mut() {
                    a.flush(i, g, self.raw[i]);
                }
                self.raw[i] *= s;
                sq += self.raw[i] * self.raw[i];
            }
        }
        self.scale[g] = 1.0;
        self.sq[g] = sq;
        self.rebase(g);
    }

    /// `out[g] = ‖w_g‖₂` for every group.
    ///
    /// # Complexity
    /// O(#groups).
    pub fn group_norms_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend(
            self.scale
                .iter()
                .zip(&self.sq)
                .map(|(s, q)| s.abs() * q.sqrt()),
        );
    }

    /// `w_g ← c · w_g` (`c ≥ 0`).
    ///
    /// # Complexity
    /// O(1), or O(touched coordinates of the group) when the scale is folded.
    pub fn rescale_group(&mut self, g: usize, c: f64) {
        self.scale[g] *= c;
        let a = self.scale[g].abs();
        if a != 0.0 && !(SCALE_MIN..=SCALE_MAX).contains(&a) {
            self.fold_scale(g);
        }
    }

    /// `‖w‖₂²`.
    pub fn norm_sq(&self) -> f64 {
        self.scale
            .iter()
            .zip(&self.sq)
            .map(|(s, q)| s * s * q)
            .sum()
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
        for g in 0..self.n_groups() {
            self.fold_scale(g);
            for &b in &self.live[g] {
                let base = self.slot(g, b as usize, 0);
                compact.extend_from_slice(&self.raw[base..base + kk]);
            }
            offsets.push(compact.len());
        }
        if compact.is_empty() {
            return Ok(());
        }
        f(&mut compact, &offsets)?;
        let mut pos = 0;
        for g in 0..self.n_groups() {
            let mut sq = 0.0;
            for j in 0..self.live[g].len() {
                let base = self.slot(g, self.live[g][j] as usize, 0);
                // fold_scale flushed these coordinates in this same round.
                self.raw[base..base + kk].copy_from_slice(&compact[pos..pos + kk]);
                sq += compact[pos..pos + kk].iter().map(|v| v * v).sum::<f64>();
                pos += kk;
            }
            self.sq[g] = sq;
        }
        Ok(())
    }

    /// Ends a round (updates the lazy average).
    ///
    /// # Complexity
    /// O(#groups).
    pub fn end_round(&mut self) {
        if let Some(a) = self.avg.as_mut() {
            a.end_round(&self.scale);
        }
    }

    /// The current weights as a dense vector in the layout above.
    pub fn dense(&self) -> Vec<f64> {
        let per_group = self.n_buckets * self.n_outputs;
        self.raw
            .iter()
            .enumerate()
            .map(|(i, v)| self.scale[i / per_group] * v)
            .collect()
    }

    /// The averaged weights as a dense vector (the current ones without
    /// averaging or before the first round).
    pub fn averaged_dense(&self) -> Vec<f64> {
        let per_group = self.n_buckets * self.n_outputs;
        match &self.avg {
            Some(a) if a.rounds > 0 => (0..self.raw.len())
                .map(|i| a.total(i, i / per_group, self.raw[i]) / a.rounds as f64)
                .collect(),
            _ => self.dense(),
        }
    }

    /// Number of completed rounds seen by the averager (0 without one).
    pub fn rounds(&self) -> u64 {
        self.avg.as_ref().map_or(0, |a| a.rounds)
    }

    /// Heap bytes held by the weights.
    pub fn heap_bytes(&self) -> usize {
        let f = std::mem::size_of::<f64>();
        let mut n = (self.raw.capacity() + self.scale.capacity() + self.sq.capacity()) * f
            + self.marked.capacity()
            + self
                .touched
                .iter()
                .map(|t| t.capacity() * 4 + 24)
                .sum::<usize>();
        if let Some(a) = &self.avg {
            n += (2 * a.pairs.capacity() + a.cum.capacity()) * f;
        }
        n
    }
}
