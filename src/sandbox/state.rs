//! The sandbox's state file `sandbox.json`: what the runner needs to reach the nodes and `down`
//! needs to remove them (`SandboxInfo`, per node and bridge), its lock serializing `up` and
//! `down`, and loading and saving it. Does not create or remove anything (`sandbox`,
//! `sandbox::down`).

use std::fs;
use std::io;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::host::*;
use super::*;

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
    /// Whether Go programs and static binaries on the nodes read their node's clock (the vDSO
    /// patch, `sandbox::clockpatch`), as `up` measured it; `None` in a state file written
    /// before the patch existed (`up` rebuilds such a sandbox).
    #[serde(default)]
    pub clock_patch: Option<ClockPatch>,
}

/// Why the patch is unavailable when the sandbox was made with it turned off.
pub const CLOCK_PATCH_OFF: &str = "the sandbox was made with --sandbox-no-clock-patch (Go and static programs read the host's clock)";

/// What `up` found of the clock patch on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockPatch {
    /// A static test program started through `sd-clockexec` read its offset.
    Works,
    /// It cannot work here, and why (the words of `clockpatch::Unpatchable`).
    Unavailable(String),
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

    /// The node's log of clock patches (`clockexec.c`: one line per static or Go program started
    /// on the node, `patched in N us` or `NOT patched: why`), next to its clock file.
    pub fn clock_patch_log(&self) -> PathBuf {
        self.dir.join("clockpatch.log")
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

    /// The compiled vDSO patcher (`clockexec.c`) the shim starts static and Go programs with;
    /// its plan is [`SandboxInfo::clock_plan`], next to it.
    pub fn clock_exec(&self) -> PathBuf {
        self.state_dir.join("sd-clockexec")
    }

    /// The clock patch's plan for this kernel's vDSO (`clockpatch::Plan::to_text`).
    pub fn clock_plan(&self) -> PathBuf {
        self.state_dir.join("clockpatch.plan")
    }

    /// The static test program of the clock patch (`clockprobe.c`).
    pub fn clock_probe(&self) -> PathBuf {
        self.state_dir.join("sd-clockprobe")
    }

    /// Whether the nodes' Go and static programs read their node's clock; the reason when not.
    pub fn clock_patch_error(&self) -> Option<String> {
        match &self.clock_patch {
            Some(ClockPatch::Works) => None,
            Some(ClockPatch::Unavailable(why)) => Some(why.clone()),
            None => Some(format!(
                "sandbox {} was made by an older shakedown without the clock patch; run `shakedown sandbox down --sandbox-name {}` and bring it up again",
                self.name, self.name
            )),
        }
    }

    /// Path of the state file.
    pub fn state_file(&self) -> PathBuf {
        self.state_dir.join(STATE_FILE)
    }
}

/// An exclusive lock on `<state_dir>/.lock` serializing `up` and `down` of one sandbox; released
/// when dropped. The descriptor is close-on-exec, so node processes do not inherit it.
pub(super) struct StateLock {
    _file: fs::File,
}

pub(super) fn lock(state_dir: &Path) -> Result<StateLock> {
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

pub(super) fn save(info: &SandboxInfo) -> Result<()> {
    let path = info.state_file();
    let tmp = info.state_dir.join(format!("{STATE_FILE}.tmp"));
    let text = serde_json::to_string_pretty(info).map_err(|e| SandboxError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    write_file(&tmp, &(text + "\n"), 0o644)?;
    fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))
}
