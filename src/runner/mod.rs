//! One test run, end to end: nodes → SSH sessions → DB setup → clients + nemesis → interpreter
//! phases (main, heal, settle, final reads) → teardown + logs → check → results.
//!
//! The only module that sequences the impure parts. Teardown, healing and log collection run on
//! every exit path after the cluster was touched (normal end, Ctrl-C, error), and the history is
//! appended as ops happen, so an aborted run still leaves a checkable run directory.

use crate::checker::{CheckResult, Verdict};
use crate::completion::CompletionRecord;
use crate::config::TestConfig;
use crate::control::{Remote, SshConfig};
use crate::db::Db;
use crate::generator;
use crate::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use crate::node::Node;
use crate::progress::{Phase, Progress};
use crate::store::{FAULTS_FILE, RunDir, TEST_FILE};
use futures_util::FutureExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

mod cleanup;
mod drive;
pub mod live;
mod nemesis_client;
mod record;
pub mod requested;
pub mod results;
mod streamed;

pub(crate) use drive::{Control, DriveOutcome, drive};
pub use drive::{schedule_of, with_offsets_of};
pub(crate) use nemesis_client::{Budget, NemesisClient};
pub use record::RECORDED_SEMANTICS;
use record::{recorded_check, test_json};
pub(crate) use results::render_pages;
use results::{AsItWent, write_results_with};
pub use results::{Checked, WhatRan, check, check_with, results_json, write_results};

