//! The probe schedule and the abort rail, as generators (pure: time comes from the context).
//!
//! [`Probes`] asks for one probe op on client thread 0 every interval (a probe slower than the
//! interval delays the next one; missed slots are not made up). [`AbortRail`] watches probe
//! completions: after `after` failed probes in a row it trips, recording when; [`Probes`] with a
//! rail and [`UntilAborted`] (around the nemesis schedule) then end, so the main phase stops and
//! the heal phase starts at once.

use crate::generator::{Context, Generator, Next, OpSpec};
use crate::history::{Op, OpType};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Counts consecutive failed probes; trips at `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbortRail {
    after: u32,
    consecutive: u32,
    tripped_at_ns: Option<u64>,
    /// The error of the probe that tripped it.
    tripped_by: Option<String>,
}

/// A rail shared by the probe generator (which feeds it) and the nemesis wrapper (which reads it).
pub type RailHandle = Arc<Mutex<AbortRail>>;

impl AbortRail {
    /// A rail that trips after `after` consecutive failed probes (at least 1).
    pub fn new(after: u32) -> RailHandle {
        Arc::new(Mutex::new(AbortRail {
            after: after.max(1),
            consecutive: 0,
            tripped_at_ns: None,
            tripped_by: None,
        }))
    }

    /// When it tripped (ns since the run started), if it did.
    pub fn tripped_at_ns(&self) -> Option<u64> {
        self.tripped_at_ns
    }

    /// The error of the failed probe that tripped it, if it did and the probe said why.
    pub fn tripped_by(&self) -> Option<&str> {
        self.tripped_by.as_deref()
    }

    /// Feed one history event; only probe completions count.
    pub fn observe(&mut self, op: &Op) {
        if !op.is_client() || op.f != super::PROBE_F || op.op_type == OpType::Invoke {
            return;
        }
        if op.op_type == OpType::Ok {
            self.consecutive = 0;
            return;
        }
        self.consecutive += 1;
        if self.consecutive >= self.after && self.tripped_at_ns.is_none() {
            self.tripped_at_ns = Some(op.time_ns);
            self.tripped_by = op.error.clone();
        }
    }
}

fn tripped(rail: &Option<RailHandle>) -> bool {
    rail.as_ref().is_some_and(|r| {
        r.lock()
            .unwrap_or_else(|p| p.into_inner())
            .tripped_at_ns
            .is_some()
    })
}

/// One probe on thread 0 every `interval_ns`, until its rail (if any) trips.
pub struct Probes {
    interval_ns: u64,
    next_due_ns: Option<u64>,
    rail: Option<RailHandle>,
}

/// Probes every `interval_ns`, feeding `rail` (none: never ends by itself; wrap it in a time
/// limit).
pub fn probes(interval_ns: u64, rail: Option<RailHandle>) -> Probes {
    Probes {
        interval_ns: interval_ns.max(1),
        next_due_ns: None,
        rail,
    }
}

impl Generator for Probes {
    fn next(&mut self, ctx: &Context, _rng: &mut ChaCha8Rng) -> Next {
        if tripped(&self.rail) {
            return Next::Done;
        }
        if ctx.client_threads == 0 {
            return Next::Done;
        }
        if !ctx.is_free(0) {
            return Next::Pending;
        }
        let due = *self.next_due_ns.get_or_insert(ctx.time_ns);
        self.next_due_ns = Some(due.max(ctx.time_ns) + self.interval_ns);
        Next::Op(OpSpec::new(super::PROBE_F, None, Value::Null).at(0, due))
    }

    fn update(&mut self, _ctx: &Context, event: &Op) {
        if let Some(r) = &self.rail {
            r.lock().unwrap_or_else(|p| p.into_inner()).observe(event);
        }
    }
}

/// `inner` until `rail` trips. An op `inner` plans for later is kept here (the interpreter is
/// told `Pending`) until it is due, so a fault planned before the rail trips is never injected
/// after it.
pub struct UntilAborted<G> {
    inner: G,
    rail: Option<RailHandle>,
    planned: Option<crate::generator::Invocation>,
}

/// Wrap a (nemesis) generator so it ends when `rail` trips.
pub fn until_aborted<G: Generator>(inner: G, rail: RailHandle) -> UntilAborted<G> {
    UntilAborted {
        inner,
        rail: Some(rail),
        planned: None,
    }
}

impl<G: Generator> Generator for UntilAborted<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if tripped(&self.rail) {
            return Next::Done;
        }
        let op = match self.planned.take() {
            Some(op) => op,
            None => match self.inner.next(ctx, rng) {
                Next::Op(op) => op,
                other => return other,
            },
        };
        if op.time_ns > ctx.time_ns {
            self.planned = Some(op);
            return Next::Pending;
        }
        Next::Op(op)
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::NEMESIS_THREAD;
    use crate::history::Process;
    use rand::SeedableRng;

    fn done(ty: OpType, t: u64) -> Op {
        let mut o = Op::new(ty, Process::Client(0), super::super::PROBE_F, Value::Null);
        o.time_ns = t;
        o
    }

    #[test]
    fn probes_come_every_interval_on_thread_zero_and_skip_missed_slots() {
        let mut g = probes(1_000, None);
        let mut ctx = Context::new(1, vec!["n1".into()]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let Next::Op(a) = g.next(&ctx, &mut rng) else {
            panic!("no probe")
        };
        assert_eq!((a.thread, a.time_ns, a.f.as_str()), (0, 0, "probe"));
        ctx.free.remove(&0);
        assert_eq!(g.next(&ctx, &mut rng), Next::Pending);
        // The probe took 3.5 intervals: the next one goes now, the one after an interval later.
        ctx.free.insert(0);
        ctx.time_ns = 3_500;
        let Next::Op(b) = g.next(&ctx, &mut rng) else {
            panic!("no probe")
        };
        assert_eq!(b.time_ns, 1_000);
        let Next::Op(c) = g.next(&ctx, &mut rng) else {
            panic!("no probe")
        };
        assert_eq!(c.time_ns, 4_500);
    }

    #[test]
    fn the_rail_trips_after_n_failures_in_a_row_and_ends_both_generators() {
        let rail = AbortRail::new(3);
        let mut p = probes(1_000, Some(rail.clone()));
        let mut nemesis = until_aborted(
            crate::generator::once_on(
                NEMESIS_THREAD,
                OpSpec::new("start-partition", None, Value::Null),
            ),
            rail.clone(),
        );
        let ctx = Context::new(1, vec!["n1".into()]);
        for (i, ty) in [
            OpType::Fail,
            OpType::Fail,
            OpType::Ok,
            OpType::Fail,
            OpType::Info,
        ]
        .into_iter()
        .enumerate()
        {
            p.update(&ctx, &done(ty, i as u64));
        }
        assert_eq!(rail.lock().unwrap().tripped_at_ns(), None);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!(matches!(nemesis.next(&ctx, &mut rng), Next::Op(_)));
        // Invokes and nemesis ops do not count; the third failure in a row trips it.
        p.update(&ctx, &done(OpType::Invoke, 9));
        let mut third = done(OpType::Fail, 10);
        third.error = Some("exit status 7: connection refused".into());
        p.update(&ctx, &third);
        assert_eq!(rail.lock().unwrap().tripped_at_ns(), Some(10));
        // The abort line names why the probe that tripped it failed.
        assert_eq!(
            rail.lock().unwrap().tripped_by(),
            Some("exit status 7: connection refused")
        );
        assert_eq!(p.next(&ctx, &mut rng), Next::Done);
        assert_eq!(nemesis.next(&ctx, &mut rng), Next::Done);
    }

    #[test]
    fn a_fault_planned_for_later_is_dropped_when_the_rail_trips_first() {
        let rail = AbortRail::new(1);
        let later = OpSpec::new("start-partition", None, Value::Null).at(NEMESIS_THREAD, 5_000);
        let mut nemesis = until_aborted(crate::generator::once(later), rail.clone());
        let mut ctx = Context::new(1, vec!["n1".into()]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(nemesis.next(&ctx, &mut rng), Next::Pending);
        ctx.time_ns = 5_000;
        assert!(matches!(nemesis.next(&ctx, &mut rng), Next::Op(op) if op.time_ns == 5_000));
        let mut again = until_aborted(
            crate::generator::once(
                OpSpec::new("start-partition", None, Value::Null).at(NEMESIS_THREAD, 5_000),
            ),
            rail.clone(),
        );
        ctx.time_ns = 0;
        assert_eq!(again.next(&ctx, &mut rng), Next::Pending);
        rail.lock().unwrap().observe(&done(OpType::Fail, 1));
        ctx.time_ns = 5_000;
        assert_eq!(again.next(&ctx, &mut rng), Next::Done);
    }
}
