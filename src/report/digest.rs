//! A long run's history read once, as it streams, into what its results and pages need besides
//! the checks, without holding the history: the charts' samples (`plots::SampleBuilder`, dense
//! past a few hundred thousand ops), recovery's attempts (24 bytes per client op; with
//! [`DigestBuilder::spilling_to`], 21 bytes per op in an unlinked file beside the history until
//! the end, so that a run digested as it goes holds a bounded part of them), counts, and
//! a **sparse history**: every nemesis op, the client op just before each, the ops after the
//! last nemesis op while they look like final reads, the ops results.json names (witnesses, by
//! position) and the last op, each at its position in the whole history (`Op::index`). The
//! page's fault, membership, clock and witness sections and the recovery analysis read the
//! sparse history exactly as they read the whole one: they look at nemesis ops, at the final
//! phase and at named ops only.
//!
//! Owns the pass and the sparse history's rules. Does not own the checks (`core::stream`), the
//! charts or the recovery analysis (it feeds them), nor deciding when a run is long enough to
//! be digested (`runner::results`).

use crate::history::{History, HistoryError, JsonlAhead, Op, OpType, Process};
use crate::report::plots::{SampleBuilder, Samples};
use crate::report::recovery::{Attempts, AttemptsBuilder};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// Final reads held at most: past this many client ops after the last nemesis op, the tail is
/// not taken for final reads (a register run reads each open key once per node).
const MAX_TAIL: usize = 200_000;
/// Positions results.json may name that are kept at most.
const MAX_WANTED: usize = 100_000;
/// Completed attempts held in memory before they go to the spill file (24 MiB).
const SPILL_ATTEMPTS: usize = 1 << 20;

/// What one pass over a history leaves (see the module doc).
pub struct Digest {
    /// Nemesis ops, the client op before each, the final reads, the named ops, the last op.
    pub sparse: History,
    /// The latest op time, ns.
    pub end_ns: u64,
    /// Ops (events) read.
    pub events: u64,
    /// Client invocations.
    pub client_invokes: u64,
    /// Client completions (ok, fail, info).
    pub client_completions: u64,
    /// The charts' input.
    pub samples: Samples,
    /// Recovery's input.
    pub attempts: Attempts,
}

/// The digest built one op at a time (the ops results.json names are added after the check,
/// [`keep_wanted`]).
#[derive(Default)]
pub struct DigestBuilder {
    sparse: Vec<Op>,
    /// Whether the op in `last` is already in `sparse`.
    last_kept: bool,
    last: Option<Op>,
    tail: Vec<Op>,
    tail_ok: bool,
    end_ns: u64,
    events: u64,
    client_invokes: u64,
    client_completions: u64,
    samples: SampleBuilder,
    attempts: AttemptsBuilder,
    spill: Option<Spill>,
}

/// Where a [`DigestBuilder`]'s drained attempts wait: a file in `dir`, unlinked once open (it
/// goes with the process), or memory once the file failed (a full disk loses nothing).
struct Spill {
    dir: std::path::PathBuf,
    /// Completed attempts held before they are drained.
    every: usize,
    file: Option<std::fs::File>,
    /// Drained attempts the file did not take.
    kept: Vec<u8>,
    /// The file failed: everything stays in `kept`.
    failed: bool,
}

impl Spill {
    fn put(&mut self, bytes: Vec<u8>) {
        use std::io::Write;
        if !self.failed {
            let file = match self.file.take() {
                Some(f) => Ok(f),
                None => unlinked_in(&self.dir),
            };
            match file.and_then(|mut f| f.write_all(&bytes).map(|()| f)) {
                Ok(f) => {
                    self.file = Some(f);
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        "recovery's attempts stay in memory: {}: {e}",
                        self.dir.display()
                    );
                    self.failed = true;
                }
            }
        }
        self.kept.extend(bytes);
    }

    /// Every drained attempt's bytes, in order.
    fn take(self) -> Vec<u8> {
        use std::io::{Read, Seek};
        let mut all = Vec::new();
        if let Some(mut f) = self.file {
            let read = f
                .seek(std::io::SeekFrom::Start(0))
                .and_then(|_| f.read_to_end(&mut all));
            if let Err(e) = read {
                // Written by this process a moment ago: only a failing disk gets here.
                tracing::warn!(
                    "recovery's attempts could not be read back ({e}): its figures miss them; \
                     `shakedown report` of the run directory reads the history again"
                );
                all.clear();
            }
        }
        all.extend(self.kept);
        all
    }
}

