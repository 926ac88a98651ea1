//! Locks, leases and fencing against a real sandbox (`sdlk`, 10.86.0.0/24) and real etcd: a
//! lease lock without fencing under the `stall` nemesis (a holder stalls past its 2 s lease) is
//! caught with two holders of one lock in results.json (exit 1); the same with fencing tokens
//! is valid (exit 0) with the stale holder's writes refused; without faults the lock is clean.
//! Redis: forward clock steps on the primary past the TTL expire `SET NX PX` locks early: two
//! holders.
//!
//! Needs root (CI runs as root); when not root each test prints why it did nothing. Run under
//! the machine-wide lock (`flock /tmp/shakedown-sandbox.lock cargo test --test locks`); tests
//! in this file take a mutex so only one uses the sandbox at a time, and the sandbox is brought
//! down at the end, also on failure.

use serde_json::Value;
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, root, run_results};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: &[&str] = &["--sandbox-name", "sdlk", "--sandbox-subnet", "10.86.0.0/24"];

fn run(workload: &str, nemesis: &str, seed: &str) -> (i32, Value) {
    run_on("etcd", workload, nemesis, seed, "25")
}

fn run_on(db: &str, workload: &str, nemesis: &str, seed: &str, time_s: &str) -> (i32, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _dir, results) = run_results(
        SANDBOX,
        &[
            "--db",
            db,
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
    (code, results)
}

#[test]
fn etcd_lease_lock_with_a_stalled_holder_has_two_holders_and_fencing_refuses_the_stale_writes() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(SANDBOX);

    let (code, results) = run("lock", "stall", "1");
    let me = checker(&results, "mutual-exclusion");
    assert_eq!((code, me["verdict"].as_str()), (1, Some("invalid")), "{me}");
    let a = &me["details"]["anomalies"][0];
    let holders = a["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 2, "{a}");
    assert_ne!(holders[0]["process"], holders[1]["process"], "{a}");
    assert_eq!(holders[0]["lock"], holders[1]["lock"], "{a}");
    assert!(
        a["faults"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "stall"),
        "the witness names the stall active then: {a}"
    );

    let (code, results) = run("fenced-lock", "stall", "1");
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
}

#[test]
fn etcd_lease_lock_without_faults_is_clean() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(SANDBOX);
    let (code, results) = run("lock", "none", "2");
    let me = checker(&results, "mutual-exclusion");
    assert_eq!((code, me["verdict"].as_str()), (0, Some("valid")), "{me}");
    assert!(me["details"]["writes_ok"].as_u64().unwrap() >= 10, "{me}");
}

#[test]
fn redis_lock_with_clock_steps_on_the_primary_has_two_holders() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _down = SandboxGuard(SANDBOX);
    let (code, results) = run_on("redis", "lock", "clock-primary", "1", "40");
    let me = checker(&results, "mutual-exclusion");
    assert_eq!((code, me["verdict"].as_str()), (1, Some("invalid")), "{me}");
    let a = &me["details"]["anomalies"][0];
    assert_eq!(a["holders"].as_array().unwrap().len(), 2, "{a}");
    assert!(
        a["faults"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "clock"),
        "the witness names the clock step active then: {a}"
    );
}
