//! Pure op generators: what to do next, given the time and which threads are free.
//!
//! Owns the [`Generator`] trait, its [`Context`], the combinators (Jepsen's generator idea adapted
//! to mutable Rust), the independent-key register workload, final reads and the nemesis schedules.
//! Does not own dispatching, clocks, clients or the history file: that is the interpreter. Nothing
//! here does IO or reads a clock; time comes from [`Context::time_ns`] and randomness only from the
//! `ChaCha8Rng` passed to [`Generator::next`], so the same seed and the same sequence of contexts and
//! updates yields the same ops.
//!
//! Thread choice: leaf generators ([`once`], [`repeat`], [`from_fn`] users, the workloads) pick a
//! uniformly random free *client* thread (`0..client_threads`) from the context they are given;
//! [`on_threads`] and [`each_thread`] narrow that context. Nemesis generators use
//! [`NEMESIS_THREAD`] only. [`once_on`] (or [`once`] of an [`Invocation`]) targets one named thread.
//!
//! Typical roots (the interpreter runs the phases itself):
//! ```
//! use rand::SeedableRng;
//! use shakedown_core::generator::*;
//! let workload = register_workload(RegisterConfig::default()).unwrap();
//! let keys = workload.keys_used();
//! // main phase, client root: ~100 ops/s for 60 s
//! let mut clients = time_limit(60_000_000_000, stagger(10_000_000, workload));
//! // main phase, nemesis root
//! let schedule = NemesisSchedule { faults: vec![], interval_ns: 5_000_000_000, sequential: false };
//! let _nemesis = time_limit(60_000_000_000, nemesis_cycle(schedule.clone()));
//! // then: nemesis_heal(&schedule) on the nemesis root, final_reads(keys) on the client root
//! let _heal = nemesis_heal(&schedule);
//! let _reads = final_reads(keys);
//! let ctx = Context::new(4, vec!["n1".to_string(), "n2".to_string()]);
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
//! match clients.next(&ctx, &mut rng) {
//!     Next::Op(op) => assert!(ctx.is_free(op.thread) && op.key.is_some()),
//!     other => panic!("expected an op, got {other:?}"),
//! }
//! ```

mod combinators;
pub mod kind;
pub mod lock;
pub mod log;
mod nemesis;
pub mod set;
#[cfg(test)]
pub(crate) mod sim;
pub mod stall;
#[cfg(test)]
mod tests;
pub mod txn;
mod workload;

pub use combinators::{
    Cycle, Delay, EachThread, FlipFlop, FromFn, Limit, Mix, OnThreads, Once, OnceOp, Repeat, Seq,
    Sleep, Stagger, TimeLimit, UntilOk, cycle, delay, each_thread, flip_flop, from_fn, limit, mix,
    on_threads, once, once_on, phases, repeat, seq, sleep, stagger, time_limit, until_ok,
};
pub use kind::{Knob, WorkloadKind};
pub use nemesis::{
    FaultOps, NemesisCycle, NemesisHeal, NemesisSchedule, NemesisStack, WithClockOffsets,
    nemesis_cycle, nemesis_heal, nemesis_once, nemesis_stack, with_clock_offsets,
};
pub use set::{SetConfig, SetWorkload, set_workload};
pub use workload::{
    FinalReads, FinalReadsConfig, KeyLog, ListAppendConfig, ListAppendWorkload, RegisterConfig,
    RegisterWorkload, WorkloadConfigError, final_reads, final_reads_with, list_append_workload,
    register_workload,
};

use crate::history::Process;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeSet;

/// Client threads are `0..n`; the nemesis thread is [`NEMESIS_THREAD`].
pub type ThreadId = usize;

/// The one nemesis thread.
pub const NEMESIS_THREAD: ThreadId = usize::MAX;

/// What a generator may look at when asked for an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// Now, in nanoseconds since the run started (monotonic).
    pub time_ns: u64,
    /// Threads with no op in flight (client threads and possibly [`NEMESIS_THREAD`]).
    pub free: BTreeSet<ThreadId>,
    /// Current process id of client thread `i` (changes after an `info` completion).
    pub processes: Vec<u64>,
    /// Number of client threads; client threads are `0..client_threads`.
    pub client_threads: usize,
    /// Node names, e.g. `n1..n5`; client thread `i` is bound to `nodes[i % nodes.len()]`.
    pub nodes: Vec<String>,
}

impl Context {
    /// A context at time 0 with every client thread and the nemesis free, thread `i` running
    /// process `i`.
    pub fn new(client_threads: usize, nodes: Vec<String>) -> Context {
        let mut free: BTreeSet<ThreadId> = (0..client_threads).collect();
        free.insert(NEMESIS_THREAD);
        Context {
            time_ns: 0,
            free,
            processes: (0..client_threads as u64).collect(),
            client_threads,
            nodes,
        }
    }

    /// True if `thread` has no op in flight.
    pub fn is_free(&self, thread: ThreadId) -> bool {
        self.free.contains(&thread)
    }

    /// The process an op on `thread` would be recorded under right now.
    pub fn process_of(&self, thread: ThreadId) -> Process {
        if thread == NEMESIS_THREAD {
            return Process::Nemesis;
        }
        Process::Client(self.processes.get(thread).copied().unwrap_or(thread as u64))
    }

