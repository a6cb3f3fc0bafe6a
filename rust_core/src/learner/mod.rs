//! Alg. 1 (online proximal learning) and Alg. 3 (online MKL).
//!
//! * [`online_proximal`]: the loop of Alg. 1 on hashed grouped features.
//! * [`named`]: Alg. 1 on named features (grouping and hashing included),
//!   with saving and loading.
//! * [`schedule`]: learning rates `η0`, `η0/√t`, `1/(σt)`.
//! * [`loss`]: multiclass hinge, multiclass logistic and squared losses.
//! * [`weights`]: one group's weights as scale × vector, with its squared
//!   norm and lazy average ([`weights::ScaledBlock`]), under every learner.
//! * [`round`]: the prox part of a round (Prop. 1, then the ball).
//! * [`grouped_weights`]: one block per group of hashed features.
//! * [`frozen_weights`], [`frozen_linear`], [`frozen_chain`]: a trained
//!   model frozen for prediction (the non-zero averaged weights, `f32`).
//! * [`stream_mkl`]: Alg. 3 (and Alg. 1 on its groups): one round over
//!   kernel groups (on the fly, or over precomputed Gram matrices),
//!   explicit groups and transitions, for multiclass problems and chains.

pub mod chain;
pub mod chain_text;
pub mod frozen_chain;
pub mod frozen_linear;
pub mod frozen_weights;
pub mod grouped_weights;
pub mod half_table;
pub mod loss;
pub mod mix;
pub mod named;
pub mod online_proximal;
pub mod persist;
pub mod round;
pub mod schedule;
pub mod spec;
pub mod stream_mkl;
pub mod structure;
pub mod weights;

pub use grouped_weights::GroupedWeights;
pub use loss::{Loss, Target};
pub use online_proximal::{Alg1Config, OnlineProximal};
pub use schedule::Schedule;
pub use weights::ScaledBlock;

/// Types whose all-zero bit pattern is the value 0.
///
/// # Safety
/// Implement only for types where every byte zero is a valid value.
pub unsafe trait ZeroBits: Copy {}
// SAFETY: zero bits are 0.0.
unsafe impl ZeroBits for f32 {}
// SAFETY: as above.
unsafe impl ZeroBits for f64 {}
// SAFETY: zero bits are 0.
unsafe impl ZeroBits for u32 {}
// SAFETY: as above.
unsafe impl ZeroBits for u64 {}

/// A zeroed vector of `n` values straight from the allocator (untouched
/// pages of a large table cost no memory), or [`crate::OmklError::Alloc`]
/// naming `what`. On Linux, 4 MiB and more are advised as huge pages
/// (`MADV_HUGEPAGE`) before the first write: scoring reads tables at random
/// slots, and 2 MiB pages spare most address-translation misses.
pub fn zeroed<X: ZeroBits>(n: usize, what: &str) -> crate::Result<Vec<X>> {
    let fail = || crate::OmklError::Alloc {
        what: what.to_string(),
        bytes: (n as u128) * std::mem::size_of::<X>() as u128,
    };
    let layout = std::alloc::Layout::array::<X>(n).map_err(|_| fail())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<X>();
    if ptr.is_null() {
        return Err(fail());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout
    // of `n` values of `X`, all zero bits, which are valid values of `X`.
    let v = unsafe { Vec::from_raw_parts(ptr, n, n) };
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (ptr, len) = (v.as_ptr() as usize, std::mem::size_of_val(&v[..]));
        let (start, end) = ((ptr + HUGE - 1) & !(HUGE - 1), (ptr + len) & !(HUGE - 1));
        if len >= 2 * HUGE && end > start {
            // SAFETY: the range lies inside the allocation of `v` and is
            // page-aligned; MADV_HUGEPAGE only advises the kernel on how to
            // back the memory and keeps its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    Ok(v)
}
