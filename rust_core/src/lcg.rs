//! A small deterministic pseudo-random sequence for tests, benchmarks and
//! examples: Knuth's MMIX linear congruential generator. The same seed gives
//! the same numbers on every machine. Not for anything that needs
//! statistical quality or unpredictability.

/// Knuth's MMIX linear congruential generator; the state is the field.
///
/// # Example
/// ```
/// use omkl_core::lcg::Lcg;
/// let (mut a, mut b) = (Lcg(42), Lcg(42));
/// let first = a.next_u32();
/// assert_eq!(first, b.next_u32());
/// assert!(first < 1 << 31);
/// ```
#[derive(Clone, Debug)]
pub struct Lcg(pub u64);

impl Lcg {
    /// Advances the state and returns its top 31 bits.
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}
