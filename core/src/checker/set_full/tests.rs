//! Unit tests of the set-full checker on hand-written histories: each outcome (stable, lost,
//! never read), stale with and without linearizable reads, duplicated elements, the unknown
//! cases, Jepsen's concurrency asymmetry, keys, re-adds and the latency quantiles.

use super::*;
use crate::history::Process;
use serde_json::json;

/// A history builder: ops get the times given (ms) and are put in time order.
#[derive(Default)]
struct B(Vec<Op>);

impl B {
    fn op(mut self, ms: u64, t: OpType, p: u64, f: &str, key: Option<&str>, v: Value) -> B {
        let mut o = Op::new(t, Process::Client(p), f, v);
        o.key = key.map(Into::into);
        o.time_ns = ms * 1_000_000;
        self.0.push(o);
        self
    }
    /// An add of `e` by `p`, invoked at `from` ms and completed `t` at `to` ms.
    fn add(self, p: u64, e: Value, from: u64, t: OpType, to: u64) -> B {
        self.op(from, OpType::Invoke, p, "add", None, e.clone())
            .op(to, t, p, "add", None, e)
    }
    fn ok_add(self, p: u64, e: i64, from: u64, to: u64) -> B {
        self.add(p, json!(e), from, OpType::Ok, to)
    }
    /// An ok read by `p` from `from` to `to` ms returning `got`.
    fn read(self, p: u64, from: u64, to: u64, got: Value) -> B {
        self.op(from, OpType::Invoke, p, "read", None, Value::Null)
            .op(to, OpType::Ok, p, "read", None, got)
    }
    /// The history in time order (a stable sort: equal times keep their order), indexed.
    fn h(mut self) -> History {
        self.0.sort_by_key(|o| o.time_ns);
        for (i, o) in self.0.iter_mut().enumerate() {
            o.index = i as u64;
        }
        History::from_ops(self.0)
    }
}

fn check(h: &History) -> CheckResult {
    SetFullChecker::default().check(h)
}

fn check_linearizable(h: &History) -> CheckResult {
    SetFullChecker::new(SetFullConfig { linearizable: true }).check(h)
}

fn counts(r: &CheckResult) -> [u64; 5] {
    let d = &r.details;
    [
        "stable_count",
        "lost_count",
        "never_read_count",
        "stale_count",
        "duplicated_count",
    ]
    .map(|k| d[k].as_u64().unwrap_or_else(|| panic!("{k} in {d}")))
}