/// A new file in `dir`, open for reading and writing, its name already removed.
fn unlinked_in(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".attempts-{}-{n}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

impl DigestBuilder {
    /// A builder.
    pub fn new() -> DigestBuilder {
        DigestBuilder {
            tail_ok: true,
            ..DigestBuilder::default()
        }
    }

    /// Recovery's attempts past the first million wait in a file in `dir` (unlinked: nothing
    /// is left there) until [`DigestBuilder::finish`], instead of in memory.
    pub fn spilling_to(self, dir: &Path) -> DigestBuilder {
        DigestBuilder {
            spill: Some(Spill {
                dir: dir.to_path_buf(),
                every: SPILL_ATTEMPTS,
                file: None,
                kept: Vec::new(),
                failed: false,
            }),
            ..self
        }
    }

    /// Take the history's next op; `op.index` is its position in the history. Ops it keeps are
    /// copied (the reader goes on with `op`).
    pub fn push(&mut self, op: &Op) {
        self.events += 1;
        self.end_ns = self.end_ns.max(op.time_ns);
        self.samples.push(op);
        self.attempts.push(op);
        if let Some(spill) = &mut self.spill
            && self.attempts.held() >= spill.every
        {
            spill.put(self.attempts.drain());
        }
        if op.process == Process::Nemesis {
            // The client op just before a nemesis op: where a workload (or a stretch of it) ended.
            if let Some(prev) = self.last.take()
                && !self.last_kept
                && prev.process != Process::Nemesis
            {
                self.sparse.push(prev);
            }
            self.tail.clear();
            self.tail_ok = true;
            self.sparse.push(op.clone());
            self.last = Some(op.clone());
            self.last_kept = true;
            return;
        }
        if op.op_type == OpType::Invoke {
            self.client_invokes += 1;
        } else {
            self.client_completions += 1;
        }
        if self.tail_ok {
            let read_of_key = op.key.is_some() && op.f == "read";
            if read_of_key && self.tail.len() < MAX_TAIL {
                self.tail.push(op.clone());
            } else {
                self.tail_ok = false;
                self.tail = Vec::new();
            }
        }
        match &mut self.last {
            Some(last) => last.clone_from(op),
            None => self.last = Some(op.clone()),
        }
        self.last_kept = false;
    }

    /// The digest.
    pub fn finish(self) -> Digest {
        let mut ops = self.sparse;
        if self.tail_ok {
            ops.extend(self.tail);
        }
        if let Some(last) = self.last.filter(|_| !self.last_kept) {
            ops.push(last);
        }
        ops.sort_by_key(|o| o.index);
        ops.dedup_by_key(|o| o.index);
        Digest {
            sparse: History {
                ops,
                ..History::default()
            },
            end_ns: self.end_ns,
            events: self.events,
            client_invokes: self.client_invokes,
            client_completions: self.client_completions,
            samples: self.samples.finish(),
            attempts: match self.spill {
                Some(spill) => self.attempts.finish_after(&spill.take()),
                None => self.attempts.finish(),
            },
        }
    }
}

impl Digest {
    /// Keep `ops` (of the same history) in the sparse history too, each at its position.
    pub fn keep(&mut self, ops: Vec<Op>) {
        let sparse = &mut self.sparse.ops;
        sparse.extend(ops);
        sparse.sort_by_key(|o| o.index);
        sparse.dedup_by_key(|o| o.index);
    }
}

/// Keep the ops at `wanted` positions (see [`wanted_positions`]) in `d`'s sparse history,
/// reading the JSONL history at `path` once more only when some are not there already.
pub fn keep_wanted(d: &mut Digest, path: &Path, wanted: HashSet<u64>) -> Result<(), HistoryError> {
    let mut missing = wanted;
    for o in &d.sparse.ops {
        missing.remove(&o.index);
    }
    if missing.is_empty() {
        return Ok(());
    }
    let mut found = Vec::new();
    each_op(path, |op| {
        if missing.contains(&op.index) {
            found.push(op);
        }
    })?;
    d.keep(found);
    Ok(())
}

/// Hand every op of the JSONL history at `path` to `f` in history order, `Op::index` set to
/// its position, read in parallel blocks ahead of `f` (`history::JsonlAhead`) and never held;
/// returns the reader's warnings and why the history is cut short, if it is.
pub fn each_op(
    path: &Path,
    mut f: impl FnMut(Op),
) -> Result<(Vec<String>, Option<String>), HistoryError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| HistoryError::Io {
        path: name.clone(),
        source,
    })?;
    let mut blocks = JsonlAhead::new(file, &name)?;
    let mut position = 0u64;
    while let Some(parts) = blocks.next_ops()? {
        for mut op in parts.into_iter().flatten() {
            op.index = position;
            position += 1;
            f(op);
        }
    }
    blocks.finish()
}

