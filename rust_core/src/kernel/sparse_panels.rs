//! Column panels of a CSR matrix for scoring (see `sparse_scores`).
//!
//! Scoring `S = K α` reads one row of padded coefficients (up to 128 bytes
//! of f32) per non-zero. Row by row, the coefficient rows that a run of
//! rows touches span more than L1, so most reads come from L2. Here the
//! rows are cut into chunks of [`CHUNK_ROWS`] consecutive rows and the
//! columns into panels of [`PANEL_COLS`] consecutive columns (32 KB of f32
//! coefficients, which fit L1). A *tile* is the run of non-zeros of one row
//! in one panel. Within a chunk, tiles are stored panel by panel (rows
//! ascending within a panel), so scoring a chunk walks each panel's
//! coefficients while they stay in L1, and adds each tile's sums to its
//! row's partial scores (a chunk's partial scores, 8 KB of f32, also stay
//! in L1). Column indices are stored relative to the tile's panel, in one
//! byte.
//!
//! A row's score is the sum of its tiles' sums in panel order, each tile's
//! sum in the order of its non-zeros: it does not depend on the number of
//! threads. Chunks are the unit of parallel work, so threads write
//! disjoint rows.

/// Rows per chunk (the partial scores of a chunk stay in L1).
pub(crate) const CHUNK_ROWS: usize = 64;
/// Columns per panel: local column indices fit one byte.
pub(crate) const PANEL_COLS: usize = 256;

/// The non-zeros of one row in one panel: they end at `end` (and start
/// where the previous tile of the matrix ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    /// End of the tile's non-zeros in [`Panels::local`] and
    /// [`Panels::values`].
    pub end: usize,
    /// The tile's row, relative to its chunk's first row.
    pub row: u32,
    /// The first column of the tile's panel.
    pub col0: u32,
}

/// A CSR matrix stored as chunks of rows, each a list of [`Tile`]s ordered
/// by panel then row.
#[derive(Clone, Debug, Default)]
pub(crate) struct Panels {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Tiles of chunk `c`: `tiles[chunk_ptr[c]..chunk_ptr[c + 1]]`.
    pub chunk_ptr: Vec<usize>,
    /// Non-zeros before chunk `c` (for load balancing).
    pub chunk_nnz: Vec<usize>,
    pub tiles: Vec<Tile>,
    /// Column index of each non-zero minus its tile's `col0`.
    pub local: Vec<u8>,
    pub values: Vec<f32>,
}

impl Panels {
    /// The panels of the CSR matrix `(indptr, indices, values)`, whose
    /// rows hold ascending column indices.
    ///
    /// # Complexity
    /// O(nnz + tiles · log(tiles per chunk)) time, O(nnz + tiles) memory.
    ///
    /// # Panics
    /// If a row's column indices are not ascending (an internal invariant
    /// of the scoring layout).
    pub(crate) fn new(csr: (&[usize], &[u32], &[f32])) -> Self {
        let (indptr, indices, values) = csr;
        let nrows = indptr.len() - 1;
        let nnz = indices.len();
        let chunks = nrows.div_ceil(CHUNK_ROWS);
        let mut p = Panels {
            nrows,
            chunk_ptr: Vec::with_capacity(chunks + 1),
            chunk_nnz: Vec::with_capacity(chunks + 1),
            tiles: Vec::new(),
            local: Vec::with_capacity(nnz),
            values: Vec::with_capacity(nnz),
        };
        p.chunk_ptr.push(0);
        p.chunk_nnz.push(0);
        // Segments of the current chunk: (panel, row, start, end).
        let mut segs: Vec<(u32, u32, usize, usize)> = Vec::new();
        for c in 0..chunks {
            let r0 = c * CHUNK_ROWS;
            let r1 = (r0 + CHUNK_ROWS).min(nrows);
            segs.clear();
            for r in r0..r1 {
                let (b, e) = (indptr[r], indptr[r + 1]);
                let row = &indices[b..e];
                assert!(row.windows(2).all(|w| w[0] < w[1]), "ascending columns");
                let mut t = 0;
                while t < row.len() {
                    let panel = row[t] as usize / PANEL_COLS;
                    let len = row[t..].partition_point(|&j| j as usize / PANEL_COLS == panel);
                    segs.push((panel as u32, (r - r0) as u32, b + t, b + t + len));
                    t += len;
                }
            }
            // Panel by panel; rows ascending within a panel (a row has at
            // most one segment per panel).
            segs.sort_unstable_by_key(|s| (s.0, s.1));
            for &(panel, row, b, e) in &segs {
                let col0 = panel * PANEL_COLS as u32;
                p.local
                    .extend(indices[b..e].iter().map(|&j| (j - col0) as u8));
                p.values.extend_from_slice(&values[b..e]);
                p.tiles.push(Tile {
                    end: p.local.len(),
                    row,
                    col0,
                });
            }
            p.chunk_ptr.push(p.tiles.len());
            p.chunk_nnz.push(p.local.len());
        }
        p
    }

