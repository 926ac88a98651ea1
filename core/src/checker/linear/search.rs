//! The WGL / Lowe just-in-time linearization search over one part, as Porcupine's `checkSingle`: a
//! doubly linked list of call/return entries, lift/unlift, and a cache of configurations.
//!
//! Owns the search loop, its budgets (deadline, shared cache memory, cancellation) and the cache key
//! of a configuration. Does not own splitting a history into parts or converting ops (`linear`), nor
//! witnesses (`linear::witness`).
//!
//! # The cache key
//!
//! A configuration is (model state, set of linearized ops). Completed ops are mostly linearized in
//! invoke order, so that set is encoded as a watermark over completed ops (all below it linearized)
//! plus the bitset words from the watermark to the highest set bit. Pending ops (crashed, `info`,
//! never completed; return at +infinity) are *counted per class* instead of named: ops with equal
//! model ops are interchangeable once invoked. Why that is exact: the calls the search may linearize
//! next are those before the first remaining return, which only moves right and is fixed by the set
//! of linearized completed ops; every linearized pending op was before it when linearized, so two
//! configurations with the same completed set, state and per-class counts differ only by swapping
//! equal ops that are all already callable — their futures are the same. Twenty pending writes over
//! five values thus cost 6^5 subsets at most instead of 2^20. The hash is Zobrist (XOR of per-op and
//! per-(class, count) random words), updated in O(1) per lift/unlift.

use crate::model::Model;
use crate::size::human_bytes;
use hashbrown::HashTable;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// One model op of a part, with its real-time interval in history positions. Positions are
/// 31-bit (a history of 2 billion events would not fit in memory): a 10M-op history holds 10M of
/// these, so each byte here is 10 MB of the check's peak; with the register model's op this is
/// 40 bytes.
#[derive(Debug, Clone)]
pub(crate) struct PartOp<O> {
    /// The model op with its observed output.
    pub(crate) op: O,
    /// History index (and position) of the invoke.
    invoke: u32,
    /// History index of the completion ([`NO_COMPLETION`] when there is none), with
    /// [`RETURNED`] set when that completion ends the op's interval; clear for a pending op (its
    /// interval runs to +infinity), whether it has no completion or one (`info`) that does not
    /// bound it.
    completion: u32,
}

/// [`PartOp::completion`] of an op without one.
const NO_COMPLETION: u32 = u32::MAX >> 1;

/// [`PartOp::completion`]'s flag: the completion bounds the op's interval.
const RETURNED: u32 = 1 << 31;

impl<O> PartOp<O> {
    /// An op invoked at history index `invoke`, completed at `completion` (if any); `returned`:
    /// that completion bounds its interval (false: pending). `None` when an index does not fit
    /// in 31 bits.
    pub(crate) fn new(
        op: O,
        invoke: usize,
        completion: Option<usize>,
        returned: bool,
    ) -> Option<Self> {
        let fits = |i: usize| u32::try_from(i).ok().filter(|&i| i < NO_COMPLETION);
        let completion = match completion {
            Some(j) if returned => fits(j)? | RETURNED,
            Some(j) => fits(j)?,
            None => NO_COMPLETION,
        };
        Some(PartOp {
            op,
            invoke: fits(invoke)?,
            completion,
        })
    }

    /// History position of the invoke.
    pub(crate) fn call(&self) -> u64 {
        u64::from(self.invoke)
    }

    /// History position of the completion; `None` = pending (+infinity).
    pub(crate) fn ret(&self) -> Option<u64> {
        (self.completion & RETURNED != 0).then_some(u64::from(self.completion & !RETURNED))
    }

    /// History index of the invoke.
    pub(crate) fn invoke_idx(&self) -> usize {
        self.invoke as usize
    }

    /// History index of the completion, if any.
    pub(crate) fn completion_idx(&self) -> Option<usize> {
        let c = self.completion & !RETURNED;
        (c != NO_COMPLETION).then_some(c as usize)
    }

    /// Make the op pending: its completion no longer bounds its interval.
    pub(crate) fn set_pending(&mut self) {
        self.completion &= !RETURNED;
    }
}

