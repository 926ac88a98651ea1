//! The set checker (Jepsen's `set-full` in spirit): did every acknowledged `add` survive into the
//! final read of its key, did reads show only elements someone tried to add, and when was each
//! lost element acknowledged relative to the faults.
//!
//! Owns the per-key and overall counts (attempted / acknowledged / failed / indeterminate adds),
//! the anomaly classes (lost, lost after being read, unexpected, recovered, failed-but-present,
//! stale), choosing each key's final read and the verdict; `set::details` renders the details
//! JSON, the summary and the timing of lost elements against fault intervals
//! (`faults::intervals`). Does not own the workload (`generator`) nor drawing (`report`). Pure:
//! no IO.
//!
//! Why not linearizability: a set with hundreds of elements and many indeterminate (`info`) adds
//! makes the linearizability search explode (every info add may or may not have happened at any
//! point), and its witness ("no order explains this read") does not say which write was lost.
//! The questions that matter for a set — which acknowledged adds are gone, since when, under which
//! fault — are answered directly here, in linear time.
//!
//! Ops: `add` (value: the element, an integer — or any scalar for imported histories, compared by
//! equality as `model::value` does) and `read` (ok value: an array of the key's elements, any
//! order; `null` = empty). Definitions, per key:
//! - **final read**: the last `ok` read that began after every completed add on the key had
//!   completed (ok, fail or timed out as info). A key with adds and no such read is *unknown*.
//! - **lost**: an acknowledged (ok) add absent from the final read.
//! - **lost after read**: an add that was not acknowledged but was seen by a read that completed
//!   before the final read began, and is absent from the final read.
//! - **unexpected**: an element some read returned that was never attempted on that key.
//! - **recovered**: an indeterminate (info, or never completed) add present in the final read.
//! - **failed-but-present**: an add that failed (definitely not added) and that a read returned.
//! - **stale**: an element read once and missing from a later read that began after the first
//!   read completed (counted, not a violation by itself: reads may come from lagging replicas).
//!
//! Verdict: invalid when lost, lost-after-read, unexpected or failed-but-present elements exist;
//! else unknown when a key with adds has no final read or the history has no client adds; else
//! valid.

use super::{CheckResult, Checker, Verdict};
use crate::faults::intervals::{FaultInterval, fault_intervals};
use crate::history::{History, Op, OpType};
use crate::model::value::{Scalar, Values};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Witness rows kept per anomaly class in the details (the rest are counted as left off).
pub const WITNESS_CAP: usize = 100;
/// Per-key rows kept in the details.
pub const KEY_ROWS_CAP: usize = 500;

/// The set checker; see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetChecker;

/// Name of the checker in results.json.
pub const NAME: &str = "set";

impl Checker for SetChecker {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, history: &History) -> CheckResult {
        match analyze(history) {
            Ok(a) => a.result(),
            Err(e) => CheckResult {
                checker: NAME.into(),
                verdict: Verdict::Unknown,
                summary: format!("history not checkable as a set: {e}"),
                details: json!({ "error": e }),
            },
        }
    }
}

/// How an add ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddOutcome {
    Ok,
    Fail,
    Info,
    /// No completion in the history (the controller died).
    Pending,
}

#[derive(Debug, Clone)]
struct Add {
    invoke: usize,
    completion: Option<usize>,
    outcome: AddOutcome,
}

#[derive(Debug, Clone)]
struct Read {
    invoke: usize,
    completion: usize,
    elements: Vec<Scalar>,
}

#[derive(Debug, Default)]
struct KeyData {
    adds: HashMap<Scalar, Add>,
    /// Elements added twice on the key (the workload never does; an imported history may).
    duplicate_adds: u64,
    reads: Vec<Read>,
}

/// One key's outcome.
#[derive(Debug, Clone, Default)]
struct KeyOutcome {
    key: String,
    attempted: u64,
    acknowledged: u64,
    failed: u64,
    indeterminate: u64,
    final_read: Option<usize>,
    final_size: usize,
    lost: Vec<Scalar>,
    lost_after_read: Vec<Scalar>,
    unexpected: Vec<(Scalar, usize)>,
    recovered: Vec<Scalar>,
    failed_but_present: Vec<(Scalar, usize)>,
    /// (element, read that first showed it, later read missing it)
    stale: Vec<(Scalar, usize, usize)>,
    stale_reads: u64,
    duplicate_adds: u64,
    /// The key's adds by element (for the witnesses of lost elements).
    adds: HashMap<Scalar, Add>,
    /// For lost elements some read showed: (first read, last read) showing it, by completion.
    lost_seen: HashMap<Scalar, (usize, usize)>,
}

