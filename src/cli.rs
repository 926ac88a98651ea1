//! Command-line interface: clap types, and their conversion into validated configs.
//!
//! clap types stop here: `RunArgs::into_config` produces a `TestConfig`, and the rest of the
//! program never sees clap. Exit codes: 0 valid, 1 invalid, 2 unknown, 3 usage or configuration
//! error, 4 runtime error (cluster, SSH, IO).

use crate::config::{Cluster, ConfigError, TestConfig};
use crate::node::parse_nodes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod chaos;
pub use chaos::ChaosArgs;

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

impl From<ReadModeArg> for crate::config::ReadMode {
    fn from(r: ReadModeArg) -> Self {
        match r {
            ReadModeArg::Linearizable => crate::config::ReadMode::Linearizable,
            ReadModeArg::Serializable => crate::config::ReadMode::Serializable,
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

impl From<ReadFromArg> for crate::config::ReadFrom {
    fn from(r: ReadFromArg) -> Self {
        use crate::config::ReadFrom as R;
        match r {
            ReadFromArg::Own => R::Own,
            ReadFromArg::Primary => R::Primary,
            ReadFromArg::Replica => R::Replica,
            ReadFromArg::Any => R::Any,
        }
    }
}

/// Sandbox selection shared by several commands.
#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// Sandbox name; namespaces, bridge and state directory derive from it.
    #[arg(long = "sandbox-name", default_value = "shakedown", global = true)]
    pub sandbox_name: String,
    /// Sandbox subnet (IPv4 /24 or larger; nodes get .1, .2, …; the bridge .254).
    #[arg(long = "sandbox-subnet", default_value = "10.78.0.0/24", global = true)]
    pub sandbox_subnet: String,
    /// Number of sandbox nodes.
    #[arg(long = "sandbox-nodes", default_value_t = 5, global = true)]
    pub sandbox_nodes: usize,
}

impl SandboxArgs {
    /// Validated sandbox config.
    pub fn to_config(&self) -> Result<crate::sandbox::SandboxConfig, ConfigError> {
        let cfg = crate::sandbox::SandboxConfig {
            name: self.sandbox_name.clone(),
            nodes: self.sandbox_nodes,
            subnet: self.sandbox_subnet.clone(),
            ..Default::default()
        };
        cfg.validate()
            .map_err(|e| ConfigError::new("sandbox", e.to_string()))?;
        Ok(cfg)
    }
}

/// Which cluster to act on and how to reach it (shared by `run` and `heal`).
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Nodes to test: `host,host,…` or `name=host,…`; default: the built-in sandbox.
    #[arg(long)]
    pub nodes: Option<String>,
    /// File with one node per line (`host` or `name=host`), instead of --nodes.
    #[arg(long, conflicts_with = "nodes")]
    pub nodes_file: Option<PathBuf>,
    /// SSH user.
    #[arg(long, default_value = "root")]
    pub username: String,
    /// SSH private key (default: the sandbox key, else the ssh-agent).
    #[arg(long)]
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file to check host keys against (default: sandbox's, else ~/.ssh/known_hosts).
    #[arg(long)]
    pub known_hosts: Option<PathBuf>,
    /// Do not check SSH host keys (unsafe outside throwaway clusters).
    #[arg(long)]
    pub no_host_key_check: bool,
    /// SSH port.
    #[arg(long, default_value_t = 22)]
    pub ssh_port: u16,
    /// Sandbox selection (used when no --nodes are given).
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

impl ClusterArgs {
    /// Validate node list, key files and sandbox settings.
    pub fn to_cluster(&self) -> Result<Cluster, ConfigError> {
        let nodes = match (&self.nodes, &self.nodes_file) {
            (Some(list), _) => Some(parse_nodes(list, "--nodes")?),
            (None, Some(path)) => {
                let label = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| ConfigError::new(&label, e.to_string()))?;
                let cleaned: Vec<&str> = text
                    .lines()
                    .map(|l| l.split('#').next().unwrap_or("").trim())
                    .filter(|l| !l.is_empty())
                    .collect();
                Some(parse_nodes(&cleaned.join(","), &label)?)
            }
            (None, None) => None,
        };
        for (flag, p) in [
            ("--ssh-key", &self.ssh_key),
            ("--known-hosts", &self.known_hosts),
        ] {
            if let Some(p) = p
                && !p.is_file()
            {
                return Err(ConfigError::new(
                    flag,
                    format!("{}: no such file", p.display()),
                ));
            }
        }
        let ssh = crate::control::SshConfig {
            user: self.username.clone(),
            port: self.ssh_port,
            private_key: self.ssh_key.clone(),
            known_hosts: self.known_hosts.clone(),
            strict_host_key_checking: !self.no_host_key_check,
            ..crate::control::SshConfig::default()
        };
        Ok(Cluster {
            nodes,
            ssh,
            sandbox: self.sandbox.to_config()?,
        })
    }
}

/// `shakedown report` flags.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A run directory (holding history.jsonl).
    pub run_dir: PathBuf,
    /// Time budget for re-checking an invalid run's witness, in seconds.
    #[arg(long, default_value_t = 60.0)]
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

/// `shakedown heal` flags.
#[derive(Debug, Clone, Args)]
pub struct HealArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Fault journal to heal from (default: `<reports>/latest/faults.jsonl` when it exists).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Directory holding run directories (for the default journal).
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// System whose processes to resume and restart.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--db` and every system's flags (`systems::SystemFlags`), for `run`, `heal` and `doctor`.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// `--db`: the name of a built-in system, a spec under systems/ or a FILE.toml.
    #[arg(id = "db", long = "db", default_value = "etcd", help = crate::systems::db_flag_help())]
    pub name: String,
    /// An option of an external system's spec, `key=value` (repeatable), e.g. `reads=sync`.
    #[arg(long = "db-opt", value_name = "KEY=VALUE")]
    pub db_opt: Vec<String>,
    /// Every system's own flags; only the chosen system's may be given.
    #[command(flatten)]
    pub flags: crate::systems::SystemFlags,
}

impl DbArgs {
    /// The settings of the system `--db` names.
    pub fn config(&self) -> Result<crate::systems::SystemConfig, ConfigError> {
        self.flags.config(&self.name, &self.db_opt)
    }

