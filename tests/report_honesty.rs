//! Offline checks (no root, no network, no sandbox) that verdicts are earned and tests are
//! harmless:
//!
//! - the reports-directory guard: no test starts the binary without protecting the repository's
//!   `reports/`, and with `SHAKEDOWN_PROTECT_DIR` set, `heal` (the command that once appended undo
//!   records to the user's `reports/latest/faults.jsonl`), `run` and `report` refuse to write
//!   under the protected directory and leave it byte for byte as it was;
//! - a run that never reached its workload (unreachable node) records why and does not become
//!   `reports/latest`;
//! - `shakedown report` on a run directory a killed controller left (no completion record) and on
//!   a completed run with no client ops: `unknown`, exit 2, never `valid`.
//!
//! Owns only these CLI assertions; the completion rules are unit-tested in `core/src/completion.rs`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "common/cli.rs"]
mod cli;

/// Every file, directory and symlink under `dir` with its size, mtime and link target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(e.path()).unwrap().display())
            } else {
                format!("{} {:?}", meta.len(), meta.modified().unwrap())
            };
            if meta.is_dir() {
                stack.push(e.path());
            }
            out.insert(e.path(), what);
        }
    }
    out
}

/// A fake run directory `<reports>/t/<stamp>` with a history, a journal and a `latest` link.
fn fake_run(reports: &Path, history: &str) -> PathBuf {
    let run = reports.join("t/20261201T070000.000Z");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("test.json"), r#"{"name":"t","time_limit_s":60}"#).unwrap();
    std::fs::write(run.join("history.jsonl"), history).unwrap();
    std::fs::write(
        run.join("faults.jsonl"),
        "{\"action\":\"inject\",\"event\":\"begin\",\"f\":\"kill\"}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("t/20261201T070000.000Z", reports.join("latest")).unwrap();
    run
}

/// A few ok client ops: one session writes key 1 and reads it back, with the system's versions.
const HISTORY: &str = concat!(
    r#"{"index":0,"time":1000,"type":"invoke","process":0,"f":"write","key":"1","value":3}"#,
    "\n",
    r#"{"index":1,"time":2000,"type":"ok","process":0,"f":"write","key":"1","value":3,"version":1}"#,
    "\n",
    r#"{"index":2,"time":3000,"type":"invoke","process":0,"f":"read","key":"1","value":null}"#,
    "\n",
    r#"{"index":3,"time":4000,"type":"ok","process":0,"f":"read","key":"1","value":3,"version":1}"#,
    "\n",
);

#[test]
fn no_test_starts_the_binary_without_protecting_reports() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let needle = concat!("CARGO_BIN_", "EXE_shakedown");
    let mut files = vec![];
    let mut stack = vec![tests];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut spawns = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !l.contains(needle) {
                continue;
            }
            spawns += 1;
            let next = lines[i..lines.len().min(i + 3)].join("\n");
            assert!(
                next.contains("PROTECT_ENV"),
                "{}:{}: starts the binary without `.env(shakedown::store::PROTECT_ENV, …)`; \
                 use cli::command() from tests/common/cli.rs",
                f.display(),
                i + 1
            );
        }
    }
    assert!(
        spawns >= 2,
        "found only {spawns} places starting the binary"
    );
    // And the shared fixture protects the repository's reports/.
    let cmd = cli::command();
    let protected = cmd
        .get_envs()
        .find(|(k, _)| *k == shakedown::store::PROTECT_ENV)
        .and_then(|(_, v)| v)
        .map(PathBuf::from);
    assert_eq!(protected, Some(cli::repo_reports()));
}

#[test]
fn heal_without_reports_cannot_touch_a_protected_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    fake_run(&reports, HISTORY);
    let before = snapshot(&reports);
    // The original bug: `heal` without --reports/--journal, run from the repository, defaults to
    // reports/latest/faults.jsonl.
    let out = cli::command()
        .env(shakedown::store::PROTECT_ENV, &reports)
        .current_dir(tmp.path())
        .args(["heal", "--nodes", "n1=127.0.0.1", "--ssh-port", "1"])
        .args(["--no-host-key-check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("refusing to write under") && stderr.contains("faults.jsonl"),
        "{stderr}"
    );
    assert_eq!(snapshot(&reports), before);
}