impl KeyOutcome {
    fn verdict(&self) -> Verdict {
        if !self.lost.is_empty()
            || !self.lost_after_read.is_empty()
            || !self.unexpected.is_empty()
            || !self.failed_but_present.is_empty()
        {
            Verdict::Invalid
        } else if self.attempted > 0 && self.final_read.is_none() {
            Verdict::Unknown
        } else {
            Verdict::Valid
        }
    }
}

/// The analysis of a whole history.
#[derive(Debug)]
pub struct SetAnalysis<'h> {
    history: &'h History,
    values: Values,
    keys: Vec<KeyOutcome>,
    faults: Vec<FaultInterval>,
}

fn element(values: &Values, v: &Value, op: &Op, what: &str) -> Result<Scalar, String> {
    values.scalar(v).ok_or_else(|| {
        format!(
            "op {} (process {}, {} on key {}): {what} must be a number, string or boolean, got {v}",
            op.index,
            op.process,
            op.f,
            key_name(op)
        )
    })
}

fn key_name(op: &Op) -> String {
    op.key.clone().map(String::from).unwrap_or_default()
}

fn read_elements(values: &Values, v: &Value, op: &Op) -> Result<Vec<Scalar>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .map(|e| element(values, e, op, "a read element"))
            .collect(),
        other => Err(format!(
            "op {} (process {}, read on key {}): expected an array of elements, got {other}",
            op.index,
            op.process,
            key_name(op)
        )),
    }
}

/// Analyse `history` as a set workload. `Err` (naming the op) when the history cannot be read as
/// one: unpaired ops, functions other than add/read, elements that are not whole numbers.
pub fn analyze(history: &History) -> Result<SetAnalysis<'_>, String> {
    let pairs = history.pairs()?;
    let ops = &history.ops;
    let values = Values::new();
    let mut keys: BTreeMap<String, KeyData> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || !op.is_client() {
            continue;
        }
        let done = pairs[i].map(|j| &ops[j]);
        let data = keys.entry(key_name(op)).or_default();
        match op.f.as_str() {
            "add" => {
                let v = match (&op.value, done) {
                    (Value::Null, Some(c)) => &c.value,
                    (v, _) => v,
                };
                let e = element(&values, v, op, "the added element")?;
                let outcome = match done.map(|c| c.op_type) {
                    Some(OpType::Ok) => AddOutcome::Ok,
                    Some(OpType::Fail) => AddOutcome::Fail,
                    Some(_) => AddOutcome::Info,
                    None => AddOutcome::Pending,
                };
                let add = Add {
                    invoke: i,
                    completion: pairs[i],
                    outcome,
                };
                if data.adds.insert(e, add).is_some() {
                    data.duplicate_adds += 1;
                }
            }
            "read" => {
                if let Some(j) = pairs[i].filter(|&j| ops[j].op_type == OpType::Ok) {
                    data.reads.push(Read {
                        invoke: i,
                        completion: j,
                        elements: read_elements(&values, &ops[j].value, &ops[j])?,
                    });
                }
            }
            f => {
                return Err(format!(
                    "op {} (process {}): a set history has only add and read ops, not {f:?}",
                    op.index, op.process
                ));
            }
        }
    }
    let keys = keys.into_iter().map(|(k, d)| key_outcome(k, d)).collect();
    Ok(SetAnalysis {
        history,
        values,
        keys,
        faults: fault_intervals(history),
    })
}

