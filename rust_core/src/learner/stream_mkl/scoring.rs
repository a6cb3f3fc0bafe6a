//! Scoring: per-group scores of every `(position, label)` part, emission
//! and transition scores, and prediction.

use super::state::StreamMkl;
use crate::decode::chain::ChainScores;
use crate::error::Result;
use crate::kernel::spec::dot_f32;
use crate::kernel::support::sq_norm_f32;
use crate::macros::target_feature_fns;

/// Which coefficients to score with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iterate {
    /// The current iterate `θ_t`.
    Last,
    /// The average of the iterates of the rounds finished since the
    /// average (re)started ([`StreamMkl::restart_average`]).
    Average,
}

/// The positions of one example: feature vectors (`n × d` row-major), or
/// the ids of precomputed inputs (rows of the precomputed Gram matrices
/// and feature matrices).
#[derive(Debug, Clone, Copy)]
pub enum Example<'a> {
    /// Row-major `n × d` features.
    Vectors(&'a [f32]),
    /// Input ids `< m`.
    Ids(&'a [usize]),
}

/// `row = s Σ_f v_f W[f, :]` over the non-zero features `(idx, val)` of
/// an input, with `W` feature-major (`d × L`, `L = row.len()`), summed
/// feature by feature from `+0.0`.
#[inline(always)]
fn add_rows(w: &[f64], idx: &[u32], val: &[f64], s: f64, row: &mut [f64]) {
    let l = row.len();
    row.fill(0.0);
    for (&f, &v) in idx.iter().zip(val) {
        let sv = s * v;
        let f = f as usize;
        for (r, &w) in row.iter_mut().zip(&w[f * l..(f + 1) * l]) {
            *r += sv * w;
        }
    }
}

target_feature_fns! {
    add_rows(w: &[f64], idx: &[u32], val: &[f64], s: f64, row: &mut [f64]);
    "avx2" => add_rows_avx2,
}

/// [`add_rows`] for `L ≤ 8 NC` labels: the row is accumulated in `NC`
/// AVX-512 registers (from `+0.0`) and the weight rows read with masked
/// loads. Each lane computes `r + (s v) w` with a separate product and sum,
/// as [`add_rows`] does, so the results are the same.
///
/// # Safety
/// The CPU must support AVX-512F; `8 (NC - 1) < L = row.len() ≤ 8 NC`, and
/// `w` holds a row of `L` weights for every feature index in `idx`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_rows_avx512<const NC: usize>(
    w: &[f64],
    idx: &[u32],
    val: &[f64],
    s: f64,
    row: &mut [f64],
) {
    use std::arch::x86_64::*;
    let l = row.len();
    let mut masks = [0xffu8; NC];
    masks[NC - 1] = (0xffu32 >> (8 * NC - l)) as u8;
    let mut acc = [_mm512_setzero_pd(); NC];
    for (&f, &v) in idx.iter().zip(val) {
        let sv = _mm512_set1_pd(s * v);
        let wr = w.as_ptr().add(f as usize * l);
        for c in 0..NC {
            let x = _mm512_maskz_loadu_pd(masks[c], wr.add(8 * c));
            acc[c] = _mm512_add_pd(acc[c], _mm512_mul_pd(sv, x));
        }
    }
    for c in 0..NC {
        _mm512_mask_storeu_pd(row.as_mut_ptr().add(8 * c), masks[c], acc[c]);
    }
}

/// A loop computing `row = s W[idx, :]ᵀ val` (see [`add_rows`]).
type AddRows = unsafe fn(&[f64], &[u32], &[f64], f64, &mut [f64]);

/// The fastest [`AddRows`] loop the CPU has for rows of `l` labels, chosen
/// once for many rows; every loop gives the same results. Calling it is
/// safe when `row` holds `l` values and `w` a row of `l` weights per
/// feature index (the CPU features it needs were checked here).
fn add_rows_for(l: usize) -> AddRows {
    #[cfg(target_arch = "x86_64")]
    {
        if (1..=32).contains(&l) && std::arch::is_x86_feature_detected!("avx512f") {
            return match l.div_ceil(8) {
                1 => add_rows_avx512::<1>,
                2 => add_rows_avx512::<2>,
                3 => add_rows_avx512::<3>,
                _ => add_rows_avx512::<4>,
            };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return add_rows_avx2;
        }
    }
    add_rows as AddRows
}