/// Errors that end a run early. Messages name the node/command/file.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::options::ConfigError),
    /// Could not create or write the run directory.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// SSH problems (unreachable node, bad key, host key mismatch).
    #[error("{0}")]
    Control(String),
    /// The system under test could not be set up.
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
    /// The system could not make a thread's client (its settings or its client library).
    #[error(transparent)]
    Client(#[from] crate::client::ClientOpenError),
    /// The sandbox could not be brought up or read.
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// The interpreter stopped abnormally.
    #[error(transparent)]
    Interpreter(#[from] crate::interpreter::InterpreterError),
    /// Ctrl-C arrived before the workload started; the cluster was cleaned up.
    #[error("interrupted before the workload started; cleaned up")]
    Interrupted,
    /// Reading back the history failed.
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    /// The controller panicked while driving the workload; faults were healed and the history
    /// recorded so far kept.
    #[error("controller panicked during the workload (faults healed, history kept): {0}")]
    Panicked(String),
}

/// What a blocking task that did not finish says: its panic's message, else why it stopped.
pub(crate) fn join_error_message(e: tokio::task::JoinError) -> String {
    if e.is_panic() {
        panic_message(e.into_panic().as_ref())
    } else {
        "the task was cancelled".to_string()
    }
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

/// What a finished run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run directory.
    pub run_dir: RunDir,
    /// Merged verdict.
    pub verdict: Verdict,
    /// Per-checker results.
    pub results: Vec<CheckResult>,
    /// Number of history events recorded.
    pub events: u64,
    /// Client ops completed ok / fail / info.
    pub counts: (u64, u64, u64),
    /// Wall time of the main phase.
    pub main_phase: Duration,
    /// True if the run was interrupted (Ctrl-C) before its time limit.
    pub interrupted: bool,
    /// Why the verdict is not the checkers' merged verdict (an incomplete run, no client ops).
    pub reason: Option<String>,
    /// How the run ended, with what cleanup could not undo.
    pub completion: CompletionRecord,
    /// The error that stopped the workload, when one did (the history was still checked).
    pub error: Option<String>,
    /// How long each phase took.
    pub phases: Vec<(Phase, Duration)>,
    /// The summary table of the history's ops, when the check already folded it (a long run's
    /// streamed end); `None`: fold it from the history file (`summary::Summarizer`).
    pub summary: Option<std::collections::BTreeMap<String, crate::summary::FnSummary>>,
}

/// Run `f` on every node at once (one thread each), results in node order; a panic in `f` is
/// propagated after every node was tried. Not bounded like the nemesis's steps: what runs here
/// are waits (readiness, recovery) of up to a timeout each, and bounded they go in waves — a
/// 100-node NATS cluster that never got ready took 4 × its 60 s ready timeout with a bound of
/// 32 (measured), against one timeout unbounded.
pub fn on_nodes<T: Send>(
    remotes: &[Arc<dyn Remote>],
    nodes: &[Node],
    f: impl Fn(&dyn Remote, &Node) -> T + Sync,
) -> Vec<T> {
    use crate::control::fanout;
    let pairs: Vec<(&Arc<dyn Remote>, &Node)> = remotes.iter().zip(nodes).collect();
    fanout::all(&pairs, |(r, n)| f(r.as_ref(), n))
        .into_iter()
        .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        .collect()
}

/// Every node's error, one cause said once: errors that differ only in the node they name
/// (`n1: …`, `n2: …`) read `n1, n2: …`.
/// This binary's path, which the nodes run for faults served by the tool itself (the NFQUEUE
/// delayer; the sandbox's nodes share this machine's files, real hosts need it at that path).
pub fn helper_exe() -> Option<String> {
    std::env::current_exe()
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

fn first_err<E: std::fmt::Display>(results: Vec<Result<(), E>>) -> Result<(), String> {
    let errs: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    if errs.is_empty() {
        return Ok(());
    }
    Err(crate::node::one_cause_once(&errs))
}

/// The sandbox's nodes share this machine's files and cannot reach a package source: install
/// what the system (and the sandbox) needs here, before any node needs it, with a phase line
/// when anything is missing. `Skip` installs only the sandbox's own packages (`sandbox::up`).
pub(crate) async fn provision_sandbox_host(
    cfg: &TestConfig,
    packages: &[String],
    install: crate::provision::Install,
    progress: &Progress,
) -> Result<crate::provision::Installed, RunError> {
    let wanted: Vec<String> = match install {
        crate::provision::Install::Skip => Vec::new(),
        _ => packages.to_vec(),
    };
    let missing =
        crate::sandbox::missing_packages(&wanted).map_err(|e| RunError::Sandbox(e.to_string()))?;
    if !missing.is_empty() {
        progress.phase(
            Phase::Packages,
            format!(
                "installing {} on this machine with apt-get (the sandbox's nodes share its files)",
                missing.join(", ")
            ),
        );
    }
    let installed = tokio::task::spawn_blocking(move || crate::sandbox::ensure_packages(&wanted))
        .await
        .map_err(|e| RunError::Panicked(join_error_message(e)))?
        .map_err(|e| RunError::Sandbox(e.to_string()))?;
    progress.phase(
        Phase::Sandbox,
        format!(
            "bringing up sandbox {} (namespaces, sshd)",
            cfg.sandbox.name
        ),
    );
    Ok(installed)
}

/// Missing packages onto every node the way `install` says (`provision::node`), keeping each
/// node's install output in the run's logs when there is a run; one cause said once on failure.
pub(crate) fn provision_nodes(
    remotes: &[Arc<dyn Remote>],
    nodes: &[Node],
    packages: &[String],
    install: crate::provision::Install,
    run_dir: Option<&RunDir>,
) -> Result<(), RunError> {
    let installed = on_nodes(remotes, nodes, |r, _| {
        crate::provision::node::ensure(r, packages, install)
    });
    crate::provision::host::clear_downloads();
    let results: Vec<_> = nodes
        .iter()
        .zip(installed)
        .map(|(node, result)| {
            result.map(|i| {
                if let Some(dir) = run_dir {
                    keep_install_log(dir, &node.name, &i);
                }
            })
        })
        .collect();
    first_err(results).map_err(RunError::Control)
}

/// Keeps what an install printed in the run's logs (`logs/install-<place>.log`); nothing when
/// nothing was installed.
fn keep_install_log(run_dir: &RunDir, place: &str, installed: &crate::provision::Installed) {
    if installed.log.is_empty() {
        return;
    }
    let dir = run_dir.path.join(crate::store::LOGS_DIR);
    let file = dir.join(format!("install-{}.log", place.replace(' ', "-")));
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, &installed.log))
    {
        tracing::warn!("cannot keep the install log in {}: {e}", file.display());
    }
}

