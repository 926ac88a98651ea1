//! The streamed linearizability check of a JSONL history: memory bounded by the keys still open,
//! not by the history's length, with the result the whole check ([`crate::checker::linear::check_history`] of the
//! history read whole) gives.
//!
//! How: the history is read op by op ([`crate::history::JsonlAhead`], blocks of lines parsed in
//! parallel, ahead of the reader); each client op goes to [`Retirement`] (every process its own
//! thread, a process not seen for [`IDLE_OPS`] ops counted as gone); the ops of each key it
//! retires are gathered into batches of about [`BATCH_OPS`] ops, and a batch is checked (every
//! key of it decided, on the search's own thread pool) on a checker thread while the reader
//! goes on, at most [`QUEUED_BATCHES`] batches waiting (the reader waits for the
//! checker past that: memory stays bounded when the search is the slower side). A checked key's
//! ops are dropped; its part summary stays (witness only for invalid keys). At the end of the
//! file the keys still open are checked, then parts are put back in order of first appearance,
//! with positions (witness ops) those of the whole history.
//!
//! What keeps it exact:
//! - A key touched again after it was handed out (a final read, a process that came back after
//!   the idle bound) is *late*. Its later ops are checked after a stand-in for the state its
//!   earlier ops' linearization ended in (a write of the register's value,
//!   [`crate::model::Model::stand_in`]) and, with the session checker, judged from what its
//!   earlier ops left ([`SessionParts::add_later`]: each session's bounds, the newest
//!   acknowledged version, the highest reported one): when both fit, the key is done and
//!   nothing more is read. Otherwise (they do not fit that one state, the model has no
//!   stand-in, a session judgement needs an earlier op, list-append versions) its first result
//!   is dropped and a second pass over the file gathers that key's ops whole, each late key
//!   checked once the pass reaches its last op. A pass holds at most [`LATE_HOLD_OPS`] ops:
//!   the keys past it wait for a third pass, and so on (memory stays bounded; the file is read
//!   once more per that many late ops).
//! - Anything the whole check would read differently ends the stream with [`Outcome::Whole`] and
//!   the reason, for the caller to check the history whole: an ill-formed pairing (the whole
//!   check's error names the lines), a completion whose key is not its invoke's, a file whose
//!   later ops change what `--model auto` picks, a malformed line.
//! - An op the model cannot read (a `cas` in a `register` history) ends the search: the rest of
//!   the file is only read for an earlier such op (each later batch holding an op before it is
//!   converted, not searched), and the stream ends with [`Outcome::Unreadable`] naming the first
//!   one at its position in the file, the whole check's error, without holding the history.
//! - Budgets: `--time-limit` bounds the time the search adds to the reading ([`Waits`]: the
//!   reader waiting for the checker, and the search after the last line; a search that keeps
//!   up with the reader overlaps it and adds nothing, as the whole check's search of a history
//!   already read is all added time); verdict-first (no `--all-keys`): once a key is invalid,
//!   keys checked after 10 times the search time that took (at least 100 ms) are left unknown,
//!   "settled", as the whole check leaves the parts it had not decided by then. Which keys
//!   those are depends on timing in both.
//!
//! Session guarantees (when the plan asks for them) go along: every batch is also folded into
//! [`SessionParts`] (`checker::session`), the result the whole check's `check_sessions` gives.
//! The version source is fixed by the ops read before the first batch and confirmed by the
//! whole file ([`SourceSniff`]; another choice → [`Outcome::Whole`]). A late key's first-pass
//! ops were folded once; its later ops are folded from its end (above) or its second-pass batch
//! counts only what happens from its first late op on (not possible with list-append versions,
//! derived from every read of a key: such a file is checked whole).
//!
//! Keys that never retire (the session workload's hot keys) are held to the end of the file, as
//! the whole check holds every key: [`Held`] says how many ops and keys were held at most, for
//! the caller to say so. Owns the pipeline and putting the parts back together; does not own
//! opening the file, choosing whether to stream, or the search (`checker::linear`). It sits
//! above `checker` and `import` (it uses both; neither uses it).

use crate::checker::Verdict;
use crate::checker::compose::{Plan, check_linear_with, linear_config, readable};
use crate::checker::linear::retire::{FastMap, Retirement, Threads};
use crate::checker::linear::{
    Cause, Decide, LinearConfig, LinearResult, PartSummary, WitnessOp, settled_reason,
};
use crate::checker::session::{SessionParts, SessionResult, SourceSniff, VersionSource};
use crate::history::{History, JsonlAhead, Name, Op, OpType, Process};
use crate::import::{InputFormat, ModelSniff, nemesis_client_ops_of};
use crate::model::StandIn;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Sender, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// A process not seen for this many client ops counts as having left its key (a crashed
/// process never comes back; the last processes of a generator just stop).
pub const IDLE_OPS: u64 = 100_000;
/// A key that looks retired is checked only after this many more client ops without one on it
/// (a process behind the others in time may still come to a key they all left).
pub const GRACE_OPS: u64 = 300_000;
/// About how many ops one batch of retired keys holds.
pub const BATCH_OPS: usize = 50_000;
/// Batches waiting for the checker before the reader waits.
pub const QUEUED_BATCHES: usize = 2;
/// About what an op held by a pass over the late keys costs, in bytes (measured: 115 read line
/// by line, 190 read in parallel blocks as the passes read).
pub const HELD_OP_BYTES: usize = 192;
/// The most ops a pass over the late keys holds without a memory budget; with one, as many as
/// it pays for ([`HELD_OP_BYTES`] each: 5.6M at the default 1 GiB). Past it, the keys taken up
/// last wait for another pass over the file.
pub const LATE_HOLD_OPS: usize = 2_000_000;
/// Past this many ops held for keys not retired, the caller is told why memory grew.
pub const HOLD_NOTE_OPS: usize = 2_000_000;

/// The linearizability models whose parts are keys that rotate, which the stream can check.
pub fn streams(model: &str) -> bool {
    matches!(model, "register" | "cas-register" | "list-append")
}

/// What to stream-check a history with.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// The whole check's plan (model, semantics, budgets, session guarantees).
    pub plan: Plan,
    /// The model was chosen by `--model auto` for this format from the file's first lines: the
    /// whole file must choose it too.
    pub auto: Option<InputFormat>,
    /// See [`IDLE_OPS`].
    pub idle_ops: u64,
    /// See [`GRACE_OPS`].
    pub grace_ops: u64,
    /// See [`BATCH_OPS`].
    pub batch_ops: usize,
    /// See [`LATE_HOLD_OPS`]; also the most later ops of late keys the first pass holds for
    /// checking them after their stand-ins.
    pub late_hold_ops: usize,
    /// The file is still being written while this is false (a run's history read as the run
    /// writes it): the reader's waits for the checker until then do not count against the
    /// time limit (a checker at a low priority falls behind a workload that takes the machine,
    /// and catches up when it ends). `None`: the file is complete.
    pub written: Option<Arc<AtomicBool>>,
}

impl StreamPlan {
    /// The defaults for `plan`.
    pub fn new(plan: Plan, auto: Option<InputFormat>) -> StreamPlan {
        let late_hold_ops = plan
            .memory_bytes
            .map_or(LATE_HOLD_OPS, |b| (b / HELD_OP_BYTES).max(1));
        StreamPlan {
            plan,
            auto,
            idle_ops: IDLE_OPS,
            grace_ops: GRACE_OPS,
            batch_ops: BATCH_OPS,
            late_hold_ops,
            written: None,
        }
    }
}

/// The most the stream held at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Ops of keys not retired (or not complete, in a pass over the late keys).
    pub ops: usize,
    /// Those keys.
    pub keys: usize,
}

impl Held {
    fn note(&mut self, ops: usize, keys: usize) {
        if ops > self.ops {
            *self = Held { ops, keys };
        }
    }
}

/// A history checked as it streamed, with what the caller reports besides the result.
#[derive(Debug, Clone)]
pub struct Streamed {
    /// The linearizability result, as the whole check gives it.
    pub result: LinearResult,
    /// The session guarantees' result, as the whole check gives it, when the plan asks for it.
    pub session: Option<SessionResult>,
    /// Ops (events) in the history.
    pub events: usize,
    /// Of them, client ops.
    pub clients: usize,
    /// The reader's warnings (a torn last line, zero padding).
    pub warnings: Vec<String>,
    /// Why the history is cut short, when it is ([`History::cut_short`]).
    pub cut_short: Option<String>,
    /// Nemesis ops carrying client functions, per function ([`crate::import::nemesis_client_ops`]).
    pub nemesis_client_ops: BTreeMap<String, usize>,
    /// The most the first pass held.
    pub held: Held,
    /// Keys touched after they looked retired.
    pub late_keys: usize,
    /// Of them, the keys whose later ops were checked after a stand-in for the state their
    /// earlier ones ended in (see [`Collector::replay`]); the others were checked again whole
    /// in more passes over the file.
    pub late_replayed: usize,
    /// The most a pass over the late keys held (zero without late keys).
    pub late_held: Held,
    /// The passes over the file the late keys took (zero without late keys; more than one when
    /// their ops were more than [`StreamPlan::late_hold_ops`]).
    pub late_passes: usize,
}

