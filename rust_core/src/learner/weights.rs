//! [`ScaledBlock`]: the weights of one group stored as scale × raw vector,
//! with its squared norm and a lazy running sum for averaging. Every
//! learner keeps its groups in it: the streaming Alg. 3 (`f64`), Alg. 1's
//! [`super::GroupedWeights`] (`f64`) and the parser's template tables
//! (`f32`).

use serde::{Deserialize, Serialize};

use super::zeroed;

mod growing;
mod rows;

/// Scale factors outside `[TINY, 1/TINY]` are folded into the coefficients.
const TINY: f64 = 1e-4;

/// Storage type of the raw coefficients and of their averaging sums.
pub trait Real:
    super::ZeroBits + Default + PartialEq + std::fmt::Debug + Send + Sync + Serialize + 'static
{
    /// `v` rounded to the storage type.
    fn from_f64(v: f64) -> Self;
    /// The stored value as `f64`.
    fn to_f64(self) -> f64;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.into()
            }
        }
    };
}
real!(f32);
real!(f64);

/// The coefficients `θ = s · a` of one group.
///
/// * The prox and projection steps multiply the whole group by a factor:
///   [`ScaledBlock::scale_by`] does it in O(1) by changing `s`.
/// * `q = ‖a‖²` in the group's own geometry (for a kernel group `aᵀKa`,
///   for an explicit group the Euclidean norm). Kernel groups update `q`
///   through [`ScaledBlock::apply_norm_change`] (the §3.4 identity),
///   Euclidean groups entry by entry as they are written.
/// * The running sum `Σ_τ θ_τ` over finished rounds is kept lazily: with
///   `P = Σ_τ s_τ` and `b += d P` for every raw change `d`, it is `a P − b`.
///   When the scale is folded into `a`, `b −= a P` and `P = 0` first.
/// * A block made with [`ScaledBlock::tracked`] lists the rows (of `width`
///   coefficients) written since it was last zero, so that folding,
///   zeroing and entry-wise work cost O(written rows), not O(len); past
///   `rows / 8` written rows it stops listing and works on every row.
/// * A block made with [`ScaledBlock::growing`] is a tracked block of
///   `buckets` logical rows that holds only the rows written so far, each
///   appended on its first write, with the slot of every bucket (see
///   `weights/growing.rs`). Its list of written rows stops at `buckets / 8`
///   rows, and past it the rows are visited in the order of their buckets,
///   as in a tracked block of `buckets` rows.
///
/// # Example
/// ```
/// use omkl_core::learner::weights::ScaledBlock;
/// let mut b: ScaledBlock = ScaledBlock::zeros(2);
/// b.add_orthonormal(0, 3.0);
/// b.add_orthonormal(1, 4.0);
/// assert_eq!(b.sq_norm(), 25.0);
/// b.scale_by(0.5);
/// assert_eq!(b.get(1), 2.0);
/// b.end_round();
/// assert_eq!(b.average_sum(1), 2.0);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    from = "Saved<T>",
    bound(deserialize = "T: Real + serde::de::DeserializeOwned")
)]
pub struct ScaledBlock<T: Real = f64> {
    s: f64,
    a: Vec<T>,
    q: f64,
    p: f64,
    /// The averaging sums (empty when the block keeps no average).
    b: Vec<T>,
    /// Row width of the written-row list (0: the block keeps no list).
    #[serde(skip)]
    width: usize,
    /// Rows written since the block was last zero (`None`: too many).
    #[serde(skip)]
    live: Option<Vec<u32>>,
    /// One bit per row: listed in `live`.
    #[serde(skip)]
    marks: Vec<u64>,
    /// Slot of each bucket of a growing block (its row + 1, 0: no row);
    /// empty for the other blocks.
    #[serde(skip)]
    slots: Vec<u32>,
    /// The bucket of each row of a growing block.
    #[serde(skip)]
    keys: Vec<u32>,
    /// A growing block's rows keep averaging sums.
    #[serde(skip)]
    row_sums: bool,
}

