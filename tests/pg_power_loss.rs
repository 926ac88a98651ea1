//! The `power-loss` fault end to end on a real sandbox cluster running real PostgreSQL 15 (one
//! primary, four asynchronous streaming replicas) with all of PGDATA, WAL included, on the
//! lose-unsynced layer (`shakedown lazyfs`), set workload, power lost on all five nodes at once
//! (`nemeses/power-loss.toml`): with `--pg-fsync off` acknowledged adds are lost; with the default
//! (`fsync=on`) none is and the verdict is valid. After each run no layer mount is left in any
//! node.
//!
//! What `fsync=off` does here: the primary never syncs, so a loss takes back everything it wrote
//! since setup — and, since a checkpoint's renames survive a loss while their contents do not,
//! its crash recovery PANICs (`pg_logical/replorigin_checkpoint` read 0 of 4 bytes) and it never
//! comes back; the replicas restart as hot standbys from their base backups and the final reads
//! (`--read-from own`, the default: each thread's node) find none of the acknowledged adds.
//!
//! Needs root and /dev/fuse (when not, the test prints why it did nothing). Brings its own
//! sandbox (`sdpgp`, 10.107.0.0/24) down at the end, also on failure:
//! `cargo test --release --test pg_power_loss -- --nocapture`.

use serde_json::Value;
use std::path::Path;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/layer.rs"]
mod layer;
use cli::{SandboxGuard, root};
use layer::set_checker;

const NAME: &str = "sdpgp";
const SUBNET: &str = "10.107.0.0/24";
const SANDBOX: [&str; 4] = ["--sandbox-name", NAME, "--sandbox-subnet", SUBNET];

fn run(fsync: &str, reports: &Path) -> (i32, std::path::PathBuf, Value) {
    let (code, dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            "postgres",
            "--pg-fsync",
            fsync,
            "--workload",
            "set",
            "--nemesis",
            "power-loss",
            "--time-limit",
            "15",
            "--seed",
            "1",
        ],
        reports,
    );
    (code, dir, set_checker(&results))
}

#[test]
fn postgres_fsync_off_loses_acknowledged_adds_on_power_loss_and_fsync_on_loses_none() {
    if !root() {
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        eprintln!("no /dev/fuse: power-loss test skipped");
        return;
    }
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();

    let started = std::time::Instant::now();
    let (code, dir, set) = run("off", tmp.path());
    let d = &set["details"];
    let lost = d["lost"].as_u64().unwrap_or(0);
    eprintln!(
        "fsync=off: {lost} of {} acknowledged adds lost ({:.0} s); run dir {}",
        d["acknowledged"],
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    assert_eq!(code, 1, "{set}");
    assert!(lost > 0, "{d}");
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert!(
        history.contains(r#""f":"power-loss""#) && history.contains(r#""f":"power-on""#),
        "no power-loss ops in the history"
    );
    let test: Value =
        serde_json::from_slice(&std::fs::read(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["db"]["config"]["fsync"], false, "{}", test["db"]);
    assert_eq!(layer::layer_leftovers(NAME), Vec::<String>::new());

    let started = std::time::Instant::now();
    let (code, dir, set) = run("on", tmp.path());
    let d = &set["details"];
    eprintln!(
        "fsync=on: {} of {} acknowledged adds lost ({:.0} s); run dir {}",
        d["lost"],
        d["acknowledged"],
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    assert_eq!(d["lost"], 0, "{d}");
    assert_eq!(set["verdict"], "valid", "{set}");
    assert_eq!(code, 0, "{set}");
    assert!(d["acknowledged"].as_u64().unwrap() > 200, "{d}");
    // The layer really dropped writes on every node, and the primary came back.
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    let dropped = history
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|o| o["f"] == "power-loss")
        .filter_map(|o| o["value"]["lost"].as_object().cloned())
        .flat_map(|m| m.into_values())
        .map(|r| r["writes"].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(dropped > 0, "the layer dropped no writes");
    assert_eq!(layer::layer_leftovers(NAME), Vec::<String>::new());
}
