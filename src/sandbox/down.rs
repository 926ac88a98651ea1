//! `sandbox down`: remove exactly what the state file records (processes, namespaces, the
//! bridge, the iptables rule, each node's `/tmp`) and say what was removed, per node
//! (`DownReport`). Does not build a sandbox (`sandbox`) nor report health (`sandbox::status`).

use std::fs;
use std::io;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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
    kill_processes(info, &mut report);
    let mut errors = Vec::new();
    remove_links_and_namespaces(info, &mut report, &mut errors);
    remove_etc_netns(info, &mut report, &mut errors);
    remove_iptables_rules(info, &mut report, &mut errors);
    remove_tmp_dirs(info, &mut report, &mut errors);
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

/// The nodes' veths and namespaces and the bridge deleted in one `ip -force -batch`.
fn remove_links_and_namespaces(
    info: &SandboxInfo,
    report: &mut DownReport,
    errors: &mut Vec<SandboxError>,
) {
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
}

/// The nodes' `/etc/netns/<name>` directories.
fn remove_etc_netns(info: &SandboxInfo, report: &mut DownReport, errors: &mut Vec<SandboxError>) {
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
