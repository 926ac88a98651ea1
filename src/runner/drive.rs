//! Driving a set-up cluster: the client generator a workload spec makes (`build_client_gen`),
//! the nemesis schedule a nemesis spec makes (`schedule_of`, clock offsets `with_offsets_of`),
//! and [`drive`], the interpreter's phases — main (clients and nemesis until the time limit), the
//! final heal (one budget), settle, `db-status`, final reads — appending to the run's history;
//! live checking of retired keys runs beside the main phase (`runner::live`) and, with
//! `--stop-on-anomaly`, ends it at the first confirmed anomaly.
//!
//! Does not own setting the cluster up or tearing it down, nor checking (the rest of `runner`),
//! nor what an op does (clients, `nemesis`).

use super::{Budget, NemesisClient, RunError, first_err, on_nodes};
use crate::config::TestConfig;
use crate::control::Remote;
use crate::generator::{self, Generator};
use crate::history::HistoryWriter;
use crate::interpreter::{Interpreter, Stats, Worker};
use crate::nemesis::Nemesis;
use crate::node::Node;
use crate::progress::{Phase, Progress};
use crate::store::RunDir;
use crate::systems::System;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

pub(super) fn build_client_gen(
    cfg: &TestConfig,
    stalls: Option<&generator::stall::StallBoard>,
) -> Result<(Box<dyn Generator>, generator::KeyLog), RunError> {
    let w = &cfg.workload;
    let config_err = |e: generator::WorkloadConfigError| {
        crate::options::ConfigError::new(&cfg.workload_name, e.to_string())
    };
    let threads_per_key = w.threads_per_key.min(cfg.concurrency).max(1);
    let (keys, mut g): (generator::KeyLog, Box<dyn Generator>) = if w.kind == generator::set::KIND {
        let workload = generator::set_workload(generator::SetConfig {
            read_weight: w.read_weight,
            add_weight: w.add_weight,
            threads_per_key,
            ops_per_key: w.ops_per_key,
            key_prefix: None,
        })
        .map_err(config_err)?;
        (workload.keys_used(), Box::new(workload))
    } else if w.kind == generator::log::KIND {
        let workload =
            generator::log::log_workload(w.log.clone().unwrap_or_default()).map_err(config_err)?;
        (generator::KeyLog::new(), Box::new(workload))
    } else if w.kind == generator::txn::KIND {
        let workload = generator::txn::txn_workload(generator::txn::TxnConfig {
            read_weight: w.read_weight,
            append_weight: w.append_weight,
            active_keys: w.active_keys,
            max_mops: w.max_mops,
            appends_per_key: w.ops_per_key,
        })
        .map_err(config_err)?;
        (generator::KeyLog::new(), Box::new(workload))
    } else if generator::lock::is_lock_kind(&w.kind) {
        let lock_cfg = generator::lock::LockConfig {
            fenced: w.kind == generator::lock::FENCED_KIND,
            ..w.lock.clone().unwrap_or_default()
        };
        let workload = generator::lock::lock_workload(lock_cfg).map_err(config_err)?;
        (generator::KeyLog::new(), Box::new(workload))
    } else if w.kind == generator::kind::LIST_APPEND {
        let workload = generator::list_append_workload(generator::ListAppendConfig {
            read_weight: w.read_weight,
            append_weight: w.append_weight,
            threads_per_key,
            ops_per_key: w.ops_per_key,
            key_prefix: None,
        })
        .map_err(config_err)?;
        (workload.keys_used(), Box::new(workload))
    } else {
        let workload = generator::register_workload(generator::RegisterConfig {
            read_weight: w.read_weight,
            write_weight: w.write_weight,
            cas_weight: w.cas_weight,
            max_value: u64::from(w.max_value),
            threads_per_key,
            ops_per_key: w.ops_per_key,
            key_prefix: None,
        })
        .map_err(config_err)?;
        (workload.keys_used(), Box::new(workload))
    };
    if let Some(board) = stalls {
        // Lock workloads: a holder stalls before a protected write; others: before any op.
        let applies: fn(&str) -> bool = if generator::lock::is_lock_kind(&w.kind) {
            generator::lock::is_protected
        } else {
            |_| true
        };
        g = Box::new(generator::stall::stall_gate(g, board.clone(), applies));
    }
    if cfg.rate > 0.0 {
        g = Box::new(generator::stagger((1e9 / cfg.rate) as u64, g));
    }
    Ok((
        Box::new(generator::time_limit((cfg.time_limit_s * 1e9) as u64, g)),
        keys,
    ))
}

fn nemesis_schedule(cfg: &TestConfig) -> generator::NemesisSchedule {
    schedule_of(&cfg.nemesis)
}

