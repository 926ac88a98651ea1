//! Jepsen's `set-full` checker (`check --model set-full`, elle-cli's spelling): for every element
//! added to a set, when its add was known to have happened and what the reads that began after
//! that showed, judged by Jepsen's outcome rules (stable / lost / never-read, stale, duplicated),
//! with Jepsen's latency quantiles.
//!
//! Owns classifying elements, the verdict, the details JSON, the one-line summary and the text
//! lines `check` prints ([`witness_lines`]). Does not own the older set checker (`checker::set`:
//! one final read per key, unexpected and recovered elements, lost elements timed against faults),
//! reading history formats (`import`, which also splits `jepsen.independent` tuples into keys) or
//! printing (`app::check`). Pure: no IO.
//!
//! Ops: `add` (value: one element, any JSON value, compared by value) and `read` (ok value: every
//! element of the set, any order; `null` = empty). Other functions are an error naming the op.
//! Each key is a set of its own. Positions are history order, which is real-time order (events
//! are recorded as they happen). Per element `e` of a key, after Jepsen's
//! `jepsen.checker/set-full`:
//! - `e` is tracked from its add's invoke (a second add of `e` starts it afresh, as Jepsen's does);
//!   only ok reads that complete after that invoke say anything about it.
//! - **known**: the earlier of its add's ok completion and the completion of the first read that
//!   showed it.
//! - **last present** / **last absent**: the latest-invoked of those reads that showed / did not
//!   show it.
//! - **stable**: some read showed it, and every read missing it began before the last read that
//!   showed it.
//! - **lost**: known, and the last read missing it began after the last read showing it (if any)
//!   and after it was known.
//! - **never read**: neither (no read began after it was known; an add that never completed ok
//!   and that no read showed is never known).
//! - **stale**: stable, yet a read that began after it was known missed it.
//! - **duplicated**: an element that one read returned more than once.
//! - latencies: stable = (last absent read's invoke time + 1 ns, or 0) − known time; lost = (last
//!   present read's invoke time + 1 ns, or 0) − known time; both at least 0, in ms; quantiles at
//!   0, 0.5, 0.95, 0.99 and 1, each the ⌊n·q⌋-th smallest (Jepsen's `frequency-distribution`).
//!
//! Verdict (Jepsen's): invalid when an element is duplicated or lost, or, when linearizable reads
//! are claimed ([`SetFullConfig::linearizable`], `--linearizable`; off by default, as elle-cli
//! calls `set-full`), stale; else unknown when no element is stable (no adds, no reads, or every
//! attempted element never read); else valid.
//!
//! Where this differs from Jepsen's code, on purpose:
//! - duplicates: Jepsen's fold keeps the elements whose count in a read is `(< v 1)`, which no
//!   count is, so it never reports one; here an element one read returns twice is duplicated, as
//!   its result keys (`:duplicated-count`, `:duplicated`) say.
//! - stale: Jepsen calls a stable element stale when its latency truncated to whole milliseconds
//!   is positive; here when the read that missed it began after it was known (history order), so
//!   a sub-millisecond stale read counts and a history without times still has staleness.
//!   Latencies are reported in ms with ns precision, and only when the history has times.
//! - keys: elements are compared per key. Jepsen compares `jepsen.independent` `[key element]`
//!   tuples whole, which the importer splits into keys: the same elements. `--no-independent`
//!   keeps the tuples as elements, as elle-cli reads them.
//!
//! Linear in the history and the total size of the reads (Jepsen's fold visits every tracked
//! element at every read).

use super::{CheckResult, Checker, Verdict};
use crate::history::{History, Op, OpType};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Name of the checker and of its model (`--model set-full`).
pub const NAME: &str = crate::model::registry::SET_FULL;

/// The quantiles of the latency distributions, as Jepsen reports them.
pub const QUANTILES: [f64; 5] = [0.0, 0.5, 0.95, 0.99, 1.0];

