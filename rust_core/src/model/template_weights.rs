//! Weight tables for grouped hashed features: one `f32` table per template,
//! each with its own scale factor, incremental squared norm and lazy
//! averaging.
//!
//! The parameters of template `t` are `θ_t = s_t · w_t`. A gradient step on a
//! few features touches only those slots (`w += δ / s_t`); a proximal step
//! that rescales whole groups (ℓ2² shrinks every group by the same factor,
//! the squared ℓ2,1 prox of Alg. 3 shrinks each group by its own factor, or
//! sets it to zero) changes only the `T` scale factors.
//!
//! Averaging: with `S_t` the running sum of `s_t` over steps, the running sum
//! of `θ_t` over steps is `S_t · w - u` where `u += S_t · δw` at every write
//! (the lazy-averaging trick of Daumé III, extended to a scale factor per
//! group). A template set to zero keeps `s_t = 0` until it is next written,
//! when only the slots written since it was last cleared are reset.
//!
//! # Complexity
//! `add` is `O(1)`; `scale_group` is `O(1)` except when a scale factor leaves
//! `[1e-4, 1e4]` (then `O(table)`, rare); `averaged` is `O(total slots)`.
//!
//! # Example
//! ```
//! use omkl_core::model::template_weights::TemplateWeights;
//! let mut w = TemplateWeights::new(&[4, 2]);
//! w.add(0, 1, 2.0);
//! w.scale_group(0, 0.5);
//! w.end_step();
//! assert_eq!(w.get(0, 1), 1.0);
//! assert_eq!(w.group_norms(), vec![1.0, 0.0]);
//! ```

/// Scale factors outside `[SCALE_LO, SCALE_HI]` are folded into the table.
const SCALE_LO: f64 = 1e-4;
const SCALE_HI: f64 = 1e4;

/// Per-template weight tables; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateWeights {
    offsets: Vec<usize>,
    w: Vec<f32>,
    u: Vec<f32>,
    scale: Vec<f64>,
    cum_scale: Vec<f64>,
    sq: Vec<f64>,
    dead: Vec<bool>,
    /// Slots written since the group was last all-zero (None = too many).
    touched: Vec<Option<Vec<u32>>>,
    steps: u64,
}

impl TemplateWeights {
    /// Zero tables with the given numbers of slots.
    pub fn new(sizes: &[usize]) -> Self {
        let mut offsets = Vec::with_capacity(sizes.len() + 1);
        let mut total = 0;
        offsets.push(0);
        for &s in sizes {
            total += s;
            offsets.push(total);
        }
        let t = sizes.len();
        TemplateWeights {
            offsets,
            w: zeroed_table(total),
            u: zeroed_table(total),
            scale: vec![1.0; t],
            cum_scale: vec![0.0; t],
            sq: vec![0.0; t],
            dead: vec![false; t],
            touched: vec![Some(Vec::new()); t],
            steps: 0,
        }
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.scale.len()
    }

    /// Total number of slots.
    pub fn n_slots(&self) -> usize {
        self.w.len()
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
        self.scale[t] * self.w[self.offsets[t] + slot] as f64
    }

    /// The scale factor of `t` and its raw table (θ_t = scale · table).
    #[inline(always)]
    pub fn raw(&self, t: usize) -> (f64, &[f32]) {
        (self.scale[t], &self.w[self.offsets[t]..self.offsets[t + 1]])
    }

    fn revive(&mut self, t: usize) {
        let off = self.offsets[t];
        let s_cum = self.cum_scale[t];
        let reset = |i: usize, w: &mut [f32], u: &mut [f32]| {
            u[i] -= (s_cum * w[i] as f64) as f32;
            w[i] = 0.0;
        };
        match self.touched[t].take() {
            Some(list) => {
                for &i in &list {
                    reset(off + i as usize, &mut self.w, &mut self.u);
                }
            }
            None => {
                for i in off..self.offsets[t + 1] {
                    reset(i, &mut self.w, &mut self.u);
                }
            }
        }
        self.touched[t] = Some(Vec::new());
        self.sq[t] = 0.0;
        self.scale[t] = 1.0;
        self.dead[t] = false;
    }

