//! Command implementations behind `main`: run, check, export, sandbox, bench. Each returns the
//! process exit code (0 valid, 1 invalid, 2 unknown, 3 usage/config error, 4 runtime error) and
//! prints errors as one line naming the cause.

use crate::checker::Verdict;
use crate::checker::linear::WitnessMode;
use crate::cli::{BenchArgs, EXIT_RUNTIME, EXIT_USAGE, RunArgs};
use crate::import::InputFormat;
use crate::runner::RunError;
use std::path::Path;

mod chaos;
mod check;
mod compare;
mod export;
pub use chaos::chaos;
pub use check::check;
pub(crate) use check::what_ran;
pub use compare::compare;
pub use export::export;

/// The commands' runtime: one thread for every task (the scheduler, its workers, the clients
/// and their connections), blocking work (SSH, the nemesis, the checker) on tokio's blocking
/// pool. An op hops between the scheduler and its connection's task and back; on one thread
/// those hops are queue pushes, across threads each is a futex wake and often a context switch. Measured on 2 cores:
/// `cargo bench --bench interpreter` 1.8 µs of CPU per op instead of 3.8; `shakedown bench --db
/// redis` 16.5–26 µs per op in the run loop instead of 21–27. Nothing may block a task:
/// blocking calls go through `spawn_blocking`.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn run_error_code(e: &RunError) -> i32 {
    match e {
        RunError::Config(_) => EXIT_USAGE,
        _ => EXIT_RUNTIME,
    }
}

/// The exit code of a finished run: its verdict's, except that a `valid` run whose cleanup left
/// something behind exits [`EXIT_RUNTIME`] (the cluster needs `shakedown heal`).
pub fn run_exit_code(verdict: Verdict, completion: &crate::completion::CompletionRecord) -> i32 {
    if verdict == Verdict::Valid && !completion.cleanup_ok() {
        EXIT_RUNTIME
    } else {
        verdict.exit_code()
    }
}

