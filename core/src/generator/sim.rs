//! Test-only simulated-time driver for generators: a tiny interpreter with no IO.
//!
//! Owns nothing outside tests. Follows the interpreter contract: an op is dispatched at
//! `max(op.time_ns, now)`, completions that fall due before that are delivered first, `update` sees
//! every invoke and completion in order, and a thread whose op ends `info` gets a new process.

use super::{Context, Generator, Invocation, NEMESIS_THREAD, Next, ThreadId};
use crate::history::{Op, OpType};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeMap;

/// Chooses how an op ends.
pub type OutcomeFn = Box<dyn FnMut(&Invocation, &mut ChaCha8Rng) -> OpType>;
/// Chooses how long an op takes, in ns.
pub type LatencyFn = Box<dyn FnMut(&Invocation, &mut ChaCha8Rng) -> u64>;

/// How a simulated run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The generator said Done (and every in-flight op completed).
    Done,
    /// Simulated time passed the limit first.
    TimedOut,
}

/// A simulated cluster of `client_threads` threads plus the nemesis.
pub struct Sim {
    /// The context handed to the generator.
    pub ctx: Context,
    /// The generator's RNG.
    pub rng: ChaCha8Rng,
    /// Every invoke and completion, in order.
    pub history: Vec<Op>,
    /// Ops as dispatched: `time_ns` is the actual dispatch time.
    pub dispatched: Vec<Invocation>,
    /// Times at which the generator answered Pending.
    pub pendings: u64,
    sim_rng: ChaCha8Rng,
    /// (completion time, sequence) -> (thread, invoke op)
    in_flight: BTreeMap<(u64, u64), (ThreadId, Op)>,
    seq: u64,
    /// Latency model.
    pub latency: LatencyFn,
    /// Outcome model.
    pub outcome: OutcomeFn,
    /// How far time advances on Pending with nothing in flight.
    pub tick_ns: u64,
}

impl Sim {
    /// A sim with `client_threads` clients, 5 nodes, fixed 1 ms latency, every op ok.
    pub fn new(client_threads: usize, seed: u64) -> Sim {
        let nodes = (1..=5).map(|i| format!("n{i}")).collect();
        Sim {
            ctx: Context::new(client_threads, nodes),
            rng: ChaCha8Rng::seed_from_u64(seed),
            history: Vec::new(),
            dispatched: Vec::new(),
            pendings: 0,
            sim_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed),
            in_flight: BTreeMap::new(),
            seq: 0,
            latency: Box::new(|_, _| 1_000_000),
            outcome: Box::new(|_, _| OpType::Ok),
            tick_ns: 1_000_000,
        }
    }

    /// Latency uniform in `[lo, hi]` ns.
    pub fn with_uniform_latency(mut self, lo_ns: u64, hi_ns: u64) -> Sim {
        self.latency = Box::new(move |_, r| r.random_range(lo_ns..=hi_ns));
        self
    }

    /// Run until the generator is Done or simulated time passes `max_time_ns`.
    pub fn run(&mut self, g: &mut dyn Generator, max_time_ns: u64) -> End {
        loop {
            if self.ctx.time_ns > max_time_ns {
                return End::TimedOut;
            }
            match g.next(&self.ctx, &mut self.rng) {
                Next::Op(inv) => {
                    assert!(
                        self.ctx.is_free(inv.thread),
                        "generator chose busy thread {} for {inv:?}",
                        inv.thread
                    );
                    let at = inv.time_ns.max(self.ctx.time_ns);
                    self.complete_through(g, at);
                    if self.ctx.time_ns > max_time_ns {
                        return End::TimedOut;
                    }
                    self.dispatch(g, inv, at);
                }
                Next::Pending => {
                    self.pendings += 1;
                    let tick_at = self.ctx.time_ns + self.tick_ns;
                    match self.in_flight.keys().next() {
                        Some(&(t, _)) if t <= tick_at => self.complete_next(g),
                        _ => self.ctx.time_ns = tick_at,
                    }
                }
                Next::Done => {
                    self.complete_through(g, u64::MAX);
                    return End::Done;
                }
            }
        }
    }

    /// Deliver every completion due at or before `t`, then set the clock to `t`.
    fn complete_through(&mut self, g: &mut dyn Generator, t: u64) {
        while let Some(&(ct, _)) = self.in_flight.keys().next() {
            if ct > t {
                break;
            }
            self.complete_next(g);
        }
        if t != u64::MAX {
            self.ctx.time_ns = self.ctx.time_ns.max(t);
        }
    }

    fn complete_next(&mut self, g: &mut dyn Generator) {
        let Some(((ct, _), (thread, inv_op))) = self.in_flight.pop_first() else {
            return;
        };
        self.ctx.time_ns = self.ctx.time_ns.max(ct);
        let inv = Invocation {
            thread,
            time_ns: inv_op.time_ns,
            f: inv_op.f.to_string(),
            key: inv_op.key.clone().map(String::from),
            value: inv_op.value.clone(),
        };
        let op_type = (self.outcome)(&inv, &mut self.sim_rng);
        let mut done = inv_op.clone();
        done.op_type = op_type;
        done.time_ns = self.ctx.time_ns;
        done.index = self.history.len() as u64;
        if op_type == OpType::Ok && done.f == "read" {
            done.value = Value::from(0);
        }
        self.ctx.free.insert(thread);
        if op_type == OpType::Info && thread != NEMESIS_THREAD {
            self.ctx.processes[thread] += self.ctx.client_threads as u64;
        }
        self.history.push(done.clone());
        g.update(&self.ctx, &done);
    }

    fn dispatch(&mut self, g: &mut dyn Generator, inv: Invocation, at: u64) {
        let process = self.ctx.process_of(inv.thread);
        let mut op = Op::new(OpType::Invoke, process, inv.f.clone(), inv.value.clone());
        op.key = inv.key.as_deref().map(Into::into);
        op.time_ns = at;
        op.index = self.history.len() as u64;
        op.node = self.ctx.node_of(inv.thread).map(Into::into);
        let latency = (self.latency)(&inv, &mut self.sim_rng);
        self.ctx.free.remove(&inv.thread);
        self.in_flight
            .insert((at + latency, self.seq), (inv.thread, op.clone()));
        self.seq += 1;
        self.history.push(op.clone());
        self.dispatched.push(Invocation { time_ns: at, ..inv });
        g.update(&self.ctx, &op);
    }

    /// Invokes in history order.
    pub fn invokes(&self) -> impl Iterator<Item = &Op> {
        self.history.iter().filter(|o| o.op_type == OpType::Invoke)
    }

    /// Completions in history order.
    pub fn completions(&self) -> impl Iterator<Item = &Op> {
        self.history.iter().filter(|o| o.op_type != OpType::Invoke)
    }
}
