//! The end of a long run: a history too big to hold (over `results::Ask::stream_above` on
//! disk, `import::STREAM_ABOVE` at the end of a run and in `report`) is checked as it streams
//! (`core::stream`: memory bounded by the keys still open) and, in the same read, digested
//! (`report::digest`: the charts' samples, recovery's attempts, counts, a sparse history and
//! the summary table) into what results.json, the plots, the run page and the terminal are
//! written from, as the whole path writes them from the history in memory. The file is read
//! again only for ops the results name that the digest did not keep (witnesses: an invalid
//! run), for late keys the stream could not settle from their end states, and for the
//! linearizability witness page (the ops of the keys it draws).
//!
//! A run makes that read while it writes the history ([`Following`], started with the
//! workload): its end then checks only what is left (the keys still open, the final reads'
//! late keys) instead of reading the whole history again. `report` and `heal` read the
//! finished file ([`check`]). Both read the same bytes through the same stream: the same
//! result.
//!
//! Taken when the run recorded a model the stream checks (register, cas-register,
//! list-append) and every check the run gets can be made as the history streams; otherwise, or
//! when the stream finds something it cannot judge as the whole check would, the history is
//! read whole, as before. Does not own the streamed check, the digest or results.json's layout
//! (`runner::results`).

use super::RunError;
use crate::checker::compose::Plan;
use crate::checker::linear::LinearResult;
use crate::checker::{CheckResult, Verdict};
use crate::history::{History, Name};
use crate::report::digest::{DigestBuilder, wanted_positions};
use crate::report::plots::Samples;
use crate::report::recovery::{Recovery, Shade};
use crate::store::RunDir;
use crate::stream::{Outcome, StreamPlan};
use crate::summary::{FnSummary, Summarizer};
use crate::systems::external::protocol::{ProtocolErrorKind, count_error};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A long run's checks, made as its history streamed, and its digest, read in the same pass.
pub(super) struct StreamedCheck {
    pub(super) verdict: Verdict,
    pub(super) results: Vec<CheckResult>,
    pub(super) linear: LinearResult,
    pub(super) digested: Digested,
}

/// Check the run's history as it streams with `plan` (a plan whose model the stream checks,
/// `crate::stream::streams`), digesting it in the same read; `None` = check it whole (the
/// stream found something it cannot judge as the whole check would). `Err`: the history could
/// not be read again for the ops the results name.
pub(super) fn check(run_dir: &RunDir, plan: &Plan) -> Result<Option<Box<StreamedCheck>>, RunError> {
    let path = run_dir.history_path();
    let open = || std::fs::File::open(&path).map(|f| BufReader::with_capacity(1 << 20, f));
    check_opening(run_dir, &StreamPlan::new(plan.clone(), None), open)
}

/// [`check`], each pass reading what `open` gives.
fn check_opening<R: BufRead + Send + 'static>(
    run_dir: &RunDir,
    sp: &StreamPlan,
    open: impl Fn() -> std::io::Result<R>,
) -> Result<Option<Box<StreamedCheck>>, RunError> {
    let path = run_dir.history_path();
    let name = path.display().to_string();
    let plan = &sp.plan;
    let mut digest = DigestBuilder::new().spilling_to(&run_dir.path);
    let mut summary = Summarizer::default();
    let mut protocol_errors = BTreeMap::new();
    let mut see = |op: &crate::history::Op| {
        count_error(&mut protocol_errors, op);
        digest.push(op);
        summary.push(op);
    };
    let s = match crate::stream::check_jsonl_seeing(open, &name, sp, &mut see) {
        Outcome::Checked(s) => s,
        Outcome::Whole(why) | Outcome::Unreadable(why) => {
            tracing::info!("{name}: checked whole: {why}");
            return Ok(None);
        }
    };
    let mut results = vec![crate::checker::compose::linear_check_result(
        &s.result,
        &plan.model,
        &plan.options,
    )];
    // The session guarantees, checked in the same stream, merge into the verdict as the whole
    // check's do (`checker::compose`).
    let mut verdict = s.result.verdict;
    if let Some(session) = &s.session {
        verdict = verdict.merge(session.verdict);
        results.push(session.check_result());
    }
    let mut d = digest.finish();
    d.sparse.warnings = s.warnings.clone();
    d.sparse.cut_short = s.cut_short.clone();
    let named = serde_json::to_value(&results).unwrap_or_default();
    crate::report::digest::keep_wanted(&mut d, &path, wanted_positions(&named))?;
    let recovery = crate::report::recovery::analyse_attempts(
        d.attempts,
        &d.sparse,
        d.end_ns,
        &Default::default(),
    );
    let digested = Digested {
        sparse: d.sparse,
        samples: d.samples,
        end_ns: d.end_ns,
        invokes: d.client_invokes,
        completions: d.client_completions,
        recovery,
        protocol_errors,
        summary: summary.finish(),
    };
    Ok(Some(Box::new(StreamedCheck {
        verdict,
        results,
        linear: s.result,
        digested,
    })))
}

