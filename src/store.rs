//! Run directory layout: the only module that knows where files of a run live.
//!
//! A run lives in `<reports>/<test>/<timestamp>/` and holds `history.jsonl` (appended as the run
//! happens), `test.json` (configuration, seed, versions, wall-clock start), `results.json` (checker
//! output), `faults.jsonl` (the fault journal), `completion.json` (how the run ended; its absence
//! means the controller was killed) and `logs/<node>/…` (DB logs). Once a run reaches its
//! workload, `<reports>/<test>/latest` and `<reports>/latest` point at it. The report reads run
//! files through here too (JSON objects, the history, plots, the list of runs under a reports
//! directory). Does not know what is inside the files beyond (de)serializing them.
//!
//! Every write goes through a guard: when the environment variable [`PROTECT_ENV`] names a
//! directory (the test suite sets it to the repository's `reports/`), nothing under it is written
//! and the command fails with an error saying so.

use std::path::{Path, PathBuf};

/// File names inside a run directory.
pub const HISTORY_FILE: &str = "history.jsonl";
/// Test configuration and metadata.
pub const TEST_FILE: &str = "test.json";
/// Checker results.
pub const RESULTS_FILE: &str = "results.json";
/// Fault journal: every fault recorded before it is applied, and its undo.
pub const FAULTS_FILE: &str = "faults.jsonl";
/// Linearizability witness page, written when the verdict is invalid.
pub const LINEAR_WITNESS_FILE: &str = "linearizability.html";
/// Live checking's counts while the run goes on (`runner::live`): keys checked, invalid, the
/// first invalid key.
pub const LIVE_FILE: &str = "live.json";
/// Directory of per-node logs.
pub const LOGS_DIR: &str = "logs";
/// How the run ended ([`crate::completion::CompletionRecord`]); written by the controller on every
/// exit path it survives, so its absence means the controller was killed.
pub const COMPLETION_FILE: &str = "completion.json";
/// Environment variable naming a directory nothing may be written under (the test suite points
/// it at the repository's `reports/`, so a test that forgets `--reports` fails instead of
/// touching the user's runs).
pub const PROTECT_ENV: &str = "SHAKEDOWN_PROTECT_DIR";

/// The key of [`CheckRecord`] in test.json.
pub const CHECK_KEY: &str = "check";

/// The key of an external system's client protocol error counts in results.json:
/// `{"total": N, "by_kind": {"timeout": 2, …}}` (written by `systems::external`, shown by the
/// report and the summary).
pub const PROTOCOL_ERRORS_KEY: &str = "client_protocol_errors";

/// results.json's key for what live checking decided (`runner::live::LiveRecord`; the run page shows it).
pub const LIVE_KEY: &str = "live";
/// results.json's key for why a run stopped early (`--stop-on-anomaly`), when it did.
pub const STOPPED_EARLY_KEY: &str = "stopped_early";

/// results.json's key for the requested faults that never took effect (`runner::requested`
/// finds them from test.json's nemesis spec and the history; the run page lists them).
pub const NEVER_RAN_KEY: &str = "never_ran";
/// results.json's key for the membership changes by verb and outcome
/// (`faults::membership::timeline::Timeline::counts`), in runs that made any.
pub const MEMBERSHIP_KEY: &str = "membership";
/// results.json's key for the history's size: `{"client_invokes": N, "end_s": S, "streamed":
/// bool}` (the reports index lists them without reading the history; `streamed`: the end of a
/// long run, checked and reported as the history streamed).
pub const HISTORY_SIZE_KEY: &str = "history";

/// A requested fault that never took effect in the run (results.json's [`NEVER_RAN_KEY`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NeverRan {
    /// The fault as requested: its kind, and what tells it apart from another of the same kind
    /// ("clock (strobe)", "partition (halves)").
    pub fault: String,
    /// Why, in words: "never drawn by the schedule in 60 s (6 faults drawn at random
    /// from 3 kinds)", "drawn 1 time, never took effect: netem not available …".
    pub why: String,
}