/// A stop time shared by searches running in parallel, which may be brought forward while they run
/// (when one part is invalid, the verdict is settled and the others get a budget from then on).
pub(crate) struct Stop {
    start: Instant,
    /// Nanoseconds after `start`; `u64::MAX` = never.
    at_ns: AtomicU64,
}

impl Stop {
    /// A stop that never comes until [`Stop::at`] sets one.
    pub(crate) fn never(start: Instant) -> Stop {
        Stop {
            start,
            at_ns: AtomicU64::new(u64::MAX),
        }
    }

    /// Stop at `t`, or earlier if an earlier stop was set.
    pub(crate) fn at(&self, t: Instant) {
        let ns = t.saturating_duration_since(self.start).as_nanos();
        self.at_ns
            .fetch_min(u64::try_from(ns).unwrap_or(u64::MAX - 1), Ordering::Relaxed);
    }

    /// Whether the stop time has come by `now`.
    pub(crate) fn passed(&self, now: Instant) -> bool {
        let at = self.at_ns.load(Ordering::Relaxed);
        at != u64::MAX && now.saturating_duration_since(self.start).as_nanos() >= u128::from(at)
    }
}

/// The memory budget shared by every search of a check, run at once or one after another.
pub(crate) struct Memory {
    /// Bytes the running searches hold (their caches and stacks).
    used: AtomicUsize,
    /// Searches running.
    active: AtomicUsize,
    /// The budget.
    cap: usize,
}

impl Memory {
    /// A budget of `cap` bytes, none used.
    pub(crate) fn new(cap: usize) -> Memory {
        Memory {
            used: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            cap,
        }
    }

    /// Whether a search holding `own` bytes should give up: the budget is used up and it holds at
    /// least an even share of it, so the searches holding the most go first and a small one is
    /// not stopped by a big neighbour (whose stop frees the memory).
    fn exhausted(&self, own: usize) -> bool {
        let used = self.used.load(Ordering::Relaxed);
        used > self.cap && own.saturating_mul(self.active.load(Ordering::Relaxed).max(1)) >= used
    }
}

/// Shared limits of one search.
pub(crate) struct Limits<'a> {
    /// Stop with `Aborted(Cause::TimeLimit)` at this instant.
    pub(crate) deadline: Option<Instant>,
    /// Stop with `Aborted(Cause::Settled)` once it passes.
    pub(crate) settled: &'a Stop,
    /// The check's memory budget; stop with `Aborted(Cause::Memory)` past it.
    pub(crate) memory: &'a Memory,
    /// Stop with `Outcome::Unfinished` after caching this many configurations.
    pub(crate) max_entries: Option<usize>,
}

/// Why a search stopped without a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Another part was invalid, which settled the verdict, and the budget for deciding the
    /// others ran out.
    Settled,
    /// The check's memory budget was used up.
    Memory,
    /// The check's time limit passed.
    TimeLimit,
    /// Anything else (a part too large to search).
    Other,
}

/// Where the deepest failed linearization got stuck.
#[derive(Debug, Clone)]
pub(crate) struct Blocked {
    /// Part-local id of the op whose return could not be passed.
    pub(crate) op: usize,
    /// Part-local ids of the linearized prefix, in order.
    pub(crate) prefix: Vec<u32>,
}

/// What one search found.
pub(crate) enum Outcome {
    /// Linearizable: the part-local ids of one linearization, in order (its completed ops and
    /// the pending ops it let take effect).
    Valid(Vec<u32>),
    Invalid(Blocked),
    Aborted(Cause, String),
    /// Stopped at `Limits::max_entries`: search again with a bigger cap for a verdict.
    Unfinished,
}

/// Cache statistics of one search.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stats {
    /// Distinct configurations cached.
    pub(crate) cache_entries: usize,
    /// Approximate peak cache size in bytes.
    pub(crate) cache_bytes: usize,
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

/// Where an op's membership is recorded in a [`LinSet`].
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Completed op with this index in invoke order among completed ops.
    Completed(u32),
    /// Pending op of this class.
    Pending(u32),
}

/// Per pending class: its linearized count lives in `packed[word] >> shift`, `width` bits wide.
#[derive(Debug, Clone, Copy)]
struct Field {
    word: u32,
    shift: u32,
    seed: u64,
}

