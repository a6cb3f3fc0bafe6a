//! One round of Alg. 3 (and of Alg. 1 on its groups): decode, subgradient
//! step with the §3.4 norm identity, prox on the group norms, optional ball
//! projection and budget, then averaging. The same round serves examples
//! given as feature vectors and as ids of precomputed inputs.

use super::config::StreamLoss;
use super::rates::rate;
use super::scoring::{Example, Iterate};
use super::scratch::Scratch;
use super::state::StreamMkl;
use crate::decode::forward_backward::forward_backward;
use crate::decode::viterbi::{viterbi, viterbi_hamming};
use crate::error::{check_finite, Result};
use crate::learner::round::{rescale_to, shrink_norms, GroupSet};
use crate::prox::Regularizer;

/// The groups of a model in round order (kernel groups, explicit groups,
/// transitions); rescaling a kernel group also rescales its score cache
/// when the scale is folded into the coefficients.
impl GroupSet for StreamMkl {
    fn n_groups(&self) -> usize {
        self.blocks().count()
    }
    fn group_sq_norm(&self, g: usize) -> f64 {
        self.blocks().nth(g).map_or(0.0, |b| b.sq_norm())
    }
    fn rescale_group(&mut self, g: usize, c: f64) {
        let nk = self.kgroups.len();
        if g < nk {
            if let (Some(f), Some(pre)) = (self.kgroups[g].scale_by(c), self.pre.as_mut()) {
                pre.caches[g].iter_mut().for_each(|v| *v *= f);
            }
        } else if let Some(b) = self.blocks_mut().nth(g) {
            b.scale_by(c);
        }
    }
}

impl StreamMkl {
    /// The loss of `(ex, y)` under the current iterate (no change): the
    /// structured hinge with Hamming cost, or the CRF loss.
    pub(super) fn loss_of(&self, ex: Example<'_>, y: &[usize], s: &mut Scratch) -> Result<f64> {
        let n = y.len();
        self.group_scores(ex, Iterate::Last, &mut s.gs);
        self.emissions_into(&s.gs, n, &mut s.em);
        self.transition_scores_into(Iterate::Last, &mut s.tr);
        let chain = self.chain_scores(&s.em, &s.tr, n)?;
        let gold = chain.score_of_unchecked(y);
        Ok(match self.config.loss {
            StreamLoss::Hinge => {
                s.ws.out.resize(n, 0);
                let aug = viterbi_hamming(
                    &chain,
                    y,
                    self.config.cost,
                    &mut s.ws.viterbi,
                    &mut s.ws.out,
                )?;
                (aug - gold).max(0.0)
            }
            StreamLoss::Crf => {
                s.node.resize(n * self.l, 0.0);
                s.pair.resize(self.l * self.l, 0.0);
                let log_z = forward_backward(&chain, &mut s.ws.fb, &mut s.node, &mut s.pair)?;
                (log_z - gold).max(0.0)
            }
        })
    }

    /// The round proper, on validated input.
    pub(super) fn round(&mut self, ex: Example<'_>, y: &[usize]) -> Result<f64> {
        let mut s = self.scratch.take();
        let r = self.round_with(ex, y, &mut s);
        self.scratch.put(s);
        r
    }

