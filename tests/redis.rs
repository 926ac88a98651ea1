//! End-to-end runs of `shakedown run --db redis` against a real sandbox cluster running real
//! Redis 7 and Sentinel (Debian's `redis-server`, `redis-sentinel`): five servers (n1 primary,
//! four replicas) and five Sentinels come up and agree; a register run without faults is valid;
//! a kill of the primary and a `promote` (SENTINEL FAILOVER) fail over and the clients follow the
//! new primary (writes keep succeeding after each failover); a set run without faults loses
//! nothing, and one whose primary is cut off from the Sentinel majority loses acknowledged adds
//! (the set checker names them, acknowledged while the partition was active); redis-server runs
//! with the sandbox clock shim loaded and a `date -s` on one node moves `TIME` on that node's
//! server only.
//!
//! Needs root (when not root each test prints why it did nothing). Tests take a lock so only one
//! cluster runs at a time, and each brings its own sandbox (`sdrds`, 10.87.0.0/24) down at the
//! end, also on failure. Run under the machine-wide lock:
//! `flock /tmp/shakedown-sandbox.lock cargo test --release --test redis -- --nocapture`.

use serde_json::{Value, json};
use shakedown::client::Completion;
use shakedown::control::{Cmd, Remote, SshConfig};
use shakedown::history::{History, Op, OpType, Process};
use shakedown::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use shakedown::node::Node;
use shakedown::sandbox::SandboxConfig;
use shakedown::systems::redis::{Redis, RedisConfig};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, root};

static SERIAL: Mutex<()> = Mutex::new(());
const NAME: &str = "sdrds";
const SUBNET: &str = "10.87.0.0/24";
const SANDBOX: [&str; 4] = ["--sandbox-name", NAME, "--sandbox-subnet", SUBNET];

/// Run with `--db redis` and the given flags; returns (exit code, run dir, results.json).
fn run_redis(extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let mut args = vec!["--db", "redis"];
    args.extend(extra);
    cli::run_results(&SANDBOX, &args, reports)
}

fn log(run_dir: &Path, node: &str, file: &str) -> String {
    std::fs::read_to_string(run_dir.join("logs").join(node).join(file)).unwrap_or_default()
}

fn history(run_dir: &Path) -> History {
    History::read_file(&run_dir.join("history.jsonl")).unwrap()
}

/// Completions of the nemesis op `f`, in order (invoke and completion are both info and come in
/// pairs: the completion is the second of each).
fn nemesis_done<'a>(h: &'a History, f: &str) -> Vec<&'a Op> {
    h.ops
        .iter()
        .filter(|o| o.process == Process::Nemesis && o.f == f)
        .skip(1)
        .step_by(2)
        .collect()
}

/// Acknowledged writes (ok `write`, ok `cas`) completed in `[from_s, to_s)`.
fn ok_writes_between(h: &History, from_s: f64, to_s: f64) -> usize {
    h.ops
        .iter()
        .filter(|o| o.process != Process::Nemesis && o.op_type == OpType::Ok)
        .filter(|o| o.f == "write" || o.f == "cas")
        .filter(|o| {
            let t = o.time_ns as f64 / 1e9;
            t >= from_s && t < to_s
        })
        .count()
}

