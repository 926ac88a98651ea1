//! Conformance against the Knossos corpus (tests/data/knossos, see its README for provenance) and
//! property tests of the linearizability checker on generated cas-register histories.
//!
//! Owns the data-driven `check(path, model, expect)` helper and the proptest properties. Does not own
//! the generator (`shakedown::checker::linear::histgen`), which the bench reuses.

use proptest::prelude::*;
use shakedown::checker::Verdict;
use shakedown::checker::linear::histgen::{GenConfig, generate_register_history};
use shakedown::checker::linear::{LinearConfig, check_history};
use shakedown::edn::{EdnOptions, read_file};
use shakedown::history::{History, OpType};
use shakedown::model::{Model, MultiRegisterModel, MutexModel, RegisterConfig, RegisterModel};
use std::path::{Path, PathBuf};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/knossos")
        .join(rel)
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "edn"))
        .collect();
    v.sort();
    v
}

/// Read an EDN history and assert the checker's verdict.
fn check<M: Model>(path: &Path, model: &M, expect: Verdict) {
    let h = read_file(path, EdnOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let cfg = LinearConfig {
        time_limit: Some(std::time::Duration::from_secs(60)),
        minimize_time_limit: Some(std::time::Duration::from_millis(300)),
        ..LinearConfig::default()
    };
    let r = check_history(model, &h, &cfg);
    assert_eq!(r.verdict, expect, "{}: {}", path.display(), r.explain());
    if expect == Verdict::Invalid {
        let w = r.parts.iter().find_map(|p| p.witness.as_ref());
        assert!(w.is_some(), "{}: invalid without a witness", path.display());
    }
}

fn knossos_cas() -> RegisterModel {
    RegisterModel::cas_register(RegisterConfig::knossos())
}

#[test]
fn cas_register_good_histories_are_linearizable() {
    let fs = files("cas-register/good");
    assert_eq!(fs.len(), 113);
    for f in fs {
        check(&f, &knossos_cas(), Verdict::Valid);
    }
}

#[test]
fn cas_register_bad_histories_are_not_linearizable() {
    let fs = files("cas-register/bad");
    assert_eq!(fs.len(), 7);
    for f in fs {
        check(&f, &knossos_cas(), Verdict::Invalid);
    }
}

#[test]
fn rethink_fail_minimal_witness_names_the_impossible_read() {
    let h = read_file(
        &data("cas-register/bad/rethink-fail-minimal.edn"),
        EdnOptions::default(),
    )
    .unwrap();
    let r = check_history(&knossos_cas(), &h, &LinearConfig::default());
    let w = r.parts[0].witness.as_ref().expect("witness");
    assert_eq!(w.op.f, "read");
    assert_eq!(w.op.value, serde_json::json!(3));
    let m = w.minimized.as_ref().expect("minimized");
    assert!(
        m.iter()
            .any(|o| o.f == "read" && o.value == serde_json::json!(3)),
        "{m:?}"
    );
}

#[test]
fn multi_register_good_history_is_linearizable() {
    for f in files("multi-register/good") {
        check(&f, &MultiRegisterModel { initial: 0 }, Verdict::Valid);
    }
}

#[test]
fn mutex_bad_history_is_not_linearizable() {
    for f in files("mutex/bad") {
        check(&f, &MutexModel, Verdict::Invalid);
    }
}

fn cfg_fast() -> LinearConfig {
    LinearConfig {
        time_limit: Some(std::time::Duration::from_secs(20)),
        minimize_time_limit: None,
        ..LinearConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn generated_histories_are_valid(seed in any::<u64>(), procs in 1usize..6, ops in 1usize..120) {
        let g = GenConfig { keys: 1, processes_per_key: procs, ops, info_probability: 0.1, seed, ..GenConfig::default() };
        let h = generate_register_history(&g);
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg_fast());
        prop_assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
    }

    #[test]
    fn an_impossible_read_is_invalid_and_named(seed in any::<u64>(), procs in 1usize..6, ops in 1usize..120, pick in any::<prop::sample::Index>()) {
        let g = GenConfig { keys: 1, processes_per_key: procs, ops, info_probability: 0.1, seed, ..GenConfig::default() };
        let mut h: History = generate_register_history(&g);
        let reads: Vec<usize> = h.ops.iter().enumerate()
            .filter(|(_, o)| o.op_type == OpType::Ok && o.f == "read")
            .map(|(i, _)| i).collect();
        prop_assume!(!reads.is_empty());
        let target = reads[pick.index(reads.len())];
        // The generator writes only values below 1_000_000.
        h.ops[target].value = serde_json::json!(-1);
        let pairs = h.pairs().unwrap();
        let invoke = pairs.iter().position(|p| *p == Some(target)).unwrap() as u64;
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg_fast());
        prop_assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explain());
        let w = r.parts[0].witness.as_ref().unwrap();
        prop_assert_eq!(w.op.index, invoke, "{}", r.explain());
    }
}

#[test]
fn invalid_results_explain_the_failure_in_one_screen() {
    for f in files("cas-register/bad")
        .into_iter()
        .chain(files("mutex/bad"))
    {
        let h = read_file(&f, EdnOptions::default()).unwrap();
        let r = if f.to_string_lossy().contains("mutex") {
            check_history(&MutexModel, &h, &LinearConfig::default())
        } else {
            check_history(&knossos_cas(), &h, &LinearConfig::default())
        };
        let text = r.explain();
        println!("{}:\n{text}\n", f.display());
        assert!(text.starts_with("invalid: "), "{text}");
        assert!(text.contains("cannot linearize op"), "{text}");
        let w = r.parts[0].witness.as_ref().unwrap();
        // The blocked op is not part of the linearizable prefix, and the prefix replays.
        assert!(w.prefix_tail.iter().all(|s| s.op.index != w.op.index));
        assert!(w.prefix_tail.len() <= 50);
    }
}
