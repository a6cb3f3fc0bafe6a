//! Proximity operators and projections (Section 3 and the appendix).

pub mod l1;