/// The requested faults results.json says never took effect (none when it says nothing).
pub fn never_ran_in(results: &serde_json::Value) -> Vec<NeverRan> {
    results
        .get(NEVER_RAN_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The name in results.json `checkers` of a chaos experiment's SLO judgement (`chaos::slo`),
/// whose details the run page shows as its Chaos section.
pub const SLO_CHECKER: &str = "slo";

/// The [`PROTOCOL_ERRORS_KEY`] counts in one line for people: `3 (timeout 2, crash 1)`, or `0`.
pub fn protocol_errors_line(stored: &serde_json::Value) -> String {
    use serde_json::Value;
    let total = stored.get("total").and_then(Value::as_u64).unwrap_or(0);
    let parts: Vec<String> = stored
        .get("by_kind")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, n)| format!("{k} {n}")).collect())
        .unwrap_or_default();
    if parts.is_empty() {
        total.to_string()
    } else {
        format!("{total} ({})", parts.join(", "))
    }
}

/// What a run's history is checked against, recorded in test.json (under [`CHECK_KEY`]) when the
/// run starts, so the end of the run, `report` and `heal` judge it alike. Absent in older run
/// directories: the defaults then apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckRecord {
    /// Transactional workloads: the consistency models (Elle's names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consistency_models: Vec<String>,
    /// Transactional workloads: anomalies prohibited besides the models'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<String>,
    /// Who asked for the models: the flag, or the system setting that claims them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// The workload that ran (its `kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The model its history is checked with (`checker::compose::model_for_workload`); absent
    /// in older run directories, whose model is then inferred from the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The register semantics the clients record (a `--semantics` preset name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantics: Option<String>,
    /// The session checker's version source the workload declares (`version_source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
}

/// Errors creating or writing a run directory.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("{path}: {source}")]
    Io {
        /// Path involved.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The given path does not exist.
    #[error("no such path: {0}")]
    NoSuchPath(String),
    /// The given path is neither a run directory nor a history file.
    #[error("{0}: not a run directory (no {HISTORY_FILE}) and not a file")]
    NotARun(String),
    /// A file of the run is not what it should be (malformed JSON, not an object).
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The path is under the directory [`PROTECT_ENV`] protects.
    #[error(
        "{path}: refusing to write under {protected} ({PROTECT_ENV} protects it; pass your own --reports or --journal)"
    )]
    Protected {
        /// Path that would have been written.
        path: String,
        /// The protected directory.
        protected: String,
    },
}

/// `path` made absolute and free of symlinks as far as it exists (the rest appended as given).
fn resolved(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    // `.` and `..` lexically first (a `..` after a missing directory cannot be resolved later).
    let mut abs_clean = PathBuf::new();
    for c in abs.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                abs_clean.pop();
            }
            other => abs_clean.push(other),
        }
    }
    let abs = abs_clean;
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return abs,
        }
    }
}

/// Refuse `path` when it lies under the directory named by [`PROTECT_ENV`] (if set).
pub fn ensure_writable(path: &Path) -> Result<(), StoreError> {
    match std::env::var_os(PROTECT_ENV).filter(|p| !p.is_empty()) {
        Some(protected) => ensure_outside(path, Path::new(&protected)),
        None => Ok(()),
    }
}

/// Refuse `path` when it lies under `protected` (both resolved through symlinks and `..`).
fn ensure_outside(path: &Path, protected: &Path) -> Result<(), StoreError> {
    let protected = resolved(protected);
    if resolved(path).starts_with(&protected) {
        return Err(StoreError::Protected {
            path: path.display().to_string(),
            protected: protected.display().to_string(),
        });
    }
    Ok(())
}