#[test]
fn every_element_shown_by_every_later_read_is_stable_and_valid() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .ok_add(1, 2, 1, 6)
        .read(0, 10, 11, json!([2, 1]))
        .read(1, 12, 14, json!([1, 2]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(counts(&r), [2, 0, 0, 0, 0]);
    assert_eq!(r.details["attempt_count"], 2);
    assert_eq!(
        r.summary,
        "2 elements attempted: 2 stable, 0 lost, 0 never read"
    );
    // Shown by the first read that began after the add: stable latency 0 at every quantile.
    assert_eq!(
        r.details["stable_latencies_ms"],
        json!({"0": 0.0, "0.5": 0.0, "0.95": 0.0, "0.99": 0.0, "1": 0.0})
    );
    assert!(r.details["lost_latencies_ms"].is_null());
}

#[test]
fn an_element_seen_then_missing_from_every_later_read_is_lost() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .ok_add(1, 2, 1, 6)
        .read(0, 10, 11, json!([1, 2]))
        .read(1, 20, 21, json!([2]))
        .read(0, 30, 31, json!([2]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
    assert_eq!(counts(&r), [1, 1, 0, 0, 0]);
    assert_eq!(r.details["lost"], json!([1]));
    let row = &r.details["lost_elements"][0];
    assert_eq!(row["known_by"], "add");
    assert_eq!(row["last_present_index"], 4);
    assert_eq!(row["last_absent_index"], 8);
    // Lost latency: from known (the add's ok at 5 ms) to just after the last read showing it
    // began (10 ms + 1 ns).
    assert_eq!(row["lost_latency_ms"], json!(5.000001));
    let w = row["witness"].as_str().unwrap();
    assert!(
        w.starts_with("element 1: add by process 0 (op 0, 0.000 s) ok; known from its add's ok (op 2, 0.005 s); last shown by the read by process 0 (op 4, 0.010 s); missing from every read begun since, the latest by process 0 (op 8, 0.030 s)"),
        "{w}"
    );
    assert!(r.summary.contains("1 lost (1)"), "{}", r.summary);
}

#[test]
fn an_acknowledged_element_no_read_ever_shows_is_lost_and_an_indeterminate_one_seen_once_too() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .add(1, json!(2), 1, OpType::Info, 6)
        .read(2, 7, 8, json!([2]))
        .read(2, 10, 11, json!([]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(counts(&r), [0, 2, 0, 0, 0]);
    assert_eq!(r.details["lost"], json!([1, 2]));
    assert_eq!(r.details["lost_elements"][1]["known_by"], "read");
    assert!(
        r.details["lost_elements"][0]["witness"]
            .as_str()
            .unwrap()
            .contains("never shown by a read"),
        "{}",
        r.details
    );
}

#[test]
fn a_read_missing_an_element_after_it_was_known_is_stale_invalid_only_when_reads_are_linearizable()
{
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .read(1, 10, 11, json!([]))
        .read(1, 20, 21, json!([1]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(counts(&r), [1, 0, 0, 1, 0]);
    assert_eq!(r.details["stale"], json!([1]));
    assert_eq!(r.details["linearizable"], false);
    assert!(
        r.summary
            .contains("1 stale (allowed: linearizable reads not claimed)"),
        "{}",
        r.summary
    );
    // Stable latency: from known (5 ms) to just after the last read missing it began (10 ms).
    assert_eq!(
        r.details["worst_stale"][0]["stable_latency_ms"],
        json!(5.000001)
    );
    let r = check_linearizable(&h);
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
    assert_eq!(r.details["linearizable"], true);
    assert!(
        r.summary
            .contains("1 stale (linearizable reads claimed: a violation)"),
        "{}",
        r.summary
    );
    assert!(
        r.details["stale_elements"][0]["witness"]
            .as_str()
            .unwrap()
            .contains(
                "missing from the read by process 1 (op 2, 0.010 s), which began after it was known"
            ),
        "{}",
        r.details
    );
}

#[test]
fn a_stale_read_under_a_millisecond_still_counts() {
    // Jepsen's code truncates the latency to whole ms and would not call this stale.
    let mut h = B::default()
        .ok_add(0, 1, 0, 5)
        .read(1, 10, 11, json!([]))
        .read(1, 20, 21, json!([1]))
        .h();
    h.ops[2].time_ns = 5_000_100;
    let r = check_linearizable(&h);
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
    assert_eq!(r.details["stale_count"], 1);
}

#[test]
fn only_never_read_elements_leave_the_verdict_unknown() {
    // A read that began before the add completed may linearize before it: its miss says nothing.
    let h = B::default()
        .ok_add(0, 1, 0, 10)
        .read(1, 5, 6, json!([]))
        .add(2, json!(2), 11, OpType::Fail, 12)
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.summary);
    assert_eq!(counts(&r), [0, 0, 2, 0, 0]);
    assert_eq!(r.details["never_read"], json!([1, 2]));
    assert!(
        r.details["unknown_reason"]
            .as_str()
            .unwrap()
            .contains("every one of the 2 attempted element(s) is never read"),
        "{}",
        r.details
    );
    assert!(
        r.details["never_read_elements"][1]["witness"]
            .as_str()
            .unwrap()
            .contains("add by process 2 (op 4, 0.011 s) fail; never known"),
        "{}",
        r.details
    );
    // One stable element makes it valid, never-read ones besides (Jepsen's rule): 1's add timed
    // out and no read showed it, so its absence means nothing.
    let h = B::default()
        .add(0, json!(1), 0, OpType::Info, 10)
        .ok_add(1, 3, 11, 12)
        .read(2, 13, 14, json!([3]))
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 0, 1, 0, 0], "{}", r.details);
    assert_eq!(r.verdict, Verdict::Valid);
    // An acknowledged add a later read misses is lost, not never read.
    let h = B::default()
        .ok_add(0, 1, 0, 10)
        .read(1, 5, 6, json!([]))
        .read(1, 13, 14, json!([]))
        .h();
    assert_eq!(counts(&check(&h)), [0, 1, 0, 0, 0]);
}

#[test]
fn empty_histories_and_histories_without_reads_or_adds_are_unknown() {
    let r = check(&History::from_ops(Vec::new()));
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(
        r.summary,
        "no client adds in the history: no element to check"
    );
    let r = check(&B::default().ok_add(0, 1, 0, 5).ok_add(0, 2, 6, 7).h());
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.details["unknown_reason"]
            .as_str()
            .unwrap()
            .starts_with("no ok read in the history"),
        "{}",
        r.details
    );
    let r = check(&B::default().read(0, 0, 1, json!([])).h());
    assert_eq!(r.verdict, Verdict::Unknown);
    // A read of nil is an empty set.
    let r = check(
        &B::default()
            .ok_add(0, 1, 0, 1)
            .read(0, 2, 3, Value::Null)
            .h(),
    );
    assert_eq!(r.verdict, Verdict::Invalid);
}

#[test]
fn an_element_twice_in_one_read_is_duplicated_and_invalid() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .ok_add(0, 2, 6, 7)
        .read(1, 10, 11, json!([1, 2, 1]))
        .read(1, 12, 13, json!([1, 1, 1, 2]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
    assert_eq!(counts(&r), [2, 0, 0, 0, 1]);
    // The most times one read returned it.
    assert_eq!(r.details["duplicated"], json!([[1, 3]]));
    assert_eq!(
        r.details["duplicated_elements"][0]["witness"],
        "element 1: 3 times in one read by process 1 (op 7, 0.013 s)"
    );
    assert!(r.summary.ends_with("; 1 duplicated"), "{}", r.summary);
    // Duplicates make even a history with nothing else checkable invalid, as in Jepsen.
    let r = check(&B::default().read(0, 0, 1, json!([7, 7])).h());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.details["never_added_count"], 1);
}

#[test]
fn an_element_shown_again_after_a_gap_is_stable_not_lost() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .read(1, 10, 11, json!([1]))
        .read(1, 20, 21, json!([]))
        .read(1, 30, 31, json!([1]))
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 0, 0, 1, 0]);
    assert_eq!(r.verdict, Verdict::Valid);
    // Stable latency runs to the last read that missed it: 20 ms + 1 ns − 5 ms.
    assert_eq!(r.details["stable_latencies_ms"]["1"], json!(15.000001));
}

