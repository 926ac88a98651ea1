//! The one scheduler: runs generators against clients and records the history.
//!
//! One owner task holds the generators, the `Context`, the history writer and every logical
//! thread's `Client` (client threads bound to nodes, plus the nemesis thread). An op in flight is
//! a future the owner polls itself (a `FuturesUnordered`): it owns the thread's client for the
//! op's duration and hands it back with the completion, so only the owner writes the history
//! (invariant 2) and an op costs no task hop or channel on the controller's side. Every invoke is
//! appended before its op's future exists and every completion as soon as it arrives. The writer
//! may buffer (the runner gives it a `mapped::HistoryFile`): the owner flushes it before every
//! wait and before starting the ops of a burst, so an op never reaches a client before its invoke is
//! written, and a killed controller loses at most the completions of the burst it was in (those
//! ops then look indeterminate, never absent). Times are nanoseconds since the run started from a
//! monotonic clock.
//!
//! Each op is bounded by its client's [`Client::op_bound`], else its thread's [`Worker::timeout`]
//! (then the op is dropped and ends as [`Client::timed_out`] says: `info` unless the client
//! knows better); a client that panics completes its op `info` and its thread's later ops too
//! (its client is gone).
//!
//! Shutdown protocol: `Interpreter::shutdown_handle` gives a `watch` sender; once it is set the
//! owner stops asking generators for ops, waits for in-flight ops, and returns. Phases (main →
//! heal → final reads) are sequenced by the caller; [`Interpreter::close`] closes the clients
//! (dropping the interpreter closes them in a background task instead).

use crate::client::{Client, ClientOpenError, Completion};
use crate::generator::{Context, Generator, Invocation, NEMESIS_THREAD, Next, ThreadId};
use crate::history::{HistoryWriter, Name, Op, OpType, Process};
use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeSet;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Completions taken in one pass after the owner wakes (bounds the time between flushes).
const MAX_DRAIN: usize = 256;

/// Counters shared with the progress display.
#[derive(Debug, Default)]
pub struct Stats {
    /// Client ops completed ok.
    pub ok: AtomicU64,
    /// Client ops completed fail.
    pub fail: AtomicU64,
    /// Client ops completed info.
    pub info: AtomicU64,
    /// Nemesis ops performed.
    pub nemesis: AtomicU64,
    /// Human-readable list of active faults, updated by the nemesis.
    pub active_faults: std::sync::Mutex<String>,
}

impl Stats {
    /// Client ops completed so far: (ok, fail, info).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.fail.load(Ordering::Relaxed),
            self.info.load(Ordering::Relaxed),
        )
    }
}

/// Why the interpreter stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum InterpreterError {
    /// Writing the history failed: nothing more can be recorded safely.
    #[error("writing history: {0}")]
    History(#[from] std::io::Error),
    /// A generator broke its contract (bug in a generator, reported instead of panicking).
    #[error("generator contract violated: {0}")]
    Generator(String),
}

/// One logical thread's client and its settings.
pub struct Worker {
    /// Performs the ops.
    pub client: Box<dyn Client>,
    /// Node this thread is bound to (recorded on each op), if any.
    pub node: Option<String>,
    /// Upper bound on one op, a backstop behind the client's own timer: when exceeded the op is
    /// dropped and completes as [`Client::timed_out`] says (`info` by default). A client that
    /// hands its bound to the interpreter ([`Client::op_bound`]) gets that bound instead.
    pub timeout: Duration,
}

struct Job {
    f: String,
    key: Option<String>,
    value: Value,
}

/// A finished op: its thread's slot, the client handed back (`None` after a panic) and the
/// completion.
struct Done {
    slot: usize,
    client: Option<Box<dyn Client>>,
    completion: Completion,
}

/// An op in flight.
type Running = Pin<Box<dyn Future<Output = Done> + Send>>;

/// A thread's client while no op of it is in flight.
enum Idle {
    Ready(Box<dyn Client>),
    /// Lent to the op in flight.
    Busy,
    /// It panicked: later ops of the thread complete `info` at once.
    Panicked,
}

/// Makes a client for client thread `thread` bound to node `node` (an index into the run's
/// nodes), for threads that follow membership.
pub type ClientFactory =
    Box<dyn Fn(usize, usize) -> Result<Box<dyn Client>, ClientOpenError> + Send>;

/// Client threads following membership ([`Interpreter::follow_members`]): after each op, a
/// thread whose own node a membership change retired gets a client bound to the next member
/// (`MemberBoard::serving`), and its own again once the node is back; the op's `node` in the
/// history is the node that served it, and the thread continues under a new process (a new
/// client has none of the old one's state: a log poller's cursors, a session).
pub struct Follow {
    /// The nodes out of the cluster (the membership fault writes it).
    pub board: crate::members::MemberBoard,
    /// Every node, in the clients' order (`ClientCtx::nodes`).
    pub nodes: Vec<String>,
    /// Per client thread: its own node's index in `nodes`.
    pub homes: Vec<usize>,
    /// Builds a thread's client for a node.
    pub client: ClientFactory,
}

/// [`Follow`] and, per client thread, the board generation it last looked at and the node it
/// works through.
struct Following {
    follow: Follow,
    seen: Vec<Option<u64>>,
    serving: Vec<usize>,
}