/// The set of linearized ops with a small, exact cache key (see the module doc) and its Zobrist
/// hash.
pub(crate) struct LinSet {
    slot: Vec<Slot>,
    comp: Vec<u64>,
    comp_len: usize,
    /// Zobrist word per completed index.
    comp_zobrist: Vec<u64>,
    /// Per pending class.
    fields: Vec<Field>,
    counts: Vec<u32>,
    packed: Vec<u64>,
    /// Lowest unlinearized completed index.
    w: usize,
    /// Highest nonzero word of `comp`, or -1.
    top: isize,
    /// Zobrist hash of the set.
    hash: u64,
    /// Zobrist hash of the completed ops in the set alone.
    comp_hash: u64,
}

impl LinSet {
    /// A set over `ops` with pending ops grouped into classes of equal model ops.
    pub(crate) fn new<O: Eq + Hash>(ops: &[PartOp<O>]) -> LinSet {
        let mut nc = 0u32;
        let mut classes: HashMap<&O, u32> = HashMap::new();
        let mut members: Vec<u32> = Vec::new();
        let slot: Vec<Slot> = ops
            .iter()
            .map(|o| {
                if o.ret().is_some() {
                    nc += 1;
                    Slot::Completed(nc - 1)
                } else {
                    // A class holds at most u16::MAX ops (counts are u16 in the dominance cache).
                    let next = members.len() as u32;
                    let c = classes.entry(&o.op).or_insert(next);
                    if *c != next && members[*c as usize] == u32::from(u16::MAX) {
                        *c = next;
                    }
                    if *c == next {
                        members.push(0);
                    }
                    members[*c as usize] += 1;
                    Slot::Pending(*c)
                }
            })
            .collect();
        let mut fields = Vec::with_capacity(members.len());
        let (mut word, mut bit) = (0u32, 0u32);
        for (c, &m) in members.iter().enumerate() {
            let width = u32::BITS - m.leading_zeros();
            if bit + width > 64 {
                word += 1;
                bit = 0;
            }
            fields.push(Field {
                word,
                shift: bit,
                seed: splitmix(c as u64 ^ 0xC1A5_5EED_0000_0000),
            });
            bit += width;
        }
        let words = if members.is_empty() {
            0
        } else {
            word as usize + 1
        };
        LinSet {
            slot,
            comp: vec![0; (nc as usize).div_ceil(64)],
            comp_len: nc as usize,
            comp_zobrist: (0..nc as u64).map(|i| splitmix(i ^ 0x5EED)).collect(),
            counts: vec![0; fields.len()],
            fields,
            packed: vec![0; words],
            w: 0,
            top: -1,
            hash: 0,
            comp_hash: 0,
        }
    }

    /// Number of pending classes.
    #[cfg(test)]
    pub(crate) fn classes(&self) -> usize {
        self.fields.len()
    }

    #[inline]
    fn class_word(f: &Field, count: u32) -> u64 {
        if count == 0 {
            0
        } else {
            splitmix(f.seed ^ u64::from(count))
        }
    }

    /// The Zobrist hash the set would have after adding `id`.
    #[inline]
    pub(crate) fn hash_with(&self, id: usize) -> u64 {
        match self.slot[id] {
            Slot::Completed(i) => self.hash ^ self.comp_zobrist[i as usize],
            Slot::Pending(c) => {
                let f = &self.fields[c as usize];
                let k = self.counts[c as usize];
                self.hash ^ Self::class_word(f, k) ^ Self::class_word(f, k + 1)
            }
        }
    }

    /// Add `id` (not in the set).
    #[inline]
    pub(crate) fn set(&mut self, id: usize) {
        self.hash = self.hash_with(id);
        if let Slot::Completed(i) = self.slot[id] {
            self.comp_hash ^= self.comp_zobrist[i as usize];
        }
        match self.slot[id] {
            Slot::Pending(c) => {
                let f = self.fields[c as usize];
                self.counts[c as usize] += 1;
                self.packed[f.word as usize] += 1 << f.shift;
            }
            Slot::Completed(i) => {
                let i = i as usize;
                self.comp[i / 64] |= 1 << (i % 64);
                self.top = self.top.max((i / 64) as isize);
                if i == self.w {
                    while self.w < self.comp_len
                        && self.comp[self.w / 64] & (1 << (self.w % 64)) != 0
                    {
                        self.w += 1;
                    }
                }
            }
        }
    }

