//! `sandbox down`: remove exactly what the state file records (processes, namespaces, the
//! bridge, the iptables rule, each node's `/tmp`) and say what was removed, per node
//! (`DownReport`). Does not build a sandbox (`sandbox`) nor report health (`sandbox::status`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::control::fanout;

use super::host::*;
use super::*;

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
pub(super) fn wait_dead(killed: &[(Option<u32>, Option<u64>)]) {
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

/// Everything `info` records removed: the nodes' processes (and any other process in their
/// namespaces), links and namespaces, `/etc/netns` entries, iptables rules, each node's `/tmp`,
/// then the state file. What was removed is in the report; the first error ends it, after
/// every removal was tried.
pub(super) fn teardown(info: &SandboxInfo) -> Result<DownReport> {
    let mut report = DownReport {
        was_recorded: true,
        ..DownReport::default()
    };
    let t0 = Instant::now();
    let ms = || t0.elapsed().as_millis();
    kill_processes(info, &mut report);
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "processes killed");
    let mut errors = Vec::new();
    remove_links_and_namespaces(info, &mut report, &mut errors);
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "links and namespaces removed");
    remove_etc_netns(info, &mut report, &mut errors);
    remove_iptables_rules(info, &mut report, &mut errors);
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "/etc/netns and rules removed");
    remove_tmp_dirs(info, &mut report, &mut errors);
    tracing::debug!(sandbox = %info.name, elapsed_ms = ms(), "nodes' /tmp removed");
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

