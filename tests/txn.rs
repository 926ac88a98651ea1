//! End-to-end runs of `shakedown run --db postgres --workload txn` against a real sandbox
//! cluster running real PostgreSQL 15: list-append transactions at REPEATABLE READ (snapshot
//! isolation) show write skew, a G2-item cycle explained on the run page, and exit 1; at
//! SERIALIZABLE nothing is found and the run exits 0. Needs root (when not root each test prints
//! why it did nothing). Each test brings its own sandbox (`sdtx`, 10.85.0.0/24) down at the end,
//! also on failure; run under the machine-wide sandbox lock. Found anomalies are printed
//! (`cargo test --release --test txn -- --nocapture`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = ["--sandbox-name", "sdtx", "--sandbox-subnet", "10.85.0.0/24"];

fn run_txn(isolation: &str, seed: &str, reports: &Path) -> (i32, PathBuf, Value) {
    cli::run_results(
        &SANDBOX,
        &[
            "--db",
            "postgres",
            "--workload",
            "txn",
            "--isolation",
            isolation,
            "--nemesis",
            "none",
            "--concurrency",
            "10",
            "--time-limit",
            "15",
            "--seed",
            seed,
        ],
        reports,
    )
}

fn txn_details(results: &Value) -> &Value {
    let c = results["checkers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["checker"] == "txn"))
        .unwrap_or_else(|| panic!("no txn checker in {results}"));
    &c["details"]
}

#[test]
fn repeatable_read_shows_write_skew_and_serializable_is_clean() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_txn("repeatable-read", "14", tmp.path());
    let d = txn_details(&results);
    eprintln!(
        "repeatable-read: committed {} failed {} info {}; anomalies {}; not {}",
        d["committed"], d["failed"], d["indeterminate"], d["anomaly_counts"], d["not"]
    );
    assert_eq!(code, 1, "expected invalid; {results}");
    assert!(
        d["anomaly_counts"]["G2-item"].as_u64().unwrap_or(0) >= 1,
        "{d}"
    );
    assert!(
        d["not"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "repeatable-read"),
        "{d}"
    );
    // The page explains a G2-item cycle in words and draws it.
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(page.contains("<h4>G2-item</h4>"), "no G2-item on the page");
    assert!(
        page.contains("(rw)") && page.contains("<svg"),
        "no explained cycle"
    );

    let (code, _, results) = run_txn("serializable", "14", tmp.path());
    let d = txn_details(&results);
    eprintln!(
        "serializable: committed {} failed {} info {}; anomalies {}",
        d["committed"], d["failed"], d["indeterminate"], d["anomaly_counts"]
    );
    assert_eq!(code, 0, "expected valid; {results}");
    assert!(d["committed"].as_u64().unwrap() > 100, "{d}");
    assert!(
        d["failed"].as_u64().unwrap() > 0,
        "serialization failures are expected: {d}"
    );
}
