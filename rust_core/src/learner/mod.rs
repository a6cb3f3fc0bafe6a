//! Alg. 1 (online proximal learning) and Alg. 3 (online MKL).
