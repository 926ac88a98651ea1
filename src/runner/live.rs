//! Live checking: verdicts on retired keys while the run goes on (`shakedown run`), and the stop
//! at the first confirmed anomaly (`--stop-on-anomaly`).
//!
//! The register and list-append workloads move each group of threads to a fresh key after
//! `ops_per_key` ops and never return to a key they left. A background thread at the lowest CPU
//! priority (nice 19) tails the run's `history.jsonl` as the interpreter writes it (no hook in
//! the interpreter: the workload's hot path is unchanged) and keeps each key's ops in
//! [`Retirement`] (`checker::linear::retire`): a key is *retired* once every thread that worked on
//! it has invoked an op on another key and no op on it is open. Its sub-history is then checked for linearizability with
//! the model the final check uses, through the checker's public API (`check_linear_with`, every
//! key decided, one search thread).
//!
//! What a live verdict means, honestly:
//! - **invalid is final.** Every op of the checked sub-history had completed before any later op
//!   on the key was invoked (no op open), and ops that may never take effect can be left out, so
//!   no later op — the final read, or anything else — makes a non-linearizable prefix
//!   linearizable. The final check reuses these parts as they are ([`Reuse`]) and does not search
//!   them again; `shakedown check` of the same history finds them invalid too.
//! - **valid is "so far".** The final phase reads every key once more, and that read may expose
//!   a lost write; such keys are checked again, whole, at the end. A key valid live that got no
//!   op since (no final reads: `--stop-on-anomaly`) is reused as it is.
//! - Keys that never rotate (the session workload's) never retire: past `MAX_BUFFERED_OPS` held
//!   ops, live checking stops (`gave_up`) instead of keeping a second copy of the history.
//! - Set, lock, log and transactional workloads are not checked live: a set's lost adds and a
//!   log's lost sends are judged against the final reads, which come after the workload, and the
//!   session guarantees choose their version order from the whole history. `--stop-on-anomaly`
//!   is refused for them (`cli`).
//!
//! Owns the tailing thread, the live counts the
//! progress line shows, `live.json` and the first invalid key's witness page written as soon as it
//! is found, and mapping the live parts back into the final check. Does not own the search
//! (`checker::linear`), the stop itself (`runner::drive` shuts the interpreter down) or how the
//! run's verdict is judged (`completion`).

use crate::checker::Verdict;
pub use crate::checker::linear::retire::Retirement;
use crate::checker::linear::{Decide, LinearConfig, LinearResult, PartSummary, WitnessMode};
use crate::history::{History, Op};
use crate::store::{LINEAR_WITNESS_FILE, LIVE_FILE, RunDir};
use serde::Serialize;
use std::collections::HashMap;

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod reuse;
pub use reuse::{Extended, Reuse};

/// How often the tailing thread looks for new history lines.
const POLL: Duration = Duration::from_millis(500);
/// The most ops live checking holds for keys not yet retired; past it (keys that never retire,
/// as in the session workload's hot keys) it stops and leaves every key to the final check,
/// rather than keep a second copy of the history in memory.
pub(crate) const MAX_BUFFERED_OPS: usize = 2_000_000;
/// The longest one live search may take; a key it leaves unknown is checked again at the end.
pub(crate) const MAX_KEY_CHECK: Duration = Duration::from_secs(10);

/// The linearizability model a workload kind's keys are checked live with, when they are: the
/// one the run records for the final check (`checker::compose::model_for_workload`), for the
/// kinds whose keys rotate (register, list-append).
pub(crate) fn live_model(workload_kind: &str) -> Option<&'static str> {
    use crate::generator::WorkloadKind as K;
    match K::parse(workload_kind)? {
        kind @ (K::Register | K::ListAppend) => Some(crate::checker::compose::model_for_kind(kind)),
        _ => None,
    }
}

/// Why a workload kind cannot be checked live (`--stop-on-anomaly` refuses it), in words.
pub(crate) fn not_live_because(workload_kind: &str) -> String {
    format!(
        "the {workload_kind} workload is not checked while it runs: only register and list-append \
         keys (linearizability) are decided live; set and log losses are judged against the final \
         reads, lock and transactional histories as a whole"
    )
}