/// What the check phase says it checks, by workload kind (the checkers `check_with` picks).
fn check_phase_text(kind: &str) -> &'static str {
    if kind == generator::set::KIND {
        "checking the sets: lost, unexpected and recovered elements"
    } else if kind == generator::log::KIND {
        "checking the logs: lost, duplicated and inconsistent offsets"
    } else if kind == generator::txn::KIND {
        "checking the transactions: dependency cycles and non-cycle anomalies"
    } else if generator::lock::is_lock_kind(kind) {
        "checking the locks: mutual exclusion and fencing"
    } else {
        "checking linearizability and session guarantees"
    }
}

/// The nemesis of a run or experiment (its fault journal in the run directory, its own seeded
/// stream), after undoing the faults earlier runs' journals show left on these nodes (a killed
/// controller's; see `nemesis::leftovers`), each undone fault noted as `{note}: …`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn nemesis_after_leftovers(
    seed: u64,
    nodes: &[Node],
    remotes: &[Arc<dyn Remote>],
    db: Arc<dyn crate::db::Abilities>,
    run_dir: &RunDir,
    reports_dir: &std::path::Path,
    progress: &Progress,
    note: &str,
) -> Result<Nemesis, crate::store::StoreError> {
    let nemesis = Nemesis::new(NemesisConfig {
        helper_exe: crate::runner::helper_exe(),
        nodes: nodes.to_vec(),
        remotes: remotes.to_vec(),
        db: db.clone(),
        partition: PartitionConfig::default(),
        rng: ChaCha8Rng::seed_from_u64(seed.wrapping_add(1)),
        journal: Some(run_dir.jsonl_sink(FAULTS_FILE)?),
    });
    progress.phase(
        Phase::Leftovers,
        "undoing faults earlier runs left on these nodes (their fault journals)",
    );
    let (reports, here) = (reports_dir.to_path_buf(), run_dir.path.clone());
    let (remotes, nodes) = (remotes.to_vec(), nodes.to_vec());
    let healed = tokio::task::spawn_blocking(move || {
        crate::nemesis::leftovers::heal_leftovers(&reports, &here, &nodes, &remotes, db)
    })
    .await
    .unwrap_or_default();
    for line in healed {
        progress.note(&format!("{note}: {line}"));
    }
    Ok(nemesis)
}

/// Where [`refuse_unpatched_clocks`] learns whether the sandbox's clock patch works.
enum AfterUp {
    /// Before the sandbox is up: whether a plan can be made for this machine's vDSO.
    NotYet,
    /// Once it is up: what its `up` measured (a test program through the patcher).
    Recorded,
}

/// Clock faults in the sandbox against a system that reads time without libc, where the vDSO
/// patch cannot work: refused (exit 3) before the system is installed or started.
fn refuse_unpatched_clocks(
    cfg: &TestConfig,
    system: &dyn crate::systems::System,
    nodes: &[Node],
    when: AfterUp,
) -> Result<(), RunError> {
    let options = cfg.run_options();
    if !crate::systems::needs_clock_patch(system, &options) {
        return Ok(());
    }
    let why = match when {
        AfterUp::NotYet => crate::sandbox::clockpatch::plan_for_this_machine()
            .err()
            .map(|e| e.to_string()),
        AfterUp::Recorded => crate::sandbox::load(&cfg.sandbox.state_dir())
            .map_err(|e| RunError::Sandbox(e.to_string()))?
            .clock_patch_error(),
    };
    let Some(why) = why else {
        return Ok(());
    };
    let names = if nodes.is_empty() {
        "every node".to_string()
    } else {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        names.join(", ")
    };
    Err(crate::systems::unpatched_clocks_refusal(system, &options, &names, &why).into())
}

/// Resolve the cluster: explicit nodes, or the sandbox (brought up if it is not).
pub fn resolve_nodes(cfg: &mut TestConfig) -> Result<Vec<Node>, RunError> {
    resolve_cluster(&cfg.nodes, &mut cfg.ssh, &cfg.sandbox, true)
}

/// Explicit nodes, or the sandbox's (brought up first when `bring_up`, else it must be up);
/// fills in the sandbox's key and known_hosts unless the user gave their own.
pub fn resolve_cluster(
    nodes: &Option<Vec<Node>>,
    ssh: &mut SshConfig,
    sandbox: &crate::sandbox::SandboxConfig,
    bring_up: bool,
) -> Result<Vec<Node>, RunError> {
    if let Some(nodes) = nodes {
        return Ok(nodes.clone());
    }
    let info = if bring_up {
        crate::sandbox::up(sandbox)
    } else {
        crate::sandbox::load(&sandbox.state_dir())
    }
    .map_err(|e| RunError::Sandbox(e.to_string()))?;
    info.fill_ssh(ssh);
    Ok(info.run_nodes())
}

