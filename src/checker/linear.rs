//! Linearizability checking: P-compositional Wing & Gong / Lowe just-in-time linearization search.
//!
//! Owns splitting a history into independent parts (by `Op::key`; ops without a key form one part),
//! checking the parts in parallel with cancellation, the search itself (as Porcupine's
//! `checkSingle`: a doubly linked list of call/return entries, lift/unlift, and a cache of
//! (linearized-op bitset, model state)), budgets (wall time, cache memory) and witnesses (the op that
//! cannot be linearized, the longest linearizable prefix, a delta-debugged minimal sub-history).
//! Does not own the sequential specifications (`crate::model`) or history parsing. The submodule
//! `histgen` generates linearizable-by-construction histories for tests and benchmarks.
//!
//! Cache keys stay small: a configuration is (model state, set of linearized ops), and the set is
//! encoded as a watermark over completed ops in invoke order (all below it linearized) plus the
//! bitset words above it, plus a bitset of pending ops; the hash is Zobrist (XOR of per-op random
//! words), updated in O(1) per lift/unlift.
//!
//! Semantics: an op converted to `Convert::Completed` must take effect between its invoke and its
//! completion; a `Convert::Pending` op (crashed, `info`, or never completed) has its return entry at
//! +infinity and may take effect at any later point or never — the search succeeds once every
//! completed op is linearized. Budgets never panic or hang: exceeding one yields `Unknown` with the
//! reason, per part.

pub mod histgen;

use crate::checker::{CheckResult, Checker, Verdict};
use crate::history::{History, Op, OpType};
use crate::model::{Convert, Model};
use hashbrown::HashTable;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Budgets and options for a linearizability check.
#[derive(Debug, Clone)]
pub struct LinearConfig {
    /// Wall-clock limit for the whole check; parts unfinished by then are `Unknown`.
    pub time_limit: Option<Duration>,
    /// Cap on the summed size of all search caches, in bytes; a part that would exceed it stops
    /// with `Unknown`.
    pub max_cache_bytes: Option<usize>,
    /// Worker threads; `None` uses rayon's global pool (one per core).
    pub threads: Option<usize>,
    /// Cancel the other parts as soon as one part is invalid.
    pub stop_on_first_invalid: bool,
    /// Time budget for delta-debugging an invalid part into a minimal invalid sub-history;
    /// `None` disables minimization.
    pub minimize_time_limit: Option<Duration>,
    /// How many steps at the end of the longest linearizable prefix the witness keeps.
    pub prefix_tail_len: usize,
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            time_limit: Some(Duration::from_secs(60)),
            max_cache_bytes: Some(1 << 30),
            threads: None,
            stop_on_first_invalid: true,
            minimize_time_limit: Some(Duration::from_secs(2)),
            prefix_tail_len: 50,
        }
    }
}

/// A history op as shown in a witness.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WitnessOp {
    /// Position of the invoke in the history (0-based; equals `Op::index` in dense histories).
    pub index: u64,
    /// Position of the completion, if any.
    pub completion_index: Option<u64>,
    /// Completion type: `ok`, `fail`, `info`, or `none` when the op never completed.
    pub outcome: String,
    /// Issuing process.
    pub process: String,
    /// Function name.
    pub f: String,
    /// Key, for independent-key histories.
    pub key: Option<String>,
    /// Observed value (completion value for ok ops, invoke value otherwise).
    pub value: Value,
    /// Invoke time, seconds since the run started.
    pub invoke_time_s: f64,
    /// Completion time in seconds, if completed.
    pub complete_time_s: Option<f64>,
    /// The model's description of the op.
    pub description: String,
}

/// One step of a linearization.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessStep {
    /// The op linearized at this step.
    pub op: WitnessOp,
    /// Model state after it.
    pub state_after: String,
}

/// Why a part is not linearizable.
#[derive(Debug, Clone, Serialize)]
pub struct Witness {
    /// The op that could not be linearized at the furthest point any linearization reached.
    pub op: WitnessOp,
    /// Length of the longest linearizable prefix found (ending at that point).
    pub prefix_len: usize,
    /// The last `prefix_tail_len` steps of that prefix, in linearization order.
    pub prefix_tail: Vec<WitnessStep>,
    /// Model state after the prefix.
    pub last_state: String,
    /// Essential ops found by delta debugging (history order), if run: even if every other read
    /// in the window is ignored and every other write may have taken effect at any time after its
    /// invoke or never, these ops cannot be linearized.
    pub minimized: Option<Vec<WitnessOp>>,
    /// True when minimization ran to a 1-minimal result within its budget.
    pub minimized_complete: bool,
}

/// Outcome for one independent part.
#[derive(Debug, Clone, Serialize)]
pub struct PartSummary {
    /// The key (`None` for ops without a key).
    pub key: Option<String>,
    /// Model ops in the part (after dropping ops that impose nothing).
    pub op_count: usize,
    /// How many of them are pending (info / never completed).
    pub pending_count: usize,
    /// Verdict for this part.
    pub verdict: Verdict,
    /// Why the verdict is unknown, if it is.
    pub reason: Option<String>,
    /// Search time in milliseconds.
    pub time_ms: u64,
    /// Cache entries (distinct configurations visited).
    pub cache_entries: usize,
    /// Approximate peak cache size in bytes.
    pub cache_bytes: usize,
    /// Witness, for an invalid part.
    pub witness: Option<Witness>,
}