/// The first invalid key found live.
#[derive(Debug, Clone, Serialize)]
pub struct FirstAnomaly {
    /// The key.
    pub key: String,
    /// When it was found, seconds since the workload started.
    pub at_s: f64,
}

impl FirstAnomaly {
    /// "key 17 not linearizable at 12.3 s".
    pub fn describe(&self) -> String {
        format!("key {} not linearizable at {:.1} s", self.key, self.at_s)
    }
}

/// What the live checker found, shared with the progress line and the driver while it runs.
#[derive(Debug, Default)]
pub struct LiveCounts {
    /// Keys checked live.
    pub checked: AtomicU64,
    /// Of them, invalid.
    pub invalid: AtomicU64,
    /// Of them, left unknown by the live search's budget (checked again at the end).
    pub unknown: AtomicU64,
    first: Mutex<Option<FirstAnomaly>>,
}

impl LiveCounts {
    /// The first invalid key, once there is one.
    pub fn first(&self) -> Option<FirstAnomaly> {
        self.first.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl crate::progress::Segment for LiveCounts {
    /// The progress line's words: "live: 12 keys checked, 1 invalid".
    fn text(&self) -> String {
        format!(
            "live: {} checked, {} invalid",
            crate::plural::counted(self.checked.load(Ordering::Relaxed) as usize, "key"),
            self.invalid.load(Ordering::Relaxed)
        )
    }
}

/// What live checking leaves for the final check and the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveRecord {
    /// The workload kind's model.
    pub model: String,
    /// Keys checked live.
    pub checked: u64,
    /// Keys found invalid live (final: reused by the end-of-run check).
    pub invalid: u64,
    /// Keys the live search left unknown (checked again at the end).
    pub unknown: u64,
    /// Keys not retired when live checking ended.
    pub open_keys: usize,
    /// Ops read from the history so far.
    pub ops_read: u64,
    /// The first invalid key.
    pub first_invalid: Option<FirstAnomaly>,
    /// The workload stopped at the first invalid key (`--stop-on-anomaly`).
    pub stopped_early: bool,
    /// Why live checking stopped before the workload did, when it did.
    pub gave_up: Option<String>,
    /// The invalid parts, their op positions those of the run's history.
    #[serde(skip)]
    pub invalid_parts: Vec<PartSummary>,
    /// The valid parts, each with how many client ops its key had when it was checked: the
    /// final check reuses one only if the key has no more.
    #[serde(skip)]
    pub valid_parts: Vec<(PartSummary, usize)>,
    /// Positions in the valid parts' linearizations, and the first valid part that still has
    /// one (see [`KEEP_LINEARIZED_OPS`]).
    #[serde(skip)]
    linearized: (usize, usize),
}

/// Live linearizations kept at most, in ops (8 bytes each): past it the oldest valid keys'
/// are dropped. Such a key, if it gets ops later (a final read), is searched again at the end
/// instead of replayed through its live linearization: the same verdict, and live checking's
/// memory stays flat over a long run (it grew by ~12 bytes per op before).
pub const KEEP_LINEARIZED_OPS: usize = 2_000_000;

impl LiveRecord {
    /// Keep a valid part that had `n` client events when it was checked, its linearization
    /// while the newest hold at most [`KEEP_LINEARIZED_OPS`].
    pub fn keep_valid(&mut self, part: PartSummary, n: usize) {
        self.keep_valid_within(part, n, KEEP_LINEARIZED_OPS);
    }

    fn keep_valid_within(&mut self, part: PartSummary, n: usize, most: usize) {
        self.linearized.0 += part.linearization.as_ref().map_or(0, Vec::len);
        self.valid_parts.push((part, n));
        while self.linearized.0 > most && self.linearized.1 < self.valid_parts.len() {
            let oldest = &mut self.valid_parts[self.linearized.1].0;
            self.linearized.0 -= oldest.linearization.take().map_or(0, |l| l.len());
            self.linearized.1 += 1;
        }
    }