/// The nemesis schedule of a spec (runs and `shakedown chaos`).
pub fn schedule_of(spec: &crate::spec::NemesisSpec) -> generator::NemesisSchedule {
    generator::NemesisSchedule {
        faults: spec
            .faults
            .iter()
            .map(|f| {
                let ops = f.ops();
                generator::FaultOps {
                    start_f: ops.start.as_str().into(),
                    start_value: ops.value,
                    stop_f: ops.stop.map(|v| v.as_str().into()),
                    stop_value: Value::Null,
                }
            })
            .collect(),
        interval_ns: (spec.interval_s * 1e9) as u64,
        sequential: spec.order == crate::spec::FaultOrder::Sequential,
    }
}

/// With clock faults in the schedule: measure clock offsets after every clock op and, when
/// `periodic`, every `clock_offsets_interval_s`. Otherwise `g` unchanged.
fn with_offsets(cfg: &TestConfig, g: Box<dyn Generator>, periodic: bool) -> Box<dyn Generator> {
    with_offsets_of(&cfg.nemesis, g, periodic)
}

/// [`with_offsets`] for a nemesis spec (runs and `shakedown chaos`).
pub fn with_offsets_of(
    spec: &crate::spec::NemesisSpec,
    g: Box<dyn Generator>,
    periodic: bool,
) -> Box<dyn Generator> {
    if !spec.faults.iter().any(crate::spec::FaultSpec::is_clock) {
        return g;
    }
    let period_ns = (spec.clock_offsets_interval_s * 1e9) as u64;
    Box::new(generator::with_clock_offsets(
        Some(period_ns).filter(|_| periodic),
        g,
    ))
}

/// How the user steers a running workload: the progress display to update and the Ctrl-C signal.
pub(crate) struct Control {
    /// Progress display, if any.
    pub progress: Option<Progress>,
    /// Becomes true when the user asks to stop.
    pub interrupt: watch::Receiver<bool>,
}

/// What [`drive`] did.
pub(crate) struct DriveOutcome {
    /// History events written.
    pub events: u64,
    /// Client ops completed ok, fail and info, every phase.
    pub counts: (u64, u64, u64),
    /// Client ops completed in the main phase (no heal or final reads).
    pub main_ops: u64,
    /// How long the main phase ran.
    pub main_phase: Duration,
    /// Whether the user stopped it.
    pub interrupted: bool,
    /// What live checking decided (register and list-append workloads), and whether it
    /// stopped the workload.
    pub live: Option<super::live::LiveRecord>,
    /// The end's streamed check, made as the history was written (models the stream checks).
    pub following: Option<super::streamed::Following>,
}

/// Longest wait, in s, after the final heal and settle for every node to serve again before the
/// final reads (at most `--nemesis-timeout`); past it they are read as they are.
const RECOVERY_WAIT_S: f64 = 30.0;

/// The interpreter over the run's history file.
type Interp = Interpreter<crate::mapped::HistoryFile>;