/// Rows kept per outcome in the details (the rest are counted as left off).
pub const EXAMPLES_CAP: usize = 100;

/// Stale elements kept in `worst_stale` (Jepsen keeps 8).
const WORST_STALE: usize = 8;

/// What the history is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetFullConfig {
    /// Reads are claimed linearizable: a stale element is then a violation (Jepsen's
    /// `:linearizable?`, false by default).
    pub linearizable: bool,
}

/// The set-full checker; see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetFullChecker {
    /// Its settings.
    pub config: SetFullConfig,
}

impl SetFullChecker {
    /// A checker with `config`.
    pub fn new(config: SetFullConfig) -> SetFullChecker {
        SetFullChecker { config }
    }
}

impl Checker for SetFullChecker {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, history: &History) -> CheckResult {
        match analyze(history, self.config) {
            Ok(a) => a.result(),
            Err(e) => CheckResult {
                checker: NAME.into(),
                verdict: Verdict::Unknown,
                summary: format!("history not checkable as a set: {e}"),
                details: json!({ "error": e }),
            },
        }
    }
}

/// An element's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Some read showed it, and no read began after that which missed it.
    Stable,
    /// Known, then missing from every read that began after the last one showing it.
    Lost,
    /// No read began after it was known.
    NeverRead,
}

impl Outcome {
    /// Jepsen's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Stable => "stable",
            Outcome::Lost => "lost",
            Outcome::NeverRead => "never-read",
        }
    }
}

/// Element values, interned: integers by value, anything else by its JSON text.
#[derive(Debug, Default)]
struct Interner {
    ints: HashMap<i64, u32>,
    texts: HashMap<String, u32>,
    values: Vec<Value>,
}

impl Interner {
    fn id(&mut self, v: &Value) -> u32 {
        let next = self.values.len() as u32;
        let id = match v.as_i64() {
            Some(i) => *self.ints.entry(i).or_insert(next),
            None => *self.texts.entry(v.to_string()).or_insert(next),
        };
        if id == next {
            self.values.push(v.clone());
        }
        id
    }
}

/// An ok read of one key: positions of its invoke and completion, its distinct elements sorted.
#[derive(Debug)]
struct Read {
    invoke: usize,
    completion: usize,
    elements: Vec<u32>,
}

/// An element being tracked on one key.
#[derive(Debug)]
struct Tracked {
    element: u32,
    /// Position of its (last) add's invoke.
    add_invoke: usize,
    /// Position of that add's completion, if any.
    add_completion: Option<usize>,
    /// Positions of the ok completions of every add of this element.
    ok_completions: Vec<usize>,
    /// Reads (by index in the key's reads) in flight when the add was invoked that complete ok.
    open_at_add: Vec<u32>,
}

/// How an element came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KnownBy {
    /// Its add's ok completion, at this position.
    Add(usize),
    /// A read that showed it, completed at this position.
    Read(usize),
}

impl KnownBy {
    fn at(self) -> usize {
        match self {
            KnownBy::Add(p) | KnownBy::Read(p) => p,
        }
    }
}

/// One element's result.
#[derive(Debug, Clone)]
struct Element {
    key: usize,
    element: u32,
    outcome: Outcome,
    stale: bool,
    add_invoke: usize,
    add_completion: Option<usize>,
    known: Option<KnownBy>,
    /// Invoke positions of the last read showing it and the last read missing it.
    last_present: Option<usize>,
    last_absent: Option<usize>,
    stable_latency_ns: Option<u64>,
    lost_latency_ns: Option<u64>,
}

/// An element one read returned more than once.
#[derive(Debug, Clone)]
struct Duplicate {
    key: usize,
    element: u32,
    /// The most times one read returned it.
    count: usize,
    /// Completion position of the (first) read that returned it that many times.
    read: usize,
}

