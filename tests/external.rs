//! External systems end to end: a spec file with a toy durable register and misbehaving
//! clients (crash, hang, garbage, wrong id) on the sandbox, ZooKeeper through
//! `systems/zookeeper.toml`, and the errors a bad spec or a bad `--db-opt` gives before any node
//! is touched. The sandbox tests need root and run one at a time (sandbox `sdext`,
//! 10.89.0.0/24, brought down at the end, also on failure); the CLI error tests need neither.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdext",
    "--sandbox-subnet",
    "10.89.0.0/24",
];

fn toykv() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/toykv/toykv.toml")
        .display()
        .to_string()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// A spec given as a path runs like a built-in system: setup from its commands, an uploaded
/// file, a `--db-opt`, kill and pause through its commands, logs collected. Four client threads
/// break the protocol on every 5th op of each process; each break costs that op (`info`, counted
/// by kind) and a restart, the run completes, and the history stays linearizable: the toy
/// server serialises every request, so any misattributed reply would show up as a violation.
#[test]
fn a_spec_file_runs_and_misbehaving_clients_cost_one_op_each() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let spec = toykv();
    let (code, run_dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            &spec,
            "--db-opt",
            "misbehave=yes",
            "--nemesis",
            "kill,pause",
            "--nemesis-interval",
            "2",
            "--time-limit",
            "12",
            "--seed",
            "7",
        ],
        &tmp.path().join("reports"),
    );
    assert_eq!(code, 0, "{results}");
    assert_eq!(results["valid"], "valid", "{results}");
    let errors = &results["client_protocol_errors"];
    for kind in ["crash", "timeout", "malformed", "wrong-id"] {
        assert!(
            errors["by_kind"][kind].as_u64().unwrap_or(0) >= 1,
            "no {kind} counted: {errors}"
        );
    }
    // Each counted error is an info op naming it; the history holds every op's completion.
    let history = shakedown::history::History::read_file(&run_dir.join("history.jsonl")).unwrap();
    let counted = shakedown::systems::external::protocol::count_errors(&history);
    assert_eq!(
        counted.values().sum::<u64>(),
        errors["total"].as_u64().unwrap()
    );
    let pairs = history.pairs().unwrap();
    let unanswered = history
        .ops
        .iter()
        .zip(&pairs)
        .filter(|(o, p)| {
            o.is_client() && o.op_type == shakedown::history::OpType::Invoke && p.is_none()
        })
        .count();
    assert_eq!(unanswered, 0, "an op never completed");
    // The client's stderr and the nodes' logs are in the run directory.
    let log0 = std::fs::read_to_string(run_dir.join("logs/clients/thread-0.log")).unwrap();
    assert!(
        log0.contains("crashing on purpose") && log0.contains("[shakedown] started"),
        "{log0}"
    );
    assert!(run_dir.join("logs/n1/server.log").is_file());
    // The spec's version command saw its positional parameters.
    let test = read_json(&run_dir.join("test.json"));
    let version = test["db"]["version"].as_str().unwrap_or_default();
    assert!(
        version.starts_with("toykv 1 on n1 (node 1 of: n1=10.89.0.1 "),
        "{version}"
    );
    assert_eq!(
        test["db"]["config"]["abilities"],
        serde_json::json!(["kill", "pause"])
    );
    assert!(
        test["rerun"]
            .as_str()
            .unwrap()
            .contains("--db-opt 'misbehave=yes'")
    );
    // kill and pause went through the spec's commands, and were undone.
    let faults = std::fs::read_to_string(run_dir.join("faults.jsonl")).unwrap();
    assert!(
        faults.contains("\"kill\"") && faults.contains("\"pause\""),
        "{faults}"
    );
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(
        page.contains("client protocol errors"),
        "run page lacks the count"
    );

    // `shakedown heal` works through the spec too (its resume and start commands).
    let journal = run_dir.join("faults.jsonl");
    let reports = tmp.path().join("reports");
    let mut args = vec![
        "heal",
        "--db",
        &spec,
        "--db-opt",
        "misbehave=yes",
        "--journal",
        journal.to_str().unwrap(),
        "--reports",
        reports.to_str().unwrap(),
    ];
    args.extend(&SANDBOX);
    let out = shakedown(&args);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("n1"), "{text}");

    // The 30-line client of PROTOCOL.md against the same server: a clean, valid run.
    let minimal = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/toykv/minimal.toml");
    let (code, _, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            minimal.to_str().unwrap(),
            "--nemesis",
            "none",
            "--time-limit",
            "5",
        ],
        &tmp.path().join("reports"),
    );
    assert_eq!(code, 0, "{results}");
    assert_eq!(results["client_protocol_errors"]["total"], 0, "{results}");
    let session = &results["checkers"][1];
    assert_eq!(session["verdict"], "valid", "{session}");
}

