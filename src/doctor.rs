//! `shakedown doctor`: preflight checks per node before a run — SSH reachable, root (or
//! passwordless sudo), iptables usable and the tool's chain free of leftovers, tc present, netem
//! available, /dev/fuse present (power-loss and disk faults), clock settable, NTP daemons
//! running, the system's binaries present.
//!
//! One SSH connection and two commands per node (nodes in parallel); a probe script prints one
//! tab-separated line per check, and `interpret` (pure, unit-tested) turns it into findings with a
//! fix for each problem. Required abilities (SSH, root, iptables, tc, the DB's binaries) FAIL;
//! optional ones (netem, FUSE, a settable clock, no NTP daemon, no leftover rules) only WARN: they limit
//! which faults work. The clock check never steps a real clock: it reads CAP_SYS_TIME from
//! `/proc/self/status`, and only when a clock shim is preloaded (the sandbox's per-node clocks)
//! runs `date -s` of the current time, which the shim turns into a no-op offset write.
//! Does not own the CLI flags (`cli::DoctorArgs`) nor fixing anything.

use crate::control::{Cmd, Remote, SshConfig, SshRemote};
use crate::db::{Binary, Db};
use crate::node::Node;
use serde::Serialize;
use std::sync::Arc;

/// Outcome of one check on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but some faults will not (or leftovers exist).
    Warn,
    /// A run will fail.
    Fail,
    /// Not checked (an earlier check failed, e.g. no SSH).
    Skipped,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skipped => "-",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Check name (`ssh`, `root`, `iptables`, `chain`, `tc`, `netem`, `clock`, `ntp`, or a
    /// binary's name).
    pub check: String,
    /// Outcome.
    pub status: Status,
    /// What was seen.
    pub detail: String,
    /// How to fix it; empty when ok.
    pub fix: String,
}

/// All findings for one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// Node name.
    pub node: String,
    /// Node address.
    pub host: String,
    /// Findings in check order.
    pub findings: Vec<Finding>,
}

/// The whole preflight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    /// One report per node, in node order.
    pub nodes: Vec<NodeReport>,
    /// No check failed (warnings allowed).
    pub ok: bool,
}

/// Checks that come from the probe script, in table order (the DB's binaries follow).
const PROBE_CHECKS: &[&str] = &[
    "iptables", "chain", "tc", "netem", "nfqueue", "fuse", "clock", "ntp",
];

/// `$1` = chain; the rest `name=path1:path2` binaries. Prints `check<TAB>state<TAB>detail` lines.
const PROBE_SCRIPT: &str = r#"c="$1"; shift
say() { printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\n\t' '  ' | cut -c1-200)"; }
if command -v iptables >/dev/null 2>&1; then
  if e=$(iptables -w -n -L INPUT 2>&1 >/dev/null); then
    say iptables ok "$(iptables --version 2>&1)"
    if iptables -w -n -L "$c" >/dev/null 2>&1; then
      say chain present "$(iptables -w -S "$c" | grep -c -- '^-A')"
    else
      say chain absent ""
    fi
  else
    say iptables error "$e"; say chain unknown ""
  fi
else
  say iptables missing ""; say chain unknown ""
fi
if command -v tc >/dev/null 2>&1; then
  say tc ok "$(command -v tc)"
  if e=$(tc qdisc add dev lo root handle 5d5e: netem delay 0ms 2>&1); then
    tc qdisc del dev lo root; say netem ok ""
  else
    say netem error "$e"
  fi
else
  say tc missing ""; say netem error "tc missing"
fi
[ -e /proc/net/netfilter/nfnetlink_queue ] || modprobe -q nfnetlink_queue 2>/dev/null
if [ -e /proc/net/netfilter/nfnetlink_queue ]; then say nfqueue ok ""; else say nfqueue missing ""; fi
if [ -c /dev/fuse ]; then say fuse ok ""; else say fuse missing ""; fi
cap=$(awk '/^CapEff/ {print $2}' /proc/self/status)
if [ -n "$LD_PRELOAD" ]; then
  if e=$(date -s "@$(date +%s.%N)" 2>&1 >/dev/null); then say clock shim "$LD_PRELOAD"
  else say clock error "date -s with LD_PRELOAD=$LD_PRELOAD: $e"; fi
elif [ -n "$cap" ] && [ $(( (0x$cap >> 25) & 1 )) -eq 1 ]; then
  say clock cap "CAP_SYS_TIME"
else
  say clock error "no CAP_SYS_TIME (CapEff $cap) and no clock shim preloaded"
fi
d=""
for f in /proc/[0-9]*/comm; do
  read -r n < "$f" 2>/dev/null || continue
  case "$n" in chronyd|ntpd|openntpd|systemd-timesyn) d="$d $n";; esac
