//! What the CSR scoring loops read and write, shared by the portable loop
//! (`sparse_scores`) and the SIMD loop (`sparse_simd`): column index types,
//! blocks of CSR rows, the label range of one pass, the destination of a
//! block's scores, and the pass that holds them all.

/// Column indices of the scoring loops (u16 or u32).
pub(crate) trait Index: Copy + Send + Sync {
    fn at(self) -> usize;
}

impl Index for u16 {
    #[inline(always)]
    fn at(self) -> usize {
        usize::from(self)
    }
}

impl Index for u32 {
    #[inline(always)]
    fn at(self) -> usize {
        self as usize
    }
}

/// A block of CSR rows: `indptr` holds absolute offsets into the full
/// `indices` and `values` arrays.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a, I> {
    pub indptr: &'a [usize],
    pub indices: &'a [I],
    pub values: &'a [f32],
}

/// The labels of an output row written by one pass: `l0..l1` of `labels`.
#[derive(Clone, Copy)]
pub(crate) struct Labels {
    pub labels: usize,
    pub l0: usize,
    pub l1: usize,
}

/// One pass of the scoring loops over a block of rows: the rows, the padded
/// coefficients `ap` (`p` per column), where the scores go and which labels
/// they are.
#[derive(Clone, Copy)]
pub(crate) struct Pass<'a, I, T> {
    pub rows: Rows<'a, I>,
    pub ap: &'a [T],
    pub p: usize,
    pub out: Dest<'a, T>,
    pub lab: Labels,
}

/// Where the scores of a block of rows go: block row `r` (row `r0 + r` in
/// the scoring order) is output row `map[r0 + r]`, or `r0 + r` without a
/// map, in a row-major output of `labels` columns starting at `ptr`.
pub(crate) struct Dest<'a, T> {
    pub(super) ptr: *mut T,
    pub(super) map: Option<&'a [u32]>,
    pub(super) r0: usize,
}

impl<T> Clone for Dest<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Dest<'_, T> {}

// SAFETY: a `Dest` is shared by tasks that write disjoint output rows (the
// map is a permutation and the tasks' row ranges are disjoint), while the
// output is mutably borrowed by `Job::run`.
unsafe impl<T: Send> Send for Dest<'_, T> {}
unsafe impl<T: Send> Sync for Dest<'_, T> {}

impl<T: Copy> Dest<'_, T> {
    /// Writes `s[..l1 - l0]` to labels `l0..l1` of the output row of block
    /// row `r`.
    ///
    /// # Safety
    /// That output row exists, `s` holds at least `l1 - l0` values and no
    /// other thread accesses those labels of that row.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, r: usize, lab: Labels, s: &[T]) {
        let i = self.map.map_or(self.r0 + r, |m| m[self.r0 + r] as usize);
        let w = lab.l1 - lab.l0;
        debug_assert!(s.len() >= w);
        // SAFETY: see the contract above.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), self.ptr.add(i * lab.labels + lab.l0), w)
        };
    }
}
