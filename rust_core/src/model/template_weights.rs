//! Weight tables for grouped hashed features: one `f32`
//! [`ScaledBlock`] per template, each with its own scale factor, squared
//! norm and lazy average.
//!
//! The parameters of template `t` are `θ_t = s_t · w_t`. A gradient step on a
//! few features touches only those slots; a proximal step that rescales
//! whole groups (ℓ2² shrinks every group by the same factor, the squared
//! ℓ2,1 prox of Alg. 3 shrinks each group by its own factor, or sets it to
//! zero) changes only the `T` scale factors. Each block lists the slots
//! written since it was last zero, so that setting a template to zero costs
//! O(slots written since), not O(table).
//!
//! # Complexity
//! `add` is `O(1)`; `scale_group` is `O(1)` except when a scale factor leaves
//! `[1e-4, 1e4]` or the group is zeroed (then `O(written slots)`, or
//! `O(table)` once more than an eighth of it was written); `averaged` is
//! `O(total slots)`.
//!
//! # Example
//! ```
//! use omkl_core::model::template_weights::TemplateWeights;
//! let mut w = TemplateWeights::new(&[4, 2]).unwrap();
//! w.add(0, 1, 2.0);
//! w.scale_group(0, 0.5);
//! w.end_step();
//! assert_eq!(w.get(0, 1), 1.0);
//! assert_eq!(w.group_norms(), vec![1.0, 0.0]);
//! ```

use crate::learner::weights::ScaledBlock;

/// Per-template weight tables; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateWeights {
    offsets: Vec<usize>,
    pub(crate) blocks: Vec<ScaledBlock<f32>>,
    pub(crate) steps: u64,
    /// Whether the tables are held ([`TemplateWeights::allocate`]); when
    /// not, every weight is zero.
    held: bool,
}

impl TemplateWeights {
    /// Zero tables with the given numbers of slots, or
    /// [`crate::OmklError::Alloc`] naming the table size when the memory
    /// cannot be had.
    pub fn new(sizes: &[usize]) -> crate::Result<Self> {
        let mut offsets = Vec::with_capacity(sizes.len() + 1);
        let mut total = 0;
        offsets.push(0);
        for &s in sizes {
            total += s;
            offsets.push(total);
        }
        let blocks = sizes
            .iter()
            .map(|&s| ScaledBlock::tracked(s, 1, true, "table size"))
            .collect::<crate::Result<_>>()?;
        Ok(TemplateWeights {
            offsets,
            blocks,
            steps: 0,
            held: true,
        })
    }

    /// All-zero tables of the given numbers of slots that hold no memory
    /// until [`TemplateWeights::allocate`]: a parser that is built and then
    /// loaded, or frozen, never pays for training tables.
    pub fn unallocated(sizes: &[usize]) -> Self {
        Self::sizes_only(sizes, 0)
    }

    /// Whether the tables are held (see [`TemplateWeights::unallocated`]).
    pub fn is_allocated(&self) -> bool {
        self.held
    }

    /// Allocates the zero tables of unallocated weights (nothing when they
    /// are held), keeping the step count, or returns
    /// [`crate::OmklError::Alloc`], nothing changed.
    ///
    /// # Complexity
    /// O(slots) when it allocates, O(1) otherwise.
    pub fn allocate(&mut self) -> crate::Result<()> {
        if self.held {
            return Ok(());
        }
        let sizes: Vec<usize> = (0..self.n_groups()).map(|t| self.group_size(t)).collect();
        let steps = self.steps;
        *self = Self::new(&sizes)?;
        self.steps = steps;
        Ok(())
    }

    /// The table sizes and step count of a frozen model: no table is held
    /// (a frozen parser predicts from its averaged table); every weight
    /// reads as zero, and the caller refuses to learn.
    pub fn sizes_only(sizes: &[usize], steps: u64) -> Self {
        let mut offsets = Vec::with_capacity(sizes.len() + 1);
        offsets.push(0);
        for &s in sizes {
            offsets.push(offsets[offsets.len() - 1] + s);
        }
        TemplateWeights {
            offsets,
            blocks: sizes.iter().map(|_| ScaledBlock::zeros(0)).collect(),
            steps,
            held: false,
        }
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.blocks.len()
    }

