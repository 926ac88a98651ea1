//! Nemesis schedules as generators: the start/stop fault cycle and the final heal.
//!
//! Owns *when* faults start and stop and which verb is sent: the one-at-a-time cycle, the
//! stacked cycle (faults overlap), the final heal, and clock-offset measurements interleaved
//! with clock faults. Does not own what a verb does (that is the `nemesis` module) nor the fault
//! journal. Every op here runs on [`NEMESIS_THREAD`], only when it is free.

use super::{Context, Generator, Invocation, NEMESIS_THREAD, Next};
use crate::faults::verb::{CLOCK_OFFSETS, STROBE_CLOCK as STROBE_VERB};
use crate::faults::{CLOCK_VERBS, STROBE_OFFSETS_EVERY};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One kind of fault: the op that starts it and the op that undoes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultOps {
    /// Verb that starts the fault, e.g. `start-partition`, `kill`, `pause`.
    pub start_f: String,
    /// Argument of the start op, e.g. `"one"` (isolate one node).
    pub start_value: Value,
    /// Verb that undoes the fault, e.g. `stop-partition`, `start`, `resume`; `None` for a
    /// one-shot fault (e.g. `promote`), which is never stopped.
    pub stop_f: Option<String>,
    /// Argument of the stop op.
    pub stop_value: Value,
}

/// The fault menu and its pacing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NemesisSchedule {
    /// Faults to choose from: at random, every kind once per round (see [`nemesis_cycle`]).
    pub faults: Vec<FaultOps>,
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
    /// The schedule's faults grouped by kind (indices into `faults`, kinds in order of first
    /// appearance); see [`kinds_of`].
    kinds: Vec<Vec<usize>>,
    /// Kinds (indices into `kinds`) not drawn yet in this round: a random schedule gives every
    /// kind a turn before one repeats.
    round: Vec<usize>,
    /// Per kind, its faults (indices into `faults`) not drawn yet: within a kind too, every
    /// fault gets a turn before one repeats (the `partition` package's `halves` is not left
    /// waiting behind `one`).
    bags: Vec<Vec<usize>>,
}

/// The faults of a schedule grouped by kind: the fault kind its start verb belongs to
/// (`faults::classify_verb`), or the verb itself for a verb of no kind; kinds in order of first
/// appearance, faults in schedule order.
fn kinds_of(faults: &[FaultOps]) -> Vec<Vec<usize>> {
    let mut names: Vec<&str> = Vec::new();
    let mut kinds: Vec<Vec<usize>> = Vec::new();
    for (i, f) in faults.iter().enumerate() {
        let name =
            crate::faults::classify_verb(&f.start_f).map_or(f.start_f.as_str(), |(k, _)| k.name);
        match names.iter().position(|n| *n == name) {
            Some(k) => kinds[k].push(i),
            None => {
                names.push(name);
                kinds.push(vec![i]);
            }
        }
    }
    kinds
}

