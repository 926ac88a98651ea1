//! Operation histories: the `Op` record, JSONL reading and writing, and invoke↔completion pairing.
//!
//! Owns the on-disk history format (one JSON object per line, described in ARCHITECTURE.md, "History format") and the pure views the
//! checkers need. Does not own file layout (that is `store`) or who writes the history (only the
//! interpreter does). Reading never panics: a malformed line is an `Err` naming the line; a torn
//! *last* line (a crash mid-write) is skipped with a warning.

mod jsonl;
pub use crate::name::Name;
pub use jsonl::{JsonlAhead, JsonlBlocks, JsonlReader, LineFilter, plain_key};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::io::{BufRead, Write};
use std::path::Path;

/// The four op types of Jepsen histories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    /// The op was issued.
    Invoke,
    /// The op completed and took effect.
    Ok,
    /// The op definitely did not take effect.
    Fail,
    /// The op may or may not have taken effect (timeouts, crashes, unknown errors).
    Info,
}

/// Who issued an op: a numbered client process or the nemesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Process {
    /// A logical client process. A thread whose op ends `info` continues under a new process id.
    Client(u64),
    /// The fault injector.
    Nemesis,
}

impl Process {
    /// The client process number, if this is a client.
    pub fn client(self) -> Option<u64> {
        match self {
            Process::Client(p) => Some(p),
            Process::Nemesis => None,
        }
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(p) => write!(f, "{p}"),
            Process::Nemesis => f.write_str("nemesis"),
        }
    }
}

impl Serialize for Process {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Process::Client(p) => s.serialize_u64(*p),
            Process::Nemesis => s.serialize_str("nemesis"),
        }
    }
}

impl<'de> Deserialize<'de> for Process {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let other = |v: Value| {
            serde::de::Error::custom(format!(
                "process must be an integer or \"nemesis\", got {v}"
            ))
        };
        match Integer::deserialize(d)? {
            Integer::U(n) => Ok(Process::Client(n)),
            Integer::I(_) | Integer::Other(Value::Number(_)) => Err(serde::de::Error::custom(
                "process must be a non-negative integer",
            )),
            Integer::Other(Value::String(s)) if s == "nemesis" => Ok(Process::Nemesis),
            Integer::Other(Value::String(s)) => s.parse().map(Process::Client).map_err(|_| {
                serde::de::Error::custom(format!(
                    "process must be an integer or \"nemesis\", got {s:?}"
                ))
            }),
            Integer::Null => Err(other(Value::Null)),
            Integer::Other(v) => Err(other(v)),
        }
    }
}

