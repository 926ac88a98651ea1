//! `shakedown compare FILE`: runs every selected cell of a matrix spec once per seed, each as
//! its own `shakedown run` process (this binary, `--json --quiet`, in its own process group),
//! one after another on the same cluster (the sandbox is reused), and keeps
//! `<reports>/compare/<time>/` current after every run: `matrix.json` (the record `--resume`
//! continues from), `index.html` (claimed vs observed) and `junit.xml`.
//!
//! Ctrl-C: the running run gets one SIGINT (it heals and records itself as interrupted), the
//! matrix is written with what is done, and the page says how to resume; a second Ctrl-C is
//! passed on too (the run's own abort).
//!
//! Owns the driving, resuming, and files. Does not parse or judge (`compare`), render
//! (`compare::page`) or run a test itself (`shakedown run` does, unchanged).

use crate::cli::{CompareArgs, EXIT_RUNTIME, EXIT_USAGE};
use crate::compare::claim::{Observed, judge};
use crate::compare::outcome::{CellRecord, MatrixRecord, RunRecord};
use crate::compare::spec::{Cell, Matrix, select};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// File names inside a compare directory.
pub const MATRIX_FILE: &str = "matrix.json";
const PAGE_FILE: &str = "index.html";
const JUNIT_FILE: &str = "junit.xml";

/// The words after `shakedown` for one run of `cell` with `seed`. A flag given after `--`
/// replaces the spec's flag of the same name (`-- --time-limit 10` shortens every run).
fn run_words(cell: &Cell, seed: u64, args: &CompareArgs) -> Vec<String> {
    let given: Vec<&str> = args
        .run_args
        .iter()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.split('=').next().unwrap_or(w))
        .collect();
    let kept = Cell {
        flags: cell
            .flags
            .iter()
            .filter(|(k, _)| !given.contains(&k.as_str()))
            .cloned()
            .collect(),
        ..cell.clone()
    };
    let mut w = vec!["run".to_string()];
    w.extend(kept.args());
    w.extend(args.run_args.iter().cloned());
    w.extend([
        "--seed".to_string(),
        seed.to_string(),
        "--reports".to_string(),
        args.reports.display().to_string(),
    ]);
    w
}

/// Check every cell's flags through `run`'s own parser and config validation, before anything
/// runs; an error names the spec and the cell.
fn validate(cells: &[&Cell], seed: u64, args: &CompareArgs, label: &str) -> Result<(), String> {
    use clap::Parser;
    for cell in cells {
        let mut words = vec!["shakedown".to_string()];
        words.extend(run_words(cell, seed, args));
        let why = match crate::cli::Cli::try_parse_from(&words) {
            Err(e) => {
                // clap's first line, plus its "a similar argument exists" tip.
                let text = e.to_string();
                let first = text.lines().next().unwrap_or("").trim();
                let mut why = first.strip_prefix("error: ").unwrap_or(first).to_string();
                if let Some(tip) = text.lines().find_map(|l| l.trim().strip_prefix("tip: ")) {
                    why = format!("{why} ({tip})");
                }
                Some(why)
            }
            Ok(cli) => match cli.command {
                crate::cli::Command::Run(r) => r.into_config().err().map(|e| e.to_string()),
                _ => Some("not a run".to_string()),
            },
        };
        if let Some(why) = why {
            return Err(format!(
                "{label}: cell \"{}\" ({}): {why}",
                cell.name,
                cell.flags_text()
            ));
        }
    }
    Ok(())
}

fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Write `text` to `dir/name` atomically.
fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let dest = dir.join(name);
    crate::store::ensure_writable(&dest).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &dest).map_err(|e| format!("{}: {e}", dest.display()))
}