    /// `θ_t[slot] += delta`.
    #[inline]
    pub fn add(&mut self, t: usize, slot: usize, delta: f64) {
        if self.dead[t] {
            self.revive(t);
        }
        let i = self.offsets[t] + slot;
        let old = self.w[i] as f64;
        let d = delta / self.scale[t];
        let new = old + d;
        self.w[i] = new as f32;
        self.u[i] += (self.cum_scale[t] * d) as f32;
        self.sq[t] += new * new - old * old;
        let size = self.group_size(t);
        if let Some(list) = &mut self.touched[t] {
            if list.len() * 8 >= size {
                self.touched[t] = None;
            } else {
                list.push(slot as u32);
            }
        }
    }

    /// `θ_t *= r` (`r >= 0`); `r = 0` sets the group to zero.
    pub fn scale_group(&mut self, t: usize, r: f64) {
        if self.dead[t] {
            return;
        }
        if r == 0.0 {
            self.dead[t] = true;
            self.scale[t] = 0.0;
            return;
        }
        let s = self.scale[t] * r;
        if s == 0.0 {
            self.dead[t] = true;
            self.scale[t] = 0.0;
            return;
        }
        self.scale[t] = s;
        if !(SCALE_LO..=SCALE_HI).contains(&s) {
            // Fold s into the table (w' = s w, s' = 1) and restart the running
            // sum of scales from S' = 0 with u' = -(S w - u), which keeps the
            // running sum of θ and keeps every quantity bounded.
            let (a, b) = (self.offsets[t], self.offsets[t + 1]);
            let s_cum = self.cum_scale[t];
            for (w, u) in self.w[a..b].iter_mut().zip(&mut self.u[a..b]) {
                *u = -(s_cum * *w as f64 - *u as f64) as f32;
                *w = (*w as f64 * s) as f32;
            }
            self.sq[t] = self.w[a..b].iter().map(|&x| (x as f64) * (x as f64)).sum();
            self.cum_scale[t] = 0.0;
            self.scale[t] = 1.0;
        }
    }

    /// Ends one step: adds the current parameters to the running average.
    pub fn end_step(&mut self) {
        for t in 0..self.scale.len() {
            self.cum_scale[t] += self.scale[t];
        }
        self.steps += 1;
    }

    /// `‖θ_t‖₂` of every group.
    pub fn group_norms(&self) -> Vec<f64> {
        (0..self.scale.len())
            .map(|t| {
                if self.dead[t] {
                    0.0
                } else {
                    self.scale[t] * self.sq[t].max(0.0).sqrt()
                }
            })
            .collect()
    }

    /// Recomputes the squared norms exactly (removes rounding drift).
    pub fn refresh_norms(&mut self) {
        for t in 0..self.scale.len() {
            let (a, b) = (self.offsets[t], self.offsets[t + 1]);
            self.sq[t] = self.w[a..b].iter().map(|&x| (x as f64) * (x as f64)).sum();
        }
    }

    /// The average of θ over all completed steps, flattened (group `t` at
    /// `offsets()[t]..offsets()[t + 1]`); the current θ when no step is done.
    pub fn averaged(&self) -> Vec<f32> {
        if self.steps == 0 {
            return self.current();
        }
        let mut out = zeroed_table(self.w.len());
        let k = self.steps as f64;
        for t in 0..self.scale.len() {
            let (a, b) = (self.offsets[t], self.offsets[t + 1]);
            let s_cum = self.cum_scale[t];
            for ((o, &w), &u) in out[a..b].iter_mut().zip(&self.w[a..b]).zip(&self.u[a..b]) {
                *o = ((s_cum * w as f64 - u as f64) / k) as f32;
            }
        }
        out
    }

