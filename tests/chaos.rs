//! End-to-end `shakedown chaos` against a real sandbox (`sdcs`, 10.71.0.0/24) running etcd that
//! the test starts itself through the library (chaos never installs or starts a system): a
//! partition experiment with an etcd probe (page, results, exit code per SLO; then `pause`
//! through `--db etcd`, never a restart), the abort rail (stops, heals, journal closed, exit 2),
//! a dry run that changes nothing, and the refusals. Sandbox tests need root and take a lock so
//! one cluster runs at a time; run them under `flock /tmp/shakedown-sandbox.lock`. The refusal
//! test needs neither.

use serde_json::Value;
use shakedown::control::{Cmd, Remote, SshConfig};
use shakedown::node::Node;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const NAME: &str = "sdcs";
const SANDBOX: [&str; 6] = [
    "--sandbox-name",
    "sdcs",
    "--sandbox-subnet",
    "10.71.0.0/24",
    "--sandbox-nodes",
    "5",
];

/// A sandbox with etcd running on every node, and the flags that address it explicitly.
struct Cluster {
    nodes: Vec<Node>,
    remotes: Vec<Arc<dyn Remote>>,
    /// `--nodes … --ssh-key … --known-hosts …`.
    flags: Vec<String>,
}

impl Cluster {
    fn up() -> Cluster {
        let mut args = vec!["sandbox", "up"];
        args.extend(SANDBOX);
        let out = shakedown(&args);
        assert!(
            out.status.success(),
            "sandbox up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let state = shakedown::sandbox::SandboxConfig {
            name: NAME.into(),
            ..Default::default()
        }
        .state_dir();
        let info = shakedown::sandbox::load(&state).expect("sandbox state");
        let nodes: Vec<Node> = info.run_nodes();
        let mut ssh = SshConfig::default();
        info.fill_ssh(&mut ssh);
        let pairs: Vec<(String, String)> = nodes
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect();
        let remotes = shakedown::control::connect_all(&pairs, &ssh).expect("connect");
        // etcd as the system under test, started the way runs start it.
        let system = shakedown::systems::SystemConfig::default().open();
        shakedown::sandbox::ensure_packages(&system.packages()).expect("etcd packages");
        std::thread::scope(|s| {
            for (r, n) in remotes.iter().zip(&nodes) {
                let (system, nodes) = (&system, &nodes);
                s.spawn(move || {
                    system.install(r.as_ref()).expect("etcd install");
                    system.setup(r.as_ref(), n, nodes).expect("etcd setup");
                });
            }
        });
        for (r, n) in remotes.iter().zip(&nodes) {
            system
                .await_ready(r.as_ref(), n, &nodes)
                .expect("etcd ready");
        }
        let list: Vec<String> = nodes
            .iter()
            .map(|n| format!("{}={}", n.name, n.host))
            .collect();
        let flags = vec![
            "--nodes".to_string(),
            list.join(","),
            "--ssh-key".into(),
            info.private_key.display().to_string(),
            "--known-hosts".into(),
            info.known_hosts.display().to_string(),
        ];
        Cluster {
            nodes,
            remotes,
            flags,
        }
    }