    /// Total number of slots.
    pub fn n_slots(&self) -> usize {
        self.offsets[self.blocks.len()]
    }

    /// Slots of group `t`.
    pub fn group_size(&self, t: usize) -> usize {
        self.offsets[t + 1] - self.offsets[t]
    }

    /// Number of completed steps.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Current `θ_t[slot]`.
    #[inline(always)]
    pub fn get(&self, t: usize, slot: usize) -> f64 {
        if !self.held {
            return 0.0;
        }
        self.blocks[t].get(slot)
    }

    /// The scale factor of `t` and its raw table (θ_t = scale · table);
    /// scale 0 and an empty table when the tables are not held.
    #[inline(always)]
    pub fn raw(&self, t: usize) -> (f64, &[f32]) {
        if !self.held {
            return (0.0, &[]);
        }
        let b = &self.blocks[t];
        (b.scale(), b.raw())
    }

    /// `θ_t[slot] += delta`.
    #[inline]
    pub fn add(&mut self, t: usize, slot: usize, delta: f64) {
        self.blocks[t].add_tracked(slot, delta);
    }

    /// `θ_t *= r` (`r >= 0`); `r = 0` sets the group to zero.
    pub fn scale_group(&mut self, t: usize, r: f64) {
        self.blocks[t].scale_by(r);
    }

    /// Ends one step: adds the current parameters to the running average.
    pub fn end_step(&mut self) {
        self.blocks.iter_mut().for_each(ScaledBlock::end_round);
        self.steps += 1;
    }

    /// `‖θ_t‖₂` of every group.
    pub fn group_norms(&self) -> Vec<f64> {
        self.blocks.iter().map(|b| b.sq_norm().sqrt()).collect()
    }

    /// Recomputes the squared norms exactly (removes rounding drift).
    pub fn refresh_norms(&mut self) {
        self.blocks
            .iter_mut()
            .for_each(ScaledBlock::refresh_sq_norm);
    }

    /// The average of θ over all completed steps, flattened (group `t` at
    /// `offsets()[t]..offsets()[t + 1]`); the current θ when no step is done.
    /// Fails with [`crate::OmklError::Alloc`] when the memory cannot be had.
    pub fn averaged(&self) -> crate::Result<Vec<f32>> {
        let mut out = zeroed_table(self.n_slots())?;
        self.average_into(&mut out)?;
        Ok(out)
    }

    /// [`TemplateWeights::averaged`] written into `out`, a table of
    /// `n_slots()` values (as one of an earlier epoch): no allocation. Fails,
    /// `out` unchanged, when `out` has another size.
    pub fn average_into(&self, out: &mut [f32]) -> crate::Result<()> {
        if self.steps == 0 {
            return self.fill(out, ScaledBlock::get);
        }
        let k = self.steps as f64;
        self.fill(out, |b, i| b.average_sum(i) / k)
    }

    /// The current θ, flattened like [`TemplateWeights::averaged`].
    pub fn current(&self) -> crate::Result<Vec<f32>> {
        let mut out = zeroed_table(self.n_slots())?;
        self.fill(&mut out, ScaledBlock::get)?;
        Ok(out)
    }

    fn fill(
        &self,
        out: &mut [f32],
        f: impl Fn(&ScaledBlock<f32>, usize) -> f64,
    ) -> crate::Result<()> {
        if out.len() != self.n_slots() {
            return Err(crate::OmklError::shape(
                "averaged table",
                format!("{} values", self.n_slots()),
                format!("{} values", out.len()),
            ));
        }
        if !self.held {
            out.fill(0.0);
            return Ok(());
        }
        for (t, b) in self.blocks.iter().enumerate() {
            let (a, z) = (self.offsets[t], self.offsets[t + 1]);
            for (i, o) in out[a..z].iter_mut().enumerate() {
                *o = f(b, i) as f32;
            }
        }
        Ok(())
    }