    /// Decodes and writes the step of this round into `s.c` (`n × L`, the
    /// change of the coefficient of every part) and `s.dtr` (transitions),
    /// for the rate `eta`; no change to `self`. Returns the loss.
    fn step(&self, n: usize, y: &[usize], eta: f64, s: &mut Scratch) -> Result<f64> {
        let l = self.l;
        // one group: its scores are the emission scores (the sum would add
        // each to 0.0, which changes no bit: a score is never -0.0)
        let em = if self.n_groups() == 1 {
            &s.gs[..n * l]
        } else {
            self.emissions_into(&s.gs, n, &mut s.em);
            &s.em[..]
        };
        self.transition_scores_into(Iterate::Last, &mut s.tr);
        let chain = self.chain_scores(em, &s.tr, n)?;
        if self.config.count_mistakes {
            // the prediction before the update, for prequential error counts
            s.pred.resize(n, 0);
            viterbi(&chain, &mut s.ws.viterbi, &mut s.pred)?;
            s.mistakes = s.pred.iter().zip(y).filter(|(a, b)| a != b).count();
        }
        // `c` and `dtr` are zero but for the rows and entries the previous
        // step listed in `touched` and `dtr_nz`: clear those only.
        let n_tr = if self.config.chain { (l + 2) * l } else { 0 };
        if s.c_labels != l || s.dtr.len() != n_tr {
            s.c.clear();
            s.dtr.clear();
            s.dtr.resize(n_tr, 0.0);
            s.c_labels = l;
        } else {
            for &p in &s.touched {
                s.c[p * l..(p + 1) * l].fill(0.0);
            }
            for &i in &s.dtr_nz {
                s.dtr[i] = 0.0;
            }
        }
        if s.c.len() < n * l {
            s.c.resize(n * l, 0.0);
        }
        s.touched.clear();
        s.pairs.clear();
        s.dtr_nz.clear();
        let (c, dtr) = (&mut s.c[..n * l], &mut s.dtr);
        let loss;
        match self.config.loss {
            StreamLoss::Hinge => {
                s.ws.out.resize(n, 0);
                let out = &mut s.ws.out;
                let aug = viterbi_hamming(&chain, y, self.config.cost, &mut s.ws.viterbi, out)?;
                loss = (aug - chain.score_of_unchecked(y)).max(0.0);
                if out[..] != *y {
                    for p in 0..n {
                        if out[p] != y[p] {
                            c[p * l + y[p]] += eta;
                            c[p * l + out[p]] -= eta;
                            s.touched.push(p);
                            s.pairs.push((y[p].min(out[p]), y[p].max(out[p])));
                        }
                    }
                    if self.config.chain {
                        add_path(dtr, l, y, eta);
                        add_path(dtr, l, out, -eta);
                        // the entries of both paths that did not cancel,
                        // in increasing order (few: the paths mostly agree)
                        nonzero_path_indices(&mut s.dtr_nz, &mut s.dtr_marks, dtr, l, [y, out]);
                    }
                }
            }
            StreamLoss::Crf => {
                s.node.resize(n * l, 0.0);
                s.pair.resize(l * l, 0.0);
                let (node, pair) = (&mut s.node, &mut s.pair);
                let log_z = forward_backward(&chain, &mut s.ws.fb, node, pair)?;
                loss = (log_z - chain.score_of_unchecked(y)).max(0.0);
                for (ci, mu) in c.iter_mut().zip(node.iter()) {
                    *ci = -eta * mu;
                }
                for (p, &yp) in y.iter().enumerate() {
                    c[p * l + yp] += eta;
                }
                if self.config.chain {
                    add_path(dtr, l, y, eta);
                    for (dv, mu) in dtr[..l * l].iter_mut().zip(pair.iter()) {
                        *dv -= eta * mu;
                    }
                    for yy in 0..l {
                        dtr[l * l + yy] -= eta * node[yy];
                        dtr[(l + 1) * l + yy] -= eta * node[(n - 1) * l + yy];
                    }
                }
                s.touched.extend(0..n);
                s.dtr_nz.extend(0..dtr.len());
                check_finite("gradient", c)?;
                check_finite("gradient", dtr)?;
                s.touched
                    .retain(|&p| c[p * l..(p + 1) * l].iter().any(|&v| v != 0.0));
                s.dtr_nz.retain(|&i| dtr[i] != 0.0);
            }
        }
        Ok(loss)
    }

