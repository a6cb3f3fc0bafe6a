//! A least-recently-used cache of Gram rows under a byte budget.

use std::collections::{BTreeMap, HashMap};

/// Bytes charged per cached row on top of its values (key, recency stamp,
/// vector header and table slots).
pub const ENTRY_OVERHEAD: usize = 64;

/// Counters of a [`RowCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// `get` calls that found the row.
    pub hits: u64,
    /// `get` calls that did not.
    pub misses: u64,
    /// Rows dropped to stay within the budget.
    pub evictions: u64,
    /// Bytes currently charged: `Σ (4 · len + ENTRY_OVERHEAD)`.
    pub bytes: usize,
    /// Rows currently cached.
    pub entries: usize,
    /// The byte budget.
    pub budget: usize,
}

/// Rows of f32 kernel values keyed by input id, with a byte budget.
///
/// **Eviction policy**: least recently used. Both `get` (a hit) and
/// `insert` make a row the most recent; when an insertion would exceed the
/// budget, the least recent rows are evicted until it fits. A row larger
/// than the whole budget is not cached. `bytes <= budget` always holds.
///
/// # Complexity
/// `get`, `insert`, `remove`: O(log n) plus O(row) to copy; eviction O(log n)
/// per evicted row.
///
/// # Example
/// ```
/// use omkl_core::kernel::cache::{RowCache, ENTRY_OVERHEAD};
/// let row_bytes = 4 * 10 + ENTRY_OVERHEAD;
/// let mut c = RowCache::new(2 * row_bytes);
/// c.insert(1, vec![0.0; 10]);
/// c.insert(2, vec![0.0; 10]);
/// c.get(1); // 1 is now more recent than 2
/// c.insert(3, vec![0.0; 10]); // evicts 2
/// assert!(c.get(2).is_none() && c.get(1).is_some() && c.get(3).is_some());
/// assert_eq!(c.stats().evictions, 1);
/// ```
#[derive(Clone, Debug)]
pub struct RowCache {
    budget: usize,
    rows: HashMap<u64, (Vec<f32>, u64)>,
    recency: BTreeMap<u64, u64>,
    clock: u64,
    stats: CacheStats,
}

/// Bytes charged for a row of `len` values.
pub fn entry_bytes(len: usize) -> usize {
    len * 4 + ENTRY_OVERHEAD
}

impl RowCache {
    /// An empty cache holding at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        RowCache {
            budget,
            rows: HashMap::new(),
            recency: BTreeMap::new(),
            clock: 0,
            stats: CacheStats {
                budget,
                ..CacheStats::default()
            },
        }
    }

    fn touch(&mut self, id: u64) {
        self.clock += 1;
        let clock = self.clock;
        if let Some((_, stamp)) = self.rows.get_mut(&id) {
            self.recency.remove(stamp);
            *stamp = clock;
            self.recency.insert(clock, id);
        }
    }

    /// Row `id`, counting a hit (and making it most recent) or a miss.
    pub fn get(&mut self, id: u64) -> Option<&[f32]> {
        if self.rows.contains_key(&id) {
            self.stats.hits += 1;
            self.touch(id);
            self.rows.get(&id).map(|(r, _)| r.as_slice())
        } else {
            self.stats.misses += 1;
            None
        }
    }

    /// Row `id` without counting or changing recency.
    pub fn peek(&self, id: u64) -> Option<&[f32]> {
        self.rows.get(&id).map(|(r, _)| r.as_slice())
    }

    /// Removes and returns row `id` (no counting).
    pub fn remove(&mut self, id: u64) -> Option<Vec<f32>> {
        let (row, stamp) = self.rows.remove(&id)?;
        self.recency.remove(&stamp);
        self.stats.bytes -= entry_bytes(row.len());
        self.stats.entries -= 1;
        Some(row)
    }

    /// Caches `row` under `id` (replacing any previous row), evicting least
    /// recently used rows as needed. Returns `false`, caching nothing, if
    /// the row alone exceeds the budget.
    pub fn insert(&mut self, id: u64, row: Vec<f32>) -> bool {
        self.remove(id);
        let need = entry_bytes(row.len());
        if need > self.budget {
            return false;
        }
        while self.stats.bytes + need > self.budget {
            let Some((_, &oldest)) = self.recency.iter().next() else {
                break;
            };
            self.remove(oldest);
            self.stats.evictions += 1;
        }
        self.clock += 1;
        self.recency.insert(self.clock, id);
        self.rows.insert(id, (row, self.clock));
        self.stats.bytes += need;
        self.stats.entries += 1;
        true
    }

    /// Ids from least to most recently used.
    pub fn lru_order(&self) -> Vec<u64> {
        self.recency.values().copied().collect()
    }

    /// Drops every row (counters are kept).
    pub fn clear(&mut self) {
        self.rows.clear();
        self.recency.clear();
        self.stats.bytes = 0;
        self.stats.entries = 0;
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }
}