    /// Appends the state to `out` (little-endian, deterministic): the
    /// group count and sizes, the step count, then per group its scale,
    /// running sum of scales, raw squared norm and a zero flag (always 0
    /// now; 1 marked a group set to zero with scale 0), then every table and
    /// every averaging sum.
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.blocks.len() as u64).to_le_bytes());
        for g in 0..self.blocks.len() {
            out.extend_from_slice(&(self.group_size(g) as u64).to_le_bytes());
        }
        out.extend_from_slice(&self.steps.to_le_bytes());
        for b in &self.blocks {
            for v in [b.scale(), b.average_parts().1, b.raw_sq_norm()] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.push(0);
        }
        if !self.held {
            // the zero tables and sums of a new block
            out.resize(out.len() + 8 * self.n_slots(), 0);
            return;
        }
        for b in &self.blocks {
            for x in b.raw() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        for b in &self.blocks {
            for x in b.average_parts().0 {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }

    /// Reads a state written by [`TemplateWeights::write_bytes`]. The
    /// tables' total size is checked against the bytes left before they
    /// are allocated; scales must be finite and > 0 (0 for a group flagged
    /// as set to zero), running sums finite, squared norms finite and >= 0,
    /// and every weight finite.
    pub fn read_from(r: &mut crate::persist::Reader<'_>) -> crate::Result<Self> {
        use crate::persist::{check_scale, check_sq_norm};
        let t = r.count("group count", 8 + 25)?;
        let mut sizes = Vec::with_capacity(t);
        let mut total: u64 = 0;
        for _ in 0..t {
            let s = r.u64()?;
            total = total.saturating_add(s);
            sizes.push(s);
        }
        // the header left (steps, then 25 bytes per group), then w and u
        let need = total
            .checked_mul(8)
            .and_then(|b| b.checked_add(8 + 25 * t as u64));
        if need.is_none_or(|n| n > r.remaining() as u64) {
            return Err(r.error(format!(
                "group sizes sum to {total} slots, more than the {} bytes left can hold",
                r.remaining()
            )));
        }
        let sizes: Vec<usize> = sizes.into_iter().map(|s| s as usize).collect();
        let mut w = TemplateWeights::new(&sizes)?;
        w.steps = r.u64()?;
        let mut zeroed = Vec::new();
        for (g, b) in w.blocks.iter_mut().enumerate() {
            let (s, p, q) = (r.f64()?, r.f64()?, r.f64()?);
            let what = format!("state of template group {g}");
            let zero = match r.u8()? {
                0 => false,
                1 if s == 0.0 => true,
                1 => return Err(r.error(format!("group {g} is set to zero but has scale {s}"))),
                f => return Err(r.error(format!("group {g}: unknown flag {f}"))),
            };
            if !zero {
                check_scale(&what, s)?;
            }
            check_sq_norm(&what, q)?;
            if !p.is_finite() {
                return Err(r.error(format!("group {g}: non-finite running sum of scales")));
            }
            // the written slots are unknown: zeroing clears the whole table
            b.restore((if zero { 1.0 } else { s }, q, p), &[], &[], &[], None);
            zeroed.push(zero);
        }
        for part in [0, 1] {
            for b in &mut w.blocks {
                let (a, u) = b.parts_mut();
                let v = if part == 0 { a } else { u };
                r.f32s(v.len(), v)?;
                if v.iter().any(|x| !x.is_finite()) {
                    return Err(r.error("non-finite weight in the tables"));
                }
            }
        }
        for (b, zero) in w.blocks.iter_mut().zip(zeroed) {
            if zero {
                b.scale_by(0.0);
            }
        }
        Ok(w)
    }

    /// Start offsets of the groups in the flattened layout (`T + 1` entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}

crate::learner::round::group_set_over_blocks!(TemplateWeights);

/// A zeroed table of `n` weights (see [`crate::learner::zeroed`]), or
/// [`crate::OmklError::Alloc`] naming the table size.
pub fn zeroed_table(n: usize) -> crate::Result<Vec<f32>> {
    crate::learner::zeroed(n, "table size")
}
