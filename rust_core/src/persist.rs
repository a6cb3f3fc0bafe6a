//! One envelope for every saved model: a header naming the format, its
//! version, the payload's length and an xxh3-64 checksum, then the payload.
//!
//! ```text
//! offset  size  field
//! 0       4     magic b"OMKL"
//! 4       1     n = length of the format name (1..=64)
//! 5       n     format name (ASCII), e.g. "omkl-alg1"
//! 5+n     4     format version (u32, little-endian)
//! 9+n     8     payload length (u64, little-endian)
//! 17+n    8     checksum: xxh3-64 of bytes 0..17+n, then of the payload
//! 25+n    ...   payload
//! ```
//!
//! [`open`] checks the magic, the format, the version, the length and the
//! checksum, in this order, and returns the payload; every failure is an
//! error that says what is wrong (never a panic). Payload readers then
//! validate the state they decode; [`Reader`] reads little-endian fields
//! and refuses a declared length larger than the bytes left before anything
//! is allocated.
//!
//! # Example
//! ```
//! use omkl_core::persist::{open, seal};
//! let bytes = seal("demo", 2, b"payload");
//! assert_eq!(open(&bytes, "demo", &[2]).unwrap(), b"payload");
//! let e = open(&bytes, "other", &[2]).unwrap_err().to_string();
//! assert!(e.contains("\"demo\""), "{e}");
//! let mut flipped = bytes.clone();
//! *flipped.last_mut().unwrap() ^= 1;
//! assert!(open(&flipped, "demo", &[2]).unwrap_err().to_string().contains("checksum"));
//! let e = open(&bytes[..bytes.len() - 2], "demo", &[2]).unwrap_err().to_string();
//! assert!(e.contains("truncated"), "{e}");
//! ```

use xxhash_rust::xxh3::Xxh3;

use crate::error::{OmklError, Result};

/// The first four bytes of every saved omkl model.
pub const MAGIC: &[u8; 4] = b"OMKL";

/// Longest accepted format name.
const MAX_NAME: usize = 64;

/// Magic bytes of the dependency parser's files before this envelope.
const OLD_PARSER_MAGIC: &[u8; 8] = b"OMKLARC\0";

fn bad(reason: impl Into<String>) -> OmklError {
    OmklError::invalid("saved model", reason)
}

/// The envelope header of a payload given in parts (their concatenation),
/// so that large payloads can be written without being copied into one
/// buffer: `header ++ parts...` is the same as [`seal`] of the
/// concatenation.
///
/// # Panics
/// If `format` is empty, longer than 64 bytes or not ASCII (a programming
/// error: formats are constants).
pub fn seal_header(format: &str, version: u32, parts: &[&[u8]]) -> Vec<u8> {
    assert!(
        !format.is_empty() && format.len() <= MAX_NAME && format.is_ascii(),
        "format names are 1 to 64 ASCII bytes"
    );
    let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
    let mut out = Vec::with_capacity(25 + format.len());
    out.extend_from_slice(MAGIC);
    out.push(format.len() as u8);
    out.extend_from_slice(format.as_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    let mut h = Xxh3::new();
    h.update(&out);
    for p in parts {
        h.update(p);
    }
    out.extend_from_slice(&h.digest().to_le_bytes());
    out
}

/// `payload` inside the envelope of `format` at `version`.
///
/// # Complexity
/// O(payload) (one checksum pass and one copy).
pub fn seal(format: &str, version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = seal_header(format, version, &[payload]);
    out.reserve_exact(payload.len());
    out.extend_from_slice(payload);
    out
}

/// Length of the envelope header of `format`.
pub fn header_len(format: &str) -> usize {
    25 + format.len()
}

/// Seals a payload written after [`header_len`] reserved bytes at the
/// start of `buf` (their contents are ignored), filling in the header in
/// place: the same bytes as [`seal`] of `buf[header_len..]`, without a copy
/// of the payload.
///
/// # Panics
/// If `buf` is shorter than the header, or on a bad format name (see
/// [`seal_header`]).
pub fn seal_in_place(format: &str, version: u32, mut buf: Vec<u8>) -> Vec<u8> {
    let n = header_len(format);
    let header = seal_header(format, version, &[&buf[n..]]);
    buf[..n].copy_from_slice(&header);
    buf
}

/// What [`peek`] read from an envelope header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format name.
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Offset of the payload in the bytes.
    pub payload_start: usize,
    /// Declared payload length.
    pub payload_len: u64,
    /// Stored checksum.
    pub checksum: u64,
}