/// Whether `name` is a run directory name [`RunDir::create`] makes (`20260101T120000.123Z`,
/// optionally with a `-N` suffix).
fn is_run_stamp(name: &str) -> bool {
    let stamp = name.split('-').next().unwrap_or(name);
    stamp
        .strip_suffix('Z')
        .is_some_and(|s| chrono::NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%S%.3f").is_ok())
}

/// The reports root holding `run_dir` (`<reports>/<test>/<timestamp>`), when the run directory
/// has the layout [`RunDir::create`] makes; `None` for a run directory elsewhere (a copy, a
/// fixture), whose grandparent is not ours to write an index into.
pub fn reports_root_of(run_dir: &Path) -> Option<PathBuf> {
    let name = run_dir.file_name()?.to_str()?;
    if !is_run_stamp(name) {
        return None;
    }
    run_dir.parent()?.parent().map(Path::to_path_buf)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A function that appends one JSON record per call.
pub type JsonlSink = Box<dyn FnMut(&serde_json::Value) + Send>;

/// One run's directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Absolute or cwd-relative path of the run directory.
    pub path: PathBuf,
}

impl RunDir {
    /// Create `<reports>/<test>/<timestamp>/` (timestamp from the wall clock, UTC, ms precision;
    /// a numeric suffix is added if two runs start in the same millisecond).
    pub fn create(reports: &Path, test_name: &str) -> Result<RunDir, StoreError> {
        ensure_writable(reports)?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
        let parent = reports.join(test_name);
        std::fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        let mut path = parent.join(&stamp);
        let mut n = 1;
        loop {
            match std::fs::create_dir(&path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    n += 1;
                    path = parent.join(format!("{stamp}-{n}"));
                }
                Err(e) => return Err(io_err(&path)(e)),
            }
        }
        Ok(RunDir { path })
    }

    /// Open an existing run directory.
    pub fn open(path: &Path) -> RunDir {
        RunDir {
            path: path.to_path_buf(),
        }
    }

    /// Path of the history file.
    pub fn history_path(&self) -> PathBuf {
        self.path.join(HISTORY_FILE)
    }

    /// Open the history file for appending (created if missing), as the interpreter's sink
    /// (`mapped::HistoryFile`: written through a shared mapping where the file system allows).
    pub fn open_history(&self) -> Result<crate::mapped::HistoryFile, StoreError> {
        let p = self.history_path();
        ensure_writable(&p)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(&p)
            .map_err(io_err(&p))?;
        crate::mapped::HistoryFile::new(file).map_err(io_err(&p))
    }

    /// An append-only JSONL sink into `name` (one write per record, so a crash loses at most
    /// the record being written). Write errors are logged, not fatal: the history stays primary.
    pub fn jsonl_sink(&self, name: &str) -> Result<JsonlSink, StoreError> {
        let p = self.path.join(name);
        ensure_writable(&p)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .map_err(io_err(&p))?;
        Ok(Box::new(move |v: &serde_json::Value| {
            use std::io::Write;
            let mut line = v.to_string();
            line.push('\n');
            if let Err(e) = file.write_all(line.as_bytes()) {
                tracing::warn!("{}: {e}", p.display());
            }
        }))
    }

    /// Directory of the client programs' stderr logs (`logs/clients/`; external systems).
    pub fn client_log_dir(&self) -> PathBuf {
        self.path.join(LOGS_DIR).join("clients")
    }

    /// Directory for one node's logs, created on demand.
    pub fn node_log_dir(&self, node: &str) -> Result<PathBuf, StoreError> {
        let p = self.path.join(LOGS_DIR).join(node);
        std::fs::create_dir_all(&p).map_err(io_err(&p))?;
        Ok(p)
    }

    /// Write a JSON value to a file in the run directory, atomically (write temp + rename) so a
    /// crash never leaves a half-written file.
    pub fn write_json(&self, name: &str, value: &serde_json::Value) -> Result<(), StoreError> {
        let text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Io {
            path: self.path.join(name).display().to_string(),
            source: std::io::Error::other(e),
        })?;
        self.write_bytes(name, &text)
    }

    /// Write a text file (e.g. an HTML page) into the run directory, atomically.
    pub fn write_text(&self, name: &str, text: &str) -> Result<(), StoreError> {
        self.write_bytes(name, text.as_bytes())
    }

    /// Write a binary file (e.g. a PNG plot) into the run directory, atomically.
    pub fn write_bytes(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let dest = self.path.join(name);
        ensure_writable(&dest)?;
        let tmp = self.path.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &dest).map_err(io_err(&dest))
    }

    /// Whether the run directory holds the file `name`.
    pub fn has(&self, name: &str) -> bool {
        self.path.join(name).is_file()
    }

    /// The JSON object in the run's file `name` (test.json, results.json); the error names the
    /// file and says whether it is missing, unreadable, malformed or not an object.
    pub fn read_object(&self, name: &str) -> Result<serde_json::Value, StoreError> {
        let p = self.path.join(name);
        let text = std::fs::read_to_string(&p).map_err(io_err(&p))?;
        let malformed = |message: String| StoreError::Malformed {
            path: p.display().to_string(),
            message,
        };
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| malformed(format!("malformed JSON: {e}")))?;
        if !v.is_object() {
            return Err(malformed("expected a JSON object".into()));
        }
        Ok(v)
    }

    /// `results.json`, `None` when absent; an error names the file when it is unreadable or
    /// malformed.
    pub fn read_results(&self) -> Result<Option<serde_json::Value>, StoreError> {
        let p = self.path.join(RESULTS_FILE);
        match std::fs::read_to_string(&p) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| StoreError::Malformed {
                    path: p.display().to_string(),
                    message: format!("malformed JSON: {e}"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&p)(e)),
        }
    }

    /// The run's history.
    pub fn read_history(&self) -> Result<crate::history::History, crate::history::HistoryError> {
        crate::history::History::read_file(&self.history_path())
    }

    /// The text of the run's file `name` when it exists and has at most `max_bytes` bytes.
    pub fn read_text_upto(&self, name: &str, max_bytes: u64) -> Option<String> {
        let p = self.path.join(name);
        if std::fs::metadata(&p).ok()?.len() > max_bytes {
            return None;
        }
        std::fs::read_to_string(&p).ok()
    }

    /// Remove the run's file `name` if it exists (e.g. a plot that no longer has data).
    pub fn remove(&self, name: &str) -> Result<(), StoreError> {
        let p = self.path.join(name);
        if !p.is_file() {
            return Ok(());
        }
        ensure_writable(&p)?;
        std::fs::remove_file(&p).map_err(io_err(&p))
    }

    /// Every regular file under the run's subdirectory `dir` (e.g. `logs`), as paths relative to
    /// the run directory with `/` separators, sorted, at most `max`. Symlinks are not followed.
    pub fn files_under(&self, dir: &str, max: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.path.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in rd.flatten() {
                let Ok(ft) = entry.file_type() else { continue };
                let p = entry.path();
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file()
                    && let Ok(rel) = p.strip_prefix(&self.path)
                {
                    let parts: Vec<String> = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    out.push(parts.join("/"));
                }
            }
        }
        out.sort();
        out.truncate(max);
        out
    }

    /// Write the completion record (how the run ended).
    pub fn write_completion(
        &self,
        completion: &crate::completion::CompletionRecord,
    ) -> Result<(), StoreError> {
        let value = serde_json::to_value(completion).map_err(|e| StoreError::Io {
            path: self.path.join(COMPLETION_FILE).display().to_string(),
            source: std::io::Error::other(e),
        })?;
        self.write_json(COMPLETION_FILE, &value)
    }

    /// What the run recorded it is checked against ([`CheckRecord`]; the default when test.json
    /// has none); an entry that does not read as one is an error naming the file.
    pub fn read_check_record(&self) -> Result<CheckRecord, String> {
        let Ok(test) = self.read_object(TEST_FILE) else {
            return Ok(CheckRecord::default());
        };
        match test.get(CHECK_KEY) {
            None => Ok(CheckRecord::default()),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                format!(
                    "{}: \"{CHECK_KEY}\" is not what the run recorded ({e})",
                    self.path.join(TEST_FILE).display()
                )
            }),
        }
    }

    /// The version of the system the run tested, as test.json recorded it (`db.version`, what
    /// the server said, e.g. `nats-server: v2.12.1`); `None` when it was not recorded.
    pub fn read_db_version(&self) -> Option<String> {
        let test = self.read_object(TEST_FILE).ok()?;
        let v = test.get("db")?.get("version")?.as_str()?.trim();
        (!v.is_empty()).then(|| v.to_string())
    }

    /// The completion record; a missing one means the controller was killed
    /// ([`crate::completion::CompletionRecord::killed`]), and an unreadable one says so in its reason.
    pub fn read_completion(&self) -> crate::completion::CompletionRecord {
        use crate::completion::CompletionRecord;
        let p = self.path.join(COMPLETION_FILE);
        match std::fs::read_to_string(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CompletionRecord::killed(),
            Err(e) => CompletionRecord {
                reason: format!("incomplete: {}: {e}", p.display()),
                ..CompletionRecord::killed()
            },
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| CompletionRecord {
                reason: format!("incomplete: {}: not a completion record ({e})", p.display()),
                ..CompletionRecord::killed()
            }),
        }
    }

    /// Point `<reports>/<test>/latest` and `<reports>/latest` at this run (relative symlinks).
    pub fn update_latest(&self) -> Result<(), StoreError> {
        ensure_writable(&self.path)?;
        let Some(test_dir) = self.path.parent() else {
            return Ok(());
        };
        let Some(stamp) = self.path.file_name() else {
            return Ok(());
        };
        replace_symlink(Path::new(stamp), &test_dir.join("latest"))?;
        if let (Some(reports), Some(test)) = (test_dir.parent(), test_dir.file_name()) {
            replace_symlink(&Path::new(test).join(stamp), &reports.join("latest"))?;
        }
        Ok(())
    }
}