#[test]
fn a_read_in_flight_when_the_add_began_counts_once_it_completes() {
    // The read began before the add and completed after the add's invoke (so it speaks of the
    // element), and after the add's ok: known at 4 ms, but the read began at 1 ms, so its miss
    // is no loss.
    let h = B::default().read(1, 1, 6, json!([])).ok_add(0, 1, 2, 4).h();
    let r = check(&h);
    assert_eq!(counts(&r), [0, 0, 1, 0, 0]);
    assert_eq!(r.details["never_read_elements"][0]["last_absent_index"], 0);
    // A read in flight that shows it makes it known and stable.
    let h = B::default()
        .read(1, 1, 6, json!([1]))
        .ok_add(0, 1, 2, 4)
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 0, 0, 0, 0]);
    assert_eq!(r.verdict, Verdict::Valid);
    // A read that completed before the add was invoked says nothing about it.
    let h = B::default()
        .read(1, 0, 1, json!([1]))
        .ok_add(0, 1, 2, 4)
        .h();
    assert_eq!(counts(&check(&h)), [0, 0, 1, 0, 0]);
}

#[test]
fn keys_are_separate_sets_and_elements_compare_by_value() {
    let mut b = B::default();
    for (key, p) in [("a", 0), ("b", 1)] {
        b = b.op(p, OpType::Invoke, p, "add", Some(key), json!(1)).op(
            p + 2,
            OpType::Ok,
            p,
            "add",
            Some(key),
            json!(1),
        );
    }
    let h = b
        .op(10, OpType::Invoke, 2, "read", Some("a"), Value::Null)
        .op(11, OpType::Ok, 2, "read", Some("a"), json!([1]))
        .op(12, OpType::Invoke, 2, "read", Some("b"), Value::Null)
        .op(13, OpType::Ok, 2, "read", Some("b"), json!([]))
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 1, 0, 0, 0]);
    assert_eq!(r.details["lost"], json!([["b", 1]]));
    assert!(r.summary.contains("1 lost (1 on key b)"), "{}", r.summary);
    // Tuples and strings are elements too, compared by value; 1 and "1" differ.
    let h = B::default()
        .add(0, json!([0, 1]), 0, OpType::Ok, 1)
        .add(0, json!("1"), 2, OpType::Ok, 3)
        .read(1, 4, 5, json!([[0, 1], 1]))
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 1, 0, 0, 0], "{}", r.details);
    assert_eq!(r.details["lost"], json!(["1"]));
}

