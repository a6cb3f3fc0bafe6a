//! Changes of a model between rounds: more labels or input columns (no
//! score changes), and the reactions to a drift alarm (the groups scaled
//! or zeroed, the schedule and the average restarted).

use super::state::StreamMkl;
use crate::error::{try_vec, OmklError, Result};
use crate::learner::weights::ScaledBlock;

impl StreamMkl {
    /// Adds labels up to `n_labels` (zero coefficients: scores unchanged).
    /// Fails with [`OmklError::Alloc`], nothing changed, when the memory
    /// cannot be had.
    ///
    /// # Complexity
    /// O(S K L + D_E L + L²).
    pub fn grow_labels(&mut self, n_labels: usize) -> Result<()> {
        let (old, new) = (self.l, n_labels);
        self.memo.clear();
        if new <= old {
            return Ok(());
        }
        let relaid = |bs: &[ScaledBlock]| -> Result<Vec<[Vec<f64>; 2]>> {
            bs.iter().map(|b| b.relaid_rows(old, new)).collect()
        };
        let (kparts, eparts) = (relaid(&self.kgroups)?, relaid(&self.egroups)?);
        // transitions: the `old` bigram rows widened, `new - old` zero rows
        // for the new previous labels, then the start and stop rows
        let tparts = match &self.trans {
            Some(b) => {
                let mut parts = b.relaid_rows(old, new)?;
                for v in parts.iter_mut().filter(|v| !v.is_empty()) {
                    let mut grown = try_vec("n_labels", &[new + 2, new], 0.0)?;
                    grown[..old * new].copy_from_slice(&v[..old * new]);
                    grown[new * new..].copy_from_slice(&v[old * new..]);
                    *v = grown;
                }
                Some(parts)
            }
            None => None,
        };
        let caches = match &self.pre {
            Some(pre) => pre
                .caches
                .iter()
                .map(|c| {
                    let mut v = try_vec("n_labels", &[new, pre.m], 0.0)?;
                    v[..c.len()].copy_from_slice(c);
                    Ok(v)
                })
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        for (b, parts) in self.kgroups.iter_mut().zip(kparts) {
            b.set_rows(parts, new);
        }
        for (b, parts) in self.egroups.iter_mut().zip(eparts) {
            b.set_rows(parts, new);
        }
        if let (Some(b), Some(parts)) = (&mut self.trans, tparts) {
            b.set_rows(parts, new);
        }
        if let Some(pre) = &mut self.pre {
            pre.caches = caches;
        }
        self.l = new;
        Ok(())
    }

    /// [`StreamMkl::grow_labels`] to `n_labels`, then
    /// [`StreamMkl::grow_dim`] to `d`, as one change: when either fails
    /// (an allocation too large), the model is unchanged.
    ///
    /// # Example
    /// ```
    /// use omkl_core::learner::stream_mkl::{StreamMkl, StreamMklConfig};
    /// let mut cfg = StreamMklConfig::multiclass(vec![], 1e-3, 1.0);
    /// cfg.explicit_groups = vec![vec![0, 1]];
    /// let mut m = StreamMkl::new(cfg, 2, 2).unwrap();
    /// let before = m.to_bytes();
    /// // three labels fit, but not 2^60 weight rows: nothing changes
    /// assert!(m.grow(1 << 60, 3).is_err());
    /// assert_eq!(m.to_bytes(), before);
    /// m.grow(4, 3).unwrap();
    /// assert_eq!((m.dim(), m.n_labels()), (4, 3));
    /// ```
    pub fn grow(&mut self, d: usize, n_labels: usize) -> Result<()> {
        if n_labels > self.l && d > self.d && self.pre.is_none() {
            let mut next = self.clone();
            next.grow_labels(n_labels)?;
            next.grow_dim(d)?;
            *self = next;
            return Ok(());
        }
        self.grow_labels(n_labels)?;
        self.grow_dim(d)
    }

    /// Grows the input dimension to `d ≥ dim()`: the new features are 0 in
    /// every stored support input, so no score changes. An explicit group
    /// over every input column (`0..dim()` in order, as the primal linear
    /// group) keeps covering them: the new columns join it with zero
    /// weights. Fails with [`OmklError::Alloc`], nothing changed, when the
    /// memory cannot be had.
    ///
    /// # Complexity
    /// O(S d) for the support inputs, O((d - dim()) L) per growing group.
    pub fn grow_dim(&mut self, d: usize) -> Result<()> {
        self.memo.clear();
        if d <= self.d || self.pre.is_some() {
            return Ok(());
        }
        let old = self.d;
        let spans_all =
            |cols: &[usize]| cols.len() == old && cols.iter().enumerate().all(|(i, &c)| i == c);
        let growing: Vec<usize> = if self.config.kernel_columns.is_none() {
            (0..self.egroups.len())
                .filter(|&e| spans_all(&self.config.explicit_groups[e]))
                .collect()
        } else {
            Vec::new()
        };
        let added = (d - old) * self.l;
        for &e in &growing {
            self.egroups[e].try_reserve_zeros(added, "d")?;
        }
        for &e in &growing {
            self.egroups[e].push_zeros(added);
            self.config.explicit_groups[e].extend(old..d);
        }
        if self.config.kernel_columns.is_none() {
            self.support.grow_dim(d);
        }
        self.d = d;
        Ok(())
    }

    /// Multiplies every group (kernel, explicit, transitions) by `c` in
    /// `[0, 1]`: `c = 0` zeroes the model. Norms stay exact and the running
    /// sums of the averaged iterate keep what they hold (the average is
    /// still over all finished rounds). A model over vectors with `c = 0`
    /// also drops its support inputs.
    ///
    /// # Complexity
    /// O(number of groups), O(S (d + K L)) when the support is dropped.
    pub fn scale_groups(&mut self, c: f64) -> Result<()> {
        crate::error::check_nonneg("c", c)?;
        if c > 1.0 {
            return Err(OmklError::invalid(
                "c",
                format!("expected a factor in [0, 1], got {c}"),
            ));
        }
        use crate::learner::round::GroupSet;
        self.memo.clear();
        for g in 0..GroupSet::n_groups(self) {
            self.rescale_group(g, c);
        }
        if c == 0.0 && self.pre.is_none() && !self.config.average {
            let l = self.l;
            while !self.support.is_empty() {
                let j = self.support.len() - 1;
                for b in &mut self.kgroups {
                    b.swap_remove_row(j, l);
                }
                self.support.swap_remove(j);
            }
            self.support_stamp.clear();
        }
        Ok(())
    }

    /// The reaction to a drift alarm: with `reset`, every group is zeroed
    /// ([`StreamMkl::scale_groups`]); the step-size schedule restarts and,
    /// when the model predicts with the averaged iterate, so does the
    /// average.
    pub fn react_to_drift(&mut self, reset: bool) -> Result<()> {
        if reset {
            self.scale_groups(0.0)?;
        }
        self.restart_schedule();
        if self.config.average {
            self.restart_average();
        }
        Ok(())
    }
}
