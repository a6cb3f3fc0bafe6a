//! Stable hashed sparse features, grouped by template.
//!
//! * [`hashing`]: the fixed hash from feature names to bucket indices.
//! * [`sparse`]: sparse examples as lists of `(group, index, value)`.
//! * [`space`]: the registry that maps feature names to groups and buckets.
//! * [`arc_templates`]: the dependency parser's arc feature templates.

pub mod arc_distance;
pub mod arc_hash;
pub mod arc_template;
pub mod arc_templates;
pub mod batch_hash;
pub mod hashing;
pub mod space;
pub mod sparse;
pub mod word_atoms;

pub use hashing::{bucket_of, hash_name, HASH_NAME, HASH_SEED};
pub use space::{FeatureSpace, Grouping};
pub use sparse::{SparseBatch, SparseExample};