/// Result of a linearizability check.
#[derive(Debug, Clone, Serialize)]
pub struct LinearResult {
    /// Model name.
    pub model: String,
    /// Merged verdict over all parts.
    pub verdict: Verdict,
    /// History-level reason for an unknown verdict (ill-formed input), if any.
    pub reason: Option<String>,
    /// Total model ops over all parts.
    pub op_count: usize,
    /// Wall time in milliseconds.
    pub time_ms: u64,
    /// Per-part summaries, in order of the parts' first appearance in the history.
    pub parts: Vec<PartSummary>,
}

fn key_label(k: &Option<String>) -> String {
    match k {
        Some(k) => format!("key {k}"),
        None => "history".to_string(),
    }
}

impl LinearResult {
    /// One-line summary.
    pub fn summary(&self) -> String {
        let count = |v: Verdict| self.parts.iter().filter(|p| p.verdict == v).count();
        let mut s = format!(
            "{}: {} ops in {} parts ({} valid, {} invalid, {} unknown) in {} ms",
            self.verdict,
            self.op_count,
            self.parts.len(),
            count(Verdict::Valid),
            count(Verdict::Invalid),
            count(Verdict::Unknown),
            self.time_ms
        );
        if let Some(r) = &self.reason {
            s.push_str(&format!("; {r}"));
        }
        s
    }

    /// A short human explanation for terminal output: the summary, then one line per invalid part
    /// and one per unknown part.
    pub fn explain(&self) -> String {
        let mut out = vec![self.summary()];
        let mut cancelled = 0usize;
        for p in &self.parts {
            match (p.verdict, &p.witness) {
                (Verdict::Invalid, Some(w)) => {
                    let o = &w.op;
                    let at = match o.complete_time_s {
                        Some(t) => format!("{:.3} s", t),
                        None => format!("{:.3} s (never completed)", o.invoke_time_s),
                    };
                    out.push(format!(
                        "{}: cannot linearize op {} (process {} {} at {}); last consistent state: {} after {} ops",
                        key_label(&p.key),
                        o.index,
                        o.process,
                        o.description,
                        at,
                        w.last_state,
                        w.prefix_len
                    ));
                    if let Some(m) = &w.minimized {
                        const SHOWN: usize = 12;
                        let mut ops: Vec<String> = m
                            .iter()
                            .take(SHOWN)
                            .map(|o| {
                                format!("op {} (process {} {})", o.index, o.process, o.description)
                            })
                            .collect();
                        if m.len() > SHOWN {
                            ops.push(format!("… {} more", m.len() - SHOWN));
                        }
                        let how = if w.minimized_complete {
                            "minimal"
                        } else {
                            "reduced, budget ran out"
                        };
                        out.push(format!("  essential ops ({how}): {}", ops.join("; ")));
                    }
                }
                (Verdict::Unknown, _) if p.reason.as_deref() == Some(CANCELLED) => cancelled += 1,
                (Verdict::Unknown, _) => out.push(format!(
                    "{}: unknown ({})",
                    key_label(&p.key),
                    p.reason.as_deref().unwrap_or("no reason recorded")
                )),
                _ => {}
            }
        }
        if cancelled > 0 {
            out.push(format!("{cancelled} other parts not checked ({CANCELLED})"));
        }
        out.join("\n")
    }
}

/// Reason recorded on parts stopped because another part was already invalid.
const CANCELLED: &str = "cancelled: another part was invalid";

/// One model op of a part, with its real-time interval in history positions.
#[derive(Debug, Clone)]
pub(crate) struct PartOp<O> {
    op: O,
    /// History position of the invoke.
    call: u64,
    /// History position of the completion; `None` = pending (+infinity).
    ret: Option<u64>,
    invoke_idx: usize,
    completion_idx: Option<usize>,
}

struct Part<O> {
    key: Option<String>,
    ops: Vec<PartOp<O>>,
}

/// Split a history into parts and convert ops with the model.
fn prepare<M: Model>(model: &M, history: &History) -> Result<Vec<Part<M::Op>>, String> {
    let pairs = history
        .pairs()
        .map_err(|e| format!("ill-formed history: {e}"))?;
    let mut parts: Vec<Part<M::Op>> = Vec::new();
    let mut by_key: HashMap<Option<String>, usize> = HashMap::new();
    for (i, op) in history.ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || !op.is_client() {
            continue;
        }
        let completion_idx = pairs[i];
        let completion = completion_idx.map(|j| &history.ops[j]);
        let converted = model.convert(op, completion).map_err(|e| {
            if op.index as usize == i {
                e
            } else {
                format!("history position {i}: {e}")
            }
        })?;
        let (mop, ret) = match converted {
            Convert::Skip => continue,
            Convert::Completed(m) => match completion_idx {
                Some(j) => (m, Some(j as u64)),
                None => (m, None),
            },
            Convert::Pending(m) => (m, None),
        };
        let slot = *by_key.entry(op.key.clone()).or_insert_with(|| {
            parts.push(Part {
                key: op.key.clone(),
                ops: Vec::new(),
            });
            parts.len() - 1
        });
        parts[slot].ops.push(PartOp {
            op: mop,
            call: i as u64,
            ret,
            invoke_idx: i,
            completion_idx,
        });
    }
    Ok(parts)
}

