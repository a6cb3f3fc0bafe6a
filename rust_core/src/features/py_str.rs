//! Python's `str` methods that the token features use, reproduced on Rust
//! strings: `lower()`, `isupper()`, `islower()`, `istitle()`, `isdigit()`,
//! `isalpha()`, slices by code point (`w[:k]`, `w[-k:]`) and the word shapes
//! of `omkl.tagging` (`_shape`, `_short`).
//!
//! The string predicates follow CPython's algorithms over three character
//! flags: *upper* (the Unicode property Uppercase), *lower* (Lowercase) and
//! *title* (general category Lt); no character has two of them. `isupper()` is true when no character is
//! lower or title and at least one is upper; `istitle()` when upper and
//! title characters follow only uncased ones and lower characters only cased
//! ones, with at least one cased.
//!
//! # Where the characters' classes come from
//! * Upper, lower, letters (`isalpha`: categories L*) and digits
//!   (`isdigit`: Numeric_Type Decimal or Digit): the tables of
//!   [`unicode_classes`](super::unicode_classes), generated from Python's
//!   `unicodedata` ([`UNICODE_VERSION`](super::unicode_classes::UNICODE_VERSION),
//!   that of Python 3.11) by `scripts/gen_unicode_classes.py`.
//! * Titlecase letters: the 31 letters of category Lt (unchanged since
//!   Unicode 5).
//! * `lower()`: Rust's `str::to_lowercase`, which applies the full mappings
//!   and the final-sigma rule as CPython's `lower()` does, with the Unicode
//!   version of Rust's standard library (17.0 in Rust 1.95).
//!
//! So every predicate and slice is CPython's (of the tables' Unicode
//! version) on every code point, and `lower()` is too on every code point
//! that the tables' version assigns: a later Unicode lowers some code points
//! that Unicode 14.0 leaves unassigned (U+A7CB, ...), and its Cased property
//! (which decides between `σ` and a final `ς`) changed for U+0295, U+10FC
//! and U+AB69, so that a capital sigma next to one of these lowers
//! differently. `tests/test_token_templates.py` checks every assigned code
//! point against the running Python (when its Unicode is the tables').
//!
//! # Example
//! ```
//! use omkl_core::features::py_str::{is_title_str, prefix, shape_into, short_shape_into, suffix};
//! assert!(is_title_str("ǅemal") && !is_title_str("ǅEmal"));
//! assert_eq!((prefix("Σοφός", 2), suffix("Σοφός", 3)), ("Σο", "φός"));
//! let (mut shape, mut short) = (String::new(), String::new());
//! shape_into("E-22a", &mut shape);
//! short_shape_into(&shape, &mut short);
//! assert_eq!((shape.as_str(), short.as_str()), ("X-ddx", "X-dx"));
//! ```

use std::cmp::Ordering;

use super::unicode_classes::{ALPHA, DIGIT, LOWER, UPPER};

/// The titlecase letters (general category Lt).
const TITLE: [(u32, u32); 10] = [
    (0x1C5, 0x1C5),
    (0x1C8, 0x1C8),
    (0x1CB, 0x1CB),
    (0x1F2, 0x1F2),
    (0x1F88, 0x1F8F),
    (0x1F98, 0x1F9F),
    (0x1FA8, 0x1FAF),
    (0x1FBC, 0x1FBC),
    (0x1FCC, 0x1FCC),
    (0x1FFC, 0x1FFC),
];

/// Whether `c` is in one of the sorted inclusive `ranges`.
///
/// # Complexity
/// O(log ranges).
fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    ranges
        .binary_search_by(|&(a, b)| {
            if b < cp {
                Ordering::Less
            } else if a > cp {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// The upper flag of CPython (the Unicode property Uppercase).
#[inline]
pub fn is_upper_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_uppercase()
    } else {
        in_ranges(&UPPER, c)
    }
}

/// The lower flag of CPython (the Unicode property Lowercase).
#[inline]
pub fn is_lower_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_lowercase()
    } else {
        in_ranges(&LOWER, c)
    }
}