/// Recognises the files that earlier omkl versions wrote without the
/// envelope, to refuse them with a message that says so.
fn older_format(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(OLD_PARSER_MAGIC) {
        return Some("the dependency parser's binary format before version 4");
    }
    let head = &bytes[..bytes.len().min(64)];
    if head.starts_with(b"{\"format\":\"omkl-alg1\"") {
        return Some("the JSON format of the online proximal learner");
    }
    if head.starts_with(b"{\"format\":\"omkl-stream-mkl\"") {
        return Some("the JSON format of the streaming MKL model");
    }
    if head.first() == Some(&0x80) && head.get(1).is_some_and(|&p| (2..=5).contains(&p)) {
        return Some("a Python pickle");
    }
    None
}

/// Reads and checks the envelope header (not the checksum, nor whether
/// the payload is complete).
pub fn peek(bytes: &[u8]) -> Result<Header> {
    if let Some(old) = older_format(bytes) {
        return Err(bad(format!(
            "saved by an older omkl format ({old}); it cannot be read by this version: \
             re-train the model and save it again"
        )));
    }
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad(
            "not an omkl model file (it does not start with the bytes \"OMKL\")",
        ));
    }
    let n = match bytes.get(4) {
        Some(&n) => n as usize,
        None => return Err(truncated(25, bytes.len())),
    };
    if n == 0 || n > MAX_NAME {
        return Err(bad(format!(
            "corrupted header: format name of {n} bytes (expected 1 to {MAX_NAME})"
        )));
    }
    let start = 25 + n;
    if bytes.len() < start {
        return Err(truncated(start, bytes.len()));
    }
    let name = &bytes[5..5 + n];
    if !name.iter().all(|b| b.is_ascii_graphic()) {
        return Err(bad(
            "corrupted header: the format name is not printable ASCII",
        ));
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    Ok(Header {
        format: String::from_utf8_lossy(name).into_owned(),
        version: u32_at(5 + n),
        payload_len: u64_at(9 + n),
        checksum: u64_at(17 + n),
        payload_start: start,
    })
}

fn truncated(expected: impl std::fmt::Display, got: usize) -> OmklError {
    bad(format!(
        "truncated file: expected {expected} bytes, got {got}"
    ))
}

/// The payload of `bytes` if they are an envelope of `expected_format` at
/// one of `supported_versions` with an intact checksum; otherwise an error
/// saying which check failed (not an omkl file, another format, an
/// unsupported version, truncated, or corrupted).
///
/// # Complexity
/// O(payload) (one checksum pass, no copy).
pub fn open<'a>(
    bytes: &'a [u8],
    expected_format: &str,
    supported_versions: &[u32],
) -> Result<&'a [u8]> {
    let h = peek(bytes)?;
    let payload = &bytes[h.payload_start.min(bytes.len())..];
    check(
        &h,
        &bytes[..h.payload_start],
        &[payload],
        expected_format,
        supported_versions,
    )?;
    Ok(payload)
}

/// [`open`] for a file read in pieces: `header` is exactly the envelope
/// header and `parts` are the payload's pieces in order. Returns the
/// format version.
pub fn open_parts(
    header: &[u8],
    parts: &[&[u8]],
    expected_format: &str,
    supported_versions: &[u32],
) -> Result<u32> {
    let h = peek(header)?;
    if header.len() != h.payload_start {
        return Err(bad(format!(
            "corrupted header: expected {} bytes, got {}",
            h.payload_start,
            header.len()
        )));
    }
    check(&h, header, parts, expected_format, supported_versions)?;
    Ok(h.version)
}

