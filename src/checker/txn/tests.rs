//! Tests of the transactional checker: one constructed history per anomaly type, and a
//! cross-check against an exhaustive search for a serial order on small random histories.

use super::consistency::Model;
use super::histgen::{TxnGenConfig, generate_txn_history};
use super::*;
use crate::history::{Op, OpType, Process};
use serde_json::{Value, json};

/// A transaction: process, invoke time, completion time, outcome, completed value.
pub(super) type T = (u64, u64, u64, OpType, Value);

/// A history from transactions; invokes carry the value with reads blanked.
pub(super) fn history(txns: &[T]) -> History {
    let mut events = Vec::new();
    for (i, (p, a, b, ty, v)) in txns.iter().enumerate() {
        let blank: Vec<Value> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                if m[0] == "r" {
                    json!(["r", m[1], null])
                } else {
                    m.clone()
                }
            })
            .collect();
        events.push((*a, i, OpType::Invoke, *p, Value::Array(blank)));
        events.push((*b, i, *ty, *p, v.clone()));
    }
    events.sort_by_key(|e| (e.0, e.1));
    History::from_ops(
        events
            .into_iter()
            .map(|(t, _, ty, p, v)| {
                let mut op = Op::new(ty, Process::Client(p), "txn", v);
                op.time_ns = t;
                op
            })
            .collect(),
    )
}

fn run(txns: &[T]) -> TxnResult {
    check(&history(txns), &TxnConfig::default()).unwrap()
}

fn names(r: &TxnResult) -> Vec<String> {
    r.anomaly_counts.keys().cloned().collect()
}

const OK: OpType = OpType::Ok;

#[test]
fn a_serial_history_is_valid() {
    let r = run(&[
        (0, 0, 1, OK, json!([["append", "x", 1], ["r", "y", []]])),
        (1, 2, 3, OK, json!([["r", "x", [1]], ["append", "y", 1]])),
        (0, 4, 5, OK, json!([["r", "x", [1]], ["r", "y", [1]]])),
    ]);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
    assert!(r.anomalies.is_empty() && r.not.is_empty());
}

