//! The built-in local sandbox cluster: `sandbox up | down | status` as library functions.
//!
//! Owns: creating and destroying N "nodes" on the controller host, each one a set of Linux
//! namespaces (network, UTS, PID, mount) with its own sshd as PID 1, wired to one bridge in the
//! root namespace; the `sandbox.json` state file that tells the runner how to reach the nodes
//! (addresses, key, known_hosts) and tells `down` what to remove (names and PIDs); package checks.
//!
//! Does not own: SSH sessions to the nodes (`control`), anything running on a node (`db`,
//! `nemesis`), CLI parsing (`cli`). This module runs on the controller host and uses
//! `std::process::Command` for `ip`, `unshare`, `ssh-keygen`, `iptables`; it needs root.
//!
//! Layout of one node `nI` (node `i` of `N`, subnet `S`, default `10.78.0.0/24`):
//! - network namespace `sd-<name>-nI`: `lo` and `eth0` (address `S+i`), **no default route**;
//!   `eth0` is one end of a veth pair whose other end is a port of the bridge (address `S+254`);
//! - UTS namespace with hostname `nI`; `/etc/hosts` listing `n1..nN` (from `/etc/netns/<ns>/hosts`);
//! - PID namespace whose PID 1 is sshd, so killing that one process tears the whole node down;
//! - mount namespace with `/root` and `/tmp` bind-mounted from `<state_dir>/nodes/nI/{root,tmp}`.
//!   The host's `/var`, `/etc`, `/usr` are shared: **a node's database data must live in its
//!   private `/tmp` or `/root`**, never under `/var`;
//! - sshd runs under `setpriv --bounding-set -sys_time`: nothing on a node can step the host clock.
//!
//! Routing: the controller reaches the nodes directly over the bridge (connected route of the
//! bridge address), and nodes reach each other at layer 2 on the bridge; `ip_forward` is neither
//! needed nor touched, and nodes have no default route, so node traffic never leaves the bridge.
//! When `br_netfilter` passes bridged frames through iptables and the host FORWARD chain is not a
//! bare ACCEPT policy, `up` inserts one ACCEPT rule for bridge-to-bridge traffic tagged with the
//! comment `shakedown-sandbox:<name>`, records it, and `down` deletes exactly that rule.
//!
//! `up` on a sandbox that is already up and healthy is a no-op that returns the recorded
//! [`SandboxInfo`] (it fails with [`SandboxError::ConfigMismatch`] when the node count or subnet
//! differ); `up` over stale state (a crashed or partial sandbox) first runs `down` on it. `down` is
//! idempotent and removes only what the state file records.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Packages the sandbox (and the databases it hosts) needs on the controller host.
pub const REQUIRED_PACKAGES: [&str; 4] =
    ["openssh-server", "iptables", "etcd-server", "etcd-client"];

/// Name of the state file inside the sandbox state directory.
pub const STATE_FILE: &str = "sandbox.json";

/// Version of the `sandbox.json` format written by this build.
pub const STATE_VERSION: u32 = 1;

/// Largest supported node count (addresses `.1..=.250`; `.254` is the bridge).
pub const MAX_NODES: usize = 250;

/// TCP port sshd listens on inside every node.
pub const SSH_PORT: u16 = 22;

/// Prefix of the comment tag on every iptables rule the sandbox adds.
const IPTABLES_TAG_PREFIX: &str = "shakedown-sandbox:";

/// Errors from sandbox operations. Messages name the command, node or file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The process does not run as root.
    #[error(
        "sandbox needs root (effective uid is {euid}): it creates network namespaces, a bridge, \
         veth pairs and iptables rules; run it with sudo or as root"
    )]
    NotRoot {
        /// The effective user id of this process.
        euid: u32,
    },
    /// A configuration value is invalid.
    #[error("invalid sandbox config: {field}: {reason}")]
    InvalidConfig {
        /// The offending field (`name`, `nodes`, `subnet`, `state_dir`).
        field: &'static str,
        /// Why the value is rejected.
        reason: String,
    },
    /// Required packages are missing and cannot be installed by this process.
    #[error(
        "missing packages: {packages}; install them with `apt-get install {packages}` as root",
        packages = .packages.join(" ")
    )]
    MissingPackages {
        /// The missing package names.
        packages: Vec<String>,
    },
    /// A command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: io::Error,
    },
    /// A command exited unsuccessfully.
    #[error("`{command}` failed with {status}: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// The exit status, as printed by std (`exit status: 1`, `signal: 9`).
        status: String,
        /// The command's standard error, trimmed.
        stderr: String,
    },
    /// A file system operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was attempted (`create directory`, `write`, ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The state file is unreadable or malformed.
    #[error("sandbox state file {path}: {reason}")]
    State {
        /// The state file path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No sandbox state exists at the given directory.
    #[error("sandbox is not up: no state file at {path}; run `shakedown sandbox up` first")]
    NotUp {
        /// The state file path that does not exist.
        path: PathBuf,
    },
    /// A sandbox is already up with a different shape than requested.
    #[error(
        "sandbox {name} is already up with {recorded}, but the config asks for {requested}; \
         run `shakedown sandbox down` first"
    )]
    ConfigMismatch {
        /// The sandbox name.
        name: String,
        /// The recorded shape (nodes and subnet).
        recorded: String,
        /// The requested shape.
        requested: String,
    },
    /// A name or address the sandbox would create is already in use by something else.
    #[error(
        "{what} already exists on this host and is not recorded in {state_file}; \
         another sandbox or tool owns it (choose another name/subnet, or remove it by hand)"
    )]
    Conflict {
        /// The conflicting object (`network namespace sd-x-n1`, `address 10.78.0.3/24 on eth0`).
        what: String,
        /// The state file that would have recorded it.
        state_file: PathBuf,
    },
    /// A node's sshd did not accept connections in time.
    #[error(
        "node {node}: sshd at {address}:22 did not accept connections within {waited_ms} ms \
         (log: {log})"
    )]
    NotReady {
        /// The node name.
        node: String,
        /// The node address.
        address: Ipv4Addr,
        /// How long `up` waited.
        waited_ms: u64,
        /// The node's sshd log file.
        log: PathBuf,
    },
}

/// Result type of this module.
pub type Result<T> = std::result::Result<T, SandboxError>;

/// How to build a sandbox. Parse CLI flags into this, then [`SandboxConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// Sandbox name: 1..=32 chars of `[a-z0-9-]`, starting with a letter. All namespace, bridge
    /// and veth names derive from it, so sandboxes with different names coexist.
    pub name: String,
    /// Number of nodes, `1..=250`, named `n1..nN`.
    pub nodes: usize,
    /// IPv4 subnet in CIDR form with prefix length 8..=24, e.g. `10.78.0.0/24`. Node `i` gets
    /// network address + `i`, the bridge gets network address + 254.
    pub subnet: String,
    /// State directory; `None` means `/var/lib/shakedown/sandbox/<name>`. Every ancestor must be
    /// root-owned and not group/world-writable (sshd `StrictModes` checks the authorized_keys
    /// path), so it cannot live under `/tmp`.
    pub state_dir: Option<PathBuf>,
    /// How long `up` waits for every sshd to accept connections, in milliseconds.
    pub ready_timeout_ms: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            name: "shakedown".to_string(),
            nodes: 5,
            subnet: "10.78.0.0/24".to_string(),
            state_dir: None,
            ready_timeout_ms: 5_000,
        }
    }
}