/// How a streamed check ended.
#[derive(Debug)]
pub enum Outcome {
    /// Checked; the result is the whole check's.
    Checked(Box<Streamed>),
    /// The stream cannot give the whole check's result: check the history whole. Why, in words.
    Whole(String),
    /// The model cannot read an op of the file: the reason the whole check gives, naming the
    /// file's first such op at its position in the file.
    Unreadable(String),
}

/// The op a model's conversion error names, at its position in the file: conversion errors
/// begin `op N (` with N the op's position in the history checked (`Model::convert`), and a
/// batch's history numbers its ops afresh, `orig` holding their positions in the file. `None`
/// for an error of another shape (the stream then leaves the history to the whole check).
fn op_named(reason: &str, orig: &[u64]) -> Option<(u64, String)> {
    let (num, tail) = reason.strip_prefix("op ")?.split_once(' ')?;
    let at = *orig.get(num.parse::<usize>().ok()?)?;
    tail.starts_with('(')
        .then(|| (at, format!("op {at} {tail}")))
}

/// The first process id of the stand-ins (see [`Collector::replay`]): ids no history uses,
/// a process of its own per stand-in.
const STAND_INS: u64 = u64::MAX / 2;

/// What the reader sends the checker thread.
enum Msg {
    /// Keys to check.
    Batch(Batch),
    /// Late keys' later ops, after every batch that held their earlier ones (see
    /// [`Collector::replay`]).
    Later(Vec<Op>),
    /// The first pass is over: answer with the late keys whose later ops were checked after a
    /// stand-in for their earlier ones (so that no later pass needs them).
    Replayed(Sender<HashSet<Name>>),
}

/// A batch of retired keys' ops (positions in `index`), and the pass it came from.
struct Batch {
    ops: Vec<Op>,
    pass: u8,
    /// The session guarantees' version source as the ops read so far choose it (with the
    /// session checker on).
    source: Option<VersionSource>,
    /// Second pass: per late key, the position of its first late op (its ops before it were
    /// in a first-pass batch).
    late_from: Option<Arc<HashMap<Name, u64>>>,
}

/// The checker thread's side: the parts so far and the budgets spent.
struct Collector<'a> {
    plan: &'a Plan,
    config: LinearConfig,
    /// What the search has added to the reading so far (see [`Waits`]).
    waits: &'a Waits,
    parts: Vec<(u8, PartSummary)>,
    search: Duration,
    witness: Duration,
    /// The first invalid key, when it was found (search time), the budget the others got.
    first_invalid: Option<(Option<String>, Duration, Option<Duration>)>,
    settled_at: Option<Instant>,
    error: Option<String>,
    /// The first op found that the model cannot read: its position in the file and the reason
    /// naming it there. Once set, batches are only scanned for an earlier one.
    unreadable: Option<(u64, String)>,
    /// The session guarantees so far, with the source the first batch came with.
    session: Option<SessionParts>,
    /// First-pass keys and how they ended, for checking their later ops.
    ends: HashMap<Name, KeyEnd>,
    /// Keys whose later ops were checked after their stand-in and fit it.
    replayed: HashSet<Name>,
    /// Keys whose later ops could not be checked so, or did not fit: read again whole.
    doubtful: HashSet<Name>,
}

/// How a first-pass key ended (see [`Collector::replay`]).
struct KeyEnd {
    /// Its part in [`Collector::parts`].
    part: usize,
    /// Stand-ins for states its linearizations end in (`PartSummary::ends`); empty when it
    /// was not valid or the model has none.
    ends: Vec<StandIn>,
}

impl<'a> Collector<'a> {
    fn new(plan: &'a Plan, waits: &'a Waits) -> Self {
        Collector {
            plan,
            config: linear_config(plan),
            waits,
            parts: Vec::new(),
            search: Duration::ZERO,
            witness: Duration::ZERO,
            first_invalid: None,
            settled_at: None,
            error: None,
            unreadable: None,
            session: None,
            ends: HashMap::new(),
            replayed: HashSet::new(),
            doubtful: HashSet::new(),
        }
    }

    /// The late keys whose later ops fit their stand-ins: no later pass needs them.
    fn replayed(&self) -> HashSet<Name> {
        self.replayed.difference(&self.doubtful).cloned().collect()
    }

    /// The batch's keys' session guarantees: a first-pass key whole (as far as the first pass
    /// took it), a late key from its first late op on (the rest of it, checked whole).
    fn check_sessions(&mut self, batch: &Batch) {
        let (Some(config), Some(source)) = (&self.plan.session, batch.source) else {
            return;
        };
        let parts = self.session.get_or_insert_with(|| {
            let mut parts = SessionParts::new(config.clone(), source);
            parts.keep_ends();
            parts
        });
        let Some(late) = &batch.late_from else {
            return parts.add(&batch.ops);
        };
        let from = |k: Option<&str>| k.and_then(|k| late.get(&Name::new(k)).copied());
        if let Err(e) = parts.add_rest(&batch.ops, &from) {
            self.error = Some(e);
        }
    }

    /// The search of a batch: every key decided, within what is left of the time limit (none
    /// once the verdict is `settled`), keeping each valid key's end state (for its later ops).
    fn search_config(&self, settled: bool) -> LinearConfig {
        let spent = self.waits.added();
        let left = self.config.time_limit.map(|t| t.saturating_sub(spent));
        LinearConfig {
            decide: Decide::AllKeys,
            time_limit: if settled { Some(Duration::ZERO) } else { left },
            keep_linearization: false,
            keep_end: true,
            ..self.config.clone()
        }
    }

