//! The lock checkers: mutual exclusion (two holders of one lock writing at once) and fencing
//! (a resource accepting a write with a stale token), for the `lock` and `fenced-lock`
//! workloads (op vocabulary: `generator::lock`).
//!
//! Owns reading holder intervals from a history, the overlap and stale-token analyses, their
//! witnesses (with the faults in effect, from `faults::intervals`) and verdicts. Does not own the
//! workload, the clients or drawing (`report::page::lock`). Pure: no IO.
//!
//! **Holders.** A hold is a process's `lock-acquire` that completed `ok`. It is provably held from
//! that completion until the same process invokes `lock-release` on the lock or, when it never
//! does (its next op ended `info` and the thread moved to a new process, or the run ended), until
//! the completion of its last `ok` protected write. Protected writes are the process's `ok`
//! `lock-write` / `fenced-write` ops on that lock while the hold is open.
//!
//! **Indeterminate ops.** An acquire that ended `info` (or never completed) may or may not have
//! taken the lock. It is not a hold here: its process never issues another op (an `info` moves
//! the thread to a new process), so it has no protected writes and can never be one of the two
//! writers of an anomaly. A protected write that ended `info` may or may not have been applied:
//! it never counts as writing inside an overlap, and is not an accepted write for fencing. Only
//! what the history proves makes an anomaly.
//!
//! **Mutual exclusion** (unfenced `lock-write`s): two holds of one lock whose intervals overlap
//! are an anomaly when the history proves their critical sections were not one after the other:
//! - *concurrent*: each holder has an `ok` protected write lying wholly inside the overlap window
//!   (invoked after the window opened, completed before it closed): both acted at once while
//!   both believed they held the lock;
//! - *interleaved*: one holder's `ok` writes bracket an `ok` write of the other (a write of A
//!   completed before B's write was invoked, and another write of A was invoked after it
//!   completed): the resource saw A, B, A — what a holder that stalled past its TTL does when
//!   the next holder came and went while it slept.
//!
//! Overlaps that are neither are counted, not anomalies (e.g. the first holder had finished
//! writing when the second began).
//!
//! **Fencing** (`fenced-write`s): an `ok` fenced write invoked after another `ok` fenced write on
//! the same lock had completed with a greater token was accepted stale: an anomaly. Writes that
//! overlap in time may have been applied in either order and are never compared. A fenced write
//! refused with `stale-token` is the fence working: counted, not an anomaly. Overlapping holds
//! are reported for fenced histories too, but judged by the fence, not as anomalies.
//!
//! Verdicts: invalid with anomalies; else unknown when no acquire completed `ok` or no protected
//! write completed (`ok`, or refused as stale); else valid.

use super::{CheckResult, Verdict};
use crate::faults::intervals::{FaultInterval, fault_intervals};
use crate::generator::lock::{ACQUIRE, FENCED_WRITE, RELEASE, STALE_TOKEN, TOKEN, WRITE};
use crate::history::{History, Name, Op, OpType, Process};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// The model name `import::default_model_for` gives a lock history; `compose` then runs these
/// checkers instead of a linearizability search.
pub const MODEL: &str = crate::model::registry::LOCK;
/// Name of the mutual-exclusion checker in results.json.
pub const MUTEX_NAME: &str = "mutual-exclusion";
/// Name of the fencing checker in results.json.
pub const FENCING_NAME: &str = "fencing";
/// Witness rows kept per anomaly class (the rest are counted).
pub const WITNESS_CAP: usize = 50;
/// Holder rows kept in the details (the rest are counted).
pub const HOLDS_CAP: usize = 500;

/// One protected write of a hold.
#[derive(Debug, Clone)]
struct Write {
    invoke: usize,
    done: usize,
    invoke_ns: u64,
    done_ns: u64,
    op_type: OpType,
    fenced: bool,
    refused: bool,
    token: Option<i64>,
}

/// One hold: a process's ok acquire of a lock to its release invoke or last ok write.
#[derive(Debug, Clone)]
struct Hold {
    lock: Name,
    process: Process,
    node: Option<Name>,
    /// Index in the history of the acquire's completion.
    acquired: usize,
    start_ns: u64,
    /// Release invoke time, when the process released.
    released_ns: Option<u64>,
    token: Option<i64>,
    writes: Vec<Write>,
}