    /// results.json's `live` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Budgets of the live searches.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// The model, by registry name.
    pub model: &'static str,
    /// The run's client threads.
    pub concurrency: usize,
    /// The time one batch of keys may take.
    pub time_limit: Duration,
    /// Witness work per invalid key.
    pub witness: WitnessMode,
    /// Memory budget of one batch.
    pub memory_bytes: usize,
}

/// Check a batch of retired keys' ops (history order, original `index`es kept): every key
/// decided, one search thread. Returns the result with positions mapped back to the run's
/// history, and the same result with the batch's own positions plus the batch (for a witness
/// page drawn from the batch alone).
pub fn check_batch(
    cfg: &LiveConfig,
    mut ops: Vec<Op>,
) -> Result<(LinearResult, LinearResult, History), String> {
    ops.sort_by_key(|o| o.index);
    let orig: Vec<u64> = ops.iter().map(|o| o.index).collect();
    let history = History::from_ops(ops);
    let config = LinearConfig {
        time_limit: Some(cfg.time_limit),
        memory_bytes: Some(cfg.memory_bytes),
        threads: Some(1),
        decide: Decide::AllKeys,
        witness: cfg.witness,
        // The end of the run checks a key's later ops against it (`Reuse`).
        keep_linearization: true,
        ..LinearConfig::default()
    };
    let options = crate::model::ModelOptions::preset(super::RECORDED_SEMANTICS);
    let local = crate::checker::compose::check_linear_with(cfg.model, &history, &options, config)?;
    let mut mapped = local.clone();
    remap_positions(&mut mapped, &orig);
    Ok((mapped, local, history))
}

pub use crate::stream::remap_positions;

/// The live checker of one run: its thread, the counts it shares, and its stop signal.
pub struct LiveChecker {
    counts: Arc<LiveCounts>,
    done: Arc<AtomicBool>,
    /// Set when the checker is dropped without [`LiveChecker::join`] (a run that ends in an
    /// error): the thread then writes nothing more, so its `index.html` cannot land on top of
    /// the page the end of the run writes.
    abandoned: Arc<AtomicBool>,
    anomaly: tokio::sync::watch::Receiver<bool>,
    thread: Option<std::thread::JoinHandle<LiveRecord>>,
}

impl LiveChecker {
    /// Start tailing `run_dir`'s history on a background thread at nice 19.
    pub fn start(cfg: LiveConfig, run_dir: RunDir, started: Instant) -> std::io::Result<Self> {
        let counts = Arc::new(LiveCounts::default());
        let done = Arc::new(AtomicBool::new(false));
        let abandoned = Arc::new(AtomicBool::new(false));
        let (tx, anomaly) = tokio::sync::watch::channel(false);
        let tail = Tail {
            cfg,
            run_dir,
            started,
            counts: counts.clone(),
            done: done.clone(),
            abandoned: abandoned.clone(),
            anomaly: tx,
        };
        let thread = std::thread::Builder::new()
            .name("live-check".into())
            .spawn(move || tail.run())?;
        Ok(LiveChecker {
            counts,
            done,
            abandoned,
            anomaly,
            thread: Some(thread),
        })
    }

    /// The counts the progress line shows.
    pub fn counts(&self) -> Arc<LiveCounts> {
        self.counts.clone()
    }

    /// Becomes true at the first invalid key.
    pub fn anomaly(&self) -> tokio::sync::watch::Receiver<bool> {
        self.anomaly.clone()
    }

    /// The workload is over: check what the history holds now, then stop. Returns at once.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    /// Wait for the thread (after [`LiveChecker::finish`]) and take its record.
    pub fn join(mut self) -> LiveRecord {
        self.finish();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            // A panic in the live thread loses its verdicts, not the run: the final check
            // decides every key.
            _ => LiveRecord::default(),
        }
    }
}

impl Drop for LiveChecker {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.abandoned.store(true, Ordering::Relaxed);
            self.finish();
        }
    }
}

struct Tail {
    cfg: LiveConfig,
    run_dir: RunDir,
    started: Instant,
    counts: Arc<LiveCounts>,
    done: Arc<AtomicBool>,
    abandoned: Arc<AtomicBool>,
    anomaly: tokio::sync::watch::Sender<bool>,
}

