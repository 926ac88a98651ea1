//! One chaos experiment, end to end: run directory → SSH sessions → faults earlier runs left →
//! the tool's iptables chain → interpreter phases (main: probes ∥ nemesis schedule until the
//! duration or the abort rail; heal: the schedule's stop ops; settle: probes only) → always
//! (also on Ctrl-C, an error or a panic while driving): `heal_all` and chain teardown →
//! completion record → results (the SLO judgement), plots, run page, reports index.
//!
//! Shell: reuses the runner's pieces (interpreter, nemesis client, fault journal, leftovers heal,
//! Ctrl-C handling, plots and pages) with no system lifecycle: nothing is installed, wiped,
//! started or stopped, and no logs are collected. [`ChaosAbilities`] is all the nemesis sees of a system:
//! it passes through the abilities chaos allows (pause, primaries) of a `--db` system and
//! nothing else.

use super::schedule::{AbortRail, probes, until_aborted};
use super::{RUN_KIND, SETTINGS_KEY, Settings, slo};
use crate::checker::Verdict;
use crate::completion::CompletionRecord;
use crate::control::SshConfig;
use crate::db::{Abilities, Db, Pause, Primaries};
use crate::generator::{self, Generator};
use crate::history::{History, HistoryWriter};
use crate::interpreter::{Interpreter, Stats, Worker};
use crate::nemesis::Nemesis;
use crate::node::Node;
use crate::progress::{Phase, Progress};
use crate::runner::{Checked, NemesisClient, RunError};
use crate::spec::NemesisSpec;
use crate::store::{RESULTS_FILE, RunDir, TEST_FILE};
use futures_util::FutureExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A validated chaos experiment.
#[derive(Clone)]
pub struct ChaosConfig {
    /// Test name (run directory under `reports_dir`).
    pub name: String,
    /// The nodes faults go to (always given explicitly).
    pub nodes: Vec<Node>,
    /// How to reach them.
    pub ssh: SshConfig,
    /// `--nemesis` as given.
    pub nemesis_name: String,
    /// The fault schedule.
    pub nemesis: NemesisSpec,
    /// Probe, SLO, abort rail, duration.
    pub settings: Settings,
    /// Seed of the fault choices.
    pub seed: u64,
    /// Directory holding run directories.
    pub reports_dir: std::path::PathBuf,
    /// The system whose processes `pause` stops and whose leaders `primaries` names, if any.
    pub db: Option<Arc<dyn Db>>,
    /// The command line that repeats this experiment.
    pub rerun: String,
}

/// All a chaos nemesis sees of a system: no lifecycle, no kill or promote; pause and primaries
/// of the `--db` system, if any.
pub struct ChaosAbilities(pub Option<Arc<dyn Db>>);

impl Abilities for ChaosAbilities {
    fn name(&self) -> &str {
        self.0.as_ref().map_or("no system", |d| d.name())
    }
    fn as_pause(&self) -> Option<&dyn Pause> {
        self.0.as_ref().and_then(|d| d.as_pause())
    }
    fn as_primaries(&self) -> Option<&dyn Primaries> {
        self.0.as_ref().and_then(|d| d.as_primaries())
    }
}

impl ChaosAbilities {
    /// What it lets the blast-radius rail accept.
    pub fn abilities(&self) -> super::rails::Abilities {
        super::rails::Abilities {
            pause: self.as_pause().is_some(),
            primaries: self.as_primaries().is_some(),
        }
    }
}

/// Whether a schedule needs the tool's iptables chain (partitions, packet loss).
pub(super) fn needs_chain(spec: &NemesisSpec) -> bool {
    spec.faults.iter().any(|f| f.needs().network)
}

/// test.json of a chaos run.
fn test_json(cfg: &ChaosConfig, wall_start: &str) -> Value {
    json!({
        "kind": RUN_KIND,
        "name": cfg.name,
        "seed": cfg.seed,
        "start_time": wall_start,
        "shakedown_version": env!("CARGO_PKG_VERSION"),
        "db": { "name": cfg.db.as_ref().map(|d| d.name().to_string()) },
        "nodes": cfg.nodes,
        "ssh": { "user": cfg.ssh.user, "port": cfg.ssh.port },
        "concurrency": 1,
        "time_limit_s": cfg.settings.duration_s,
        "op_timeout_ms": cfg.settings.probe_timeout_ms,
        "workload": { "name": format!("probe: {}", cfg.settings.probe.describe()) },
        "nemesis": { "name": cfg.nemesis_name, "spec": cfg.nemesis },
        SETTINGS_KEY: cfg.settings,
        "rerun": cfg.rerun,
    })
}

