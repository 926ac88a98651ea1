//! ZooKeeper locks through the external protocol (`systems/zookeeper.toml`, kazoo's Lock recipe)
//! against a real 5-node ensemble in the sandbox (`sdzl`, 10.73.0.0/24): under `--nemesis stall`
//! the stalled holder's client process is frozen past its 2 s session timeout, its ephemeral lock
//! node expires, another thread acquires, and the woken holder writes: two holders in
//! results.json (exit 1). With fencing tokens (the lock nodes' sequence numbers) the stale
//! holder's writes are refused and the run is valid (exit 0); without faults the lock is clean.
//!
//! Needs root (CI runs as root); when not root the test prints why it did nothing. Run under
//! the machine-wide lock (`flock /tmp/shakedown-sandbox.lock cargo test --test zk_lock`). One
//! test, three short runs in a row (each run starts its own ensemble); the sandbox is brought
//! down at the end, also on failure.

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, root, run_results};

const SANDBOX: &[&str] = &["--sandbox-name", "sdzl", "--sandbox-subnet", "10.73.0.0/24"];

fn run(workload: &str, nemesis: &str, seed: &str, time_s: &str) -> (i32, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _dir, results) = run_results(
        SANDBOX,
        &[
            "--db",
            "zookeeper",
            "--workload",
            workload,
            "--nemesis",
            nemesis,
            "--time-limit",
            time_s,
            "--seed",
            seed,
        ],
        tmp.path(),
    );
    let summaries: Vec<&str> = results["checkers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["summary"].as_str()).collect())
        .unwrap_or_default();
    eprintln!("zookeeper {workload} {nemesis} seed {seed}: exit {code}: {summaries:?}");
    (code, results)
}

#[test]
fn zookeeper_lock_with_a_frozen_holder_has_two_holders_fencing_refuses_it_and_no_faults_is_clean() {
    if !root() {
        return;
    }
    let _down = SandboxGuard(SANDBOX);

    let (code, results) = run("lock", "stall", "1", "25");
    let me = checker(&results, "mutual-exclusion");
    assert_eq!((code, me["verdict"].as_str()), (1, Some("invalid")), "{me}");
    let a = &me["details"]["anomalies"][0];
    let holders = a["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 2, "{a}");
    assert_ne!(holders[0]["process"], holders[1]["process"], "{a}");
    assert_eq!(holders[0]["lock"], holders[1]["lock"], "{a}");
    // Tokens are the lock nodes' sequence numbers: the later acquire has the greater one.
    let (first, second) = if holders[0]["acquired_s"].as_f64() < holders[1]["acquired_s"].as_f64() {
        (&holders[0], &holders[1])
    } else {
        (&holders[1], &holders[0])
    };
    assert!(
        first["token"].as_i64().unwrap() < second["token"].as_i64().unwrap(),
        "{a}"
    );
    assert!(
        a["faults"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "stall"),
        "the witness names the stall active then: {a}"
    );

    let (code, results) = run("fenced-lock", "stall", "1", "25");
    let fencing = checker(&results, "fencing");
    assert_eq!(
        (code, fencing["verdict"].as_str()),
        (0, Some("valid")),
        "{fencing}"
    );
    let d = &fencing["details"];
    assert!(d["refused_stale"].as_u64().unwrap() >= 1, "{d}");
    assert!(d["accepted"].as_u64().unwrap() >= 10, "{d}");
    assert_eq!(d["stale_accepted"], 0, "{d}");

    let (code, results) = run("lock", "none", "2", "20");
    let me = checker(&results, "mutual-exclusion");
    assert_eq!((code, me["verdict"].as_str()), (0, Some("valid")), "{me}");
    assert!(me["details"]["writes_ok"].as_u64().unwrap() >= 10, "{me}");
}
