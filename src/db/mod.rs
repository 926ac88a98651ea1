//! Database systems under test (placeholder).