impl Hold {
    fn end_ns(&self) -> u64 {
        self.released_ns.unwrap_or_else(|| {
            self.writes
                .iter()
                .filter(|w| w.op_type == OpType::Ok)
                .map(|w| w.done_ns)
                .max()
                .unwrap_or(self.start_ns)
                .max(self.start_ns)
        })
    }

    /// Ok writes lying wholly inside `[from, to]`.
    fn ok_writes_within(&self, from_ns: u64, to_ns: u64, fenced: bool) -> Vec<&Write> {
        self.writes
            .iter()
            .filter(|w| w.op_type == OpType::Ok && w.fenced == fenced)
            .filter(|w| w.invoke_ns >= from_ns && w.done_ns <= to_ns)
            .collect()
    }
}

/// What the history says about locks.
struct Holds {
    holds: Vec<Hold>,
    /// Protected writes by a process with no open hold of that lock (ignored).
    unheld_writes: u64,
    /// Acquires that ended info or never completed.
    indeterminate_acquires: u64,
    /// Acquires that failed (held by someone else).
    failed_acquires: u64,
}

fn token_of(v: &Value) -> Option<i64> {
    v.get(TOKEN).and_then(Value::as_i64)
}

fn read_holds(history: &History) -> Result<Holds, String> {
    let pairs = history.pairs()?;
    let ops = &history.ops;
    let mut holds: Vec<Hold> = Vec::new();
    let mut open: HashMap<(Process, Name), usize> = HashMap::new();
    let mut out = Holds {
        holds: Vec::new(),
        unheld_writes: 0,
        indeterminate_acquires: 0,
        failed_acquires: 0,
    };
    for (i, op) in ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || !op.is_client() {
            continue;
        }
        let Some(lock) = op.key.clone() else {
            continue;
        };
        let done = pairs[i].map(|j| &ops[j]);
        match op.f.as_str() {
            ACQUIRE => match done {
                Some(d) if d.op_type == OpType::Ok => {
                    let hold = Hold {
                        lock: lock.clone(),
                        process: op.process,
                        node: op.node.clone(),
                        acquired: pairs[i].unwrap_or(i),
                        start_ns: d.time_ns,
                        released_ns: None,
                        token: token_of(&d.value),
                        writes: Vec::new(),
                    };
                    open.insert((op.process, lock), holds.len());
                    holds.push(hold);
                }
                Some(d) if d.op_type == OpType::Fail => out.failed_acquires += 1,
                _ => out.indeterminate_acquires += 1,
            },
            WRITE | FENCED_WRITE => {
                let Some(&h) = open.get(&(op.process, lock)) else {
                    out.unheld_writes += 1;
                    continue;
                };
                let Some(d) = done else {
                    continue;
                };
                holds[h].writes.push(Write {
                    invoke: i,
                    done: pairs[i].unwrap_or(i),
                    invoke_ns: op.time_ns,
                    done_ns: d.time_ns,
                    op_type: d.op_type,
                    fenced: op.f == FENCED_WRITE,
                    refused: d.op_type == OpType::Fail && d.error.as_deref() == Some(STALE_TOKEN),
                    token: token_of(&op.value),
                });
            }
            RELEASE => {
                if let Some(h) = open.remove(&(op.process, lock)) {
                    holds[h].released_ns = Some(op.time_ns);
                }
            }
            _ => {}
        }
    }
    out.holds = holds;
    Ok(out)
}

fn s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn op_row(op: &Op) -> Value {
    json!({
        "index": op.index,
        "process": op.process.to_string(),
        "f": op.f,
        "value": op.value,
        "type": op.op_type,
        "time_s": s(op.time_ns),
        "node": op.node,
    })
}

fn hold_row(h: &Hold) -> Value {
    json!({
        "lock": h.lock,
        "process": h.process.to_string(),
        "node": h.node,
        "token": h.token,
        "acquired_s": s(h.start_ns),
        "acquired_index": h.acquired,
        "end_s": s(h.end_ns()),
        "released": h.released_ns.is_some(),
        "writes_ok": h.writes.iter().filter(|w| w.op_type == OpType::Ok).count(),
        "writes_refused": h.writes.iter().filter(|w| w.refused).count(),
    })
}

fn faults_within(faults: &[FaultInterval], from_ns: u64, to_ns: u64) -> Vec<Value> {
    faults
        .iter()
        .filter(|f| f.start_s <= s(to_ns) && f.end_s >= s(from_ns))
        .map(
            |f| json!({ "kind": f.kind, "label": f.label, "start_s": f.start_s, "end_s": f.end_s }),
        )
        .collect()
}