impl SandboxConfig {
    /// The default config with another name (state dir follows the name).
    pub fn named(name: &str) -> Self {
        SandboxConfig {
            name: name.to_string(),
            ..SandboxConfig::default()
        }
    }

    /// The state directory: `state_dir` or `/var/lib/shakedown/sandbox/<name>`.
    pub fn state_dir(&self) -> PathBuf {
        match &self.state_dir {
            Some(dir) => dir.clone(),
            None => Path::new("/var/lib/shakedown/sandbox").join(&self.name),
        }
    }

    /// Checks every field; returns the parsed subnet on success.
    pub fn validate(&self) -> Result<Subnet> {
        validate_name(&self.name)?;
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return Err(SandboxError::InvalidConfig {
                field: "nodes",
                reason: format!("{} is out of range 1..={MAX_NODES}", self.nodes),
            });
        }
        let subnet = Subnet::parse(&self.subnet)?;
        let state_dir = self.state_dir();
        if !state_dir.is_absolute() {
            return Err(SandboxError::InvalidConfig {
                field: "state_dir",
                reason: format!("{} is not an absolute path", state_dir.display()),
            });
        }
        if state_dir
            .to_str()
            .is_none_or(|s| s.contains(char::is_whitespace))
        {
            return Err(SandboxError::InvalidConfig {
                field: "state_dir",
                reason: format!(
                    "{} must be valid UTF-8 without whitespace (it goes into sshd_config)",
                    state_dir.display()
                ),
            });
        }
        Ok(subnet)
    }
}

fn validate_name(name: &str) -> Result<()> {
    let invalid = |reason: String| SandboxError::InvalidConfig {
        field: "name",
        reason,
    };
    if name.is_empty() || name.len() > 32 {
        return Err(invalid(format!("{name:?} must be 1..=32 characters long")));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(format!("{name:?} must start with a letter a-z")));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(invalid(format!(
            "{name:?} contains {bad:?}; allowed are a-z, 0-9 and '-'"
        )));
    }
    Ok(())
}

/// A validated IPv4 subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    /// The network address (host bits zero).
    pub network: Ipv4Addr,
    /// The prefix length, 8..=24.
    pub prefix_len: u8,
}

impl Subnet {
    /// Parses `a.b.c.d/len`; rejects host bits, prefixes outside 8..=24.
    pub fn parse(text: &str) -> Result<Subnet> {
        let invalid = |reason: String| SandboxError::InvalidConfig {
            field: "subnet",
            reason,
        };
        let (addr, len) = text
            .split_once('/')
            .ok_or_else(|| invalid(format!("{text:?} is not in CIDR form like 10.78.0.0/24")))?;
        let network: Ipv4Addr = addr
            .parse()
            .map_err(|_| invalid(format!("{addr:?} in {text:?} is not an IPv4 address")))?;
        let prefix_len: u8 = len
            .parse()
            .map_err(|_| invalid(format!("prefix length {len:?} in {text:?} is not a number")))?;
        if !(8..=24).contains(&prefix_len) {
            return Err(invalid(format!(
                "prefix length /{prefix_len} in {text:?} is out of range /8../24"
            )));
        }
        let subnet = Subnet {
            network,
            prefix_len,
        };
        if u32::from(network) & !subnet.mask() != 0 {
            let fixed = Ipv4Addr::from(u32::from(network) & subnet.mask());
            return Err(invalid(format!(
                "{text:?} has host bits set; did you mean {fixed}/{prefix_len}"
            )));
        }
        Ok(subnet)
    }

    fn mask(&self) -> u32 {
        u32::MAX << (32 - u32::from(self.prefix_len))
    }

    /// The address `network + offset`.
    pub fn host(&self, offset: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + offset)
    }

    /// The bridge address (`network + 254`).
    pub fn bridge_address(&self) -> Ipv4Addr {
        self.host(254)
    }

    /// Whether two subnets share any address.
    pub fn overlaps(&self, other: &Subnet) -> bool {
        let mask = self.mask() & other.mask();
        u32::from(self.network) & mask == u32::from(other.network) & mask
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// Everything the runner needs to reach the nodes and `down` needs to remove them; the content
/// of `sandbox.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    /// Format version ([`STATE_VERSION`]).
    pub version: u32,
    /// The sandbox name.
    pub name: String,
    /// The subnet in CIDR form.
    pub subnet: String,
    /// The state directory holding this file, keys and per-node directories.
    pub state_dir: PathBuf,
    /// `starting` while `up` runs (and after a failed `up`), `up` once every sshd accepts.
    pub phase: Phase,
    /// The bridge in the root namespace.
    pub bridge: BridgeInfo,
    /// SSH port on every node.
    pub ssh_port: u16,
    /// SSH user on every node (`root`).
    pub user: String,
    /// The client private key (ed25519) accepted by every node.
    pub private_key: PathBuf,
    /// A known_hosts file with every node's host key under its name and its address.
    pub known_hosts: PathBuf,
    /// The nodes, in order `n1..nN`.
    pub nodes: Vec<NodeInfo>,
    /// iptables rules `up` added (argument lists after `-I`/`-D`), removed by `down`.
    pub iptables_rules: Vec<Vec<String>>,
    /// Wall-clock time `up` started, RFC 3339.
    pub created_at: String,
}

/// Lifecycle phase recorded in the state file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `up` is running, or failed before every node was ready.
    Starting,
    /// Every node accepted SSH connections when `up` finished.
    Up,
}

/// The bridge in the root namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeInfo {
    /// Interface name (≤ 15 chars).
    pub name: String,
    /// Address of the bridge (the controller's address on the sandbox subnet).
    pub address: Ipv4Addr,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Node name and hostname (`n1`).
    pub name: String,
    /// Node address on the bridge.
    pub address: Ipv4Addr,
    /// Network namespace name (`ip netns` name).
    pub netns: String,
    /// Host-side veth interface name (a bridge port).
    pub veth: String,
    /// The node directory (`root/`, `tmp/`, sshd config, host key, `sshd.log`).
    pub dir: PathBuf,
    /// PID (in the root PID namespace) of the launcher (`unshare`), once started.
    pub launcher_pid: Option<u32>,
    /// Start time of the launcher in clock ticks since boot (guards against PID reuse).
    pub launcher_start_ticks: Option<u64>,
    /// PID (in the root PID namespace) of the node's sshd, which is PID 1 in the node.
    pub sshd_pid: Option<u32>,
    /// Start time of sshd in clock ticks since boot (guards against PID reuse).
    pub sshd_start_ticks: Option<u64>,
}

impl NodeInfo {
    /// The node's sshd log file.
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("sshd.log")
    }

    /// The node's private `/tmp` as seen from the host.
    pub fn tmp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// The node's private `/root` as seen from the host.
    pub fn root_dir(&self) -> PathBuf {
        self.dir.join("root")
    }
}

