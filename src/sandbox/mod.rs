//! The built-in local sandbox cluster: `sandbox up | down | status` as library functions.
//!
//! Owns: creating and destroying N "nodes" on the controller host, each one a set of Linux
//! namespaces (network, UTS, PID, mount) with its own sshd (supervised by a reaper as PID 1),
//! wired to one bridge in the root namespace; the `sandbox.json` state file that tells the runner how to reach the nodes
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
//! - PID namespace whose PID 1 is the reaper `sd-reaper` (`reaper.c`, compiled at `up`): it runs
//!   sshd as its child and starts it again when it dies (after the hold of an `ssh-drop` fault on
//!   SIGUSR1), reaps orphans, and exits on SIGTERM; killing that one process tears the whole node
//!   down;
//! - mount namespace with `/root` and `/tmp` bind-mounted from `<state_dir>/nodes/nI/{root,tmp}`.
//!   The host's `/var`, `/etc`, `/usr` are shared: **a node's database data must live in its
//!   private `/tmp` or `/root`**, never under `/var`;
//! - sshd runs under `setpriv --bounding-set -sys_time`: nothing on a node can step the host clock;
//! - its own wall clock: sshd's `SetEnv` preloads `<state_dir>/clockshim.so` (compiled from
//!   `clockshim.c` at `up`) and names the node's offset file `nodes/nI/clock_offset`, so `date -s`
//!   on a node moves only that node's clock (libc programs only; not Go or static binaries).
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
//!
//! Code map: `config` (validated config, subnet, derived names; pure), `node` (files, network and
//! sshd start-up of the nodes), `host` (commands, processes, host inspection, packages), `error`;
//! this file holds the state file types and `up`/`down`/`status`/`load`.

mod config;
mod error;
mod host;
mod node;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use config::validate_name;
pub use config::{Names, SandboxConfig, Subnet, names};
pub use error::{Result, SandboxError};
use host::*;
pub use host::{ensure_packages, missing_packages};
use node::*;

/// Packages the sandbox itself needs on the controller host (a system's own come from
/// `Db::packages`, through [`ensure_packages`]). `gcc` and `libc6-dev` build the clock preload
/// library (`clockshim.c`) at `up`.
pub const REQUIRED_PACKAGES: [&str; 4] = ["openssh-server", "iptables", "gcc", "libc6-dev"];

/// Environment variable (set by every node's sshd) naming the node's clock offset file.
pub const CLOCK_FILE_ENV: &str = "SHAKEDOWN_CLOCK_FILE";

/// Process name (`/proc/<pid>/comm`) of each node's PID 1, the reaper that supervises sshd
/// (built from `reaper.c` at `up`).
pub const REAPER_NAME: &str = "sd-reaper";

/// File on a node (in its private `/tmp`) holding how long, in ms, the reaper keeps sshd away
/// after the next SIGUSR1 (the `ssh-drop` fault).
pub const SSHD_HOLD_FILE: &str = "/tmp/.shakedown-sshd-hold";

/// Delay between the reaper's SIGUSR1 and killing sshd, in ms: the command that sent the signal
/// gets its answer back to the controller first.
pub const DROP_DELAY_MS: u64 = 300;

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
    /// PID (in the root PID namespace) of the node's first sshd, started by the reaper (it
    /// changes when sshd is restarted; `status` looks up the current one).
    pub sshd_pid: Option<u32>,
    /// Start time of sshd in clock ticks since boot (guards against PID reuse).
    pub sshd_start_ticks: Option<u64>,
    /// PID (in the root PID namespace) of the node's PID 1, the reaper ([`REAPER_NAME`]);
    /// absent in state files written before the reaper existed.
    #[serde(default)]
    pub init_pid: Option<u32>,
    /// Start time of the reaper in clock ticks since boot.
    #[serde(default)]
    pub init_start_ticks: Option<u64>,
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

    /// The node's clock offset file (one little-endian int64, ns added to the host's wall
    /// clock), read and written by the clock shim; same path on the host and on the node.
    pub fn clock_file(&self) -> PathBuf {
        self.dir.join("clock_offset")
    }

    /// The node's current clock offset in ns, read from [`NodeInfo::clock_file`] on the host.
    pub fn clock_offset_ns(&self) -> Result<i64> {
        let path = self.clock_file();
        let bytes = fs::read(&path).map_err(io_err("read", &path))?;
        let head: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| SandboxError::State {
                path: path.clone(),
                reason: format!("{} bytes, expected 8", bytes.len()),
            })?;
        Ok(i64::from_le_bytes(head))
    }
}

