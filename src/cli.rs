//! Command-line interface: clap types, and their conversion into validated configs.
//!
//! clap types stop here: `RunArgs::into_config` produces a `TestConfig`, and the rest of the
//! program never sees clap. Exit codes: 0 valid, 1 invalid, 2 unknown, 3 usage or configuration
//! error, 4 runtime error (cluster, SSH, IO).
//!
//! This file holds the command list and `run`'s flags; `cli::cluster` which cluster and system a
//! command acts on, `cli::check` the `check` flags, `cli::bench` and `cli::chaos` those commands'.

use crate::config::{Cluster, TestConfig};
use crate::options::ConfigError;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod bench;
mod chaos;
mod check;
mod cluster;
pub mod duration;
mod export;
pub use bench::BenchArgs;
pub use chaos::ChaosArgs;
pub use check::{CheckArgs, FailedCasArg, NilReadArg, SemanticsArg, StreamArg};
pub use cluster::{
    ClusterArgs, DbArgs, DoctorArgs, HealArgs, InstallArgs, PackagesFromArg, SandboxAction,
    SandboxArgs, SandboxCmd,
};
pub use export::{ExportArgs, ExportFormatArg};

/// Exit code for bad usage or configuration.
pub const EXIT_USAGE: i32 = 3;
/// Exit code for a runtime failure (unreachable node, setup failure, IO).
pub const EXIT_RUNTIME: i32 = 4;

/// shakedown: fault-injection testing of distributed databases.
#[derive(Debug, Parser)]
#[command(name = "shakedown", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands. Each doc's first paragraph is its one line in `shakedown --help` (keep it short,
/// the list is tested to fit 100 columns); the rest shows in the command's own `--help`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a test: set up the DB, drive the workload under faults, check the history.
    Run(Box<RunArgs>),
    /// Check a history file or run directory offline.
    Check(CheckArgs),
    /// Write a run's history as Jepsen/Elle EDN, Porcupine's kv lines or elle-cli's JSON.
    ///
    /// So a verdict can be confirmed with the reference tool. Prints, on standard error, the
    /// `shakedown check` flags that judge the exported file as the run was judged (the formats
    /// carry no model or register semantics). Exit 3 when the history cannot be read or the
    /// format cannot hold it (named), 4 when the file cannot be written.
    Export(ExportArgs),
    /// Manage the built-in local cluster (network namespaces + sshd).
    ///
    /// Each node's PID 1 is a small reaper that restarts sshd when it dies (so the `ssh-drop`
    /// fault and a killed sshd do not take the node down); killing the reaper takes the node
    /// down.
    Sandbox(SandboxCmd),
    /// Measure the controller's overhead against a bare client loop.
    ///
    /// Both sides run on the same cluster, in many short paired rounds.
    Bench(BenchArgs),
    /// Regenerate a run directory's results, page and plots from its history.
    ///
    /// Rewrites results.json, the run page, the plots and, when the run is invalid, the witness
    /// page, from history.jsonl alone.
    Report(ReportArgs),
    /// Undo faults the tool may have left behind on the nodes.
    ///
    /// Removes its iptables chain (partition and loss rules) and its tc qdiscs, resumes paused
    /// DB processes on every node (e.g. after the controller was killed). Heals every node it
    /// reaches and says per node what it undid; exits 4 naming what was left (an unreachable
    /// node, a failed step).
    Heal(HealArgs),
    /// Preflight every node: SSH, root, iptables, tc, netem, clock, NTP, DB binaries.
    ///
    /// Exit 0 when every required check passed (warnings allowed), 4 otherwise.
    Doctor(DoctorArgs),
    /// Browse the reports on http://127.0.0.1:PORT/ (loopback only).
    Serve(ServeArgs),
    /// Run a matrix of configurations and judge each cell's claimed consistency.
    ///
    /// Runs the matrix (compare/*.toml) with several seeds each and shows each cell's claimed
    /// consistency against what the runs observed. Exit 0 when every claim held, 1 when any was
    /// refuted, 2 when some are undecided.
    Compare(CompareArgs),
    /// Inject always-healed faults into a live system, watched by a health probe.
    ///
    /// Faults are journaled and always healed; the system's own traffic runs, and a health probe
    /// is recorded as history ops (no workload of ours, no checkers). Rails: --nodes required,
    /// --dry-run, blast radius (--allow-majority), --abort-after. Exit 0 within SLO (or no SLO
    /// given and it ran to its end), 1 SLO violated, 2 undecided (aborted by the probe,
    /// interrupted, no probe ran), 3 usage or refused, 4 runtime error or a heal that left
    /// something.
    #[command(
        mut_arg("nodes", |a| a.help("Nodes to inject faults into: `host,host,…` or `name=host,…` (required, or --nodes-file; never the sandbox by itself)")),
        mut_arg("sandbox_name", |a| a.help("Sandbox whose SSH key and known_hosts to use when the nodes are a sandbox's (its nodes still go in --nodes)"))
    )]
    Chaos(Box<ChaosArgs>),
    /// The filesystem layer that loses unsynced writes (run on nodes by the power-loss fault).
    #[command(hide = true)]
    Lazyfs(LazyfsCmd),
    /// The packet delayer (run on nodes by the delay fault where the kernel has no netem).
    #[command(hide = true)]
    Netdelay(NetdelayArgs),
}

