//! The log checker (Jepsen's Kafka / queue checker in spirit): did every acknowledged `send`
//! survive into the final reads of its log, do all reads and replicas agree on which value sits
//! at each offset, and do consumers move forward without skipping.
//!
//! Owns the anomaly classes below, choosing each (log, node)'s final read, the verdict, the
//! details JSON and the summary. Does not own the op vocabulary (`generator::log`, which also
//! documents the value shapes), the workload, nor drawing (`report`). Pure: no IO; linear in the
//! size of the history, apart from one sort of each log's known offsets (skips are looked up in
//! it by binary search).
//!
//! Definitions, per key (one log):
//! - **final read** of a node: the last `ok` `read` on that node that began after every completed
//!   send on the key had completed. A key with acknowledged sends and no final read on any node
//!   is *unknown*.
//! - **lost**: an acknowledged (`ok`) send whose value is absent from every final read of its key.
//! - **missing on a node** (counted, not a violation: a replica may still be catching up): an
//!   acknowledged value present in one node's final read and absent from another's.
//! - **duplicated** (counted, not a violation: at-least-once delivery allows it): a value read at
//!   more than one offset.
//! - **inconsistent offset** (split brain): two reads, or an acknowledgement and a read, show
//!   different values at one offset; both witnesses named.
//! - **acknowledged elsewhere**: a send acknowledged at offset `o` whose value was read, but never
//!   at `o`.
//! - **non-monotonic**: offsets not strictly increasing within one poll or read, or a process's
//!   poll returning an offset at or below one its previous poll of the key returned.
//! - **skipped**: an offset known to hold a value (from any read or acknowledgement) that a read
//!   passed over: between two offsets it returned, before the first offset of a whole-log read,
//!   or between a process's consecutive polls.
//! - **unexpected**: a value read that was never sent to that key.
//!
//! Verdict: invalid when lost, inconsistent, acknowledged-elsewhere, non-monotonic, skipped or
//! unexpected anomalies exist; else unknown when a key with acknowledged sends has no final read,
//! or nothing was sent; else valid.

use super::{CheckResult, Checker, Verdict};
use crate::faults::intervals::{FaultInterval, fault_intervals};
use crate::generator::log::{POLL, READ, SEND};
use crate::history::{History, Op, OpType, Process};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Name of the checker in results.json, and of the model `shakedown check --model log` names.
pub const NAME: &str = crate::model::registry::LOG;
/// Witness rows kept per anomaly class in the details (the rest are counted as left off).
pub const WITNESS_CAP: usize = 100;

/// The log checker; see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogChecker;

impl Checker for LogChecker {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, history: &History) -> CheckResult {
        match analyze(history) {
            Ok(a) => a.result(),
            Err(e) => CheckResult {
                checker: NAME.into(),
                verdict: Verdict::Unknown,
                summary: format!("history not checkable as a log: {e}"),
                details: json!({ "error": e }),
            },
        }
    }
}

/// The anomaly classes, named once (their names are the keys of the details JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Anomaly {
    /// Acknowledged, absent from every final read.
    Lost,
    /// Two witnesses disagree on the value at an offset.
    InconsistentOffset,
    /// Read, but never at the offset its send was acknowledged with.
    AckedElsewhere,
    /// Offsets going backwards within a read or across a process's polls.
    Nonmonotonic,
    /// A known offset passed over.
    Skipped,
    /// Read, never sent to the key.
    Unexpected,
    /// Read at more than one offset (allowed).
    Duplicated,
    /// Present in one node's final read, absent from another's (allowed).
    MissingOnNode,
}

impl Anomaly {
    /// Every class, in report order.
    pub const ALL: [Anomaly; 8] = [
        Anomaly::Lost,
        Anomaly::InconsistentOffset,
        Anomaly::AckedElsewhere,
        Anomaly::Nonmonotonic,
        Anomaly::Skipped,
        Anomaly::Unexpected,
        Anomaly::Duplicated,
        Anomaly::MissingOnNode,
    ];

