//! Structured models: parts, features, decoder and loss.