/// `shakedown netdelay` (hidden: the `delay` fault's NFQUEUE backend runs it on the nodes).
#[derive(Debug, Args)]
pub struct NetdelayArgs {
    /// NFQUEUE queue number to bind.
    #[arg(long)]
    pub queue: u16,
    /// Delay per packet in ms.
    #[arg(long)]
    pub delay_ms: u64,
    /// Uniform jitter around the delay in ms.
    #[arg(long, default_value_t = 0)]
    pub jitter_ms: u64,
    /// Fraction of packets sent at once (0 <= r < 1).
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Seed of the delay schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most packets the kernel queues for the delayer (past it, packets pass undelayed).
    #[arg(long, default_value_t = 1 << 16)]
    pub max_queued: u32,
}

/// `shakedown lazyfs serve|ctl` (hidden: the `power-loss` fault runs it on the nodes).
#[derive(Debug, Args)]
pub struct LazyfsCmd {
    /// What to do.
    #[command(subcommand)]
    pub action: LazyfsAction,
}

/// `lazyfs` subcommands.
#[derive(Debug, Subcommand)]
pub enum LazyfsAction {
    /// Mount the layer over a backing directory and serve it until unmounted or SIGTERM.
    Serve {
        /// Directory holding the real files.
        #[arg(long)]
        backing: PathBuf,
        /// Mount point.
        #[arg(long)]
        mount: PathBuf,
        /// Unix socket taking commands (lose-unsynced, lose-unsynced torn, sync-all, stats,
        /// inject JSON, clear).
        #[arg(long)]
        control: PathBuf,
    },
    /// Send one command to a serving layer and print its JSON answer.
    Ctl {
        /// The layer's control socket.
        #[arg(long)]
        control: PathBuf,
        /// lose-unsynced, lose-unsynced torn, sync-all, stats, inject JSON (a disk fault) or
        /// clear; the words are joined with spaces.
        #[arg(required = true, num_args = 1..)]
        command: Vec<String>,
    },
}

/// Read consistency (`--read-mode`); a system refuses modes it cannot serve.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReadModeArg {
    /// Quorum reads through the leader (etcd default).
    Linearizable,
    /// Local reads from whichever member the client talks to (may be stale).
    Serializable,
}

impl From<ReadModeArg> for crate::options::ReadMode {
    fn from(r: ReadModeArg) -> Self {
        match r {
            ReadModeArg::Linearizable => crate::options::ReadMode::Linearizable,
            ReadModeArg::Serializable => crate::options::ReadMode::Serializable,
        }
    }
}

/// Where reads go.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReadFromArg {
    /// The thread's bound node.
    Own,
    /// The primary (postgres).
    Primary,
    /// A random replica per read (postgres).
    Replica,
    /// A random node per read (postgres).
    Any,
}

impl From<ReadFromArg> for crate::options::ReadFrom {
    fn from(r: ReadFromArg) -> Self {
        use crate::options::ReadFrom as R;
        match r {
            ReadFromArg::Own => R::Own,
            ReadFromArg::Primary => R::Primary,
            ReadFromArg::Replica => R::Replica,
            ReadFromArg::Any => R::Any,
        }
    }
}

/// `shakedown report` flags.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A run directory (holding history.jsonl).
    pub run_dir: PathBuf,
    /// Time budget for re-checking an invalid run's witness: seconds, or 90s, 10m….
    #[arg(long, default_value_t = 60.0, value_parser = crate::cli::duration::seconds)]
    pub check_time_limit: f64,
}