/// The analysis of a whole history.
#[derive(Debug)]
pub struct SetFullAnalysis<'h> {
    history: &'h History,
    config: SetFullConfig,
    values: Vec<Value>,
    keys: Vec<String>,
    elements: Vec<Element>,
    duplicates: Vec<Duplicate>,
    ok_reads: usize,
    /// Elements some read returned that no add on their key attempted.
    never_added: usize,
    /// Adds of an element already added on its key.
    re_added: usize,
    /// Whether the history has times (any client op with a nonzero time).
    times_known: bool,
}

fn key_name(op: &Op) -> String {
    op.key.as_ref().map(|k| k.to_string()).unwrap_or_default()
}

/// Where op `pos` is in the input: `line 12`, or `op 12` when lines are unknown.
fn place(history: &History, pos: usize) -> String {
    match history.line_of(pos) {
        Some(l) => format!("line {l}"),
        None => format!("op {}", history.ops[pos].index),
    }
}

/// Analyse `history` as a set-full workload. `Err` (naming the op) when it cannot be read as one:
/// unpaired ops, functions other than add and read, a read whose value is not a list.
pub fn analyze(history: &History, config: SetFullConfig) -> Result<SetFullAnalysis<'_>, String> {
    let pairs = history.pairs()?;
    let ops = &history.ops;
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if op.is_client() {
            by_key.entry(key_name(op)).or_default().push(i);
        }
    }
    let mut a = SetFullAnalysis {
        history,
        config,
        values: Vec::new(),
        keys: Vec::new(),
        elements: Vec::new(),
        duplicates: Vec::new(),
        ok_reads: 0,
        never_added: 0,
        re_added: 0,
        times_known: ops.iter().any(|o| o.is_client() && o.time_ns > 0),
    };
    let mut interner = Interner::default();
    for (key, positions) in by_key {
        let k = a.keys.len();
        a.keys.push(key);
        a.key(k, &positions, &pairs, &mut interner)?;
    }
    a.values = interner.values;
    Ok(a)
}