done
if [ -n "$d" ]; then say ntp running "$d"; else say ntp none ""; fi
for b in "$@"; do
  name="${b%%=*}"; paths="${b#*=}"; found=""
  oldifs="$IFS"; IFS=:
  for p in $paths; do [ -n "$p" ] && [ -x "$p" ] && found="$p" && break; done
  IFS="$oldifs"
  [ -n "$found" ] || found=$(command -v "$name" 2>/dev/null || true)
  if [ -n "$found" ]; then say "bin:$name" ok "$found"; else say "bin:$name" missing ""; fi
done
"#;

fn finding(check: &str, status: Status, detail: impl Into<String>, fix: &str) -> Finding {
    Finding {
        check: check.to_string(),
        status,
        detail: detail.into(),
        fix: if status == Status::Ok {
            String::new()
        } else {
            fix.to_string()
        },
    }
}

/// The root check from `id -u` output and whether `sudo -n true` worked.
pub fn interpret_root(uid: &str, sudo_ok: bool) -> Finding {
    let fix = "log in as root (--username root) or give the user passwordless sudo";
    match uid.trim() {
        "0" => finding("root", Status::Ok, "uid 0", fix),
        u if sudo_ok => finding("root", Status::Ok, format!("uid {u}, sudo -n works"), fix),
        u => finding(
            "root",
            Status::Fail,
            format!("uid {u} and sudo -n fails"),
            fix,
        ),
    }
}

/// Findings from the probe script's output; `binaries` lists the DB's programs (a missing line
/// is reported as a failure to probe, never as ok).
pub fn interpret(probe: &str, binaries: &[Binary]) -> Vec<Finding> {
    let lines: Vec<(&str, &str, &str)> = probe
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, '\t');
            Some((p.next()?, p.next()?, p.next().unwrap_or("")))
        })
        .collect();
    let get = |check: &str| lines.iter().find(|(c, _, _)| *c == check).copied();
    let mut out = Vec::new();
    for &check in PROBE_CHECKS {
        let Some((_, state, detail)) = get(check) else {
            out.push(finding(
                check,
                Status::Fail,
                "the probe printed nothing for this check",
                "run the probe by hand: see src/doctor.rs",
            ));
            continue;
        };
        out.push(match (check, state) {
            ("iptables", "ok") => finding(check, Status::Ok, detail, ""),
            ("iptables", "missing") => finding(
                check,
                Status::Fail,
                "iptables not found",
                "apt-get install iptables",
            ),
            ("iptables", _) => finding(
                check,
                Status::Fail,
                detail,
                "iptables needs root / CAP_NET_ADMIN and the nf_tables or ip_tables modules",
            ),
            ("chain", "absent") => finding(check, Status::Ok, "no SHAKEDOWN chain", ""),
            ("chain", "present") if detail.trim() == "0" => {
                finding(check, Status::Ok, "SHAKEDOWN chain empty", "")
            }
            ("chain", "present") => finding(
                check,
                Status::Warn,
                format!("{} leftover rules in the SHAKEDOWN chain", detail.trim()),
                "run `shakedown heal` (a run also clears them at setup)",
            ),
            ("chain", _) => finding(check, Status::Skipped, "iptables unusable", ""),
            ("tc", "ok") => finding(check, Status::Ok, detail, ""),
            ("tc", _) => finding(
                check,
                Status::Fail,
                "tc not found",
                "apt-get install iproute2",
            ),
            ("netem", "ok") => finding(check, Status::Ok, "sch_netem available", ""),
            ("netem", _) if crate::nemesis::packet::is_unknown_qdisc(detail) => finding(
                check,
                Status::Warn,
                format!("{}: {detail}", crate::nemesis::packet::NETEM_UNAVAILABLE),
                "delay faults use the tool's NFQUEUE delayer instead (see the nfqueue row); for netem, a kernel with CONFIG_NET_SCH_NETEM (modprobe sch_netem)",
            ),
            ("netem", _) => finding(
                check,
                Status::Warn,
                format!("netem probe on lo failed: {detail}"),
                "delay faults may fail; check `tc qdisc add dev lo root netem delay 0ms` by hand",
            ),
            ("nfqueue", "ok") => finding(
                check,
                Status::Ok,
                "nfnetlink_queue available (the NFQUEUE delayer can serve delay faults)",
                "",
            ),
            ("nfqueue", _) => finding(
                check,
                Status::Warn,
                "no nfnetlink_queue in this kernel",
                "delay faults need netem here (backend = \"netem\"); for the NFQUEUE delayer, a kernel with CONFIG_NETFILTER_NETLINK_QUEUE (modprobe nfnetlink_queue)",
            ),
            ("clock", "shim") => finding(
                check,
                Status::Ok,
                format!("per-node clock shim: {detail}"),
                "",
            ),
            ("clock", "cap") => finding(check, Status::Ok, "CAP_SYS_TIME (not stepped)", ""),
            ("clock", _) => finding(
                check,
                Status::Warn,
                detail,
                "clock faults will fail; run as root with CAP_SYS_TIME (the sandbox's clock shim provides per-node clocks)",
            ),
            ("fuse", "ok") => finding(
                check,
                Status::Ok,
                "/dev/fuse present (power-loss and disk faults can serve the data directory)",
                "",
            ),
            ("fuse", _) => finding(
                check,
                Status::Warn,
                "no /dev/fuse: power-loss and disk faults will fail on this node",
                "modprobe fuse (a container needs --device /dev/fuse)",
            ),
            ("ntp", "none") => finding(check, Status::Ok, "no NTP daemon running", ""),
            ("ntp", _) => finding(
                check,
                Status::Warn,
                format!("running:{detail}"),
                "NTP undoes clock faults: clock tests stop it for the run, or stop it yourself (systemctl stop chrony ntp systemd-timesyncd)",
            ),
            _ => finding(check, Status::Fail, format!("{state} {detail}"), ""),
        });
    }
    for b in binaries {
        let key = format!("bin:{}", b.name);
        out.push(match get(&key) {
            Some((_, "ok", path)) => finding(&b.name, Status::Ok, path, ""),
            Some(_) => finding(&b.name, Status::Fail, "not found", &b.fix),
            None => finding(
                &b.name,
                Status::Fail,
                "the probe printed nothing for this binary",
                &b.fix,
            ),
        });
    }
    out
}

