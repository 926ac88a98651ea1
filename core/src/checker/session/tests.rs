//! The session checker's tests: constructed histories per guarantee and source, and generated
//! histories with injected stale reads.

use super::acks::KeyAcks;
use super::histgen::{
    ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
    generate_versioned_history,
};
use super::*;
use crate::history::{Op, OpType, Process};
use serde_json::json;

/// Builds histories event by event; times in ms.
struct B(Vec<Op>);

impl B {
    fn new() -> B {
        B(Vec::new())
    }
    #[allow(clippy::too_many_arguments)]
    fn ev(
        &mut self,
        ty: OpType,
        p: u64,
        f: &str,
        key: &str,
        value: Value,
        version: Option<i64>,
        t_ms: u64,
    ) -> &mut B {
        let mut op = Op::new(ty, Process::Client(p), f, value);
        op.key = Some(key.into());
        op.version = version;
        op.time_ns = t_ms * 1_000_000;
        if ty == OpType::Fail {
            op.error = Some("cas-mismatch".to_string());
        }
        self.0.push(op);
        self
    }
    /// A complete write: invoke at t, ok at t+1.
    fn write(&mut self, p: u64, key: &str, v: i64, ver: i64, t_ms: u64) -> &mut B {
        self.ev(OpType::Invoke, p, "write", key, json!(v), None, t_ms)
            .ev(OpType::Ok, p, "write", key, json!(v), Some(ver), t_ms + 1)
    }
    /// A complete read: invoke at t, ok at t+1; `None` value = absent.
    fn read(&mut self, p: u64, key: &str, v: Option<i64>, ver: i64, t_ms: u64) -> &mut B {
        let (val, version) = match v {
            Some(x) => (json!(x), Some(ver)),
            None => (Value::Null, None),
        };
        self.ev(OpType::Invoke, p, "read", key, Value::Null, None, t_ms)
            .ev(OpType::Ok, p, "read", key, val, version, t_ms + 1)
    }
    fn h(&self) -> History {
        History::from_ops(self.0.clone())
    }
}

fn check(h: &History) -> SessionResult {
    check_sessions(h, &SessionConfig::default())
}

fn with_source(h: &History, source: VersionSource) -> SessionResult {
    check_sessions(
        h,
        &SessionConfig {
            source: Some(source),
            ..SessionConfig::default()
        },
    )
}

fn only(r: &SessionResult, g: Guarantee, n: u64) {
    for x in &r.guarantees {
        let want = if x.guarantee == g { n } else { 0 };
        assert_eq!(x.violations, want, "{:?}: {}", x.guarantee, r.table());
    }
}

#[test]
fn read_your_writes_violation_and_clean() {
    let mut b = B::new();
    b.write(7, "k3", 12, 40, 4210 - 1)
        .read(7, "k3", Some(9), 35, 4211);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Invalid);
    only(&r, Guarantee::ReadYourWrites, 1);
    let w = &r.guarantee(Guarantee::ReadYourWrites).witnesses[0];
    assert_eq!(
        w.witness,
        "process 7 wrote k3 = 12 (version 40, ok at 4.210 s) then read k3 and got 9 (version 35) at 4.212 s"
    );
    assert_eq!((w.earlier_version, w.later_version), (40, 35));
    assert_eq!((w.earlier_index, w.later_index), (1, 3));
    assert_eq!(
        r.guarantee(Guarantee::ReadYourWrites).top_keys,
        vec![KeyCount {
            key: Some("k3".into()),
            violations: 1
        }]
    );

    let mut b = B::new();
    b.write(7, "k3", 12, 40, 0)
        .read(7, "k3", Some(12), 40, 2)
        .read(7, "k3", Some(5), 41, 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::ReadYourWrites).checks, 2);
}

#[test]
fn read_your_writes_absent_read_after_own_write_is_violation() {
    let mut b = B::new();
    b.write(1, "a", 1, 5, 0).read(1, "a", None, 0, 2);
    let r = check(&b.h());
    only(&r, Guarantee::ReadYourWrites, 1);
    assert!(
        r.guarantee(Guarantee::ReadYourWrites).witnesses[0]
            .witness
            .contains("got nothing (version none)")
    );
}

