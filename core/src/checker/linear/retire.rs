//! Which keys of a history are *retired*: no later op will touch them, so far as the history read
//! so far can tell, and their sub-history can be checked and dropped.
//!
//! The register and list-append workloads move each group of threads to a fresh key after
//! `ops_per_key` ops and never return to a key they left. A key is retired once every thread that
//! worked on it has since invoked an op on another key (or, with an idle bound, has not been seen
//! for that many ops: a crashed process never comes back, and a generator's last processes just
//! stop) and no op on it is open. It is a guess from the history alone, never a proof: an op on a
//! key after it was handed out is counted as *late* ([`Retirement::late_keys`]) and the caller must
//! not trust what it decided about that key without it.
//!
//! Owns the bookkeeping only (pure; fed ops in history order). Used by live checking
//! (`runner::live`, threads are `process % concurrency` as the interpreter numbers them) and by
//! the streamed check (`stream`, each process a thread, with the idle bound).
//! Does not own checking what it hands out.

use crate::history::{Name, Op, OpType, Process};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A `HashMap` with rustc-hash's hasher, for the maps fed every op: their keys are interned names
/// (hashed once, when interned) and process numbers, which need no defence against collisions
/// crafted by an attacker, and SipHash was a tenth of the streamed check's time.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// A `HashSet` with rustc-hash's hasher (see [`FastMap`]).
pub type FastSet<K> = rustc_hash::FxHashSet<K>;

/// How client processes map to the threads whose moves retire keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// A run's `concurrency` threads: process `p` is thread `p % concurrency` (a thread whose op
    /// ends `info` goes on as `process + concurrency`).
    Modulo(u64),
    /// Every process is its own thread (a history file whose thread count is not known).
    Process,
}

/// One key's ops while it is not yet retired.
#[derive(Debug, Default)]
struct KeyOps {
    /// Its ops in history order, with their history `index`.
    ops: Vec<Op>,
    /// Invokes without their completion yet.
    open: usize,
    /// Some thread invoked an op on it.
    touched: bool,
    /// Threads whose last invoke was on it and that have not gone idle since: the key is not
    /// left while any is.
    staying: usize,
    /// With a grace: when it looked retired last, it is handed out at this count of pushed ops
    /// unless an op reopens it before.
    due: Option<u64>,
}

impl KeyOps {
    fn retired(&self) -> bool {
        self.open == 0 && self.touched && self.staying == 0
    }
}

/// What is known of one thread.
#[derive(Debug, Clone)]
struct ThreadAt {
    /// The key it last invoked an op on (until it goes idle).
    key: Option<Name>,
    /// When it was last seen (in pushed ops), for the idle bound.
    seen: u64,
}

/// The most ops a new key's buffer is made ready for (the size of the key handed out last).
const TYPICAL_OPS_MOST: usize = 4096;

/// Which keys are retired (see the module doc): fed client ops in history order, it hands out
/// each key's ops once it looks retired.
#[derive(Debug)]
pub struct Retirement {
    threads: Threads,
    /// A thread not seen for this many ops counts as having left its key.
    idle_after: Option<u64>,
    /// A key that looks retired is handed out only after this many more ops without one on it.
    grace: Option<u64>,
    /// Keys waiting out their grace, by due count.
    waiting: VecDeque<(u64, Name)>,
    keys: FastMap<Name, KeyOps>,
    /// Every thread seen (and not gone idle since).
    thread_at: FastMap<u64, ThreadAt>,
    /// With the idle bound: one entry per thread in `thread_at`, a time it was seen at; when
    /// that comes due and the thread was seen since, the entry moves to its newest sighting.
    sightings: BinaryHeap<Reverse<(u64, u64)>>,
    /// Keys already handed out.
    retired: FastSet<Name>,
    /// Keys handed out that got an op afterwards, and how many such ops.
    late: FastMap<Name, u64>,
    /// Ops held for keys not yet retired.
    buffered: usize,
    /// Keyed client ops pushed so far (the clock of the idle bound).
    pushed: u64,
    /// How many ops the key handed out last had: a new key's buffer starts that big.
    typical: usize,
    /// Keys that may have become retired with the op being pushed (kept for its allocation).
    candidates: Vec<Name>,
}

