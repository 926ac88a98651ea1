//! End-to-end tests of `shakedown export`: a run directory (or history file) exported, then
//! checked with the flags export prints, gives the verdict `shakedown check` gives the run, for
//! every format that can hold the history; what a format cannot hold is refused in words.
//!
//! Owns only these CLI assertions; the writers are unit-tested in the core's `export`.

use std::path::{Path, PathBuf};
use std::process::Output;

#[path = "common/cli.rs"]
mod cli;
use cli::shakedown;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Export `input` as `format` into `dir`, then check the export with the command export printed.
/// Returns (the check's exit code, its output, export's stderr).
fn round_trip(input: &Path, format: &str, dir: &Path) -> (i32, String, String) {
    let out = dir.join(format!("exported.{format}"));
    let o = shakedown(&[
        "export",
        path(input),
        "--format",
        format,
        "--out",
        path(&out),
    ]);
    assert_eq!(code(&o), 0, "export {format}: {}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let command = stderr
        .lines()
        .find_map(|l| l.strip_prefix("check it as the run was checked: shakedown "))
        .unwrap_or_else(|| panic!("no check command in: {stderr}"));
    let args: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(args[1], path(&out), "{stderr}");
    let c = shakedown(&args);
    (code(&c), text(&c), stderr)
}

#[test]
fn an_exported_run_checks_as_the_run_did_in_edn_and_elle_json() {
    let dir = tempfile::tempdir().unwrap();
    // An invalid register run (stale reads from isolated members), checked with the model and
    // etcd semantics its test.json records; a valid one (a bare history.jsonl: our defaults).
    let valid = dir.path().join("valid-run");
    std::fs::create_dir(&valid).unwrap();
    std::fs::copy(
        data("histories/run-valid/history.jsonl"),
        valid.join("history.jsonl"),
    )
    .unwrap();
    for (run, verdict) in [
        (data("reports/serializable-isolate"), 1),
        (valid, 0),
        (data("histories/set-lost.jsonl"), 1),
    ] {
        let o = shakedown(&["check", path(&run)]);
        assert_eq!(code(&o), verdict, "{}", text(&o));
        for format in ["edn", "elle-json"] {
            let (c, out, stderr) = round_trip(&run, format, dir.path());
            assert_eq!(c, verdict, "{} as {format}: {stderr}\n{out}", run.display());
        }
    }
    // The printed flags carry what the formats cannot: model and register semantics.
    let (_, _, stderr) = round_trip(&data("reports/serializable-isolate"), "edn", dir.path());
    assert!(
        stderr.contains("--model cas-register --semantics etcd"),
        "{stderr}"
    );
    assert!(stderr.contains("wrote 1984 op(s) as edn to"), "{stderr}");
}

#[test]
fn porcupine_holds_reads_and_writes_and_refuses_cas() {
    let dir = tempfile::tempdir().unwrap();
    // A stale read (invalid) and the same history with a fresh read (valid), both with a nemesis
    // op Porcupine's lines cannot hold.
    let write = |name: &str, last_read: &str| {
        let run = dir.path().join(name);
        std::fs::create_dir(&run).unwrap();
        let ops = [
            r#"{"index":0,"time":1,"type":"invoke","process":0,"f":"write","key":"k","value":1}"#,
            r#"{"index":1,"time":2,"type":"ok","process":0,"f":"write","key":"k","value":1}"#,
            r#"{"index":2,"time":3,"type":"info","process":"nemesis","f":"start-partition","value":null}"#,
            r#"{"index":3,"time":4,"type":"invoke","process":1,"f":"read","key":"k","value":null}"#,
            &format!(
                r#"{{"index":4,"time":5,"type":"ok","process":1,"f":"read","key":"k","value":{last_read}}}"#
            ),
        ];
        std::fs::write(run.join("history.jsonl"), ops.join("\n") + "\n").unwrap();
        run
    };
    for (run, verdict) in [(write("stale", "null"), 1), (write("fresh", "1"), 0)] {
        let o = shakedown(&["check", path(&run)]);
        assert_eq!(code(&o), verdict, "{}", text(&o));
        let (c, out, stderr) = round_trip(&run, "porcupine", dir.path());
        assert_eq!(c, verdict, "{stderr}\n{out}");
        assert!(out.contains("porcupine history, 4 events"), "{out}");
        assert!(
            stderr.contains("note: left out 1 nemesis op(s)"),
            "{stderr}"
        );
        assert!(stderr.contains("--model kv"), "{stderr}");
    }
    // Standard output without --out.
    let o = shakedown(&[
        "export",
        path(&dir.path().join("fresh")),
        "--format",
        "porcupine",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .starts_with("{:process 0, :type :invoke, :f :put, :key \"k\", :value \"1\"}\n"),
        "{}",
        text(&o)
    );
    // A register run with cas: refused, naming the ops and the formats that hold them.
    let run = data("reports/serializable-isolate");
    let o = shakedown(&["export", path(&run), "--format", "porcupine"]);
    assert_eq!(code(&o), 3, "{}", text(&o));
    assert!(
        text(&o).contains("this history also has cas ×470: export it as edn or elle-json"),
        "{}",
        text(&o)
    );
    // A missing input is an error naming it.
    let o = shakedown(&["export", "/no/such/run", "--format", "edn"]);
    assert_eq!(code(&o), 3, "{}", text(&o));
    assert!(text(&o).contains("/no/such/run"), "{}", text(&o));
}
