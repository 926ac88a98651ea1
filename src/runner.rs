//! One test run, end to end: nodes → SSH sessions → DB setup → clients + nemesis → interpreter
//! phases (main, heal, settle, final reads) → teardown + logs → check → results.
//!
//! The only module that sequences the impure parts. Teardown, healing and log collection run on
//! every exit path after the cluster was touched (normal end, Ctrl-C, error), and the history is
//! appended as ops happen, so an aborted run still leaves a checkable run directory.

use crate::checker::{CheckResult, Verdict};
use crate::client::Client;
use crate::client::etcd::ReadMode;
use crate::config::{Node, TestConfig};
use crate::control::{Remote, SshConfig};
use crate::db::Db;
use crate::db::etcd::Etcd;
use crate::generator::{self, Generator};
use crate::history::{History, HistoryWriter};
use crate::interpreter::{Interpreter, Stats, Worker};
use crate::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use crate::store::{FAULTS_FILE, LINEAR_WITNESS_FILE, RESULTS_FILE, RunDir, TEST_FILE};
use crate::system::System;
use futures_util::FutureExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Errors that end a run early. Messages name the node/command/file.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Could not create or write the run directory.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// SSH problems (unreachable node, bad key, host key mismatch).
    #[error("{0}")]
    Control(String),
    /// The system under test could not be set up.
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
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

/// The message of a caught panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
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
}

