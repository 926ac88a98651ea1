//! Command implementations behind `main`: run, check, sandbox, bench. Each returns the process
//! exit code (0 valid, 1 invalid, 2 unknown, 3 usage/config error, 4 runtime error) and prints
//! errors as one line naming the cause.

use crate::checker::linear::{LinearConfig, LinearResult, WitnessMode, check_history};
use crate::checker::witness_html::render_witness_html;
use crate::checker::{CheckResult, Verdict};
use crate::cli::{BenchArgs, CheckArgs, EXIT_RUNTIME, EXIT_USAGE, RunArgs};
use crate::history::History;
use crate::import::InputFormat;
use crate::model::{self, Model};
use crate::runner::RunError;
use std::path::Path;
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
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
    let progress = (!quiet).then(|| {
        let pb = indicatif::ProgressBar::new((cfg.time_limit_s * 1000.0) as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}")
                .expect("static template")
                .progress_chars("=> "),
        );
        pb
    });
    let rerun = cfg.rerun_command();
    let (junit, suite) = (args_junit, cfg.name.clone());
    let outcome = runtime().block_on(crate::runner::run(cfg, progress));
    match outcome {
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
        Ok(o) => {
            if let Some(path) = &junit {
                let xml =
                    crate::report::junit::junit_xml(&suite, &o.results, o.main_phase.as_secs_f64());
                if let Err(e) = std::fs::write(path, xml) {
                    eprintln!("error: {}: {e}", path.display());
                    return EXIT_RUNTIME;
                }
            }
            let history = History::read_file(&o.run_dir.history_path()).unwrap_or_default();
            let summary = crate::summary::summarize(&history);
            if json {
                let v = serde_json::json!({
                    "run_dir": o.run_dir.path,
                    "valid": o.verdict,
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
                println!(
                    "{} client ops in {:.1} s ({:.0} ops/s), {} history events",
                    client_ops,
                    secs,
                    client_ops as f64 / secs.max(1e-9),
                    o.events
                );
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
                if o.interrupted {
                    println!(
                        "interrupted after {:.1} s of workload; checked what was recorded",
                        secs
                    );
                }
                println!("verdict: {}", o.verdict);
                if o.verdict != Verdict::Valid {
                    println!("rerun: {rerun}");
                }
            }
            o.verdict.exit_code()
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
    let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let name = file.display().to_string();
    let text = String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        format!("{name}:{line}: expected UTF-8 text, found invalid bytes")
    })?;
    crate::import::read_text(&text, &name, fmt, independent)
}

/// The model `--model auto` means for an input format: `kv` for Porcupine kv lines, else
/// `cas-register`.
pub fn default_model(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Porcupine => "kv",
        _ => "cas-register",
    }
}

/// The model `--model auto` means for a loaded history: `list-append` when a JSONL history has
/// client `append` ops (the list-append workload), else [`default_model`] of its format.
pub fn default_model_for(format: InputFormat, history: &History) -> &'static str {
    if format == InputFormat::Jsonl && history.ops.iter().any(|o| o.is_client() && o.f == "append")
    {
        "list-append"
    } else {
        default_model(format)
    }
}

fn run_model<M: Model>(m: M, cfg: &LinearConfig, history: &History) -> LinearResult {
    check_history(&m, history, cfg)
}

/// Run the linearizability checker with the named model. `from_edn` selects Knossos register
/// semantics (initial value 0, nil reads unknown) instead of etcd's.
pub fn check_linear_with_model(
    model_name: &str,
    history: &History,
    from_edn: bool,
    time_limit: Duration,
    witness: WitnessMode,
) -> Result<LinearResult, String> {
    let cfg = LinearConfig {
        time_limit: Some(time_limit),
        witness,
        ..LinearConfig::default()
    };
    let reg = if from_edn {
        model::RegisterConfig::knossos()
    } else {
        model::RegisterConfig::etcd()
    };
    Ok(match model_name {
        "register" => run_model(model::RegisterModel::register(reg), &cfg, history),
        "cas-register" => run_model(model::RegisterModel::cas_register(reg), &cfg, history),
        "multi-register" => run_model(model::MultiRegisterModel { initial: 0 }, &cfg, history),
        "kv" => run_model(model::KvModel, &cfg, history),
        "list-append" => run_model(model::ListAppendModel, &cfg, history),
        "set" => run_model(model::SetModel, &cfg, history),
        "queue" => run_model(model::QueueModel, &cfg, history),
        "mutex" => run_model(model::MutexModel, &cfg, history),
        "counter" => run_model(model::CounterModel, &cfg, history),
        other => {
            return Err(format!(
                "--model {other:?}: expected auto, register, cas-register, multi-register, kv, list-append, set, queue, mutex or counter"
            ));
        }
    })
}

/// The generic checker result for a linearizability result, with its explanation in
/// `details.explanation`.
pub fn linear_check_result(r: &LinearResult) -> CheckResult {
    let mut details = serde_json::to_value(r).unwrap_or_else(
        |e| serde_json::json!({ "error": format!("could not serialize result: {e}") }),
    );
    if let serde_json::Value::Object(map) = &mut details {
        map.insert("explanation".into(), r.explain().into());
    }
    CheckResult {
        checker: "linearizable".to_string(),
        verdict: r.verdict,
        summary: r.summary(),
        details,
    }
}