/// A nemesis op whose node command hangs is cut off at `--nemesis-timeout`: it ends `info`
/// naming the bound soon after it (not after the command's own 60 s timeout), the ops after it
/// find the nemesis free, the final heal runs, and the run completes.
#[test]
fn a_hanging_nemesis_op_is_cut_off_at_its_bound_and_the_heal_still_runs() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    // The toy system, with a kill that hangs.
    let dir = tmp.path().join("toykv");
    std::fs::create_dir(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/toykv");
    for f in ["toykv.toml", "server.py", "client.py"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let spec = std::fs::read_to_string(dir.join("toykv.toml")).unwrap();
    let kill = spec
        .lines()
        .find(|l| l.starts_with("kill = "))
        .expect("toykv has a kill command");
    let spec = spec.replace(kill, "kill = 'sleep 40'");
    std::fs::write(dir.join("toykv.toml"), spec).unwrap();
    let (code, run_dir, results) = cli::run_results(
        &SANDBOX,
        &[
            "--db",
            dir.join("toykv.toml").to_str().unwrap(),
            "--nemesis",
            "kill",
            "--nemesis-interval",
            "1",
            "--nemesis-timeout",
            "3",
            "--time-limit",
            "8",
            "--seed",
            "3",
        ],
        &tmp.path().join("reports"),
    );
    assert_eq!(code, 0, "{results}");
    let history = shakedown::history::History::read_file(&run_dir.join("history.jsonl")).unwrap();
    // The nemesis runs one op at a time: its events pair up in order (invoke, completion).
    let events: Vec<_> = history.ops.iter().filter(|o| !o.is_client()).collect();
    assert!(events.len() % 2 == 0, "a nemesis op never completed");
    let ops: Vec<_> = events.chunks(2).map(|p| (p[0], p[1])).collect();
    let kills: Vec<_> = ops.iter().filter(|(o, _)| o.f == "kill").collect();
    assert!(!kills.is_empty(), "no kill was tried");
    for (invoke, done) in &kills {
        assert_eq!(invoke.f, done.f);
        let error = done.error.as_deref().unwrap_or_default();
        assert!(error.contains("bound of 3 s ran out"), "{error}");
        let took = (done.time_ns - invoke.time_ns) as f64 / 1e9;
        assert!((2.9..8.0).contains(&took), "kill took {took} s: {error}");
    }
    // After each cut-off kill the nemesis was free: the start that heals it ran.
    let starts: Vec<_> = ops.iter().filter(|(o, _)| o.f == "start").collect();
    assert!(!starts.is_empty(), "no start ran");
    for (_, done) in &starts {
        let error = done.error.as_deref().unwrap_or_default();
        assert!(!error.contains("not run"), "{error}");
    }
}

/// The minimal client in PROTOCOL.md is the file the test above runs, word for word.
#[test]
fn the_documented_minimal_client_is_the_tested_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("PROTOCOL.md")).unwrap();
    let code = std::fs::read_to_string(root.join("tests/data/toykv/minimal_client.py")).unwrap();
    assert!(
        doc.contains(&format!("```python\n{code}```")),
        "PROTOCOL.md's client differs from tests/data/toykv/minimal_client.py"
    );
    assert!(code.lines().count() <= 32, "the minimal client grew");
}

