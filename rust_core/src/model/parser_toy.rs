//! Toy sentences and trees shared by the parser's unit tests.

use crate::features::arc_templates::WordAtoms;
use crate::model::parser::ArcParser;
use crate::model::parser_input::{ParserConfig, ParserInput};

pub(crate) fn sent(id: &str, tags: &[&str]) -> ParserInput {
    ParserInput {
        id: id.into(),
        words: tags
            .iter()
            .enumerate()
            .map(|(i, t)| WordAtoms::new(&format!("w{i}{t}"), t, t, t, "_"))
            .collect(),
    }
}

/// A toy grammar: DET and ADJ attach to the next NOUN, NOUN to the VERB,
/// the VERB to the root.
pub(crate) fn toy() -> Vec<(ParserInput, Vec<usize>)> {
    vec![
        (sent("a", &["DET", "NOUN", "VERB"]), vec![2, 3, 0]),
        (
            sent("b", &["NOUN", "VERB", "DET", "NOUN"]),
            vec![2, 0, 4, 2],
        ),
        (
            sent("c", &["DET", "ADJ", "NOUN", "VERB", "NOUN"]),
            vec![3, 3, 4, 0, 4],
        ),
        (sent("d", &["VERB", "DET", "NOUN"]), vec![0, 3, 1]),
    ]
}

/// A default parser trained one epoch on [`toy`] (with a pruner keeping
/// `pruner` heads per word when given), and the data.
pub(crate) fn trained_toy(pruner: Option<usize>) -> (Vec<(ParserInput, Vec<usize>)>, ArcParser) {
    let data = toy();
    let mut p = ArcParser::new(ParserConfig::default()).unwrap();
    if let Some(k) = pruner {
        p.set_pruner(k).unwrap();
    }
    for (s, h) in &data {
        p.learn_one(s, h).unwrap();
    }
    p.end_epoch().unwrap();
    (data, p)
}