/// An overlap of two holds of one lock.
struct Overlap<'a> {
    a: &'a Hold,
    b: &'a Hold,
    from_ns: u64,
    to_ns: u64,
}

fn overlaps(holds: &[Hold]) -> Vec<Overlap<'_>> {
    let mut by_lock: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for h in holds {
        by_lock.entry(h.lock.as_str()).or_default().push(h);
    }
    let mut out = Vec::new();
    for hs in by_lock.values_mut() {
        hs.sort_by_key(|h| h.start_ns);
        for (i, a) in hs.iter().enumerate() {
            let a_end = a.end_ns();
            for b in &hs[i + 1..] {
                if b.start_ns >= a_end {
                    break;
                }
                let to_ns = a_end.min(b.end_ns());
                if b.start_ns < to_ns && a.process != b.process {
                    out.push(Overlap {
                        a,
                        b,
                        from_ns: b.start_ns,
                        to_ns,
                    });
                }
            }
        }
    }
    out
}

/// Check a lock history: the mutual-exclusion result when it has unfenced protected writes (or
/// none at all), the fencing result when it has fenced ones. A malformed history (pairing error)
/// is one unknown result naming the problem.
pub fn check(history: &History) -> Vec<CheckResult> {
    let holds = match read_holds(history) {
        Ok(h) => h,
        Err(e) => {
            return vec![CheckResult {
                checker: MUTEX_NAME.into(),
                verdict: Verdict::Unknown,
                summary: format!("history not checkable: {e}"),
                details: json!({ "error": e }),
            }];
        }
    };
    let faults = fault_intervals(history);
    let any = |fenced: bool| {
        history
            .ops
            .iter()
            .any(|o| o.is_client() && o.f == if fenced { FENCED_WRITE } else { WRITE })
    };
    let (unfenced, fenced) = (any(false), any(true));
    let mut out = Vec::new();
    if unfenced || !fenced {
        out.push(mutual_exclusion(history, &holds, &faults));
    }
    if fenced {
        out.push(fencing(history, &holds, &faults));
    }
    out
}

/// The lock checkers' results as one (for `shakedown check`'s one line per file): named `lock`,
/// verdicts merged, summaries joined, each result's details under its checker name.
pub fn merged(results: Vec<CheckResult>) -> CheckResult {
    let verdict = results
        .iter()
        .fold(Verdict::Valid, |v, r| v.merge(r.verdict));
    let summary = results
        .iter()
        .map(|r| format!("{}: {}", r.checker, r.summary))
        .collect::<Vec<_>>()
        .join("; ");
    let mut details = serde_json::Map::new();
    for r in results {
        if let Some(e) = r.details.get("error") {
            details.insert("error".into(), e.clone());
        }
        details.insert(r.checker, r.details);
    }
    CheckResult {
        checker: MODEL.into(),
        verdict,
        summary,
        details: Value::Object(details),
    }
}

fn common_details(holds: &Holds) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("acquired".into(), holds.holds.len().into());
    m.insert("failed_acquires".into(), holds.failed_acquires.into());
    m.insert(
        "indeterminate_acquires".into(),
        holds.indeterminate_acquires.into(),
    );
    m.insert("unheld_writes".into(), holds.unheld_writes.into());
    m.insert(
        "holds".into(),
        holds.holds.iter().take(HOLDS_CAP).map(hold_row).collect(),
    );
    m.insert(
        "holds_left_off".into(),
        holds.holds.len().saturating_sub(HOLDS_CAP).into(),
    );
    m
}

fn undecided(holds: &Holds, writes_done: usize) -> Option<String> {
    if holds.holds.is_empty() {
        return Some("no acquire completed ok: nothing was held".into());
    }
    if writes_done == 0 {
        return Some("no protected write completed: nothing was done under the locks".into());
    }
    None
}

/// Writes of `outer` bracketing a write of `inner` (see the module doc), if any: outer's
/// first completed write before it, the inner write, outer's next write after it.
fn bracket<'a>(outer: &'a Hold, inner: &'a Hold) -> Option<Vec<&'a Write>> {
    let ok = |h: &'a Hold| {
        h.writes
            .iter()
            .filter(|w| w.op_type == OpType::Ok && !w.fenced)
    };
    ok(inner).find_map(|b| {
        let before = ok(outer).find(|a| a.done_ns < b.invoke_ns)?;
        let after = ok(outer).find(|a| a.invoke_ns > b.done_ns)?;
        Some(vec![before, b, after])
    })
}