/// Shared limits of one search.
struct Limits<'a> {
    deadline: Option<Instant>,
    cancel: &'a AtomicBool,
    mem_used: &'a AtomicUsize,
    mem_cap: usize,
}

/// Where the deepest failed linearization got stuck.
struct Blocked {
    /// Part-local id of the op whose return could not be passed.
    op: usize,
    /// Part-local ids of the linearized prefix, in order.
    prefix: Vec<u32>,
}

enum Outcome {
    Valid,
    Invalid(Blocked),
    Aborted(String),
}

struct Stats {
    cache_entries: usize,
    cache_bytes: usize,
}

const NIL: u32 = u32::MAX;
const CHECK_EVERY: u64 = 1 << 12;

#[inline]
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[inline]
fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

/// The set of linearized ops, kept so that its cache key is small: completed ops are mostly
/// linearized in invoke order, so the key is the watermark `w` (every completed op below it is
/// linearized) plus the bitset words from `w` to the highest set bit, plus the (small) bitset of
/// pending ops. The key determines the set exactly.
struct LinSet {
    /// For each part-local op id: (is completed, index within its class).
    class: Vec<(bool, u32)>,
    comp: Vec<u64>,
    comp_len: usize,
    pend: Vec<u64>,
    /// Lowest unlinearized completed index.
    w: usize,
    /// Highest nonzero word of `comp`, or -1.
    top: isize,
}

impl LinSet {
    fn new(completed: impl Iterator<Item = bool>) -> LinSet {
        let (mut nc, mut np) = (0u32, 0u32);
        let class: Vec<(bool, u32)> = completed
            .map(|c| {
                let slot = if c { &mut nc } else { &mut np };
                *slot += 1;
                (c, *slot - 1)
            })
            .collect();
        LinSet {
            class,
            comp: vec![0; (nc as usize).div_ceil(64)],
            comp_len: nc as usize,
            pend: vec![0; (np as usize).div_ceil(64)],
            w: 0,
            top: -1,
        }
    }

    #[inline]
    fn set(&mut self, id: usize) {
        let (completed, i) = self.class[id];
        let i = i as usize;
        if !completed {
            self.pend[i / 64] |= 1 << (i % 64);
            return;
        }
        self.comp[i / 64] |= 1 << (i % 64);
        self.top = self.top.max((i / 64) as isize);
        if i == self.w {
            while self.w < self.comp_len && self.comp[self.w / 64] & (1 << (self.w % 64)) != 0 {
                self.w += 1;
            }
        }
    }

    #[inline]
    fn clear(&mut self, id: usize) {
        let (completed, i) = self.class[id];
        let i = i as usize;
        if !completed {
            self.pend[i / 64] &= !(1 << (i % 64));
            return;
        }
        self.comp[i / 64] &= !(1 << (i % 64));
        self.w = self.w.min(i);
        while self.top >= 0 && self.comp[self.top as usize] == 0 {
            self.top -= 1;
        }
    }

    /// Write the cache key into `out`.
    #[inline]
    fn key(&self, out: &mut Vec<u64>) {
        out.clear();
        out.push(self.w as u64);
        let lo = self.w / 64;
        if self.top >= lo as isize {
            out.extend_from_slice(&self.comp[lo..=self.top as usize]);
        }
        out.extend_from_slice(&self.pend);
    }
}