    /// Number of chunks.
    #[cfg(test)]
    pub(crate) fn chunks(&self) -> usize {
        self.chunk_ptr.len() - 1
    }

    /// Number of stored non-zeros.
    pub(crate) fn nnz(&self) -> usize {
        self.local.len()
    }

    /// Bytes of the arrays.
    pub(crate) fn nbytes(&self) -> usize {
        (self.chunk_ptr.len() + self.chunk_nnz.len()) * std::mem::size_of::<usize>()
            + self.tiles.len() * std::mem::size_of::<Tile>()
            + self.local.len()
            + self.values.len() * 4
    }

    /// First non-zero of tile `t`.
    #[cfg(test)]
    pub(crate) fn tile_start(&self, t: usize) -> usize {
        if t == 0 {
            0
        } else {
            self.tiles[t - 1].end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSR rows stored in `p`, as (row, column, value) triples sorted
    /// by row then column.
    fn entries(p: &Panels) -> Vec<(usize, usize, f32)> {
        let mut out = Vec::new();
        for c in 0..p.chunks() {
            let mut last = (0u32, 0u32);
            for t in p.chunk_ptr[c]..p.chunk_ptr[c + 1] {
                let tile = p.tiles[t];
                // Panel by panel, rows ascending within a panel.
                if t > p.chunk_ptr[c] {
                    assert!((tile.col0, tile.row) > last, "tile order");
                }
                last = (tile.col0, tile.row);
                assert!(tile.end > p.tile_start(t), "no empty tiles");
                assert_eq!(tile.col0 as usize % PANEL_COLS, 0);
                for s in p.tile_start(t)..tile.end {
                    let i = c * CHUNK_ROWS + tile.row as usize;
                    let j = tile.col0 as usize + usize::from(p.local[s]);
                    out.push((i, j, p.values[s]));
                }
            }
            assert_eq!(p.chunk_nnz[c + 1], p.tile_start(p.chunk_ptr[c + 1]));
        }
        out.sort_by_key(|e| (e.0, e.1));
        out
    }

    fn csr_of(rows: &[Vec<(u32, f32)>]) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
        let (mut ptr, mut idx, mut val) = (vec![0], vec![], vec![]);
        for r in rows {
            for &(j, v) in r {
                idx.push(j);
                val.push(v);
            }
            ptr.push(idx.len());
        }
        (ptr, idx, val)
    }

    #[test]
    fn panels_hold_every_entry_once_in_panel_then_row_order() {
        // 150 rows (two full chunks and a partial one) over 700 columns
        // (two full panels and a partial one): empty rows, a row whose
        // entries all fall in one panel, a row spanning every panel, and
        // entries at each panel's first and last column.
        let mut rows: Vec<Vec<(u32, f32)>> = Vec::new();
        for i in 0..150u32 {
            let r: Vec<(u32, f32)> = match i {
                3 | 64 | 149 => vec![],
                7 => (300..340).map(|j| (j, 0.5)).collect(),
                9 => vec![
                    (0, 1.0),
                    (255, 2.0),
                    (256, 3.0),
                    (511, 4.0),
                    (512, 5.0),
                    (699, 6.0),
                ],
                _ => (0..700)
                    .filter(|j| (j * 31 + i * 17) % 11 == 0)
                    .map(|j| (j, (j + i) as f32))
                    .collect(),
            };
            rows.push(r);
        }
        let (ptr, idx, val) = csr_of(&rows);
        let p = Panels::new((&ptr, &idx, &val));
        assert_eq!((p.nrows, p.chunks(), p.nnz()), (150, 3, idx.len()));
        let mut want = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            want.extend(r.iter().map(|&(j, v)| (i, j as usize, v)));
        }
        assert_eq!(entries(&p), want);
        // Row 7 is one tile, row 9 three (one per panel).
        let tiles_of = |i: usize| {
            let c = i / CHUNK_ROWS;
            (p.chunk_ptr[c]..p.chunk_ptr[c + 1])
                .filter(|&t| p.tiles[t].row as usize == i % CHUNK_ROWS)
                .count()
        };
        assert_eq!((tiles_of(7), tiles_of(9), tiles_of(3)), (1, 3, 0));
        assert!(p.nbytes() >= p.nnz() * 5);
    }

    #[test]
    fn empty_and_single_panel_matrices() {
        let p = Panels::new((&[0], &[], &[]));
        assert_eq!((p.nrows, p.chunks(), p.nnz()), (0, 0, 0));
        let (ptr, idx, val) = csr_of(&[vec![], vec![(1, 1.0), (2, 2.0)], vec![]]);
        let p = Panels::new((&ptr, &idx, &val));
        assert_eq!((p.chunks(), p.tiles.len()), (1, 1));
        assert_eq!(entries(&p), vec![(1, 1, 1.0), (1, 2, 2.0)]);
    }
}
