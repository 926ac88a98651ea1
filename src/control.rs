//! Remote command execution over SSH (placeholder).
