//! shakedown: a Jepsen-style fault-injection test harness.
//!
//! See ARCHITECTURE.md for the bird's-eye view. Pure core: `node`, `faults`, `history`,
//! `generator`, `model`, `checker`, `completion`, `edn`, `import`, `spec`, `summary`, and the
//! validated `config`. Shared seams of systems: `db` (the `Db` trait and abilities), `client`
//! (the `Client` trait, `Completion`, `ClientCtx`). Impure shell: `control`, `sandbox`, `systems`
//! (one folder per system under test), `nemesis`, `interpreter`, `store`, `report`, `runner`,
//! `doctor`, `bench`. CLI: `cli`, `app` (nothing below them imports them).

pub mod app;
pub mod bench;
pub mod chaos;
pub mod checker;
pub mod cli;
pub mod client;
pub mod compare;
pub mod completion;
pub mod config;
pub mod control;
pub mod db;
pub mod doctor;
pub mod edn;
pub mod faults;
pub mod generator;
pub mod history;
pub mod import;
pub mod interpreter;
pub mod lazyfs;
pub mod mapped;
pub mod meminfo;
pub mod model;
pub mod nemesis;
pub mod netdelay;
pub mod node;
pub mod plural;
pub mod progress;
pub mod provision;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod size;
pub mod spec;
pub mod store;
pub mod summary;
pub mod systems;