/// What results.json and the pages need from a long run's history, read once.
pub(super) struct Digested {
    /// See [`crate::report::digest::Digest::sparse`].
    pub(super) sparse: History,
    pub(super) samples: Samples,
    pub(super) end_ns: u64,
    pub(super) invokes: u64,
    pub(super) completions: u64,
    pub(super) recovery: Recovery,
    pub(super) protocol_errors: BTreeMap<ProtocolErrorKind, u64>,
    /// The terminal's summary table (`summary`), folded from the same read.
    pub(super) summary: BTreeMap<String, FnSummary>,
}

/// A run's streamed check made while the run writes its history: started with the workload
/// (`runner::drive`), it reads each line soon after it is written (at the lowest CPU priority,
/// as live checking), checks each key as it retires and digests every op; once the history is
/// complete ([`Following::finish`]) only what is left is checked. The same result as
/// [`check`] of the finished file: the stream reads the same bytes. Dropped unjoined (a short
/// run, checked whole; a run that failed), it stops at its next read.
pub(crate) struct Following {
    written: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Followed>>,
}

/// What the thread of a [`Following`] ends with: as [`check`].
type Followed = Result<Option<Box<StreamedCheck>>, RunError>;

impl Following {
    /// Start reading `run_dir`'s history as it is written, to check it with `plan` (one the
    /// stream checks, `crate::stream::streams`).
    pub(crate) fn start(run_dir: &RunDir, plan: Plan) -> std::io::Result<Following> {
        let written = Arc::new(AtomicBool::new(false));
        let cancelled = Arc::new(AtomicBool::new(false));
        let sp = StreamPlan {
            written: Some(written.clone()),
            ..StreamPlan::new(plan, None)
        };
        let (run_dir, tail) = (run_dir.clone(), (written.clone(), cancelled.clone()));
        let thread = std::thread::Builder::new()
            .name("end-check".into())
            .spawn(move || {
                // The threads it starts (reading ahead, the search) inherit it.
                super::live::lowest_priority();
                let path = run_dir.history_path();
                let first = AtomicBool::new(true);
                // The first pass follows the writer; later passes (late keys) read the
                // finished file.
                let open = || {
                    if tail.1.load(Ordering::Relaxed) {
                        return Err(std::io::Error::other(NOT_NEEDED));
                    }
                    let file = std::fs::File::open(&path)?;
                    let r: Box<dyn Read + Send> = if first.swap(false, Ordering::Relaxed) {
                        Box::new(Tail {
                            file,
                            offset: 0,
                            written: tail.0.clone(),
                            cancelled: tail.1.clone(),
                        })
                    } else {
                        Box::new(file)
                    };
                    Ok(BufReader::with_capacity(1 << 20, r))
                };
                check_opening(&run_dir, &sp, open)
            })?;
        Ok(Following {
            written,
            cancelled,
            thread: Some(thread),
        })
    }

    /// The history is complete (its writer closed it): check what is left. Returns at once.
    pub(crate) fn finish(&self) {
        self.written.store(true, Ordering::Release);
    }

    /// The check, once [`Following::finish`]ed: as [`check`]'s; `None` if its thread panicked
    /// (the caller checks the file instead).
    pub(super) fn join(mut self) -> Option<Followed> {
        self.finish();
        let joined = self.thread.take()?.join();
        if joined.is_err() {
            tracing::warn!("the check made as the run went panicked: checking the history again");
        }
        joined.ok()
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.cancelled.store(true, Ordering::Relaxed);
            self.finish();
        }
    }
}

