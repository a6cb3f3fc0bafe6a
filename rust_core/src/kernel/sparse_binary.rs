//! The B1-spline CSR Gram matrix of 0/1 inputs from packed bits.
//!
//! For inputs whose coordinates are all 0 or 1 (binary pixels), the squared
//! distance `‖x − y‖²` is the number of differing coordinates,
//! `popcount(x xor y)` on the inputs packed 64 coordinates per word: O(d/64)
//! per pair instead of a d-term inner product. Distances are integers in
//! `0..=d`, so the kernel value of every possible distance is tabulated
//! once, with the very f32 operations of the GEMM path
//! (`max(0, 1 − √d² · (1/h))`): the result is the same matrix, bit for bit.

use rayon::prelude::*;
use std::ops::Range;

use super::map::b1_f32;
use super::sparse_csr::{concat_pieces, Csr, Piece};
use crate::error::Result;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 64;
/// Builds below this many pairs run on the calling thread.
const PARALLEL_MIN_PAIRS: usize = 1 << 18;

/// Rows of 0/1 values packed into `words` u64 per row (coordinate `f` is bit
/// `f % 64` of word `f / 64`).
pub(crate) struct Packed {
    words: usize,
    bits: Vec<u64>,
}

impl Packed {
    /// Packs `n × d` row-major `x`, or `None` if some value is not 0 or 1.
    ///
    /// # Complexity
    /// O(n · d).
    pub(crate) fn new(x: &[f32], n: usize, d: usize) -> Option<Packed> {
        let words = d.div_ceil(64).max(1);
        let mut bits = vec![0u64; n * words];
        for (r, out) in x
            .chunks_exact(d.max(1))
            .take(n)
            .zip(bits.chunks_exact_mut(words))
        {
            for (c, w) in r.chunks(64).zip(out.iter_mut()) {
                let mut v = 0u64;
                for (b, &p) in c.iter().enumerate() {
                    if p == 1.0 {
                        v |= 1 << b;
                    } else if p != 0.0 {
                        return None;
                    }
                }
                *w = v;
            }
        }
        Some(Packed { words, bits })
    }

    fn row(&self, i: usize) -> &[u64] {
        &self.bits[i * self.words..(i + 1) * self.words]
    }
}

/// `max(0, 1 − √k · inv_h)` for every integer squared distance `k ≤ d`,
/// cut after the last non-zero value (the values do not increase with k).
fn b1_table(inv_h: f32, d: usize) -> Vec<f32> {
    let mut table: Vec<f32> = (0..=d).map(|k| b1_f32(k as f32, inv_h)).collect();
    let keep = table.iter().rposition(|&v| v != 0.0).map_or(0, |k| k + 1);
    table.truncate(keep);
    table
}

/// Appends the non-zeros of one row: columns `j` of `y` (ascending) whose
/// distance to `a` has a non-zero value in `table`. `y` is row-major
/// (`a.len()` words per column input).
#[inline(always)]
fn row_into(a: &[u64], y: &[u64], table: &[f32], idx: &mut Vec<u32>, val: &mut Vec<f32>) {
    let kmax = table.len() as u32;
    for (j, c) in y.chunks_exact(a.len()).enumerate() {
        let k: u32 = a.iter().zip(c).map(|(p, q)| (p ^ q).count_ones()).sum();
        if k < kmax {
            idx.push(j as u32);
            val.push(table[k as usize]);
        }
    }
}

/// The inputs to compare each row with: row-major packed bits, and the same
/// words plane by plane (`planes[w * n + j]` is word `w` of input `j`) for
/// the AVX-512 loop, which loads one word of 8 inputs at a time.
struct Columns<'a> {
    rows: &'a Packed,
    planes: Vec<u64>,
    n: usize,
}

/// One build: the rows `x`, the columns `y` and the kernel value of each
/// integer squared distance (`table`).
struct Pairs<'a> {
    x: &'a Packed,
    y: Columns<'a>,
    table: Vec<f32>,
}

