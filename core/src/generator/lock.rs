//! The lock workloads (`lock`, `fenced-lock`): client threads contend for a few named locks; a
//! thread that acquired one performs a few protected writes on the lock's resource over a drawn
//! hold time, then releases it.
//!
//! Owns the op vocabulary of these workloads (the `f` names and value fields below, one
//! definition each), their configuration (`[lock]` in `workloads/*.toml`) and the per-thread
//! acquire → writes → release loop. Does not own executing ops (each system's lock client),
//! checking them (`checker::lock`) or stalling a holder (`generator::stall`).
//!
//! Ops (every one a normal history op: invoke, then ok / fail / info), key = the lock's name:
//! - [`ACQUIRE`], value `{"ttl_ms": n}` → ok `{"token": t}` (the fencing token, monotonic per
//!   lock; systems without one give `null`), fail = held by someone else (definitely not
//!   acquired), info = may or may not hold it.
//! - [`WRITE`] (unfenced) or [`FENCED_WRITE`], value `{"value": v, "token": t}` with `v` unique in
//!   the run and `t` the token of the acquire → ok = the resource accepted the write; a
//!   [`FENCED_WRITE`] the resource refused because it already accepted a greater token fails with
//!   error [`STALE_TOKEN`] (the fence working).
//! - [`RELEASE`], value `{"token": t}` (`null` when the acquire's outcome is unknown: the client
//!   releases whatever it may hold on that lock).
//!
//! After an `info` acquire or write the thread continues under a new process (the
//! interpreter's rule); its next op is a release of the same lock, so a lease it may still hold
//! is given back. Hold times, pauses between holds and the lock chosen come from the seeded RNG.

use super::workload::WorkloadConfigError;
use super::{Context, Generator, Invocation, Next, ThreadId};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The unfenced lock workload (`kind = "lock"`).
pub const KIND: &str = "lock";
/// The fenced lock workload (`kind = "fenced-lock"`).
pub const FENCED_KIND: &str = "fenced-lock";

/// The last-write-wins register workload (`kind = "lww"`): the register workload's reads and
/// writes (no cas) on a store that keeps the write with the greater server timestamp; checked
/// for linearizability like any register. Defined here with the other clock-sensitive kinds.
pub const LWW_KIND: &str = "lww";

/// Acquire a lock.
pub const ACQUIRE: &str = "lock-acquire";
/// A protected write on a lock's resource, not checked by the resource.
pub const WRITE: &str = "lock-write";
/// A protected write the resource accepts only with a token ≥ every token it accepted before.
pub const FENCED_WRITE: &str = "fenced-write";
/// Release a lock.
pub const RELEASE: &str = "lock-release";
/// Every client `f` of the lock workloads.
pub const FS: [&str; 4] = [ACQUIRE, WRITE, FENCED_WRITE, RELEASE];

/// Value field: the lease / TTL asked for, in ms.
pub const TTL_MS: &str = "ttl_ms";
/// Value field: the fencing token.
pub const TOKEN: &str = "token";
/// Value field: the value a protected write writes.
pub const VALUE: &str = "value";
/// Error of a fenced write the resource refused: its token was older than one it accepted.
pub const STALE_TOKEN: &str = "stale-token";

/// True for the `f` of a protected write (fenced or not).
pub fn is_protected(f: &str) -> bool {
    f == WRITE || f == FENCED_WRITE
}

/// True when `kind` is one of the lock workloads.
pub fn is_lock_kind(kind: &str) -> bool {
    kind == KIND || kind == FENCED_KIND
}

/// Configuration of [`lock_workload`] (`[lock]` in a workload spec). Deserializes with defaults
/// for missing fields and rejects unknown ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LockConfig {
    /// Number of locks contended for (`lock-0` … `lock-{n-1}`).
    pub locks: usize,
    /// The TTL / lease of an acquire, in ms.
    pub ttl_ms: u64,
    /// Shortest hold time drawn, in ms.
    pub min_hold_ms: u64,
    /// Longest hold time drawn, in ms.
    pub max_hold_ms: u64,
    /// Protected writes per hold, spread evenly over the hold time.
    pub writes_per_hold: u32,
    /// Pause after a failed acquire or a release before the thread tries again, in ms.
    pub retry_ms: u64,
    /// Protected writes are fenced: set from the workload kind (`fenced-lock`), not from TOML.
    #[serde(skip)]
    pub fenced: bool,
}