/// `shakedown heal`: remove the tool's iptables chain and resume paused DB processes on every
/// node; when a fault journal is given, also restart the DB where it shows an un-undone kill,
/// reset the clocks it shows stepped and not reset (to the controller's time), start the NTP
/// daemons it shows stopped, and append the undo steps to that journal. Resume and restart go
/// through `db`'s abilities. Heals every node it reaches and names the others (see
/// `nemesis::heal`); the report says what is left.
pub async fn heal_db(
    cluster: crate::config::Cluster,
    db: Arc<dyn Db>,
    journal: Option<std::path::PathBuf>,
) -> Result<crate::nemesis::heal::HealReport, RunError> {
    let mut ssh = cluster.ssh;
    let nodes = resolve_cluster(&cluster.nodes, &mut ssh, &cluster.sandbox, false)?;
    let mut read = crate::nemesis::heal::JournalRead::default();
    let (outstanding, sink) = match &journal {
        None => (Vec::new(), None),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| RunError::Control(format!("{}: {e}", path.display())))?;
            read = crate::nemesis::heal::read_journal(&path.display().to_string(), &text);
            let open = crate::nemesis::outstanding_faults(&read.records);
            let dir = RunDir::open(path.parent().unwrap_or(std::path::Path::new(".")));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            (open, Some(dir.jsonl_sink(&name)?))
        }
    };
    tokio::task::spawn_blocking(move || {
        let pairs: Vec<(String, String)> = nodes
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect();
        let (remotes, failures) = crate::control::connect_each(&pairs, &ssh);
        let unreachable = failures
            .iter()
            .map(|e| {
                let u = crate::control::Unreachable::new(e);
                (e.node().to_string(), u.reason().to_string())
            })
            .collect();
        let mut nemesis = Nemesis::new(NemesisConfig {
            helper_exe: crate::runner::helper_exe(),
            nodes: nodes.clone(),
            remotes,
            db,
            partition: PartitionConfig::default(),
            rng: ChaCha8Rng::seed_from_u64(0),
            journal: sink,
        });
        let mut report = nemesis.heal_nodes(&unreachable, &outstanding, journal.as_deref());
        report.lines.splice(0..0, read.notes);
        report.left.extend(read.unreadable);
        report
    })
    .await
    .map_err(|e| RunError::Control(format!("heal task did not complete: {e}")))
}

/// Connect to every node; the error names each node that failed and why.
pub fn connect(nodes: &[Node], ssh: &SshConfig) -> Result<Vec<Arc<dyn Remote>>, RunError> {
    let pairs: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.host.clone()))
        .collect();
    crate::control::connect_all(&pairs, ssh).map_err(|e| RunError::Control(e.to_string()))
}