impl SandboxInfo {
    /// Node names in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Path of the state file.
    pub fn state_file(&self) -> PathBuf {
        self.state_dir.join(STATE_FILE)
    }
}

/// Derived names of one sandbox: a pure function of the name and node count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Bridge interface name.
    pub bridge: String,
    /// Per node: (node name, network namespace, host veth).
    pub nodes: Vec<(String, String, String)>,
}

/// Derives interface and namespace names from the sandbox name. Interface names are
/// `sd<tag>br` and `sd<tag>v<i>` where `<tag>` is up to 3 letters/digits of the name plus 4 hex
/// digits of its FNV-1a hash, so they stay ≤ 15 chars; namespaces are `sd-<name>-n<i>`.
pub fn names(name: &str, nodes: usize) -> Names {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let prefix: String = name.chars().filter(|c| *c != '-').take(3).collect();
    let tag = format!("{prefix}{:04x}", hash & 0xffff);
    Names {
        bridge: format!("sd{tag}br"),
        nodes: (1..=nodes)
            .map(|i| {
                (
                    format!("n{i}"),
                    format!("sd-{name}-n{i}"),
                    format!("sd{tag}v{i}"),
                )
            })
            .collect(),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn require_root() -> Result<()> {
    if is_root() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    Err(SandboxError::NotRoot { euid })
}

/// Which of `packages` are not installed (per `dpkg-query`).
pub fn missing_packages(packages: &[&str]) -> Result<Vec<String>> {
    let mut cmd = Command::new("dpkg-query");
    cmd.args(["-W", "-f", "${Package} ${db:Status-Status}\\n"])
        .args(packages);
    let out = output(&mut cmd)?;
    // dpkg-query exits 1 when some package is unknown; the known ones are still printed.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let installed: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(_, status)| *status == "installed")
        .map(|(package, _)| package.split(':').next().unwrap_or(package))
        .collect();
    Ok(packages
        .iter()
        .filter(|p| !installed.contains(p))
        .map(|p| p.to_string())
        .collect())
}

/// Ensures [`REQUIRED_PACKAGES`] are installed: installs missing ones with apt-get when root,
/// otherwise fails with [`SandboxError::MissingPackages`]. Returns the packages it installed.
pub fn ensure_packages() -> Result<Vec<String>> {
    let missing = missing_packages(&REQUIRED_PACKAGES)?;
    if missing.is_empty() {
        return Ok(missing);
    }
    if !is_root() {
        return Err(SandboxError::MissingPackages { packages: missing });
    }
    let mut update = Command::new("apt-get");
    update
        .arg("update")
        .env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut update)?;
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut install)?;
    let still = missing_packages(&REQUIRED_PACKAGES)?;
    if !still.is_empty() {
        return Err(SandboxError::MissingPackages { packages: still });
    }
    Ok(missing)
}

fn command_line(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// Runs a command to completion, capturing output, whatever its exit status.
fn output(cmd: &mut Command) -> Result<Output> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|source| SandboxError::Spawn {
            command: command_line(cmd),
            source,
        })
}

