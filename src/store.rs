//! Run directory layout: the only module that knows where files of a run live.
//!
//! A run lives in `<reports>/<test>/<timestamp>/` and holds `history.jsonl` (appended as the run
//! happens), `test.json` (configuration, seed, versions, wall-clock start), `results.json` (checker
//! output), `faults.jsonl` (the fault journal) and `logs/<node>/…` (DB logs). After each
//! run `<reports>/<test>/latest` and `<reports>/latest` point at it. Does not know what is inside the
//! files beyond serializing JSON values given to it.

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
/// Directory of per-node logs.
pub const LOGS_DIR: &str = "logs";

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
    /// The given path is neither a run directory nor a history file.
    #[error("{0}: not a run directory (no {HISTORY_FILE}) and not a file")]
    NotARun(String),
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

    /// Open the history file for appending (created if missing).
    pub fn open_history(&self) -> Result<std::fs::File, StoreError> {
        let p = self.history_path();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .map_err(io_err(&p))
    }

    /// An append-only JSONL sink into `name` (one write per record, so a crash loses at most
    /// the record being written). Write errors are logged, not fatal: the history stays primary.
    pub fn jsonl_sink(&self, name: &str) -> Result<JsonlSink, StoreError> {
        let p = self.path.join(name);
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

    fn write_bytes(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let dest = self.path.join(name);
        let tmp = self.path.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &dest).map_err(io_err(&dest))
    }

    /// Point `<reports>/<test>/latest` and `<reports>/latest` at this run (relative symlinks).
    pub fn update_latest(&self) -> Result<(), StoreError> {
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
    Err(StoreError::Io {
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
    })
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
        assert!(
            resolve_history(&tmp.path().join("nope"))
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
    }
}
