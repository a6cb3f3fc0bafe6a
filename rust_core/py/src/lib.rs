//! Thin PyO3 binding of `omkl-core`, importable as `omkl._omkl`.
//!
//! Each file converts types for one area of the core and registers its
//! functions and classes here. No maths lives in this crate.

use pyo3::prelude::*;

mod convert;
mod decode;
mod errors;
mod frozen_tagger;
mod kernel;
mod learner;
mod mix;
mod morphology;
mod name_cache;
mod named;
mod parser;
mod persist;
mod precomputed;
mod prox;
mod stream;
mod stream_maps;
mod stream_mix;
mod tagger;
mod text;

/// Calls `register(m)` of each file named, in order.
macro_rules! register_all {
    ($m:ident: $($file:ident)+) => {
        $($file::register($m)?;)+
    };
}

/// The native module. Python code imports it through `omkl`.
#[pymodule]
fn _omkl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    register_all!(m: errors prox decode kernel learner parser stream precomputed persist mix tagger
        text stream_mix stream_maps morphology);
    Ok(())
}