#[test]
fn monotonic_reads_violation_and_clean() {
    let mut b = B::new();
    b.read(1, "x", Some(3), 10, 0)
        .read(1, "x", Some(2), 8, 2)
        .read(2, "x", Some(2), 8, 4); // another session: no bound
    let r = check(&b.h());
    only(&r, Guarantee::MonotonicReads, 1);
    let w = &r.guarantee(Guarantee::MonotonicReads).witnesses[0];
    assert_eq!(w.session, 1);
    assert_eq!(
        w.witness,
        "process 1 read x and got 3 (version 10) at 0.001 s then read x and got 2 (version 8) at 0.003 s"
    );

    let mut b = B::new();
    b.read(1, "x", None, 0, 0)
        .read(1, "x", Some(2), 8, 2)
        .read(1, "x", Some(2), 8, 4)
        .read(1, "y", None, 0, 6); // other key: independent
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::MonotonicReads).checks, 2);
}

#[test]
fn monotonic_writes_violation_and_clean() {
    let mut b = B::new();
    b.write(4, "k", 1, 20, 0).write(4, "k", 2, 19, 2);
    let r = check(&b.h());
    only(&r, Guarantee::MonotonicWrites, 1);
    assert!(
        r.guarantee(Guarantee::MonotonicWrites).witnesses[0]
            .witness
            .starts_with("process 4 wrote k = 1 (version 20, ok at 0.001 s) then wrote k = 2 and got version 19")
    );

    let mut b = B::new();
    b.write(4, "k", 1, 20, 0).write(4, "k", 2, 25, 2);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid);
    assert_eq!(r.guarantee(Guarantee::MonotonicWrites).checks, 1);
}

#[test]
fn writes_follow_reads_violation_and_clean() {
    let mut b = B::new();
    // Session 1 reads version 30 (written by 2), then its cas creates version 30 too… no:
    // creates 29, older than what it read.
    b.write(2, "k", 5, 30, 0).read(1, "k", Some(5), 30, 2).ev(
        OpType::Invoke,
        1,
        "cas",
        "k",
        json!([5, 6]),
        None,
        4,
    );
    b.ev(OpType::Ok, 1, "cas", "k", json!([5, 6]), Some(29), 5);
    let r = check(&b.h());
    only(&r, Guarantee::WritesFollowReads, 1);
    let w = &r.guarantee(Guarantee::WritesFollowReads).witnesses[0];
    assert!(
        w.witness
            .contains("then cas k from 5 to 6 and got version 29")
    );

    let mut b = B::new();
    b.write(2, "k", 5, 30, 0)
        .read(1, "k", Some(5), 30, 2)
        .write(1, "k", 6, 31, 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid);
    assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
}

#[test]
fn info_writes_need_not_be_seen_and_fails_are_ignored() {
    let mut b = B::new();
    // Process 0's write crashes (info); it continues as process 5 and reads an older version.
    b.write(0, "k", 1, 10, 0)
        .ev(OpType::Invoke, 0, "write", "k", json!(2), None, 2)
        .ev(OpType::Info, 0, "write", "k", json!(2), None, 3)
        .read(5, "k", Some(1), 10, 4)
        // A failed cas by 5 reports a (bogus) version: ignored.
        .ev(OpType::Invoke, 5, "cas", "k", json!([7, 8]), None, 6)
        .ev(OpType::Fail, 5, "cas", "k", json!([7, 8]), Some(1), 7)
        .read(5, "k", Some(1), 10, 8);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!((r.info_ignored, r.fail_ignored), (1, 1));
    assert_eq!(r.sessions, 2);

    // In thread mode, process 5 is thread 0 again: its own ok write (version 10) still binds,
    // while reads that go back in version break monotonic reads across the info.
    let mut b = B::new();
    b.write(0, "k", 1, 10, 0)
        .ev(OpType::Invoke, 0, "read", "k", Value::Null, None, 2)
        .ev(OpType::Info, 0, "read", "k", Value::Null, None, 3)
        .read(5, "k", Some(0), 9, 4);
    let h = b.h();
    assert_eq!(
        check(&h).verdict,
        Verdict::Unknown,
        "process mode: nothing comparable"
    );
    let r = check_sessions(
        &h,
        &SessionConfig {
            mode: SessionMode::Thread { concurrency: 5 },
            ..SessionConfig::default()
        },
    );
    only(&r, Guarantee::ReadYourWrites, 1);
    assert!(
        r.guarantee(Guarantee::ReadYourWrites).witnesses[0]
            .witness
            .starts_with("thread 0 (process 5) wrote k = 1")
    );
}

