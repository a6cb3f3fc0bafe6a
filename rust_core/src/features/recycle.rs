//! A shared store of large scratch vectors that the parser builds for
//! every sentence (the featurizer's hash parts, the arc slot lists, a
//! step's gradient), so
//! that a training pass writes the same memory again instead of asking the
//! allocator for fresh blocks for each sentence.
//!
//! This matters where glibc maps every large block anew: Dask's worker
//! processes set `MALLOC_TRIM_THRESHOLD_`, which turns off glibc's adaptive
//! mapping threshold, so that each sentence's buffers were mapped, faulted
//! in and unmapped. The store is shared by all threads (a sentence's
//! buffers are built on one thread and dropped on another). Each element
//! type's store keeps at most [`KEEP`] vectors and [`MAX_BYTES`] of
//! allocations in all; when a vector does not fit, the smaller ones make
//! room for it, or it is freed.
//!
//! ```
//! use omkl_core::features::recycle::{give, take_room};
//! let mut v: Vec<u32> = take_room(3);
//! v.extend([1, 2, 3]);
//! let cap = v.capacity();
//! give(v);
//! let w: Vec<u32> = take_room(3);
//! assert!(w.is_empty() && w.capacity() >= 3);
//! ```

use std::sync::Mutex;

/// Vectors kept per element type.
pub const KEEP: usize = 64;
/// Bytes of allocations kept per element type.
pub const MAX_BYTES: usize = 64 << 20;

/// Element types with a store.
pub trait Recycled: Sized + 'static {
    /// The store of empty vectors, smallest capacity first.
    fn store() -> &'static Mutex<Vec<Vec<Self>>>;
}

macro_rules! stores {
    ($($t:ty => $name:ident),* $(,)?) => {$(
        static $name: Mutex<Vec<Vec<$t>>> = Mutex::new(Vec::new());
        impl Recycled for $t {
            fn store() -> &'static Mutex<Vec<Vec<Self>>> {
                &$name
            }
        }
    )*};
}

stores!(
    u32 => STORE_U32,
    u64 => STORE_U64,
    (u32, f64) => STORE_SLOT_VALUE,
    (u32, u32, f64) => STORE_GROUP_SLOT_VALUE,
);

fn with_store<T: Recycled, R>(f: impl FnOnce(&mut Vec<Vec<T>>) -> R) -> R {
    let mut guard = T::store().lock().unwrap_or_else(|e| e.into_inner());
    f(&mut guard)
}

/// An empty vector with room for at least `n` elements if the store has
/// one (the smallest such), else the largest kept, else a new one.
pub fn take_room<T: Recycled>(n: usize) -> Vec<T> {
    with_store(|p: &mut Vec<Vec<T>>| {
        let at = p.partition_point(|w| w.capacity() < n);
        if at < p.len() {
            Some(p.remove(at))
        } else {
            p.pop()
        }
    })
    .unwrap_or_default()
}

/// Gives `v`'s allocation back to the store (its contents are dropped).
pub fn give<T: Recycled>(mut v: Vec<T>) {
    let size = |w: &Vec<T>| w.capacity() * std::mem::size_of::<T>();
    if v.capacity() == 0 || size(&v) > MAX_BYTES {
        return;
    }
    v.clear();
    with_store(|p: &mut Vec<Vec<T>>| {
        let mut total: usize = p.iter().map(size).sum();
        while p.len() >= KEEP || total + size(&v) > MAX_BYTES {
            if p[0].capacity() >= v.capacity() {
                return;
            }
            total -= size(&p[0]);
            p.remove(0);
        }
        let at = p.partition_point(|w| w.capacity() <= v.capacity());
        p.insert(at, v);
    })
}

/// [`take_room`] filled with `n` copies of `value`.
pub fn filled<T: Recycled + Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = take_room(n);
    v.resize(n, value);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each test has an element type of its own, which nothing else stores:
    // the stores are shared by the tests that run at the same time.
    stores!(u16 => TEST_A, i16 => TEST_B);

    fn bytes<T: Recycled>() -> usize {
        with_store(|p: &mut Vec<Vec<T>>| p.iter().map(|w| w.capacity()).sum::<usize>())
            * std::mem::size_of::<T>()
    }

    #[test]
    fn hands_out_the_smallest_roomy_enough_vector_and_keeps_the_largest() {
        type T = u16;
        for cap in [100, 1000, 10] {
            give(Vec::<T>::with_capacity(cap));
        }
        assert_eq!(take_room::<T>(50).capacity(), 100);
        assert_eq!(take_room::<T>(5000).capacity(), 1000); // none roomy enough: the largest
        assert_eq!(take_room::<T>(0).capacity(), 10);
        assert_eq!(take_room::<T>(0).capacity(), 0); // empty store: a new vector
        for cap in 1..=KEEP + 5 {
            give(Vec::<T>::with_capacity(cap));
        }
        let caps: Vec<usize> = (0..KEEP).map(|_| take_room::<T>(0).capacity()).collect();
        assert_eq!(caps.iter().min(), Some(&6)); // the 5 smallest made room
        assert_eq!(take_room::<T>(0).capacity(), 0);
        let v = filled(5, 7u16);
        assert_eq!(v, vec![7; 5]);
    }

    #[test]
    fn keeps_at_most_max_bytes() {
        type T = i16;
        let per = MAX_BYTES / std::mem::size_of::<T>() / 3;
        for _ in 0..3 {
            give(Vec::<T>::with_capacity(per));
        }
        assert!(bytes::<T>() <= MAX_BYTES);
        give(Vec::<T>::with_capacity(per + 1)); // evicts a smaller one
        assert!(bytes::<T>() <= MAX_BYTES);
        assert_eq!(take_room::<T>(per + 1).capacity(), per + 1);
        give(Vec::<T>::with_capacity(MAX_BYTES)); // too large: freed
        assert!(bytes::<T>() <= MAX_BYTES);
    }
}
