//! The §3.4 identity of a round: `‖θ_g + Δ_g‖² = ‖θ_g‖² + 2⟨θ_g, Δ_g⟩ +
//! ‖Δ_g‖²`, with `⟨θ_g, Δ_g⟩` read off the round's scores and `‖Δ_g‖²`
//! from kernel values or feature products between the changed positions,
//! computed before anything changes.

use super::scoring::Example;
use super::scratch::Scratch;
use super::state::StreamMkl;
use crate::kernel::spec::dot_f32;
use crate::kernel::support::sq_norm_f32;

impl StreamMkl {
    /// `Σ_y c[p, y] c[q, y]`.
    #[inline]
    fn label_dot(c: &[f64], l: usize, p: usize, q: usize) -> f64 {
        c[p * l..(p + 1) * l]
            .iter()
            .zip(&c[q * l..(q + 1) * l])
            .map(|(u, v)| u * v)
            .sum()
    }

    /// `⟨θ_g, Δ_g⟩` (from the round's scores) and `‖Δ_g‖²` (from kernel
    /// values or feature products between the changed positions) of every
    /// group, before any change. With `exact_explicit = false` the entry
    /// `dd` of an explicit group is instead the bound
    /// [`explicit_change_bound`] on `‖Δ_g‖` (not squared): its norm is
    /// tracked exactly while the step is applied, and only the
    /// passive-aggressive step size needs `‖Δ_g‖²` beforehand.
    pub(super) fn norm_terms(&self, ex: Example<'_>, s: &mut Scratch, exact_explicit: bool) {
        let l = self.l;
        let (nk, ng) = (self.kgroups.len(), self.n_groups());
        let n_blocks = ng + usize::from(self.trans.is_some());
        s.ip.clear();
        s.ip.resize(n_blocks, 0.0);
        s.dd.clear();
        s.dd.resize(n_blocks, 0.0);
        let (c, touched) = (&s.c, &s.touched);
        // hinge rounds: the two labels of each changed position, the only
        // non-zeros of its row of `c` (the other terms of the sums below
        // are zeros, which change no bit of a sum that starts at +0.0)
        let pairs = Some(&s.pairs[..]).filter(|v| v.len() == touched.len());
        for (k, &p) in touched.iter().enumerate() {
            let cp = &c[p * l..(p + 1) * l];
            for (g, v) in s.ip[..ng].iter_mut().enumerate() {
                let sc = &s.gs[(p * ng + g) * l..(p * ng + g + 1) * l];
                *v += match pairs {
                    Some(pairs) => {
                        let (a, b) = pairs[k];
                        sc[a] * cp[a] + sc[b] * cp[b]
                    }
                    None => sc.iter().zip(cp).map(|(a, b)| a * b).sum::<f64>(),
                };
            }
        }
        match ex {
            Example::Vectors(x) => {
                let (d, kd) = (self.d, self.kernel_dim());
                if nk > 0 {
                    s.sq.clear();
                    s.sq.extend(touched.iter().map(|&p| sq_norm_f32(&x[p * d..p * d + kd])));
                }
                for (a, &p) in touched.iter().enumerate().filter(|_| nk > 0) {
                    for (b, &q) in touched.iter().enumerate() {
                        let cc = Self::label_dot(c, l, p, q);
                        if cc == 0.0 {
                            continue;
                        }
                        let (xp, xq) = (&x[p * d..p * d + kd], &x[q * d..q * d + kd]);
                        let dot = dot_f32(xp, xq);
                        for (k, kern) in self.config.kernels.iter().enumerate() {
                            s.dd[k] += cc * kern.from_dot(dot, s.sq[a], s.sq[b]);
                        }
                    }
                }
                for (e, cols) in self.config.explicit_groups.iter().enumerate() {
                    let w = cols.len();
                    let feats = |p: usize| {
                        cols.iter()
                            .enumerate()
                            .map(move |(f, &col)| (f, f64::from(x[p * d + col])))
                    };
                    let sq = |p: usize| feats(p).map(|(_, v)| v * v).sum();
                    s.dd[nk + e] = if exact_explicit {
                        explicit_sq_change(&mut s.active, &mut s.acc, c, l, touched, w, feats, sq)
                    } else {
                        explicit_change_bound(c, l, touched, pairs, |p| sq(p).sqrt())
                    };
                }
            }
            Example::Ids(ids) => {
                let pre = self.pre.as_ref().expect("ids need precomputed inputs");
                for &p in touched.iter().filter(|_| nk > 0) {
                    for &q in touched {
                        let cc = Self::label_dot(c, l, p, q);
                        if cc == 0.0 {
                            continue;
                        }
                        let (i, j) = (ids[p], ids[q]);
                        for (k, g) in pre.grams.iter().enumerate() {
                            s.dd[k] += cc * if i == j { g.diag(i) } else { g.entry(i, j) };
                        }
                    }
                }
                for (e, f) in pre.features.iter().enumerate() {
                    let feats = |p: usize| {
                        let (idx, val) = f.row(ids[p]);
                        idx.iter().zip(val).map(|(&i, &v)| (i as usize, v))
                    };
                    let sq = |p: usize| f.sq_norm(ids[p]);
                    let w = f.dim();
                    s.dd[nk + e] = if exact_explicit {
                        explicit_sq_change(&mut s.active, &mut s.acc, c, l, touched, w, feats, sq)
                    } else {
                        explicit_change_bound(c, l, touched, pairs, |p| f.norm(ids[p]))
                    };
                }
            }
        }
        if let Some(b) = &self.trans {
            s.ip[ng] = s.dtr_nz.iter().map(|&i| b.get(i) * s.dtr[i]).sum();
            s.dd[ng] = s.dtr_nz.iter().map(|&i| s.dtr[i] * s.dtr[i]).sum();
        }
    }
}

