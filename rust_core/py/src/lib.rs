//! Thin PyO3 binding of `omkl-core`, importable as `omkl._omkl`.
//!
//! Each file converts types for one area of the core and registers its
//! functions and classes here. No maths lives in this crate.

use pyo3::prelude::*;

mod convert;
mod decode;
mod errors;
mod kernel;
mod learner;
mod mix;
mod name_cache;
mod named;
mod parser;
mod persist;
mod prox;
mod stream;
mod stream_maps;
mod stream_mix;
mod tagger;

/// The native module. Python code imports it through `omkl`.
#[pymodule]
fn _omkl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    prox::register(m)?;
    decode::register(m)?;
    kernel::register(m)?;
    learner::register(m)?;
    parser::register(m)?;
    stream::register(m)?;
    persist::register(m)?;
    mix::register(m)?;
    tagger::register(m)?;
    stream_mix::register(m)?;
    stream_maps::register(m)?;
    Ok(())
}
