//! Sequential specifications (models) for the linearizability checker (placeholder).
