//! `shakedown compare` end to end: a two-cell matrix on a real sandbox (etcd, one node isolated
//! at a time) where serializable reads are refuted and linearizable reads hold; `--resume` runs
//! nothing twice; an interrupted compare is never green and resumes to completion; spec errors
//! and `--dry-run` without a cluster. Sandbox `sdcmp`, 10.74.0.0/24, brought down at the end.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, command, root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const SANDBOX: [&str; 4] = [
    "--sandbox-name",
    "sdcmp",
    "--sandbox-subnet",
    "10.74.0.0/24",
];

const READS: &str = r#"
title = "etcd reads"
seeds = 1
[run]
db = "etcd"
workload = "register"
nemesis = "isolate"
nemesis-interval = 2
rate = 500
time-limit = 25
[[matrix]]
name = "{read-mode} reads"
axes = { read-mode = ["linearizable", "serializable"] }
claims = ["linearizable", "read-your-writes"]
"#;

fn compare(spec: &Path, reports: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "compare",
        spec.to_str().unwrap(),
        "--reports",
        reports.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = shakedown(&args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn matrix(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("matrix.json")).unwrap()).unwrap()
}

fn compare_dir(reports: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(reports.join("compare"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

fn outcome<'a>(m: &'a Value, cell: &str, claim: &str) -> &'a Value {
    m["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cell"]["name"] == cell)
        .and_then(|c| {
            c["outcomes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["claim"] == claim)
        })
        .unwrap_or_else(|| panic!("no {cell} / {claim} in {m}"))
}

fn run_dirs(reports: &Path) -> usize {
    shakedown::store::runs_in(reports).unwrap().len()
}

#[test]
fn serializable_reads_are_refuted_linearizable_reads_hold_and_resume_runs_nothing_twice() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("reads.toml");
    std::fs::write(&spec, READS).unwrap();
    let reports = tmp.path().join("reports");
    let mut extra = vec!["--"];
    extra.extend(SANDBOX);
    let (code, stdout, stderr) = compare(&spec, &reports, &extra);
    assert_eq!(code, 1, "a refuted claim exits 1\n{stdout}\n{stderr}");
    let dir = compare_dir(&reports);
    let m = matrix(&dir);
    let lin = outcome(&m, "linearizable reads", "linearizable");
    assert_eq!(lin["status"], "held", "{lin}");
    let ser = outcome(&m, "serializable reads", "linearizable");
    assert_eq!(ser["status"], "refuted", "{ser}");
    assert!(
        ser["text"]
            .as_str()
            .unwrap()
            .contains("keys not linearizable"),
        "{ser}"
    );
    // The witness link is the refuting run's page, reachable from the matrix page.
    let witness = PathBuf::from(ser["witness_run"].as_str().unwrap());
    assert!(
        witness.join("index.html").is_file(),
        "{}",
        witness.display()
    );
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let rel = pathdiff::diff_paths(&witness, &dir).unwrap();
    assert!(
        page.contains(&format!("{}/index.html", rel.display())),
        "the page links the witness run by a relative path"
    );
    assert!(dir.join(&rel).join("index.html").is_file());
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("tests=\"4\" failures=\"1\" errors=\"0\""),
        "{junit}"
    );
    assert!(
        stdout.contains("serializable reads · linearizable: refuted in 1/1"),
        "{stdout}"
    );
    assert_eq!(run_dirs(&reports), 2);

    // Resuming a finished compare runs nothing and reaches the same verdict.
    let dir_s = dir.to_str().unwrap().to_string();
    let mut extra = vec!["--resume", dir_s.as_str(), "--"];
    extra.extend(SANDBOX);
    let (code, _, stderr) = compare(&spec, &reports, &extra);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("0 runs to do (resumed)"), "{stderr}");
    assert_eq!(run_dirs(&reports), 2);
}

#[test]
fn an_interrupted_compare_is_never_green_and_resume_finishes_it() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("quiet.toml");
    std::fs::write(
        &spec,
        "seeds = 1\n[[cell]]\nname = \"quiet\"\nrun = { nemesis = \"none\", time-limit = 60 }\nclaims = [\"linearizable\"]\n",
    )
    .unwrap();
    let reports = tmp.path().join("reports");
    let child = command()
        .args(["compare", spec.to_str().unwrap(), "--reports"])
        .arg(&reports)
        .arg("--")
        .args(SANDBOX)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the run is recording its workload.
    // Generous: the first run in this binary brings the sandbox and etcd up, on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(240);
    let recording = loop {
        let started = shakedown::store::runs_in(&reports)
            .ok()
            .into_iter()
            .flatten()
            .any(|r| std::fs::metadata(r.dir.history_path()).is_ok_and(|m| m.len() > 1000));
        if started || Instant::now() > deadline {
            break started;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !recording {
        // SAFETY: kill(2) of the child this test started, by PID.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        panic!(
            "the run never started recording: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // SAFETY: kill(2) of the child this test started, by PID.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "interrupted → unknown\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("interrupted; continue with:"), "{stdout}");
    let dir = compare_dir(&reports);
    let m = matrix(&dir);
    assert_eq!(m["interrupted"], true);
    let o = outcome(&m, "quiet", "linearizable");
    assert_eq!(o["status"], "unknown", "{o}");
    assert_eq!(m["cells"][0]["runs"][0]["completion"], "interrupted", "{m}");
    assert!(
        std::fs::read_to_string(dir.join("index.html"))
            .unwrap()
            .contains("--resume")
    );

    // Resume (shortened on the command line): the interrupted run is run again and holds.
    let dir_s = dir.to_str().unwrap().to_string();
    let mut extra = vec!["--resume", dir_s.as_str(), "--", "--time-limit", "3"];
    extra.extend(SANDBOX);
    let (code, stdout, stderr) = compare(&spec, &reports, &extra);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let m = matrix(&dir);
    assert_eq!(m["interrupted"], false);
    assert_eq!(outcome(&m, "quiet", "linearizable")["status"], "held");
    assert_eq!(m["cells"][0]["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn spec_errors_name_the_file_line_and_cell_and_dry_run_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[cell]]\nname = \"a\"\nclaims = [\"linearizable\", \"serialisable\"]\n",
    )
    .unwrap();
    let (code, _, stderr) = compare(&bad, &reports, &[]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3", bad.display())) && stderr.contains("unknown claim"),
        "{stderr}"
    );
    std::fs::write(
        &bad,
        "[[cell]]\nname = \"a\"\nrun = { read-mod = \"serializable\" }\nclaims = [\"linearizable\"]\n",
    )
    .unwrap();
    let (code, _, stderr) = compare(&bad, &reports, &[]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("cell \"a\"") && stderr.contains("--read-mode"),
        "names the cell and suggests the flag: {stderr}"
    );
    let (code, stdout, stderr) = compare(
        Path::new("etcd-reads"),
        &reports,
        &["--dry-run", "--seeds", "2", "--", "--time-limit", "5"],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 8, "4 cells × 2 seeds: {stdout}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("shakedown run --db etcd")
                && l.contains("--time-limit 5")
                && !l.contains("--time-limit 30")),
        "{stdout}"
    );
    assert!(!reports.exists(), "a dry run writes nothing");
}