    /// Remove `id` (in the set).
    #[inline]
    pub(crate) fn clear(&mut self, id: usize) {
        match self.slot[id] {
            Slot::Pending(c) => {
                let f = self.fields[c as usize];
                let k = self.counts[c as usize];
                self.hash ^= Self::class_word(&f, k) ^ Self::class_word(&f, k - 1);
                self.counts[c as usize] -= 1;
                self.packed[f.word as usize] -= 1 << f.shift;
            }
            Slot::Completed(i) => {
                let i = i as usize;
                self.hash ^= self.comp_zobrist[i];
                self.comp_hash ^= self.comp_zobrist[i];
                self.comp[i / 64] &= !(1 << (i % 64));
                self.w = self.w.min(i);
                while self.top >= 0 && self.comp[self.top as usize] == 0 {
                    self.top -= 1;
                }
            }
        }
    }

    /// Write the cache key into `out`.
    #[inline]
    pub(crate) fn key(&self, out: &mut Vec<u64>) {
        self.comp_key(out);
        out.extend_from_slice(&self.packed);
    }

    /// Write the key of the completed ops in the set alone into `out`.
    #[inline]
    pub(crate) fn comp_key(&self, out: &mut Vec<u64>) {
        out.clear();
        out.push(self.w as u64);
        let lo = self.w / 64;
        if self.top >= lo as isize {
            out.extend_from_slice(&self.comp[lo..=self.top as usize]);
        }
    }
}

/// Visited configurations. Without pending ops: exact (linearized set, state) entries in flat
/// arenas. With pending ops: per group of (completed ops in the set, state), the minimal per-class
/// count vectors of linearized pending ops seen; a configuration whose counts are all at least a
/// stored vector's is dominated — same state, same callable ops, no free pending op the stored
/// one lacks — so its every successful continuation is one of the stored configuration's, and it
/// is skipped. Stored configurations are explored to the end (or the search succeeds), so
/// skipping dominated ones never loses a linearization.
struct Cache<S> {
    table: HashTable<u32>,
    arena: Vec<u64>,
    /// Per entry (exact) or group (dominance): (hash, arena offset, key length in words).
    meta: Vec<(u64, usize, usize)>,
    states: Vec<S>,
    /// Dominance mode: per group, offsets into `counts` of its minimal count vectors.
    vecs: Vec<Vec<u32>>,
    counts: Vec<u16>,
    classes: usize,
    /// Configurations stored (exact entries or count vectors).
    entries: usize,
    /// Heap bytes the stored states hold beyond their own size (`Model::state_heap_bytes`).
    state_heap: usize,
    key: Vec<u64>,
}

impl<S: Clone + Eq + Hash> Cache<S> {
    fn new(classes: usize) -> Self {
        Cache {
            table: HashTable::new(),
            arena: Vec::new(),
            meta: Vec::new(),
            states: Vec::new(),
            vecs: Vec::new(),
            counts: Vec::new(),
            classes,
            entries: 0,
            state_heap: 0,
            key: Vec::new(),
        }
    }

    /// Approximate size in bytes.
    fn bytes(&self) -> usize {
        let per = std::mem::size_of::<S>() + 24 + 8;
        let groups = if self.classes > 0 {
            self.meta.len() * 24 + self.entries * 4
        } else {
            0
        };
        self.meta.len() * per
            + self.arena.len() * 8
            + self.counts.len() * 2
            + groups
            + self.state_heap
    }