fn write_all(dir: &Path, m: &MatrixRecord, resume: &str) -> Result<(), String> {
    let json = serde_json::to_string_pretty(m).map_err(|e| format!("matrix.json: {e}"))?;
    write_file(dir, MATRIX_FILE, &json)?;
    let base = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let href = |run_dir: &str| {
        pathdiff::diff_paths(Path::new(run_dir), &base)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| run_dir.to_string())
    };
    write_file(
        dir,
        PAGE_FILE,
        &crate::compare::page::page(m, &href, resume),
    )?;
    write_file(dir, JUNIT_FILE, &crate::compare::page::junit(m))
}

/// The compare directory and its record: a new one, or `--resume`'s (whose cells must still
/// have the flags they ran with).
fn open_record(
    args: &CompareArgs,
    matrix: &Matrix,
    cells: &[&Cell],
    label: &str,
) -> Result<(PathBuf, MatrixRecord), String> {
    if let Some(dir) = &args.resume {
        let path = dir.join(MATRIX_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "--resume {}: cannot read {MATRIX_FILE} ({e}); give the directory an earlier compare printed",
                dir.display()
            )
        })?;
        let mut old: MatrixRecord = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a compare record: {e}", path.display()))?;
        if old.seeds != matrix.seeds {
            return Err(format!(
                "--resume {}: the spec's seeds changed ({:?} then, {:?} now); start a new compare",
                dir.display(),
                old.seeds,
                matrix.seeds
            ));
        }
        let mut cells_now = Vec::new();
        for c in cells {
            match old.cells.iter().position(|o| o.cell.name == c.name) {
                Some(i) => {
                    let mut rec = old.cells.remove(i);
                    if rec.cell != **c {
                        return Err(format!(
                            "--resume {}: cell \"{}\" changed since it ran (then: {}; now: {}); start a new compare",
                            dir.display(),
                            c.name,
                            rec.cell.flags_text(),
                            c.flags_text()
                        ));
                    }
                    rec.runs.retain(RunRecord::is_done);
                    cells_now.push(rec);
                }
                None => cells_now.push(CellRecord::new((*c).clone())),
            }
        }
        // Cells of the earlier compare that this invocation did not select stay in the record.
        cells_now.extend(old.cells.into_iter().map(|mut c| {
            c.runs.retain(RunRecord::is_done);
            c
        }));
        old.cells = cells_now;
        old.spec = label.to_string();
        old.run_args = args.run_args.clone();
        old.title = matrix.title.clone();
        return Ok((dir.clone(), old));
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let dir = args.reports.join("compare").join(stamp);
    crate::store::ensure_writable(&dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let record = MatrixRecord {
        title: matrix.title.clone(),
        spec: label.to_string(),
        seeds: matrix.seeds.clone(),
        cells: cells
            .iter()
            .map(|c| CellRecord::new((*c).clone()))
            .collect(),
        run_args: args.run_args.clone(),
        total_s: 0.0,
        interrupted: false,
        held: 0,
        refuted: 0,
        unknown: 0,
    };
    Ok((dir, record))
}

/// What one run process left: its run directory and results.
struct RunOutput {
    record: RunRecord,
    interrupted: bool,
}