/// Sentinels on the first three nodes only (`--redis-sentinels 3`, as big clusters run them):
/// readiness waits for the other two nodes' replica links, not for Sentinels they do not run.
#[test]
fn a_register_run_without_faults_is_valid_after_servers_and_sentinels_agree() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_redis(
        &[
            "--nemesis",
            "none",
            "--time-limit",
            "10",
            "--read-from",
            "primary",
            "--seed",
            "11",
            "--redis-sentinels",
            "3",
        ],
        tmp.path(),
    );
    assert_eq!(code, 0, "{results}");
    assert_eq!(checker(&results, "linearizable")["verdict"], "valid");
    // Versions come from the per-key counter the write script increments.
    assert_eq!(checker(&results, "session")["verdict"], "valid");
    let h = history(&run_dir);
    assert!(ok_writes_between(&h, 0.0, 11.0) > 100, "too few writes");
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["db"]["name"], "redis");
    assert!(
        test["db"]["version"]
            .as_str()
            .unwrap_or("")
            .contains("v=7."),
        "{test}"
    );
    assert_eq!(test["db"]["config"]["effective_quorum"], 2);
    assert_eq!(
        test["db"]["config"]["sentinel_nodes"],
        json!(["n1", "n2", "n3"])
    );
    assert_eq!(test["db"]["config"]["primary_node"], "n1");
    // Readiness waited for every replica's link and every Sentinel (the logs say so).
    assert!(log(&run_dir, "n1", "redis.log").contains("Ready to accept connections"));
    for n in 2..=5 {
        let node = format!("n{n}");
        let redis = log(&run_dir, &node, "redis.log");
        assert!(
            redis.contains("MASTER <-> REPLICA sync: Finished with success"),
            "{node}: {redis}"
        );
    }
    for n in 1..=3 {
        let node = format!("n{n}");
        let sentinel = log(&run_dir, &node, "sentinel.log");
        assert!(
            sentinel.contains("+monitor master shakedown") && sentinel.contains("+sentinel "),
            "{node}: {sentinel}"
        );
        // Each Sentinel met the other two, and no more.
        assert_eq!(
            sentinel.matches("+sentinel sentinel").count(),
            2,
            "{node}: {sentinel}"
        );
    }
    for n in 4..=5 {
        let node = format!("n{n}");
        assert!(
            !run_dir
                .join("logs")
                .join(&node)
                .join("sentinel.log")
                .exists(),
            "{node} ran a Sentinel"
        );
    }
}

#[test]
fn clients_follow_the_new_primary_after_a_kill_and_a_promote() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let nemesis = tmp.path().join("kill-promote.toml");
    std::fs::write(
        &nemesis,
        "interval_s = 8.0\norder = \"sequential\"\n\n\
         [[faults]]\nkind = \"kill\"\ntargets = \"primaries\"\n\n\
         [[faults]]\nkind = \"promote\"\n",
    )
    .unwrap();
    let (code, out, stderr) = cli::run_json(
        &SANDBOX,
        &[
            "--db",
            "redis",
            "--nemesis",
            nemesis.to_str().unwrap(),
            // Kill at 8 s, restart at 16 s, promote at 24 s: 20 s of slack for a slow machine
            // (a loaded CI run once ended at 34 s before the promote began).
            "--time-limit",
            "44",
            "--read-from",
            "primary",
            "--seed",
            "12",
        ],
        tmp.path(),
    );
    // Lost writes make a run invalid; anything else must still have verdicted.
    assert!(matches!(code, 0 | 1), "exit {code}: {out}\n{stderr}");
    let run_dir = PathBuf::from(out["run_dir"].as_str().unwrap());
    // After two failovers every node serves again (under another primary) before the final
    // reads: recovery no longer waits for the initial one.
    assert!(!stderr.contains("not every node recovered"), "{stderr}");
    let h = history(&run_dir);
    let kills = nemesis_done(&h, "kill");
    let kill = kills.first().expect("a kill op");
    assert_eq!(kill.value, json!({"nodes": ["n1"]}), "{kill:?}");
    let kill_s = kill.time_ns as f64 / 1e9;
    let starts = nemesis_done(&h, "start");
    let start_s = starts.first().expect("a start op").time_ns as f64 / 1e9;
    let promotes = nemesis_done(&h, "promote");
    let promote = promotes.first().unwrap_or_else(|| {
        let faults: Vec<String> = h
            .ops
            .iter()
            .filter(|o| o.process == Process::Nemesis)
            .map(|o| format!("{:.1} s {} {}", o.time_ns as f64 / 1e9, o.f, o.value))
            .collect();
        panic!("no promote op; the nemesis did: {faults:#?}")
    });
    assert!(promote.error.is_none(), "promote failed: {promote:?}");
    let promote_s = promote.time_ns as f64 / 1e9;
    // down-after 2 s + the election: within 6 s of the kill the Sentinels promoted a replica and
    // the clients, asking them again, write to it while n1 is still dead.
    let during_kill = ok_writes_between(&h, kill_s + 6.0, start_s);
    let after_promote = ok_writes_between(&h, promote_s, promote_s + 6.0);
    eprintln!(
        "kill of n1 at {kill_s:.1} s, restart at {start_s:.1} s, promote done at {promote_s:.1} s: \
         {during_kill} acknowledged writes from {:.1} s while n1 was down, {after_promote} in the 6 s after the promote; run dir {}",
        kill_s + 6.0,
        run_dir.display()
    );
    assert!(during_kill > 20, "clients did not follow the failover");
    assert!(after_promote > 20, "clients did not follow the promote");
    let switches: usize = (1..=5)
        .map(|n| log(&run_dir, &format!("n{n}"), "sentinel.log"))
        .map(|l| l.matches("+switch-master").count())
        .max()
        .unwrap_or(0);
    assert!(switches >= 2, "expected two failovers in a sentinel log");
}