    fn check(&mut self, batch: Batch) {
        if self.error.is_some() || batch.ops.is_empty() {
            return;
        }
        if self.unreadable.is_some() {
            if let Err(e) = self.scan_unreadable(batch.ops) {
                self.error = Some(e);
            }
            return;
        }
        self.check_sessions(&batch);
        if self.error.is_some() {
            return;
        }
        let ops = batch.ops;
        let first_part = self.parts.len();
        // Each key's ops are in history order, keys one after the other: a history of its own
        // (no process has two ops open), and no part depends on another's order.
        let orig: Vec<u64> = ops.iter().map(|o| o.index).collect();
        let history = History::from_ops(ops);
        let settled = self.settled_at.is_some_and(|s| Instant::now() >= s);
        let config = self.search_config(settled);
        let t0 = Instant::now();
        let mut r = match check_linear_with(&self.plan.model, &history, &self.plan.options, config)
        {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        if let Some(reason) = r.reason.take() {
            match op_named(&reason, &orig) {
                Some(found) => self.unreadable = Some(found),
                None => self.error = Some(reason),
            }
            return;
        }
        let searched_before = self.search;
        self.search += Duration::from_millis(r.verdict_time_ms).min(t0.elapsed());
        self.witness += Duration::from_millis(r.witness_time_ms);
        remap_positions(&mut r, &orig);
        for mut p in r.parts {
            if settled
                && p.verdict == Verdict::Unknown
                && let Some((key, at, budget)) = &self.first_invalid
            {
                p.unknown_cause = Some(Cause::Settled);
                p.reason = Some(settled_reason(key, *at, *budget));
            }
            if p.verdict == Verdict::Invalid && self.first_invalid.is_none() {
                let at = searched_before + Duration::from_millis(p.time_ms);
                let budget = match self.config.decide {
                    Decide::AllKeys => None,
                    Decide::Proportionate { factor, floor } => {
                        Some(at.saturating_mul(factor).max(floor))
                    }
                };
                self.settled_at = budget.map(|b| Instant::now() + b);
                self.first_invalid = Some((p.key.clone(), at, budget));
            }
            self.parts.push((batch.pass, p));
        }
        if batch.pass == 1 {
            for (i, (_, p)) in self.parts.iter_mut().enumerate().skip(first_part) {
                if let Some(k) = p.key.as_deref() {
                    let ends = std::mem::take(&mut p.ends);
                    self.ends.insert(Name::new(k), KeyEnd { part: i, ends });
                }
            }
        }
    }

    /// After an op the model cannot read: whether `ops` (a batch, or late keys' later ops) hold
    /// an earlier one, converted as the check would (no search), so that the stream names the
    /// file's first, as the whole check does. `Err`: they cannot be converted on their own (not
    /// a conversion error), with why.
    fn scan_unreadable(&mut self, ops: Vec<Op>) -> Result<(), String> {
        let Some((best, _)) = &self.unreadable else {
            return Ok(());
        };
        if ops.iter().all(|o| o.index >= *best) {
            return Ok(());
        }
        let orig: Vec<u64> = ops.iter().map(|o| o.index).collect();
        let history = History::from_ops(ops);
        let Err(reason) = readable(&self.plan.model, &history, &self.plan.options) else {
            return Ok(());
        };
        match op_named(&reason, &orig) {
            Some(found) if found.0 < *best => self.unreadable = Some(found),
            Some(_) => {}
            None => return Err(reason),
        }
        Ok(())
    }

    /// Check the later ops of keys the first pass already checked (a run's final reads, a
    /// process back after the idle bound), each key's after the stand-in for the state its
    /// earlier ops' linearization ended in. Every later op was read after the key retired, so
    /// it began after every earlier op ended: a linearization of the stand-in and the later ops
    /// (earlier pending ops the linearization left out never taking effect) is one of the whole
    /// key's, and valid there means valid. A key whose later ops do not fit (or that cannot be
    /// checked so: not valid before, no stand-in, a later op completing an earlier invoke) is
    /// *doubtful*: read again whole, as without replaying.
    fn replay(&mut self, later: Vec<Op>) {
        if self.error.is_some() {
            return;
        }
        // Only an earlier unreadable op matters now: the later ops are converted on their own
        // (their keys' earlier ops were, in their batches), else read again with them.
        if self.unreadable.is_some() {
            let keys: HashSet<Name> = later.iter().filter_map(|o| o.key.clone()).collect();
            match self.scan_unreadable(later) {
                Ok(()) => self.replayed.extend(keys),
                Err(_) => self.doubtful.extend(keys),
            }
            return;
        }
        let ends = &self.ends;
        let mut by_key: Vec<(Name, Vec<Op>)> = Vec::new();
        let mut slot: HashMap<Name, usize> = HashMap::new();
        for op in later {
            let Some(k) = op.key.clone() else { continue };
            let i = *slot.entry(k.clone()).or_insert_with(|| {
                by_key.push((k, Vec::new()));
                by_key.len() - 1
            });
            by_key[i].1.push(op);
        }
        let mut fresh = STAND_INS;
        let (mut ops, mut stand_ins) = (Vec::new(), HashMap::new());
        for (key, seg) in by_key {
            let ends = ends.get(&key).map_or(&[][..], |e| e.ends.as_slice());
            let mut open = HashSet::new();
            let completes_earlier = seg.iter().any(|o| match o.op_type {
                OpType::Invoke => !open.insert(o.process),
                _ => !open.remove(&o.process),
            });
            if ends.is_empty() || completes_earlier || self.doubtful.contains(&key) {
                self.doubtful.insert(key);
                continue;
            }
            // Several ends: one stand-in each, all concurrent and done before the later ops,
            // so that they start from whichever is linearized last: any of the ends. The
            // initial state has no op to stand beside the others: then the first end alone
            // (no op at all when it is the initial state).
            let several = ends.iter().all(|e| matches!(e, StandIn::Op { .. }));
            let ends = if several { ends } else { &ends[..1] };
            let writes: Vec<(&'static str, &serde_json::Value)> = ends
                .iter()
                .filter_map(|e| match e {
                    StandIn::Op { f, value } => Some((*f, value)),
                    StandIn::Initial => None,
                })
                .collect();
            for ty in [OpType::Invoke, OpType::Ok] {
                for (j, &(f, value)) in writes.iter().enumerate() {
                    let mut op = Op::new(ty, Process::Client(fresh + j as u64), f, value.clone());
                    op.key = Some(key.clone());
                    op.time_ns = seg[0].time_ns;
                    ops.push(op);
                }
            }
            fresh += writes.len() as u64;
            if !writes.is_empty() {
                stand_ins.insert(key.clone(), writes.len());
            }
            ops.extend(seg);
        }
        if ops.is_empty() {
            return;
        }
        let config = self.search_config(false);
        let t0 = Instant::now();
        // Positions in the file, for the session guarantees' witnesses (the history numbers
        // its ops afresh).
        let orig: Vec<u64> = ops.iter().map(|o| o.index).collect();
        let history = History::from_ops(ops);
        let r = check_linear_with(&self.plan.model, &history, &self.plan.options, config);
        let r = match r {
            Ok(r) if r.reason.is_none() => r,
            // Not checkable so: every key of it is read again.
            _ => {
                for p in history.ops.iter().filter_map(|o| o.key.clone()) {
                    self.doubtful.insert(p);
                }
                return;
            }
        };
        self.search += Duration::from_millis(r.verdict_time_ms).min(t0.elapsed());
        let ends = &mut self.ends;
        let mut fit = HashSet::new();
        for p in r.parts {
            let Some(key) = p.key.as_deref().map(Name::new) else {
                continue;
            };
            let Some(e) = ends.get_mut(&key).filter(|_| p.verdict == Verdict::Valid) else {
                self.doubtful.insert(key);
                continue;
            };
            let (_, whole) = &mut self.parts[e.part];
            // The stand-ins are ops of the part, not of the history.
            whole.op_count += p
                .op_count
                .saturating_sub(stand_ins.get(&key).copied().unwrap_or(0));
            whole.pending_count += p.pending_count;
            whole.time_ms += p.time_ms;
            whole.cache_entries = whole.cache_entries.max(p.cache_entries);
            whole.cache_bytes = whole.cache_bytes.max(p.cache_bytes);
            e.ends = p.ends;
            fit.insert(key.clone());
            self.replayed.insert(key);
        }
        let mut later = history.ops;
        for (o, &i) in later.iter_mut().zip(&orig) {
            o.index = i;
        }
        self.replay_sessions(later, &fit);
    }

    /// The session guarantees of the later ops of `fit` (keys whose later ops fit their
    /// stand-ins; `later` holds the stand-ins too, left out here), judged from what each key's
    /// earlier ops left (`SessionParts::add_later`); a key they cannot be judged from is
    /// doubtful, read again whole.
    fn replay_sessions(&mut self, later: Vec<Op>, fit: &HashSet<Name>) {
        if self.plan.session.is_none() {
            return;
        }
        let stand_in = |o: &Op| matches!(o.process, Process::Client(p) if p >= STAND_INS);
        let later: Vec<Op> = later
            .into_iter()
            .filter(|o| !stand_in(o) && o.key.as_ref().is_some_and(|k| fit.contains(k)))
            .collect();
        let Some(parts) = self.session.as_mut() else {
            self.doubtful.extend(fit.iter().cloned());
            return;
        };
        for k in parts.add_later(&later) {
            self.doubtful.insert(Name::new(&k));
        }
    }

    /// The session guarantees' result, given the source the whole file chooses and its span;
    /// `None` without the session checker.
    fn finish_sessions(
        &mut self,
        sniff: Option<&SourceSniff>,
        span_ns: u64,
    ) -> Result<Option<SessionResult>, String> {
        let (Some(config), Some(sniff)) = (&self.plan.session, sniff) else {
            return Ok(None);
        };
        let choice = sniff.choice();
        let parts = self
            .session
            .take()
            .unwrap_or_else(|| SessionParts::new(config.clone(), choice.0));
        parts.finish(choice, span_ns).map(Some)
    }

    /// The result: the parts in order of first appearance, the first pass's parts of `late`
    /// keys left out (the passes over the late keys checked them whole).
    fn finish(self, late: &HashSet<Name>) -> Result<LinearResult, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        // The shape of the whole check's result (model name, budgets) from an empty history.
        let mut base = check_linear_with(
            &self.plan.model,
            &History::default(),
            &self.plan.options,
            self.config.clone(),
        )?;
        let mut parts: Vec<PartSummary> = self
            .parts
            .into_iter()
            .filter(|(pass, p)| {
                *pass > 1
                    || p.key
                        .as_deref()
                        .is_none_or(|k| !late.contains(&Name::new(k)))
            })
            .map(|(_, p)| p)
            .collect();
        parts.sort_by_key(|p| p.first_index);
        let u = &mut base.undecided;
        for p in &parts {
            match p.unknown_cause {
                Some(Cause::Settled) => u.settled += 1,
                Some(Cause::Memory) => u.memory += 1,
                Some(Cause::TimeLimit) => u.time_limit += 1,
                Some(Cause::Other) => u.other += 1,
                None => {}
            }
        }
        u.settled_budget_ms = self
            .first_invalid
            .as_ref()
            .and_then(|(.., b)| b.map(|b| b.as_millis() as u64));
        base.verdict = parts.iter().fold(Verdict::Valid, |v, p| v.merge(p.verdict));
        base.op_count = parts.iter().map(|p| p.op_count).sum();
        base.verdict_time_ms = self.search.as_millis() as u64;
        base.witness_time_ms = self.witness.as_millis() as u64;
        base.time_ms = base.verdict_time_ms + base.witness_time_ms;
        base.first_invalid_ms = self
            .first_invalid
            .as_ref()
            .map(|(_, at, _)| at.as_millis() as u64);
        base.parts = parts;
        Ok(base)
    }
}

/// Map a result's op positions (`WitnessOp::index`, `completion_index`, a valid part's
/// linearization, a part's first op) through `orig`: the position in the checked history → the
/// position in the whole history.
pub fn remap_positions(r: &mut LinearResult, orig: &[u64]) {
    remap_positions_with(r, |i| orig.get(i as usize).copied());
}

/// Map a result's op positions (as [`remap_positions`]) through `f`; a position `f` gives
/// `None` for stays as it is.
pub fn remap_positions_with(r: &mut LinearResult, f: impl Fn(u64) -> Option<u64>) {
    let map = |i: &mut u64| {
        if let Some(o) = f(*i) {
            *i = o;
        }
    };
    let map_op = |op: &mut WitnessOp| {
        map(&mut op.index);
        if let Some(c) = op.completion_index.as_mut() {
            map(c);
        }
    };
    for part in &mut r.parts {
        map(&mut part.first_index);
        part.linearization.iter_mut().flatten().for_each(map);
        if let Some(w) = part.witness.as_mut() {
            map_op(&mut w.op);
            for s in &mut w.prefix_tail {
                map_op(&mut s.op);
            }
            for m in w.minimized.iter_mut().flatten() {
                map_op(m);
            }
        }
    }
}

/// What the first pass learned besides the batches it sent.
struct FirstPass {
    events: usize,
    clients: usize,
    warnings: Vec<String>,
    cut_short: Option<String>,
    sniff: ModelSniff,
    nemesis: BTreeMap<Name, usize>,
    held: Held,
    /// Late keys and the position of each one's last op.
    late: HashMap<Name, u64>,
    /// Late keys and the position of each one's first late op.
    late_from: HashMap<Name, u64>,
    /// The session guarantees' version source, fed every op (with the session checker on).
    source: Option<SourceSniff>,
    /// The largest op time (the whole history's span).
    span_ns: u64,
}

/// A JSONL history's ops, read in blocks parsed in parallel ahead of the caller, one at a time,
/// each with its position (`index`) in the file.
struct Positioned {
    jsonl: JsonlAhead,
    ops: std::iter::Flatten<std::vec::IntoIter<Vec<Op>>>,
    position: u64,
    /// Read filtered: the reader gives each op its position.
    filtered: bool,
}

impl Positioned {
    fn new<R: std::io::Read + Send + 'static>(reader: R, name: &str) -> Result<Self, String> {
        Ok(Positioned {
            jsonl: JsonlAhead::new(reader, name).map_err(|e| e.to_string())?,
            ops: Vec::new().into_iter().flatten(),
            position: 0,
            filtered: false,
        })
    }