/// Every recorded process of every node killed (the reaper, sshd, the launcher), then any other
/// process still inside a recorded namespace; each waited for.
fn kill_processes(info: &SandboxInfo, report: &mut DownReport) {
    let mut killed = Vec::new();
    for node in &info.nodes {
        let name = Some(node.name.as_str());
        let processes = [
            // The reaper is PID 1 of the node: killing it kills every process of the node.
            (node.init_pid, node.init_start_ticks, "init"),
            (node.sshd_pid, node.sshd_start_ticks, "sshd"),
            // unshare ignores SIGTERM; SIGKILL it by PID (its --kill-child also kills sshd).
            (node.launcher_pid, node.launcher_start_ticks, "launcher"),
        ];
        for (pid, ticks, what) in processes {
            if kill_recorded(pid, ticks) {
                report.record(
                    name,
                    format!("process {} ({} {what})", pid.unwrap_or(0), node.name),
                    "process",
                );
            }
            killed.push((pid, ticks));
        }
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
}

/// How long [`remove_links_and_namespaces`] lets the kernel take a deleted namespace's veth
/// away before deleting the veth itself.
const VETH_GONE_WAIT: Duration = Duration::from_secs(5);

/// The nodes' namespaces, veths and the bridge deleted. Namespaces first, in one
/// `ip -force -batch`: the kernel then destroys their veth pairs itself, all in one batch of
/// its namespace clean-up, where deleting each veth by name costs a network-wide RCU grace
/// period (a 100-node `down` spent 2.7 s of its 3.4 s on that). Veths still there after
/// [`VETH_GONE_WAIT`] (or whose namespace was already gone) and the bridge are deleted by name
/// in a second batch. Every object is checked afterwards; one that vanished counts as removed.
fn remove_links_and_namespaces(
    info: &SandboxInfo,
    report: &mut DownReport,
    errors: &mut Vec<SandboxError>,
) {
    let netns: Vec<&NodeInfo> = info
        .nodes
        .iter()
        .filter(|n| netns_exists(&n.netns))
        .collect();
    let mut veths: Vec<&NodeInfo> = info.nodes.iter().filter(|n| link_exists(&n.veth)).collect();
    let bridge = link_exists(&info.bridge.name);
    let mut result = Ok(());
    if !netns.is_empty() {
        let batch: String = netns
            .iter()
            .map(|n| format!("netns del {}\n", n.netns))
            .collect();
        result =
            run_with_input(Command::new("ip").args(["-force", "-batch", "-"]), &batch).map(|_| ());
        let deadline = Instant::now() + VETH_GONE_WAIT;
        while netns.iter().any(|n| link_exists(&n.veth)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for node in &netns {
        let name = &node.netns;
        if netns_exists(name) {
            if let Err(e) = std::mem::replace(&mut result, Ok(())) {
                errors.push(e);
            }
        } else {
            let what = format!("network namespace {name}");
            report.record(Some(&node.name), what.clone(), what);
        }
    }
    let mut batch: String = veths
        .iter()
        .filter(|n| link_exists(&n.veth))
        .map(|n| format!("link del {}\n", n.veth))
        .collect();
    if bridge {
        batch.push_str(&format!("link del {}\n", info.bridge.name));
    }
    let mut result = Ok(());
    if !batch.is_empty() {
        result =
            run_with_input(Command::new("ip").args(["-force", "-batch", "-"]), &batch).map(|_| ());
    }
    let mut failed = false;
    veths.retain(|n| {
        let gone = !link_exists(&n.veth);
        failed |= !gone;
        gone
    });
    for node in veths {
        let what = format!("interface {}", node.veth);
        report.record(Some(&node.name), what.clone(), what);
    }
    if bridge {
        if link_exists(&info.bridge.name) {
            failed = true;
        } else {
            let what = format!("interface {}", info.bridge.name);
            report.record(None, what.clone(), what);
        }
    }
    if let (true, Err(e)) = (failed, result) {
        errors.push(e);
    }
}

/// Removes each of `paths` (node, directory, words for the report) in parallel (bounded: on a
/// disk mounted with `discard` a removal waits on the device, ~4 ms a directory here, so 100
/// nodes' directories one by one took 0.4 s).
fn remove_dirs(
    paths: Vec<(&NodeInfo, PathBuf, String)>,
    report: &mut DownReport,
    errors: &mut Vec<SandboxError>,
    short: impl Fn(&PathBuf) -> String,
) {
    let present: Vec<_> = paths.into_iter().filter(|(_, p, _)| p.exists()).collect();
    let removed = fanout::each(&present, fanout::FAN_OUT, |(_, path, _)| {
        fs::remove_dir_all(path)
    });
    for ((node, path, full), r) in present.into_iter().zip(removed) {
        match r {
            Ok(Ok(())) => report.record(Some(&node.name), full, short(&path)),
            Ok(Err(source)) => errors.push(SandboxError::Io {
                action: "remove",
                path,
                source,
            }),
            Err(p) => errors.push(SandboxError::Panicked {
                what: fanout::panic_words(p.as_ref()),
            }),
        }
    }
}

/// The nodes' `/etc/netns/<name>` directories.
fn remove_etc_netns(info: &SandboxInfo, report: &mut DownReport, errors: &mut Vec<SandboxError>) {
    let paths = info
        .nodes
        .iter()
        .map(|node| {
            let etc = Path::new("/etc/netns").join(&node.netns);
            let words = etc.display().to_string();
            (node, etc, words)
        })
        .collect();
    remove_dirs(paths, report, errors, |p| p.display().to_string());
}

/// The iptables rules `up` added (each checked first: one already gone is skipped).
fn remove_iptables_rules(
    info: &SandboxInfo,
    report: &mut DownReport,
    errors: &mut Vec<SandboxError>,
) {
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
}

/// Each node's `/tmp`.
fn remove_tmp_dirs(info: &SandboxInfo, report: &mut DownReport, errors: &mut Vec<SandboxError>) {
    // Each node's /tmp holds its database's data (hundreds of MB for etcd); a run collects the
    // logs it wants into its run directory, and `up` would wipe it anyway.
    let paths = info
        .nodes
        .iter()
        .map(|node| {
            let tmp = node.tmp_dir();
            let words = format!("{} ({}'s /tmp)", tmp.display(), node.name);
            (node, tmp, words)
        })
        .collect();
    remove_dirs(paths, report, errors, |_| "its /tmp".to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

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