/// `dst[i] = s · src[i]`, the same products as a scalar loop.
fn scaled_copy(src: &[f64], s: f64, dst: &mut [f64]) {
    #[inline(always)]
    fn copy(src: &[f64], s: f64, dst: &mut [f64]) {
        for (o, &v) in dst.iter_mut().zip(src) {
            *o = s * v;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn copy_avx2(src: &[f64], s: f64, dst: &mut [f64]) {
        copy(src, s, dst);
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn copy_avx512(src: &[f64], s: f64, dst: &mut [f64]) {
        copy(src, s, dst);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F, checked just above.
        unsafe { copy_avx512(src, s, dst) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { copy_avx2(src, s, dst) };
        return;
    }
    copy(src, s, dst);
}

impl StreamMkl {
    /// The iterate used for prediction (the average when configured and at
    /// least one round is finished).
    pub(super) fn predict_iterate(&self) -> Iterate {
        if self.config.average && self.average_rounds() > 0 {
            Iterate::Average
        } else {
            Iterate::Last
        }
    }

    /// Number of positions of an example (checked by the caller).
    pub(super) fn n_positions(&self, ex: Example<'_>) -> usize {
        match ex {
            Example::Vectors(x) => x.len() / self.d.max(1),
            Example::Ids(ids) => ids.len(),
        }
    }

    /// Per-group scores `f_g(x_p, y)` for the `n` positions of `ex`
    /// (checked by the caller), written as `n × G × L` into `out`
    /// (`G` = kernel plus explicit groups).
    ///
    /// # Complexity
    /// Vectors: O(n S (d + K L) + n D_E L). Ids: O(n (K + nnz_E) L) for the
    /// current iterate, O(n K m L) for the average.
    pub(super) fn group_scores(&self, ex: Example<'_>, it: Iterate, out: &mut Vec<f64>) {
        let n = self.n_positions(ex);
        let l = self.l;
        let g = self.n_groups();
        if !matches!((ex, it), (Example::Ids(_), Iterate::Last)) {
            // only the current iterate's id scores write every entry
            out.clear();
        }
        out.resize(n * g * l, 0.0);
        match ex {
            Example::Vectors(x) => self.vector_scores(x, n, it, out),
            Example::Ids(ids) => self.id_scores(ids, it, out),
        }
    }

    /// Coefficient `i` of a block under iterate `it`, and the factor that
    /// turns it into `θ` (scale, or `1/t` for the average).
    #[inline]
    fn coef_factor(&self, it: Iterate, scale: f64) -> f64 {
        match it {
            Iterate::Last => scale,
            Iterate::Average => 1.0 / self.average_rounds().max(1) as f64,
        }
    }

    /// Kernel-group scores `f_k(x, y)` of one position whose kernel columns
    /// are `xk`, written as `K × L` into `row` (which must hold zeros).
    ///
    /// # Complexity
    /// O(S (d + K L)).
    pub(super) fn kernel_scores_into(&self, xk: &[f32], it: Iterate, row: &mut [f64]) {
        let l = self.l;
        let nk = self.kgroups.len();
        let mut kv = vec![0.0; nk];
        let mut avg = vec![0.0; l];
        let sxx = sq_norm_f32(xk);
        for j in 0..self.support.len() {
            let dot = dot_f32(xk, self.support.row(j));
            let sjj = self.support.sq_norm(j);
            for (v, kern) in kv.iter_mut().zip(&self.config.kernels) {
                *v = kern.from_dot(dot, sxx, sjj);
            }
            for (k, &v) in kv.iter().enumerate() {
                if v == 0.0 && self.config.skip_zeros {
                    continue;
                }
                let dst = &mut row[k * l..(k + 1) * l];
                let block = &self.kgroups[k];
                let a: &[f64] = match it {
                    Iterate::Last => &block.raw()[j * l..(j + 1) * l],
                    Iterate::Average => {
                        for (y, c) in avg.iter_mut().enumerate() {
                            *c = block.average_sum(j * l + y);
                        }
                        &avg
                    }
                };
                for (o, &c) in dst.iter_mut().zip(a) {
                    *o += v * c;
                }
            }
        }
        for (k, block) in self.kgroups.iter().enumerate() {
            let f = self.coef_factor(it, block.scale());
            row[k * l..(k + 1) * l].iter_mut().for_each(|o| *o *= f);
        }
    }

    fn vector_scores(&self, x: &[f32], n: usize, it: Iterate, out: &mut [f64]) {
        let (d, l) = (self.d, self.l);
        let nk = self.kgroups.len();
        let kd = self.kernel_dim();
        let g = self.n_groups();
        for p in 0..n {
            let xp = &x[p * d..(p + 1) * d];
            let row = &mut out[p * g * l..(p + 1) * g * l];
            if nk > 0 {
                self.kernel_scores_into(&xp[..kd], it, &mut row[..nk * l]);
            }
            for (e, (block, cols)) in self
                .egroups
                .iter()
                .zip(&self.config.explicit_groups)
                .enumerate()
            {
                let dst = &mut row[(nk + e) * l..(nk + e + 1) * l];
                let f = self.coef_factor(it, block.scale());
                if it == Iterate::Last {
                    // the common case as slices (the same sums, in the same order)
                    for (&c, w) in cols.iter().zip(block.raw().chunks_exact(l)) {
                        let v = f64::from(xp[c]);
                        if v != 0.0 {
                            let fv = f * v;
                            for (o, &wy) in dst.iter_mut().zip(w) {
                                *o += fv * wy;
                            }
                        }
                    }
                    continue;
                }
                for (fi, &c) in cols.iter().enumerate() {
                    let v = f64::from(xp[c]);
                    if v == 0.0 {
                        continue;
                    }
                    for (y, o) in dst.iter_mut().enumerate() {
                        *o += f * v * block.average_sum(fi * l + y);
                    }
                }
            }
        }
    }

    fn id_scores(&self, ids: &[usize], it: Iterate, out: &mut [f64]) {
        let pre = self.pre.as_ref().expect("ids need precomputed inputs");
        let l = self.l;
        let (nk, g, m) = (self.kgroups.len(), self.n_groups(), pre.m);
        let mut avg = Vec::new();
        for (k, block) in self.kgroups.iter().enumerate() {
            match it {
                Iterate::Last => {
                    let cache = &pre.caches[k];
                    let s = block.scale();
                    for (p, &i) in ids.iter().enumerate() {
                        let dst = &mut out[(p * g + k) * l..(p * g + k + 1) * l];
                        for (y, o) in dst.iter_mut().enumerate() {
                            *o = s * cache[y * m + i];
                        }
                    }
                }
                Iterate::Average => {
                    let f = self.coef_factor(it, 1.0);
                    avg.resize(m * l, 0.0);
                    for (j, a) in avg.chunks_exact_mut(l).enumerate() {
                        for (y, v) in a.iter_mut().enumerate() {
                            *v = block.average_sum(j * l + y);
                        }
                    }
                    let gram = &pre.grams[k];
                    let mut col = vec![0.0; m];
                    for (p, &i) in ids.iter().enumerate() {
                        col.fill(0.0);
                        gram.axpy(i, 1.0, &mut col);
                        let dst = &mut out[(p * g + k) * l..(p * g + k + 1) * l];
                        for (j, &kij) in col.iter().enumerate() {
                            if kij != 0.0 {
                                for (o, &a) in dst.iter_mut().zip(&avg[j * l..(j + 1) * l]) {
                                    *o += kij * a;
                                }
                            }
                        }
                        dst.iter_mut().for_each(|o| *o *= f);
                    }
                }
            }
        }
        for (e, (block, rows)) in self.egroups.iter().zip(&pre.features).enumerate() {
            let avg_w: Vec<f64>;
            let (w, f) = match it {
                Iterate::Last => (block.raw(), block.scale()),
                Iterate::Average => {
                    avg_w = (0..block.len()).map(|i| block.average_sum(i)).collect();
                    (&avg_w[..], self.coef_factor(it, 1.0))
                }
            };
            let add = add_rows_for(l);
            for (p, &i) in ids.iter().enumerate() {
                let (idx, val) = rows.row(i);
                let dst = &mut out[(p * g + nk + e) * l..(p * g + nk + e + 1) * l];
                // SAFETY: `add` is for rows of `l` labels (its CPU features
                // checked), `dst` holds `l` values and `w` (`width × l`) a row
                // of `l` weights for every feature index of the input.
                unsafe { add(w, idx, val, f, dst) };
            }
        }
    }

    /// Sums the group scores (`n × G × L`) into emission scores `n × L`.
    pub(super) fn emissions_into(&self, gs: &[f64], n: usize, em: &mut Vec<f64>) {
        let (g, l) = (self.n_groups(), self.l);
        em.clear();
        em.resize(n * l, 0.0);
        for p in 0..n {
            let dst = &mut em[p * l..(p + 1) * l];
            for k in 0..g {
                let src = &gs[(p * g + k) * l..(p * g + k + 1) * l];
                for (o, &v) in dst.iter_mut().zip(src) {
                    *o += v;
                }
            }
        }
    }

    /// Transition scores `(L + 2) × L` (bigrams, start, stop); zeros (and
    /// unused) for multiclass models.
    pub(super) fn transition_scores_into(&self, it: Iterate, tr: &mut Vec<f64>) {
        let l = self.l;
        match &self.trans {
            None => {
                tr.clear();
                tr.resize((l + 2) * l, 0.0);
            }
            Some(b) => match it {
                Iterate::Last => {
                    // Every entry is written: no clearing.
                    tr.resize(b.len(), 0.0);
                    scaled_copy(b.raw(), b.scale(), tr);
                }
                Iterate::Average => {
                    tr.clear();
                    tr.extend(
                        (0..b.len())
                            .map(|i| b.average_sum(i) / self.average_rounds().max(1) as f64),
                    );
                }
            },
        }
    }

    /// The chain view of emission and transition scores.
    pub(super) fn chain_scores<'a>(
        &self,
        em: &'a [f64],
        tr: &'a [f64],
        n: usize,
    ) -> Result<ChainScores<'a>> {
        let l = self.l;
        let (bigrams, rest) = tr.split_at(l * l);
        let (start, stop) = rest.split_at(l);
        if self.config.chain {
            ChainScores::new(em, bigrams, Some(start), Some(stop), n, l)
        } else {
            ChainScores::new(em, bigrams, None, None, n, l)
        }
    }

    /// Emission scores `n × L` of the prediction iterate for `x` (`n × d`
    /// row-major; `n = 1` for multiclass models).
    pub fn scores(&self, x: &[f32], n: usize) -> Result<Vec<f64>> {
        self.check_x(x, n, self.d)?;
        self.example_scores(Example::Vectors(x))
    }

    /// Emission scores `n × L` of the prediction iterate for an example.
    pub fn example_scores(&self, ex: Example<'_>) -> Result<Vec<f64>> {
        let n = self.n_positions(ex);
        let mut gs = Vec::new();
        self.group_scores(ex, self.predict_iterate(), &mut gs);
        let mut em = Vec::new();
        self.emissions_into(&gs, n, &mut em);
        Ok(em)
    }

    /// The highest-scoring labelling of `x` (`n × d`, `n = x.len() / d`)
    /// under the prediction iterate (Viterbi for chains, argmax for
    /// multiclass; ties go to the smaller label).
    pub fn predict(&self, x: &[f32]) -> Result<Vec<usize>> {
        let n = x.len() / self.d;
        self.check_x(x, n.max(1), self.d)?;
        self.predict_example(Example::Vectors(x))
    }

    /// The highest-scoring labelling of the precomputed inputs `ids`.
    pub fn predict_ids(&self, ids: &[usize]) -> Result<Vec<usize>> {
        self.check_ids(ids)?;
        self.predict_example(Example::Ids(ids))
    }

    fn predict_example(&self, ex: Example<'_>) -> Result<Vec<usize>> {
        let n = self.n_positions(ex);
        let it = self.predict_iterate();
        let mut gs = Vec::new();
        self.group_scores(ex, it, &mut gs);
        self.decode_group_scores(&gs, n, it)
    }
}