    /// Only the ops of `keys` (and lines whose key cannot be told without parsing them), at
    /// their positions: a pass over a file already read whole once.
    fn of_keys<R: std::io::Read + Send + 'static>(
        reader: R,
        name: &str,
        keys: &HashSet<Name>,
    ) -> Result<Self, String> {
        let plain: HashSet<Box<[u8]>> = keys.iter().map(|k| Box::from(k.as_bytes())).collect();
        // A key JSON writes with escapes is not found as it is written: every line is parsed.
        let escaped = keys
            .iter()
            .any(|k| k.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20));
        if escaped {
            return Self::new(reader, name);
        }
        let keep: crate::history::LineFilter = Arc::new(move |line: &[u8]| {
            crate::history::plain_key(line).is_none_or(|k| plain.contains(k))
        });
        Ok(Positioned {
            jsonl: JsonlAhead::filtered(reader, name, keep).map_err(|e| e.to_string())?,
            ops: Vec::new().into_iter().flatten(),
            position: 0,
            filtered: true,
        })
    }

    fn next_op(&mut self) -> Result<Option<Op>, String> {
        loop {
            if let Some(mut op) = self.ops.next() {
                if !self.filtered {
                    op.index = self.position;
                    self.position += 1;
                }
                return Ok(Some(op));
            }
            match self.jsonl.next_ops().map_err(|e| e.to_string())? {
                Some(blocks) => self.ops = blocks.into_iter().flatten(),
                None => return Ok(None),
            }
        }
    }
}

/// Late keys' later ops held by the first pass (see [`Collector::replay`]).
#[derive(Default)]
struct Later {
    by_key: HashMap<Name, Vec<Op>>,
    /// Ops in `by_key`.
    ops: usize,
    /// Keys with more later ops than could be held: read again instead.
    dropped: HashSet<Name>,
}

impl Later {
    fn hold(&mut self, key: Name, op: Op, most: usize) {
        if self.dropped.contains(&key) {
            return;
        }
        if self.ops < most {
            self.by_key.entry(key).or_default().push(op);
            self.ops += 1;
        } else {
            self.ops -= self.by_key.remove(&key).map_or(0, |v| v.len());
            self.dropped.insert(key);
        }
    }
}

/// An open invoke: its function, key and time, for pairing its completion.
type OpenInvoke = (Name, Option<Name>, u64);

/// Why a completion cannot complete `open` (the whole check would refuse the history or read
/// it otherwise), or why an invoke cannot be made while its process has one open.
fn pairing_problem(open: &mut FastMap<Process, OpenInvoke>, op: &Op) -> Option<&'static str> {
    if op.op_type == OpType::Invoke {
        let inv = (op.f.clone(), op.key.clone(), op.time_ns);
        return open
            .insert(op.process, inv)
            .map(|_| "a process invoked an op while another of its ops was open");
    }
    match open.remove(&op.process) {
        None => Some("a completion has no open invoke"),
        Some((f, key, t)) => {
            if f != op.f || key != op.key || (t > 0 && op.time_ns > 0 && op.time_ns < t) {
                Some("a completion does not match its invoke (function, key or time)")
            } else {
                None
            }
        }
    }
}

/// What a batch carries besides its ops: the pass, the session source, late keys' first late
/// positions.
#[derive(Clone)]
struct BatchOf {
    pass: u8,
    source: Option<VersionSource>,
    late_from: Option<Arc<HashMap<Name, u64>>>,
}

/// What the search adds to the time the stream takes, for `--time-limit`: the time the reader
/// waited for the checker (a full queue, an answer) and the time since the reading ended. A
/// search that keeps up with the reader runs while the file is read and adds nothing (on a
/// shared machine its own wall time grows with the reader beside it: that is not counted);
/// nor do the reader's waits while the file is still being written ([`StreamPlan::written`]).
#[derive(Default)]
struct Waits {
    /// Nanoseconds the reader waited for the checker.
    reader_waited: AtomicU64,
    /// When the reader finished its last pass.
    read_end: OnceLock<Instant>,
    /// See [`StreamPlan::written`].
    written: Option<Arc<AtomicBool>>,
}

impl Waits {
    fn added(&self) -> Duration {
        let waited = Duration::from_nanos(self.reader_waited.load(Ordering::Relaxed));
        waited + self.read_end.get().map_or(Duration::ZERO, Instant::elapsed)
    }
}

/// The reader's end of the queue to the checker, counting the reader's waits in [`Waits`].
struct Queue<'a> {
    tx: SyncSender<Msg>,
    waits: &'a Waits,
}

impl Queue<'_> {
    fn send(&self, msg: Msg) {
        let t = Instant::now();
        // The checker only hangs up after the reader: a failed send loses nothing it needs.
        let _ = self.tx.send(msg);
        self.waited_since(t);
    }

    fn waited_since(&self, t: Instant) {
        if self
            .waits
            .written
            .as_ref()
            .is_some_and(|w| !w.load(Ordering::Acquire))
        {
            return;
        }
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.waits.reader_waited.fetch_add(ns, Ordering::Relaxed);
    }
}

fn send(tx: &Queue, batch: &mut Vec<Op>, of: BatchOf) {
    if !batch.is_empty() {
        let ops = std::mem::take(batch);
        tx.send(Msg::Batch(Batch {
            ops,
            pass: of.pass,
            source: of.source,
            late_from: of.late_from,
        }));
    }
}

fn first_pass<R: std::io::Read + Send + 'static>(
    reader: R,
    name: &str,
    sp: &StreamPlan,
    tx: &Queue,
    failed: &AtomicBool,
    observe: &mut dyn FnMut(&Op),
) -> Result<FirstPass, String> {
    let mut jsonl = Positioned::new(reader, name)?;
    let mut retire = Retirement::with(Threads::Process, Some(sp.idle_ops)).with_grace(sp.grace_ops);
    let mut open: FastMap<Process, OpenInvoke> = FastMap::default();
    let (mut keyless, mut batch) = (Vec::new(), Vec::new());
    let (mut sniff, mut nemesis) = (ModelSniff::default(), BTreeMap::new());
    let (mut events, mut clients, mut held) = (0usize, 0usize, Held::default());
    let (mut late, mut late_from): (HashMap<Name, u64>, HashMap<Name, u64>) = Default::default();
    let mut source = sp.plan.session.as_ref().map(SourceSniff::new);
    let of = |source: &Option<SourceSniff>| BatchOf {
        pass: 1,
        source: source.as_ref().map(|s| s.choice().0),
        late_from: None,
    };
    let mut span_ns = 0u64;
    // Late keys' later ops, for the checker to check after their stand-ins at the end, at most
    // `late_hold_ops` of them: a key past that is read again.
    let mut later = Later::default();
    while let Some(op) = jsonl.next_op()? {
        events += 1;
        observe(&op);
        sniff.see(&op);
        span_ns = span_ns.max(op.time_ns);
        if let Some(s) = source.as_mut() {
            s.see(&op);
        }
        if op.process == Process::Nemesis {
            *nemesis.entry(op.f.clone()).or_insert(0) += 1;
            continue;
        }
        clients += 1;
        if let Some(why) = pairing_problem(&mut open, &op) {
            return Err(why.to_string());
        }
        let Some(key) = op.key.clone() else {
            keyless.push(op);
            continue;
        };
        if retire.is_retired(&key) {
            late_from.entry(key.clone()).or_insert(op.index);
            late.insert(key.clone(), op.index);
            later.hold(key, op.clone(), sp.late_hold_ops);
        }
        for (_, ops) in retire.push(op) {
            batch.extend(ops);
        }
        held.note(
            retire.buffered_ops() + keyless.len() + later.ops,
            retire.open_keys() + usize::from(!keyless.is_empty()) + later.by_key.len(),
        );
        if batch.len() >= sp.batch_ops {
            if failed.load(Ordering::Relaxed) {
                return Err("the checker stopped".into());
            }
            send(tx, &mut batch, of(&source));
        }
    }
    let (warnings, cut_short) = jsonl.jsonl.finish().map_err(|e| e.to_string())?;
    for (_, ops) in retire.drain() {
        batch.extend(ops);
    }
    batch.extend(keyless);
    send(tx, &mut batch, of(&source));
    // After every batch that holds a late key's earlier ops.
    if later.ops > 0 {
        tx.send(Msg::Later(later.by_key.into_values().flatten().collect()));
    }
    Ok(FirstPass {
        events,
        clients,
        warnings,
        cut_short,
        sniff,
        nemesis,
        held,
        late,
        late_from,
        source,
        span_ns,
    })
}

