//! Small item-writing macros used across the crate.

/// Implements `PartialEq` as always `true` for each type given: buffers,
/// caches and shared handles that a model holds but that take no part in
/// comparing two models.
macro_rules! ignored_when_compared {
    ($($t:ty),+ $(,)?) => {$(
        impl PartialEq for $t {
            fn eq(&self, _: &Self) -> bool {
                true
            }
        }
    )+};
}

/// For each `"feature" => name`, writes `unsafe fn name(args)`, which calls
/// `inner(args)` compiled with that x86-64 target feature (on x86-64 only).
/// `inner` should be `#[inline(always)]`, so that its body is compiled again
/// for each feature. Callers must check that the CPU supports the feature.
macro_rules! target_feature_fns {
    (@one $feature:literal $name:ident $inner:ident ($($arg:ident: $ty:ty),* $(,)?)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $name($($arg: $ty),*) {
            $inner($($arg),*)
        }
    };
    ($inner:ident $params:tt; $($feature:literal => $name:ident),+ $(,)?) => {$(
        $crate::macros::target_feature_fns!(@one $feature $name $inner $params);
    )+};
}

pub(crate) use {ignored_when_compared, target_feature_fns};