#[test]
fn unversioned_history_is_unknown_never_valid() {
    let mut b = B::new();
    b.ev(OpType::Invoke, 1, "write", "k", json!(1), None, 0)
        .ev(OpType::Ok, 1, "write", "k", json!(1), None, 1)
        .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
        .ev(OpType::Ok, 1, "read", "k", json!(1), None, 3)
        .read(1, "k", None, 0, 4)
        .read(1, "k", None, 0, 6);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!((r.unversioned_reads, r.unversioned_writes), (1, 1));
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("no ok op carries a version")
    );
    assert_eq!(check(&History::default()).verdict, Verdict::Unknown);
}

#[test]
fn malformed_input_does_not_panic() {
    let mut b = B::new();
    b.ev(OpType::Ok, 3, "read", "k", json!(1), Some(4), 0) // completion without invoke
        .ev(OpType::Invoke, 3, "cas", "k", json!("junk"), None, 1)
        .ev(OpType::Ok, 3, "cas", "k", json!({"a": 1}), Some(-2), 2)
        .ev(OpType::Invoke, 3, "write", "k", json!(1), None, 3)
        .ev(OpType::Invoke, 3, "write", "k", json!(1), None, 3) // double invoke
        .ev(OpType::Ok, 3, "write", "k", json!(1), Some(i64::MAX), 4)
        .ev(OpType::Invoke, 3, "read", "k", Value::Null, None, 5)
        .ev(OpType::Ok, 3, "read", "k", json!([1, 2]), Some(i64::MIN), 6)
        .ev(OpType::Ok, 9, "frobnicate", "k", json!(1), Some(3), 7);
    let mut h = b.h();
    let mut n = Op::new(
        OpType::Info,
        Process::Nemesis,
        "start-partition",
        Value::Null,
    );
    n.version = Some(5);
    h.ops.push(n);
    let r = with_source(&h, VersionSource::System);
    assert_eq!(r.malformed, 2);
    assert_eq!(r.unpaired, 2);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table()); // read 4 → write MAX: RYW n/a, WFR ok
    assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
    // Auto: the list-valued read selects list-append; the integer read and the junk cas are
    // malformed there, the write cannot be placed, and nothing is comparable.
    let r = check(&h);
    assert_eq!(r.version_source, VersionSource::ListAppend);
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.table());
    assert_eq!((r.malformed, r.unversioned_writes), (1, 2));
    // Increasing values: read 1 then write 1 is a (correct) writes-follow-reads violation.
    let r = with_source(&h, VersionSource::IncreasingValues);
    only(&r, Guarantee::WritesFollowReads, 1);
    assert_eq!(r.malformed, 2); // the junk cas and the list read
    let c = SessionChecker::default().check(&h);
    assert_eq!(c.checker, "session");
    assert!(c.details["guarantees"].is_array());
    assert_eq!(c.details["version_source"], "list-append");
}

#[test]
fn stale_read_numbers_exact() {
    let mut b = B::new();
    // Acked versions of k: 10 (ack 1 ms), 20 (ack 11 ms), 30 (ack 21 ms); 40 acked after the
    // read below was invoked, so it does not count.
    b.write(1, "k", 1, 10, 0)
        .write(1, "k", 2, 20, 10)
        .write(2, "k", 3, 30, 20)
        // Process 3 reads version 10 at invoke 25 ms: 20 and 30 are newer → 2 behind,
        // 25 - 11 = 14 ms behind.
        .ev(OpType::Invoke, 3, "read", "k", Value::Null, None, 25)
        .write(2, "k", 4, 40, 26)
        .ev(OpType::Ok, 3, "read", "k", json!(1), Some(10), 30)
        // Process 4 reads absent at 40: 10,20,30,40 newer → 4 behind, 40 - 1 = 39 ms.
        .read(4, "k", None, 0, 40)
        // Process 5 reads version 40 at 50: up to date.
        .read(5, "k", Some(4), 40, 50)
        // An unacked (info) write's version never counts as acknowledged.
        .ev(OpType::Invoke, 6, "write", "k", json!(9), None, 60)
        .ev(OpType::Info, 6, "write", "k", json!(9), Some(50), 61)
        .read(5, "k", Some(4), 40, 70);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    let s = &r.stale;
    assert_eq!((s.reads_measured, s.stale_reads), (4, 2));
    assert_eq!(
        s.versions_behind,
        Percentiles {
            p50: 0,
            p90: 4,
            p99: 4,
            max: 4
        }
    );
    assert_eq!(s.stale_versions_behind.p50, 2);
    assert!((s.stale_ms_behind.p50 - 14.0).abs() < 1e-9, "{:?}", s);
    assert!((s.ms_behind.max - 39.0).abs() < 1e-9, "{:?}", s);
}