impl Retirement {
    /// Bookkeeping for a run of `concurrency` client threads (live checking).
    pub fn new(concurrency: usize) -> Retirement {
        Retirement::with(Threads::Modulo(concurrency.max(1) as u64), None)
    }

    /// Bookkeeping with `threads` and, when given, the idle bound in ops.
    pub fn with(threads: Threads, idle_after: Option<u64>) -> Retirement {
        Retirement {
            threads,
            idle_after,
            grace: None,
            waiting: VecDeque::new(),
            keys: FastMap::default(),
            thread_at: FastMap::default(),
            sightings: BinaryHeap::new(),
            retired: FastSet::default(),
            late: FastMap::default(),
            buffered: 0,
            pushed: 0,
            typical: 0,
            candidates: Vec::new(),
        }
    }

    /// Hand a key out only once `ops` more ops went by without one on it (a thread that is
    /// behind the others in time may still come to a key they all left: the stream's processes
    /// are not known to be a group).
    pub fn with_grace(mut self, ops: u64) -> Retirement {
        self.grace = Some(ops);
        self
    }

    /// Feed the next op of the history; returns the keys it retires, each with its ops. Ops that
    /// are not a client's or carry no key are ignored (the caller keeps them if it needs them).
    pub fn push(&mut self, op: Op) -> Vec<(String, Vec<Op>)> {
        let (Process::Client(p), Some(key)) = (op.process, op.key.clone()) else {
            return Vec::new();
        };
        if !self.keys.contains_key(&key) && self.retired.contains(&key) {
            *self.late.entry(key).or_default() += 1;
            return Vec::new();
        }
        let thread = match self.threads {
            Threads::Modulo(c) => p % c,
            Threads::Process => p,
        };
        self.pushed += 1;
        let mut candidates = std::mem::take(&mut self.candidates);
        let invoke = op.op_type == OpType::Invoke;
        let pushed = self.pushed;
        let mut new_thread = false;
        let at = self.thread_at.entry(thread).or_insert_with(|| {
            new_thread = true;
            ThreadAt {
                key: None,
                seen: pushed,
            }
        });
        at.seen = pushed;
        // An invoke on another key than the thread's last: it is on this one now.
        let arrives = invoke && at.key.as_ref() != Some(&key);
        let moved_from = if arrives {
            at.key.replace(key.clone())
        } else {
            None
        };
        let typical = self.typical;
        let entry = self.keys.entry(key.clone()).or_insert_with(|| KeyOps {
            ops: Vec::with_capacity(typical),
            ..KeyOps::default()
        });
        entry.due = None;
        entry.staying += usize::from(arrives);
        if invoke {
            entry.open += 1;
            entry.touched = true;
        } else {
            entry.open = entry.open.saturating_sub(1);
            candidates.push(key.clone());
        }
        entry.ops.push(op);
        self.buffered += 1;
        if let Some(prev) = moved_from {
            self.leave(prev, &mut candidates);
        }
        if let Some(idle) = self.idle_after {
            if new_thread {
                self.sightings.push(Reverse((pushed, thread)));
            }
            self.idle_threads(idle, &mut candidates);
        }
        let mut out = Vec::new();
        for k in candidates.drain(..) {
            if let Some(grace) = self.grace {
                if let Some(ops) = self.keys.get_mut(&k).filter(|o| o.retired()) {
                    ops.due = Some(self.pushed + grace);
                    self.waiting.push_back((self.pushed + grace, k));
                }
            } else if self.keys.get(&k).is_some_and(KeyOps::retired) {
                self.hand_out(k, &mut out);
            }
        }
        self.candidates = candidates;
        while let Some((due, _)) = self.waiting.front()
            && *due <= self.pushed
        {
            let Some((due, k)) = self.waiting.pop_front() else {
                break;
            };
            if self.keys.get(&k).is_some_and(|o| o.due == Some(due)) {
                self.hand_out(k, &mut out);
            }
        }
        out
    }

    /// A thread left `key` (it invoked an op on another, or went idle): a candidate.
    fn leave(&mut self, key: Name, candidates: &mut Vec<Name>) {
        if let Some(k) = self.keys.get_mut(&key) {
            k.staying = k.staying.saturating_sub(1);
            candidates.push(key);
        }
    }

