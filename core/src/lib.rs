//! shakedown-core: the pure core of shakedown — what a history is, how it is read and written,
//! what the systems under test are modelled as, and how a history is judged.
//!
//! Owns: `history` (ops, the JSONL history format), the other formats (`edn`, `import`, `export`:
//! Jepsen EDN, Porcupine, Knossos, Jepsen logs, Elle), `model`, every `checker`
//! (linearizability, session guarantees, set, lock, log, transactional/Elle), `generator` (the
//! workloads' op streams, pure and seeded), the fault vocabulary and fault intervals (`faults`),
//! and how a run's ending bears on its verdict (`completion`). Small shared words: `node`,
//! `plural`, `size`, `meminfo`. `fuzz`: the readers' fuzzing harnesses. `stream`: the streamed
//! linearizability check of a JSONL file (above `checker` and `import`).
//!
//! Does not own anything that talks to the world: no async runtime, SSH, HTTP or database crate
//! is a dependency (a test in the workspace asserts it with `cargo tree`). The only IO here is
//! reading a history file a caller names and `/proc/meminfo` for the default memory budget.
//! Rendering (HTML, plots) belongs to the binary crate's `report`.
//!
//! # Checking a history you recorded yourself
//!
//! A Rust project can record its own operations and check them, the way Go projects use
//! Porcupine (see `examples/check_own_history.rs`):
//!
//! ```
//! use shakedown_core::checker::Verdict;
//! use shakedown_core::checker::compose::check_linear;
//! use shakedown_core::checker::linear::WitnessMode;
//! use shakedown_core::history::History;
//! use shakedown_core::model::{ModelOptions, SemanticsPreset};
//! use std::time::Duration;
//!
//! // Process 0 writes 1 to key "x"; process 1 reads 1 while the write is still open (fine),
//! // then process 2 reads nil (the key absent) after the write completed: not linearizable.
//! let jsonl = r#"{"type":"invoke","process":0,"f":"write","key":"x","value":1}
//! {"type":"invoke","process":1,"f":"read","key":"x","value":null}
//! {"type":"ok","process":1,"f":"read","key":"x","value":1}
//! {"type":"ok","process":0,"f":"write","key":"x","value":1}
//! {"type":"invoke","process":2,"f":"read","key":"x","value":null}
//! {"type":"ok","process":2,"f":"read","key":"x","value":null}
//! "#;
//! let history = History::read_jsonl(jsonl.as_bytes(), "my-test").expect("well-formed");
//! let result = check_linear(
//!     "register",
//!     &history,
//!     &ModelOptions::preset(SemanticsPreset::Etcd),
//!     Duration::from_secs(10),
//!     WitnessMode::default(),
//! )
//! .expect("a known model");
//! assert_eq!(result.verdict, Verdict::Invalid);
//! ```

pub mod checker;
pub mod completion;
pub mod edn;
pub mod export;
pub mod faults;
pub mod fuzz;
pub mod generator;
pub mod history;
pub mod import;
pub mod meminfo;
pub mod model;
pub mod name;
pub mod node;
pub mod plural;
pub mod size;
pub mod stream;
