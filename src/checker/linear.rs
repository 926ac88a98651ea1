//! Linearizability checking (placeholder; see issue 3).
