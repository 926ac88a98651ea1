//! shakedown: a Jepsen-style fault-injection test harness.
//!
//! See ARCHITECTURE.md for the bird's-eye view. Pure core: `history`, `generator`, `model`,
//! `checker`. Impure shell: `control`, `sandbox`, `db`, `client`, `nemesis`, `interpreter`,
//! `store`, `cli`.

pub mod checker;
pub mod client;
pub mod control;
pub mod db;
pub mod edn;
pub mod generator;
pub mod history;
pub mod model;
pub mod sandbox;
