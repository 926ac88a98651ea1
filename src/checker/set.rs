//! The set checker (Jepsen's `set-full` in spirit): did every acknowledged `add` survive into the
//! final read of its key, did reads show only elements someone tried to add, and when was each
//! lost element acknowledged relative to the faults.
//!
//! Owns the per-key and overall counts (attempted / acknowledged / failed / indeterminate adds),
//! the anomaly classes (lost, lost after being read, unexpected, recovered, failed-but-present,
//! stale), choosing each key's final read, the timing of lost elements against fault intervals
//! (`faults::intervals`), the verdict and its details JSON. Does not own the workload (`generator`)
//! nor drawing (`report`). Pure: no IO.
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
    op.key.clone().unwrap_or_default()
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

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn fmt_s(s: f64) -> String {
    format!("{s:.1} s")
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A lost element timed against the faults.
#[derive(Debug, Clone)]
struct Timing {
    active: Vec<String>,
    /// (label, seconds from the ack to the fault's start) of the nearest fault start before.
    before: Option<(String, f64)>,
    /// Likewise, the nearest fault start after the ack.
    after: Option<(String, f64)>,
}

impl Timing {
    fn of(faults: &[FaultInterval], at_s: f64) -> Timing {
        let active = faults
            .iter()
            .filter(|f| f.start_s <= at_s && at_s <= f.end_s)
            .map(|f| f.label.clone())
            .collect();
        let before = faults
            .iter()
            .filter(|f| f.start_s <= at_s)
            .max_by(|a, b| a.start_s.total_cmp(&b.start_s))
            .map(|f| (f.label.clone(), at_s - f.start_s));
        let after = faults
            .iter()
            .filter(|f| f.start_s > at_s)
            .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
            .map(|f| (f.label.clone(), f.start_s - at_s));
        Timing {
            active,
            before,
            after,
        }
    }

    /// "acknowledged 1.2 s before partition n1 | n2 n3 began; during kill n2".
    fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some((label, gap)) = &self.after {
            parts.push(format!("{} before {label} began", fmt_s(*gap)));
        }
        // The last fault before only when nothing came after and none is active: otherwise
        // the next fault and the active ones say more.
        if let (None, true, Some((label, gap))) =
            (&self.after, self.active.is_empty(), &self.before)
        {
            parts.push(format!("{} after {label} began", fmt_s(*gap)));
        }
        if !self.active.is_empty() {
            parts.push(format!("during {}", self.active.join(", ")));
        }
        if parts.is_empty() {
            "acknowledged with no fault in the run".to_string()
        } else {
            format!("acknowledged {}", parts.join("; "))
        }
    }
}