    /// Adds the step `c` to the kernel and explicit groups (raw changes;
    /// the explicit groups keep their norms exactly as they are written,
    /// the kernel groups' norms follow in [`StreamMkl::round_with`]).
    fn apply_step(&mut self, ex: Example<'_>, s: &mut Scratch) {
        let l = self.l;
        let nk = self.kgroups.len();
        let (c, touched) = (&s.c, &s.touched);
        let rates = &self.config.group_rates;
        match ex {
            Example::Vectors(x) => {
                let (d, kd, t) = (self.d, self.kernel_dim(), self.t + 1);
                let pairs = Some(&s.pairs).filter(|v| v.len() == touched.len());
                let (fidx, fval) = (&mut s.fidx, &mut s.fval);
                for (k, &p) in touched.iter().enumerate() {
                    let xp = &x[p * d..(p + 1) * d];
                    let cp = &c[p * l..(p + 1) * l];
                    if nk > 0 {
                        let (j, new) = self.support.insert(&xp[..kd]);
                        if new {
                            self.support_stamp.push(t);
                        } else {
                            self.support_stamp[j] = t;
                        }
                        for (k, b) in self.kgroups.iter_mut().enumerate() {
                            if new {
                                b.push_zeros(l);
                            }
                            let r = rate(rates, k);
                            for (yy, &cv) in cp.iter().enumerate() {
                                if cv != 0.0 {
                                    b.add(j * l + yy, cv * r);
                                }
                            }
                        }
                    }
                    let groups = self.egroups.iter_mut().zip(&self.config.explicit_groups);
                    // a hinge step changes two labels: both in one pass
                    let pair = pairs
                        .map(|v| v[k])
                        .filter(|&(a, b)| cp[a] != 0.0 && cp[b] != 0.0);
                    for (e, (b, cols)) in groups.enumerate() {
                        let inv = rate(rates, nk + e) / b.scale();
                        fidx.clear();
                        fval.clear();
                        for (fi, &col) in cols.iter().enumerate() {
                            let v = f64::from(xp[col]);
                            if v != 0.0 {
                                fidx.push(fi as u32);
                                fval.push(v);
                            }
                        }
                        if let Some((y1, y2)) = pair {
                            let d = (cp[y1] * inv, cp[y2] * inv);
                            b.add_raw_sparse2((y1, y2, l), fidx, fval, d);
                            continue;
                        }
                        for (yy, &cv) in cp.iter().enumerate() {
                            if cv != 0.0 {
                                b.add_raw_sparse((yy, l), fidx, fval, cv * inv);
                            }
                        }
                    }
                }
            }
            Example::Ids(ids) => {
                let pre = self.pre.as_mut().expect("ids need precomputed inputs");
                let m = pre.m;
                s.nz.resize(l, (0, 0.0));
                let pairs = Some(&s.pairs).filter(|v| v.len() == touched.len());
                for (k, &p) in touched.iter().enumerate() {
                    let j = ids[p];
                    let nz = nonzero_labels(&c[p * l..(p + 1) * l], pairs.map(|v| v[k]), &mut s.nz);
                    for (g, ((b, gram), cache)) in self
                        .kgroups
                        .iter_mut()
                        .zip(&pre.grams)
                        .zip(pre.caches.iter_mut())
                        .enumerate()
                    {
                        let r = rate(rates, g);
                        let sc = b.scale() / r;
                        for &(yy, cv) in nz {
                            b.add(j * l + yy, cv * r);
                        }
                        if let [(y1, c1), (y2, c2)] = *nz {
                            let (r1, r2) = two_rows(cache, m, y1, y2);
                            gram.axpy2(j, c1 / sc, r1, c2 / sc, r2);
                        } else {
                            for &(yy, cv) in nz {
                                gram.axpy(j, cv / sc, &mut cache[yy * m..(yy + 1) * m]);
                            }
                        }
                    }
                    for (e, (b, f)) in self.egroups.iter_mut().zip(&pre.features).enumerate() {
                        let (idx, val) = f.row(j);
                        let inv = rate(rates, nk + e) / b.scale();
                        if let [(y1, c1), (y2, c2)] = *nz {
                            b.add_raw_sparse2((y1, y2, l), idx, val, (c1 * inv, c2 * inv));
                        } else {
                            for &(yy, cv) in nz {
                                b.add_raw_sparse((yy, l), idx, val, cv * inv);
                            }
                        }
                    }
                }
            }
        }
    }

    /// `s.shrunk ←` the group norms `s.norms` after this round's prox
    /// steps (the regulariser, the transitions' own `λ`, the ball).
    fn shrink_round(&self, eta: f64, s: &mut Scratch) -> Result<()> {
        let ng = self.n_groups();
        s.shrunk.clear();
        s.shrunk.extend_from_slice(&s.norms);
        let reg = Some(&self.config.regularizer);
        match (self.config.transition_lam, self.trans.is_some()) {
            (Some(lam_t), true) => {
                shrink_norms(&mut s.shrunk[..ng], reg, eta, None)?;
                s.shrunk[ng] = s.norms[ng] / (1.0 + eta * lam_t);
            }
            _ => shrink_norms(&mut s.shrunk, reg, eta, None)?,
        }
        if let Some(radius) = self.config.radius {
            shrink_norms(&mut s.shrunk, [&Regularizer::L21Ball { radius }], eta, None)?;
        }
        Ok(())
    }

