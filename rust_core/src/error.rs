//! The one error type of the core. The Python binding maps every variant to
//! a Python exception once (`ValueError` for bad input).

use thiserror::Error;

/// Every failure of the core is one of these; the core never panics on user
/// input.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum OmklError {
    /// An argument has a value outside its domain (negative λ, q < 1, ...).
    #[error("invalid value for `{name}`: {reason}")]
    InvalidValue { name: String, reason: String },
    /// Arrays whose shapes do not agree.
    #[error("shape mismatch for `{name}`: expected {expected}, got {got}")]
    Shape {
        name: String,
        expected: String,
        got: String,
    },
    /// NaN or infinity where a finite number is required.
    #[error("`{name}` must be finite, but element {index} is {value}")]
    NonFinite {
        name: String,
        index: usize,
        value: f64,
    },
    /// An empty input where at least one element is required.
    #[error("`{name}` must not be empty")]
    Empty { name: String },
    /// A buffer whose size follows from the input cannot be allocated
    /// (the request overflows or the allocator refuses it).
    #[error("cannot allocate {bytes} bytes for `{what}`")]
    Alloc { what: String, bytes: u128 },
    /// A malformed input file or record: `line` is 1-based, 0 when the
    /// fault is in the file as a whole (the message then names no line).
    #[error("{}{reason}", location(.source_name, *.line))]
    Parse {
        source_name: String,
        line: usize,
        reason: String,
    },
    /// A file that cannot be read or written (missing, a directory, no
    /// permission, ...); `errno` is the operating system's code when known.
    #[error("{path}: {reason}")]
    Io {
        path: String,
        kind: std::io::ErrorKind,
        errno: Option<i32>,
        reason: String,
    },
}

/// `name:line: `, or `name: ` for line 0 (the whole file).
fn location(source_name: &str, line: usize) -> String {
    if line == 0 {
        format!("{source_name}: ")
    } else {
        format!("{source_name}:{line}: ")
    }
}

/// Shorthand used across the crate.
pub type Result<T> = std::result::Result<T, OmklError>;

impl OmklError {
    /// Builds [`OmklError::InvalidValue`].
    pub fn invalid(name: impl Into<String>, reason: impl Into<String>) -> Self {
        OmklError::InvalidValue {
            name: name.into(),
            reason: reason.into(),
        }
    }

    /// Builds [`OmklError::Shape`].
    pub fn shape(
        name: impl Into<String>,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> Self {
        OmklError::Shape {
            name: name.into(),
            expected: expected.into(),
            got: got.into(),
        }
    }

    /// Builds [`OmklError::Io`] from an I/O error on the file `path`.
    pub fn io(path: impl Into<String>, e: &std::io::Error) -> Self {
        let errno = e.raw_os_error();
        let mut reason = e.to_string();
        if let Some(code) = errno {
            // `No such file or directory (os error 2)` → `No such file or directory`
            if let Some(stripped) = reason.strip_suffix(&format!(" (os error {code})")) {
                reason = stripped.to_string();
            }
        }
        OmklError::Io {
            path: path.into(),
            kind: e.kind(),
            errno,
            reason,
        }
    }

    /// Builds [`OmklError::Empty`].
    pub fn empty(name: impl Into<String>) -> Self {
        OmklError::Empty { name: name.into() }
    }
}

/// Returns an error naming `name` if any element of `xs` is NaN or infinite.
pub fn check_finite(name: &str, xs: &[f64]) -> Result<()> {
    match xs.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(OmklError::NonFinite {
            name: name.to_string(),
            index,
            value: xs[index],
        }),
    }
}

/// Returns [`OmklError::Shape`] naming `name` unless `got == want`; the
/// message reads `expected {want} {unit}{note}, got {got} {unit}`.
///
/// # Example
/// ```
/// use omkl_core::error::check_count;
/// assert!(check_count("out", 3, 3, "elements", "").is_ok());
/// let e = check_count("out", 2, 3, "elements", " (n)").unwrap_err();
/// assert_eq!(e.to_string(), "shape mismatch for `out`: expected 3 elements (n), got 2 elements");
/// ```
#[inline]
pub fn check_count(name: &str, got: usize, want: usize, unit: &str, note: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(count_error(name, got, want, unit, note))
    }
}

#[cold]
fn count_error(name: &str, got: usize, want: usize, unit: &str, note: &str) -> OmklError {
    OmklError::shape(
        name,
        format!("{want} {unit}{note}"),
        format!("{got} {unit}"),
    )
}

/// Checks that a row-major table `name` of `len` elements has the shape
/// `dims`, and returns its size `Π dims`. The shape error reads `expected
/// d0 x d1 x … = size elements`; a size that overflows is an
/// [`OmklError::InvalidValue`] reading `{dims_name} overflows`.
///
/// # Example
/// ```
/// use omkl_core::error::check_table;
/// assert_eq!(check_table("em", 6, &[2, 3], "n * L").unwrap(), 6);
/// let e = check_table("em", 5, &[2, 3], "n * L").unwrap_err();
/// assert_eq!(e.to_string(), "shape mismatch for `em`: expected 2 x 3 = 6 elements, got 5 elements");
/// assert!(check_table("em", 0, &[usize::MAX, 2], "n * L").is_err());
/// ```
#[inline]
pub fn check_table(name: &str, len: usize, dims: &[usize], dims_name: &str) -> Result<usize> {
    check_table_of(name, len, dims, dims_name, "elements")
}

