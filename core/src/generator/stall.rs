//! Client-side stalls (the `stall` nemesis): a client thread stops for a drawn time before its
//! next op of a given kind, as a process in a long GC pause would (for the lock workloads: a
//! holder before its next protected write, so its lease may expire meanwhile).
//!
//! Owns the [`StallBoard`] the nemesis posts stall requests on and reads claims from, and the
//! [`StallGate`] generator wrapper that honours them: it holds back the stalled thread's next op
//! (the op is not invoked, so the history shows the thread idle, not a slow op) and lets every
//! other thread go on. Does not own the nemesis ops (`nemesis::stall` waits on the board) nor
//! which ops a stall applies to (the caller's predicate). Pure: no IO, no clock; the board is
//! shared memory, like [`super::KeyLog`].

use super::{Context, Generator, Invocation, Next};
use crate::history::Op;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::faults::stall::{DEFAULT_MAX_MS, DEFAULT_MIN_MS};

/// A request for one stall, posted by the nemesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallRequest {
    /// Identifies the request and, once claimed, its stall.
    pub id: u64,
    /// Shortest stall drawn, in ms.
    pub min_ms: u64,
    /// Longest stall drawn, in ms.
    pub max_ms: u64,
}

/// A stall in progress or done: which thread and process, its op held back, and for how long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stall {
    /// The request's id.
    pub id: u64,
    /// The client thread stalled.
    pub thread: usize,
    /// Its process at the time (the one the history names).
    pub process: u64,
    /// The `f` of the op held back.
    pub f: String,
    /// The key of the op held back (for the lock workloads: the lock held).
    pub key: Option<String>,
    /// The drawn stall, in ms.
    pub duration_ms: u64,
    /// When the stall began, ns since the run started.
    pub from_ns: u64,
    /// True once the held op was released (or dropped at the end of the phase).
    pub ended: bool,
}

#[derive(Debug, Default)]
struct BoardState {
    next_id: u64,
    requests: Vec<StallRequest>,
    stalls: Vec<Stall>,
}

/// Shared between the nemesis (posts requests, waits for claims and ends) and the client
/// generator's [`StallGate`] (claims requests, ends stalls).
#[derive(Debug, Clone, Default)]
pub struct StallBoard(Arc<Mutex<BoardState>>);

impl StallBoard {
    /// An empty board.
    pub fn new() -> StallBoard {
        StallBoard::default()
    }

    fn lock(&self) -> MutexGuard<'_, BoardState> {
        // A poisoned lock still holds valid plain data.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ask for one stall of a duration drawn uniform in `[min_ms, max_ms]`; returns its id.
    pub fn post(&self, min_ms: u64, max_ms: u64) -> u64 {
        let mut b = self.lock();
        b.next_id += 1;
        let id = b.next_id;
        b.requests.push(StallRequest {
            id,
            min_ms: min_ms.min(max_ms),
            max_ms: max_ms.max(min_ms),
        });
        id
    }

    /// Withdraw request `id` if no thread claimed it yet; true when it was withdrawn.
    pub fn withdraw(&self, id: u64) -> bool {
        let mut b = self.lock();
        let before = b.requests.len();
        b.requests.retain(|r| r.id != id);
        b.requests.len() != before
    }

    /// The stall that claimed request `id`, if one did.
    pub fn claimed(&self, id: u64) -> Option<Stall> {
        self.lock().stalls.iter().find(|s| s.id == id).cloned()
    }

    /// Stalls claimed and not yet ended.
    pub fn unfinished(&self) -> Vec<Stall> {
        self.lock()
            .stalls
            .iter()
            .filter(|s| !s.ended)
            .cloned()
            .collect()
    }

    /// Mark every stall ended (the nemesis gave up waiting, or the run is over) and drop
    /// unclaimed requests; returns the stalls that were still running.
    pub fn end_all(&self) -> Vec<Stall> {
        let mut b = self.lock();
        b.requests.clear();
        let mut ended = Vec::new();
        for s in b.stalls.iter_mut().filter(|s| !s.ended) {
            s.ended = true;
            ended.push(s.clone());
        }
        ended
    }

    fn take_request(&self) -> Option<StallRequest> {
        let mut b = self.lock();
        (!b.requests.is_empty()).then(|| b.requests.remove(0))
    }

    fn record(&self, stall: Stall) {
        self.lock().stalls.push(stall);
    }

    fn finish(&self, id: u64) {
        if let Some(s) = self.lock().stalls.iter_mut().find(|s| s.id == id) {
            s.ended = true;
        }
    }
}

/// Claim the oldest request for `thread` as the gate would (tests of the board's readers);
/// returns the stall's id. Public for the shell's tests (they are another crate).
#[doc(hidden)]
pub fn claim_for_test(board: &StallBoard, thread: usize) -> u64 {
    let req = board.take_request().expect("a posted request");
    board.record(Stall {
        id: req.id,
        thread,
        process: thread as u64,
        f: String::new(),
        key: None,
        duration_ms: req.max_ms,
        from_ns: 0,
        ended: false,
    });
    req.id
}