async fn run_one(
    exe: &Path,
    words: &[String],
    cell: &Cell,
    seed: u64,
    ctrl_c: &mut tokio::sync::mpsc::UnboundedReceiver<()>,
) -> RunOutput {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(words)
        .args(["--json", "--quiet"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // Own process group: the terminal's Ctrl-C reaches compare only, which passes it on once.
        .process_group(0);
    let not_run = |error: String| RunRecord {
        seed,
        run_dir: None,
        exit_code: None,
        verdict: crate::checker::Verdict::Unknown,
        completion: "not-run".to_string(),
        duration_s: started.elapsed().as_secs_f64(),
        observed: cell
            .claims
            .iter()
            .map(|c| (*c, Observed::Unknown(error.clone())))
            .collect(),
        error: Some(error),
        version: None,
    };
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunOutput {
                record: not_run(format!("cannot start {}: {e}", exe.display())),
                interrupted: false,
            };
        }
    };
    let pid = child.id();
    let mut interrupted = false;
    let wait = child.wait_with_output();
    tokio::pin!(wait);
    let output = loop {
        tokio::select! {
            out = &mut wait => break out,
            Some(()) = ctrl_c.recv() => {
                interrupted = true;
                if let Some(pid) = pid {
                    // SAFETY: plain kill(2) of the child we started, by PID.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
                }
            }
        }
    };
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            return RunOutput {
                record: not_run(format!("waiting for the run: {e}")),
                interrupted,
            };
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    let error_text = (!errors.is_empty()).then(|| errors.join("; "));
    let summary: Option<serde_json::Value> = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok());
    let run_dir = summary
        .as_ref()
        .and_then(|s| s.get("run_dir"))
        .and_then(|d| d.as_str())
        .map(|d| {
            Path::new(d)
                .canonicalize()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| d.to_string())
        });
    let Some(run_dir) = run_dir else {
        let why = error_text.unwrap_or_else(|| {
            format!(
                "the run exited with {} and printed no result",
                output
                    .status
                    .code()
                    .map(|c| format!("code {c}"))
                    .unwrap_or_else(|| "a signal".to_string())
            )
        });
        let mut r = not_run(why);
        r.exit_code = output.status.code();
        return RunOutput {
            record: r,
            interrupted,
        };
    };
    let results = crate::report::read_results(Path::new(&run_dir))
        .ok()
        .flatten();
    let (observed, completion, verdict) = match &results {
        Some(res) => (
            cell.claims.iter().map(|c| (*c, judge(*c, res))).collect(),
            res.get("completion")
                .and_then(|c| c.get("status"))
                .and_then(|s| s.as_str())
                .unwrap_or("unknown")
                .to_string(),
            res.get("valid")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or(crate::checker::Verdict::Unknown),
        ),
        None => {
            let why = error_text
                .clone()
                .unwrap_or_else(|| format!("{run_dir} has no results.json"));
            (
                cell.claims
                    .iter()
                    .map(|c| (*c, Observed::Unknown(why.clone())))
                    .collect(),
                "failed".to_string(),
                crate::checker::Verdict::Unknown,
            )
        }
    };
    let version = crate::store::RunDir::open(Path::new(&run_dir)).read_db_version();
    RunOutput {
        record: RunRecord {
            seed,
            run_dir: Some(run_dir),
            exit_code: output.status.code(),
            verdict,
            completion,
            duration_s: started.elapsed().as_secs_f64(),
            observed,
            error: error_text,
            version,
        },
        interrupted,
    }
}

/// `--dry-run`: the `shakedown run` command line of every run, cell by cell, seed by seed.
fn list_runs(cells: &[&Cell], seeds: &[u64], args: &CompareArgs) -> i32 {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    for cell in cells {
        for seed in seeds {
            let line = shell_words(&run_words(cell, *seed, args));
            // A closed pipe (`| head`) just ends the listing.
            if writeln!(out, "shakedown {line}").is_err() {
                return 0;
            }
        }
    }
    0
}

/// The command line that resumes this comparison in `dir` (the same spec, cells, seeds and run
/// flags).
fn resume_command(args: &CompareArgs, dir: &Path) -> String {
    let mut w = vec![
        "shakedown".to_string(),
        "compare".to_string(),
        args.spec.clone(),
        "--reports".to_string(),
        args.reports.display().to_string(),
        "--resume".to_string(),
        dir.display().to_string(),
    ];
    if let Some(c) = &args.cells {
        w.extend(["--cells".to_string(), c.clone()]);
    }
    if let Some(seeds) = &args.seeds {
        w.extend(["--seeds".to_string(), seeds.clone()]);
    }
    if !args.run_args.is_empty() {
        w.push("--".to_string());
        w.extend(args.run_args.iter().cloned());
    }
    shell_words(&w)
}