/// The history positions a results.json value names: every whole number under a key that ends
/// in `index` (`index`, `completion_index`, `earlier_index`, `first_index`, …), at most
/// [`MAX_WANTED`] of them.
pub fn wanted_positions(results: &Value) -> HashSet<u64> {
    fn walk(v: &Value, under_index: bool, out: &mut HashSet<u64>) {
        if out.len() >= MAX_WANTED {
            return;
        }
        match v {
            Value::Number(n) if under_index => out.extend(n.as_u64()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, under_index, out)),
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, k.ends_with("index") || k.ends_with("indices"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = HashSet::new();
    walk(results, false, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Name;
    use serde_json::json;

    fn op(i: u64, ty: OpType, p: Process, f: &str, key: Option<&str>) -> Op {
        let mut o = Op::new(ty, p, f, Value::Null);
        o.index = i;
        o.time_ns = i * 1_000_000;
        o.key = key.map(Name::new);
        o
    }

    /// A run: writes and reads, a partition, more ops, the heal, final reads of two keys.
    fn run() -> Vec<Op> {
        let c = |i, ty, f, k| op(i, ty, Process::Client(i % 3), f, Some(k));
        let n = |i, ty, f| op(i, ty, Process::Nemesis, f, None);
        vec![
            c(0, OpType::Invoke, "write", "a"),
            c(1, OpType::Ok, "write", "a"),
            c(2, OpType::Invoke, "read", "a"),
            n(3, OpType::Invoke, "start-partition"),
            n(4, OpType::Info, "start-partition"),
            c(5, OpType::Ok, "read", "a"),
            c(6, OpType::Invoke, "write", "b"),
            c(7, OpType::Info, "write", "b"),
            n(8, OpType::Invoke, "stop-partition"),
            n(9, OpType::Info, "stop-partition"),
            c(10, OpType::Invoke, "read", "a"),
            c(11, OpType::Ok, "read", "a"),
            c(12, OpType::Invoke, "read", "b"),
            c(13, OpType::Ok, "read", "b"),
        ]
    }

    fn digest(ops: Vec<Op>, wanted: &[u64]) -> Digest {
        let mut b = DigestBuilder::new();
        for o in &ops {
            b.push(o);
        }
        let mut d = b.finish();
        d.keep(
            ops.into_iter()
                .filter(|o| wanted.contains(&o.index))
                .collect(),
        );
        d
    }

    fn positions(h: &History) -> Vec<u64> {
        h.ops.iter().map(|o| o.index).collect()
    }

    #[test]
    fn the_sparse_history_keeps_faults_the_op_before_each_final_reads_and_named_ops() {
        let d = digest(run(), &[5]);
        assert_eq!(positions(&d.sparse), [2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13]);
        assert_eq!(
            (d.events, d.client_invokes, d.client_completions, d.end_ns),
            (14, 5, 5, 13_000_000)
        );
        // What the page and recovery derive from it is what they derive from the whole history.
        let whole = History::from_ops(run());
        assert_eq!(
            crate::report::phases::final_phase(&d.sparse),
            crate::report::phases::final_phase(&whole)
        );
        assert!(crate::report::phases::final_phase(&whole).is_some());
        assert_eq!(
            crate::report::plots::fault_intervals(&d.sparse),
            crate::report::plots::fault_intervals(&whole)
        );
        let cfg = crate::report::recovery::RecoveryConfig::default();
        assert_eq!(
            crate::report::recovery::analyse_attempts(d.attempts, &d.sparse, d.end_ns, &cfg),
            crate::report::recovery::analyse(&whole, &cfg)
        );
    }

    #[test]
    fn attempts_waiting_in_a_file_give_the_recovery_they_give_in_memory() {
        // Clients on five processes, some ops failing, some never completing, faults between.
        let mut ops = Vec::new();
        for i in 0..3_000u64 {
            let p = Process::Client(i % 5);
            let ty = match i % 10 {
                0..5 => OpType::Invoke,
                5..8 => OpType::Ok,
                8 => OpType::Fail,
                _ => OpType::Info,
            };
            let mut o = op(i, ty, p, "write", Some("k"));
            o.node = Some(Name::new(&format!("n{}", i % 3)));
            o.time_ns = i * 10_000_000;
            ops.push(o);
            let mut nemesis = |f: &str, v: Value| {
                let mut n = op(i, OpType::Info, Process::Nemesis, f, None);
                n.time_ns = i * 10_000_000;
                n.value = v;
                ops.push(n);
            };
            if i % 1_000 == 500 {
                nemesis("start-partition", json!("one"));
                nemesis("start-partition", json!({"grudge": {"n1": ["n2"]}}));
            }
            if i % 1_000 == 800 {
                nemesis("stop-partition", Value::Null);
                nemesis("stop-partition", json!("healed"));
            }
        }
        for (j, o) in ops.iter_mut().enumerate() {
            o.index = j as u64;
        }
        let recovery = |b: DigestBuilder| {
            let mut b = b;
            for o in &ops {
                b.push(o);
            }
            let d = b.finish();
            let r = crate::report::recovery::analyse_attempts(
                d.attempts,
                &d.sparse,
                d.end_ns,
                &Default::default(),
            );
            serde_json::to_value(r).unwrap()
        };
        let whole = recovery(DigestBuilder::new());
        assert!(
            whole["faults"].as_array().is_some_and(|f| !f.is_empty()),
            "{whole}"
        );
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        for to in [dir.path(), gone.as_path()] {
            let mut b = DigestBuilder::new().spilling_to(to);
            if let Some(s) = &mut b.spill {
                s.every = 7;
            }
            assert_eq!(recovery(b), whole, "spilled to {}", to.display());
        }
        // The file was unlinked as soon as it was open.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_tail_that_is_not_final_reads_is_dropped_but_the_last_op_stays() {
        let mut ops = run();
        ops.truncate(12);
        ops.push(op(
            12,
            OpType::Invoke,
            Process::Client(0),
            "write",
            Some("c"),
        ));
        let d = digest(ops, &[]);
        assert_eq!(positions(&d.sparse), [2, 3, 4, 7, 8, 9, 12]);
    }

    #[test]
    fn results_name_positions_under_any_key_ending_in_index() {
        let r = json!({"checkers": [
            {"details": {"parts": [{"first_index": 4, "witness": {"ops": [{"index": 7, "completion_index": 9}]}}]}},
            {"details": {"guarantees": [{"witnesses": [{"earlier_index": 11, "later_index": 12, "session": 3}]}]}},
            {"details": {"count": 5, "op_indices": [20, 21]}}
        ]});
        let got = wanted_positions(&r);
        let want: HashSet<u64> = [4, 7, 9, 11, 12, 20, 21].into_iter().collect();
        assert_eq!(got, want);
    }
}