/// The scheduler state that persists across phases.
pub struct Interpreter<W: Write> {
    start: Instant,
    writer: HistoryWriter<W>,
    ctx: Context,
    /// RNG of the client root; the nemesis root has its own stream so fault choices do not
    /// depend on how many client ops happened to be generated in between.
    rngs: [ChaCha8Rng; 2],
    /// Per slot (client threads `0..n`, then the nemesis thread at `n` when there is one): the
    /// client, its op timeout, its node, and its op in flight.
    clients: Vec<Idle>,
    timeouts: Vec<Duration>,
    nodes_of: Vec<Option<Name>>,
    in_flight: Vec<Option<Op>>,
    has_nemesis: bool,
    /// The ops in flight, polled by the owner.
    running: FuturesUnordered<Running>,
    /// Jobs whose invokes are written but not yet flushed; started by [`Interpreter::send_outbox`]
    /// right after the flush, so no op reaches a client before its invoke is on disk.
    outbox: Vec<(usize, Job)>,
    stats: Arc<Stats>,
    shutdown: watch::Receiver<bool>,
    shutdown_tx: watch::Sender<bool>,
    tick: Duration,
    following: Option<Following>,
}

impl<W: Write> Interpreter<W> {
    /// An interpreter over one client per client thread plus an optional nemesis client.
    /// `start` is the run's time origin.
    pub fn new(
        start: Instant,
        writer: HistoryWriter<W>,
        clients: Vec<Worker>,
        nemesis: Option<Worker>,
        nodes: Vec<String>,
        rng: ChaCha8Rng,
        stats: Arc<Stats>,
    ) -> Interpreter<W> {
        let n_clients = clients.len();
        let has_nemesis = nemesis.is_some();
        let mut slots = Vec::with_capacity(n_clients + 1);
        let mut timeouts = Vec::with_capacity(n_clients + 1);
        let mut nodes_of = Vec::with_capacity(n_clients + 1);
        for worker in clients.into_iter().chain(nemesis) {
            timeouts.push(worker.client.op_bound().unwrap_or(worker.timeout));
            slots.push(Idle::Ready(worker.client));
            nodes_of.push(worker.node.as_deref().map(Name::new));
        }
        let mut free: BTreeSet<ThreadId> = (0..n_clients).collect();
        if has_nemesis {
            free.insert(NEMESIS_THREAD);
        }
        let ctx = Context {
            time_ns: 0,
            free,
            processes: (0..n_clients as u64).collect(),
            client_threads: n_clients,
            nodes,
        };
        let (shutdown_tx, shutdown) = watch::channel(false);
        let mut nemesis_rng = rng.clone();
        nemesis_rng.set_stream(1);
        Interpreter {
            start,
            writer,
            ctx,
            rngs: [rng, nemesis_rng],
            in_flight: (0..slots.len()).map(|_| None).collect(),
            clients: slots,
            timeouts,
            nodes_of,
            has_nemesis,
            running: FuturesUnordered::new(),
            outbox: Vec::new(),
            stats,
            shutdown,
            shutdown_tx,
            tick: Duration::from_millis(100),
            following: None,
        }
    }

    /// Make the client threads follow membership changes (see [`Follow`]).
    pub fn follow_members(&mut self, follow: Follow) {
        let threads = self.ctx.client_threads;
        self.following = Some(Following {
            seen: vec![Some(follow.board.generation()); threads],
            serving: (0..threads)
                .map(|t| follow.homes.get(t).copied().unwrap_or(0))
                .collect(),
            follow,
        });
    }

    /// When client slot `slot` has finished an op: if the membership board changed since it
    /// last looked, bind its client to the node it should work through now. A client that cannot be
    /// made leaves the thread where it was: it tries again at its next op, or, when the settings
    /// are at fault ([`ClientOpenError::Config`]: the same ask fails the same way), at the next
    /// membership change.
    fn follow_membership(&mut self, slot: usize) {
        let Some(fw) = self.following.as_mut() else {
            return;
        };
        if slot >= fw.serving.len() {
            return;
        }
        let generation = fw.follow.board.generation();
        if fw.seen[slot] == Some(generation) {
            return;
        }
        let home = fw.follow.homes.get(slot).copied().unwrap_or(0);
        let want = fw.follow.board.serving(&fw.follow.nodes, home);
        if want == fw.serving[slot] || !matches!(self.clients[slot], Idle::Ready(_)) {
            fw.seen[slot] = Some(generation);
            return;
        }
        match (fw.follow.client)(slot, want) {
            Ok(client) => {
                if let Some(bound) = client.op_bound() {
                    self.timeouts[slot] = bound;
                }
                if let Idle::Ready(mut old) =
                    std::mem::replace(&mut self.clients[slot], Idle::Ready(client))
                    && let Ok(handle) = tokio::runtime::Handle::try_current()
                {
                    handle.spawn(async move { old.close().await });
                }
                self.nodes_of[slot] = Some(Name::new(&fw.follow.nodes[want]));
                fw.serving[slot] = want;
                fw.seen[slot] = Some(generation);
                // A new client is a new process (its own cursors and sessions), as after an
                // indeterminate op.
                self.ctx.processes[slot] += self.ctx.client_threads as u64;
            }
            Err(e) if e.is_config() => fw.seen[slot] = Some(generation),
            Err(_) => fw.seen[slot] = None,
        }
    }

    /// The slot of a thread, if it exists.
    fn slot(&self, thread: ThreadId) -> Option<usize> {
        if thread == NEMESIS_THREAD {
            self.has_nemesis.then_some(self.ctx.client_threads)
        } else {
            (thread < self.ctx.client_threads).then_some(thread)
        }
    }