/// A field whose common form is an integer (`process`, `time`), read without building a
/// [`Value`] for it (the reader's hot path); anything else as the `Value` it is, for the
/// field's own rules and words.
enum Integer {
    U(u64),
    /// Negative.
    I(i64),
    Null,
    Other(Value),
}

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Integer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Integer, E> {
                Ok(Integer::U(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Integer, E> {
                Ok(u64::try_from(n).map_or(Integer::I(n), Integer::U))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Integer, E> {
                Ok(Integer::Other(Value::from(n)))
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Integer, E> {
                Ok(Integer::Other(Value::Bool(b)))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Integer, E> {
                Ok(Integer::Other(Value::String(s.to_string())))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Integer, E> {
                Ok(Integer::Null)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Integer, E> {
                Ok(Integer::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Integer, D::Error> {
                Integer::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Integer, A::Error> {
                let v = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(a))?;
                Ok(Integer::Other(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Integer, A::Error> {
                let v = Value::deserialize(serde::de::value::MapAccessDeserializer::new(a))?;
                Ok(Integer::Other(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Keys are strings in memory; integer keys in input files are accepted and stringified.
fn de_key<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Name>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<Name>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or integer key")
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
            Ok(Some(Name::new(s)))
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
            Ok(Some(Name::new(&n.to_string())))
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
            Ok(Some(Name::new(&n.to_string())))
        }
        fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Self::Value, E> {
            Ok(Some(Name::new(&Value::from(n).to_string())))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(V)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
            let v = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(a))?;
            Err(serde::de::Error::custom(format!(
                "key must be a string or integer, got {v}"
            )))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
            let v = Value::deserialize(serde::de::value::MapAccessDeserializer::new(a))?;
            Err(serde::de::Error::custom(format!(
                "key must be a string or integer, got {v}"
            )))
        }
        fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Self::Value, E> {
            Err(E::custom(format!(
                "key must be a string or integer, got {b}"
            )))
        }
    }
    d.deserialize_option(V)
}

/// `time`: nanoseconds, or Jepsen's `-1` (or `null`) for unknown, which reads as 0.
fn de_time<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let bad = |v: Value| {
        serde::de::Error::custom(format!(
            "time must be a non-negative integer (ns) or -1 (unknown), got {v}"
        ))
    };
    match Integer::deserialize(d)? {
        Integer::U(n) => Ok(n),
        Integer::Null | Integer::I(-1) => Ok(0),
        Integer::I(n) => Err(bad(Value::from(n))),
        Integer::Other(v) => Err(bad(v)),
    }
}

/// One history event. Field order matches the documented JSONL format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Position in the history, 0-based, dense.
    #[serde(default)]
    pub index: u64,
    /// Nanoseconds since the run started, from a monotonic clock. 0 means unknown: a missing
    /// `time` reads as 0, and so does Jepsen's `-1` (in our JSONL as in imported histories).
    #[serde(rename = "time", default, deserialize_with = "de_time")]
    pub time_ns: u64,
    /// invoke | ok | fail | info.
    #[serde(rename = "type")]
    pub op_type: OpType,
    /// Issuing process.
    pub process: Process,
    /// Function name: `read`, `write`, `cas`, or a nemesis verb such as `start-partition`.
    pub f: Name,
    /// Key for independent-key workloads.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_key"
    )]
    pub key: Option<Name>,
    /// Argument on invoke, result on completion (`null` when unknown).
    #[serde(default)]
    pub value: Value,
    /// Node the client thread is bound to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Name>,
    /// Error text for fail/info completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// System-provided version of the value read or written (e.g. etcd mod_revision), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

impl Op {
    /// A fresh op with empty optional fields.
    pub fn new(op_type: OpType, process: Process, f: impl Into<Name>, value: Value) -> Op {
        Op {
            index: 0,
            time_ns: 0,
            op_type,
            process,
            f: f.into(),
            key: None,
            value,
            node: None,
            error: None,
            version: None,
        }
    }

    /// True for client (non-nemesis) ops.
    pub fn is_client(&self) -> bool {
        matches!(self.process, Process::Client(_))
    }
}

/// Why a history could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// File that failed.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A line is not a valid op.
    #[error("{path}:{line}: {message}")]
    Malformed {
        /// File containing the line.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong and what was expected.
        message: String,
    },
    /// Ops are individually valid but do not form a well-formed history.
    #[error("{path}: ill-formed history: {message}")]
    IllFormed {
        /// File containing the history.
        path: String,
        /// What is inconsistent (e.g. a completion with no invoke).
        message: String,
    },
}

/// A parsed history plus what reading it noticed.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Ops in history order.
    pub ops: Vec<Op>,
    /// Non-fatal problems (e.g. a torn last line), for the user to see.
    pub warnings: Vec<String>,
    /// The 1-based line of the input each op starts on, when the reader knew it (every reader of
    /// a file: JSONL, EDN, JSON arrays, console logs, `history.txt`, Porcupine lines); empty
    /// otherwise. Keeps error messages about an op pointing into the file.
    /// 32-bit, as a line past 4 billion is not a history anyone reads into memory.
    pub lines: Vec<u32>,
    /// Why the input ends in a crash artefact (a torn last line, a killed writer's zero
    /// padding), when it does: ops after it may be missing, so nothing read from it is valid.
    pub cut_short: Option<String>,
    /// The input held completions only, no client invoke (as Elle's tests and elle-cli inputs
    /// write them), and [`History::synthesize_invokes`] put an invoke before each: process order
    /// is known, real-time order is not (Elle draws no real-time edge without invokes).
    pub invokes_synthesized: bool,
}

impl History {
    /// Wrap ops, renumbering `index` densely.
    pub fn from_ops(mut ops: Vec<Op>) -> History {
        for (i, op) in ops.iter_mut().enumerate() {
            op.index = i as u64;
        }
        History {
            ops,
            ..Default::default()
        }
    }

    /// Wrap ops read from a file, with the line each starts on (see [`History::lines`]).
    pub fn from_ops_at_lines(ops: Vec<Op>, lines: Vec<usize>) -> History {
        let mut h = History::from_ops(ops);
        if lines.len() == h.ops.len() {
            h.lines = lines.into_iter().map(line_number).collect();
        }
        h
    }

    /// The 1-based input line op `i` starts on, when known.
    pub fn line_of(&self, i: usize) -> Option<usize> {
        self.lines.get(i).map(|&l| l as usize)
    }

    /// Parse JSONL from a reader. `name` labels errors (usually the file path).
    ///
    /// Every non-blank line must be an op object. Only the *last* line may be dropped, with a
    /// warning, and only when it is a prefix of an op (a write torn by a crash: the JSON ends
    /// early); a complete line that is not an op (`{"foo":1}`) is an error wherever it is, and so
    /// is a file whose only op line is torn. Blank input is an empty history.
    pub fn read_jsonl(reader: impl BufRead, name: &str) -> Result<History, HistoryError> {
        History::read_jsonl_sized(reader, name, 0)
    }

    /// [`History::read_jsonl`] with room for `expected` ops made up front: a history of millions
    /// of ops then never grows its op vector by copying it (each doubling faults in and zeroes
    /// new pages, and that, not the JSON, was most of the time of reading a big file).
    pub fn read_jsonl_sized(
        reader: impl BufRead,
        name: &str,
        expected: usize,
    ) -> Result<History, HistoryError> {
        let mut ops = Vec::with_capacity(expected);
        let mut lines = Vec::with_capacity(expected);
        let mut jsonl = JsonlReader::new(reader, name);
        while let Some((op, line)) = jsonl.next_op()? {
            ops.push(op);
            lines.push(line_number(line));
        }
        let (warnings, cut_short) = jsonl.finish()?;
        Ok(History {
            ops,
            warnings,
            lines,
            cut_short,
            invokes_synthesized: false,
        })
    }

    /// Give a completion-only history (client completions, no client invoke at all) an invoke
    /// right before each client completion, at the same process, time and input line; its value
    /// is the completion's, with the values of transaction reads (`["r", k, v]`) nil, as Elle
    /// reads such a history. Sets [`History::invokes_synthesized`] and returns true when it did;
    /// a history with any client invoke is left alone (a bare completion in it stays an error of
    /// [`History::pairs`]).
    pub fn synthesize_invokes(&mut self) -> bool {
        let clients = || self.ops.iter().filter(|o| o.is_client());
        if clients().any(|o| o.op_type == OpType::Invoke) || clients().next().is_none() {
            return false;
        }
        let keep_lines = self.lines.len() == self.ops.len();
        let mut ops = Vec::with_capacity(self.ops.len() * 2);
        let mut lines = Vec::with_capacity(if keep_lines { self.ops.len() * 2 } else { 0 });
        for (i, op) in std::mem::take(&mut self.ops).into_iter().enumerate() {
            let line = self.lines.get(i).copied();
            if op.is_client() {
                let mut invoke = Op::new(
                    OpType::Invoke,
                    op.process,
                    op.f.clone(),
                    invoke_value(&op.value),
                );
                invoke.time_ns = op.time_ns;
                invoke.key = op.key.clone();
                invoke.node = op.node.clone();
                ops.push(invoke);
                lines.extend(line.filter(|_| keep_lines));
            }
            ops.push(op);
            lines.extend(line.filter(|_| keep_lines));
        }
        for (i, op) in ops.iter_mut().enumerate() {
            op.index = i as u64;
        }
        self.ops = ops;
        self.lines = lines;
        self.invokes_synthesized = true;
        true
    }

    /// Read a JSONL history file (its size and first lines tell how many ops to make room for).
    pub fn read_file(path: &Path) -> Result<History, HistoryError> {
        let name = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|source| HistoryError::Io {
            path: name.clone(),
            source,
        })?;
        let size = f.metadata().map_or(0, |m| m.len());
        let mut reader = std::io::BufReader::with_capacity(1 << 16, f);
        let sample = reader.fill_buf().map_err(|source| HistoryError::Io {
            path: name.clone(),
            source,
        })?;
        let expected = expected_ops(sample, size);
        History::read_jsonl_sized(reader, &name, expected)
    }

    /// `op 3 (write 2, line 7)`: op `i` by its position, what it did and, when known, the input
    /// line it starts on (a file read without indices has every `index` 0).
    fn describe_op(&self, i: usize) -> String {
        let op = &self.ops[i];
        match self.line_of(i) {
            Some(line) => format!("op {i} ({} {}, line {line})", op.f, op.value),
            None => format!("op {i} ({} {})", op.f, op.value),
        }
    }

    /// `line 7` when the input line of op `i` is known, else `op 7` (its position).
    fn place(&self, i: usize) -> String {
        match self.line_of(i) {
            Some(line) => format!("line {line}"),
            None => format!("op {i}"),
        }
    }

    /// Why completion `c` cannot complete invoke `inv`, naming both: it names another function,
    /// another key (only when both name one: an importer may leave a completion's key out), or a
    /// time before the invoke's (only when both times are known; 0 is unknown, see
    /// [`Op::time_ns`]). Values may differ: a read's completion carries what it read.
    fn mismatch(&self, inv: usize, c: usize) -> Option<String> {
        let (invoke, done) = (&self.ops[inv], &self.ops[c]);
        let cause = if invoke.f != done.f {
            format!("with f {:?}, but that invoke was f {:?}", done.f, invoke.f)
        } else if let (Some(a), Some(b)) = (&invoke.key, &done.key)
            && a != b
        {
            format!("on key {b:?}, but that invoke was on key {a:?}")
        } else if invoke.time_ns > 0 && done.time_ns > 0 && done.time_ns < invoke.time_ns {
            format!(
                "at time {}, before that invoke's time {}",
                done.time_ns, invoke.time_ns
            )
        } else {
            return None;
        };
        Some(format!(
            "{} completes the invoke on {} {cause}",
            self.place(c),
            self.place(inv)
        ))
    }

    /// Pair every invoke with its completion. `pairs[i]` is `Some(j)` when op `i` is an invoke
    /// completed by op `j`, `None` for invokes with no completion and for non-invokes.
    /// Nemesis ops are not paired. Errors on a completion without an open invoke, a second invoke
    /// on a busy process, and a completion that does not match its invoke (see
    /// [`History::mismatch`]): such a history does not mean anything, whichever checker reads it.
    pub fn pairs(&self) -> Result<Vec<Option<usize>>, String> {
        let mut pairs = vec![None; self.ops.len()];
        self.pair_each(|inv, c| pairs[inv] = Some(c))?;
        Ok(pairs)
    }

    /// [`History::pairs`] in 4 bytes per op instead of 16, for the checkers of big histories
    /// (a 10M-op history's pairs are 80 MB here, 320 MB there). Errors as `pairs` does, and on a
    /// history of 4 billion events or more.
    pub fn completions(&self) -> Result<Completions, String> {
        if u32::try_from(self.ops.len()).is_err() {
            return Err(
                "the history has more than 4 billion events, more than the checker can index"
                    .into(),
            );
        }
        let mut of = vec![NOT_COMPLETED; self.ops.len()];
        self.pair_each(|inv, c| of[inv] = c as u32)?;
        Ok(Completions(of))
    }

    /// Call `pair(invoke, completion)` for every pair, in completion order; see [`History::pairs`].
    fn pair_each(&self, mut pair: impl FnMut(usize, usize)) -> Result<(), String> {
        let mut open: std::collections::HashMap<Process, usize> = std::collections::HashMap::new();
        for (i, op) in self.ops.iter().enumerate() {
            if op.process == Process::Nemesis {
                continue;
            }
            match op.op_type {
                OpType::Invoke => {
                    if let Some(prev) = open.insert(op.process, i) {
                        return Err(format!(
                            "process {} invoked {} while {} was still open",
                            op.process,
                            self.describe_op(i),
                            self.describe_op(prev)
                        ));
                    }
                }
                _ => match open.remove(&op.process) {
                    Some(inv) => {
                        if let Some(why) = self.mismatch(inv, i) {
                            return Err(why);
                        }
                        pair(inv, i);
                    }
                    None => {
                        return Err(format!(
                            "{} ({:?} by process {}) completes nothing: no open invoke (a history is either invokes with their completions, or completions only, as Elle writes them; not both)",
                            self.describe_op(i),
                            op.op_type,
                            op.process
                        ));
                    }
                },
            }
        }
        Ok(())
    }
}

/// A 1-based line number as [`History::lines`] keeps it (saturating past `u32::MAX`).
pub fn line_number(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// [`Completions`]' mark of an op with no completion.
const NOT_COMPLETED: u32 = u32::MAX;

/// Each op's completion, as [`History::completions`] makes them.
#[derive(Debug, Clone)]
pub struct Completions(Vec<u32>);

impl Completions {
    /// The index of op `i`'s completion when it is an invoke that has one.
    pub fn of(&self, i: usize) -> Option<usize> {
        self.0
            .get(i)
            .filter(|&&c| c != NOT_COMPLETED)
            .map(|&c| c as usize)
    }
}

/// The invoke value Elle reads for a completion: a transaction's micro-ops with every read's
/// value nil (`["r", k, [1, 2]]` → `["r", k, null]`); any other value as it is.
fn invoke_value(done: &Value) -> Value {
    let Value::Array(mops) = done else {
        return done.clone();
    };
    let is_read = |m: &Value| {
        m.as_array().is_some_and(|p| {
            p.len() == 3 && p[0].as_str().map(|f| f.trim_start_matches(':')) == Some("r")
        })
    };
    if mops.is_empty()
        || !mops
            .iter()
            .all(|m| m.as_array().is_some_and(|p| p.len() == 2 || p.len() == 3))
    {
        return done.clone();
    }
    Value::Array(
        mops.iter()
            .map(|m| match m {
                Value::Array(p) if is_read(m) => {
                    Value::Array(vec![p[0].clone(), p[1].clone(), Value::Null])
                }
                other => other.clone(),
            })
            .collect(),
    )
}

/// A serde_json error as words with the column, without its one-line "at line 1" position.
fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let words = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(w, _)| w);
    format!("{words} (column {})", e.column())
}

/// True when `line` is a prefix of a JSON object cut short (the parse ran out of input), also
/// when the cut split a UTF-8 character.
fn is_torn_op(line: &[u8], e: &serde_json::Error) -> bool {
    if !line.starts_with(b"{") {
        return false;
    }
    if e.classify() == serde_json::error::Category::Eof {
        return true;
    }
    match std::str::from_utf8(line) {
        Err(u) if u.error_len().is_none() => serde_json::from_slice::<Op>(&line[..u.valid_up_to()])
            .err()
            .is_some_and(|e| e.classify() == serde_json::error::Category::Eof),
        _ => false,
    }
}

/// Appends ops to a JSONL sink, one line per op (the run's sink is `mapped::HistoryFile`; a crash
/// loses at most what was not yet flushed to it). Assigns `index` densely.
pub struct HistoryWriter<W: Write> {
    out: W,
    next_index: u64,
    buf: Vec<u8>,
}

impl<W: Write> HistoryWriter<W> {
    /// Wrap a writer (normally an append-mode file).
    pub fn new(out: W) -> Self {
        HistoryWriter {
            out,
            next_index: 0,
            buf: Vec::with_capacity(256),
        }
    }

    /// Number of ops written so far.
    pub fn len(&self) -> u64 {
        self.next_index
    }

    /// True if nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.next_index == 0
    }

    /// Assign the next index to `op`, write it as one line, and return the index.
    pub fn append(&mut self, op: &mut Op) -> std::io::Result<u64> {
        op.index = self.next_index;
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, op).map_err(std::io::Error::other)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.next_index += 1;
        Ok(op.index)
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// About how many ops a JSONL file of `size` bytes holds, from the line length of its first
/// bytes `sample`, with a quarter more: later lines tend to be longer (bigger indices, times and
/// keys), and room never used costs address space, not memory (its pages are never touched). 0
/// for a file under 1 MiB, where growing as it reads costs nothing worth saving.
fn expected_ops(sample: &[u8], size: u64) -> usize {
    let lines = sample.iter().filter(|&&b| b == b'\n').count();
    if lines == 0 || size < 1 << 20 {
        return 0;
    }
    let per_line = (sample.len() / lines).max(16) as u64;
    (size / per_line + size / per_line / 4) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_file_gets_room_for_its_ops_from_its_first_lines() {
        let sample = b"{\"f\":\"read\",\"value\":null}\n".repeat(100);
        // 26-byte lines, and a quarter more is made room for.
        let size = 26 << 20;
        assert_eq!(expected_ops(&sample, size), (1 << 20) + (1 << 18));
        assert_eq!(expected_ops(&sample, 1000), 0);
        assert_eq!(expected_ops(b"no newline", size), 0);
    }
    use serde_json::json;

    #[test]
    fn round_trips_design_md_example_lines() {
        let text = r#"{"index":17,"time":1843211022,"type":"invoke","process":3,"f":"cas","key":"k2","value":[1,4]}
{"index":18,"time":1846002113,"type":"ok","process":3,"f":"cas","key":"k2","value":[1,4]}
{"index":19,"time":1901112000,"type":"info","process":"nemesis","f":"start-partition","value":{"grudge":{"n1":["n2","n3"]}}}
"#;
        let h = History::read_jsonl(text.as_bytes(), "t").unwrap();
        assert_eq!(h.ops.len(), 3);
        assert_eq!(h.ops[0].process, Process::Client(3));
        assert_eq!(h.ops[0].value, json!([1, 4]));
        assert_eq!(h.ops[2].process, Process::Nemesis);
        assert_eq!(h.ops[1].op_type, OpType::Ok);
        let line = serde_json::to_string(&h.ops[0]).unwrap();
        assert_eq!(line, text.lines().next().unwrap());
    }

    #[test]
    fn process_and_time_read_every_form_they_may_take() {
        let op = |process: &str, time: &str| {
            let line =
                format!(r#"{{"type":"invoke","process":{process},"time":{time},"f":"read"}}"#);
            serde_json::from_str::<Op>(&line).map_err(|e| e.to_string())
        };
        let ok = |p: &str, t: &str| op(p, t).map(|o| (o.process, o.time_ns)).unwrap();
        assert_eq!(ok("7", "5"), (Process::Client(7), 5));
        assert_eq!(ok("\"7\"", "-1"), (Process::Client(7), 0));
        assert_eq!(ok("\"nemesis\"", "null"), (Process::Nemesis, 0));
        let err = |p: &str, t: &str| op(p, t).unwrap_err();
        for p in ["-3", "1.5"] {
            assert!(
                err(p, "1").contains("process must be a non-negative integer"),
                "{p}"
            );
        }
        assert!(
            err("\"n1\"", "1").contains(r#"process must be an integer or "nemesis", got "n1""#)
        );
        for (p, shown) in [
            ("null", "null"),
            ("[1]", "[1]"),
            ("{\"a\":1}", r#"{"a":1}"#),
            ("true", "true"),
        ] {
            let e = err(p, "1");
            assert!(
                e.contains(&format!(
                    r#"process must be an integer or "nemesis", got {shown}"#
                )),
                "{e}"
            );
        }
        for (t, shown) in [
            ("-2", "-2"),
            ("1.5", "1.5"),
            ("\"x\"", "\"x\""),
            ("[1]", "[1]"),
        ] {
            let e = err("1", t);
            assert!(
                e.contains(&format!(
                    "time must be a non-negative integer (ns) or -1 (unknown), got {shown}"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn torn_last_line_is_a_warning_not_an_error() {
        let text = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n{\"type\":\"ok\",\"proc";
        let h = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap();
        assert_eq!(h.ops.len(), 1);
        assert_eq!(h.warnings.len(), 1);
        assert!(h.warnings[0].contains("h.jsonl:2"), "{:?}", h.warnings);
    }

    #[test]
    fn zeros_after_the_last_record_are_a_warning_and_a_record_cut_before_them_is_torn() {
        let ok = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n";
        let padded = format!("{ok}{}", "\0".repeat(4000));
        let h = History::read_jsonl(padded.as_bytes(), "h.jsonl").unwrap();
        assert_eq!(h.ops.len(), 1);
        assert!(
            h.warnings[0].contains("4000 zero bytes"),
            "{:?}",
            h.warnings
        );
        assert!(h.cut_short.is_some());
        let whole = History::read_jsonl(ok.as_bytes(), "h.jsonl").unwrap();
        assert!(whole.cut_short.is_none() && whole.warnings.is_empty());
        let cut = format!("{ok}{{\"type\":\"ok\",\"pro{}", "\0".repeat(100));
        let h = History::read_jsonl(cut.as_bytes(), "h.jsonl").unwrap();
        assert_eq!(h.ops.len(), 1);
        assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
        assert!(h.warnings[1].contains("torn last line"), "{:?}", h.warnings);
        // Only zeros (killed before the first record): an empty history.
        let none = "\0".repeat(64);
        assert!(
            History::read_jsonl(none.as_bytes(), "h.jsonl")
                .unwrap()
                .ops
                .is_empty()
        );
        // Zeros inside the file are not padding.
        let inside = format!("{ok}\0\0\n{ok}");
        assert!(History::read_jsonl(inside.as_bytes(), "h.jsonl").is_err());
    }

    #[test]
    fn time_minus_one_is_unknown_and_other_negatives_are_errors() {
        let text = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"time\":-1}\n{\"type\":\"ok\",\"process\":0,\"f\":\"read\",\"time\":null}\n";
        let h = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap();
        assert_eq!((h.ops[0].time_ns, h.ops[1].time_ns), (0, 0));
        let e = History::read_jsonl(text.replace("-1", "-2").as_bytes(), "h.jsonl").unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with("h.jsonl:1:"), "{e}");
        assert!(e.contains("or -1 (unknown), got -2"), "{e}");
    }

    #[test]
    fn completion_only_histories_get_an_invoke_before_each_completion() {
        let text = r#"{"type":"ok","process":0,"f":"txn","value":[["append",1,2],["r",1,[2]]],"time":5}
{"type":"info","process":"nemesis","f":"start-partition"}
{"type":"fail","process":1,"f":"txn","value":[["append",1,3]]}
"#;
        let mut h = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap();
        assert!(h.synthesize_invokes());
        assert!(h.invokes_synthesized);
        let shape: Vec<(OpType, u64, usize)> = h
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.op_type, o.index, h.lines[i] as usize))
            .collect();
        assert_eq!(
            shape,
            vec![
                (OpType::Invoke, 0, 1),
                (OpType::Ok, 1, 1),
                (OpType::Info, 2, 2),
                (OpType::Invoke, 3, 3),
                (OpType::Fail, 4, 3),
            ]
        );
        assert_eq!(
            h.ops[0].value,
            serde_json::json!([["append", 1, 2], ["r", 1, null]])
        );
        assert_eq!(h.ops[0].time_ns, 5);
        assert_eq!(h.ops[3].value, h.ops[4].value);
        assert_eq!(h.pairs().unwrap()[0], Some(1));
        // Twice is once; a history with an invoke is left alone, its bare completion an error.
        assert!(!h.synthesize_invokes());
        let mixed = r#"{"type":"invoke","process":0,"f":"txn","value":[["r",1,null]]}
{"type":"ok","process":0,"f":"txn","value":[["r",1,[]]]}
{"type":"ok","process":0,"f":"txn","value":[["r",1,[]]]}
"#;
        let mut h = History::read_jsonl(mixed.as_bytes(), "m.jsonl").unwrap();
        assert!(!h.synthesize_invokes());
        let e = h.pairs().unwrap_err();
        assert!(
            e.contains("line 3) (Ok by process 0) completes nothing"),
            "{e}"
        );
        assert!(e.contains("completions only"), "{e}");
    }

    #[test]
    fn malformed_middle_line_names_the_line() {
        let text = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n{\"type\":\"bogus\",\"process\":0,\"f\":\"read\"}\n{\"type\":\"ok\",\"process\":0,\"f\":\"read\"}\n";
        let err = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("h.jsonl:2:"), "{msg}");
    }

    #[test]
    fn each_op_keeps_the_line_it_was_read_from() {
        let text = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n\n{\"type\":\"ok\",\"process\":0,\"f\":\"read\"}\n";
        let h = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap();
        assert_eq!(h.lines, vec![1, 3]);
        assert_eq!((h.line_of(1), h.line_of(2)), (Some(3), None));
        assert!(History::from_ops(h.ops).lines.is_empty());
    }

    #[test]
    fn integer_keys_are_accepted() {
        let h = History::read_jsonl(
            r#"{"type":"invoke","process":0,"f":"read","key":7}"#.as_bytes(),
            "t",
        )
        .unwrap();
        assert_eq!(h.ops[0].key.as_deref(), Some("7"));
        let line = |key: &str| format!(r#"{{"type":"invoke","process":0,"f":"read","key":{key}}}"#);
        let read = |key: &str| History::read_jsonl(line(key).as_bytes(), "t");
        assert_eq!(read("-3").unwrap().ops[0].key.as_deref(), Some("-3"));
        assert_eq!(read("null").unwrap().ops[0].key, None);
        for (bad, shown) in [
            ("[1]", "[1]"),
            (r#"{"a":1}"#, r#"{"a":1}"#),
            ("true", "true"),
        ] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("key must be a string or integer, got {shown}")),
                "{e}"
            );
        }
    }

    #[test]
    fn pairs_match_invokes_to_completions_and_reject_orphans() {
        let mk = |t, p| Op::new(t, Process::Client(p), "read", Value::Null);
        let h = History::from_ops(vec![
            mk(OpType::Invoke, 0),
            mk(OpType::Invoke, 1),
            mk(OpType::Ok, 1),
            mk(OpType::Info, 0),
            mk(OpType::Invoke, 2),
        ]);
        assert_eq!(h.pairs().unwrap(), vec![Some(3), Some(2), None, None, None]);
        let bad = History::from_ops(vec![mk(OpType::Ok, 0)]);
        assert!(bad.pairs().unwrap_err().contains("no open invoke"));
        let busy = History::from_ops(vec![mk(OpType::Invoke, 0), mk(OpType::Invoke, 0)]);
        assert!(busy.pairs().unwrap_err().contains("still open"));
    }

    /// An invoke and its completion read from JSONL lines 1 and 3 (a nemesis op between them).
    fn pair_of(invoke: &str, done: &str) -> Result<Vec<Option<usize>>, String> {
        let nemesis = r#"{"type":"info","process":"nemesis","f":"start-partition","time":1}"#;
        let text = format!("{invoke}\n{nemesis}\n{done}\n");
        History::read_jsonl(text.as_bytes(), "h.jsonl")
            .unwrap()
            .pairs()
    }

    #[test]
    fn a_completion_naming_another_function_names_both_lines() {
        let err = pair_of(
            r#"{"type":"invoke","process":0,"f":"write","value":1}"#,
            r#"{"type":"ok","process":0,"f":"read","value":1}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            r#"line 3 completes the invoke on line 1 with f "read", but that invoke was f "write""#
        );
    }

    #[test]
    fn a_completion_naming_another_key_is_refused_only_when_both_name_one() {
        let err = pair_of(
            r#"{"type":"invoke","process":0,"f":"write","key":"k","value":1}"#,
            r#"{"type":"ok","process":0,"f":"write","key":"j","value":1}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            r#"line 3 completes the invoke on line 1 on key "j", but that invoke was on key "k""#
        );
        // An importer may leave the completion's key out (it is the invoke's).
        let keyless = pair_of(
            r#"{"type":"invoke","process":0,"f":"write","key":"k","value":1}"#,
            r#"{"type":"ok","process":0,"f":"write","value":1}"#,
        );
        assert_eq!(keyless.unwrap(), vec![Some(2), None, None]);
    }

    #[test]
    fn a_completion_before_its_invoke_is_refused_only_when_both_times_are_known() {
        let err = pair_of(
            r#"{"type":"invoke","process":0,"f":"write","value":1,"time":30}"#,
            r#"{"type":"info","process":0,"f":"write","value":1,"time":20}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "line 3 completes the invoke on line 1 at time 20, before that invoke's time 30"
        );
        // A missing time (0) is unknown, on either side; equal times are fine.
        for (a, b) in [(30, 0), (0, 30), (30, 30)] {
            let ok = pair_of(
                &format!(r#"{{"type":"invoke","process":0,"f":"write","value":1,"time":{a}}}"#),
                &format!(r#"{{"type":"ok","process":0,"f":"write","value":1,"time":{b}}}"#),
            );
            assert!(ok.is_ok(), "{a} {b}: {ok:?}");
        }
    }

    #[test]
    fn a_read_completes_with_another_value_and_nemesis_ops_are_not_paired() {
        let h = History::from_ops(vec![
            Op::new(OpType::Invoke, Process::Client(0), "read", Value::Null),
            Op::new(OpType::Info, Process::Nemesis, "start-kill", json!("n1")),
            Op::new(OpType::Ok, Process::Client(0), "read", json!(3)),
            Op::new(OpType::Info, Process::Nemesis, "stop-kill", json!("n1")),
        ]);
        assert_eq!(h.pairs().unwrap(), vec![Some(2), None, None, None]);
        // Without input lines, ops are named by position.
        let h = History::from_ops(vec![
            Op::new(OpType::Invoke, Process::Client(0), "write", json!(1)),
            Op::new(OpType::Ok, Process::Client(0), "cas", json!(1)),
        ]);
        assert_eq!(
            h.pairs().unwrap_err(),
            r#"op 1 completes the invoke on op 0 with f "cas", but that invoke was f "write""#
        );
    }

    #[test]
    fn writer_assigns_dense_indices_one_line_each() {
        let mut w = HistoryWriter::new(Vec::new());
        let mut a = Op::new(OpType::Invoke, Process::Client(0), "read", Value::Null);
        let mut b = Op::new(OpType::Ok, Process::Client(0), "read", json!(3));
        w.append(&mut a).unwrap();
        w.append(&mut b).unwrap();
        let text = String::from_utf8(w.out.clone()).unwrap();
        let h = History::read_jsonl(text.as_bytes(), "t").unwrap();
        assert_eq!(
            h.ops.iter().map(|o| o.index).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(text.lines().count(), 2);
    }
}
