//! `shakedown check`: check histories offline — one file (detailed output), or several files and
//! directories of run directories and history files (one line per file), in one process.
//!
//! Owns reading the `check` arguments into model options (semantics preset per input shape,
//! individual overrides), the "never a verdict from nothing" rule (no client ops is unknown, an
//! empty file saying "empty history"; a history whose client ops all failed or only read unknown
//! values was looked at in full and keeps its verdict, as Knossos gives it), the warning about nemesis ops that carry client functions, the
//! text and JSON output, and the exit code over several files. A set history (`--model set`, or
//! `auto` on add/read ops with list reads) gets the set checker's result and witnesses instead of
//! a linearizability search (`checker::compose`); `--model set-full` Jepsen's set-full checker
//! (`--linearizable` is refused for any other model). Does not own reading formats (`import`), the
//! models (`model`) or the search (`checker::linear`).
//!
//! Exit code over several files: invalid (1) if any file is invalid; else 3 if any file could not
//! be read or interpreted (an unreadable file must not hide behind a green exit); else unknown (2)
//! if any file is unknown; else valid (0).

use super::{LoadedHistory, load_history};

mod stream;
use crate::checker::compose::{self, Plan, linear_check_result};
use crate::checker::linear::LinearResult;
use crate::checker::txn::parse::TxnKind;
use crate::checker::{CheckResult, Verdict};
use crate::cli::{CheckArgs, EXIT_RUNTIME, EXIT_USAGE, FailedCasArg, NilReadArg};
use crate::import::{InputFormat, default_model_for};
use crate::model::ModelOptions;
use crate::report::witness_html::render_witness_html;
use crate::runner::WhatRan;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How deep `check DIR` looks for run directories and history files.
const MAX_DIR_DEPTH: usize = 4;

/// The arguments every file is checked with.
struct Settings {
    independent: Option<bool>,
    version_source: Option<crate::checker::session::VersionSource>,
    initial: Option<Option<Value>>,
    time_limit: Duration,
    /// The linearizability check's memory budget: `--memory`, or the machine's default.
    memory_bytes: usize,
    txn_assume: crate::checker::txn::register::Assume,
    txn_ask: crate::checker::txn::judge::Ask,
}

/// The main checker's result: linearizability, or the set checker for the `set` model
/// (`checker::compose::uses_set_checker`) and the set-full checker for `set-full`.
enum Primary {
    Linear(LinearResult),
    Set(CheckResult),
    Txn(Box<crate::checker::txn::TxnResult>),
    /// The log checker's result (`--model log`).
    Log(CheckResult),
}

impl Primary {
    fn verdict(&self) -> Verdict {
        match self {
            Primary::Linear(r) => r.verdict,
            Primary::Set(r) | Primary::Log(r) => r.verdict,
            Primary::Txn(r) => r.verdict,
        }
    }

    fn summary(&self) -> String {
        match self {
            Primary::Linear(r) => r.summary(),
            Primary::Set(r) | Primary::Log(r) => format!("{}: {}", r.verdict, r.summary),
            Primary::Txn(r) => format!("{}: {}", r.verdict, r.summary()),
        }
    }

    /// The text `check FILE` prints: the linearizability explanation, or the set summary with
    /// the first witnesses of each anomaly class.
    fn explain(&self) -> String {
        match self {
            Primary::Linear(r) => r.explain().trim_end().to_string(),
            Primary::Set(r) => {
                let mut lines = vec![format!("{}: {} — {}", r.checker, r.verdict, r.summary)];
                let witnesses = if r.checker == crate::checker::set_full::NAME {
                    crate::checker::set_full::witness_lines(&r.details, 5)
                } else {
                    set_witnesses(&r.details, 5)
                };
                lines.extend(witnesses.into_iter().map(|w| format!("  {w}")));
                lines.join("\n")
            }
            Primary::Txn(r) => r.explain(),
            Primary::Log(r) => {
                let mut lines = vec![format!("{}: {} — {}", r.checker, r.verdict, r.summary)];
                lines.extend(
                    crate::checker::log::witness_lines(&r.details, 5)
                        .into_iter()
                        .map(|w| format!("  {w}")),
                );
                lines.join("\n")
            }
        }
    }
}

