//! End-to-end runs of `shakedown run --db galera --workload txn` against a real 3-node MariaDB
//! Galera cluster in a sandbox (`sdgal`, 10.103.0.0/24), each judged by the model the
//! configuration claims: the cluster starts (bootstrap, rsync joins, every node Synced), a
//! single writer node at serializable is valid, repeatable read with every node taking writes
//! shows the anomalies repeatable read forbids, and a power loss of every node loses
//! acknowledged commits with `innodb_flush_log_at_trx_commit=2` and none with 1. Needs root (when not root each test
//! prints why it did nothing). The sandbox is brought down at the end, also on failure.
//! Findings are printed (`cargo test --release --test galera -- --nocapture`).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 6] = [
    "--sandbox-name",
    "sdgal",
    "--sandbox-subnet",
    "10.103.0.0/24",
    "--sandbox-nodes",
    "3",
];

fn run_galera(extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let mut args = vec![
        "--db",
        "galera",
        "--workload",
        "txn",
        "--concurrency",
        "10",
        "--time-limit",
        "15",
    ];
    args.extend(extra);
    cli::run_results(&SANDBOX, &args, reports)
}

fn txn_details(results: &Value) -> &Value {
    let c = results["checkers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["checker"] == "txn"))
        .unwrap_or_else(|| panic!("no txn checker in {results}"));
    &c["details"]
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// How many transactions failed, per reason (the first word of a `fail` error).
fn fail_reasons(run_dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let op: Value = serde_json::from_str(line).unwrap();
        if op["type"] == "fail" {
            let reason = op["error"].as_str().unwrap_or("").split(':').next();
            *counts.entry(reason.unwrap_or("").to_string()).or_insert(0) += 1;
        }
    }
    counts
}

fn say(what: &str, run_dir: &Path, results: &Value) {
    let d = txn_details(results);
    eprintln!(
        "{what}: {} committed, {} failed ({:?}), {} info; anomalies {}; not {}; {}",
        d["committed"],
        d["failed"],
        fail_reasons(run_dir),
        d["indeterminate"],
        d["anomaly_counts"],
        d["not"],
        run_dir.display()
    );
}

/// The cluster starts on all three nodes (n1 bootstraps, n2 and n3 join by rsync state
/// transfer), every node's error log is collected, and one writer node at serializable is a
/// clean control: valid as serializable, with committed transactions.
#[test]
fn galera_starts_and_a_single_writer_at_serializable_is_valid() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_galera(
        &[
            "--isolation",
            "serializable",
            "--write-to",
            "primary",
            "--nemesis",
            "none",
            "--seed",
            "1",
        ],
        tmp.path(),
    );
    say("serializable, writes to n1", &run_dir, &results);
    let d = txn_details(&results);
    assert_eq!(code, 0, "expected valid as serializable; {results}");
    assert_eq!(names(&d["consistency-models"]), vec!["serializable"]);
    assert!(d["committed"].as_u64().unwrap() > 100, "{d}");
    for n in ["n1", "n2", "n3"] {
        let log = std::fs::read_to_string(run_dir.join("logs").join(n).join("error.log"))
            .unwrap_or_else(|e| panic!("{n}'s error log was not collected: {e}"));
        assert!(log.contains("Synced"), "{n} never said Synced");
    }
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    assert!(
        test["db"]["version"]
            .as_str()
            .is_some_and(|v| v.contains("MariaDB")),
        "{}",
        test["db"]
    );
}

/// The headline of issue 31: a healthy cluster, every node taking writes, repeatable read
/// (MariaDB's default). What it shows on this machine (seeds 1–3): G-single-item and G2-item
/// cycles in every run, which repeatable read (Adya's PL-2.99) forbids; certification
/// failures counted apart from deadlocks.
#[test]
fn repeatable_read_with_writes_to_every_node_shows_anomalies_it_forbids() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_galera(&["--nemesis", "none", "--seed", "1"], tmp.path());
    say("repeatable read, writes to every node", &run_dir, &results);
    let d = txn_details(&results);
    assert_eq!(code, 1, "expected invalid as repeatable read; {results}");
    assert_eq!(names(&d["consistency-models"]), vec!["repeatable-read"]);
    assert!(
        d["claimed-by"]
            .as_str()
            .unwrap()
            .contains("repeatable read"),
        "{d}"
    );
    assert!(
        names(&d["not"]).contains(&"repeatable-read".to_string()),
        "{d}"
    );
    let reasons = fail_reasons(&run_dir);
    assert!(
        reasons.get("certification-failure").copied().unwrap_or(0) > 0,
        "writes to every node must meet certification conflicts: {reasons:?}"
    );
}

