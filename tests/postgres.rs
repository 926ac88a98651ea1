//! End-to-end runs of `shakedown run --db postgres` against a real sandbox cluster running real
//! PostgreSQL 15 (one primary, four streaming replicas): reads from asynchronous replicas break
//! read-your-writes and monotonic reads; reads from a `remote_apply` synchronous standby and reads
//! from the primary break nothing, also with the primary and replicas killed and paused; a
//! `promote` fails over to a replica and the client's writes land there, not on the old primary.
//! Needs
//! root (when not root each test prints why it did nothing). Tests take a lock so only one cluster
//! runs at a time, and each brings its own sandbox (`sdpg`, 10.81.0.0/24) down at the end, also on
//! failure. Measured numbers are printed (`cargo test --release --test postgres -- --nocapture`).

use serde_json::Value;
use shakedown::history::{History, OpType, Process};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, checker, guarantee, root};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = ["--sandbox-name", "sdpg", "--sandbox-subnet", "10.81.0.0/24"];

/// Run with `--db postgres` and the given flags; returns (exit code, run dir, results.json).
fn run_pg(extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let mut args = vec!["--db", "postgres"];
    args.extend(extra);
    cli::run_results(&SANDBOX, &args, reports)
}

/// Client ops per second of the main phase and (ok, fail, info) counts, from the history.
fn throughput(run_dir: &Path, seconds: f64) -> (f64, [usize; 3]) {
    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    let mut counts = [0usize; 3];
    for o in h.ops.iter().filter(|o| o.process != Process::Nemesis) {
        match o.op_type {
            OpType::Ok => counts[0] += 1,
            OpType::Fail => counts[1] += 1,
            OpType::Info => counts[2] += 1,
            _ => {}
        }
    }
    (counts.iter().sum::<usize>() as f64 / seconds, counts)
}

/// Print what a run measured: throughput, per-guarantee violations, stale-read percentiles.
fn report(label: &str, run_dir: &Path, results: &Value, seconds: f64) {
    let (ops_s, counts) = throughput(run_dir, seconds);
    let session = checker(results, "session");
    let per: Vec<String> = [
        "read-your-writes",
        "monotonic-reads",
        "monotonic-writes",
        "writes-follow-reads",
    ]
    .iter()
    .map(|g| format!("{g} {}", guarantee(session, g)["violations"]))
    .collect();
    let stale = &session["details"]["stale"];
    eprintln!(
        "{label}: {ops_s:.0} ops/s (ok/fail/info {counts:?}); {}; stale reads {} of {}, ms behind p50 {} p90 {} p99 {} max {}, versions behind p50 {} p99 {} max {}; linearizable {}; run dir {}",
        per.join(", "),
        stale["stale_reads"],
        stale["reads_measured"],
        stale["ms_behind"]["p50"],
        stale["ms_behind"]["p90"],
        stale["ms_behind"]["p99"],
        stale["ms_behind"]["max"],
        stale["versions_behind"]["p50"],
        stale["versions_behind"]["p99"],
        stale["versions_behind"]["max"],
        checker(results, "linearizable")["verdict"],
        run_dir.display()
    );
}

#[test]
fn async_replica_reads_break_read_your_writes_and_monotonic_reads() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_pg(
        &[
            "--synchronous-commit",
            "off",
            "--read-from",
            "replica",
            "--workload",
            "session",
            "--nemesis",
            "none",
            "--time-limit",
            "20",
            // Unthrottled: more commits → more WAL flushes → more moments where the replicas
            // have applied different prefixes (monotonic reads needs two replicas to differ).
            "--rate",
            "0",
            "--seed",
            "81",
            "--check-time-limit",
            "5",
        ],
        tmp.path(),
    );
    report(
        "sync commit off, reads from random replicas",
        &run_dir,
        &results,
        20.0,
    );
    assert_eq!(code, 1, "expected invalid; {results}");
    let session = checker(&results, "session");
    assert_eq!(session["verdict"], "invalid", "{session}");
    for g in ["read-your-writes", "monotonic-reads"] {
        let r = guarantee(session, g);
        assert!(r["violations"].as_u64().unwrap() > 0, "{g}: {r}");
        let w = &r["witnesses"][0];
        let text = w["witness"].as_str().unwrap();
        assert!(
            text.contains("process") && text.contains("read") && text.contains(" s"),
            "{g}: {text}"
        );
        assert!(
            w["later_version"].as_i64().unwrap() < w["earlier_version"].as_i64().unwrap(),
            "{g}: {w}"
        );
    }
    // Writes all go to the one primary: its version column never goes back.
    for g in ["monotonic-writes", "writes-follow-reads"] {
        assert_eq!(guarantee(session, g)["violations"], 0, "{g}");
    }
    let stale = &session["details"]["stale"];
    assert!(stale["stale_reads"].as_u64().unwrap() > 0, "{stale}");
    assert!(stale["ms_behind"]["max"].as_f64().unwrap() > 0.0, "{stale}");
    // The run recorded the system and its settings.
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    assert!(
        test["db"]["version"]
            .as_str()
            .unwrap_or("")
            .contains("PostgreSQL) 15"),
        "{test}"
    );
    assert_eq!(test["db"]["name"], "postgres");
    assert_eq!(test["db"]["config"]["synchronous_commit"], "off");
    assert_eq!(test["read_from"], "replica");
    for n in 1..=5 {
        let log = std::fs::read_to_string(run_dir.join(format!("logs/n{n}/postgres.log")))
            .unwrap_or_default();
        let needle = if n == 1 {
            "ready to accept connections"
        } else {
            "started streaming WAL from primary"
        };
        assert!(log.contains(needle), "n{n}: {log}");
    }
}