/// Why a dropped [`Following`] stops reading.
const NOT_NEEDED: &str = "the check made as the run went was not needed";

/// How long [`Tail`] waits for its writer before looking again.
const TAIL_POLL: Duration = Duration::from_millis(200);

/// A history file read as its writer appends to it: up to the zeros the writer pads its file
/// with ahead of its records (`mapped`), waiting for more while it is being written; once it
/// is complete, the file as it is (the writer truncated the padding), to its end.
struct Tail {
    file: std::fs::File,
    offset: u64,
    written: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        loop {
            if self.cancelled.load(Ordering::Relaxed) {
                return Err(std::io::Error::other(NOT_NEEDED));
            }
            // Before reading: bytes read after the writer finished are final.
            let complete = self.written.load(Ordering::Acquire);
            let n = self.file.read_at(buf, self.offset)?;
            let take = if complete {
                n
            } else {
                buf[..n].iter().position(|&b| b == 0).unwrap_or(n)
            };
            if take > 0 || complete {
                self.offset += take as u64;
                return Ok(take);
            }
            std::thread::sleep(TAIL_POLL);
        }
    }
}

/// Write the linearizability witness page of an invalid `r` (the whole history's positions)
/// from the ops of the keys it draws, read from the history file.
pub(super) fn write_witness_page(run_dir: &RunDir, r: &LinearResult) -> Result<(), RunError> {
    use crate::report::witness_html::{MAX_INVALID_PARTS, render_witness_html_at};
    let drawn: Vec<Option<&str>> = r
        .parts
        .iter()
        .filter(|p| p.verdict == Verdict::Invalid && p.witness.is_some())
        .take(MAX_INVALID_PARTS)
        .map(|p| p.key.as_deref())
        .collect();
    if drawn.iter().any(Option::is_none) {
        // A part of the whole history (no key): the stream never checks one.
        return Ok(());
    }
    let keys: std::collections::HashSet<Name> =
        drawn.into_iter().flatten().map(Name::new).collect();
    let (mut ops, mut positions) = (Vec::new(), Vec::new());
    crate::report::digest::each_op(&run_dir.history_path(), |op| {
        if op.is_client() && op.key.as_ref().is_some_and(|k| keys.contains(k)) {
            positions.push(op.index);
            ops.push(op);
        }
    })?;
    let page = render_witness_html_at(r, &History::from_ops(ops), &positions);
    run_dir.write_text(crate::store::LINEAR_WITNESS_FILE, &page)?;
    Ok(())
}