impl Pairs<'_> {
    #[inline(always)]
    fn rows_into(&self, rows: Range<usize>, piece: &mut Piece) {
        for i in rows {
            let before = piece.idx.len();
            row_into(
                self.x.row(i),
                &self.y.rows.bits,
                &self.table,
                &mut piece.idx,
                &mut piece.val,
            );
            piece.counts.push(piece.idx.len() - before);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn rows_into_popcnt(&self, rows: Range<usize>, piece: &mut Piece) {
        self.rows_into(rows, piece);
    }

    /// [`Self::rows_into`] 8 columns at a time: per word, one load of 8
    /// inputs' words, an xor with the row's word and a 64-bit popcount per
    /// lane; the lanes below the cut-off are found by one comparison mask.
    /// Same output.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512 VPOPCNTDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
    unsafe fn rows_into_avx512(&self, rows: Range<usize>, piece: &mut Piece) {
        use std::arch::x86_64::*;
        let (x, y, table) = (self.x, &self.y, &self.table[..]);
        let n = y.n;
        let n8 = n - n % 8;
        let kmax = table.len() as u64;
        let cut = _mm512_set1_epi64(kmax as i64);
        let mut dist = [0u64; 8];
        for i in rows {
            let a = x.row(i);
            let before = piece.idx.len();
            let mut j0 = 0;
            while j0 < n8 {
                let mut acc = _mm512_setzero_si512();
                for (w, &aw) in a.iter().enumerate() {
                    // SAFETY: j0 + 8 <= n, and plane w holds n words.
                    let v = _mm512_loadu_si512(y.planes.as_ptr().add(w * n + j0).cast());
                    let d = _mm512_popcnt_epi64(_mm512_xor_si512(v, _mm512_set1_epi64(aw as i64)));
                    acc = _mm512_add_epi64(acc, d);
                }
                let mut mask = _mm512_cmplt_epu64_mask(acc, cut);
                if mask != 0 {
                    _mm512_storeu_si512(dist.as_mut_ptr().cast(), acc);
                    while mask != 0 {
                        let b = mask.trailing_zeros() as usize;
                        piece.idx.push((j0 + b) as u32);
                        piece.val.push(table[dist[b] as usize]);
                        mask &= mask - 1;
                    }
                }
                j0 += 8;
            }
            for j in n8..n {
                let c = y.rows.row(j);
                let k: u64 = a
                    .iter()
                    .zip(c)
                    .map(|(p, q)| u64::from((p ^ q).count_ones()))
                    .sum();
                if k < kmax {
                    piece.idx.push(j as u32);
                    piece.val.push(table[k as usize]);
                }
            }
            piece.counts.push(piece.idx.len() - before);
        }
    }

    /// The non-zeros of rows `rows`, with the fastest loop the CPU supports.
    fn block(&self, rows: Range<usize>) -> Piece {
        let mut piece = Piece::default();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU supports the three features (checked above).
                unsafe { self.rows_into_avx512(rows, &mut piece) };
                return piece;
            }
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU supports POPCNT (checked just above).
                unsafe { self.rows_into_popcnt(rows, &mut piece) };
                return piece;
            }
        }
        self.rows_into(rows, &mut piece);
        piece
    }
}

