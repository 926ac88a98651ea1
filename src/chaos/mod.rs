//! `shakedown chaos`: faults only, no workload of ours — journaled, always-healed faults injected
//! into a live system while its own traffic runs, with a health probe recorded as history ops.
//!
//! Owns the chaos vocabulary (the probe op, the experiment settings recorded in test.json) and
//! its parts. Pure (no IO, unit-tested): [`rails`] (blast-radius check of a nemesis schedule
//! before anything runs), [`slo`] (the SLO judgement of a history and its exit code), [`schedule`]
//! (the probe generator and the abort rail as generators). Shell: [`probe`] (the probe client: a command or an HTTP GET on the controller),
//! [`run`] (sequencing one experiment: SSH, fault journal, nemesis, interpreter, heal on every
//! exit path, results), [`dry_run`] (every command the schedule would run, in order, with no SSH
//! connection). Does not own injecting faults (`nemesis`), the run page (`report`) or flags
//! (`cli::chaos`).

pub mod dry_run;
pub mod probe;
pub mod rails;
pub mod run;
pub mod schedule;
pub mod slo;

use serde::{Deserialize, Serialize};

/// The `f` of probe ops in a chaos history (client process, invoke then ok or fail).
pub const PROBE_F: &str = "probe";

/// `kind` of a chaos run in test.json (runs have none).
pub const RUN_KIND: &str = "chaos";

/// Key of the experiment settings in test.json and results.json.
pub const SETTINGS_KEY: &str = "chaos";

/// What the probe does, on the controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "target")]
pub enum ProbeTarget {
    /// `sh -c CMD`; exit status 0 = served.
    Command(String),
    /// `GET URL`; a 2xx answer = served.
    Http(String),
}

impl ProbeTarget {
    /// "command `etcdctl get k`", "HTTP GET http://…".
    pub fn describe(&self) -> String {
        match self {
            ProbeTarget::Command(c) => format!("command `{c}`"),
            ProbeTarget::Http(u) => format!("HTTP GET {u}"),
        }
    }
}

/// The experiment's settings, recorded in test.json under [`SETTINGS_KEY`] (the report reads
/// the SLO and the abort rail back from there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The probe.
    pub probe: ProbeTarget,
    /// Time between probe starts, in ms.
    pub probe_interval_ms: u64,
    /// A probe that has not answered after this long fails, in ms.
    pub probe_timeout_ms: u64,
    /// Consecutive failed probes that stop the experiment (stop injecting, heal).
    pub abort_after: u32,
    /// Whether faults that can hit a majority (or all) of the nodes were allowed.
    pub allow_majority: bool,
    /// The service level the probe must stay within.
    pub slo: slo::Slo,
    /// Seconds of faults (the main phase).
    pub duration_s: f64,
    /// Seconds of probing after the final heal (recovery of the last fault).
    pub settle_s: f64,
}
