//! Stable hashed sparse features, grouped by template.

pub mod arc_templates;
