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
use shakedown::model::{
    Convert, Model, MultiRegisterModel, MutexModel, RegisterConfig, RegisterModel,
};
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
        check(&f, &MultiRegisterModel::new(0), Verdict::Valid);
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
        let cfg = LinearConfig {
            minimize_time_limit: Some(std::time::Duration::from_millis(300)),
            ..LinearConfig::default()
        };
        let r = if f.to_string_lossy().contains("mutex") {
            check_history(&MutexModel, &h, &cfg)
        } else {
            check_history(&knossos_cas(), &h, &cfg)
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

/// Reference checker: try every order of the converted ops that respects real time, with each
/// pending op either placed somewhere after its invoke or never. Exhaustive (failed (placed set,
/// state) pairs are remembered, nothing else is pruned); small inputs only.
fn brute_force_valid(h: &History) -> bool {
    brute_force_valid_with(&RegisterModel::cas_register(RegisterConfig::etcd()), h)
}

fn brute_force_valid_with<M: Model>(m: &M, h: &History) -> bool {
    let pairs = h.pairs().unwrap();
    let mut ops = Vec::new();
    for (i, op) in h.ops.iter().enumerate() {
        if op.op_type != OpType::Invoke {
            continue;
        }
        let c = pairs[i].map(|j| &h.ops[j]);
        match m.convert(op, c).unwrap() {
            Convert::Skip => {}
            Convert::Completed(o) => ops.push((i, pairs[i], o)),
            Convert::Pending(o) => ops.push((i, None, o)),
        }
    }
    type Failed<S> = std::collections::HashSet<(Vec<bool>, S)>;
    fn go<M: Model>(
        m: &M,
        ops: &[(usize, Option<usize>, M::Op)],
        done: &mut Vec<bool>,
        s: M::State,
        failed: &mut Failed<M::State>,
    ) -> bool {
        if ops
            .iter()
            .zip(done.iter())
            .all(|(o, d)| *d || o.1.is_none())
        {
            return true;
        }
        if failed.contains(&(done.clone(), s.clone())) {
            return false;
        }
        for k in 0..ops.len() {
            if done[k] {
                continue;
            }
            // k may go next only if no other unplaced completed op returned before k was invoked.
            let blocked = ops
                .iter()
                .enumerate()
                .any(|(j, o)| !done[j] && j != k && o.1.is_some_and(|r| r < ops[k].0));
            if blocked {
                continue;
            }
            if let Some(ns) = m.step(&s, &ops[k].2) {
                done[k] = true;
                let ok = go(m, ops, done, ns, failed);
                done[k] = false;
                if ok {
                    return true;
                }
            }
        }
        failed.insert((done.clone(), s));
        false
    }
    let mut done = vec![false; ops.len()];
    go(m, &ops, &mut done, m.init(), &mut Failed::default())
}

/// A random well-formed small history: 3 processes, small values, ok/fail/info completions, some
/// invokes left open.
fn random_history() -> impl Strategy<Value = History> {
    random_history_with(3, 16, false)
}

/// [`random_history`] with `procs` processes, up to `max_steps - 1` events and, with
/// `many_pending`, half of the completions `info` (crashed writers leave many interchangeable
/// pending ops).
fn random_history_with(
    procs: u64,
    max_steps: usize,
    many_pending: bool,
) -> impl Strategy<Value = History> {
    proptest::collection::vec((0..procs, 0u8..10, 0i64..3, 0i64..3, 0u8..10), 1..max_steps)
        .prop_map(move |steps| {
            use shakedown::history::{Op, Process};
            let mut open: Vec<Option<(String, serde_json::Value)>> = vec![None; procs as usize];
            let mut ops = Vec::new();
            for (p, kind, a, b, outcome) in steps {
                let proc_ = Process::Client(p);
                match open[p as usize].take() {
                    None => {
                        let (f, v) = match kind % 3 {
                            0 => ("read", serde_json::Value::Null),
                            1 => ("write", serde_json::json!(a)),
                            _ => ("cas", serde_json::json!([a, b])),
                        };
                        ops.push(Op::new(OpType::Invoke, proc_, f, v.clone()));
                        open[p as usize] = Some((f.to_string(), v));
                    }
                    Some((f, v)) => {
                        let t = match (many_pending, outcome) {
                            (false, 0..6) | (true, 0..4) => OpType::Ok,
                            (false, 6..8) | (true, 4) => OpType::Fail,
                            _ => OpType::Info,
                        };
                        let v = if f == "read" && t == OpType::Ok {
                            if a == 2 {
                                serde_json::Value::Null
                            } else {
                                serde_json::json!(b)
                            }
                        } else {
                            v
                        };
                        let mut op = Op::new(t, proc_, f.as_str(), v);
                        if f == "cas" && t == OpType::Fail && kind % 2 == 0 {
                            op.error = Some("cas-mismatch".into());
                        }
                        ops.push(op);
                    }
                }
            }
            History::from_ops(ops)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn search_agrees_with_brute_force(h in random_history()) {
        let expect = if brute_force_valid(&h) { Verdict::Valid } else { Verdict::Invalid };
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg_fast());
        prop_assert_eq!(r.verdict, expect, "{:#?}\n{}", h.ops, r.explain());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// Many crashed writers: the search counts pending ops per class and skips dominated
    /// configurations; the exhaustive reference does neither.
    #[test]
    fn search_agrees_with_brute_force_on_many_pending_ops(h in random_history_with(6, 24, true)) {
        let expect = if brute_force_valid(&h) { Verdict::Valid } else { Verdict::Invalid };
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg_fast());
        prop_assert_eq!(r.verdict, expect, "{:#?}\n{}", h.ops, r.explain());
    }

    #[test]
    fn search_agrees_with_brute_force_on_crashed_writers(h in crashed_writers_history()) {
        let expect = if brute_force_valid(&h) { Verdict::Valid } else { Verdict::Invalid };
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg_fast());
        prop_assert_eq!(r.verdict, expect, "{:#?}\n{}", h.ops, r.explain());
    }
}

/// Crashed writers, then observers: 1–9 writes and cas ops over values 0..3 that never complete or
/// complete `info` (repeated ones are interchangeable), then 1–9 sequential ops of one process
/// whose outcomes are random (reads of any value or absent, writes, cas ok or mismatched). Whether
/// the observations can be explained depends on how often each pending op class can be used.
fn crashed_writers_history() -> impl Strategy<Value = History> {
    let pending =
        proptest::collection::vec((any::<bool>(), 0i64..3, 0i64..3, any::<bool>()), 1..10);
    let observed = proptest::collection::vec((0u8..4, 0i64..4, 0i64..3, any::<bool>()), 1..10);
    (pending, observed).prop_map(|(pending, observed)| {
        use serde_json::{Value, json};
        use shakedown::history::{Op, Process};
        let mut ops = Vec::new();
        let mut infos = Vec::new();
        for (p, (is_write, a, b, completes)) in pending.into_iter().enumerate() {
            let (f, v) = if is_write {
                ("write", json!(a))
            } else {
                ("cas", json!([a, b]))
            };
            let proc_ = Process::Client(p as u64);
            ops.push(Op::new(OpType::Invoke, proc_, f, v.clone()));
            if completes {
                infos.push(Op::new(OpType::Info, proc_, f, v));
            }
        }
        ops.extend(infos);
        let me = Process::Client(100);
        for (kind, a, b, ok) in observed {
            let (f, inv, done, t, err) = match kind {
                0 | 1 => {
                    let v = if a == 3 { Value::Null } else { json!(a) };
                    ("read", Value::Null, v, OpType::Ok, None)
                }
                2 => ("write", json!(a % 3), json!(a % 3), OpType::Ok, None),
                _ => {
                    let v = json!([a % 3, b]);
                    let (t, err) = if ok {
                        (OpType::Ok, None)
                    } else {
                        (OpType::Fail, Some("cas-mismatch"))
                    };
                    ("cas", v.clone(), v, t, err)
                }
            };
            ops.push(Op::new(OpType::Invoke, me, f, inv));
            let mut c = Op::new(t, me, f, done);
            c.error = err.map(str::to_string);
            ops.push(c);
        }
        History::from_ops(ops)
    })
}

#[test]
fn crashed_writers_histories_cover_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = crashed_writers_history();
    let n = 300;
    let valid = (0..n)
        .filter(|_| brute_force_valid(&strategy.new_tree(&mut runner).unwrap().current()))
        .count();
    assert!(valid > n / 10 && valid < n * 9 / 10, "{valid} of {n} valid");
}