    /// The name in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::Lost => "lost",
            Anomaly::InconsistentOffset => "inconsistent_offsets",
            Anomaly::AckedElsewhere => "acked_elsewhere",
            Anomaly::Nonmonotonic => "nonmonotonic",
            Anomaly::Skipped => "skipped",
            Anomaly::Unexpected => "unexpected",
            Anomaly::Duplicated => "duplicated",
            Anomaly::MissingOnNode => "missing_on_node",
        }
    }

    /// Whether one instance makes the history invalid.
    pub fn is_violation(self) -> bool {
        !matches!(self, Anomaly::Duplicated | Anomaly::MissingOnNode)
    }
}

/// How a send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Acknowledged at this offset.
    Ok(u64),
    Fail,
    Info,
    Pending,
}

#[derive(Debug, Clone)]
struct Send {
    invoke: usize,
    completion: Option<usize>,
    outcome: Outcome,
}

#[derive(Debug, Clone)]
struct Read {
    invoke: usize,
    completion: usize,
    poll: bool,
    pairs: Vec<(u64, i64)>,
}

/// One found anomaly: its class, the key, a sentence naming the ops, and history positions of
/// its witnesses (for the timeline and the JSON).
#[derive(Debug, Clone)]
struct Finding {
    class: Anomaly,
    key: String,
    text: String,
    /// Positions in `history.ops` of the witness ops, first the one the finding is timed at.
    ops: Vec<usize>,
}

#[derive(Debug, Default)]
struct KeyTotals {
    attempted: u64,
    acknowledged: u64,
    failed: u64,
    indeterminate: u64,
    reads: u64,
    polls: u64,
    final_nodes: Vec<String>,
    final_read_missing: bool,
}

/// The analysis of a whole history.
#[derive(Debug)]
pub struct LogAnalysis<'h> {
    history: &'h History,
    keys: BTreeMap<String, KeyTotals>,
    findings: Vec<Finding>,
    faults: Vec<FaultInterval>,
}

fn bad(op: &Op, what: &str, got: &Value) -> String {
    format!(
        "op {} (process {}, {} on key {}): {what}, got {got}",
        op.index,
        op.process,
        op.f,
        op.key.as_deref().unwrap_or("(none)")
    )
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
}

fn pair(v: &Value) -> Option<(u64, i64)> {
    match v.as_array().map(Vec::as_slice) {
        Some([o, x]) => Some((o.as_u64()?, int(x)?)),
        _ => None,
    }
}

fn pairs(op: &Op) -> Result<Vec<(u64, i64)>, String> {
    match &op.value {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .map(|p| pair(p).ok_or_else(|| bad(op, "expected [offset, value] pairs", p)))
            .collect(),
        other => Err(bad(op, "expected an array of [offset, value] pairs", other)),
    }
}

#[derive(Default)]
struct KeyData {
    sends: HashMap<i64, Send>,
    reads: Vec<Read>,
}