#[test]
fn remote_apply_standby_reads_keep_every_session_guarantee() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let (code, run_dir, results) = run_pg(
        &[
            "--synchronous-commit",
            "remote_apply",
            "--synchronous-standby-names",
            "FIRST 1 (n2)",
            "--read-from",
            "replica",
            "--read-nodes",
            "n2",
            "--workload",
            "session",
            "--nemesis",
            "none",
            "--time-limit",
            "20",
            "--rate",
            "1000",
            "--seed",
            "82",
        ],
        tmp.path(),
    );
    report(
        "remote_apply, reads from the synchronous standby n2",
        &run_dir,
        &results,
        20.0,
    );
    let session = checker(&results, "session");
    assert_eq!(session["verdict"], "valid", "{session}");
    assert_eq!(code, 0, "{results}");
    for g in [
        "read-your-writes",
        "monotonic-reads",
        "monotonic-writes",
        "writes-follow-reads",
    ] {
        let r = guarantee(session, g);
        assert_eq!(r["violations"], 0, "{g}: {r}");
        assert!(r["checks"].as_u64().unwrap() > 100, "{g}: {r}");
    }
    // remote_apply: every acknowledged write is visible on n2 before the ack, so no read of n2
    // that starts after an ack can miss it.
    let stale = &session["details"]["stale"];
    assert_eq!(stale["stale_reads"], 0, "{stale}");
    assert!(stale["reads_measured"].as_u64().unwrap() > 1000, "{stale}");
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        test["db"]["config"]["effective_synchronous_standby_names"],
        "FIRST 1 (n2)"
    );
}

#[test]
fn primary_reads_stay_linearizable_under_kills_and_pauses() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let nemesis = tmp.path().join("nemesis.toml");
    std::fs::write(
        &nemesis,
        r#"interval_s = 3.0
order = "sequential"
[[faults]]
kind = "kill"
targets = "all"
[[faults]]
kind = "pause"
targets = "all"
"#,
    )
    .unwrap();
    let (code, run_dir, results) = run_pg(
        &[
            "--read-from",
            "primary",
            "--nemesis",
            nemesis.to_str().unwrap(),
            "--time-limit",
            "20",
            "--rate",
            "300",
            "--seed",
            "83",
        ],
        tmp.path(),
    );
    report(
        "reads from the primary, kill/pause all",
        &run_dir,
        &results,
        20.0,
    );
    assert_eq!(checker(&results, "linearizable")["verdict"], "valid");
    assert_eq!(checker(&results, "session")["verdict"], "valid");
    assert_eq!(code, 0, "{results}");
    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    // Both faults hit every node, and ops succeeded after the restart.
    let done = |f: &str| {
        h.ops
            .iter()
            .filter(|o| o.process == Process::Nemesis && o.f == f)
            .filter_map(|o| o.value["nodes"].as_array())
            .any(|n| n.len() == 5)
    };
    assert!(done("kill") && done("start") && done("pause") && done("resume"));
    let restarted = h
        .ops
        .iter()
        .filter(|o| o.process == Process::Nemesis && o.f == "start" && o.value.is_object())
        .map(|o| o.index)
        .next()
        .unwrap();
    assert!(
        h.ops.iter().any(|o| o.index > restarted
            && o.process != Process::Nemesis
            && o.f == "write"
            && o.op_type == OpType::Ok),
        "no write succeeded after the restart"
    );
}

/// `select` one value with psql on node `host` (as root over SSH, TCP to the node's address).
#[test]
fn set_workload_with_async_replica_reads_reports_what_it_found() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let (code, run_dir, results) = run_pg(
        &[
            "--workload",
            "set",
            "--synchronous-commit",
            "off",
            "--read-from",
            "replica",
            "--nemesis",
            "none",
            "--time-limit",
            "10",
            "--seed",
            "3",
        ],
        &reports,
    );
    let set = checker(&results, "set");
    let d = &set["details"];
    // Whether asynchronous replicas lose or lag is measured, not assumed: print it.
    println!(
        "postgres set, async replica reads, no faults: exit {code}, {}; run dir {}",
        set["summary"],
        run_dir.display()
    );
    assert!(d["acknowledged"].as_u64().unwrap() > 100, "{d}");
    // Nothing is ever read that was not added; the adds went to the primary.
    assert_eq!(d["unexpected"], 0, "{d}");
    assert_eq!(d["failed_but_present"], 0, "{d}");
    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    let reads = h
        .ops
        .iter()
        .filter(|o| o.process != Process::Nemesis && o.f == "read" && o.op_type == OpType::Ok);
    assert!(reads.clone().count() > 5);
    assert!(reads.into_iter().all(|o| o.value.is_array()));
    assert!([0, 1, 2].contains(&code), "{code}: {results}");
}

