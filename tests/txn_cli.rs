//! End-to-end tests of `shakedown check` on list-append and rw-register transaction histories
//! (the `txn` model): Elle-shaped EDN and our JSONL, auto-detection, `--txn-assume`, exit codes,
//! `--json` details and errors naming the file, line and op.
//!
//! Owns only these CLI assertions; the checker is unit-tested in `checker::txn`.

use std::path::{Path, PathBuf};
use std::process::Output;

#[path = "common/cli.rs"]
mod cli;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/histories/txn")
        .join(rel)
}

fn check(args: &[&str]) -> Output {
    cli::command()
        .arg("check")
        .args(args)
        .output()
        .expect("run shakedown")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn elle_shaped_write_skew_is_g2_item_and_exits_1() {
    // Whole-vector EDN, :f absent / nil, [:r :x] invokes, 1M / 2N, a nemesis op without
    // :value, sparse indices: auto-detected as txn.
    let f = data("g2-item-elle.edn");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("model txn"), "{t}");
    assert!(
        t.contains("G2-item ×1") && t.contains("not repeatable-read"),
        "{t}"
    );
    assert!(t.contains("(rw)") && t.contains("without"), "{t}");
    let o = check(&["--json", "--model", "txn", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["checker"], "txn");
    assert_eq!(v["verdict"], "invalid");
    assert_eq!(v["details"]["anomaly_counts"]["G2-item"], 1);
    assert_eq!(v["details"]["not"][0], "repeatable-read");
    assert_eq!(v["details"]["anomalies"][0]["cycle"][0]["edge"], "rw");
}

#[test]
fn one_map_per_line_with_string_and_vector_keys_finds_a_process_cycle() {
    let f = data("per-line-g-single-process.edn");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("G-single-item-process"), "{t}");
    assert!(t.contains("ran on process 1"), "{t}");
}

#[test]
fn serial_jsonl_is_valid_and_aborted_read_is_g1a() {
    let o = check(&[data("serial.jsonl").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verdict: valid"));
    let o = check(&[data("aborted-read.jsonl").to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("G1a") && t.contains("not read-committed"), "{t}");
}

#[test]
fn malformed_micro_op_exits_3_naming_file_and_op() {
    let f = data("append-without-element.jsonl");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("append-without-element.jsonl: line 1 (op 0, process 0, txn): micro-op 1"),
        "{t}"
    );
    assert!(t.contains("an append needs an element"), "{t}");
}

#[test]
fn malformed_micro_ops_name_the_line_the_op_starts_on() {
    // JSONL: the fourth line (after a blank one).
    let f = data("malformed-micro-op-line-4.jsonl");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("malformed-micro-op-line-4.jsonl: line 4 (op 2, process 1, txn): micro-op 2"),
        "{t}"
    );
    assert!(t.contains("an append needs an element"), "{t}");
    // A whole-history EDN vector: the line the op map starts on.
    let f = data("malformed-micro-op.edn");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("malformed-micro-op.edn: line 4 (op 2, process 1, txn): micro-op 2"),
        "{t}"
    );
    assert!(
        t.contains("a register write needs a value (nil is the initial state)"),
        "{t}"
    );
}

#[test]
fn rw_register_write_skew_is_auto_detected_and_g2_item() {
    let f = data("rw-register-write-skew.edn");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("model txn"), "{t}");
    assert!(
        t.contains("G2-item ×1") && t.contains("not repeatable-read"),
        "{t}"
    );
    assert!(
        t.contains("read key y = nil") && t.contains("came later in the version order"),
        "{t}"
    );
    let o = check(&["--json", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["details"]["kind"], "rw-register");
    assert_eq!(v["details"]["anomaly_counts"]["G2-item"], 1);
    assert_eq!(v["details"]["versions"]["keys_totally_ordered"], 2);
}

#[test]
fn txn_assume_wfr_keys_finds_what_the_initial_state_cannot() {
    let f = data("rw-register-wfr.jsonl");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("versions totally ordered for 1 of 2 keys (initial-state)"),
        "{t}"
    );
    let o = check(&["--txn-assume", "wfr-keys", f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("G-single-item ×1"), "{t}");
    assert!(t.contains("(initial-state, wfr-keys)"), "{t}");
    let o = check(&["--txn-assume", "wfr", f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("--txn-assume \"wfr\": expected"), "{t}");
}

#[test]
fn a_history_mixing_appends_and_register_writes_is_refused_naming_both_lines() {
    let f = data("mixed-append-and-write.jsonl");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("line 1 (op 0, process 0, txn) appends to a list and line 4 (op 2, process 1, txn) writes a register"),
        "{t}"
    );
}

/// `shakedown run` with `args` must be refused (exit 3) before any node is touched, naming
/// `needle`, and write nothing.
fn refused(args: &[&str], needle: &str) {
    let reports = tempfile::tempdir().unwrap();
    let out = cli::command()
        .args(["run", "--reports"])
        .arg(reports.path())
        .args([
            "--sandbox-name",
            "sdfnever",
            "--sandbox-subnet",
            "10.96.0.0/24",
            "--time-limit",
            "1",
        ])
        .args(args)
        .output()
        .expect("run shakedown");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "{args:?}: {t}");
    assert!(t.contains(needle), "{args:?}: {needle:?} missing from {t}");
    assert_eq!(std::fs::read_dir(reports.path()).unwrap().count(), 0);
}