#[test]
fn run_and_report_refuse_a_protected_reports_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let run = fake_run(&reports, HISTORY);
    let before = snapshot(&reports);
    let protected = |args: &[&str]| {
        let out = cli::command()
            .env(shakedown::store::PROTECT_ENV, &reports)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code(), stderr)
    };
    let (code, stderr) = protected(&[
        "run",
        "--nodes",
        "n1=127.0.0.1",
        "--ssh-port",
        "1",
        "--no-host-key-check",
        "--reports",
        reports.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains("refusing to write under"), "{stderr}");
    let (code, stderr) = protected(&["report", run.to_str().unwrap()]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("refusing to write under"), "{stderr}");
    assert_eq!(snapshot(&reports), before);
}

/// `shakedown report <dir>`: (exit code, stdout, results.json).
fn report(run: &Path) -> (Option<i32>, String, Value) {
    let out = cli::shakedown(&["report", run.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let results: Value =
        serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap()).unwrap();
    (out.status.code(), stdout, results)
}

#[test]
fn report_of_a_killed_run_is_incomplete_and_of_a_complete_one_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let run = fake_run(&reports, HISTORY);
    // No completion record: the controller was killed.
    let (code, stdout, results) = report(&run);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(stdout.contains("controller killed"), "{stdout}");
    assert_eq!(results["valid"], "unknown");
    assert_eq!(results["checked"], "valid");
    assert_eq!(results["completion"]["status"], "killed");
    let page = std::fs::read_to_string(run.join("index.html")).unwrap();
    assert!(page.contains(">incomplete</span></h1>"));
    // The run sits in a reports tree: the index was rewritten and marks it.
    let index = std::fs::read_to_string(reports.join("index.html")).unwrap();
    assert!(index.contains(">incomplete</span>"), "{index}");
    // The same history with a completion record is valid.
    std::fs::write(
        run.join("completion.json"),
        r#"{"status":"completed","reason":"completed 60.0 s of 60 s"}"#,
    )
    .unwrap();
    let (code, stdout, results) = report(&run);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(results["valid"], "valid");
    assert!(results.get("reason").is_none(), "{results}");
}

#[test]
fn report_of_a_run_without_client_ops_is_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    // Outside a reports tree (no timestamp directory): no index is written next to it.
    let run = tmp.path().join("copy");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("test.json"), r#"{"name":"t"}"#).unwrap();
    std::fs::write(
        run.join("history.jsonl"),
        concat!(
            r#"{"index":0,"time":1000,"type":"info","process":"nemesis","f":"start-partition","value":null}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        run.join("completion.json"),
        r#"{"status":"completed","reason":"completed 60.0 s of 60 s"}"#,
    )
    .unwrap();
    let (code, stdout, results) = report(&run);
    assert_eq!(code, Some(2), "{stdout}");
    assert_eq!(results["valid"], "unknown");
    assert!(
        results["reason"]
            .as_str()
            .unwrap()
            .starts_with("no client ops recorded"),
        "{results}"
    );
    assert!(!tmp.path().join("index.html").exists());
}

#[test]
fn a_run_that_never_reached_its_workload_is_not_latest() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let out = cli::shakedown(&[
        "run",
        "--quiet",
        "--nodes",
        "ghost=127.0.0.1",
        "--ssh-port",
        "1",
        "--no-host-key-check",
        "--reports",
        reports.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("ghost"), "{stderr}");
    assert!(!reports.join("latest").exists());
    assert!(!reports.join("etcd-register/latest").exists());
    // Its directory says why it stopped.
    let run = std::fs::read_dir(reports.join("etcd-register"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let c: Value =
        serde_json::from_slice(&std::fs::read(run.join("completion.json")).unwrap()).unwrap();
    assert_eq!(c["status"], "not-started", "{c}");
    assert!(c["reason"].as_str().unwrap().contains("ghost"), "{c}");
}
