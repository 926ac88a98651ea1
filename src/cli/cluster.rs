//! Which cluster a command acts on and how it gets there: node lists and SSH (`ClusterArgs`), the
//! sandbox's selection and its `sandbox` subcommand, `--db` with every system's flags (`DbArgs`),
//! how packages are installed, and the `heal` and `doctor` flags built from them. Does not hold
//! the run's own flags (`cli`) nor validate a system's settings (`systems`).

use crate::config::Cluster;
use crate::node::parse_nodes;
use crate::options::ConfigError;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    /// Do not patch the vDSO of Go and static programs on the sandbox's nodes: they then read
    /// the host's clock, and clock faults against etcd and NATS are refused (for comparing
    /// costs, or when the patch misbehaves with a program).
    #[arg(long = "sandbox-no-clock-patch", global = true)]
    pub sandbox_no_clock_patch: bool,
}

impl SandboxArgs {
    /// Validated sandbox config.
    pub fn to_config(&self) -> Result<crate::sandbox::SandboxConfig, ConfigError> {
        let cfg = crate::sandbox::SandboxConfig {
            name: self.sandbox_name.clone(),
            nodes: self.sandbox_nodes,
            subnet: self.sandbox_subnet.clone(),
            clock_patch: !self.sandbox_no_clock_patch,
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