impl SetFullAnalysis<'_> {
    /// Track and classify the elements of key number `k`, whose client ops are at `positions`.
    fn key(
        &mut self,
        k: usize,
        positions: &[usize],
        pairs: &[Option<usize>],
        interner: &mut Interner,
    ) -> Result<(), String> {
        let ops = &self.history.ops;
        let ok = |j: &usize| ops[*j].op_type == OpType::Ok;
        let mut reads: Vec<Read> = Vec::new();
        let mut tracked: Vec<Tracked> = Vec::new();
        let mut by_element: HashMap<u32, usize> = HashMap::new();
        // Reads in flight (invoked, completing ok later), by index in `reads`.
        let mut open: Vec<u32> = Vec::new();
        let mut dups: HashMap<u32, (usize, usize)> = HashMap::new();
        for &i in positions {
            let op = &ops[i];
            match (op.f.as_str(), op.op_type) {
                ("add", OpType::Invoke) => {
                    let done = pairs[i];
                    let v = match (&op.value, done) {
                        (Value::Null, Some(j)) => &ops[j].value,
                        (v, _) => v,
                    };
                    let element = interner.id(v);
                    let ok_completion = done.filter(ok);
                    match by_element.get(&element) {
                        Some(&t) => {
                            self.re_added += 1;
                            let t = &mut tracked[t];
                            t.add_invoke = i;
                            t.add_completion = done;
                            t.ok_completions.extend(ok_completion);
                            t.open_at_add = open.clone();
                        }
                        None => {
                            by_element.insert(element, tracked.len());
                            tracked.push(Tracked {
                                element,
                                add_invoke: i,
                                add_completion: done,
                                ok_completions: ok_completion.into_iter().collect(),
                                open_at_add: open.clone(),
                            });
                        }
                    }
                }
                ("read", OpType::Invoke) => {
                    let Some(j) = pairs[i].filter(ok) else {
                        continue;
                    };
                    let mut elements = read_elements(self.history, j, interner)?;
                    elements.sort_unstable();
                    let mut distinct = Vec::with_capacity(elements.len());
                    for run in elements.chunk_by(|a, b| a == b) {
                        distinct.push(run[0]);
                        if run.len() > 1 {
                            let d = dups.entry(run[0]).or_insert((run.len(), j));
                            if run.len() > d.0 {
                                *d = (run.len(), j);
                            }
                        }
                    }
                    open.push(reads.len() as u32);
                    reads.push(Read {
                        invoke: i,
                        completion: j,
                        elements: distinct,
                    });
                }
                ("read", OpType::Ok) => open.retain(|&r| reads[r as usize].completion != i),
                ("add" | "read", _) => {}
                (f, _) => {
                    return Err(format!(
                        "{} (process {}): a set history has only add and read ops, not {f:?}",
                        place(self.history, i),
                        op.process
                    ));
                }
            }
        }
        self.ok_reads += reads.len();
        // For each tracked element, the reads (ascending, i.e. in invoke order) that showed it
        // and completed after its add was invoked.
        let mut present: Vec<Vec<u32>> = vec![Vec::new(); tracked.len()];
        let mut never_added: HashSet<u32> = HashSet::new();
        for (r, read) in reads.iter().enumerate() {
            for e in &read.elements {
                match by_element.get(e) {
                    Some(&t) if read.completion > tracked[t].add_invoke => {
                        present[t].push(r as u32)
                    }
                    Some(_) => {}
                    None => {
                        never_added.insert(*e);
                    }
                }
            }
        }
        self.never_added += never_added.len();
        for (t, shown) in tracked.iter().zip(&present) {
            self.elements.push(classify(ops, k, t, shown, &reads));
        }
        let mut dups: Vec<(u32, (usize, usize))> = dups.into_iter().collect();
        dups.sort_unstable_by_key(|&(_, (_, read))| read);
        self.duplicates
            .extend(dups.into_iter().map(|(element, (count, read))| Duplicate {
                key: k,
                element,
                count,
                read,
            }));
        Ok(())
    }
}

/// The elements of the ok read completed at position `j` (`null` = none), interned.
fn read_elements(history: &History, j: usize, interner: &mut Interner) -> Result<Vec<u32>, String> {
    let op = &history.ops[j];
    match &op.value {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => Ok(a.iter().map(|v| interner.id(v)).collect()),
        other => Err(format!(
            "{} (process {}, read{}): expected the list of the set's elements, got {other}",
            place(history, j),
            op.process,
            op.key
                .as_ref()
                .map(|k| format!(" on key {k}"))
                .unwrap_or_default()
        )),
    }
}