fn replace_symlink(target: &Path, link: &Path) -> Result<(), StoreError> {
    let tmp = link.with_extension("tmp-link");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, link).map_err(io_err(link))
}

/// A run directory found under a reports directory by [`runs_in`].
#[derive(Debug, Clone)]
pub struct RunEntry {
    /// The test's directory name (`<reports>/<test>`).
    pub test: String,
    /// The run's timestamp directory name (UTC; sorts chronologically).
    pub stamp: String,
    /// The run directory.
    pub dir: RunDir,
}

/// Every `<reports>/<test>/<timestamp>/` holding a `test.json`, in no particular order; symlinks
/// (`latest`) and files are skipped. An error when `reports` cannot be listed.
pub fn runs_in(reports: &Path) -> Result<Vec<RunEntry>, StoreError> {
    let rd = std::fs::read_dir(reports).map_err(io_err(reports))?;
    let mut out = Vec::new();
    for test_entry in rd.flatten() {
        if !test_entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let test = test_entry.file_name().to_string_lossy().into_owned();
        let Ok(runs) = std::fs::read_dir(test_entry.path()) else {
            continue;
        };
        for run in runs.flatten() {
            if !run.file_type().is_ok_and(|t| t.is_dir()) || !run.path().join(TEST_FILE).is_file() {
                continue;
            }
            out.push(RunEntry {
                test: test.clone(),
                stamp: run.file_name().to_string_lossy().into_owned(),
                dir: RunDir::open(&run.path()),
            });
        }
    }
    Ok(out)
}

