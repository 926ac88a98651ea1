//! Validated test configuration: what `cli` turns command-line arguments into, once.
//!
//! Owns `TestConfig`, `ConfigError` and their validation rules (nodes: `node`). clap types never go past `cli`; the
//! rest of the program sees only these. Does no IO besides reading files named by the user.

use crate::node::Node;
use serde::Serialize;

/// The default bound on one nemesis op, in seconds (`--nemesis-timeout`): long enough for a
/// database restart that waits for the server to serve (a minute) and its commands.
pub const DEFAULT_NEMESIS_TIMEOUT_S: f64 = 120.0;

/// A config error, naming what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct ConfigError {
    /// Which flag, file or entry.
    pub what: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ConfigError {
    /// Build an error.
    pub fn new(what: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            what: what.into(),
            message: message.into(),
        }
    }
}

impl From<crate::node::NodeListError> for ConfigError {
    fn from(e: crate::node::NodeListError) -> ConfigError {
        ConfigError::new(e.source, e.message)
    }
}

/// Consistency a run asks of reads (`--read-mode`); a system refuses modes it cannot serve
/// (`systems::System::validate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadMode {
    /// Linearizable reads (etcd: quorum reads through the leader).
    #[default]
    Linearizable,
    /// Reads served locally by whichever node the client talks to: may be stale.
    Serializable,
}

impl ReadMode {
    /// The `--read-mode` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadMode::Linearizable => "linearizable",
            ReadMode::Serializable => "serializable",
        }
    }
}

impl std::fmt::Display for ReadMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resolved cluster selection (from `--nodes`/`--nodes-file`, SSH and sandbox flags).
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Explicit nodes, or `None` for the sandbox.
    pub nodes: Option<Vec<Node>>,
    /// SSH settings.
    pub ssh: crate::control::SshConfig,
    /// The sandbox to use when `nodes` is `None`.
    pub sandbox: crate::sandbox::SandboxConfig,
}

/// Where a client thread sends its reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReadFrom {
    /// The thread's bound node.
    #[default]
    Own,
    /// The primary (PostgreSQL).
    Primary,
    /// A random replica per read (PostgreSQL).
    Replica,
    /// A random node per read.
    Any,
}

impl ReadFrom {
    /// The `--read-from` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadFrom::Own => "own",
            ReadFrom::Primary => "primary",
            ReadFrom::Replica => "replica",
            ReadFrom::Any => "any",
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct TestConfig {
    /// Test name, used for the run directory (`reports/<name>/<timestamp>`).
    pub name: String,
    /// Explicit nodes; `None` means the built-in sandbox.
    pub nodes: Option<Vec<Node>>,
    /// Sandbox settings when `nodes` is `None`.
    pub sandbox: crate::sandbox::SandboxConfig,
    /// SSH settings.
    pub ssh: crate::control::SshConfig,
    /// How missing packages reach real nodes (`--packages-from`, `--no-install`); a sandbox run
    /// installs on this machine instead, unless `Skip`.
    pub install: crate::provision::Install,
    /// Number of client threads.
    pub concurrency: usize,
    /// Target client ops per second over all threads; 0 means as fast as possible.
    pub rate: f64,
    /// Length of the main phase in seconds.
    pub time_limit_s: f64,
    /// Seed of every random choice (ops, fault targets).
    pub seed: u64,
    /// The system under test and its settings.
    pub system: crate::systems::SystemConfig,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Nodes `replica`/`any` reads may pick from (names); empty = all eligible nodes.
    pub read_nodes: Vec<String>,
    /// Workload spec name or path, as given.
    pub workload_name: String,
    /// Parsed workload spec.
    pub workload: crate::spec::WorkloadSpec,
    /// Nemesis spec name, path or package list, as given.
    pub nemesis_name: String,
    /// Parsed nemesis schedule.
    pub nemesis: crate::spec::NemesisSpec,
    /// Linearizable or serializable reads.
    pub read_mode: ReadMode,
    /// Client op timeout; a timed-out op is recorded `info`.
    pub op_timeout_ms: u64,
    /// Root of run directories.
    pub reports_dir: std::path::PathBuf,
    /// Seconds to wait after healing before the final reads.
    pub settle_s: f64,
    /// The bound on one nemesis op, in seconds: its commands are cut off when it passes, and
    /// the final heal gets the same bound for all of its ops together (`--nemesis-timeout`).
    pub nemesis_timeout_s: f64,
    /// Time budget of the linearizability check.
    pub check_time_limit_s: f64,
    /// How much work goes into the witness of an invalid key (`--witness`).
    pub witness: crate::checker::linear::WitnessMode,
    /// End the workload at the first anomaly live checking confirms (`--stop-on-anomaly`;
    /// `runner::live`).
    pub stop_on_anomaly: bool,
    /// Transactional workloads: the models and anomalies to check against
    /// (`--consistency-models`, `--anomalies`); `None` = what the system claims for its settings
    /// ([`crate::systems::System::claimed_consistency`]), else Elle's default.
    pub consistency: Option<crate::checker::txn::judge::Ask>,
}

impl TestConfig {
    /// The command line that reruns this test with the same seed.
    pub fn rerun_command(&self) -> String {
        let mut parts = vec!["shakedown".to_string(), "run".into()];
        if let Some(nodes) = &self.nodes {
            let list: Vec<String> = nodes
                .iter()
                .map(|n| format!("{}={}", n.name, n.host))
                .collect();
            parts.push(format!("--nodes {}", list.join(",")));
        }
        parts.push(format!("--db {}", self.system.db_arg()));
        parts.extend(self.system.rerun_args());
        if self.read_from != ReadFrom::Own {
            parts.push(format!("--read-from {}", self.read_from.as_str()));
        }
        if !self.read_nodes.is_empty() {
            parts.push(format!("--read-nodes {}", self.read_nodes.join(",")));
        }
        parts.push(format!("--concurrency {}", self.concurrency));
        parts.push(format!("--rate {}", self.rate));
        parts.push(format!("--time-limit {}", self.time_limit_s));
        parts.push(format!("--workload {}", self.workload_name));
        parts.push(format!("--nemesis {}", self.nemesis_name));
        parts.push(format!("--read-mode {}", self.read_mode));
        if self.nemesis_timeout_s != DEFAULT_NEMESIS_TIMEOUT_S {
            parts.push(format!("--nemesis-timeout {}", self.nemesis_timeout_s));
        }
        if let Some(v) = &self.workload.version_source {
            parts.push(format!("--version-source {v}"));
        }
        if self.stop_on_anomaly {
            parts.push("--stop-on-anomaly".into());
        }
        parts.push(format!("--seed {}", self.seed));
        parts.join(" ")
    }
}
