//! Data behind the anomaly, clock-offset and stale-read charts and tables: where each checker's
//! witness ops sit in time, how many anomalies of each kind happened when (all of them, not only
//! the witnesses kept), the clock nemesis's offset measurements, and the session checker's
//! stale-read quantification.
//!
//! Owns reading those facts out of a history and a `results.json` value (the stored
//! `CheckResult`s: `checkers[].details`), tolerating anything missing or malformed (it simply
//! yields fewer marks). Pure: no IO. Does not own checking (`checker`), drawing (`plots`) or the
//! HTML (`page`).

use crate::faults::verb::CLOCK_OFFSETS as CLOCK_OFFSETS_VERB;
use crate::faults::verb::STROBE_CLOCK as STROBE_VERB;
use crate::history::{History, Process};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// At most this many anomaly marks are extracted (checkers already bound their witnesses).
pub const MAX_MARKS: usize = 5_000;

/// Category of linearizability witness ops.
pub const LINEARIZABLE: &str = "linearizable";
/// The session checker's name: its guarantees' violations and version conflicts are its marks.
pub const SESSION: &str = crate::checker::session::NAME;
/// Category of version conflicts found by the session checker.
pub const VERSION_CONFLICT: &str = "version-conflict";
/// Category of elements the set checker found lost, marked at their add's acknowledgement.
pub const SET_LOST: &str = "set-lost";
/// Category of two holders of one lock that both wrote, spanning their overlap window.
pub const TWO_HOLDERS: &str = "two-holders";
/// Category of protected writes accepted with a stale fencing token.
pub const STALE_TOKEN: &str = "stale-token";
/// Prefix of the log checker's categories (`log-lost`, `log-inconsistent_offsets`, …): its
/// violation witnesses, each at the time of its first witness op (a lost send at its ack).
pub const LOG_PREFIX: &str = "log-";

/// One anomaly pinned to time.
#[derive(Debug, Clone, PartialEq)]
pub struct AnomalyMark {
    /// Checker or guarantee: `linearizable`, a session guarantee name (`monotonic-reads`, …) or
    /// `version-conflict`.
    pub category: String,
    /// The checker that kept the witness (its `checker` in results.json: `linearizable`,
    /// `session`, `set`, …).
    pub checker: &'static str,
    /// When the anomaly shows: completion (else invoke) time of the witness op, seconds since
    /// the run started.
    pub time_s: f64,
    /// Start of the evidence span: the witness op's invoke time (linearizable) or the earlier
    /// op's completion (session), seconds; `None` when unknown.
    pub from_s: Option<f64>,
    /// History index of the op the mark sits on.
    pub op_index: u64,
    /// True for the op that proves the anomaly (the unlinearizable op, the violating op); false
    /// for supporting ops (minimized linearizability witness ops).
    pub primary: bool,
    /// Short description, e.g. "p3 read k2 → 4" or "p7 k1: version 12 after 15".
    pub label: String,
}

/// The `details` of the checker named `name` in a results.json value.
pub fn checker_details<'a>(results: &'a Value, name: &str) -> Option<&'a Value> {
    results
        .get("checkers")?
        .as_array()?
        .iter()
        .find(|c| c.get("checker").and_then(Value::as_str) == Some(name))?
        .get("details")
}

/// Completion times (ns) of the ops with the given history indices.
pub fn op_times_ns(history: &History, indices: &HashSet<u64>) -> HashMap<u64, u64> {
    if indices.is_empty() {
        return HashMap::new();
    }
    history
        .ops
        .iter()
        .filter(|o| indices.contains(&o.index))
        .map(|o| (o.index, o.time_ns))
        .collect()
}

fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Session-checker violation witnesses: (guarantee name, witness object), in results order.
pub fn session_violations(results: &Value) -> Vec<(String, &Value)> {
    let Some(gs) = checker_details(results, "session")
        .and_then(|d| d.get("guarantees"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    gs.iter()
        .flat_map(|g| {
            let name = text(g.get("guarantee"));
            g.get("witnesses")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(move |w| (name.clone(), w))
        })
        .collect()
}

/// Session-checker version conflicts, in results order.
pub fn version_conflicts(results: &Value) -> Vec<&Value> {
    checker_details(results, "session")
        .and_then(|d| d.get("conflicts"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// A linearizability `WitnessOp` as a mark.
fn linear_mark(op: &Value, primary: bool) -> Option<AnomalyMark> {
    let invoke_s = op.get("invoke_time_s")?.as_f64()?;
    let complete_s = op.get("complete_time_s").and_then(Value::as_f64);
    let key = text(op.get("key"));
    let label = format!(
        "{} {}{} {}",
        text(op.get("process")),
        text(op.get("f")),
        if key.is_empty() {
            String::new()
        } else {
            format!(" {key}")
        },
        text(op.get("value"))
    );
    Some(AnomalyMark {
        category: LINEARIZABLE.to_string(),
        checker: LINEARIZABLE,
        time_s: complete_s.unwrap_or(invoke_s),
        from_s: Some(invoke_s),
        op_index: op
            .get("completion_index")
            .and_then(Value::as_u64)
            .or_else(|| op.get("index").and_then(Value::as_u64))?,
        primary,
        label: label.trim().to_string(),
    })
}

/// Every anomaly of `results` (a results.json value) pinned to time using `history`: the
/// unlinearizable op of each invalid part and its minimized witness ops, each session violation
/// (at the violating op, spanning from the earlier op) and each version conflict. Marks whose
/// ops are not in the history are dropped. Ordered by category, then time; at most [`MAX_MARKS`].
pub fn anomaly_marks(history: &History, results: &Value) -> Vec<AnomalyMark> {
    let mut marks = Vec::new();
    if let Some(parts) = checker_details(results, LINEARIZABLE)
        .and_then(|d| d.get("parts"))
        .and_then(Value::as_array)
    {
        for w in parts.iter().filter_map(|p| p.get("witness")) {
            if let Some(m) = w.get("op").and_then(|op| linear_mark(op, true)) {
                marks.push(m);
            }
            for op in w
                .get("minimized")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                if let Some(m) = linear_mark(op, false) {
                    marks.push(m);
                }
            }
        }
    }
    let violations = session_violations(results);
    let conflicts = version_conflicts(results);
    let mut wanted = HashSet::new();
    for (_, w) in &violations {
        for k in ["earlier_index", "later_index"] {
            wanted.extend(w.get(k).and_then(Value::as_u64));
        }
    }
    for c in &conflicts {
        for k in ["first_index", "later_index"] {
            wanted.extend(c.get(k).and_then(Value::as_u64));
        }
    }
    let times = op_times_ns(history, &wanted);
    let secs = |i: Option<u64>| i.and_then(|i| times.get(&i)).map(|&t| t as f64 / 1e9);
    for (guarantee, w) in &violations {
        let later = w.get("later_index").and_then(Value::as_u64);
        let (Some(later), Some(t)) = (later, secs(later)) else {
            continue;
        };
        let key = text(w.get("key"));
        marks.push(AnomalyMark {
            category: guarantee.clone(),
            checker: SESSION,
            time_s: t,
            from_s: secs(w.get("earlier_index").and_then(Value::as_u64)),
            op_index: later,
            primary: true,
            label: format!(
                "p{} {}: version {} after {}",
                text(w.get("process")),
                if key.is_empty() { "-" } else { &key },
                text(w.get("later_version")),
                text(w.get("earlier_version"))
            ),
        });
    }
    for c in &conflicts {
        let later = c.get("later_index").and_then(Value::as_u64);
        let (Some(later), Some(t)) = (later, secs(later)) else {
            continue;
        };
        marks.push(AnomalyMark {
            category: VERSION_CONFLICT.to_string(),
            checker: SESSION,
            time_s: t,
            from_s: secs(c.get("first_index").and_then(Value::as_u64)),
            op_index: later,
            primary: true,
            label: format!(
                "{} version {}: {} vs {}",
                text(c.get("key")),
                text(c.get("version")),
                text(c.get("first_value")),
                text(c.get("later_value"))
            ),
        });
    }
    marks.extend(set_lost_marks(results));
    marks.extend(log_marks(results));
    marks.extend(txn_marks(history, results));
    marks.extend(lock_marks(results));
    // Stable category order: linearizable, session guarantees as listed, version-conflict,
    // set-lost, transactional anomalies.
    let mut order: Vec<String> = Vec::new();
    for m in &marks {
        if !order.contains(&m.category) {
            order.push(m.category.clone());
        }
    }
    marks.sort_by(|a, b| {
        let ia = order.iter().position(|c| *c == a.category);
        let ib = order.iter().position(|c| *c == b.category);
        ia.cmp(&ib).then(a.time_s.total_cmp(&b.time_s))
    });
    marks.truncate(MAX_MARKS);
    marks
}

/// The run's first witness: of the primary marks ([`anomaly_marks`]) kept by a checker whose
/// verdict is `invalid`, the one that shows earliest (ties: the lower op index). `None` when no
/// invalid checker kept a witness the history places in time (allowed anomalies and valid
/// checkers' notes are never a first witness).
pub fn first_witness(history: &History, results: &Value) -> Option<AnomalyMark> {
    let invalid: HashSet<&str> = results
        .get("checkers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("verdict").and_then(Value::as_str) == Some("invalid"))
        .filter_map(|c| c.get("checker").and_then(Value::as_str))
        .collect();
    if invalid.is_empty() {
        return None;
    }
    anomaly_marks(history, results)
        .into_iter()
        .filter(|m| m.primary && invalid.contains(m.checker))
        .min_by(|a, b| {
            a.time_s
                .total_cmp(&b.time_s)
                .then(a.op_index.cmp(&b.op_index))
        })
}

/// The set checker's lost elements (its `lost_elements` witness rows), each at the time its add
/// was acknowledged (`ack_s`), spanning from the add's invocation.
fn set_lost_marks(results: &Value) -> Vec<AnomalyMark> {
    let rows = checker_details(results, crate::checker::set::NAME)
        .and_then(|d| d.get("lost_elements"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    rows.iter()
        .filter_map(|r| {
            let time_s = r.get("ack_s").and_then(Value::as_f64)?;
            Some(AnomalyMark {
                category: SET_LOST.to_string(),
                checker: crate::checker::set::NAME,
                time_s,
                from_s: r
                    .get("invoke_ns")
                    .and_then(Value::as_u64)
                    .map(|t| t as f64 / 1e9),
                op_index: r.get("invoke_index").and_then(Value::as_u64)?,
                primary: true,
                label: format!(
                    "p{} {}: add {} lost",
                    text(r.get("process")),
                    text(r.get("key")),
                    text(r.get("element"))
                ),
            })
        })
        .collect()
}

/// The log checker's violation witnesses (lost sends at their ack, inconsistent offsets, skips,
/// …), each at the time of its first witness op; allowed classes (duplicates) are not marked.
fn log_marks(results: &Value) -> Vec<AnomalyMark> {
    use crate::checker::log::Anomaly;
    let Some(d) = checker_details(results, crate::checker::log::NAME) else {
        return Vec::new();
    };
    let mut marks = Vec::new();
    for class in Anomaly::ALL.into_iter().filter(|c| c.is_violation()) {
        let rows = d[class.name()]["witnesses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for r in rows {
            let (Some(t), Some(index)) = (r["time_ns"].as_u64(), r["indices"][0].as_u64()) else {
                continue;
            };
            marks.push(AnomalyMark {
                category: format!("{LOG_PREFIX}{}", class.name()),
                checker: crate::checker::log::NAME,
                time_s: t as f64 / 1e9,
                from_s: None,
                op_index: index,
                primary: true,
                label: text(r.get("witness")),
            });
        }
    }
    marks
}

/// The lock checkers' witnesses: two holders over their overlap window (the mark sits on the
/// last write inside it), and stale-token writes the resource accepted (spanning from the
/// greater-token write it came after).
fn lock_marks(results: &Value) -> Vec<AnomalyMark> {
    let rows = |name: &str| {
        checker_details(results, name)
            .and_then(|d| d.get("anomalies"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut marks = Vec::new();
    for r in rows(crate::checker::lock::MUTEX_NAME) {
        let window = r.get("window_s").and_then(Value::as_array);
        let at = |i: usize| window.and_then(|w| w.get(i)).and_then(Value::as_f64);
        let last = r
            .get("ops")
            .and_then(Value::as_array)
            .and_then(|ops| ops.iter().filter_map(|o| o.get("index")?.as_u64()).max());
        let (Some(from), Some(to), Some(last)) = (at(0), at(1), last) else {
            continue;
        };
        let holder = |i: usize| text(r.get("holders").and_then(|h| h.get(i)?.get("process")));
        marks.push(AnomalyMark {
            category: TWO_HOLDERS.to_string(),
            checker: crate::checker::lock::MUTEX_NAME,
            time_s: to,
            from_s: Some(from),
            op_index: last,
            primary: true,
            label: format!(
                "lock {}: p{} and p{} both wrote ({})",
                text(r.get("lock")),
                holder(0),
                holder(1),
                text(r.get("kind"))
            ),
        });
    }
    for r in rows(crate::checker::lock::FENCING_NAME) {
        let stale = r.get("stale");
        let (Some(time_s), Some(index)) = (
            stale.and_then(|o| o.get("time_s")).and_then(Value::as_f64),
            stale.and_then(|o| o.get("index")).and_then(Value::as_u64),
        ) else {
            continue;
        };
        marks.push(AnomalyMark {
            category: STALE_TOKEN.to_string(),
            checker: crate::checker::lock::FENCING_NAME,
            time_s,
            from_s: r
                .get("after")
                .and_then(|o| o.get("time_s"))
                .and_then(Value::as_f64),
            op_index: index,
            primary: true,
            label: format!(
                "lock {}: token {} accepted after {}",
                text(r.get("lock")),
                text(r.get("stale_token")),
                text(r.get("after_token"))
            ),
        });
    }
    marks
}

/// The transactional checker's kept anomalies, each named by its type (`G2-item`, `G1a`, …) and
/// spanning the invocations of the transactions involved (the mark sits on the latest).
fn txn_marks(history: &History, results: &Value) -> Vec<AnomalyMark> {
    let rows = checker_details(results, crate::checker::txn::CHECKER)
        .and_then(|d| d.get("anomalies"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let ops = |r: &Value| -> Vec<u64> {
        r.get("ops")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    };
    let wanted: HashSet<u64> = rows.iter().flat_map(ops).collect();
    let times = op_times_ns(history, &wanted);
    rows.iter()
        .filter_map(|r| {
            let mut at: Vec<(u64, u64)> = ops(r)
                .into_iter()
                .filter_map(|i| times.get(&i).map(|&t| (t, i)))
                .collect();
            at.sort_unstable();
            let (&(first_ns, _), &(last_ns, last)) = (at.first()?, at.last()?);
            let name = text(r.get("type"));
            Some(AnomalyMark {
                category: name.clone(),
                checker: crate::checker::txn::CHECKER,
                time_s: last_ns as f64 / 1e9,
                from_s: Some(first_ns as f64 / 1e9),
                op_index: last,
                primary: true,
                label: format!(
                    "{name}: {}",
                    at.iter()
                        .map(|(_, i)| format!("T{i}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            })
        })
        .collect()
}

/// Every anomaly of one category as counts over time (the checker's `timeline` histogram), for
/// the categories whose witness marks are only a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct AnomalyDensity {
    /// Session guarantee name or `version-conflict`.
    pub category: String,
    /// Bucket width in seconds.
    pub bucket_s: f64,
    /// (bucket start s, anomalies in it), non-empty buckets in time order.
    pub buckets: Vec<(f64, u64)>,
    /// All anomalies of the category (the sum of the buckets).
    pub total: u64,
}

fn histogram(category: &str, h: Option<&Value>) -> Option<AnomalyDensity> {
    let h = h?;
    let bucket_ms = h.get("bucket_ms")?.as_u64().filter(|b| *b > 0)?;
    let buckets: Vec<(f64, u64)> = h
        .get("buckets")?
        .as_array()?
        .iter()
        .filter_map(|b| {
            let b = b.as_array()?;
            Some((b.first()?.as_u64()? as f64 / 1e3, b.get(1)?.as_u64()?))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let total = buckets.iter().map(|(_, n)| n).sum();
    (total > 0).then(|| AnomalyDensity {
        category: category.to_string(),
        bucket_s: bucket_ms as f64 / 1e3,
        buckets,
        total,
    })
}

/// Per session guarantee (in results order) and for version conflicts: all their anomalies
/// over time, from the session checker's `timeline` / `conflict_timeline` histograms. Results
/// without them (older runs, other checkers) give none.
pub fn anomaly_density(results: &Value) -> Vec<AnomalyDensity> {
    let Some(details) = checker_details(results, "session") else {
        return Vec::new();
    };
    let mut out: Vec<AnomalyDensity> = details
        .get("guarantees")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter_map(|g| histogram(&text(g.get("guarantee")), g.get("timeline")))
        .collect();
    out.extend(histogram(
        VERSION_CONFLICT,
        details.get("conflict_timeline"),
    ));
    out
}

/// What a node's name is followed by in the name of its database's own clock series.
pub const DB_SERIES_SUFFIX: &str = " db";

/// Clock offsets per node: node → [(time s, offset ms)], nodes sorted by name, points in time
/// order. From `clock-offsets` nemesis ops (at the op's time) and from the samples a strobe took
/// while it ran (a `strobe-clock` completion's `offsets`, each `at_ms` after the strobe began,
/// see `report::faults::spanned`). The database process's own clock, where the system reports
/// it (`db_offsets_ms`), is a series of its own per node, named `"<node> db"`. Ops whose value
/// has no `offsets_ms` object (the
/// invocations) and non-numeric offsets are skipped.
pub fn clock_offsets(history: &History) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut add = |t_s: f64, sample: &Value| {
        for (field, suffix) in [("offsets_ms", ""), ("db_offsets_ms", DB_SERIES_SUFFIX)] {
            let Some(offsets) = sample.get(field).and_then(Value::as_object) else {
                continue;
            };
            for (node, ms) in offsets {
                if let Some(ms) = ms.as_f64().filter(|m| m.is_finite()) {
                    out.entry(format!("{node}{suffix}"))
                        .or_default()
                        .push((t_s, ms));
                }
            }
        }
    };
    for op in history.ops.iter().filter(|o| o.process == Process::Nemesis) {
        let t_s = op.time_ns as f64 / 1e9;
        if op.f == CLOCK_OFFSETS_VERB {
            add(t_s, &op.value);
        } else if op.f == STROBE_VERB
            && op.value.get("ran_ms").is_some()
            && let Some(samples) = op.value.get("offsets").and_then(Value::as_array)
        {
            let (began_s, _) = crate::report::faults::spanned(op, None);
            for sample in samples {
                if let Some(at_ms) = sample.get("at_ms").and_then(Value::as_f64)
                    && at_ms.is_finite()
                {
                    add(began_s + at_ms / 1e3, sample);
                }
            }
        }
    }
    for points in out.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Nearest-rank percentiles as stored by the session checker: p50, p90, p99, max.
pub type Quantiles = [f64; 4];

/// The session checker's stale-read quantification.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StaleReads {
    /// Ok reads measured.
    pub reads_measured: u64,
    /// Reads that missed at least one acknowledged newer version.
    pub stale_reads: u64,
    /// Versions behind over all measured reads.
    pub versions_behind: Quantiles,
    /// Milliseconds behind over all measured reads.
    pub ms_behind: Quantiles,
    /// Versions behind over stale reads only.
    pub stale_versions_behind: Quantiles,
    /// Milliseconds behind over stale reads only.
    pub stale_ms_behind: Quantiles,
}

/// Labels of [`Quantiles`] entries.
pub const QUANTILE_NAMES: [&str; 4] = ["p50", "p90", "p99", "max"];

/// The stale-read stats of `results`, if the session checker measured any reads.
pub fn stale_reads(results: &Value) -> Option<StaleReads> {
    let s = checker_details(results, "session")?.get("stale")?;
    let q = |key: &str| -> Quantiles {
        let p = s.get(key);
        QUANTILE_NAMES.map(|n| {
            p.and_then(|p| p.get(n))
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        })
    };
    let stats = StaleReads {
        reads_measured: s.get("reads_measured")?.as_u64()?,
        stale_reads: s.get("stale_reads").and_then(Value::as_u64).unwrap_or(0),
        versions_behind: q("versions_behind"),
        ms_behind: q("ms_behind"),
        stale_versions_behind: q("stale_versions_behind"),
        stale_ms_behind: q("stale_ms_behind"),
    };
    (stats.reads_measured > 0).then_some(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType};
    use serde_json::json;

    fn history() -> History {
        let mut ops = Vec::new();
        for i in 0..10u64 {
            let mut o = Op::new(OpType::Ok, Process::Client(i), "read", json!(1));
            o.time_ns = i * 100_000_000;
            ops.push(o);
        }
        let mut m = Op::new(
            OpType::Info,
            Process::Nemesis,
            CLOCK_OFFSETS_VERB,
            json!(null),
        );
        m.time_ns = 50_000_000;
        ops.push(m);
        let mut m = Op::new(
            OpType::Info,
            Process::Nemesis,
            CLOCK_OFFSETS_VERB,
            json!({"offsets_ms": {"n2": -3.5, "n1": 250.25, "n3": "bad"}}),
        );
        m.time_ns = 60_000_000;
        ops.push(m);
        ops.sort_by_key(|o| o.time_ns);
        History::from_ops(ops)
    }

    fn results() -> Value {
        json!({"valid": "invalid", "checkers": [
            {"checker": "linearizable", "verdict": "invalid", "details": {"parts": [
                {"key": "k1", "witness": {
                    "op": {"index": 3, "completion_index": 5, "process": "3", "f": "read",
                           "key": "k1", "value": 4, "invoke_time_s": 0.25,
                           "complete_time_s": 0.5},
                    "minimized": [
                        {"index": 1, "completion_index": 2, "process": "1", "f": "write",
                         "key": "k1", "value": 4, "invoke_time_s": 0.1, "complete_time_s": 0.2}
                    ]}},
                {"key": "k2", "witness": null}
            ]}},
            {"checker": "session", "verdict": "invalid", "details": {
                "guarantees": [
                    {"guarantee": "monotonic-reads", "witnesses": [
                        {"key": "k2", "process": 7, "earlier_index": 4, "later_index": 8,
                         "earlier_version": 15, "later_version": 12},
                        {"key": "k2", "process": 7, "earlier_index": 4, "later_index": 999,
                         "earlier_version": 15, "later_version": 12}
                    ]},
                    {"guarantee": "read-your-writes", "witnesses": []}
                ],
                "conflicts": [{"key": "k3", "version": 9, "first_index": 1, "later_index": 6,
                               "first_value": 1, "later_value": 2}],
                "stale": {"reads_measured": 40, "stale_reads": 7,
                          "versions_behind": {"p50": 0, "p90": 1, "p99": 3, "max": 4},
                          "ms_behind": {"p50": 0.0, "p90": 1.5, "p99": 9.25, "max": 12.0}}
            }}
        ]})
    }

    #[test]
    fn marks_come_from_every_checker_in_category_order() {
        let h = history();
        let marks = anomaly_marks(&h, &results());
        let got: Vec<(&str, f64, Option<f64>, u64, bool)> = marks
            .iter()
            .map(|m| {
                (
                    m.category.as_str(),
                    m.time_s,
                    m.from_s,
                    m.op_index,
                    m.primary,
                )
            })
            .collect();
        // Op with index i completes at i * 0.1 s; index 999 is not in the history.
        let idx_t = |i: u64| h.ops.iter().find(|o| o.index == i).unwrap().time_ns as f64 / 1e9;
        assert_eq!(
            got,
            vec![
                ("linearizable", 0.2, Some(0.1), 2, false),
                ("linearizable", 0.5, Some(0.25), 5, true),
                ("monotonic-reads", idx_t(8), Some(idx_t(4)), 8, true),
                ("version-conflict", idx_t(6), Some(idx_t(1)), 6, true),
            ]
        );
        assert_eq!(marks[1].label, "3 read k1 4");
        assert_eq!(marks[2].label, "p7 k2: version 12 after 15");
        assert_eq!(marks[3].label, "k3 version 9: 1 vs 2");
    }

    #[test]
    fn the_first_witness_is_the_earliest_of_an_invalid_checker() {
        let h = history();
        let idx_t = |i: u64| h.ops.iter().find(|o| o.index == i).unwrap().time_ns as f64 / 1e9;
        // The version conflict (at op 6) shows before the unlinearizable read (0.5 s).
        assert!(idx_t(6) < 0.5 && idx_t(8) > idx_t(6));
        let first = first_witness(&h, &results()).unwrap();
        assert_eq!(
            (first.category.as_str(), first.checker, first.op_index),
            ("version-conflict", "session", 6)
        );
        // A valid checker's marks are never the first witness; nor is a supporting op.
        let mut r = results();
        r["checkers"][1]["verdict"] = json!("valid");
        let first = first_witness(&h, &r).unwrap();
        assert_eq!(
            (first.category.as_str(), first.op_index, first.primary),
            ("linearizable", 5, true)
        );
        r["checkers"][0]["verdict"] = json!("unknown");
        assert_eq!(first_witness(&h, &r), None);
        assert_eq!(first_witness(&h, &json!({"checkers": "junk"})), None);
    }

    #[test]
    fn lost_set_elements_are_marked_at_their_acknowledgement() {
        let r = json!({"checkers": [{"checker": "set", "verdict": "invalid", "details": {
        "lost_elements": [
            {"key": "2", "element": 17, "process": 3, "invoke_index": 40,
             "invoke_ns": 1_000_000_000u64, "ack_s": 1.25},
            {"key": "2", "element": 18}
        ]}}]});
        let marks = anomaly_marks(&history(), &r);
        assert_eq!(marks.len(), 1, "a row without an ack time is skipped");
        let m = &marks[0];
        assert_eq!(
            (
                m.category.as_str(),
                m.time_s,
                m.from_s,
                m.op_index,
                m.primary
            ),
            (SET_LOST, 1.25, Some(1.0), 40, true)
        );
        assert_eq!(m.label, "p3 2: add 17 lost");
    }

    #[test]
    fn transactional_anomalies_span_their_transactions() {
        let r = json!({"checkers": [{"checker": "txn", "verdict": "invalid", "details": {
            "anomalies": [{"type": "G2-item", "ops": [4, 1], "explanation": []},
                          {"type": "G1a", "ops": [999], "explanation": []}]}}]});
        let h = history();
        let marks = anomaly_marks(&h, &r);
        assert_eq!(
            marks.len(),
            1,
            "an anomaly whose ops are not in the history is skipped"
        );
        let t = |i: u64| h.ops.iter().find(|o| o.index == i).unwrap().time_ns as f64 / 1e9;
        let m = &marks[0];
        assert_eq!(
            (m.category.as_str(), m.time_s, m.from_s, m.op_index),
            ("G2-item", t(4), Some(t(1)), 4)
        );
        assert_eq!(m.label, "G2-item: T1 T4");
    }

    #[test]
    fn lock_anomalies_span_the_overlap_and_the_stale_write() {
        let r = json!({"checkers": [
            {"checker": "mutual-exclusion", "verdict": "invalid", "details": {"anomalies": [
                {"kind": "interleaved", "lock": "l0", "window_s": [1.5, 4.25],
                 "holders": [{"process": "3"}, {"process": "7"}],
                 "ops": [{"index": 10}, {"index": 31}, {"index": 12}]},
                {"kind": "concurrent", "lock": "l1", "window_s": [2.0], "ops": [{"index": 5}]}]}},
            {"checker": "fencing", "verdict": "invalid", "details": {"anomalies": [
                {"lock": "l1", "stale": {"index": 40, "time_s": 6.5}, "stale_token": 4,
                 "after": {"index": 38, "time_s": 6.0}, "after_token": 9}]}}]});
        let marks = anomaly_marks(&history(), &r);
        assert_eq!(
            marks.len(),
            2,
            "a window without its end is skipped: {marks:?}"
        );
        let m = &marks[0];
        assert_eq!(
            (m.category.as_str(), m.time_s, m.from_s, m.op_index),
            (TWO_HOLDERS, 4.25, Some(1.5), 31)
        );
        assert_eq!(m.label, "lock l0: p3 and p7 both wrote (interleaved)");
        let m = &marks[1];
        assert_eq!(
            (m.category.as_str(), m.time_s, m.from_s, m.op_index),
            (STALE_TOKEN, 6.5, Some(6.0), 40)
        );
        assert_eq!(m.label, "lock l1: token 4 accepted after 9");
    }

    #[test]
    fn missing_or_malformed_results_give_no_marks() {
        let h = history();
        for r in [
            json!({}),
            json!({"checkers": 3}),
            json!({"checkers": [{"checker": "linearizable", "details": {"parts": [{"witness": {"op": {"index": "x"}}}]}}]}),
            json!({"checkers": [{"checker": "session", "details": {"guarantees": [{"witnesses": [{"later_index": -1}]}]}}]}),
        ] {
            assert!(anomaly_marks(&h, &r).is_empty(), "{r}");
        }
        assert!(stale_reads(&json!({})).is_none());
    }

    #[test]
    fn clock_offsets_per_node_skip_invocations_and_junk() {
        let off = clock_offsets(&history());
        assert_eq!(off.keys().collect::<Vec<_>>(), ["n1", "n2"]);
        assert_eq!(off["n1"], vec![(0.06, 250.25)]);
        assert_eq!(off["n2"], vec![(0.06, -3.5)]);
        assert!(clock_offsets(&History::default()).is_empty());
    }

    /// A database process's own clock readings are a series per node beside the node's `date`.
    #[test]
    fn clock_offsets_keep_the_database_process_readings_as_series_of_their_own() {
        let mut m = Op::new(
            OpType::Info,
            Process::Nemesis,
            CLOCK_OFFSETS_VERB,
            json!({"offsets_ms": {"n1": 7000.0, "n2": 0.5},
                   "db_offsets_ms": {"n1": 7400.0},
                   "db_errors": {"n2": "connection refused"}}),
        );
        m.time_ns = 2_000_000_000;
        let h = History {
            ops: vec![m],
            ..History::default()
        };
        let off = clock_offsets(&h);
        assert_eq!(off.keys().collect::<Vec<_>>(), ["n1", "n1 db", "n2"]);
        assert_eq!(off["n1 db"], vec![(2.0, 7400.0)]);
    }

    /// Samples a strobe took while it ran sit where they were taken: `ran_ms` before the
    /// strobe's completion plus their `at_ms`, in time order with the other measurements.
    #[test]
    fn clock_offsets_include_the_samples_taken_during_a_strobe() {
        let mut ops = history().ops;
        let nem = |t_ns: u64, f: &str, v: Value| {
            let mut o = Op::new(OpType::Info, Process::Nemesis, f, v);
            o.time_ns = t_ns;
            o
        };
        ops.push(nem(
            1_000_000_000,
            STROBE_VERB,
            json!({"offsets_every_ms": 1000}),
        ));
        ops.push(nem(
            4_000_000_000,
            STROBE_VERB,
            json!({"ran_ms": 2900.0, "offsets": [
                {"at_ms": 1000.0, "offsets_ms": {"n1": 500.0, "n2": 1.0}},
                {"at_ms": 2000.0, "offsets_ms": {"n1": -500.0}},
                {"at_ms": "x", "offsets_ms": {"n1": 7.0}}
            ]}),
        ));
        ops.push(nem(4_100_000_000, CLOCK_OFFSETS_VERB, json!(null)));
        ops.push(nem(
            4_200_000_000,
            CLOCK_OFFSETS_VERB,
            json!({"offsets_ms": {"n1": 0.5}}),
        ));
        let off = clock_offsets(&History::from_ops(ops));
        let close = |a: &[(f64, f64)], b: &[(f64, f64)]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x.0 - y.0).abs() < 1e-9 && x.1 == y.1)
        };
        let n1 = [(0.06, 250.25), (2.1, 500.0), (3.1, -500.0), (4.2, 0.5)];
        assert!(close(&off["n1"], &n1), "{:?}", off["n1"]);
        assert!(
            close(&off["n2"], &[(0.06, -3.5), (2.1, 1.0)]),
            "{:?}",
            off["n2"]
        );
    }

    #[test]
    fn density_reads_every_guarantees_timeline_and_skips_junk() {
        let r = json!({"checkers": [{"checker": "session", "details": {
            "guarantees": [
                {"guarantee": "monotonic-reads", "violations": 250, "witnesses": [],
                 "timeline": {"bucket_ms": 50, "buckets": [[0, 100], [950, 150], [1000, 0]]}},
                {"guarantee": "read-your-writes", "violations": 0,
                 "timeline": {"bucket_ms": 50, "buckets": []}},
                {"guarantee": "monotonic-writes", "timeline": {"bucket_ms": 0, "buckets": [[0, 1]]}},
                {"guarantee": "writes-follow-reads", "timeline": {"bucket_ms": 10, "buckets": [["x", 1], [20]]}}
            ],
            "conflict_timeline": {"bucket_ms": 1000, "buckets": [[2000, 3]]}}}]});
        let d = anomaly_density(&r);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].category, "monotonic-reads");
        assert_eq!((d[0].bucket_s, d[0].total), (0.05, 250));
        assert_eq!(d[0].buckets, vec![(0.0, 100), (0.95, 150)]);
        assert_eq!((d[1].category.as_str(), d[1].total), (VERSION_CONFLICT, 3));
        assert!(
            anomaly_density(&results()).is_empty(),
            "no timelines: no density"
        );
    }

    #[test]
    fn stale_reads_read_the_session_quantification() {
        let s = stale_reads(&results()).unwrap();
        assert_eq!((s.reads_measured, s.stale_reads), (40, 7));
        assert_eq!(s.versions_behind, [0.0, 1.0, 3.0, 4.0]);
        assert_eq!(s.ms_behind, [0.0, 1.5, 9.25, 12.0]);
        assert_eq!(s.stale_ms_behind, [0.0; 4], "absent → zeros");
    }
}
