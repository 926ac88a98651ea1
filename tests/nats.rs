//! End-to-end runs of `shakedown run --db nats --workload log` against a real sandbox cluster
//! running Debian's `nats-server` (a 5-node JetStream cluster, streams with 3 replicas, installed
//! by the project's provision path): a run without faults is valid, every acknowledged send is
//! in the final reads, each of the 3 logs was read whole from all 5 nodes, and the run page has
//! its Log section; the PyPI server (`--nats-server pypi`) with `--nats-sync-interval always`
//! runs and its version is recorded. A run with an unsupported workload, an unknown server
//! choice, or a sync interval Debian's 2.9 server would reject is refused before any node is
//! touched.
//!
//! Needs root (when not root each test prints why it did nothing). Each test brings its own
//! sandbox (`sdnats`, 10.101.0.0/24) down at the end, also on failure. Run under the machine-wide
//! lock: `flock /tmp/shakedown-sandbox.lock cargo test --release --test nats -- --nocapture`.

use serde_json::Value;
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, root};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdnats",
    "--sandbox-subnet",
    "10.101.0.0/24",
];

#[test]
fn a_log_run_without_faults_is_valid_and_reads_every_log_from_every_node() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(&SANDBOX);
    let reports = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            "nats",
            "--workload",
            "log",
            "--nemesis",
            "none",
            "--time-limit",
            "15",
            // Sends carry message ids and every acknowledged one is published again 2 s later:
            // the stream must call each resend a duplicate (none stored twice).
            "--nats-duplicate-window",
            "4s",
        ],
        reports.path(),
    );
    let log = checker(&results, "log");
    assert_eq!(code, 0, "{log}");
    assert_eq!(log["verdict"], "valid", "{log}");
    let d = &log["details"];
    let acked = d["acknowledged"].as_u64().unwrap();
    assert!(acked > 500, "only {acked} acknowledged sends: {d}");
    assert_eq!(d["counts"]["lost"], 0, "{d}");
    assert_eq!(d["counts"]["duplicated"], 0, "resends deduplicated: {d}");
    let keys = d["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "{d}");
    for k in keys {
        assert_eq!(
            k["final_read_nodes"].as_array().unwrap().len(),
            5,
            "every node reads every log: {k}"
        );
        assert!(k["polls"].as_u64().unwrap() > 0, "{k}");
    }
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(page.contains("<h3 id=\"anomalies-log\">Log</h3>"));
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    let version = test["db"]["version"].as_str().unwrap_or_default();
    assert!(
        version.starts_with("nats-server: v"),
        "the server version is recorded: {test}"
    );
    assert_eq!(test["db"]["config"]["duplicate_window_ms"], 4000, "{test}");
}

#[test]
fn nats_refuses_other_workloads_and_too_many_replicas_before_touching_nodes() {
    let reports = tempfile::tempdir().unwrap();
    let r = reports.path().to_str().unwrap();
    let mut args = vec!["run", "--db", "nats", "--workload", "set", "--reports", r];
    args.extend(SANDBOX);
    let out = cli::shakedown(&args);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nats cannot serve the set workload"), "{err}");
    let mut args = vec![
        "run",
        "--db",
        "nats",
        "--workload",
        "log",
        "--nats-replicas",
        "5",
        "--sandbox-nodes",
        "3",
        "--reports",
        r,
    ];
    args.extend(SANDBOX);
    let out = cli::shakedown(&args);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 replicas need at least as many nodes"),
        "{err}"
    );
}

/// nats-server 2.9 writes a stream's metadata (`meta.inf`) without fsyncing it: a power loss on
/// every node (the lose-unsynced layer drops what was never synced) leaves it empty, the servers
/// drop the stream at restart ("checksums do not match"), and every message acknowledged before
/// is lost; later sends are refused ("no stream found"). Reproduced on every seed tried.
#[test]
fn power_loss_on_every_node_loses_the_streams_of_nats_2_9() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(&SANDBOX);
    let reports = tempfile::tempdir().unwrap();
    let (code, _run_dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            "nats",
            "--workload",
            "log",
            "--nemesis",
            "power-loss",
            "--time-limit",
            "12",
        ],
        reports.path(),
    );
    let log = checker(&results, "log");
    assert_eq!(code, 1, "{log}");
    let d = &log["details"];
    let acked = d["acknowledged"].as_u64().unwrap();
    let lost = d["counts"]["lost"].as_u64().unwrap();
    assert!(acked > 100 && lost == acked, "{lost} of {acked} lost: {d}");
    let w = d["lost"]["witnesses"][0]["witness"].as_str().unwrap();
    assert!(w.contains("before power-loss"), "{w}");
}