    /// The system named by `--db`, as a `Db` (for heal and doctor).
    pub fn system(&self) -> Result<std::sync::Arc<dyn crate::db::Db>, ConfigError> {
        Ok(self.config()?.open().to_db())
    }
}

impl HealArgs {
    /// The system to heal, from `--db`.
    pub fn system(&self) -> Result<std::sync::Arc<dyn crate::db::Db>, ConfigError> {
        self.db.system()
    }

    /// The journal to heal from, if any; an explicit `--journal` must exist.
    pub fn journal_path(&self) -> Result<Option<PathBuf>, ConfigError> {
        match &self.journal {
            Some(p) if p.is_file() => Ok(Some(p.clone())),
            Some(p) => Err(ConfigError::new(
                "--journal",
                format!("{}: no such file", p.display()),
            )),
            None => {
                let p = self.reports.join("latest").join(crate::store::FAULTS_FILE);
                Ok(p.is_file().then_some(p))
            }
        }
    }
}

/// `shakedown doctor` flags.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// System whose binaries to check.
    #[command(flatten)]
    pub db: DbArgs,
    /// Print the findings as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Where missing packages come from (`--packages-from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PackagesFromArg {
    /// Each node runs apt-get against its own package sources.
    Node,
    /// This machine downloads the .deb files a node lacks and installs them over SSH.
    Controller,
}

/// How a run installs the system's packages.
#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// Where missing packages come from on real nodes: `node` (apt-get on each node) or
    /// `controller` (this machine downloads the .deb files a node lacks and installs them over
    /// SSH; for nodes without a package source). The sandbox installs on this machine.
    #[arg(long, value_enum, default_value_t = PackagesFromArg::Node)]
    pub packages_from: PackagesFromArg,
    /// Install nothing: you manage the nodes' packages (the run still checks that the system's
    /// programs are there).
    #[arg(long, conflicts_with = "packages_from")]
    pub no_install: bool,
}