/// The WGL/Lowe search over one part. `ops[i]` are in invoke order.
fn search<M: Model>(
    model: &M,
    ops: &[PartOp<M::Op>],
    limits: &Limits<'_>,
    record_witness: bool,
) -> (Outcome, Stats) {
    let n = ops.len();
    let mut stats = Stats {
        cache_entries: 0,
        cache_bytes: 0,
    };
    if n == 0 {
        return (Outcome::Valid, stats);
    }
    if n >= (u32::MAX as usize - 2) / 2 {
        return (Outcome::Aborted(format!("part too large: {n} ops")), stats);
    }
    // Node 0 is the head; op i has call node 2i+1 and return node 2i+2.
    let mut events: Vec<(u64, u32)> = Vec::with_capacity(2 * n);
    for (i, o) in ops.iter().enumerate() {
        events.push((o.call, (2 * i + 1) as u32));
        events.push((o.ret.unwrap_or(u64::MAX), (2 * i + 2) as u32));
    }
    // Calls sort before returns at equal positions (only +infinity collides).
    events.sort_unstable_by_key(|&(pos, node)| (pos, node & 1 == 0, node));
    let nodes = 2 * n + 1;
    let mut next = vec![NIL; nodes];
    let mut prev = vec![NIL; nodes];
    let mut last = 0u32;
    for &(_, node) in &events {
        next[last as usize] = node;
        prev[node as usize] = last;
        last = node;
    }

    let zobrist: Vec<u64> = (0..n as u64).map(|i| splitmix(i ^ 0x5EED)).collect();
    let mut lin = LinSet::new(ops.iter().map(|o| o.ret.is_some()));
    let mut key: Vec<u64> = Vec::new();
    let mut lin_hash = 0u64;
    let mut state = model.init();
    let mut remaining = ops.iter().filter(|o| o.ret.is_some()).count();

    // Cache: open-addressed table of indices into flat arenas.
    let mut table: HashTable<u32> = HashTable::new();
    let mut arena: Vec<u64> = Vec::new();
    // Per cache entry: (hash, arena offset, key length in words).
    let mut meta: Vec<(u64, usize, usize)> = Vec::new();
    let mut states: Vec<M::State> = Vec::new();
    let entry_bytes = std::mem::size_of::<M::State>() + 24 + 8;

    let mut stack: Vec<(u32, M::State)> = Vec::new();
    // Furthest blocking point so far: (return position, depth, blocked op), and its prefix. The
    // saved prefix is updated incrementally: `stable` is the lowest stack depth since the last save,
    // below which the stack and the saved prefix agree.
    let mut best: Option<(u64, usize, usize)> = None;
    let mut best_prefix: Vec<u32> = Vec::new();
    let mut stable = 0usize;
    let mut reported = 0usize;
    let mut iters = 0u64;
    let mut entry = next[0];

    let outcome = loop {
        if remaining == 0 {
            break Outcome::Valid;
        }
        iters += 1;
        if iters.is_multiple_of(CHECK_EVERY) {
            let bytes = meta.len() * entry_bytes + arena.len() * 8 + stack.len() * 32;
            if bytes > reported {
                limits
                    .mem_used
                    .fetch_add(bytes - reported, Ordering::Relaxed);
                reported = bytes;
            }
            stats.cache_bytes = stats.cache_bytes.max(bytes);
            if limits.cancel.load(Ordering::Relaxed) {
                break Outcome::Aborted(CANCELLED.into());
            }
            if limits.mem_used.load(Ordering::Relaxed) > limits.mem_cap {
                break Outcome::Aborted(format!(
                    "cache memory cap of {} bytes exceeded ({} configurations cached)",
                    limits.mem_cap,
                    meta.len()
                ));
            }
            if let Some(d) = limits.deadline
                && Instant::now() >= d
            {
                break Outcome::Aborted(format!(
                    "time limit exceeded after {} configurations ({} of {} ops linearized at the time)",
                    meta.len(),
                    stack.len(),
                    n
                ));
            }
        }
        if entry == NIL {
            // Unreachable while a completed op remains: its return entry is in the list.
            break Outcome::Aborted("internal: ran off the entry list".into());
        }
        let e = entry as usize;
        if e & 1 == 1 {
            let id = (e - 1) / 2;
            if let Some(ns) = model.step(&state, &ops[id].op) {
                lin.set(id);
                lin.key(&mut key);
                let lh = lin_hash ^ zobrist[id];
                let h = lh ^ state_hash(&ns).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let seen = table
                    .find(h, |&c| {
                        let (ch, off, len) = meta[c as usize];
                        ch == h && arena[off..off + len] == key[..] && states[c as usize] == ns
                    })
                    .is_some();
                if seen {
                    lin.clear(id);
                    entry = next[e];
                } else {
                    let idx = meta.len() as u32;
                    meta.push((h, arena.len(), key.len()));
                    arena.extend_from_slice(&key);
                    states.push(ns.clone());
                    table.insert_unique(h, idx, |&c| meta[c as usize].0);
                    lin_hash = lh;
                    stack.push((entry, std::mem::replace(&mut state, ns)));
                    if ops[id].ret.is_some() {
                        remaining -= 1;
                    }
                    // Lift: unlink the call and its return.
                    for node in [e, e + 1] {
                        let (p, q) = (prev[node], next[node]);
                        next[p as usize] = q;
                        if q != NIL {
                            prev[q as usize] = p;
                        }
                    }
                    entry = next[0];
                }
            } else {
                entry = next[e];
            }
        } else {
            let id = (e - 2) / 2;
            if record_witness {
                let pos = ops[id].ret.unwrap_or(u64::MAX);
                let better = match &best {
                    None => true,
                    Some((bp, bd, _)) => (pos, stack.len()) > (*bp, *bd),
                };
                if better {
                    best_prefix.truncate(stable);
                    best_prefix.extend(stack[stable..].iter().map(|(nd, _)| (*nd - 1) / 2));
                    stable = stack.len();
                    best = Some((pos, stack.len(), id));
                }
            }
            match stack.pop() {
                None => {
                    let op = best.map_or(id, |b| b.2);
                    break Outcome::Invalid(Blocked {
                        op,
                        prefix: std::mem::take(&mut best_prefix),
                    });
                }
                Some((node, s)) => {
                    stable = stable.min(stack.len());
                    let c = node as usize;
                    let cid = (c - 1) / 2;
                    lin.clear(cid);
                    lin_hash ^= zobrist[cid];
                    state = s;
                    if ops[cid].ret.is_some() {
                        remaining += 1;
                    }
                    // Unlift: relink the return, then the call.
                    for node in [c + 1, c] {
                        let (p, q) = (prev[node], next[node]);
                        next[p as usize] = node as u32;
                        if q != NIL {
                            prev[q as usize] = node as u32;
                        }
                    }
                    entry = next[c];
                }
            }
        }
    };
    let bytes = meta.len() * entry_bytes + arena.len() * 8 + stack.len() * 32;
    stats.cache_bytes = stats.cache_bytes.max(bytes);
    stats.cache_entries = meta.len();
    limits.mem_used.fetch_sub(reported, Ordering::Relaxed);
    (outcome, stats)
}

