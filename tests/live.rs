//! Live checking against a real sandbox cluster (etcd, serializable reads from isolated members,
//! which are stale): keys are checked as they retire, and what a run reports — with and without
//! `--stop-on-anomaly` — agrees with a post-hoc `shakedown check` of the same run directory:
//! the same verdicts (linearizability, and with `--session` the merged one), every key the run
//! found invalid invalid for `check --all-keys`, every key it found valid valid there too. A run
//! stopped early says why (completion status, `stopped_early`, summary line) and is invalid.
//!
//! Needs root (when not root each test prints why it did nothing). Each test brings its own
//! sandbox (`sdlive`, 10.110.0.0/24) down at the end, also on failure. Run under the machine-wide
//! lock: `flock /tmp/shakedown-sandbox.lock cargo test --release --test live -- --nocapture`
//! (about 30 s here: a 20 s run, then one that stops at its first invalid key).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdlive",
    "--sandbox-subnet",
    "10.110.0.0/24",
];

/// Serializable reads from members cut off by `isolate`: stale, so keys are not linearizable.
const STALE: [&str; 10] = [
    "--read-mode",
    "serializable",
    "--nemesis",
    "isolate",
    "--nemesis-interval",
    "2",
    "--rate",
    "500",
    "--seed",
    "29",
];

/// Each key's verdict in a linearizable checker result.
fn verdicts(lin: &Value) -> BTreeMap<String, String> {
    lin["details"]["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("no parts: {lin}"))
        .iter()
        .map(|p| {
            (
                p["key"].as_str().unwrap_or_default().to_string(),
                p["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn check_json(run_dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["check", run_dir.to_str().unwrap(), "--json"];
    args.extend(extra);
    let out = shakedown(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "check output is not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The run's results agree with `shakedown check` of its directory, key by key where decided.
fn agrees_with_post_hoc_check(run_dir: &Path, results: &Value) {
    let lin = checker(results, "linearizable");
    let post = check_json(run_dir, &[]);
    assert_eq!(lin["verdict"], post["verdict"], "run: {lin}\ncheck: {post}");
    let merged = check_json(run_dir, &["--session"]);
    assert_eq!(results["checked"], merged["valid"], "{merged}");
    let all = verdicts(&check_json(run_dir, &["--all-keys"]));
    for (key, v) in verdicts(lin) {
        if v != "unknown" {
            assert_eq!(
                all.get(&key),
                Some(&v),
                "key {key}: run {v}, check --all-keys"
            );
        }
    }
}

#[test]
fn live_verdicts_match_a_post_hoc_check_and_stop_on_anomaly_ends_the_run_invalid() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(&SANDBOX);
    let reports = tempfile::tempdir().unwrap();

    // A whole run: keys checked live, the final check reusing the invalid ones.
    let mut args = STALE.to_vec();
    args.extend(["--time-limit", "20"]);
    let (code, run_dir, results) = cli::run_results(&SANDBOX, &args, reports.path());
    let live = &results["live"];
    eprintln!("whole run: live {live}, verdict {}", results["valid"]);
    assert!(live["checked"].as_u64().unwrap() > 10, "{live}");
    assert_eq!(results["completion"]["status"], "completed", "{results}");
    assert!(results.get("stopped_early").is_none(), "{results}");
    let lin = checker(&results, "linearizable");
    if live["invalid"].as_u64().unwrap() > 0 {
        assert_eq!((code, &results["valid"]), (1, &Value::from("invalid")));
        let key = live["first_invalid"]["key"].as_str().unwrap();
        assert_eq!(verdicts(lin)[key], "invalid", "{lin}");
    }
    agrees_with_post_hoc_check(&run_dir, &results);
    // Keys valid live all got a final read: those that fitted their live linearization were
    // not searched again, and (above) their verdicts are still the post-hoc check's.
    let valid_live = live["checked"].as_u64().unwrap()
        - live["invalid"].as_u64().unwrap()
        - live["unknown"].as_u64().unwrap();
    let later = live["reused_with_later_ops"].as_u64().unwrap();
    assert!(later <= valid_live, "{live}");
    assert!(valid_live == 0 || later > 0, "{live}");
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("live.json")).unwrap()).unwrap();
    assert_eq!(on_disk["checked"], live["checked"]);
    assert!(on_disk["ops_read"].as_u64().unwrap() > 0, "{on_disk}");
    // The live page (`running`) the run had while it went on is replaced by the full page.
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(!page.contains("(running)") && page.contains("Live checking:"));

    // The same with --stop-on-anomaly: the workload ends at the first invalid key, is healed,
    // and the report says why.
    let mut args = STALE.to_vec();
    args.extend(["--time-limit", "60", "--stop-on-anomaly"]);
    let (code, run_dir, results) = cli::run_results(&SANDBOX, &args, reports.path());
    assert_eq!(code, 1, "{results}");
    assert_eq!(results["valid"], "invalid");
    assert_eq!(results["completion"]["status"], "stopped-on-anomaly");
    let first = results["live"]["first_invalid"]["key"].as_str().unwrap();
    let why = results["stopped_early"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("stopped early: key {first} not linearizable at ")),
        "{why}"
    );
    let ran = results["completion"]["workload_s"].as_f64().unwrap();
    eprintln!("stopped run: {why}; live {}", results["live"]);
    assert!(ran < 60.0, "stopped at {ran} s");
    assert_eq!(
        verdicts(checker(&results, "linearizable"))[first],
        "invalid"
    );
    agrees_with_post_hoc_check(&run_dir, &results);
    assert!(run_dir.join("linearizability.html").is_file());
    let faults: Vec<Value> = std::fs::read_to_string(run_dir.join("faults.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!faults.is_empty(), "isolate ran");
}

#[test]
fn stop_on_anomaly_is_refused_for_workloads_not_checked_live() {
    let out = shakedown(&[
        "run",
        "--nodes",
        "n1=127.0.0.1",
        "--workload",
        "set",
        "--stop-on-anomaly",
        "--reports",
        "/nonexistent",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--stop-on-anomaly") && err.contains("final reads"),
        "{err}"
    );
}