/// The saved fields of a block; bytes written before the running sum was
/// kept as `a P − b` also hold `base` (the sum is then `base + a P − b`).
#[derive(Deserialize)]
struct Saved<T> {
    s: f64,
    a: Vec<T>,
    q: f64,
    p: f64,
    b: Vec<T>,
    #[serde(default)]
    base: Vec<T>,
}

impl<T: Real> From<Saved<T>> for ScaledBlock<T> {
    fn from(v: Saved<T>) -> Self {
        let mut b = v.b;
        for (bv, base) in b.iter_mut().zip(&v.base) {
            *bv = T::from_f64(bv.to_f64() - base.to_f64());
        }
        ScaledBlock {
            s: v.s,
            a: v.a,
            q: v.q,
            p: v.p,
            b,
            width: 0,
            live: None,
            marks: Vec::new(),
            slots: Vec::new(),
            keys: Vec::new(),
            row_sums: false,
        }
    }
}

/// Equal values (scale, coefficients, norm and averaging sums); the lists
/// of written rows are bookkeeping and do not enter.
impl<T: Real> PartialEq for ScaledBlock<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.s, self.q, self.p) == (o.s, o.q, o.p) && self.a == o.a && self.b == o.b
    }
}

impl<T: Real> ScaledBlock<T> {
    /// A zero block of `len` coefficients that keeps an average and no
    /// list of written rows.
    pub fn zeros(len: usize) -> Self {
        ScaledBlock {
            s: 1.0,
            a: vec![T::default(); len],
            q: 0.0,
            p: 0.0,
            b: vec![T::default(); len],
            width: 0,
            live: None,
            marks: Vec::new(),
            slots: Vec::new(),
            keys: Vec::new(),
            row_sums: false,
        }
    }

    /// A zero Euclidean block of `rows × width` coefficients that lists its
    /// written rows, with an average when `averaged`; when the memory cannot
    /// be had, [`crate::OmklError::Alloc`] naming the parameter `what`.
    pub fn tracked(rows: usize, width: usize, averaged: bool, what: &str) -> crate::Result<Self> {
        let len = crate::error::alloc_len(what, &[rows, width.max(1)], std::mem::size_of::<T>())?;
        Ok(ScaledBlock {
            s: 1.0,
            a: zeroed(len, what)?,
            q: 0.0,
            p: 0.0,
            b: if averaged {
                zeroed(len, what)?
            } else {
                Vec::new()
            },
            width: width.max(1),
            live: Some(Vec::new()),
            marks: vec![0; rows.div_ceil(64)],
            slots: Vec::new(),
            keys: Vec::new(),
            row_sums: false,
        })
    }

    /// Number of coefficients.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// `true` when the block has no coefficient.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// The scale `s`.
    #[inline]
    pub fn scale(&self) -> f64 {
        self.s
    }

    /// The raw coefficients `a` (`θ = s · a`).
    #[inline]
    pub fn raw(&self) -> &[T] {
        &self.a
    }

    /// The averaging sums `b` and the running sum of scales `P`.
    pub fn average_parts(&self) -> (&[T], f64) {
        (&self.b, self.p)
    }