#[test]
fn version_conflicts_are_invalid() {
    let mut b = B::new();
    b.write(1, "k", 1, 10, 0)
        .write(2, "k", 2, 10, 2) // same version, different value
        .read(3, "k", Some(7), 10, 4) // read contradicts too
        .read(3, "k", Some(1), 10, 6) // agrees with the first write
        .write(4, "j", 1, 10, 8); // other key: no conflict
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.total_violations(), 0);
    assert_eq!(r.version_conflicts, 2);
    let c = &r.conflicts[0];
    assert_eq!(c.kind, "version-conflict");
    assert_eq!((c.first_index, c.later_index, c.version), (1, 3, 10));
    assert_eq!((&c.first_value, &c.later_value), (&json!(1), &json!(2)));
    assert!(
        c.witness.contains("both report version 10 of k"),
        "{}",
        c.witness
    );
    assert!(
        r.summary().starts_with("2 version conflicts"),
        "{}",
        r.summary()
    );
    assert!(r.table().contains("version conflicts: 2"));

    // A cas's version is associated with its new value.
    let mut b = B::new();
    b.ev(OpType::Invoke, 1, "cas", "k", json!([1, 2]), None, 0)
        .ev(OpType::Ok, 1, "cas", "k", json!([1, 2]), Some(5), 1)
        .read(2, "k", Some(2), 5, 2);
    assert_eq!(check(&b.h()).version_conflicts, 0);
}

#[test]
fn time_histograms_pick_a_round_bucket_and_list_non_empty_ones() {
    let ms = 1_000_000u64;
    let h = TimeHistogram::of(&[0, 9 * ms, 10 * ms, 35 * ms, 35 * ms], 5_000 * ms);
    assert_eq!(h.bucket_ms, 10);
    assert_eq!(h.buckets, vec![[0, 2], [10, 1], [30, 2]]);
    assert_eq!(h.total(), 5);
    for (span_s, want) in [
        (10u64, 10u64),
        (11, 20),
        (60, 100),
        (1_000, 1_000),
        (3_600, 5_000),
    ] {
        let h = TimeHistogram::of(&[span_s * 1_000 * ms], span_s * 1_000 * ms);
        assert_eq!(h.bucket_ms, want, "{span_s} s");
        assert_eq!(h.total(), 1);
    }
    assert!(TimeHistogram::of(&[], 0).buckets.is_empty());
}

#[test]
fn witnesses_and_key_lists_are_bounded_but_totals_exact() {
    let mut b = B::new();
    for i in 0..50u64 {
        let key = format!("k{}", i % 5);
        b.read(1, &key, Some(1), 100 - i as i64, i * 10);
    }
    let r = check_sessions(
        &b.h(),
        &SessionConfig {
            max_witnesses_per_guarantee: 3,
            top_keys: 2,
            ..SessionConfig::default()
        },
    );
    let g = r.guarantee(Guarantee::MonotonicReads);
    assert_eq!(g.violations, 45);
    assert_eq!(g.witnesses.len(), 3);
    // The timeline counts every violation, not only the witnesses kept.
    assert_eq!(g.timeline.total(), 45);
    assert_eq!(g.top_keys.len(), 2);
    assert_eq!(g.top_keys[0].violations, 9);
    assert_eq!(g.top_keys[0].key.as_deref(), Some("k0"));
}

#[test]
fn deterministic_results() {
    let cfg = VersionedGenConfig {
        ops: 3000,
        stale_read_probability: 0.1,
        seed: 11,
        ..VersionedGenConfig::default()
    };
    let h = generate_versioned_history(&cfg);
    assert_eq!(h.ops, generate_versioned_history(&cfg).ops);
    let a = serde_json::to_string(&check(&h)).unwrap();
    let b = serde_json::to_string(&check(&h)).unwrap();
    assert_eq!(a, b);
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.table());
    assert!(r.stale.stale_reads > 0);
    assert!(r.guarantee(Guarantee::MonotonicReads).violations > 0);
}

