//! End-to-end runs of `shakedown run --db mariadb` (one primary, two asynchronous GTID
//! replicas) and of the Galera set workload, in a 3-node sandbox (`sdmdb`, 10.104.0.0/24): the
//! replicated cluster starts (every replica's IO and SQL threads running) and register reads
//! from the primary are a clean control (linearizable and session-valid); register reads from
//! the replicas are stale (the session checker counts the stale reads and read-your-writes
//! breaks, the linearizability checker refuses); Galera's set workload, adds and reads on every
//! node, loses nothing in a healthy cluster. Needs root (when not root each test prints why it
//! did nothing). The sandbox is brought down at the end, also on failure. Findings are printed
//! (`cargo test --release --test mariadb -- --nocapture`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, guarantee, root};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 6] = [
    "--sandbox-name",
    "sdmdb",
    "--sandbox-subnet",
    "10.104.0.0/24",
    "--sandbox-nodes",
    "3",
];

fn run(db: &str, extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let mut args = vec!["--db", db, "--concurrency", "6", "--time-limit", "15"];
    args.extend(extra);
    cli::run_results(&SANDBOX, &args, reports)
}

fn test_json(run_dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap()
}

/// The replicated cluster starts: n1 serves, n2 and n3 replicate from it by GTID (their error
/// logs say so and were collected), the run records `--db mariadb` and MariaDB's version, and
/// register reads from the primary are valid under both checkers.
#[test]
fn mariadb_starts_and_register_reads_from_the_primary_are_valid() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run(
        "mariadb",
        &[
            "--workload",
            "register",
            "--read-from",
            "primary",
            "--nemesis",
            "none",
            "--seed",
            "1",
        ],
        tmp.path(),
    );
    let session = checker(&results, "session");
    eprintln!(
        "mariadb register, reads from the primary: exit {code}; linearizable {}; session {}; run dir {}",
        checker(&results, "linearizable")["summary"],
        session["summary"],
        run_dir.display()
    );
    assert_eq!(code, 0, "expected valid; {results}");
    assert_eq!(checker(&results, "linearizable")["verdict"], "valid");
    assert_eq!(session["verdict"], "valid");
    assert_eq!(session["details"]["stale"]["stale_reads"], 0, "{session}");
    let test = test_json(&run_dir);
    assert_eq!(test["db"]["name"], "mariadb");
    assert_eq!(test["db"]["config"]["primary_node"], "n1");
    assert!(
        test["db"]["version"]
            .as_str()
            .is_some_and(|v| v.contains("MariaDB")),
        "{}",
        test["db"]
    );
    for n in ["n2", "n3"] {
        let log = std::fs::read_to_string(run_dir.join("logs").join(n).join("error.log"))
            .unwrap_or_else(|e| panic!("{n}'s error log was not collected: {e}"));
        assert!(
            log.contains("Slave I/O thread: connected to master 'repl@10.104.0.1:3306'"),
            "{n} never replicated from n1"
        );
    }
}

/// Reads from the asynchronous replicas, no faults, unthrottled: stale reads are counted and
/// the histories are not linearizable. Writes all go to the primary, so its version order never
/// goes back (monotonic writes hold). Whether a thread also reads behind its *own* write
/// (read-your-writes) depends on a lag of about a millisecond meeting that thread's next read:
/// seen in some seeds and not others, so it is reported, not required.
#[test]
fn register_reads_from_async_replicas_are_stale() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run(
        "mariadb",
        &[
            "--workload",
            "register",
            "--read-from",
            "replica",
            "--nemesis",
            "none",
            "--rate",
            "0",
            "--seed",
            "1",
            "--check-time-limit",
            "10",
        ],
        tmp.path(),
    );
    let session = checker(&results, "session");
    let stale = &session["details"]["stale"];
    eprintln!(
        "mariadb register, reads from replicas: exit {code}; session {}; stale {}; linearizable {}; run dir {}",
        session["summary"],
        stale,
        checker(&results, "linearizable")["summary"],
        run_dir.display()
    );
    assert_eq!(code, 1, "expected invalid; {results}");
    assert!(
        guarantee(session, "read-your-writes")["checks"]
            .as_u64()
            .unwrap()
            > 0,
        "{session}"
    );
    assert_eq!(guarantee(session, "monotonic-writes")["violations"], 0);
    assert!(stale["stale_reads"].as_u64().unwrap() > 0, "{stale}");
    assert_eq!(checker(&results, "linearizable")["verdict"], "invalid");
    assert_eq!(test_json(&run_dir)["read_from"], "replica");
}

/// Galera's set workload in a healthy cluster, adds and reads on every thread's own node:
/// every acknowledged add is read back, nothing unexpected appears.
#[test]
fn galera_set_workload_without_faults_loses_nothing() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run(
        "galera",
        &["--workload", "set", "--nemesis", "none", "--seed", "1"],
        tmp.path(),
    );
    let set = checker(&results, "set");
    let d = &set["details"];
    eprintln!(
        "galera set, no faults: exit {code}; {}; run dir {}",
        set["summary"],
        run_dir.display()
    );
    assert_eq!(code, 0, "expected valid; {results}");
    assert!(d["acknowledged"].as_u64().unwrap() > 100, "{d}");
    assert_eq!(d["lost"], 0, "{d}");
    assert_eq!(d["unexpected"], 0, "{d}");
    assert_eq!(test_json(&run_dir)["db"]["name"], "galera");
}