    /// Coefficient `i` of `θ`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.s * self.a[i].to_f64()
    }

    /// Coefficient `i` of the running sum `Σ_τ θ_τ` over finished rounds.
    #[inline]
    pub fn average_sum(&self, i: usize) -> f64 {
        let b = self.b.get(i).map_or(0.0, |v| v.to_f64());
        self.a[i].to_f64() * self.p - b
    }

    /// `‖θ‖²` as maintained.
    pub fn sq_norm(&self) -> f64 {
        self.s * self.s * self.q.max(0.0)
    }

    /// The maintained raw squared norm `q` (`‖θ‖² = s² q`).
    pub fn raw_sq_norm(&self) -> f64 {
        self.q
    }

    /// Lists row `r` as written (tracked blocks only).
    #[inline]
    fn mark(&mut self, r: usize) {
        if self.live.is_none() {
            return;
        }
        let (w, bit) = (r / 64, 1u64 << (r % 64));
        if self.marks[w] & bit != 0 {
            return;
        }
        let rows = self.logical_rows();
        let Some(list) = &mut self.live else { return };
        if (list.len() + 1) * 8 >= rows {
            // the marks are cleared when the block is next zeroed
            self.live = None;
            return;
        }
        list.push(r as u32);
        self.marks[w] |= bit;
    }

    /// Adds `delta` to coefficient `i` of `θ` without touching the norm
    /// (kernel groups account for the norm change with
    /// [`ScaledBlock::apply_norm_change`]).
    #[inline]
    pub fn add(&mut self, i: usize, delta: f64) {
        self.add_raw(i, delta / self.s);
    }

    /// Adds `d` to raw coefficient `i` (`θ_i` changes by `s · d`), without
    /// touching the norm: for a caller that divides a change by the scale
    /// once and applies it to many coefficients.
    #[inline]
    pub fn add_raw(&mut self, i: usize, d: f64) {
        self.a[i] = T::from_f64(self.a[i].to_f64() + d);
        if let Some(b) = self.b.get_mut(i) {
            *b = T::from_f64(b.to_f64() + d * self.p);
        }
    }

    /// Adds `d · v_f` to raw coefficient `f · at.1 + at.0` for every
    /// non-zero feature `(f, v_f)` of a sparse row: one column of a
    /// feature-major weight matrix of orthonormal coordinates, with the raw
    /// squared norm kept exact (`q` changes by `new² − old²` of the stored
    /// values), in O(`idx.len()`).
    #[inline]
    pub fn add_raw_sparse(&mut self, at: (usize, usize), idx: &[u32], val: &[f64], d: f64) {
        let dp = d * self.p;
        let avg = self.b.len() == self.a.len();
        let mut dq = 0.0;
        for (&f, &v) in idx.iter().zip(val) {
            let i = f as usize * at.1 + at.0;
            let old = self.a[i].to_f64();
            self.a[i] = T::from_f64(old + d * v);
            let new = self.a[i].to_f64();
            dq += new * new - old * old;
            if avg {
                self.b[i] = T::from_f64(self.b[i].to_f64() + dp * v);
            }
        }
        self.q += dq;
    }

    /// [`ScaledBlock::add_raw_sparse`] for two different columns `at.0` and
    /// `at.1` of rows of width `at.2` (raw changes `d.0` and `d.1`) in one
    /// pass over the sparse row; the sums are the same.
    #[inline]
    pub fn add_raw_sparse2(
        &mut self,
        at: (usize, usize, usize),
        idx: &[u32],
        val: &[f64],
        d: (f64, f64),
    ) {
        let (y1, y2, l) = at;
        assert!(y1 != y2 && y1 < l && y2 < l, "two columns of a row");
        let (dp, mut dq) = ((d.0 * self.p, d.1 * self.p), 0.0);
        let avg = self.b.len() == self.a.len();
        // one bounds check per row and array: the columns are checked above
        for (&f, &v) in idx.iter().zip(val) {
            let r = f as usize * l..f as usize * l + l;
            let a = &mut self.a[r.clone()];
            let (oi, oj) = (a[y1].to_f64(), a[y2].to_f64());
            (a[y1], a[y2]) = (T::from_f64(oi + d.0 * v), T::from_f64(oj + d.1 * v));
            let (ni, nj) = (a[y1].to_f64(), a[y2].to_f64());
            dq += (ni * ni - oi * oi) + (nj * nj - oj * oj);
            if avg {
                let b = &mut self.b[r];
                let (bi, bj) = (b[y1].to_f64() + dp.0 * v, b[y2].to_f64() + dp.1 * v);
                (b[y1], b[y2]) = (T::from_f64(bi), T::from_f64(bj));
            }
        }
        self.q += dq;
    }

    /// Adds `delta` to coefficient `i` of `θ` when the coordinates are
    /// orthonormal (explicit features, transitions): `‖θ‖²` changes by
    /// `2 θ_i δ + δ²`.
    #[inline]
    pub fn add_orthonormal(&mut self, i: usize, delta: f64) {
        let d = delta / self.s;
        self.q += 2.0 * self.a[i].to_f64() * d + d * d;
        self.add_raw(i, d);
    }

    /// Adds `delta` to coefficient `i` of `θ` of a tracked Euclidean block
    /// (its row is listed as written; `q` changes by `new² − old²`).
    ///
    /// # Complexity
    /// O(1).
    #[inline]
    pub fn add_tracked(&mut self, i: usize, delta: f64) {
        self.mark(if self.width == 1 { i } else { i / self.width });
        let old = self.a[i].to_f64();
        let d = delta / self.s;
        let new = old + d;
        self.a[i] = T::from_f64(new);
        if let Some(b) = self.b.get_mut(i) {
            *b = T::from_f64(b.to_f64() + self.p * d);
        }
        self.q += new * new - old * old;
    }

    /// `θ[row · width + k] += alpha · d[k]` for every `k` of `nz` (a tracked
    /// Euclidean block): the subgradient step of one bucket.
    ///
    /// # Complexity
    /// O(`nz.len()`).
    #[inline]
    pub fn axpy_row(&mut self, row: usize, alpha: f64, nz: &[u32], d: &[f64]) {
        self.mark(row);
        let c = alpha / self.s;
        let base = row * self.width;
        let mut dsq = 0.0;
        let row_a = &mut self.a[base..base + self.width];
        if self.b.is_empty() {
            for &k in nz {
                let k = k as usize;
                let old = row_a[k].to_f64();
                let new = old + c * d[k];
                row_a[k] = T::from_f64(new);
                dsq += new * new - old * old;
            }
        } else {
            let p = self.p;
            let row_b = &mut self.b[base..base + self.width];
            for &k in nz {
                let k = k as usize;
                let old = row_a[k].to_f64();
                let dv = c * d[k];
                let new = old + dv;
                row_a[k] = T::from_f64(new);
                row_b[k] = T::from_f64(row_b[k].to_f64() + dv * p);
                dsq += new * new - old * old;
            }
        }
        self.q = (self.q + dsq).max(0.0);
    }

    /// Records a change `Δ` of `θ` made through [`ScaledBlock::add`]:
    /// `‖θ + Δ‖² = ‖θ‖² + 2⟨θ, Δ⟩ + ‖Δ‖²`, with `ip = ⟨θ, Δ⟩` and
    /// `dd = ‖Δ‖²` in the units of `θ`.
    pub fn apply_norm_change(&mut self, ip: f64, dd: f64) {
        self.q += (2.0 * ip + dd) / (self.s * self.s);
    }

    /// Recomputes the raw squared norm of a Euclidean block exactly from
    /// its written rows.
    pub fn refresh_sq_norm(&mut self) {
        let mut q = 0.0;
        if self.live.is_none() && !self.slots.is_empty() {
            // one running sum over the rows in the order of their buckets,
            // as over the whole table of a tracked block
            let mut sum = 0.0;
            self.for_live(|a, _, _| {
                sum = a.iter().fold(sum, |s, v| s + v.to_f64() * v.to_f64());
            });
            q += sum;
        } else {
            self.for_live(|a, _, _| q += a.iter().map(|v| v.to_f64() * v.to_f64()).sum::<f64>());
        }
        self.q = q;
    }

    /// The rows written since the block was last zero, for a tracked block
    /// that still lists them (`None`: possibly every row).
    pub fn live_rows(&self) -> Option<&[u32]> {
        self.live.as_deref()
    }

    /// Row width of a tracked block (the block's length otherwise).
    fn width(&self) -> usize {
        if self.width == 0 {
            self.a.len()
        } else {
            self.width
        }
    }

    /// Calls `f(a_row, b_row, p)` on every row that may be non-zero.
    fn for_live(&mut self, mut f: impl FnMut(&mut [T], &mut [T], f64)) {
        let w = self.width();
        let p = self.p;
        let has_b = !self.b.is_empty();
        match &self.live {
            Some(list) => {
                for &r in list {
                    let r = r as usize * w;
                    let b: &mut [T] = if has_b {
                        &mut self.b[r..r + w]
                    } else {
                        &mut []
                    };
                    f(&mut self.a[r..r + w], b, p);
                }
            }
            None if !self.slots.is_empty() => {
                // every row, in the order of the buckets
                for &slot in &self.slots {
                    let Some(r) = (slot as usize).checked_sub(1) else {
                        continue;
                    };
                    let r = r * w;
                    let b: &mut [T] = if has_b {
                        &mut self.b[r..r + w]
                    } else {
                        &mut []
                    };
                    f(&mut self.a[r..r + w], b, p);
                }
            }
            None => f(&mut self.a, &mut self.b, p),
        }
    }

    /// Moves every non-zero coefficient's `a P` into its averaging sum
    /// (`b −= a P`, then `P = 0`) and replaces it by `f(a)`. In a tracked
    /// block only non-zero coefficients are written, so untouched pages of
    /// a large table stay unmapped.
    fn bank_nonzero(&mut self, mut f: impl FnMut(T) -> T) {
        let dense = self.width == 0;
        self.for_live(|a, b, p| {
            if dense {
                for (bv, av) in b.iter_mut().zip(a.iter()) {
                    *bv = T::from_f64(bv.to_f64() - av.to_f64() * p);
                }
                a.iter_mut().for_each(|v| *v = f(*v));
                return;
            }
            for (i, av) in a.iter_mut().enumerate() {
                if *av != T::default() {
                    if let Some(bv) = b.get_mut(i) {
                        *bv = T::from_f64(bv.to_f64() - av.to_f64() * p);
                    }
                    *av = f(*av);
                }
            }
        });
        self.p = 0.0;
    }

    /// Multiplies `θ` by `c ≥ 0`. Returns `Some(f)` when the raw
    /// coefficients were multiplied by `f` (the scale folded into them, or
    /// `f = 0` when the block was zeroed), so that an owner of quantities
    /// linear in the raw coefficients (a score cache) can follow.
    ///
    /// # Complexity
    /// O(1), or O(written rows) (O(len) for a block without a list) when
    /// the block is zeroed or the scale leaves `[1e-4, 1e4]` (then it is
    /// folded into the coefficients).
    pub fn scale_by(&mut self, c: f64) -> Option<f64> {
        if c == 0.0 {
            self.bank_nonzero(|_| T::default());
            self.q = 0.0;
            self.s = 1.0;
            match self.live.as_mut() {
                Some(list) => {
                    for &r in list.iter() {
                        self.marks[r as usize / 64] = 0;
                    }
                    list.clear();
                }
                None if self.width > 0 => {
                    self.marks.fill(0);
                    self.live = Some(Vec::new());
                }
                None => {}
            }
            return Some(0.0);
        }
        self.s *= c;
        if !(TINY..=1.0 / TINY).contains(&self.s) {
            let s = self.s;
            let mut q = 0.0;
            self.bank_nonzero(|v| {
                let v = T::from_f64(v.to_f64() * s);
                q += v.to_f64() * v.to_f64();
                v
            });
            // tracked blocks are Euclidean: their norm is recomputed exactly
            self.q = if self.width > 0 { q } else { self.q * s * s };
            self.s = 1.0;
            return Some(s);
        }
        None
    }

    /// Ends a round: the current `θ` enters the running sum.
    #[inline]
    pub fn end_round(&mut self) {
        self.p += self.s;
    }

    /// Approximate heap bytes.
    pub fn nbytes(&self) -> usize {
        (self.a.capacity() + self.b.capacity()) * std::mem::size_of::<T>()
            + self.marks.capacity() * 8
            + self.live.as_ref().map_or(0, |l| l.capacity() * 4)
            + (self.slots.capacity() + self.keys.capacity()) * 4
    }
}
