//! End-to-end tests of `shakedown check`: runs the built binary on the Knossos corpus and the small
//! fixtures in tests/data/histories, asserting exit codes, messages, `--json`, `--html` and
//! `--export-edn` output.
//!
//! Owns only these CLI assertions; parsing and checking are unit-tested in their modules.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn shakedown(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .env(shakedown::store::PROTECT_ENV, data("../../reports"))
        .arg("check")
        .args(args)
        .output()
        .expect("run shakedown")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn valid_knossos_history_exits_0() {
    let f = data("knossos/cas-register/good/memstress3-0.edn");
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("verdict: valid"));
}

#[test]
fn bad_knossos_history_exits_1_and_names_the_op() {
    let f = data("knossos/cas-register/bad/rethink-fail-minimal.edn");
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("cannot linearize op 2 (process 1 read → 3"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn postgres_key_with_crashed_writers_is_decided() {
    // One key of a 60 s PostgreSQL run (remote_apply, replica reads, primary killed): 201 ops,
    // 30 writes left pending. It used to exhaust the 1 GiB cache (unknown); counting equal pending
    // ops per class and dominance pruning decide it.
    let f = data("histories/postgres-crashed-writers.jsonl");
    let o = shakedown(&[path(&f), "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["details"]["parts"][0]["pending_count"], 30);
    assert_eq!(v["details"]["witness_mode"], "fast");
}

#[test]
fn witness_flag_selects_minimization_and_rejects_unknown_modes() {
    let f = data("histories/bad-register.jsonl");
    let none = shakedown(&[path(&f), "--json", "--witness", "none"]);
    assert_eq!(code(&none), 1, "{}", stderr(&none));
    let v: serde_json::Value = serde_json::from_str(&stdout(&none)).unwrap();
    assert_eq!(v["details"]["witness_mode"], "none");
    assert!(v["details"]["parts"][0]["witness"]["minimized"].is_null());
    let text = shakedown(&[path(&f), "--witness", "minimal"]);
    assert_eq!(code(&text), 1);
    assert!(
        stdout(&text).contains("--witness minimal"),
        "{}",
        stdout(&text)
    );
    assert!(
        stdout(&text).contains("essential ops (minimal)"),
        "{}",
        stdout(&text)
    );
    let bad = shakedown(&[path(&f), "--witness", "full"]);
    assert_eq!(code(&bad), 3);
    assert!(
        stderr(&bad).contains("expected none, fast, minimal"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn exhausted_budget_on_a_hard_history_exits_2() {
    // 132 crashed cas ops between every pair of 12 values and a read of a value nobody wrote:
    // proving that needs every chain of crashed cas ops (no two are interchangeable, no chain
    // dominates another), far more than half a second of search.
    let f = data("histories/hard-pending-cas.jsonl");
    let o = shakedown(&[path(&f), "--time-limit", "0.5"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("time limit exceeded"), "{}", stdout(&o));
}

#[test]
fn malformed_file_exits_3_naming_file_and_line() {
    let f = data("histories/malformed.jsonl");
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 3);
    let e = stderr(&o);
    assert!(e.contains("malformed.jsonl:3:"), "{e}");
}

#[test]
fn malformed_jepsen_log_exits_3_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("broken.log");
    std::fs::write(
        &f,
        "INFO jepsen.util - 0 :invoke :write 1\nINFO jepsen.util - 0 :okk :write 1\n",
    )
    .unwrap();
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 3);
    let e = stderr(&o);
    assert!(
        e.contains("broken.log:2: expected an op type"),
        "stderr: {e}"
    );
}

#[test]
fn binary_garbage_exits_3_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("garbage.bin");
    std::fs::write(&f, b"{:process 0}\n\n\xff\xfe\x00junk").unwrap();
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 3);
    let e = stderr(&o);
    assert!(e.contains("garbage.bin:3: expected UTF-8 text"), "{e}");
}

#[test]
fn missing_file_and_unknown_model_exit_3() {
    let o = shakedown(&["/nonexistent/history.edn"]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("/nonexistent/history.edn"),
        "{}",
        stderr(&o)
    );
    let f = data("histories/run-valid");
    let o = shakedown(&[path(&f), "--model", "frobnicator"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("frobnicator"), "{}", stderr(&o));
    let o = shakedown(&[path(&f), "--format", "xml"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("--format"), "{}", stderr(&o));
}

#[test]
fn json_output_parses() {
    let f = data("knossos/cas-register/bad/bad-analysis.edn");
    let o = shakedown(&[path(&f), "--json"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("valid JSON");
    assert_eq!(v["verdict"], "invalid");
    assert_eq!(v["checker"], "linearizable");
    let parts = v["details"]["parts"].as_array().expect("parts");
    assert!(parts.iter().any(|p| p["witness"]["op"]["index"].is_u64()));
}

#[test]
fn run_directory_with_jsonl_history_is_checked() {
    let f = data("histories/run-valid");
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("jsonl history, 8 events"),
        "{}",
        stdout(&o)
    );
}

fn assert_page(html: &str, op_marker: &str) {
    assert!(html.contains("<svg"), "has a timeline");
    assert!(html.contains("op conflict") || html.contains(" conflict\""));
    assert!(html.contains(op_marker), "mentions {op_marker}");
    assert!(!html.contains("<script src"));
    assert!(!html.contains("http://"));
    assert!(!html.contains("https://"));
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
}

#[test]
fn html_page_for_bad_knossos_histories() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(data("knossos/cas-register/bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "edn"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 7);
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.path().join(format!("{name}.html"));
        let o = shakedown(&[path(&f), "--html", path(&out), "--json"]);
        assert_eq!(code(&o), 1, "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        let part = v["details"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["verdict"] == "invalid")
            .unwrap()
            .clone();
        let idx = part["witness"]["op"]["index"].as_u64().unwrap();
        let html = std::fs::read_to_string(&out).unwrap();
        assert_page(&html, &format!("Op <b>{idx}</b>"));
        assert!(
            html.contains(&format!("conflict\" data-op=\"{idx}\"")),
            "{name}: the blocked op {idx} is drawn highlighted"
        );
    }
}

#[test]
fn html_page_for_hand_written_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.html");
    let f = data("histories/bad-register.jsonl");
    let o = shakedown(&[path(&f), "--html", path(&out)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert_page(&html, "read → 2");
    assert!(html.contains("class=\"op ok window conflict\" data-op=\"3\""));
    // The crashed write is drawn open-ended.
    assert!(
        html.contains("class=\"op pending\" data-op=\"2\""),
        "{html}"
    );
}

#[test]
fn foreign_formats_are_detected() {
    let o = shakedown(&[path(&data("histories/jepsen-console.log"))]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("jepsen-log history, 12 events"));
    assert!(
        stdout(&o).contains("cannot linearize op 10"),
        "{}",
        stdout(&o)
    );

    let o = shakedown(&[path(&data("histories/porcupine-kv.txt"))]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("porcupine history"));
    assert!(stdout(&o).contains("2 parts"), "kv keys are parts");

    let o = shakedown(&[path(&data("histories/independent.edn"))]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("independent keys"));
    assert!(
        stdout(&o).contains("key 1: cannot linearize op 9"),
        "{}",
        stdout(&o)
    );

    // Forcing the plain reading makes the tuple values unusable for the register model: the
    // input is malformed for it, exit 3 naming the file and the op.
    let o = shakedown(&[path(&data("histories/independent.edn")), "--no-independent"]);
    assert_eq!(code(&o), 3);
    assert!(!stdout(&o).contains("independent keys"));
    let e = stderr(&o);
    assert!(
        e.contains("independent.edn: op 0 (process 0 write): expected a value to write"),
        "{e}"
    );
}

#[test]
fn porcupine_kv_violation_exits_1_with_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kv.html");
    let o = shakedown(&[
        path(&data("histories/porcupine-kv-bad.txt")),
        "--html",
        path(&out),
    ]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("key k: cannot linearize op 4"),
        "{}",
        stdout(&o)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert_page(&html, "get k → Some(&quot;yx&quot;)");
}

#[test]
fn html_for_a_valid_history_is_a_summary_without_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ok.html");
    let o = shakedown(&[path(&data("histories/run-valid")), "--html", path(&out)]);
    assert_eq!(code(&o), 0);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("verdict-valid"));
    assert!(!html.contains("<svg"));
    assert!(!html.contains("http"));
}

#[test]
fn export_edn_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h.edn");
    let o = shakedown(&[
        path(&data("histories/jepsen-console.log")),
        "--export-edn",
        path(&out),
    ]);
    assert_eq!(code(&o), 1);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("[{:index 0"), "{text}");
    assert!(text.contains(":process :nemesis"));
    // Checking the export gives the same verdict and blocked op.
    let o = shakedown(&[path(&out)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("cannot linearize op 10"),
        "{}",
        stdout(&o)
    );

    // Keyed histories export as independent tuples and come back keyed.
    let out2 = dir.path().join("k.edn");
    let o = shakedown(&[
        path(&data("histories/independent.edn")),
        "--export-edn",
        path(&out2),
    ]);
    assert_eq!(code(&o), 1);
    let o = shakedown(&[path(&out2)]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("key 1: cannot linearize op 9"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn session_flag_adds_the_session_checker_and_merges_the_verdict() {
    // Process 0 writes x = 1 (version 2), then reads x and gets the older version 1.
    let lines = [
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","key":"x","value":0}"#,
        r#"{"index":1,"time":10,"type":"ok","process":0,"f":"write","key":"x","value":0,"version":1}"#,
        r#"{"index":2,"time":20,"type":"invoke","process":0,"f":"write","key":"x","value":1}"#,
        r#"{"index":3,"time":30,"type":"ok","process":0,"f":"write","key":"x","value":1,"version":2}"#,
        r#"{"index":4,"time":40,"type":"invoke","process":0,"f":"read","key":"x","value":null}"#,
        r#"{"index":5,"time":50,"type":"ok","process":0,"f":"read","key":"x","value":0,"version":1}"#,
    ];
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("h.jsonl");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();

    let o = shakedown(&[path(&f), "--session"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("session: invalid"), "{out}");
    assert!(out.contains("read-your-writes: process 0"), "{out}");

    let o = shakedown(&[path(&f), "--session", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let names: Vec<&str> = v["checkers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checker"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["linearizable", "session"]);
    assert_eq!(v["valid"], "invalid");

    let o = shakedown(&[path(&f), "--session", "--version-source", "sideways"]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("--version-source \"sideways\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn string_values_compare_by_equality_and_show_as_written() {
    let o = shakedown(&[path(&data("histories/string-values.edn"))]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    // The integer 938 is not the string "938"; the keyword :foo is the state the cas left.
    assert!(
        out.contains("cannot linearize op 8 (process 0 read → 938"),
        "{out}"
    );
    assert!(out.contains("last consistent state: \"foo\""), "{out}");
    // The same history with the last read returning the string is valid.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ok.edn");
    let text = std::fs::read_to_string(data("histories/string-values.edn")).unwrap();
    std::fs::write(&f, text.replace(":value 938}", ":value :foo}")).unwrap();
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn semantics_are_chosen_per_input_shape_and_flags_override() {
    // A timestamped Jepsen console log: Knossos semantics, so `write 1; read → nil` is valid.
    let log = data("histories/console-nil-read.log");
    let o = shakedown(&[path(&log)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o)
            .contains("semantics knossos (initial 0, nil read = unknown, failed cas = ignored)"),
        "{}",
        stdout(&o)
    );
    let o = shakedown(&[path(&log), "--semantics", "etcd"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("read → absent"), "{}", stdout(&o));
    let o = shakedown(&[path(&log), "--nil-read", "absent"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(
        stdout(&o)
            .contains("semantics custom (initial 0, nil read = absent, failed cas = ignored)"),
        "{}",
        stdout(&o)
    );
    let o = shakedown(&[path(&log), "--nil-read", "absent", "--initial", "nil"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    // Porcupine's etcd log shape means etcd semantics: the failed cas is evidence the value
    // differed from 1, which contradicts the write of 1 before it.
    let pl = data("histories/porcupine-etcd-shape.log");
    let o = shakedown(&[path(&pl), "--json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["details"]["semantics"]["preset"], "etcd");
    assert_eq!(v["details"]["semantics"]["failed_cas"], "evidence");
    assert_eq!(v["details"]["format"], "jepsen-log");
    let o = shakedown(&[path(&pl), "--failed-cas", "ignored"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let o = shakedown(&[path(&pl), "--semantics", "knossos"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let o = shakedown(&[path(&pl), "--initial", "[1]"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("--initial [1]"), "{}", stderr(&o));
    // Our JSONL: etcd.
    let o = shakedown(&[path(&data("histories/run-valid"))]);
    assert!(stdout(&o).contains("semantics etcd"), "{}", stdout(&o));
}

#[test]
fn history_txt_and_json_arrays_are_detected() {
    let o = shakedown(&[path(&data("histories/history.txt"))]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("history-txt history, 9 events"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("cannot linearize op 7"),
        "{}",
        stdout(&o)
    );

    let o = shakedown(&[path(&data("histories/elle-cas.json"))]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("json history, 7 events"),
        "{}",
        stdout(&o)
    );
    // The nemesis op with :f :read is ignored, and said so with a count.
    assert!(
        stderr(&o).contains("ignored 1 nemesis op(s) that carry client functions (read ×1)"),
        "{}",
        stderr(&o)
    );

    let o = shakedown(&[path(&data("histories/elle-cas.json")), "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["details"]["ignored_nemesis_ops"]["read"], 1);

    // A broken element is named by line and array position.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(
        &f,
        "[{\"process\":0,\"type\":\"invoke\",\"f\":\"read\",\"value\":null},\n {\"process\":0,\"type\":\"done\",\"f\":\"read\"}]",
    )
    .unwrap();
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("bad.json:2: array element 1:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn porcupine_kv_keys_start_as_the_empty_string() {
    let o = shakedown(&[path(&data("histories/porcupine-kv-empty.txt"))]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("semantics porcupine (keys start as \"\")"));
}

#[test]
fn independent_tuples_work_for_set_and_counter() {
    let o = shakedown(&[path(&data("histories/independent-set.edn"))]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("independent keys; model set"), "{out}");
    // Sets are checked by the set checker: the acknowledged add missing from the final read.
    assert!(
        out.contains("set: invalid — 1 of 2 acknowledged adds lost (key b: 1)"),
        "{out}"
    );
    assert!(
        out.contains("lost: add \"x\" on key b by process 1"),
        "{out}"
    );
    // A counter key never added to reads nil = 0.
    let o = shakedown(&[path(&data("histories/independent-counter.edn"))]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("model counter"), "{}", stdout(&o));
    assert!(stdout(&o).contains("2 parts"), "{}", stdout(&o));
    // Counters stay numeric: a string delta is an error naming the op.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.edn");
    std::fs::write(
        &f,
        "{:process 0 :type :invoke :f :add :value \"2\"}\n{:process 0 :type :ok :f :add :value \"2\"}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&f), "--model", "counter"]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("op 0 (process 0 add): expected an integer delta, got \"2\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn never_a_verdict_from_nothing() {
    let o = shakedown(&[path(&data("histories/nemesis-only.jsonl"))]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("unknown: no client ops"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("verdict: unknown"));
    let o = shakedown(&[path(&data("histories/nemesis-only.jsonl")), "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["details"]["verdict"], "unknown");

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n\n").unwrap();
    let o = shakedown(&[path(&empty)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("unknown: empty history: the file holds no ops"),
        "{}",
        stdout(&o)
    );

    // Every client op failed: the checker looked at all of it and nothing happened, which is
    // valid (as Knossos says); only a history without client ops has nothing to check.
    let failed = dir.path().join("failed.jsonl");
    std::fs::write(
        &failed,
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}\n{\"type\":\"fail\",\"process\":0,\"f\":\"write\",\"value\":1,\"error\":\"refused\"}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&failed)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    let o = shakedown(&[path(&data("histories/not-ops.jsonl"))]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("not-ops.jsonl:1: expected a JSON op object: missing field"),
        "{}",
        stderr(&o)
    );
    let o = shakedown(&[path(&data("histories/torn-only.jsonl"))]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("torn-only.jsonl:1:"), "{}", stderr(&o));

    // A JSON array read as JSONL is an error that says what to do, never "valid: 0 ops".
    let o = shakedown(&[path(&data("histories/elle-cas.json")), "--format", "jsonl"]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(stderr(&o).contains("--format json"), "{}", stderr(&o));
    let one_line = dir.path().join("one.jsonl");
    std::fs::write(
        &one_line,
        "[{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"},{\"process\":0,\"type\":\"ok\",\"f\":\"read\",\"value\":null}]",
    )
    .unwrap();
    let o = shakedown(&[path(&one_line), "--format", "jsonl"]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(!stdout(&o).contains("valid"), "{}", stdout(&o));
}

#[test]
fn two_open_invokes_are_an_error_naming_both_ops() {
    let o = shakedown(&[path(&data("histories/two-open-invokes.edn"))]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("ill-formed history: process 0 invoked op 1 (write 2, line 2) while op 0 (write 1, line 1) was still open"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn several_files_and_directories_give_one_line_each_and_the_worst_exit() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("reports/etcd/20240101T000000");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::copy(
        data("histories/run-valid/history.jsonl"),
        runs.join("history.jsonl"),
    )
    .unwrap();
    std::fs::write(runs.join("faults.jsonl"), "").unwrap();
    std::os::unix::fs::symlink("20240101T000000", dir.path().join("reports/etcd/latest")).unwrap();
    std::fs::copy(
        data("histories/nemesis-only.jsonl"),
        dir.path().join("reports/empty.jsonl"),
    )
    .unwrap();
    let reports = dir.path().join("reports");

    // valid + unknown → 2; the run is listed once although `latest` points at it.
    let o = shakedown(&[path(&reports)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("history.jsonl: valid").count(), 1, "{out}");
    assert!(out.contains("empty.jsonl: unknown"), "{out}");
    assert!(
        out.contains("checked 2 files: 1 valid, 0 invalid, 1 unknown, 0 unreadable"),
        "{out}"
    );

    // + an unreadable file → 3.
    let o = shakedown(&[path(&reports), path(&data("histories/not-ops.jsonl"))]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(stdout(&o).contains("error: "), "{}", stdout(&o));
    // + an invalid file → 1, whatever else.
    let o = shakedown(&[
        path(&reports),
        path(&data("histories/not-ops.jsonl")),
        path(&data("histories/bad-register.jsonl")),
        "--json",
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["verdict"], "invalid");
    assert_eq!(v["counts"]["errors"], 1);
    assert_eq!(v["files"].as_array().unwrap().len(), 4);
    // Valid files only → 0.
    let o = shakedown(&[
        path(&data("histories/run-valid")),
        path(&data("histories/porcupine-kv.txt")),
    ]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // A page needs one history.
    let o = shakedown(&[path(&reports), "--html", "/tmp/never-written.html"]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("exactly one"), "{}", stderr(&o));
    // A directory without histories.
    let none = dir.path().join("none");
    std::fs::create_dir_all(&none).unwrap();
    let o = shakedown(&[path(&none), path(&data("histories/run-valid"))]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("no run directories or history files"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn set_history_gets_the_set_checker_with_lost_elements_timed_against_faults() {
    let f = data("histories/set-lost.jsonl");
    let o = shakedown(&[path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("jsonl history, 18 events; model set"), "{out}");
    assert!(
        out.contains(
            "1 of 2 acknowledged adds lost (key 0: 1, acknowledged 1.2 s before isolate n1 began)"
        ),
        "{out}"
    );
    assert!(out.contains("1 recovered"), "{out}");
    assert!(
        out.contains("lost: add 1 on key 0 by process 1: ok at 0.8 s, absent from the final read"),
        "{out}"
    );
    // --model set is the same checker; --json carries the counts and witnesses.
    let o = shakedown(&["--model", "set", "--json", path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["checker"], "set");
    assert_eq!(v["details"]["lost"], 1);
    assert_eq!(v["details"]["failed"], 1);
    assert_eq!(v["details"]["recovered"], 1);
    assert_eq!(v["details"]["lost_elements"][0]["element"], 1);
    assert_eq!(
        v["details"]["lost_elements"][0]["fault_after"]["fault"],
        "isolate n1"
    );
    // No witness page for a set: a clear refusal, not an empty page.
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("w.html");
    let o = shakedown(&["--html", path(&html), path(&f)]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("model set has neither"),
        "{}",
        stderr(&o)
    );
    // A set history without its final reads is unknown, never valid.
    let text = std::fs::read_to_string(&f).unwrap();
    let cut: String = text.lines().take(14).map(|l| format!("{l}\n")).collect();
    let g = dir.path().join("cut.jsonl");
    std::fs::write(&g, cut).unwrap();
    let o = shakedown(&[path(&g)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("2 key(s) without a final read (0, 1)"),
        "{}",
        stdout(&o)
    );
}

/// A history cut short by a crash (a torn last line, or the zero padding a killed controller's
/// mapped history ends in) is never valid: ops after the cut may be missing. An anomaly among
/// the ops that were recorded is still invalid.
#[test]
fn a_history_cut_short_by_a_crash_is_unknown_not_valid() {
    let dir = tempfile::tempdir().unwrap();
    let ok = "{\"index\":0,\"time\":1,\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n\
              {\"index\":1,\"time\":2,\"type\":\"ok\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n";
    let whole = dir.path().join("whole.jsonl");
    std::fs::write(&whole, ok).unwrap();
    assert_eq!(code(&shakedown(&[path(&whole)])), 0);

    let padded = dir.path().join("padded.jsonl");
    let mut bytes = ok.as_bytes().to_vec();
    bytes.extend(std::iter::repeat_n(0u8, 5000));
    std::fs::write(&padded, &bytes).unwrap();
    let o = shakedown(&[path(&padded)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("cut short by a crash"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("5000 zero bytes"), "{}", stderr(&o));

    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, format!("{ok}{{\"index\":2,\"ti")).unwrap();
    let o = shakedown(&[path(&torn)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let o = shakedown(&[path(&torn), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "unknown", "{v}");

    // A stale read among the recorded ops: invalid, cut short or not.
    let stale = dir.path().join("stale.jsonl");
    let bad = format!(
        "{ok}{{\"index\":2,\"time\":3,\"type\":\"invoke\",\"process\":1,\"f\":\"read\",\"key\":\"k\",\"value\":null}}\n\
         {{\"index\":3,\"time\":4,\"type\":\"ok\",\"process\":1,\"f\":\"read\",\"key\":\"k\",\"value\":7}}\n\
         {{\"index\":4,\"ti"
    );
    std::fs::write(&stale, bad).unwrap();
    let o = shakedown(&[path(&stale)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
}

/// Lines 1–2: a good pair; line 3: a nemesis op; line 4: `invoke`; line 5: `done`.
fn five_lines(invoke: &str, done: &str) -> String {
    format!(
        "{{\"time\":1,\"type\":\"invoke\",\"process\":1,\"f\":\"read\",\"key\":\"k\",\"value\":null}}\n\
         {{\"time\":2,\"type\":\"ok\",\"process\":1,\"f\":\"read\",\"key\":\"k\",\"value\":null}}\n\
         {{\"time\":3,\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start-partition\",\"value\":null}}\n\
         {invoke}\n{done}\n"
    )
}

#[test]
fn a_completion_that_does_not_match_its_invoke_is_an_input_error_naming_both_lines() {
    let dir = tempfile::tempdir().unwrap();
    let invoke = r#"{"time":30,"type":"invoke","process":0,"f":"write","key":"k","value":1}"#;
    for (name, done, cause) in [
        (
            "other-f.jsonl",
            r#"{"time":40,"type":"ok","process":0,"f":"read","key":"k","value":1}"#,
            r#"with f "read", but that invoke was f "write""#,
        ),
        (
            "other-key.jsonl",
            r#"{"time":40,"type":"ok","process":0,"f":"write","key":"j","value":1}"#,
            r#"on key "j", but that invoke was on key "k""#,
        ),
        (
            "backwards.jsonl",
            r#"{"time":20,"type":"info","process":0,"f":"write","key":"k","value":1}"#,
            "at time 20, before that invoke's time 30",
        ),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, five_lines(invoke, done)).unwrap();
        let o = shakedown(&[path(&f)]);
        assert_eq!(code(&o), 3, "{name}: {}{}", stdout(&o), stderr(&o));
        let want = format!("line 5 completes the invoke on line 4 {cause}");
        assert!(stderr(&o).contains(&want), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(path(&f)), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{name}: {}", stdout(&o));
        // Every checker gets the same refusal: the session guarantees, the set checker.
        for extra in [["--session", "--json"], ["--model", "set"]] {
            let o = shakedown(&[path(&f), extra[0], extra[1]]);
            assert_eq!(code(&o), 3, "{name} {extra:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(&want), "{name}: {}", stderr(&o));
        }
    }
}

#[test]
fn foreign_histories_with_unknown_times_and_keyless_completions_are_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    // Jepsen's `:time -1` (unknown) and a missing time are not compared; a read completes with
    // the value it read; an independent completion without a tuple takes its invoke's key.
    let edn = dir.path().join("unknown-times.edn");
    std::fs::write(
        &edn,
        "{:process 0, :type :invoke, :f :write, :value [:k 1], :time 50}\n\
         {:process 0, :type :ok, :f :write, :value [:k 1], :time -1}\n\
         {:process 1, :type :invoke, :f :read, :value [:k nil], :time -1}\n\
         {:process 1, :type :ok, :f :read, :value 1}\n\
         {:process :nemesis, :type :info, :f :start, :value nil, :time 5}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&edn)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("independent keys"), "{}", stdout(&o));
    // Known on both sides and backwards: refused, in EDN too.
    let back = dir.path().join("backwards.edn");
    std::fs::write(
        &back,
        "{:process 0, :type :invoke, :f :write, :value 1, :time 50}\n\
         {:process 0, :type :ok, :f :write, :value 1, :time 49}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&back)]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("line 2 completes the invoke on line 1 at time 49"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_empty_or_zero_padded_jsonl_file_is_an_empty_history() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("empty.jsonl", vec![]), ("zeros.jsonl", vec![0u8; 64])] {
        let f = dir.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        let o = shakedown(&[path(&f)]);
        assert_eq!(code(&o), 2, "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).starts_with("jsonl history, 0 events"),
            "{name}: {}",
            stdout(&o)
        );
        assert!(
            stdout(&o).contains("unknown: empty history"),
            "{name}: {}",
            stdout(&o)
        );
        assert!(!stderr(&o).contains("EDN") && !stderr(&o).contains(":type"));
    }
}

#[test]
fn json_that_is_not_a_history_gets_json_words() {
    let dir = tempfile::tempdir().unwrap();
    for (text, found) in [
        ("{}\n", "found an empty object"),
        ("{\n  \"runs\": 3\n}\n", "found an object with key \"runs\""),
        (
            "[1, 2, 3]\n",
            "found an array of 3 elements whose first is a number",
        ),
    ] {
        let f = dir.path().join("not-a-history.json");
        std::fs::write(&f, text).unwrap();
        let o = shakedown(&[path(&f)]);
        assert_eq!(code(&o), 3, "{text}: {}{}", stdout(&o), stderr(&o));
        let want = format!("error: {}: is JSON but not a history: ", f.display());
        assert!(stderr(&o).starts_with(&want), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(found), "{text}: {}", stderr(&o));
        assert!(!stderr(&o).contains(":type"), "{}", stderr(&o));
    }
}

#[test]
fn a_missing_path_is_named_the_same_by_check_and_report() {
    let missing = "/no/such/path";
    let o = shakedown(&[missing]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o).trim(), format!("error: no such path: {missing}"));
    let o = Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .env(shakedown::store::PROTECT_ENV, data("../../reports"))
        .args(["report", missing])
        .output()
        .expect("run shakedown");
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o).trim(), format!("error: no such path: {missing}"));
}

#[test]
fn counts_of_one_are_singular_in_checks_text_output() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.jsonl");
    std::fs::write(
        &one,
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}\n{\"type\":\"ok\",\"process\":0,\"f\":\"write\",\"value\":1}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&one)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("valid: 1 op in 1 part ("),
        "{}",
        stdout(&o)
    );
    let lone = dir.path().join("lone.jsonl");
    std::fs::write(
        &lone,
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start-partition\",\"value\":null}\n",
    )
    .unwrap();
    let o = shakedown(&[path(&lone)]);
    assert!(
        stdout(&o).starts_with("jsonl history, 1 event; "),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("(1 event, none from"), "{}", stdout(&o));
    // A directory holding one history, and one unreadable file beside a readable one.
    let single = dir.path().join("single");
    std::fs::create_dir(&single).unwrap();
    std::fs::copy(&one, single.join("one.jsonl")).unwrap();
    let o = shakedown(&[path(&single)]);
    assert!(
        stdout(&o).contains("checked 1 file: 1 valid, 0 invalid, 0 unknown, 0 unreadable"),
        "{}",
        stdout(&o)
    );
    let o = shakedown(&[path(&one), "/no/such/path"]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("verdict: valid (1 file unreadable)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn set_full_finds_an_element_seen_then_lost_where_the_set_checker_has_no_final_read() {
    let f = data("histories/set-full-lost.edn");
    // The set checker wants a read that began after every add completed; the last add completes
    // after the last read, so it cannot judge.
    let o = shakedown(&["--model", "set", path(&f)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("set: unknown"), "{}", stdout(&o));
    // Jepsen's set-full: 1 was acknowledged, shown by a read, then missing from every read begun
    // since: lost; 2 completed after the last read began: never read.
    let o = shakedown(&["--model", "set-full", path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("edn history, 12 events; model set-full"),
        "{out}"
    );
    assert!(
        out.contains(
            "set-full: invalid — 3 elements attempted: 1 stable, 1 lost (1), 1 never read"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "lost: element 1: add by process 1 (line 3, 0.003 s) ok; known from its add's ok (line 4, 0.004 s); last shown by the read by process 2 (line 5, 0.005 s); missing from every read begun since, the latest by process 1 (line 10, 0.010 s)"
        ),
        "{out}"
    );
    assert!(out.contains("never read (1): 2"), "{out}");
    assert!(out.contains("verdict: invalid"), "{out}");
    let o = shakedown(&["--model", "set-full", "--json", path(&f)]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["checker"], "set-full");
    assert_eq!(v["details"]["lost"], serde_json::json!([1]));
    assert_eq!(v["details"]["never_read"], serde_json::json!([2]));
    assert_eq!(v["details"]["lost_latencies_ms"]["0.5"], 1.000001);
    assert_eq!(v["details"]["format"], "edn");
}

#[test]
fn set_full_stale_reads_fail_only_with_linearizable_and_duplicates_always() {
    let f = data("histories/set-full-stale.edn");
    // 0 is missing from a read that began after an earlier read showed it. The set checker
    // counts it stale and calls the history valid; so does set-full by default (elle-cli's).
    let o = shakedown(&["--model", "set", path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = shakedown(&["--model", "set-full", path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("1 stale (allowed: linearizable reads not claimed)"),
        "{}",
        stdout(&o)
    );
    let o = shakedown(&["--model", "set-full", "--linearizable", path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("stale: element 0: add by process 0 (line 1, 0.001 s) ok; known from its add's ok (line 2, 0.002 s); missing from the read by process 2 (line 5, 0.005 s), which began after it was known"),
        "{out}"
    );
    assert!(
        out.contains("stable latencies (ms, by quantile): 0: 3.000001,"),
        "{out}"
    );
    // --linearizable belongs to set-full.
    let o = shakedown(&["--model", "set", "--linearizable", path(&f)]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("--linearizable is for --model set-full"),
        "{}",
        stderr(&o)
    );
    // An element a read returns twice: the set checker does not look, set-full is invalid.
    let f = data("histories/set-full-duplicate.edn");
    let o = shakedown(&["--model", "set", path(&f)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = shakedown(&["--model", "set-full", path(&f)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o)
            .contains("duplicated: element 1: 2 times in one read by process 1 (line 6, 0.006 s)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn set_full_without_reads_or_ops_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let adds = dir.path().join("adds.edn");
    std::fs::write(
        &adds,
        "{:type :invoke, :f :add, :value 0, :process 0}\n{:type :ok, :f :add, :value 0, :process 0}\n",
    )
    .unwrap();
    let o = shakedown(&["--model", "set-full", path(&adds)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("no ok read in the history"),
        "{}",
        stdout(&o)
    );
    let empty = dir.path().join("empty.edn");
    std::fs::write(&empty, "").unwrap();
    let o = shakedown(&["--model", "set-full", path(&empty)]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
}

/// `details` of a `check --json` result without what depends on timing (times, the explanation
/// and summary that print them).
fn untimed(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("summary");
    let d = v["details"].as_object_mut().unwrap();
    for k in [
        "time_ms",
        "verdict_time_ms",
        "witness_time_ms",
        "first_invalid_ms",
        "explanation",
    ] {
        d.remove(k);
    }
    for p in d["parts"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.remove("time_ms");
        if let Some(w) = p.get_mut("witness").and_then(|w| w.as_object_mut()) {
            w.remove("time_ms");
        }
    }
    v
}

#[test]
fn a_streamed_check_agrees_with_the_whole_check() {
    use shakedown::checker::linear::histgen::{GenConfig, corrupt_read, generate_register_history};
    let dir = tempfile::tempdir().unwrap();
    let generate = |seed, rotate_every, info_probability| {
        generate_register_history(&GenConfig {
            keys: 4,
            processes_per_key: 3,
            ops: 2_000,
            info_probability,
            seed,
            rotate_every,
            ..GenConfig::default()
        })
    };
    let mut invalid = generate(2, 25, 0.02);
    assert!(corrupt_read(&mut invalid, 10).is_some());
    let cases = [
        // Rotating keys with crashed (info) ops, as the register workload writes them.
        ("valid", generate(1, 25, 0.05), 0),
        ("invalid", invalid, 1),
        // Keys that never retire (every process on the same keys to the end).
        ("hot", generate(3, 0, 0.05), 0),
    ];
    for (name, h, expect) in cases {
        assert!(
            h.ops
                .iter()
                .any(|o| o.op_type == shakedown::history::OpType::Info)
        );
        let f = dir.path().join(format!("{name}.jsonl"));
        let mut text = String::new();
        for op in &h.ops {
            text.push_str(&serde_json::to_string(op).unwrap());
            text.push('\n');
        }
        std::fs::write(&f, text).unwrap();
        let run = |stream: &str| {
            shakedown(&[
                "--stream",
                stream,
                "--all-keys",
                "--witness",
                "none",
                "--json",
                path(&f),
            ])
        };
        let (s, w) = (run("always"), run("never"));
        assert_eq!(code(&s), expect, "{name}: {}{}", stdout(&s), stderr(&s));
        assert_eq!(code(&w), expect, "{name}");
        assert!(!stderr(&s).contains("checked whole"), "{}", stderr(&s));
        let (sj, wj): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&stdout(&s)).unwrap(),
            serde_json::from_str(&stdout(&w)).unwrap(),
        );
        assert_eq!(untimed(&sj), untimed(&wj), "{name}");
        // The text output too, but for the times it prints.
        let text = |o: &Output| {
            let t = stdout(o);
            let re = |l: &str| l.split(" in ").next().unwrap_or_default().to_string();
            t.lines().map(re).collect::<Vec<_>>()
        };
        let plain = |stream| {
            shakedown(&[
                "--stream",
                stream,
                "--all-keys",
                "--witness",
                "none",
                path(&f),
            ])
        };
        assert_eq!(text(&plain("always")), text(&plain("never")), "{name}");
    }
    // What the stream cannot check alike is checked whole, saying why when asked to stream.
    let f = dir.path().join("valid.jsonl");
    let o = shakedown(&["--stream", "always", "--independent", path(&f)]);
    assert!(
        stderr(&o).contains("checked whole: --html, --export-edn, --independent"),
        "{}",
        stderr(&o)
    );
    // The session guarantees stream with the rest: the same verdict and counts as whole.
    let session = |stream| shakedown(&["--stream", stream, "--session", "--json", path(&f)]);
    let (s, w) = (session("always"), session("never"));
    assert!(!stderr(&s).contains("checked whole"), "{}", stderr(&s));
    assert_eq!(code(&s), code(&w));
    let verdicts = |o: &std::process::Output| {
        let v: serde_json::Value = serde_json::from_str(&stdout(o)).unwrap();
        let checkers = v["checkers"].as_array().cloned().unwrap_or_default();
        let session = checkers
            .iter()
            .find(|c| c["checker"] == "session")
            .cloned()
            .expect("a session checker");
        (
            v["valid"].clone(),
            session["verdict"].clone(),
            session["details"]["ok_reads"].clone(),
        )
    };
    assert_eq!(verdicts(&s), verdicts(&w));
}

#[test]
fn elle_cli_set_full_reads_values_literally_as_elle_cli_does() {
    // elle-cli's histories/jepsen/set_full.edn shape (its ops, times regenerated): adds of
    // [0 i] and one read of [0 1 2 … 292]. Not jepsen.independent tuples (the read is no
    // [k v]): every element [0 i] is lost, as elle-cli's set_full-result.json says (lost-count
    // 293, stable 0, never-read 0, valid? false). Split into key 0 it came out valid.
    for name in ["elle-cli-set-full.edn", "elle-cli-set-full.json"] {
        let f = data(&format!("histories/{name}"));
        let o = shakedown(&["--model", "set-full", "--json", path(&f)]);
        assert_eq!(code(&o), 1, "{name}: {}{}", stdout(&o), stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let d = &v["details"];
        assert_eq!(d["attempt_count"], 293, "{name}");
        assert_eq!(d["lost_count"], 293, "{name}");
        assert_eq!(d["stable_count"], 0, "{name}");
        assert_eq!(d["never_read_count"], 0, "{name}");
        assert_eq!(d["stale_count"], 0, "{name}");
        assert_eq!(d["duplicated_count"], 0, "{name}");
    }
    // elle-cli's test/test-data/set.edn with Jepsen's set checker and set-full: valid.
    let f = data("histories/elle-cli-set.edn");
    for model in ["set", "set-full"] {
        let o = shakedown(&["--model", model, path(&f)]);
        assert_eq!(code(&o), 0, "{model}: {}{}", stdout(&o), stderr(&o));
    }
}