/// `shakedown run`.
pub fn run(args: RunArgs) -> i32 {
    let (quiet, json) = (args.quiet || args.json, args.json);
    let args_junit = args.junit.clone();
    let cfg = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if !quiet {
        eprintln!(
            "shakedown: test {} seed {} ({} s, {} threads)",
            cfg.name, cfg.seed, cfg.time_limit_s, cfg.concurrency
        );
    }
    let progress = if quiet {
        crate::progress::Progress::quiet()
    } else {
        crate::progress::Progress::for_stderr(cfg.time_limit_s)
    };
    let rerun = cfg.rerun_command();
    let (junit, suite) = (args_junit, cfg.name.clone());
    let outcome = runtime().block_on(crate::runner::run(cfg, progress.clone()));
    progress.finish();
    match outcome {
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
        Ok(mut o) => {
            if let Some(e) = &o.error {
                eprintln!("error: {e}");
            }
            if let Some(path) = &junit {
                let xml = crate::report::junit::junit_xml_run(
                    &suite,
                    &o.results,
                    o.main_phase.as_secs_f64(),
                    &o.completion,
                );
                if let Err(e) = std::fs::write(path, xml) {
                    eprintln!("error: {}: {e}", path.display());
                    return EXIT_RUNTIME;
                }
            }
            // Read as it streams: a long run's history need not fit in memory (an unreadable
            // file gives the table of what was read).
            // A long run's end folded it from its one read (`runner::streamed`).
            let summary = o.summary.take().unwrap_or_else(|| {
                let mut summarizer = crate::summary::Summarizer::default();
                let _ = crate::report::digest::each_op(&o.run_dir.history_path(), |op| {
                    summarizer.push(&op)
                });
                summarizer.finish()
            });
            if json {
                let v = serde_json::json!({
                    "run_dir": o.run_dir.path,
                    "valid": o.verdict,
                    "reason": o.reason,
                    "completion": o.completion,
                    "events": o.events,
                    "ops": summary,
                    "checkers": o.results,
                    "interrupted": o.interrupted,
                });
                println!("{v}");
            } else {
                let secs = o.main_phase.as_secs_f64();
                let client_ops = o.counts.0 + o.counts.1 + o.counts.2;
                println!("{}", crate::summary::render(&summary, &o.results));
                // After an error the counters are gone; the table above has the recorded ops.
                if o.error.is_none() {
                    println!(
                        "{} client ops in {:.1} s ({:.0} ops/s), {} history events",
                        client_ops,
                        secs,
                        client_ops as f64 / secs.max(1e-9),
                        o.events
                    );
                }
                let stored = crate::report::read_results(&o.run_dir.path).ok().flatten();
                if let Some(line) = stored.as_ref().and_then(crate::summary::recovery_line) {
                    println!("{line}");
                }
                let never = stored
                    .as_ref()
                    .map(crate::store::never_ran_in)
                    .unwrap_or_default();
                if let Some(line) = crate::runner::requested::summary_line(&never) {
                    println!("{line}");
                }
                let protocol_key = crate::systems::external::protocol::RESULTS_KEY;
                if let Some(errors) = stored.as_ref().and_then(|r| r.get(protocol_key)) {
                    let line = crate::systems::external::protocol::counts_line(errors);
                    println!("client protocol errors: {line}");
                }
                println!("phases: {}", crate::progress::timings_text(&o.phases));
                for r in o.results.iter().filter(|r| r.verdict != Verdict::Valid) {
                    if let Some(text) = r.details.get("explanation").and_then(|v| v.as_str()) {
                        println!("{text}");
                    }
                }
                println!("run directory: {}", o.run_dir.path.display());
                let witness = o.run_dir.path.join(crate::store::LINEAR_WITNESS_FILE);
                if witness.is_file() {
                    println!("witness page: {}", witness.display());
                }
                println!("run page: {}", o.run_dir.path.join("index.html").display());
                print!("{}", crate::summary::render_completion(&o.completion));
                match &o.reason {
                    Some(reason) => println!("verdict: {} ({reason})", o.verdict),
                    None => println!("verdict: {}", o.verdict),
                }
                if o.verdict != Verdict::Valid {
                    println!("rerun: {rerun}");
                }
            }
            run_exit_code(o.verdict, &o.completion)
        }
    }
}

/// A history loaded for `check`, with how it was read.
pub type LoadedHistory = crate::import::Imported;

/// Load a history for checking. `path` is a run directory or a file; `format` is a `--format`
/// value (auto, jsonl, edn, jepsen-log, porcupine); `independent` forces (`Some`) or auto-detects
/// (`None`) `jepsen.independent` tuples. Errors name the file (and line, for malformed input).
pub fn load_history(
    path: &Path,
    format: &str,
    independent: Option<bool>,
) -> Result<LoadedHistory, String> {
    let fmt = InputFormat::from_arg(format)?;
    let file = crate::store::resolve_history(path).map_err(|e| e.to_string())?;
    let name = file.display().to_string();
    if let Some(read) = crate::import::read_big_jsonl(&file, &name, fmt, independent) {
        return read;
    }
    let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        format!("{name}:{line}: expected UTF-8 text, found invalid bytes")
    })?;
    crate::import::read_text(&text, &name, fmt, independent)
}

/// `shakedown sandbox up|down|status`.
pub fn sandbox(cfg: crate::sandbox::SandboxConfig, up: bool, down: bool) -> i32 {
    if up {
        let t = std::time::Instant::now();
        match crate::sandbox::up(&cfg) {
            Ok(info) => {
                println!(
                    "sandbox {} up in {:.2} s: {} nodes on {} (key {}, known_hosts {})",
                    info.name,
                    t.elapsed().as_secs_f64(),
                    info.nodes.len(),
                    info.subnet,
                    info.private_key.display(),
                    info.known_hosts.display()
                );
                for n in &info.nodes {
                    println!("  {} {}", n.name, n.address);
                }
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_RUNTIME
            }
        }
    } else if down {
        match crate::sandbox::down(&cfg) {
            Ok(r) => {
                for line in r.lines(&cfg.name) {
                    println!("{line}");
                }
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_RUNTIME
            }
        }
    } else {
        match crate::sandbox::status(&cfg) {
            Ok(s) => {
                print!("{s}");
                if s.healthy() { 0 } else { 1 }
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_RUNTIME
            }
        }
    }
}

