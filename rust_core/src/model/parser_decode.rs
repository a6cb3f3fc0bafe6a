//! Glue between the parser's score matrices and the tree decoders of
//! [`crate::decode`], with one reusable workspace per thread.

use std::cell::RefCell;

use crate::decode::arcs::ArcScores;
use crate::decode::chu_liu_edmonds::{chu_liu_edmonds, CleWorkspace};
use crate::error::{OmklError, Result};
use crate::model::parser::TreeDecoder;

thread_local! {
    static CLE: RefCell<CleWorkspace> = RefCell::new(CleWorkspace::new());
}

/// Best tree (one root child) for `scores[h * n1 + m]`; returns the heads of
/// words `1..n1`.
pub fn decode_tree(decoder: TreeDecoder, scores: &[f64], n1: usize) -> Result<Vec<usize>> {
    if n1 < 2 {
        return Err(OmklError::empty("sentence"));
    }
    let arcs = ArcScores::new(scores, n1 - 1)?;
    let mut heads = vec![0usize; n1];
    match decoder {
        TreeDecoder::ChuLiuEdmonds => {
            CLE.with(|ws| chu_liu_edmonds(&arcs, true, &mut ws.borrow_mut(), &mut heads))?;
        }
        TreeDecoder::Eisner => {
            return Err(OmklError::invalid(
                "decoder",
                "\"eisner\" is not available yet; use \"chu-liu-edmonds\"",
            ))
        }
    }
    heads.remove(0);
    Ok(heads)
}
