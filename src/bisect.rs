//! Noisy bisection policy (placeholder until the search lands).