/// Acknowledged appends missing from the first read of their key after the cluster was powered
/// on again: (acknowledged before the first power loss and read again afterwards, lost).
fn lost_appends(run_dir: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let ops: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let nemesis = |f: &str| {
        ops.iter()
            .find(|o| o["process"] == "nemesis" && o["f"] == f && o["value"].is_object())
            .and_then(|o| o["time"].as_u64())
    };
    let (Some(loss), Some(on)) = (nemesis("power-loss"), nemesis("power-on")) else {
        panic!("no power loss and power-on in {}", run_dir.display());
    };
    let mut invoked = std::collections::HashMap::new();
    let mut appends = Vec::new();
    // Per key, the first ok read invoked after the power-on.
    let mut first_read: BTreeMap<String, (u64, Vec<Value>)> = BTreeMap::new();
    for o in &ops {
        if o["process"] == "nemesis" {
            continue;
        }
        let p = o["process"].to_string();
        if o["type"] == "invoke" {
            invoked.insert(p, o["time"].as_u64().unwrap());
            continue;
        }
        if o["type"] != "ok" {
            continue;
        }
        let began = invoked[&p];
        for m in o["value"].as_array().unwrap() {
            let key = m[1].to_string();
            match m[0].as_str() {
                Some("append") if o["time"].as_u64().unwrap() < loss => {
                    appends.push((key, m[2].clone()))
                }
                Some("r") if began > on => {
                    let list = m[2].as_array().cloned().unwrap_or_default();
                    let e = first_read.entry(key).or_insert((began, list.clone()));
                    if began < e.0 {
                        *e = (began, list);
                    }
                }
                _ => {}
            }
        }
    }
    let read_again: Vec<_> = appends
        .iter()
        .filter_map(|(k, e)| first_read.get(k).map(|(_, list)| list.contains(e)))
        .collect();
    let lost = read_again.iter().filter(|&&seen| !seen).count();
    (read_again.len(), lost)
}

/// Issue 31's crash finding, with the `power-loss` fault (every node killed at once and every
/// write it had not fsynced dropped, 10 s into the run; powered on 10 s later) and keys that
/// are never retired (`workloads/txn-crash.toml`), so the keys written before the loss are read
/// after it. With `innodb_flush_log_at_trx_commit=2` (write at commit, fsync once a second)
/// acknowledged appends are lost (this test, seed 1: 40 of the 2352 acknowledged before the
/// loss and read again after it) and reads disagree on the lists' order (incompatible-order:
/// not even read committed). With 1 (fsync at every commit), none (0 of 2342).
#[test]
fn power_loss_of_every_node_loses_commits_unless_each_commit_is_flushed() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let nemesis = tmp.path().join("power-loss.toml");
    std::fs::write(
        &nemesis,
        "interval_s = 10.0\n[[faults]]\nkind = \"power-loss\"\ntargets = \"all\"\ntorn = false\n",
    )
    .unwrap();
    let workload = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/txn-crash.toml");
    let run = |flush: &str| {
        let mut args = vec![
            "--db",
            "galera",
            "--workload",
            workload.to_str().unwrap(),
            "--concurrency",
            "10",
            "--time-limit",
            "26",
            "--nemesis",
            nemesis.to_str().unwrap(),
            "--seed",
            "1",
            "--innodb-flush-log-at-trx-commit",
        ];
        args.push(flush);
        cli::run_results(&SANDBOX, &args, tmp.path())
    };
    // Whether a loss finds commits acknowledged but not yet fsynced on every node depends on
    // where the loss falls against the nodes' once-a-second flushes and on what the cluster
    // was doing then: one run (2026-12-05, most of its 3,000 failures connection refusals while
    // nodes rejoined) lost none of 2,380. So a run that loses nothing is tried once more (same
    // seed, other timing); a layer that kept the unsynced writes fails both.
    let mut tries = 0;
    let (code, results, read_again, lost) = loop {
        tries += 1;
        let (code, run_dir, results) = run("2");
        say("power loss, flush 2", &run_dir, &results);
        let (read_again, lost) = lost_appends(&run_dir);
        eprintln!("flush 2 (try {tries}): {lost} of {read_again} acknowledged appends lost");
        if lost > 0 || tries == 2 {
            break (code, results, read_again, lost);
        }
    };
    let d = txn_details(&results);
    assert_eq!(code, 1, "{results}");
    assert!(read_again > 100, "too few appends read after the power-on");
    assert!(lost > 0, "expected lost commits with flush 2");
    assert!(
        d["anomaly_counts"]["incompatible-order"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{d}"
    );
    let (_, run_dir, results) = run("1");
    say("power loss, flush 1", &run_dir, &results);
    let (read_again, lost) = lost_appends(&run_dir);
    eprintln!("flush 1: {lost} of {read_again} acknowledged appends lost");
    let d = txn_details(&results);
    assert!(read_again > 100, "too few appends read after the power-on");
    assert_eq!(lost, 0, "no commit may be lost with flush 1");
    assert!(d["anomaly_counts"]["incompatible-order"].is_null(), "{d}");
}