/// Write the file `name` directly under the reports directory (its `index.html`), atomically;
/// returns its path.
pub fn write_reports_file(reports: &Path, name: &str, text: &str) -> Result<PathBuf, StoreError> {
    let dest = reports.join(name);
    ensure_writable(&dest)?;
    let tmp = reports.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, &dest).map_err(io_err(&dest))?;
    Ok(dest)
}

/// Resolve a `check`/`report` argument: a run directory (its history file) or a history file.
pub fn resolve_history(path: &Path) -> Result<PathBuf, StoreError> {
    if path.is_dir() {
        let h = path.join(HISTORY_FILE);
        if h.is_file() {
            return Ok(h);
        }
        return Err(StoreError::NotARun(path.display().to_string()));
    }
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(StoreError::NoSuchPath(path.display().to_string()))
        }
        Err(source) => Err(StoreError::Io {
            path: path.display().to_string(),
            source,
        }),
        Ok(_) => Err(StoreError::NotARun(path.display().to_string())),
    }
}

/// File names that may hold a history outside run directories (`check DIR`).
const HISTORY_EXTENSIONS: [&str; 5] = ["jsonl", "json", "edn", "log", "txt"];

/// Every history under `dir` for `check DIR`, sorted: `dir` itself when it is a run directory;
/// otherwise the history of each run directory below it and each loose file with a history
/// extension (`.jsonl`, `.json`, `.edn`, `.log`, `.txt`), at most `max_depth` levels down.
/// Symbolic links are not followed (`latest` links would list runs twice).
pub fn histories_under(dir: &Path, max_depth: usize) -> Result<Vec<PathBuf>, StoreError> {
    let history = dir.join(HISTORY_FILE);
    if history.is_file() {
        return Ok(vec![history]);
    }
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(io_err(dir))?;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err(&path))?;
        if kind.is_dir() && max_depth > 0 {
            out.extend(histories_under(&path, max_depth - 1)?);
        } else if kind.is_file()
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| HISTORY_EXTENSIONS.contains(&e))
        {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_under_lists_runs_and_loose_files_once() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), "etcd-register").unwrap();
        std::fs::write(a.history_path(), "").unwrap();
        std::fs::write(a.path.join("faults.jsonl"), "").unwrap();
        a.update_latest().unwrap();
        std::fs::write(tmp.path().join("h.edn"), "[]").unwrap();
        std::fs::write(tmp.path().join("notes.md"), "").unwrap();
        let found = histories_under(tmp.path(), 4).unwrap();
        assert_eq!(found, vec![a.history_path(), tmp.path().join("h.edn")]);
        assert_eq!(histories_under(&a.path, 4).unwrap(), vec![a.history_path()]);
    }

    #[test]
    fn creates_unique_run_dirs_and_latest_links() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), "etcd-register").unwrap();
        let b = RunDir::create(tmp.path(), "etcd-register").unwrap();
        assert_ne!(a.path, b.path);
        a.write_json(TEST_FILE, &serde_json::json!({"seed": 1}))
            .unwrap();
        std::fs::write(a.history_path(), "").unwrap();
        a.update_latest().unwrap();
        let latest = tmp.path().join("etcd-register/latest");
        assert_eq!(
            std::fs::canonicalize(&latest).unwrap(),
            std::fs::canonicalize(&a.path).unwrap()
        );
        let top = tmp.path().join("latest");
        assert_eq!(
            std::fs::canonicalize(&top).unwrap(),
            std::fs::canonicalize(&a.path).unwrap()
        );
        b.update_latest().unwrap();
        assert_eq!(
            std::fs::canonicalize(&latest).unwrap(),
            std::fs::canonicalize(&b.path).unwrap()
        );
        assert_eq!(resolve_history(&a.path).unwrap(), a.history_path());
        assert!(matches!(
            resolve_history(&b.path),
            Err(StoreError::NotARun(_))
        ));
        let nope = tmp.path().join("nope");
        assert_eq!(
            resolve_history(&nope).unwrap_err().to_string(),
            format!("no such path: {}", nope.display())
        );
    }

    #[test]
    fn protected_dir_refuses_writes_below_it_through_links_and_dots() {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path().join("repo/reports");
        std::fs::create_dir_all(reports.join("t")).unwrap();
        std::os::unix::fs::symlink(&reports, tmp.path().join("link")).unwrap();
        for p in [
            reports.join("latest/faults.jsonl"),
            reports.clone(),
            tmp.path().join("link/t/new/history.jsonl"),
            tmp.path().join("repo/x/../reports/index.html"),
        ] {
            let e = ensure_outside(&p, &reports).unwrap_err().to_string();
            assert!(
                e.contains("refusing to write under") && e.contains(PROTECT_ENV),
                "{e}"
            );
        }
        assert!(ensure_outside(&tmp.path().join("repo/reports2/x"), &reports).is_ok());
        assert!(ensure_outside(&tmp.path().join("other"), &reports).is_ok());
    }

    #[test]
    fn only_our_run_dirs_have_a_reports_root_and_completion_defaults_to_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::create(tmp.path(), "t").unwrap();
        assert_eq!(reports_root_of(&run.path).as_deref(), Some(tmp.path()));
        let second = tmp.path().join("t/20261201T070000.123Z-2");
        assert_eq!(reports_root_of(&second).as_deref(), Some(tmp.path()));
        assert_eq!(reports_root_of(&tmp.path().join("copy/r1")), None);
        assert_eq!(
            run.read_completion().status,
            crate::completion::RunStatus::Killed
        );
        let c = crate::completion::CompletionRecord::interrupted(5.1, 60.0);
        run.write_completion(&c).unwrap();
        assert_eq!(run.read_completion(), c);
        std::fs::write(run.path.join(COMPLETION_FILE), "{").unwrap();
        let bad = run.read_completion();
        assert!(
            !bad.is_complete() && bad.reason.contains(COMPLETION_FILE),
            "{bad:?}"
        );
    }
}
