//! The fixed hash from feature names to indices.
//!
//! Feature names are hashed with **xxh3-64** (the `xxhash-rust` crate) using
//! the fixed seed [`HASH_SEED`]. The hash depends only on the UTF-8 bytes of
//! the name, so it is the same across processes, machines, platforms and
//! versions. [`HASH_NAME`] and [`HASH_SEED`] are recorded in every saved
//! model, and loading a model saved with another hash is refused.
//!
//! Each group (template or namespace) owns its own table of `n_buckets`
//! buckets, so two features of different groups never share a weight.

use crate::error::{OmklError, Result};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Name of the hash function, recorded in saved models.
pub const HASH_NAME: &str = "xxh3-64";

/// Seed of the hash, recorded in saved models (the ASCII bytes of `omkl`).
pub const HASH_SEED: u64 = 0x6f6d_6b6c;

/// The 64-bit hash of a feature name.
///
/// # Complexity
/// O(length of the name).
///
/// # Example
/// ```
/// use omkl_core::features::hash_name;
/// assert_eq!(hash_name("word=the"), hash_name("word=the"));
/// assert_ne!(hash_name("word=the"), hash_name("word=The"));
/// ```
#[inline]
pub fn hash_name(name: &str) -> u64 {
    xxh3_64_with_seed(name.as_bytes(), HASH_SEED)
}

/// The bucket of a feature name in a table of `n_buckets` buckets:
/// `hash_name(name) mod n_buckets`.
///
/// # Example
/// ```
/// use omkl_core::features::bucket_of;
/// assert!(bucket_of("word=the", 1024).unwrap() < 1024);
/// assert!(bucket_of("word=the", 0).is_err());
/// ```
pub fn bucket_of(name: &str, n_buckets: usize) -> Result<usize> {
    check_n_buckets(n_buckets)?;
    Ok((hash_name(name) % n_buckets as u64) as usize)
}

/// Checks a table size: at least 1 and at most 2³¹ buckets.
pub fn check_n_buckets(n_buckets: usize) -> Result<()> {
    if n_buckets == 0 || n_buckets > (1usize << 31) {
        return Err(OmklError::invalid(
            "n_buckets",
            format!("expected an integer in [1, 2^31], got {n_buckets}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed values (checked against the reference xxHash implementation):
    /// a change of hash function or seed breaks every saved model, and this.
    #[test]
    fn hash_values_are_stable() {
        let expected: [(&str, u64); 5] = [
            ("", 11304092499299795732),
            ("a", 7521291141300987594),
            ("word=the", 7350697978797785030),
            ("hue-mean", 3625582427221076157),
            ("grün_ß", 11013598528050344585),
        ];
        for (name, h) in expected {
            assert_eq!(hash_name(name), h, "{name:?}");
        }
        assert_eq!(
            bucket_of("word=the", 1000).unwrap(),
            (7350697978797785030u64 % 1000) as usize
        );
    }

    #[test]
    fn bucket_is_in_range() {
        for n in [1, 2, 7, 1024] {
            for name in ["a", "b", "word=the", ""] {
                assert!(bucket_of(name, n).unwrap() < n);
            }
        }
    }
}