/// What checking one file gave.
struct FileCheck {
    loaded: LoadedHistory,
    model: String,
    options: ModelOptions,
    result: Primary,
    session: Option<CheckResult>,
    verdict: Verdict,
    /// Why the verdict is unknown although no anomaly was found: there was nothing to check, or
    /// the file ends cut short by a crash (ops after it may be missing; never valid).
    nothing_checked: Option<String>,
    /// Nemesis ops carrying client functions, per function (ignored, warned about).
    nemesis_client_ops: BTreeMap<String, usize>,
    /// Ops (events) in the history (`loaded.history` holds none when it was streamed).
    events: usize,
    /// How the check went where the user may wonder (the stream held many ops, read the file
    /// twice, or could not be used), printed as notes.
    notes: Vec<String>,
}

/// `--initial`: `nil` (absent), a JSON scalar (`0`, `"x"`, `true`), a keyword (`:x` → `"x"`), or
/// bare text. Arrays and objects are refused.
fn parse_initial(s: &str) -> Result<Option<Value>, String> {
    match s.trim() {
        "nil" | "null" => Ok(None),
        t => match serde_json::from_str::<Value>(t) {
            Ok(Value::Null) => Ok(None),
            Ok(Value::Array(_) | Value::Object(_)) => Err(format!(
                "--initial {t}: expected nil or a number, string or boolean"
            )),
            Ok(v) => Ok(Some(v)),
            Err(_) => Ok(Some(Value::String(
                t.strip_prefix(':').unwrap_or(t).to_string(),
            ))),
        },
    }
}

/// The model options for one input: its shape's default preset unless `--semantics` names one,
/// then the individual overrides; kv keys start as `""` for Porcupine input.
fn model_options(
    args: &CheckArgs,
    settings: &Settings,
    loaded: &LoadedHistory,
    ran: &WhatRan,
) -> ModelOptions {
    let preset = args
        .semantics
        .map(Into::into)
        .or(ran.semantics)
        .unwrap_or(loaded.semantics);
    let mut o = ModelOptions::preset(preset);
    if let Some(initial) = &settings.initial {
        o.register.initial = initial.clone();
    }
    if let Some(n) = args.nil_read {
        o.register.nil_read_is_unknown = n == NilReadArg::Unknown;
    }
    if let Some(f) = args.failed_cas {
        o.register.cas_mismatch_is_evidence = f == FailedCasArg::Evidence;
    }
    o.kv.missing_is_empty = loaded.format == InputFormat::Porcupine;
    o
}

/// What the run that recorded `path` says ran (its model, semantics and version source), when
/// `path` is a run directory or its history file; nothing for any other file. A run directory
/// whose record cannot be read is an error naming its test.json.
pub(crate) fn what_ran(path: &Path) -> Result<WhatRan, String> {
    let file = crate::store::resolve_history(path).map_err(|e| e.to_string())?;
    let Some(dir) = file
        .parent()
        .filter(|_| file.file_name() == Some(crate::store::HISTORY_FILE.as_ref()))
        .filter(|d| d.join(crate::store::TEST_FILE).is_file())
    else {
        return Ok(WhatRan::default());
    };
    let run = crate::store::RunDir::open(dir);
    let record = run.read_check_record()?;
    WhatRan::read(&run, &record).map_err(|e| e.to_string())
}

/// Load and check one history. `Err` is an input error (unreadable, malformed, ill-formed, or not
/// interpretable by the model), with the file named.
fn check_file(path: &Path, args: &CheckArgs, settings: &Settings) -> Result<FileCheck, String> {
    let mut notes = Vec::new();
    match stream::check(path, args, settings)? {
        stream::Tried::Streamed(fc) => return Ok(*fc),
        stream::Tried::Whole(why) => notes.extend(why),
    }
    let mut fc = check_whole(path, args, settings)?;
    fc.notes = notes;
    Ok(fc)
}