/// The sub-history a witness's essential ops claim is invalid: the essential ops as recorded, every
/// other read-only op (read, cas mismatch) dropped, every other op turned `info` (it may have taken
/// effect at any time after its invoke, or never).
fn relaxed_except(h: &History, essential: &[u64]) -> History {
    use shakedown::history::Op;
    let pairs = h.pairs().unwrap();
    let mut keep: Vec<Op> = Vec::new();
    let mut drop = vec![false; h.ops.len()];
    let mut info = vec![false; h.ops.len()];
    for (i, op) in h.ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || essential.contains(&(i as u64)) {
            continue;
        }
        let Some(j) = pairs[i] else { continue };
        let c = &h.ops[j];
        let read_only = op.f == "read" || (op.f == "cas" && c.op_type == OpType::Fail);
        if read_only {
            drop[i] = true;
            drop[j] = true;
        } else if c.op_type == OpType::Ok {
            info[j] = true;
        }
    }
    for (i, op) in h.ops.iter().enumerate() {
        if drop[i] {
            continue;
        }
        let mut op = op.clone();
        if info[i] {
            op.op_type = OpType::Info;
        }
        keep.push(op);
    }
    History::from_ops(keep)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// A complete minimized witness is invalid on its own and 1-minimal, both by the exhaustive
    /// reference.
    #[test]
    fn minimized_witness_is_invalid_and_one_minimal(h in random_history_with(4, 22, true)) {
        prop_assume!(!brute_force_valid(&h));
        let cfg = LinearConfig {
            minimize_time_limit: Some(std::time::Duration::from_secs(10)),
            ..cfg_fast()
        };
        let r = check_history(&RegisterModel::cas_register(RegisterConfig::etcd()), &h, &cfg);
        let w = r.parts[0].witness.as_ref().unwrap();
        prop_assert!(w.minimized_complete, "{}", r.explain());
        let ess: Vec<u64> = w.minimized.as_ref().unwrap().iter().map(|o| o.index).collect();
        prop_assert!(!brute_force_valid(&relaxed_except(&h, &ess)), "{:#?}\n{}", h.ops, r.explain());
        for k in 0..ess.len() {
            let mut fewer = ess.clone();
            fewer.remove(k);
            prop_assert!(
                brute_force_valid(&relaxed_except(&h, &fewer)),
                "not 1-minimal: op {} is not needed\n{:#?}\n{}", ess[k], h.ops, r.explain()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn multi_key_histories_split_and_name_the_bad_key(seed in any::<u64>(), keys in 2usize..6, pick in any::<prop::sample::Index>()) {
        let g = GenConfig { keys, processes_per_key: 3, ops: 300, info_probability: 0.05, seed, ..GenConfig::default() };
        let mut h = generate_register_history(&g);
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let r = check_history(&m, &h, &cfg_fast());
        prop_assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        prop_assert_eq!(r.parts.len(), keys);
        let reads: Vec<usize> = h.ops.iter().enumerate()
            .filter(|(_, o)| o.op_type == OpType::Ok && o.f == "read")
            .map(|(i, _)| i).collect();
        prop_assume!(!reads.is_empty());
        let target = reads[pick.index(reads.len())];
        h.ops[target].value = serde_json::json!(-1);
        let bad_key = h.ops[target].key.clone().map(String::from);
        let r = check_history(&m, &h, &cfg_fast());
        prop_assert_eq!(r.verdict, Verdict::Invalid);
        let bad: Vec<_> = r.parts.iter().filter(|p| p.verdict == Verdict::Invalid).collect();
        prop_assert_eq!(bad.len(), 1);
        prop_assert_eq!(&bad[0].key, &bad_key);
    }
}

#[test]
fn random_histories_cover_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = random_history();
    let mut valid = 0;
    let n = 300;
    for _ in 0..n {
        let h = strategy.new_tree(&mut runner).unwrap().current();
        if brute_force_valid(&h) {
            valid += 1;
        }
    }
    assert!(valid > n / 10 && valid < n * 9 / 10, "{valid} of {n} valid");
}
