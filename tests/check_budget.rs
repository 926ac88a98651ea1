//! End-to-end tests of `shakedown check`'s budgets on generated Porcupine-shaped kv histories: the
//! verdict first (an invalid key settles it, the keys left undecided are counted and said why),
//! `--all-keys`, and the one memory budget (`--memory`, bad sizes refused in plain words).
//!
//! Owns only these CLI assertions; the generator (`checker::linear::histgen::kv`) and the budgets
//! themselves are unit-tested in their modules. No timed assertions: the machine may be loaded.

use serde_json::Value;
use shakedown::checker::linear::histgen::kv::{KvGenConfig, generate_kv_history, write_porcupine};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn shakedown(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .env(
            shakedown::store::PROTECT_ENV,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("reports"),
        )
        .arg("check")
        .args(args)
        .output()
        .expect("run shakedown")
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

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// A generated kv history written as Porcupine lines into `dir`; the keys made illegal.
fn kv_file(dir: &Path, name: &str, cfg: &KvGenConfig) -> (PathBuf, Vec<String>) {
    let g = generate_kv_history(cfg);
    let path = dir.join(name);
    std::fs::write(&path, write_porcupine(&g.history)).expect("write history");
    (path, g.illegal)
}

/// 50 clients on 10 keys, one key made illegal early in its history: its conviction is cheap,
/// several legal keys (many appends in flight at once) are not, so the verdict comes first and
/// the check usually stops short of deciding everything.
fn c50_bad_like() -> KvGenConfig {
    KvGenConfig {
        clients: 50,
        keys: 10,
        ops: 12_000,
        illegal_keys: 1,
        illegal_window: (0.0, 0.05),
        max_think_ns: 1_000_000,
        seed: 29,
        ..KvGenConfig::default()
    }
}

#[test]
fn an_invalid_key_settles_the_verdict_and_the_undecided_keys_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (f, illegal) = kv_file(dir.path(), "c50-bad-like.txt", &c50_bad_like());
    assert_eq!(illegal.len(), 1);
    let o = shakedown(&[f.to_str().unwrap(), "--json", "--witness", "none"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = json(&o);
    let d = &j["details"];
    assert_eq!(d["verdict"], "invalid");
    assert!(d["first_invalid_ms"].is_u64(), "{d}");
    let parts = d["parts"].as_array().unwrap();
    let invalid: Vec<&Value> = parts.iter().filter(|p| p["verdict"] == "invalid").collect();
    assert!(
        invalid.iter().any(|p| p["key"] == illegal[0].as_str()),
        "{}",
        j["summary"]
    );
    assert!(invalid.iter().all(|p| p["witness"].is_object()));
    // Never a valid key that was not searched to the end, and every unknown one says why.
    let settled = parts
        .iter()
        .filter(|p| p["unknown_cause"] == "settled")
        .count();
    assert_eq!(d["undecided"]["settled"], settled);
    assert_eq!(d["undecided"]["decide"], "verdict-first");
    for p in parts.iter().filter(|p| p["verdict"] == "unknown") {
        assert!(p["reason"].is_string(), "{p}");
    }
    if settled > 0 {
        let summary = j["summary"].as_str().unwrap();
        assert!(summary.contains("left undecided"), "{summary}");
        assert!(summary.contains("--all-keys"), "{summary}");
    }
}

#[test]
fn all_keys_decides_every_key() {
    let dir = tempfile::tempdir().unwrap();
    // Few clients: every key is quick to decide, so --all-keys leaves none unknown.
    let cfg = KvGenConfig {
        clients: 6,
        keys: 5,
        ops: 1_500,
        illegal_keys: 2,
        seed: 11,
        ..KvGenConfig::default()
    };
    let (f, mut illegal) = kv_file(dir.path(), "c6-bad.txt", &cfg);
    let o = shakedown(&[f.to_str().unwrap(), "--json", "--all-keys"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let d = &json(&o)["details"];
    assert_eq!(d["undecided"]["decide"], "all-keys");
    let parts = d["parts"].as_array().unwrap();
    assert!(parts.iter().all(|p| p["verdict"] != "unknown"), "{d}");
    let mut invalid: Vec<String> = parts
        .iter()
        .filter(|p| p["verdict"] == "invalid")
        .map(|p| p["key"].as_str().unwrap().to_string())
        .collect();
    invalid.sort();
    illegal.sort();
    assert_eq!(invalid, illegal);
}

#[test]
fn a_tiny_memory_budget_leaves_keys_unknown_and_the_verdict_unknown() {
    // A hard single-key history (see check_cli's time-limit test): no invalid key, so a memory
    // budget it outgrows makes the verdict unknown, never valid.
    let f =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/histories/hard-pending-cas.jsonl");
    let o = shakedown(&[f.to_str().unwrap(), "--memory", "1M"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("memory budget exhausted"), "{out}");
    assert!(
        out.contains("the memory budget of 1.0 MiB was exhausted"),
        "{out}"
    );
    assert!(out.contains("verdict: unknown"), "{out}");
}

#[test]
fn bad_memory_sizes_are_refused_in_plain_words() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/histories/porcupine-kv.txt");
    for bad in ["2X", "lots", "1.5.2G", "0"] {
        let o = shakedown(&[f.to_str().unwrap(), "--memory", bad]);
        assert_eq!(code(&o), 3, "{bad}: {}", text(&o));
        let out = text(&o);
        assert!(out.contains("--memory"), "{bad}: {out}");
        assert!(out.contains("size"), "{bad}: {out}");
    }
    let o = shakedown(&[f.to_str().unwrap(), "--memory", "64M"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}