    /// The round proper with its buffers.
    fn round_with(&mut self, ex: Example<'_>, y: &[usize], s: &mut Scratch) -> Result<f64> {
        let n = y.len();
        let ng = self.n_groups();
        let eta = self.config.schedule.rate(self.t + 1 - self.schedule_start);
        self.round_scores(ex, &mut s.gs);
        let pa = self.config.passive_aggressive;
        let mut loss = self.step(n, y, if pa { 1.0 } else { eta }, s)?;
        if s.touched.is_empty() && s.dtr_nz.is_empty() {
            let n_blocks = ng + usize::from(self.trans.is_some());
            s.ip.clear();
            s.ip.resize(n_blocks, 0.0);
            s.dd.clear();
            s.dd.resize(n_blocks, 0.0);
        } else {
            self.norm_terms(ex, s, pa);
            self.scale_norm_terms(s, !pa);
        }
        if pa {
            // Everything above is for the unit step; scale it to τ.
            let q: f64 = s.dd.iter().sum();
            let tau = if q > 0.0 { (loss / q).min(eta) } else { 0.0 };
            s.c.iter_mut().for_each(|v| *v *= tau);
            s.dtr.iter_mut().for_each(|v| *v *= tau);
            s.ip.iter_mut().for_each(|v| *v *= tau);
            s.dd.iter_mut().for_each(|v| *v *= tau * tau);
            if tau == 0.0 {
                s.touched.clear();
            }
            loss = loss.max(0.0);
        }
        let n_blocks = s.ip.len();
        let nk = self.kgroups.len();
        s.norms.clear();
        for (g, b) in self.blocks().enumerate() {
            let norm = if (nk..ng).contains(&g) && !pa {
                // a bound: `s.dd` holds one on `‖Δ_g‖` (see `norm_terms`)
                b.sq_norm().sqrt() + s.dd[g]
            } else {
                (b.sq_norm() + 2.0 * s.ip[g] + s.dd[g]).max(0.0).sqrt()
            };
            s.norms.push(norm);
        }
        // With explicit groups this checks the step on bounds of their new
        // norms, so that a refused round changes nothing; the prox is then
        // redone on the exact norms.
        self.shrink_round(eta, s)?;

        self.apply_step(ex, s);
        for (g, b) in self.kgroups.iter_mut().enumerate() {
            b.apply_norm_change(s.ip[g], s.dd[g]);
        }
        if let Some(b) = &mut self.trans {
            for &i in &s.dtr_nz {
                b.add(i, s.dtr[i]);
            }
            b.apply_norm_change(s.ip[ng], s.dd[ng]);
        }
        // an explicit group with a zero bound did not change: its norm is
        // already exact
        if pa || s.dd[nk..ng].iter().any(|&v| v != 0.0) {
            for (v, b) in s.norms[nk..ng].iter_mut().zip(&self.egroups) {
                *v = b.sq_norm().sqrt();
            }
            // cannot fail: the exact norms are finite, below their bounds
            self.shrink_round(eta, s)?;
        }
        debug_assert_eq!(n_blocks, s.norms.len());
        // Forgetting is one more factor on every new norm: each group is
        // rescaled once.
        let f = self.config.forgetting;
        if f < 1.0 && (!self.config.forget_on_mistakes || loss >= self.config.cost) {
            if self.forget_waited < self.config.forget_after {
                self.forget_waited += 1;
            } else {
                s.shrunk.iter_mut().for_each(|v| *v *= f);
            }
        }
        rescale_to(self, &s.norms, &s.shrunk);
        if let Some(budget) = self.config.max_support {
            while self.support.len() > budget {
                self.remove_support_by_rule();
            }
        }
        for b in self.blocks_mut() {
            b.end_round();
        }
        self.t += 1;
        if self.config.history_every > 0 && self.t.is_multiple_of(self.config.history_every) {
            self.record_beta();
        }
        Ok(loss)
    }
}

/// The non-zero entries `(y, cp[y])` of a row `cp`, in label order, written
/// into `buf` (at least `cp.len()` long): when `pair = Some((a, b))` names
/// them (`a < b`, both non-zero), just those two, else found without a
/// branch per label.
#[inline]
fn nonzero_labels<'b>(
    cp: &[f64],
    pair: Option<(usize, usize)>,
    buf: &'b mut [(usize, f64)],
) -> &'b [(usize, f64)] {
    if let Some((a, b)) = pair {
        if cp[a] != 0.0 && cp[b] != 0.0 {
            buf[..2].copy_from_slice(&[(a, cp[a]), (b, cp[b])]);
            return &buf[..2];
        }
    }
    let buf = &mut buf[..cp.len()];
    let mut k = 0;
    for (y, &v) in cp.iter().enumerate() {
        buf[k] = (y, v);
        k += usize::from(v != 0.0);
    }
    &buf[..k]
}