    /// The thread of a slot.
    fn thread(&self, slot: usize) -> ThreadId {
        if slot == self.ctx.client_threads {
            NEMESIS_THREAD
        } else {
            slot
        }
    }

    /// A handle that stops the interpreter gracefully when set to `true`.
    pub fn shutdown_handle(&self) -> watch::Sender<bool> {
        self.shutdown_tx.clone()
    }

    /// True once shutdown was requested.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Number of history events written.
    pub fn ops_written(&self) -> u64 {
        self.writer.len()
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// [`Interpreter::run_phase`] as a task of the runtime, handing the interpreter back after.
    /// A caller inside `block_on` runs on the main thread, outside the runtime's workers: every
    /// completion would then wake it across threads (a futex wake and a context switch per op),
    /// while a spawned owner usually runs on the thread that just finished the op (on the
    /// commands' one-thread runtime both are the same thread). A panic
    /// inside the phase resumes in the caller.
    pub async fn run_phase_on_worker(
        mut self,
        client_gen: Option<Box<dyn Generator>>,
        nemesis_gen: Option<Box<dyn Generator>>,
    ) -> (Self, Result<(), InterpreterError>)
    where
        W: Send + 'static,
    {
        let task = tokio::spawn(async move {
            let result = self.run_phase(client_gen, nemesis_gen).await;
            (self, result)
        });
        match task.await {
            Ok(done) => done,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Run client and nemesis generators until both are done (or shutdown) and nothing is in
    /// flight. Either may be `None`.
    pub async fn run_phase(
        &mut self,
        client_gen: Option<Box<dyn Generator>>,
        nemesis_gen: Option<Box<dyn Generator>>,
    ) -> Result<(), InterpreterError> {
        let mut gens: [Option<Box<dyn Generator>>; 2] = [client_gen, nemesis_gen];
        let mut held: [Option<Invocation>; 2] = [None, None];
        loop {
            let shutting_down = *self.shutdown.borrow();
            if shutting_down {
                gens = [None, None];
                held = [None, None];
            }
            self.ctx.time_ns = self.now_ns();
            let mut pending = false;
            for root in 0..2 {
                if held[root].is_some() {
                    continue;
                }
                let Some(g) = gens[root].as_mut() else {
                    continue;
                };
                match g.next(&self.ctx, &mut self.rngs[root]) {
                    Next::Op(inv) => {
                        if !self.ctx.free.contains(&inv.thread) || self.slot(inv.thread).is_none() {
                            return Err(InterpreterError::Generator(format!(
                                "op {} for thread {} which is busy or does not exist",
                                inv.f, inv.thread
                            )));
                        }
                        held[root] = Some(inv);
                    }
                    Next::Pending => pending = true,
                    Next::Done => gens[root] = None,
                }
            }
            let now = self.now_ns();
            let mut dispatched = false;
            for slot in held.iter_mut() {
                if slot.as_ref().is_some_and(|inv| inv.time_ns <= now) {
                    let inv = slot.take().expect("checked above");
                    self.dispatch(inv, &mut gens)?;
                    dispatched = true;
                }
            }
            if dispatched {
                continue;
            }
            // Nothing more to dispatch now: write what this burst recorded in one go, then
            // hand out its jobs.
            self.send_outbox(&mut gens)?;
            let idle = gens.iter().all(Option::is_none) && held.iter().all(Option::is_none);
            if idle && self.running.is_empty() {
                return Ok(());
            }
            let mut wake = held.iter().flatten().map(|inv| inv.time_ns).min();
            // With every thread busy no generator can emit anything before a completion (which
            // wakes us anyway, each op being bounded by its worker's timeout): no poll timer.
            let all_busy = self.ctx.free.is_empty() && wake.is_none();
            if !all_busy && (pending || (wake.is_none() && !idle)) {
                let t = now + self.tick.as_nanos() as u64;
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
            let sleep_for = wake.map(|w| Duration::from_nanos(w.saturating_sub(now)));
            let mut shutdown = self.shutdown.clone();
            // Biased: ops first, so which of the ops is polled (and so first asks the system)
            // does not depend on a random branch order (a seeded run on the paused test clock
            // replays exactly). The shutdown flag is read at the top of every pass anyway.
            tokio::select! {
                biased;
                done = self.running.next(), if !self.running.is_empty() => {
                    if let Some(done) = done {
                        self.complete(done, &mut gens)?;
                        // Take every completion already waiting, so a busy run records (and
                        // refills) them in one pass instead of one wake-up each.
                        for _ in 0..MAX_DRAIN {
                            let running = &mut self.running;
                            let ready = std::future::poll_fn(|cx| {
                                Poll::Ready(running.poll_next_unpin(cx))
                            })
                            .await;
                            match ready {
                                Poll::Ready(Some(done)) => self.complete(done, &mut gens)?,
                                _ => break,
                            }
                        }
                    }
                }
                _ = async {
                    match sleep_for {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending::<()>().await,
                    }
                } => {}
                _ = shutdown.changed(), if !shutting_down => {}
            }
        }
    }

    fn dispatch(
        &mut self,
        inv: Invocation,
        gens: &mut [Option<Box<dyn Generator>>; 2],
    ) -> Result<(), InterpreterError> {
        let thread = inv.thread;
        let (process, op_type) = if thread == NEMESIS_THREAD {
            (Process::Nemesis, OpType::Info)
        } else {
            (Process::Client(self.ctx.processes[thread]), OpType::Invoke)
        };
        let slot = self.slot(thread).expect("checked by run_phase");
        let mut op = Op::new(op_type, process, inv.f.clone(), inv.value.clone());
        op.key = inv.key.as_deref().map(Name::new);
        op.node = self.nodes_of[slot].clone();
        op.time_ns = self.now_ns();
        self.writer.append(&mut op)?;
        self.ctx.time_ns = op.time_ns;
        self.ctx.free.remove(&thread);
        for g in gens.iter_mut().flatten() {
            g.update(&self.ctx, &op);
        }
        self.in_flight[slot] = Some(op);
        let job = Job {
            f: inv.f,
            key: inv.key,
            value: inv.value,
        };
        self.outbox.push((slot, job));
        Ok(())
    }

    /// Flush the history (every invoke of the outbox is then written), then start the outbox's
    /// ops. Called before the owner waits for anything, so the file is never behind by more
    /// than one burst of work done without waiting.
    fn send_outbox(
        &mut self,
        gens: &mut [Option<Box<dyn Generator>>; 2],
    ) -> Result<(), InterpreterError> {
        self.writer.flush()?;
        let mut outbox = std::mem::take(&mut self.outbox);
        for (slot, job) in outbox.drain(..) {
            match std::mem::replace(&mut self.clients[slot], Idle::Busy) {
                Idle::Ready(client) => {
                    self.running
                        .push(perform(slot, client, job, self.timeouts[slot]));
                }
                gone => {
                    self.clients[slot] = gone;
                    let completion = Completion::Info {
                        error: "this thread's client panicked on an earlier op".into(),
                    };
                    let done = Done {
                        slot,
                        client: None,
                        completion,
                    };
                    self.complete(done, gens)?;
                }
            }
        }
        self.outbox = outbox;
        Ok(())
    }

    fn complete(
        &mut self,
        done: Done,
        gens: &mut [Option<Box<dyn Generator>>; 2],
    ) -> Result<(), InterpreterError> {
        let thread = self.thread(done.slot);
        let Some(invoke) = self.in_flight[done.slot].take() else {
            return Err(InterpreterError::Generator(format!(
                "completion for thread {thread} with no op in flight"
            )));
        };
        match done.client {
            Some(client) => self.clients[done.slot] = Idle::Ready(client),
            None => self.clients[done.slot] = Idle::Panicked,
        }
        let nemesis = thread == NEMESIS_THREAD;
        let mut op = invoke;
        op.error = None;
        match done.completion {
            Completion::Ok { value, version } => {
                op.op_type = OpType::Ok;
                op.value = value;
                op.version = version;
            }
            Completion::Fail { error, value } => {
                op.op_type = OpType::Fail;
                if !value.is_null() {
                    op.value = value;
                }
                op.error = Some(error);
            }
            Completion::Info { error } => {
                op.op_type = OpType::Info;
                op.error = Some(error);
            }
        }
        if nemesis {
            // Jepsen convention: nemesis events are info on both ends.
            op.op_type = OpType::Info;
            self.stats.nemesis.fetch_add(1, Ordering::Relaxed);
        } else {
            let counter = match op.op_type {
                OpType::Ok => &self.stats.ok,
                OpType::Fail => &self.stats.fail,
                _ => &self.stats.info,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        op.time_ns = self.now_ns();
        self.writer.append(&mut op)?;
        self.ctx.time_ns = op.time_ns;
        if !nemesis && op.op_type == OpType::Info {
            // The old process may still be in flight forever: continue under a new one.
            self.ctx.processes[thread] += self.ctx.client_threads as u64;
        }
        if !nemesis {
            // Between ops, before the generators see the thread free: no op they chose for
            // it is held under its old process.
            self.follow_membership(done.slot);
        }
        self.ctx.free.insert(thread);
        for g in gens.iter_mut().flatten() {
            g.update(&self.ctx, &op);
        }
        Ok(())
    }

    /// Flush the history writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }

    /// Close every client (concurrently; each `close` is bounded by the client) and flush the
    /// history. Call between phases' end and teardown; ops must not be in flight.
    pub async fn close(mut self) -> std::io::Result<()> {
        let clients = std::mem::take(&mut self.clients);
        futures_util::future::join_all(clients.into_iter().filter_map(|c| match c {
            Idle::Ready(mut client) => Some(async move { client.close().await }),
            _ => None,
        }))
        .await;
        self.writer.flush()
    }
}

impl<W: Write> Drop for Interpreter<W> {
    /// Clients not closed with [`Interpreter::close`] are closed in a background task (when a
    /// runtime is there to run it); otherwise they are dropped, which ends their connections.
    fn drop(&mut self) {
        let clients: Vec<Box<dyn Client>> = std::mem::take(&mut self.clients)
            .into_iter()
            .filter_map(|c| match c {
                Idle::Ready(client) => Some(client),
                _ => None,
            })
            .collect();
        if clients.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for mut client in clients {
                    client.close().await;
                }
            });
        }
    }
}

/// One op: `client` performs `job` within `timeout`; a panic completes it `info` and keeps the
/// client out of further use.
fn perform(slot: usize, mut client: Box<dyn Client>, job: Job, timeout: Duration) -> Running {
    Box::pin(async move {
        let invoke = client.invoke(&job.f, job.key.as_deref(), &job.value);
        let outcome = std::panic::AssertUnwindSafe(tokio::time::timeout(timeout, invoke))
            .catch_unwind()
            .await;
        let (client, completion) = match outcome {
            Ok(Ok(c)) => (Some(client), c),
            Ok(Err(_)) => {
                let completion = client.timed_out(timeout);
                (Some(client), completion)
            }
            Err(panic) => (
                None,
                Completion::Info {
                    error: format!("the client panicked: {}", panic_message(&*panic)),
                },
            ),
        };
        Done {
            slot,
            client,
            completion,
        }
    })
}

/// The text of a panic payload.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

#[cfg(test)]
mod tests {
    //! The interpreter against in-memory clients (pure logic; the real etcd path is covered by
    //! tests/run.rs) on a paused tokio clock.
    use super::*;
    use crate::generator::{self, FaultOps, NemesisSchedule};
    use crate::history::History;
    use rand::SeedableRng;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// An atomic in-memory register map; every `every_nth_info`-th op ends info (after applying).
    struct MemClient {
        data: Arc<Mutex<HashMap<String, i64>>>,
        n: u64,
        every_nth_info: u64,
        hang_on: Option<&'static str>,
    }

    #[async_trait::async_trait]
    impl Client for MemClient {
        async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
            self.n += 1;
            if self.hang_on == Some(f) {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(1 + self.n % 3)).await;
            let key = key.unwrap_or("").to_string();
            let mut d = self.data.lock().unwrap();
            let c = match f {
                "read" => Completion::Ok {
                    value: d.get(&key).copied().map_or(Value::Null, |v| json!(v)),
                    version: None,
                },
                "write" => {
                    d.insert(key, value.as_i64().unwrap());
                    Completion::Ok {
                        value: value.clone(),
                        version: None,
                    }
                }
                "cas" => {
                    let (old, new) = (value[0].as_i64(), value[1].as_i64().unwrap());
                    if d.get(&key).copied() == old {
                        d.insert(key, new);
                        Completion::Ok {
                            value: value.clone(),
                            version: None,
                        }
                    } else {
                        Completion::Fail {
                            error: "cas-mismatch".into(),
                            value: Value::Null,
                        }
                    }
                }
                _ => Completion::Fail {
                    error: format!("unknown f {f}"),
                    value: Value::Null,
                },
            };
            if self.every_nth_info > 0 && self.n.is_multiple_of(self.every_nth_info) {
                return Completion::Info {
                    error: "simulated indeterminate".into(),
                };
            }
            c
        }
    }

    struct FaultClient;
    #[async_trait::async_trait]
    impl Client for FaultClient {
        async fn invoke(&mut self, f: &str, _key: Option<&str>, _value: &Value) -> Completion {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Completion::Ok {
                value: json!(format!("did {f}")),
                version: None,
            }
        }
    }

    fn workers(n: usize, every_nth_info: u64, hang_on: Option<&'static str>) -> Vec<Worker> {
        let data = Arc::new(Mutex::new(HashMap::new()));
        (0..n)
            .map(|i| Worker {
                client: Box::new(MemClient {
                    data: data.clone(),
                    n: i as u64,
                    every_nth_info,
                    hang_on,
                }),
                node: Some(format!("n{}", i % 3 + 1)),
                timeout: Duration::from_millis(500),
            })
            .collect()
    }

    fn register(threads: usize) -> (Box<dyn Generator>, generator::KeyLog) {
        let w = generator::register_workload(generator::RegisterConfig {
            threads_per_key: threads.min(2),
            ops_per_key: 50,
            ..Default::default()
        })
        .unwrap();
        let keys = w.keys_used();
        (Box::new(w), keys)
    }

    async fn run_main(
        seed: u64,
        every_nth_info: u64,
        with_nemesis: bool,
    ) -> (History, generator::KeyLog) {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let nemesis = with_nemesis.then(|| Worker {
            client: Box::new(FaultClient),
            node: None,
            timeout: Duration::from_secs(5),
        });
        let mut interp = Interpreter::new(
            Instant::now(),
            HistoryWriter::new(Vec::new()),
            workers(4, every_nth_info, None),
            nemesis,
            nodes,
            ChaCha8Rng::seed_from_u64(seed),
            Arc::new(Stats::default()),
        );
        let (g, keys) = register(4);
        let g = Box::new(generator::time_limit(
            2_000_000_000,
            generator::stagger(2_000_000, g),
        ));
        let schedule = NemesisSchedule {
            faults: vec![FaultOps {
                start_f: "start-partition".into(),
                start_value: json!("one"),
                stop_f: Some("stop-partition".into()),
                stop_value: Value::Null,
            }],
            interval_ns: 300_000_000,
            sequential: false,
        };
        let nem: Option<Box<dyn Generator>> = with_nemesis.then(|| {
            Box::new(generator::time_limit(
                2_000_000_000,
                generator::nemesis_cycle(schedule.clone()),
            )) as Box<dyn Generator>
        });
        interp.run_phase(Some(g), nem).await.unwrap();
        if with_nemesis {
            interp
                .run_phase(None, Some(Box::new(generator::nemesis_heal(&schedule))))
                .await
                .unwrap();
        }
        interp
            .run_phase(Some(Box::new(generator::final_reads(keys.clone()))), None)
            .await
            .unwrap();
        let bytes = interp.writer.get_ref().clone();
        (History::read_jsonl(bytes.as_slice(), "mem").unwrap(), keys)
    }

    /// Answers every op with the node it is bound to.
    struct NodeClient(String);
    #[async_trait::async_trait]
    impl Client for NodeClient {
        async fn invoke(&mut self, _f: &str, _key: Option<&str>, _value: &Value) -> Completion {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Completion::Ok {
                value: json!(self.0),
                version: None,
            }
        }
    }

    /// An interpreter over n1..n3 with one thread bound to each node (its client answers with
    /// its node's name), and the node names.
    fn one_thread_per_node() -> (Interpreter<Vec<u8>>, Vec<String>) {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let workers = (0..3)
            .map(|i| Worker {
                client: Box::new(NodeClient(nodes[i].clone())) as Box<dyn Client>,
                node: Some(nodes[i].clone()),
                timeout: Duration::from_millis(500),
            })
            .collect();
        let interp = Interpreter::new(
            Instant::now(),
            HistoryWriter::new(Vec::new()),
            workers,
            None,
            nodes.clone(),
            ChaCha8Rng::seed_from_u64(7),
            Arc::new(Stats::default()),
        );
        (interp, nodes)
    }

    #[tokio::test(start_paused = true)]
    async fn threads_of_a_retired_node_follow_membership_and_come_back() {
        let (mut interp, nodes) = one_thread_per_node();
        let board = crate::members::MemberBoard::new();
        let names = nodes.clone();
        interp.follow_members(Follow {
            board: board.clone(),
            nodes: nodes.clone(),
            homes: vec![0, 1, 2],
            client: Box::new(move |_thread, node| {
                Ok(Box::new(NodeClient(names[node].clone())) as Box<dyn Client>)
            }),
        });
        async fn phase(interp: &mut Interpreter<Vec<u8>>) {
            let (g, _) = register(3);
            let g = Box::new(generator::time_limit(100_000_000, g));
            interp.run_phase(Some(g), None).await.unwrap();
        }
        phase(&mut interp).await;
        let before = interp.ops_written();
        board.retire("n2");
        phase(&mut interp).await;
        let during = interp.ops_written();
        board.restore("n2");
        phase(&mut interp).await;
        let bytes = interp.writer.get_ref().clone();
        let h = History::read_jsonl(bytes.as_slice(), "mem").unwrap();
        // Thread 1 (n2's) in each phase: the node on its ok ops and the node that answered.
        // A thread idle when the board changed moves after its next op, so each phase's first
        // op may still go where the thread was.
        let served = |from: u64, to: u64| -> Vec<(String, String)> {
            h.ops
                .iter()
                .filter(|o| {
                    matches!(o.process, Process::Client(p) if p % 3 == 1)
                        && o.op_type == OpType::Ok
                        && (from..to).contains(&o.index)
                })
                .map(|op| {
                    let node = op.node.as_ref().map(|n| n.to_string()).unwrap_or_default();
                    (node, op.value.as_str().unwrap_or_default().to_string())
                })
                .collect()
        };
        let after_first = |v: Vec<(String, String)>| -> BTreeSet<(String, String)> {
            assert!(v.len() > 2, "too few ops: {v:?}");
            v.into_iter().skip(1).collect()
        };
        let pair = |n: &str| BTreeSet::from([(n.to_string(), n.to_string())]);
        assert_eq!(after_first(served(0, before)), pair("n2"));
        assert_eq!(
            after_first(served(before, during)),
            pair("n3"),
            "n2 retired: through n3"
        );
        assert_eq!(after_first(served(during, u64::MAX)), pair("n2"), "n2 back");
        // Each move is a new process of the thread: 1, then 4 through n3, then 7 back on n2.
        let processes: BTreeSet<u64> = h
            .ops
            .iter()
            .filter_map(|o| match o.process {
                Process::Client(p) if p % 3 == 1 => Some(p),
                _ => None,
            })
            .collect();
        assert_eq!(processes, BTreeSet::from([1, 4, 7]));
        // The other threads never moved.
        assert!(
            h.ops
                .iter()
                .filter(|o| o.process == Process::Client(0))
                .all(|o| o.node.as_ref().is_some_and(|n| n.as_str() == "n1"))
        );
    }

    /// How often a thread whose node retired asks for a new client that cannot be made: once
    /// per membership change when the settings are at fault, at every op otherwise.
    async fn rebind_attempts(error: ClientOpenError) -> (usize, u64) {
        let (mut interp, nodes) = one_thread_per_node();
        let board = crate::members::MemberBoard::new();
        let asked = Arc::new(Mutex::new(0usize));
        let counter = asked.clone();
        interp.follow_members(Follow {
            board: board.clone(),
            nodes: nodes.clone(),
            homes: vec![0, 1, 2],
            client: Box::new(move |_thread, _node| {
                *counter.lock().unwrap() += 1;
                Err(error.clone())
            }),
        });
        board.retire("n2");
        let (g, _) = register(3);
        let g = Box::new(generator::time_limit(100_000_000, g));
        interp.run_phase(Some(g), None).await.unwrap();
        let bytes = interp.writer.get_ref().clone();
        let h = History::read_jsonl(bytes.as_slice(), "mem").unwrap();
        let thread_ops = h
            .ops
            .iter()
            .filter(|o| o.process == Process::Client(1) && o.op_type == OpType::Ok)
            .count() as u64;
        let asked = *asked.lock().unwrap();
        (asked, thread_ops)
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_the_settings_cannot_make_is_asked_for_once_per_membership_change() {
        let (asked, ops) = rebind_attempts(ClientOpenError::Config(
            "--read-nodes: no node named \"n9\"".into(),
        ))
        .await;
        assert!(ops > 2, "too few ops: {ops}");
        assert_eq!(asked, 1, "asked {asked} times over {ops} ops");
        let (asked, ops) =
            rebind_attempts(ClientOpenError::Driver("sentinel list: no".into())).await;
        assert!(asked as u64 >= ops, "asked {asked} times over {ops} ops");
    }

    #[tokio::test(start_paused = true)]
    async fn every_invoke_completes_and_times_are_monotonic() {
        let (h, keys) = run_main(1, 0, false).await;
        assert!(h.ops.len() > 1000, "only {} events", h.ops.len());
        let pairs = h.pairs().unwrap();
        for (i, op) in h.ops.iter().enumerate() {
            assert_eq!(op.index, i as u64);
            if op.op_type == OpType::Invoke {
                assert!(pairs[i].is_some(), "invoke {i} never completed");
            }
        }
        assert!(h.ops.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        // Final reads: one ok read of every key after the main phase.
        let last_reads = h
            .ops
            .iter()
            .rev()
            .take_while(|o| o.f == "read")
            .filter(|o| o.op_type == OpType::Ok)
            .count();
        assert!(
            last_reads >= keys.len(),
            "{last_reads} final reads for {} keys",
            keys.len()
        );
        // Main phase stopped at the time limit (+ final reads and in-flight slack).
        assert!(h.ops.last().unwrap().time_ns < 2_200_000_000);
    }

    #[tokio::test(start_paused = true)]
    async fn info_ops_move_the_thread_to_a_new_process() {
        let (h, _) = run_main(2, 7, false).await;
        let infos: Vec<&Op> = h.ops.iter().filter(|o| o.op_type == OpType::Info).collect();
        assert!(!infos.is_empty());
        for info in infos {
            let p = info.process.client().unwrap();
            let later_invoke = h
                .ops
                .iter()
                .skip(info.index as usize + 1)
                .any(|o| o.op_type == OpType::Invoke && o.process == Process::Client(p));
            assert!(
                !later_invoke,
                "process {p} reused after its info op {}",
                info.index
            );
        }
        assert!(h.pairs().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn same_seed_same_ops() {
        let strip = |h: History| -> Vec<(String, Option<String>, Value)> {
            h.ops
                .into_iter()
                .filter(|o| o.op_type == OpType::Invoke)
                .map(|o| (o.f.into(), o.key.map(String::from), o.value))
                .collect()
        };
        let (a, _) = run_main(9, 0, true).await;
        let (b, _) = run_main(9, 0, true).await;
        let (c, _) = run_main(10, 0, true).await;
        let (a, b, c) = (strip(a), strip(b), strip(c));
        if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
            panic!(
                "differ at {i} of {}/{}: {:?} vs {:?}",
                a.len(),
                b.len(),
                &a[i.saturating_sub(3)..i + 2],
                &b[i.saturating_sub(3)..i + 2]
            );
        }
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[tokio::test(start_paused = true)]
    async fn nemesis_events_are_recorded_and_healed() {
        let (h, _) = run_main(3, 0, true).await;
        let nem: Vec<&Op> = h
            .ops
            .iter()
            .filter(|o| o.process == Process::Nemesis)
            .collect();
        assert!(nem.iter().all(|o| o.op_type == OpType::Info));
        let starts = nem.iter().filter(|o| o.f == "start-partition").count();
        let stops = nem.iter().filter(|o| o.f == "stop-partition").count();
        assert!(starts >= 4, "{starts} partition events");
        // Each start has an invoke and completion; the final heal stops whatever is left.
        assert!(stops >= starts, "{starts} starts, {stops} stops");
        assert_eq!(nem.last().unwrap().f, "stop-partition");
    }

    #[tokio::test(start_paused = true)]
    async fn hung_ops_time_out_as_info_and_shutdown_stops_early() {
        let mut interp = Interpreter::new(
            Instant::now(),
            HistoryWriter::new(Vec::new()),
            workers(2, 0, Some("write")),
            None,
            vec!["n1".into()],
            ChaCha8Rng::seed_from_u64(5),
            Arc::new(Stats::default()),
        );
        let stop = interp.shutdown_handle();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            let _ = stop.send(true);
        });
        let (g, _) = register(2);
        let g = Box::new(generator::time_limit(
            60_000_000_000,
            generator::stagger(10_000_000, g),
        ));
        interp.run_phase(Some(g), None).await.unwrap();
        let h = History::read_jsonl(interp.writer.get_ref().as_slice(), "mem").unwrap();
        let last = h.ops.last().unwrap().time_ns;
        assert!(last < 4_000_000_000, "shutdown took until {last} ns");
        let timed_out = h
            .ops
            .iter()
            .filter(|o| o.error.as_deref().is_some_and(|e| e.contains("timed out")))
            .count();
        assert!(timed_out > 0);
        assert!(
            h.ops
                .iter()
                .filter(|o| o.f == "write" && o.op_type != OpType::Invoke)
                .all(|o| o.op_type == OpType::Info)
        );
    }

    /// Hangs on every write until the interpreter drops it; asks the interpreter to bound its ops
    /// at 40 ms and says how a dropped op ended.
    struct SelfBounded {
        writes_started: u64,
        timed_out_calls: Arc<AtomicU64>,
    }

    #[async_trait::async_trait]
    impl Client for SelfBounded {
        async fn invoke(&mut self, f: &str, _key: Option<&str>, value: &Value) -> Completion {
            if f == "write" {
                self.writes_started += 1;
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            Completion::Ok {
                value: value.clone(),
                version: None,
            }
        }

        fn op_bound(&self) -> Option<Duration> {
            Some(Duration::from_millis(40))
        }

        fn timed_out(&mut self, after: Duration) -> Completion {
            self.timed_out_calls.fetch_add(1, Ordering::Relaxed);
            Completion::Fail {
                error: format!(
                    "never sent (write {}), {} ms",
                    self.writes_started,
                    after.as_millis()
                ),
                value: Value::Null,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_hands_its_bound_over_gets_it_and_says_how_dropped_ops_ended() {
        let calls = Arc::new(AtomicU64::new(0));
        let worker = Worker {
            client: Box::new(SelfBounded {
                writes_started: 0,
                timed_out_calls: calls.clone(),
            }),
            node: None,
            // The backstop; the client's own 40 ms bound replaces it.
            timeout: Duration::from_secs(30),
        };
        let mut interp = Interpreter::new(
            Instant::now(),
            HistoryWriter::new(Vec::new()),
            vec![worker],
            None,
            vec!["n1".into()],
            ChaCha8Rng::seed_from_u64(3),
            Arc::new(Stats::default()),
        );
        let (g, _) = register(1);
        let g = Box::new(generator::time_limit(2_000_000_000, g));
        interp.run_phase(Some(g), None).await.unwrap();
        let h = History::read_jsonl(interp.writer.get_ref().as_slice(), "mem").unwrap();
        let pairs = h.pairs().unwrap();
        let done: Vec<(usize, usize)> = pairs
            .iter()
            .enumerate()
            .filter(|(i, _)| h.ops[*i].op_type == OpType::Invoke)
            .map(|(i, c)| (i, c.expect("every op completed")))
            .collect();
        let writes: Vec<_> = done
            .iter()
            .filter(|(i, _)| h.ops[*i].f == "write")
            .map(|(_, c)| &h.ops[*c])
            .collect();
        assert!(writes.len() > 5, "{} writes", writes.len());
        for (i, w) in writes.iter().enumerate() {
            // The client's own words, after its bound (not the 30 s backstop), on the client
            // the dropped op gave back.
            assert_eq!(w.op_type, OpType::Fail, "{w:?}");
            let want = format!("never sent (write {}), 40 ms", i + 1);
            assert_eq!(w.error.as_deref(), Some(want.as_str()));
        }
        for (i, c) in &done {
            let took = h.ops[*c].time_ns - h.ops[*i].time_ns;
            assert!(took < 100_000_000, "an op took {took} ns");
        }
        assert_eq!(calls.load(Ordering::Relaxed), writes.len() as u64);
    }

    /// Panics on its `panic_on`-th op (1-based), answers every other op ok; counts closes.
    struct Panicky {
        n: u64,
        panic_on: u64,
        closed: Arc<AtomicU64>,
    }

    #[async_trait::async_trait]
    impl Client for Panicky {
        async fn invoke(&mut self, _f: &str, _key: Option<&str>, value: &Value) -> Completion {
            self.n += 1;
            tokio::time::sleep(Duration::from_millis(1)).await;
            if self.n == self.panic_on {
                panic!("bad client state at op {}", self.n);
            }
            Completion::Ok {
                value: value.clone(),
                version: None,
            }
        }
        async fn close(&mut self) {
            self.closed.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_client_ends_its_ops_info_and_the_rest_run_on_and_close() {
        let closed = Arc::new(AtomicU64::new(0));
        let workers = (0..3)
            .map(|i| Worker {
                client: Box::new(Panicky {
                    n: 0,
                    // Thread 1 panics on its 5th op; the others never.
                    panic_on: if i == 1 { 5 } else { u64::MAX },
                    closed: closed.clone(),
                }) as Box<dyn Client>,
                node: Some("n1".into()),
                timeout: Duration::from_millis(500),
            })
            .collect();
        let mut interp = Interpreter::new(
            Instant::now(),
            HistoryWriter::new(Vec::new()),
            workers,
            None,
            vec!["n1".into()],
            ChaCha8Rng::seed_from_u64(1),
            Arc::new(Stats::default()),
        );
        let (g, _) = register(3);
        let g = Box::new(generator::time_limit(200_000_000, g));
        interp.run_phase(Some(g), None).await.unwrap();
        let h = History::read_jsonl(interp.writer.get_ref().as_slice(), "mem").unwrap();
        assert!(h.pairs().is_ok());
        let panicked: Vec<&Op> = h
            .ops
            .iter()
            .filter(|o| o.error.as_deref().is_some_and(|e| e.contains("panicked")))
            .collect();
        assert!(
            panicked[0]
                .error
                .as_deref()
                .unwrap()
                .contains("bad client state at op 5"),
            "{:?}",
            panicked[0]
        );
        // Every later op of that thread also ends info, at once; the others keep going.
        assert!(panicked.len() > 1, "{} panicked ops", panicked.len());
        assert!(panicked.iter().all(|o| o.op_type == OpType::Info));
        let ok_after = h
            .ops
            .iter()
            .filter(|o| o.op_type == OpType::Ok && o.index > panicked[0].index)
            .count();
        assert!(ok_after > 10, "{ok_after} ok ops after the panic");
        interp.close().await.unwrap();
        assert_eq!(
            closed.load(Ordering::Relaxed),
            2,
            "the two live clients closed"
        );
    }
}