/// Load `path` whole and check it.
fn check_whole(path: &Path, args: &CheckArgs, settings: &Settings) -> Result<FileCheck, String> {
    let loaded = load_history(path, &args.format, settings.independent)?;
    let history = &loaded.history;
    let ran = what_ran(path)?;
    let detected = default_model_for(loaded.format, history);
    let model = match (args.model.as_str(), TxnKind::parse(&args.model)) {
        ("auto", _) => ran.model.as_deref().unwrap_or(detected),
        // elle-cli's spelling: `--model list-append` / `rw-register` on a transaction history
        // means the transactional checker (a list-append history of single ops keeps the
        // linearizability model of that name) — if the history holds that kind.
        (_, Some(asked))
            if detected == crate::checker::txn::NAME
                || crate::checker::txn::parse::is_txn_history(history) =>
        {
            if let Some(why) = crate::checker::txn::parse::kind_mismatch(history, asked) {
                return Err(format!("{}: {why}", path.display()));
            }
            crate::checker::txn::NAME
        }
        (m, _) => m,
    }
    .to_string();
    if args.linearizable && model != crate::checker::set_full::NAME {
        return Err(format!(
            "{}: --linearizable is for --model set-full (this history is checked with model {model})",
            path.display()
        ));
    }
    let options = model_options(args, settings, &loaded, &ran);
    let plan = plan_for(args, settings, &model, &options, &ran);
    let composed =
        compose::check(history, &plan).map_err(|e| format!("{}: {e}", path.display()))?;
    let result = match (composed.linear, composed.set, composed.txn, composed.log) {
        (_, _, _, Some(log)) => Primary::Log(log),
        (Some(l), _, _, None) => Primary::Linear(l),
        (None, Some(s), _, None) => Primary::Set(s),
        (None, None, Some(t), None) => Primary::Txn(Box::new(t)),
        (None, None, None, None) if !composed.lock.is_empty() => {
            Primary::Set(crate::checker::lock::merged(composed.lock))
        }
        (None, None, None, None) => {
            return Err(format!("{}: no checker for model {model}", path.display()));
        }
    };
    // The history could not be interpreted for this model at all: malformed input.
    let unreadable = match &result {
        Primary::Linear(l) => l.reason.clone(),
        Primary::Set(s) | Primary::Log(s) => s.details["error"].as_str().map(str::to_string),
        Primary::Txn(_) => None,
    };
    if let Some(reason) = unreadable {
        return Err(format!("{}: {reason}", path.display()));
    }
    let session = composed.session;
    let facts = Facts {
        events: history.ops.len(),
        clients: history.ops.iter().filter(|o| o.is_client()).count(),
        nemesis_client_ops: crate::import::nemesis_client_ops(history),
    };
    Ok(judged(loaded, model, options, result, session, facts))
}

/// The plan `check` checks one history with.
fn plan_for(
    args: &CheckArgs,
    settings: &Settings,
    model: &str,
    options: &ModelOptions,
    ran: &WhatRan,
) -> Plan {
    Plan {
        model: model.to_string(),
        options: options.clone(),
        session: args
            .session
            .then(|| crate::checker::session::SessionConfig {
                source: settings.version_source.or(ran.version_source),
                ..Default::default()
            }),
        time_limit: settings.time_limit,
        witness: args.witness,
        all_keys: args.all_keys,
        memory_bytes: Some(settings.memory_bytes),
        txn_assume: settings.txn_assume,
        txn_ask: settings.txn_ask.clone(),
        set_full: crate::checker::set_full::SetFullConfig {
            linearizable: args.linearizable,
        },
    }
}

/// What the verdict rules read of a history besides the checkers' results.
struct Facts {
    events: usize,
    clients: usize,
    nemesis_client_ops: BTreeMap<String, usize>,
}

/// The file's verdict from its checkers' results: the "never a verdict from nothing" rule, the
/// session verdict merged, and a history cut short never valid.
fn judged(
    loaded: LoadedHistory,
    model: String,
    options: ModelOptions,
    result: Primary,
    session: Option<CheckResult>,
    facts: Facts,
) -> FileCheck {
    let history = &loaded.history;
    let nothing_checked = if facts.events == 0 {
        Some("empty history: the file holds no ops, so there is nothing to check".to_string())
    } else if facts.clients == 0 {
        Some(format!(
            "no client ops in the history ({}, none from a client process): nothing to check",
            count(facts.events, "event", "events")
        ))
    } else {
        None
    };
    let linear = if nothing_checked.is_some() {
        Verdict::Unknown
    } else {
        result.verdict()
    };
    let mut verdict = match &session {
        Some(s) => linear.merge(s.verdict),
        None => linear,
    };
    let mut nothing_checked = nothing_checked;
    if verdict == Verdict::Valid
        && let Some(cut) = &history.cut_short
    {
        verdict = Verdict::Unknown;
        nothing_checked = Some(format!(
            "the history was cut short by a crash, so ops after it may be missing ({cut})"
        ));
    }
    FileCheck {
        nemesis_client_ops: facts.nemesis_client_ops,
        loaded,
        model,
        options,
        result,
        session,
        verdict,
        nothing_checked,
        events: facts.events,
        notes: Vec::new(),
    }
}