/// The system's packages on a node and whether its package source answers (not asked in the
/// sandbox, whose nodes have no route out by design).
fn package_findings(
    remote: &dyn crate::control::Remote,
    packages: &[String],
    sandbox: bool,
) -> Vec<Finding> {
    use crate::provision::node::{Source, missing, probe_source};
    if packages.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let lacking = match missing(remote, packages) {
        Ok(m) => m,
        Err(e) => return vec![finding("packages", Status::Fail, e.to_string(), "")],
    };
    let install_fix = if sandbox {
        "`shakedown run` installs them on this machine (the sandbox's nodes share its files)"
    } else {
        "`shakedown run` installs them (apt-get on the node, or --packages-from controller)"
    };
    out.push(match lacking.as_slice() {
        [] => finding("packages", Status::Ok, packages.join(", "), ""),
        _ => finding(
            "packages",
            Status::Warn,
            format!("missing: {}", lacking.join(", ")),
            install_fix,
        ),
    });
    if sandbox {
        // Sandbox nodes have no route out by design; their packages come from this machine.
        return out;
    }
    out.push(match probe_source(remote) {
        Ok((Source::Reachable, _)) => finding("package source", Status::Ok, "answers", ""),
        Ok((Source::NoApt, _)) => finding(
            "package source",
            if lacking.is_empty() {
                Status::Ok
            } else {
                Status::Fail
            },
            "no apt-get on this node",
            "install the packages yourself and run with --no-install",
        ),
        Ok((Source::Unreachable(why), _)) => finding(
            "package source",
            if lacking.is_empty() {
                Status::Warn
            } else {
                Status::Fail
            },
            format!("unreachable: {why}"),
            &format!("either {}", crate::provision::REMEDIES),
        ),
        Err(e) => finding("package source", Status::Fail, e.to_string(), ""),
    });
    out
}

