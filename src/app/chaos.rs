//! `shakedown chaos`: flags → validated experiment (refusals exit 3), `--dry-run` (print the
//! plan, exit 0), or the experiment itself, its summary and exit code.
//!
//! Exit codes: 0 within SLO (or, without an SLO, ran to its end without an abort), 1 an SLO
//! violated by what the probes saw (also in an experiment that stopped early), 2 undecided
//! (aborted by the probe rail, interrupted, no probe ran), 3 usage or a refused schedule, 4 a
//! runtime error (an unreachable node, a failed setup) or a cleanup that left faults behind.

use crate::cli::{ChaosArgs, EXIT_RUNTIME, EXIT_USAGE};

/// `shakedown chaos`.
pub fn chaos(args: ChaosArgs) -> i32 {
    let (quiet, json, dry_run) = (args.quiet || args.json, args.json, args.dry_run);
    let cfg = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if dry_run {
        print!("{}", crate::chaos::dry_run::plan(&cfg));
        return 0;
    }
    if !quiet {
        eprintln!(
            "shakedown chaos: {} on {} nodes for {} s, seed {}, probe {}",
            cfg.nemesis_name,
            cfg.nodes.len(),
            cfg.settings.duration_s,
            cfg.seed,
            cfg.settings.probe.describe()
        );
    }
    let progress = if quiet {
        crate::progress::Progress::quiet()
    } else {
        crate::progress::Progress::for_stderr(cfg.settings.duration_s)
    };
    let outcome = super::runtime().block_on(crate::chaos::run::run(cfg, progress.clone()));
    progress.finish();
    let o = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return super::run_error_code(&e);
        }
    };
    if let Some(e) = &o.error {
        eprintln!("error: {e}");
    }
    let c = &o.checked;
    let stored = crate::report::read_results(&o.run_dir.path).ok().flatten();
    let code = super::run_exit_code(c.verdict, &c.completion);
    if json {
        let v = serde_json::json!({
            "run_dir": o.run_dir.path,
            "valid": c.verdict,
            "reason": c.reason,
            "completion": c.completion,
            "checkers": c.results,
            "chaos": stored.as_ref().and_then(|r| r.get(crate::chaos::SETTINGS_KEY)),
            "exit_code": code,
        });
        println!("{v}");
        return code;
    }
    for r in &c.results {
        println!("{}: {} — {}", r.checker, r.verdict, r.summary);
    }
    if let Some(line) = stored.as_ref().and_then(crate::summary::recovery_line) {
        println!("{line}");
    }
    println!("phases: {}", crate::progress::timings_text(&o.phases));
    println!("run directory: {}", o.run_dir.path.display());
    println!("run page: {}", o.run_dir.path.join("index.html").display());
    print!("{}", crate::summary::render_completion(&c.completion));
    match &c.reason {
        Some(reason) => println!("verdict: {} ({reason})", c.verdict),
        None => println!("verdict: {}", c.verdict),
    }
    if code == EXIT_RUNTIME {
        println!("cleanup left faults behind: run `shakedown heal` with the same nodes");
    }
    code
}