impl InstallArgs {
    /// The validated choice.
    pub fn install(&self) -> crate::provision::Install {
        use crate::provision::Install;
        match (self.no_install, self.packages_from) {
            (true, _) => Install::Skip,
            (false, PackagesFromArg::Node) => Install::Node,
            (false, PackagesFromArg::Controller) => Install::Controller,
        }
    }
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
    /// Seconds of workload (main phase).
    #[arg(long, default_value_t = 60.0)]
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
    /// bitflip, truncate, disk-error, disk-full, slow-disk).
    #[arg(long, default_value = "partition,kill,pause")]
    pub nemesis: String,
    /// Seconds between fault transitions (overrides the schedule's interval_s).
    #[arg(long)]
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
    /// Seconds to let the cluster settle after healing, before final reads.
    #[arg(long, default_value_t = 3.0)]
    pub settle: f64,
    /// Bound on one nemesis op, in seconds (its commands are cut off when it passes); the final
    /// heal gets the same bound for all its ops together.
    #[arg(long, value_name = "SECS", default_value_t = crate::config::DEFAULT_NEMESIS_TIMEOUT_S)]
    pub nemesis_timeout: f64,
    /// Time budget for the linearizability check, in seconds.
    #[arg(long, default_value_t = 60.0)]
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
        let read_from: crate::config::ReadFrom = self.read_from.into();
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
            .any(crate::spec::FaultKind::needs_data_layer)
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
            .validate(&cfg.workload, &crate::systems::RunOptions::of(&cfg))?;
        Ok(cfg)
    }
}