/// Runs a command; a non-zero exit is an error naming the command, status and stderr.
fn run(cmd: &mut Command) -> Result<Output> {
    let out = output(cmd)?;
    if !out.status.success() {
        return Err(SandboxError::Command {
            command: command_line(cmd),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// Runs a command with `input` on stdin (used for `ip -batch -`).
fn run_with_input(cmd: &mut Command, input: &str) -> Result<Output> {
    let spawn_err = |cmd: &Command, source| SandboxError::Spawn {
        command: command_line(cmd),
        source,
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_err(cmd, e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| spawn_err(cmd, e))?;
    }
    let out = child.wait_with_output().map_err(|e| spawn_err(cmd, e))?;
    if !out.status.success() {
        return Err(SandboxError::Command {
            command: format!("{} <<< {:?}", command_line(cmd), input),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SandboxError {
    let path = path.to_path_buf();
    move |source| SandboxError::Io {
        action,
        path,
        source,
    }
}

fn write_file(path: &Path, content: &str, mode: u32) -> Result<()> {
    fs::write(path, content).map_err(io_err("write", path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_err("chmod", path))
}

fn create_dir(path: &Path, mode: u32) -> Result<()> {
    fs::create_dir_all(path).map_err(io_err("create directory", path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_err("chmod", path))
}

/// An exclusive lock on `<state_dir>/.lock` serializing `up` and `down` of one sandbox; released
/// when dropped. The descriptor is close-on-exec, so node processes do not inherit it.
struct StateLock {
    _file: fs::File,
}

fn lock(state_dir: &Path) -> Result<StateLock> {
    let path = state_dir.join(".lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err("open lock file", &path))?;
    file.lock().map_err(io_err("lock", &path))?;
    Ok(StateLock { _file: file })
}

/// Loads the state of the sandbox whose state directory is `state_dir`.
pub fn load(state_dir: &Path) -> Result<SandboxInfo> {
    let path = state_dir.join(STATE_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(SandboxError::NotUp { path }),
        Err(source) => {
            return Err(SandboxError::Io {
                action: "read",
                path,
                source,
            });
        }
    };
    let info: SandboxInfo = serde_json::from_str(&text).map_err(|e| SandboxError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    if info.version != STATE_VERSION {
        return Err(SandboxError::State {
            path,
            reason: format!(
                "format version {} is not supported (expected {STATE_VERSION})",
                info.version
            ),
        });
    }
    Ok(info)
}

fn save(info: &SandboxInfo) -> Result<()> {
    let path = info.state_file();
    let tmp = info.state_dir.join(format!("{STATE_FILE}.tmp"));
    let text = serde_json::to_string_pretty(info).map_err(|e| SandboxError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    write_file(&tmp, &(text + "\n"), 0o644)?;
    fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))
}

// ---------------------------------------------------------------------------------------------
// Process helpers

/// Start time (field 22 of `/proc/<pid>/stat`) and whether the process is a zombie.
fn proc_stat(pid: u32) -> Option<(u64, bool)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, *state == "Z" || *state == "X"))
}

/// Whether the process recorded as (`pid`, `start_ticks`) is still running (not a zombie).
fn alive(pid: Option<u32>, start_ticks: Option<u64>) -> bool {
    let Some(pid) = pid else { return false };
    match proc_stat(pid) {
        Some((start, zombie)) => !zombie && start_ticks.is_none_or(|s| s == start),
        None => false,
    }
}

fn kill_recorded(pid: Option<u32>, start_ticks: Option<u64>) -> bool {
    let Some(pid) = pid else { return false };
    if !alive(Some(pid), start_ticks) {
        reap(pid);
        return false;
    }
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill has no memory-safety preconditions; the PID was checked against its
    // recorded start time just above, so it names the process `up` started.
    unsafe { libc::kill(raw, libc::SIGKILL) };
    true
}

/// Reaps `pid` if it is a child of this process (after `up` and `down` in one process).
fn reap(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on a specific PID only touches `status`; ECHILD is harmless.
    unsafe { libc::waitpid(raw, &mut status, libc::WNOHANG) };
}

/// The PIDs of the children of `pid` (from `/proc/<pid>/task/*/children`).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Host inspection

/// Processes (root-namespace PIDs) whose network namespace is one of the named ones, found the way
/// `ip netns pids` does: by comparing `/proc/<pid>/ns/net` with `/run/netns/<name>`.
fn pids_in_netns<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let inodes: Vec<((u64, u64), &str)> = names
        .filter_map(|name| {
            let meta = fs::metadata(Path::new("/run/netns").join(name)).ok()?;
            Some(((meta.dev(), meta.ino()), name))
        })
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(meta) = fs::metadata(entry.path().join("ns/net")) else {
            continue;
        };
        if let Some((_, name)) = inodes
            .iter()
            .find(|(id, _)| *id == (meta.dev(), meta.ino()))
        {
            found.push((pid, name.to_string()));
        }
    }
    found
}

fn netns_exists(netns: &str) -> bool {
    Path::new("/run/netns").join(netns).exists()
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// IPv4 addresses on host interfaces as (interface, subnet-with-address).
fn host_addresses() -> Result<Vec<(String, Ipv4Addr, u8)>> {
    let out = run(Command::new("ip").args(["-o", "-4", "addr", "show"]))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(pos) = words.iter().position(|w| *w == "inet") else {
            continue;
        };
        let (Some(dev), Some(cidr)) = (words.get(1), words.get(pos + 1)) else {
            continue;
        };
        let Some((addr, len)) = cidr.split_once('/') else {
            continue;
        };
        if let (Ok(addr), Ok(len)) = (addr.parse(), len.parse()) {
            found.push((dev.to_string(), addr, len));
        }
    }
    Ok(found)
}

/// Refuses to create anything that already exists (and is therefore not ours).
fn check_conflicts(subnet: &Subnet, names: &Names, state_file: &Path) -> Result<()> {
    let conflict = |what: String| SandboxError::Conflict {
        what,
        state_file: state_file.to_path_buf(),
    };
    if link_exists(&names.bridge) {
        return Err(conflict(format!("interface {}", names.bridge)));
    }
    for (_, netns, veth) in &names.nodes {
        if netns_exists(netns) {
            return Err(conflict(format!("network namespace {netns}")));
        }
        if link_exists(veth) {
            return Err(conflict(format!("interface {veth}")));
        }
    }
    for (dev, addr, len) in host_addresses()? {
        if len == 0 || len > 32 || addr.is_loopback() {
            continue;
        }
        let theirs = Subnet {
            network: Ipv4Addr::from(u32::from(addr) & (u32::MAX << (32 - u32::from(len)))),
            prefix_len: len,
        };
        if subnet.overlaps(&theirs) {
            return Err(conflict(format!(
                "address {addr}/{len} on {dev} (overlaps subnet {subnet})"
            )));
        }
    }
    Ok(())
}

/// Checks every ancestor of `path` is root-owned and not group/world-writable (sshd StrictModes).
fn check_strict_modes(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for dir in path.ancestors() {
        let Ok(meta) = fs::metadata(dir) else {
            continue; // Not created yet: up creates it root-owned 0755.
        };
        if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
            return Err(SandboxError::InvalidConfig {
                field: "state_dir",
                reason: format!(
                    "{} is {} (owner uid {}, mode {:o}); sshd StrictModes needs every directory \
                     above authorized_keys root-owned and not group/world-writable",
                    dir.display(),
                    if meta.uid() != 0 {
                        "not owned by root"
                    } else {
                        "group/world-writable"
                    },
                    meta.uid(),
                    meta.mode() & 0o7777
                ),
            });
        }
    }
    Ok(())
}

/// Whether bridged traffic goes through iptables FORWARD and that chain could drop it.
fn forward_rule_needed() -> Result<bool> {
    let nf_call = fs::read_to_string("/proc/sys/net/bridge/bridge-nf-call-iptables")
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    if !nf_call {
        return Ok(false);
    }
    let out = run(Command::new("iptables").args(["-w", "-S", "FORWARD"]))?;
    Ok(forward_chain_may_drop(&String::from_utf8_lossy(
        &out.stdout,
    )))
}

/// Given `iptables -S FORWARD` output (with br_netfilter passing bridged frames to iptables):
/// anything but a bare ACCEPT policy may drop node-to-node traffic, so `up` adds its own tagged
/// ACCEPT rule for bridge-to-bridge traffic at the top of the chain.
fn forward_chain_may_drop(rules: &str) -> bool {
    let lines: Vec<&str> = rules
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines != ["-P FORWARD ACCEPT"]
}

// ---------------------------------------------------------------------------------------------
// Node files

fn hosts_file(info: &SandboxInfo, me: &NodeInfo) -> String {
    let mut text = format!("127.0.0.1\tlocalhost\n127.0.1.1\t{}\n", me.name);
    text.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    for node in &info.nodes {
        text.push_str(&format!("{}\t{}\n", node.address, node.name));
    }
    text
}

/// The one place sshd options are decided (add `SetEnv`/`AcceptEnv` here).
fn sshd_config(node: &NodeInfo, authorized_keys: &Path) -> String {
    let host_key = node.dir.join("ssh_host_ed25519_key");
    let options: Vec<(&str, String)> = vec![
        ("Port", SSH_PORT.to_string()),
        ("ListenAddress", "0.0.0.0".to_string()),
        ("HostKey", host_key.display().to_string()),
        ("PidFile", "none".to_string()),
        ("PermitRootLogin", "prohibit-password".to_string()),
        ("PubkeyAuthentication", "yes".to_string()),
        ("PasswordAuthentication", "no".to_string()),
        ("KbdInteractiveAuthentication", "no".to_string()),
        ("AuthorizedKeysFile", authorized_keys.display().to_string()),
        ("StrictModes", "yes".to_string()),
        ("UsePAM", "no".to_string()),
        ("UseDNS", "no".to_string()),
        ("PrintMotd", "no".to_string()),
        ("PrintLastLog", "no".to_string()),
        ("MaxSessions", "256".to_string()),
        ("MaxStartups", "256:30:512".to_string()),
        ("LoginGraceTime", "30".to_string()),
        ("ClientAliveInterval", "0".to_string()),
        ("Subsystem", "sftp internal-sftp".to_string()),
        ("LogLevel", "INFO".to_string()),
    ];
    let mut text = format!("# sandbox node {} (generated by shakedown)\n", node.name);
    for (key, value) in options {
        text.push_str(&format!("{key} {value}\n"));
    }
    text
}

fn keygen(path: &Path, comment: &str) -> Command {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path);
    cmd
}

/// Generates the client key and one host key per node, in parallel.
fn generate_keys(info: &SandboxInfo) -> Result<()> {
    let mut cmds = vec![keygen(
        &info.private_key,
        &format!("shakedown-sandbox-{}", info.name),
    )];
    for node in &info.nodes {
        cmds.push(keygen(
            &node.dir.join("ssh_host_ed25519_key"),
            &format!("{}@sandbox-{}", node.name, info.name),
        ));
    }
    let mut running = Vec::new();
    for mut cmd in cmds {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SandboxError::Spawn {
                command: command_line(&cmd),
                source,
            })?;
        running.push((cmd, child));
    }
    let mut first_error = None;
    for (cmd, child) in running {
        let result = child.wait_with_output();
        let err = match result {
            Ok(out) if out.status.success() => continue,
            Ok(out) => SandboxError::Command {
                command: command_line(&cmd),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            },
            Err(source) => SandboxError::Spawn {
                command: command_line(&cmd),
                source,
            },
        };
        first_error.get_or_insert(err);
    }
    first_error.map_or(Ok(()), Err)
}

fn read_public_key(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path).map_err(io_err("read", path))?;
    // "ssh-ed25519 AAAA... comment" → keep type and key only.
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(kind), Some(key)) => Ok(format!("{kind} {key}")),
        _ => Err(SandboxError::State {
            path: path.to_path_buf(),
            reason: "not an OpenSSH public key".to_string(),
        }),
    }
}

