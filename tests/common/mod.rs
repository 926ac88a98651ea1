//! Shared test fixtures. Owns nothing but the module list.
pub mod sshd;