/// The CSR arrays `(indptr, indices, values)` of the B1-spline Gram matrix
/// `max(0, 1 − ‖x_i − y_j‖ · inv_h)` of packed 0/1 rows `x` (`nx` rows)
/// against `y` (`ny` rows) of dimension `d`, rows in parallel. Requires
/// `d < 2²⁴`, so that the GEMM path's f32 distances are exact integers
/// and this result equals it bit for bit.
///
/// # Complexity
/// O(nx · ny · d / 64) popcounts; O(nnz) memory.
#[allow(clippy::type_complexity)]
pub(crate) fn b1_csr(
    x: &Packed,
    nx: usize,
    y: &Packed,
    ny: usize,
    d: usize,
    inv_h: f32,
) -> Result<Csr> {
    debug_assert_eq!(x.words, y.words);
    let table = b1_table(inv_h, d);
    let mut planes = vec![0u64; y.words * ny];
    for (j, r) in y.bits.chunks_exact(y.words).take(ny).enumerate() {
        for (w, &v) in r.iter().enumerate() {
            planes[w * ny + j] = v;
        }
    }
    let pairs = Pairs {
        x,
        y: Columns {
            rows: y,
            planes,
            n: ny,
        },
        table,
    };
    let nblocks = nx.div_ceil(ROWS_PER_TASK);
    let task = |b: usize| {
        let r0 = b * ROWS_PER_TASK;
        pairs.block(r0..(r0 + ROWS_PER_TASK).min(nx))
    };
    let pieces: Vec<Piece> = if nx * ny < PARALLEL_MIN_PAIRS {
        (0..nblocks).map(task).collect()
    } else {
        (0..nblocks).into_par_iter().map(task).collect()
    };
    concat_pieces(nx, pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_rejects_non_binary_and_counts_differences() {
        assert!(Packed::new(&[0.0, 0.5], 1, 2).is_none());
        let x: Vec<f32> = (0..2 * 130)
            .map(|k| ((k * 7 % 5) == 0) as u8 as f32)
            .collect();
        let p = Packed::new(&x, 2, 130).unwrap();
        assert_eq!(p.words, 3);
        let want = x[..130]
            .iter()
            .zip(&x[130..])
            .filter(|(a, b)| a != b)
            .count() as u32;
        let got: u32 = p
            .row(0)
            .iter()
            .zip(p.row(1))
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(got, want);
    }

    /// Every dispatched loop (AVX-512, POPCNT, portable) gives the same
    /// CSR rows as a plain count of differing coordinates.
    #[test]
    fn all_paths_agree_with_a_naive_count() {
        for (n, d) in [(37usize, 128usize), (20, 64), (13, 200), (9, 5)] {
            let x: Vec<f32> = (0..n * d)
                .map(|k| ((k * 2654435761usize) >> 7).is_multiple_of(3))
                .map(|b| b as u8 as f32)
                .collect();
            let p = Packed::new(&x, n, d).unwrap();
            let table = b1_table(1.0 / (d as f32 / 4.0).sqrt(), d);
            let mut planes = vec![0u64; p.words * n];
            for j in 0..n {
                for w in 0..p.words {
                    planes[w * n + j] = p.row(j)[w];
                }
            }
            let pairs = Pairs {
                x: &p,
                y: Columns {
                    rows: &p,
                    planes,
                    n,
                },
                table,
            };
            let table = &pairs.table;
            let mut want = Piece::default();
            for i in 0..n {
                let mut c = 0;
                for j in 0..n {
                    let k = (0..d).filter(|&f| x[i * d + f] != x[j * d + f]).count();
                    if k < table.len() {
                        want.idx.push(j as u32);
                        want.val.push(table[k]);
                        c += 1;
                    }
                }
                want.counts.push(c);
            }
            let check = |got: &Piece| {
                assert_eq!(got.counts, want.counts, "n={n} d={d}");
                assert_eq!(got.idx, want.idx);
                assert_eq!(got.val, want.val);
            };
            let mut portable = Piece::default();
            pairs.rows_into(0..n, &mut portable);
            check(&portable);
            check(&pairs.block(0..n));
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("popcnt") {
                let mut got = Piece::default();
                // SAFETY: POPCNT is available (checked).
                unsafe { pairs.rows_into_popcnt(0..n, &mut got) };
                check(&got);
            }
        }
    }

    #[test]
    fn table_stops_after_the_last_non_zero() {
        let t = b1_table(0.5, 10); // h = 2: k < 4 is non-zero
        assert_eq!(t.len(), 4);
        assert_eq!(t[0], 1.0);
        assert_eq!(t[1], 0.5);
        assert!(b1_table(10.0, 3).len() == 1);
    }
}