/// Run the set workload; returns (exit code, run dir, the set checker's result).
fn run_set(extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let mut args = vec!["--workload", "set", "--read-from", "primary"];
    args.extend(extra);
    let (code, run_dir, results) = run_redis(&args, reports);
    let set = checker(&results, "set").clone();
    (code, run_dir, set)
}

#[test]
fn a_set_run_without_faults_loses_nothing() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, _run_dir, set) = run_set(
        &["--nemesis", "none", "--time-limit", "10", "--seed", "13"],
        tmp.path(),
    );
    assert_eq!(code, 0, "{set}");
    assert_eq!(set["verdict"], "valid", "{set}");
    let d = &set["details"];
    assert_eq!(d["lost"], 0, "{d}");
    assert!(d["acknowledged"].as_u64().unwrap() > 500, "{d}");
}

#[test]
fn cutting_the_primary_off_from_the_sentinels_loses_acknowledged_adds() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    // One partition of the primary, 10 s: the four other Sentinels fail over after 2 s, clients
    // still writing to n1 (the ones whose own Sentinel is n1's, and everyone until the failover)
    // are acknowledged by it, and n1 drops those writes when it rejoins as a replica.
    let nemesis = tmp.path().join("isolate-primary.toml");
    std::fs::write(
        &nemesis,
        "interval_s = 10.0\n\n[[faults]]\nkind = \"partition\"\nshape = \"primaries\"\n",
    )
    .unwrap();
    let (code, run_dir, set) = run_set(
        &[
            "--nemesis",
            nemesis.to_str().unwrap(),
            "--time-limit",
            "25",
            "--settle",
            "5",
            "--seed",
            "14",
        ],
        tmp.path(),
    );
    let d = &set["details"];
    let lost = d["lost"].as_u64().unwrap_or(0);
    eprintln!(
        "primary isolated for 10 s: {lost} of {} acknowledged adds lost; run dir {}",
        d["acknowledged"],
        run_dir.display()
    );
    assert_eq!(code, 1, "{set}");
    assert_eq!(set["verdict"], "invalid", "{set}");
    assert!(lost > 0, "{d}");
    let h = history(&run_dir);
    let parts = nemesis_done(&h, "start-partition");
    let part_s = parts.first().expect("a partition").time_ns as f64 / 1e9;
    // Every lost element the checker names was acknowledged after the partition began.
    for e in d["lost_elements"].as_array().unwrap() {
        let ack = e["ack_s"].as_f64().unwrap();
        assert!(ack >= part_s - 0.5, "lost before the partition: {e}");
        assert!(e["witness"].as_str().unwrap().contains("add"), "{e}");
    }
}

struct Cluster {
    nodes: Vec<Node>,
    remotes: Vec<Arc<dyn Remote>>,
}

fn sandbox_config() -> SandboxConfig {
    SandboxConfig {
        subnet: SUBNET.into(),
        ..SandboxConfig::named(NAME)
    }
}

