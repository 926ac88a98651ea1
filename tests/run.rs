//! End-to-end runs of the `shakedown` binary against a real sandbox cluster: network
//! namespaces, sshd, etcd, iptables, signals. Needs root (CI runs as root); when not root each
//! test prints why it did nothing. Tests take a lock so only one cluster runs at a time, and each
//! brings its own sandbox (`sdrun`, 10.75.0.0/24) down at the end, also on failure.

use serde_json::Value;
use shakedown::history::{History, OpType, Process};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdrun",
    "--sandbox-subnet",
    "10.75.0.0/24",
];

fn run_json(extra: &[&str], reports: &Path) -> (i32, Value, String) {
    cli::run_json(&SANDBOX, extra, reports)
}

fn nemesis_file(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("nemesis.toml");
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn partitions_kills_and_pauses_keep_linearizable_reads_valid() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let nem = nemesis_file(
        tmp.path(),
        r#"interval_s = 2.0
order = "sequential"
[[faults]]
kind = "partition"
shape = "one"
[[faults]]
kind = "kill"
targets = "one"
[[faults]]
kind = "pause"
targets = "one"
[[faults]]
kind = "partition"
shape = "halves"
"#,
    );
    let reports = tmp.path().join("reports");
    let (code, out, stderr) = run_json(
        &[
            "--time-limit",
            "20",
            "--seed",
            "42",
            "--nemesis",
            nem.to_str().unwrap(),
        ],
        &reports,
    );
    let run_dir = PathBuf::from(out["run_dir"].as_str().unwrap());
    assert_eq!(
        code,
        0,
        "verdict {} ({stderr}); run dir {}",
        out["valid"],
        run_dir.display()
    );
    assert_eq!(out["valid"], "valid");

    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    assert!(h.warnings.is_empty(), "{:?}", h.warnings);
    let pairs = h.pairs().expect("well-formed history");
    let invokes: Vec<usize> = (0..h.ops.len())
        .filter(|&i| h.ops[i].is_client() && h.ops[i].op_type == OpType::Invoke)
        .collect();
    assert!(invokes.len() > 1000, "only {} client ops", invokes.len());
    for &i in &invokes {
        let done = pairs[i].unwrap_or_else(|| panic!("invoke {i} has no completion"));
        assert!(matches!(
            h.ops[done].op_type,
            OpType::Ok | OpType::Fail | OpType::Info
        ));
    }
    // Every fault kind was injected and recorded with what it did, then undone.
    let nemesis: Vec<_> = h
        .ops
        .iter()
        .filter(|o| o.process == Process::Nemesis)
        .collect();
    let completed = |f: &str| {
        nemesis
            .iter()
            .filter(|o| o.f == f && o.value.is_object())
            .count()
    };
    assert!(
        completed("start-partition") >= 2,
        "partitions: {nemesis:#?}"
    );
    assert!(
        completed("kill") >= 1 && completed("pause") >= 1,
        "{nemesis:#?}"
    );
    assert!(completed("stop-partition") >= 2 || nemesis.iter().any(|o| o.f == "stop-partition"));
    // After the final heal every etcd runs again, and the run asked and recorded it.
    let status = nemesis
        .iter()
        .rev()
        .find(|o| o.f == "db-status" && o.value.is_object())
        .expect("a db-status after the final heal");
    assert_eq!(
        status.value["running"],
        serde_json::json!(["n1", "n2", "n3", "n4", "n5"]),
        "{:?}",
        status.value
    );
    let grudge = nemesis
        .iter()
        .find(|o| o.f == "start-partition" && o.value.is_object())
        .map(|o| o.value["grudge"].clone())
        .unwrap();
    assert!(
        grudge.as_object().is_some_and(|g| !g.is_empty()),
        "{grudge}"
    );
    // Faults happened while clients were running: client ops after the first fault.
    let first_fault = nemesis
        .iter()
        .find(|o| o.f == "start-partition")
        .unwrap()
        .index;
    assert!(invokes.iter().any(|&i| h.ops[i].index > first_fault));
    // The run directory is complete.
    let test: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["seed"], 42);
    // The run records what its check is told: the workload, its model and the semantics.
    assert_eq!(test["check"]["workload"], "register", "{test}");
    assert_eq!(test["check"]["model"], "cas-register", "{test}");
    assert_eq!(test["check"]["semantics"], "etcd", "{test}");
    assert!(
        test["db"]["version"]
            .as_str()
            .unwrap_or("")
            .contains("etcd"),
        "{test}"
    );
    let results: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["valid"], "valid");
    for n in 1..=5 {
        let log = run_dir.join(format!("logs/n{n}/etcd.log"));
        assert!(
            std::fs::metadata(&log)
                .map(|m| m.len() > 0)
                .unwrap_or(false),
            "{log:?}"
        );
    }
    // The offline check reproduces the verdict from the run directory alone.
    let out = shakedown(&["check", run_dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The fault journal records each fault before it is applied, with its undo, and every
    // applied fault was undone later.
    let journal: Vec<Value> = std::fs::read_to_string(run_dir.join("faults.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let injected: Vec<usize> = (0..journal.len())
        .filter(|&i| journal[i]["action"] == "inject" && journal[i]["event"] == "done")
        .collect();
    assert!(injected.len() >= 3, "{journal:#?}");
    for &i in &injected {
        let begin = journal[..i]
            .iter()
            .rposition(|r| r["action"] == "inject" && r["event"] == "begin")
            .expect("begin recorded before done");
        assert_eq!(journal[begin]["f"], journal[i]["f"]);
        let undo = &journal[i]["undo_with"];
        assert!(undo.is_string(), "{}", journal[i]);
        assert!(
            journal[i..]
                .iter()
                .any(|u| u["action"] == "undo" && &u["f"] == undo && u["event"] == "done"),
            "fault {} never undone",
            journal[i]
        );
    }
    // Session guarantees hold for linearizable reads.
    assert_eq!(results["checkers"][1]["checker"], "session");
    assert_eq!(results["checkers"][1]["verdict"], "valid");
    // Plots with fault bands were written, and `report` regenerates them from the directory.
    let raw = run_dir.join("latency-raw.svg");
    std::fs::remove_file(&raw).unwrap();
    let out = shakedown(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&raw).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("fault: partition") && svg.contains("fault: kill")
    );
    // The run page embeds the plots and links the journal; the reports index lists the run.
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("faults.jsonl") && !page.contains("<script"));
    // It reads top-down: the verdict, the plots, then the tables; the configuration folded
    // (closed); a register run's workload lists the register's knobs, not other kinds'.
    let at = |s: &str| {
        page.find(s)
            .unwrap_or_else(|| panic!("{s} missing from the run page"))
    };
    let order = [
        at("<h2 id=\"verdict\">"),
        at("<h2 id=\"plots\">"),
        at("<h2 id=\"checkers\">"),
        at("<h2 id=\"faults\">"),
        at("<details id=\"configuration\"><summary>"),
        at("<h2 id=\"files\">"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(page.contains("<th>read weight</th>") && page.contains("<th>cas weight</th>"));
    for other in ["append weight", "add weight", "max mops", "active keys"] {
        assert!(!page.contains(other), "a register run lists {other}");
    }
    let index = std::fs::read_to_string(reports.join("index.html")).unwrap();
    assert!(index.contains("etcd-register"), "{index}");
}

#[test]
fn serializable_reads_under_isolation_are_caught() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let (code, out, stderr) = run_json(
        &[
            "--time-limit",
            "25",
            "--read-mode",
            "serializable",
            "--nemesis",
            "isolate",
            "--nemesis-interval",
            "2",
            "--rate",
            "500",
        ],
        &reports,
    );
    assert_eq!(code, 1, "expected stale reads to be found: {out} {stderr}");
    assert_eq!(out["valid"], "invalid");
    let lin = &out["checkers"][0];
    assert_eq!(lin["checker"], "linearizable");
    let parts = lin["details"]["parts"].as_array().unwrap();
    let bad = parts
        .iter()
        .find(|p| p["verdict"] == "invalid")
        .expect("an invalid part");
    // A read is among the ops the witness needs (serializable reads are what can be stale). It
    // is not always the op that cannot be linearized: after a stale read, a cas that followed the
    // fresh value may be the first op left without a place (seen in CI).
    let witness = &bad["witness"];
    let reads_in = |ops: &serde_json::Value| {
        ops.as_array()
            .is_some_and(|a| a.iter().any(|o| o["f"] == "read"))
    };
    assert!(
        witness["op"]["f"] == "read" || reads_in(&witness["minimized"]),
        "{bad}"
    );
    // The witness page is written next to the history.
    let run_dir = PathBuf::from(out["run_dir"].as_str().unwrap());
    let page = std::fs::read_to_string(run_dir.join("linearizability.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("conflict") && page.len() < 1_000_000);
}

#[test]
fn set_workload_on_etcd_without_faults_loses_nothing_and_reads_every_key_finally() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let (code, out, stderr) = run_json(
        &[
            "--workload",
            "set",
            "--nemesis",
            "none",
            "--time-limit",
            "8",
            "--seed",
            "7",
        ],
        &reports,
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["valid"], "valid");
    let set = &out["checkers"][0];
    assert_eq!(set["checker"], "set", "{out}");
    let d = &set["details"];
    assert_eq!(d["lost"], 0, "{d}");
    assert_eq!(d["unexpected"], 0, "{d}");
    assert_eq!(d["keys_unknown"], 0, "{d}");
    assert!(d["acknowledged"].as_u64().unwrap() > 100, "{d}");
    // Every key used has a final read holding every acknowledged add.
    for k in d["keys"].as_array().unwrap() {
        assert_eq!(k["verdict"], "valid", "{k}");
        assert!(
            k["final_read"]["size"].as_u64().unwrap() >= k["acknowledged"].as_u64().unwrap(),
            "{k}"
        );
    }
    // The history: adds of run-wide unique integers, reads returning arrays.
    let run_dir = PathBuf::from(out["run_dir"].as_str().unwrap());
    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    let mut added = std::collections::HashSet::new();
    for op in h.ops.iter().filter(|o| o.is_client()) {
        match (op.f.as_str(), op.op_type) {
            ("add", OpType::Invoke) => assert!(added.insert(op.value.as_i64().unwrap())),
            ("read", OpType::Ok) => assert!(op.value.is_array(), "{op:?}"),
            ("add" | "read", _) => {}
            (f, _) => panic!("unexpected op {f}"),
        }
    }
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(page.contains("<h3 id=\"anomalies-set\">Set</h3>"));
}

#[test]
fn bad_inputs_give_clear_errors_not_panics() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let reports = reports.to_str().unwrap();

    // A malformed node list is a usage error naming the flag.
    let out = shakedown(&["run", "--nodes", "n1,,n2", "--reports", reports]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nodes"));

    // An unreachable node is named with its address.
    let out = shakedown(&[
        "run",
        "--nodes",
        "ghost=127.0.0.1",
        "--ssh-port",
        "1",
        "--no-host-key-check",
        "--reports",
        reports,
    ]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ghost") && err.contains("127.0.0.1:1"),
        "{err}"
    );

    // A key the nodes do not accept is an authentication error naming node and user.
    let mut up = vec!["sandbox", "up"];
    up.extend(SANDBOX);
    let o = shakedown(&up);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state = Path::new("/var/lib/shakedown/sandbox/sdrun/ssh");
    let wrong = tmp.path().join("wrong_key");
    let kg = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            wrong.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(kg.success());
    let kh = state.join("known_hosts");
    let out = shakedown(&[
        "run",
        "--nodes",
        "n1=10.75.0.1",
        "--ssh-key",
        wrong.to_str().unwrap(),
        "--known-hosts",
        kh.to_str().unwrap(),
        "--reports",
        reports,
    ]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        err.contains("n1") && err.contains("auth") && err.contains("root"),
        "{err}"
    );

    // A DB port already in use on a node: etcd cannot start, and the error says so.
    let mut blocker = Command::new("ip")
        .args(["netns", "exec", "sd-sdrun-n1", "perl", "-MIO::Socket::INET", "-e"])
        .arg("my $s = IO::Socket::INET->new(LocalAddr => '10.75.0.1:2379', Listen => 5, ReuseAddr => 1) or die $!; sleep 120")
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let t = std::time::Instant::now();
    let mut args = vec!["run", "--time-limit", "5", "--reports", reports];
    args.extend(SANDBOX);
    let out = shakedown(&args);
    let _ = blocker.kill();
    let _ = blocker.wait();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("n1") && err.contains("address already in use"),
        "{err}"
    );
    assert!(
        t.elapsed().as_secs() < 30,
        "took {:?} to notice",
        t.elapsed()
    );
}

/// Run a command inside sandbox node `n` over ssh with the sandbox's key; returns stdout.
fn on_node(n: usize, script: &str) -> String {
    let ssh = Path::new("/var/lib/shakedown/sandbox/sdrun/ssh");
    let out = Command::new("ssh")
        .args(["-i", ssh.join("id_ed25519").to_str().unwrap()])
        .args([
            "-o",
            &format!("UserKnownHostsFile={}", ssh.join("known_hosts").display()),
        ])
        .args(["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes"])
        .arg(format!("root@10.75.0.{n}"))
        .arg(script)
        .output()
        .expect("ssh");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Start `shakedown run --time-limit 60 <extra>` in the background (stdout piped, stderr to
/// `<reports>.stderr`, shown if the run ends early) and wait until `ready` holds for the lines
/// of its history.
fn start_run_until(
    reports: &Path,
    extra: &[&str],
    what: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> std::process::Child {
    let stderr_path = reports.with_extension("stderr");
    let mut child = cli::command()
        .args(["run", "--time-limit", "60"])
        .args(["--reports", reports.to_str().unwrap()])
        .args(extra)
        .args(SANDBOX)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let history = reports.join("latest/history.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never happened"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "run ended ({status}) before {what}; its stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        let text = std::fs::read_to_string(&history).unwrap_or_default();
        let ops: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        if ready(&ops) {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Start a run, wait until the history shows `fault_f` completed, SIGKILL the controller.
fn kill_controller_during(fault_f: &str, reports: &Path, nemesis: &Path) {
    let nemesis = ["--quiet", "--nemesis", nemesis.to_str().unwrap()];
    let mut child = start_run_until(reports, &nemesis, fault_f, |ops| {
        ops.iter()
            .rev()
            .find(|o| o["process"] == "nemesis")
            // The completion, not the invoke (whose value is an object too): the fault is in
            // effect on its targets only once its completion is recorded.
            .is_some_and(|o| o["f"] == fault_f && o["type"] != "invoke" && o["value"].is_object())
    });
    child.kill().unwrap(); // SIGKILL: no cleanup runs in the controller
    child.wait().unwrap();
}

/// Completed client ops in a history.
fn client_completions(ops: &[Value]) -> usize {
    ops.iter()
        .filter(|o| o["process"].is_u64() && o["type"] != "invoke")
        .count()
}

#[test]
fn sigint_mid_workload_is_unknown_and_marked_interrupted() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let child = start_run_until(
        &reports,
        &["--json", "--nemesis", "none"],
        "200 client ops",
        |ops| client_completions(ops) >= 200,
    );
    // SAFETY: kill(2) on our own child's PID.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["valid"], "unknown", "{v}");
    assert_eq!(v["completion"]["status"], "interrupted", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("interrupted after ") && reason.ends_with(" s of 60 s"),
        "{reason}"
    );
    let run_dir = PathBuf::from(v["run_dir"].as_str().unwrap());
    let results: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["valid"], "unknown");
    assert_eq!(results["reason"], reason);
    // What was recorded was checked: linearizable reads under no faults hold.
    assert_eq!(results["checked"], "valid", "{results}");
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(
        page.contains(">interrupted</span></h1>"),
        "no interrupted badge"
    );
    assert!(page.contains(reason));
    let index = std::fs::read_to_string(reports.join("index.html")).unwrap();
    assert!(index.contains(">interrupted</span>"), "{index}");
}

#[test]
fn double_ctrl_c_aborts_and_the_index_marks_the_run() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let child = start_run_until(
        &reports,
        &["--quiet", "--nemesis", "none"],
        "200 client ops",
        |ops| client_completions(ops) >= 200,
    );
    for _ in 0..2 {
        // SAFETY: kill(2) on our own child's PID.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let run_dir = std::fs::canonicalize(reports.join("latest")).unwrap();
    let c: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("completion.json")).unwrap()).unwrap();
    assert_eq!(c["status"], "aborted", "{c}");
    let index = std::fs::read_to_string(reports.join("index.html")).unwrap();
    assert!(index.contains(">aborted</span>"), "{index}");
}

#[test]
fn killed_controller_then_report_is_incomplete_not_valid() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let mut child = start_run_until(
        &reports,
        &["--quiet", "--nemesis", "none"],
        "200 client ops",
        |ops| client_completions(ops) >= 200,
    );
    child.kill().unwrap(); // SIGKILL: no completion record, no results
    child.wait().unwrap();
    let run_dir = std::fs::canonicalize(reports.join("latest")).unwrap();
    assert!(!run_dir.join("results.json").exists());
    let out = shakedown(&["report", run_dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("controller killed"), "{stdout}");
    let results: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["valid"], "unknown", "{results}");
    assert_eq!(results["completion"]["status"], "killed");
    let page = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(page.contains(">incomplete</span></h1>") && page.contains("controller killed"));
    assert!(!page.contains("badge valid\">valid</span></h1>"));
}

fn chain_rules(n: usize) -> usize {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("sd-sdrun-n{n}"),
            "iptables",
            "-w",
            "-S",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("SHAKEDOWN"))
        .count()
}

#[test]
fn heal_undoes_partitions_pauses_kills_delays_and_power_losses_left_by_a_killed_controller() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    // Its own reports dir: heal appends its undo steps to <reports>/latest/faults.jsonl.
    let mut heal = vec!["heal", "--reports", reports.to_str().unwrap()];
    heal.extend(SANDBOX);

    // Partition.
    let nem = nemesis_file(
        tmp.path(),
        "interval_s = 3.0\n[[faults]]\nkind = \"partition\"\nshape = \"halves\"\n",
    );
    kill_controller_during("start-partition", &reports, &nem);
    let drops: usize = (1..=5).map(chain_rules).sum();
    assert!(
        drops > 5,
        "partition not in place before heal ({drops} rules)"
    );
    let out = shakedown(&heal);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in 1..=5 {
        assert_eq!(
            chain_rules(n),
            0,
            "n{n} still has SHAKEDOWN rules after heal"
        );
    }

    // Pause.
    let nem = nemesis_file(
        tmp.path(),
        "interval_s = 3.0\n[[faults]]\nkind = \"pause\"\ntargets = \"minority\"\n",
    );
    kill_controller_during("pause", &reports, &nem);
    let state = |n| {
        on_node(
            n,
            "cut -d' ' -f3 /proc/$(cat /tmp/shakedown/etcd/etcd.pid)/stat",
        )
    };
    let stopped = (1..=5).filter(|&n| state(n).trim() == "T").count();
    assert_eq!(
        stopped, 2,
        "expected the paused minority in state T before heal"
    );
    let out = shakedown(&heal);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in 1..=5 {
        let s = state(n);
        assert!(
            !s.trim().is_empty() && s.trim() != "T",
            "n{n} etcd state {s:?} after heal"
        );
    }
    // Healing twice is harmless.
    assert!(shakedown(&heal).status.success());

    // Kill: the journal of the killed controller says which node's DB to restart.
    let nem = nemesis_file(
        tmp.path(),
        "interval_s = 3.0\n[[faults]]\nkind = \"kill\"\ntargets = \"one\"\n",
    );
    kill_controller_during("kill", &reports, &nem);
    let running = |n| {
        !on_node(
            n,
            "grep -l etcd /proc/$(cat /tmp/shakedown/etcd/etcd.pid)/cmdline 2>/dev/null",
        )
        .trim()
        .is_empty()
    };
    assert_eq!(
        (1..=5).filter(|&n| running(n)).count(),
        4,
        "one etcd should be dead before heal"
    );
    let out = shakedown(&heal);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("restarted etcd (killed per the journal)"),
        "{stdout}"
    );
    assert!((1..=5).all(running), "every etcd runs again after heal");
    let journal = std::fs::read_to_string(reports.join("latest/faults.jsonl")).unwrap();
    let records: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        shakedown::nemesis::outstanding_faults(&records).is_empty(),
        "{journal}"
    );
    // heal also checked what the killed controller recorded: results and a page marked
    // incomplete, never valid.
    let killed = std::fs::canonicalize(reports.join("latest")).unwrap();
    assert!(stdout.contains("controller killed"), "{stdout}");

    // Delay through the NFQUEUE delayer: heal removes the queue rule and ends the delayer.
    let nem = nemesis_file(
        tmp.path(),
        "interval_s = 3.0\n[[faults]]\nkind = \"delay\"\ntargets = \"one\"\ndelay_ms = 30\nbackend = \"nfqueue\"\n",
    );
    kill_controller_during("start-delay", &reports, &nem);
    let delay_rules = |n| {
        on_node(n, "iptables -w -S OUTPUT")
            .lines()
            .filter(|l| l.contains(shakedown::nemesis::packet::DELAY_COMMENT))
            .count()
    };
    let delayer = |n| {
        !on_node(n, "pgrep -f 'shakedown netdelay'")
            .trim()
            .is_empty()
    };
    assert_eq!(
        (1..=5).map(delay_rules).sum::<usize>(),
        1,
        "no delay rule before heal"
    );
    assert_eq!((1..=5).filter(|&n| delayer(n)).count(), 1);
    let out = shakedown(&heal);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("removed 1 delay queue rule(s) and stopped the packet delayer"),
        "{stdout}"
    );
    assert_eq!((1..=5).map(delay_rules).sum::<usize>(), 0);
    assert!(!(1..=5).any(delayer), "a delayer survived heal");

    // Power loss: the journal names the layer; heal starts the DB again on it.
    let nem = nemesis_file(
        tmp.path(),
        "interval_s = 3.0\n[[faults]]\nkind = \"power-loss\"\ntargets = \"one\"\n",
    );
    kill_controller_during("power-loss", &reports, &nem);
    assert_eq!(
        (1..=5).filter(|&n| running(n)).count(),
        4,
        "one etcd should be without power before heal"
    );
    let out = shakedown(&heal);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("restarted etcd (power lost per the journal"),
        "{stdout}"
    );
    assert!((1..=5).all(running), "every etcd runs again after heal");
    // Each node's data directory is still served by a live layer (no stale mount).
    for n in 1..=5 {
        let ls = on_node(n, "ls /tmp/shakedown/etcd/data >/dev/null && echo readable");
        assert_eq!(ls.trim(), "readable", "n{n}: data directory after heal");
    }
    let results: Value =
        serde_json::from_slice(&std::fs::read(killed.join("results.json")).unwrap()).unwrap();
    assert_ne!(results["valid"], "valid", "{results}");
    assert_eq!(results["completion"]["status"], "killed", "{results}");
    let page = std::fs::read_to_string(killed.join("index.html")).unwrap();
    assert!(page.contains(">incomplete</span>"), "no incomplete badge");
}
