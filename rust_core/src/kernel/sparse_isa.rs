//! The instruction set of the CSR scoring loops, chosen at run time
//! ([`Isa::detect`]): AVX-512F, AVX2 with FMA, or a portable loop.

/// An instruction set of the scoring loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// Scalar loop, no FMA.
    Portable,
    /// ymm registers with fused multiply-adds.
    Avx2,
    /// zmm registers with fused multiply-adds.
    Avx512,
}

impl Isa {
    /// The widest instruction set this CPU supports.
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every instruction set this CPU supports (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut all = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                all.push(Isa::Avx512);
            }
        }
        all
    }
}