#[test]
fn linearizable_histories_have_no_violations_and_no_stale_reads() {
    for seed in 0..30 {
        let cfg = VersionedGenConfig {
            keys: 1 + (seed as usize % 4),
            threads: 2 + (seed as usize % 7),
            ops: 1500,
            info_probability: [0.0, 0.05, 0.3][seed as usize % 3],
            seed,
            ..VersionedGenConfig::default()
        };
        let h = generate_versioned_history(&cfg);
        let r = check(&h);
        assert_eq!(r.verdict, Verdict::Valid, "seed {seed}: {}", r.table());
        assert_eq!(r.stale.stale_reads, 0, "seed {seed}");
        assert_eq!(r.version_conflicts, 0);
        assert!(r.stale.reads_measured > 300, "seed {seed}");
        for g in &r.guarantees {
            assert!(g.checks > 0, "seed {seed}: {:?} never checked", g.guarantee);
        }
        // Thread sessions see the same linearizable history: still valid.
        let t = check_sessions(
            &h,
            &SessionConfig {
                mode: SessionMode::Thread {
                    concurrency: cfg.threads as u64,
                },
                ..SessionConfig::default()
            },
        );
        assert_eq!(t.verdict, Verdict::Valid, "seed {seed}: {}", t.table());
    }
}

#[test]
fn fenwick_matches_brute_force() {
    let versions = vec![3, 9, 4, 12, 7, 9];
    let mut acks = KeyAcks::new(versions.clone());
    let mut inserted: Vec<(i64, u64)> = Vec::new();
    for (t, v) in [(5u64, 9i64), (6, 3), (7, 12), (8, 9), (9, 4)] {
        acks.insert(v, t);
        if !inserted.iter().any(|x| x.0 == v) {
            inserted.push((v, t));
        }
        for q in 0..14 {
            let newer: Vec<&(i64, u64)> = inserted.iter().filter(|x| x.0 > q).collect();
            let want = (newer.len() as u64, newer.iter().map(|x| x.1).min());
            assert_eq!(acks.newer_than(q), want, "q {q}");
        }
    }
    acks.insert(100, 1); // never acknowledged in pass 1: ignored
    assert_eq!(acks.newer_than(50), (0, None));
}

impl B {
    /// A complete ok append: invoke at t, ok at t+1.
    fn append(&mut self, p: u64, key: &str, e: i64, t_ms: u64) -> &mut B {
        self.ev(OpType::Invoke, p, "append", key, json!(e), None, t_ms)
            .ev(OpType::Ok, p, "append", key, json!(e), None, t_ms + 1)
    }
    /// A complete ok list read: invoke at t, ok at t+1.
    fn lread(&mut self, p: u64, key: &str, list: &[i64], t_ms: u64) -> &mut B {
        self.ev(OpType::Invoke, p, "read", key, Value::Null, None, t_ms)
            .ev(OpType::Ok, p, "read", key, json!(list), None, t_ms + 1)
    }
}

#[test]
fn list_append_is_chosen_automatically_and_recorded() {
    let mut b = B::new();
    b.append(1, "k", 1, 0).lread(1, "k", &[1], 2);
    let r = check(&b.h());
    assert_eq!(r.version_source, VersionSource::ListAppend);
    assert_eq!(r.version_source_reason, "the history has append ops");
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    let c = SessionChecker::default().check(&b.h());
    assert_eq!(c.details["version_source"], "list-append");
    // Reads of lists alone also select it; versions alone select system.
    let mut b = B::new();
    b.lread(1, "k", &[], 0).lread(1, "k", &[4], 2);
    assert_eq!(check(&b.h()).version_source, VersionSource::ListAppend);
    let mut b = B::new();
    b.write(1, "k", 1, 3, 0);
    assert_eq!(check(&b.h()).version_source, VersionSource::System);
    assert_eq!(
        with_source(&b.h(), VersionSource::IncreasingValues).version_source_reason,
        "chosen by configuration"
    );
    assert_eq!(
        "increasing-values".parse::<VersionSource>(),
        Ok(VersionSource::IncreasingValues)
    );
    assert!("lists".parse::<VersionSource>().is_err());
}