/// `shakedown check` flags.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Run directories, history files (JSONL, JSON array, Jepsen EDN, history.txt or console log,
    /// Porcupine kv lines) or directories of them; several give one line per file.
    #[arg(required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Model: auto (from the client functions: list-append for JSONL with append ops, log for
    /// send ops, mutex, queue, txn for transactions with append or w micro-ops, multi-register
    /// for other txn, kv for get/put/append and Porcupine input, set or counter for add/read;
    /// cas-register otherwise), register, cas-register, multi-register, kv, list-append, set,
    /// queue, mutex, counter, txn (list-append or rw-register transactions: Elle-style
    /// dependency cycles, checked against --consistency-models; elle-cli's list-append and
    /// rw-register mean txn on a transaction history) or log (replicated logs: lost, duplicated
    /// and inconsistent offsets).
    #[arg(long, default_value = "auto")]
    pub model: String,
    /// rw-register transactions: what orders a key's versions besides the initial state nil
    /// (Elle's options), a comma-separated list: wfr-keys (a transaction's write of a key follows
    /// its read of it), sequential-keys (process order), linearizable-keys (real-time order), or
    /// none. A source whose orders contradict themselves is reported (cyclic-versions) and unused.
    #[arg(long, value_name = "LIST", default_value = "none")]
    pub txn_assume: String,
    /// Transactions: the consistency models the history must satisfy, comma-separated, in
    /// Elle's names (strict-serializable, serializable, snapshot-isolation, repeatable-read,
    /// read-committed, read-atomic, strong-session-serializable, …, or Adya's PL-3, PL-SI, …).
    /// An anomaly one of them proscribes fails the check; others found are reported as allowed.
    #[arg(long, value_name = "MODELS", default_value = "strict-serializable")]
    pub consistency_models: String,
    /// Transactions: anomalies that fail the check besides the models' (Elle's names: G0, G1a,
    /// G1c, G-single-item, G-nonadjacent-item, G2-item, lost-update, …; any anomaly implying one
    /// counts).
    #[arg(long, value_name = "ANOMALIES")]
    pub anomalies: Option<String>,
    /// Time budget in seconds per file; past it the verdict is unknown.
    #[arg(long, default_value_t = 60.0)]
    pub time_limit: f64,
    /// Witness of an invalid key: none (blocked op and longest linearizable prefix only), fast
    /// (also the essential ops, minimized within 10 times the key's search time, at least 50 ms
    /// and at most 2 s) or minimal (minimized to 1-minimal within --time-limit).
    #[arg(long, default_value = "fast", value_parser = parse_witness)]
    pub witness: crate::checker::linear::WitnessMode,
    /// Decide every key within --time-limit even once one is invalid. Without it the verdict
    /// comes first: one invalid key settles it, the keys still undecided then get 10 times the
    /// time that took (at least 100 ms), and those left are reported unknown.
    #[arg(long)]
    pub all_keys: bool,
    /// Memory budget of the linearizability check, for all keys searched at once (512M, 2G, …);
    /// past it a key is unknown. Default: a quarter of the machine's available memory, at most
    /// 1 GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<usize>,
    /// Input format: auto, jsonl, json (a JSON array of op maps, as elle-cli reads), edn,
    /// history-txt (Jepsen's tab-separated history.txt), jepsen-log or porcupine.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Register semantics preset (default per input: etcd for our JSONL and Porcupine's etcd
    /// logs, knossos for Jepsen EDN, history.txt, console logs and JSON arrays).
    #[arg(long, value_enum)]
    pub semantics: Option<SemanticsArg>,
    /// The register's value before any op: nil (absent) or a value (`0`, `"x"`, `x`); overrides
    /// the preset.
    #[arg(long, value_name = "nil|VALUE")]
    pub initial: Option<String>,
    /// What an ok read of nil means: the key was absent, or nothing is known; overrides the preset.
    #[arg(long, value_enum)]
    pub nil_read: Option<NilReadArg>,
    /// What a failed cas (no error, or error cas-mismatch) means: evidence that the value
    /// differed, or nothing (the op did not happen); overrides the preset.
    #[arg(long, value_enum)]
    pub failed_cas: Option<FailedCasArg>,
    /// Treat client op values as `jepsen.independent` `[key value]` tuples (EDN, JSON arrays and
    /// Jepsen logs detect this automatically when every client invoke value is a tuple).
    #[arg(long, conflicts_with = "no_independent")]
    pub independent: bool,
    /// Never split `[key value]` tuples, even when every value looks like one.
    #[arg(long)]
    pub no_independent: bool,
    /// Write a self-contained HTML page explaining the result to this file (one input file only):
    /// the linearizability witness, or for transactions each anomaly explained and each cycle
    /// drawn.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Write the history as Jepsen EDN to this file (one input file only).
    #[arg(long, value_name = "OUT")]
    pub export_edn: Option<PathBuf>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also check the four session guarantees (read-your-writes, monotonic reads, monotonic
    /// writes, writes-follow-reads); the verdict merges both checkers, as a run does.
    #[arg(long)]
    pub session: bool,
    /// Version order for --session: auto (chosen from the history), system, list-append or
    /// increasing-values.
    #[arg(long, default_value = "auto", requires = "session")]
    pub version_source: String,
}

/// `--semantics`: a register semantics preset.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SemanticsArg {
    /// Starts at 0, a nil read is unknown, a failed cas did not happen (Knossos).
    Knossos,
    /// Starts absent, a nil read means absent, a failed cas saw another value (etcd, Porcupine).
    Etcd,
}

impl From<SemanticsArg> for crate::model::SemanticsPreset {
    fn from(s: SemanticsArg) -> Self {
        match s {
            SemanticsArg::Knossos => crate::model::SemanticsPreset::Knossos,
            SemanticsArg::Etcd => crate::model::SemanticsPreset::Etcd,
        }
    }
}

/// `--nil-read`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum NilReadArg {
    /// A nil read observed the key absent.
    Absent,
    /// A nil read says nothing.
    Unknown,
}

/// `--failed-cas`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FailedCasArg {
    /// A failed cas happened and saw a value other than its `old`.
    Evidence,
    /// A failed cas did not happen.
    Ignored,
}