/// Check one node (blocking).
pub fn check_node(
    node: &Node,
    ssh: &SshConfig,
    chain: &str,
    binaries: &[Binary],
    packages: &[String],
    sandbox: bool,
) -> NodeReport {
    let mut findings = Vec::new();
    let skipped = |findings: &mut Vec<Finding>| {
        let mut names: Vec<String> = vec!["root".into()];
        names.extend(PROBE_CHECKS.iter().map(|s| s.to_string()));
        names.extend(binaries.iter().map(|b| b.name.clone()));
        for n in names {
            findings.push(finding(&n, Status::Skipped, "", ""));
        }
    };
    let remote = match SshRemote::connect(&node.name, &node.host, ssh) {
        Ok(r) => r,
        Err(e) => {
            findings.push(finding(
                "ssh",
                Status::Fail,
                e.to_string(),
                "check the address, that sshd runs, and the key (--ssh-key, --username, --known-hosts); for the sandbox: shakedown sandbox up",
            ));
            skipped(&mut findings);
            return NodeReport {
                node: node.name.clone(),
                host: node.host.clone(),
                findings,
            };
        }
    };
    findings.push(finding(
        "ssh",
        Status::Ok,
        format!("{}:{}", node.host, ssh.port),
        "",
    ));
    let uid = remote.exec_ok(&Cmd::new("id").arg("-u"));
    match uid {
        Err(e) => {
            findings.push(finding(
                "root",
                Status::Fail,
                e.to_string(),
                "check the SSH user's shell",
            ));
        }
        Ok(uid) => {
            let sudo_ok = uid.trim() != "0"
                && remote
                    .exec(&Cmd::new("sudo").args(["-n", "true"]))
                    .is_ok_and(|o| o.success());
            findings.push(interpret_root(&uid, sudo_ok));
        }
    }
    let mut args = vec![chain.to_string()];
    args.extend(
        binaries
            .iter()
            .map(|b| format!("{}={}", b.name, b.paths.join(":"))),
    );
    findings.extend(package_findings(&remote, packages, sandbox));
    match remote.exec(&Cmd::script(PROBE_SCRIPT, args).sudo(true)) {
        Ok(out) => findings.extend(interpret(&out.stdout, binaries)),
        Err(e) => {
            findings.push(finding(
                "probe",
                Status::Fail,
                e.to_string(),
                "the probe script could not run over SSH",
            ));
        }
    }
    NodeReport {
        node: node.name.clone(),
        host: node.host.clone(),
        findings,
    }
}

/// Check every node in parallel.
pub fn check_all(nodes: &[Node], ssh: &SshConfig, db: &Arc<dyn Db>, sandbox: bool) -> DoctorReport {
    let binaries = db.required_binaries();
    let packages = db.packages();
    let chain = crate::nemesis::PartitionConfig::default().chain;
    // Every node at once: each check starts by connecting, and an unreachable node costs its
    // connect timeout, once for all of them rather than once per wave.
    use crate::control::fanout;
    let reports: Vec<NodeReport> = fanout::all(nodes, |n| {
        check_node(n, ssh, &chain, &binaries, &packages, sandbox)
    })
    .into_iter()
    .zip(nodes)
    .map(|(r, n)| {
        r.unwrap_or_else(|_| NodeReport {
            node: n.name.clone(),
            host: n.host.clone(),
            findings: vec![finding("ssh", Status::Fail, "check thread panicked", "")],
        })
    })
    .collect();
    let ok = reports
        .iter()
        .all(|r| r.findings.iter().all(|f| f.status != Status::Fail));
    DoctorReport { nodes: reports, ok }
}

