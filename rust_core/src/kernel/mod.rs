//! Kernels, Gram matrices, Gram caches and sparse Gram storage.
//!
//! * [`spec`]: the [`Kernel`] functions and their hyperparameters.
//! * [`gram`](mod@gram): dense Gram blocks through GEMM plus an elementwise map, one
//!   kernel or several from one shared GEMM.
//! * [`fast_exp`]: the vectorisable `exp` of the Gaussian map.
//! * [`feature_map`]: random Fourier and Nyström feature maps, one input at a time.
//! * [`sparse`]: CSR Gram storage for compact-support kernels and scoring.
//! * `sparse_binary`: the B1-spline CSR Gram of 0/1 inputs by popcounts.
//! * `sparse_layout`: the renumbered copy of a CSR Gram that scoring reads.
//! * `sparse_scores`: CSR scoring loops (portable, and the dispatch to SIMD).
//! * `sparse_simd`: the AVX2 and AVX-512 loop of CSR scoring.
//! * [`bandwidth`]: the B1-spline width for a target sparsity.
//! * [`support`]: deduplicated support inputs.
//! * [`cache`]: an LRU cache of Gram rows under a byte budget.
//! * [`gram_cache`]: Gram rows of support inputs, computed on demand.

pub mod bandwidth;
pub mod cache;
mod dense_reference;
pub mod fast_exp;
pub mod feature_map;
mod finite;
pub mod gram;
pub mod gram_cache;
mod map;
pub mod sparse;
mod sparse_binary;
mod sparse_csr;
mod sparse_isa;
mod sparse_layout;
mod sparse_rows;
mod sparse_scores;
#[cfg(target_arch = "x86_64")]
mod sparse_simd;
pub mod spec;
pub mod support;
mod tiles;

pub use bandwidth::b1_bandwidth;
pub use cache::{CacheStats, RowCache};
pub use gram::{gram, gram_many, gram_many_symmetric, gram_symmetric};
pub use gram_cache::{GramCache, GramCacheStats};
pub use sparse::{dense_scores, SparseGram};
pub use spec::Kernel;
pub use support::SupportStore;