/// Writes per-node directories and files, keys, authorized_keys, known_hosts, /etc/netns hosts.
fn write_files(info: &SandboxInfo) -> Result<PathBuf> {
    for node in &info.nodes {
        if node.dir.exists() {
            fs::remove_dir_all(&node.dir)
                .map_err(io_err("remove old node directory", &node.dir))?;
        }
        create_dir(&node.dir, 0o755)?;
        create_dir(&node.root_dir(), 0o700)?;
        create_dir(&node.tmp_dir(), 0o1777)?;
    }
    let ssh_dir = info.state_dir.join("ssh");
    create_dir(&ssh_dir, 0o755)?;
    for path in [&info.private_key, &info.private_key.with_extension("pub")] {
        if path.exists() {
            fs::remove_file(path).map_err(io_err("remove old key", path))?;
        }
    }
    generate_keys(info)?;

    let authorized_keys = ssh_dir.join("authorized_keys");
    let client_pub = read_public_key(&info.private_key.with_extension("pub"))?;
    write_file(&authorized_keys, &format!("{client_pub}\n"), 0o644)?;

    let mut known_hosts = String::new();
    for node in &info.nodes {
        let host_pub = read_public_key(&node.dir.join("ssh_host_ed25519_key.pub"))?;
        // One line per name: every client (OpenSSH, libssh2) reads this form.
        known_hosts.push_str(&format!("{} {host_pub}\n", node.name));
        known_hosts.push_str(&format!("{} {host_pub}\n", node.address));
        write_file(
            &node.dir.join("sshd_config"),
            &sshd_config(node, &authorized_keys),
            0o644,
        )?;
        let etc = Path::new("/etc/netns").join(&node.netns);
        create_dir(&etc, 0o755)?;
        write_file(&etc.join("hosts"), &hosts_file(info, node), 0o644)?;
    }
    write_file(&info.known_hosts, &known_hosts, 0o644)?;
    create_dir(Path::new("/run/sshd"), 0o755)?;
    Ok(authorized_keys)
}

// ---------------------------------------------------------------------------------------------
// Network

fn create_network(info: &SandboxInfo, subnet: &Subnet) -> Result<()> {
    let mut batch = format!(
        "link add {br} type bridge\naddr add {addr}/{len} dev {br}\nlink set {br} up\n",
        br = info.bridge.name,
        addr = info.bridge.address,
        len = subnet.prefix_len,
    );
    for node in &info.nodes {
        batch.push_str(&format!(
            "netns add {ns}\nlink add {veth} type veth peer name eth0 netns {ns}\n\
             link set {veth} master {br}\nlink set {veth} up\n",
            ns = node.netns,
            veth = node.veth,
            br = info.bridge.name,
        ));
    }
    run_with_input(Command::new("ip").args(["-batch", "-"]), &batch)?;
    for node in &info.nodes {
        let batch = format!(
            "link set lo up\naddr add {addr}/{len} dev eth0\nlink set eth0 up\n",
            addr = node.address,
            len = subnet.prefix_len,
        );
        run_with_input(
            Command::new("ip").args(["-n", &node.netns, "-batch", "-"]),
            &batch,
        )?;
    }
    Ok(())
}

fn forward_rule(info: &SandboxInfo) -> Vec<String> {
    [
        "FORWARD",
        "-i",
        &info.bridge.name,
        "-o",
        &info.bridge.name,
        "-m",
        "comment",
        "--comment",
        &format!("{IPTABLES_TAG_PREFIX}{}", info.name),
        "-j",
        "ACCEPT",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// The shell run as the node's first process: set the hostname, bind the private dirs, exec sshd
/// (which becomes PID 1). Arguments come as `$1..$5`, never spliced into the script.
const NODE_INIT: &str = r#"set -e
hostname "$1"
mount --bind "$2" /root
mount --bind "$3" /tmp
exec setpriv --bounding-set -sys_time "$5" -D -e -f "$4"
"#;

fn find_sshd() -> Result<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd", "/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| SandboxError::MissingPackages {
            packages: vec!["openssh-server".to_string()],
        })
}

fn start_node(node: &mut NodeInfo, sshd: &Path) -> Result<()> {
    let log = node.log_file();
    let log_file = fs::File::create(&log).map_err(io_err("create", &log))?;
    let log_err = log_file.try_clone().map_err(io_err("open", &log))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &node.netns])
        .args([
            "unshare",
            "--uts",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "sh",
            "-c",
            NODE_INIT,
            "node-init",
        ])
        .arg(&node.name)
        .arg(node.root_dir())
        .arg(node.tmp_dir())
        .arg(node.dir.join("sshd_config"))
        .arg(sshd)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        // Own process group: a Ctrl-C aimed at the controller must not kill the nodes.
        .process_group(0);
    let child = cmd.spawn().map_err(|source| SandboxError::Spawn {
        command: command_line(&cmd),
        source,
    })?;
    node.launcher_pid = Some(child.id());
    node.launcher_start_ticks = proc_stat(child.id()).map(|(start, _)| start);
    // The Child handle is dropped without waiting; `down` reaps it if it is still our child.
    Ok(())
}