/// Run a whole test, showing its phases on `progress`.
///
/// Once the run directory exists, every exit path this process survives writes its completion
/// record (see [`crate::completion`]); a run that reached its workload is checked and judged even
/// when it was interrupted or stopped by an error (its verdict is then never `valid`).
pub async fn run(mut cfg: TestConfig, progress: Progress) -> Result<RunOutcome, RunError> {
    // Before any node is touched: refuse what the system cannot serve.
    let system = cfg.system.open();
    system.validate(&cfg.workload, &cfg.run_options())?;
    refuse_unpatched_clocks(&cfg, system.as_ref(), &[], AfterUp::NotYet)?;
    let run_slot: Arc<std::sync::OnceLock<RunDir>> = Arc::default();
    let interrupt = interrupt_on_ctrl_c(run_slot.clone(), cfg.time_limit_s);
    let packages = system.packages();
    let host_install = match (&cfg.nodes, cfg.install) {
        (None, install) => Some(provision_sandbox_host(&cfg, &packages, install, &progress).await?),
        (Some(_), _) => None,
    };
    let nodes = resolve_nodes(&mut cfg)?;
    refuse_unpatched_clocks(&cfg, system.as_ref(), &nodes, AfterUp::Recorded)?;
    let run_dir = RunDir::create(&cfg.reports_dir, &cfg.name)?;
    let _ = run_slot.set(run_dir.clone());
    if let Some(installed) = &host_install {
        keep_install_log(&run_dir, "this machine", installed);
    }
    let wall_start = chrono::Utc::now().to_rfc3339();
    system.attach_client_logs(&run_dir.client_log_dir());
    run_dir.write_json(
        TEST_FILE,
        &test_json(&cfg, system.as_ref(), &nodes, None, &wall_start),
    )?;
    tracing::info!(run_dir = %run_dir.path.display(), seed = cfg.seed, "starting run");
    let not_started = |e: RunError| {
        if let Err(w) = run_dir.write_completion(&CompletionRecord::not_started(&e.to_string())) {
            tracing::warn!("{w}");
        }
        e
    };

    let remotes = open_sessions(&nodes, &cfg.ssh, &progress)
        .await
        .map_err(not_started)?;
    let db: Arc<dyn Db> = system.to_db();

    // Heal leftovers of an earlier run against the same nodes, then install and start the DB.
    let nemesis = nemesis_after_leftovers(
        cfg.seed,
        &nodes,
        &remotes,
        db.clone(),
        &run_dir,
        &cfg.reports_dir,
        &progress,
        "heal before run",
    )
    .await
    .map_err(|e| not_started(e.into()))?;
    let setup_started = Arc::new(AtomicBool::new(false));
    let stage = Stage {
        nodes: nodes.clone(),
        remotes: remotes.clone(),
        db: db.clone(),
        run_dir: run_dir.clone(),
        progress: progress.clone(),
    };
    // The sandbox's nodes got their packages on this machine, above.
    let install = match host_install {
        Some(_) => crate::provision::Install::Skip,
        None => cfg.install,
    };
    let name = system.name().to_string();
    let (version, nemesis, nemesis_setup) = set_up(
        &stage,
        name,
        install,
        packages,
        setup_started.clone(),
        nemesis,
    )
    .await;
    let nemesis = Arc::new(Mutex::new(nemesis));
    let result = match (version, nemesis_setup) {
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(RunError::Control(format!("setting up partitions: {e}"))),
        (Ok(_), Ok(())) if *interrupt.borrow() => Err(RunError::Interrupted),
        (Ok(version), Ok(())) => {
            let meta = test_json(&cfg, system.as_ref(), &nodes, version, &wall_start);
            let control = Control {
                progress: Some(progress.clone()),
                interrupt: interrupt.clone(),
            };
            match run_dir.write_json(TEST_FILE, &meta) {
                Err(e) => Err(e.into()),
                Ok(()) => {
                    drive_caught(&cfg, &stage, system.as_ref(), nemesis.clone(), control).await
                }
            }
        }
    };

    // Always: heal, collect logs, stop the DB.
    let cleanup_failures = {
        let (stage, nemesis, started) = (stage.clone(), nemesis.clone(), setup_started.clone());
        let bound = Duration::from_secs_f64(cfg.nemesis_timeout_s);
        tokio::task::spawn_blocking(move || cleanup::clean_up(&stage, &nemesis, bound, &started))
            .await
            .unwrap_or_else(|e| {
                vec![format!(
                    "cleanup task failed ({e}): faults may remain; run `shakedown heal`"
                )]
            })
    };
    for e in &cleanup_failures {
        progress.note(&format!("cleanup failed: {e}"));
    }
    let reached_workload = run_dir.history_path().is_file();
    let (completion, error, live) = completion_of(result, reached_workload, cfg.time_limit_s);
    let completion = completion.with_cleanup_failures(cleanup_failures);
    if let Err(e) = run_dir.write_completion(&completion) {
        progress.note(&format!("warning: {e}"));
    }
    let (events, counts, main_phase, error) = match error {
        Ok((events, counts, main_phase)) => (events, counts, main_phase, None),
        // Nothing was recorded: there is nothing to check.
        Err(e) if !reached_workload => return Err(e),
        // The workload started: check what was recorded; the verdict says it is incomplete.
        Err(e) => (0, (0, 0, 0), Duration::ZERO, Some(e.to_string())),
    };
    let checked = check_run(&cfg, &run_dir, &progress, live).await?;
    let summary = checked.summary;
    progress.finish();
    Ok(RunOutcome {
        run_dir,
        verdict: checked.verdict,
        results: checked.results,
        events,
        counts,
        main_phase,
        interrupted: completion.status == crate::completion::RunStatus::Interrupted,
        reason: checked.reason,
        completion,
        error,
        phases: progress.timings(),
        summary,
    })
}