/// What a pass over the late keys left: the most it held, and the keys it put off to another
/// pass to stay within [`StreamPlan::late_hold_ops`].
struct LatePass {
    held: Held,
    deferred: HashSet<Name>,
}

/// A second (or later) pass: every op of the late keys in `todo`, each key checked once its last
/// op is read. Holding is bounded: a key's ops are held from its first op to its last, and when
/// more than `late_hold_ops` are held, the key taken up last is dropped and put off to the next
/// pass (never the oldest one held, so every pass finishes at least one key).
fn late_pass<R: BufRead + Send + 'static>(
    reader: R,
    name: &str,
    sp: &StreamPlan,
    first: &FirstPass,
    todo: &HashSet<Name>,
    tx: &Queue,
) -> Result<LatePass, String> {
    let late = &first.late;
    let of = BatchOf {
        pass: 2,
        source: first.source.as_ref().map(|s| s.choice().0),
        late_from: Some(Arc::new(first.late_from.clone())),
    };
    let mut jsonl = Positioned::of_keys(reader, name, todo)?;
    // Held keys by when they were taken up (for putting off the newest), and their ops.
    let mut taken: BTreeMap<u64, Name> = BTreeMap::new();
    let mut hold: HashMap<Name, (u64, Vec<Op>)> = HashMap::new();
    let mut deferred: HashSet<Name> = HashSet::new();
    let (mut batch, mut held, mut holding) = (Vec::new(), Held::default(), 0usize);
    while let Some(op) = jsonl.next_op()? {
        let Some(key) = op.key.clone().filter(|_| op.is_client()) else {
            continue;
        };
        let Some(&last) = late.get(&key) else {
            continue;
        };
        if !todo.contains(&key) || deferred.contains(&key) {
            continue;
        }
        let at = op.index;
        let (_, ops) = hold.entry(key.clone()).or_insert_with(|| {
            taken.insert(at, key.clone());
            (at, Vec::new())
        });
        ops.push(op);
        holding += 1;
        while holding > sp.late_hold_ops && taken.len() > 1 {
            let Some((_, newest)) = taken.pop_last() else {
                break;
            };
            if let Some((_, ops)) = hold.remove(&newest) {
                holding -= ops.len();
            }
            deferred.insert(newest);
        }
        held.note(holding, hold.len());
        if at == last
            && let Some((since, ops)) = hold.remove(&key)
        {
            taken.remove(&since);
            holding -= ops.len();
            batch.extend(ops);
            if batch.len() >= sp.batch_ops {
                send(tx, &mut batch, of.clone());
            }
        }
    }
    for (_, (_, ops)) in hold.drain() {
        batch.extend(ops);
    }
    send(tx, &mut batch, of);
    Ok(LatePass { held, deferred })
}

/// The late keys in `todo`, checked whole in as many more passes over the file as holding at most
/// [`StreamPlan::late_hold_ops`] ops at once takes: the most one pass held, and the passes.
fn late_passes<R: BufRead + Send + 'static>(
    open: &impl Fn() -> std::io::Result<R>,
    name: &str,
    sp: &StreamPlan,
    first: &FirstPass,
    mut todo: HashSet<Name>,
    tx: &Queue,
    failed: &AtomicBool,
) -> Result<(Held, usize), String> {
    let (mut held, mut passes) = (Held::default(), 0);
    while !todo.is_empty() {
        if passes > 0 && failed.load(Ordering::Relaxed) {
            return Err("the checker stopped".into());
        }
        let reader = open().map_err(|e| format!("{name}: {e}"))?;
        let pass = late_pass(reader, name, sp, first, &todo, tx)?;
        passes += 1;
        held.note(pass.held.ops, pass.held.keys);
        if pass.deferred.len() >= todo.len() {
            return Err("a pass over the late keys finished none of them".into());
        }
        todo = pass.deferred;
    }
    Ok((held, passes))
}

/// Check the JSONL history `open()` reads (`name` in messages) as it streams (see the module
/// doc); `open` is called again for each pass over keys touched after they retired.
pub fn check_jsonl<R: BufRead + Send + 'static>(
    open: impl Fn() -> std::io::Result<R>,
    name: &str,
    sp: &StreamPlan,
) -> Outcome {
    check_jsonl_seeing(open, name, sp, &mut |_| {})
}