/// Forever: wait `interval_ns`, start a random fault, wait `interval_ns` after that op
/// completed, stop it, wait, start another... The random draw is fair by kind: each round draws
/// every fault kind of the schedule once, in random order (a kind with several faults, e.g. the
/// `partition` package's two shapes, then one of them not drawn since all were), so with k kinds
/// the first k faults started are all different, and every fault of a kind starts before one of
/// them starts again. Waits run from the previous op's completion (as in
/// Jepsen, where the nemesis thread sleeps between ops). The wait is expressed as the op's
/// `time_ns`, so the interpreter dispatches it at the right time without ticking. Done at once
/// when there are no faults. Bound it with [`super::time_limit`]; the final heal undoes a fault
/// left active.
pub fn nemesis_cycle(schedule: NemesisSchedule) -> NemesisCycle {
    let kinds = kinds_of(&schedule.faults);
    NemesisCycle {
        next_at_ns: None,
        active: None,
        awaiting: false,
        completed_at_ns: None,
        started: 0,
        bags: vec![Vec::new(); kinds.len()],
        kinds,
        round: Vec::new(),
        schedule,
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

impl NemesisCycle {
    /// The next fault of a random schedule: a kind not drawn yet in this round (no draw when
    /// one is left, so a one-kind schedule draws only among its faults), then, uniformly, one of
    /// its faults not drawn since they were all drawn.
    fn draw(&mut self, rng: &mut ChaCha8Rng) -> usize {
        if self.round.is_empty() {
            self.round = (0..self.kinds.len()).collect();
        }
        let j = if self.round.len() > 1 {
            rng.random_range(0..self.round.len())
        } else {
            0
        };
        let k = self.round.remove(j);
        let bag = &mut self.bags[k];
        if bag.is_empty() {
            bag.clone_from(&self.kinds[k]);
        }
        // A draw even from a bag of one, as before bags: a schedule whose kinds have one fault
        // each draws the same sequence for a seed as it did.
        let i = rng.random_range(0..bag.len());
        bag.remove(i)
    }
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
        let stopping = self.active.take().and_then(|i| {
            let fault = &self.schedule.faults[i];
            fault.stop_f.as_ref().map(|f| (f, &fault.stop_value))
        });
        match stopping {
            Some((f, value)) => nemesis_op(at, f, value),
            None => {
                let i = if self.schedule.sequential {
                    self.started % n
                } else {
                    self.draw(rng)
                };
                self.started += 1;
                let fault = &self.schedule.faults[i];
                // A one-shot fault is not stopped: the next op is another start.
                self.active = fault.stop_f.is_some().then_some(i);
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
        let Some(f) = &fault.stop_f else { continue };
        let stop = (f.clone(), fault.stop_value.clone());
        if !stops.contains(&stop) {
            stops.push(stop);
        }
    }
    NemesisHeal { stops, next: 0 }
}

/// One nemesis op, once (e.g. the run's `db-status` after the final heal).
pub fn nemesis_once(f: &str, value: Value) -> NemesisHeal {
    NemesisHeal {
        stops: vec![(f.to_string(), value)],
        next: 0,
    }
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

/// The stacked cycle; see [`nemesis_stack`].
pub struct NemesisStack {
    schedule: NemesisSchedule,
    /// Earliest time of the next op; set once the previous op completed.
    next_at_ns: Option<u64>,
    /// Faults started and not yet stopped, in start order.
    stack: Vec<usize>,
    /// True while stopping (popping) the stack.
    unwinding: bool,
    /// An op was emitted and its completion has not been accounted for yet.
    awaiting: bool,
    /// Time of the last nemesis completion seen through `update`.
    completed_at_ns: Option<u64>,
}

/// Faults that overlap: wait `interval_ns`, start the first fault of the list, wait, start the
/// second (the first still active), ... until every fault is active; then stop them in reverse
/// order, one per interval; repeat. Waits run from the previous op's completion. Done at once
/// when there are no faults. Bound it with [`super::time_limit`]; [`nemesis_heal`] undoes the
/// faults left active.
pub fn nemesis_stack(schedule: NemesisSchedule) -> NemesisStack {
    NemesisStack {
        schedule,
        next_at_ns: None,
        stack: Vec::new(),
        unwinding: false,
        awaiting: false,
        completed_at_ns: None,
    }
}

impl Generator for NemesisStack {
    fn next(&mut self, ctx: &Context, _rng: &mut ChaCha8Rng) -> Next {
        let n = self.schedule.faults.len();
        if n == 0 {
            return Next::Done;
        }
        if !ctx.is_free(NEMESIS_THREAD) {
            return Next::Pending;
        }
        if self.awaiting {
            self.awaiting = false;
            let base = self.completed_at_ns.take().unwrap_or(ctx.time_ns);
            self.next_at_ns = Some(base.saturating_add(self.schedule.interval_ns));
        }
        let at = *self
            .next_at_ns
            .get_or_insert(ctx.time_ns.saturating_add(self.schedule.interval_ns));
        self.awaiting = true;
        self.completed_at_ns = None;
        loop {
            if self.unwinding || self.stack.len() == n {
                self.unwinding = true;
                let i = self
                    .stack
                    .pop()
                    .expect("a full or unwinding stack is not empty");
                self.unwinding = !self.stack.is_empty();
                let fault = &self.schedule.faults[i];
                // One-shot faults have nothing to stop: unwind past them.
                if let Some(f) = &fault.stop_f {
                    return nemesis_op(at, f, &fault.stop_value);
                }
            } else {
                let i = self.stack.len();
                self.stack.push(i);
                let fault = &self.schedule.faults[i];
                return nemesis_op(at, &fault.start_f, &fault.start_value);
            }
        }
    }

    fn update(&mut self, _ctx: &Context, event: &Op) {
        if event.process == Process::Nemesis && event.op_type != OpType::Invoke {
            self.completed_at_ns = Some(event.time_ns);
        }
    }
}

/// A nemesis generator with clock measurements; see [`with_clock_offsets`].
pub struct WithClockOffsets<G> {
    inner: G,
    period_ns: Option<u64>,
    /// When the last measurement was dispatched.
    last_ns: Option<u64>,
    /// An op `inner` produced that waits behind a measurement.
    buffered: Option<Invocation>,
    /// A clock op completed and was not measured yet.
    measure_now: bool,
    inner_done: bool,
}

/// Wrap a nemesis generator so that a `clock-offsets` op follows every completed clock op
/// (`bump-clock`, `strobe-clock`, `reset-clock`) at once, and, with `period_ns`, one runs at
/// least every `period_ns` while `inner` is not done (an op of `inner` due later waits behind it
/// unchanged). A strobe blocks the nemesis thread, so with `period_ns` its value gets
/// [`STROBE_OFFSETS_EVERY`] (the period in whole ms, at least 1) and it measures during itself.
/// Done when `inner` is done and no measurement is owed.
pub fn with_clock_offsets<G: Generator>(period_ns: Option<u64>, inner: G) -> WithClockOffsets<G> {
    WithClockOffsets {
        inner,
        period_ns: period_ns.filter(|p| *p > 0),
        last_ns: None,
        buffered: None,
        measure_now: false,
        inner_done: false,
    }
}

impl<G> WithClockOffsets<G> {
    /// A strobe op with the measurement period added to its value (an object or null; other
    /// values and a period already given are left alone).
    fn ask_strobe_to_sample(&self, mut op: Invocation) -> Invocation {
        let Some(period_ns) = self.period_ns else {
            return op;
        };
        if op.f != STROBE_VERB {
            return op;
        }
        if op.value.is_null() {
            op.value = Value::Object(Default::default());
        }
        if let Some(m) = op.value.as_object_mut() {
            let every_ms = period_ns.div_ceil(1_000_000).max(1);
            m.entry(STROBE_OFFSETS_EVERY)
                .or_insert_with(|| Value::from(every_ms));
        }
        op
    }
}

impl<G: Generator> Generator for WithClockOffsets<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if !ctx.is_free(NEMESIS_THREAD) {
            return Next::Pending;
        }
        if self.measure_now {
            self.measure_now = false;
            self.last_ns = Some(ctx.time_ns);
            return nemesis_op(ctx.time_ns, CLOCK_OFFSETS, &Value::Null);
        }
        if self.buffered.is_none() && !self.inner_done {
            match self.inner.next(ctx, rng) {
                Next::Op(op) => self.buffered = Some(op),
                Next::Done => self.inner_done = true,
                Next::Pending => {}
            }
        }
        if self.inner_done && self.buffered.is_none() {
            return Next::Done;
        }
        let due = self
            .period_ns
            .map(|p| self.last_ns.map_or(ctx.time_ns, |l| l.saturating_add(p)));
        match (&self.buffered, due) {
            (Some(op), Some(due)) if due < op.time_ns => {
                let at = due.max(ctx.time_ns);
                self.last_ns = Some(at);
                nemesis_op(at, CLOCK_OFFSETS, &Value::Null)
            }
            (Some(_), _) => {
                let op = self.buffered.take().expect("checked Some");
                Next::Op(self.ask_strobe_to_sample(op))
            }
            (None, Some(due)) => {
                let at = due.max(ctx.time_ns);
                self.last_ns = Some(at);
                nemesis_op(at, CLOCK_OFFSETS, &Value::Null)
            }
            (None, None) => Next::Pending,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        if event.process == Process::Nemesis
            && event.op_type != OpType::Invoke
            && CLOCK_VERBS.contains(&event.f.as_str())
        {
            self.measure_now = true;
        }
        self.inner.update(ctx, event);
    }
}

#[cfg(test)]
mod clock_tests {
    use super::super::sim::{End, Sim};
    use super::super::time_limit;
    use super::*;
    use serde_json::json;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn fault(start: &str, value: Value, stop: &str) -> FaultOps {
        FaultOps {
            start_f: start.into(),
            start_value: value,
            stop_f: Some(stop.into()),
            stop_value: Value::Null,
        }
    }

    fn schedule() -> NemesisSchedule {
        NemesisSchedule {
            faults: vec![
                fault("start-partition", json!("halves"), "stop-partition"),
                fault("pause", json!("minority"), "resume"),
                fault("bump-clock", json!({"targets": "one"}), "reset-clock"),
            ],
            interval_ns: 2 * S,
            sequential: true,
        }
    }

    #[test]
    fn stack_starts_every_fault_before_stopping_them_in_reverse() {
        let mut g = time_limit(30 * S, nemesis_stack(schedule()));
        let mut sim = Sim::new(1, 1);
        sim.latency = Box::new(|_, _| 10 * MS);
        assert_eq!(sim.run(&mut g, 60 * S), End::Done);
        let fs: Vec<&str> = sim.dispatched.iter().map(|i| i.f.as_str()).collect();
        assert_eq!(
            &fs[..7],
            [
                "start-partition",
                "pause",
                "bump-clock",
                "reset-clock",
                "resume",
                "stop-partition",
                "start-partition"
            ]
        );
        for w in sim.dispatched.windows(2) {
            assert_eq!(w[1].time_ns, w[0].time_ns + 10 * MS + 2 * S);
        }
        let mut empty = nemesis_stack(NemesisSchedule {
            faults: vec![],
            ..schedule()
        });
        assert_eq!(empty.next(&sim.ctx, &mut sim.rng), Next::Done);
    }

    #[test]
    fn offsets_follow_every_clock_op_and_run_periodically() {
        let sched = NemesisSchedule {
            faults: vec![fault("bump-clock", json!({}), "reset-clock")],
            interval_ns: 5 * S,
            sequential: false,
        };
        let mut g = time_limit(
            20 * S,
            with_clock_offsets(Some(S), nemesis_cycle(sched.clone())),
        );
        let mut sim = Sim::new(1, 3);
        sim.latency = Box::new(|_, _| 10 * MS);
        assert_eq!(sim.run(&mut g, 60 * S), End::Done);
        let d = &sim.dispatched;
        // Right after each clock op completes, a measurement.
        for (i, op) in d.iter().enumerate() {
            if CLOCK_VERBS.contains(&op.f.as_str()) {
                let next = &d[i + 1];
                assert_eq!(next.f, CLOCK_OFFSETS, "after {op:?}");
                assert_eq!(next.time_ns, op.time_ns + 10 * MS);
            }
        }
        // Periodic: no gap between measurements longer than the period (plus one op).
        let times: Vec<u64> = d
            .iter()
            .filter(|o| o.f == CLOCK_OFFSETS)
            .map(|o| o.time_ns)
            .collect();
        assert!(times.len() >= 19, "{} measurements in 20 s", times.len());
        for w in times.windows(2) {
            assert!(w[1] - w[0] <= S + 20 * MS, "gap {:?}", w);
        }
        // The fault ops keep their schedule: first start at 5 s, then 5 s after each completion
        // (measurements in between shift it by their own latency only).
        let faults: Vec<&Invocation> = d.iter().filter(|o| o.f != CLOCK_OFFSETS).collect();
        assert_eq!(faults[0].f, "bump-clock");
        assert_eq!(faults[1].f, "reset-clock");
        assert!(faults[0].time_ns >= 5 * S && faults[0].time_ns < 5 * S + 50 * MS);
        assert_eq!(faults.len(), 3, "{faults:?}");

        // Without a period: measurements only after clock ops; done with the heal.
        let mut heal = with_clock_offsets(None, nemesis_heal(&sched));
        let mut sim = Sim::new(1, 3);
        assert_eq!(sim.run(&mut heal, 10 * S), End::Done);
        let fs: Vec<&str> = sim.dispatched.iter().map(|i| i.f.as_str()).collect();
        assert_eq!(fs, ["reset-clock", CLOCK_OFFSETS]);
    }

    #[test]
    fn strobes_are_asked_to_measure_at_the_period() {
        let sched = NemesisSchedule {
            faults: vec![
                fault("strobe-clock", json!({"targets": "one"}), "reset-clock"),
                fault("strobe-clock", Value::Null, "reset-clock"),
                fault(
                    "strobe-clock",
                    json!({"offsets_every_ms": 250}),
                    "reset-clock",
                ),
                fault("bump-clock", json!({}), "reset-clock"),
            ],
            interval_ns: S,
            sequential: true,
        };
        let mut g = time_limit(
            20 * S,
            with_clock_offsets(Some(1_500 * MS), nemesis_cycle(sched.clone())),
        );
        let mut sim = Sim::new(1, 3);
        sim.latency = Box::new(|_, _| 10 * MS);
        sim.run(&mut g, 60 * S);
        let firsts: Vec<&Value> = sim
            .dispatched
            .iter()
            .filter(|o| o.f != CLOCK_OFFSETS && o.f != "reset-clock")
            .map(|o| &o.value)
            .take(4)
            .collect();
        assert_eq!(
            firsts,
            [
                &json!({"targets": "one", "offsets_every_ms": 1500}),
                &json!({"offsets_every_ms": 1500}),
                &json!({"offsets_every_ms": 250}),
                &json!({}),
            ]
        );
        // Without a period, strobes are left alone.
        let mut g = time_limit(5 * S, with_clock_offsets(None, nemesis_cycle(sched)));
        let mut sim = Sim::new(1, 3);
        sim.run(&mut g, 60 * S);
        let strobe = sim
            .dispatched
            .iter()
            .find(|o| o.f == "strobe-clock")
            .unwrap();
        assert_eq!(strobe.value, json!({"targets": "one"}));
    }
}