/// The generator wrapper that honours stall requests; see [`stall_gate`].
pub struct StallGate<G> {
    inner: G,
    board: StallBoard,
    applies: fn(&str) -> bool,
    /// The op held back, when its stall ends (ns), and the stall's id.
    held: Option<(Invocation, u64, u64)>,
}

/// Wrap `inner`: when the board has a request and `inner` hands out an op whose `f` satisfies
/// `applies`, that op is held back for a duration drawn uniform in the request's bounds (from
/// the generator's RNG), the stall is recorded on the board, and `inner` is asked again with the
/// stalled thread taken out of the free set. When the stall is over the held op is handed out
/// first. One stall at a time.
pub fn stall_gate<G: Generator>(
    inner: G,
    board: StallBoard,
    applies: fn(&str) -> bool,
) -> StallGate<G> {
    StallGate {
        inner,
        board,
        applies,
        held: None,
    }
}

impl<G: Generator> Generator for StallGate<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if let Some((inv, until_ns, id)) = &self.held
            && ctx.time_ns >= *until_ns
            && ctx.is_free(inv.thread)
        {
            let (id, inv) = (*id, inv.clone());
            self.held = None;
            self.board.finish(id);
            return Next::Op(Invocation {
                time_ns: ctx.time_ns,
                ..inv
            });
        }
        let mut narrowed;
        let ctx = match &self.held {
            Some((inv, _, _)) => {
                narrowed = ctx.clone();
                narrowed.free.remove(&inv.thread);
                &narrowed
            }
            None => ctx,
        };
        let next = self.inner.next(ctx, rng);
        let Next::Op(inv) = next else {
            return next;
        };
        if self.held.is_some() || !(self.applies)(&inv.f) {
            return Next::Op(inv);
        }
        let Some(req) = self.board.take_request() else {
            return Next::Op(inv);
        };
        let duration_ms = rng.random_range(req.min_ms..=req.max_ms);
        let process = match ctx.process_of(inv.thread) {
            crate::history::Process::Client(p) => p,
            crate::history::Process::Nemesis => u64::MAX,
        };
        self.board.record(Stall {
            id: req.id,
            thread: inv.thread,
            process,
            f: inv.f.clone(),
            key: inv.key.clone(),
            duration_ms,
            from_ns: ctx.time_ns,
            ended: false,
        });
        let until_ns = ctx.time_ns + duration_ms.saturating_mul(1_000_000);
        let thread = inv.thread;
        self.held = Some((inv, until_ns, req.id));
        narrowed = ctx.clone();
        narrowed.free.remove(&thread);
        self.inner.next(&narrowed, rng)
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::lock::{self, LockConfig};
    use crate::generator::sim;

    #[test]
    fn a_posted_stall_holds_back_one_protected_write_of_one_thread() {
        let board = StallBoard::new();
        let workload = lock::lock_workload(LockConfig {
            locks: 1,
            min_hold_ms: 100,
            max_hold_ms: 100,
            ..LockConfig::default()
        })
        .unwrap();
        let mut g = stall_gate(workload, board.clone(), lock::is_protected);
        let id = board.post(3000, 3000);
        let mut sim = sim::Sim::new(3, 9);
        sim.run(&mut g, 6_000_000_000);
        let stall = board.claimed(id).expect("claimed");
        assert!(stall.ended);
        assert!(lock::is_protected(&stall.f));
        assert_eq!(stall.duration_ms, 3000);
        // The stalled thread's next op was dispatched no earlier than the stall's end, and the
        // other threads kept working meanwhile.
        let from = stall.from_ns;
        let until = from + 3_000_000_000;
        let next_of_thread = sim
            .dispatched
            .iter()
            .find(|i| i.thread == stall.thread && i.time_ns >= from)
            .unwrap();
        assert!(next_of_thread.time_ns >= until, "{next_of_thread:?}");
        assert_eq!(next_of_thread.f, stall.f);
        let others = sim
            .dispatched
            .iter()
            .filter(|i| i.thread != stall.thread && i.time_ns > from && i.time_ns < until)
            .count();
        assert!(others > 10, "{others}");
        assert!(board.unfinished().is_empty());
    }

    #[test]
    fn an_unclaimed_request_can_be_withdrawn_and_end_all_ends_running_stalls() {
        let board = StallBoard::new();
        let id = board.post(10, 5);
        assert!(board.withdraw(id));
        assert!(!board.withdraw(id));
        assert_eq!(board.claimed(id), None);
        board.post(1, 1);
        assert!(board.end_all().is_empty());
        assert_eq!(board.take_request(), None);
    }
}