impl SetAnalysis<'_> {
    fn op(&self, i: usize) -> &Op {
        &self.history.ops[i]
    }

    /// An element as JSON: integers as numbers, other values as they were written.
    fn elem(&self, e: Scalar) -> Value {
        match e {
            Scalar::Int(i) => Value::from(i),
            other => serde_json::from_str(&self.values.show(other)).unwrap_or(Value::Null),
        }
    }

    /// An element as text: `938`, `"x"`.
    fn show(&self, e: Scalar) -> String {
        self.values.show(e)
    }

    fn totals(&self) -> BTreeMap<&'static str, u64> {
        let mut t = BTreeMap::new();
        for k in std::iter::once(&KeyOutcome::default()).chain(&self.keys) {
            for (name, n) in [
                ("attempted", k.attempted),
                ("acknowledged", k.acknowledged),
                ("failed", k.failed),
                ("indeterminate", k.indeterminate),
                ("lost", k.lost.len() as u64),
                ("lost_after_read", k.lost_after_read.len() as u64),
                ("unexpected", k.unexpected.len() as u64),
                ("recovered", k.recovered.len() as u64),
                ("failed_but_present", k.failed_but_present.len() as u64),
                ("stale", k.stale.len() as u64),
                ("stale_reads", k.stale_reads),
                ("duplicate_adds", k.duplicate_adds),
            ] {
                *t.entry(name).or_insert(0) += n;
            }
        }
        t
    }

    /// The verdict: see the module doc.
    pub fn verdict(&self) -> Verdict {
        let v = self
            .keys
            .iter()
            .fold(Verdict::Valid, |v, k| v.merge(k.verdict()));
        if v == Verdict::Valid && self.totals()["attempted"] == 0 {
            Verdict::Unknown
        } else {
            v
        }
    }

    fn add_of(&self, key: &KeyOutcome, e: Scalar) -> Option<(&Op, Option<&Op>)> {
        let a = key.adds.get(&e)?;
        Some((self.op(a.invoke), a.completion.map(|j| self.op(j))))
    }

    fn lost_rows(&self) -> (Vec<Value>, usize) {
        let mut rows = Vec::new();
        let mut total = 0;
        for k in &self.keys {
            for (&e, acked) in k
                .lost
                .iter()
                .map(|e| (e, true))
                .chain(k.lost_after_read.iter().map(|e| (e, false)))
            {
                total += 1;
                if rows.len() >= WITNESS_CAP {
                    continue;
                }
                rows.push(self.lost_row(k, e, acked));
            }
        }
        {
            let kept = rows.len();
            (rows, total - kept)
        }
    }

    fn lost_row(&self, k: &KeyOutcome, e: Scalar, acked: bool) -> Value {
        let Some((inv, done)) = self.add_of(k, e) else {
            return json!({ "key": k.key, "element": self.elem(e) });
        };
        let ack_ns = done.map_or(inv.time_ns, |d| d.time_ns);
        let timing = Timing::of(&self.faults, secs(ack_ns));
        let seen = k
            .lost_seen
            .get(&e)
            .map(|&(first, last)| (secs(self.op(first).time_ns), secs(self.op(last).time_ns)));
        let seen_text = match seen {
            Some((first, last)) => {
                format!("; seen by reads from {} to {}", fmt_s(first), fmt_s(last))
            }
            None => "; never seen by a read".to_string(),
        };
        let what = if acked {
            format!(
                "add {} on key {} by process {}: ok at {}, absent from the final read; {}{seen_text}",
                self.show(e),
                k.key,
                inv.process,
                fmt_s(secs(ack_ns)),
                timing.text()
            )
        } else {
            format!(
                "add {} on key {} by process {}: {} at {}, then seen by a read, absent from the final read{seen_text}",
                self.show(e),
                k.key,
                inv.process,
                done.map_or("never completed".into(), |d| format!("{:?}", d.op_type)
                    .to_lowercase()),
                fmt_s(secs(ack_ns)),
            )
        };
        json!({
            "key": k.key,
            "element": self.elem(e),
            "acknowledged": acked,
            "process": inv.process,
            "node": inv.node,
            "invoke_index": inv.index,
            "invoke_ns": inv.time_ns,
            "complete_ns": done.map(|d| d.time_ns),
            "ack_s": secs(ack_ns),
            "first_seen_s": seen.map(|s| s.0),
            "last_seen_s": seen.map(|s| s.1),
            "faults_active": timing.active,
            "fault_before": timing.before.as_ref().map(|(l, g)| json!({"fault": l, "ack_after_start_s": g})),
            "fault_after": timing.after.as_ref().map(|(l, g)| json!({"fault": l, "ack_before_start_s": g})),
            "witness": what,
        })
    }

    fn element_rows(
        &self,
        pick: impl Fn(&KeyOutcome) -> Vec<(Scalar, usize)>,
        what: &str,
    ) -> (Vec<Value>, usize) {
        let mut rows = Vec::new();
        let mut total = 0;
        for k in &self.keys {
            for (e, read) in pick(k) {
                total += 1;
                if rows.len() >= WITNESS_CAP {
                    continue;
                }
                let r = self.op(read);
                rows.push(json!({
                    "key": k.key,
                    "element": self.elem(e),
                    "read_index": r.index,
                    "read_ns": r.time_ns,
                    "process": r.process,
                    "node": r.node,
                    "witness": format!(
                        "element {} on key {}: {what} (read completed at {} by process {})",
                        self.show(e),
                        k.key, fmt_s(secs(r.time_ns)), r.process
                    ),
                }));
            }
        }
        {
            let kept = rows.len();
            (rows, total - kept)
        }
    }

    fn key_row(&self, k: &KeyOutcome) -> Value {
        json!({
            "key": k.key,
            "verdict": k.verdict(),
            "attempted": k.attempted,
            "acknowledged": k.acknowledged,
            "failed": k.failed,
            "indeterminate": k.indeterminate,
            "final_read": k.final_read.map(|i| {
                let r = self.op(i);
                json!({ "index": r.index, "time_ns": r.time_ns, "size": k.final_size })
            }),
            "lost": k.lost.len(),
            "lost_after_read": k.lost_after_read.len(),
            "unexpected": k.unexpected.len(),
            "recovered": k.recovered.len(),
            "failed_but_present": k.failed_but_present.len(),
            "stale": k.stale.len(),
        })
    }

    /// The one-line summary, e.g. `3 of 4,210 acknowledged adds lost (key 2: 3, acknowledged
    /// 0.4–1.1 s before partition n1 | n2 n3 began)`.
    pub fn summary(&self) -> String {
        let t = self.totals();
        let unknown_keys: Vec<&str> = self
            .keys
            .iter()
            .filter(|k| k.attempted > 0 && k.final_read.is_none())
            .map(|k| k.key.as_str())
            .collect();
        if t["attempted"] == 0 {
            return "no client adds in the history: nothing to check".into();
        }
        let mut s = format!(
            "{} of {} acknowledged adds lost",
            thousands(t["lost"]),
            thousands(t["acknowledged"])
        );
        if t["lost"] > 0 {
            s.push_str(&format!(" ({})", self.lost_where()));
        }
        for (name, words) in [
            ("lost_after_read", "read then lost"),
            ("unexpected", "unexpected"),
            ("failed_but_present", "failed but present"),
            ("recovered", "recovered (indeterminate adds present)"),
            ("stale", "stale (read, then missing from a later read)"),
        ] {
            if t[name] > 0 {
                s.push_str(&format!("; {} {words}", thousands(t[name])));
            }
        }
        if !unknown_keys.is_empty() {
            s.push_str(&format!(
                "; {} key(s) without a final read ({}): unknown",
                unknown_keys.len(),
                preview(&unknown_keys)
            ));
        }
        s
    }

    /// "key 2: 3, key 5: 1, acknowledged 0.4–1.1 s before partition … began".
    fn lost_where(&self) -> String {
        let per_key: Vec<String> = self
            .keys
            .iter()
            .filter(|k| !k.lost.is_empty())
            .map(|k| format!("key {}: {}", k.key, k.lost.len()))
            .collect();
        let mut parts = vec![preview(&per_key)];
        // Group lost acks by the fault they came during or before: (lo gap, hi gap, count).
        let mut by_fault: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
        for k in &self.keys {
            for &e in &k.lost {
                let Some((inv, done)) = self.add_of(k, e) else {
                    continue;
                };
                let ack = secs(done.map_or(inv.time_ns, |d| d.time_ns));
                let tm = Timing::of(&self.faults, ack);
                let (label, gap) = match (&tm.active.first(), &tm.after) {
                    (Some(a), _) => (format!("during {a}"), f64::NAN),
                    (None, Some((l, g))) => (format!("before {l} began"), *g),
                    (None, None) if self.faults.is_empty() => continue,
                    (None, None) => ("after the last fault began".to_string(), f64::NAN),
                };
                let entry = by_fault.entry(label).or_insert((f64::INFINITY, 0.0, 0));
                entry.2 += 1;
                if gap.is_finite() {
                    entry.0 = entry.0.min(gap);
                    entry.1 = entry.1.max(gap);
                }
            }
        }
        // The groups with most lost elements first; at most three.
        let mut groups: Vec<(&String, &(f64, f64, usize))> = by_fault.iter().collect();
        groups.sort_by_key(|(_, g)| std::cmp::Reverse(g.2));
        for (label, (lo, hi, _)) in groups.into_iter().take(3) {
            if lo.is_finite() && format!("{lo:.1}") == format!("{hi:.1}") {
                parts.push(format!("acknowledged {lo:.1} s {label}"));
            } else if lo.is_finite() {
                parts.push(format!("acknowledged {lo:.1}–{hi:.1} s {label}"));
            } else {
                parts.push(format!("acknowledged {label}"));
            }
        }
        parts.join(", ")
    }

    /// The checker result: verdict, summary and details JSON.
    pub fn result(&self) -> CheckResult {
        let t = self.totals();
        let (lost, lost_left_off) = self.lost_rows();
        let (unexpected, unexpected_left_off) = self.element_rows(
            |k| k.unexpected.clone(),
            "read but never attempted on this key",
        );
        let (failed, failed_left_off) = self.element_rows(
            |k| k.failed_but_present.clone(),
            "its add failed (definitely not added), yet a read returned it",
        );
        let (stale, stale_left_off) = self.element_rows(
            |k| {
                k.stale
                    .iter()
                    .map(|&(e, _, missing)| (e, missing))
                    .collect()
            },
            "seen by an earlier read, missing from this one",
        );
        let recovered: Vec<Value> = self
            .keys
            .iter()
            .flat_map(|k| {
                k.recovered
                    .iter()
                    .map(|&e| json!({"key": k.key, "element": self.elem(e)}))
            })
            .take(WITNESS_CAP)
            .collect();
        let unknown_keys: Vec<&str> = self
            .keys
            .iter()
            .filter(|k| k.attempted > 0 && k.final_read.is_none())
            .map(|k| k.key.as_str())
            .collect();
        let verdict = self.verdict();
        let rows: Vec<Value> = self
            .keys
            .iter()
            .take(KEY_ROWS_CAP)
            .map(|k| self.key_row(k))
            .collect();
        let mut details = json!({
            "verdict": verdict,
            "keys_total": self.keys.len(),
            "keys_unknown": unknown_keys.len(),
            "unknown_keys": unknown_keys.iter().take(WITNESS_CAP).collect::<Vec<_>>(),
            "keys": rows,
            "keys_left_off": self.keys.len().saturating_sub(KEY_ROWS_CAP),
            "lost_elements": lost,
            "lost_left_off": lost_left_off,
            "unexpected_elements": unexpected,
            "unexpected_left_off": unexpected_left_off,
            "failed_but_present_elements": failed,
            "failed_but_present_left_off": failed_left_off,
            "recovered_elements": recovered,
            "recovered_left_off": (t["recovered"] as usize).saturating_sub(WITNESS_CAP),
            "stale_elements": stale,
            "stale_left_off": stale_left_off,
        });
        if let Value::Object(m) = &mut details {
            for (name, n) in &t {
                m.insert((*name).into(), json!(n));
            }
            if verdict == Verdict::Unknown {
                let reason = if t["attempted"] == 0 {
                    "no client adds in the history".to_string()
                } else {
                    format!(
                        "{} key(s) with adds have no final read that began after their last add: {}",
                        unknown_keys.len(),
                        preview(&unknown_keys)
                    )
                };
                m.insert("unknown_reason".into(), reason.into());
            }
        }
        CheckResult {
            checker: NAME.into(),
            verdict,
            summary: self.summary(),
            details,
        }
    }
}

/// At most five items joined, with "and N more".
fn preview<S: AsRef<str>>(items: &[S]) -> String {
    let shown: Vec<&str> = items.iter().take(5).map(AsRef::as_ref).collect();
    let mut s = shown.join(", ");
    if items.len() > 5 {
        s.push_str(&format!(" and {} more", items.len() - 5));
    }
    s
}

/// Whether a history looks like a set workload's: client `add` ops and reads returning arrays.
pub fn is_set_history(history: &History) -> bool {
    let mut add = false;
    for o in history.ops.iter().filter(|o| o.is_client()) {
        match o.f.as_str() {
            "add" => add = true,
            "read" => {}
            _ => return false,
        }
    }
    add
}

#[cfg(test)]
mod tests;