/// Waits until every node's sshd accepts TCP connections and records each sshd PID.
fn wait_ready(info: &mut SandboxInfo, timeout_ms: u64) -> Result<()> {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms);
    let mut pending: Vec<usize> = (0..info.nodes.len()).collect();
    while !pending.is_empty() {
        pending.retain(|&i| {
            let node = &info.nodes[i];
            let addr = SocketAddr::from((node.address, SSH_PORT));
            TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err()
        });
        if pending.is_empty() {
            break;
        }
        let dead = pending.iter().find(|&&i| {
            !alive(
                info.nodes[i].launcher_pid,
                info.nodes[i].launcher_start_ticks,
            )
        });
        if Instant::now() >= deadline || dead.is_some() {
            let node = &info.nodes[*dead.unwrap_or(&pending[0])];
            return Err(SandboxError::NotReady {
                node: node.name.clone(),
                address: node.address,
                waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                log: node.log_file(),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for node in &mut info.nodes {
        // launcher (ip netns exec → unshare) has exactly one child: sh, which exec'd sshd.
        let sshd = node.launcher_pid.map(children).unwrap_or_default();
        node.sshd_pid = sshd.first().copied();
        node.sshd_start_ticks = node.sshd_pid.and_then(proc_stat).map(|(start, _)| start);
    }
    Ok(())
}

fn plan(cfg: &SandboxConfig, subnet: &Subnet) -> SandboxInfo {
    let state_dir = cfg.state_dir();
    let names = names(&cfg.name, cfg.nodes);
    let nodes = names
        .nodes
        .iter()
        .zip(1u32..)
        .map(|((name, netns, veth), i)| NodeInfo {
            name: name.clone(),
            address: subnet.host(i),
            netns: netns.clone(),
            veth: veth.clone(),
            dir: state_dir.join("nodes").join(name),
            launcher_pid: None,
            launcher_start_ticks: None,
            sshd_pid: None,
            sshd_start_ticks: None,
        })
        .collect();
    SandboxInfo {
        version: STATE_VERSION,
        name: cfg.name.clone(),
        subnet: subnet.to_string(),
        state_dir: state_dir.clone(),
        phase: Phase::Starting,
        bridge: BridgeInfo {
            name: names.bridge,
            address: subnet.bridge_address(),
        },
        ssh_port: SSH_PORT,
        user: "root".to_string(),
        private_key: state_dir.join("ssh").join("id_ed25519"),
        known_hosts: state_dir.join("ssh").join("known_hosts"),
        nodes,
        iptables_rules: Vec::new(),
        created_at: chrono::Utc::now().to_rfc3339(),
    }
}

/// Brings the sandbox up and returns what the runner needs (also written to `sandbox.json`).
///
/// Already up and healthy with the same shape: no-op, returns the recorded info. Stale state
/// (a crashed node, a failed `up`): runs [`down`] first. On failure, removes what it created.
pub fn up(cfg: &SandboxConfig) -> Result<SandboxInfo> {
    let subnet = cfg.validate()?;
    require_root()?;
    let t0 = Instant::now();
    ensure_packages()?;
    tracing::debug!(elapsed_ms = t0.elapsed().as_millis(), "packages checked");
    let state_dir = cfg.state_dir();
    check_strict_modes(&state_dir)?;
    create_dir(&state_dir, 0o755)?;
    // Directories create_dir_all made above state_dir follow the umask: check again.
    check_strict_modes(&state_dir)?;
    let _lock = lock(&state_dir)?;
    match load(&state_dir) {
        Ok(existing) if existing.name != cfg.name => {
            return Err(SandboxError::State {
                path: existing.state_file(),
                reason: format!(
                    "belongs to sandbox {:?}, not {:?}; use another state_dir",
                    existing.name, cfg.name
                ),
            });
        }
        Ok(existing) => {
            let requested = format!("{} nodes on {}", cfg.nodes, subnet);
            let recorded = format!("{} nodes on {}", existing.nodes.len(), existing.subnet);
            let healthy = existing.phase == Phase::Up && status_of(&existing).healthy();
            if healthy && recorded == requested {
                return Ok(existing);
            }
            if healthy {
                return Err(SandboxError::ConfigMismatch {
                    name: cfg.name.clone(),
                    recorded,
                    requested,
                });
            }
            teardown(&existing)?;
        }
        Err(SandboxError::NotUp { .. }) => {}
        Err(SandboxError::State { path, reason }) => {
            return Err(SandboxError::State {
                path,
                reason: format!("{reason}; remove it after checking nothing of it is running"),
            });
        }
        Err(e) => return Err(e),
    }

    let mut info = plan(cfg, &subnet);
    check_conflicts(&subnet, &names(&cfg.name, cfg.nodes), &info.state_file())?;
    save(&info)?;
    match start(&mut info, &subnet, cfg.ready_timeout_ms) {
        Ok(()) => Ok(info),
        Err(e) => {
            // Keep the original error; teardown is best effort here and `down` can be rerun.
            let _ = save(&info);
            let _ = teardown(&info);
            Err(e)
        }
    }
}

fn start(info: &mut SandboxInfo, subnet: &Subnet, ready_timeout_ms: u64) -> Result<()> {
    let t0 = Instant::now();
    let ms = || t0.elapsed().as_millis();
    let sshd = find_sshd()?;
    write_files(info)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "keys and files written");
    create_network(info, subnet)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "network created");
    if forward_rule_needed()? {
        let rule = forward_rule(info);
        info.iptables_rules.push(rule.clone());
        save(info)?;
        run(Command::new("iptables").args(["-w", "-I"]).args(&rule))?;
    }
    for i in 0..info.nodes.len() {
        let started = start_node(&mut info.nodes[i], &sshd);
        save(info)?;
        started?;
    }
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "sshd launched");
    wait_ready(info, ready_timeout_ms)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "every sshd accepts");
    info.phase = Phase::Up;
    save(info)
}

/// What [`down`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownReport {
    /// Whether a state file was found (false: nothing to do).
    pub was_recorded: bool,
    /// Objects removed, e.g. `process 1234 (n1 sshd)`, `network namespace sd-x-n1`.
    pub removed: Vec<String>,
}

/// Tears the sandbox down: kills the recorded processes (SIGKILL, by PID checked against its
/// start time), deletes the recorded namespaces, veths, bridge, `/etc/netns` entries and iptables
/// rules, then removes `sandbox.json`. Idempotent; keeps keys and node logs for inspection.
pub fn down(cfg: &SandboxConfig) -> Result<DownReport> {
    validate_name(&cfg.name)?;
    require_root()?;
    let state_dir = cfg.state_dir();
    if !state_dir.join(STATE_FILE).exists() {
        return Ok(DownReport::default());
    }
    let _lock = lock(&state_dir)?;
    match load(&state_dir) {
        Ok(info) => teardown(&info),
        Err(SandboxError::NotUp { .. }) => Ok(DownReport::default()),
        Err(e) => Err(e),
    }
}