    /// The current θ, flattened like [`TemplateWeights::averaged`].
    pub fn current(&self) -> Vec<f32> {
        let mut out = zeroed_table(self.w.len());
        for t in 0..self.scale.len() {
            let s = if self.dead[t] { 0.0 } else { self.scale[t] };
            let (a, b) = (self.offsets[t], self.offsets[t + 1]);
            for (o, &w) in out[a..b].iter_mut().zip(&self.w[a..b]) {
                *o = (s * w as f64) as f32;
            }
        }
        out
    }

    /// Appends the state to `out` (little-endian, deterministic).
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        let t = self.scale.len();
        out.extend_from_slice(&(t as u64).to_le_bytes());
        for g in 0..t {
            out.extend_from_slice(&(self.group_size(g) as u64).to_le_bytes());
        }
        out.extend_from_slice(&self.steps.to_le_bytes());
        for g in 0..t {
            for v in [self.scale[g], self.cum_scale[g], self.sq[g]] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.push(self.dead[g] as u8);
        }
        for x in self.w.iter().chain(&self.u) {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// Reads a state written by [`TemplateWeights::write_bytes`] from
    /// `bytes[*pos..]`, advancing `pos` (see [`TemplateWeights::read_from`]).
    pub fn read_bytes(bytes: &[u8], pos: &mut usize) -> crate::Result<Self> {
        let rest = bytes
            .get(*pos..)
            .ok_or_else(|| crate::OmklError::invalid("state", "truncated"))?;
        let mut r = crate::persist::Reader::new(rest, "state");
        let w = Self::read_from(&mut r)?;
        *pos = bytes.len() - r.remaining();
        Ok(w)
    }

    /// Reads a state written by [`TemplateWeights::write_bytes`]. The
    /// tables' total size is checked against the bytes left before they
    /// are allocated; scales must be finite and > 0 (0 for a group set to
    /// zero), running sums finite, squared norms finite and >= 0, and every
    /// weight finite.
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
        let mut w = TemplateWeights::new(&sizes);
        w.steps = r.u64()?;
        for g in 0..t {
            w.scale[g] = r.f64()?;
            w.cum_scale[g] = r.f64()?;
            w.sq[g] = r.f64()?;
            w.dead[g] = match r.u8()? {
                0 => false,
                1 => true,
                f => return Err(r.error(format!("group {g}: unknown flag {f}"))),
            };
            let what = format!("state of template group {g}");
            if w.dead[g] {
                if w.scale[g] != 0.0 {
                    return Err(r.error(format!(
                        "group {g} is set to zero but has scale {}",
                        w.scale[g]
                    )));
                }
            } else {
                check_scale(&what, w.scale[g])?;
            }
            check_sq_norm(&what, w.sq[g])?;
            if !w.cum_scale[g].is_finite() {
                return Err(r.error(format!("group {g}: non-finite running sum of scales")));
            }
            // the written slots are unknown: a revival clears the whole table
            w.touched[g] = None;
        }
        let n = w.w.len();
        r.f32s(n, &mut w.w)?;
        r.f32s(n, &mut w.u)?;
        if w.w.iter().chain(&w.u).any(|v| !v.is_finite()) {
            return Err(r.error("non-finite weight in the tables"));
        }
        Ok(w)
    }