/// The outcome of tracked element `t` of key `k`, given the reads that showed it (`shown`,
/// ascending indexes into `reads`, all completed after its add was invoked).
fn classify(ops: &[Op], k: usize, t: &Tracked, shown: &[u32], reads: &[Read]) -> Element {
    let a = t.add_invoke;
    let known_add = t.ok_completions.iter().copied().filter(|&c| c > a).min();
    let known_read = shown.iter().map(|&r| reads[r as usize].completion).min();
    let known = match (known_add, known_read) {
        (Some(x), Some(y)) if y < x => Some(KnownBy::Read(y)),
        (Some(x), _) => Some(KnownBy::Add(x)),
        (None, Some(y)) => Some(KnownBy::Read(y)),
        (None, None) => None,
    };
    let last_present = shown.last().map(|&r| r as usize);
    // The last read missing it: first among the reads invoked after the add (walked from the
    // latest, skipping those that showed it), else among the reads in flight at the add.
    let mut last_absent = None;
    let (mut r, mut s) = (reads.len(), shown.len());
    while r > 0 && reads[r - 1].invoke > a {
        if s > 0 && shown[s - 1] as usize == r - 1 {
            s -= 1;
            r -= 1;
            continue;
        }
        last_absent = Some(r - 1);
        break;
    }
    if last_absent.is_none() {
        last_absent = t
            .open_at_add
            .iter()
            .filter(|r| shown.binary_search(r).is_err())
            .max()
            .map(|&r| r as usize);
    }
    let stable = last_present.is_some_and(|p| last_absent.is_none_or(|ab| ab < p));
    let lost = match (known, last_absent) {
        (Some(kn), Some(ab)) => last_present.is_none_or(|p| p < ab) && kn.at() < reads[ab].invoke,
        _ => false,
    };
    let outcome = if stable {
        Outcome::Stable
    } else if lost {
        Outcome::Lost
    } else {
        Outcome::NeverRead
    };
    let known_ns = known.map_or(0, |kn| ops[kn.at()].time_ns);
    let after = |read: Option<usize>| read.map_or(0, |r| ops[reads[r].invoke].time_ns + 1);
    Element {
        key: k,
        element: t.element,
        outcome,
        stale: stable
            && known
                .zip(last_absent)
                .is_some_and(|(kn, ab)| reads[ab].invoke > kn.at()),
        add_invoke: a,
        add_completion: t.add_completion,
        known,
        last_present: last_present.map(|r| reads[r].invoke),
        last_absent: last_absent.map(|r| reads[r].invoke),
        stable_latency_ns: stable.then(|| after(last_absent).saturating_sub(known_ns)),
        lost_latency_ns: lost.then(|| after(last_present).saturating_sub(known_ns)),
    }
}