/// [`check_table`] for a table whose entries the shape error calls `unit`
/// (`expected d0 x d1 x … = size {unit}, got len {unit}`).
///
/// # Example
/// ```
/// use omkl_core::error::check_table_of;
/// let e = check_table_of("x", 5, &[2, 3], "n * d", "values").unwrap_err();
/// assert_eq!(e.to_string(), "shape mismatch for `x`: expected 2 x 3 = 6 values, got 5 values");
/// ```
#[inline]
pub fn check_table_of(
    name: &str,
    len: usize,
    dims: &[usize],
    dims_name: &str,
    unit: &str,
) -> Result<usize> {
    match dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) {
        Some(want) if want == len => Ok(want),
        want => Err(table_error(name, len, dims, dims_name, unit, want)),
    }
}

#[cold]
fn table_error(
    name: &str,
    len: usize,
    dims: &[usize],
    dims_name: &str,
    unit: &str,
    want: Option<usize>,
) -> OmklError {
    let Some(want) = want else {
        return OmklError::invalid(name, format!("{dims_name} overflows"));
    };
    let shape: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    OmklError::shape(
        name,
        format!("{} = {want} {unit}", shape.join(" x ")),
        format!("{len} {unit}"),
    )
}

/// Returns an error naming `name` unless `v` is finite and `v >= 0`.
pub fn check_nonneg(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(OmklError::invalid(
            name,
            format!("expected a finite number >= 0, got {v}"),
        ))
    }
}

/// Returns an error naming `name` unless `v` is finite and `v > 0`.
pub fn check_positive(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(OmklError::invalid(
            name,
            format!("expected a finite number > 0, got {v}"),
        ))
    }
}

/// Bytes of a buffer of `dims` elements of `elem` bytes each, as an exact
/// (never overflowing) number.
fn requested_bytes(dims: &[usize], elem: usize) -> u128 {
    dims.iter()
        .fold(elem as u128, |acc, &d| acc.saturating_mul(d as u128))
}

/// The element count `Π dims` of a buffer of `elem`-byte elements for
/// `what`, or [`OmklError::Alloc`] if it overflows or exceeds `isize::MAX`
/// bytes (no allocator could meet it).
pub fn alloc_len(what: &str, dims: &[usize], elem: usize) -> Result<usize> {
    let bytes = requested_bytes(dims, elem);
    if bytes > isize::MAX as u128 {
        return Err(OmklError::Alloc {
            what: what.to_string(),
            bytes,
        });
    }
    Ok(dims.iter().product())
}

/// A vector of `Π dims` copies of `value` for `what`, or
/// [`OmklError::Alloc`] naming `what` and the bytes requested when the
/// size overflows or the allocator refuses it (never an abort).
pub fn try_vec<T: Clone>(what: &str, dims: &[usize], value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_resize(what, &mut v, dims, value)?;
    Ok(v)
}

/// Grows `v` to at least `Π dims` elements (new ones are `value`), or
/// [`OmklError::Alloc`] as [`try_vec`]. Never shrinks.
pub fn try_resize<T: Clone>(what: &str, v: &mut Vec<T>, dims: &[usize], value: T) -> Result<()> {
    let len = alloc_len(what, dims, std::mem::size_of::<T>())?;
    if len > v.len() {
        v.try_reserve_exact(len - v.len())
            .map_err(|_| OmklError::Alloc {
                what: what.to_string(),
                bytes: requested_bytes(dims, std::mem::size_of::<T>()),
            })?;
        v.resize(len, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_check_names_the_index() {
        let e = check_finite("x", &[1.0, f64::NAN]).unwrap_err();
        assert!(e.to_string().contains("element 1"));
        assert!(check_finite("x", &[1.0, 2.0]).is_ok());
    }

    #[test]
    fn parse_errors_name_the_source_and_line_unless_zero() {
        let e = OmklError::Parse {
            source_name: "f.conllu".into(),
            line: 3,
            reason: "bad".into(),
        };
        assert_eq!(e.to_string(), "f.conllu:3: bad");
        let e = OmklError::Parse {
            source_name: "f.conllu".into(),
            line: 0,
            reason: "bad".into(),
        };
        assert_eq!(e.to_string(), "f.conllu: bad");
    }

    #[test]
    fn io_errors_keep_the_kind_and_drop_the_os_code_from_the_reason() {
        let e = std::fs::read("/nonexistent/omkl/x.conllu").unwrap_err();
        match OmklError::io("/nonexistent/omkl/x.conllu", &e) {
            OmklError::Io {
                kind,
                errno,
                reason,
                ..
            } => {
                assert_eq!(kind, std::io::ErrorKind::NotFound);
                assert_eq!(errno, e.raw_os_error());
                assert!(!reason.contains("os error"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_requests_are_errors_not_aborts() {
        let e = try_vec("gram", &[1 << 40, 1 << 40], 0f32).unwrap_err();
        assert!(
            matches!(e, OmklError::Alloc { ref what, bytes } if what == "gram" && bytes == 1 << 82)
        );
        assert!(e.to_string().contains("`gram`"));
        let e = try_vec("x", &[usize::MAX / 2], 0u8).unwrap_err();
        assert!(matches!(e, OmklError::Alloc { .. }));
        let v = try_vec("x", &[3, 2], 1.5f64).unwrap();
        assert_eq!(v, vec![1.5; 6]);
        let mut w = vec![1u8; 4];
        try_resize("w", &mut w, &[2], 0u8).unwrap();
        assert_eq!(w.len(), 4);
    }

    #[test]
    fn sign_checks() {
        assert!(check_nonneg("lam", -1.0).is_err());
        assert!(check_nonneg("lam", 0.0).is_ok());
        assert!(check_positive("eta", 0.0).is_err());
        assert!(check_positive("eta", f64::INFINITY).is_err());
    }
}