fn witness_op<M: Model>(model: &M, history: &History, p: &PartOp<M::Op>) -> WitnessOp {
    let inv: &Op = &history.ops[p.invoke_idx];
    let comp = p.completion_idx.map(|j| &history.ops[j]);
    let outcome = match comp {
        Some(c) => match c.op_type {
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
            OpType::Invoke => "invoke",
        },
        None => "none",
    };
    let value = match comp {
        Some(c) if c.op_type == OpType::Ok => c.value.clone(),
        _ => inv.value.clone(),
    };
    WitnessOp {
        index: p.invoke_idx as u64,
        completion_index: p.completion_idx.map(|j| j as u64),
        outcome: outcome.to_string(),
        process: inv.process.to_string(),
        f: inv.f.clone(),
        key: inv.key.clone(),
        value,
        invoke_time_s: inv.time_ns as f64 / 1e9,
        complete_time_s: comp.map(|c| c.time_ns as f64 / 1e9),
        description: model.describe_op(&p.op),
    }
}

/// Delta-debug an invalid part into a small set of *essential* ops, within `budget`.
///
/// Only relaxations are tried, so the result never blames ops for a violation that removing other
/// ops created: a non-essential read-only op is dropped, a non-essential mutating op becomes pending
/// (it may have taken effect at any time after its invoke, or never). The returned ops (part-local
/// ids, history order) are 1-minimal when the flag is true: relaxing any one of them makes the window
/// linearizable. Ops invoked after the blocking return cannot take part in the failure and are
/// excluded from the window first.
fn minimize<M: Model>(
    model: &M,
    ops: &[PartOp<M::Op>],
    blocked_ret: u64,
    budget: Duration,
) -> (Vec<usize>, bool) {
    let deadline = Instant::now() + budget;
    let cancel = AtomicBool::new(false);
    let mem = AtomicUsize::new(0);
    // Relaxed candidates can be expensive to search; each gets a slice of the budget, and a
    // candidate whose search runs out counts as "not shown invalid" (it is kept unrelaxed).
    let per_check = (budget / 16).max(Duration::from_millis(10));
    let mut essential_mark = vec![false; ops.len()];
    let mut invalid = |window: &[usize], essential: &[usize]| {
        for &i in essential {
            essential_mark[i] = true;
        }
        let sub: Vec<PartOp<M::Op>> = window
            .iter()
            .filter_map(|&i| {
                if essential_mark[i] {
                    Some(ops[i].clone())
                } else if model.is_read_only(&ops[i].op) {
                    None
                } else {
                    let mut o = ops[i].clone();
                    o.ret = None;
                    Some(o)
                }
            })
            .collect();
        for &i in essential {
            essential_mark[i] = false;
        }
        let limits = Limits {
            deadline: Some((Instant::now() + per_check).min(deadline)),
            cancel: &cancel,
            mem_used: &mem,
            mem_cap: 256 << 20,
        };
        matches!(search(model, &sub, &limits, false).0, Outcome::Invalid(_))
    };
    let all: Vec<usize> = (0..ops.len()).collect();
    let mut window: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| ops[i].call <= blocked_ret)
        .collect();
    let completed = |w: &[usize]| -> Vec<usize> {
        w.iter()
            .copied()
            .filter(|&i| ops[i].ret.is_some())
            .collect()
    };
    if !invalid(&window, &completed(&window)) {
        window = all;
    }
    let mut cur = completed(&window);
    let mut gran = 2usize;
    while cur.len() >= 2 {
        if Instant::now() >= deadline {
            return (cur, false);
        }
        let chunk = cur.len().div_ceil(gran);
        let mut reduced = false;
        let mut start = 0;
        while start < cur.len() {
            if Instant::now() >= deadline {
                return (cur, false);
            }
            let end = (start + chunk).min(cur.len());
            let cand: Vec<usize> = cur[..start].iter().chain(&cur[end..]).copied().collect();
            if invalid(&window, &cand) {
                cur = cand;
                gran = (gran - 1).max(2);
                reduced = true;
                break;
            }
            start = end;
        }
        if !reduced {
            if chunk <= 1 {
                return (cur, true);
            }
            gran = (gran * 2).min(cur.len());
        }
    }
    (cur, true)
}