fn key_outcome(key: String, d: KeyData) -> KeyOutcome {
    // Real-time order is history order (events are recorded as they happen; imported histories
    // may have no times at all), so "began after X completed" compares positions.
    let t = |i: usize| i as u64;
    let mut o = KeyOutcome {
        key,
        duplicate_adds: d.duplicate_adds,
        ..KeyOutcome::default()
    };
    for a in d.adds.values() {
        o.attempted += 1;
        match a.outcome {
            AddOutcome::Ok => o.acknowledged += 1,
            AddOutcome::Fail => o.failed += 1,
            AddOutcome::Info | AddOutcome::Pending => o.indeterminate += 1,
        }
    }
    // Every completed add is over by then; a never-completed add bounds nothing (it may land at
    // any time, which only matters for `recovered`).
    let adds_over_at = d
        .adds
        .values()
        .filter_map(|a| a.completion.map(t))
        .max()
        .unwrap_or(0);
    let final_read = d
        .reads
        .iter()
        .filter(|r| t(r.invoke) > adds_over_at || d.adds.is_empty())
        .max_by_key(|r| r.invoke);
    // Unexpected and failed-but-present: any read.
    let mut seen_unexpected = HashSet::new();
    let mut seen_failed = HashSet::new();
    // When each element was first seen by a completed read (completion position, read).
    let mut first_seen: HashMap<Scalar, (u64, usize)> = HashMap::new();
    // The last read (by completion) that showed each element: when it was last seen.
    let mut last_seen: HashMap<Scalar, usize> = HashMap::new();
    for r in &d.reads {
        for &e in &r.elements {
            match d.adds.get(&e) {
                None => {
                    if seen_unexpected.insert(e) {
                        o.unexpected.push((e, r.completion));
                    }
                }
                Some(a) if a.outcome == AddOutcome::Fail => {
                    if seen_failed.insert(e) {
                        o.failed_but_present.push((e, r.completion));
                    }
                }
                Some(_) => {}
            }
            let seen = (t(r.completion), r.completion);
            first_seen
                .entry(e)
                .and_modify(|f| *f = (*f).min(seen))
                .or_insert(seen);
            last_seen
                .entry(e)
                .and_modify(|l| *l = (*l).max(r.completion))
                .or_insert(r.completion);
        }
    }
    stale(&d.reads, &first_seen, &mut o);
    if let Some(fr) = final_read {
        o.final_read = Some(fr.completion);
        o.final_size = fr.elements.len();
        let present: HashSet<Scalar> = fr.elements.iter().copied().collect();
        let fr_begin = t(fr.invoke);
        for (&e, a) in &d.adds {
            let here = present.contains(&e);
            match a.outcome {
                AddOutcome::Ok if !here => o.lost.push(e),
                AddOutcome::Info | AddOutcome::Pending if here => o.recovered.push(e),
                AddOutcome::Info | AddOutcome::Pending
                    if first_seen.get(&e).is_some_and(|&(s, _)| s < fr_begin) =>
                {
                    o.lost_after_read.push(e)
                }
                _ => {}
            }
        }
    }
    let by_add = |e: &Scalar| d.adds.get(e).map_or(usize::MAX, |a| a.invoke);
    o.lost.sort_by_key(by_add);
    o.lost_after_read.sort_by_key(by_add);
    o.recovered.sort_by_key(by_add);
    for e in o.lost.iter().chain(&o.lost_after_read) {
        if let (Some(&(_, first)), Some(&last)) = (first_seen.get(e), last_seen.get(e)) {
            o.lost_seen.insert(*e, (first, last));
        }
    }
    o.adds = d.adds;
    o
}

/// Count elements read once and missing from a later read that began after the first one
/// completed. Linear in the total size of the reads (plus the elements of the reads that show
/// staleness, to name them).
fn stale(reads: &[Read], first_seen: &HashMap<Scalar, (u64, usize)>, o: &mut KeyOutcome) {
    let mut by_first: Vec<(u64, Scalar)> = first_seen.iter().map(|(&e, &(s, _))| (s, e)).collect();
    by_first.sort_unstable();
    let mut stale_elements = HashSet::new();
    for r in reads {
        let begin = r.invoke as u64;
        // Elements surely present by the time this read began.
        let known = by_first.partition_point(|&(s, _)| s < begin);
        let shown = r
            .elements
            .iter()
            .filter(|e| first_seen.get(e).is_some_and(|&(s, _)| s < begin))
            .count();
        if shown >= known {
            continue;
        }
        o.stale_reads += 1;
        let present: HashSet<Scalar> = r.elements.iter().copied().collect();
        for &(_, e) in &by_first[..known] {
            if !present.contains(&e) && stale_elements.insert(e) {
                o.stale.push((e, first_seen[&e].1, r.completion));
            }
        }
    }
}

mod details;
pub(crate) use details::{Timing, thousands};

#[cfg(test)]
mod tests;