/// Rows `a` and `b` (`a != b`) of a row-major matrix with rows of length
/// `m`, both mutable.
fn two_rows(v: &mut [f64], m: usize, a: usize, b: usize) -> (&mut [f64], &mut [f64]) {
    if a < b {
        let (lo, hi) = v.split_at_mut(b * m);
        (&mut lo[a * m..(a + 1) * m], &mut hi[..m])
    } else {
        let (lo, hi) = v.split_at_mut(a * m);
        (&mut hi[..m], &mut lo[b * m..(b + 1) * m])
    }
}

/// Writes into `out`, in increasing order and once each, the indices `i`
/// of the transition features of the labellings `paths` with `dtr[i] ≠ 0`.
/// Those are marked in `marks` (one bit per entry of `dtr`, all zero
/// between calls) without a branch on the values of `dtr`, then the words
/// that were written are read back in order: no sort.
///
/// # Complexity
/// O(Σ path lengths + |dtr| / 64).
fn nonzero_path_indices(
    out: &mut Vec<usize>,
    marks: &mut Vec<u64>,
    dtr: &[f64],
    l: usize,
    paths: [&[usize]; 2],
) {
    let words = dtr.len().div_ceil(64);
    if marks.len() != words {
        marks.clear();
        marks.resize(words, 0);
    }
    // the words that may hold marks, when there are at most 64 of them
    let mut used = 0u64;
    let mut mark = |i: usize| {
        marks[i / 64] |= u64::from(dtr[i] != 0.0) << (i % 64);
        used |= 1u64 << (i / 64 % 64);
    };
    for labels in paths {
        mark(l * l + labels[0]);
        mark((l + 1) * l + labels[labels.len() - 1]);
        for w in labels.windows(2) {
            mark(w[0] * l + w[1]);
        }
    }
    out.clear();
    let mut take = |w: usize| {
        let mut bits = std::mem::take(&mut marks[w]);
        while bits != 0 {
            out.push(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    };
    if words <= 64 {
        while used != 0 {
            take(used.trailing_zeros() as usize);
            used &= used - 1;
        }
    } else {
        (0..words).for_each(take);
    }
}

/// `dtr += coef ·` the transition features of `labels`.
fn add_path(dtr: &mut [f64], l: usize, labels: &[usize], coef: f64) {
    dtr[l * l + labels[0]] += coef;
    dtr[(l + 1) * l + labels[labels.len() - 1]] += coef;
    for w in labels.windows(2) {
        dtr[w[0] * l + w[1]] += coef;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The listed transition entries are those of a sort of both
        /// paths' features, deduplicated and filtered on `dtr[i] ≠ 0`, and
        /// the marks are all zero again afterwards.
        #[test]
        fn path_indices_match_sorting(
            l in prop_oneof![1usize..30, 60usize..80],
            paths in (1usize..12).prop_flat_map(|n| {
                (proptest::collection::vec(0usize..80, n), proptest::collection::vec(0usize..80, n))
            }),
            eta in 0.01f64..2.0,
        ) {
            let (y, out): (Vec<usize>, Vec<usize>) = (
                paths.0.iter().map(|v| v % l).collect(),
                paths.1.iter().map(|v| v % l).collect(),
            );
            let mut dtr = vec![0.0; (l + 2) * l];
            add_path(&mut dtr, l, &y, eta);
            add_path(&mut dtr, l, &out, -eta);
            let mut want = Vec::new();
            for labels in [&y, &out] {
                want.push(l * l + labels[0]);
                want.push((l + 1) * l + labels[labels.len() - 1]);
                want.extend(labels.windows(2).map(|w| w[0] * l + w[1]));
            }
            want.retain(|&i| dtr[i] != 0.0);
            want.sort_unstable();
            want.dedup();
            let (mut got, mut marks) = (vec![7; 3], Vec::new());
            for _ in 0..2 {
                nonzero_path_indices(&mut got, &mut marks, &dtr, l, [&y, &out]);
                prop_assert_eq!(&got, &want);
                prop_assert!(marks.iter().all(|&w| w == 0));
            }
        }
    }
}