/// Wait for the DB, then run the interpreter phases against an already set-up cluster, appending
/// to the run directory's history.
pub(crate) async fn drive(
    cfg: &TestConfig,
    nodes: &[Node],
    remotes: &[Arc<dyn Remote>],
    system: &dyn System,
    nemesis: Option<Arc<Mutex<Nemesis>>>,
    run_dir: &RunDir,
    control: Control,
) -> Result<DriveOutcome, RunError> {
    let Control {
        progress,
        interrupt,
    } = control;
    // Wait for the cluster before the clock starts.
    let progress = progress.unwrap_or_else(Progress::quiet);
    await_ready(system, nodes, remotes, &progress).await?;
    if *interrupt.borrow() {
        return Err(RunError::Interrupted);
    }
    let stats = Arc::new(Stats::default());
    let workers = client_workers(cfg, system, nodes)?;
    let stalls = cfg
        .nemesis
        .faults
        .iter()
        .any(crate::spec::FaultSpec::is_stall)
        .then(generator::stall::StallBoard::new);
    if let Some(board) = &stalls {
        system.attach_stalls(board);
    }
    let budget = Budget::default();
    let nemesis_bound = Duration::from_secs_f64(cfg.nemesis_timeout_s);
    let follow = follow_membership(cfg, nodes, nemesis.as_ref());
    let nemesis_worker = nemesis.map(|nemesis| {
        NemesisClient {
            nemesis,
            stalls: stalls.clone(),
            stats: stats.clone(),
            progress: progress.clone(),
            bound: nemesis_bound,
            budget: budget.clone(),
        }
        .worker()
    });
    let interp_has_nemesis = nemesis_worker.is_some();
    let file = run_dir.open_history()?;
    // The run reached its workload: from now on it is the latest run.
    run_dir.update_latest()?;
    let start = Instant::now();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let interp = Interpreter::new(
        start,
        // Mapped or buffered (`mapped`): the interpreter flushes before every wait.
        HistoryWriter::new(file),
        workers,
        nemesis_worker,
        names,
        ChaCha8Rng::seed_from_u64(cfg.seed),
        stats.clone(),
    );
    let mut interp = interp;
    if let Some(follow) = follow {
        interp.follow_members(follow);
    }
    let user_stop = interrupt.clone();
    let ctrl_c = stop_when(interrupt, interp.shutdown_handle());
    progress.workload(stats.clone());
    let live = start_live(cfg, run_dir, &progress, start.into_std());
    let following = start_following(cfg, run_dir);
    // `--stop-on-anomaly`: the first confirmed anomaly stops the workload as Ctrl-C would.
    let on_anomaly = live
        .as_ref()
        .filter(|_| cfg.stop_on_anomaly)
        .map(|l| stop_when(l.anomaly(), interp.shutdown_handle()));

    let (client_gen, keys) = build_client_gen(cfg, stalls.as_ref())?;
    let schedule = nemesis_schedule(cfg);
    let with_nemesis = !schedule.faults.is_empty() && interp_has_nemesis;
    let nemesis_gen = with_nemesis.then(|| main_nemesis_gen(cfg, &schedule));
    let (mut interp, phase) = interp
        .run_phase_on_worker(Some(client_gen), nemesis_gen)
        .await;
    let main_phase = start.elapsed();
    if let Some(l) = &live {
        // The workload is over: live checking takes what the history holds now and stops.
        l.finish();
    }
    if let Some(t) = on_anomaly {
        t.abort();
    }
    let main_ops = {
        let (ok, fail, info) = stats.counts();
        ok + fail + info
    };
    if let Some(board) = &stalls {
        // The client generator is gone: a stall still holding an op back ends with the phase.
        board.end_all();
    }
    // Stopped by live checking: a stop was asked for, not by the user, and there is an anomaly
    // (a workload that reached its time limit first ran to its end).
    let stopped_early = cfg.stop_on_anomaly
        && interp.is_shutting_down()
        && !*user_stop.borrow()
        && live.as_ref().is_some_and(|l| l.counts().first().is_some());
    let interrupted = interp.is_shutting_down() && !stopped_early;
    // Final phase: heal through the history (so fault ends are recorded), settle, final reads.
    let heal = if with_nemesis {
        let (back, healed) = final_heal(interp, cfg, &schedule, &budget, &progress).await;
        interp = back;
        healed
    } else {
        Ok(())
    };
    // An early stop skips the settle and the final reads, as an interrupt does: the verdict is
    // the confirmed anomaly.
    if phase.is_ok() && heal.is_ok() && !interrupted && !stopped_early {
        let after = After {
            cfg,
            system,
            nodes,
            remotes,
            progress: &progress,
        };
        let (back, read) = settle_and_read(interp, &after, with_nemesis, keys).await;
        interp = back;
        read?;
    }
    ctrl_c.abort();
    let written = interp.ops_written();
    let _ = interp.close().await;
    if let Some(f) = &following {
        // The history is complete: what is left of its check goes on while the run ends.
        f.finish();
    }
    let live = match live {
        Some(l) => tokio::task::spawn_blocking(move || l.join()).await.ok(),
        None => None,
    }
    .map(|mut r| {
        r.stopped_early = stopped_early;
        r
    });
    phase?;
    heal?;
    Ok(DriveOutcome {
        events: written,
        counts: stats.counts(),
        main_ops,
        main_phase,
        interrupted,
        live,
        following,
    })
}

/// Every node serves (`System::await_ready`), else the error naming the nodes that do not.
async fn await_ready(
    system: &dyn System,
    nodes: &[Node],
    remotes: &[Arc<dyn Remote>],
    progress: &Progress,
) -> Result<(), RunError> {
    progress.phase(
        Phase::ReadyWait,
        format!(
            "waiting until {} answers on all {} nodes",
            system.name(),
            nodes.len()
        ),
    );
    let (remotes, nodes, system) = (remotes.to_vec(), nodes.to_vec(), system.to_arc());
    tokio::task::spawn_blocking(move || {
        first_err(on_nodes(&remotes, &nodes, |r, n| {
            system.await_ready(r, n, &nodes)
        }))
    })
    .await
    .expect("ready task")
    .map_err(RunError::Control)
}