/// `shakedown serve` flags.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// TCP port on 127.0.0.1 (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The reports directory to serve.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
}
/// `shakedown run` flags.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Which cluster and how to reach it.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// How the system's packages are installed.
    #[command(flatten)]
    pub install: InstallArgs,
    /// Client threads.
    #[arg(long, default_value_t = 10)]
    pub concurrency: usize,
    /// Client ops per second over all threads (0 = as fast as possible).
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// How long the workload (main phase) runs: seconds, or 90s, 10m, 24h, 1h30m.
    #[arg(long, default_value_t = 60.0, value_parser = crate::cli::duration::seconds)]
    pub time_limit: f64,
    /// Random seed (default: random, printed and stored in test.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The system under test and its flags.
    #[command(flatten)]
    pub db: DbArgs,
    /// Where reads go: own (the thread's node), primary, replica (random per read), any
    /// (random node per read). etcd supports own and any (a random member per read; writes stay
    /// on the thread's node).
    #[arg(long, value_enum, default_value_t = ReadFromArg::Own)]
    pub read_from: ReadFromArg,
    /// Comma-separated node names that replica/any reads may pick (default: all eligible).
    #[arg(long)]
    pub read_nodes: Option<String>,
    /// Workload: a name under workloads/ or a path to a .toml spec.
    #[arg(long, default_value = "register")]
    pub workload: String,
    /// Nemesis: a name under nemeses/ (its file, e.g. `clock`, `isolate`, `stall`, `none`), a
    /// path to a .toml schedule, or a comma-separated list of packages (partition, kill, pause,
    /// isolate, loss, bandwidth, delay, clock, promote, ssh-drop, stall, power-loss, os-crash,
    /// bitflip, truncate, disk-error, disk-full, slow-disk, membership).
    #[arg(long, default_value = "partition,kill,pause")]
    pub nemesis: String,
    /// Time between fault transitions (overrides the schedule's interval_s): seconds, or 30s, 2m….
    #[arg(long, value_parser = crate::cli::duration::seconds)]
    pub nemesis_interval: Option<f64>,
    /// Read consistency: linearizable (etcd: quorum reads through the leader) or serializable
    /// (etcd: local reads from the member asked, may be stale); a system refuses modes it cannot
    /// serve.
    #[arg(long, value_enum, default_value_t = ReadModeArg::Linearizable)]
    pub read_mode: ReadModeArg,
    /// Version order of the session checker: auto (the workload's `version_source`, else chosen
    /// from the history), system, list-append or increasing-values.
    #[arg(long, default_value = "auto")]
    pub version_source: String,
    /// Client op timeout in milliseconds; timed-out ops are recorded as info.
    #[arg(long, default_value_t = 1000)]
    pub op_timeout_ms: u64,
    /// Directory holding run directories.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Test name (run directory under --reports).
    #[arg(long)]
    pub name: Option<String>,
    /// Time to let the cluster settle after healing, before final reads: seconds, or 10s….
    #[arg(long, default_value_t = 3.0, value_parser = crate::cli::duration::seconds)]
    pub settle: f64,
    /// Bound on one nemesis op, in seconds or 90s-style (its commands are cut off when it
    /// passes); the final heal gets the same bound for all its ops together.
    #[arg(long, value_name = "SECS", default_value_t = crate::config::DEFAULT_NEMESIS_TIMEOUT_S, value_parser = crate::cli::duration::seconds)]
    pub nemesis_timeout: f64,
    /// Time budget for the linearizability check: seconds, or 90s, 10m….
    #[arg(long, default_value_t = 60.0, value_parser = crate::cli::duration::seconds)]
    pub check_time_limit: f64,
    /// Witness of an invalid key: none (blocked op and longest linearizable prefix only), fast
    /// (also the essential ops, minimized within 2 s per key) or minimal (minimized to 1-minimal
    /// within the check's time budget).
    #[arg(long, default_value = "fast", value_parser = parse_witness)]
    pub witness: crate::checker::linear::WitnessMode,
    /// End the workload at the first anomaly confirmed while it runs, heal, and report why it
    /// stopped (the run is invalid). Register and list-append keys are checked for
    /// linearizability as soon as they are retired (every run of these workloads does this);
    /// set, log, lock and transactional workloads cannot be decided before their final reads or
    /// whole history, so they are refused, and session guarantees are only checked at the end.
    #[arg(long)]
    pub stop_on_anomaly: bool,
    /// Transactional workloads (--workload txn): the consistency models the history must
    /// satisfy, comma-separated, in Elle's names (strict-serializable, serializable,
    /// snapshot-isolation, repeatable-read, read-committed, …). Default: what the system claims
    /// for its settings (PostgreSQL: read-committed, snapshot-isolation for repeatable read,
    /// serializable), else strict-serializable.
    #[arg(long, value_name = "MODELS")]
    pub consistency_models: Option<String>,
    /// Transactional workloads: anomalies that fail the check besides the models' (Elle's
    /// names: G0, G1c, G-single-item, G-nonadjacent-item, G2-item, lost-update, …).
    #[arg(long, value_name = "ANOMALIES")]
    pub anomalies: Option<String>,
    /// No progress bar; only the final summary.
    #[arg(long)]
    pub quiet: bool,
    /// Print the outcome as one JSON object (implies --quiet).
    #[arg(long)]
    pub json: bool,
    /// Also write the verdicts as JUnit XML (one test case per checker) to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

