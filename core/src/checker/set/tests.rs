//! Unit tests of the set checker on hand-written histories: each anomaly class, unknown cases,
//! indeterminate adds and the timing of lost elements against faults.

use super::details::thousands;
use super::*;
use crate::history::Process;
use serde_json::json;

/// A history builder: ops get dense indexes and the times given (ms).
#[derive(Default)]
struct B(Vec<Op>);

impl B {
    fn op(mut self, ms: u64, t: OpType, p: u64, f: &str, key: &str, v: Value) -> B {
        let mut o = Op::new(t, Process::Client(p), f, v);
        o.key = Some(key.into());
        o.time_ns = ms * 1_000_000;
        o.index = self.0.len() as u64;
        self.0.push(o);
        self
    }
    /// An add of `e` on `key` by `p`, invoked at `from` ms and completed `t` at `to` ms.
    fn add(self, p: u64, key: &str, e: i64, from: u64, t: OpType, to: u64) -> B {
        self.op(from, OpType::Invoke, p, "add", key, json!(e))
            .op(to, t, p, "add", key, json!(e))
    }
    fn read(self, p: u64, key: &str, from: u64, to: u64, got: &[i64]) -> B {
        self.op(from, OpType::Invoke, p, "read", key, Value::Null)
            .op(to, OpType::Ok, p, "read", key, json!(got))
    }
    fn nemesis(mut self, ms: u64, f: &str, v: Value) -> B {
        for t in [OpType::Info, OpType::Info] {
            let mut o = Op::new(t, Process::Nemesis, f, v.clone());
            o.time_ns = ms * 1_000_000;
            o.index = self.0.len() as u64;
            self.0.push(o);
        }
        self
    }
    /// The history in time order (as recorded), indexes renumbered.
    fn h(mut self) -> History {
        self.0.sort_by_key(|o| o.time_ns);
        for (i, o) in self.0.iter_mut().enumerate() {
            o.index = i as u64;
        }
        History::from_ops(self.0)
    }
}

fn check(h: &History) -> CheckResult {
    SetChecker.check(h)
}

#[test]
fn every_acknowledged_add_in_the_final_read_is_valid() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(1, "k", 2, 1, OpType::Ok, 6)
        .read(0, "k", 10, 11, &[2, 1])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(r.details["attempted"], 2);
    assert_eq!(r.details["acknowledged"], 2);
    assert_eq!(r.details["lost"], 0);
    assert_eq!(r.details["keys"][0]["final_read"]["size"], 2);
    assert_eq!(r.summary, "0 of 2 acknowledged adds lost");
}

#[test]
fn an_acknowledged_add_missing_from_the_final_read_is_lost() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(1, "k", 2, 1, OpType::Ok, 6)
        .add(2, "j", 3, 1, OpType::Ok, 6)
        .read(0, "k", 10, 11, &[1])
        .read(0, "j", 12, 13, &[3])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.details["lost"], 1);
    let w = &r.details["lost_elements"][0];
    assert_eq!(
        (w["key"].as_str(), w["element"].as_i64()),
        (Some("k"), Some(2))
    );
    assert_eq!(w["process"], 1);
    assert_eq!(w["invoke_ns"], 1_000_000);
    assert_eq!(w["complete_ns"], 6_000_000);
    assert!(
        r.summary
            .starts_with("1 of 3 acknowledged adds lost (key k: 1"),
        "{}",
        r.summary
    );
    let keys = r.details["keys"].as_array().unwrap();
    let verdicts: Vec<&str> = keys
        .iter()
        .map(|k| k["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["valid", "invalid"]); // keys by name: j, k
}

#[test]
fn the_final_read_is_the_last_read_after_every_add_completed() {
    // A read overlapping an add does not count as final; the later one does.
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(1, "k", 2, 1, OpType::Info, 20)
        .read(2, "k", 10, 11, &[])
        .read(2, "k", 30, 31, &[1])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(r.details["keys"][0]["final_read"]["index"], 7);
    // The info add timed out at 20 ms; a read that began before it is no final read.
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(1, "k", 2, 1, OpType::Info, 20)
        .read(2, "k", 10, 25, &[1])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(r.details["keys_unknown"], 1);
    assert!(
        r.details["unknown_reason"]
            .as_str()
            .unwrap()
            .contains("no final read"),
        "{}",
        r.details
    );
}

#[test]
fn a_key_without_a_final_read_is_unknown_never_valid() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(0, "j", 2, 6, OpType::Ok, 7)
        .read(1, "j", 8, 9, &[2])
        .op(10, OpType::Invoke, 1, "read", "k", Value::Null)
        .op(11, OpType::Info, 1, "read", "k", Value::Null)
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.summary.contains("1 key(s) without a final read (k)"),
        "{}",
        r.summary
    );
    // An invalid key still makes the whole history invalid.
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(0, "j", 2, 6, OpType::Ok, 7)
        .read(1, "j", 8, 9, &[])
        .h();
    assert_eq!(check(&h).verdict, Verdict::Invalid);
}