    /// Record the configuration (`lin`, `state`); false when it was seen or is dominated.
    /// `heap` tells the heap bytes a stored state holds.
    #[inline]
    fn visit(&mut self, lin: &LinSet, state: &S, heap: impl FnOnce(&S) -> usize) -> bool {
        let dominance = self.classes > 0;
        let sh = state_hash(state).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = if dominance {
            lin.comp_key(&mut self.key);
            lin.comp_hash ^ sh
        } else {
            lin.key(&mut self.key);
            lin.hash ^ sh
        };
        let (meta, arena, states, key) = (&self.meta, &self.arena, &self.states, &self.key);
        let found = self
            .table
            .find(h, |&c| {
                let (ch, off, len) = meta[c as usize];
                ch == h && arena[off..off + len] == key[..] && states[c as usize] == *state
            })
            .copied();
        let cur = &lin.counts;
        match (found, dominance) {
            (Some(_), false) => return false,
            (Some(g), true) => {
                let counts = &self.counts;
                let n = self.classes;
                let vecs = &mut self.vecs[g as usize];
                let le = |off: u32, a_le_b: bool| {
                    let v = &counts[off as usize..off as usize + n];
                    if a_le_b {
                        v.iter().zip(cur).all(|(&a, &b)| u32::from(a) <= b)
                    } else {
                        v.iter().zip(cur).all(|(&a, &b)| b <= u32::from(a))
                    }
                };
                if vecs.iter().any(|&off| le(off, true)) {
                    return false;
                }
                // Keep the stored vectors an antichain: drop those the new one dominates.
                vecs.retain(|&off| !le(off, false));
                vecs.push(self.counts.len() as u32);
                self.counts.extend(cur.iter().map(|&c| c as u16));
            }
            (None, _) => {
                let idx = self.meta.len() as u32;
                self.meta.push((h, self.arena.len(), self.key.len()));
                self.arena.extend_from_slice(&self.key);
                self.states.push(state.clone());
                self.state_heap += heap(state);
                let meta = &self.meta;
                self.table.insert_unique(h, idx, |&c| meta[c as usize].0);
                if dominance {
                    self.vecs.push(vec![self.counts.len() as u32]);
                    self.counts.extend(cur.iter().map(|&c| c as u16));
                }
            }
        }
        self.entries += 1;
        true
    }
}

/// How hard a search prunes configurations that differ only in pending ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pruning {
    /// Exact cache on per-class counts first; when the part has pending ops and the search
    /// passes [`ESCALATE_ENTRIES`] configurations, switch to `Dominance` for the rest of the
    /// search (dropping the exact cache: forgetting visited configurations only costs repeated
    /// work). The dominance rules cost time on the (common) parts that are quickly linearizable,
    /// so only parts that turn out hard pay for them; the switch depends on configuration
    /// counts, not on timing.
    Auto,
    /// Also skip configurations dominated by a visited one (see [`Cache`]) or by skipping the
    /// pending op linearized last.
    Dominance,
}

/// Configurations after which an `Auto` search with pending ops switches to `Dominance`.
pub(crate) const ESCALATE_ENTRIES: usize = 200_000;