impl Default for LockConfig {
    fn default() -> LockConfig {
        LockConfig {
            locks: 2,
            ttl_ms: 2000,
            min_hold_ms: 200,
            max_hold_ms: 1000,
            writes_per_hold: 3,
            retry_ms: 100,
            fenced: false,
        }
    }
}

impl LockConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: String| WorkloadConfigError {
            what: "lock workload",
            field,
            message,
        };
        if self.locks == 0 {
            return Err(err("locks", "must be at least 1, got 0".into()));
        }
        if self.ttl_ms == 0 {
            return Err(err("ttl_ms", "must be at least 1, got 0".into()));
        }
        if self.writes_per_hold == 0 {
            return Err(err(
                "writes_per_hold",
                "must be at least 1: a holder writes".into(),
            ));
        }
        if self.min_hold_ms > self.max_hold_ms {
            return Err(err(
                "min_hold_ms",
                format!(
                    "{} is greater than max_hold_ms {}",
                    self.min_hold_ms, self.max_hold_ms
                ),
            ));
        }
        Ok(())
    }

    /// The name of lock `i`.
    pub fn lock_name(i: usize) -> String {
        format!("lock-{i}")
    }
}

/// Where one thread is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not holding: next op is an acquire.
    Idle,
    /// Holding the lock: `writes_left` protected writes to go, then a release.
    Held,
    /// Must release the lock (the acquire's or a write's outcome is unknown, or the fence
    /// refused a write).
    MustRelease,
    /// An op is in flight.
    Busy,
}

#[derive(Debug, Clone)]
struct ThreadState {
    phase: Phase,
    /// The lock acquired, being acquired or to release.
    lock: String,
    /// The token of the current hold (`null` when unknown).
    token: Value,
    /// Protected writes left in the current hold.
    writes_left: u32,
    /// The hold time drawn with the acquire, ns.
    hold_ns: u64,
    /// Earliest time of the thread's next op, ns.
    next_at_ns: u64,
}

/// The lock workload; see [`lock_workload`].
pub struct LockWorkload {
    cfg: LockConfig,
    threads: Vec<ThreadState>,
    /// Thread of each process with an op in flight.
    in_flight: HashMap<u64, ThreadId>,
    /// The next protected write's value, unique across the run.
    next_value: i64,
}

/// The lock workload, infinite (bound it with `time_limit`). Each client thread loops: acquire a
/// uniformly random lock (on fail: wait `retry_ms`, again); on ok, issue `writes_per_hold`
/// protected writes spaced evenly over a hold time drawn uniform in `[min_hold_ms,
/// max_hold_ms]`, then release; wait `retry_ms`. After an `info` acquire or write, or a write
/// refused as stale, the next op releases that lock. Among threads whose next op is due, the one
/// asked is uniformly random; when none is due the answer is `Pending`.
pub fn lock_workload(cfg: LockConfig) -> Result<LockWorkload, WorkloadConfigError> {
    cfg.validate()?;
    Ok(LockWorkload {
        cfg,
        threads: Vec::new(),
        in_flight: HashMap::new(),
        next_value: 0,
    })
}

impl LockWorkload {
    fn state(&mut self, thread: ThreadId) -> &mut ThreadState {
        while self.threads.len() <= thread {
            self.threads.push(ThreadState {
                phase: Phase::Idle,
                lock: String::new(),
                token: Value::Null,
                writes_left: 0,
                hold_ns: 0,
                next_at_ns: 0,
            });
        }
        &mut self.threads[thread]
    }
}