#[test]
fn no_client_adds_is_unknown() {
    let h = B::default().read(0, "k", 0, 1, &[]).h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(r.summary, "no client adds in the history: nothing to check");
    assert_eq!(check(&History::from_ops(vec![])).verdict, Verdict::Unknown);
}

#[test]
fn elements_never_attempted_on_the_key_are_unexpected() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 5)
        .add(2, "j", 7, 0, OpType::Ok, 5)
        .read(1, "k", 10, 11, &[1, 7, 99])
        .read(1, "j", 12, 13, &[7])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(
        r.details["unexpected"], 2,
        "7 was added on j, not k; 99 never"
    );
    let w = r.details["unexpected_elements"][0]["witness"]
        .as_str()
        .unwrap();
    assert!(w.contains("never attempted"), "{w}");
}

#[test]
fn indeterminate_adds_present_are_recovered_and_absent_ones_are_fine() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Info, 5)
        .add(1, "k", 2, 0, OpType::Info, 5)
        .op(1, OpType::Invoke, 2, "add", "k", json!(3)) // never completes
        .read(3, "k", 10, 11, &[1, 3])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(r.details["indeterminate"], 3);
    assert_eq!(r.details["recovered"], 2);
    assert_eq!(r.details["lost"], 0);
    assert!(r.summary.contains("2 recovered"), "{}", r.summary);
}

#[test]
fn a_failed_add_that_shows_up_is_failed_but_present() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Fail, 5)
        .add(0, "k", 2, 6, OpType::Ok, 7)
        .read(1, "k", 10, 11, &[1, 2])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.details["failed"], 1);
    assert_eq!(r.details["failed_but_present"], 1);
    assert!(r.summary.contains("1 failed but present"), "{}", r.summary);
    // A failed add absent is exactly what fail promises.
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Fail, 5)
        .add(0, "k", 2, 6, OpType::Ok, 7)
        .read(1, "k", 10, 11, &[2])
        .h();
    assert_eq!(check(&h).verdict, Verdict::Valid);
}

#[test]
fn an_indeterminate_add_read_and_then_gone_is_lost_after_read() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Info, 50)
        .read(1, "k", 10, 11, &[1])
        .read(1, "k", 60, 61, &[])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.details["lost"], 0);
    assert_eq!(r.details["lost_after_read"], 1);
    let w = r.details["lost_elements"][0]["witness"].as_str().unwrap();
    assert!(w.contains("then seen by a read"), "{w}");
    assert!(w.ends_with("; seen by reads from 0.0 s to 0.0 s"), "{w}");
    assert_eq!(r.details["lost_elements"][0]["last_seen_s"], 0.011);
}

#[test]
fn elements_missing_from_a_later_read_are_stale_but_not_a_violation() {
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 1)
        .add(0, "k", 2, 2, OpType::Ok, 3)
        .read(1, "k", 4, 5, &[1, 2])
        // Began after the first read completed, misses 2: stale.
        .read(2, "k", 6, 7, &[1])
        // Overlaps the first read: not stale.
        .read(3, "k", 4, 8, &[])
        .read(1, "k", 20, 21, &[1, 2])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(r.details["stale"], 1);
    assert_eq!(r.details["stale_reads"], 1);
    assert_eq!(r.details["stale_elements"][0]["element"], 2);
    assert_eq!(r.details["stale_elements"][0]["read_index"], 8);
}