/// One worker per client thread, each with its own client bound to `nodes[thread % len]`.
fn client_workers(
    cfg: &TestConfig,
    system: &dyn System,
    nodes: &[Node],
) -> Result<Vec<Worker>, RunError> {
    let op_timeout = Duration::from_millis(cfg.op_timeout_ms);
    let mut workers = Vec::new();
    for t in 0..cfg.concurrency {
        let node = &nodes[t % nodes.len()];
        let ctx = cfg.client_ctx(t, nodes);
        let client = system.client(&ctx)?;
        workers.push(Worker {
            client,
            node: Some(node.name.clone()),
            timeout: op_timeout + Duration::from_millis(500),
        });
    }
    Ok(workers)
}

/// With a membership fault in the schedule: a board the nemesis marks retired nodes on, and
/// the client factory the interpreter rebinds a retired node's threads with (a system opened
/// from the run's settings, each client as the thread's own but bound to another node).
fn follow_membership(
    cfg: &TestConfig,
    nodes: &[Node],
    nemesis: Option<&Arc<Mutex<Nemesis>>>,
) -> Option<crate::interpreter::Follow> {
    let nemesis = nemesis?;
    if !cfg.nemesis.faults.iter().any(|f| f.needs().membership) {
        return None;
    }
    let board = crate::members::MemberBoard::new();
    nemesis
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .follow_members(board.clone());
    let system = cfg.system.open();
    let threads = cfg.concurrency;
    let ctxs: Vec<crate::client::ClientCtx> =
        (0..threads).map(|t| cfg.client_ctx(t, nodes)).collect();
    let homes = ctxs.iter().map(|c| c.node).collect();
    Some(crate::interpreter::Follow {
        board,
        nodes: nodes.iter().map(|n| n.name.clone()).collect(),
        homes,
        client: Box::new(move |thread, node| {
            let mut ctx = ctxs.get(thread).cloned().ok_or_else(|| {
                crate::client::ClientOpenError::Config(format!("no client thread {thread}"))
            })?;
            ctx.node = node;
            system.client(&ctx)
        }),
    })
}

/// Ask the interpreter to shut down (`stop`) once `flag` turns true (Ctrl-C, a confirmed
/// anomaly); the task ends by itself when the flag's sender is gone.
fn stop_when(
    mut flag: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !*flag.borrow_and_update() {
            if flag.changed().await.is_err() {
                return;
            }
        }
        let _ = stop.send(true);
    })
}

/// The main phase's nemesis: the schedule cycled (or stacked, `order = "stacked"`) until the
/// time limit, clock offsets measured along.
fn main_nemesis_gen(cfg: &TestConfig, schedule: &generator::NemesisSchedule) -> Box<dyn Generator> {
    let cycle: Box<dyn Generator> = if cfg.nemesis.order == crate::spec::FaultOrder::Stacked {
        Box::new(generator::nemesis_stack(schedule.clone()))
    } else {
        Box::new(generator::nemesis_cycle(schedule.clone()))
    };
    Box::new(generator::time_limit(
        (cfg.time_limit_s * 1e9) as u64,
        with_offsets(cfg, cycle, true),
    ))
}

/// The final heal: every fault the schedule can start stopped through the history, all its ops
/// within one `--nemesis-timeout` (an op that overruns does not hold up every heal after it by
/// its own bound; cleanup heals whatever this left).
async fn final_heal(
    interp: Interp,
    cfg: &TestConfig,
    schedule: &generator::NemesisSchedule,
    budget: &Budget,
    progress: &Progress,
) -> (Interp, Result<(), crate::interpreter::InterpreterError>) {
    progress.phase(
        Phase::Heal,
        "stopping every fault the nemesis started (recorded in the history)",
    );
    let heal = with_offsets(cfg, Box::new(generator::nemesis_heal(schedule)), false);
    let bound = Duration::from_secs_f64(cfg.nemesis_timeout_s);
    budget.set(std::time::Instant::now() + bound, "final heal");
    let (back, healed) = interp.run_phase_on_worker(None, Some(heal)).await;
    budget.clear();
    (back, healed)
}

/// What the steps after the main phase read of the run.
struct After<'a> {
    cfg: &'a TestConfig,
    system: &'a dyn System,
    nodes: &'a [Node],
    remotes: &'a [Arc<dyn Remote>],
    progress: &'a Progress,
}

