//! Kernels, Gram matrices, Gram caches and sparse Gram storage.