/// Jepsen's `frequency-distribution`: for each of `points`, the ⌊n·q⌋-th smallest of `values`
/// (the largest for q = 1). `None` for no values.
pub fn quantiles(points: &[f64], values: &[u64]) -> Option<Vec<(f64, u64)>> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    Some(
        points
            .iter()
            .map(|&q| {
                let i = ((n as f64 * q).floor() as usize).min(n - 1);
                (q, sorted[i])
            })
            .collect(),
    )
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl SetFullAnalysis<'_> {
    fn op(&self, pos: usize) -> &Op {
        &self.history.ops[pos]
    }

    fn count(&self, o: Outcome) -> usize {
        self.elements.iter().filter(|e| e.outcome == o).count()
    }

    fn stale_count(&self) -> usize {
        self.elements.iter().filter(|e| e.stale).count()
    }

    /// Whether elements need their key to be told apart (more than one key, or a named one).
    fn keyed(&self) -> bool {
        self.keys.len() > 1 || self.keys.first().is_some_and(|k| !k.is_empty())
    }

    /// An element as JSON: its value, or `[key, value]` in a keyed history (the shape of a
    /// `jepsen.independent` tuple).
    fn elem_json(&self, key: usize, element: u32) -> Value {
        let v = self.values[element as usize].clone();
        if self.keyed() {
            json!([self.keys[key], v])
        } else {
            v
        }
    }

    /// An element as text: `3`, or `3 on key a` in a keyed history.
    fn elem_text(&self, key: usize, element: u32) -> String {
        let v = self.values[element as usize].to_string();
        if self.keyed() {
            format!("{v} on key {}", self.keys[key])
        } else {
            v
        }
    }

    /// Where and when op `pos` happened: `line 12, 0.020 s`, `line 12` without times.
    fn at(&self, pos: usize) -> String {
        let p = place(self.history, pos);
        if self.times_known {
            format!("{p}, {:.3} s", secs(self.op(pos).time_ns))
        } else {
            p
        }
    }

    /// How the element's add ended: `ok`, `fail`, `info`, `never completed`.
    fn add_end(&self, e: &Element) -> String {
        let end = e.add_completion.map(|c| self.op(c).op_type);
        match end {
            Some(OpType::Ok) => "ok",
            Some(OpType::Fail) => "fail",
            Some(OpType::Info) => "info",
            Some(OpType::Invoke) | None => "never completed",
        }
        .to_string()
    }

    fn known_text(&self, e: &Element) -> String {
        match e.known {
            Some(KnownBy::Add(p)) => format!("known from its add's ok ({})", self.at(p)),
            Some(KnownBy::Read(p)) => format!(
                "known from a read by process {} that showed it ({})",
                self.op(p).process,
                self.at(p)
            ),
            None => "never known (its add did not complete ok and no read showed it)".into(),
        }
    }

    fn witness(&self, e: &Element) -> String {
        let add = self.op(e.add_invoke);
        let head = format!(
            "element {}: add by process {} ({}) {}; {}",
            self.elem_text(e.key, e.element),
            add.process,
            self.at(e.add_invoke),
            self.add_end(e),
            self.known_text(e)
        );
        let read = |pos: usize| {
            format!(
                "the read by process {} ({})",
                self.op(pos).process,
                self.at(pos)
            )
        };
        match e.outcome {
            Outcome::Lost => {
                let seen = match e.last_present {
                    Some(p) => format!("last shown by {}", read(p)),
                    None => "never shown by a read".into(),
                };
                let missing = e.last_absent.map_or(String::new(), |p| {
                    format!("by process {} ({})", self.op(p).process, self.at(p))
                });
                format!("{head}; {seen}; missing from every read begun since, the latest {missing}")
            }
            Outcome::Stable if e.stale => format!(
                "{head}; missing from {}, which began after it was known; shown by every read begun after that (stable after {:.3} ms)",
                e.last_absent.map(read).unwrap_or_default(),
                ms(e.stable_latency_ns.unwrap_or(0))
            ),
            Outcome::Stable => format!("{head}; shown by every read begun since"),
            Outcome::NeverRead => format!("{head}; no read began after it was known"),
        }
    }

    fn row(&self, e: &Element) -> Value {
        let add = self.op(e.add_invoke);
        let time = |p: Option<usize>| p.map(|p| self.op(p).time_ns);
        let index = |p: Option<usize>| p.map(|p| self.op(p).index);
        json!({
            "key": self.keys[e.key],
            "element": self.values[e.element as usize],
            "outcome": e.outcome.as_str(),
            "stale": e.stale,
            "process": add.process,
            "add_invoke_index": add.index,
            "add_invoke_ns": add.time_ns,
            "add_complete_ns": time(e.add_completion),
            "add_type": self.add_end(e),
            "known_index": index(e.known.map(KnownBy::at)),
            "known_ns": time(e.known.map(KnownBy::at)),
            "known_by": e.known.map(|k| match k { KnownBy::Add(_) => "add", KnownBy::Read(_) => "read" }),
            "last_present_index": index(e.last_present),
            "last_present_ns": time(e.last_present),
            "last_absent_index": index(e.last_absent),
            "last_absent_ns": time(e.last_absent),
            "stable_latency_ms": e.stable_latency_ns.filter(|_| self.times_known).map(ms),
            "lost_latency_ms": e.lost_latency_ns.filter(|_| self.times_known).map(ms),
            "witness": self.witness(e),
        })
    }

    /// Up to [`EXAMPLES_CAP`] rows of the elements `pick` selects, in history order of their
    /// adds, and how many were left off.
    fn rows(&self, pick: impl Fn(&Element) -> bool) -> (Vec<Value>, Vec<Value>, usize) {
        let mut picked: Vec<&Element> = self.elements.iter().filter(|e| pick(e)).collect();
        picked.sort_by_key(|e| e.add_invoke);
        let left_off = picked.len().saturating_sub(EXAMPLES_CAP);
        let kept = &picked[..picked.len() - left_off];
        let list = kept
            .iter()
            .map(|e| self.elem_json(e.key, e.element))
            .collect();
        let rows = kept.iter().map(|e| self.row(e)).collect();
        (list, rows, left_off)
    }

    fn duplicate_rows(&self) -> Vec<Value> {
        self.duplicates
            .iter()
            .take(EXAMPLES_CAP)
            .map(|d| {
                let r = self.op(d.read);
                json!({
                    "key": self.keys[d.key],
                    "element": self.values[d.element as usize],
                    "count": d.count,
                    "read_index": r.index,
                    "read_ns": r.time_ns,
                    "process": r.process,
                    "witness": format!(
                        "element {}: {} times in one read by process {} ({})",
                        self.elem_text(d.key, d.element),
                        d.count,
                        r.process,
                        self.at(d.read)
                    ),
                })
            })
            .collect()
    }

    /// The verdict: see the module doc.
    pub fn verdict(&self) -> Verdict {
        if !self.duplicates.is_empty() || self.count(Outcome::Lost) > 0 {
            Verdict::Invalid
        } else if self.count(Outcome::Stable) == 0 {
            Verdict::Unknown
        } else if self.config.linearizable && self.stale_count() > 0 {
            Verdict::Invalid
        } else {
            Verdict::Valid
        }
    }

    /// Why the verdict is unknown, when it is.
    fn unknown_reason(&self) -> Option<String> {
        if self.verdict() != Verdict::Unknown {
            return None;
        }
        let n = self.elements.len();
        Some(if n == 0 {
            "no client adds in the history: no element to check".to_string()
        } else if self.ok_reads == 0 {
            format!(
                "no ok read in the history: none of the {n} attempted element(s) could be checked"
            )
        } else {
            format!(
                "no element could be checked: every one of the {n} attempted element(s) is never read (no read began after it was known)"
            )
        })
    }

    /// The one-line summary, e.g. `4 elements attempted: 2 stable, 1 lost (3), 1 never read; 1
    /// stale (allowed: linearizable reads not claimed)`.
    pub fn summary(&self) -> String {
        if let Some(reason) = self.unknown_reason().filter(|_| self.elements.is_empty()) {
            return reason;
        }
        let lost: Vec<String> = {
            let mut l: Vec<&Element> = self
                .elements
                .iter()
                .filter(|e| e.outcome == Outcome::Lost)
                .collect();
            l.sort_by_key(|e| e.add_invoke);
            l.iter().map(|e| self.elem_text(e.key, e.element)).collect()
        };
        let mut s = format!(
            "{} attempted: {} stable, {} lost",
            counted(self.elements.len(), "element", "elements"),
            self.count(Outcome::Stable),
            lost.len()
        );
        if !lost.is_empty() {
            s.push_str(&format!(" ({})", preview(&lost)));
        }
        s.push_str(&format!(", {} never read", self.count(Outcome::NeverRead)));
        let stale = self.stale_count();
        if stale > 0 {
            s.push_str(&format!(
                "; {stale} stale ({})",
                if self.config.linearizable {
                    "linearizable reads claimed: a violation"
                } else {
                    "allowed: linearizable reads not claimed"
                }
            ));
        }
        if !self.duplicates.is_empty() {
            s.push_str(&format!("; {} duplicated", self.duplicates.len()));
        }
        if let Some(reason) = self.unknown_reason() {
            s.push_str(&format!("; unknown: {reason}"));
        }
        s
    }

    fn latencies(&self, pick: impl Fn(&Element) -> Option<u64>) -> Value {
        let values: Vec<u64> = self.elements.iter().filter_map(pick).collect();
        match quantiles(&QUANTILES, &values).filter(|_| self.times_known) {
            Some(q) => Value::Object(
                q.into_iter()
                    .map(|(p, v)| (p.to_string(), json!(ms(v))))
                    .collect(),
            ),
            None => Value::Null,
        }
    }

    /// The checker result: verdict, summary and details JSON.
    pub fn result(&self) -> CheckResult {
        let verdict = self.verdict();
        let (lost, lost_rows, lost_left_off) = self.rows(|e| e.outcome == Outcome::Lost);
        let (stale, stale_rows, stale_left_off) = self.rows(|e| e.stale);
        let (never_read, never_read_rows, never_read_left_off) =
            self.rows(|e| e.outcome == Outcome::NeverRead);
        let mut worst: Vec<&Element> = self.elements.iter().filter(|e| e.stale).collect();
        worst.sort_by_key(|e| (std::cmp::Reverse(e.stable_latency_ns), e.add_invoke));
        let worst: Vec<Value> = worst
            .iter()
            .take(WORST_STALE)
            .map(|e| self.row(e))
            .collect();
        let duplicated: Vec<Value> = self
            .duplicates
            .iter()
            .take(EXAMPLES_CAP)
            .map(|d| json!([self.elem_json(d.key, d.element), d.count]))
            .collect();
        let mut details = json!({
            "verdict": verdict,
            "linearizable": self.config.linearizable,
            "attempt_count": self.elements.len(),
            "stable_count": self.count(Outcome::Stable),
            "lost_count": self.count(Outcome::Lost),
            "never_read_count": self.count(Outcome::NeverRead),
            "stale_count": self.stale_count(),
            "duplicated_count": self.duplicates.len(),
            "ok_reads": self.ok_reads,
            "keys_total": self.keys.len(),
            "never_added_count": self.never_added,
            "re_added_count": self.re_added,
            "lost": lost,
            "lost_left_off": lost_left_off,
            "stale": stale,
            "stale_left_off": stale_left_off,
            "never_read": never_read,
            "never_read_left_off": never_read_left_off,
            "duplicated": duplicated,
            "duplicated_left_off": self.duplicates.len().saturating_sub(EXAMPLES_CAP),
            "lost_elements": lost_rows,
            "stale_elements": stale_rows,
            "never_read_elements": never_read_rows,
            "duplicated_elements": self.duplicate_rows(),
            "worst_stale": worst,
            "stable_latencies_ms": self.latencies(|e| e.stable_latency_ns),
            "lost_latencies_ms": self.latencies(|e| e.lost_latency_ns),
        });
        if let (Value::Object(m), Some(reason)) = (&mut details, self.unknown_reason()) {
            m.insert("unknown_reason".into(), reason.into());
        }
        CheckResult {
            checker: NAME.into(),
            verdict,
            summary: self.summary(),
            details,
        }
    }
}

