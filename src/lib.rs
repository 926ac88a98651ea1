//! shakedown: a Jepsen-style fault-injection test harness (the binary crate: shell and CLI).
//!
//! See ARCHITECTURE.md for the bird's-eye view. The pure core — `node`, `faults`, `history`,
//! `generator`, `model`, `checker`, `completion`, `edn`, `import`, `export`, `plural`, `size`, `meminfo` —
//! is the `shakedown-core` crate (`core/`), re-exported here under the same names. Pure parts of
//! this crate: `spec`, `summary`, the validated `config` (and `options`, the words it shares with
//! the parts it configures), and the pure halves of `chaos` and `compare`. Shared seams of
//! systems: `db` (the `Db` trait and abilities), `client` (the `Client` trait, `Completion`,
//! `ClientCtx`). Impure shell: `control`, `sandbox`, `systems` (one folder
//! per system under test), `nemesis`, `interpreter`, `store`, `report`, `runner`, `doctor`,
//! `bench`. CLI: `cli`, `app` (nothing below them imports them). `fuzz`: the run-directory
//! reader's fuzzing harness (above `app`; nothing imports it).

// The pure core lives in the `shakedown-core` crate (core/); its modules keep their paths here.
pub use shakedown_core::{
    checker, completion, edn, export, faults, generator, history, import, meminfo, model, node,
    plural, size, stream,
};

pub mod app;
pub mod bench;
pub mod chaos;
pub mod cli;
pub mod client;
pub mod compare;
pub mod config;
pub mod control;
pub mod db;
pub mod doctor;
pub mod fuzz;
pub mod interpreter;
pub mod lazyfs;
pub mod mapped;
pub mod members;
pub mod nemesis;
pub mod netdelay;
pub mod options;
pub mod progress;
pub mod provision;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod spec;
pub mod store;
pub mod summary;
pub mod systems;
