//! Stable hashed sparse features, grouped by template.
//!
//! * [`hashing`]: the fixed hash from feature names to bucket indices.
//! * [`sparse`]: sparse examples as lists of `(group, index, value)`.
//! * [`space`]: the registry that maps feature names to groups and buckets.
//! * [`arc_templates`]: the dependency parser's arc feature templates.
//! * [`stacked`]: atoms of a first-stage tree for a stacked parser.
//! * [`token_templates`]: the token features of sequence tagging, from a
//!   sentence's words and string columns ([`token_blocks`], [`py_str`]);
//!   [`block_rows`]: one block hashed once for several sets of templates.

pub mod arc_distance;
pub mod arc_hash;
pub mod arc_template;
pub mod arc_templates;
pub mod batch_hash;
pub mod block_rows;
pub mod hashing;
pub mod py_str;
pub mod space;
pub mod sparse;
pub mod stacked;
pub mod token_blocks;
pub mod token_templates;
pub mod unicode_classes;
pub mod word_atoms;

pub use hashing::{bucket_of, hash_name, HASH_NAME, HASH_SEED};
pub use space::{FeatureSpace, Grouping};
pub use sparse::{SparseBatch, SparseExample};

use crate::error::{OmklError, Result};

/// Makes room for `extra` more elements in `v` (growing its capacity
/// geometrically, as `push` does), or [`OmklError::Alloc`] naming `what`.
pub(crate) fn try_room<T>(what: &str, v: &mut Vec<T>, extra: usize) -> Result<()> {
    if v.capacity() - v.len() >= extra {
        return Ok(());
    }
    v.try_reserve(extra.max(v.len()))
        .map_err(|_| OmklError::Alloc {
            what: what.to_string(),
            bytes: (v.len() as u128 + extra.max(v.len()) as u128)
                * std::mem::size_of::<T>() as u128,
        })
}