/// Lower the calling thread's CPU priority to nice 19 (Linux: nice is per thread), so live
/// checking only takes CPU the workload leaves.
pub(super) fn lowest_priority() {
    // SAFETY: gettid and setpriority have no memory preconditions; a failure leaves the
    // priority as it was.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19);
    }
}

impl Tail {
    fn run(self) -> LiveRecord {
        lowest_priority();
        let mut record = LiveRecord {
            model: self.cfg.model.to_string(),
            ..LiveRecord::default()
        };
        let mut retirement = Retirement::new(self.cfg.concurrency);
        let mut offset = 0u64;
        let mut pending = Vec::new();
        let path = self.run_dir.history_path();
        // The run page says live checking is on from the start.
        self.write_live(&record);
        loop {
            let last = self.done.load(Ordering::Relaxed);
            let mut ready = Vec::new();
            for op in read_new_ops(&path, &mut offset, &mut pending) {
                record.ops_read += 1;
                ready.extend(retirement.push(op));
            }
            if !ready.is_empty() {
                self.check(&mut record, ready);
                record.open_keys = retirement.open_keys();
                self.write_live(&record);
            }
            if retirement.buffered_ops() > MAX_BUFFERED_OPS {
                record.gave_up = Some(format!(
                    "more than {MAX_BUFFERED_OPS} ops on keys not retired (keys that do not \
                     rotate); they are checked at the end"
                ));
                break;
            }
            if last {
                break;
            }
            std::thread::sleep(POLL);
        }
        record.open_keys = retirement.open_keys();
        record.first_invalid = self.counts.first();
        self.write_live(&record);
        record
    }

    fn check(&self, record: &mut LiveRecord, ready: Vec<(String, Vec<Op>)>) {
        let keys = ready.len() as u64;
        let seen: HashMap<String, usize> = ready
            .iter()
            .map(|(k, ops)| (k.clone(), ops.len()))
            .collect();
        let ops: Vec<Op> = ready.into_iter().flat_map(|(_, ops)| ops).collect();
        let Ok((mapped, local, batch)) = check_batch(&self.cfg, ops) else {
            // The model could not be named: nothing is decided live.
            return;
        };
        record.checked += keys;
        self.counts.checked.fetch_add(keys, Ordering::Relaxed);
        for part in mapped.parts {
            match part.verdict {
                Verdict::Invalid => {
                    record.invalid += 1;
                    self.counts.invalid.fetch_add(1, Ordering::Relaxed);
                    let mut first = self.counts.first.lock().unwrap_or_else(|e| e.into_inner());
                    if first.is_none() {
                        *first = Some(FirstAnomaly {
                            key: part.key.clone().unwrap_or_default(),
                            at_s: self.started.elapsed().as_secs_f64(),
                        });
                        drop(first);
                        // The witness as soon as it is found (the end of the run rewrites it
                        // from the whole history).
                        let page = crate::report::witness_html::render_witness_html(
                            &only_part(&local, part.key.as_deref()),
                            &batch,
                        );
                        // Not once abandoned: the end of the run writes the witness page.
                        if !self.abandoned.load(Ordering::Relaxed)
                            && let Err(e) = self.run_dir.write_text(LINEAR_WITNESS_FILE, &page)
                        {
                            tracing::warn!("live witness page: {e}");
                        }
                        let _ = self.anomaly.send(true);
                    }
                    record.invalid_parts.push(part);
                }
                Verdict::Unknown => {
                    record.unknown += 1;
                    self.counts.unknown.fetch_add(1, Ordering::Relaxed);
                }
                Verdict::Valid => {
                    if let Some(&n) = part.key.as_deref().and_then(|k| seen.get(k)) {
                        record.keep_valid(part, n);
                    }
                }
            }
        }
    }

    /// live.json, and the run page while the run goes on (`report::page::live`).
    fn write_live(&self, record: &LiveRecord) {
        if self.abandoned.load(Ordering::Relaxed) {
            return;
        }
        let mut v = record.to_json();
        v["first_invalid"] = serde_json::to_value(self.counts.first()).unwrap_or_default();
        // When this was written, seconds into the run (the live page says it).
        v["updated_s"] = self.started.elapsed().as_secs_f64().into();
        if let Err(e) = self.run_dir.write_json(LIVE_FILE, &v) {
            tracing::warn!("{LIVE_FILE}: {e}");
            return;
        }
        if let Err(e) = crate::report::page::write_live_page(&self.run_dir.path) {
            tracing::warn!("{e}");
        }
    }
}

