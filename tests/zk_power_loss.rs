//! The `power-loss` fault through an external spec, end to end: ZooKeeper
//! (`systems/zookeeper.toml`, whose `[durability]` table declares `data/`) runs on a real 5-node
//! sandbox ensemble with that directory on the lose-unsynced layer, and power is lost on all five
//! nodes at once. With `forceSync=yes` (the default) every loss report names what the layer
//! dropped — at the first loss, on every node, the snapshot ZooKeeper 3.8 writes when the ensemble
//! forms and never fsyncs — the ensemble comes back (`trust_empty_snapshot=yes` lets it start
//! from its synced transaction log) and serves again, the register history with `sync()` reads is
//! linearizable (no acknowledged write lost), and no layer mount or layer process is left.
//!
//! Needs root and /dev/fuse (when not, the test prints why it did nothing). Brings its own
//! sandbox (`sdzkp`, 10.108.0.0/24) down at the end, also on failure. Run under the machine-wide
//! lock: `flock /tmp/shakedown-sandbox.lock cargo test --release --test zk_power_loss`.

use serde_json::Value;
use std::path::Path;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/layer.rs"]
mod layer;
use cli::{SandboxGuard, root, run_results};

const SANDBOX: &[&str] = &[
    "--sandbox-name",
    "sdzkp",
    "--sandbox-subnet",
    "10.108.0.0/24",
];

/// The history's ops, one JSON value each.
fn history(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn zookeeper_power_loss_through_the_spec_drops_unsynced_writes_and_loses_no_acknowledged_one() {
    if !root() {
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        eprintln!("no /dev/fuse: zookeeper power-loss test skipped");
        return;
    }
    let _down = SandboxGuard(SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, dir, results) = run_results(
        SANDBOX,
        &[
            "--db",
            "zookeeper",
            "--db-opt",
            "reads=sync",
            "--db-opt",
            "trust_empty_snapshot=yes",
            "--workload",
            "register",
            "--nemesis",
            "power-loss",
            "--time-limit",
            "20",
            "--seed",
            "1",
        ],
        tmp.path(),
    );
    let ops = history(&dir);
    let losses: Vec<&Value> = ops
        .iter()
        .filter(|o| o["f"] == "power-loss" && o["value"].get("lost").is_some())
        .collect();
    eprintln!(
        "zookeeper power-loss: exit {code}, {} losses: {:?}; run dir {}",
        losses.len(),
        losses
            .iter()
            .map(|o| &o["value"]["lost"])
            .collect::<Vec<_>>(),
        dir.display()
    );
    assert_eq!(code, 0, "{}", results["checkers"]);
    assert_eq!(results["valid"], "valid", "{}", results["checkers"]);

    // Every loss is on the layer over the spec's durability directory, on all five nodes, and
    // reports per node what it dropped; the first drops the never-synced snapshot everywhere.
    assert!(!losses.is_empty(), "no power loss completed");
    for l in &losses {
        let v = &l["value"];
        assert_eq!(
            v["layer"]["data_dir"], "/tmp/shakedown-zookeeper/data",
            "{v}"
        );
        let lost = v["lost"].as_object().unwrap();
        assert_eq!(lost.len(), 5, "{v}");
        for (node, report) in lost {
            assert!(
                report["files"].is_u64() && report["writes"].is_u64(),
                "{node}: {report}"
            );
            assert_eq!(report["errors"], serde_json::json!([]), "{node}: {report}");
        }
    }
    for (node, report) in losses[0]["value"]["lost"].as_object().unwrap() {
        assert!(report["files"].as_u64() >= Some(1), "{node}: {report}");
    }

    // The ensemble served again after the first power-on.
    let power_on_ns = ops
        .iter()
        .find(|o| o["f"] == "power-on" && o["value"].get("nodes").is_some())
        .and_then(|o| o["time"].as_u64())
        .expect("a power-on completed");
    let ok_after = ops
        .iter()
        .filter(|o| o["process"].is_u64() && o["type"] == "ok")
        .filter(|o| o["time"].as_u64() > Some(power_on_ns))
        .count();
    assert!(ok_after > 0, "no op succeeded after the power came back");

    // Teardown unmounted every layer and stopped its process.
    let left = layer::layer_leftovers(SANDBOX[1]);
    assert!(left.is_empty(), "left behind: {left:?}");
}