/// The WGL/Lowe search over one part. `ops[i]` are in invoke order. With `record_witness`, an
/// invalid outcome carries the deepest blocked point and its linearized prefix.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[PartOp<M::Op>],
    limits: &Limits<'_>,
    record_witness: bool,
    pruning: Pruning,
) -> (Outcome, Stats) {
    let n = ops.len();
    let mut stats = Stats::default();
    if n == 0 {
        return (Outcome::Valid(Vec::new()), stats);
    }
    if n >= (u32::MAX as usize - 2) / 2 {
        return (
            Outcome::Aborted(Cause::Other, format!("part too large: {n} ops")),
            stats,
        );
    }
    let (mut next, mut prev) = entry_list(ops);

    let mut lin = LinSet::new(ops);
    limits.memory.active.fetch_add(1, Ordering::Relaxed);
    let mut state = model.init();
    let mut remaining = ops.iter().filter(|o| o.ret().is_some()).count();

    let classes = lin.fields.len();
    let mut b = Budgeted {
        dominance: pruning == Pruning::Dominance && classes > 0,
        entries_before: 0,
        reported: 0,
    };
    let mut cache: Cache<M::State> = Cache::new(if b.dominance { classes } else { 0 });

    let mut stack: Vec<(u32, M::State)> = Vec::new();
    // Furthest blocking point so far: (return position, depth, blocked op), and its prefix. The
    // saved prefix is updated incrementally: `stable` is the lowest stack depth since the last save,
    // below which the stack and the saved prefix agree.
    let mut best: Option<(u64, usize, usize)> = None;
    let mut best_prefix: Vec<u32> = Vec::new();
    let mut stable = 0usize;
    let mut iters = 0u64;
    let mut entry = next[0];

    let outcome = loop {
        if remaining == 0 {
            break Outcome::Valid(stack.iter().map(|&(node, _)| (node - 1) / 2).collect());
        }
        iters += 1;
        if iters.is_multiple_of(CHECK_EVERY)
            && let Some(stop) = periodic(
                &mut b,
                &mut cache,
                classes,
                limits,
                stack.len(),
                n,
                &mut stats,
            )
        {
            break stop;
        }
        if entry == NIL {
            // Unreachable while a completed op remains: its return entry is in the list.
            break Outcome::Aborted(Cause::Other, "internal: ran off the entry list".into());
        }
        let e = entry as usize;
        if e & 1 == 1 {
            let id = (e - 1) / 2;
            if let Some(ns) = model.step(&state, &ops[id].op) {
                // Dominance: if the op linearized last is pending and this op leads to the same
                // state without it, this configuration is dominated by the one that skips it
                // (same state and completed ops, one more pending op still free to use later or
                // never), which the parent tries as well.
                if !b.dominance {
                } else if let Some((pnode, before)) = stack.last() {
                    let pid = (*pnode as usize - 1) / 2;
                    if ops[pid].ret().is_none()
                        && model.step(before, &ops[id].op).as_ref() == Some(&ns)
                    {
                        entry = next[e];
                        continue;
                    }
                }
                lin.set(id);
                if !cache.visit(&lin, &ns, |s| model.state_heap_bytes(s)) {
                    lin.clear(id);
                    entry = next[e];
                } else {
                    stack.push((entry, std::mem::replace(&mut state, ns)));
                    if ops[id].ret().is_some() {
                        remaining -= 1;
                    }
                    lift(&mut next, &mut prev, e);
                    entry = next[0];
                }
            } else {
                entry = next[e];
            }
        } else {
            let id = (e - 2) / 2;
            if record_witness {
                let pos = ops[id].ret().unwrap_or(u64::MAX);
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
                    state = s;
                    if ops[cid].ret().is_some() {
                        remaining += 1;
                    }
                    unlift(&mut next, &mut prev, c);
                    entry = next[c];
                }
            }
        }
    };
    let bytes = cache.bytes() + stack.len() * 32;
    stats.cache_bytes = stats.cache_bytes.max(bytes);
    stats.cache_entries = b.entries_before + cache.entries;
    limits.memory.used.fetch_sub(b.reported, Ordering::Relaxed);
    limits.memory.active.fetch_sub(1, Ordering::Relaxed);
    (outcome, stats)
}

