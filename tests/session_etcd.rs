//! Session guarantees on a real etcd cluster, end to end through the `shakedown` binary: with
//! `--read-from any` every read of a client thread goes to a random member, so one session reads
//! from different members. Serializable reads under isolating partitions then go back in time
//! (monotonic-reads violations, with witnesses, in results.json); linearizable reads never do.
//! Also drives the list-append workload against etcd (append = read + mod_revision txn), and
//! (offline, no root) checks that `shakedown check` picks the list-append model.
//!
//! The cluster tests need root (network namespaces, iptables); when not root each test prints why it did nothing.
//! Tests take a lock so only one cluster runs at a time, and each brings its own sandbox (`sdses`,
//! 10.85.0.0/24) down at the end, also on failure. Each run is at most 40 s of workload.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdses",
    "--sandbox-subnet",
    "10.85.0.0/24",
];

/// Run, returning (exit code, run dir, results.json).
fn run(extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    cli::run_results(&SANDBOX, extra, reports)
}

fn checker<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["checkers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["checker"] == name)
        .unwrap_or_else(|| panic!("no {name} checker in {results}"))
}

/// (checks, violations, witnesses) of one guarantee in the session checker's details.
fn guarantee(session: &Value, name: &str) -> (u64, u64, Vec<Value>) {
    let g = session["details"]["guarantees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["guarantee"] == name)
        .unwrap_or_else(|| panic!("no {name} in {session}"));
    (
        g["checks"].as_u64().unwrap(),
        g["violations"].as_u64().unwrap(),
        g["witnesses"].as_array().unwrap().clone(),
    )
}

/// The common flags of the two monotonic-reads runs: 20 s, 10 threads at 400 ops/s, one member
/// isolated at a time (3 s on, 3 s off), every read to a random member.
fn partitioned(read_mode: &'static str, seed: &'static str) -> Vec<&'static str> {
    vec![
        "--time-limit",
        "20",
        "--rate",
        "400",
        "--seed",
        seed,
        "--nemesis",
        "isolate",
        "--nemesis-interval",
        "3",
        "--read-mode",
        read_mode,
        "--read-from",
        "any",
        "--check-time-limit",
        "20",
    ]
}

#[test]
fn serializable_reads_from_any_member_break_monotonic_reads_linearizable_do_not() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");

    let (code, run_dir, results) = run(&partitioned("serializable", "7"), &reports);
    let session = checker(&results, "session");
    assert_eq!(session["verdict"], "invalid", "{}", session["summary"]);
    assert_eq!(code, 1, "run dir {}", run_dir.display());
    assert_eq!(session["details"]["version_source"], "system");
    let (checks, violations, witnesses) = guarantee(session, "monotonic-reads");
    eprintln!(
        "serializable: monotonic-reads {violations} violations in {checks} checks; {}",
        session["summary"]
    );
    assert!(violations > 0 && checks > 100, "{}", session["summary"]);
    let w = &witnesses[0];
    assert!(
        w["earlier_version"].as_i64().unwrap() > w["later_version"].as_i64().unwrap(),
        "{w}"
    );
    let text = w["witness"].as_str().unwrap();
    assert!(text.starts_with("process "), "{text}");
    assert!(text.contains(" then read "), "{text}");
    // The test page and test.json record where reads went.
    let test: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["read_from"], "any");
    assert!(test["rerun"].as_str().unwrap().contains("--read-from any"));

    let (_, run_dir, results) = run(&partitioned("linearizable", "7"), &reports);
    let session = checker(&results, "session");
    eprintln!("linearizable: {}", session["summary"]);
    assert_eq!(
        session["verdict"],
        "valid",
        "{}; run dir {}",
        session["summary"],
        run_dir.display()
    );
    let (checks, violations, _) = guarantee(session, "monotonic-reads");
    assert!(checks > 100, "{}", session["summary"]);
    assert_eq!(violations, 0);
    assert_eq!(checker(&results, "linearizable")["verdict"], "valid");
}