#[test]
fn a_second_add_of_an_element_tracks_it_afresh() {
    // Jepsen's fold starts the element over at every add invoke: the read that missed it before
    // the second add no longer counts.
    let h = B::default()
        .ok_add(0, 1, 0, 1)
        .read(1, 2, 3, json!([]))
        .ok_add(0, 1, 4, 5)
        .read(1, 6, 7, json!([1]))
        .h();
    let r = check(&h);
    assert_eq!(counts(&r), [1, 0, 0, 0, 0], "{}", r.details);
    assert_eq!(r.details["attempt_count"], 1);
    assert_eq!(r.details["re_added_count"], 1);
}

#[test]
fn ops_other_than_add_and_read_and_reads_that_are_not_lists_are_errors() {
    let h = B::default()
        .op(0, OpType::Invoke, 0, "write", None, json!(1))
        .op(1, OpType::Ok, 0, "write", None, json!(1))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(
        r.details["error"],
        "op 0 (process 0): a set history has only add and read ops, not \"write\""
    );
    let h = B::default().read(0, 0, 1, json!(5)).h();
    let r = check(&h);
    assert_eq!(
        r.details["error"],
        "op 1 (process 0, read): expected the list of the set's elements, got 5"
    );
}

#[test]
fn histories_without_times_name_ops_and_report_no_latencies() {
    let mut h = B::default()
        .ok_add(0, 1, 0, 5)
        .read(1, 10, 11, json!([]))
        .read(1, 20, 21, json!([1]))
        .h();
    for o in &mut h.ops {
        o.time_ns = 0;
    }
    let r = check_linearizable(&h);
    // Staleness is decided by order, so it is found without times.
    assert_eq!(r.verdict, Verdict::Invalid);
    assert!(r.details["stable_latencies_ms"].is_null());
    assert!(
        r.details["stale_elements"][0]["witness"]
            .as_str()
            .unwrap()
            .contains("missing from the read by process 1 (op 2), which began"),
        "{}",
        r.details
    );
}

#[test]
fn quantiles_pick_as_jepsen_does() {
    assert_eq!(quantiles(&QUANTILES, &[]), None);
    assert_eq!(
        quantiles(&QUANTILES, &[4, 1, 3, 2]),
        Some(vec![(0.0, 1), (0.5, 3), (0.95, 4), (0.99, 4), (1.0, 4)])
    );
    let hundred: Vec<u64> = (1..=100).collect();
    assert_eq!(
        quantiles(&QUANTILES, &hundred),
        Some(vec![
            (0.0, 1),
            (0.5, 51),
            (0.95, 96),
            (0.99, 100),
            (1.0, 100)
        ])
    );
}

#[test]
fn witness_lines_name_each_class_and_the_latencies() {
    let h = B::default()
        .ok_add(0, 1, 0, 5)
        .ok_add(0, 2, 6, 7)
        .ok_add(0, 3, 40, 41)
        .read(1, 10, 11, json!([2]))
        .read(1, 20, 21, json!([2, 2]))
        .h();
    let r = check_linearizable(&h);
    let lines = witness_lines(&r.details, 5);
    assert!(
        lines[0].starts_with("lost: element 1: add by process 0"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("duplicated: element 2: 2 times"),
        "{lines:?}"
    );
    assert_eq!(lines[2], "never read (1): 3");
    assert_eq!(
        lines[3],
        "stable latencies (ms, by quantile): 0: 0.0, 0.5: 0.0, 0.95: 0.0, 0.99: 0.0, 1: 0.0"
    );
    assert!(
        lines[4].starts_with("lost latencies (ms, by quantile): 0: "),
        "{lines:?}"
    );
}
