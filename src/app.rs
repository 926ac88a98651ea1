//! Command implementations behind `main`: run, check, sandbox, bench. Each returns the process
//! exit code (0 valid, 1 invalid, 2 unknown, 3 usage/config error, 4 runtime error) and prints
//! errors as one line naming the cause.

use crate::checker::linear::{LinearConfig, LinearizableChecker};
use crate::checker::{CheckResult, Checker, Verdict};
use crate::cli::{BenchArgs, CheckArgs, EXIT_RUNTIME, EXIT_USAGE, RunArgs};
use crate::history::History;
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
    let outcome = runtime().block_on(crate::runner::run(cfg, progress));
    match outcome {
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
        Ok(o) => {
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
                println!("verdict: {}", o.verdict);
                if o.verdict != Verdict::Valid {
                    println!("rerun: {rerun}");
                }
            }
            o.verdict.exit_code()
        }
    }
}

/// Input formats `check` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    Edn,
}

fn detect_format(text: &str) -> Format {
    let first = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with(';'))
        .unwrap_or("");
    if first.starts_with("{\"") || first.starts_with("{ \"") {
        Format::Jsonl
    } else {
        Format::Edn
    }
}

/// Load a history for checking; `format` is auto, jsonl or edn.
pub fn load_history(path: &Path, format: &str) -> Result<(History, bool), String> {
    let file = crate::store::resolve_history(path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let fmt = match format {
        "auto" => detect_format(&text),
        "jsonl" | "json" => Format::Jsonl,
        "edn" => Format::Edn,
        other => return Err(format!("--format {other:?}: expected auto, jsonl or edn")),
    };
    let name = file.display().to_string();
    match fmt {
        Format::Jsonl => History::read_jsonl(text.as_bytes(), &name)
            .map(|h| (h, false))
            .map_err(|e| e.to_string()),
        Format::Edn => {
            // Independent-key tuples are detected by trying the plain form first.
            crate::edn::read_history(&text, &name, crate::edn::EdnOptions::default())
                .map(|h| (h, true))
        }
    }
}

fn linear<M: Model + 'static>(m: M, cfg: LinearConfig, history: &History) -> (CheckResult, String) {
    let checker = LinearizableChecker {
        model: m,
        config: cfg,
    };
    let r = checker.check_linear(history);
    let explain = r.explain();
    let mut result = checker.check(history);
    if let serde_json::Value::Object(map) = &mut result.details {
        map.insert("explanation".into(), explain.clone().into());
    }
    (result, explain)
}

/// Check a history with the named model.
pub fn check_with_model(
    model_name: &str,
    history: &History,
    from_edn: bool,
    time_limit: Duration,
) -> Result<(CheckResult, String), String> {
    let cfg = LinearConfig {
        time_limit: Some(time_limit),
        ..LinearConfig::default()
    };
    let reg = if from_edn {
        model::RegisterConfig::knossos()
    } else {
        model::RegisterConfig::etcd()
    };
    Ok(match model_name {
        "register" => linear(model::RegisterModel::register(reg), cfg, history),
        "cas-register" => linear(model::RegisterModel::cas_register(reg), cfg, history),
        "multi-register" => linear(model::MultiRegisterModel { initial: 0 }, cfg, history),
        "kv" => linear(model::KvModel, cfg, history),
        "set" => linear(model::SetModel, cfg, history),
        "queue" => linear(model::QueueModel, cfg, history),
        "mutex" => linear(model::MutexModel, cfg, history),
        "counter" => linear(model::CounterModel, cfg, history),
        other => {
            return Err(format!(
                "--model {other:?}: expected register, cas-register, multi-register, kv, set, queue, mutex or counter"
            ));
        }
    })
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
    let (history, from_edn) = match load_history(&args.path, &args.format) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    for w in &history.warnings {
        eprintln!("warning: {w}");
    }
    let (result, explain) = match check_with_model(
        &args.model,
        &history,
        from_edn,
        Duration::from_secs_f64(args.time_limit),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&result).unwrap_or_default());
    } else {
        println!("{}", explain.trim_end());
        println!("verdict: {}", result.verdict);
    }
    result.verdict.exit_code()
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