fn check(
    h: &Header,
    header: &[u8],
    parts: &[&[u8]],
    expected_format: &str,
    supported_versions: &[u32],
) -> Result<()> {
    if h.format != expected_format {
        return Err(bad(format!(
            "this is a saved {:?} model, expected a saved {expected_format:?} model",
            h.format
        )));
    }
    if !supported_versions.contains(&h.version) {
        let older = supported_versions.iter().all(|&v| h.version < v);
        return Err(bad(format!(
            "{expected_format:?} format version {} is not supported (this omkl reads {:?}){}",
            h.version,
            supported_versions,
            if older {
                "; it was saved by an older omkl format: re-train the model and save it again"
            } else {
                "; it was saved by a newer omkl"
            }
        )));
    }
    let start = h.payload_start as u64;
    let total = start.saturating_add(h.payload_len);
    let got = start + parts.iter().map(|p| p.len() as u64).sum::<u64>();
    if got < total {
        return Err(truncated(total, got as usize));
    }
    if got > total {
        return Err(bad(format!(
            "corrupted file: expected {total} bytes, got {got} (trailing bytes)"
        )));
    }
    let mut hasher = Xxh3::new();
    hasher.update(&header[..h.payload_start - 8]);
    for p in parts {
        hasher.update(p);
    }
    let sum = hasher.digest();
    if sum != h.checksum {
        return Err(bad(format!(
            "checksum mismatch: the file is corrupted (stored xxh3-64 {:#018x}, computed {sum:#018x})",
            h.checksum
        )));
    }
    Ok(())
}