/// [`check_jsonl`], handing every op of the file to `observe` as the first pass reads it, in
/// history order with its position (`index`): what else the caller needs from the history
/// comes from the same read. Ops seen before the stream ended with [`Outcome::Whole`] or an
/// unreadable op are only part of the file.
pub fn check_jsonl_seeing<R: BufRead + Send + 'static>(
    open: impl Fn() -> std::io::Result<R>,
    name: &str,
    sp: &StreamPlan,
    observe: &mut dyn FnMut(&Op),
) -> Outcome {
    let failed = AtomicBool::new(false);
    let (tx, rx) = sync_channel::<Msg>(QUEUED_BATCHES);
    let waits = Waits {
        written: sp.written.clone(),
        ..Waits::default()
    };
    let tx = Queue { tx, waits: &waits };
    let (passes, collector) = std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut c = Collector::new(&sp.plan, &waits);
            for msg in rx {
                match msg {
                    Msg::Batch(batch) => c.check(batch),
                    Msg::Later(ops) => c.replay(ops),
                    Msg::Replayed(reply) => {
                        let _ = reply.send(c.replayed());
                    }
                }
                if c.error.is_some() {
                    failed.store(true, Ordering::Relaxed);
                }
            }
            c
        });
        let passes = (|| {
            let first = first_pass(
                open().map_err(|e| format!("{name}: {e}"))?,
                name,
                sp,
                &tx,
                &failed,
                observe,
            )?;
            // The late keys the checker could not confirm from their end states are read again.
            let mut todo: HashSet<Name> = first.late.keys().cloned().collect();
            let mut replayed = 0;
            if !todo.is_empty() {
                let (reply, answer) = std::sync::mpsc::channel();
                let t = Instant::now();
                tx.send(Msg::Replayed(reply));
                let confirmed = answer.recv().unwrap_or_default();
                tx.waited_since(t);
                todo.retain(|k| !confirmed.contains(k));
                replayed = first.late.len() - todo.len();
            }
            let (held, passes) = late_passes(&open, name, sp, &first, todo.clone(), &tx, &failed)?;
            Ok::<_, String>((first, (held, passes, replayed, todo)))
        })();
        let _ = waits.read_end.set(Instant::now());
        drop(tx);
        (passes, checker.join())
    });
    let Ok(mut collector) = collector else {
        return Outcome::Whole("the checker thread panicked".into());
    };
    let (first, (late_held, late_passes, late_replayed, late)) = match passes {
        Ok(p) => p,
        Err(why) => return Outcome::Whole(collector.error.unwrap_or(why)),
    };
    if let Some(format) = sp.auto {
        let model = first.sniff.model(format);
        if model != sp.plan.model {
            return Outcome::Whole(format!(
                "the whole file's ops choose model {model}, its first lines {}",
                sp.plan.model
            ));
        }
    }
    if collector.error.is_none()
        && let Some((_, reason)) = collector.unreadable.take()
    {
        return Outcome::Unreadable(reason);
    }
    let session = match collector.finish_sessions(first.source.as_ref(), first.span_ns) {
        Ok(s) => s,
        Err(why) => return Outcome::Whole(why),
    };
    let result = match collector.finish(&late) {
        Ok(r) => r,
        Err(why) => return Outcome::Whole(why),
    };
    Outcome::Checked(Box::new(Streamed {
        result,
        session,
        events: first.events,
        clients: first.clients,
        warnings: first.warnings,
        cut_short: first.cut_short,
        nemesis_client_ops: nemesis_client_ops_of(&first.nemesis, &first.sniff),
        held: first.held,
        late_keys: first.late.len(),
        late_replayed,
        late_held,
        late_passes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::linear::WitnessMode;
    use crate::checker::linear::histgen::{GenConfig, corrupt_read, generate_register_history};
    use crate::model::{ModelOptions, SemanticsPreset};

    fn plan(model: &str) -> Plan {
        Plan {
            model: model.into(),
            options: ModelOptions::preset(SemanticsPreset::Etcd),
            session: None,
            time_limit: Duration::from_secs(30),
            witness: WitnessMode::Fast,
            all_keys: true,
            memory_bytes: None,
            txn_assume: Default::default(),
            txn_ask: Default::default(),
            set_full: Default::default(),
        }
    }

    /// A small stream: tiny batches, idle bound and grace, so that a short history exercises
    /// every path.
    fn small(model: &str, auto: Option<InputFormat>) -> StreamPlan {
        StreamPlan {
            idle_ops: 50,
            grace_ops: 20,
            batch_ops: 40,
            ..StreamPlan::new(plan(model), auto)
        }
    }

    fn jsonl(h: &History) -> Vec<u8> {
        let mut out = Vec::new();
        for op in &h.ops {
            serde_json::to_writer(&mut out, op).unwrap();
            out.push(b'\n');
        }
        out
    }

    fn stream(bytes: &[u8], sp: &StreamPlan) -> Outcome {
        check_jsonl(|| Ok(std::io::Cursor::new(bytes.to_vec())), "test", sp)
    }

    fn streamed(bytes: &[u8], sp: &StreamPlan) -> Streamed {
        match stream(bytes, sp) {
            Outcome::Checked(s) => *s,
            other => panic!("not streamed: {other:?}"),
        }
    }

    fn whole(bytes: &[u8], p: &Plan) -> LinearResult {
        let h = History::read_jsonl(bytes, "test").unwrap();
        check_linear_with(&p.model, &h, &p.options, linear_config(p)).unwrap()
    }

    /// What must agree: the verdict, every part's key, verdict, counts and position, and every
    /// witness's ops (times and search statistics aside).
    fn same(a: &LinearResult, b: &LinearResult) {
        assert_eq!(a.verdict, b.verdict);
        assert_eq!(a.op_count, b.op_count);
        assert_eq!(a.model, b.model);
        assert_eq!(a.parts.len(), b.parts.len());
        for (x, y) in a.parts.iter().zip(&b.parts) {
            let shape = |p: &PartSummary| {
                (
                    p.key.clone(),
                    p.verdict,
                    p.op_count,
                    p.pending_count,
                    p.first_index,
                )
            };
            assert_eq!(shape(x), shape(y));
            let w = |p: &PartSummary| {
                p.witness.as_ref().map(|w| {
                    let ops: Vec<u64> = w.minimized.iter().flatten().map(|o| o.index).collect();
                    (w.op.clone(), w.prefix_len, w.last_state.clone(), ops)
                })
            };
            let (wx, wy) = (w(x), w(y));
            assert_eq!(wx, wy, "witness of {:?}", x.key);
        }
        assert_eq!(
            a.explain().lines().skip(1).collect::<Vec<_>>(),
            b.explain().lines().skip(1).collect::<Vec<_>>()
        );
    }

    fn rotating(seed: u64, info: f64) -> History {
        generate_register_history(&GenConfig {
            keys: 4,
            processes_per_key: 3,
            ops: 1_200,
            info_probability: info,
            seed,
            rotate_every: 25,
            ..GenConfig::default()
        })
    }

    #[test]
    fn a_streamed_check_of_rotating_keys_agrees_with_the_whole_check() {
        for seed in 0..4 {
            let h = rotating(seed, 0.05);
            assert!(
                h.ops.iter().any(|o| o.op_type == OpType::Info),
                "crashed ops"
            );
            let bytes = jsonl(&h);
            let sp = small("cas-register", None);
            let s = streamed(&bytes, &sp);
            same(&s.result, &whole(&bytes, &sp.plan));
            assert_eq!(s.result.verdict, Verdict::Valid);
            assert_eq!((s.events, s.clients), (h.ops.len(), h.ops.len()));
            // Keys rotate: the stream held a fraction of the history at most.
            assert!(
                s.held.ops < h.ops.len() / 2,
                "{:?} of {}",
                s.held,
                h.ops.len()
            );
        }
    }

    #[test]
    fn the_time_limit_counts_what_the_search_adds_to_the_reading() {
        let w = Waits::default();
        assert!(
            w.added() < Duration::from_millis(50),
            "nothing waited, still reading"
        );
        w.reader_waited.store(2_000_000_000, Ordering::Relaxed);
        assert!(
            w.added() >= Duration::from_secs(2),
            "the reader's waits count"
        );
        let _ = w.read_end.set(Instant::now() - Duration::from_secs(3));
        assert!(
            w.added() >= Duration::from_secs(5),
            "and the search after the reading"
        );
        // A file still being written: the reader's waits count only once it is complete.
        let written = Arc::new(AtomicBool::new(false));
        let w = Waits {
            written: Some(written.clone()),
            ..Waits::default()
        };
        let (tx, _rx) = sync_channel(1);
        let q = Queue { tx, waits: &w };
        q.waited_since(Instant::now() - Duration::from_secs(4));
        assert!(w.added() < Duration::from_secs(1), "not while written");
        written.store(true, Ordering::Release);
        q.waited_since(Instant::now() - Duration::from_secs(4));
        assert!(w.added() >= Duration::from_secs(4), "once complete");
    }

    #[test]
    fn an_invalid_key_gets_the_whole_checks_witness_at_the_whole_historys_positions() {
        let mut h = rotating(7, 0.02);
        let mut corrupted = 0;
        for pick in [3, 40, 90] {
            corrupted += usize::from(corrupt_read(&mut h, pick).is_some());
        }
        assert!(corrupted > 0);
        let bytes = jsonl(&h);
        let sp = small("cas-register", None);
        let s = streamed(&bytes, &sp);
        let w = whole(&bytes, &sp.plan);
        assert_eq!(w.verdict, Verdict::Invalid);
        same(&s.result, &w);
        let bad = s
            .result
            .parts
            .iter()
            .find(|p| p.verdict == Verdict::Invalid);
        let op = &bad.and_then(|p| p.witness.as_ref()).unwrap().op;
        assert_eq!(h.ops[op.index as usize].process.to_string(), op.process);
    }

    #[test]
    fn keys_that_never_retire_are_held_to_the_end_and_still_agree() {
        // Two hot keys every process keeps using: nothing retires before the end.
        let h = generate_register_history(&GenConfig {
            keys: 2,
            processes_per_key: 3,
            ops: 600,
            info_probability: 0.05,
            seed: 3,
            ..GenConfig::default()
        });
        let bytes = jsonl(&h);
        let mut sp = small("cas-register", None);
        sp.idle_ops = 1_000_000;
        let s = streamed(&bytes, &sp);
        same(&s.result, &whole(&bytes, &sp.plan));
        assert_eq!(s.held.keys, 2);
        assert!(s.held.ops >= h.ops.len() - 2, "{:?}", s.held);
    }

    #[test]
    fn keys_touched_after_they_retired_are_checked_again_whole() {
        // A run's shape: rotating keys, then one final read of every key; each reads nil, stale
        // for every key that was written.
        let mut h = rotating(5, 0.0);
        let keys: Vec<Name> = {
            let mut seen = Vec::new();
            for o in &h.ops {
                if let Some(k) = &o.key
                    && !seen.contains(k)
                {
                    seen.push(k.clone());
                }
            }
            seen
        };
        let mut t = h.ops.last().unwrap().time_ns;
        for k in &keys {
            for (ty, v) in [(OpType::Invoke, Value::Null), (OpType::Ok, Value::Null)] {
                t += 10;
                let mut op = Op::new(ty, Process::Client(1_000), "read", v);
                op.key = Some(k.clone());
                op.time_ns = t;
                h.ops.push(op);
            }
        }
        let bytes = jsonl(&History::from_ops(h.ops));
        let sp = small("cas-register", None);
        let s = streamed(&bytes, &sp);
        let w = whole(&bytes, &sp.plan);
        same(&s.result, &w);
        // Every key retired before its final read but the last few, still in their grace.
        assert!(
            s.late_keys > keys.len() / 2 && s.late_keys <= keys.len(),
            "{} of {}",
            s.late_keys,
            keys.len()
        );
        assert!(s.late_held.ops > 0);
        assert_eq!(s.late_passes, 1);
        // Holding at most 60 ops at once takes more passes: the same result.
        let bounded = StreamPlan {
            late_hold_ops: 60,
            ..sp.clone()
        };
        let b = streamed(&bytes, &bounded);
        same(&b.result, &w);
        assert_eq!(b.late_keys, s.late_keys);
        assert!(b.late_passes > 2, "{} passes", b.late_passes);
        assert!(
            b.late_held.ops <= 60 || b.late_held.keys == 1,
            "{:?}",
            b.late_held
        );
        assert!(b.late_held.ops < s.late_held.ops, "{:?}", b.late_held);
    }

    /// `h` with one final read of every key, by a process of its own, returning the value one
    /// linearization of the key ends in, except for the keys `wrong` names (they read a value
    /// nobody wrote).
    fn with_true_final_reads(h: &History, wrong: &[&str]) -> History {
        let p = plan("cas-register");
        let config = LinearConfig {
            keep_end: true,
            ..linear_config(&p)
        };
        let r = check_linear_with(&p.model, h, &p.options, config).unwrap();
        assert_eq!(r.verdict, Verdict::Valid);
        let mut ops = h.ops.clone();
        let mut t = ops.last().unwrap().time_ns;
        for (i, part) in r.parts.iter().enumerate() {
            let key = part.key.clone().unwrap();
            let value = match (part.ends.first(), wrong.contains(&key.as_str())) {
                (_, true) => Value::from(-1),
                (Some(StandIn::Op { value, .. }), _) => value.clone(),
                _ => Value::Null,
            };
            for (ty, v) in [(OpType::Invoke, Value::Null), (OpType::Ok, value)] {
                t += 10;
                let mut op = Op::new(ty, Process::Client(5_000 + i as u64), "read", v);
                op.key = Some(Name::new(&key));
                op.time_ns = t;
                ops.push(op);
            }
        }
        History::from_ops(ops)
    }

    #[test]
    fn later_ops_that_fit_the_end_state_need_no_second_read() {
        for seed in 0..3 {
            let h = rotating(seed, 0.05);
            let bytes = jsonl(&with_true_final_reads(&h, &[]));
            let sp = small("cas-register", None);
            let s = streamed(&bytes, &sp);
            let w = whole(&bytes, &sp.plan);
            assert_eq!(w.verdict, Verdict::Valid);
            same(&s.result, &w);
            assert!(s.late_keys > 10, "{} late keys", s.late_keys);
            assert_eq!(s.late_replayed, s.late_keys);
            assert_eq!((s.late_passes, s.late_held), (0, Held::default()));
        }
        // Two keys' final reads fit no state: those two are read again, and the witness is the
        // whole check's.
        let h = rotating(9, 0.05);
        let mut keys: Vec<String> = Vec::new();
        for k in h.ops.iter().filter_map(|o| o.key.as_deref()) {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
        let wrong = [keys[0].as_str(), keys[1].as_str()];
        let bytes = jsonl(&with_true_final_reads(&h, &wrong));
        let sp = small("cas-register", None);
        let s = streamed(&bytes, &sp);
        let w = whole(&bytes, &sp.plan);
        assert_eq!(w.verdict, Verdict::Invalid);
        same(&s.result, &w);
        assert_eq!(s.late_keys - s.late_replayed, 2);
        assert_eq!(s.late_passes, 1);
        assert_eq!(s.late_held.keys, 2, "{:?}", s.late_held);
    }

    #[test]
    fn later_ops_that_fit_another_end_state_need_no_second_read_either() {
        // Keys a and b: a write of 1, then a write of 2 that crashed (it may have taken effect
        // at any time, or never); keys c and d: writes of 1 and 2 at once (either may be
        // last). All retire; then a and c read 1, b and d read 2. Whichever linearization the
        // first pass found, each later read fits one of the ends kept (`PartSummary::ends`):
        // nothing is read again, and the result is the whole check's.
        let mut ops = Vec::new();
        let mut t = 0;
        let mut push = |ty, p: u64, f: &str, key: &str, v: Value| {
            t += 10;
            let mut op = Op::new(ty, Process::Client(p), f, v);
            op.key = Some(Name::new(key));
            op.time_ns = t;
            ops.push(op);
        };
        for (key, p) in [("a", 0), ("b", 2)] {
            push(OpType::Invoke, p, "write", key, Value::from(1));
            push(OpType::Ok, p, "write", key, Value::from(1));
            push(OpType::Invoke, p + 1, "write", key, Value::from(2));
            push(OpType::Info, p + 1, "write", key, Value::from(2));
        }
        for (key, p) in [("c", 4), ("d", 6)] {
            push(OpType::Invoke, p, "write", key, Value::from(1));
            push(OpType::Invoke, p + 1, "write", key, Value::from(2));
            push(OpType::Ok, p, "write", key, Value::from(1));
            push(OpType::Ok, p + 1, "write", key, Value::from(2));
        }
        for i in 0..90u64 {
            let key = format!("x{}", i / 10);
            push(
                OpType::Invoke,
                10 + i % 3,
                "write",
                &key,
                Value::from(i as i64),
            );
            push(OpType::Ok, 10 + i % 3, "write", &key, Value::from(i as i64));
        }
        for (key, p, v) in [("a", 20, 1), ("b", 21, 2), ("c", 22, 1), ("d", 23, 2)] {
            push(OpType::Invoke, p, "read", key, Value::Null);
            push(OpType::Ok, p, "read", key, Value::from(v));
        }
        let bytes = jsonl(&History::from_ops(ops));
        let sp = small("cas-register", None);
        let s = streamed(&bytes, &sp);
        same(&s.result, &whole(&bytes, &sp.plan));
        assert_eq!(s.result.verdict, Verdict::Valid);
        assert_eq!((s.late_keys, s.late_replayed, s.late_passes), (4, 4, 0));
    }

    use crate::checker::session::histgen::{
        ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
        generate_versioned_history,
    };
    use crate::checker::session::{SessionConfig, check_sessions};

    /// A versioned register history (etcd-like revisions, crashes, `stale` of the reads made
    /// stale) whose keys rotate: a key's ops of each `window_ns` of invoke times are a key of
    /// their own.
    fn rotating_versioned(seed: u64, stale: f64, window_ns: u64) -> History {
        let h = generate_versioned_history(&VersionedGenConfig {
            keys: 3,
            threads: 6,
            ops: 1_500,
            info_probability: 0.05,
            stale_read_probability: stale,
            seed,
            ..VersionedGenConfig::default()
        });
        let mut open: HashMap<Process, Name> = HashMap::new();
        let ops = h
            .ops
            .into_iter()
            .map(|mut o| {
                let key = match o.op_type {
                    OpType::Invoke => {
                        let k = o.key.as_deref().unwrap_or("");
                        let k: Name = format!("{k}e{}", o.time_ns / window_ns).into();
                        open.insert(o.process, k.clone());
                        k
                    }
                    _ => open.remove(&o.process).unwrap(),
                };
                o.key = Some(key);
                o
            })
            .collect();
        History::from_ops(ops)
    }

    /// Every key read once more at the end, by the process that last wrote it (a session
    /// that must see its write) or a new one: each read returns nothing.
    fn with_final_reads(mut h: History) -> History {
        let mut keys: Vec<(Name, Process)> = Vec::new();
        for o in &h.ops {
            let Some(k) = &o.key else { continue };
            let writer = (o.op_type == OpType::Ok && o.f != "read").then_some(o.process);
            match keys.iter_mut().find(|(x, _)| x == k) {
                Some(e) => e.1 = writer.unwrap_or(e.1),
                None => keys.push((k.clone(), writer.unwrap_or(Process::Client(10_000)))),
            }
        }
        let mut t = h.ops.last().unwrap().time_ns;
        for (k, p) in keys {
            for ty in [OpType::Invoke, OpType::Ok] {
                t += 10;
                let mut op = Op::new(ty, p, "read", Value::Null);
                op.key = Some(k.clone());
                op.time_ns = t;
                h.ops.push(op);
            }
        }
        History::from_ops(h.ops)
    }

    fn with_sessions(model: &str) -> StreamPlan {
        let mut sp = small(model, None);
        sp.plan.session = Some(SessionConfig {
            max_witnesses_per_guarantee: 3,
            max_conflicts: 3,
            top_keys: 3,
            ..SessionConfig::default()
        });
        sp
    }

    /// The streamed session result is the whole check's, as JSON; the streamed verdict merges
    /// it as the whole check does. Returns the session result.
    fn sessions_agree(bytes: &[u8], sp: &StreamPlan) -> (Streamed, SessionResult) {
        let s = streamed(bytes, sp);
        let h = History::read_jsonl(bytes, "test").unwrap();
        let whole = check_sessions(&h, sp.plan.session.as_ref().unwrap());
        let got = s.session.clone().expect("a session result");
        assert_eq!(
            serde_json::to_value(&got).unwrap(),
            serde_json::to_value(&whole).unwrap()
        );
        let composed = crate::checker::compose::check(&h, &sp.plan).unwrap();
        assert_eq!(s.result.verdict.merge(got.verdict), composed.verdict);
        (s, whole)
    }

    #[test]
    fn a_streamed_check_with_session_guarantees_agrees_with_the_whole_check() {
        let mut verdicts = Vec::new();
        for (seed, stale) in [(1, 0.0), (2, 0.2), (3, 0.0), (4, 0.3)] {
            let h = rotating_versioned(seed, stale, 40_000_000);
            assert!(h.ops.iter().any(|o| o.op_type == OpType::Info));
            let bytes = jsonl(&h);
            let (s, whole) = sessions_agree(&bytes, &with_sessions("cas-register"));
            // Keys rotate: a fraction of the history was held at most.
            assert!(s.held.ops < h.ops.len() / 2, "{:?}", s.held);
            verdicts.push(whole.verdict);
        }
        assert!(verdicts.contains(&Verdict::Valid), "{verdicts:?}");
        assert!(verdicts.contains(&Verdict::Invalid), "{verdicts:?}");
    }

    #[test]
    fn session_guarantees_of_keys_that_retire_late_or_never_agree() {
        // Final reads: most keys are late, checked again from their first late op.
        for (seed, stale) in [(5, 0.0), (6, 0.2)] {
            let h = with_final_reads(rotating_versioned(seed, stale, 40_000_000));
            let (s, whole) = sessions_agree(&jsonl(&h), &with_sessions("cas-register"));
            assert!(s.late_keys > 3, "{}", s.late_keys);
            // In passes holding at most 100 ops: the same session result.
            let bounded = StreamPlan {
                late_hold_ops: 100,
                ..with_sessions("cas-register")
            };
            let (b, _) = sessions_agree(&jsonl(&h), &bounded);
            assert!(b.late_passes > 1, "{} passes", b.late_passes);
            // The writers' final reads of nothing break read-your-writes.
            assert!(
                whole
                    .guarantee(crate::checker::session::Guarantee::ReadYourWrites)
                    .violations
                    > 0
            );
        }
        // Hot keys every process keeps using: held to the end.
        let h = generate_versioned_history(&VersionedGenConfig {
            keys: 2,
            ops: 600,
            stale_read_probability: 0.1,
            seed: 7,
            ..VersionedGenConfig::default()
        });
        let mut sp = with_sessions("cas-register");
        sp.idle_ops = 1_000_000;
        let (s, whole) = sessions_agree(&jsonl(&h), &sp);
        assert_eq!(s.held.keys, 2);
        assert_eq!(whole.verdict, Verdict::Invalid);
    }

    /// Every key read once more at the end, by the session that touched it last, returning the
    /// value one linearization of the key ends in, with the version an ok op reported for that
    /// value (the newest such), or one above every reported version (a crashed write's).
    fn with_true_versioned_final_reads(h: &History) -> History {
        let p = plan("cas-register");
        let config = LinearConfig {
            keep_end: true,
            ..linear_config(&p)
        };
        let r = check_linear_with(&p.model, h, &p.options, config).unwrap();
        let mut ops = h.ops.clone();
        let mut t = ops.last().unwrap().time_ns;
        for part in &r.parts {
            let key = part.key.clone().unwrap();
            let Some(StandIn::Op { value, .. }) = part.ends.first() else {
                continue;
            };
            let of_key = || h.ops.iter().filter(|o| o.key.as_deref() == Some(&key));
            let last = of_key().next_back().unwrap().process;
            let top = of_key().filter_map(|o| o.version).max().unwrap_or(0);
            let shown = |o: &&Op| match (o.f.as_str(), &o.value) {
                ("cas", Value::Array(a)) if a.len() == 2 => &a[1] == value,
                _ => &o.value == value,
            };
            let version = of_key()
                .filter(|o| o.op_type == OpType::Ok)
                .filter(shown)
                .filter_map(|o| o.version)
                .max()
                .unwrap_or(top + 1);
            for ty in [OpType::Invoke, OpType::Ok] {
                t += 10;
                let v = if ty == OpType::Ok {
                    value.clone()
                } else {
                    Value::Null
                };
                let mut op = Op::new(ty, last, "read", v);
                op.key = Some(Name::new(&key));
                op.time_ns = t;
                op.version = (ty == OpType::Ok).then_some(version);
                ops.push(op);
            }
        }
        History::from_ops(ops)
    }

    #[test]
    fn late_keys_session_guarantees_judged_from_their_ends_need_no_second_read() {
        for seed in [11, 12, 13] {
            let h = with_true_versioned_final_reads(&rotating_versioned(seed, 0.0, 40_000_000));
            let sp = with_sessions("cas-register");
            let (s, whole) = sessions_agree(&jsonl(&h), &sp);
            assert!(s.late_keys > 10, "{} late keys", s.late_keys);
            // Most final reads fit both the linearization's end and the sessions' bounds.
            assert!(
                s.late_replayed * 4 > s.late_keys * 3,
                "{} of {} replayed",
                s.late_replayed,
                s.late_keys
            );
            assert!(whole.guarantees.iter().all(|g| g.checks > 0));
        }
        // A late key whose later ops break a guarantee among themselves (the session writes
        // twice and is told the same version both times: monotonic writes): judged from its
        // end all the same, the witness at the file's positions.
        let mut h = with_true_versioned_final_reads(&rotating_versioned(14, 0.0, 40_000_000));
        // The first key: long retired when its final read comes.
        let key = h.ops[0].key.clone();
        let last = h.ops.iter().rfind(|o| o.key == key).unwrap().clone();
        let of_key = h.ops.iter().filter(|o| o.key == key);
        let top = of_key.filter_map(|o| o.version).max();
        for ty in [OpType::Invoke, OpType::Ok, OpType::Invoke, OpType::Ok] {
            let mut op = Op::new(ty, last.process, "write", Value::from(777));
            op.key = last.key.clone();
            op.time_ns = h.ops.last().unwrap().time_ns + 10;
            op.version = (ty == OpType::Ok).then(|| top.unwrap_or(0) + 1);
            h.ops.push(op);
        }
        let h = History::from_ops(h.ops);
        let (s, whole) = sessions_agree(&jsonl(&h), &with_sessions("cas-register"));
        let mw = whole.guarantee(crate::checker::session::Guarantee::MonotonicWrites);
        assert_eq!(
            mw.witnesses.last().unwrap().later_index,
            h.ops.len() as u64 - 1
        );
        assert!(s.late_replayed * 4 > s.late_keys * 3, "{s:?}");
    }

    #[test]
    fn list_append_session_guarantees_stream_unless_a_key_comes_back() {
        let h = generate_list_append_history(&ListAppendGenConfig {
            keys: 40,
            active_keys: 1,
            threads: 2,
            ops: 1_500,
            stale_read_probability: 0.2,
            seed: 8,
            ..ListAppendGenConfig::default()
        });
        // Threads drift apart in time: a key one thread left may still be ahead of the other.
        let mut sp = with_sessions("list-append");
        (sp.idle_ops, sp.grace_ops) = (2_000, 600);
        let (s, whole) = sessions_agree(&jsonl(&h), &sp);
        assert_eq!(s.late_keys, 0);
        assert_eq!(whole.version_source, VersionSource::ListAppend);
        assert_eq!(whole.verdict, Verdict::Invalid);
        // A key read again after it retired: its versions would come from part of its reads.
        let late = with_final_reads(h);
        assert!(
            matches!(stream(&jsonl(&late), &sp), Outcome::Whole(w) if w.contains("list-append versions"))
        );
    }

    #[test]
    fn a_late_list_read_a_register_cannot_read_is_the_whole_checks_error_without_a_whole_read() {
        let mut h = rotating_versioned(9, 0.0, 40_000_000);
        // A list read at the end: the whole check takes list-append versions.
        let t = h.ops.last().unwrap().time_ns;
        for (ty, v) in [
            (OpType::Invoke, Value::Null),
            (OpType::Ok, serde_json::json!([1])),
        ] {
            let mut op = Op::new(ty, Process::Client(10_000), "read", v);
            op.key = Some("z".into());
            op.time_ns = t + 10;
            h.ops.push(op);
        }
        let bytes = jsonl(&History::from_ops(h.ops));
        let sp = with_sessions("cas-register");
        // A register model cannot read a list read either: that is the whole check's error
        // (before any session guarantee), and the stream gives it without reading the
        // history whole.
        let whole = whole(&bytes, &sp.plan).reason.expect("unreadable");
        assert!(whole.starts_with("op 3000 ("), "{whole}");
        let got = stream(&bytes, &sp);
        assert!(
            matches!(&got, Outcome::Unreadable(r) if *r == whole),
            "{got:?}"
        );
    }

    use serde_json::Value;

    #[test]
    fn an_op_the_model_cannot_read_is_named_at_its_place_in_the_file_as_the_whole_check_does() {
        for seed in 0..4 {
            let h = rotating(seed, 0.05);
            assert!(h.ops.iter().any(|o| o.f == "cas"), "cas ops");
            // The `register` model has no cas: the whole check names the file's first one.
            for h in [h.clone(), with_final_reads(h)] {
                let bytes = jsonl(&h);
                let sp = small("register", None);
                let whole = whole(&bytes, &sp.plan).reason.expect("unreadable");
                let first = h.ops.iter().find(|o| o.f == "cas").unwrap();
                assert!(
                    whole.starts_with(&format!("op {} (", first.index)),
                    "{whole}"
                );
                match stream(&bytes, &sp) {
                    Outcome::Unreadable(reason) => assert_eq!(reason, whole),
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(
            op_named("op 2 (process 1): x", &[7, 8, 9]).unwrap(),
            (9, "op 9 (process 1): x".into())
        );
        assert!(op_named("ill-formed history: op 2 (x)", &[7, 8, 9]).is_none());
        assert!(op_named("op 3 (process 1): x", &[7, 8, 9]).is_none());
    }

    #[test]
    fn what_the_stream_cannot_judge_alike_is_left_to_the_whole_check() {
        let line = |p: u64, t: &str, f: &str, k: &str| {
            format!(r#"{{"type":"{t}","process":{p},"f":"{f}","key":"{k}","value":1}}"#)
        };
        // Process 0 invokes twice without a completion: ill-formed.
        let bad = [
            line(0, "invoke", "write", "a"),
            line(0, "invoke", "write", "a"),
        ]
        .join("\n");
        let sp = small("cas-register", None);
        assert!(matches!(stream(bad.as_bytes(), &sp), Outcome::Whole(w) if w.contains("invoked")));
        // `auto` chose cas-register from the first lines; an append later makes it list-append.
        let mut later = String::new();
        for i in 0..50 {
            later.push_str(&line(i, "invoke", "write", "a"));
            later.push('\n');
            later.push_str(&line(i, "ok", "write", "a"));
            later.push('\n');
        }
        later.push_str(&line(99, "invoke", "append", "b"));
        let sp = small("cas-register", Some(InputFormat::Jsonl));
        assert!(
            matches!(stream(later.as_bytes(), &sp), Outcome::Whole(w) if w.contains("list-append"))
        );
        // A torn last line is the whole check's warning and cut-short mark.
        let torn = format!(
            "{}\n{}\n{{\"type\":\"inv",
            line(0, "invoke", "write", "a"),
            line(0, "ok", "write", "a")
        );
        let s = streamed(torn.as_bytes(), &small("cas-register", None));
        let h = History::read_jsonl(torn.as_bytes(), "test").unwrap();
        assert_eq!((s.warnings, s.cut_short), (h.warnings, h.cut_short));
        assert_eq!(s.events, 2);
    }
}
