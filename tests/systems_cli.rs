//! End-to-end tests of what a system refuses before any node is touched (`System::validate`,
//! `SystemFlags::config`): the built binary is run with a combination the chosen system cannot
//! serve and must exit 3 with a message naming the flag, the system and what it cannot do,
//! without creating a run directory or a sandbox. No sandbox, no root needed.
//!
//! Owns only these CLI assertions; `systems::Supports::check` is unit-tested in its module.

#[path = "common/cli.rs"]
mod cli;

use std::path::Path;

/// A sandbox name no test brings up: a refused run must not create it.
const SANDBOX: &str = "sdfnever";

fn refused(args: &[&str], needles: &[&str]) {
    let reports = tempfile::tempdir().unwrap();
    let mut all = vec![args[0]];
    if args[0] != "run" {
        all.extend(&args[1..]);
    } else {
        all.extend([
            "--reports",
            reports.path().to_str().unwrap(),
            "--sandbox-name",
            SANDBOX,
            "--sandbox-subnet",
            "10.96.0.0/24",
            "--time-limit",
            "1",
        ]);
        all.extend(&args[1..]);
    }
    let out = cli::shakedown(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: {n:?} missing from: {stderr}");
    }
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: one line of error expected: {stderr}"
    );
    assert!(
        std::fs::read_dir(reports.path()).unwrap().next().is_none(),
        "{args:?}: a refused run wrote under its reports directory"
    );
    let state = shakedown::sandbox::SandboxConfig::named(SANDBOX).state_dir();
    assert!(
        !state.exists(),
        "{args:?}: a refused run brought up the sandbox ({})",
        state.display()
    );
}