#[test]
fn systems_without_transactions_refuse_the_txn_workload_and_isolation() {
    refused(
        &["--db", "etcd", "--workload", "txn"],
        "etcd cannot serve the txn workload",
    );
    refused(
        &["--db", "redis", "--workload", "txn"],
        "redis cannot serve the txn workload",
    );
    let zk = Path::new(env!("CARGO_MANIFEST_DIR")).join("systems/zookeeper.toml");
    refused(
        &["--db", zk.to_str().unwrap(), "--workload", "txn"],
        "not txn",
    );
    refused(
        &["--db", "etcd", "--isolation", "serializable"],
        "--isolation: PostgreSQL settings need --db postgres",
    );
    refused(
        &[
            "--db",
            "postgres",
            "--workload",
            "register",
            "--isolation",
            "serializable",
        ],
        "--isolation: applies to transactions (--workload txn)",
    );
}

#[test]
fn elle_cli_json_arrays_with_keyword_colons_are_transactions() {
    // `:f` absent on one op, `":txn"` on another, micro-op functions written `":r"`.
    let o = check(&[data("elle-cli.json").to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("json history, 4 events; model txn"), "{t}");
    assert!(t.contains("2 committed"), "{t}");
}

#[test]
fn consistency_models_allow_what_they_do_not_proscribe() {
    let f = data("g2-item-elle.edn");
    let path = f.to_str().unwrap();
    // Read committed allows write skew: valid, the G2-item still reported (as allowed).
    let o = check(&["--consistency-models", "read-committed", path]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("G2-item allowed by read-committed"), "{t}");
    assert!(
        t.contains("not repeatable-read (and therefore not serializable"),
        "{t}"
    );
    // Snapshot isolation allows G2-item (two adjacent rw edges) and proscribes G-nonadjacent,
    // which the search tells apart and did not find: valid.
    let o = check(&["--json", "--consistency-models", "snapshot-isolation", path]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v}");
    let d = &v["details"];
    assert_eq!(d["anomaly-types"], serde_json::json!([]), "{d}");
    assert_eq!(
        d["allowed-anomaly-types"],
        serde_json::json!(["G2-item"]),
        "{d}"
    );
    assert_eq!(d["not"], serde_json::json!(["repeatable-read"]), "{d}");
    assert!(d["also-not"].as_array().unwrap().len() == 3, "{d}");
    assert_eq!(d["not-checked"], serde_json::json!([]), "{d}");
    // --anomalies names one more anomaly to fail on.
    let o = check(&[
        "--consistency-models",
        "read-committed",
        "--anomalies",
        "G2",
        path,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn unknown_model_or_anomaly_names_are_usage_errors() {
    let f = data("serial.jsonl");
    let o = check(&["--consistency-models", "snapshot", f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("--consistency-models: unknown model \"snapshot\"")
            && t.contains("snapshot-isolation"),
        "{t}"
    );
    let o = check(&["--anomalies", "G3", f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("--anomalies: unknown anomaly \"G3\""), "{t}");
}

#[test]
fn elle_cli_model_names_check_transactions() {
    // elle-cli's `--model list-append` / `rw-register` on transaction histories.
    let o = check(&[
        "--model",
        "list-append",
        data("g2-item-elle.edn").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("model txn") && t.contains("G2-item ×1"), "{t}");
    let f = data("rw-register-write-skew.edn");
    let o = check(&["--model", "rw-register", f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("rw-register"), "{t}");
}

#[test]
fn completion_only_elle_cli_json_finds_g1c() {
    // elle-cli's JSON: no invokes, no "f", "time": -1, "index".
    let f = data("elle-g1c-completions.json");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("json history, 3 events (completions only)"),
        "{t}"
    );
    assert!(t.contains("model txn") && t.contains("G1c ×1"), "{t}");
    // Transactions are named by their position in the file, as written.
    assert!(t.contains("so T1 → T0 → T1"), "{t}");
    let o = check(&["--json", "--model", "list-append", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"], "invalid", "{v}");
    assert_eq!(v["details"]["anomaly-types"], serde_json::json!(["G1c"]));
    assert_eq!(v["details"]["not"], serde_json::json!(["read-committed"]));
}

#[test]
fn completion_only_write_skew_is_judged_per_model() {
    let f = data("elle-write-skew-completions.json");
    let path = f.to_str().unwrap();
    // Strict serializability (the default) proscribes the G2-item found.
    let o = check(&[path]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("G2-item ×1"), "{t}");
    // Snapshot isolation allows it (its two rw edges are adjacent) and needs no real time:
    // valid.
    let o = check(&["--consistency-models", "snapshot-isolation", path]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("G2-item allowed by snapshot-isolation"), "{t}");
    // Read committed needs neither real time nor G-nonadjacent: valid.
    let o = check(&["--consistency-models", "read-committed", path]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn completion_only_jsonl_has_no_real_time_order() {
    // A stale read across processes is a real-time anomaly only with invokes: without them it
    // cannot occur, and the history is valid as in Elle, saying which orders it lacks.
    let f = data("stale-read-completions.jsonl");
    let path = f.to_str().unwrap();
    let o = check(&[path]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("completions only (no invokes): the dependency graph has neither real-time nor process order"),
        "{t}"
    );
    let o = check(&["--consistency-models", "serializable", path]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Other checkers need invokes.
    let o = check(&["--model", "cas-register", path]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("completions only, no invokes"), "{t}");
    // A bare completion among invokes stays an error naming its line.
    let o = check(&[data("bare-completion-among-invokes.jsonl")
        .to_str()
        .unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("line 3) (Ok by process 1) completes nothing"),
        "{t}"
    );
}

#[test]
fn a_txn_model_of_the_other_kind_is_a_usage_error_naming_what_the_history_holds() {
    let o = check(&[
        "--model",
        "list-append",
        data("rw-register-write-skew.edn").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("--model list-append: the history holds rw-register transactions")
            && t.contains("--model rw-register"),
        "{t}"
    );
    let o = check(&[
        "--model",
        "rw-register",
        data("elle-g1c-completions.json").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("--model rw-register: the history holds list-append transactions (line 1"),
        "{t}"
    );
}

#[test]
fn html_draws_each_cycle_and_names_the_claim() {
    let f = data("g2-item-elle.edn");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g2.html");
    let o = check(&[
        f.to_str().unwrap(),
        "--consistency-models",
        "snapshot-isolation",
        "--html",
        out.to_str().unwrap(),
    ]);
    // Write skew is allowed by snapshot isolation.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(
        page.contains("<svg") && page.contains(">rw<"),
        "no cycle drawn"
    );
    assert!(page.contains("<h4>G2-item</h4>"), "{page}");
    assert!(
        page.contains("checked against snapshot-isolation"),
        "{page}"
    );
    assert!(page.contains("badge valid"), "{page}");
}

#[test]
fn completion_only_internal_is_found_despite_a_repeated_append() {
    let f = data("internal-completions.edn");
    let o = check(&[f.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("internal ×1"), "{t}");
    assert!(t.contains("T0 and T1 both append 1 to key x"), "{t}");
}

#[test]
fn rw_register_linearizable_keys_reading_an_unwritten_initial_value_as_elle() {
    let f = data("rw-register-g2-item-linearizable.edn");
    let path = f.to_str().unwrap();
    let args = |models: &'static str| {
        [
            "--txn-assume",
            "linearizable-keys",
            "--consistency-models",
            models,
            path,
        ]
    };
    // Read committed: valid (the reads of 1 are a note, not a garbage read).
    let o = check(&args("read-committed"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("4 reads of a value no transaction wrote"), "{t}");
    let o = check(&args("repeatable-read"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("G2-item ×1"), "{t}");
}

/// One row of `elle-expected.tsv`: a history nobody here wrote, the options elle-cli checked it
/// with (in our spelling), and Elle's verdict and `not`.
struct Expected {
    file: String,
    options: Vec<String>,
    valid: String,
    not: Vec<String>,
}

fn expected() -> Vec<Expected> {
    let table = std::fs::read_to_string(data("elle-expected.tsv")).unwrap();
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 6, "{l}");
            let list = |s: &str| -> Vec<String> {
                s.split(',')
                    .filter(|x| *x != "-")
                    .map(str::to_string)
                    .collect()
            };
            Expected {
                file: c[0].to_string(),
                options: c[1].split_whitespace().map(str::to_string).collect(),
                valid: c[2].to_string(),
                not: list(c[4]),
            }
        })
        .collect()
}

#[test]
fn outside_histories_get_elles_verdicts() {
    // elle-cli's test data and Elle's own histories, with the verdicts Elle gave them
    // (tests/data/histories/README.md names each source). Every verdict must be Elle's, and
    // every model Elle rules out must be ruled out here too (`not` or `also-not`).
    let rows = expected();
    assert!(rows.len() >= 30, "{}", rows.len());
    for row in rows {
        let f = data(&row.file);
        let mut args: Vec<&str> = vec!["--json"];
        args.extend(row.options.iter().map(String::as_str));
        args.push(f.to_str().unwrap());
        let o = check(&args);
        let t = text(&o);
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{}: {e}: {t}", row.file));
        let verdict = match row.valid.as_str() {
            "true" => "valid",
            "false" => "invalid",
            _ => "unknown",
        };
        assert_eq!(v["verdict"], verdict, "{}: {t}", row.file);
        let ours: Vec<String> = ["not", "also-not"]
            .iter()
            .flat_map(|k| v["details"][k].as_array().cloned().unwrap_or_default())
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect();
        for m in &row.not {
            // Elle says strong-serializable where we say strict-serializable.
            let m = if m == "strong-serializable" {
                "strict-serializable"
            } else {
                m.as_str()
            };
            assert!(
                ours.iter().any(|o| o == m),
                "{}: Elle rules out {m}; we: {ours:?}",
                row.file
            );
        }
    }
}
