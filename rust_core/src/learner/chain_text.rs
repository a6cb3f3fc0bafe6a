//! Chain learners on [token templates](crate::features::token_templates):
//! the templates of a training batch are registered as groups in order of
//! first appearance (as the keys of feature dicts are), and rows whose
//! groups are template ids are rewritten with the learner's group ids.
//!
//! # Example
//! ```
//! use std::collections::BTreeMap;
//! use omkl_core::features::token_templates::TokenTemplates;
//! use omkl_core::learner::chain_text::template_groups;
//! use omkl_core::learner::named::NamedLearner;
//! use omkl_core::learner::{Alg1Config, Loss, Schedule};
//! let config = Alg1Config::new(Loss::Hinge, Schedule::Constant { eta0: 1.0 }, vec![]);
//! let mut learner = NamedLearner::new_chain(config, BTreeMap::new(), 64).unwrap();
//! let t = TokenTemplates::parse(&["tags:upos"]).unwrap();
//! let mut rows = vec![t.sentence(&["a", "b"], &[&["X", "Y"]], 64).unwrap()];
//! learner.register_templates(&t, &mut rows).unwrap();
//! // group 0 holds the transitions; the templates follow in order
//! assert_eq!(template_groups(learner.space(), &t).unwrap(), [Some(1), Some(2), Some(3)]);
//! assert!(learner.model_mut().learn_chain(&rows[0], &[0, 0]).is_ok());
//! ```

use super::chain::TRANSITIONS;
use super::named::NamedLearner;
use crate::error::{OmklError, Result};
use crate::features::token_templates::{first_seen, TokenTemplates};
use crate::features::{FeatureSpace, SparseBatch};

/// The group id in `space` of every template of `t` (`None` for a group not
/// registered yet); an error if a template's group is the transition group.
pub fn template_groups(space: &FeatureSpace, t: &TokenTemplates) -> Result<Vec<Option<u32>>> {
    t.names()
        .iter()
        .map(|n| {
            let g = space.grouping().group_of(n);
            if g == TRANSITIONS {
                return Err(OmklError::invalid(
                    format!("templates[{n:?}]"),
                    format!("{TRANSITIONS:?} is the name of the transition group"),
                ));
            }
            Ok(space.group_id(g))
        })
        .collect()
}

/// Rewrites the template ids of `rows` as group ids (`ids[template]`),
/// dropping the entries of templates without a group.
///
/// # Complexity
/// O(entries), in place.
pub fn to_group_ids(rows: &mut SparseBatch, ids: &[Option<u32>]) {
    let mut k = 0;
    let mut start = 0;
    for r in 0..rows.n_examples() {
        let end = rows.indptr[r + 1];
        for j in start..end {
            if let Some(Some(g)) = ids.get(rows.groups[j] as usize) {
                rows.groups[k] = *g;
                rows.indices[k] = rows.indices[j];
                rows.values[k] = rows.values[j];
                k += 1;
            }
        }
        start = end;
        rows.indptr[r + 1] = k;
    }
    rows.groups.truncate(k);
    rows.indices.truncate(k);
    rows.values.truncate(k);
}

impl NamedLearner {
    /// Registers the groups of the templates that `rows` use (rows whose
    /// groups are template ids of `t`), new ones in order of first
    /// appearance, then rewrites `rows` with group ids. On error nothing is
    /// registered and `rows` are left as they were.
    pub fn register_templates(
        &mut self,
        t: &TokenTemplates,
        rows: &mut [SparseBatch],
    ) -> Result<()> {
        self.model().transition_group()?;
        let known = template_groups(self.space(), t)?;
        let fresh: Vec<&str> = first_seen(rows, t.names().len())
            .into_iter()
            .filter(|&i| known[i as usize].is_none())
            .map(|i| t.names()[i as usize].as_str())
            .collect();
        self.chain_groups(&fresh)?;
        let ids = template_groups(self.space(), t)?;
        for r in rows.iter_mut() {
            to_group_ids(r, &ids);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    use crate::learner::{Alg1Config, Loss, Schedule};

    proptest! {
        #[test]
        fn group_ids_equal_a_row_by_row_filter(
            rows in prop::collection::vec(prop::collection::vec((0u32..6, 0u32..50), 0..5), 1..5),
            ids in prop::collection::vec(prop::option::of(0u32..9), 6),
        ) {
            let mut batch = SparseBatch { indptr: vec![0], ..Default::default() };
            let mut want = Vec::new();
            for row in &rows {
                for (k, &(t, b)) in row.iter().enumerate() {
                    batch.groups.push(t);
                    batch.indices.push(b);
                    batch.values.push(k as f64);
                }
                batch.indptr.push(batch.groups.len());
                want.push(row.iter().enumerate().filter_map(|(k, &(t, b))| {
                    ids[t as usize].map(|g| (g, b, k as f64))
                }).collect::<Vec<_>>());
            }
            to_group_ids(&mut batch, &ids);
            prop_assert_eq!(batch.n_examples(), rows.len());
            for (i, w) in want.iter().enumerate() {
                let got: Vec<_> = (batch.indptr[i]..batch.indptr[i + 1])
                    .map(|j| (batch.groups[j], batch.indices[j], batch.values[j]))
                    .collect();
                prop_assert_eq!(&got, w);
            }
        }
    }

    #[test]
    fn groups_follow_first_appearance_and_unknown_entries_drop() {
        let config = Alg1Config::new(Loss::Hinge, Schedule::Constant { eta0: 1.0 }, vec![]);
        let mut m = NamedLearner::new_chain(config, BTreeMap::new(), 64).unwrap();
        let t = TokenTemplates::parse(&["token"]).unwrap();
        // two words: EOS (template 29) is first seen on the second word,
        // after every other template
        let mut rows = vec![t.sentence(&["a", "b"], &[], 64).unwrap()];
        let before = rows[0].clone();
        m.register_templates(&t, &mut rows).unwrap();
        let names = m.space().group_names();
        assert_eq!(names[0], TRANSITIONS);
        assert_eq!(names[29], "BOS");
        assert_eq!(names[30], "EOS");
        assert_eq!(rows[0].indices, before.indices);
        assert_eq!(rows[0].groups[0], 1);
        // a frozen-style lookup that knows only some templates drops the rest
        let mut r = before.clone();
        let mut ids = vec![None; t.names().len()];
        ids[0] = Some(7);
        to_group_ids(&mut r, &ids);
        assert_eq!(
            (r.indptr.clone(), r.groups.clone()),
            (vec![0, 1, 2], vec![7, 7])
        );
        assert_eq!(
            r.indices,
            [before.indices[0], before.indices[before.indptr[1]]]
        );
        // a template named as the transition group is refused
        let bad = TokenTemplates::parse(&["tags:<transitions>"]).unwrap();
        let mut rows = vec![bad.sentence(&["a"], &[&["X"]], 64).unwrap()];
        let n = m.space().n_groups();
        assert!(m.register_templates(&bad, &mut rows).is_err());
        assert_eq!(m.space().n_groups(), n);
    }
}
