//! The built-in local sandbox cluster: `sandbox up | down | status` as library functions.
//!
//! Owns: creating and destroying N "nodes" on the controller host, each one a set of Linux
//! namespaces (network, UTS, PID, mount) with its own sshd (supervised by a reaper as PID 1),
//! wired to one bridge in the root namespace; the `sandbox.json` state file that tells the runner how to reach the nodes
//! (addresses, key, known_hosts) and tells `down` what to remove (names and PIDs); package checks.
//!
//! Does not own: SSH sessions to the nodes (`control`), anything running on a node (`db`,
//! `nemesis`), CLI parsing (`cli`). This module runs on the controller host and uses
//! `std::process::Command` for `ip`, `unshare`, `iptables` (SSH keys are made in `keys`); it needs root.
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
//!   on a node moves only that node's clock; the shim starts static and Go programs through
//!   `sd-clockexec`, which patches the offset into their vDSO (`clockpatch`).
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
//! sshd start-up of the nodes), `keys` (the SSH keys), `host` (commands, processes, host inspection, packages), `error`;
//! `state` (the state file `sandbox.json`, its lock, load and save), `down`, `status`; this file
//! holds the constants and `up`.

pub mod clockpatch;
mod config;
mod down;
mod error;
mod host;
mod keys;
mod node;
mod state;
mod status;

use std::process::Command;
use std::time::Instant;

use config::validate_name;
pub use config::{Names, SandboxConfig, Subnet, names};
use down::teardown;
pub use down::{DownReport, down};
pub use error::{Result, SandboxError};
use host::*;
pub use host::{ensure_packages, missing_packages};
use node::*;
use state::*;
pub use state::{BridgeInfo, ClockPatch, NodeInfo, Phase, SandboxInfo, load};
use status::status_of;
pub use status::{NodeStatus, SandboxStatus, status};

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

/// Version of the `sandbox.json` format written by this build (2: `clock_patch`).
pub const STATE_VERSION: u32 = 2;

/// Largest supported node count (addresses `.1..=.250`; `.254` is the bridge).
pub const MAX_NODES: usize = 250;

/// TCP port sshd listens on inside every node.
pub const SSH_PORT: u16 = 22;

/// Prefix of the comment tag on every iptables rule the sandbox adds.
const IPTABLES_TAG_PREFIX: &str = "shakedown-sandbox:";

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
        clock_patch: None,
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
            let patch = |on: bool| if on { "" } else { " without the clock patch" };
            let requested = format!(
                "{} nodes on {}{}",
                cfg.nodes,
                subnet,
                patch(cfg.clock_patch)
            );
            let turned_off = existing.clock_patch
                == Some(ClockPatch::Unavailable(state::CLOCK_PATCH_OFF.to_string()));
            let recorded = format!(
                "{} nodes on {}{}",
                existing.nodes.len(),
                existing.subnet,
                patch(!turned_off)
            );
            let healthy = existing.phase == Phase::Up && status_of(&existing).healthy();
            // A sandbox made before the clock patch existed is rebuilt (its sshd lacks it).
            let current = existing.clock_patch.is_some();
            if healthy && recorded == requested && current {
                return Ok(existing);
            }
            if healthy && recorded != requested {
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
    match start(&mut info, &subnet, cfg) {
        Ok(()) => Ok(info),
        Err(e) => {
            // Keep the original error; teardown is best effort here and `down` can be rerun.
            let _ = save(&info);
            let _ = teardown(&info);
            Err(e)
        }
    }
}

fn start(info: &mut SandboxInfo, subnet: &Subnet, cfg: &SandboxConfig) -> Result<()> {
    let t0 = Instant::now();
    let ms = || t0.elapsed().as_millis();
    let sshd = find_sshd()?;
    let probe_missing = build_programs(info)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "programs built");
    info.clock_patch = Some(if cfg.clock_patch {
        prepare_clock_patch(info, probe_missing)?
    } else {
        ClockPatch::Unavailable(state::CLOCK_PATCH_OFF.to_string())
    });
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), clock_patch = ?info.clock_patch, "clock patch prepared");
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
    start_nodes(info, &sshd)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "sshd launched");
    wait_ready(info, cfg.ready_timeout_ms)?;
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "every sshd accepts");
    info.phase = Phase::Up;
    save(info)
}