impl FileCheck {
    /// The linearizability result as a generic checker result, with the input's format and the
    /// semantics used in its details, and the "nothing checked" verdict applied.
    fn generic(&self) -> CheckResult {
        let mut g = match &self.result {
            Primary::Linear(r) => linear_check_result(r, &self.model, &self.options),
            Primary::Set(r) | Primary::Log(r) => r.clone(),
            Primary::Txn(r) => r.check_result(),
        };
        if let Value::Object(d) = &mut g.details {
            d.insert("format".into(), self.loaded.format.name().into());
            if !self.nemesis_client_ops.is_empty() {
                d.insert("ignored_nemesis_ops".into(), json!(self.nemesis_client_ops));
            }
        }
        if let Some(reason) = &self.nothing_checked {
            g.verdict = Verdict::Unknown;
            g.summary = format!("unknown: {reason}");
            if let Value::Object(d) = &mut g.details {
                d.insert("verdict".into(), json!(Verdict::Unknown));
                d.insert("explanation".into(), g.summary.clone().into());
                d.insert("unknown_reason".into(), reason.clone().into());
            }
        }
        g
    }

    /// The JSON printed for this file: the generic result, or a run's results.json shape when the
    /// session checker ran too.
    fn json(&self) -> Value {
        let generic = self.generic();
        match &self.session {
            Some(s) => crate::runner::results_json(self.verdict, &[generic, s.clone()]),
            None => serde_json::to_value(&generic).unwrap_or_default(),
        }
    }

    /// Warnings for the user: reading problems and ignored nemesis ops.
    fn warnings(&self, path: &Path) -> Vec<String> {
        let mut w = self.loaded.history.warnings.clone();
        if !self.nemesis_client_ops.is_empty() {
            let total: usize = self.nemesis_client_ops.values().sum();
            let per_f: Vec<String> = self
                .nemesis_client_ops
                .iter()
                .map(|(f, n)| format!("{f} ×{n}"))
                .collect();
            w.push(format!(
                "{}: ignored {total} nemesis op(s) that carry client functions ({}): only client processes are checked",
                path.display(),
                per_f.join(", ")
            ));
        }
        w
    }

    /// `8 events`, or `3 events (completions only)` for a history whose invokes were synthesized
    /// (counting the events of the input, not the invokes added).
    fn events(&self) -> String {
        let h = &self.loaded.history;
        if !h.invokes_synthesized {
            return count(self.events, "event", "events");
        }
        let added = h
            .ops
            .iter()
            .filter(|o| o.is_client() && o.op_type == crate::history::OpType::Invoke)
            .count();
        format!(
            "{} (completions only)",
            count(h.ops.len() - added, "event", "events")
        )
    }

    /// `jsonl history, 8 events; model cas-register; semantics etcd (…)`.
    fn headline(&self) -> String {
        let mut s = format!(
            "{} history, {}{}; model {}",
            self.loaded.format.name(),
            self.events(),
            if self.loaded.independent {
                ", independent keys"
            } else {
                ""
            },
            self.model
        );
        if let Some(sem) = self.options.describe(&self.model) {
            s.push_str(&format!("; semantics {sem}"));
        }
        s
    }
}

/// `1 file`, `2 files`: a count and its noun.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn write_output(path: &Path, what: &str, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents)
        .map_err(|e| format!("could not write the {what} to {}: {e}", path.display()))
}