/// `1 element`, `3 elements`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// At most five items joined, with "and N more".
fn preview(items: &[String]) -> String {
    let mut s = items.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > 5 {
        s.push_str(&format!(" and {} more", items.len() - 5));
    }
    s
}

/// The lines `check` prints under a set-full result's summary: up to `per_class` witnesses of
/// lost, stale and duplicated elements, the never-read ones named, and the latency quantiles.
pub fn witness_lines(details: &Value, per_class: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (class, key) in [
        ("lost", "lost_elements"),
        ("stale", "stale_elements"),
        ("duplicated", "duplicated_elements"),
    ] {
        let rows = details[key].as_array().into_iter().flatten();
        for w in rows.take(per_class) {
            if let Some(text) = w["witness"].as_str() {
                out.push(format!("{class}: {text}"));
            }
        }
    }
    let never: Vec<String> = details["never_read"]
        .as_array()
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect();
    if !never.is_empty() {
        let total = details["never_read_count"]
            .as_u64()
            .unwrap_or(never.len() as u64);
        out.push(format!("never read ({total}): {}", preview(&never)));
    }
    for (what, key) in [
        ("stable latencies", "stable_latencies_ms"),
        ("lost latencies", "lost_latencies_ms"),
    ] {
        if let Some(q) = details[key].as_object() {
            let parts: Vec<String> = q.iter().map(|(p, v)| format!("{p}: {v}")).collect();
            out.push(format!("{what} (ms, by quantile): {}", parts.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests;
