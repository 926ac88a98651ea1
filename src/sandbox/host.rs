//! Host-side helpers of the sandbox: running commands with errors that name them, files,
//! the packages nodes need (through `provision::host`), processes (liveness by PID and start time, SIGKILL, reaping) and inspection of
//! namespaces, links, addresses and the iptables FORWARD chain. Does not decide what to create.

use std::fs;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{Names, REQUIRED_PACKAGES, Result, SandboxError, Subnet};
use crate::provision::{self, Installed};

pub(super) use crate::provision::host::{command_line, is_root};

pub(super) fn require_root() -> Result<()> {
    if is_root() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    Err(SandboxError::NotRoot { euid })
}

/// Makes sure this machine has [`REQUIRED_PACKAGES`] and `extra` (a system's packages: the
/// sandbox's nodes share this machine's files but cannot reach a package source, so whatever
/// they run is installed here, before any node needs it). Installs the missing ones with apt-get
/// when root; returns what it installed and apt's output.
pub fn ensure_packages(extra: &[String]) -> Result<Installed> {
    Ok(provision::host::ensure(&with_required(extra))?)
}

/// Which of [`REQUIRED_PACKAGES`] and `extra` this machine lacks.
pub fn missing_packages(extra: &[String]) -> Result<Vec<String>> {
    Ok(provision::host::missing(&with_required(extra))?)
}

/// [`REQUIRED_PACKAGES`], then those of `extra` not among them.
fn with_required(extra: &[String]) -> Vec<String> {
    let mut all: Vec<String> = REQUIRED_PACKAGES.iter().map(|p| p.to_string()).collect();
    for p in extra {
        if !all.contains(p) {
            all.push(p.clone());
        }
    }
    all
}

/// Runs a command to completion, capturing output, whatever its exit status.
pub(super) fn output(cmd: &mut Command) -> Result<Output> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|source| SandboxError::Spawn {
            command: command_line(cmd),
            source,
        })
}

/// Runs a command; a non-zero exit is an error naming the command, status and stderr.
pub(super) fn run(cmd: &mut Command) -> Result<Output> {
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
pub(super) fn run_with_input(cmd: &mut Command, input: &str) -> Result<Output> {
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

pub(super) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SandboxError {
    let path = path.to_path_buf();
    move |source| SandboxError::Io {
        action,
        path,
        source,
    }
}

pub(super) fn write_file(path: &Path, content: &str, mode: u32) -> Result<()> {
    fs::write(path, content).map_err(io_err("write", path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_err("chmod", path))
}

pub(super) fn create_dir(path: &Path, mode: u32) -> Result<()> {
    fs::create_dir_all(path).map_err(io_err("create directory", path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_err("chmod", path))
}

// ---------------------------------------------------------------------------------------------
// Process helpers

/// Start time (field 22 of `/proc/<pid>/stat`) and whether the process is a zombie.
pub(super) fn proc_stat(pid: u32) -> Option<(u64, bool)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, *state == "Z" || *state == "X"))
}

/// Whether the process recorded as (`pid`, `start_ticks`) is still running (not a zombie).
pub(super) fn alive(pid: Option<u32>, start_ticks: Option<u64>) -> bool {
    let Some(pid) = pid else { return false };
    match proc_stat(pid) {
        Some((start, zombie)) => !zombie && start_ticks.is_none_or(|s| s == start),
        None => false,
    }
}

pub(super) fn kill_recorded(pid: Option<u32>, start_ticks: Option<u64>) -> bool {
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
pub(super) fn reap(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on a specific PID only touches `status`; ECHILD is harmless.
    unsafe { libc::waitpid(raw, &mut status, libc::WNOHANG) };
}

/// The PIDs of the children of `pid` (from `/proc/<pid>/task/*/children`).
pub(super) fn children(pid: u32) -> Vec<u32> {
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
pub(super) fn pids_in_netns<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(u32, String)> {
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

pub(super) fn netns_exists(netns: &str) -> bool {
    Path::new("/run/netns").join(netns).exists()
}

pub(super) fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// IPv4 addresses on host interfaces as (interface, subnet-with-address).
pub(super) fn host_addresses() -> Result<Vec<(String, Ipv4Addr, u8)>> {
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
pub(super) fn check_conflicts(subnet: &Subnet, names: &Names, state_file: &Path) -> Result<()> {
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
pub(super) fn check_strict_modes(path: &Path) -> Result<()> {
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
pub(super) fn forward_rule_needed() -> Result<bool> {
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
pub(super) fn forward_chain_may_drop(rules: &str) -> bool {
    let lines: Vec<&str> = rules
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines != ["-P FORWARD ACCEPT"]
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let want = ["dpkg".to_string(), "shakedown-no-such-package".to_string()];
        let missing = provision::host::missing(&want).unwrap();
        assert_eq!(missing, ["shakedown-no-such-package"]);
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