fn mutual_exclusion(history: &History, holds: &Holds, faults: &[FaultInterval]) -> CheckResult {
    let ops = &history.ops;
    let all = overlaps(&holds.holds);
    let mut anomalies = Vec::new();
    for o in &all {
        let wa = o.a.ok_writes_within(o.from_ns, o.to_ns, false);
        let wb = o.b.ok_writes_within(o.from_ns, o.to_ns, false);
        let (kind, mut rows) = if !wa.is_empty() && !wb.is_empty() {
            (
                "concurrent",
                wa.into_iter().chain(wb).collect::<Vec<&Write>>(),
            )
        } else if let Some(rows) = bracket(o.a, o.b).or_else(|| bracket(o.b, o.a)) {
            ("interleaved", rows)
        } else {
            continue;
        };
        rows.sort_by_key(|w| w.invoke);
        anomalies.push(json!({
            "kind": kind,
            "lock": o.a.lock,
            "holders": [hold_row(o.a), hold_row(o.b)],
            "window_s": [s(o.from_ns), s(o.to_ns)],
            "ops": rows.iter().flat_map(|w| [op_row(&ops[w.invoke]), op_row(&ops[w.done])]).collect::<Vec<_>>(),
            // From the first acquire, not the overlap: a clock step (or the reset ending one)
            // while the first holder held the lock is what expired it early.
            "faults": faults_within(faults, o.a.start_ns.min(o.b.start_ns), o.to_ns),
        }));
    }
    let writes_done = holds
        .holds
        .iter()
        .flat_map(|h| &h.writes)
        .filter(|w| !w.fenced && w.op_type == OpType::Ok)
        .count();
    let n = anomalies.len();
    let (verdict, summary) = if n > 0 {
        let first = &anomalies[0];
        (
            Verdict::Invalid,
            format!(
                "{n} overlap(s) where two holders of one lock both wrote; first ({}): {} held by processes {} and {} at {:.3}–{:.3} s",
                first["kind"].as_str().unwrap_or("?"),
                first["lock"].as_str().unwrap_or("?"),
                first["holders"][0]["process"].as_str().unwrap_or("?"),
                first["holders"][1]["process"].as_str().unwrap_or("?"),
                first["window_s"][0].as_f64().unwrap_or(0.0),
                first["window_s"][1].as_f64().unwrap_or(0.0),
            ),
        )
    } else if let Some(why) = undecided(holds, writes_done) {
        (Verdict::Unknown, why)
    } else {
        (
            Verdict::Valid,
            format!(
                "{}, {}: no two holders wrote at once ({} without both writing)",
                crate::plural::counted(holds.holds.len(), "hold"),
                crate::plural::counted(writes_done, "protected write"),
                crate::plural::counted(all.len(), "overlap")
            ),
        )
    };
    let mut details = common_details(holds);
    details.insert("overlaps".into(), all.len().into());
    details.insert("two_holders".into(), n.into());
    details.insert("writes_ok".into(), writes_done.into());
    with_witnesses(MUTEX_NAME, verdict, summary, details, anomalies)
}

/// The result of checker `name`: `details` plus the first [`WITNESS_CAP`] anomalies and how
/// many were left off.
fn with_witnesses(
    name: &str,
    verdict: Verdict,
    summary: String,
    mut details: serde_json::Map<String, Value>,
    anomalies: Vec<Value>,
) -> CheckResult {
    let n = anomalies.len();
    details.insert(
        "anomalies".into(),
        anomalies.into_iter().take(WITNESS_CAP).collect(),
    );
    details.insert(
        "anomalies_left_off".into(),
        n.saturating_sub(WITNESS_CAP).into(),
    );
    CheckResult {
        checker: name.into(),
        verdict,
        summary,
        details: Value::Object(details),
    }
}