/// Analyse `history` as a log workload. `Err` (naming the op) when it cannot be read as one:
/// unpaired ops, functions other than send/poll/read, values of the wrong shape.
pub fn analyze(history: &History) -> Result<LogAnalysis<'_>, String> {
    let pairs_of = history.pairs()?;
    let ops = &history.ops;
    let mut data: BTreeMap<String, KeyData> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || !op.is_client() {
            continue;
        }
        let done = pairs_of[i].map(|j| &ops[j]);
        let d = data
            .entry(op.key.clone().map(String::from).unwrap_or_default())
            .or_default();
        match op.f.as_str() {
            SEND => {
                let v = int(&op.value)
                    .ok_or_else(|| bad(op, "the sent value must be an integer", &op.value))?;
                let outcome = match done {
                    Some(c) if c.op_type == OpType::Ok => {
                        let (o, x) = pair(&c.value).ok_or_else(|| {
                            bad(
                                c,
                                "an acknowledged send's value must be [offset, value]",
                                &c.value,
                            )
                        })?;
                        if x != v {
                            return Err(bad(
                                c,
                                &format!("acknowledges a value other than the {v} sent"),
                                &c.value,
                            ));
                        }
                        Outcome::Ok(o)
                    }
                    Some(c) if c.op_type == OpType::Fail => Outcome::Fail,
                    Some(_) => Outcome::Info,
                    None => Outcome::Pending,
                };
                let send = Send {
                    invoke: i,
                    completion: pairs_of[i],
                    outcome,
                };
                if d.sends.insert(v, send).is_some() {
                    return Err(bad(
                        op,
                        "each value is sent once; this one twice",
                        &op.value,
                    ));
                }
            }
            POLL | READ => {
                if let Some(c) = done.filter(|c| c.op_type == OpType::Ok) {
                    d.reads.push(Read {
                        invoke: i,
                        completion: pairs_of[i].unwrap_or(i),
                        poll: op.f == POLL,
                        pairs: pairs(c)?,
                    });
                }
            }
            f => {
                return Err(format!(
                    "op {} (process {}): a log history has only {SEND}, {POLL} and {READ} ops, not {f:?}",
                    op.index, op.process
                ));
            }
        }
    }
    let mut a = LogAnalysis {
        history,
        keys: BTreeMap::new(),
        findings: Vec::new(),
        faults: fault_intervals(history),
    };
    for (key, d) in data {
        let totals = a.check_key(&key, d);
        a.keys.insert(key, totals);
    }
    Ok(a)
}

/// Who showed a value at an offset: a read (its completion) or an acknowledgement.
#[derive(Debug, Clone, Copy)]
struct Witness {
    value: i64,
    op: usize,
}