/// Reaps and waits (at most 5 s) until every killed (pid, start) process is gone.
fn wait_dead(killed: &[(Option<u32>, Option<u64>)]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        for pid in killed.iter().filter_map(|(pid, _)| *pid) {
            reap(pid);
        }
        if !killed.iter().any(|(pid, start)| alive(*pid, *start)) || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn teardown(info: &SandboxInfo) -> Result<DownReport> {
    let mut report = DownReport {
        was_recorded: true,
        removed: Vec::new(),
    };
    let mut killed = Vec::new();
    for node in &info.nodes {
        // sshd is PID 1 of the node: killing it kills every process of the node.
        if kill_recorded(node.sshd_pid, node.sshd_start_ticks) {
            report.removed.push(format!(
                "process {} ({} sshd)",
                node.sshd_pid.unwrap_or(0),
                node.name
            ));
        }
        // unshare ignores SIGTERM; SIGKILL it by PID (its --kill-child also kills sshd).
        if kill_recorded(node.launcher_pid, node.launcher_start_ticks) {
            report.removed.push(format!(
                "process {} ({} launcher)",
                node.launcher_pid.unwrap_or(0),
                node.name
            ));
        }
        killed.extend([
            (node.sshd_pid, node.sshd_start_ticks),
            (node.launcher_pid, node.launcher_start_ticks),
        ]);
    }
    wait_dead(&killed);
    // Processes still inside a recorded namespace (e.g. an sshd whose PID was never recorded
    // because `up` was interrupted) belong to this sandbox too.
    let mut swept = Vec::new();
    for (pid, netns) in pids_in_netns(info.nodes.iter().map(|n| n.netns.as_str())) {
        let start = proc_stat(pid).map(|(start, _)| start);
        if kill_recorded(Some(pid), start) {
            report.removed.push(format!("process {pid} (in {netns})"));
            swept.push((Some(pid), start));
        }
    }
    wait_dead(&swept);

    let mut errors = Vec::new();
    // One `ip -force -batch` deletes every recorded object that exists; afterwards each one is
    // checked. The kernel destroys a veth asynchronously when its peer's namespace goes away, so
    // an object that vanished meanwhile counts as removed.
    let mut objects: Vec<(String, String, bool)> = Vec::new(); // (batch line, description, link?)
    for node in &info.nodes {
        objects.push((format!("link del {}", node.veth), node.veth.clone(), true));
        objects.push((
            format!("netns del {}", node.netns),
            node.netns.clone(),
            false,
        ));
    }
    objects.push((
        format!("link del {}", info.bridge.name),
        info.bridge.name.clone(),
        true,
    ));
    let exists = |name: &str, link: bool| {
        if link {
            link_exists(name)
        } else {
            netns_exists(name)
        }
    };
    objects.retain(|(_, name, link)| exists(name, *link));
    if !objects.is_empty() {
        let batch: String = objects
            .iter()
            .map(|(line, _, _)| format!("{line}\n"))
            .collect();
        let result = run_with_input(Command::new("ip").args(["-force", "-batch", "-"]), &batch);
        let mut failed = false;
        for (_, name, link) in &objects {
            let kind = if *link {
                "interface"
            } else {
                "network namespace"
            };
            if exists(name, *link) {
                failed = true;
            } else {
                report.removed.push(format!("{kind} {name}"));
            }
        }
        if let (true, Err(e)) = (failed, result) {
            errors.push(e);
        }
    }
    for node in &info.nodes {
        let etc = Path::new("/etc/netns").join(&node.netns);
        if etc.exists() {
            match fs::remove_dir_all(&etc) {
                Ok(()) => report.removed.push(etc.display().to_string()),
                Err(source) => errors.push(SandboxError::Io {
                    action: "remove",
                    path: etc,
                    source,
                }),
            }
        }
    }
    for rule in &info.iptables_rules {
        match output(Command::new("iptables").args(["-w", "-C"]).args(rule)) {
            Ok(check) if check.status.success() => {}
            Ok(_) => continue, // Already gone.
            Err(e) => {
                errors.push(e);
                continue;
            }
        }
        match run(Command::new("iptables").args(["-w", "-D"]).args(rule)) {
            Ok(_) => report
                .removed
                .push(format!("iptables rule {}", rule.join(" "))),
            Err(e) => errors.push(e),
        }
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let state_file = info.state_file();
    match fs::remove_file(&state_file) {
        Ok(()) => Ok(report),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(report),
        Err(source) => Err(SandboxError::Io {
            action: "remove",
            path: state_file,
            source,
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Status

/// Health of one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// Node name.
    pub name: String,
    /// Node address.
    pub address: Ipv4Addr,
    /// Whether the node's network namespace exists.
    pub netns_exists: bool,
    /// The recorded sshd PID (root PID namespace).
    pub sshd_pid: Option<u32>,
    /// Whether that sshd process is alive (same PID and start time as recorded).
    pub sshd_alive: bool,
    /// Whether `address:22` accepts TCP connections from the root namespace.
    pub ssh_port_open: bool,
}

/// Health of a sandbox, as returned by [`status`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    /// Sandbox name.
    pub name: String,
    /// The state directory examined.
    pub state_dir: PathBuf,
    /// The recorded phase; `None` when no state file exists (sandbox down).
    pub phase: Option<Phase>,
    /// The recorded subnet, when up.
    pub subnet: Option<String>,
    /// The bridge name, when up.
    pub bridge: Option<String>,
    /// Whether the bridge interface exists.
    pub bridge_exists: bool,
    /// Per node, in order.
    pub nodes: Vec<NodeStatus>,
}

impl SandboxStatus {
    /// Up, bridge present, every node's namespace, sshd and port fine.
    pub fn healthy(&self) -> bool {
        self.phase == Some(Phase::Up)
            && self.bridge_exists
            && self
                .nodes
                .iter()
                .all(|n| n.netns_exists && n.sshd_alive && n.ssh_port_open)
    }
}

impl fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(phase) = self.phase else {
            return writeln!(
                f,
                "sandbox {}: down (no {} in {})",
                self.name,
                STATE_FILE,
                self.state_dir.display()
            );
        };
        let verdict = if self.healthy() {
            "healthy"
        } else {
            "DEGRADED"
        };
        writeln!(
            f,
            "sandbox {}: {:?}, {verdict}; subnet {}, bridge {} ({})",
            self.name,
            phase,
            self.subnet.as_deref().unwrap_or("?"),
            self.bridge.as_deref().unwrap_or("?"),
            if self.bridge_exists {
                "present"
            } else {
                "missing"
            },
        )?;
        writeln!(
            f,
            "{:<6} {:<15} {:<7} {:<10} ssh:22",
            "node", "address", "netns", "sshd pid"
        )?;
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        for n in &self.nodes {
            let pid = match (n.sshd_pid, n.sshd_alive) {
                (Some(pid), true) => pid.to_string(),
                (Some(pid), false) => format!("{pid} dead"),
                (None, _) => "-".to_string(),
            };
            writeln!(
                f,
                "{:<6} {:<15} {:<7} {:<10} {}",
                n.name,
                n.address.to_string(),
                yes_no(n.netns_exists),
                pid,
                if n.ssh_port_open { "open" } else { "closed" },
            )?;
        }
        Ok(())
    }
}

fn status_of(info: &SandboxInfo) -> SandboxStatus {
    // Probe all ports concurrently so a dead sandbox costs one timeout, not one per node.
    let open: BTreeMap<String, bool> = std::thread::scope(|scope| {
        let probes: Vec<_> = info
            .nodes
            .iter()
            .map(|n| {
                let addr = SocketAddr::from((n.address, info.ssh_port));
                let name = n.name.clone();
                scope.spawn(move || {
                    let ok = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok();
                    (name, ok)
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|p| p.join().unwrap_or_default())
            .collect()
    });
    SandboxStatus {
        name: info.name.clone(),
        state_dir: info.state_dir.clone(),
        phase: Some(info.phase),
        subnet: Some(info.subnet.clone()),
        bridge: Some(info.bridge.name.clone()),
        bridge_exists: link_exists(&info.bridge.name),
        nodes: info
            .nodes
            .iter()
            .map(|n| NodeStatus {
                name: n.name.clone(),
                address: n.address,
                netns_exists: netns_exists(&n.netns),
                sshd_pid: n.sshd_pid,
                sshd_alive: alive(n.sshd_pid, n.sshd_start_ticks),
                ssh_port_open: open.get(&n.name).copied().unwrap_or(false),
            })
            .collect(),
    }
}

/// Reports the health of the sandbox described by `cfg` (does not need root).
pub fn status(cfg: &SandboxConfig) -> Result<SandboxStatus> {
    validate_name(&cfg.name)?;
    let state_dir = cfg.state_dir();
    match load(&state_dir) {
        Ok(info) => Ok(status_of(&info)),
        Err(SandboxError::NotUp { .. }) => Ok(SandboxStatus {
            name: cfg.name.clone(),
            state_dir,
            phase: None,
            subnet: None,
            bridge: None,
            bridge_exists: false,
            nodes: Vec::new(),
        }),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_linux_interface_limit_and_differ_by_sandbox() {
        let long = "a-very-long-sandbox-name-32chars";
        assert_eq!(long.len(), 32);
        let n = names(long, MAX_NODES);
        assert!(n.bridge.len() <= 15, "{}", n.bridge);
        for (_, _, veth) in &n.nodes {
            assert!(veth.len() <= 15, "{veth}");
        }
        let a = names("shakedown", 5);
        let b = names("ci", 5);
        assert_ne!(a.bridge, b.bridge);
        assert_ne!(a.nodes[0].1, b.nodes[0].1);
        assert_ne!(a.nodes[0].2, b.nodes[0].2);
        assert_eq!(a.nodes[4].0, "n5");
    }

    #[test]
    fn subnet_parsing_rejects_bad_input() {
        let ok = Subnet::parse("10.78.0.0/24").unwrap();
        assert_eq!(ok.host(3), Ipv4Addr::new(10, 78, 0, 3));
        assert_eq!(ok.bridge_address(), Ipv4Addr::new(10, 78, 0, 254));
        for bad in [
            "10.78.0.0",
            "10.78.0.0/25",
            "10.78.0.0/4",
            "10.78.0.1/24",
            "x/24",
            "10.78.0.0/x",
        ] {
            assert!(Subnet::parse(bad).is_err(), "{bad} accepted");
        }
        let err = Subnet::parse("10.78.0.5/24").unwrap_err().to_string();
        assert!(err.contains("did you mean 10.78.0.0/24"), "{err}");
    }

    #[test]
    fn subnet_overlap() {
        let a = Subnet::parse("10.78.0.0/24").unwrap();
        let b = Subnet::parse("10.79.0.0/24").unwrap();
        let wide = Subnet::parse("10.0.0.0/8").unwrap();
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&wide) && wide.overlaps(&a));
    }

    #[test]
    fn config_validation_names_the_field() {
        let mut cfg = SandboxConfig::named("ci");
        assert_eq!(
            cfg.state_dir(),
            PathBuf::from("/var/lib/shakedown/sandbox/ci")
        );
        assert!(cfg.validate().is_ok());
        cfg.nodes = 251;
        assert!(cfg.validate().unwrap_err().to_string().contains("nodes"));
        cfg.nodes = 0;
        assert!(cfg.validate().is_err());
        for bad in [
            "",
            "Upper",
            "1abc",
            "has space",
            "a/b",
            "x".repeat(33).as_str(),
        ] {
            let err = SandboxConfig::named(bad)
                .validate()
                .unwrap_err()
                .to_string();
            assert!(err.contains("name"), "{bad}: {err}");
        }
        let mut cfg = SandboxConfig::named("ci");
        cfg.state_dir = Some(PathBuf::from("relative/dir"));
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("state_dir")
        );
    }

    #[test]
    fn sshd_config_has_required_options() {
        let info = plan(
            &SandboxConfig::named("unit"),
            &Subnet::parse("10.78.0.0/24").unwrap(),
        );
        let text = sshd_config(&info.nodes[0], Path::new("/var/lib/x/ssh/authorized_keys"));
        for line in [
            "UsePAM no",
            "PasswordAuthentication no",
            "PermitRootLogin prohibit-password",
            "AuthorizedKeysFile /var/lib/x/ssh/authorized_keys",
            "PidFile none",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}");
        }
        let hosts = hosts_file(&info, &info.nodes[1]);
        assert!(hosts.contains("10.78.0.5\tn5\n"));
        assert!(hosts.contains("127.0.1.1\tn2\n"));
    }

    #[test]
    fn forward_rule_only_when_forward_chain_may_drop() {
        assert!(!forward_chain_may_drop("-P FORWARD ACCEPT\n"));
        assert!(forward_chain_may_drop("-P FORWARD DROP\n"));
        assert!(forward_chain_may_drop(
            "-P FORWARD ACCEPT\n-A FORWARD -j DOCKER-USER\n"
        ));
        let info = plan(
            &SandboxConfig::named("unit"),
            &Subnet::parse("10.78.0.0/24").unwrap(),
        );
        let rule = forward_rule(&info).join(" ");
        assert!(rule.starts_with("FORWARD -i sd"), "{rule}");
        assert!(
            rule.contains("--comment shakedown-sandbox:unit -j ACCEPT"),
            "{rule}"
        );
    }

    #[test]
    fn missing_packages_lists_only_uninstalled() {
        if Command::new("dpkg-query")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipping: no dpkg-query (not a Debian-like host)");
            return;
        }
        let missing = missing_packages(&["dpkg", "shakedown-no-such-package"]).unwrap();
        assert_eq!(missing, ["shakedown-no-such-package"]);
    }

    #[test]
    fn status_display_is_a_table() {
        let st = SandboxStatus {
            name: "unit".to_string(),
            state_dir: PathBuf::from("/var/lib/shakedown/sandbox/unit"),
            phase: Some(Phase::Up),
            subnet: Some("10.78.0.0/24".to_string()),
            bridge: Some("sdunit1234br".to_string()),
            bridge_exists: true,
            nodes: vec![NodeStatus {
                name: "n1".to_string(),
                address: Ipv4Addr::new(10, 78, 0, 1),
                netns_exists: true,
                sshd_pid: Some(42),
                sshd_alive: false,
                ssh_port_open: false,
            }],
        };
        assert!(!st.healthy());
        let text = st.to_string();
        assert!(text.contains("DEGRADED"), "{text}");
        assert!(
            text.contains("n1     10.78.0.1       yes     42 dead    closed"),
            "{text}"
        );
        let json = serde_json::to_string(&st).unwrap();
        assert_eq!(serde_json::from_str::<SandboxStatus>(&json).unwrap(), st);
    }

    #[test]
    fn proc_stat_reads_own_start_time() {
        let (start, zombie) = proc_stat(std::process::id()).unwrap();
        assert!(start > 0);
        assert!(!zombie);
        assert!(alive(Some(std::process::id()), Some(start)));
        assert!(!alive(Some(std::process::id()), Some(start + 1)));
    }
}