#[test]
fn list_append_workload_on_etcd() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let (code, run_dir, results) = run(
        &[
            "--workload",
            "list-append",
            "--time-limit",
            "15",
            "--seed",
            "3",
            "--nemesis",
            "isolate",
            "--nemesis-interval",
            "3",
            "--check-time-limit",
            "20",
        ],
        &reports,
    );
    let session = checker(&results, "session");
    let linear = checker(&results, "linearizable");
    assert_eq!(
        code,
        0,
        "session: {}; linearizable: {}; run dir {}",
        session["summary"],
        linear["summary"],
        run_dir.display()
    );
    assert_eq!(session["details"]["version_source"], "list-append");
    assert_eq!(session["details"]["version_conflicts"], 0);
    assert_eq!(linear["details"]["model"], "list-append", "{linear}");
    let history = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let ok_appends = history
        .lines()
        .filter(|l| l.contains(r#""type":"ok""#) && l.contains(r#""f":"append""#))
        .count();
    let list_reads = history
        .lines()
        .filter(|l| l.contains(r#""type":"ok""#) && l.contains(r#""f":"read""#))
        .filter(|l| l.contains(r#""value":["#))
        .count();
    assert!(
        ok_appends > 200 && list_reads > 100,
        "{ok_appends} ok appends, {list_reads} list reads"
    );
    let (checks, _, _) = guarantee(session, "read-your-writes");
    assert!(checks > 50, "{}", session["summary"]);
}

/// Offline, no root: `shakedown check` picks the list-append model for a JSONL history with
/// append ops; a linearizable generated history is valid, one with stale prefix reads is not.
#[test]
fn check_picks_the_list_append_model() {
    use shakedown::checker::session::histgen::{ListAppendGenConfig, generate_list_append_history};
    let tmp = tempfile::tempdir().unwrap();
    for (stale, want_code) in [(0.0, 0), (0.3, 1)] {
        let h = generate_list_append_history(&ListAppendGenConfig {
            keys: 4,
            threads: 4,
            ops: 400,
            info_probability: 0.05,
            stale_read_probability: stale,
            seed: 5,
            ..ListAppendGenConfig::default()
        });
        let p = tmp.path().join(format!("h-{stale}.jsonl"));
        let mut text = String::new();
        for op in &h.ops {
            text.push_str(&serde_json::to_string(op).unwrap());
            text.push('\n');
        }
        std::fs::write(&p, text).unwrap();
        let out = shakedown(&["check", p.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(want_code),
            "stale {stale}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The register model cannot read these ops: never valid.
        let out = shakedown(&["check", p.to_str().unwrap(), "--model", "cas-register"]);
        assert_ne!(out.status.code(), Some(0), "{stdout}");
    }
}

/// Offline, no root: a bad `--version-source` is a usage error, and `shakedown report` honours
/// the version source a run's workload declared in test.json.
#[test]
fn declared_version_source_is_used_and_validated() {
    let out = shakedown(&[
        "run",
        "--version-source",
        "lists",
        "--nodes",
        "n1=127.0.0.1",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--version-source") && stderr.contains("\"lists\""),
        "{stderr}"
    );

    use shakedown::checker::session::histgen::{VersionedGenConfig, generate_versioned_history};
    let h = generate_versioned_history(&VersionedGenConfig {
        ops: 300,
        seed: 9,
        ..VersionedGenConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("reports").join("t").join("r1");
    std::fs::create_dir_all(&run_dir).unwrap();
    let mut text = String::new();
    for op in &h.ops {
        text.push_str(&serde_json::to_string(op).unwrap());
        text.push('\n');
    }
    std::fs::write(run_dir.join("history.jsonl"), text).unwrap();
    let source_of = |run_dir: &Path| {
        let out = shakedown(&["report", run_dir.to_str().unwrap()]);
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
                .unwrap();
        checker(&results, "session")["details"]["version_source"].clone()
    };
    assert_eq!(source_of(&run_dir), "system");
    std::fs::write(
        run_dir.join("test.json"),
        r#"{"workload":{"name":"w","spec":{"kind":"register","version_source":"increasing-values"}}}"#,
    )
    .unwrap();
    assert_eq!(source_of(&run_dir), "increasing-values");
}