    /// Start offsets of the groups in the flattened layout (`T + 1` entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}

/// A zeroed table of `n` weights. On Linux, a table of at least 4 MiB is
/// advised to the kernel as huge-page memory (`MADV_HUGEPAGE`) before it is
/// first written: scoring reads tables at random slots, and 2 MiB pages
/// spare most of the address-translation misses of 4 KiB ones. The advice
/// never changes the contents; where the kernel ignores it, nothing changes.
pub fn zeroed_table(n: usize) -> Vec<f32> {
    let v = vec![0.0f32; n];
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (ptr, len) = (v.as_ptr() as usize, std::mem::size_of_val(&v[..]));
        let (start, end) = ((ptr + HUGE - 1) & !(HUGE - 1), (ptr + len) & !(HUGE - 1));
        if len >= 2 * HUGE && end > start {
            // SAFETY: the range lies inside the allocation of `v` and is
            // page-aligned; MADV_HUGEPAGE only advises the kernel on how to
            // back the memory and keeps its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    v
}

/// Reads a little-endian `u64` at `bytes[*pos..]`, advancing `pos`.
pub fn read_u64(bytes: &[u8], pos: &mut usize) -> crate::Result<u64> {
    let b = bytes
        .get(*pos..*pos + 8)
        .ok_or_else(|| crate::OmklError::invalid("state", "truncated"))?;
    *pos += 8;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Dense reference: explicit θ and explicit running sum.
    struct Dense {
        theta: Vec<Vec<f64>>,
        sum: Vec<Vec<f64>>,
        steps: u64,
    }

    proptest! {
        #[test]
        fn matches_a_dense_reference(
            ops in proptest::collection::vec(
                (0usize..3, 0usize..4, -2.0f64..2.0, prop_oneof![Just(0.0), 0.3f64..1.0, Just(1.0)]),
                1..60,
            )
        ) {
            let sizes = [4usize, 4, 4];
            let mut w = TemplateWeights::new(&sizes);
            let mut d = Dense {
                theta: vec![vec![0.0; 4]; 3],
                sum: vec![vec![0.0; 4]; 3],
                steps: 0,
            };
            for (i, &(t, slot, delta, r)) in ops.iter().enumerate() {
                w.add(t, slot, delta);
                d.theta[t][slot] += delta;
                if i % 3 == 0 {
                    w.scale_group(t, r);
                    for x in &mut d.theta[t] { *x *= r; }
                }
                if i % 2 == 0 {
                    // tiny factors force folding the scale into the table
                    w.scale_group((t + 1) % 3, 1e-5);
                    w.scale_group((t + 1) % 3, 1e5);
                    w.scale_group((t + 2) % 3, 1e-30);
                    w.scale_group((t + 2) % 3, 1e30);
                    for x in &mut d.theta[(t + 2) % 3] { *x = (*x * 1e-30) * 1e30; }
                }
                w.end_step();
                for g in 0..3 { for s in 0..4 { d.sum[g][s] += d.theta[g][s]; } }
                d.steps += 1;
            }
            let mut bytes = Vec::new();
            w.write_bytes(&mut bytes);
            let mut pos = 0;
            let back = TemplateWeights::read_bytes(&bytes, &mut pos).unwrap();
            prop_assert_eq!(pos, bytes.len());
            prop_assert_eq!(back.averaged(), w.averaged());
            prop_assert!(TemplateWeights::read_bytes(&bytes[..bytes.len() - 1], &mut 0).is_err());
            let avg = w.averaged();
            let cur = w.current();
            let norms = w.group_norms();
            for g in 0..3 {
                let n: f64 = d.theta[g].iter().map(|x| x * x).sum::<f64>().sqrt();
                prop_assert!((norms[g] - n).abs() <= 1e-3 * (1.0 + n), "norm {} vs {}", norms[g], n);
                for s in 0..4 {
                    let a = d.sum[g][s] / d.steps as f64;
                    prop_assert!((avg[g * 4 + s] as f64 - a).abs() <= 1e-3 * (1.0 + a.abs()));
                    prop_assert!((cur[g * 4 + s] as f64 - d.theta[g][s]).abs() <= 1e-3 * (1.0 + d.theta[g][s].abs()));
                    let got = w.get(g, s);
                    prop_assert!((got - d.theta[g][s]).abs() <= 1e-3 * (1.0 + d.theta[g][s].abs()));
                }
            }
        }
    }
}