/// A bound on `‖Δ‖` of an explicit group for the step `c` (`n × L`), by
/// the triangle inequality over the changed parts: `Σ_p ‖φ(x_p)‖ Σ_y
/// |c[p, y]|`, with `norm(p) = ‖φ(x_p)‖`. It is finite whenever the group's
/// new norm is, which lets a round refuse a non-finite step before it
/// changes anything. When `pairs` names the two non-zeros of each changed
/// row (hinge rounds), only those are read: the other terms are zeros,
/// which change no bit of the sum.
///
/// # Complexity
/// O(|touched| · L), O(|touched|) with `pairs`.
pub(super) fn explicit_change_bound<N>(
    c: &[f64],
    l: usize,
    touched: &[usize],
    pairs: Option<&[(usize, usize)]>,
    norm: N,
) -> f64
where
    N: Fn(usize) -> f64,
{
    touched
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let cp = &c[p * l..(p + 1) * l];
            let a: f64 = match pairs {
                Some(pairs) => {
                    let (y1, y2) = pairs[k];
                    cp[y1].abs() + cp[y2].abs()
                }
                None => cp.iter().map(|v| v.abs()).sum(),
            };
            if a == 0.0 {
                0.0
            } else {
                a * norm(p)
            }
        })
        .sum()
}

/// `‖Δ‖²` of an explicit group of width `w` for the step `c` (`n × L`):
/// `Δ_y = Σ_p c[p, y] φ(x_p)` is accumulated in `acc` label by label over
/// the non-zero features `feats(p)` of the positions that change label `y`,
/// then its squares are summed (and `acc` cleared) over the same features;
/// a label changed at one position only adds `c² ‖φ(x_p)‖²` (`sq(p)`).
///
/// # Complexity
/// O(Σ_{(p, y): c[p, y] ≠ 0} nnz(φ(x_p))).
#[allow(clippy::too_many_arguments)]
pub(super) fn explicit_sq_change<I, F, S>(
    active: &mut Vec<(usize, usize)>,
    acc: &mut Vec<f64>,
    c: &[f64],
    l: usize,
    touched: &[usize],
    w: usize,
    feats: F,
    sq: S,
) -> f64
where
    F: Fn(usize) -> I,
    S: Fn(usize) -> f64,
    I: Iterator<Item = (usize, f64)>,
{
    active.clear();
    for &p in touched {
        active.extend((0..l).filter(|&y| c[p * l + y] != 0.0).map(|y| (y, p)));
    }
    active.sort_unstable();
    // `acc` is all zeros between calls (each use clears what it wrote).
    if acc.len() != w {
        acc.clear();
        acc.resize(w, 0.0);
    }
    debug_assert!(acc.iter().all(|&v| v == 0.0));
    let mut total = 0.0;
    let mut k = 0;
    while k < active.len() {
        let y = active[k].0;
        let end = k + active[k..].iter().take_while(|a| a.0 == y).count();
        if end == k + 1 {
            // one position changes label y: c² ‖φ(x_p)‖²
            let p = active[k].1;
            let cv = c[p * l + y];
            total += cv * cv * sq(p);
            k = end;
            continue;
        }
        for &(_, p) in &active[k..end] {
            let cv = c[p * l + y];
            for (f, v) in feats(p) {
                acc[f] += cv * v;
            }
        }
        for &(_, p) in &active[k..end] {
            for (f, _) in feats(p) {
                let a = acc[f];
                total += a * a;
                acc[f] = 0.0;
            }
        }
        k = end;
    }
    total
}
