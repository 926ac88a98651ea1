//! Validated test configuration: what `cli` turns command-line arguments into, once.
//!
//! Owns `TestConfig` and what the parts it configures are told of it (`run_options` for a
//! system's `validate`, `client_ctx` for a client thread). The words it shares with those parts
//! (`ConfigError`, `ReadMode`, `ReadFrom`) are `options`', so they depend on no test config.
//! clap types never go past `cli`; the rest of the program sees only these. Does no IO besides
//! reading files named by the user.

use crate::client::ClientCtx;
use crate::node::Node;
use crate::options::{ReadFrom, ReadMode};
use crate::systems::RunOptions;

/// The default bound on one nemesis op, in seconds (`--nemesis-timeout`): long enough for a
/// database restart that waits for the server to serve (a minute) and its commands.
pub const DEFAULT_NEMESIS_TIMEOUT_S: f64 = 120.0;

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

    /// What the system is told of this run besides its workload (what `validate` judges).
    pub fn run_options(&self) -> RunOptions<'_> {
        RunOptions {
            read_mode: self.read_mode,
            read_from: self.read_from,
            read_nodes: &self.read_nodes,
            nemesis: &self.nemesis,
            nemesis_name: &self.nemesis_name,
            node_count: self.nodes.as_ref().map_or(self.sandbox.nodes, Vec::len),
            sandbox: self.nodes.is_none(),
            run_s: self.time_limit_s + self.settle_s,
        }
    }

    /// The context of client worker `thread` of this run on `nodes` (bound to
    /// `nodes[thread % nodes.len()]`).
    pub fn client_ctx(&self, thread: usize, nodes: &[Node]) -> ClientCtx {
        ClientCtx {
            thread,
            nodes: nodes.to_vec(),
            node: thread % nodes.len().max(1),
            seed: self.seed,
            op_timeout_ms: self.op_timeout_ms,
            read_mode: self.read_mode,
            read_from: self.read_from,
            read_nodes: self.read_nodes.clone(),
            workload_kind: self.workload.kind.clone(),
        }
    }
}
