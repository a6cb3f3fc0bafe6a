//! Exact decoders: multiclass argmax, Viterbi and forward-backward for
//! linear chains, Chu-Liu-Edmonds, matrix-tree and Eisner for dependency trees.