impl LogAnalysis<'_> {
    fn op(&self, i: usize) -> &Op {
        &self.history.ops[i]
    }

    fn who(&self, i: usize) -> String {
        let o = self.op(i);
        let what = if o.f == SEND {
            "the ack of send"
        } else {
            o.f.as_str()
        };
        format!(
            "{what} by process {} on {} at {:.3} s",
            o.process,
            o.node.as_deref().unwrap_or("?"),
            o.time_ns as f64 / 1e9
        )
    }

    fn find(&mut self, class: Anomaly, key: &str, text: String, ops: Vec<usize>) {
        self.findings.push(Finding {
            class,
            key: key.to_string(),
            text,
            ops,
        });
    }

    fn check_key(&mut self, key: &str, d: KeyData) -> KeyTotals {
        let mut t = KeyTotals::default();
        for s in d.sends.values() {
            t.attempted += 1;
            match s.outcome {
                Outcome::Ok(_) => t.acknowledged += 1,
                Outcome::Fail => t.failed += 1,
                Outcome::Info | Outcome::Pending => t.indeterminate += 1,
            }
        }
        // Offsets: acknowledgements first, then every read, in history order.
        let mut at: HashMap<u64, Witness> = HashMap::new();
        let mut flagged_offsets: HashSet<u64> = HashSet::new();
        let mut acks: Vec<(u64, i64, usize)> = d
            .sends
            .iter()
            .filter_map(|(&v, s)| match s.outcome {
                Outcome::Ok(o) => Some((o, v, s.completion.unwrap_or(s.invoke))),
                _ => None,
            })
            .collect();
        acks.sort_by_key(|&(_, _, i)| i);
        for &(o, v, i) in &acks {
            self.place(
                key,
                &mut at,
                &mut flagged_offsets,
                o,
                Witness { value: v, op: i },
            );
        }
        // Where each value was read: offsets (usually one) and the first read showing it there.
        let mut read_at: HashMap<i64, Vec<(u64, usize)>> = HashMap::new();
        let mut unexpected: HashSet<i64> = HashSet::new();
        for r in &d.reads {
            if r.poll {
                t.polls += 1;
            } else {
                t.reads += 1;
            }
            for &(o, v) in &r.pairs {
                self.place(
                    key,
                    &mut at,
                    &mut flagged_offsets,
                    o,
                    Witness {
                        value: v,
                        op: r.completion,
                    },
                );
                let offs = read_at.entry(v).or_default();
                if !offs.iter().any(|&(x, _)| x == o) {
                    offs.push((o, r.completion));
                }
                if !d.sends.contains_key(&v) && unexpected.insert(v) {
                    let text = format!(
                        "value {v} at offset {o} of log {key}: never sent to it ({})",
                        self.who(r.completion)
                    );
                    self.find(Anomaly::Unexpected, key, text, vec![r.completion]);
                }
            }
        }
        let mut dup: Vec<(&i64, &Vec<(u64, usize)>)> =
            read_at.iter().filter(|(_, o)| o.len() > 1).collect();
        dup.sort_by_key(|(_, o)| o[1].1);
        for (v, offs) in dup {
            let text = format!(
                "value {v} of log {key} at offsets {} and {} ({}; {})",
                offs[0].0,
                offs[1].0,
                self.who(offs[0].1),
                self.who(offs[1].1)
            );
            self.find(Anomaly::Duplicated, key, text, vec![offs[1].1, offs[0].1]);
        }
        for &(o, v, i) in &acks {
            if let Some(offs) = read_at
                .get(&v)
                .filter(|offs| offs.iter().all(|&(x, _)| x != o))
            {
                let text = format!(
                    "value {v} of log {key}: acknowledged at offset {o}, read at offset {} and never at {o} ({}; {})",
                    offs[0].0,
                    self.who(i),
                    self.who(offs[0].1)
                );
                self.find(Anomaly::AckedElsewhere, key, text, vec![i, offs[0].1]);
            }
        }
        let mut known: Vec<u64> = at.keys().copied().collect();
        known.sort_unstable();
        self.order(key, &d.reads, &known, &at);
        self.finals(key, &d, &mut t);
        t
    }

    /// Record that `w` shows its value at `offset`; a different value already there is an
    /// inconsistent offset (reported once per offset).
    fn place(
        &mut self,
        key: &str,
        at: &mut HashMap<u64, Witness>,
        flagged: &mut HashSet<u64>,
        offset: u64,
        w: Witness,
    ) {
        let Some(first) = at.get(&offset).copied() else {
            at.insert(offset, w);
            return;
        };
        if first.value != w.value && flagged.insert(offset) {
            let text = format!(
                "offset {offset} of log {key} holds {} ({}) and {} ({})",
                first.value,
                self.who(first.op),
                w.value,
                self.who(w.op)
            );
            self.find(Anomaly::InconsistentOffset, key, text, vec![w.op, first.op]);
        }
    }

    /// Non-monotonic and skipped offsets, within each read and across each process's polls.
    fn order(&mut self, key: &str, reads: &[Read], known: &[u64], at: &HashMap<u64, Witness>) {
        // A known offset in `lo..hi`, if any.
        let known_in = |lo: u64, hi: u64| -> Option<u64> {
            let i = known.partition_point(|&o| o < lo);
            known.get(i).copied().filter(|&o| o < hi)
        };
        let mut last_poll: HashMap<Process, (u64, usize)> = HashMap::new();
        for r in reads {
            let process = self.op(r.invoke).process;
            let mut prev: Option<u64> = None;
            if !r.poll
                && let Some(&(first, _)) = r.pairs.first()
                && let Some(o) = known_in(0, first)
            {
                self.skip(key, r, o, at, format!("before its first offset {first}"));
            }
            if r.poll
                && let (Some(&(first, _)), Some(&(last, before))) =
                    (r.pairs.first(), last_poll.get(&process))
            {
                if first <= last {
                    let text = format!(
                        "{} returned offset {first} of log {key} after its previous poll returned offset {last} ({})",
                        self.who(r.completion),
                        self.who(before)
                    );
                    self.find(Anomaly::Nonmonotonic, key, text, vec![r.completion, before]);
                } else if let Some(o) = known_in(last + 1, first) {
                    self.skip(
                        key,
                        r,
                        o,
                        at,
                        format!("between offset {last} of the previous poll and {first}"),
                    );
                }
            }
            for &(o, _) in &r.pairs {
                if let Some(p) = prev {
                    if o <= p {
                        let text = format!(
                            "{} returned offset {o} of log {key} after offset {p}",
                            self.who(r.completion)
                        );
                        self.find(Anomaly::Nonmonotonic, key, text, vec![r.completion]);
                    } else if let Some(k) = known_in(p + 1, o) {
                        self.skip(key, r, k, at, format!("between offsets {p} and {o}"));
                    }
                }
                prev = Some(prev.map_or(o, |p| p.max(o)));
            }
            if r.poll
                && let Some(max) = prev
            {
                let entry = last_poll.entry(process).or_insert((max, r.completion));
                *entry = (entry.0.max(max), r.completion);
            }
        }
    }

    fn skip(
        &mut self,
        key: &str,
        r: &Read,
        offset: u64,
        at: &HashMap<u64, Witness>,
        where_: String,
    ) {
        let w = at[&offset];
        let text = format!(
            "{} skipped offset {offset} of log {key} {where_}, which holds {} ({})",
            self.who(r.completion),
            w.value,
            self.who(w.op)
        );
        self.find(Anomaly::Skipped, key, text, vec![r.completion, w.op]);
    }

    /// Each node's final read; lost values and values missing on some nodes.
    fn finals(&mut self, key: &str, d: &KeyData, t: &mut KeyTotals) {
        let sends_over_at = d.sends.values().filter_map(|s| s.completion).max();
        let mut finals: BTreeMap<String, &Read> = BTreeMap::new();
        for r in d.reads.iter().filter(|r| !r.poll) {
            if sends_over_at.is_some_and(|s| r.invoke < s) {
                continue;
            }
            let node = self
                .op(r.invoke)
                .node
                .clone()
                .map(String::from)
                .unwrap_or_default();
            finals.insert(node, r);
        }
        t.final_nodes = finals.keys().cloned().collect();
        if finals.is_empty() {
            t.final_read_missing = t.acknowledged > 0;
            return;
        }
        let present: Vec<(&String, HashSet<i64>)> = finals
            .iter()
            .map(|(n, r)| (n, r.pairs.iter().map(|&(_, v)| v).collect()))
            .collect();
        let mut acked: Vec<(&i64, &Send)> = d
            .sends
            .iter()
            .filter(|(_, s)| matches!(s.outcome, Outcome::Ok(_)))
            .collect();
        acked.sort_by_key(|(_, s)| s.invoke);
        for (&v, s) in acked {
            let missing: Vec<&str> = present
                .iter()
                .filter(|(_, p)| !p.contains(&v))
                .map(|(n, _)| n.as_str())
                .collect();
            let Outcome::Ok(o) = s.outcome else { continue };
            let ack = s.completion.unwrap_or(s.invoke);
            if missing.len() == present.len() {
                let timing = crate::checker::set::Timing::of(
                    &self.faults,
                    self.op(ack).time_ns as f64 / 1e9,
                );
                let text = format!(
                    "send {v} to log {key}: acknowledged at offset {o} ({}), absent from the final reads of {}; {}",
                    self.who(ack),
                    missing.join(", "),
                    timing.text()
                );
                self.find(Anomaly::Lost, key, text, vec![ack, s.invoke]);
            } else if !missing.is_empty() {
                let text = format!(
                    "send {v} to log {key} (offset {o}): absent from the final read of {}, present on the others",
                    missing.join(", ")
                );
                self.find(Anomaly::MissingOnNode, key, text, vec![ack]);
            }
        }
    }

    fn count(&self, class: Anomaly) -> usize {
        self.findings.iter().filter(|f| f.class == class).count()
    }

    /// The verdict: see the module doc.
    pub fn verdict(&self) -> Verdict {
        if self.findings.iter().any(|f| f.class.is_violation()) {
            Verdict::Invalid
        } else if self.keys.values().any(|k| k.final_read_missing) || self.sent() == 0 {
            Verdict::Unknown
        } else {
            Verdict::Valid
        }
    }

    fn sent(&self) -> u64 {
        self.keys.values().map(|k| k.attempted).sum()
    }

    /// The one-line summary, e.g. `3 of 4,210 acknowledged sends lost; 2 inconsistent offsets`.
    pub fn summary(&self) -> String {
        if self.sent() == 0 {
            return "no client sends in the history: nothing to check".into();
        }
        let acked: u64 = self.keys.values().map(|k| k.acknowledged).sum();
        let mut parts = vec![format!(
            "{} of {} acknowledged sends lost",
            self.count(Anomaly::Lost),
            crate::checker::set::thousands(acked)
        )];
        for c in Anomaly::ALL.into_iter().skip(1) {
            let n = self.count(c);
            if n > 0 {
                parts.push(format!("{n} {}", c.name().replace('_', " ")));
            }
        }
        let unread: Vec<&str> = self
            .keys
            .iter()
            .filter(|(_, k)| k.final_read_missing)
            .map(|(k, _)| k.as_str())
            .collect();
        if !unread.is_empty() {
            parts.push(format!("no final read of log {}", unread.join(", ")));
        }
        parts.join("; ")
    }

    fn finding_json(&self, f: &Finding) -> Value {
        let first = self.op(f.ops[0]);
        json!({
            "key": f.key,
            "time_ns": first.time_ns,
            "node": first.node,
            "process": first.process,
            "indices": f.ops.iter().map(|&i| self.op(i).index).collect::<Vec<_>>(),
            "witness": f.text,
        })
    }

    /// The checker result: verdict, summary and details (counts, per-key rows, witnesses).
    pub fn result(&self) -> CheckResult {
        let mut details = serde_json::Map::new();
        let mut counts = serde_json::Map::new();
        for c in Anomaly::ALL {
            let rows: Vec<Value> = self
                .findings
                .iter()
                .filter(|f| f.class == c)
                .take(WITNESS_CAP)
                .map(|f| self.finding_json(f))
                .collect();
            let n = self.count(c);
            counts.insert(c.name().into(), n.into());
            details.insert(
                c.name().into(),
                json!({ "count": n, "violation": c.is_violation(), "witnesses": rows, "left_off": n - rows.len() }),
            );
        }
        let keys: Vec<Value> = self
            .keys
            .iter()
            .map(|(k, t)| {
                json!({
                    "key": k, "attempted": t.attempted, "acknowledged": t.acknowledged,
                    "failed": t.failed, "indeterminate": t.indeterminate, "polls": t.polls,
                    "reads": t.reads, "final_read_nodes": t.final_nodes,
                    "final_read_missing": t.final_read_missing,
                })
            })
            .collect();
        let sum = |f: fn(&KeyTotals) -> u64| self.keys.values().map(f).sum::<u64>();
        details.insert("counts".into(), Value::Object(counts));
        details.insert("attempted".into(), sum(|k| k.attempted).into());
        details.insert("acknowledged".into(), sum(|k| k.acknowledged).into());
        details.insert("failed".into(), sum(|k| k.failed).into());
        details.insert("indeterminate".into(), sum(|k| k.indeterminate).into());
        details.insert("keys".into(), keys.into());
        CheckResult {
            checker: NAME.into(),
            verdict: self.verdict(),
            summary: self.summary(),
            details: Value::Object(details),
        }
    }
}

/// The witness lines `shakedown check` prints for a log result: up to `per_class` per class.
pub fn witness_lines(details: &Value, per_class: usize) -> Vec<String> {
    let mut out = Vec::new();
    for c in Anomaly::ALL {
        let d = &details[c.name()];
        let n = d["count"].as_u64().unwrap_or(0);
        if n == 0 {
            continue;
        }
        out.push(format!("{} ({n}):", c.name().replace('_', " ")));
        let rows = d["witnesses"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        for w in rows.iter().take(per_class) {
            out.push(format!("  {}", w["witness"].as_str().unwrap_or("")));
        }
    }
    out
}

#[cfg(test)]
mod tests;