    fn hand_out(&mut self, k: Name, out: &mut Vec<(String, Vec<Op>)>) {
        if let Some(ops) = self.keys.remove(&k) {
            self.buffered = self.buffered.saturating_sub(ops.ops.len());
            self.typical = ops.ops.len().min(TYPICAL_OPS_MOST);
            out.push((k.to_string(), ops.ops));
            self.retired.insert(k);
        }
    }

    /// Threads not seen for `idle` ops leave their key: it becomes a candidate.
    fn idle_threads(&mut self, idle: u64, candidates: &mut Vec<Name>) {
        while let Some(&Reverse((at, thread))) = self.sightings.peek() {
            if at + idle > self.pushed {
                break;
            }
            self.sightings.pop();
            let Some(t) = self.thread_at.get(&thread).cloned() else {
                continue;
            };
            if t.seen != at {
                // Seen since: due again `idle` ops after that (not yet: it is newer than `at`).
                self.sightings.push(Reverse((t.seen, thread)));
                continue;
            }
            self.thread_at.remove(&thread);
            if let Some(key) = t.key {
                self.leave(key, candidates);
            }
        }
    }

    /// Every key not retired yet, with its ops, in order of each key's first op (the end of the
    /// history: nothing more will come). They count as retired from now on.
    pub fn drain(&mut self) -> Vec<(String, Vec<Op>)> {
        self.waiting.clear();
        let mut keys: Vec<(Name, KeyOps)> = self.keys.drain().collect();
        keys.sort_by_key(|(_, k)| k.ops.first().map_or(0, |o| o.index));
        self.buffered = 0;
        keys.into_iter()
            .map(|(name, k)| {
                let out = (name.to_string(), k.ops);
                self.retired.insert(name);
                out
            })
            .collect()
    }

    /// True once `key` was handed out (an op on it now is late).
    pub fn is_retired(&self, key: &Name) -> bool {
        !self.keys.contains_key(key) && self.retired.contains(key)
    }

    /// Keys seen and not retired yet.
    pub fn open_keys(&self) -> usize {
        self.keys.len()
    }

    /// Ops held for keys not retired yet.
    pub fn buffered_ops(&self) -> usize {
        self.buffered
    }

    /// Ops seen on keys already retired.
    pub fn late_ops(&self) -> u64 {
        self.late.values().sum()
    }