/// The plots and the run page from a digest (`shades`: its recovery's); failures are
/// warnings, as `results::render_pages`' (which also writes the reports index).
pub(super) fn render_pages(run_dir: &RunDir, d: Digested, shades: Vec<Shade>) {
    let Digested {
        sparse,
        samples,
        end_ns,
        ..
    } = d;
    if let Err(e) =
        crate::report::render_run_digest(&run_dir.path, &sparse, samples, end_ns, shades)
    {
        tracing::warn!("plots: {e}");
    }
    if let Err(e) = crate::report::page::write_run_page_with(&run_dir.path, Some(&sparse)) {
        tracing::warn!("run page: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::results::{AsItWent, Ask, Checked, write_results_asked};
    use crate::store::RunDir;
    use serde_json::Value;
    use std::path::Path;

    /// A copy of a report fixture (tests/data/reports) whose test.json records `model`.
    fn fixture(name: &str, model: &str) -> tempfile::TempDir {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/reports")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
            }
        }
        let test_json = dir.path().join("test.json");
        let mut test: Value =
            serde_json::from_str(&std::fs::read_to_string(&test_json).unwrap()).unwrap();
        test["check"] = serde_json::json!({ "model": model });
        std::fs::write(&test_json, serde_json::to_string(&test).unwrap()).unwrap();
        dir
    }

    fn end(dir: &Path, stream_above: u64) -> Value {
        end_went(dir, stream_above, Default::default()).0
    }

    /// The end of the run in `dir` with what checking during the workload left (`went`):
    /// results.json and what the run prints from.
    fn end_went(dir: &Path, stream_above: u64, went: AsItWent) -> (Value, Checked) {
        let ask = Ask {
            check_time_limit_s: 30.0,
            // Witnesses minimized within the time limit, not within a budget drawn from how
            // long the search took (`fast`): on a loaded machine that budget can run out in one
            // check and not in the other, and the explanations then differ.
            witness: crate::checker::linear::WitnessMode::Minimal,
            stream_above,
        };
        let checked = write_results_asked(&RunDir::open(dir), &ask, None, went).unwrap();
        let results = std::fs::read_to_string(dir.join("results.json")).unwrap();
        (serde_json::from_str(&results).unwrap(), checked)
    }

    /// `v` without the times a check measures (they differ from one check to the next).
    fn timeless(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| {
                    !k.ends_with("time_ms") && k != "first_invalid_ms" && k != "settled_budget_ms"
                });
                m.values_mut().for_each(timeless);
            }
            Value::Array(a) => a.iter_mut().for_each(timeless),
            // "in 66 ms (verdict 13 ms, …)": each number before " ms" becomes "N".
            Value::String(t) => *t = ms_blind(t),
            _ => {}
        }
    }

    /// `t` with every number before " ms" made "N" (check times differ from one check to the
    /// next).
    fn ms_blind(t: &str) -> String {
        let pieces: Vec<&str> = t.split(" ms").collect();
        let last = pieces.len() - 1;
        pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == last {
                    p.to_string()
                } else {
                    format!("{}N ms", p.trim_end_matches(|c: char| c.is_ascii_digit()))
                }
            })
            .collect()
    }

    /// The first place two values differ: a path and both sides, shortened.
    fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let (p, q) = (x.get(k), y.get(k));
                    match (p, q) {
                        (Some(p), Some(q)) => first_difference(p, q, format!("{at}/{k}")),
                        _ => Some(format!("{at}/{k}: {:?} vs {:?}", p.is_some(), q.is_some())),
                    }
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}"))),
            _ if a == b => None,
            _ => {
                let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
                Some(format!("{at}: {} vs {}", short(a), short(b)))
            }
        }
    }

    /// `a` and `b` are the same text, else a panic showing where they first differ.
    fn same_text(a: &str, b: &str, what: &str) {
        if a == b {
            return;
        }
        let at = a
            .bytes()
            .zip(b.bytes())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let around = |t: &str| {
            t.get(at.saturating_sub(200)..(at + 120).min(t.len()))
                .unwrap_or("")
                .to_string()
        };
        panic!("{what} differs: {:?} vs {:?}", around(a), around(b));
    }

    #[test]
    fn a_long_runs_end_read_as_it_streams_writes_what_the_whole_read_writes() {
        for (name, model) in [
            ("all-faults", "cas-register"),
            ("serializable-isolate", "cas-register"),
        ] {
            let (whole, streamed) = (fixture(name, model), fixture(name, model));
            let mut w = end(whole.path(), u64::MAX);
            let mut s = end(streamed.path(), 0);
            assert_eq!(w["history"]["streamed"], false, "{name}");
            assert_eq!(s["history"]["streamed"], true, "{name}: streamed");
            for v in [&mut w, &mut s] {
                v["history"]["streamed"] = Value::Null;
                timeless(v);
            }
            if let Some(at) = first_difference(&w, &s, String::new()) {
                panic!("{name}: results.json differs at {at}");
            }
            let read = |d: &Path, f: &str| ms_blind(&std::fs::read_to_string(d.join(f)).unwrap());
            for f in [
                "index.html",
                "latency-raw.svg",
                "latency-quantiles.svg",
                "throughput.svg",
            ] {
                let (a, b) = (read(whole.path(), f), read(streamed.path(), f));
                same_text(&a, &b, &format!("{name}: {f}"));
            }
            // The witness page: drawn from the invalid keys' ops alone, the same page.
            let witness = crate::store::LINEAR_WITNESS_FILE;
            assert_eq!(
                whole.path().join(witness).is_file(),
                streamed.path().join(witness).is_file(),
                "{name}: {witness}"
            );
            if whole.path().join(witness).is_file() {
                // Up to the parts table, whose last column is each part's search time; without
                // the summary under the title, cut to a length that counts the times' digits
                // (the explanation below it says the same, whole).
                let drawn = |d: &Path| {
                    let page = read(d, witness);
                    let head = page.split("<h2>Parts</h2>").next().unwrap_or("");
                    head.lines()
                        .filter(|l| !(l.starts_with("<p>") && l.contains("N ms")))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let (a, b) = (drawn(whole.path()), drawn(streamed.path()));
                assert!(a.contains("<svg"), "{name}: the witness drawn");
                same_text(&a, &b, &format!("{name}: {witness}"));
            }
            // The optional charts: the same ones drawn, alike.
            for (stem, _) in crate::report::PLOT_FILES.iter().skip(3) {
                let f = format!("{stem}.svg");
                let (a, b) = (whole.path().join(&f), streamed.path().join(&f));
                assert_eq!(a.is_file(), b.is_file(), "{name}: {f}");
                if a.is_file() {
                    assert!(
                        read(whole.path(), &f) == read(streamed.path(), &f),
                        "{name}: {f}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_history_checked_as_it_is_written_ends_as_the_finished_file_checks() {
        use super::super::results::stream_plan;
        use std::io::Write;
        for (name, model) in [
            ("all-faults", "cas-register"),
            ("serializable-isolate", "cas-register"),
        ] {
            let (after, went) = (fixture(name, model), fixture(name, model));
            let path = went.path().join("history.jsonl");
            let bytes = std::fs::read(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap();
            // The run's own sink: its file padded with zeros ahead of the records.
            let mut sink = crate::mapped::HistoryFile::new(file).unwrap();
            let run_dir = RunDir::open(went.path());
            let plan = stream_plan(&run_dir, 30.0, crate::checker::linear::WitnessMode::Minimal)
                .unwrap()
                .expect("a model the stream checks");
            let following = super::Following::start(&run_dir, plan).unwrap();
            // Written in pieces that cut lines, with pauses longer than the reader's.
            for piece in bytes.chunks(bytes.len() / 7 + 1) {
                sink.write_all(piece).unwrap();
                sink.flush().unwrap();
                std::thread::sleep(super::TAIL_POLL + std::time::Duration::from_millis(50));
            }
            drop(sink);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "{name}: the sink's file"
            );
            following.finish();
            let (mut w, checked) = end_went(
                went.path(),
                0,
                AsItWent {
                    live: None,
                    following: Some(following),
                },
            );
            let mut a = end(after.path(), 0);
            assert_eq!(
                w["history"]["streamed"], true,
                "{name}: streamed as written"
            );
            timeless(&mut w);
            timeless(&mut a);
            if let Some(at) = first_difference(&a, &w, String::new()) {
                panic!("{name}: results.json differs at {at}");
            }
            // The terminal's table, folded from the same read: the file's.
            let mut folded = crate::summary::Summarizer::default();
            crate::report::digest::each_op(&path, |op| folded.push(&op)).unwrap();
            let table = |t| serde_json::to_value(t).unwrap();
            assert_eq!(
                table(checked.summary.expect("folded as it streamed")),
                table(folded.finish()),
                "{name}"
            );
        }
    }

    #[test]
    fn the_tail_waits_at_the_writers_padding_until_the_file_is_complete() {
        use std::io::Read;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h");
        std::fs::write(&path, b"{}\n{\0\0\0").unwrap();
        let (written, cancelled) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let mut tail = super::Tail {
            file: std::fs::File::open(&path).unwrap(),
            offset: 0,
            written: written.clone(),
            cancelled: Arc::clone(&cancelled),
        };
        let mut buf = [0u8; 64];
        assert_eq!(tail.read(&mut buf).unwrap(), 4, "up to the padding");
        // Nothing more is written: it waits, until told the file is not needed.
        let c = Arc::clone(&cancelled);
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            c.store(true, Ordering::Relaxed);
        });
        let waited = std::time::Instant::now();
        assert!(tail.read(&mut buf).is_err(), "cancelled");
        assert!(waited.elapsed() >= std::time::Duration::from_millis(400));
        t.join().unwrap();
        // Once complete, the file is read as it is, to its end.
        cancelled.store(false, Ordering::Relaxed);
        written.store(true, Ordering::Release);
        assert_eq!(tail.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"\0\0\0");
        assert_eq!(tail.read(&mut buf).unwrap(), 0);
    }
}