/// A cursor over a payload that reads little-endian fields and checks
/// every declared length against the bytes left before allocating.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `bytes`; errors name `what` (e.g. "parser state").
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }

    /// An error about the state being read.
    pub fn error(&self, reason: impl Into<String>) -> OmklError {
        OmklError::invalid(self.what, reason)
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "truncated: {n} more bytes expected at offset {}, {} left",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A little-endian `f64`.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// A count of items of `item_bytes` bytes each that must all fit in the
    /// bytes left (checked before the caller allocates for them).
    pub fn count(&mut self, name: &str, item_bytes: usize) -> Result<usize> {
        let n = self.u64()?;
        let fits = n
            .checked_mul(item_bytes.max(1) as u64)
            .is_some_and(|b| b <= self.remaining() as u64);
        if !fits {
            return Err(self.error(format!(
                "{name} is {n}, more than the {} bytes left can hold",
                self.remaining()
            )));
        }
        Ok(n as usize)
    }

    /// `n` little-endian `f32`s.
    pub fn f32s(&mut self, n: usize, out: &mut [f32]) -> Result<()> {
        let need = n
            .checked_mul(4)
            .ok_or_else(|| self.error("length overflow"))?;
        let raw = self.take(need)?;
        for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }

    /// Errors unless every byte was read.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.error(format!(
                "{} trailing bytes after the state",
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// Tolerance below zero accepted for a stored squared norm: the norms are
/// maintained incrementally and rounding can leave a true zero slightly
/// negative.
pub const SQ_NORM_TOLERANCE: f64 = 1e-9;

/// Checks a loaded scale factor (finite and > 0).
pub fn check_scale(what: &str, s: f64) -> Result<()> {
    if !(s.is_finite() && s > 0.0) {
        return Err(OmklError::invalid(
            what,
            format!("expected a finite scale factor > 0, got {s}"),
        ));
    }
    Ok(())
}

/// Checks a loaded squared norm (finite and >= 0, up to rounding).
pub fn check_sq_norm(what: &str, sq: f64) -> Result<()> {
    if !(sq.is_finite() && sq >= -SQ_NORM_TOLERANCE) {
        return Err(OmklError::invalid(
            what,
            format!("expected a finite squared norm >= 0, got {sq}"),
        ));
    }
    Ok(())
}

/// Helpers for tests that edit the payload of a saved state.
#[cfg(test)]
pub(crate) mod edits {
    use serde_json::Value;

    /// One edit of a JSON payload.
    pub(crate) type Edit = Box<dyn Fn(&mut Value)>;

    /// `bytes`, sealed as `format` at `version`, with its JSON payload (or
    /// the payload's member `member`) changed by `edit`, and sealed again.
    pub(crate) fn edited(
        bytes: &[u8],
        format: &str,
        version: u32,
        member: Option<&str>,
        edit: &dyn Fn(&mut Value),
    ) -> Vec<u8> {
        let payload = super::open(bytes, format, &[version]).unwrap();
        let mut v: Value = serde_json::from_slice(payload).unwrap();
        match member {
            Some(k) => edit(&mut v[k]),
            None => edit(&mut v),
        }
        super::seal(format, version, &serde_json::to_vec(&v).unwrap())
    }

    /// Checks that `load`, which loads the saved state of `m` after an
    /// edit, refuses each of `cases` with an error containing its word,
    /// and gives `m` back after no edit.
    pub(crate) fn assert_refused<T: PartialEq + std::fmt::Debug>(
        m: &T,
        cases: Vec<(Edit, &str)>,
        load: impl Fn(&dyn Fn(&mut Value)) -> crate::Result<T>,
    ) {
        for (edit, word) in cases {
            let e = load(&*edit).unwrap_err().to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
        assert_eq!(&load(&|_| {}).unwrap(), m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_failure_is_named() {
        let b = seal("omkl-test", 3, &[7u8; 100]);
        assert_eq!(open(&b, "omkl-test", &[3]).unwrap(), &[7u8; 100][..]);
        let err = |bytes: &[u8], f: &str, v: &[u32]| open(bytes, f, v).unwrap_err().to_string();
        assert!(err(b"hello world", "omkl-test", &[3]).contains("not an omkl model file"));
        assert!(err(&b, "omkl-other", &[3]).contains("saved \"omkl-test\" model"));
        assert!(err(&b, "omkl-test", &[4]).contains("older omkl format"));
        assert!(err(&b, "omkl-test", &[1, 2]).contains("newer omkl"));
        let e = err(&b[..50], "omkl-test", &[3]);
        assert!(
            e.contains(&format!("expected {} bytes, got 50", b.len())),
            "{e}"
        );
        let mut long = b.clone();
        long.push(0);
        assert!(err(&long, "omkl-test", &[3]).contains("trailing"));
        assert!(err(b"OMKLARC\0\x03\0\0\0", "omkl-test", &[3]).contains("older omkl format"));
        assert!(err(b"\x80\x04\x95", "omkl-test", &[3]).contains("pickle"));
        for cut in 0..b.len() {
            assert!(open(&b[..cut], "omkl-test", &[3]).is_err());
        }
    }

    #[test]
    fn opening_in_parts_equals_opening() {
        let b = seal("f", 3, b"abcdefgh");
        let (head, payload) = b.split_at(header_len("f"));
        let (p, q) = payload.split_at(3);
        assert_eq!(open_parts(head, &[p, q], "f", &[3]).unwrap(), 3);
        let mut c = q.to_vec();
        c[0] ^= 1;
        let e = open_parts(head, &[p, &c], "f", &[3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        assert!(open_parts(head, &[p], "f", &[3])
            .unwrap_err()
            .to_string()
            .contains("truncated"));
        assert!(open_parts(&b[..10], &[p, q], "f", &[3]).is_err());
    }

    #[test]
    fn header_of_parts_equals_sealed_concatenation() {
        let (a, b) = (b"abc".as_slice(), b"defgh".as_slice());
        let mut joined = seal_header("f", 1, &[a, b]);
        joined.extend_from_slice(a);
        joined.extend_from_slice(b);
        assert_eq!(joined, seal("f", 1, b"abcdefgh"));
    }

    #[test]
    fn sealing_in_place_equals_sealing() {
        let mut buf = vec![0xAA; header_len("fmt")];
        buf.extend_from_slice(b"the payload");
        assert_eq!(seal_in_place("fmt", 9, buf), seal("fmt", 9, b"the payload"));
    }

    #[test]
    fn reader_refuses_lengths_beyond_the_bytes() {
        let mut bytes = (1u64 << 40).to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 16]);
        let mut r = Reader::new(&bytes, "state");
        assert!(r.count("rows", 8).unwrap_err().to_string().contains("rows"));
        let mut r = Reader::new(&bytes[..4], "state");
        assert!(r.u64().unwrap_err().to_string().contains("truncated"));
    }

    proptest! {
        /// Any single flipped bit, anywhere, is caught.
        #[test]
        fn any_bit_flip_is_refused(payload in proptest::collection::vec(any::<u8>(), 0..200),
                                   at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let b = seal("omkl-test", 1, &payload);
            let mut c = b.clone();
            let i = at.index(c.len());
            c[i] ^= 1 << bit;
            prop_assert!(open(&c, "omkl-test", &[1]).is_err());
        }
    }
}