/// Settle; with a nemesis, `db-status` and the recovery wait; then the final reads of `keys`
/// (logs: every log whole on every node).
async fn settle_and_read(
    mut interp: Interp,
    after: &After<'_>,
    with_nemesis: bool,
    keys: generator::KeyLog,
) -> (Interp, Result<(), crate::interpreter::InterpreterError>) {
    let (cfg, progress) = (after.cfg, after.progress);
    progress.phase(
        Phase::Settle,
        format!(
            "letting the cluster settle for {} s before final reads",
            cfg.settle_s
        ),
    );
    tokio::time::sleep(Duration::from_secs_f64(cfg.settle_s)).await;
    if with_nemesis {
        // After the settle: is every node's database running again? (A node whose restart
        // crashed, e.g. on a corrupted file, is on record, not taken for recovered.)
        let status = generator::nemesis_once(crate::faults::verb::DB_STATUS, Value::Null);
        let (back, _) = interp
            .run_phase_on_worker(None, Some(Box::new(status)))
            .await;
        interp = back;
        await_recovery(after).await;
    }
    progress.phase(
        Phase::FinalReads,
        if cfg.workload.kind == generator::log::KIND {
            "reading every log whole from every node".to_string()
        } else {
            format!(
                "reading every key once (op timeout {} ms)",
                cfg.op_timeout_ms
            )
        },
    );
    // Logs: every log read whole on every node; else one read of every key.
    let finals: Box<dyn Generator> = if cfg.workload.kind == generator::log::KIND {
        let logs = cfg.workload.log.clone().unwrap_or_default().key_names();
        Box::new(generator::log::log_final_reads(logs))
    } else {
        Box::new(generator::final_reads(keys))
    };
    interp.run_phase_on_worker(Some(finals), None).await
}

/// A heal that restarted servers leaves them electing leaders and catching up: the final reads
/// wait until every node serves again (as before the workload), at most [`RECOVERY_WAIT_S`] or
/// `--nemesis-timeout`, but a node that does not recover is no reason to skip them (they say
/// what they got): it is noted.
async fn await_recovery(after: &After<'_>) {
    let (system, nodes, progress) = (after.system, after.nodes, after.progress);
    progress.phase(
        Phase::Recovery,
        format!(
            "waiting until {} answers on all {} nodes again",
            system.name(),
            nodes.len()
        ),
    );
    let (remotes, nodes, system) = (after.remotes.to_vec(), nodes.to_vec(), system.to_arc());
    let wait = tokio::task::spawn_blocking(move || {
        first_err(on_nodes(&remotes, &nodes, |r, n| {
            system.await_recovered(r, n, &nodes)
        }))
    });
    let bound = Duration::from_secs_f64(RECOVERY_WAIT_S.min(after.cfg.nemesis_timeout_s));
    let recovered = match tokio::time::timeout(bound, wait).await {
        Ok(joined) => joined.unwrap_or_else(|e| Err(format!("it panicked: {e}"))),
        // The wait only asks; left to its own timeouts, it ends by itself.
        Err(_) => Err(format!("still waiting after {} s", bound.as_secs())),
    };
    if let Err(e) = recovered {
        progress.note(&format!(
            "not every node recovered before the final reads: {e}"
        ));
    }
}

/// Start the end's streamed check as the history is written (`streamed::Following`), when the
/// run's model streams; a run that could not start it checks its history at the end as before.
fn start_following(cfg: &TestConfig, run_dir: &RunDir) -> Option<super::streamed::Following> {
    let plan = super::results::stream_plan(run_dir, cfg.check_time_limit_s, cfg.witness)
        .ok()
        .flatten()?;
    super::streamed::Following::start(run_dir, plan)
        .inspect_err(|e| tracing::warn!("the check as the run goes could not start: {e}"))
        .ok()
}

/// Start checking retired keys live, when the workload's keys are checked that way
/// (`live::live_model`); the progress line shows its counts. A thread that cannot start costs
/// only the live verdicts (said on the progress display), never the run.
fn start_live(
    cfg: &TestConfig,
    run_dir: &RunDir,
    progress: &Progress,
    started: std::time::Instant,
) -> Option<super::live::LiveChecker> {
    let model = super::live::live_model(&cfg.workload.kind)?;
    let live_cfg = super::live::LiveConfig {
        model,
        concurrency: cfg.concurrency,
        time_limit: Duration::from_secs_f64(cfg.check_time_limit_s).min(super::live::MAX_KEY_CHECK),
        witness: cfg.witness,
        // A quarter of the end-of-run check's: the workload and its servers come first.
        memory_bytes: crate::meminfo::default_budget() / 4,
    };
    match super::live::LiveChecker::start(live_cfg, run_dir.clone(), started) {
        Ok(l) => {
            progress.live(l.counts());
            Some(l)
        }
        Err(e) => {
            progress.note(&format!(
                "live checking could not start ({e}): keys are checked at the end"
            ));
            None
        }
    }
}
