//! Test fixture shared by the sandbox integration tests: the root check, the built `shakedown`
//! binary (asserting it never panics), a guard that brings a test's sandbox down on drop (also
//! on failure), and `shakedown run --json` returning its parsed output and results.json.
//!
//! Every test starts the binary through [`command`], which points `SHAKEDOWN_PROTECT_DIR` at the
//! repository's `reports/`: a test that forgets its own `--reports` or `--journal` fails with
//! "refusing to write under …" instead of touching the user's runs (tests/report_honesty.rs,
//! `no_test_starts_the_binary_without_protecting_reports`, checks that no test starts the binary
//! any other way).
//!
//! Each test file includes it with `#[path = "common/cli.rs"] mod cli;` and uses what it needs.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether we are root; when not, says why the calling test does nothing.
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipping: sandbox tests need root (network namespaces, iptables, tc)");
    }
    root
}

/// The repository's `reports/` directory, which no test may write under.
pub fn repo_reports() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("reports")
}

/// The binary's path, handed to nodes that run it themselves (the delay fault's NFQUEUE
/// delayer), which never write reports. Runs are started with [`command`].
#[allow(dead_code)]
pub fn exe_path() -> &'static str {
    env!("CARGO_BIN_EXE_shakedown") // not a spawn: no PROTECT_ENV, nothing it starts writes reports
}

/// The built binary, with the repository's `reports/` protected from writes.
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shakedown"));
    c.env(shakedown::store::PROTECT_ENV, repo_reports());
    c
}

/// Run the built binary with `args`; fails the test if it panicked.
pub fn shakedown(args: &[&str]) -> Output {
    let out = command().args(args).output().expect("run shakedown binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "shakedown panicked: {stderr}");
    out
}

/// Brings the sandbox named by these flags (`--sandbox-name N --sandbox-subnet S`) down when
/// dropped.
pub struct SandboxGuard(pub &'static [&'static str]);

impl Drop for SandboxGuard {
    fn drop(&mut self) {
        let mut args = vec!["sandbox", "down"];
        args.extend(self.0);
        let out = shakedown(&args);
        if !out.status.success() {
            eprintln!(
                "sandbox down failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// When a run could not be carried out (exit 3 or more), prints its `error:` lines first, so a
/// failing test's first line is the cause, not the progress and cleanup lines before it.
pub fn say_cause_first(code: Option<i32>, stderr: &str) {
    if code.is_some_and(|c| c < 3) {
        return;
    }
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error:") || l.starts_with("shakedown: error"))
        .collect();
    let cause = match errors.as_slice() {
        [] => stderr.lines().last().unwrap_or("no output"),
        [first, ..] => first,
    };
    eprintln!("shakedown run failed (exit {code:?}): {cause}");
}

/// `shakedown run --json --reports DIR <sandbox flags> <extra>`: (exit code, stdout JSON, stderr).
pub fn run_json(sandbox: &[&str], extra: &[&str], reports: &Path) -> (i32, Value, String) {
    let mut args = vec!["run", "--json", "--reports", reports.to_str().unwrap()];
    args.extend(sandbox);
    args.extend(extra);
    let out = shakedown(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    say_cause_first(out.status.code(), &stderr);
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}\nstderr: {stderr}"));
    (out.status.code().unwrap_or(-1), v, stderr)
}

/// [`run_json`], returning (exit code, run dir, the run's results.json).
pub fn run_results(sandbox: &[&str], extra: &[&str], reports: &Path) -> (i32, PathBuf, Value) {
    let (code, v, stderr) = run_json(sandbox, extra, reports);
    let run_dir = PathBuf::from(
        v["run_dir"]
            .as_str()
            .unwrap_or_else(|| panic!("no run_dir: {v}\nstderr: {stderr}")),
    );
    let results: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    (code, run_dir, results)
}

/// The checker `name`'s entry of a results.json (panics, naming it, when there is none).
pub fn checker<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["checkers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["checker"] == name))
        .unwrap_or_else(|| panic!("no {name} checker in {results}"))
}

/// The session checker's entry for guarantee `name` (panics, naming it, when there is none).
pub fn guarantee<'a>(session: &'a Value, name: &str) -> &'a Value {
    session["details"]["guarantees"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["guarantee"] == name))
        .unwrap_or_else(|| panic!("no {name} in {session}"))
}