fn build_witness<M: Model>(
    model: &M,
    history: &History,
    ops: &[PartOp<M::Op>],
    blocked: &Blocked,
    config: &LinearConfig,
) -> Witness {
    let mut state = model.init();
    let mut steps = Vec::with_capacity(blocked.prefix.len());
    for &id in &blocked.prefix {
        let p = &ops[id as usize];
        match model.step(&state, &p.op) {
            Some(s) => state = s,
            None => break,
        }
        steps.push((id as usize, model.describe_state(&state)));
    }
    let tail_from = steps.len().saturating_sub(config.prefix_tail_len);
    let prefix_tail = steps[tail_from..]
        .iter()
        .map(|(id, s)| WitnessStep {
            op: witness_op(model, history, &ops[*id]),
            state_after: s.clone(),
        })
        .collect();
    let (minimized, minimized_complete) = match config.minimize_time_limit {
        Some(budget) => {
            let ret = ops[blocked.op].ret.unwrap_or(u64::MAX);
            let (ids, complete) = minimize(model, ops, ret, budget);
            let m = ids
                .iter()
                .map(|&i| witness_op(model, history, &ops[i]))
                .collect();
            (Some(m), complete)
        }
        None => (None, false),
    };
    Witness {
        op: witness_op(model, history, &ops[blocked.op]),
        prefix_len: steps.len(),
        prefix_tail,
        last_state: model.describe_state(&state),
        minimized,
        minimized_complete,
    }
}

/// Check a whole history against `model`.
pub fn check_history<M: Model>(
    model: &M,
    history: &History,
    config: &LinearConfig,
) -> LinearResult {
    let start = Instant::now();
    let parts = match prepare(model, history) {
        Ok(p) => p,
        Err(reason) => {
            return LinearResult {
                model: model.name().to_string(),
                verdict: Verdict::Unknown,
                reason: Some(reason),
                op_count: 0,
                time_ms: start.elapsed().as_millis() as u64,
                parts: Vec::new(),
            };
        }
    };
    let cancel = AtomicBool::new(false);
    let mem = AtomicUsize::new(0);
    let limits = Limits {
        deadline: config.time_limit.map(|d| start + d),
        cancel: &cancel,
        mem_used: &mem,
        mem_cap: config.max_cache_bytes.unwrap_or(usize::MAX),
    };
    // Biggest parts first, for load balance.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(parts[i].ops.len()));
    let run_one = |i: usize| -> (usize, PartSummary) {
        let part = &parts[i];
        let t0 = Instant::now();
        let (outcome, stats) = if cancel.load(Ordering::Relaxed) {
            (
                Outcome::Aborted(CANCELLED.into()),
                Stats {
                    cache_entries: 0,
                    cache_bytes: 0,
                },
            )
        } else {
            search(model, &part.ops, &limits, true)
        };
        let (verdict, reason, witness) = match outcome {
            Outcome::Valid => (Verdict::Valid, None, None),
            Outcome::Aborted(r) => (Verdict::Unknown, Some(r), None),
            Outcome::Invalid(b) => {
                if config.stop_on_first_invalid {
                    cancel.store(true, Ordering::Relaxed);
                }
                let w = build_witness(model, history, &part.ops, &b, config);
                (Verdict::Invalid, None, Some(w))
            }
        };
        let summary = PartSummary {
            key: part.key.clone(),
            op_count: part.ops.len(),
            pending_count: part.ops.iter().filter(|o| o.ret.is_none()).count(),
            verdict,
            reason,
            time_ms: t0.elapsed().as_millis() as u64,
            cache_entries: stats.cache_entries,
            cache_bytes: stats.cache_bytes,
            witness,
        };
        (i, summary)
    };
    let run_all =
        || -> Vec<(usize, PartSummary)> { order.par_iter().map(|&i| run_one(i)).collect() };
    let mut results = match config.threads {
        Some(t) => match rayon::ThreadPoolBuilder::new()
            .num_threads(t.max(1))
            .build()
        {
            Ok(pool) => pool.install(run_all),
            Err(_) => run_all(),
        },
        None => run_all(),
    };
    results.sort_by_key(|(i, _)| *i);
    let summaries: Vec<PartSummary> = results.into_iter().map(|(_, s)| s).collect();
    let verdict = summaries
        .iter()
        .fold(Verdict::Valid, |v, p| v.merge(p.verdict));
    LinearResult {
        model: model.name().to_string(),
        verdict,
        reason: None,
        op_count: summaries.iter().map(|p| p.op_count).sum(),
        time_ms: start.elapsed().as_millis() as u64,
        parts: summaries,
    }
}

/// The `linearizable` checker: a model plus budgets.
pub struct LinearizableChecker<M: Model> {
    /// The sequential specification.
    pub model: M,
    /// Budgets and options.
    pub config: LinearConfig,
}

impl<M: Model> LinearizableChecker<M> {
    /// A checker with default budgets.
    pub fn new(model: M) -> Self {
        LinearizableChecker {
            model,
            config: LinearConfig::default(),
        }
    }

    /// Run the check and return the typed result.
    pub fn check_linear(&self, history: &History) -> LinearResult {
        check_history(&self.model, history, &self.config)
    }
}

impl<M: Model> Checker for LinearizableChecker<M> {
    fn name(&self) -> &str {
        "linearizable"
    }