/// The title flag of CPython (general category Lt).
#[inline]
pub fn is_title_char(c: char) -> bool {
    !c.is_ascii() && in_ranges(&TITLE, c)
}

/// `c.isdigit()`: a character with a digit value (Numeric_Type Decimal or
/// Digit: `0`-`9`, the digits of other scripts, superscripts, circled
/// digits).
#[inline]
pub fn is_digit_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_ranges(&DIGIT, c)
    }
}

/// `c.isalpha()`: a letter (general categories Lu, Ll, Lt, Lm, Lo).
#[inline]
pub fn is_alpha_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        in_ranges(&ALPHA, c)
    }
}

/// `s.isupper()`: no lower or title character, and at least one upper.
pub fn is_upper_str(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if is_lower_char(c) || is_title_char(c) {
            return false;
        }
        cased |= is_upper_char(c);
    }
    cased
}

/// `s.islower()`: no upper or title character, and at least one lower.
pub fn is_lower_str(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if is_upper_char(c) || is_title_char(c) {
            return false;
        }
        cased |= is_lower_char(c);
    }
    cased
}

/// `s.istitle()`: upper and title characters only after uncased ones,
/// lower characters only after cased ones, and at least one cased.
pub fn is_title_str(s: &str) -> bool {
    let (mut cased, mut previous_cased) = (false, false);
    for c in s.chars() {
        if is_upper_char(c) || is_title_char(c) {
            if previous_cased {
                return false;
            }
            previous_cased = true;
            cased = true;
        } else if is_lower_char(c) {
            if !previous_cased {
                return false;
            }
            previous_cased = true;
            cased = true;
        } else {
            previous_cased = false;
        }
    }
    cased
}

/// `s.isdigit()`: at least one character, all digits.
pub fn is_digit_str(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_digit_char)
}

/// `s.isalpha()`: at least one character, all letters.
pub fn is_alpha_str(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_alpha_char)
}

/// Appends `s.lower()` to `out`.
///
/// # Complexity
/// O(len(s)); no allocation for ASCII text beyond `out`'s growth.
pub fn lower_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| b.to_ascii_lowercase() as char));
    } else {
        out.push_str(&s.to_lowercase());
    }
}