/// The runs still to do: (cell index in `record`, seed) of the selected `cells` for every seed
/// the record has no run of.
fn runs_to_do(record: &MatrixRecord, cells: &[&Cell], seeds: &[u64]) -> Vec<(usize, u64)> {
    record
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| cells.iter().any(|s| s.name == c.cell.name))
        .flat_map(|(i, c)| {
            seeds
                .iter()
                .filter(|s| !c.runs.iter().any(|r| r.seed == **s))
                .map(move |s| (i, *s))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every run of `todo` in turn, each recorded and the record written (`write_all`) as it ends;
/// a Ctrl-C ends the run in flight as interrupted and stops there. On `rt`.
fn run_all(
    rt: &tokio::runtime::Runtime,
    exe: &Path,
    todo: Vec<(usize, u64)>,
    record: &mut MatrixRecord,
    dir: &Path,
    resume: &str,
    args: &CompareArgs,
) -> Result<(), String> {
    let total = todo.len();
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        for (n, (ci, seed)) in todo.into_iter().enumerate() {
            let cell = record.cells[ci].cell.clone();
            let words = run_words(&cell, seed, args);
            eprint!("[{}/{total}] {} · seed {seed} … ", n + 1, cell.name);
            let out = run_one(exe, &words, &cell, seed, &mut rx).await;
            let r = &out.record;
            let judged: Vec<String> = r
                .observed
                .iter()
                .map(|(c, o)| format!("{c} {}", o.status()))
                .collect();
            eprintln!(
                "{} ({}, {:.1} s): {}",
                serde_json::to_value(r.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                r.completion,
                r.duration_s,
                judged.join(", ")
            );
            if let Some(e) = &r.error {
                eprintln!("    {e}");
            }
            record.total_s += r.duration_s;
            record.cells[ci].runs.push(out.record);
            record.interrupted = out.interrupted;
            record.refold();
            write_all(dir, record, resume)?;
            if out.interrupted {
                break;
            }
        }
        Ok(())
    })
}

/// `shakedown compare`.
pub fn compare(args: CompareArgs) -> i32 {
    let (label, mut matrix) = match crate::compare::spec::load(&args.spec) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(seeds) = &args.seeds {
        match crate::compare::spec::parse_seeds(seeds) {
            Ok(s) => matrix.seeds = s,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        }
    }
    let cells = match select(&matrix.cells, args.cells.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {label}: {e}");
            return EXIT_USAGE;
        }
    };
    if let Err(e) = validate(&cells, matrix.seeds[0], &args, &label) {
        eprintln!("error: {e}");
        return EXIT_USAGE;
    }
    if args.dry_run {
        return list_runs(&cells, &matrix.seeds, &args);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find this program's own path to start runs: {e}");
            return EXIT_RUNTIME;
        }
    };
    let (dir, mut record) = match open_record(&args, &matrix, &cells, &label) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return if args.resume.is_some() {
                EXIT_USAGE
            } else {
                EXIT_RUNTIME
            };
        }
    };
    let resume = resume_command(&args, &dir);
    record.interrupted = false;
    record.refold();
    if let Err(e) = write_all(&dir, &record, &resume) {
        eprintln!("error: {e}");
        return EXIT_RUNTIME;
    }
    let todo = runs_to_do(&record, &cells, &matrix.seeds);
    eprintln!(
        "shakedown compare: {} · {} cells × {} seeds · {} runs to do{} · {}",
        record.title,
        cells.len(),
        matrix.seeds.len(),
        todo.len(),
        if args.resume.is_some() {
            " (resumed)"
        } else {
            ""
        },
        dir.display()
    );
    let rt = super::runtime();
    let outcome = run_all(&rt, &exe, todo, &mut record, &dir, &resume, &args);
    if let Err(e) = outcome {
        eprintln!("error: {e}");
        return EXIT_RUNTIME;
    }
    for c in &record.cells {
        for o in &c.outcomes {
            println!("{} · {}: {}", c.cell.name, o.claim, o.text);
        }
    }
    println!("{}", record.totals_text());
    println!("compare page: {}", dir.join(PAGE_FILE).display());
    if record.interrupted {
        println!("interrupted; continue with: {resume}");
    }
    record.exit_code()
}
