//! Nemesis schedules as generators: the start/stop fault cycle and the final heal.
//!
//! Owns *when* faults start and stop and which verb is sent. Does not own what a verb does (that
//! is the `nemesis` module) nor the fault journal. Every op here runs on [`NEMESIS_THREAD`], only
//! when it is free.

use super::{Context, Generator, Invocation, NEMESIS_THREAD, Next};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One kind of fault: the op that starts it and the op that undoes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// Verb that starts the fault, e.g. `start-partition`, `kill`, `pause`.
    pub start_f: String,
    /// Argument of the start op, e.g. `"one"` (isolate one node).
    pub start_value: Value,
    /// Verb that undoes the fault, e.g. `stop-partition`, `start`, `resume`.
    pub stop_f: String,
    /// Argument of the stop op.
    pub stop_value: Value,
}

/// The fault menu and its pacing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NemesisSchedule {
    /// Faults to choose from, uniformly at random.
    pub faults: Vec<FaultSpec>,
    /// Quiet time before each start and each stop, in ns.
    pub interval_ns: u64,
    /// Start faults in list order, round-robin, instead of uniformly at random.
    #[serde(default)]
    pub sequential: bool,
}

/// The start/stop loop; see [`nemesis_cycle`].
pub struct NemesisCycle {
    schedule: NemesisSchedule,
    /// Earliest time of the next op; set once the previous op completed.
    next_at_ns: Option<u64>,
    /// Index of the fault started and not yet stopped.
    active: Option<usize>,
    /// An op was emitted and its completion has not been accounted for yet.
    awaiting: bool,
    /// Time of the last nemesis completion seen through `update`.
    completed_at_ns: Option<u64>,
    /// Faults started so far (drives the round-robin order).
    started: usize,
}

/// Forever: wait `interval_ns`, start a uniformly random fault, wait `interval_ns` after that op
/// completed, stop it, wait, start another... Waits run from the previous op's completion (as in
/// Jepsen, where the nemesis thread sleeps between ops). The wait is expressed as the op's
/// `time_ns`, so the interpreter dispatches it at the right time without ticking. Done at once
/// when there are no faults. Bound it with [`super::time_limit`]; the final heal undoes a fault
/// left active.
pub fn nemesis_cycle(schedule: NemesisSchedule) -> NemesisCycle {
    NemesisCycle {
        schedule,
        next_at_ns: None,
        active: None,
        awaiting: false,
        completed_at_ns: None,
        started: 0,
    }
}

fn nemesis_op(time_ns: u64, f: &str, value: &Value) -> Next {
    Next::Op(Invocation {
        thread: NEMESIS_THREAD,
        time_ns,
        f: f.to_string(),
        key: None,
        value: value.clone(),
    })
}

impl Generator for NemesisCycle {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let n = self.schedule.faults.len();
        if n == 0 {
            return Next::Done;
        }
        if !ctx.is_free(NEMESIS_THREAD) {
            return Next::Pending;
        }
        let interval = self.schedule.interval_ns;
        if self.awaiting {
            self.awaiting = false;
            let base = self.completed_at_ns.take().unwrap_or(ctx.time_ns);
            self.next_at_ns = Some(base.saturating_add(interval));
        }
        let at = *self
            .next_at_ns
            .get_or_insert(ctx.time_ns.saturating_add(interval));
        self.awaiting = true;
        self.completed_at_ns = None;
        match self.active.take() {
            Some(i) => {
                let fault = &self.schedule.faults[i];
                nemesis_op(at, &fault.stop_f, &fault.stop_value)
            }
            None => {
                let i = if self.schedule.sequential {
                    self.started % n
                } else {
                    rng.random_range(0..n)
                };
                self.started += 1;
                self.active = Some(i);
                let fault = &self.schedule.faults[i];
                nemesis_op(at, &fault.start_f, &fault.start_value)
            }
        }
    }

    fn update(&mut self, _ctx: &Context, event: &Op) {
        if event.process == Process::Nemesis && event.op_type != OpType::Invoke {
            self.completed_at_ns = Some(event.time_ns);
        }
    }
}

/// The final heal; see [`nemesis_heal`].
pub struct NemesisHeal {
    stops: Vec<(String, Value)>,
    next: usize,
}

/// The stop op of every distinct fault kind in `schedule` (deduplicated by verb and value, in
/// schedule order), once each, on the nemesis thread as soon as it is free; then Done.
pub fn nemesis_heal(schedule: &NemesisSchedule) -> NemesisHeal {
    let mut stops: Vec<(String, Value)> = Vec::new();
    for fault in &schedule.faults {
        let stop = (fault.stop_f.clone(), fault.stop_value.clone());
        if !stops.contains(&stop) {
            stops.push(stop);
        }
    }
    NemesisHeal { stops, next: 0 }
}

impl Generator for NemesisHeal {
    fn next(&mut self, ctx: &Context, _rng: &mut ChaCha8Rng) -> Next {
        let Some((f, value)) = self.stops.get(self.next) else {
            return Next::Done;
        };
        if !ctx.is_free(NEMESIS_THREAD) {
            return Next::Pending;
        }
        self.next += 1;
        nemesis_op(ctx.time_ns, f, value)
    }
}