/// `shakedown report`: rewrite plots, results and (when invalid) the witness page of a run
/// directory from its history alone.
pub fn report(args: crate::cli::ReportArgs) -> i32 {
    if matches!(args.run_dir.try_exists(), Ok(false)) {
        let missing = crate::store::StoreError::NoSuchPath(args.run_dir.display().to_string());
        eprintln!("error: {missing}");
        return EXIT_USAGE;
    }
    if !args.run_dir.join(crate::store::HISTORY_FILE).is_file() {
        eprintln!(
            "error: {}: not a run directory (no {})",
            args.run_dir.display(),
            crate::store::HISTORY_FILE
        );
        return EXIT_USAGE;
    }
    if !(args.check_time_limit.is_finite() && args.check_time_limit > 0.0) {
        eprintln!(
            "error: --check-time-limit {}: expected a positive number",
            args.check_time_limit
        );
        return EXIT_USAGE;
    }
    let run_dir = crate::store::RunDir::open(&args.run_dir);
    match write_run_results(&run_dir, args.check_time_limit) {
        Ok(checked) => {
            for name in std::fs::read_dir(&run_dir.path)
                .into_iter()
                .flatten()
                .flatten()
            {
                let p = name.path();
                if p.extension()
                    .is_some_and(|e| e == "svg" || e == "html" || e == "json")
                {
                    println!("{}", p.display());
                }
            }
            print!("{}", crate::summary::render_completion(&checked.completion));
            match &checked.reason {
                Some(reason) => println!("verdict: {} ({reason})", checked.verdict),
                None => println!("verdict: {}", checked.verdict),
            }
            run_exit_code(checked.verdict, &checked.completion)
        }
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
    }
}

/// `shakedown heal`: 0 when every node was reached and everything found was undone; 4 when
/// something was left (an unreachable node, a failed step), named on stderr; 3 on bad flags.
pub fn heal(args: crate::cli::HealArgs) -> i32 {
    let (cluster, journal, db) = match args
        .cluster
        .to_cluster()
        .and_then(|c| Ok((c, args.journal_path()?, args.system()?)))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let killed_run = journal.as_deref().and_then(killed_run_of);
    match runtime().block_on(crate::runner::heal_db(cluster, db, journal)) {
        Ok(report) => {
            for l in &report.lines {
                println!("{l}");
            }
            if let Some(run_dir) = killed_run {
                report_killed_run(&run_dir);
            }
            if report.complete() {
                return 0;
            }
            eprintln!("heal left {} thing(s) undone:", report.left.len());
            for l in &report.left {
                eprintln!("  {l}");
            }
            EXIT_RUNTIME
        }
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
    }
}

/// The run directory holding `journal` when it is one a killed controller left: a history and no
/// completion record.
fn killed_run_of(journal: &Path) -> Option<crate::store::RunDir> {
    let run_dir = crate::store::RunDir::open(journal.parent()?);
    let killed = run_dir.history_path().is_file()
        && !run_dir.path.join(crate::store::COMPLETION_FILE).exists();
    killed.then_some(run_dir)
}

/// Check a recorded run directory and write its results and pages with the writer of the part
/// that recorded it: chaos's for a chaos experiment (`chaos::run::write_results`, its SLO
/// judgement), the runner's otherwise. The one place that chooses, so the runner imports
/// nothing from chaos. Used by `report` and `heal`.
fn write_run_results(
    run_dir: &crate::store::RunDir,
    check_time_limit_s: f64,
) -> Result<crate::runner::Checked, crate::runner::RunError> {
    if crate::chaos::run::is_chaos_run(run_dir) {
        crate::store::ensure_writable(&run_dir.path)?;
        return crate::chaos::run::write_results(run_dir, None);
    }
    crate::runner::write_results(run_dir, check_time_limit_s, WitnessMode::default())
}