impl RunArgs {
    /// The defaults of `shakedown run`, with the given sandbox selection.
    pub fn defaults(sandbox: SandboxArgs) -> RunArgs {
        match Cli::parse_from(["shakedown", "run"]).command {
            Command::Run(mut r) => {
                r.cluster.sandbox = sandbox;
                *r
            }
            _ => unreachable!("parsed a run command"),
        }
    }
}

/// `--memory`: a size such as 512M or 2G.
fn parse_memory(s: &str) -> Result<usize, String> {
    crate::size::parse_size(s)
}

/// `--witness`: none, fast or minimal.
fn parse_witness(s: &str) -> Result<crate::checker::linear::WitnessMode, String> {
    s.parse()
}

fn positive(name: &str, v: f64) -> Result<f64, ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::new(
            name,
            format!("{v}: expected a positive number"),
        ))
    }
}

impl RunArgs {
    /// `--consistency-models` and `--anomalies`: only for a transactional workload.
    fn consistency(
        &self,
        workload: &crate::spec::WorkloadSpec,
    ) -> Result<Option<crate::checker::txn::judge::Ask>, ConfigError> {
        if self.consistency_models.is_none() && self.anomalies.is_none() {
            return Ok(None);
        }
        let flag = if self.consistency_models.is_some() {
            "--consistency-models"
        } else {
            "--anomalies"
        };
        if workload.kind != crate::generator::txn::KIND {
            return Err(ConfigError::new(
                flag,
                format!(
                    "applies to transactional workloads (--workload txn); the {} workload is checked by its own checker",
                    workload.kind
                ),
            ));
        }
        crate::checker::txn::judge::Ask::parse(
            self.consistency_models.as_deref().unwrap_or(""),
            self.anomalies.as_deref(),
        )
        .map(Some)
        .map_err(|e| {
            let (flag, rest) = e.split_once(": ").unwrap_or((flag, &e));
            ConfigError::new(flag, rest)
        })
    }