/// `r` with only the part of `key` (a witness page shows one key).
fn only_part(r: &LinearResult, key: Option<&str>) -> LinearResult {
    let mut one = r.clone();
    one.parts.retain(|p| p.key.as_deref() == key);
    one.verdict = Verdict::Invalid;
    one
}

/// The ops of the complete lines written to `path` after `offset` (advanced past them); a line
/// still being written stays in `pending`. The history sink pads its file with zero bytes ahead
/// of the writer (`mapped`): reading stops at the first one. Errors read as "nothing new".
fn read_new_ops(path: &std::path::Path, offset: &mut u64, pending: &mut Vec<u8>) -> Vec<Op> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return Vec::new();
    }
    // In chunks, up to the padding: not the whole padded tail every time.
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let end = chunk[..n].iter().position(|&b| b == 0);
        let take = end.unwrap_or(n);
        pending.extend_from_slice(&chunk[..take]);
        *offset += take as u64;
        if end.is_some() {
            break;
        }
    }
    let Some(last_nl) = pending.iter().rposition(|&b| b == b'\n') else {
        return Vec::new();
    };
    let rest = pending.split_off(last_nl + 1);
    let complete = std::mem::replace(pending, rest);
    complete
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice::<Op>(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn line(i: u64, t: &str, p: u64, f: &str, k: &str, v: &str) -> Op {
        serde_json::from_str::<Op>(&format!(
            r#"{{"index":{i},"time":{},"type":"{t}","process":{p},"f":"{f}","key":"{k}","value":{v}}}"#,
            i + 1
        ))
        .unwrap()
    }

    fn live_cfg() -> LiveConfig {
        LiveConfig {
            model: "cas-register",
            concurrency: 2,
            time_limit: Duration::from_secs(5),
            witness: WitnessMode::Fast,
            memory_bytes: 1 << 26,
        }
    }

    /// The end-of-run check of `history` with `reuse`, as `results::check_rest` runs it: the
    /// search of what is left, merged; again with the keys whose later ops did not fit their
    /// live linearization searched whole.
    fn final_check(reuse: &mut Reuse, history: &History) -> LinearResult {
        let once = |reuse: &Reuse| {
            let (rest, orig) = reuse.remaining(history);
            let options = crate::model::ModelOptions::preset(crate::model::SemanticsPreset::Etcd);
            let searched = crate::checker::compose::check_linear_with(
                "cas-register",
                &rest,
                &options,
                LinearConfig::default(),
            )
            .unwrap();
            reuse.merge(searched, &orig, history, true)
        };
        let mut merged = once(reuse);
        if let Some(again) = reuse.settle(&mut merged) {
            merged = once(&again);
        }
        merged
    }

    /// The whole history checked at once, every key decided.
    fn whole_check(history: &History) -> LinearResult {
        let options = crate::model::ModelOptions::preset(crate::model::SemanticsPreset::Etcd);
        crate::checker::compose::check_linear_with(
            "cas-register",
            history,
            &options,
            LinearConfig {
                decide: Decide::AllKeys,
                ..LinearConfig::default()
            },
        )
        .unwrap()
    }

    fn per_key(r: &LinearResult) -> Vec<(Option<String>, Verdict, usize)> {
        r.parts
            .iter()
            .map(|p| (p.key.clone(), p.verdict, p.op_count))
            .collect()
    }

    /// The live record of checking `ops` (every key retired) as live checking does.
    fn live_record(ops: &[Op]) -> LiveRecord {
        let (live, ..) = check_batch(&live_cfg(), ops.to_vec()).unwrap();
        let mut record = LiveRecord::default();
        for part in live.parts {
            match part.verdict {
                Verdict::Valid => {
                    let k = part.key.clone();
                    let n = ops
                        .iter()
                        .filter(|o| o.key.as_deref() == k.as_deref())
                        .count();
                    record.keep_valid(part, n);
                }
                _ => record.invalid_parts.push(part),
            }
        }
        record
    }

    #[test]
    fn the_final_check_reuses_live_parts_and_agrees_with_a_whole_check() {
        // Key a: a stale read (invalid); key b: fine; ops interleaved in the history.
        let ops = vec![
            line(0, "invoke", 0, "write", "a", "1"),
            line(1, "invoke", 1, "write", "b", "5"),
            line(2, "ok", 0, "write", "a", "1"),
            line(3, "ok", 1, "write", "b", "5"),
            line(4, "invoke", 0, "read", "a", "null"),
            line(5, "ok", 0, "read", "a", "2"),
            line(6, "invoke", 1, "read", "b", "null"),
            line(7, "ok", 1, "read", "b", "5"),
        ];
        let history = History::from_ops(ops.clone());
        let a: Vec<Op> = ops
            .iter()
            .filter(|o| o.key.as_deref() == Some("a"))
            .cloned()
            .collect();
        let (mapped, ..) = check_batch(&live_cfg(), a).unwrap();
        let mut reuse = Reuse {
            parts: mapped.parts.clone(),
            ..Reuse::default()
        };
        assert_eq!(reuse.remaining(&history).1, vec![1, 3, 6, 7]);
        let merged = final_check(&mut reuse, &history);
        let options = crate::model::ModelOptions::preset(crate::model::SemanticsPreset::Etcd);
        let whole = whole_check(&history);
        assert_eq!(per_key(&merged), per_key(&whole));
        assert_eq!(merged.verdict, Verdict::Invalid);
        assert_eq!(merged.op_count, whole.op_count);
        let (m, w) = (
            merged.parts[0].witness.as_ref().unwrap(),
            whole.parts[0].witness.as_ref().unwrap(),
        );
        assert_eq!(m.op.index, w.op.index, "positions of the whole history");
        // Every key decided live: nothing left to search adds nothing.
        let none = Reuse {
            parts: mapped.parts,
            ..Reuse::default()
        };
        let lone = History::from_ops(ops[..1].to_vec());
        let empty = crate::checker::compose::check_linear_with(
            "cas-register",
            &History::from_ops(Vec::new()),
            &options,
            LinearConfig::default(),
        )
        .unwrap();
        assert_eq!(
            none.merge(empty, &[], &lone, false).verdict,
            Verdict::Invalid
        );
    }

    #[test]
    fn a_key_whose_live_linearization_was_dropped_is_searched_again_to_the_same_verdict() {
        let ops = vec![
            line(0, "invoke", 0, "write", "a", "1"),
            line(1, "ok", 0, "write", "a", "1"),
            line(2, "invoke", 1, "write", "b", "5"),
            line(3, "ok", 1, "write", "b", "5"),
        ];
        let (live, ..) = check_batch(&live_cfg(), ops.clone()).unwrap();
        let mut record = LiveRecord::default();
        for part in live.parts {
            record.keep_valid_within(part, 2, 1);
        }
        // At most one op's linearization kept: a's, the older, is dropped.
        let kept: Vec<bool> = record
            .valid_parts
            .iter()
            .map(|(p, _)| p.linearization.is_some())
            .collect();
        assert_eq!(kept, [false, true]);
        for (seen, verdict) in [("1", Verdict::Valid), ("9", Verdict::Invalid)] {
            let mut later = ops.clone();
            later.push(line(4, "invoke", 0, "read", "a", "null"));
            later.push(line(5, "ok", 0, "read", "a", seen));
            later.push(line(6, "invoke", 1, "read", "b", "null"));
            later.push(line(7, "ok", 1, "read", "b", "5"));
            let later = History::from_ops(later);
            let mut reuse = Reuse::of(&record, &later);
            // b replayed through its live linearization, a searched again.
            assert_eq!((reuse.valid, reuse.extended.len()), (0, 1), "{seen}");
            let merged = final_check(&mut reuse, &later);
            assert_eq!(per_key(&merged), per_key(&whole_check(&later)), "{seen}");
            assert_eq!(merged.verdict, verdict, "{seen}");
        }
    }

    #[test]
    fn a_key_valid_live_with_later_ops_is_checked_through_its_live_linearization() {
        // Keys a and b both valid live; b then gets a final read the live check never saw.
        let mut ops = vec![
            line(0, "invoke", 0, "write", "a", "1"),
            line(1, "ok", 0, "write", "a", "1"),
            line(2, "invoke", 1, "write", "b", "5"),
            line(3, "ok", 1, "write", "b", "5"),
        ];
        let record = live_record(&ops);
        assert_eq!(record.valid_parts.len(), 2);
        let reuse = Reuse::of(&record, &History::from_ops(ops.clone()));
        assert_eq!(
            (reuse.valid, reuse.parts.len(), reuse.extended.len()),
            (2, 2, 0)
        );
        // A final read that fits: b is confirmed without searching its live ops again.
        let mut fits = ops.clone();
        fits.push(line(4, "invoke", 0, "read", "b", "null"));
        fits.push(line(5, "ok", 0, "read", "b", "5"));
        let fits = History::from_ops(fits);
        let mut reuse = Reuse::of(&record, &fits);
        assert_eq!((reuse.valid, reuse.extended.len()), (1, 1));
        assert_eq!(reuse.keys(), HashSet::from(["a"]));
        let merged = final_check(&mut reuse, &fits);
        assert_eq!(reuse.confirmed, 1);
        assert_eq!(per_key(&merged), per_key(&whole_check(&fits)));
        assert_eq!(merged.op_count, 3);
        // A stale final read: the stand-in fails, b is searched whole and found invalid.
        ops.push(line(4, "invoke", 0, "read", "b", "null"));
        ops.push(line(5, "ok", 0, "read", "b", "4"));
        let later = History::from_ops(ops);
        let mut reuse = Reuse::of(&record, &later);
        let merged = final_check(&mut reuse, &later);
        assert_eq!(reuse.confirmed, 0);
        assert_eq!(per_key(&merged), per_key(&whole_check(&later)));
        assert_eq!(merged.parts[1].verdict, Verdict::Invalid);
        let w = merged.parts[1].witness.as_ref().expect("a witness of b");
        assert_eq!(w.op.index, 4, "positions of the whole history");
        assert_eq!(merged.verdict, Verdict::Invalid);
    }

    #[test]
    fn a_stand_in_op_does_not_collide_with_its_threads_open_op_on_another_key() {
        // Process 0 leaves key a and invokes on key b (not decided live) before a's last live
        // event, where a's stand-in goes: the stand-in's ops must not pair with b's.
        let ops = vec![
            line(0, "invoke", 0, "write", "a", "1"),
            line(1, "invoke", 1, "write", "a", "2"),
            line(2, "ok", 0, "write", "a", "1"),
            line(3, "invoke", 0, "write", "b", "7"),
            line(4, "ok", 1, "write", "a", "2"),
            line(5, "ok", 0, "write", "b", "7"),
            line(6, "invoke", 2, "read", "a", "null"),
        ];
        let a: Vec<Op> = [0, 1, 2, 4].iter().map(|&i| ops[i].clone()).collect();
        let record = live_record(&a);
        let mut confirmed = 0;
        for v in ["1", "2"] {
            let mut all = ops.clone();
            all.push(line(7, "ok", 2, "read", "a", v));
            let h = History::from_ops(all);
            let mut reuse = Reuse::of(&record, &h);
            assert_eq!(reuse.extended.len(), 1);
            let (rest, _) = reuse.remaining(&h);
            assert!(rest.completions().is_ok(), "the stand-in pairs");
            let merged = final_check(&mut reuse, &h);
            assert_eq!(merged.reason, None, "read of {v}");
            assert_eq!(per_key(&merged), per_key(&whole_check(&h)), "read of {v}");
            assert_eq!(merged.verdict, Verdict::Valid, "read of {v}");
            confirmed += reuse.confirmed;
        }
        assert_eq!(confirmed, 1);
    }

    #[test]
    fn a_later_op_that_fits_another_linearization_than_the_live_one_is_still_valid() {
        // Two overlapping writes: live checking finds one order; a final read of either value
        // is linearizable. The read of the value the live order wrote first does not fit the
        // stand-in, so that key must be searched whole, and found valid.
        let live = vec![
            line(0, "invoke", 0, "write", "k", "1"),
            line(1, "invoke", 1, "write", "k", "2"),
            line(2, "ok", 0, "write", "k", "1"),
            line(3, "ok", 1, "write", "k", "2"),
            // Pending: an info write the live linearization may or may not use.
            line(4, "invoke", 2, "write", "k", "3"),
            line(5, "info", 2, "write", "k", "3"),
        ];
        let record = live_record(&live);
        assert_eq!(record.valid_parts.len(), 1);
        let mut confirmed = Vec::new();
        for v in ["1", "2", "3"] {
            let mut ops = live.clone();
            ops.push(line(6, "invoke", 0, "read", "k", "null"));
            ops.push(line(7, "ok", 0, "read", "k", v));
            let h = History::from_ops(ops);
            let mut reuse = Reuse::of(&record, &h);
            assert_eq!(reuse.extended.len(), 1);
            let merged = final_check(&mut reuse, &h);
            assert_eq!(merged.verdict, Verdict::Valid, "final read of {v}");
            assert_eq!(per_key(&merged), per_key(&whole_check(&h)), "read of {v}");
            assert_eq!(merged.parts[0].pending_count, 1);
            confirmed.push(reuse.confirmed);
        }
        // One end state is the live linearization's: that read alone was confirmed.
        assert_eq!(confirmed.iter().sum::<usize>(), 1, "{confirmed:?}");
    }

    #[test]
    fn a_checker_dropped_without_join_writes_no_page_over_the_runs_own() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = RunDir::open(dir.path());
        run_dir
            .write_json(crate::store::TEST_FILE, &serde_json::json!({"name": "t"}))
            .unwrap();
        std::fs::write(run_dir.history_path(), "").unwrap();
        let live = LiveChecker::start(live_cfg(), run_dir.clone(), Instant::now()).unwrap();
        // It says live checking is on (the page it writes at start).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dir.path().join("index.html").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(dir.path().join("index.html").exists());
        // A run that ends in an error drops it; the end of the run writes its own page.
        drop(live);
        run_dir.write_text("index.html", "final").unwrap();
        std::thread::sleep(POLL * 3);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("index.html")).unwrap(),
            "final"
        );
    }

    #[test]
    fn tailing_stops_at_the_padding_and_keeps_a_line_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let a =
            r#"{"index":0,"time":1,"type":"invoke","process":0,"f":"read","key":"k","value":null}"#;
        let b = r#"{"index":1,"time":2,"type":"ok","process":0,"f":"read","key":"k","value":null}"#;
        let mut bytes = format!("{a}\n{}", &b[..20]).into_bytes();
        bytes.extend([0u8; 64]);
        std::fs::write(&path, &bytes).unwrap();
        let (mut offset, mut pending) = (0, Vec::new());
        let got = read_new_ops(&path, &mut offset, &mut pending);
        assert_eq!(got.len(), 1);
        assert_eq!(pending, &b.as_bytes()[..20]);
        let mut bytes = format!("{a}\n{b}\n").into_bytes();
        bytes.extend([0u8; 64]);
        std::fs::write(&path, &bytes).unwrap();
        let got = read_new_ops(&path, &mut offset, &mut pending);
        assert_eq!(got.iter().map(|o| o.index).collect::<Vec<_>>(), vec![1]);
        assert!(pending.is_empty());
    }

    #[test]
    fn a_stale_read_on_a_retired_key_is_invalid_with_positions_of_the_whole_history() {
        let ops = vec![
            line(10, "invoke", 0, "write", "k", "1"),
            line(12, "ok", 0, "write", "k", "1"),
            line(20, "invoke", 1, "read", "k", "null"),
            line(22, "ok", 1, "read", "k", "2"),
        ];
        let (mapped, local, batch) = check_batch(&live_cfg(), ops).unwrap();
        assert_eq!(mapped.verdict, Verdict::Invalid);
        assert_eq!(batch.ops.len(), 4);
        let w = mapped.parts[0].witness.as_ref().unwrap();
        assert!([10, 20].contains(&w.op.index), "{:?}", w.op);
        assert!(local.parts[0].witness.as_ref().unwrap().op.index < 4);
    }
}