/// After `heal` of a killed controller's run: check what it recorded and write its results and
/// page, marked incomplete (best effort: a failure is a warning, the heal itself succeeded).
fn report_killed_run(run_dir: &crate::store::RunDir) {
    // A killed controller's mapped history ends in zero padding (`mapped`): trim it, so the file
    // is plain JSONL for every other tool too.
    if let Err(e) = crate::mapped::trim_zero_tail(&run_dir.history_path()) {
        eprintln!(
            "warning: {}: could not trim its zero padding: {e}",
            run_dir.history_path().display()
        );
    }
    match write_run_results(run_dir, 60.0) {
        Ok(c) => println!(
            "run {} checked: {} ({}); run page {}",
            run_dir.path.display(),
            c.verdict,
            c.reason.as_deref().unwrap_or(&c.completion.reason),
            run_dir.path.join("index.html").display()
        ),
        Err(e) => eprintln!("warning: {}: not checked: {e}", run_dir.path.display()),
    }
}

/// `shakedown doctor`: 0 when every required check passed on every node, 4 otherwise, 3 on bad
/// flags.
pub fn doctor(args: crate::cli::DoctorArgs) -> i32 {
    let cluster = match args.cluster.to_cluster() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let db = match args.db.system() {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let mut ssh = cluster.ssh;
    // A preflight should name an unreachable node quickly, not retry it.
    ssh.retries = 0;
    ssh.connect_timeout_ms = ssh.connect_timeout_ms.min(3_000);
    let nodes =
        match crate::runner::resolve_cluster(&cluster.nodes, &mut ssh, &cluster.sandbox, false) {
            Ok(n) => n,
            Err(e) => {
                eprintln!("error: {e}");
                return run_error_code(&e);
            }
        };
    let report = crate::doctor::check_all(&nodes, &ssh, &db, cluster.nodes.is_none());
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
        );
    } else {
        print!("{}", crate::doctor::render_table(&report));
    }
    if report.ok { 0 } else { EXIT_RUNTIME }
}

/// `shakedown bench`: controller overhead against a bare client loop on the sandbox etcd.
pub fn bench(args: BenchArgs) -> i32 {
    let cfg = match args.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    match runtime().block_on(crate::bench::overhead(
        cfg,
        args.rounds,
        args.max_steal,
        args.out.clone(),
    )) {
        Ok(report) => {
            println!("{report}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_RUNTIME
        }
    }
}

/// `shakedown serve`: serve the reports directory on 127.0.0.1 until interrupted. Refreshes
/// `reports/index.html` first (best effort) and prints the URL.
pub fn serve(args: crate::cli::ServeArgs) -> i32 {
    if !args.reports.is_dir() {
        eprintln!("error: {}: not a directory", args.reports.display());
        return EXIT_USAGE;
    }
    if let Err(e) = crate::report::page::write_reports_index(&args.reports) {
        eprintln!("warning: reports index not refreshed: {e}");
    }
    let rt = runtime();
    let result = rt.block_on(async {
        let (listener, addr) = crate::report::serve::bind(args.port).await?;
        println!("serving {} on http://{addr}/", args.reports.display());
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        crate::report::serve::serve(listener, &args.reports).await
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_RUNTIME
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::CompletionRecord;

    #[test]
    fn a_cleanup_failure_makes_a_valid_run_exit_4_and_keeps_other_codes() {
        let clean = CompletionRecord::completed(60.0, 60.0);
        let dirty = clean
            .clone()
            .with_cleanup_failures(vec!["n3: removing iptables chain: busy".into()]);
        assert_eq!(run_exit_code(Verdict::Valid, &clean), 0);
        assert_eq!(run_exit_code(Verdict::Valid, &dirty), EXIT_RUNTIME);
        assert_eq!(run_exit_code(Verdict::Invalid, &dirty), 1);
        assert_eq!(run_exit_code(Verdict::Unknown, &dirty), 2);
    }
}