/// `s[:k]`: the first `k` code points (all of `s` when shorter).
#[inline]
pub fn prefix(s: &str, k: usize) -> &str {
    match s.char_indices().nth(k) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s[-k:]`: the last `k` code points (all of `s` when shorter; `k >= 1`).
#[inline]
pub fn suffix(s: &str, k: usize) -> &str {
    match k.checked_sub(1).and_then(|j| s.char_indices().rev().nth(j)) {
        Some((i, _)) => &s[i..],
        None if k == 0 => "",
        None => s,
    }
}

/// Appends the shape of `s` to `out` (`_shape` of `omkl.tagging`): `X`
/// for an upper character (`c.isupper()`), `x` for a lower one, `d` for a
/// digit, any other character as it is.
pub fn shape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        let title = is_title_char(c);
        let (upper, lower) = (is_upper_char(c), is_lower_char(c));
        out.push(if upper && !lower && !title {
            'X'
        } else if lower && !upper && !title {
            'x'
        } else if is_digit_char(c) {
            'd'
        } else {
            c
        });
    }
}

/// Appends the short shape of `shape` to `out` (`_short` of
/// `omkl.tagging`): runs of one character collapsed to one.
pub fn short_shape_into(shape: &str, out: &mut String) {
    let mut last = None;
    for c in shape.chars() {
        if last != Some(c) {
            out.push(c);
            last = Some(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape(s: &str) -> String {
        let mut out = String::new();
        shape_into(s, &mut out);
        out
    }

    #[test]
    fn python_examples() {
        // values printed by CPython 3.11
        assert!(is_title_str("The") && !is_title_str("THE") && !is_title_str("the"));
        assert!(is_title_str("E-2") && is_title_str("Hello World") && !is_title_str("1"));
        assert!(is_title_str("ǅemal") && !is_title_str("ǅEmal") && !is_title_str("aǅ"));
        assert!(is_upper_str("ΣΟΦΟΣ") && is_upper_str("E-2") && !is_upper_str("ǅ"));
        assert!(is_lower_str("σοφός") && !is_lower_str("123") && !is_lower_str("ǆǅ"));
        assert!(is_digit_str("١٢") && is_digit_str("²") && !is_digit_str("½"));
        assert!(!is_digit_str("") && !is_digit_str("1a") && is_digit_str("𐒠"));
        assert!(is_alpha_str("İstanbul") && !is_alpha_str("ǅ̈") && !is_alpha_str("𐍁"));
        assert_eq!(shape("ΣΟΦΟΣ2-ǅ"), "XXXXXd-ǅ");
        assert_eq!(shape("١٢x"), "ddx");
        let mut low = String::new();
        lower_into("İstanbul ΣΟΦΟΣ ΣΑ", &mut low);
        assert_eq!(low, "i\u{307}stanbul σοφος σα");
    }

    #[test]
    fn classes_are_those_of_the_tables_unicode() {
        // Unicode 14.0: U+0295 is lowercase, U+AB69 and U+10FC are not
        // (Unicode 16.0 changed all three)
        assert!(
            is_lower_char('\u{295}') && !is_lower_char('\u{AB69}') && !is_lower_char('\u{10FC}')
        );
        // every table is sorted and disjoint, and agrees with the standard
        // library on ASCII
        for t in [&UPPER[..], &LOWER[..], &ALPHA[..], &DIGIT[..], &TITLE[..]] {
            assert!(t.iter().all(|&(a, b)| a <= b));
            assert!(t.windows(2).all(|w| w[0].1 < w[1].0));
        }
        for c in (0u8..128).map(char::from) {
            assert_eq!(in_ranges(&UPPER, c), c.is_ascii_uppercase());
            assert_eq!(in_ranges(&LOWER, c), c.is_ascii_lowercase());
            assert_eq!(in_ranges(&ALPHA, c), c.is_ascii_alphabetic());
            assert_eq!(in_ranges(&DIGIT, c), c.is_ascii_digit());
        }
        // no character has two of the flags
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            let flags = [is_upper_char(c), is_lower_char(c), is_title_char(c)];
            assert!(flags.iter().filter(|&&f| f).count() <= 1, "{c:?}");
        }
    }

    #[test]
    fn slices_count_code_points() {
        assert_eq!(prefix("ab", 4), "ab");
        assert_eq!(prefix("", 1), "");
        assert_eq!(suffix("</s>", 3), "/s>");
        assert_eq!(suffix("𐌰𐌱𐌲𐌳", 2), "𐌲𐌳");
        assert_eq!(suffix("abc", 0), "");
        assert_eq!(suffix("", 2), "");
    }

    proptest! {
        #[test]
        fn shapes_and_slices_keep_their_lengths(s in "\\PC{0,12}", k in 0usize..6) {
            let n = s.chars().count();
            prop_assert_eq!(prefix(&s, k).chars().count(), k.min(n));
            prop_assert_eq!(suffix(&s, k).chars().count(), k.min(n));
            prop_assert!(s.starts_with(prefix(&s, k)) && s.ends_with(suffix(&s, k)));
            let sh = shape(&s);
            prop_assert_eq!(sh.chars().count(), n);
            let mut short = String::new();
            short_shape_into(&sh, &mut short);
            let chars: Vec<char> = short.chars().collect();
            prop_assert!(chars.windows(2).all(|w| w[0] != w[1]));
            prop_assert_eq!(is_digit_str(&s), n > 0 && sh.chars().all(|c| c == 'd'));
        }
    }
}