/// The search's entry list over `ops` (in invoke order): node 0 is the head; op i has call node
/// 2i+1 and return node 2i+2, in position order (calls before returns at equal positions). Its
/// `next` and `prev` links.
fn entry_list<O>(ops: &[PartOp<O>]) -> (Vec<u32>, Vec<u32>) {
    let n = ops.len();
    let mut events: Vec<(u64, u32)> = Vec::with_capacity(2 * n);
    for (i, o) in ops.iter().enumerate() {
        events.push((o.call(), (2 * i + 1) as u32));
        events.push((o.ret().unwrap_or(u64::MAX), (2 * i + 2) as u32));
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
    (next, prev)
}

/// Lift: unlink the call node `e` and its return `e + 1`.
#[inline]
fn lift(next: &mut [u32], prev: &mut [u32], e: usize) {
    for node in [e, e + 1] {
        let (p, q) = (prev[node], next[node]);
        next[p as usize] = q;
        if q != NIL {
            prev[q as usize] = p;
        }
    }
}

/// Unlift: relink the return `c + 1`, then the call `c`.
#[inline]
fn unlift(next: &mut [u32], prev: &mut [u32], c: usize) {
    for node in [c + 1, c] {
        let (p, q) = (prev[node], next[node]);
        next[p as usize] = node as u32;
        if q != NIL {
            prev[q as usize] = node as u32;
        }
    }
}

/// What a search's periodic checks keep between them.
struct Budgeted {
    /// Dominance pruning is on (from the start, or since an `Auto` search escalated).
    dominance: bool,
    /// Configurations cached before a switch to dominance.
    entries_before: usize,
    /// Bytes this search added to the memory budget's `used`.
    reported: usize,
}

/// Every [`CHECK_EVERY`] iterations: an `Auto` search past [`ESCALATE_ENTRIES`] switches to
/// dominance, the cache's memory is accounted, and the search stops (the outcome returned) at
/// the settled point, past the memory budget, at the round's cap or at the deadline.
#[cold]
#[inline(never)]
fn periodic<S: Clone + Eq + Hash>(
    b: &mut Budgeted,
    cache: &mut Cache<S>,
    classes: usize,
    limits: &Limits<'_>,
    stack_len: usize,
    n: usize,
    stats: &mut Stats,
) -> Option<Outcome> {
    if !b.dominance && classes > 0 && cache.entries >= ESCALATE_ENTRIES {
        b.dominance = true;
        b.entries_before += cache.entries;
        *cache = Cache::new(classes);
        limits.memory.used.fetch_sub(b.reported, Ordering::Relaxed);
        b.reported = 0;
    }
    let bytes = cache.bytes() + stack_len * 32;
    if bytes > b.reported {
        limits
            .memory
            .used
            .fetch_add(bytes - b.reported, Ordering::Relaxed);
        b.reported = bytes;
    }
    stats.cache_bytes = stats.cache_bytes.max(bytes);
    let now = Instant::now();
    if limits.settled.passed(now) {
        return Some(Outcome::Aborted(Cause::Settled, String::new()));
    }
    if limits.memory.exhausted(b.reported) {
        return Some(Outcome::Aborted(
            Cause::Memory,
            format!(
                "memory budget exhausted: the check's {} were in use ({} configurations of this part cached)",
                human_bytes(limits.memory.cap),
                b.entries_before + cache.entries
            ),
        ));
    }
    if limits
        .max_entries
        .is_some_and(|m| b.entries_before + cache.entries >= m)
    {
        return Some(Outcome::Unfinished);
    }
    if let Some(d) = limits.deadline
        && now >= d
    {
        return Some(Outcome::Aborted(
            Cause::TimeLimit,
            format!(
                "time limit exceeded after {} configurations ({} of {} ops linearized at the time)",
                cache.entries, stack_len, n
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_op_keeps_its_interval_and_indices_in_eight_bytes() {
        let done = PartOp::new(0u8, 7, Some(9), true).unwrap();
        assert_eq!((done.call(), done.ret()), (7, Some(9)));
        assert_eq!((done.invoke_idx(), done.completion_idx()), (7, Some(9)));
        // An info completion: known, but it does not bound the interval.
        let mut info = PartOp::new(0u8, 3, Some(4), false).unwrap();
        assert_eq!((info.ret(), info.completion_idx()), (None, Some(4)));
        let never = PartOp::new(0u8, 5, None, true).unwrap();
        assert_eq!((never.ret(), never.completion_idx()), (None, None));
        let mut big = PartOp::new(0u8, (1 << 31) - 3, Some((1 << 31) - 2), true).unwrap();
        assert_eq!(big.ret(), Some((1 << 31) - 2));
        big.set_pending();
        info.set_pending();
        assert_eq!(
            (big.ret(), big.completion_idx()),
            (None, Some((1 << 31) - 2))
        );
        assert_eq!(info.completion_idx(), Some(4));
        assert!(PartOp::new(0u8, 1 << 31, None, false).is_none());
        assert!(PartOp::new(0u8, 1, Some((1 << 31) - 1), true).is_none());
        assert_eq!(std::mem::size_of::<PartOp<crate::model::RegisterOp>>(), 40);
    }

    fn pop(call: u64, ret: Option<u64>, op: u8) -> PartOp<u8> {
        PartOp::new(op, call as usize, ret.map(|r| r as usize), ret.is_some()).expect("small")
    }

    #[test]
    fn pending_ops_of_one_class_share_keys_and_hashes() {
        // Completed op 0; pending ops 1, 2 (class 7) and 3 (class 8).
        let ops = vec![
            pop(0, Some(5), 1),
            pop(1, None, 7),
            pop(2, None, 7),
            pop(3, None, 8),
        ];
        let mut a = LinSet::new(&ops);
        let mut b = LinSet::new(&ops);
        assert_eq!(a.classes(), 2);
        a.set(1);
        b.set(2);
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        a.key(&mut ka);
        b.key(&mut kb);
        assert_eq!(ka, kb);
        assert_eq!(a.hash, b.hash);
        // Two of class 7 differ from one of each class, and from one of class 7.
        a.set(2);
        b.set(3);
        let (mut ka2, mut kb2) = (Vec::new(), Vec::new());
        a.key(&mut ka2);
        b.key(&mut kb2);
        assert_ne!(ka2, kb2);
        assert_ne!(ka2, ka);
        assert_ne!(a.hash, b.hash);
        // Clearing restores the empty key and hash 0.
        for id in [1, 2] {
            a.clear(id);
        }
        a.set(0);
        a.clear(0);
        let mut k0 = Vec::new();
        a.key(&mut k0);
        assert_eq!(k0, vec![0, 0]);
        assert_eq!(a.hash, 0);
    }

    /// The dominance rules never change a verdict: on generated histories with many crashed ops,
    /// some made invalid by a stale read, `Dominance` agrees with the exact `Auto` search (which
    /// tests/knossos.rs checks against an exhaustive reference).
    #[test]
    fn dominance_pruning_agrees_with_exact_search() {
        use super::super::histgen::{GenConfig, corrupt_read, generate_register_history};
        use crate::model::{RegisterConfig, RegisterModel};
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let (mut invalid, mut pruned) = (0, 0);
        for seed in 0..300u64 {
            let g = GenConfig {
                processes_per_key: 3 + (seed % 4) as usize,
                ops: 10 + (seed % 30) as usize,
                info_probability: 0.3,
                value_range: 3,
                seed,
                ..GenConfig::default()
            };
            let mut h = generate_register_history(&g);
            if seed % 2 == 0 {
                corrupt_read(&mut h, seed as usize);
            }
            let parts = super::super::prepare(&m, &h).unwrap();
            let ops = &parts[0].ops;
            let stop = Stop::never(Instant::now());
            let mem = Memory::new(usize::MAX);
            let limits = Limits {
                deadline: None,
                settled: &stop,
                memory: &mem,
                max_entries: None,
            };
            let (a, sa) = search(&m, ops, &limits, true, Pruning::Auto);
            let (b, sb) = search(&m, ops, &limits, true, Pruning::Dominance);
            let verdict = |o: &Outcome| match o {
                Outcome::Valid(_) => "valid",
                Outcome::Invalid(_) => "invalid",
                Outcome::Aborted(..) | Outcome::Unfinished => "aborted",
            };
            assert_eq!(verdict(&a), verdict(&b), "seed {seed}");
            invalid += matches!(a, Outcome::Invalid(_)) as usize;
            pruned += (sb.cache_entries < sa.cache_entries) as usize;
        }
        assert!(invalid > 30 && invalid < 270, "{invalid} of 300 invalid");
        assert!(
            pruned > 30,
            "dominance pruned in only {pruned} of 300 searches"
        );
    }

    #[test]
    fn class_counts_pack_without_crossing_words() {
        // 40 classes of 3 members each need 2 bits each: 80 bits, two words.
        let ops: Vec<PartOp<u8>> = (0..120).map(|i| pop(i, None, (i % 40) as u8)).collect();
        let mut s = LinSet::new(&ops);
        for id in 0..120 {
            s.set(id);
        }
        let mut k = Vec::new();
        s.key(&mut k);
        assert_eq!(k.len(), 3);
        let total: u32 = k[1..]
            .iter()
            .map(|w| (0..32).map(|f| ((w >> (2 * f)) & 3) as u32).sum::<u32>())
            .sum();
        assert_eq!(total, 120);
    }
}