/// SSH sessions to every node, opened in parallel off the runtime's thread.
async fn open_sessions(
    nodes: &[Node],
    ssh: &SshConfig,
    progress: &Progress,
) -> Result<Vec<Arc<dyn Remote>>, RunError> {
    progress.phase(
        Phase::Connect,
        format!("opening SSH sessions to {} nodes", nodes.len()),
    );
    let (nodes, ssh) = (nodes.to_vec(), ssh.clone());
    tokio::task::spawn_blocking(move || connect(&nodes, &ssh))
        .await
        .expect("connect task")
}

/// The cluster a run set up, as the steps after connecting see it (cloned into their blocking
/// tasks).
#[derive(Clone)]
pub(crate) struct Stage {
    /// The run's nodes, in order.
    pub nodes: Vec<Node>,
    /// An SSH session to each node, in `nodes`' order.
    pub remotes: Vec<Arc<dyn Remote>>,
    /// The system under test.
    pub db: Arc<dyn Db>,
    /// The run directory.
    pub run_dir: RunDir,
    /// Where the steps announce their phases.
    pub progress: Progress,
}

/// Install and start the system named `name` on every node while the nemesis sets up its
/// chain: the system's version, the nemesis, and how its setup went. `started` is set once
/// setup reaches the system's own steps (from then on it may have logs and servers to stop).
async fn set_up(
    stage: &Stage,
    name: String,
    install: crate::provision::Install,
    packages: Vec<String>,
    started: Arc<AtomicBool>,
    mut nemesis: Nemesis,
) -> (
    Result<Option<String>, RunError>,
    Nemesis,
    Result<(), String>,
) {
    let setup = {
        let stage = stage.clone();
        tokio::task::spawn_blocking(move || {
            install_and_start(&stage, &name, install, &packages, &started)
        })
    };
    let nemesis_ready = tokio::task::spawn_blocking(move || {
        let r = nemesis.setup();
        (nemesis, r)
    });
    let version = setup.await.expect("setup task");
    let (nemesis, nemesis_setup) = nemesis_ready.await.expect("nemesis task");
    (version, nemesis, nemesis_setup)
}

/// Missing packages onto the nodes (unless `install` is `Skip`), the system's programs checked
/// (`Db::install`), then wiped and started on every node (`Db::setup`); its version.
fn install_and_start(
    stage: &Stage,
    name: &str,
    install: crate::provision::Install,
    packages: &[String],
    started: &AtomicBool,
) -> Result<Option<String>, RunError> {
    let Stage {
        nodes,
        remotes,
        db,
        run_dir,
        progress,
    } = stage;
    if install != crate::provision::Install::Skip && !packages.is_empty() {
        progress.phase(
            Phase::Install,
            format!(
                "installing {} on {} nodes where missing ({})",
                packages.join(", "),
                nodes.len(),
                install.flag()
            ),
        );
        provision_nodes(remotes, nodes, packages, install, Some(run_dir))?;
    }
    progress.phase(
        Phase::Install,
        format!("checking {name}'s programs on {} nodes", nodes.len()),
    );
    first_err(on_nodes(remotes, nodes, |r, _| db.install(r))).map_err(RunError::Control)?;
    started.store(true, Ordering::SeqCst);
    progress.phase(
        Phase::Start,
        format!("wiping and starting {name} on {} nodes", nodes.len()),
    );
    first_err(on_nodes(remotes, nodes, |r, n| db.setup(r, n, nodes))).map_err(RunError::Control)?;
    Ok(db.version(remotes[0].as_ref()))
}

