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
fn duplicate_appends_leave_the_verdict_unknown_naming_them() {
    let r = check(
        &history(&[
            (0, 0, 1, OK, json!([["append", "x", 1]])),
            (1, 0, 1, OK, json!([["append", "x", 1]])),
        ]),
        &TxnConfig::default(),
    )
    .unwrap();
    assert_eq!(r.verdict, Verdict::Unknown);
    let e = r.unknown_reason.unwrap();
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
fn completion_only_histories_have_no_real_time_and_process_order_only_as_elle_draws_it() {
    // T1 appends, then (on another process) T2 reads the empty list: with invokes a
    // G-single-item-realtime; without them no cycle: valid, as in Elle, saying which orders
    // the history lacks.
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
    assert_eq!(r.verdict, Verdict::Valid, "{r:?}");
    assert!(names(&r).is_empty(), "{:?}", names(&r));
    assert!(
        r.summary().contains("neither real-time nor process order"),
        "{}",
        r.summary()
    );
    let ser = TxnConfig {
        ask: judge::Ask::model(Model::Serializable),
        ..TxnConfig::default()
    };
    assert_eq!(check(&bare(&txns), &ser).unwrap().verdict, Verdict::Valid);
    // On one process the order is known, and a session model (process anomalies prohibited,
    // no real-time one) draws it as Elle does: a G-single-item-process (a third read shows the
    // version order). Strict serializability has Elle draw only the real-time graph, empty here.
    let same = [
        (0, json!([["append", "x", 1]])),
        (0, json!([["r", "x", []]])),
        (1, json!([["r", "x", [1]]])),
    ];
    let r = check(&bare(&same), &TxnConfig::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
    let session = TxnConfig {
        ask: judge::Ask::model(Model::StrongSessionSerializable),
        ..TxnConfig::default()
    };
    let r = check(&bare(&same), &session).unwrap();
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
    // Transactions are numbered by their place in the input, in the ops as in the words.
    let a = &r.anomalies[0];
    let mut ops = a.ops.clone();
    ops.sort();
    assert_eq!(ops, vec![0, 1], "{a:?}");
    for s in a.cycle.as_ref().unwrap() {
        assert!(s.because.contains(&format!("T{}", s.from)), "{s:?}");
    }
}

/// Whether the committed transactions have a snapshot-isolation execution: a commit order and,
/// for each transaction, a snapshot (a prefix of that order before its commit) such that every
/// read sees the snapshot's appends and its own earlier ones, and no two transactions that append
/// to one key are concurrent (first committer wins). Per transaction the snapshot choice is
/// independent of the others', so each commit order costs n² checks.
fn brute_force_snapshot_isolation(h: &History) -> bool {
    let t = parse::read_txns(h).unwrap();
    let txns: Vec<&parse::Txn> = t
        .txns
        .iter()
        .filter(|x| x.status == parse::Status::Ok)
        .collect();
    let n = txns.len();
    let nkeys = t.keys.values.len();
    let writes = |tx: &parse::Txn, k: u32| {
        tx.mops
            .iter()
            .any(|m| matches!(m, parse::Mop::Append { key, .. } if *key == k))
    };
    let fits = |order: &[usize], p: usize, s: usize| -> bool {
        let tx = txns[order[p]];
        // First committer wins: every earlier committer appending to a key it appends to is in
        // its snapshot.
        for &o in &order[s..p] {
            if (0..nkeys as u32).any(|k| writes(tx, k) && writes(txns[o], k)) {
                return false;
            }
        }
        let mut state: Vec<Vec<u32>> = vec![Vec::new(); nkeys];
        for &o in &order[..s] {
            for m in &txns[o].mops {
                if let parse::Mop::Append { key, elem } = m {
                    state[*key as usize].push(*elem);
                }
            }
        }
        for m in &tx.mops {
            match m {
                parse::Mop::Append { key, elem } => state[*key as usize].push(*elem),
                parse::Mop::Read { key, list: Some(l) } if *l != state[*key as usize] => {
                    return false;
                }
                _ => {}
            }
        }
        true
    };
    fn perms(k: usize, order: &mut Vec<usize>, f: &mut dyn FnMut(&[usize]) -> bool) -> bool {
        if k == order.len() {
            return f(order);
        }
        for i in k..order.len() {
            order.swap(k, i);
            if perms(k + 1, order, f) {
                return true;
            }
            order.swap(k, i);
        }
        false
    }
    let mut order: Vec<usize> = (0..n).collect();
    perms(0, &mut order, &mut |order: &[usize]| {
        (0..n).all(|p| (0..=p).any(|s| fits(order, p, s)))
    })
}

#[test]
fn agrees_with_an_exhaustive_search_for_snapshot_isolation() {
    // [SI valid, SI invalid, SI valid but not serializable (write skew and its kin)]
    let mut seen = [0usize; 3];
    for seed in 0..800u64 {
        let cfg = TxnGenConfig {
            txns: 5,
            keys: 3,
            processes: 3,
            max_mops: 3,
            stale_probability: 0.3,
            final_read: true,
            seed,
            ..TxnGenConfig::default()
        };
        let h = generate_txn_history(&cfg);
        let expect = brute_force_snapshot_isolation(&h);
        let r = check(
            &h,
            &TxnConfig {
                ask: super::judge::Ask::model(Model::SnapshotIsolation),
                time_limit: Duration::from_secs(10),
                ..TxnConfig::default()
            },
        )
        .unwrap();
        assert_ne!(r.verdict, Verdict::Unknown, "seed {seed}: {}", r.explain());
        let valid = r.verdict == Verdict::Valid;
        assert_eq!(
            valid,
            expect,
            "seed {seed}: checker says {}, exhaustive search {}\n{}\n{}",
            r.verdict,
            expect,
            r.explain(),
            h.ops
                .iter()
                .map(|o| serde_json::to_string(o).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        );
        seen[!valid as usize] += 1;
        if valid && !brute_force_serializable(&h, false) {
            seen[2] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n > 10), "{seen:?}");
}

#[test]
fn g_nonadjacent_rules_out_snapshot_isolation_and_write_skew_does_not() {
    // T1 misses T2's x but sees T4's w; T3 sees T2's y but misses T4's z: rw, wr, rw, wr — a
    // cycle with two rw edges, none adjacent. A final read fixes the version orders.
    let g_nonadjacent = [
        (0, 0, 10, OK, json!([["r", "x", []], ["r", "w", [1]]])),
        (
            1,
            0,
            10,
            OK,
            json!([["append", "x", 1], ["append", "y", 1]]),
        ),
        (2, 0, 10, OK, json!([["r", "y", [1]], ["r", "z", []]])),
        (
            3,
            0,
            10,
            OK,
            json!([["append", "z", 1], ["append", "w", 1]]),
        ),
        (
            4,
            20,
            30,
            OK,
            json!([
                ["r", "x", [1]],
                ["r", "y", [1]],
                ["r", "z", [1]],
                ["r", "w", [1]]
            ]),
        ),
    ];
    let si = TxnConfig {
        ask: super::judge::Ask::model(Model::SnapshotIsolation),
        ..TxnConfig::default()
    };
    let r = check(&history(&g_nonadjacent), &si).unwrap();
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explain());
    assert_eq!(names(&r), vec!["G-nonadjacent-item".to_string()]);
    // G-nonadjacent is a G2-item too (a cycle with anti-dependencies): not repeatable read
    // either, and so not serializable.
    assert_eq!(
        r.not,
        vec![Model::RepeatableRead, Model::SnapshotIsolation],
        "{:?}",
        r.not
    );
    assert!(
        r.also_not.contains(&Model::Serializable),
        "{:?}",
        r.also_not
    );
    let a = &r.anomalies[0];
    let cycle = a.cycle.as_ref().unwrap();
    let edges: Vec<&str> = cycle.iter().map(|s| s.edge).collect();
    assert_eq!(edges.len(), 4, "{edges:?}");
    assert_eq!(edges.iter().filter(|e| **e == "rw").count(), 2, "{edges:?}");
    assert!(
        a.explanation
            .iter()
            .any(|l| l.contains("G-nonadjacent-item"))
    );
    // Write skew: each reads the other's key empty and appends to its own. Valid as snapshot
    // isolation, not as serializable.
    let skew = [
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
        (2, 20, 30, OK, json!([["r", "x", [1]], ["r", "y", [1]]])),
    ];
    let r = check(&history(&skew), &si).unwrap();
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
    assert_eq!(r.allowed_anomaly_types, vec![Anomaly::G2Item]);
    let ser = TxnConfig {
        ask: super::judge::Ask::model(Model::Serializable),
        ..TxnConfig::default()
    };
    assert_eq!(
        check(&history(&skew), &ser).unwrap().verdict,
        Verdict::Invalid
    );
}

#[test]
fn non_adjacent_walks_are_cut_to_a_cycle_with_no_two_rw_adjacent() {
    use super::anomaly::{CycleShape, Variant, edge};
    use super::cycles::{Hop, classify};
    let hop = |from, to, bit| Hop { from, to, bit };
    let nonadjacent = Kind::Cycle(CycleShape::GNonadjacent, Variant::Plain);
    let g2 = Kind::Cycle(CycleShape::G2Item, Variant::Plain);
    // rw wr rw wr: non-adjacent; rw rw wr: adjacent; the last hop is next to the first.
    let c = [
        hop(0, 1, edge::RW),
        hop(1, 2, edge::WR),
        hop(2, 3, edge::RW),
        hop(3, 0, edge::WR),
    ];
    assert_eq!(classify(&c), nonadjacent);
    let c = [
        hop(0, 1, edge::RW),
        hop(1, 2, edge::RW),
        hop(2, 0, edge::WR),
    ];
    assert_eq!(classify(&c), g2);
    let c = [
        hop(0, 1, edge::RW),
        hop(1, 2, edge::WR),
        hop(2, 0, edge::RW),
    ];
    assert_eq!(classify(&c), g2);
    // A walk with no two rw adjacent through 0 twice: 0 →rw 1 →ww 2 →rw 0 →ww 3 →ww 0. Its
    // loops are a G2-item (the rw into 0 meets the rw out of it) and a G0; the G0 is kept, as
    // the loop whose rw edges stay non-adjacent.
    let walk = vec![
        hop(0, 1, edge::RW),
        hop(1, 2, edge::WW),
        hop(2, 0, edge::RW),
        hop(0, 3, edge::WW),
        hop(3, 0, edge::WW),
    ];
    assert_eq!(classify(&walk), nonadjacent);
    let kept = super::cycles::reduce(walk, nonadjacent);
    assert_eq!(kept, vec![hop(0, 3, edge::WW), hop(3, 0, edge::WW)]);
    assert_eq!(classify(&kept), Kind::Cycle(CycleShape::G0, Variant::Plain));
}

#[test]
fn a_cycle_through_a_million_transactions_does_not_overflow_the_stack() {
    use super::anomaly::edge;
    // The component search is iterative: a recursive one overflowed the stack on graphs this
    // deep (the check then aborted without a word).
    let n = 1_000_000u32;
    let mut g = super::infer::Graph::new(n as usize);
    for i in 0..n {
        g.adj[i as usize].push(((i + 1) % n, edge::WW));
    }
    let c = super::cycles::search(&g, Duration::from_secs(60));
    assert_eq!(c.components, 1);
    // One shape's searches are capped well below a million states: the component is reported
    // unsearched, never dropped.
    assert_eq!(c.unsearched.len(), 1, "{:?}", c.unsearched);
}

#[test]
fn each_model_boundary_has_a_history_valid_below_and_invalid_above() {
    // Along the chain vendors claim: read-uncommitted < read-committed < snapshot-isolation /
    // repeatable-read < serializable < strong-session-serializable < strict-serializable, one
    // history per step that the weaker model allows and the stronger one forbids. Concurrent
    // transactions share the interval 0..10; a final read at 20..30 fixes version orders.
    use Model::*;
    let fin = |keys: &[&str]| -> T {
        let reads: Vec<Value> = keys.iter().map(|k| json!(["r", k, [1, 2]])).collect();
        (9, 20, 30, OK, Value::Array(reads))
    };
    let fin1 = |keys: &[&str]| -> T {
        let reads: Vec<Value> = keys.iter().map(|k| json!(["r", k, [1]])).collect();
        (9, 20, 30, OK, Value::Array(reads))
    };
    // (what the history shows, its transactions, models it satisfies, models it violates)
    type Case = (&'static str, Vec<T>, Vec<Model>, Vec<Model>);
    let cases: Vec<Case> = vec![
        (
            "G1c (circular information flow)",
            vec![
                (0, 0, 10, OK, json!([["append", "x", 1], ["r", "y", [1]]])),
                (1, 0, 10, OK, json!([["append", "y", 1], ["r", "x", [1]]])),
                fin1(&["x", "y"]),
            ],
            vec![ReadUncommitted],
            vec![ReadCommitted],
        ),
        (
            "G-single-item (read skew)",
            vec![
                (0, 0, 10, OK, json!([["r", "x", []], ["r", "y", [1]]])),
                (
                    1,
                    0,
                    10,
                    OK,
                    json!([["append", "x", 1], ["append", "y", 1]]),
                ),
                fin1(&["x", "y"]),
            ],
            vec![ReadUncommitted, ReadCommitted],
            vec![SnapshotIsolation, RepeatableRead],
        ),
        (
            "G-nonadjacent-item",
            vec![
                (0, 0, 10, OK, json!([["r", "x", []], ["r", "w", [1]]])),
                (
                    1,
                    0,
                    10,
                    OK,
                    json!([["append", "x", 1], ["append", "y", 1]]),
                ),
                (2, 0, 10, OK, json!([["r", "y", [1]], ["r", "z", []]])),
                (
                    3,
                    0,
                    10,
                    OK,
                    json!([["append", "z", 1], ["append", "w", 1]]),
                ),
                fin1(&["x", "y", "z", "w"]),
            ],
            vec![ReadCommitted],
            vec![SnapshotIsolation, RepeatableRead],
        ),
        (
            "G2-item (write skew)",
            vec![
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
                fin1(&["x", "y"]),
            ],
            vec![ReadCommitted, SnapshotIsolation],
            vec![RepeatableRead, Serializable],
        ),
        (
            "G-single-item-process (a process misses its own append)",
            vec![
                (0, 0, 1, OK, json!([["append", "x", 1]])),
                (0, 2, 3, OK, json!([["r", "x", []]])),
                fin1(&["x"]),
            ],
            vec![Serializable],
            vec![StrongSessionSerializable, StrictSerializable],
        ),
        (
            "G-single-item-realtime (a stale read after a completed append)",
            vec![
                (0, 0, 1, OK, json!([["append", "x", 1]])),
                (1, 2, 3, OK, json!([["r", "x", []]])),
                (2, 4, 5, OK, json!([["append", "x", 2]])),
                fin(&["x"]),
            ],
            vec![Serializable, StrongSessionSerializable],
            vec![StrictSerializable],
        ),
    ];
    for (name, txns, valid, invalid) in cases {
        for (models, expect) in [(valid, Verdict::Valid), (invalid, Verdict::Invalid)] {
            for m in models {
                let cfg = TxnConfig {
                    ask: super::judge::Ask::model(m),
                    ..TxnConfig::default()
                };
                let r = check(&history(&txns), &cfg).unwrap();
                assert_eq!(r.verdict, expect, "{name} under {m:?}:\n{}", r.explain());
            }
        }
    }
}

/// Issue 43's measured misses: histories whose only cycle is a G-single-item, a
/// G-nonadjacent-item or a G2-item must be invalid against repeatable read (Adya's PL-2.99
/// proscribes G2-item, and Elle counts the other two as G2-item cycles), alone and asked
/// together with snapshot isolation; read committed allows all three. Each with invokes and as
/// completions only (Elle's own test histories), which need no real-time order for these models.
#[test]
fn item_cycles_are_invalid_against_repeatable_read() {
    let g_single_item = vec![
        (0, json!([["r", "x", []], ["r", "y", [1]]])),
        (1, json!([["append", "x", 1], ["append", "y", 1]])),
        (9, json!([["r", "x", [1]], ["r", "y", [1]]])),
    ];
    let g_nonadjacent_item = vec![
        (0, json!([["r", "x", []], ["r", "w", [1]]])),
        (1, json!([["append", "x", 1], ["append", "y", 1]])),
        (2, json!([["r", "y", [1]], ["r", "z", []]])),
        (3, json!([["append", "z", 1], ["append", "w", 1]])),
        (
            9,
            json!([
                ["r", "x", [1]],
                ["r", "y", [1]],
                ["r", "z", [1]],
                ["r", "w", [1]]
            ]),
        ),
    ];
    let g2_item = vec![
        (
            0,
            json!([["r", "x", []], ["r", "y", []], ["append", "x", 1]]),
        ),
        (
            1,
            json!([["r", "x", []], ["r", "y", []], ["append", "y", 1]]),
        ),
        (9, json!([["r", "x", [1]], ["r", "y", [1]]])),
    ];
    let ask = |models: &str| TxnConfig {
        ask: judge::Ask::parse(models, None).unwrap(),
        ..TxnConfig::default()
    };
    // Concurrent transactions share 0..10, the final read is at 20..30.
    let timed = |txns: &[(u64, Value)]| -> History {
        let t: Vec<T> = txns
            .iter()
            .map(|(p, v)| match p {
                9 => (*p, 20, 30, OK, v.clone()),
                _ => (*p, 0, 10, OK, v.clone()),
            })
            .collect();
        history(&t)
    };
    let cases = [
        ("G-single-item", g_single_item),
        ("G-nonadjacent-item", g_nonadjacent_item),
        ("G2-item", g2_item),
    ];
    for (name, txns) in &cases {
        for (form, h) in [
            ("with invokes", timed(txns)),
            ("completions only", bare(txns)),
        ] {
            for (models, expect) in [
                ("repeatable-read", Verdict::Invalid),
                ("PL-2.99", Verdict::Invalid),
                ("snapshot-isolation,repeatable-read", Verdict::Invalid),
                ("repeatable-read,snapshot-isolation", Verdict::Invalid),
                ("serializable", Verdict::Invalid),
                ("read-committed", Verdict::Valid),
            ] {
                let r = check(&h, &ask(models)).unwrap();
                assert_eq!(names(&r), vec![name.to_string()], "{name} {form}");
                assert_eq!(
                    r.verdict,
                    expect,
                    "{name} {form} against {models}:\n{}",
                    r.explain()
                );
                if expect == Verdict::Invalid {
                    assert!(
                        r.not.contains(&Model::RepeatableRead),
                        "{name} {form}: not {:?}",
                        r.not
                    );
                }
            }
        }
    }
    // Snapshot isolation alone: write skew is allowed, the other two are not.
    for (name, txns) in &cases {
        let r = check(&bare(txns), &ask("snapshot-isolation")).unwrap();
        let expect = match *name {
            "G2-item" => Verdict::Valid,
            _ => Verdict::Invalid,
        };
        assert_eq!(r.verdict, expect, "{name} against snapshot-isolation");
    }
}

/// Elle's `empty-transaction-graph`: two concurrent transactions that only write (a G0 could
/// hide there, nothing shows it) leave no dependency at all, so the verdict is unknown, not
/// valid. A read after both, showing the orders, gives the graph its edges (and here the G0).
#[test]
fn a_history_with_no_dependency_at_all_is_unknown_as_elle_says() {
    let writes = [
        (0, 0, 5, OK, json!([["append", "x", 1], ["append", "y", 2]])),
        (1, 1, 6, OK, json!([["append", "x", 2], ["append", "y", 1]])),
    ];
    let r = run(&writes);
    assert_eq!(r.edges, 0, "{}", r.explain());
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.explain());
    assert_eq!(r.unknown_reason.as_deref(), Some(EMPTY_GRAPH));
    let mut seen = writes.to_vec();
    seen.push((2, 7, 8, OK, json!([["r", "x", [1, 2]], ["r", "y", [1, 2]]])));
    let r = run(&seen);
    assert!(r.edges > 0, "{}", r.explain());
    assert_eq!(names(&r), vec!["G0".to_string()], "{}", r.explain());
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explain());
}