/// `shakedown sandbox` subcommands.
#[derive(Debug, Clone, Args)]
pub struct SandboxCmd {
    /// up, down or status.
    #[command(subcommand)]
    pub action: SandboxAction,
    /// Which sandbox.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

/// Sandbox actions.
#[derive(Debug, Clone, Subcommand)]
pub enum SandboxAction {
    /// Create the namespaces and start sshd on every node.
    Up,
    /// Remove everything `up` created (safe to run twice).
    Down,
    /// Show each node's state.
    Status,
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

/// `shakedown bench` flags.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// System to measure: etcd (bare loop: etcd clients) or redis (bare loop: plain `redis`
    /// crate connections to the primary).
    #[arg(long, value_parser = ["etcd", "redis"], default_value = "etcd")]
    pub db: String,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 10)]
    pub concurrency: usize,
    /// Paired measurements (one bare, one controller each, alternating which goes first); the
    /// loss reported is the median of the rounds', with a 95 % confidence interval from 6
    /// rounds on. Many short rounds beat a few long ones: the host's throughput drifts, and
    /// the median of many pairs shrugs off the rounds a neighbour disturbed.
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Leave out (and run again) a round during which the hypervisor took more than this share
    /// of the machine's CPU, in percent (`steal` in `/proc/stat`): it measured the host, not
    /// the controller. At most `--rounds` extra rounds are run.
    #[arg(long = "max-steal", default_value_t = 5.0)]
    pub max_steal: f64,
    /// Where to write the JSON report (default: print only).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sandbox selection.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

impl BenchArgs {
    /// The config of the full run side of the benchmark: `--db` (etcd or redis, default
    /// settings; Redis reads from the primary, as its bare loop's), the register workload with
    /// no faults at an unlimited rate, for `--duration` seconds at `--concurrency`.
    pub fn to_config(&self) -> Result<TestConfig, ConfigError> {
        if !(self.max_steal.is_finite() && self.max_steal >= 0.0) {
            return Err(ConfigError::new(
                "bench",
                format!(
                    "--max-steal must be a percentage (0 or more), got {}",
                    self.max_steal
                ),
            ));
        }
        if !(self.duration.is_finite() && self.duration > 0.0)
            || self.concurrency == 0
            || self.rounds == 0
        {
            return Err(ConfigError::new(
                "bench",
                "--duration, --concurrency and --rounds must be positive",
            ));
        }
        let mut run = RunArgs {
            nemesis: "none".into(),
            rate: 0.0,
            time_limit: self.duration,
            concurrency: self.concurrency,
            settle: 0.0,
            quiet: true,
            ..RunArgs::defaults(self.sandbox.clone())
        };
        run.db.name = self.db.clone();
        if self.db == "redis" {
            // Redis's bare loop sends every op to the primary; so must the run (the default,
            // each thread's own node, would spread reads over the replicas).
            run.read_from = ReadFromArg::Primary;
        }
        run.into_config()
    }
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
    fn bench_flags_make_a_run_config_with_the_bare_loops_reads() {
        let bench = |args: &[&str]| {
            let Command::Bench(b) = parse(args).unwrap().command else {
                panic!("not bench")
            };
            b
        };
        let b = bench(&["bench", "--db", "redis", "--duration", "3"]);
        assert_eq!(b.rounds, 20);
        let cfg = b.to_config().unwrap();
        // Redis's bare loop reads from the primary; so must the run side.
        assert_eq!(cfg.read_from, crate::config::ReadFrom::Primary);
        assert_eq!((cfg.time_limit_s, cfg.rate), (3.0, 0.0));
        assert!(cfg.nemesis.faults.is_empty());
        let etcd = bench(&["bench"]).to_config().unwrap();
        assert_eq!(etcd.read_from, crate::config::ReadFrom::Own);
        let e = bench(&["bench", "--rounds", "0"]).to_config().unwrap_err();
        assert!(e.to_string().contains("--rounds"), "{e}");
        let e = bench(&["bench", "--max-steal", "NaN"])
            .to_config()
            .unwrap_err();
        assert!(e.to_string().contains("--max-steal"), "{e}");
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
        assert_eq!(cfg.read_from, crate::config::ReadFrom::Replica);
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
            (vec!["run", "--time-limit=-1"], "--time-limit"),
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
    }
}