/// Whether `run_dir` holds a chaos experiment (its test.json says so).
pub fn is_chaos_run(run_dir: &RunDir) -> bool {
    run_dir
        .read_object(TEST_FILE)
        .is_ok_and(|t| t["kind"] == RUN_KIND)
}

/// The experiment settings recorded in a chaos run's test.json.
fn settings_of(run_dir: &RunDir) -> Result<Settings, RunError> {
    let test = run_dir.read_object(TEST_FILE)?;
    serde_json::from_value(test[SETTINGS_KEY].clone()).map_err(|e| {
        RunError::Control(format!(
            "{}: chaos settings unreadable: {e}",
            run_dir.path.join(TEST_FILE).display()
        ))
    })
}

/// When the abort rail tripped in `history` (seconds since the start), replaying it.
pub fn abort_at_s(history: &History, after: u32) -> Option<f64> {
    let rail = AbortRail::new(after);
    let mut r = rail.lock().unwrap_or_else(|p| p.into_inner());
    for op in &history.ops {
        r.observe(op);
    }
    r.tripped_at_ns().map(|t| t as f64 / 1e9)
}

/// Judge a chaos run directory and write results.json (`valid` = the SLO verdict, `checkers` =
/// the SLO judgement, `chaos` = SLO, probe statistics, violations and the abort), the plots,
/// the run page and the reports index. `app::write_run_results` calls it for chaos runs, so
/// `shakedown report` and `heal` treat them alike.
pub fn write_results(run_dir: &RunDir, progress: Option<&Progress>) -> Result<Checked, RunError> {
    let settings = settings_of(run_dir)?;
    let history = History::read_file(&run_dir.history_path())?;
    let completion = run_dir.read_completion();
    if let Some(p) = progress {
        p.phase(Phase::Check, "judging the probes against the SLO");
    }
    let judged = slo::judge(&history, &settings.slo, &completion);
    let result = judged.check_result(&settings.slo);
    let abort = abort_at_s(&history, settings.abort_after);
    let mut out = json!({
        "valid": judged.verdict,
        "kind": RUN_KIND,
        "checkers": [result],
        SETTINGS_KEY: {
            "slo": settings.slo,
            "probes": judged.stats,
            "violations": judged.violations,
            "abort": {
                "after": settings.abort_after,
                "tripped": abort.is_some(),
                "at_s": abort,
            },
        },
    });
    out["completion"] = serde_json::to_value(&completion).unwrap_or_default();
    out[crate::report::recovery::RESULTS_KEY] = crate::report::recovery::to_json(&history);
    run_dir.write_json(RESULTS_FILE, &out)?;
    if let Some(p) = progress {
        p.phase(
            Phase::Report,
            "writing plots, the run page and the reports index",
        );
    }
    crate::runner::render_pages(run_dir);
    let reason = (judged.verdict != Verdict::Invalid && !completion.is_complete())
        .then(|| completion.reason.clone());
    Ok(Checked {
        verdict: judged.verdict,
        reason,
        results: vec![result],
        completion,
        summary: None,
    })
}

/// What a finished experiment produced.
pub struct ChaosOutcome {
    /// The run directory.
    pub run_dir: RunDir,
    /// The judgement and how the run ended.
    pub checked: Checked,
    /// The error that stopped the experiment, when one did.
    pub error: Option<String>,
    /// How long each phase took.
    pub phases: Vec<(Phase, Duration)>,
}

/// How the interpreter phases ended.
struct Driven {
    /// Seconds of the main phase.
    main_s: f64,
    /// When the abort rail tripped, seconds since the start.
    aborted_at_s: Option<f64>,
    /// Ctrl-C stopped it.
    interrupted: bool,
}