fn psql(remote: &dyn shakedown::control::Remote, host: &str, sql: &str) -> String {
    remote
        .exec_ok(&shakedown::control::Cmd::script(
            "/usr/lib/postgresql/15/bin/psql -h \"$1\" -p 5432 -U postgres -d postgres -Atc \"$2\"",
            [host, sql],
        ))
        .unwrap_or_else(|e| panic!("psql on {host}: {e}"))
        .trim()
        .to_string()
}

#[test]
fn promote_fails_over_and_clients_write_to_the_new_primary() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    use shakedown::client::{Client, Completion};
    use shakedown::db::Db;
    use shakedown::node::Node;
    use shakedown::options::ReadFrom;
    use shakedown::systems::postgres::client::{PgClient, PgClientConfig, PgNode};
    use shakedown::systems::postgres::{Postgres, PostgresConfig};
    use std::sync::Arc;

    let cfg = shakedown::sandbox::SandboxConfig {
        subnet: SANDBOX[3].into(),
        ..shakedown::sandbox::SandboxConfig::named(SANDBOX[1])
    };
    let info = shakedown::sandbox::up(&cfg).expect("sandbox up");
    let nodes: Vec<Node> = info
        .nodes
        .iter()
        .take(3)
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect();
    let ssh = shakedown::control::SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..Default::default()
    };
    let remotes = shakedown::runner::connect(&nodes, &ssh).expect("connect");
    let pg = Arc::new(Postgres::new(PostgresConfig::default()));
    shakedown::sandbox::ensure_packages(&pg.packages()).expect("postgres packages");
    for r in shakedown::runner::on_nodes(&remotes, &nodes, |r, n| {
        pg.install(r)?;
        pg.setup(r, n, &nodes)
    }) {
        r.expect("postgres setup");
    }
    for r in shakedown::runner::on_nodes(&remotes, &nodes, |r, n| pg.await_ready(r, n, &nodes)) {
        r.expect("postgres ready");
    }

    let mut client = PgClient::new(PgClientConfig {
        nodes: nodes
            .iter()
            .map(|n| PgNode {
                name: n.name.clone(),
                host: n.host.clone(),
            })
            .collect(),
        port: 5432,
        primary: 0,
        promoted: pg.promoted.clone(),
        own: 0,
        read_from: ReadFrom::Primary,
        read_nodes: vec![],
        timeout_ms: 3000,
        seed: 1,
    })
    .expect("client");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let write = |client: &mut PgClient, v: i64| {
        rt.block_on(client.invoke("write", Some("fo"), &serde_json::json!(v)))
    };
    assert!(matches!(write(&mut client, 1), Completion::Ok { .. }));
    // Let the asynchronous replicas apply it before failing over.
    std::thread::sleep(std::time::Duration::from_secs(1));

    let mut nem = shakedown::nemesis::Nemesis::new(shakedown::nemesis::NemesisConfig {
        helper_exe: None,
        nodes: nodes.clone(),
        remotes: remotes.clone(),
        db: pg.clone(),
        partition: Default::default(),
        rng: rand::SeedableRng::seed_from_u64(3),
        journal: None,
    });
    match nem.invoke("promote", &serde_json::json!({"node": "n2"})) {
        Completion::Ok { value, .. } => assert_eq!(value["node"], "n2"),
        other => panic!("promote failed: {other:?}"),
    }
    assert_eq!(
        psql(
            remotes[1].as_ref(),
            &nodes[1].host,
            "select pg_is_in_recovery()"
        ),
        "f"
    );
    // Promoting the primary is refused, and named (nemesis failures are recorded as info).
    match nem.invoke("promote", &serde_json::json!({"node": "n2"})) {
        Completion::Info { error } | Completion::Fail { error, .. } => {
            assert!(error.contains("promote n2: not a replica"), "{error}")
        }
        other => panic!("promoting the primary should fail: {other:?}"),
    }

    // The client now writes to n2; the unfenced old primary n1 keeps the old value.
    match write(&mut client, 2) {
        Completion::Ok { version, .. } => assert_eq!(version, Some(2)),
        other => panic!("write after failover: {other:?}"),
    }
    let value_on = |i: usize| {
        psql(
            remotes[i].as_ref(),
            &nodes[i].host,
            "select value from kv where key = 'fo'",
        )
    };
    assert_eq!(value_on(1), "2", "the promoted node did not take the write");
    assert_eq!(
        value_on(0),
        "1",
        "the old primary saw a write meant for the new one"
    );
    rt.block_on(client.close());
    for r in shakedown::runner::on_nodes(&remotes, &nodes, |r, n| pg.teardown(r, n)) {
        r.expect("postgres teardown");
    }
}