impl Generator for LockWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let due: Vec<ThreadId> = ctx
            .free_clients()
            .filter(|&t| {
                let s = self.state(t);
                s.phase != Phase::Busy && s.next_at_ns <= ctx.time_ns
            })
            .collect();
        if due.is_empty() {
            return Next::Pending;
        }
        let thread = due[rng.random_range(0..due.len())];
        let cfg = self.cfg.clone();
        let write_value = self.next_value;
        let s = self.state(thread);
        let (f, value) = match s.phase {
            Phase::Idle => {
                s.lock = LockConfig::lock_name(rng.random_range(0..cfg.locks));
                let hold_ms = rng.random_range(cfg.min_hold_ms..=cfg.max_hold_ms);
                s.hold_ns = hold_ms.saturating_mul(1_000_000);
                (ACQUIRE, json!({ TTL_MS: cfg.ttl_ms }))
            }
            Phase::Held if s.writes_left > 0 => {
                s.writes_left -= 1;
                let f = if cfg.fenced { FENCED_WRITE } else { WRITE };
                (f, json!({ VALUE: write_value, TOKEN: s.token }))
            }
            Phase::Held | Phase::MustRelease | Phase::Busy => (RELEASE, json!({ TOKEN: s.token })),
        };
        s.phase = Phase::Busy;
        let lock = s.lock.clone();
        if f == WRITE || f == FENCED_WRITE {
            self.next_value += 1;
        }
        if let Process::Client(p) = ctx.process_of(thread) {
            self.in_flight.insert(p, thread);
        }
        Next::Op(Invocation {
            thread,
            time_ns: ctx.time_ns,
            f: f.to_string(),
            key: Some(lock),
            value,
        })
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        let Process::Client(p) = event.process else {
            return;
        };
        if event.op_type == OpType::Invoke || !FS.contains(&event.f.as_str()) {
            return;
        }
        let Some(thread) = self.in_flight.remove(&p) else {
            return;
        };
        let now = ctx.time_ns;
        let retry_ns = self.cfg.retry_ms.saturating_mul(1_000_000);
        let writes = self.cfg.writes_per_hold;
        let s = self.state(thread);
        let gap_ns = s.hold_ns / u64::from(writes.max(1));
        match (event.f.as_str(), event.op_type) {
            (ACQUIRE, OpType::Ok) => {
                s.token = event.value.get(TOKEN).cloned().unwrap_or(Value::Null);
                s.writes_left = writes;
                s.phase = Phase::Held;
                s.next_at_ns = now + gap_ns;
            }
            (ACQUIRE, OpType::Fail) | (RELEASE, _) => {
                s.phase = Phase::Idle;
                s.token = Value::Null;
                s.next_at_ns = now + retry_ns;
            }
            (ACQUIRE, _) => {
                s.token = Value::Null;
                s.phase = Phase::MustRelease;
                s.next_at_ns = now;
            }
            (_, op_type) => {
                let refused =
                    op_type == OpType::Fail && event.error.as_deref() == Some(STALE_TOKEN);
                if op_type == OpType::Info || refused {
                    s.phase = Phase::MustRelease;
                    s.next_at_ns = now;
                } else {
                    s.phase = Phase::Held;
                    s.next_at_ns = now + gap_ns;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::sim;

    fn cfg() -> LockConfig {
        LockConfig {
            locks: 1,
            min_hold_ms: 100,
            max_hold_ms: 100,
            writes_per_hold: 2,
            ..LockConfig::default()
        }
    }

    /// Per thread, in order: the f of each op it invoked.
    fn per_thread(sim: &sim::Sim) -> Vec<Vec<(String, Value)>> {
        let mut out = vec![Vec::new(); sim.ctx.client_threads];
        for inv in &sim.dispatched {
            out[inv.thread].push((inv.f.clone(), inv.value.clone()));
        }
        out
    }

    #[test]
    fn each_thread_loops_acquire_writes_release() {
        let mut g = lock_workload(cfg()).unwrap();
        let mut sim = sim::Sim::new(3, 7);
        sim.run(&mut g, 2_000_000_000);
        let seqs = per_thread(&sim);
        for ops in &seqs {
            assert!(ops.len() >= 4, "{ops:?}");
            for chunk in ops.chunks(4).filter(|c| c.len() == 4) {
                let fs: Vec<&str> = chunk.iter().map(|(f, _)| f.as_str()).collect();
                assert_eq!(fs, [ACQUIRE, WRITE, WRITE, RELEASE]);
                assert_eq!(chunk[0].1[TTL_MS], 2000);
            }
        }
        // Write values are unique across the run.
        let mut values: Vec<i64> = sim
            .dispatched
            .iter()
            .filter(|i| i.f == WRITE)
            .map(|i| i.value[VALUE].as_i64().unwrap())
            .collect();
        let n = values.len();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), n);
    }

    #[test]
    fn writes_are_spread_over_the_hold_time() {
        let mut g = lock_workload(cfg()).unwrap();
        let mut sim = sim::Sim::new(1, 1);
        sim.run(&mut g, 1_000_000_000);
        let d = &sim.dispatched;
        assert_eq!(d[0].f, ACQUIRE);
        assert_eq!(d[1].f, WRITE);
        // 100 ms hold, 2 writes: 50 ms after the acquire completed (1 ms latency).
        let gap = d[1].time_ns - d[0].time_ns;
        assert!((50_000_000..=52_000_000).contains(&gap), "{gap}");
    }

    #[test]
    fn fenced_writes_carry_the_acquire_token_and_unknown_outcomes_release() {
        let mut g = lock_workload(LockConfig {
            fenced: true,
            ..cfg()
        })
        .unwrap();
        let mut sim = sim::Sim::new(1, 3);
        // Every second acquire is indeterminate.
        let mut n = 0;
        sim.outcome = Box::new(move |inv, _| {
            if inv.f == ACQUIRE {
                n += 1;
                if n % 2 == 0 {
                    return OpType::Info;
                }
            }
            OpType::Ok
        });
        sim.run(&mut g, 2_000_000_000);
        let fs: Vec<&str> = sim.dispatched.iter().map(|i| i.f.as_str()).collect();
        assert_eq!(
            &fs[..6],
            [
                ACQUIRE,
                FENCED_WRITE,
                FENCED_WRITE,
                RELEASE,
                ACQUIRE,
                RELEASE
            ]
        );
        assert!(sim.dispatched[1].value.get(TOKEN).is_some());
    }

    #[test]
    fn a_refused_stale_write_ends_the_hold() {
        let mut g = lock_workload(LockConfig {
            fenced: true,
            ..cfg()
        })
        .unwrap();
        let mut ctx = Context::new(1, vec!["n1".into()]);
        let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let mut step = |g: &mut LockWorkload,
                        ctx: &mut Context,
                        outcome: OpType,
                        error: Option<&str>,
                        value: Value| {
            ctx.time_ns += 1_000_000_000;
            let Next::Op(inv) = g.next(ctx, &mut rng) else {
                panic!("expected an op")
            };
            let mut op = Op::new(outcome, Process::Client(0), inv.f.clone(), value);
            op.error = error.map(str::to_string);
            g.update(ctx, &op);
            inv
        };
        let a = step(&mut g, &mut ctx, OpType::Ok, None, json!({ TOKEN: 42 }));
        assert_eq!(a.f, ACQUIRE);
        let w = step(
            &mut g,
            &mut ctx,
            OpType::Fail,
            Some(STALE_TOKEN),
            Value::Null,
        );
        assert_eq!((w.f.as_str(), &w.value[TOKEN]), (FENCED_WRITE, &json!(42)));
        let r = step(&mut g, &mut ctx, OpType::Ok, None, Value::Null);
        assert_eq!((r.f.as_str(), &r.value[TOKEN]), (RELEASE, &json!(42)));
    }

    #[test]
    fn bad_configs_are_refused_naming_the_field() {
        for (c, field) in [
            (LockConfig { locks: 0, ..cfg() }, "locks"),
            (LockConfig { ttl_ms: 0, ..cfg() }, "ttl_ms"),
            (
                LockConfig {
                    writes_per_hold: 0,
                    ..cfg()
                },
                "writes_per_hold",
            ),
            (
                LockConfig {
                    min_hold_ms: 5,
                    max_hold_ms: 1,
                    ..cfg()
                },
                "min_hold_ms",
            ),
        ] {
            assert_eq!(lock_workload(c).err().unwrap().field, field);
        }
    }
}
