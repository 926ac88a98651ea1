//! The built-in local sandbox cluster (placeholder).
