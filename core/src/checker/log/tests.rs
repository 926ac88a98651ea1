//! Unit tests of the log checker: one constructed history per anomaly class, a valid history
//! with duplicates, and the unknown cases.

use super::*;
use serde_json::json;

/// A history builder: ops appended in order, times = positions (ms).
#[derive(Default)]
struct H {
    lines: Vec<Value>,
}

impl H {
    fn op(&mut self, ty: &str, p: u64, f: &str, key: &str, value: Value, node: &str) -> &mut H {
        let i = self.lines.len();
        self.lines.push(
            json!({"index": i, "time": (i as u64 + 1) * 1_000_000, "type": ty,
            "process": p, "f": f, "key": key, "value": value, "node": node}),
        );
        self
    }
    fn send_ok(&mut self, p: u64, key: &str, v: i64, offset: u64) -> &mut H {
        self.op("invoke", p, SEND, key, json!(v), "n1").op(
            "ok",
            p,
            SEND,
            key,
            json!([offset, v]),
            "n1",
        )
    }
    fn read(&mut self, p: u64, f: &str, key: &str, pairs: Value, node: &str) -> &mut H {
        self.op("invoke", p, f, key, Value::Null, node)
            .op("ok", p, f, key, pairs, node)
    }
    fn check(&self) -> CheckResult {
        let text: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        LogChecker.check(&History::read_jsonl(text.as_bytes(), "test").unwrap())
    }
}

fn count(r: &CheckResult, c: Anomaly) -> u64 {
    r.details["counts"][c.name()].as_u64().unwrap()
}

#[test]
fn a_valid_history_with_duplicates_and_replica_lag_is_valid() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(1, "0", 2, 2);
    // An indeterminate send that landed twice (a client retry): duplicates are allowed.
    h.op("invoke", 2, SEND, "0", json!(3), "n2")
        .op("info", 2, SEND, "0", json!(3), "n2");
    h.read(3, POLL, "0", json!([[1, 1]]), "n2")
        .read(3, POLL, "0", json!([[2, 2], [3, 3]]), "n2")
        .read(4, READ, "0", json!([[1, 1], [2, 2], [3, 3], [4, 3]]), "n1")
        // n2 lags: misses the tail, counted, not a violation.
        .read(5, READ, "0", json!([[1, 1], [2, 2], [3, 3]]), "n2");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(count(&r, Anomaly::Duplicated), 1);
    assert_eq!(count(&r, Anomaly::MissingOnNode), 0);
    assert!(
        r.summary.starts_with("0 of 2 acknowledged sends lost"),
        "{}",
        r.summary
    );
}

#[test]
fn an_acknowledged_send_absent_from_every_final_read_is_lost() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(0, "0", 2, 2);
    h.op("info", 0, "start-partition", "", Value::Null, "");
    h.lines.last_mut().unwrap()["process"] = json!("nemesis");
    h.read(1, READ, "0", json!([[1, 1]]), "n1")
        .read(2, READ, "0", json!([[1, 1]]), "n2");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::Lost), 1);
    let w = r.details["lost"]["witnesses"][0]["witness"]
        .as_str()
        .unwrap();
    assert!(
        w.contains("send 2 to log 0") && w.contains("offset 2") && w.contains("n1, n2"),
        "{w}"
    );
    assert!(w.contains("before") || w.contains("partition"), "{w}");
}

#[test]
fn missing_on_one_node_only_is_counted_not_lost() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1);
    h.read(1, READ, "0", json!([[1, 1]]), "n1")
        .read(2, READ, "0", json!([]), "n2");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    assert_eq!(count(&r, Anomaly::MissingOnNode), 1);
}

#[test]
fn two_values_at_one_offset_are_inconsistent_with_both_witnesses() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(1, "0", 2, 2);
    h.read(2, READ, "0", json!([[1, 1], [2, 2]]), "n1").read(
        3,
        READ,
        "0",
        json!([[1, 1], [2, 7]]),
        "n2",
    );
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::InconsistentOffset), 1);
    // 7 was never sent, too.
    assert_eq!(count(&r, Anomaly::Unexpected), 1);
    let w = &r.details["inconsistent_offsets"]["witnesses"][0];
    assert_eq!(w["indices"].as_array().unwrap().len(), 2);
    let text = w["witness"].as_str().unwrap();
    assert!(
        text.contains("offset 2") && text.contains("n1") && text.contains("n2"),
        "{text}"
    );
}

#[test]
fn a_value_read_only_away_from_its_acknowledged_offset_is_acked_elsewhere() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(0, "0", 2, 5);
    h.read(1, READ, "0", json!([[1, 1], [2, 2]]), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::AckedElsewhere), 1);
}

#[test]
fn polls_going_backwards_are_nonmonotonic() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(0, "0", 2, 2);
    h.read(1, POLL, "0", json!([[1, 1], [2, 2]]), "n2")
        .read(1, POLL, "0", json!([[2, 2]]), "n2")
        .read(2, READ, "0", json!([[2, 2], [1, 1]]), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::Nonmonotonic), 2);
}

#[test]
fn a_known_offset_passed_over_is_skipped() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1)
        .send_ok(0, "0", 2, 2)
        .send_ok(0, "0", 3, 3);
    // Within a read, across polls, and before the first offset of a whole read.
    h.read(1, READ, "0", json!([[1, 1], [3, 3]]), "n1")
        .read(2, POLL, "0", json!([[1, 1]]), "n2")
        .read(2, POLL, "0", json!([[3, 3]]), "n2")
        .read(3, READ, "0", json!([[2, 2], [3, 3]]), "n3")
        .read(4, READ, "0", json!([[1, 1], [2, 2], [3, 3]]), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::Skipped), 3, "{}", r.details);
    assert_eq!(count(&r, Anomaly::Lost), 0);
}

#[test]
fn a_value_never_sent_is_unexpected() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1);
    h.read(1, READ, "0", json!([[1, 1], [2, 99]]), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(count(&r, Anomaly::Unexpected), 1);
}

#[test]
fn no_final_read_or_no_sends_is_unknown_and_bad_shapes_are_errors() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1)
        .read(1, POLL, "0", json!([[1, 1]]), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.summary);
    assert!(
        r.summary.contains("no final read of log 0"),
        "{}",
        r.summary
    );
    // A read before the last send completed is no final read either.
    let mut h = H::default();
    h.op("invoke", 0, SEND, "0", json!(1), "n1")
        .read(1, READ, "0", json!([]), "n1")
        .op("ok", 0, SEND, "0", json!([1, 1]), "n1");
    assert_eq!(h.check().verdict, Verdict::Unknown);
    let mut h = H::default();
    h.read(1, READ, "0", json!([]), "n1");
    assert_eq!(h.check().verdict, Verdict::Unknown);
    let mut h = H::default();
    h.op("invoke", 0, SEND, "0", json!(1), "n1")
        .op("ok", 0, SEND, "0", json!(1), "n1");
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.details["error"]
            .as_str()
            .unwrap()
            .contains("[offset, value]"),
        "{}",
        r.details
    );
}

#[test]
fn witness_lines_name_each_class() {
    let mut h = H::default();
    h.send_ok(0, "0", 1, 1).send_ok(0, "0", 2, 2);
    h.read(1, READ, "0", json!([[1, 1]]), "n1");
    let lines = witness_lines(&h.check().details, 5);
    assert_eq!(lines[0], "lost (1):");
    assert!(lines[1].contains("send 2"));
}