/// The table: one row per check, one column per node, then every non-ok finding with its fix.
pub fn render_table(report: &DoctorReport) -> String {
    let mut checks: Vec<String> = Vec::new();
    for r in &report.nodes {
        for f in &r.findings {
            if !checks.contains(&f.check) {
                checks.push(f.check.clone());
            }
        }
    }
    let width = checks.iter().map(|c| c.len()).max().unwrap_or(5).max(5);
    let col = |s: &str| format!(" {s:<6}");
    let mut out = format!("{:<width$}", "check");
    for r in &report.nodes {
        out.push_str(&col(&r.node));
    }
    out.push('\n');
    for c in &checks {
        out.push_str(&format!("{c:<width$}"));
        for r in &report.nodes {
            let s = r
                .findings
                .iter()
                .find(|f| &f.check == c)
                .map_or("-", |f| f.status.label());
            out.push_str(&col(s));
        }
        out.push('\n');
    }
    // One problem said once, naming every node it was found on.
    let mut grouped: Vec<(Vec<&str>, &Finding)> = Vec::new();
    for r in &report.nodes {
        for f in r
            .findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
        {
            let same = |g: &&mut (Vec<&str>, &Finding)| {
                g.1.check == f.check
                    && g.1.status == f.status
                    && g.1.detail == f.detail
                    && g.1.fix == f.fix
            };
            match grouped.iter_mut().find(same) {
                Some(g) => g.0.push(&r.node),
                None => grouped.push((vec![&r.node], f)),
            }
        }
    }
    let problems: Vec<String> = grouped
        .iter()
        .map(|(nodes, f)| {
            format!(
                "{} {} {}: {}\n    fix: {}",
                nodes.join(","),
                f.check,
                f.status.label(),
                f.detail,
                f.fix
            )
        })
        .collect();
    if !problems.is_empty() {
        out.push('\n');
        out.push_str(&problems.join("\n"));
        out.push('\n');
    }
    out.push_str(if report.ok {
        "\nall required checks passed\n"
    } else {
        "\nsome required checks FAILED\n"
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn etcd_bins() -> Vec<Binary> {
        ["etcd", "etcdctl"]
            .iter()
            .map(|n| Binary {
                name: n.to_string(),
                paths: vec![format!("/tmp/x/bin/{n}")],
                fix: "apt-get install etcd-server etcd-client".into(),
            })
            .collect()
    }

    #[test]
    fn a_healthy_probe_is_all_ok() {
        let probe = "iptables\tok\tiptables v1.8.9 (nf_tables)\nchain\tabsent\t\ntc\tok\t/usr/sbin/tc\nnetem\tok\t\nnfqueue\tok\t\nfuse\tok\t\nclock\tcap\tCAP_SYS_TIME\nntp\tnone\t\nbin:etcd\tok\t/usr/bin/etcd\nbin:etcdctl\tok\t/usr/bin/etcdctl\n";
        let f = interpret(probe, &etcd_bins());
        assert_eq!(f.len(), 10);
        assert!(
            f.iter().all(|f| f.status == Status::Ok && f.fix.is_empty()),
            "{f:?}"
        );
    }

    #[test]
    fn missing_netem_and_clock_warn_missing_tools_fail() {
        let probe = "iptables\tmissing\t\nchain\tunknown\t\ntc\tok\t/usr/sbin/tc\nnetem\terror\tError: Specified qdisc kind is unknown.\nnfqueue\tmissing\t\nfuse\tmissing\t\nclock\terror\tno CAP_SYS_TIME\nntp\trunning\t chronyd\nbin:etcd\tmissing\t\n";
        let f = interpret(probe, &etcd_bins());
        let st = |c: &str| f.iter().find(|x| x.check == c).unwrap().clone();
        assert_eq!(st("iptables").status, Status::Fail);
        assert!(st("iptables").fix.contains("apt-get install iptables"));
        assert_eq!(st("chain").status, Status::Skipped);
        assert_eq!(st("netem").status, Status::Warn);
        assert!(
            st("netem")
                .detail
                .contains("netem not available in this kernel")
        );
        assert!(st("netem").fix.contains("NFQUEUE delayer"));
        assert_eq!(st("nfqueue").status, Status::Warn);
        assert!(st("nfqueue").fix.contains("backend = \"netem\""));
        assert_eq!(st("fuse").status, Status::Warn);
        assert!(
            st("fuse")
                .detail
                .contains("power-loss and disk faults will fail")
        );
        assert_eq!(st("clock").status, Status::Warn);
        assert_eq!(st("ntp").status, Status::Warn);
        assert!(st("ntp").detail.contains("chronyd"));
        assert_eq!(st("etcd").status, Status::Fail);
        assert!(st("etcd").fix.contains("etcd-server"));
        // etcdctl's line is absent: a failure, not silently ok.
        assert_eq!(st("etcdctl").status, Status::Fail);
    }

    #[test]
    fn leftover_rules_warn_and_root_needs_uid_0_or_sudo() {
        let f = interpret("chain\tpresent\t3\n", &[]);
        let chain = f.iter().find(|x| x.check == "chain").unwrap();
        assert_eq!(chain.status, Status::Warn);
        assert!(chain.fix.contains("shakedown heal"));
        assert_eq!(interpret_root("0\n", false).status, Status::Ok);
        assert_eq!(interpret_root("1000", true).status, Status::Ok);
        assert_eq!(interpret_root("1000", false).status, Status::Fail);
    }

    #[test]
    fn table_names_nodes_checks_and_fixes() {
        let report = DoctorReport {
            nodes: vec![
                NodeReport {
                    node: "n1".into(),
                    host: "10.0.0.1".into(),
                    findings: vec![finding("ssh", Status::Ok, "", "")],
                },
                NodeReport {
                    node: "n2".into(),
                    host: "10.0.0.2".into(),
                    findings: vec![finding("ssh", Status::Fail, "refused", "start sshd")],
                },
            ],
            ok: false,
        };
        let t = render_table(&report);
        assert!(t.lines().next().unwrap().contains("n1") && t.contains("n2"));
        assert!(t.contains("ssh   ok     FAIL"), "{t}");
        assert!(
            t.contains("n2 ssh FAIL: refused\n    fix: start sshd"),
            "{t}"
        );
        assert!(t.contains("FAILED"));
    }
}
