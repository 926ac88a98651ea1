//! End-to-end tests of `shakedown check` on constructed log histories (tests/data/histories/log):
//! one file per anomaly class of the log checker, a valid one with duplicates, and one without a
//! final read (unknown). Asserts the model chosen, the exit code, the counts in `--json` and the
//! witness text.
//!
//! Owns only these CLI assertions; the checker's rules are unit-tested in `checker::log`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

#[path = "common/cli.rs"]
mod cli;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/histories/log")
        .join(rel)
}

fn check(file: &str, extra: &[&str]) -> Output {
    cli::command()
        .arg("check")
        .arg(data(file))
        .args(extra)
        .output()
        .expect("run shakedown")
}

fn json(file: &str) -> (i32, Value) {
    let o = check(file, &["--json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| {
        panic!(
            "{file}: not JSON ({e}): {out}{}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().expect("exit code"), v)
}

fn counts(v: &Value) -> &Value {
    &v["details"]["counts"]
}

#[test]
fn a_valid_log_with_duplicates_exits_0_and_counts_them() {
    let (code, v) = json("valid-duplicates.jsonl");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["checker"], "log", "{v}");
    assert_eq!(counts(&v)["duplicated"], 1, "{v}");
    assert_eq!(counts(&v)["lost"], 0, "{v}");
}

#[test]
fn each_anomaly_class_makes_its_history_invalid() {
    for (file, class) in [
        ("lost.jsonl", "lost"),
        ("inconsistent.jsonl", "inconsistent_offsets"),
        ("nonmonotonic.jsonl", "nonmonotonic"),
        ("skipped.jsonl", "skipped"),
        ("unexpected.jsonl", "unexpected"),
        ("acked-elsewhere.jsonl", "acked_elsewhere"),
    ] {
        let (code, v) = json(file);
        assert_eq!(code, 1, "{file}: {v}");
        assert!(counts(&v)[class].as_u64().unwrap() >= 1, "{file}: {v}");
        let w = &v["details"][class]["witnesses"][0];
        assert!(
            w["witness"].as_str().is_some_and(|t| !t.is_empty()),
            "{file}: {v}"
        );
    }
}

#[test]
fn a_lost_send_names_its_ack_node_and_the_fault_around_it() {
    let o = check("lost.jsonl", &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("1 of 3 acknowledged sends lost"), "{out}");
    assert!(
        out.contains("send 1 to log 0: acknowledged at offset 2"),
        "{out}"
    );
    assert!(out.contains("on n1"), "{out}");
    assert!(out.contains("during kill"), "{out}");
    // Both witnesses of a split brain are named.
    let o = check("inconsistent.jsonl", &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("offset 2 of log 0 holds 1") && out.contains("n3"),
        "{out}"
    );
}

#[test]
fn no_final_read_is_unknown_never_valid() {
    let (code, v) = json("no-final-read.jsonl");
    assert_eq!(code, 2, "{v}");
    assert!(
        v["summary"]
            .as_str()
            .unwrap()
            .contains("no final read of log 0"),
        "{v}"
    );
}

#[test]
fn model_log_is_accepted_by_name() {
    let o = check("valid-duplicates.jsonl", &["--model", "log"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