#[test]
fn lost_elements_are_timed_against_faults() {
    let part = json!({"grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}});
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 800) // 1.2 s before the partition began
        .nemesis(2000, "start-partition", part)
        .add(1, "k", 2, 2100, OpType::Ok, 2500) // during it
        .nemesis(4000, "stop-partition", Value::Null)
        .add(3, "k", 3, 4400, OpType::Ok, 4500) // after it, no fault later
        .read(2, "k", 5000, 5001, &[])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    let rows = r.details["lost_elements"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let third = rows[2]["witness"].as_str().unwrap();
    assert!(
        third.contains("acknowledged 2.5 s after isolate n1 began; never seen"),
        "{third}"
    );
    let first = &rows[0];
    assert_eq!(first["element"], 1);
    assert!((first["fault_after"]["ack_before_start_s"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    assert_eq!(first["faults_active"].as_array().unwrap().len(), 0);
    let w = first["witness"].as_str().unwrap();
    assert!(
        w.contains("acknowledged 1.2 s before isolate n1 began; never seen by a read"),
        "{w}"
    );
    let second = &rows[1];
    assert_eq!(second["faults_active"].as_array().unwrap().len(), 1);
    assert!(
        second["witness"].as_str().unwrap().contains("during "),
        "{second}"
    );
    assert!(
        r.summary
            .contains("acknowledged 1.2 s before isolate n1 began, acknowledged during isolate n1"),
        "{}",
        r.summary
    );
}

#[test]
fn witness_lists_are_capped_and_say_how_many_were_left_off() {
    let mut b = B::default();
    for e in 0..(WITNESS_CAP as i64 + 7) {
        b = b.add(0, "k", e, e as u64 * 2, OpType::Ok, e as u64 * 2 + 1);
    }
    let h = b.read(1, "k", 100_000, 100_001, &[]).h();
    let r = check(&h);
    assert_eq!(r.details["lost"], WITNESS_CAP + 7);
    assert_eq!(
        r.details["lost_elements"].as_array().unwrap().len(),
        WITNESS_CAP
    );
    assert_eq!(r.details["lost_left_off"], 7);
}

#[test]
fn malformed_set_histories_are_unknown_naming_the_op() {
    let h = B::default()
        .op(0, OpType::Invoke, 0, "add", "k", json!([1]))
        .op(1, OpType::Ok, 0, "add", "k", json!([1]))
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.summary.contains("op 0 (process 0, add on key k)"),
        "{}",
        r.summary
    );
    let h = B::default()
        .op(0, OpType::Invoke, 0, "cas", "k", json!([1, 2]))
        .op(1, OpType::Ok, 0, "cas", "k", json!([1, 2]))
        .h();
    assert!(check(&h).summary.contains("only add and read"));
    let h = B::default()
        .add(0, "k", 1, 0, OpType::Ok, 1)
        .op(2, OpType::Invoke, 0, "read", "k", Value::Null)
        .op(3, OpType::Ok, 0, "read", "k", json!(5))
        .h();
    assert!(check(&h).summary.contains("expected an array"));
}

#[test]
fn string_elements_compare_by_equality_and_show_as_written() {
    let h = B::default()
        .op(0, OpType::Invoke, 0, "add", "k", json!("x"))
        .op(1, OpType::Ok, 0, "add", "k", json!("x"))
        .op(2, OpType::Invoke, 0, "add", "k", json!(1))
        .op(3, OpType::Ok, 0, "add", "k", json!(1))
        .read(1, "k", 10, 11, &[1])
        .h();
    let r = check(&h);
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.details["lost_elements"][0]["element"], "x");
    let w = r.details["lost_elements"][0]["witness"].as_str().unwrap();
    assert!(w.starts_with("add \"x\" on key k"), "{w}");
}

#[test]
fn thousands_separators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(4210), "4,210");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

#[test]
fn a_keyless_set_without_a_final_read_says_so_without_an_empty_key_name() {
    let mut ops = B::default()
        .add(0, "", 1, 0, OpType::Ok, 5)
        .read(1, "", 6, 7, &[1])
        .add(0, "", 2, 8, OpType::Ok, 12)
        .h()
        .ops;
    for o in &mut ops {
        o.key = None;
    }
    let r = check(&History::from_ops(ops));
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.summary
            .contains("no read after the last add completed (a final read): unknown")
            && !r.summary.contains("()"),
        "{}",
        r.summary
    );
}
