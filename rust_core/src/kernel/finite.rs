//! The finiteness check of f32 kernel inputs, shared by the kernel
//! functions, Gram matrices and support stores.

use crate::error::{OmklError, Result};

/// Returns an error naming `name` if any element is NaN or infinite.
pub(crate) fn check_finite_f32(name: &str, xs: &[f32]) -> Result<()> {
    match xs.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(OmklError::NonFinite {
            name: name.to_string(),
            index,
            value: f64::from(xs[index]),
        }),
    }
}
