//! Batch Viterbi decoding of many chains that share one transition group.

use rayon::prelude::*;

use crate::decode::chain::ChainScores;
use crate::decode::viterbi::{viterbi, ViterbiWorkspace};
use crate::error::{OmklError, Result};
use crate::model::transitions::Transitions;

/// Decodes every chain of a corpus: chain `c` has emission rows
/// `offsets[c]..offsets[c + 1]` of `em` (`N × L`, row-major). Returns the
/// `N` predicted labels. Chains are decoded in parallel.
///
/// Errors name `offsets` (not increasing from 0 to `N`), `emissions`
/// (wrong length or not finite) or `transitions`.
///
/// # Complexity
/// O(N L²) work, O(max chain length · L) memory per thread.
///
/// # Example
/// ```
/// use omkl_core::model::chain_predict::decode_chains;
/// use omkl_core::model::transitions::Transitions;
/// let em = [1.0, 0.0, 0.0, 1.0, 0.0, 2.0]; // 3 positions, L = 2
/// let y = decode_chains(&em, &[0, 2, 3], &Transitions::zeros(2)).unwrap();
/// assert_eq!(y, vec![0, 1, 1]);
/// ```
pub fn decode_chains(em: &[f64], offsets: &[usize], trans: &Transitions) -> Result<Vec<usize>> {
    let l = trans.l;
    if l == 0 {
        return Err(OmklError::empty("transitions (L = 0)"));
    }
    if !em.len().is_multiple_of(l) {
        return Err(OmklError::shape(
            "emissions",
            format!("a multiple of L = {l} elements"),
            format!("{} elements", em.len()),
        ));
    }
    let n = em.len() / l;
    if offsets.len() < 2 || offsets[0] != 0 || offsets[offsets.len() - 1] != n {
        return Err(OmklError::invalid(
            "offsets",
            format!("expected at least 2 offsets from 0 to {n} (the number of positions)"),
        ));
    }
    if let Some(c) = offsets.windows(2).position(|w| w[1] <= w[0]) {
        return Err(OmklError::invalid(
            "offsets",
            format!("expected strictly increasing offsets, chain {c} is empty or reversed"),
        ));
    }
    if trans.tr.len() != l * l || trans.start.len() != l || trans.stop.len() != l {
        return Err(OmklError::shape(
            "transitions",
            format!("{l} x {l} bigrams and {l} start and stop weights"),
            format!(
                "{}, {} and {} elements",
                trans.tr.len(),
                trans.start.len(),
                trans.stop.len()
            ),
        ));
    }
    let mut out = vec![0usize; n];
    let mut pieces: Vec<(usize, &mut [usize])> = Vec::with_capacity(offsets.len() - 1);
    let mut rest = out.as_mut_slice();
    for w in offsets.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        pieces.push((w[0], head));
        rest = tail;
    }
    pieces.into_par_iter().try_for_each_init(
        ViterbiWorkspace::new,
        |ws, (start, labels)| -> Result<()> {
            let len = labels.len();
            let chain = ChainScores::new(
                &em[start * l..(start + len) * l],
                &trans.tr,
                Some(&trans.start),
                Some(&trans.stop),
                len,
                l,
            )?;
            viterbi(&chain, ws, labels)?;
            Ok(())
        },
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_offsets_and_scores() {
        let t = Transitions::zeros(2);
        assert!(decode_chains(&[0.0; 4], &[0, 1], &t).is_err());
        assert!(decode_chains(&[0.0; 4], &[0, 1, 1, 2], &t).is_err());
        assert!(decode_chains(&[0.0; 3], &[0, 1], &t).is_err());
        let e = decode_chains(&[f64::NAN, 0.0], &[0, 1], &t).unwrap_err();
        assert!(e.to_string().contains("emissions"));
        let mut t = Transitions::zeros(2);
        t.tr[1] = 5.0; // 0 → 1 is rewarded
        assert_eq!(
            decode_chains(&[0.1, 0.0, 0.1, 0.0], &[0, 2], &t).unwrap(),
            vec![0, 1]
        );
    }
}