#[test]
fn list_append_read_your_writes_violation_and_clean() {
    let mut b = B::new();
    // Process 1 appends 1 (position 1, as process 2's read shows), then reads the empty list.
    b.append(1, "k", 1, 0)
        .lread(2, "k", &[1], 2)
        .lread(1, "k", &[], 4);
    let r = check(&b.h());
    only(&r, Guarantee::ReadYourWrites, 1);
    let w = &r.guarantee(Guarantee::ReadYourWrites).witnesses[0];
    assert_eq!(
        w.witness,
        "process 1 appended 1 to k (position 1, ok at 0.001 s) then read k and got [] (0 elements) at 0.005 s"
    );
    assert_eq!((w.earlier_version, w.later_version), (1, 0));

    let mut b = B::new();
    b.append(1, "k", 1, 0)
        .lread(2, "k", &[1], 2)
        .lread(1, "k", &[1], 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::ReadYourWrites).checks, 1);
}

#[test]
fn list_append_unseen_append_is_after_every_read() {
    // Process 1's append of 9 is acknowledged but no read ever shows it: its own later read
    // misses it (read-your-writes), and its later append of 1, seen at position 1, is older
    // than it (monotonic writes). Process 2's two unseen appends are never compared.
    let mut b = B::new();
    b.append(1, "k", 9, 0)
        .lread(1, "k", &[], 2)
        .append(1, "k", 1, 4)
        .lread(3, "k", &[1], 6)
        .append(2, "k", 7, 8)
        .append(2, "k", 8, 10);
    let r = check(&b.h());
    assert_eq!(r.unseen_appends, 3);
    let ryw = r.guarantee(Guarantee::ReadYourWrites);
    assert_eq!(ryw.violations, 1);
    assert!(
        ryw.witnesses[0]
            .witness
            .contains("appended 9 to k (position unknown: never read, ok at 0.001 s)"),
        "{}",
        ryw.witnesses[0].witness
    );
    let mw = r.guarantee(Guarantee::MonotonicWrites);
    assert_eq!((mw.checks, mw.violations), (1, 1), "{}", r.table());
    assert!(
        mw.witnesses[0]
            .witness
            .contains("then appended 1 to k and got position 1")
    );
    // Unseen appends count as newer than every read for staleness: process 3's read of [1]
    // was invoked after 9's ack.
    assert_eq!(r.stale.stale_reads, 2, "{:?}", r.stale);
}

#[test]
fn list_append_monotonic_reads_violation_and_clean() {
    let mut b = B::new();
    b.lread(1, "k", &[1, 2], 0)
        .lread(1, "k", &[1], 2)
        .lread(2, "k", &[], 4); // another session: no bound
    let r = check(&b.h());
    only(&r, Guarantee::MonotonicReads, 1);
    assert_eq!(
        r.guarantee(Guarantee::MonotonicReads).witnesses[0].witness,
        "process 1 read k and got [1,2] (2 elements) at 0.001 s then read k and got [1] (1 elements) at 0.003 s"
    );
    let mut b = B::new();
    b.lread(1, "k", &[], 0)
        .lread(1, "k", &[1], 2)
        .lread(1, "k", &[1, 2], 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::MonotonicReads).checks, 2);
}

#[test]
fn list_append_monotonic_writes_violation_and_clean() {
    // Process 1 appended 2 before 1, but the lists put 1 first.
    let mut b = B::new();
    b.append(1, "k", 2, 0)
        .append(1, "k", 1, 2)
        .lread(2, "k", &[1, 2], 4);
    let r = check(&b.h());
    only(&r, Guarantee::MonotonicWrites, 1);
    let w = &r.guarantee(Guarantee::MonotonicWrites).witnesses[0];
    assert_eq!((w.earlier_version, w.later_version), (2, 1));
    let mut b = B::new();
    b.append(1, "k", 1, 0)
        .append(1, "k", 2, 2)
        .lread(2, "k", &[1, 2], 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::MonotonicWrites).checks, 1);
}