/// Run `f` on every node in parallel (one thread each), results in node order.
pub fn on_nodes<T: Send>(
    remotes: &[Arc<dyn Remote>],
    nodes: &[Node],
    f: impl Fn(&dyn Remote, &Node) -> T + Sync,
) -> Vec<T> {
    std::thread::scope(|s| {
        let f = &f;
        let hs: Vec<_> = remotes
            .iter()
            .zip(nodes)
            .map(|(r, n)| s.spawn(move || f(r.as_ref(), n)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("node task panicked"))
            .collect()
    })
}

fn first_err<E: std::fmt::Display>(results: Vec<Result<(), E>>) -> Result<(), String> {
    let errs: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// A `Client` that performs nemesis ops on a blocking thread.
struct NemesisClient {
    nemesis: Arc<Mutex<Nemesis>>,
    stats: Arc<Stats>,
}

#[async_trait::async_trait]
impl Client for NemesisClient {
    async fn invoke(
        &mut self,
        f: &str,
        _key: Option<&str>,
        value: &Value,
    ) -> crate::client::Completion {
        let nemesis = self.nemesis.clone();
        let stats = self.stats.clone();
        let (f, value) = (f.to_string(), value.clone());
        tokio::task::spawn_blocking(move || {
            let mut n = nemesis.lock().unwrap_or_else(|p| p.into_inner());
            let c = n.invoke(&f, &value);
            *stats
                .active_faults
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = n.active().join(" ");
            c
        })
        .await
        .unwrap_or_else(|e| crate::client::Completion::Info {
            error: format!("nemesis task failed: {e}"),
        })
    }
}

/// The test metadata written to test.json.
fn test_json(
    cfg: &TestConfig,
    system: &dyn System,
    nodes: &[Node],
    db_version: Option<String>,
    wall_start: &str,
) -> Value {
    json!({
        "name": cfg.name,
        "seed": cfg.seed,
        "start_time": wall_start,
        "shakedown_version": env!("CARGO_PKG_VERSION"),
        "db": { "name": system.name(), "version": db_version, "config": system.config_json(nodes) },
        "nodes": nodes,
        "ssh": { "user": cfg.ssh.user, "port": cfg.ssh.port },
        "concurrency": cfg.concurrency,
        "rate": cfg.rate,
        "time_limit_s": cfg.time_limit_s,
        "op_timeout_ms": cfg.op_timeout_ms,
        "read_mode": cfg.read_mode,
        "read_from": cfg.read_from,
        "read_nodes": cfg.read_nodes,
        "workload": { "name": cfg.workload_name, "spec": cfg.workload },
        "nemesis": { "name": cfg.nemesis_name, "spec": cfg.nemesis },
        "rerun": cfg.rerun_command(),
    })
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
    if ssh.private_key.is_none() {
        ssh.private_key = Some(info.private_key.clone());
    }
    if ssh.known_hosts.is_none() {
        ssh.known_hosts = Some(info.known_hosts.clone());
    }
    Ok(info
        .nodes
        .iter()
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect())
}

/// `shakedown heal`: remove the tool's iptables chain and resume paused DB processes on every
/// node; when a fault journal is given, also restart the DB where it shows an un-undone kill,
/// reset the clocks it shows stepped and not reset (to the controller's time), start the NTP
/// daemons it shows stopped, and append the undo steps to that journal. Returns one line per
/// action; errors name the node.
pub async fn heal(
    cluster: crate::cli::Cluster,
    etcd_dir: String,
    journal: Option<std::path::PathBuf>,
) -> Result<Vec<String>, RunError> {
    let db: Arc<dyn Db> = Arc::new(Etcd::new(crate::db::etcd::EtcdConfig {
        base_dir: etcd_dir,
        ..Default::default()
    }));
    heal_db(cluster, db, journal).await
}

/// `heal` for any system: resume and restart go through `db`'s abilities.
pub async fn heal_db(
    cluster: crate::cli::Cluster,
    db: Arc<dyn Db>,
    journal: Option<std::path::PathBuf>,
) -> Result<Vec<String>, RunError> {
    let mut ssh = cluster.ssh;
    let nodes = resolve_cluster(&cluster.nodes, &mut ssh, &cluster.sandbox, false)?;
    let mut done = Vec::new();
    let (outstanding, sink) = match &journal {
        None => (Vec::new(), None),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| RunError::Control(format!("{}: {e}", path.display())))?;
            let records: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            let open = crate::nemesis::outstanding_faults(&records);
            for r in &open {
                done.push(format!(
                    "journal {}: {} {} not undone",
                    path.display(),
                    r["f"],
                    r["detail"]
                ));
            }
            let dir = RunDir::open(path.parent().unwrap_or(std::path::Path::new(".")));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            (open, Some(dir.jsonl_sink(&name)?))
        }
    };
    tokio::task::spawn_blocking(move || -> Result<Vec<String>, RunError> {
        let remotes = connect(&nodes, &ssh)?;
        let mut nemesis = Nemesis::new(NemesisConfig {
            nodes: nodes.clone(),
            remotes,
            db,
            partition: PartitionConfig::default(),
            rng: ChaCha8Rng::seed_from_u64(0),
            journal: sink,
        });
        nemesis.heal_partition().map_err(RunError::Control)?;
        nemesis.teardown().map_err(RunError::Control)?;
        done.push(format!(
            "removed iptables chain {} on {} nodes",
            PartitionConfig::default().chain,
            nodes.len()
        ));
        nemesis.heal_packets().map_err(RunError::Control)?;
        done.push(format!(
            "removed the tool's loss rules and tc qdiscs (handle {}) on {} nodes",
            crate::nemesis::packet::TC_HANDLE,
            nodes.len()
        ));
        nemesis.resume_all().map_err(RunError::Control)?;
        done.push(format!(
            "resumed (SIGCONT) the DB process on {} nodes",
            nodes.len()
        ));
        let killed: Vec<String> = outstanding
            .iter()
            .filter(|r| r["f"] == "kill")
            .flat_map(|r| r["detail"]["nodes"].as_array().cloned().unwrap_or_default())
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        if !killed.is_empty() {
            nemesis.adopt_killed(killed.clone());
            nemesis.start_all().map_err(RunError::Control)?;
            done.push(format!("restarted the DB on {}", killed.join(", ")));
        }
        let (clocked, ntp) = crate::nemesis::clock::journal_clock_leftovers(&outstanding);
        if !clocked.is_empty() {
            nemesis.adopt_clocked(clocked.iter().cloned());
            nemesis
                .reset_clocks(&Value::Null)
                .map_err(RunError::Control)?;
            let names: Vec<String> = clocked.into_iter().collect();
            done.push(format!(
                "reset the clock to the controller's on {}",
                names.join(", ")
            ));
        }
        if !ntp.is_empty() {
            nemesis.adopt_ntp_stopped(ntp);
            let started = nemesis.restore_ntp().map_err(RunError::Control)?;
            done.push(format!("started NTP again: {}", started.join("; ")));
        }
        Ok(done)
    })
    .await
    .expect("heal task")
}

