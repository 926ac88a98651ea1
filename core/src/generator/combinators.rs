//! Generic generator combinators: leaves (`once`, `repeat`, `from_fn`), choice (`mix`), bounds
//! (`limit`, `time_limit`), pacing (`stagger`, `delay`, `sleep`), sequencing (`seq`, `phases`,
//! `cycle`, `flip_flop`), thread scoping (`each_thread`, `on_threads`) and retry (`until_ok`).
//!
//! Owns no workload knowledge (that is `workload`) and no fault knowledge (that is `nemesis`).
//! No combinator discards an op a child returned (children commit their state when they return
//! one; `each_thread` keeps a losing op for later), except `time_limit`, which then ends for good.
//! So the "commit state when returning Op" contract composes.

use super::{Context, Generator, Invocation, Next, OpSpec, ThreadId, pick_free_client};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

// ---------------------------------------------------------------------------------------------
// Leaves

/// What [`once`] emits: an op for any free client thread, or a fixed invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum OnceOp {
    /// On a uniformly random free client thread, now.
    AnyClient(OpSpec),
    /// On exactly `thread` (client or [`super::NEMESIS_THREAD`]) once it is free, not before
    /// `time_ns`.
    Fixed(Invocation),
}

impl From<OpSpec> for OnceOp {
    fn from(spec: OpSpec) -> OnceOp {
        OnceOp::AnyClient(spec)
    }
}

impl From<Invocation> for OnceOp {
    fn from(inv: Invocation) -> OnceOp {
        OnceOp::Fixed(inv)
    }
}

/// Emits one op, then Done. See [`once`] and [`once_on`].
pub struct Once {
    op: Option<OnceOp>,
}

/// One op, then Done. An [`OpSpec`] goes to a uniformly random free client thread (Done at once
/// without client threads); an [`Invocation`] template goes to its own thread as soon as that is
/// free, scheduled at `max(template.time_ns, now)`.
pub fn once(op: impl Into<OnceOp>) -> Once {
    Once {
        op: Some(op.into()),
    }
}

/// One op on `thread` (which may be [`super::NEMESIS_THREAD`]) as soon as it is free, then Done.
pub fn once_on(thread: ThreadId, spec: OpSpec) -> Once {
    once(spec.at(thread, 0))
}

impl Generator for Once {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let thread = match &self.op {
            None => return Next::Done,
            Some(OnceOp::Fixed(inv)) if ctx.is_free(inv.thread) => inv.thread,
            Some(OnceOp::Fixed(_)) => return Next::Pending,
            Some(OnceOp::AnyClient(_)) if ctx.client_threads == 0 => return Next::Done,
            Some(OnceOp::AnyClient(_)) => match pick_free_client(ctx, rng) {
                Some(t) => t,
                None => return Next::Pending,
            },
        };
        match self.op.take() {
            Some(OnceOp::AnyClient(spec)) => Next::Op(spec.at(thread, ctx.time_ns)),
            Some(OnceOp::Fixed(mut inv)) => {
                inv.time_ns = inv.time_ns.max(ctx.time_ns);
                Next::Op(inv)
            }
            None => Next::Done,
        }
    }
}

/// Calls a function for each op; see [`repeat`].
pub struct Repeat<F> {
    f: F,
    done: bool,
}

/// Ops from `f` on uniformly random free client threads until `f` returns `None` (then Done;
/// also Done without client threads).
/// `f` is only called when a client thread is free, so every call yields an op.
pub fn repeat<F>(f: F) -> Repeat<F>
where
    F: FnMut(&Context, &mut ChaCha8Rng) -> Option<OpSpec> + Send,
{
    Repeat { f, done: false }
}

impl<F> Generator for Repeat<F>
where
    F: FnMut(&Context, &mut ChaCha8Rng) -> Option<OpSpec> + Send,
{
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if self.done || ctx.client_threads == 0 {
            return Next::Done;
        }
        let Some(thread) = pick_free_client(ctx, rng) else {
            return Next::Pending;
        };
        match (self.f)(ctx, rng) {
            Some(spec) => Next::Op(spec.at(thread, ctx.time_ns)),
            None => {
                self.done = true;
                Next::Done
            }
        }
    }
}