#[test]
fn list_append_writes_follow_reads_clean_and_violation_is_a_conflict() {
    // Clean: read [1], then append 2, which lands after it.
    let mut b = B::new();
    b.lread(1, "k", &[1], 0)
        .append(1, "k", 2, 2)
        .lread(2, "k", &[1, 2], 4);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
    // Process 1 read [1, 2] and then appended 3, which another read places at position 2:
    // with every read a prefix of one order this cannot happen, so it surfaces as two reads
    // that cannot both be prefixes — a version conflict naming both.
    let mut b = B::new();
    b.lread(1, "k", &[1, 2], 0)
        .append(1, "k", 3, 2)
        .lread(2, "k", &[1, 3], 4)
        .lread(3, "k", &[1, 2, 4], 6);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!((r.version_conflicts, r.conflicting_reads), (1, 1));
    let c = &r.conflicts[0];
    assert_eq!(c.kind, "version-conflict");
    assert_eq!((c.first_index, c.later_index, c.version), (5, 7, 2));
    assert_eq!(
        (&c.first_value, &c.later_value),
        (&json!([1, 3]), &json!([1, 2, 4]))
    );
    assert_eq!(
        c.witness,
        "read k and got [1,3] (process 2 5, ok at 0.005 s) and read k and got [1,2,4] (process 3 7, ok at 0.007 s) differ at position 2 of k: they cannot both be prefixes of one order"
    );
    // The append of 3 was never seen in a consistent list: unseen, hence after the read.
    assert_eq!(r.unseen_appends, 1);
    assert_eq!(r.total_violations(), 0, "{}", r.table());
}

#[test]
fn list_append_duplicate_element_is_a_conflict() {
    let mut b = B::new();
    b.append(1, "k", 1, 0).lread(1, "k", &[1, 1], 2);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.conflicts[0].kind, "duplicate-element");
    assert_eq!(r.conflicts[0].version, 2);
    assert!(r.conflicts[0].witness.contains("holds element 1 twice"));
}

#[test]
fn list_append_info_and_fail_ops() {
    // Process 0's append of 2 crashes (info) but shows up in a read: it is placed, yet it
    // never binds a session. Process 0 continues as 5 and reads [1] — no violation. A failed
    // append is ignored; an info read is no evidence.
    let mut b = B::new();
    b.append(0, "k", 1, 0)
        .ev(OpType::Invoke, 0, "append", "k", json!(2), None, 2)
        .ev(OpType::Info, 0, "append", "k", json!(2), None, 3)
        .lread(5, "k", &[1], 4)
        .ev(OpType::Invoke, 5, "append", "k", json!(3), None, 6)
        .ev(OpType::Fail, 5, "append", "k", json!(3), None, 7)
        .ev(OpType::Invoke, 5, "read", "k", Value::Null, None, 8)
        .ev(OpType::Info, 5, "read", "k", Value::Null, None, 9)
        .lread(5, "k", &[1, 2], 10);
    let r = check(&b.h());
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!((r.info_ignored, r.fail_ignored), (2, 1));
    assert_eq!((r.unseen_appends, r.ok_writes), (0, 1));
    // Thread mode: process 5 is thread 0, which appended 1 before the crash; reading [] after
    // it breaks read-your-writes.
    b.lread(5, "k", &[], 12);
    let r = check_sessions(
        &b.h(),
        &SessionConfig {
            mode: SessionMode::Thread { concurrency: 5 },
            ..SessionConfig::default()
        },
    );
    assert_eq!(r.guarantee(Guarantee::ReadYourWrites).violations, 1);
    assert_eq!(r.guarantee(Guarantee::MonotonicReads).violations, 1);
}

#[test]
fn list_append_ignores_system_versions_and_unplaceable_ops() {
    let mut b = B::new();
    b.write(1, "k", 5, 10, 0)
        .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
        .ev(OpType::Ok, 1, "read", "k", json!([1]), Some(3), 3)
        .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 4)
        .ev(OpType::Ok, 1, "read", "k", json!(["x"]), Some(3), 5);
    let r = check(&b.h());
    assert_eq!((r.unversioned_writes, r.malformed), (1, 1));
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.table());
}