/// The histories the arguments name: files as given, run directories as their history, other
/// directories expanded. `Err` for a directory holding no history.
fn expand(paths: &[PathBuf]) -> Vec<(PathBuf, Result<(), String>)> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push((p.clone(), Ok(())));
            continue;
        }
        match crate::store::histories_under(p, MAX_DIR_DEPTH) {
            Ok(found) if found.is_empty() => out.push((
                p.clone(),
                Err(format!(
                    "{}: no run directories or history files (.jsonl .json .edn .log .txt) found",
                    p.display()
                )),
            )),
            Ok(found) => out.extend(found.into_iter().map(|f| (f, Ok(())))),
            Err(e) => out.push((p.clone(), Err(e.to_string()))),
        }
    }
    out
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
    if let Err(e) = InputFormat::from_arg(&args.format) {
        eprintln!("error: {e}");
        return EXIT_USAGE;
    }
    if args.model != "auto"
        && !crate::model::registry::is_known(&args.model)
        && TxnKind::parse(&args.model).is_none()
    {
        eprintln!("error: {}", crate::model::registry::unknown(&args.model));
        return EXIT_USAGE;
    }
    let initial = match args.initial.as_deref().map(parse_initial).transpose() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let txn_assume = match crate::checker::txn::register::Assume::parse(&args.txn_assume) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let txn_ask = match crate::checker::txn::judge::Ask::parse(
        &args.consistency_models,
        args.anomalies.as_deref(),
    ) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let settings = Settings {
        independent: match (args.independent, args.no_independent) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        version_source,
        initial,
        time_limit: Duration::from_secs_f64(args.time_limit),
        memory_bytes: args.memory.unwrap_or_else(crate::meminfo::default_budget),
        txn_assume,
        txn_ask,
    };
    let single = args.paths.len() == 1
        && (!args.paths[0].is_dir() || args.paths[0].join(crate::store::HISTORY_FILE).is_file());
    if single {
        return check_single(&args.paths[0], &args, &settings);
    }
    if args.html.is_some() || args.export_edn.is_some() {
        eprintln!("error: --html and --export-edn need exactly one history file or run directory");
        return EXIT_USAGE;
    }
    check_many(&args, &settings)
}

/// One history: detailed output, as `check FILE` always printed.
fn check_single(path: &Path, args: &CheckArgs, settings: &Settings) -> i32 {
    let fc = match check_file(path, args, settings) {
        Ok(fc) => fc,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    for w in fc.warnings(path) {
        eprintln!("warning: {w}");
    }
    for n in &fc.notes {
        eprintln!("note: {n}");
    }
    let history = &fc.loaded.history;
    if let Some(out) = &args.export_edn
        && let Err(e) = write_output(out, "EDN export", &crate::edn::write_edn(history))
    {
        eprintln!("error: {e}");
        return EXIT_RUNTIME;
    }
    if let Some(out) = &args.html {
        let page = match &fc.result {
            Primary::Linear(result) => render_witness_html(result, history),
            Primary::Txn(result) => {
                let r = result.check_result();
                crate::report::page::txn_page(
                    &path.display().to_string(),
                    &r.verdict.to_string(),
                    &r.details,
                )
            }
            Primary::Set(_) | Primary::Log(_) => {
                eprintln!(
                    "error: --html draws a linearizability witness or transaction cycles; model {} has neither (its witnesses are in the output)",
                    fc.model
                );
                return EXIT_USAGE;
            }
        };
        if let Err(e) = write_output(out, "HTML page", &page) {
            eprintln!("error: {e}");
            return EXIT_RUNTIME;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&fc.json()).unwrap_or_default());
    } else {
        println!("{}", fc.headline());
        match &fc.nothing_checked {
            Some(reason) => println!("unknown: {reason}"),
            None => println!("{}", fc.result.explain()),
        }
        if let Some(out) = &args.html {
            println!("html: {}", out.display());
        }
        if let Some(s) = &fc.session {
            println!("session: {} — {}", s.verdict, s.summary);
            for w in session_witnesses(&s.details, 5) {
                println!("  {w}");
            }
        }
        println!("verdict: {}", fc.verdict);
    }
    fc.verdict.exit_code()
}