fn nemesis_file(dir: &Path, body: &str) -> String {
    let p = dir.join("faults.toml");
    std::fs::write(&p, format!("interval_s = 5.0\n\n{body}")).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn postgres_refuses_the_list_append_workload() {
    refused(
        &["run", "--db", "postgres", "--workload", "list-append"],
        &["--workload", "postgres", "list-append", "register"],
    );
}

#[test]
fn an_external_spec_refuses_power_loss_it_has_no_declared_data_directory_for() {
    // PostgreSQL serves it since it declares PGDATA, ZooKeeper's spec its `[durability]` dir;
    // toykv's spec declares none.
    let toykv = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/toykv/toykv.toml");
    for nemesis in ["power-loss", "os-crash", "slow-disk"] {
        refused(
            &["run", "--db", toykv, "--nemesis", nemesis],
            &[
                "--nemesis",
                "toykv has no `[durability]` table with the `dir` holding its data",
                "toykv.toml",
                "fault",
            ],
        );
    }
    // File corruption needs a data directory too.
    refused(
        &["run", "--db", toykv, "--nemesis", "truncate"],
        &[
            "--nemesis",
            "toykv has no `[durability]` table",
            "truncate fault",
        ],
    );
    // clap refuses an unknown policy, naming the ones Redis knows.
    let out = cli::shakedown(&["run", "--db", "redis", "--redis-appendfsync", "sometimes"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("sometimes") && stderr.contains("everysec, always, no"),
        "{stderr}"
    );
}

#[test]
fn etcd_refuses_the_promote_fault_it_has_no_ability_for() {
    refused(
        &["run", "--db", "etcd", "--nemesis", "partition,promote"],
        &[
            "--nemesis",
            "etcd",
            "promote fault",
            "promote (failover) ability",
        ],
    );
}

#[test]
fn a_system_that_cannot_name_its_primaries_refuses_faults_aimed_at_them() {
    let dir = tempfile::tempdir().unwrap();
    // An external system with no `primaries` command.
    let spec = dir.path().join("minimal.toml");
    std::fs::write(
        &spec,
        "name = \"minimal\"\n[client]\ncommand = [\"/bin/true\"]\nworkloads = [\"register\"]\n\
         [commands]\nstart = \"true\"\nstop = \"true\"\nready = \"true\"\nkill = \"true\"\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let kill = nemesis_file(
        dir.path(),
        "[[faults]]\nkind = \"kill\"\ntargets = \"primaries\"\n",
    );
    refused(
        &["run", "--db", spec, "--nemesis", &kill],
        &["--nemesis", "minimal", "kill fault", "primaries"],
    );
    let part = nemesis_file(
        dir.path(),
        "[[faults]]\nkind = \"partition\"\nshape = \"primaries\"\n",
    );
    refused(
        &["run", "--db", spec, "--nemesis", &part],
        &["--nemesis", "minimal", "partition fault", "primaries"],
    );
}

#[test]
fn read_modes_and_read_routing_a_system_cannot_serve_are_refused() {
    refused(
        &["run", "--db", "postgres", "--read-mode", "serializable"],
        &[
            "--read-mode",
            "serializable",
            "postgres supports linearizable",
        ],
    );
    refused(
        &["run", "--db", "etcd", "--read-from", "replica"],
        &["--read-from", "replica", "etcd supports own, any"],
    );
    refused(
        &["run", "--read-from", "primary"],
        &["--read-from", "primary", "etcd"],
    );
}

#[test]
fn another_systems_flags_and_unknown_systems_are_refused() {
    refused(
        &["run", "--db", "etcd", "--synchronous-commit", "off"],
        &[
            "--synchronous-commit",
            "PostgreSQL settings need --db postgres",
        ],
    );
    refused(
        &[
            "run",
            "--db",
            "postgres",
            "--etcd-tarball",
            "http://x/etcd.tgz",
        ],
        &["--etcd-tarball", "etcd settings need --db etcd"],
    );
    refused(
        &["run", "--db", "mysql"],
        &["--db", "mysql", "etcd, postgres"],
    );
    refused(
        &[
            "heal",
            "--db",
            "etcd",
            "--pg-dir",
            "/tmp/pg",
            "--reports",
            "/nonexistent",
        ],
        &["--pg-dir", "--db postgres"],
    );
    refused(
        &["doctor", "--db", "cockroach", "--sandbox-name", SANDBOX],
        &["--db", "cockroach"],
    );
}

#[test]
fn recorded_runs_read_back_their_system_settings() {
    // test.json's `db` object of runs recorded before the systems folder existed.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        let test = entry.path().join("test.json");
        let Ok(text) = std::fs::read_to_string(&test) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let cfg: shakedown::systems::SystemConfig = serde_json::from_value(v["db"].clone())
            .unwrap_or_else(|e| panic!("{}: db does not read back: {e}", test.display()));
        assert_eq!(cfg.name(), v["db"]["name"], "{}", test.display());
        assert_eq!(
            serde_json::to_value(&cfg).unwrap()["config"]["base_dir"],
            v["db"]["config"]["base_dir"]
        );
        seen.push(cfg.name().to_string());
    }
    seen.sort();
    assert_eq!(seen, ["etcd", "postgres"]);
}

#[test]
fn redis_refuses_impossible_quorums_waits_and_the_list_append_workload() {
    refused(
        &["run", "--db", "redis", "--redis-quorum", "0"],
        &["--redis-quorum", "at least 1"],
    );
    // The sandbox has 5 nodes, so 5 Sentinels.
    refused(
        &["run", "--db", "redis", "--redis-quorum", "6"],
        &["--redis-quorum", "quorum 6", "5 nodes"],
    );
    refused(
        &["run", "--db", "redis", "--redis-wait", "5"],
        &["--redis-wait", "4 replicas"],
    );
    refused(
        &["run", "--db", "redis", "--workload", "list-append"],
        &["--workload", "redis", "list-append", "register, set"],
    );
    refused(
        &["run", "--db", "etcd", "--redis-wait", "1"],
        &["--redis-wait", "Redis settings need --db redis"],
    );
}

#[test]
fn lock_and_lww_workloads_are_refused_where_not_implemented() {
    for workload in ["lock", "fenced-lock"] {
        refused(
            &["run", "--db", "postgres", "--workload", workload],
            &["--workload", "postgres", workload],
        );
    }
    for db in ["etcd", "redis"] {
        refused(
            &["run", "--db", db, "--workload", "lww"],
            &["--workload", db, "lww"],
        );
    }
}

#[test]
fn nats_refuses_other_workloads_bad_replicas_and_the_log_workload_elsewhere() {
    refused(
        &["run", "--db", "nats", "--workload", "register"],
        &["--workload", "nats", "register", "log"],
    );
    refused(
        &[
            "run",
            "--db",
            "nats",
            "--workload",
            "log",
            "--nats-replicas",
            "6",
        ],
        &["--nats-replicas", "1 to 5"],
    );
    refused(
        &["run", "--db", "etcd", "--workload", "log"],
        &["--workload", "etcd", "log"],
    );
    refused(
        &["run", "--db", "etcd", "--nats-replicas", "5"],
        &["--nats-replicas", "NATS settings need --db nats"],
    );
}

#[test]
fn galera_refuses_what_it_cannot_serve_and_its_flags_elsewhere() {
    refused(
        &["run", "--db", "galera", "--workload", "log"],
        &["--workload", "galera", "register, set, txn"],
    );
    refused(
        &[
            "run",
            "--db",
            "galera",
            "--workload",
            "txn",
            "--read-from",
            "any",
        ],
        &[
            "--read-from",
            "on galera a transaction runs where --write-to sends it",
        ],
    );
    refused(
        &[
            "run",
            "--db",
            "galera",
            "--workload",
            "register",
            "--read-from",
            "replica",
        ],
        &["--read-from", "galera supports own, primary, any"],
    );
    refused(
        &[
            "run",
            "--db",
            "galera",
            "--workload",
            "txn",
            "--nemesis",
            "promote",
        ],
        &["--nemesis", "galera", "promote"],
    );
    refused(
        &["run", "--db", "etcd", "--write-to", "any"],
        &["--write-to", "Galera settings need --db galera"],
    );
}

#[test]
fn mariadb_refuses_galera_flags_and_what_it_cannot_serve() {
    refused(
        &["run", "--db", "mariadb", "--write-to", "any"],
        &["--write-to", "Galera settings need --db galera"],
    );
    refused(
        &["run", "--db", "mariadb", "--wsrep-sync-wait", "1"],
        &["--wsrep-sync-wait", "Galera settings need --db galera"],
    );
    refused(
        &[
            "run",
            "--db",
            "mariadb",
            "--workload",
            "register",
            "--isolation",
            "serializable",
        ],
        &["--isolation", "applies to transactions", "mariadb"],
    );
    refused(
        &[
            "run",
            "--db",
            "mariadb",
            "--workload",
            "txn",
            "--read-from",
            "replica",
        ],
        &[
            "--read-from",
            "on mariadb a transaction runs on the primary",
        ],
    );
    refused(
        &["run", "--db", "mariadb", "--workload", "log"],
        &["--workload", "mariadb", "register, set, txn"],
    );
    refused(
        &["run", "--db", "mariadb", "--nemesis", "promote"],
        &["--nemesis", "mariadb", "promote"],
    );
    refused(
        &["run", "--db", "etcd", "--sync-binlog", "1"],
        &["--sync-binlog", "need --db"],
    );
}
