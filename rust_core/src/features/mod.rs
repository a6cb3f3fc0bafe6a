//! Stable hashed sparse features, grouped by template.