    /// Validate and convert into a `TestConfig`.
    pub fn into_config(self) -> Result<TestConfig, ConfigError> {
        let Cluster {
            nodes,
            ssh,
            sandbox,
        } = self.cluster.to_cluster()?;
        let system = self.db.config()?;
        let read_from: crate::options::ReadFrom = self.read_from.into();
        let read_nodes: Vec<String> = match &self.read_nodes {
            None => Vec::new(),
            Some(list) => {
                let names: Vec<String> = list
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if names.is_empty() {
                    return Err(ConfigError::new("--read-nodes", "no node names given"));
                }
                names
            }
        };
        if self.concurrency == 0 {
            return Err(ConfigError::new("--concurrency", "must be at least 1"));
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err(ConfigError::new(
                "--rate",
                format!("{}: expected 0 (unlimited) or a positive number", self.rate),
            ));
        }
        let time_limit_s = positive("--time-limit", self.time_limit)?;
        if self.op_timeout_ms == 0 {
            return Err(ConfigError::new("--op-timeout-ms", "must be at least 1"));
        }
        if !(self.settle.is_finite() && self.settle >= 0.0) {
            return Err(ConfigError::new(
                "--settle",
                format!("{}: expected a non-negative number", self.settle),
            ));
        }
        let check_time_limit_s = positive("--check-time-limit", self.check_time_limit)?;
        let nemesis_timeout_s = positive("--nemesis-timeout", self.nemesis_timeout)?;
        let mut workload = crate::spec::load_workload(&self.workload)?;
        let consistency = self.consistency(&workload)?;
        match self.version_source.as_str() {
            "auto" => {}
            v => {
                v.parse::<crate::checker::session::VersionSource>()
                    .map_err(|m| ConfigError::new("--version-source", m))?;
                workload.version_source = Some(v.to_string());
            }
        }
        let mut nemesis = crate::spec::load_nemesis(&self.nemesis)?;
        if let Some(i) = self.nemesis_interval {
            nemesis.interval_s = positive("--nemesis-interval", i)?;
        }
        let mut system = system;
        if nemesis
            .faults
            .iter()
            .any(crate::spec::FaultSpec::needs_data_layer)
        {
            // The nodes run this very binary to serve the data directory (the sandbox's share
            // this machine's files; real hosts need it at the same path).
            let exe = std::env::current_exe().map_err(|e| {
                ConfigError::new(
                    "--nemesis",
                    format!(
                        "power-loss / os-crash / disk faults: cannot tell where this binary is ({e})"
                    ),
                )
            })?;
            system.serve_data_from_layer(&exe.to_string_lossy());
        }
        if self.stop_on_anomaly && crate::runner::live::live_model(&workload.kind).is_none() {
            return Err(ConfigError::new(
                "--stop-on-anomaly",
                crate::runner::live::not_live_because(&workload.kind),
            ));
        }
        let seed = self.seed.unwrap_or_else(rand::random);
        let name = self.name.clone().unwrap_or_else(|| {
            format!(
                "{}-{}",
                system.name(),
                crate::spec::workload_name(&self.workload)
            )
        });
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(ConfigError::new(
                "--name",
                format!("{name:?}: expected a plain directory name"),
            ));
        }
        let cfg = TestConfig {
            name,
            nodes,
            sandbox,
            ssh,
            install: self.install.install(),
            concurrency: self.concurrency,
            rate: self.rate,
            time_limit_s,
            seed,
            system,
            read_from,
            read_nodes,
            workload_name: self.workload.clone(),
            workload,
            nemesis_name: self.nemesis.clone(),
            nemesis,
            read_mode: self.read_mode.into(),
            op_timeout_ms: self.op_timeout_ms,
            reports_dir: self.reports.clone(),
            settle_s: self.settle,
            nemesis_timeout_s,
            check_time_limit_s,
            witness: self.witness,
            stop_on_anomaly: self.stop_on_anomaly,
            consistency,
        };
        // Before any node is touched: refuse what the system cannot serve.
        cfg.system
            .open()
            .validate(&cfg.workload, &cfg.run_options())?;
        Ok(cfg)
    }
}
/// `shakedown compare` flags.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The matrix spec: a name under compare/ (etcd-reads, postgres-replicas, postgres-isolation,
    /// redis-wait) or a
    /// path to a .toml file.
    pub spec: String,
    /// Reports directory: every run is stored there as usual, the matrix page under
    /// <reports>/compare/<time>/.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Continue an earlier compare (the directory it printed): completed runs are kept, the
    /// others run.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Only the cells whose name contains one of these comma-separated words.
    #[arg(long, value_name = "WORDS")]
    pub cells: Option<String>,
    /// Seeds for every cell instead of the spec's: a count (`3` = seeds 1, 2, 3) or a
    /// comma-separated list (`7,11`).
    #[arg(long, value_name = "N|LIST")]
    pub seeds: Option<String>,
    /// Print the command line of every run and exit without running anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Flags for every run, after `--` (e.g. `-- --sandbox-name x --nodes …`); the spec's own
    /// flags come first.
    #[arg(last = true, value_name = "RUN FLAGS")]
    pub run_args: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("shakedown").chain(args.iter().copied()))
    }

    /// The lines of a help text's `Commands:` list.
    fn command_list(help: &str) -> Vec<String> {
        help.lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_command_list_has_one_short_line_per_command() {
        use clap::CommandFactory;
        let mut top = Cli::command();
        let mut lists = vec![("shakedown".to_string(), top.render_long_help().to_string())];
        for sub in top.get_subcommands_mut() {
            if sub.has_subcommands() {
                let name = format!("shakedown {}", sub.get_name());
                lists.push((name, sub.render_long_help().to_string()));
            }
        }
        for (name, help) in &lists {
            let list = command_list(help);
            assert!(!list.is_empty(), "{name}: no command list in\n{help}");
            for line in &list {
                assert!(
                    line.chars().count() <= 100,
                    "{name} --help: {} columns: {line}",
                    line.chars().count()
                );
            }
        }
        // One line per command: the top-level list names each of them once.
        let top_list = command_list(&lists[0].1);
        // (hidden commands, such as `lazyfs` the nodes run, are not listed)
        let shown = Cli::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .count();
        assert_eq!(top_list.len(), shown + 1);
        // The detail is still in the command's own --help.
        let heal = Cli::command()
            .find_subcommand_mut("heal")
            .map(|c| c.render_long_help().to_string())
            .unwrap();
        assert!(heal.contains("exits 4 naming what was left"), "{heal}");
    }

    #[test]
    fn run_defaults_validate() {
        let Command::Run(r) = parse(&["run"]).unwrap().command else {
            panic!("not run")
        };
        let cfg = r.into_config().unwrap();
        assert_eq!(cfg.concurrency, 10);
        assert_eq!(cfg.time_limit_s, 60.0);
        assert!(cfg.nodes.is_none());
        assert_eq!(cfg.nemesis.faults.len(), 4);
        assert_eq!(cfg.name, "etcd-register");
    }

    #[test]
    fn postgres_flags_reach_the_config() {
        let Command::Run(r) = parse(&[
            "run",
            "--db",
            "postgres",
            "--synchronous-commit",
            "remote_apply",
            "--synchronous-standby-names",
            "ANY 4 (*)",
            "--read-from",
            "replica",
            "--read-nodes",
            "n2,n3",
        ])
        .unwrap()
        .command
        else {
            panic!("not run")
        };
        let cfg = r.into_config().unwrap();
        let crate::systems::SystemConfig::Postgres(pg) = &cfg.system else {
            panic!("not postgres: {:?}", cfg.system)
        };
        assert_eq!(
            pg.synchronous_commit,
            crate::systems::postgres::SynchronousCommit::RemoteApply
        );
        assert_eq!(pg.synchronous_standby_names.as_deref(), Some("ANY 4 (*)"));
        assert_eq!(cfg.read_from, crate::options::ReadFrom::Replica);
        assert_eq!(cfg.read_nodes, vec!["n2".to_string(), "n3".to_string()]);
        assert_eq!(cfg.name, "postgres-register");
        // Tests are named after the workload, not its op family.
        let Command::Run(r) = parse(&["run", "--db", "postgres", "--workload", "session"])
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert_eq!(r.into_config().unwrap().name, "postgres-session");
        let rerun = cfg.rerun_command();
        assert!(rerun.contains("--db postgres --synchronous-commit remote_apply --synchronous-standby-names 'ANY 4 (*)' --read-from replica --read-nodes n2,n3"), "{rerun}");
    }

    #[test]
    fn bad_flags_are_config_errors_naming_the_flag() {
        for (args, needle) in [
            (vec!["run", "--nodes", "a,,b"], "--nodes"),
            (vec!["run", "--concurrency", "0"], "--concurrency"),
            (vec!["run", "--db", "mysql"], "--db"),
            (vec!["run", "--read-from", "replica"], "--read-from"),
            (
                vec!["run", "--synchronous-commit", "off"],
                "--synchronous-commit",
            ),
            (
                vec!["run", "--db", "postgres", "--read-nodes", ","],
                "--read-nodes",
            ),
            (vec!["run", "--nemesis", "meteor"], "meteor"),
            (vec!["run", "--ssh-key", "/nonexistent/key"], "--ssh-key"),
        ] {
            let Command::Run(r) = parse(&args).unwrap().command else {
                panic!("not run")
            };
            let e = r.into_config().unwrap_err().to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
        }
        assert!(parse(&["run", "--concurrency", "many"]).is_err());
        // A duration that is not one is refused by the parser, naming the flag and the forms.
        for bad in ["--time-limit=-1", "--time-limit=5x", "--settle=soon"] {
            let Err(e) = parse(&["run", bad]) else {
                panic!("{bad} was accepted")
            };
            let e = e.to_string();
            assert!(
                e.contains(bad.split('=').next().unwrap_or(bad))
                    && e.contains("expected a duration"),
                "{bad}: {e}"
            );
        }
    }
}