/// Connect to every node; the error names each node that failed and why.
pub fn connect(nodes: &[Node], ssh: &SshConfig) -> Result<Vec<Arc<dyn Remote>>, RunError> {
    let pairs: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.host.clone()))
        .collect();
    crate::control::connect_all(&pairs, ssh).map_err(|e| RunError::Control(e.to_string()))
}

fn build_client_gen(cfg: &TestConfig) -> Result<(Box<dyn Generator>, generator::KeyLog), RunError> {
    let w = &cfg.workload;
    let config_err = |e: generator::ConfigError| {
        crate::config::ConfigError::new(&cfg.workload_name, e.to_string())
    };
    let threads_per_key = w.threads_per_key.min(cfg.concurrency).max(1);
    let (keys, mut g): (generator::KeyLog, Box<dyn Generator>) = if w.kind == "list-append" {
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
    if cfg.rate > 0.0 {
        g = Box::new(generator::stagger((1e9 / cfg.rate) as u64, g));
    }
    Ok((
        Box::new(generator::time_limit((cfg.time_limit_s * 1e9) as u64, g)),
        keys,
    ))
}

fn nemesis_schedule(cfg: &TestConfig) -> generator::NemesisSchedule {
    generator::NemesisSchedule {
        faults: cfg
            .nemesis
            .faults
            .iter()
            .map(|f| {
                let (start_f, start_value, stop_f) = f.ops();
                generator::FaultSpec {
                    start_f: start_f.into(),
                    start_value,
                    stop_f: stop_f.into(),
                    stop_value: Value::Null,
                }
            })
            .collect(),
        interval_ns: (cfg.nemesis.interval_s * 1e9) as u64,
        sequential: cfg.nemesis.order == crate::spec::FaultOrder::Sequential,
    }
}

/// With clock faults in the schedule: measure clock offsets after every clock op and, when
/// `periodic`, every `clock_offsets_interval_s`. Otherwise `g` unchanged.
fn with_offsets(cfg: &TestConfig, g: Box<dyn Generator>, periodic: bool) -> Box<dyn Generator> {
    if !cfg
        .nemesis
        .faults
        .iter()
        .any(crate::spec::FaultKind::is_clock)
    {
        return g;
    }
    let period_ns = (cfg.nemesis.clock_offsets_interval_s * 1e9) as u64;
    Box::new(generator::with_clock_offsets(
        Some(period_ns).filter(|_| periodic),
        g,
    ))
}

/// Run a whole test. Progress goes to `progress` (None = quiet).
pub async fn run(
    mut cfg: TestConfig,
    progress: Option<indicatif::ProgressBar>,
) -> Result<RunOutcome, RunError> {
    let interrupt = interrupt_on_ctrl_c();
    let nodes = resolve_nodes(&mut cfg)?;
    let run_dir = RunDir::create(&cfg.reports_dir, &cfg.name)?;
    let wall_start = chrono::Utc::now().to_rfc3339();
    let system = crate::system::for_config(&cfg);
    run_dir.write_json(
        TEST_FILE,
        &test_json(&cfg, system.as_ref(), &nodes, None, &wall_start),
    )?;
    run_dir.update_latest()?;
    tracing::info!(run_dir = %run_dir.path.display(), seed = cfg.seed, "starting run");

    let ssh = cfg.ssh.clone();
    let remotes = {
        let nodes = nodes.clone();
        tokio::task::spawn_blocking(move || connect(&nodes, &ssh))
            .await
            .expect("connect task")?
    };
    let db: Arc<dyn Db> = system.to_db();

    // Heal leftovers of an earlier run against the same nodes, then install and start the DB.
    let mut nemesis = Nemesis::new(NemesisConfig {
        nodes: nodes.clone(),
        remotes: remotes.clone(),
        db: db.clone(),
        partition: PartitionConfig::default(),
        rng: ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(1)),
        journal: Some(run_dir.jsonl_sink(FAULTS_FILE)?),
    });
    {
        // Faults a killed controller left (any earlier run against these nodes); see
        // nemesis::leftovers.
        let (reports, here) = (cfg.reports_dir.clone(), run_dir.path.clone());
        let (remotes, nodes, db) = (remotes.clone(), nodes.clone(), db.clone());
        let healed = tokio::task::spawn_blocking(move || {
            crate::nemesis::leftovers::heal_leftovers(&reports, &here, &nodes, &remotes, db)
        })
        .await
        .unwrap_or_default();
        for line in healed {
            eprintln!("heal before run: {line}");
        }
    }
    let setup = {
        let (remotes, nodes, db) = (remotes.clone(), nodes.clone(), db.clone());
        tokio::task::spawn_blocking(move || -> Result<Option<String>, RunError> {
            first_err(on_nodes(&remotes, &nodes, |r, _| db.install(r)))
                .map_err(RunError::Control)?;
            first_err(on_nodes(&remotes, &nodes, |r, n| db.setup(r, n, &nodes)))
                .map_err(RunError::Control)?;
            Ok(db.version(remotes[0].as_ref()))
        })
    };
    let nemesis_ready = tokio::task::spawn_blocking(move || {
        let r = nemesis.setup();
        (nemesis, r)
    });
    let version = setup.await.expect("setup task");
    let (nemesis, nemesis_setup) = nemesis_ready.await.expect("nemesis task");
    let nemesis = Arc::new(Mutex::new(nemesis));
    let result = match (version, nemesis_setup) {
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(RunError::Control(format!("setting up partitions: {e}"))),
        (Ok(_), Ok(())) if *interrupt.borrow() => Err(RunError::Interrupted),
        (Ok(version), Ok(())) => {
            let meta = test_json(&cfg, system.as_ref(), &nodes, version, &wall_start);
            match run_dir.write_json(TEST_FILE, &meta) {
                Err(e) => Err(e.into()),
                Ok(()) => {
                    // A panic while driving must not skip the cleanup below (heal, logs,
                    // teardown): catch it and turn it into an error.
                    let driven = std::panic::AssertUnwindSafe(drive(
                        &cfg,
                        &nodes,
                        &remotes,
                        system.as_ref(),
                        Some(nemesis.clone()),
                        &run_dir,
                        Control {
                            progress,
                            interrupt: interrupt.clone(),
                        },
                    ))
                    .catch_unwind()
                    .await;
                    driven.unwrap_or_else(|p| Err(RunError::Panicked(panic_message(p.as_ref()))))
                }
            }
        }
    };

    // Always: heal, collect logs, stop the DB.
    let cleanup = {
        let (remotes, nodes, db, run_dir) =
            (remotes.clone(), nodes.clone(), db.clone(), run_dir.clone());
        tokio::task::spawn_blocking(move || {
            let mut n = nemesis.lock().unwrap_or_else(|p| p.into_inner());
            let mut errs = n.heal_all();
            if let Err(e) = n.teardown() {
                errs.push(format!("removing iptables chain: {e}"));
            }
            for (r, node) in remotes.iter().zip(&nodes) {
                let Ok(dir) = run_dir.node_log_dir(&node.name) else {
                    continue;
                };
                for f in db.log_files(node) {
                    let name = std::path::Path::new(&f)
                        .file_name()
                        .map(|s| s.to_owned())
                        .unwrap_or_default();
                    if let Err(e) = r.download(&f, &dir.join(name)) {
                        errs.push(format!("{}: downloading {f}: {e}", node.name));
                    }
                }
            }
            if let Err(e) = first_err(on_nodes(&remotes, &nodes, |r, n| db.teardown(r, n))) {
                errs.push(format!("teardown: {e}"));
            }
            errs
        })
    };
    for e in cleanup.await.unwrap_or_default() {
        tracing::warn!("cleanup: {e}");
    }
    let (events, counts, main_phase, interrupted) = result?;

    let (verdict, results) = write_results(&run_dir, cfg.check_time_limit_s, cfg.witness)?;
    Ok(RunOutcome {
        run_dir,
        verdict,
        results,
        events,
        counts,
        main_phase,
        interrupted,
    })
}