    /// The keys that got an op after they were handed out.
    pub fn late_keys(&self) -> impl Iterator<Item = &Name> {
        self.late.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn op(index: u64, t: OpType, p: u64, key: &str) -> Op {
        let mut o = Op::new(t, Process::Client(p), "read", Value::Null);
        o.index = index;
        o.key = Some(key.into());
        o
    }

    fn keys_of(out: Vec<(String, Vec<Op>)>) -> Vec<String> {
        out.into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn a_key_retires_when_every_thread_left_it_and_no_op_is_open() {
        // Two threads (0, 1) on key a; both move to key c.
        let mut r = Retirement::new(2);
        let mut i = 0;
        let mut push = |r: &mut Retirement, t, p, k: &str| {
            i += 1;
            keys_of(r.push(op(i, t, p, k)))
        };
        assert!(push(&mut r, OpType::Invoke, 0, "a").is_empty());
        assert!(push(&mut r, OpType::Invoke, 1, "a").is_empty());
        assert!(push(&mut r, OpType::Ok, 0, "a").is_empty());
        // Thread 0 moves on; thread 1 is still on a, its op open.
        assert!(push(&mut r, OpType::Invoke, 0, "c").is_empty());
        // Thread 1's op ends info: it goes on as process 3 (thread 1), on key c.
        assert!(push(&mut r, OpType::Info, 1, "a").is_empty());
        assert_eq!(push(&mut r, OpType::Invoke, 3, "c"), vec!["a".to_string()]);
        assert_eq!((r.open_keys(), r.buffered_ops()), (1, 2));
        // A final read of a retired key is late, not a reopening.
        assert!(push(&mut r, OpType::Invoke, 0, "a").is_empty());
        assert_eq!(r.late_ops(), 1);
        assert_eq!(r.late_keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn an_open_op_holds_a_key_back_until_it_completes() {
        let mut r = Retirement::new(1);
        assert!(r.push(op(0, OpType::Invoke, 0, "a")).is_empty());
        assert!(r.push(op(1, OpType::Ok, 0, "a")).is_empty());
        let out = r.push(op(2, OpType::Invoke, 0, "b"));
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].1.iter().map(|o| o.index).collect::<Vec<_>>(),
            vec![0, 1],
            "the retired key's ops, with their history positions"
        );
        // Nemesis ops and ops without a key are not a key's.
        let mut n = Op::new(
            OpType::Info,
            Process::Nemesis,
            "start-partition",
            Value::Null,
        );
        n.index = 3;
        assert!(r.push(n).is_empty());
        assert_eq!(r.open_keys(), 1);
    }

    #[test]
    fn with_a_grace_a_key_touched_again_soon_is_reopened_not_late() {
        let mut r = Retirement::with(Threads::Process, None).with_grace(2);
        assert!(r.push(op(0, OpType::Invoke, 0, "a")).is_empty());
        assert!(r.push(op(1, OpType::Ok, 0, "a")).is_empty());
        // Process 0 leaves a: it looks retired, but waits out its grace.
        assert!(r.push(op(2, OpType::Invoke, 0, "b")).is_empty());
        // Process 1, behind in time, comes to a: not late, a is open again.
        assert!(r.push(op(3, OpType::Invoke, 1, "a")).is_empty());
        assert!(r.push(op(4, OpType::Ok, 1, "a")).is_empty());
        assert!(r.push(op(5, OpType::Invoke, 1, "c")).is_empty());
        assert!(r.push(op(6, OpType::Ok, 0, "b")).is_empty());
        let out = r.push(op(7, OpType::Invoke, 0, "d"));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, "a");
        assert_eq!(out[0].1.len(), 4, "every op of a, its reopening's too");
        assert_eq!(r.late_ops(), 0);
    }

    #[test]
    fn a_busy_process_never_counts_as_idle_however_long_it_stays() {
        // Process 1 does one op on b and stops; process 0 works on a for many idle windows.
        let mut r = Retirement::with(Threads::Process, Some(3));
        assert!(r.push(op(0, OpType::Invoke, 1, "b")).is_empty());
        assert!(r.push(op(1, OpType::Ok, 1, "b")).is_empty());
        let mut handed = Vec::new();
        for i in 0..20 {
            let t = if i % 2 == 0 {
                OpType::Invoke
            } else {
                OpType::Ok
            };
            handed.extend(keys_of(r.push(op(2 + i, t, 0, "a"))));
        }
        assert_eq!(handed, ["b"], "b once process 1 was idle; a never");
        assert_eq!(r.open_keys(), 1);
        // Process 0 moves on: a is left.
        assert_eq!(keys_of(r.push(op(22, OpType::Invoke, 0, "c"))), ["a"]);
    }

    #[test]
    fn per_process_a_crashed_process_leaves_its_key_once_idle() {
        // Processes 0 and 1 on a; 1 crashes (info) and never comes back; 0 moves to b.
        let mut r = Retirement::with(Threads::Process, Some(3));
        assert!(r.push(op(0, OpType::Invoke, 0, "a")).is_empty());
        assert!(r.push(op(1, OpType::Invoke, 1, "a")).is_empty());
        assert!(r.push(op(2, OpType::Ok, 0, "a")).is_empty());
        assert!(r.push(op(3, OpType::Info, 1, "a")).is_empty());
        // Process 0 left a, but process 1 has not been idle long enough.
        assert!(r.push(op(4, OpType::Invoke, 0, "b")).is_empty());
        assert!(r.push(op(5, OpType::Ok, 0, "b")).is_empty());
        // Three ops after its last, process 1 counts as gone: a retires.
        let out = keys_of(r.push(op(6, OpType::Invoke, 0, "b")));
        assert_eq!(out, ["a"]);
        // Without the idle bound, a crashed process holds its key to the end.
        let mut r = Retirement::with(Threads::Process, None);
        for (i, t, p, k) in [
            (0, OpType::Invoke, 0, "a"),
            (1, OpType::Info, 0, "a"),
            (2, OpType::Invoke, 1, "b"),
            (3, OpType::Ok, 1, "b"),
            (4, OpType::Invoke, 1, "c"),
        ] {
            let out = keys_of(r.push(op(i, t, p, k)));
            assert!(i != 4 || out == ["b"], "{out:?}");
        }
        assert_eq!(r.open_keys(), 2);
        let rest = r.drain();
        assert_eq!(keys_of(rest), ["a", "c"], "in order of first op");
        assert_eq!((r.open_keys(), r.buffered_ops()), (0, 0));
    }
}
