//! `sandbox status`: each node's health (namespace, sshd alive, SSH port open) and the table it
//! prints. Reads the state file; changes nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::control::fanout;

use super::host::*;
use super::node::*;
use super::*;

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

pub(super) fn status_of(info: &SandboxInfo) -> SandboxStatus {
    // Probe every port at once, so a dead sandbox costs one timeout, not one per node or wave.
    let open: BTreeMap<String, bool> = fanout::all(&info.nodes, |n| {
        let addr = SocketAddr::from((n.address, info.ssh_port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
    })
    .into_iter()
    .zip(&info.nodes)
    .map(|(ok, n)| (n.name.clone(), ok.unwrap_or_default()))
    .collect();
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
pub(super) fn current_sshd(n: &NodeInfo) -> (Option<u32>, bool) {
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
}
