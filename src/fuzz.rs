//! The run-directory reader's fuzzing harness: one byte string made into a run directory's files
//! ([`RUN_FILES`], split at zero bytes) and read the way `shakedown check RUN_DIR` and
//! `shakedown report` read one, without checking or writing anything: the history as `check`
//! loads it, the run's check record (`app::what_ran`), completion, results, live record, fault
//! journal (as `heal` reads it for leftovers), the requested faults that never ran, and the run
//! and live pages rendered in memory. Bad files are errors or defaults there, never panics.
//!
//! Owns only the harness and its input layout; the fuzzer that drives it is the `fuzz/` crate
//! (`rundir` target, docs/guide/fuzzing.md) and a short seeded run in the tests below. The
//! history readers' own harnesses are `shakedown_core::fuzz`. Like `app`, it sits above
//! everything it reads and nothing imports it.

use crate::store::{
    COMPLETION_FILE, FAULTS_FILE, HISTORY_FILE, LIVE_FILE, RESULTS_FILE, RunDir, TEST_FILE,
};
use std::path::Path;

/// The files a fuzz input is split into, in order: the input's zero bytes separate them; a file
/// whose part is empty, or past the last part, is absent.
pub const RUN_FILES: [&str; 6] = [
    TEST_FILE,
    COMPLETION_FILE,
    HISTORY_FILE,
    RESULTS_FILE,
    LIVE_FILE,
    FAULTS_FILE,
];

/// Write `data` into `dir` as a run directory's files ([`RUN_FILES`]; `dir` must exist and be
/// this caller's alone) and read them as `check` and `report` do. `Ok(true)` when `check` read a
/// history from it; `Err` only when `dir` cannot be written.
pub fn read_run_dir(dir: &Path, data: &[u8]) -> std::io::Result<bool> {
    let mut parts = data.split(|&b| b == 0);
    for name in RUN_FILES {
        let path = dir.join(name);
        match parts.next() {
            Some(part) if !part.is_empty() => std::fs::write(&path, part)?,
            _ => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
        }
    }
    let run = RunDir::open(dir);
    // `check RUN_DIR`.
    let loaded = crate::app::load_history(dir, "auto", None);
    let _ = crate::app::what_ran(dir);
    // `report RUN_DIR` (its check aside).
    let _ = run.read_history();
    let _ = run.read_check_record();
    let _ = run.read_completion();
    let _ = run.read_results();
    let _ = run.read_object(LIVE_FILE);
    let _ = crate::chaos::run::is_chaos_run(&run);
    if let (Ok(test), Ok(loaded)) = (run.read_object(TEST_FILE), &loaded) {
        let _ = crate::runner::requested::never_ran(&test, &loaded.history);
    }
    let _ = crate::report::page::render_run_page(dir);
    let _ = crate::report::page::render_live_page(dir);
    // `heal`: the fault journal's records, and which faults it leaves outstanding.
    if let Ok(text) = std::fs::read_to_string(dir.join(FAULTS_FILE)) {
        let records: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let _ = crate::nemesis::outstanding_faults(&records);
    }
    Ok(loaded.is_ok())
}

/// A fuzz input made of a run directory's files ([`RUN_FILES`] in order, joined by zero bytes;
/// a file it lacks is an empty part), each cut to at most `max_each` bytes after a whole line:
/// what [`read_run_dir`] makes back into that directory.
pub fn pack_run_dir(dir: &Path, max_each: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, name) in RUN_FILES.iter().enumerate() {
        let mut bytes = std::fs::read(dir.join(name)).unwrap_or_default();
        if bytes.len() > max_each {
            bytes.truncate(max_each);
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            bytes.truncate(keep);
        }
        bytes.retain(|&b| b != 0);
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(&bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakedown_core::fuzz::{Reader, short_run};
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    fn report_fixtures() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    }

    #[test]
    fn packing_a_run_dir_and_reading_it_back_gives_the_same_files() {
        let fixture = &report_fixtures()[0];
        let packed = pack_run_dir(fixture, usize::MAX);
        let dir = tempfile::tempdir().unwrap();
        read_run_dir(dir.path(), &packed).unwrap();
        for name in RUN_FILES {
            let want = std::fs::read(fixture.join(name)).unwrap_or_default();
            let got = std::fs::read(dir.path().join(name)).unwrap_or_default();
            assert!(want == got, "{name} differs after packing");
        }
        // Fewer parts, or empty ones: those files are gone.
        read_run_dir(dir.path(), b"{}\0\0{}").unwrap();
        assert!(dir.path().join(TEST_FILE).is_file());
        assert!(!dir.path().join(COMPLETION_FILE).exists());
        assert!(dir.path().join(HISTORY_FILE).is_file());
        assert!(!dir.path().join(RESULTS_FILE).exists());
    }

    /// The short in-suite fuzz run of the run-directory reader: the report fixtures (each file
    /// cut to 4 KiB) and a few hundred mutants; each read without a panic within a second. The
    /// long, coverage-guided run is `fuzz/` (`rundir` target, docs/guide/fuzzing.md).
    #[test]
    fn run_dir_reader_never_panics_or_hangs_on_mutated_runs() {
        let seeds: Vec<Vec<u8>> = report_fixtures()
            .iter()
            .map(|d| pack_run_dir(d, 4 << 10))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut tokens = Reader::Jsonl.tokens();
        tokens.extend([
            "\u{0}",
            "\"check\":",
            "\"status\":",
            "\"completed\"",
            "\"nodes\":",
        ]);
        let stats = short_run(&seeds, &tokens, 400, 43, |input| {
            let t = Instant::now();
            let read = std::panic::catch_unwind(|| read_run_dir(dir.path(), input));
            let shown = String::from_utf8_lossy(input);
            assert!(
                read.is_ok(),
                "the run-directory reader panicked on {shown:?}"
            );
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "the run-directory reader took {:?} on {shown:?}",
                t.elapsed()
            );
            read.is_ok_and(|r| r.unwrap())
        });
        assert_eq!(stats.inputs, seeds.len() as u64 + 400);
    }
}