fn cluster() -> Cluster {
    let info = shakedown::sandbox::up(&sandbox_config()).expect("sandbox up");
    let nodes: Vec<Node> = info
        .nodes
        .iter()
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect();
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..SshConfig::default()
    };
    let pairs: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.host.clone()))
        .collect();
    let remotes = shakedown::control::connect_all(&pairs, &ssh).expect("connect");
    Cluster { nodes, remotes }
}

/// A node's redis-server clock (`TIME`) minus the controller's, in ms.
fn redis_offset_ms(c: &Cluster, i: usize) -> f64 {
    let query = Cmd::script(
        "redis-cli -h \"$1\" -p 6379 TIME",
        [c.nodes[i].host.as_str()],
    );
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let out = c.remotes[i].exec_ok(&query).expect("redis-cli TIME");
    let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let mut lines = out.lines().map(|l| l.trim().parse::<f64>());
    let (Some(Ok(s)), Some(Ok(us))) = (lines.next(), lines.next()) else {
        panic!("TIME said {out:?}");
    };
    (s * 1e3 + us / 1e3) - (before.as_secs_f64() + after.as_secs_f64()) * 1e3 / 2.0
}

#[test]
fn redis_runs_with_the_clock_shim_and_a_clock_step_moves_time_on_that_node_only() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let c = cluster();
    use shakedown::db::Db;
    let redis = Arc::new(Redis::new(RedisConfig::default()));
    shakedown::sandbox::ensure_packages(&redis.packages()).expect("redis packages");
    // A primary and one replica (each with its Sentinel) are enough.
    let (nodes, remotes) = (&c.nodes[..2], &c.remotes[..2]);
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| {
        redis.install(r)?;
        redis.setup(r, n, nodes)
    }) {
        r.expect("redis setup");
    }
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| redis.await_ready(r, n, nodes)) {
        r.expect("redis ready");
    }
    // The shim is mapped into redis-server (a jemalloc program: it must not deadlock it).
    for (i, r) in remotes.iter().enumerate() {
        let maps = r
            .exec_ok(&Cmd::sh(
                "grep -c clockshim.so /proc/$(cat /tmp/shakedown/redis/redis.pid)/maps",
            ))
            .expect("maps");
        assert!(
            maps.trim().parse::<u32>().unwrap_or(0) > 0,
            "n{}: redis-server has no clockshim.so mapped",
            i + 1
        );
    }
    for i in 0..2 {
        let off = redis_offset_ms(&c, i);
        assert!(off.abs() < 250.0, "n{} TIME off by {off} ms", i + 1);
    }
    let mut nem = Nemesis::new(NemesisConfig {
        helper_exe: None,
        nodes: c.nodes.clone(),
        remotes: c.remotes.clone(),
        db: redis.clone(),
        partition: PartitionConfig::default(),
        rng: rand::SeedableRng::seed_from_u64(7),
        journal: None,
    });
    let ok = |done: Completion| match done {
        Completion::Ok { value, .. } => value,
        other => panic!("nemesis op did not succeed: {other:?}"),
    };
    ok(nem.invoke("bump-clock", &json!({"nodes": ["n2"], "delta_ms": 30_000})));
    let (n1, n2) = (redis_offset_ms(&c, 0), redis_offset_ms(&c, 1));
    println!("after +30 s on n2: redis TIME offsets n1 {n1:.1} ms, n2 {n2:.1} ms");
    assert!(
        (n2 - 30_000.0).abs() < 250.0,
        "n2's redis did not see the step: {n2} ms"
    );
    assert!(n1.abs() < 250.0, "n1's redis moved with n2's step: {n1} ms");
    ok(nem.invoke("reset-clock", &Value::Null));
    let n2 = redis_offset_ms(&c, 1);
    assert!(n2.abs() < 250.0, "n2's redis clock not reset: {n2} ms");
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| redis.teardown(r, n)) {
        r.expect("redis teardown");
    }
}
