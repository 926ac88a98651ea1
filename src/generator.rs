//! Pure op generators (placeholder).