/// Run one experiment, showing its phases on `progress`. Once the run directory exists, every
/// exit path this process survives heals, writes the completion record and judges what was
/// recorded.
pub async fn run(cfg: ChaosConfig, progress: Progress) -> Result<ChaosOutcome, RunError> {
    let slot: Arc<std::sync::OnceLock<RunDir>> = Arc::default();
    let interrupt = crate::runner::interrupt_on_ctrl_c(slot.clone(), cfg.settings.duration_s);
    let run_dir = RunDir::create(&cfg.reports_dir, &cfg.name)?;
    let _ = slot.set(run_dir.clone());
    let wall_start = chrono::Utc::now().to_rfc3339();
    run_dir.write_json(TEST_FILE, &test_json(&cfg, &wall_start))?;
    let not_started = |e: RunError| {
        if let Err(w) = run_dir.write_completion(&CompletionRecord::not_started(&e.to_string())) {
            tracing::warn!("{w}");
        }
        e
    };
    progress.phase(
        Phase::Connect,
        format!("opening SSH sessions to {} nodes", cfg.nodes.len()),
    );
    let remotes = {
        let (nodes, ssh) = (cfg.nodes.clone(), cfg.ssh.clone());
        tokio::task::spawn_blocking(move || crate::runner::connect(&nodes, &ssh))
            .await
            .expect("connect task")
            .map_err(not_started)?
    };
    let db: Arc<dyn Abilities> = Arc::new(ChaosAbilities(cfg.db.clone()));
    let mut nemesis = crate::runner::nemesis_after_leftovers(
        cfg.seed,
        &cfg.nodes,
        &remotes,
        db.clone(),
        &run_dir,
        &cfg.reports_dir,
        &progress,
        "heal before the experiment",
    )
    .await
    .map_err(|e| not_started(e.into()))?;
    let chain = needs_chain(&cfg.nemesis);
    let (nemesis, setup) = {
        progress.phase(
            Phase::Start,
            "setting up the tool's iptables chain where partitions or loss need it",
        );
        tokio::task::spawn_blocking(move || {
            let r = if chain { nemesis.setup() } else { Ok(()) };
            (nemesis, r)
        })
        .await
        .expect("nemesis setup task")
    };
    let nemesis = Arc::new(Mutex::new(nemesis));
    let result = match setup {
        Err(e) => Err(RunError::Control(format!("setting up partitions: {e}"))),
        Ok(()) if *interrupt.borrow() => Err(RunError::Interrupted),
        Ok(()) => std::panic::AssertUnwindSafe(drive(
            &cfg,
            nemesis.clone(),
            &run_dir,
            &progress,
            interrupt.clone(),
        ))
        .catch_unwind()
        .await
        .unwrap_or_else(|p| Err(RunError::Panicked(crate::runner::panic_message(p.as_ref())))),
    };

    // Always: heal everything, remove the chain.
    let cleanup = {
        let (n, progress) = (cfg.nodes.len(), progress.clone());
        tokio::task::spawn_blocking(move || {
            progress.phase(
                Phase::Cleanup,
                format!("healing every fault and removing the tool's rules on {n} nodes"),
            );
            let mut nem = nemesis.lock().unwrap_or_else(|p| p.into_inner());
            let mut errs = nem.heal_all();
            if chain && let Err(e) = nem.teardown() {
                errs.push(format!("removing iptables chain: {e}"));
            }
            errs
        })
    };
    let cleanup_failures = cleanup.await.unwrap_or_else(|e| {
        vec![format!(
            "cleanup task failed ({e}): faults may remain; run `shakedown heal`"
        )]
    });
    for e in &cleanup_failures {
        progress.note(&format!("cleanup failed: {e}"));
    }
    let reached = run_dir.history_path().is_file();
    let limit = cfg.settings.duration_s;
    let (completion, error) = match result {
        Ok(d) => {
            let c = match d.aborted_at_s {
                Some(at) => {
                    CompletionRecord::probe_aborted(cfg.settings.abort_after, at, d.main_s, limit)
                }
                None if d.interrupted => CompletionRecord::interrupted(d.main_s, limit),
                None => CompletionRecord::completed(d.main_s, limit),
            };
            (c, None)
        }
        Err(e) if !reached => (CompletionRecord::not_started(&e.to_string()), Some(e)),
        Err(RunError::Panicked(m)) => (
            CompletionRecord::panicked(&m, limit),
            Some(RunError::Panicked(m)),
        ),
        Err(e) => (
            CompletionRecord::failed(&e.to_string(), None, limit),
            Some(e),
        ),
    };
    let completion = completion.with_cleanup_failures(cleanup_failures);
    if let Err(e) = run_dir.write_completion(&completion) {
        progress.note(&format!("warning: {e}"));
    }
    let error = match error {
        Some(e) if !reached => return Err(e),
        other => other.map(|e| e.to_string()),
    };
    // Off the runtime's thread, so Ctrl-C (abort) is still heard while it runs.
    let checked = {
        let (run_dir, progress) = (run_dir.clone(), progress.clone());
        tokio::task::spawn_blocking(move || write_results(&run_dir, Some(&progress)))
            .await
            .map_err(|e| RunError::Panicked(crate::runner::join_error_message(e)))??
    };
    progress.finish();
    Ok(ChaosOutcome {
        run_dir,
        checked,
        error,
        phases: progress.timings(),
    })
}