    /// `shakedown chaos <cluster flags> <extra> --reports DIR`: (exit code, stdout, stderr).
    fn chaos(&self, extra: &[&str], reports: &Path) -> (i32, String, String) {
        let mut args: Vec<&str> = vec!["chaos"];
        args.extend(self.flags.iter().map(String::as_str));
        args.extend(extra);
        args.extend(["--reports", reports.to_str().unwrap()]);
        let out = shakedown(&args);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// Rules in the tool's iptables chain (or the chain itself) on any node, one line each.
    fn shakedown_rules(&self) -> Vec<String> {
        let mut left = Vec::new();
        for (r, n) in self.remotes.iter().zip(&self.nodes) {
            let out = r
                .exec_ok(&Cmd::sh(
                    "iptables -w -S 2>/dev/null | grep SHAKEDOWN || true",
                ))
                .expect("iptables -S");
            left.extend(out.lines().map(|l| format!("{}: {l}", n.name)));
        }
        left
    }

    /// etcd processes on the nodes that are stopped (state T).
    fn stopped_etcd(&self) -> Vec<String> {
        let mut stopped = Vec::new();
        for (r, n) in self.remotes.iter().zip(&self.nodes) {
            let out = r
                .exec_ok(&Cmd::sh("ps -o stat=,comm= -C etcd || true"))
                .expect("ps");
            assert!(out.contains("etcd"), "{}: no etcd running: {out:?}", n.name);
            stopped.extend(
                out.lines()
                    .filter(|l| l.trim_start().starts_with('T'))
                    .map(|l| format!("{}: {l}", n.name)),
            );
        }
        stopped
    }
}

/// The one run directory under `reports/chaos/`.
/// Wait (at most 60 s) until etcd on `host` answers `GET /health` with `"health":"true"`.
fn wait_healthy(host: &str) {
    use std::io::{Read, Write};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let healthy = || -> Option<bool> {
        let addr = format!("{host}:2379").parse().ok()?;
        let mut s =
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(1)).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .ok()?;
        write!(s, "GET /health HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        Some(body.starts_with("HTTP/1.1 200") || body.starts_with("HTTP/1.0 200"))
    };
    while std::time::Instant::now() < deadline {
        if healthy() == Some(true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("etcd on {host} did not become healthy within 60 s");
}

fn run_dir(reports: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(reports.join("chaos"))
        .expect("reports/chaos")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("latest") && !p.is_symlink())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_partition_experiment_with_an_etcd_probe_has_a_page_results_and_an_exit_code_per_slo() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let c = Cluster::up();
    let tmp = tempfile::tempdir().unwrap();
    let probe = format!("http://{}:2379/health", c.nodes[0].host);
    let common = [
        "--nemesis",
        "partition",
        "--nemesis-interval",
        "2",
        "--probe-http",
        &probe,
        "--probe-interval",
        "250ms",
        "--abort-after",
        "1000",
        "--settle",
        "1",
        "--seed",
        "5",
        "--quiet",
    ];
    // A lenient SLO holds: exit 0.
    let lenient = tmp.path().join("lenient");
    let mut args = common.to_vec();
    args.extend([
        "--duration",
        "8s",
        "--slo-availability",
        "0.01",
        "--slo-p99-ms",
        "60000",
    ]);
    let (code, stdout, stderr) = c.chaos(&args, &lenient);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let dir = run_dir(&lenient);
    let results = read_json(&dir.join("results.json"));
    assert_eq!(results["valid"], "valid", "{results}");
    assert_eq!(results["kind"], "chaos");
    let probes = &results["chaos"]["probes"];
    assert!(probes["probes"].as_u64().unwrap() >= 20, "{probes}");
    assert!(probes["p99_ms"].as_f64().unwrap() > 0.0, "{probes}");
    assert_eq!(results["checkers"][0]["checker"], "slo");
    assert_eq!(results["checkers"].as_array().unwrap().len(), 1);
    assert!(results["recovery"].is_object(), "{results}");
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert!(
        history.contains("\"f\":\"start-partition\""),
        "no fault in the history"
    );
    assert!(history.contains("\"f\":\"probe\""));
    let journal = std::fs::read_to_string(dir.join("faults.jsonl")).unwrap();
    assert!(journal.contains("\"action\":\"inject\""), "{journal}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(page.contains("Chaos experiment") && page.contains("availability"));
    assert!(page.contains("<svg"), "no inline plot");
    // The judgement heads the page with the verdict, before the plots.
    let (judgement, plots) = (
        page.find("<h3 id=\"chaos\">Chaos experiment</h3>").unwrap(),
        page.find("<h2 id=\"plots\">").unwrap(),
    );
    assert!(page.find("<h2 id=\"verdict\">").unwrap() < judgement && judgement < plots);
    assert!(
        !page.contains("linearizab"),
        "the page claims a linearizability verdict"
    );
    assert!(dir.join("latency-raw.svg").is_file());
    let index = std::fs::read_to_string(lenient.join("index.html")).unwrap();
    assert!(index.contains("chaos/"), "run not in the reports index");
    assert!(c.shakedown_rules().is_empty(), "{:?}", c.shakedown_rules());

    // An SLO no probe can meet is violated: exit 1, the violation named. etcd may still be
    // electing a leader after the last partition's heal (its /health fails meanwhile, and a run
    // with no served probe has no p99 to judge): wait until the probe's target answers.
    wait_healthy(&c.nodes[0].host);
    let strict = tmp.path().join("strict");
    let mut args = common.to_vec();
    args.extend(["--duration", "3s", "--slo-p99-ms", "0.001"]);
    let (code, stdout, stderr) = c.chaos(&args, &strict);
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("SLO violated: p99 latency"), "{stdout}");
    let results = read_json(&run_dir(&strict).join("results.json"));
    assert_eq!(results["valid"], "invalid");
    assert!(c.shakedown_rules().is_empty(), "{:?}", c.shakedown_rules());

    // pause with --db etcd: the etcd processes are stopped and continued, never restarted.
    let paused = tmp.path().join("paused");
    let mut args = common.to_vec();
    args.extend(["--duration", "5s", "--nemesis", "pause", "--db", "etcd"]);
    args.retain(|a| *a != "partition");
    let pos = args.iter().position(|a| *a == "--nemesis").unwrap();
    args.remove(pos);
    let (code, stdout, stderr) = c.chaos(&args, &paused);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let journal = std::fs::read_to_string(run_dir(&paused).join("faults.jsonl")).unwrap();
    assert!(
        journal.contains("\"f\":\"pause\"") && journal.contains("\"f\":\"resume\""),
        "{journal}"
    );
    assert!(
        !journal.contains("\"f\":\"start\""),
        "chaos restarted the system: {journal}"
    );
    assert!(c.stopped_etcd().is_empty(), "{:?}", c.stopped_etcd());
}

#[test]
fn the_abort_rail_stops_injecting_heals_and_exits_2() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let c = Cluster::up();
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    // The probe fails while any partition rule is in place (it looks from the controller into
    // the nodes' network namespaces), so the first fault trips a rail of 3.
    let probe = format!(
        "for i in 1 2 3 4 5; do ip netns exec sd-{NAME}-n$i iptables -w -S SHAKEDOWN 2>/dev/null; \
         done | grep -q DROP && {{ echo partitioned >&2; exit 1; }}; exit 0"
    );
    let (code, stdout, stderr) = c.chaos(
        &[
            "--nemesis",
            "isolate",
            "--nemesis-interval",
            "2",
            "--duration",
            "30s",
            "--probe",
            &probe,
            "--probe-interval",
            "200ms",
            "--abort-after",
            "3",
            "--settle",
            "1",
            "--seed",
            "9",
            "--quiet",
        ],
        &reports,
    );
    assert_eq!(code, 2, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("aborted by the probe"), "{stdout}");
    let dir = run_dir(&reports);
    let completion = read_json(&dir.join("completion.json"));
    assert_eq!(completion["status"], "probe-aborted", "{completion}");
    assert!(
        completion["workload_s"].as_f64().unwrap() < 15.0,
        "{completion}"
    );
    let results = read_json(&dir.join("results.json"));
    assert_eq!(results["valid"], "unknown");
    assert_eq!(results["chaos"]["abort"]["tripped"], true, "{results}");
    assert!(results["chaos"]["abort"]["at_s"].as_f64().is_some());
    // Healed: no rule of the tool on any node, and the journal has an undo for every inject.
    assert!(c.shakedown_rules().is_empty(), "{:?}", c.shakedown_rules());
    let records: Vec<Value> = std::fs::read_to_string(dir.join("faults.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.iter().any(|r| r["action"] == "inject"));
    let open = shakedown::nemesis::outstanding_faults(&records);
    assert!(open.is_empty(), "journal shows faults left: {open:?}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        page.contains("aborted by the probe"),
        "abort not on the page"
    );
    // `shakedown heal` works on a chaos run directory and finds nothing left.
    let mut args = vec!["heal", "--journal"];
    let journal = dir.join("faults.jsonl");
    args.push(journal.to_str().unwrap());
    args.extend(c.flags.iter().map(String::as_str));
    let out = shakedown(&args);
    assert!(
        out.status.success(),
        "heal: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_dry_run_prints_the_plan_and_changes_nothing() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let c = Cluster::up();
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let (code, stdout, stderr) = c.chaos(
        &[
            "--nemesis",
            "isolate,pause,loss",
            "--db",
            "etcd",
            "--nemesis-interval",
            "1",
            "--duration",
            "20s",
            "--probe",
            "true",
            "--seed",
            "3",
            "--dry-run",
        ],
        &reports,
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    for needle in [
        "no SSH connection",
        "iptables -w -N",
        "start-partition",
        "pause",
        "start-loss",
        "cleanup, on every exit path",
    ] {
        assert!(stdout.contains(needle), "plan lacks {needle:?}:\n{stdout}");
    }
    // Every node is named as running something (a command nodes share lists them all).
    let runners: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(who, _)| who))
        .collect();
    for n in &c.nodes {
        assert!(
            runners.iter().any(|w| w.split(", ").any(|x| x == n.name)),
            "no command for {}",
            n.name
        );
    }
    // Nothing happened: no rules, no stopped process, no run directory nor journal.
    assert!(c.shakedown_rules().is_empty(), "{:?}", c.shakedown_rules());
    assert!(c.stopped_etcd().is_empty(), "{:?}", c.stopped_etcd());
    assert!(!reports.exists(), "the dry run wrote {}", reports.display());
    // The same plan twice: the choices follow the seed.
    let (_, again, _) = c.chaos(
        &[
            "--nemesis",
            "isolate,pause,loss",
            "--db",
            "etcd",
            "--nemesis-interval",
            "1",
            "--duration",
            "20s",
            "--probe",
            "true",
            "--seed",
            "3",
            "--dry-run",
        ],
        &reports,
    );
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("date -s"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&stdout), strip(&again));
}

#[test]
fn refusals_exit_3_before_touching_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let r = reports.to_str().unwrap();
    // No nodes: never the sandbox by itself.
    let out = shakedown(&[
        "chaos",
        "--nemesis",
        "isolate",
        "--probe",
        "true",
        "--reports",
        r,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("--nodes") && err.contains("never picks the sandbox"),
        "{err}"
    );
    // A majority target without --allow-majority: named with its target.
    let dir = tmp.path().join("nemeses");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("big.toml");
    std::fs::write(
        &spec,
        "interval_s = 1.0\n[[faults]]\nkind = \"clock\"\ntargets = \"majority\"\n",
    )
    .unwrap();
    let out = shakedown(&[
        "chaos",
        "--nodes",
        "10.71.0.1,10.71.0.2,10.71.0.3",
        "--nemesis",
        spec.to_str().unwrap(),
        "--probe",
        "true",
        "--reports",
        r,
        "--dry-run",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("clock bump (targets majority)")
            && err.contains("2 of 3 nodes")
            && err.contains("--allow-majority"),
        "{err}"
    );
    assert!(!reports.exists());
}