    /// The node client thread `thread` is bound to, if there are nodes.
    pub fn node_of(&self, thread: ThreadId) -> Option<&str> {
        if thread == NEMESIS_THREAD || self.nodes.is_empty() {
            return None;
        }
        Some(self.nodes[thread % self.nodes.len()].as_str())
    }

    /// Free client threads, ascending.
    pub fn free_clients(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.free.range(..self.client_threads).copied()
    }
}

/// An op a generator wants the interpreter to invoke.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// Thread to run it on; always free in the context the generator was asked with.
    pub thread: ThreadId,
    /// Earliest time to dispatch it, ns since run start; the interpreter uses `max(time_ns, now)`.
    pub time_ns: u64,
    /// Function name, e.g. `read`, `write`, `cas`, `start-partition`.
    pub f: String,
    /// Key for independent-key workloads.
    pub key: Option<String>,
    /// Argument (`null` for reads).
    pub value: Value,
}

/// An op without a thread or time yet: what leaf generators are built from.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSpec {
    /// Function name.
    pub f: String,
    /// Key for independent-key workloads.
    pub key: Option<String>,
    /// Argument.
    pub value: Value,
}

impl OpSpec {
    /// An op spec from its parts.
    pub fn new(f: impl Into<String>, key: Option<String>, value: Value) -> OpSpec {
        OpSpec {
            f: f.into(),
            key,
            value,
        }
    }

    /// Bind to a thread and a time.
    pub fn at(self, thread: ThreadId, time_ns: u64) -> Invocation {
        Invocation {
            thread,
            time_ns,
            f: self.f,
            key: self.key,
            value: self.value,
        }
    }
}

/// What a generator answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Invoke this op.
    Op(Invocation),
    /// Nothing now; ask again after the next event or tick.
    Pending,
    /// Exhausted forever.
    Done,
}

/// A source of ops. See the module doc for the determinism contract.
pub trait Generator: Send {
    /// Next op. Contract: an Op's thread is in `ctx.free`; the interpreter WILL dispatch it at
    /// `max(op.time_ns, now)` and will not call `next()` again until it has (so the generator may
    /// commit its state when returning Op). Pending = nothing now, ask again after the next
    /// event/tick. Done = exhausted forever.
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next;

    /// Every invoke and completion the interpreter records, in order.
    fn update(&mut self, _ctx: &Context, _event: &crate::history::Op) {}
}

impl<G: Generator + ?Sized> Generator for Box<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        (**self).next(ctx, rng)
    }

    fn update(&mut self, ctx: &Context, event: &crate::history::Op) {
        (**self).update(ctx, event)
    }
}

/// Box a generator.
pub fn boxed<G: Generator + 'static>(g: G) -> Box<dyn Generator> {
    Box::new(g)
}

/// A uniformly random free client thread, or `None` if every client thread is busy.
/// Allocation-free; O(client threads).
pub fn pick_free_client(ctx: &Context, rng: &mut ChaCha8Rng) -> Option<ThreadId> {
    let n = ctx.free_clients().count();
    if n == 0 {
        return None;
    }
    ctx.free_clients().nth(rng.random_range(0..n))
}

/// Like [`pick_free_client`] but avoids `avoid` when another free client thread exists.
pub(crate) fn pick_free_client_avoiding(
    ctx: &Context,
    rng: &mut ChaCha8Rng,
    avoid: Option<ThreadId>,
) -> Option<ThreadId> {
    let Some(avoid) = avoid else {
        return pick_free_client(ctx, rng);
    };
    let n = ctx.free_clients().filter(|&t| t != avoid).count();
    if n == 0 {
        return pick_free_client(ctx, rng);
    }
    ctx.free_clients()
        .filter(|&t| t != avoid)
        .nth(rng.random_range(0..n))
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn context_new_frees_every_thread_and_binds_nodes() {
        let ctx = Context::new(3, vec!["n1".into(), "n2".into()]);
        assert_eq!(ctx.free.len(), 4);
        assert!(ctx.is_free(NEMESIS_THREAD));
        assert_eq!(ctx.free_clients().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(ctx.node_of(2), Some("n1"));
        assert_eq!(ctx.node_of(NEMESIS_THREAD), None);
        assert_eq!(ctx.process_of(1), Process::Client(1));
        assert_eq!(ctx.process_of(NEMESIS_THREAD), Process::Nemesis);
    }

    #[test]
    fn pick_free_client_ignores_nemesis_and_busy_threads() {
        use rand::SeedableRng;
        let mut ctx = Context::new(3, vec![]);
        ctx.free.remove(&1);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            seen.insert(pick_free_client(&ctx, &mut rng).unwrap());
        }
        assert_eq!(seen, BTreeSet::from([0, 2]));
        for _ in 0..50 {
            assert_eq!(pick_free_client_avoiding(&ctx, &mut rng, Some(0)), Some(2));
        }
        ctx.free.remove(&0);
        ctx.free.remove(&2);
        assert_eq!(pick_free_client(&ctx, &mut rng), None);
    }
}