/// Trap Ctrl-C for the whole run: the first one asks for a graceful stop (finish in-flight ops,
/// heal, collect logs, tear down); a second one exits at once.
fn interrupt_on_ctrl_c() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!(
            "\ninterrupted: finishing in-flight ops, then healing and tearing down (Ctrl-C again to abort)"
        );
        let _ = tx.send(true);
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("aborted: faults may remain; run `shakedown heal`");
            std::process::exit(130);
        }
    });
    rx
}

/// The version source the run's workload declared (`workload.spec.version_source` in
/// test.json), if any; a missing or unreadable test.json declares nothing.
fn declared_version_source(run_dir: &RunDir) -> Option<crate::checker::session::VersionSource> {
    let text = std::fs::read_to_string(run_dir.path.join(TEST_FILE)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.pointer("/workload/spec/version_source")?
        .as_str()?
        .parse()
        .ok()
}

/// Check a run directory's history and write results.json, the witness page (when
/// linearizability is violated) and the plots. Used at the end of a run and by `report`.
pub fn write_results(
    run_dir: &RunDir,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
) -> Result<(Verdict, Vec<CheckResult>), RunError> {
    let history = History::read_file(&run_dir.history_path())?;
    let (verdict, results, linear) = check_with(
        &history,
        check_time_limit_s,
        declared_version_source(run_dir),
        witness,
    );
    run_dir.write_json(RESULTS_FILE, &results_json(verdict, &results))?;
    if let Some(r) = linear.filter(|r| r.verdict == Verdict::Invalid) {
        let page = crate::checker::witness_html::render_witness_html(&r, &history);
        run_dir.write_text(LINEAR_WITNESS_FILE, &page)?;
    }
    if let Err(e) = crate::report::render_run(&run_dir.path) {
        tracing::warn!("plots: {e}");
    }
    if let Err(e) = crate::report::page::write_run_page(&run_dir.path) {
        tracing::warn!("run page: {e}");
    }
    // reports/<test>/<timestamp>: the index lives at reports/index.html.
    if let Some(root) = run_dir.path.parent().and_then(|p| p.parent())
        && let Err(e) = crate::report::page::write_reports_index(root)
    {
        tracing::warn!("reports index: {e}");
    }
    Ok((verdict, results))
}

/// Results file contents.
pub fn results_json(verdict: Verdict, results: &[CheckResult]) -> Value {
    json!({ "valid": verdict, "checkers": results })
}

/// The checks a register run gets (linearizability, session guarantees), plus the typed
/// linearizability result for the witness page.
pub fn check(
    history: &History,
    time_limit_s: f64,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    check_with(history, time_limit_s, None, Default::default())
}

/// [`check`] with the session checker's version source fixed (`None` = chosen from the history).
/// The linearizability model follows the history: `list-append` when it has append ops, else
/// `cas-register`.
pub fn check_with(
    history: &History,
    time_limit_s: f64,
    version_source: Option<crate::checker::session::VersionSource>,
    witness: crate::checker::linear::WitnessMode,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    use crate::checker::Checker;
    let limit = Duration::from_secs_f64(time_limit_s);
    let model = crate::app::default_model_for(crate::import::InputFormat::Jsonl, history);
    let (linear, typed) =
        match crate::app::check_linear_with_model(model, history, false, limit, witness) {
            Ok(r) => (crate::app::linear_check_result(&r), Some(r)),
            // The model could not interpret the history: say so, never call it valid.
            Err(e) => (
                CheckResult {
                    checker: "linearizable".into(),
                    verdict: Verdict::Unknown,
                    summary: format!("history not checkable: {e}"),
                    details: json!({ "error": e }),
                },
                None,
            ),
        };
    let session =
        crate::checker::session::SessionChecker::new(crate::checker::session::SessionConfig {
            source: version_source,
            ..Default::default()
        })
        .check(history);
    let verdict = linear.verdict.merge(session.verdict);
    (verdict, vec![linear, session], typed)
}

/// How the user steers a running workload: the progress bar to update and the Ctrl-C signal.
pub(crate) struct Control {
    /// Progress display, if any.
    pub progress: Option<indicatif::ProgressBar>,
    /// Becomes true when the user asks to stop.
    pub interrupt: watch::Receiver<bool>,
}

type DriveOutcome = (u64, (u64, u64, u64), Duration, bool);

/// Wait for the DB, then run the interpreter phases against an already set-up cluster, appending
/// to the run directory's history. Returns (events, (ok, fail, info), main phase, interrupted).
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
        mut interrupt,
    } = control;
    // Wait for the cluster before the clock starts.
    {
        let (remotes, nodes, system) = (remotes.to_vec(), nodes.to_vec(), system.to_arc());
        tokio::task::spawn_blocking(move || {
            first_err(on_nodes(&remotes, &nodes, |r, n| {
                system.await_ready(r, n, &nodes)
            }))
        })
        .await
        .expect("ready task")
        .map_err(RunError::Control)?;
    }
    if *interrupt.borrow() {
        return Err(RunError::Interrupted);
    }
    let stats = Arc::new(Stats::default());
    let op_timeout = Duration::from_millis(cfg.op_timeout_ms);
    let mut workers = Vec::new();
    for t in 0..cfg.concurrency {
        let node = &nodes[t % nodes.len()];
        let client = system.client(cfg, t, nodes).map_err(RunError::Control)?;
        workers.push(Worker {
            client,
            node: Some(node.name.clone()),
            timeout: op_timeout + Duration::from_millis(500),
        });
    }
    let nemesis_worker = nemesis.map(|nemesis| Worker {
        client: Box::new(NemesisClient {
            nemesis,
            stats: stats.clone(),
        }),
        node: None,
        timeout: Duration::from_secs(120),
    });
    let interp_has_nemesis = nemesis_worker.is_some();
    let file = run_dir.open_history()?;
    let start = Instant::now();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let mut interp = Interpreter::new(
        start,
        HistoryWriter::new(file),
        workers,
        nemesis_worker,
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
    if let Some(pb) = &progress {
        // The bar measures the workload, not the setup before it.
        pb.reset_elapsed();
    }
    let ticker = progress.clone().map(|pb| {
        let stats = stats.clone();
        tokio::spawn(async move {
            loop {
                pb.set_position(start.elapsed().as_millis() as u64);
                let faults = stats
                    .active_faults
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_default();
                pb.set_message(format!(
                    "ok {} fail {} info {} | faults: {}",
                    stats.ok.load(Ordering::Relaxed),
                    stats.fail.load(Ordering::Relaxed),
                    stats.info.load(Ordering::Relaxed),
                    if faults.is_empty() {
                        "none".to_string()
                    } else {
                        faults
                    }
                ));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    });

    let (client_gen, keys) = build_client_gen(cfg)?;
    let schedule = nemesis_schedule(cfg);
    let with_nemesis = !schedule.faults.is_empty() && interp_has_nemesis;
    let nemesis_gen: Option<Box<dyn Generator>> = if !with_nemesis {
        None
    } else {
        let cycle: Box<dyn Generator> = if cfg.nemesis.order == crate::spec::FaultOrder::Stacked {
            Box::new(generator::nemesis_stack(schedule.clone()))
        } else {
            Box::new(generator::nemesis_cycle(schedule.clone()))
        };
        Some(Box::new(generator::time_limit(
            (cfg.time_limit_s * 1e9) as u64,
            with_offsets(cfg, cycle, true),
        )))
    };
    let phase = interp.run_phase(Some(client_gen), nemesis_gen).await;
    let main_phase = start.elapsed();
    let interrupted = interp.is_shutting_down();
    // Final phase: heal through the history (so fault ends are recorded), settle, final reads.
    let heal = if with_nemesis {
        let heal = with_offsets(cfg, Box::new(generator::nemesis_heal(&schedule)), false);
        interp.run_phase(None, Some(heal)).await
    } else {
        Ok(())
    };
    if phase.is_ok() && heal.is_ok() && !interrupted {
        if let Some(pb) = &progress {
            pb.set_message("healed; settling before final reads");
        }
        tokio::time::sleep(Duration::from_secs_f64(cfg.settle_s)).await;
        interp
            .run_phase(Some(Box::new(generator::final_reads(keys))), None)
            .await?;
    }
    if let Some(t) = ticker {
        t.abort();
    }
    ctrl_c.abort();
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    let _ = interp.flush();
    phase?;
    heal?;
    let counts = (
        stats.ok.load(Ordering::Relaxed),
        stats.fail.load(Ordering::Relaxed),
        stats.info.load(Ordering::Relaxed),
    );
    Ok((interp.ops_written(), counts, main_phase, interrupted))
}

/// Default read mode for serialization into test.json.
pub fn default_read_mode() -> ReadMode {
    ReadMode::Linearizable
}