/// A generator from a closure; see [`from_fn`].
pub struct FromFn<F>(F);

/// A generator whose `next` is `f`. `f` must honour the [`Generator::next`] contract itself
/// (choose a free thread). Updates are ignored.
pub fn from_fn<F>(f: F) -> FromFn<F>
where
    F: FnMut(&Context, &mut ChaCha8Rng) -> Next + Send,
{
    FromFn(f)
}

impl<F> Generator for FromFn<F>
where
    F: FnMut(&Context, &mut ChaCha8Rng) -> Next + Send,
{
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        (self.0)(ctx, rng)
    }
}

// ---------------------------------------------------------------------------------------------
// Choice

/// Uniform random choice among children; see [`mix`].
pub struct Mix {
    children: Vec<Box<dyn Generator>>,
    alive: Vec<bool>,
    order: Vec<usize>,
}

/// Each op comes from a child chosen uniformly at random among the children that can produce one
/// now (children are tried in a random order; Pending ones are skipped, Done ones dropped). Done
/// when every child is Done. Updates go to every live child.
pub fn mix(children: Vec<Box<dyn Generator>>) -> Mix {
    let n = children.len();
    Mix {
        children,
        alive: vec![true; n],
        order: Vec::with_capacity(n),
    }
}

impl Generator for Mix {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        self.order.clear();
        self.order
            .extend((0..self.children.len()).filter(|&i| self.alive[i]));
        let n = self.order.len();
        if n == 0 {
            return Next::Done;
        }
        // Incremental Fisher-Yates: the k-th child tried is uniform among those not yet tried.
        let mut any_pending = false;
        for k in 0..n {
            let j = rng.random_range(k..n);
            self.order.swap(k, j);
            let i = self.order[k];
            match self.children[i].next(ctx, rng) {
                Next::Op(op) => return Next::Op(op),
                Next::Pending => any_pending = true,
                Next::Done => self.alive[i] = false,
            }
        }
        if any_pending {
            Next::Pending
        } else {
            Next::Done
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        for (child, alive) in self.children.iter_mut().zip(&self.alive) {
            if *alive {
                child.update(ctx, event);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds

/// At most `n` ops; see [`limit`].
pub struct Limit<G> {
    remaining: u64,
    inner: G,
}

/// At most `n` ops from `inner`, then Done.
pub fn limit<G: Generator>(n: u64, inner: G) -> Limit<G> {
    Limit {
        remaining: n,
        inner,
    }
}

impl<G: Generator> Generator for Limit<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if self.remaining == 0 {
            return Next::Done;
        }
        let next = self.inner.next(ctx, rng);
        if matches!(next, Next::Op(_)) {
            self.remaining -= 1;
        }
        next
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

/// Ops only before a deadline; see [`time_limit`].
pub struct TimeLimit<G> {
    duration_ns: u64,
    deadline_ns: Option<u64>,
    done: bool,
    inner: G,
}

/// Ops from `inner` dispatched strictly before `duration_ns` after the first time this generator
/// is asked; then Done. An op `inner` schedules at or past the deadline is dropped (as in Jepsen).
pub fn time_limit<G: Generator>(duration_ns: u64, inner: G) -> TimeLimit<G> {
    TimeLimit {
        duration_ns,
        deadline_ns: None,
        done: false,
        inner,
    }
}

impl<G: Generator> Generator for TimeLimit<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if self.done {
            return Next::Done;
        }
        let deadline = *self
            .deadline_ns
            .get_or_insert(ctx.time_ns.saturating_add(self.duration_ns));
        if ctx.time_ns >= deadline {
            self.done = true;
            return Next::Done;
        }
        match self.inner.next(ctx, rng) {
            Next::Op(op) if op.time_ns >= deadline => {
                self.done = true;
                Next::Done
            }
            Next::Done => {
                self.done = true;
                Next::Done
            }
            other => other,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

// ---------------------------------------------------------------------------------------------
// Pacing

/// Random gaps between ops; see [`stagger`].
pub struct Stagger<G> {
    max_gap_ns: u64,
    next_time_ns: Option<u64>,
    inner: G,
}

/// Jepsen's stagger: successive ops are scheduled apart by gaps uniform in `[0, 2 * mean_interval_ns]`,
/// so `stagger(1e9 / R, g)` issues about R ops/s when threads are available. The schedule runs
/// from the previous scheduled time, not from when the op was dispatched.
pub fn stagger<G: Generator>(mean_interval_ns: u64, inner: G) -> Stagger<G> {
    Stagger {
        max_gap_ns: mean_interval_ns.saturating_mul(2),
        next_time_ns: None,
        inner,
    }
}

impl<G: Generator> Generator for Stagger<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        match self.inner.next(ctx, rng) {
            Next::Op(mut op) => {
                let scheduled = self.next_time_ns.unwrap_or(ctx.time_ns);
                let gap = rng.random_range(0..=self.max_gap_ns);
                if op.time_ns >= scheduled {
                    self.next_time_ns = Some(op.time_ns.saturating_add(gap));
                } else {
                    op.time_ns = scheduled;
                    self.next_time_ns = Some(scheduled.saturating_add(gap));
                }
                Next::Op(op)
            }
            other => other,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

/// Fixed minimum spacing; see [`delay`].
pub struct Delay<G> {
    interval_ns: u64,
    last_ns: Option<u64>,
    inner: G,
}

/// Ops from `inner` scheduled at least `interval_ns` apart (Jepsen's `delay`).
pub fn delay<G: Generator>(interval_ns: u64, inner: G) -> Delay<G> {
    Delay {
        interval_ns,
        last_ns: None,
        inner,
    }
}

impl<G: Generator> Generator for Delay<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        match self.inner.next(ctx, rng) {
            Next::Op(mut op) => {
                if let Some(last) = self.last_ns {
                    op.time_ns = op.time_ns.max(last.saturating_add(self.interval_ns));
                }
                op.time_ns = op.time_ns.max(ctx.time_ns);
                self.last_ns = Some(op.time_ns);
                Next::Op(op)
            }
            other => other,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

/// No ops for a while; see [`sleep`].
pub struct Sleep {
    duration_ns: u64,
    end_ns: Option<u64>,
}

/// Pending for `duration_ns` after the first time it is asked, then Done. Emits nothing; useful as
/// a phase. Precision is the interpreter's tick.
pub fn sleep(duration_ns: u64) -> Sleep {
    Sleep {
        duration_ns,
        end_ns: None,
    }
}

impl Generator for Sleep {
    fn next(&mut self, ctx: &Context, _rng: &mut ChaCha8Rng) -> Next {
        let end = *self
            .end_ns
            .get_or_insert(ctx.time_ns.saturating_add(self.duration_ns));
        if ctx.time_ns >= end {
            Next::Done
        } else {
            Next::Pending
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sequencing

/// Generators one after another; see [`seq`] and [`phases`].
pub struct Seq {
    gens: VecDeque<Box<dyn Generator>>,
    sync: bool,
    /// A phase just ended: wait for its ops before asking the next one.
    barrier: bool,
    /// Threads running ops this generator emitted that may not have completed yet.
    outstanding: Vec<ThreadId>,
}

/// Each generator in turn until it is Done; no waiting between them.
pub fn seq(gens: Vec<Box<dyn Generator>>) -> Seq {
    Seq {
        gens: gens.into(),
        sync: false,
        barrier: false,
        outstanding: Vec::new(),
    }
}

/// Like [`seq`], but (like Jepsen's `phases`) a generator is only asked once every op emitted by
/// the previous ones has completed. An emitted op counts as completed once its thread is seen
/// free again (the interpreter dispatches before asking again, so a free thread has finished).
pub fn phases(gens: Vec<Box<dyn Generator>>) -> Seq {
    Seq {
        sync: true,
        ..seq(gens)
    }
}

impl Generator for Seq {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if self.sync {
            self.outstanding.retain(|&t| !ctx.is_free(t));
        }
        loop {
            let Some(g) = self.gens.front_mut() else {
                return Next::Done;
            };
            if self.barrier {
                if !self.outstanding.is_empty() {
                    return Next::Pending;
                }
                self.barrier = false;
            }
            match g.next(ctx, rng) {
                Next::Op(op) => {
                    if self.sync && !self.outstanding.contains(&op.thread) {
                        self.outstanding.push(op.thread);
                    }
                    return Next::Op(op);
                }
                Next::Pending => return Next::Pending,
                Next::Done => {
                    self.gens.pop_front();
                    self.barrier = self.sync;
                }
            }
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        if let Some(g) = self.gens.front_mut() {
            g.update(ctx, event);
        }
    }
}

/// A generator restarted whenever it is exhausted; see [`cycle`].
pub struct Cycle<F, G> {
    factory: F,
    current: Option<G>,
    /// The current generator is fresh and has produced nothing yet.
    fresh: bool,
}

/// Runs `factory()` to Done, then a new `factory()`, forever. Done only if a fresh generator is
/// Done before producing any op (so an empty generator cannot spin).
pub fn cycle<F, G>(factory: F) -> Cycle<F, G>
where
    F: FnMut() -> G + Send,
    G: Generator,
{
    Cycle {
        factory,
        current: None,
        fresh: true,
    }
}

impl<F, G> Generator for Cycle<F, G>
where
    F: FnMut() -> G + Send,
    G: Generator,
{
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        loop {
            let g = match &mut self.current {
                Some(g) => g,
                None => {
                    self.fresh = true;
                    self.current.insert((self.factory)())
                }
            };
            match g.next(ctx, rng) {
                Next::Op(op) => {
                    self.fresh = false;
                    return Next::Op(op);
                }
                Next::Pending => return Next::Pending,
                Next::Done if self.fresh => return Next::Done,
                Next::Done => self.current = None,
            }
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        if let Some(g) = &mut self.current {
            g.update(ctx, event);
        }
    }
}

/// Alternation between two generators; see [`flip_flop`].
pub struct FlipFlop<A, B> {
    a: A,
    b: B,
    a_next: bool,
}

/// Ops alternately from `a` and `b`, starting with `a`; Done as soon as the one whose turn it is
/// is Done (Jepsen's `flip-flop`).
pub fn flip_flop<A: Generator, B: Generator>(a: A, b: B) -> FlipFlop<A, B> {
    FlipFlop { a, b, a_next: true }
}

impl<A: Generator, B: Generator> Generator for FlipFlop<A, B> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let next = if self.a_next {
            self.a.next(ctx, rng)
        } else {
            self.b.next(ctx, rng)
        };
        if matches!(next, Next::Op(_)) {
            self.a_next = !self.a_next;
        }
        next
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.a.update(ctx, event);
        self.b.update(ctx, event);
    }
}

// ---------------------------------------------------------------------------------------------
// Thread scoping

/// Copy `ctx` into `scratch` with only the threads accepted by `keep` free, reusing allocations.
fn narrow_into(scratch: &mut Context, ctx: &Context, keep: impl Fn(ThreadId) -> bool) {
    scratch.time_ns = ctx.time_ns;
    scratch.client_threads = ctx.client_threads;
    scratch.processes.clone_from(&ctx.processes);
    scratch.nodes.clone_from(&ctx.nodes);
    scratch.free.clear();
    scratch
        .free
        .extend(ctx.free.iter().copied().filter(|&t| keep(t)));
}

struct Slot<G> {
    thread: ThreadId,
    gen_: G,
    buffered: Option<Invocation>,
    done: bool,
}

/// One generator per client thread; see [`each_thread`].
pub struct EachThread<F, G> {
    factory: F,
    slots: Option<Vec<Slot<G>>>,
    scratch: Context,
}

/// Every client thread `t` (of the first context seen) gets its own `factory(t)`, which sees a
/// context where only `t` can be free. The earliest-scheduled op among the children whose thread
/// is free is returned; a child's op that loses is kept for later (never re-asked or dropped).
/// Done when every child is Done. Updates go to every child.
pub fn each_thread<F, G>(factory: F) -> EachThread<F, G>
where
    F: FnMut(ThreadId) -> G + Send,
    G: Generator,
{
    EachThread {
        factory,
        slots: None,
        scratch: Context::new(0, Vec::new()),
    }
}

impl<F, G> Generator for EachThread<F, G>
where
    F: FnMut(ThreadId) -> G + Send,
    G: Generator,
{
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let factory = &mut self.factory;
        let slots = self.slots.get_or_insert_with(|| {
            (0..ctx.client_threads)
                .map(|thread| Slot {
                    thread,
                    gen_: factory(thread),
                    buffered: None,
                    done: false,
                })
                .collect()
        });
        let mut live = false;
        let mut best: Option<(u64, usize)> = None;
        let mut narrowed = false;
        for (i, slot) in slots.iter_mut().enumerate() {
            if slot.done && slot.buffered.is_none() {
                continue;
            }
            live = true;
            if !ctx.is_free(slot.thread) {
                continue;
            }
            if slot.buffered.is_none() {
                if !narrowed {
                    narrow_into(&mut self.scratch, ctx, |_| false);
                    narrowed = true;
                }
                self.scratch.free.clear();
                self.scratch.free.insert(slot.thread);
                match slot.gen_.next(&self.scratch, rng) {
                    Next::Op(op) => slot.buffered = Some(op),
                    Next::Pending => {}
                    Next::Done => slot.done = true,
                }
            }
            if let Some(op) = &slot.buffered
                && best.is_none_or(|(t, _)| op.time_ns < t)
            {
                best = Some((op.time_ns, i));
            }
        }
        match best {
            Some((_, i)) => match slots[i].buffered.take() {
                Some(op) => Next::Op(op),
                None => Next::Pending,
            },
            None if live => Next::Pending,
            None => Next::Done,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        for slot in self.slots.iter_mut().flatten() {
            slot.gen_.update(ctx, event);
        }
    }
}

/// A generator restricted to some threads; see [`on_threads`].
pub struct OnThreads<P, G> {
    keep: P,
    inner: G,
    scratch: Context,
}

/// `inner` sees a context where only threads accepted by `keep` are free. Updates are passed
/// through unfiltered (events name processes, not threads). Cost per call: rebuilding the free set.
pub fn on_threads<P, G>(keep: P, inner: G) -> OnThreads<P, G>
where
    P: Fn(ThreadId) -> bool + Send,
    G: Generator,
{
    OnThreads {
        keep,
        inner,
        scratch: Context::new(0, Vec::new()),
    }
}

impl<P, G> Generator for OnThreads<P, G>
where
    P: Fn(ThreadId) -> bool + Send,
    G: Generator,
{
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        narrow_into(&mut self.scratch, ctx, &self.keep);
        self.inner.next(&self.scratch, rng)
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        self.inner.update(ctx, event)
    }
}

// ---------------------------------------------------------------------------------------------
// Retry

/// Retry until an op completes ok; see [`until_ok`].
pub struct UntilOk<G> {
    inner: G,
    in_flight: Option<Process>,
    done: bool,
}

/// Ops from `inner`, one at a time (each waits for the previous one's completion), until one
/// completes `ok`; then Done. Also Done when `inner` is. Bound the retries with
/// `until_ok(limit(n, g))`. Needs `update` to see completions.
pub fn until_ok<G: Generator>(inner: G) -> UntilOk<G> {
    UntilOk {
        inner,
        in_flight: None,
        done: false,
    }
}

impl<G: Generator> Generator for UntilOk<G> {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if self.done {
            return Next::Done;
        }
        if self.in_flight.is_some() {
            return Next::Pending;
        }
        match self.inner.next(ctx, rng) {
            Next::Op(op) => {
                self.in_flight = Some(ctx.process_of(op.thread));
                Next::Op(op)
            }
            Next::Done => {
                self.done = true;
                Next::Done
            }
            Next::Pending => Next::Pending,
        }
    }

    fn update(&mut self, ctx: &Context, event: &Op) {
        if event.op_type != OpType::Invoke && self.in_flight == Some(event.process) {
            self.in_flight = None;
            if event.op_type == OpType::Ok {
                self.done = true;
            }
        }
        self.inner.update(ctx, event)
    }
}