/// Several histories: one line per file, a count, and the worst exit code (see the module doc).
fn check_many(args: &CheckArgs, settings: &Settings) -> i32 {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut files = Vec::new();
    let mut worst: Option<Verdict> = None;
    let mut errors = 0usize;
    for (path, listed) in expand(&args.paths) {
        let outcome = listed.and_then(|()| check_file(&path, args, settings));
        match outcome {
            Ok(fc) => {
                for w in fc.warnings(&path) {
                    eprintln!("warning: {w}");
                }
                for n in &fc.notes {
                    eprintln!("note: {n}");
                }
                *counts.entry(fc.verdict.to_string()).or_insert(0) += 1;
                worst = Some(worst.map_or(fc.verdict, |w| w.merge(fc.verdict)));
                if args.json {
                    files.push(json!({
                        "path": path.display().to_string(),
                        "verdict": fc.verdict,
                        "result": fc.json(),
                    }));
                } else {
                    let summary = match &fc.nothing_checked {
                        Some(r) => format!("unknown: {r}"),
                        None => fc.result.summary(),
                    };
                    let semantics = match fc.options.to_json(&fc.model)["preset"].as_str() {
                        Some(p) => format!(" ({p} semantics)"),
                        None => String::new(),
                    };
                    println!(
                        "{}: {} — {}, {}{semantics}: {summary}",
                        path.display(),
                        fc.verdict,
                        fc.loaded.format.name(),
                        fc.model
                    );
                }
            }
            Err(e) => {
                errors += 1;
                if args.json {
                    files.push(json!({ "path": path.display().to_string(), "error": e }));
                } else {
                    println!("error: {e}");
                }
            }
        }
    }
    let code = match worst {
        Some(Verdict::Invalid) => Verdict::Invalid.exit_code(),
        _ if errors > 0 => EXIT_USAGE,
        Some(v) => v.exit_code(),
        None => EXIT_USAGE,
    };
    let total = counts.values().sum::<usize>() + errors;
    if args.json {
        let out = json!({
            "verdict": worst,
            "exit_code": code,
            "files": files,
            "counts": {
                "valid": counts.get("valid").copied().unwrap_or(0),
                "invalid": counts.get("invalid").copied().unwrap_or(0),
                "unknown": counts.get("unknown").copied().unwrap_or(0),
                "errors": errors,
            },
        });
        println!("{}", serde_json::to_string(&out).unwrap_or_default());
    } else {
        println!(
            "checked {}: {} valid, {} invalid, {} unknown, {errors} unreadable",
            count(total, "file", "files"),
            counts.get("valid").copied().unwrap_or(0),
            counts.get("invalid").copied().unwrap_or(0),
            counts.get("unknown").copied().unwrap_or(0),
        );
        match worst {
            Some(v) if errors == 0 => println!("verdict: {v}"),
            Some(v) => println!(
                "verdict: {v} ({} unreadable)",
                count(errors, "file", "files")
            ),
            None => println!("verdict: none (no file could be checked)"),
        }
    }
    code
}

/// Up to `per_class` witness texts per anomaly class of a set result's details.
fn set_witnesses(details: &Value, per_class: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (class, key) in [
        ("lost", "lost_elements"),
        ("unexpected", "unexpected_elements"),
        ("failed but present", "failed_but_present_elements"),
    ] {
        let rows = details[key].as_array().into_iter().flatten();
        for w in rows.take(per_class) {
            if let Some(text) = w["witness"].as_str() {
                out.push(format!("{class}: {text}"));
            }
        }
    }
    out
}

/// Up to `per_guarantee` witness texts per violated guarantee from a session result's details
/// (`guarantees: [{guarantee, witnesses: [{witness, ..}]}]`).
fn session_witnesses(details: &Value, per_guarantee: usize) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initial_values_parse_as_json_keywords_or_text() {
        assert_eq!(parse_initial("nil"), Ok(None));
        assert_eq!(parse_initial("null"), Ok(None));
        assert_eq!(parse_initial("0"), Ok(Some(json!(0))));
        assert_eq!(parse_initial("\"x\""), Ok(Some(json!("x"))));
        assert_eq!(parse_initial(":x"), Ok(Some(json!("x"))));
        assert_eq!(parse_initial("hello"), Ok(Some(json!("hello"))));
        assert!(parse_initial("[1]").unwrap_err().contains("--initial [1]"));
    }
}