#[test]
fn write_skew_is_g2_item_and_rules_out_repeatable_read() {
    // Both read both keys empty, each appends to a different key: concurrent.
    let r = run(&[
        (
            0,
            0,
            10,
            OK,
            json!([["r", "x", []], ["r", "y", []], ["append", "x", 1]]),
        ),
        (
            1,
            0,
            10,
            OK,
            json!([["r", "x", []], ["r", "y", []], ["append", "y", 1]]),
        ),
        (2, 20, 21, OK, json!([["r", "x", [1]], ["r", "y", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G2-item"], "{}", r.explain());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.not, vec![Model::RepeatableRead]);
    let g2 = &r.anomalies[0];
    let cycle = g2.cycle.as_ref().unwrap();
    assert_eq!(cycle.len(), 2);
    assert!(cycle.iter().all(|s| s.edge == "rw"));
    assert!(
        g2.explanation[0].contains("read key") && g2.explanation[0].contains("(rw)"),
        "{:?}",
        g2.explanation
    );
}

#[test]
fn read_skew_is_g_single() {
    // T1 appends x and y; T2 sees T1's x but not its y.
    let r = run(&[
        (
            0,
            0,
            10,
            OK,
            json!([["append", "x", 1], ["append", "y", 1]]),
        ),
        (1, 0, 10, OK, json!([["r", "x", [1]], ["r", "y", []]])),
        (2, 20, 21, OK, json!([["r", "y", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G-single-item"], "{}", r.explain());
    assert_eq!(r.not, vec![Model::ConsistentView, Model::RepeatableRead]);
}

#[test]
fn write_cycle_is_g0_and_read_cycle_is_g1c() {
    // x = [1 2] (T0 then T1), y = [2 1] (T1 then T0): ww both ways.
    let r = run(&[
        (
            0,
            0,
            10,
            OK,
            json!([["append", "x", 1], ["append", "y", 1]]),
        ),
        (
            1,
            0,
            10,
            OK,
            json!([["append", "x", 2], ["append", "y", 2]]),
        ),
        (
            2,
            20,
            21,
            OK,
            json!([["r", "x", [1, 2]], ["r", "y", [2, 1]]]),
        ),
    ]);
    assert!(names(&r).contains(&"G0".to_string()), "{}", r.explain());
    assert_eq!(r.not, vec![Model::ReadUncommitted]);
    // Each reads the other's append: wr both ways.
    let r = run(&[
        (0, 0, 10, OK, json!([["append", "x", 1], ["r", "y", [1]]])),
        (1, 0, 10, OK, json!([["append", "y", 1], ["r", "x", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G1c"], "{}", r.explain());
    assert_eq!(r.not, vec![Model::ReadCommitted]);
}

#[test]
fn aborted_intermediate_internal_duplicate_garbage_and_incompatible_reads() {
    let f = OpType::Fail;
    let r = run(&[
        (0, 0, 1, f, json!([["append", "x", 1]])),
        (1, 2, 3, OK, json!([["r", "x", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G1a"], "{}", r.explain());
    let r = run(&[
        (
            0,
            0,
            10,
            OK,
            json!([["append", "x", 1], ["append", "x", 2]]),
        ),
        (1, 0, 10, OK, json!([["r", "x", [1]]])),
        (2, 20, 21, OK, json!([["r", "x", [1, 2]]])),
    ]);
    assert!(names(&r).contains(&"G1b".to_string()), "{}", r.explain());
    let r = run(&[(0, 0, 1, OK, json!([["append", "x", 1], ["r", "x", []]]))]);
    assert_eq!(names(&r), vec!["internal"], "{}", r.explain());
    assert_eq!(r.not, vec![Model::ReadAtomic]);
    // A read of an element the transaction appends only afterwards: a future read (⇒ G1c).
    let r = run(&[(0, 0, 1, OK, json!([["r", "x", [1]], ["append", "x", 1]]))]);
    assert!(
        names(&r).contains(&"future-read".to_string()),
        "{}",
        r.explain()
    );
    // A second read that sees another transaction's append: allowed by read committed.
    let r = run(&[
        (
            0,
            0,
            10,
            OK,
            json!([["r", "x", []], ["append", "y", 5], ["r", "x", [1]]]),
        ),
        (1, 0, 10, OK, json!([["append", "x", 1]])),
    ]);
    assert!(
        names(&r).contains(&"fuzzy-read".to_string()),
        "{}",
        r.explain()
    );
    assert!(
        !names(&r).contains(&"internal".to_string()),
        "{}",
        r.explain()
    );
    assert!(r.not.contains(&Model::RepeatableRead), "{:?}", r.not);
    assert!(!r.not.contains(&Model::ReadCommitted), "{:?}", r.not);
    let r = run(&[
        (0, 0, 1, OK, json!([["append", "x", 1]])),
        (1, 2, 3, OK, json!([["r", "x", [1, 1]]])),
    ]);
    assert_eq!(names(&r), vec!["duplicate-elements"], "{}", r.explain());
    let r = run(&[(1, 2, 3, OK, json!([["r", "x", [7]]]))]);
    assert_eq!(names(&r), vec!["garbage-read"], "{}", r.explain());
    let r = run(&[
        (0, 0, 1, OK, json!([["append", "x", 1]])),
        (1, 0, 1, OK, json!([["append", "x", 2]])),
        (2, 2, 3, OK, json!([["r", "x", [1, 2]]])),
        (3, 2, 3, OK, json!([["r", "x", [2, 1]]])),
    ]);
    assert!(
        names(&r).contains(&"incompatible-order".to_string()),
        "{}",
        r.explain()
    );
}

#[test]
fn lost_update_is_named() {
    let r = run(&[
        (0, 0, 10, OK, json!([["r", "x", []], ["append", "x", 1]])),
        (1, 0, 10, OK, json!([["r", "x", []], ["append", "x", 2]])),
        (2, 20, 21, OK, json!([["r", "x", [1, 2]]])),
    ]);
    assert!(
        names(&r).contains(&"lost-update".to_string()),
        "{}",
        r.explain()
    );
    // Elle: lost update is proscribed by cursor stability and update atomic.
    assert_eq!(r.not, vec![Model::CursorStability, Model::UpdateAtomic]);
    assert!(r.also_not.contains(&Model::SnapshotIsolation));
}

#[test]
fn stale_reads_after_completion_are_realtime_cycles() {
    // T0 appends and completes; T1 begins later and does not see it: serializable (T1 first),
    // not strict-serializable. (A later read puts the append in x's order: an append never read
    // has no known place, as in Elle.)
    let r = run(&[
        (0, 0, 1, OK, json!([["append", "x", 1]])),
        (1, 2, 3, OK, json!([["r", "x", []]])),
        (2, 4, 5, OK, json!([["r", "x", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G-single-item-realtime"], "{}", r.explain());
    assert_eq!(r.not, vec![Model::StrongSnapshotIsolation]);
    assert_eq!(r.also_not, vec![Model::StrictSerializable]);
    assert!(
        r.anomalies[0]
            .explanation
            .iter()
            .any(|l| l.contains("completed at")),
        "{:?}",
        r.anomalies[0].explanation
    );
    let cfg = TxnConfig {
        ask: super::judge::Ask::model(Model::Serializable),
        ..TxnConfig::default()
    };
    let r = check(
        &history(&[
            (0, 0, 1, OK, json!([["append", "x", 1]])),
            (1, 2, 3, OK, json!([["r", "x", []]])),
            (2, 4, 5, OK, json!([["r", "x", [1]]])),
        ]),
        &cfg,
    )
    .unwrap();
    assert_eq!(r.verdict, Verdict::Valid);
    // The same on one process: a process cycle.
    let r = run(&[
        (0, 0, 1, OK, json!([["append", "x", 1]])),
        (0, 2, 3, OK, json!([["r", "x", []]])),
        (2, 0, 5, OK, json!([["r", "x", [1]]])),
    ]);
    assert_eq!(names(&r), vec!["G-single-item-process"], "{}", r.explain());
}

#[test]
fn nothing_committed_is_unknown_and_a_zero_budget_leaves_components_unknown() {
    let r = run(&[(0, 0, 1, OpType::Fail, json!([["append", "x", 1]]))]);
    assert_eq!(r.verdict, Verdict::Unknown);
    let h = history(&[
        (0, 0, 1, OK, json!([["append", "x", 1]])),
        (1, 2, 3, OK, json!([["r", "x", []]])),
        (2, 4, 5, OK, json!([["r", "x", [1]]])),
    ]);
    let cfg = TxnConfig {
        ask: super::judge::Ask::model(Model::StrictSerializable),
        time_limit: Duration::ZERO,
        ..TxnConfig::default()
    };
    let r = check(&h, &cfg).unwrap();
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.explain());
    assert!(r.unknown_reason.as_deref().unwrap().contains("budget"));
    assert_eq!(r.unsearched.len(), 1);
}

#[test]
fn info_transactions_may_have_happened() {
    // An info append that was read: fine; one never read: fine.
    let r = run(&[
        (0, 0, 1, OpType::Info, json!([["append", "x", 1]])),
        (1, 0, 1, OpType::Info, json!([["append", "y", 1]])),
        (2, 2, 3, OK, json!([["r", "x", [1]], ["r", "y", []]])),
    ]);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
}

#[test]
fn duplicate_appends_are_an_error() {
    let e = check(
        &history(&[
            (0, 0, 1, OK, json!([["append", "x", 1]])),
            (1, 0, 1, OK, json!([["append", "x", 1]])),
        ]),
        &TxnConfig::default(),
    )
    .unwrap_err();
    assert!(e.contains("both append 1 to key x"), "{e}");
}

/// Whether some order of the committed transactions (respecting real time when `strict`)
/// reproduces every read.
fn brute_force_serializable(h: &History, strict: bool) -> bool {
    let t = parse::read_txns(h).unwrap();
    let txns: Vec<&parse::Txn> = t.txns.iter().collect();
    let n = txns.len();
    let nkeys = t.keys.values.len();
    let mut perm: Vec<usize> = (0..n).collect();
    fn rec(
        txns: &[&parse::Txn],
        perm: &mut Vec<usize>,
        k: usize,
        state: &mut Vec<Vec<u32>>,
        strict: bool,
    ) -> bool {
        if k == perm.len() {
            return true;
        }
        for i in k..perm.len() {
            perm.swap(k, i);
            let tx = txns[perm[k]];
            // Real time: nothing left may have completed before this one began.
            let rt_ok = !strict
                || perm[k + 1..]
                    .iter()
                    .all(|&o| txns[o].complete_ns >= tx.invoke_ns);
            let saved = state.clone();
            let mut ok = rt_ok;
            if ok {
                for m in &tx.mops {
                    match m {
                        parse::Mop::Append { key, elem } => state[*key as usize].push(*elem),
                        parse::Mop::Read { key, list }
                            if list.as_ref().is_some_and(|l| *l != state[*key as usize]) =>
                        {
                            ok = false;
                            break;
                        }
                        _ => {}
                    }
                }
            }
            if ok && rec(txns, perm, k + 1, state, strict) {
                return true;
            }
            *state = saved;
            perm.swap(k, i);
        }
        false
    }
    rec(&txns, &mut perm, 0, &mut vec![Vec::new(); nkeys], strict)
}

#[test]
fn agrees_with_an_exhaustive_search_on_small_random_histories() {
    let mut seen = [0usize; 4];
    for seed in 0..600u64 {
        let cfg = TxnGenConfig {
            txns: 5,
            keys: 2,
            processes: 3,
            max_mops: 3,
            stale_probability: 0.3,
            final_read: true,
            seed,
            ..TxnGenConfig::default()
        };
        let h = generate_txn_history(&cfg);
        for (strict, model) in [
            (false, Model::Serializable),
            (true, Model::StrictSerializable),
        ] {
            let expect = brute_force_serializable(&h, strict);
            let r = check(
                &h,
                &TxnConfig {
                    ask: super::judge::Ask::model(model),
                    time_limit: Duration::from_secs(10),
                    ..TxnConfig::default()
                },
            )
            .unwrap();
            let valid = r.verdict == Verdict::Valid;
            assert_eq!(
                valid,
                expect,
                "seed {seed} strict {strict}: checker says {}, exhaustive search {}\n{}\n{}",
                r.verdict,
                expect,
                r.explain(),
                h.ops
                    .iter()
                    .map(|o| serde_json::to_string(o).unwrap())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            seen[strict as usize * 2 + valid as usize] += 1;
        }
    }
    // Both outcomes occur in both modes, so the cross-check is not vacuous.
    assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
}

#[test]
fn walks_through_a_transaction_twice_are_cut_to_a_simple_cycle() {
    use super::anomaly::{CycleShape, Variant, edge};
    use super::cycles::{Hop, classify, simplify};
    let hop = |from, to, bit| Hop { from, to, bit };
    // 0 →rw 1 →ww 0 →process 2 →ww 0: a G-single-process walk whose first loop is G-single.
    let walk = vec![
        hop(0, 1, edge::RW),
        hop(1, 0, edge::WW),
        hop(0, 2, edge::PROCESS),
        hop(2, 0, edge::WW),
    ];
    let kind = Kind::Cycle(CycleShape::GSingle, Variant::Process);
    assert_eq!(classify(&walk), kind);
    // Neither sub-cycle keeps both the rw and the process edge: the walk stays.
    assert_eq!(simplify(walk.clone(), kind), walk);
    let g_single = Kind::Cycle(CycleShape::GSingle, Variant::Plain);
    let walk = vec![
        hop(0, 1, edge::RW),
        hop(1, 2, edge::WW),
        hop(2, 1, edge::WW),
        hop(1, 0, edge::WR),
    ];
    assert_eq!(
        simplify(walk, g_single),
        vec![hop(0, 1, edge::RW), hop(1, 0, edge::WR)]
    );
}

/// Completions only, as Elle writes them: the invokes are synthesized and real time is unknown.
fn bare(txns: &[(u64, Value)]) -> History {
    let mut h = History::from_ops(
        txns.iter()
            .map(|(p, v)| Op::new(OK, Process::Client(*p), "txn", v.clone()))
            .collect(),
    );
    assert!(h.synthesize_invokes());
    h
}

#[test]
fn completion_only_histories_have_process_order_but_no_real_time() {
    // T1 appends, then (on another process) T2 reads the empty list: with invokes a
    // G-single-item-realtime; without them no cycle, and real time is not checked.
    let txns = [
        (0, json!([["append", "x", 1]])),
        (1, json!([["r", "x", []]])),
        (2, json!([["r", "x", [1]]])),
    ];
    let timed: Vec<T> = txns
        .iter()
        .enumerate()
        .map(|(i, (p, v))| (*p, 2 * i as u64, 2 * i as u64 + 1, OK, v.clone()))
        .collect();
    assert_eq!(
        names(&run(&timed)),
        vec!["G-single-item-realtime".to_string()]
    );
    let r = check(&bare(&txns), &TxnConfig::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    let why = r.unknown_reason.clone().unwrap();
    assert!(why.contains("real-time order is unknown"), "{why}");
    let ser = TxnConfig {
        ask: judge::Ask::model(Model::Serializable),
        ..TxnConfig::default()
    };
    assert_eq!(check(&bare(&txns), &ser).unwrap().verdict, Verdict::Valid);
    // On one process the order is known: a G-single-item-process (a third read shows the
    // version order).
    let same = [
        (0, json!([["append", "x", 1]])),
        (0, json!([["r", "x", []]])),
        (1, json!([["r", "x", [1]]])),
    ];
    let r = check(&bare(&same), &TxnConfig::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(names(&r), vec!["G-single-item-process".to_string()]);
    // A data cycle needs no order at all: G1c.
    let g1c = [
        (0, json!([["append", 1, 1], ["r", 2, [1]]])),
        (1, json!([["append", 1, 2], ["append", 2, 1]])),
        (2, json!([["r", 1, [1, 2]]])),
    ];
    let r = check(&bare(&g1c), &TxnConfig::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(names(&r), vec!["G1c".to_string()]);
}