/// The interpreter phases: main (probes ∥ faults, until the duration or the abort rail), heal
/// (the schedule's stop ops), settle (probes only, unless interrupted).
async fn drive(
    cfg: &ChaosConfig,
    nemesis: Arc<Mutex<Nemesis>>,
    run_dir: &RunDir,
    progress: &Progress,
    mut interrupt: tokio::sync::watch::Receiver<bool>,
) -> Result<Driven, RunError> {
    let s = &cfg.settings;
    let stats = Arc::new(Stats::default());
    let probe = super::probe::ProbeClient::new(s.probe.clone(), s.probe_timeout_ms)
        .map_err(RunError::Control)?;
    let workers = vec![Worker {
        client: Box::new(probe),
        node: None,
        timeout: Duration::from_millis(s.probe_timeout_ms + 500),
    }];
    let nemesis_worker = NemesisClient {
        nemesis,
        stalls: None,
        stats: stats.clone(),
        progress: progress.clone(),
        bound: Duration::from_secs_f64(crate::config::DEFAULT_NEMESIS_TIMEOUT_S),
        budget: Default::default(),
    }
    .worker();
    let file = run_dir.open_history()?;
    run_dir.update_latest()?;
    let start = Instant::now();
    let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    let interp = Interpreter::new(
        start,
        HistoryWriter::new(file),
        workers,
        Some(nemesis_worker),
        names,
        ChaCha8Rng::seed_from_u64(cfg.seed),
        stats.clone(),
    );
    let stop = interp.shutdown_handle();
    let ctrl_c = tokio::spawn(async move {
        while !*interrupt.borrow_and_update() {
            if interrupt.changed().await.is_err() {
                return;
            }
        }
        let _ = stop.send(true);
    });
    progress.workload(stats.clone());
    let duration_ns = (s.duration_s * 1e9) as u64;
    let interval_ns = s.probe_interval_ms * 1_000_000;
    let rail = AbortRail::new(s.abort_after);
    let probe_gen: Box<dyn Generator> = Box::new(generator::time_limit(
        duration_ns,
        probes(interval_ns, Some(rail.clone())),
    ));
    let schedule = crate::runner::schedule_of(&cfg.nemesis);
    let with_nemesis = !schedule.faults.is_empty();
    let nemesis_gen: Option<Box<dyn Generator>> = with_nemesis.then(|| {
        let cycle: Box<dyn Generator> = if cfg.nemesis.order == crate::spec::FaultOrder::Stacked {
            Box::new(generator::nemesis_stack(schedule.clone()))
        } else {
            Box::new(generator::nemesis_cycle(schedule.clone()))
        };
        let timed = generator::time_limit(
            duration_ns,
            crate::runner::with_offsets_of(&cfg.nemesis, cycle, true),
        );
        Box::new(until_aborted(timed, rail.clone())) as Box<dyn Generator>
    });
    let (mut interp, phase) = interp
        .run_phase_on_worker(Some(probe_gen), nemesis_gen)
        .await;
    let main_s = start.elapsed().as_secs_f64();
    let (aborted_at_s, tripped_by) = {
        let r = rail.lock().unwrap_or_else(|p| p.into_inner());
        (
            r.tripped_at_ns().map(|t| t as f64 / 1e9),
            r.tripped_by().map(str::to_string),
        )
    };
    if let Some(at) = aborted_at_s {
        let why = tripped_by
            .map(|e| format!(" (last: {e})"))
            .unwrap_or_default();
        progress.note(&format!(
            "abort: {} probes failed in a row at {at:.1} s{why}; stopping faults and healing",
            s.abort_after
        ));
    }
    let interrupted = interp.is_shutting_down();
    let heal = if with_nemesis {
        progress.phase(
            Phase::Heal,
            "stopping every fault the schedule started (recorded in the history)",
        );
        let heal = crate::runner::with_offsets_of(
            &cfg.nemesis,
            Box::new(generator::nemesis_heal(&schedule)),
            false,
        );
        let (back, healed) = interp.run_phase_on_worker(None, Some(heal)).await;
        interp = back;
        healed
    } else {
        Ok(())
    };
    if phase.is_ok() && heal.is_ok() && !interp.is_shutting_down() && s.settle_s > 0.0 {
        progress.phase(
            Phase::Settle,
            format!("probing for {} s after the last heal", s.settle_s),
        );
        let settle: Box<dyn Generator> = Box::new(generator::time_limit(
            (s.settle_s * 1e9) as u64,
            probes(interval_ns, None),
        ));
        let (back, settled) = interp.run_phase_on_worker(Some(settle), None).await;
        interp = back;
        settled?;
    }
    ctrl_c.abort();
    let _ = interp.close().await;
    phase?;
    heal?;
    Ok(Driven {
        main_s,
        aborted_at_s,
        interrupted,
    })
}