/// Check a history with the named model; returns the generic result and the text explanation.
pub fn check_with_model(
    model_name: &str,
    history: &History,
    from_edn: bool,
    time_limit: Duration,
) -> Result<(CheckResult, String), String> {
    let r = check_linear_with_model(
        model_name,
        history,
        from_edn,
        time_limit,
        WitnessMode::default(),
    )?;
    Ok((linear_check_result(&r), r.explain()))
}

fn write_output(path: &Path, what: &str, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents)
        .map_err(|e| format!("could not write the {what} to {}: {e}", path.display()))
}

/// `shakedown check`.
pub fn check(args: CheckArgs) -> i32 {
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        eprintln!(
            "error: --time-limit {}: expected a positive number of seconds",
            args.time_limit
        );
        return EXIT_USAGE;
    }
    let independent = match (args.independent, args.no_independent) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let loaded = match load_history(&args.path, &args.format, independent) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let history = &loaded.history;
    for w in &history.warnings {
        eprintln!("warning: {w}");
    }
    let model_name = match args.model.as_str() {
        "auto" => default_model_for(loaded.format, history),
        m => m,
    };
    if let Some(out) = &args.export_edn
        && let Err(e) = write_output(out, "EDN export", &crate::edn::write_edn(history))
    {
        eprintln!("error: {e}");
        return EXIT_RUNTIME;
    }
    let version_source = match args.version_source.as_str() {
        "auto" => None,
        s => match s.parse::<crate::checker::session::VersionSource>() {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("error: --version-source {s:?}: {e}");
                return EXIT_USAGE;
            }
        },
    };
    let from_edn = loaded.format != InputFormat::Jsonl;
    let result = match check_linear_with_model(
        model_name,
        history,
        from_edn,
        Duration::from_secs_f64(args.time_limit),
        args.witness,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(out) = &args.html {
        let page = render_witness_html(&result, history);
        if let Err(e) = write_output(out, "HTML page", &page) {
            eprintln!("error: {e}");
            return EXIT_RUNTIME;
        }
    }
    let session = args.session.then(|| {
        use crate::checker::Checker;
        crate::checker::session::SessionChecker::new(crate::checker::session::SessionConfig {
            source: version_source,
            ..Default::default()
        })
        .check(history)
    });
    let verdict = match &session {
        Some(s) => result.verdict.merge(s.verdict),
        None => result.verdict,
    };
    if args.json {
        let generic = linear_check_result(&result);
        let out = match &session {
            // Both checkers: the same shape as a run's results.json.
            Some(s) => crate::runner::results_json(verdict, &[generic, s.clone()]),
            None => serde_json::to_value(&generic).unwrap_or_default(),
        };
        println!("{}", serde_json::to_string(&out).unwrap_or_default());
    } else {
        println!(
            "{} history, {} events{}",
            loaded.format.name(),
            history.ops.len(),
            if loaded.independent {
                ", independent keys"
            } else {
                ""
            }
        );
        println!("{}", result.explain().trim_end());
        if let Some(out) = &args.html {
            println!("html: {}", out.display());
        }
        if let Some(s) = &session {
            println!("session: {} — {}", s.verdict, s.summary);
            for w in session_witnesses(&s.details, 5) {
                println!("  {w}");
            }
        }
        println!("verdict: {verdict}");
    }
    if let Some(reason) = &result.reason {
        // The history could not be interpreted for this model at all: malformed input.
        eprintln!("error: {}: {reason}", args.path.display());
        return EXIT_USAGE;
    }
    verdict.exit_code()
}

/// Up to `per_guarantee` witness texts per violated guarantee from a session result's details
/// (`guarantees: [{guarantee, witnesses: [{witness, ..}]}]`).
fn session_witnesses(details: &serde_json::Value, per_guarantee: usize) -> Vec<String> {
    let mut out = Vec::new();
    for g in details["guarantees"].as_array().into_iter().flatten() {
        let name = g["guarantee"].as_str().unwrap_or("?");
        for w in g["witnesses"]
            .as_array()
            .into_iter()
            .flatten()
            .take(per_guarantee)
        {
            if let Some(text) = w["witness"].as_str() {
                out.push(format!("{name}: {text}"));
            }
        }
    }
    out
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
                if r.removed.is_empty() {
                    println!("sandbox {}: nothing to remove", cfg.name);
                } else {
                    println!("sandbox {}: removed {}", cfg.name, r.removed.join(", "));
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
    match crate::runner::write_results(&run_dir, args.check_time_limit, WitnessMode::default()) {
        Ok((verdict, _)) => {
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
            verdict.exit_code()
        }
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
    }
}

/// `shakedown heal`.
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
    match runtime().block_on(crate::runner::heal_db(cluster, db, journal)) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
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
    let db = match args.db.system(&args.cluster.etcd_dir) {
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
    let report = crate::doctor::check_all(&nodes, &ssh, &db);
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
    match runtime().block_on(crate::bench::overhead(args)) {
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