fn fencing(history: &History, holds: &Holds, faults: &[FaultInterval]) -> CheckResult {
    let ops = &history.ops;
    let mut per_lock: BTreeMap<&str, Vec<&Write>> = BTreeMap::new();
    let mut refused = 0usize;
    let mut refused_by_lock: BTreeMap<&str, usize> = BTreeMap::new();
    let mut untokened = 0usize;
    for h in &holds.holds {
        for w in h.writes.iter().filter(|w| w.fenced) {
            if w.refused {
                refused += 1;
                *refused_by_lock.entry(h.lock.as_str()).or_default() += 1;
            } else if w.op_type == OpType::Ok {
                if w.token.is_some() {
                    per_lock.entry(h.lock.as_str()).or_default().push(w);
                } else {
                    untokened += 1;
                }
            }
        }
    }
    let mut anomalies = Vec::new();
    let mut accepted = 0usize;
    for (lock, writes) in &per_lock {
        accepted += writes.len();
        // Sweep by time: for each write (by invoke), the greatest token among writes that
        // completed before it was invoked.
        let mut by_done: Vec<&&Write> = writes.iter().collect();
        by_done.sort_by_key(|w| w.done_ns);
        let mut by_invoke: Vec<&&Write> = writes.iter().collect();
        by_invoke.sort_by_key(|w| w.invoke_ns);
        let mut max: Option<&Write> = None;
        let mut k = 0;
        for w in by_invoke {
            while k < by_done.len() && by_done[k].done_ns < w.invoke_ns {
                let c = by_done[k];
                if max.is_none_or(|m| c.token > m.token) {
                    max = Some(c);
                }
                k += 1;
            }
            if let Some(m) = max
                && w.token < m.token
            {
                anomalies.push(json!({
                    "lock": lock,
                    "stale": op_row(&ops[w.done]),
                    "stale_token": w.token,
                    "after": op_row(&ops[m.done]),
                    "after_token": m.token,
                    "ops": [op_row(&ops[m.invoke]), op_row(&ops[m.done]), op_row(&ops[w.invoke]), op_row(&ops[w.done])],
                    "faults": faults_within(faults, m.invoke_ns, w.done_ns),
                }));
            }
        }
    }
    let overlapping = overlaps(&holds.holds).len();
    let n = anomalies.len();
    let (verdict, summary) = if n > 0 {
        (
            Verdict::Invalid,
            format!(
                "{n} write(s) accepted with a stale token; first on {}: token {} after token {}",
                anomalies[0]["lock"].as_str().unwrap_or("?"),
                anomalies[0]["stale_token"],
                anomalies[0]["after_token"]
            ),
        )
    } else if let Some(why) = undecided(holds, accepted + refused) {
        (Verdict::Unknown, why)
    } else {
        (
            Verdict::Valid,
            format!(
                "{accepted} fenced writes accepted in token order; {refused} stale write(s) refused (fence worked); {overlapping} overlapping holds"
            ),
        )
    };
    let mut details = common_details(holds);
    details.insert("accepted".into(), accepted.into());
    details.insert("refused_stale".into(), refused.into());
    details.insert("refused_by_lock".into(), json!(refused_by_lock));
    details.insert("accepted_without_token".into(), untokened.into());
    details.insert("overlaps".into(), overlapping.into());
    details.insert("stale_accepted".into(), n.into());
    with_witnesses(FENCING_NAME, verdict, summary, details, anomalies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::lock::VALUE;

    /// A history builder: ops get dense indices; times are in ms.
    struct H(Vec<Op>);

    impl H {
        fn new() -> H {
            H(Vec::new())
        }
        fn op(
            &mut self,
            t_ms: u64,
            ty: OpType,
            p: u64,
            f: &str,
            key: &str,
            value: Value,
        ) -> &mut H {
            let mut op = Op::new(ty, Process::Client(p), f, value);
            op.key = Some(key.into());
            op.time_ns = t_ms * 1_000_000;
            op.index = self.0.len() as u64;
            self.0.push(op);
            self
        }
        fn pair(
            &mut self,
            (t0, t1): (u64, u64),
            ty: OpType,
            p: u64,
            f: &str,
            inv: Value,
            done: Value,
        ) -> &mut H {
            self.op(t0, OpType::Invoke, p, f, "L", inv);
            self.op(t1, ty, p, f, "L", done)
        }
        fn acquire(&mut self, t0: u64, t1: u64, ty: OpType, p: u64, token: i64) -> &mut H {
            self.pair(
                (t0, t1),
                ty,
                p,
                ACQUIRE,
                json!({"ttl_ms": 100}),
                json!({ TOKEN: token }),
            )
        }
        /// A protected write of a value unique in the history.
        fn write(&mut self, t0: u64, t1: u64, ty: OpType, p: u64, f: &str, token: i64) -> &mut H {
            let val = json!({ VALUE: self.0.len(), TOKEN: token });
            self.pair((t0, t1), ty, p, f, val.clone(), val)
        }
        fn release(&mut self, t0: u64, t1: u64, p: u64) -> &mut H {
            self.pair(
                (t0, t1),
                OpType::Ok,
                p,
                RELEASE,
                json!({TOKEN: null}),
                json!({TOKEN: null}),
            )
        }
        /// A nemesis op invoked at `t0` and completed at `t1` with `value`.
        fn nemesis(&mut self, t0: u64, t1: u64, f: &str, value: Value) -> &mut H {
            for (ty, t_ms) in [(OpType::Invoke, t0), (OpType::Info, t1)] {
                let mut op = Op::new(ty, Process::Nemesis, f, value.clone());
                op.time_ns = t_ms * 1_000_000;
                op.index = self.0.len() as u64;
                self.0.push(op);
            }
            self
        }
        fn check(&self) -> Vec<CheckResult> {
            let mut ops = self.0.clone();
            ops.sort_by_key(|o| (o.time_ns, o.index));
            for (i, o) in ops.iter_mut().enumerate() {
                o.index = i as u64;
            }
            check(&History {
                ops,
                ..Default::default()
            })
        }
    }

    fn only(results: &[CheckResult], name: &str) -> CheckResult {
        results.iter().find(|r| r.checker == name).cloned().unwrap()
    }

    #[test]
    fn sequential_holders_are_valid() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 1)
            .write(2, 3, OpType::Ok, 0, WRITE, 1)
            .release(4, 5, 0)
            .acquire(3, 6, OpType::Ok, 1, 2)
            .write(7, 8, OpType::Ok, 1, WRITE, 2)
            .release(9, 10, 1);
        let r = h.check();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].verdict, Verdict::Valid, "{}", r[0].summary);
        assert_eq!(r[0].details["acquired"], 2);
    }

    #[test]
    fn two_holders_writing_inside_the_overlap_are_an_anomaly_with_witness() {
        let mut h = H::new();
        // Process 0 acquires, stalls past its TTL; process 1 acquires and writes; 0 wakes, writes.
        h.acquire(0, 1, OpType::Ok, 0, 1)
            // The stall spans its op: from 2 ms to 168 ms.
            .nemesis(2, 168, "start-stall", json!({"process": 0, "ran_ms": 166}))
            .acquire(150, 151, OpType::Ok, 1, 2)
            .write(160, 161, OpType::Ok, 1, WRITE, 2)
            .write(170, 171, OpType::Ok, 0, WRITE, 1)
            .nemesis(172, 172, "stop-stall", json!({}))
            .release(180, 181, 0)
            .release(190, 191, 1);
        let r = only(&h.check(), MUTEX_NAME);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
        let a = &r.details["anomalies"][0];
        assert_eq!(a["lock"], "L");
        assert_eq!(a["kind"], "concurrent");
        assert_eq!(a["holders"][0]["process"], "0");
        assert_eq!(a["holders"][1]["process"], "1");
        assert_eq!(a["window_s"], json!([0.151, 0.18]));
        assert_eq!(a["ops"].as_array().unwrap().len(), 4);
        assert_eq!(a["faults"][0]["kind"], "stall");
    }

    #[test]
    fn a_stalled_holder_writing_around_a_whole_other_hold_is_interleaved() {
        let mut h = H::new();
        // 0 writes, stalls; 1 acquires, writes, releases; 0 wakes and writes again.
        h.acquire(0, 1, OpType::Ok, 0, 1)
            .write(2, 3, OpType::Ok, 0, WRITE, 1)
            .acquire(150, 151, OpType::Ok, 1, 2)
            .write(160, 161, OpType::Ok, 1, WRITE, 2)
            .release(170, 171, 1)
            .write(180, 181, OpType::Ok, 0, WRITE, 1)
            .release(190, 191, 0);
        let r = only(&h.check(), MUTEX_NAME);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
        let a = &r.details["anomalies"][0];
        assert_eq!(a["kind"], "interleaved");
        let procs: Vec<&str> = a["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["type"] == "ok")
            .map(|o| o["process"].as_str().unwrap())
            .collect();
        assert_eq!(procs, ["0", "1", "0"]);
    }

    #[test]
    fn an_overlap_where_only_one_holder_wrote_is_no_anomaly() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 1)
            .write(2, 3, OpType::Ok, 0, WRITE, 1)
            .acquire(150, 151, OpType::Ok, 1, 2)
            .write(160, 161, OpType::Ok, 1, WRITE, 2)
            .release(180, 181, 0)
            .release(190, 191, 1);
        let r = only(&h.check(), MUTEX_NAME);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
        assert_eq!(r.details["overlaps"], 1);
    }

    #[test]
    fn indeterminate_acquires_and_writes_make_no_false_anomaly() {
        let mut h = H::new();
        // Process 0's acquire timed out (info): it may hold L, but never wrote as process 0.
        h.acquire(0, 50, OpType::Info, 0, 1)
            .acquire(10, 11, OpType::Ok, 1, 2)
            .write(12, 13, OpType::Ok, 1, WRITE, 2)
            // Process 1's second write is info: it may or may not have happened.
            .acquire(20, 21, OpType::Ok, 2, 3)
            .write(22, 23, OpType::Ok, 2, WRITE, 3)
            .write(24, 90, OpType::Info, 1, WRITE, 2)
            .release(95, 96, 2);
        let r = only(&h.check(), MUTEX_NAME);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
        assert_eq!(r.details["indeterminate_acquires"], 1);
    }

    #[test]
    fn no_completed_acquire_or_write_is_unknown() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Fail, 0, 0);
        assert_eq!(h.check()[0].verdict, Verdict::Unknown);
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 1).release(2, 3, 0);
        let r = h.check();
        assert_eq!(r[0].verdict, Verdict::Unknown);
        assert!(
            r[0].summary.contains("no protected write"),
            "{}",
            r[0].summary
        );
        assert_eq!(check(&History::default())[0].verdict, Verdict::Unknown);
    }

    #[test]
    fn a_refused_stale_write_is_the_fence_working() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 5)
            .acquire(150, 151, OpType::Ok, 1, 7)
            .write(160, 161, OpType::Ok, 1, FENCED_WRITE, 7)
            .op(
                170,
                OpType::Invoke,
                0,
                FENCED_WRITE,
                "L",
                json!({VALUE: 2, TOKEN: 5}),
            )
            .op(
                171,
                OpType::Fail,
                0,
                FENCED_WRITE,
                "L",
                json!({VALUE: 2, TOKEN: 5}),
            );
        h.0.last_mut().unwrap().error = Some(STALE_TOKEN.into());
        h.release(180, 181, 0).release(190, 191, 1);
        let r = h.check();
        assert_eq!(r.len(), 1, "a fenced history is judged by the fence only");
        assert_eq!(r[0].checker, FENCING_NAME);
        assert_eq!(r[0].verdict, Verdict::Valid, "{}", r[0].summary);
        assert_eq!(r[0].details["refused_stale"], 1);
        assert_eq!(r[0].details["accepted"], 1);
    }

    #[test]
    fn a_stale_token_accepted_after_a_newer_one_is_an_anomaly() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 5)
            .acquire(150, 151, OpType::Ok, 1, 7)
            .write(160, 161, OpType::Ok, 1, FENCED_WRITE, 7)
            .write(170, 171, OpType::Ok, 0, FENCED_WRITE, 5)
            .release(180, 181, 0)
            .release(190, 191, 1);
        let r = only(&h.check(), FENCING_NAME);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.summary);
        assert_eq!(r.details["anomalies"][0]["stale_token"], 5);
        assert_eq!(r.details["anomalies"][0]["after_token"], 7);
    }

    #[test]
    fn concurrent_fenced_writes_are_never_compared() {
        let mut h = H::new();
        h.acquire(0, 1, OpType::Ok, 0, 5)
            .acquire(150, 151, OpType::Ok, 1, 7)
            .write(160, 175, OpType::Ok, 1, FENCED_WRITE, 7)
            .write(170, 171, OpType::Ok, 0, FENCED_WRITE, 5)
            .release(180, 181, 0)
            .release(190, 191, 1);
        let r = only(&h.check(), FENCING_NAME);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.summary);
    }

    #[test]
    fn a_malformed_history_is_unknown_naming_the_op() {
        let mut h = H::new();
        h.op(0, OpType::Ok, 0, ACQUIRE, "L", json!({}));
        let r = h.check();
        assert_eq!(r[0].verdict, Verdict::Unknown);
        assert!(
            r[0].summary.contains("completes nothing"),
            "{}",
            r[0].summary
        );
    }
}