#[test]
fn increasing_values_each_guarantee_violation_and_clean() {
    let inc = |b: &B| with_source(&b.h(), VersionSource::IncreasingValues);
    // Read-your-writes: wrote 5, read 3.
    let mut b = B::new();
    b.write(1, "k", 5, 0, 0).read(1, "k", Some(3), 0, 2);
    let r = inc(&b);
    only(&r, Guarantee::ReadYourWrites, 1);
    assert_eq!(
        r.guarantee(Guarantee::ReadYourWrites).witnesses[0].witness,
        "process 1 wrote k = 5 (version 5, ok at 0.001 s) then read k and got 3 (version 3) at 0.003 s"
    );
    let mut b = B::new();
    b.write(1, "k", 5, 0, 0).read(1, "k", Some(6), 0, 2);
    assert_eq!(inc(&b).verdict, Verdict::Valid);
    // Monotonic reads: 4 then absent.
    let mut b = B::new();
    b.read(1, "k", Some(4), 0, 0).read(1, "k", None, 0, 2);
    only(&inc(&b), Guarantee::MonotonicReads, 1);
    let mut b = B::new();
    b.read(1, "k", None, 0, 0).read(1, "k", Some(4), 0, 2);
    assert_eq!(inc(&b).verdict, Verdict::Valid);
    // Monotonic writes: 7 then a cas to 6.
    let mut b = B::new();
    b.write(1, "k", 7, 0, 0)
        .ev(OpType::Invoke, 1, "cas", "k", json!([7, 6]), None, 2)
        .ev(OpType::Ok, 1, "cas", "k", json!([7, 6]), None, 3);
    only(&inc(&b), Guarantee::MonotonicWrites, 1);
    let mut b = B::new();
    b.write(1, "k", 7, 0, 0).write(1, "k", 8, 0, 2);
    assert_eq!(inc(&b).verdict, Verdict::Valid);
    // Writes-follow-reads: read 9, then write 9 (not newer).
    let mut b = B::new();
    b.read(1, "k", Some(9), 0, 0).write(1, "k", 9, 0, 2);
    only(&inc(&b), Guarantee::WritesFollowReads, 1);
    let mut b = B::new();
    b.read(1, "k", Some(9), 0, 0).write(1, "k", 10, 0, 2);
    assert_eq!(inc(&b).verdict, Verdict::Valid);
}

#[test]
fn increasing_values_info_and_fail_ops() {
    let inc = |b: &B| with_source(&b.h(), VersionSource::IncreasingValues);
    // An info write of 9 need not be seen; a failed write of 20 is ignored; the session after
    // the info is new.
    let mut b = B::new();
    b.write(0, "k", 3, 0, 0)
        .ev(OpType::Invoke, 0, "write", "k", json!(9), None, 2)
        .ev(OpType::Info, 0, "write", "k", json!(9), None, 3)
        .read(5, "k", Some(3), 0, 4)
        .ev(OpType::Invoke, 5, "write", "k", json!(20), None, 6)
        .ev(OpType::Fail, 5, "write", "k", json!(20), None, 7)
        .read(5, "k", Some(3), 0, 8);
    let r = inc(&b);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
    assert_eq!((r.info_ignored, r.fail_ignored), (1, 1));
    // Stale reads are measured in values: 3 read while 3 and ... nothing newer was acked.
    assert_eq!(r.stale.stale_reads, 0);
    // Non-positive or non-integer values are malformed, never judged.
    let mut b = B::new();
    b.write(1, "k", 0, 0, 0)
        .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
        .ev(OpType::Ok, 1, "read", "k", json!("x"), None, 3);
    let r = inc(&b);
    assert_eq!(r.malformed, 2);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(r.reason.as_deref().unwrap().contains("positive integer"));
}

#[test]
fn generated_list_append_histories() {
    for seed in 0..20 {
        let cfg = ListAppendGenConfig {
            keys: 1 + (seed as usize % 4),
            threads: 2 + (seed as usize % 7),
            ops: 1500,
            info_probability: [0.0, 0.05, 0.3][seed as usize % 3],
            seed,
            ..ListAppendGenConfig::default()
        };
        let h = generate_list_append_history(&cfg);
        let r = check(&h);
        assert_eq!(r.version_source, VersionSource::ListAppend);
        assert_eq!(r.verdict, Verdict::Valid, "seed {seed}: {}", r.table());
        assert_eq!(r.version_conflicts, 0);
        assert!(r.stale.reads_measured > 300, "seed {seed}");
        // Stale prefixes break monotonic reads (and read-your-writes) but never the prefix
        // order itself.
        let s = check(&generate_list_append_history(&ListAppendGenConfig {
            stale_read_probability: 0.2,
            ..cfg
        }));
        assert_eq!(s.verdict, Verdict::Invalid, "seed {seed}");
        assert!(s.guarantee(Guarantee::MonotonicReads).violations > 0);
        assert_eq!(s.version_conflicts, 0);
        assert!(s.stale.stale_reads > 0);
    }
}
