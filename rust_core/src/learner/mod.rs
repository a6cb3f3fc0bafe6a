//! Alg. 1 (online proximal learning) and Alg. 3 (online MKL).

pub mod chain_group;
pub mod explicit_group;
pub mod mkl_config;
pub mod online_mkl;
pub mod score_cache;