impl SandboxInfo {
    /// Node names in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The nodes as a run addresses them (name, address).
    pub fn run_nodes(&self) -> Vec<crate::node::Node> {
        self.nodes
            .iter()
            .map(|n| crate::node::Node {
                name: n.name.clone(),
                host: n.address.to_string(),
            })
            .collect()
    }

    /// Fill in the sandbox's SSH key and known_hosts where `ssh` names none.
    pub fn fill_ssh(&self, ssh: &mut crate::control::SshConfig) {
        ssh.private_key
            .get_or_insert_with(|| self.private_key.clone());
        ssh.known_hosts
            .get_or_insert_with(|| self.known_hosts.clone());
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The compiled reaper every node runs as PID 1.
    pub fn reaper(&self) -> PathBuf {
        self.state_dir.join(REAPER_NAME)
    }

    /// The compiled clock preload library every node's sshd puts in `LD_PRELOAD`.
    pub fn clock_shim(&self) -> PathBuf {
        self.state_dir.join("clockshim.so")
    }

    /// Path of the state file.
    pub fn state_file(&self) -> PathBuf {
        self.state_dir.join(STATE_FILE)
    }
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
            init_pid: None,
            init_start_ticks: None,
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
    ensure_packages(&[])?;
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
    let reaper = info.reaper();
    for i in 0..info.nodes.len() {
        let started = start_node(&mut info.nodes[i], &sshd, &reaper);
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
    /// The same objects in short words, per node in node order (`None`: shared by the nodes,
    /// such as the bridge and iptables rules), for [`DownReport::lines`].
    #[serde(default)]
    pub by_node: Vec<(Option<String>, Vec<String>)>,
}

impl DownReport {
    /// Record one removed object: `full` in `removed`, `short` under its node.
    fn record(&mut self, node: Option<&str>, full: String, short: impl Into<String>) {
        self.removed.push(full);
        let node = node.map(str::to_string);
        let at = match self.by_node.iter().position(|(n, _)| *n == node) {
            Some(at) => at,
            None => {
                self.by_node.push((node, Vec::new()));
                self.by_node.len() - 1
            }
        };
        self.by_node[at].1.push(short.into());
    }

    /// What `sandbox down` prints: a summary line, then one line per node (and one for what
    /// the nodes shared), equal words counted (`3 processes`).
    pub fn lines(&self, sandbox: &str) -> Vec<String> {
        if self.removed.is_empty() {
            return vec![format!("sandbox {sandbox}: nothing to remove")];
        }
        let nodes = self.by_node.iter().filter(|(n, _)| n.is_some()).count();
        let objects = match self.removed.len() {
            1 => "1 object".to_string(),
            n => format!("{n} objects"),
        };
        let mut out = vec![match nodes {
            0 => format!("sandbox {sandbox}: removed {objects}"),
            1 => format!("sandbox {sandbox}: removed 1 node ({objects})"),
            n => format!("sandbox {sandbox}: removed {n} nodes ({objects})"),
        }];
        let mut rows: Vec<&(Option<String>, Vec<String>)> =
            self.by_node.iter().filter(|(n, _)| n.is_some()).collect();
        rows.extend(self.by_node.iter().filter(|(n, _)| n.is_none()));
        for (node, items) in rows {
            let mut counted: Vec<(&str, usize)> = Vec::new();
            for item in items {
                match counted.iter_mut().find(|(w, _)| *w == item.as_str()) {
                    Some((_, n)) => *n += 1,
                    None => counted.push((item, 1)),
                }
            }
            let words: Vec<String> = counted
                .into_iter()
                .map(|(w, n)| match (w, n) {
                    (w, 1) => w.to_string(),
                    ("process", n) => format!("{n} processes"),
                    (w, n) => format!("{n} {w}s"),
                })
                .collect();
            out.push(format!(
                "  {}: {}",
                node.as_deref().unwrap_or("shared"),
                words.join(", ")
            ));
        }
        out
    }
}

/// Tears the sandbox down: kills the recorded processes (SIGKILL, by PID checked against its
/// start time), deletes the recorded namespaces, veths, bridge, `/etc/netns` entries and iptables
/// rules and each node's `/tmp` (its database's data), then removes `sandbox.json`. Idempotent;
/// keeps keys and node logs (sshd's) for inspection.
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
        ..DownReport::default()
    };
    let mut killed = Vec::new();
    for node in &info.nodes {
        let name = Some(node.name.as_str());
        // The reaper is PID 1 of the node: killing it kills every process of the node.
        if kill_recorded(node.init_pid, node.init_start_ticks) {
            report.record(
                name,
                format!(
                    "process {} ({} init)",
                    node.init_pid.unwrap_or(0),
                    node.name
                ),
                "process",
            );
        }
        if kill_recorded(node.sshd_pid, node.sshd_start_ticks) {
            report.record(
                name,
                format!(
                    "process {} ({} sshd)",
                    node.sshd_pid.unwrap_or(0),
                    node.name
                ),
                "process",
            );
        }
        // unshare ignores SIGTERM; SIGKILL it by PID (its --kill-child also kills sshd).
        if kill_recorded(node.launcher_pid, node.launcher_start_ticks) {
            report.record(
                name,
                format!(
                    "process {} ({} launcher)",
                    node.launcher_pid.unwrap_or(0),
                    node.name
                ),
                "process",
            );
        }
        killed.extend([
            (node.init_pid, node.init_start_ticks),
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
            let node = info.nodes.iter().find(|n| n.netns == netns);
            report.record(
                node.map(|n| n.name.as_str()),
                format!("process {pid} (in {netns})"),
                "process",
            );
            swept.push((Some(pid), start));
        }
    }
    wait_dead(&swept);

    let mut errors = Vec::new();
    // One `ip -force -batch` deletes every recorded object that exists; afterwards each one is
    // checked. The kernel destroys a veth asynchronously when its peer's namespace goes away, so
    // an object that vanished meanwhile counts as removed.
    // (batch line, name, link?, node)
    let mut objects: Vec<(String, String, bool, Option<&str>)> = Vec::new();
    for node in &info.nodes {
        let name = Some(node.name.as_str());
        objects.push((
            format!("link del {}", node.veth),
            node.veth.clone(),
            true,
            name,
        ));
        objects.push((
            format!("netns del {}", node.netns),
            node.netns.clone(),
            false,
            name,
        ));
    }
    objects.push((
        format!("link del {}", info.bridge.name),
        info.bridge.name.clone(),
        true,
        None,
    ));
    let exists = |name: &str, link: bool| {
        if link {
            link_exists(name)
        } else {
            netns_exists(name)
        }
    };
    objects.retain(|(_, name, link, _)| exists(name, *link));
    if !objects.is_empty() {
        let batch: String = objects
            .iter()
            .map(|(line, _, _, _)| format!("{line}\n"))
            .collect();
        let result = run_with_input(Command::new("ip").args(["-force", "-batch", "-"]), &batch);
        let mut failed = false;
        for (_, name, link, node) in &objects {
            let kind = if *link {
                "interface"
            } else {
                "network namespace"
            };
            if exists(name, *link) {
                failed = true;
            } else {
                report.record(*node, format!("{kind} {name}"), format!("{kind} {name}"));
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
                Ok(()) => report.record(
                    Some(&node.name),
                    etc.display().to_string(),
                    etc.display().to_string(),
                ),
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
            Ok(_) => report.record(
                None,
                format!("iptables rule {}", rule.join(" ")),
                "iptables rule",
            ),
            Err(e) => errors.push(e),
        }
    }
    // Each node's /tmp holds its database's data (hundreds of MB for etcd); a run collects the
    // logs it wants into its run directory, and `up` would wipe it anyway.
    for node in &info.nodes {
        let tmp = node.tmp_dir();
        if tmp.exists() {
            match fs::remove_dir_all(&tmp) {
                Ok(()) => report.record(
                    Some(&node.name),
                    format!("{} ({}'s /tmp)", tmp.display(), node.name),
                    "its /tmp",
                ),
                Err(source) => errors.push(SandboxError::Io {
                    action: "remove",
                    path: tmp,
                    source,
                }),
            }
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
            .map(|n| {
                let (sshd_pid, sshd_alive) = current_sshd(n);
                NodeStatus {
                    name: n.name.clone(),
                    address: n.address,
                    netns_exists: netns_exists(&n.netns),
                    sshd_pid,
                    sshd_alive,
                    ssh_port_open: open.get(&n.name).copied().unwrap_or(false),
                }
            })
            .collect(),
    }
}

/// The node's sshd now and whether it lives: the reaper's sshd child when the reaper is alive
/// (sshd may have been restarted since `up`), else the recorded one.
fn current_sshd(n: &NodeInfo) -> (Option<u32>, bool) {
    if n.init_pid.is_some() {
        if !alive(n.init_pid, n.init_start_ticks) {
            return (n.sshd_pid, false);
        }
        let now = n.init_pid.and_then(|p| find_below(p, "sshd"));
        return (now.or(n.sshd_pid), now.is_some());
    }
    (n.sshd_pid, alive(n.sshd_pid, n.sshd_start_ticks))
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
    fn down_prints_a_summary_and_one_short_line_per_node() {
        let mut r = DownReport::default();
        assert_eq!(r.lines("x"), vec!["sandbox x: nothing to remove"]);
        for n in ["n1", "n2"] {
            for what in ["init", "sshd", "launcher"] {
                r.record(Some(n), format!("process 7 ({n} {what})"), "process");
            }
            let ns = format!("network namespace sd-x-{n}");
            r.record(Some(n), ns.clone(), ns);
            r.record(
                Some(n),
                format!("/var/lib/x/{n}/tmp ({n}'s /tmp)"),
                "its /tmp",
            );
        }
        r.record(None, "interface sdxbr".into(), "interface sdxbr");
        r.record(None, "iptables rule -A FORWARD …".into(), "iptables rule");
        r.record(None, "iptables rule -A FORWARD … 2".into(), "iptables rule");
        // A process found in n1's namespace later still lands on n1's line.
        r.record(Some("n1"), "process 9 (in sd-x-n1)".into(), "process");
        assert_eq!(
            r.lines("x"),
            vec![
                "sandbox x: removed 2 nodes (14 objects)",
                "  n1: 4 processes, network namespace sd-x-n1, its /tmp",
                "  n2: 3 processes, network namespace sd-x-n2, its /tmp",
                "  shared: interface sdxbr, 2 iptables rules",
            ]
        );
        assert_eq!(r.removed.len(), 14, "the full words stay in removed");
        let mut shared_only = DownReport::default();
        shared_only.record(None, "iptables rule -A FORWARD …".into(), "iptables rule");
        assert_eq!(
            shared_only.lines("x"),
            vec!["sandbox x: removed 1 object", "  shared: iptables rule"]
        );
    }
}