/// Drive the workload; a panic while driving must not skip the cleanup after it (heal, logs,
/// teardown): it is caught and becomes an error.
async fn drive_caught(
    cfg: &TestConfig,
    stage: &Stage,
    system: &dyn crate::systems::System,
    nemesis: Arc<Mutex<Nemesis>>,
    control: Control,
) -> Result<DriveOutcome, RunError> {
    let driven = std::panic::AssertUnwindSafe(drive(
        cfg,
        &stage.nodes,
        &stage.remotes,
        system,
        Some(nemesis),
        &stage.run_dir,
        control,
    ))
    .catch_unwind()
    .await;
    driven.unwrap_or_else(|p| Err(RunError::Panicked(panic_message(p.as_ref()))))
}

/// What the workload's end says of the run: its completion record (before cleanup failures),
/// what it counted — history events, ok/fail/info ops, the main phase's length — or the error
/// that ended it, and what checking during the workload leaves the end.
#[allow(clippy::type_complexity)]
fn completion_of(
    result: Result<DriveOutcome, RunError>,
    reached_workload: bool,
    limit: f64,
) -> (
    CompletionRecord,
    Result<(u64, (u64, u64, u64), Duration), RunError>,
    AsItWent,
) {
    match result {
        Ok(DriveOutcome {
            events,
            counts,
            main_phase,
            interrupted,
            live,
            following,
            ..
        }) => {
            let w = main_phase.as_secs_f64();
            let stopped = live
                .as_ref()
                .filter(|l| l.stopped_early)
                .and_then(|l| l.first_invalid.clone());
            let c = match stopped {
                Some(first) => CompletionRecord::stopped_on_anomaly(&first.describe(), w, limit),
                None if interrupted => CompletionRecord::interrupted(w, limit),
                None => CompletionRecord::completed(w, limit),
            };
            (
                c,
                Ok((events, counts, main_phase)),
                AsItWent { live, following },
            )
        }
        Err(e) if !reached_workload => (
            CompletionRecord::not_started(&e.to_string()),
            Err(e),
            AsItWent::default(),
        ),
        Err(RunError::Panicked(m)) => (
            CompletionRecord::panicked(&m, limit),
            Err(RunError::Panicked(m)),
            AsItWent::default(),
        ),
        Err(e) => (
            CompletionRecord::failed(&e.to_string(), None, limit),
            Err(e),
            AsItWent::default(),
        ),
    }
}

/// The check phase: results, witness page, plots and run page from the run directory (with
/// what checking during the workload did). Off the runtime's thread: the check can take
/// minutes, and Ctrl-C (abort) must still be heard meanwhile.
async fn check_run(
    cfg: &TestConfig,
    run_dir: &RunDir,
    progress: &Progress,
    went: AsItWent,
) -> Result<Checked, RunError> {
    progress.phase(Phase::Check, check_phase_text(&cfg.workload.kind));
    let (run_dir, progress) = (run_dir.clone(), progress.clone());
    let (limit, witness) = (cfg.check_time_limit_s, cfg.witness);
    tokio::task::spawn_blocking(move || {
        write_results_with(&run_dir, limit, witness, Some(&progress), went)
    })
    .await
    .map_err(|e| RunError::Panicked(join_error_message(e)))?
}

/// Trap Ctrl-C for the whole run: the first one asks for a graceful stop (finish in-flight ops,
/// heal, collect logs, tear down); a second one exits at once, after recording the run as
/// aborted (completion record, reports index) so it is never mistaken for a finished one.
pub(crate) fn interrupt_on_ctrl_c(
    run_dir: Arc<std::sync::OnceLock<RunDir>>,
    time_limit_s: f64,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    let started = std::time::Instant::now();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!(
            "\ninterrupted: finishing in-flight ops, then healing and tearing down (Ctrl-C again to abort)"
        );
        let _ = tx.send(true);
        if tokio::signal::ctrl_c().await.is_ok() {
            if let Some(dir) = run_dir.get() {
                let c = CompletionRecord::aborted(started.elapsed().as_secs_f64(), time_limit_s);
                if dir.write_completion(&c).is_ok()
                    && let Some(root) = crate::store::reports_root_of(&dir.path)
                {
                    let _ = crate::report::page::write_reports_index(&root);
                }
                eprintln!("aborted: {} ({})", c.reason, dir.path.display());
            } else {
                eprintln!("aborted: faults may remain; run `shakedown heal`");
            }
            std::process::exit(130);
        }
    });
    rx
}