/// `--db zookeeper` (systems/zookeeper.toml + kazoo client): a 5-node ensemble under
/// partitions with plain reads, then under pauses and membership changes (dynamic
/// reconfiguration through the spec's `members` / `remove_member` / `add_member`) with sync
/// reads. The runs must complete with a verdict and a report; which verdict is not assumed
/// (plain reads may be stale). The membership run removes a server, sees every answering
/// server's view lose it, and adds it back.
#[test]
fn zookeeper_runs_under_partitions_pauses_and_reconfiguration() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    for (reads, nemesis) in [("plain", "partition"), ("sync", "membership,pause")] {
        let (code, run_dir, results) = cli::run_results(
            &SANDBOX,
            &[
                "--db",
                "zookeeper",
                "--db-opt",
                &format!("reads={reads}"),
                "--nemesis",
                nemesis,
                "--time-limit",
                "20",
                "--seed",
                "2",
            ],
            &tmp.path().join("reports"),
        );
        let verdict = results["valid"].as_str().unwrap_or_default().to_string();
        assert!(
            matches!(
                (code, verdict.as_str()),
                (0, "valid") | (1, "invalid") | (2, "unknown")
            ),
            "{reads}/{nemesis}: exit {code}, results {results}"
        );
        assert_eq!(results["completion"]["status"], "completed", "{results}");
        let checkers: Vec<&str> = results["checkers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["checker"].as_str())
            .collect();
        assert_eq!(checkers, ["linearizable", "session"]);
        assert!(results["client_protocol_errors"]["total"].is_u64());
        assert!(run_dir.join("index.html").is_file());
        for n in 1..=5 {
            let log = run_dir.join(format!("logs/n{n}/zookeeper.log"));
            assert!(log.is_file(), "{} missing", log.display());
        }
        // Ops reached the ensemble: versions came back from ZooKeeper.
        let history =
            shakedown::history::History::read_file(&run_dir.join("history.jsonl")).unwrap();
        assert!(
            history
                .ops
                .iter()
                .any(|o| o.version.is_some_and(|v| v >= 1)),
            "{reads}: no versioned op"
        );
        let test = read_json(&run_dir.join("test.json"));
        assert!(
            test["db"]["version"]
                .as_str()
                .unwrap_or_default()
                .contains("3.8"),
            "{}",
            test["db"]
        );
        if nemesis.contains("membership") {
            zookeeper_reconfigured(&run_dir, &results);
        }
        eprintln!(
            "zookeeper reads={reads} nemesis={nemesis}: {verdict} ({})",
            run_dir.display()
        );
    }
}

/// A ZooKeeper run under `membership` removed a server (the merged view lost it, each server's
/// log shows the new configuration) and added it back (every server a member at the end).
fn zookeeper_reconfigured(run_dir: &Path, results: &Value) {
    let counts = &results["membership"]["changes"];
    let ok = |f: &str| counts[f]["ok"].as_u64().unwrap_or(0);
    assert!(
        ok("shrink-cluster") >= 1 && ok("grow-cluster") >= 1,
        "{counts}"
    );
    let history = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let changes: Vec<Value> = history
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|op| op["f"] == "shrink-cluster" || op["f"] == "grow-cluster")
        .filter(|op| op["value"]["members"].is_array())
        .collect();
    let shrink = changes
        .iter()
        .find(|op| op["f"] == "shrink-cluster" && op["value"]["retired"] == true)
        .unwrap_or_else(|| panic!("no confirmed shrink-cluster: {changes:?}"));
    let node = shrink["value"]["node"].as_str().unwrap();
    assert!(
        !shrink["value"]["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == node),
        "{shrink}"
    );
    let last = changes.last().unwrap();
    assert_eq!(last["f"], "grow-cluster", "{last}");
    let members: Vec<&str> = last["value"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(members, ["n1", "n2", "n3", "n4", "n5"], "{last}");
}

fn spec_file(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("bad.toml");
    std::fs::write(&p, body).unwrap();
    p
}

/// Usage errors, before anything is touched: exit 3 with the file, line and field, or the flag.
#[test]
fn bad_specs_and_options_are_refused_with_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let bad = spec_file(
        tmp.path(),
        "name = \"toy\"\n\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\nreboot = \"x\"\n[client]\ncommand = [\"c\"]\n",
    );
    let bad = bad.to_str().unwrap();
    let spec = toykv();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--db", bad],
            format!("{bad}:7: commands.reboot: unknown command"),
        ),
        (
            vec!["--db", "no-such-system"],
            "systems/no-such-system.toml".into(),
        ),
        (
            vec!["--db", &spec, "--db-opt", "speed=11"],
            "--db-opt: toykv has no option \"speed\" (options: misbehave)".into(),
        ),
        (
            vec!["--db", &spec, "--db-opt", "misbehave=maybe"],
            "expected one of no, yes".into(),
        ),
        (
            vec!["--db", "etcd", "--db-opt", "a=b"],
            "etcd has no options".into(),
        ),
        (
            vec![
                "--db",
                &spec,
                "--nemesis",
                "partition,kill",
                "--read-from",
                "any",
            ],
            "--read-from".into(),
        ),
    ];
    for (args, words) in cases {
        let mut all = vec!["run", "--reports", reports.to_str().unwrap()];
        all.extend(&SANDBOX);
        all.extend(&args);
        let out = shakedown(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(&words), "{args:?}: {stderr}");
        assert!(!reports.exists(), "{args:?} created a run");
    }
    // A fault the spec has no command for is refused, naming the system and the command.
    let no_kill = spec_file(
        tmp.path(),
        "name = \"nokill\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
    );
    let out = shakedown(&[
        "run",
        "--reports",
        reports.to_str().unwrap(),
        "--db",
        no_kill.to_str().unwrap(),
        "--nemesis",
        "partition,kill",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("nokill has no `kill` command"), "{stderr}");
}
