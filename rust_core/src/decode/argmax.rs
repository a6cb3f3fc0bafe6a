//! Multiclass decoding: argmax and loss-augmented argmax.

use crate::error::{check_finite, check_nonneg, OmklError, Result};

/// The index and value of the largest score; ties go to the smallest index.
///
/// # Complexity
/// O(L).
///
/// # Example
/// ```
/// assert_eq!(omkl_core::decode::argmax::argmax(&[0.5, 2.0, 2.0]).unwrap(), (1, 2.0));
/// ```
pub fn argmax(scores: &[f64]) -> Result<(usize, f64)> {
    if scores.is_empty() {
        return Err(OmklError::empty("scores"));
    }
    check_finite("scores", scores)?;
    Ok(best(scores.iter().copied()))
}

/// Loss-augmented argmax: maximises `scores[y] + cost · [y ≠ gold]` and
/// returns the maximiser and the augmented value.
///
/// # Complexity
/// O(L).
///
/// # Example
/// ```
/// use omkl_core::decode::argmax::argmax_hamming;
/// assert_eq!(argmax_hamming(&[1.0, 0.5], 0, 1.0).unwrap(), (1, 1.5));
/// ```
pub fn argmax_hamming(scores: &[f64], gold: usize, cost: f64) -> Result<(usize, f64)> {
    if scores.is_empty() {
        return Err(OmklError::empty("scores"));
    }
    check_finite("scores", scores)?;
    check_nonneg("cost", cost)?;
    if gold >= scores.len() {
        return Err(OmklError::invalid(
            "gold",
            format!("label {gold} is out of range 0..{}", scores.len()),
        ));
    }
    Ok(best(scores.iter().enumerate().map(|(y, &s)| {
        if y == gold {
            s
        } else {
            s + cost
        }
    })))
}

fn best(it: impl Iterator<Item = f64>) -> (usize, f64) {
    let mut arg = 0;
    let mut val = f64::NEG_INFINITY;
    for (y, v) in it.enumerate() {
        if v > val {
            arg = y;
            val = v;
        }
    }
    (arg, val)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_cases() {
        assert!(argmax(&[]).is_err());
        assert!(argmax(&[f64::NAN]).is_err());
        assert_eq!(argmax(&[-1.0]).unwrap(), (0, -1.0));
        assert_eq!(argmax_hamming(&[3.0, 1.0, 2.5], 0, 1.0).unwrap(), (2, 3.5));
        assert_eq!(argmax_hamming(&[3.0, 1.0, 2.5], 0, 0.25).unwrap(), (0, 3.0));
        assert!(argmax_hamming(&[1.0], 1, 1.0).is_err());
        assert!(argmax_hamming(&[1.0], 0, -1.0).is_err());
    }
}