    fn check(&self, history: &History) -> CheckResult {
        let r = self.check_linear(history);
        CheckResult {
            checker: "linearizable".to_string(),
            verdict: r.verdict,
            summary: r.summary(),
            details: serde_json::to_value(&r).unwrap_or_else(
                |e| serde_json::json!({ "error": format!("could not serialize result: {e}") }),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;
    use crate::model::{MutexModel, RegisterConfig, RegisterModel};
    use serde_json::json;

    fn op(t: OpType, p: u64, f: &str, v: Value) -> Op {
        Op::new(t, Process::Client(p), f, v)
    }
    fn cas() -> RegisterModel {
        RegisterModel::cas_register(RegisterConfig::etcd())
    }

    #[test]
    fn sequential_history_is_valid_and_stale_read_is_invalid() {
        use OpType::*;
        let good = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", json!(1)),
        ]);
        let r = check_history(&cas(), &good, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        let bad = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", Value::Null),
        ]);
        let r = check_history(&cas(), &bad, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let w = r.parts[0].witness.as_ref().unwrap();
        assert_eq!(w.op.index, 2);
        assert_eq!(w.prefix_len, 1);
        assert_eq!(w.last_state, "1");
        let m = w.minimized.as_ref().unwrap();
        assert_eq!(m.iter().map(|o| o.index).collect::<Vec<_>>(), vec![0, 2]);
        assert!(
            r.explain().contains("cannot linearize op 2"),
            "{}",
            r.explain()
        );
    }

    #[test]
    fn concurrent_ops_may_reorder_and_info_may_or_may_not_happen() {
        use OpType::*;
        // Read overlapping a write may see either value; an info write may apply later or never.
        let h = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 2, "write", json!(7)),
            op(Info, 2, "write", json!(7)),
            op(Invoke, 3, "read", Value::Null),
            op(Ok, 3, "read", json!(1)),
            op(Invoke, 4, "read", Value::Null),
            op(Ok, 4, "read", json!(7)),
            op(Invoke, 5, "write", json!(9)),
        ]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        assert_eq!(r.parts[0].pending_count, 2);
        // But the info write cannot un-happen: reading 1 after 7 is invalid.
        let mut ops = h.ops.clone();
        ops.push(op(Invoke, 6, "read", Value::Null));
        ops.push(op(Ok, 6, "read", json!(1)));
        let r = check_history(&cas(), &History::from_ops(ops), &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.parts[0].witness.as_ref().unwrap().op.index, 11);
    }

    #[test]
    fn cas_mismatch_evidence_is_used_only_when_enabled() {
        use OpType::*;
        let mut fail = op(Fail, 1, "cas", json!([1, 2]));
        fail.error = Some("cas-mismatch".into());
        let h = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "cas", json!([1, 2])),
            fail,
        ]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let mut cfg = RegisterConfig::etcd();
        cfg.cas_mismatch_is_evidence = false;
        let r = check_history(
            &RegisterModel::cas_register(cfg),
            &h,
            &LinearConfig::default(),
        );
        assert_eq!(r.verdict, Verdict::Valid);
    }

    #[test]
    fn parts_are_independent_and_invalid_part_is_named() {
        use OpType::*;
        let mut ops = Vec::new();
        for (k, v) in [("a", 1), ("b", 2)] {
            let mut w = op(Invoke, 0, "write", json!(v));
            w.key = Some(k.into());
            let mut wo = op(Ok, 0, "write", json!(v));
            wo.key = Some(k.into());
            ops.push(w);
            ops.push(wo);
        }
        let mut r = op(Invoke, 1, "read", Value::Null);
        r.key = Some("a".into());
        let mut ro = op(Ok, 1, "read", json!(2));
        ro.key = Some("a".into());
        ops.push(r);
        ops.push(ro);
        let cfg = LinearConfig {
            stop_on_first_invalid: false,
            ..LinearConfig::default()
        };
        let res = check_history(&cas(), &History::from_ops(ops), &cfg);
        assert_eq!(res.verdict, Verdict::Invalid);
        assert_eq!(res.parts.len(), 2);
        assert_eq!(res.parts[0].key.as_deref(), Some("a"));
        assert_eq!(res.parts[0].verdict, Verdict::Invalid);
        assert_eq!(res.parts[1].verdict, Verdict::Valid);
        assert!(
            res.explain().contains("key a: cannot linearize op 4"),
            "{}",
            res.explain()
        );
    }

    #[test]
    fn ill_formed_history_is_unknown_not_a_panic() {
        let h = History::from_ops(vec![op(OpType::Ok, 0, "read", json!(1))]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.unwrap().contains("no open invoke"));
        let h = History::from_ops(vec![op(OpType::Invoke, 0, "write", json!(null))]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.unwrap().contains("op 0"));
    }

    #[test]
    fn zero_budget_gives_unknown_with_reason() {
        use OpType::*;
        // Many concurrent pending writes force a large search; a zero time limit must stop it.
        let mut ops = Vec::new();
        for p in 0..40 {
            ops.push(op(Invoke, p, "write", json!(p)));
        }
        for p in 40..80 {
            ops.push(op(Invoke, p, "read", Value::Null));
            ops.push(op(Ok, p, "read", json!(1000 + p)));
        }
        let cfg = LinearConfig {
            time_limit: Some(Duration::ZERO),
            ..LinearConfig::default()
        };
        let r = check_history(&cas(), &History::from_ops(ops), &cfg);
        // Either the search proves it invalid before the first budget check, or it stops: both
        // are honest; it must never claim valid.
        assert_ne!(r.verdict, Verdict::Valid);
        if r.verdict == Verdict::Unknown {
            assert!(r.parts[0].reason.as_ref().unwrap().contains("time limit"));
        }
    }

    #[test]
    fn blocked_prefix_replays_and_respects_real_time() {
        use super::histgen::{GenConfig, generate_register_history};
        let m = cas();
        let mut aborted = 0;
        for seed in 0..40 {
            let g = GenConfig {
                processes_per_key: 4,
                ops: 120,
                info_probability: 0.03,
                seed,
                ..GenConfig::default()
            };
            let mut h = generate_register_history(&g);
            let Some(t) = h
                .ops
                .iter()
                .rposition(|o| o.op_type == OpType::Ok && o.f == "read")
            else {
                continue;
            };
            h.ops[t].value = json!(-5);
            let parts = prepare(&m, &h).unwrap();
            let cancel = AtomicBool::new(false);
            let mem = AtomicUsize::new(0);
            let limits = Limits {
                deadline: Some(Instant::now() + Duration::from_secs(5)),
                cancel: &cancel,
                mem_used: &mem,
                mem_cap: 512 << 20,
            };
            let ops = &parts[0].ops;
            let b = match search(&m, ops, &limits, true).0 {
                Outcome::Invalid(b) => b,
                Outcome::Aborted(_) => {
                    aborted += 1;
                    continue;
                }
                Outcome::Valid => panic!("seed {seed}: expected invalid"),
            };
            assert_eq!(ops[b.op].completion_idx, Some(t), "seed {seed}");
            let mut s = m.init();
            for (k, &id) in b.prefix.iter().enumerate() {
                s = m.step(&s, &ops[id as usize].op).expect("prefix replays");
                // No later prefix op may have returned before this one was invoked.
                for &later in &b.prefix[k + 1..] {
                    let r = ops[later as usize].ret.unwrap_or(u64::MAX);
                    assert!(r > ops[id as usize].call, "seed {seed}: real-time order");
                }
            }
        }
        assert!(aborted < 10, "{aborted} of 40 searches hit the budget");
    }

    #[test]
    fn etcd_jsonl_history_with_absent_reads_and_cas_mismatch() {
        let text = r#"{"type":"invoke","process":0,"f":"read","key":"k1","value":null}
{"type":"ok","process":0,"f":"read","key":"k1","value":null}
{"type":"invoke","process":1,"f":"cas","key":"k1","value":[0,1]}
{"type":"fail","process":1,"f":"cas","key":"k1","value":[0,1],"error":"cas-mismatch"}
{"type":"invoke","process":2,"f":"write","key":"k1","value":3}
{"type":"info","process":2,"f":"write","key":"k1","value":3,"error":"timeout"}
{"type":"invoke","process":"nemesis","f":"start-partition","value":null}
{"type":"invoke","process":0,"f":"cas","key":"k1","value":[3,4]}
{"type":"ok","process":0,"f":"cas","key":"k1","value":[3,4]}
{"type":"invoke","process":1,"f":"read","key":"k2","value":null}
{"type":"ok","process":1,"f":"read","key":"k2","value":null}
"#;
        let h = History::read_jsonl(text.as_bytes(), "etcd.jsonl").unwrap();
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        assert_eq!(r.parts.len(), 2);
        assert_eq!(
            r.parts[0].op_count, 4,
            "read, cas-mismatch, info write, cas"
        );
        assert_eq!(r.parts[0].pending_count, 1);
        // A later read of "absent" on k1 contradicts the successful cas.
        let bad = format!(
            "{text}{}\n{}\n",
            r#"{"type":"invoke","process":3,"f":"read","key":"k1","value":null}"#,
            r#"{"type":"ok","process":3,"f":"read","key":"k1","value":null}"#
        );
        let h = History::read_jsonl(bad.as_bytes(), "etcd.jsonl").unwrap();
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert!(
            r.explain()
                .contains("key k1: cannot linearize op 11 (process 3 read → absent"),
            "{}",
            r.explain()
        );
    }

    #[test]
    fn mutex_double_acquire_is_invalid() {
        use OpType::*;
        let h = History::from_ops(vec![
            op(Invoke, 0, "acquire", Value::Null),
            op(Ok, 0, "acquire", Value::Null),
            op(Invoke, 1, "acquire", Value::Null),
            op(Ok, 1, "acquire", Value::Null),
        ]);
        let r = check_history(&MutexModel, &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let c = LinearizableChecker::new(MutexModel);
        let cr = c.check(&h);
        assert_eq!(cr.checker, "linearizable");
        assert_eq!(cr.details["verdict"], "invalid");
    }
}
