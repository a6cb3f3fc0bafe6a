//! Gram rows of support inputs, computed on demand and cached.

use super::cache::{CacheStats, RowCache};
use super::gram::gram_into_with_norms;
use super::support::SupportStore;
use super::Kernel;
use crate::error::{OmklError, Result};

/// A kernel, a deduplicating [`SupportStore`] and an LRU [`RowCache`]:
/// `row(id)` is `K(x_id, x_j)` for every stored input `j`, in id order.
///
/// When inputs are added after a row was cached, the cached row is
/// *extended* with the new columns only (counted in
/// [`GramCacheStats::extensions`]), so a growing support set costs one
/// kernel evaluation per new pair.
///
/// # Example
/// ```
/// use omkl_core::kernel::{GramCache, Kernel};
/// let mut c = GramCache::new(Kernel::Linear { normalize: false }, 2, 1 << 20).unwrap();
/// let a = c.add(&[1.0, 0.0]).unwrap();
/// let b = c.add(&[2.0, 3.0]).unwrap();
/// assert_eq!(c.add(&[1.0, 0.0]).unwrap(), a); // stored once
/// assert_eq!(c.row(b).unwrap(), &[2.0, 13.0]);
/// assert_eq!(c.stats().misses, 1);
/// c.row(b).unwrap();
/// assert_eq!(c.stats().hits, 1);
/// ```
#[derive(Clone, Debug)]
pub struct GramCache {
    kernel: Kernel,
    store: SupportStore,
    rows: RowCache,
    hits: u64,
    extensions: u64,
    misses: u64,
    scratch: Vec<f32>,
    buf: Vec<f32>,
}

/// Counters of a [`GramCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GramCacheStats {
    /// Rows served from the cache unchanged.
    pub hits: u64,
    /// Rows served from the cache after computing new columns.
    pub extensions: u64,
    /// Rows computed from scratch.
    pub misses: u64,
    /// Rows evicted to stay within the budget.
    pub evictions: u64,
    /// Bytes charged by the row cache (`<= budget`).
    pub cache_bytes: usize,
    /// Rows cached.
    pub entries: usize,
    /// The row cache's byte budget.
    pub budget: usize,
    /// Approximate bytes of the support store.
    pub support_bytes: usize,
    /// Distinct support inputs.
    pub support_len: usize,
}

impl GramCache {
    /// An empty cache for inputs of dimension `d` with a row budget of
    /// `budget` bytes.
    pub fn new(kernel: Kernel, d: usize, budget: usize) -> Result<Self> {
        kernel.check()?;
        Ok(GramCache {
            kernel,
            store: SupportStore::with_dim(d)?,
            rows: RowCache::new(budget),
            hits: 0,
            extensions: 0,
            misses: 0,
            scratch: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Adds a support input (deduplicated) and returns its id.
    pub fn add(&mut self, x: &[f32]) -> Result<u32> {
        Ok(self.store.insert_checked(x)?.0)
    }

    /// The support store.
    pub fn support(&self) -> &SupportStore {
        &self.store
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// `K(x_id, x_j)` for all stored `j`, from the cache when possible.
    /// Stored inputs are already checked and their squared norms are kept
    /// by the store, so a miss costs one GEMV-like pass over the support.
    ///
    /// # Complexity
    /// Hit: O(log n). Extension: O(k d) for `k` new inputs. Miss: O(n d).
    pub fn row(&mut self, id: u32) -> Result<&[f32]> {
        let n = self.store.len();
        let d = self.store.dim();
        let x = self.store.get(id).ok_or_else(|| {
            OmklError::invalid("id", format!("expected a stored id < {n}, got {id}"))
        })?;
        let norms = self.store.sq_norms();
        let own = (x, 1, &norms[id as usize..id as usize + 1]);
        let key = u64::from(id);
        let have = self.rows.peek(key).map(<[f32]>::len);
        let mut row = match have {
            Some(len) if len == n => {
                self.hits += 1;
                return Ok(self.rows.get(key).expect("row present"));
            }
            Some(len) => {
                self.extensions += 1;
                let mut row = self.rows.remove(key).expect("row present");
                let new = (&self.store.data()[len * d..], n - len, &norms[len..]);
                gram_into_with_norms(&self.kernel, own, new, d, &mut self.buf);
                row.extend_from_slice(&self.buf);
                row
            }
            None => {
                self.misses += 1;
                let mut row = Vec::new();
                let all = (self.store.data(), n, norms);
                gram_into_with_norms(&self.kernel, own, all, d, &mut row);
                row
            }
        };
        if self.rows.insert(key, row.clone()) {
            return Ok(self.rows.peek(key).expect("just inserted"));
        }
        std::mem::swap(&mut self.scratch, &mut row);
        Ok(&self.scratch)
    }

    /// The counters.
    pub fn stats(&self) -> GramCacheStats {
        let c: CacheStats = self.rows.stats();
        GramCacheStats {
            hits: self.hits,
            extensions: self.extensions,
            misses: self.misses,
            evictions: c.evictions,
            cache_bytes: c.bytes,
            entries: c.entries,
            budget: c.budget,
            support_bytes: self.store.nbytes(),
            support_len: self.store.len(),
        }
    }
}