/// `--nats-server pypi`: the controller fetches PyPI's nats-server (cached), the sandbox nodes
/// run it with `sync_interval: always` in the jetstream block, and test.json names the version
/// that ran. Under `--nemesis membership`: a server is removed from the JetStream cluster
/// (confirmed by every view), retired, and comes back fresh under a new name (`nK-2`), and the
/// log stays valid.
#[test]
fn the_pypi_server_with_sync_always_runs_valid_under_membership_changes() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(&SANDBOX);
    let reports = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            "nats",
            "--workload",
            "log",
            "--nemesis",
            "membership",
            "--time-limit",
            "24",
            "--nats-server",
            "pypi",
            "--nats-sync-interval",
            "always",
        ],
        reports.path(),
    );
    let log = checker(&results, "log");
    assert_eq!((code, &log["verdict"]), (0, &Value::from("valid")), "{log}");
    assert!(
        log["details"]["acknowledged"].as_u64().unwrap() > 100,
        "{log}"
    );
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    let version = test["db"]["version"].as_str().unwrap_or_default();
    let (major, minor) = version
        .strip_prefix("nats-server: v")
        .and_then(|v| v.split_once('.'))
        .map(|(a, b)| (a.to_string(), b.split('.').next().unwrap_or("").to_string()))
        .unwrap_or_else(|| panic!("no server version in test.json: {test}"));
    assert!(
        major == "2" && minor.parse::<u32>().unwrap() >= 10,
        "a server with sync_interval ran: {version}"
    );
    assert_eq!(test["db"]["config"]["server"], "pypi", "{test}");
    assert_eq!(test["db"]["config"]["sync_interval"], "always", "{test}");
    let rerun = test["rerun"].as_str().unwrap_or_default();
    assert!(
        rerun.contains("--nats-server pypi --nats-sync-interval always"),
        "{rerun}"
    );
    // One removal confirmed and retired, grown back; the node's server came back as a new one.
    let counts = &results["membership"]["changes"];
    let ok = |f: &str| counts[f]["ok"].as_u64().unwrap_or(0);
    assert!(
        ok("shrink-cluster") >= 1 && ok("grow-cluster") >= 1,
        "{counts}"
    );
    let history = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let shrink: Value = history
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|op| op["f"] == "shrink-cluster" && op["value"]["retired"] == true)
        .unwrap_or_else(|| panic!("no confirmed shrink-cluster in the history"));
    let node = shrink["value"]["node"].as_str().unwrap().to_string();
    // Confirmed = the merged view (the one most nodes that list themselves hold) lacks it; a
    // lagging minority (the removed server itself, before it is stopped) may still list it.
    let merged: Vec<&str> = shrink["value"]["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no merged members in {shrink}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!merged.contains(&node.as_str()), "{shrink}");
    let views = shrink["value"]["views"].as_object().unwrap();
    let without = views
        .values()
        .filter(|m| !m.as_array().unwrap().iter().any(|x| x == node.as_str()))
        .count();
    assert!(without > 0 && !merged.is_empty(), "{shrink}");
    let log = std::fs::read_to_string(run_dir.join("logs").join(&node).join("nats.log"))
        .unwrap_or_default();
    let renamed = format!("{node}-2");
    assert!(
        log.contains("our server was removed from the cluster")
            && log
                .lines()
                .any(|l| l.contains("Name:") && l.trim_end().ends_with(&renamed)),
        "{node}'s log does not show its removal and its new life as {renamed}"
    );
}

#[test]
fn nats_refuses_unknown_servers_and_a_sync_interval_debian_2_9_rejects() {
    let reports = tempfile::tempdir().unwrap();
    let r = reports.path().to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--db", "nats", "--workload", "log", "--reports", r];
        args.extend(extra);
        args.extend(SANDBOX);
        let out = cli::shakedown(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, err) = run(&["--nats-server", "apt"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("expected debian, pypi or pypi==VERSION"),
        "{err}"
    );
    let (code, err) = run(&["--nats-sync-interval", "sometimes"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("expected default, always or a duration"),
        "{err}"
    );
    // The sandbox runs this machine's Debian package; 2.9 is refused before any node is touched.
    let debian = shakedown::systems::nats::server::debian_package_version().unwrap_or_default();
    if shakedown::systems::nats::server::parse_version(&debian).is_some_and(|v| v < (2, 10, 0)) {
        let (code, err) = run(&["--nats-sync-interval", "always"]);
        assert_eq!(code, Some(3), "{err}");
        assert!(
            err.contains("has no sync_interval setting") && err.contains("--nats-server pypi"),
            "{err}"
        );
    }
}
