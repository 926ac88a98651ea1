//! Importing histories written by other tools: format detection, semantics and model defaults per
//! input shape (`default_model_for`), `jepsen.independent` tuple splitting, and nemesis ops that
//! carry client functions.
//!
//! Owns the mapping of foreign text formats onto `crate::history::History`. Does not own JSONL
//! (that is `history`), EDN syntax and Jepsen op maps (`edn`, whose parser every EDN value here goes
//! through), or checking. Submodules: `log` (Jepsen console logs, `history.txt`, Porcupine kv
//! lines), `json` (JSON arrays of op objects, as elle-cli reads).
//!
//! Formats (`--format`):
//! - `jsonl`: our own format (`History::read_jsonl`), one op object per line.
//! - `json`: one JSON array of op objects — elle-cli's JSON histories and other tools' exports
//!   (see `json`).
//! - `edn`: Jepsen / Knossos EDN (`edn::read_history`).
//! - `history-txt`: Jepsen's `history.txt`, one op per line:
//!   `process<TAB>:type<TAB>:f<TAB>value[<TAB>error]`, e.g. `3<TAB>:ok<TAB>:read<TAB>4`.
//! - `jepsen-log`: Jepsen console logs. Op lines contain `jepsen.util`, then (after an optional `-`
//!   or `:`) the same fields as a `history.txt` line, separated by tabs or spaces, e.g.
//!   `INFO  jepsen.util - 3<TAB>:invoke<TAB>:read<TAB>nil`. Lines without `jepsen.util`, or where it
//!   is not followed by a process, are ignored; a line with a process but a malformed rest is an
//!   error. When every op line carries a `YYYY-MM-DD HH:MM:SS,fff` timestamp before `jepsen.util`,
//!   op times are taken from it (relative to the first op line, never decreasing); otherwise 0.
//! - `porcupine`: one EDN op map per line with a `:key`, as Porcupine's kv test data:
//!   `{:process 0, :type :invoke, :f :put, :key "1", :value "x"}`; `:f` get/put/append suit the `kv`
//!   model, whose keys start as `""` for this input (Porcupine's kv model).
//!
//! `detect_format` (for `--format auto`): blank text (or only zero bytes, a killed writer's
//! padding) → jsonl, an empty history; a line containing `jepsen.util` among the first 200 lines →
//! jepsen-log; text starting with `[` whose first element starts `{"` (or `[]`) → json; first
//! meaningful line starting `{"` → jsonl; a first line `process<TAB>:type…` → history-txt; a first
//! line that is a single EDN map with `:key` → porcupine; anything else → edn, except text that
//! is one JSON value (`{}`, `[1, 2]`): that is JSON but not a history, an error in JSON's words.
//!
//! Semantics defaults (`Imported::semantics`): our JSONL → etcd (our clients' histories: keys
//! start absent, a nil read means absent, a cas-mismatch fail is evidence); Jepsen console logs in
//! the exact shape of Porcupine's etcd test data (every line `INFO  jepsen.util - …` without
//! timestamps, client read/write/cas only) → etcd, as Porcupine's etcd model reads them; every
//! other foreign format (EDN, history.txt, console logs, JSON arrays, Porcupine kv) → knossos.
//!
//! Independent keys (every format but jsonl and porcupine, which carry keys): `looks_independent` is
//! true when every client invoke value is a `[k v]` tuple with a scalar `k`, every `cas` value is
//! `[k [old new]]`, no ok completion holds a collection other than a `[k v]` tuple of its
//! invoke's key (elle-cli's set_full.edn adds `[0 i]` and reads `[0 1 2 …]`: literal values, as
//! elle-cli reads them), and there is at least one client invoke; then `split_independent` moves `k`
//! into `Op::key` (a completion whose value is not a tuple takes its invoke's key). The CLI applies
//! this automatically and `--independent` / `--no-independent` force it either way.
//!
//! Completion-only histories (client ok/fail/info ops and no client invoke, as Elle's tests and
//! many elle-cli inputs are written), in any format, get an invoke synthesized before each
//! completion (`History::synthesize_invokes`, with a warning): process order is kept, real-time
//! order is unknown. Only the transactional checker reads such a history (`checker::compose`).
//!
//! Errors name the input, the 1-based line and what was expected; no parser here panics on any input.

mod json;
mod log;

pub use json::read_json_array;
pub use log::{is_porcupine_etcd_log, read_history_txt, read_jepsen_log, read_porcupine};

use crate::edn::{self, Edn, EdnOptions};
use crate::history::{History, Name, Op, OpType, Process};
use crate::model::SemanticsPreset;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A history input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// shakedown JSONL.
    Jsonl,
    /// A JSON array of op objects (elle-cli).
    Json,
    /// Jepsen / Knossos EDN.
    Edn,
    /// Jepsen's tab-separated `history.txt`.
    HistoryTxt,
    /// Jepsen console log lines.
    JepsenLog,
    /// Porcupine-style kv lines (one EDN map with `:key` per line).
    Porcupine,
}

impl InputFormat {
    /// Parse a `--format` value; `Ok(None)` means auto-detect.
    pub fn from_arg(s: &str) -> Result<Option<InputFormat>, String> {
        Ok(Some(match s {
            "auto" => return Ok(None),
            "jsonl" => InputFormat::Jsonl,
            "json" | "elle-json" => InputFormat::Json,
            "edn" => InputFormat::Edn,
            "history-txt" | "txt" => InputFormat::HistoryTxt,
            "jepsen-log" | "log" => InputFormat::JepsenLog,
            "porcupine" => InputFormat::Porcupine,
            other => {
                return Err(format!(
                    "--format {other:?}: expected auto, jsonl, json, edn, history-txt, jepsen-log or porcupine"
                ));
            }
        }))
    }

    /// The format's `--format` name.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Jsonl => "jsonl",
            InputFormat::Json => "json",
            InputFormat::Edn => "edn",
            InputFormat::HistoryTxt => "history-txt",
            InputFormat::JepsenLog => "jepsen-log",
            InputFormat::Porcupine => "porcupine",
        }
    }
}

fn meaningful_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
}

/// True when the text is a JSON array whose first element is an object with a string key, or `[]`.
fn looks_like_json_array(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('[') else {
        return false;
    };
    let rest = rest.trim_start();
    if rest.starts_with(']') {
        return true;
    }
    rest.strip_prefix('{')
        .is_some_and(|r| r.trim_start().starts_with('"') || r.trim_start().starts_with('}'))
}

/// True when the text holds nothing but whitespace and zero bytes (an empty file, or the
/// padding of a history whose writer was killed before its first op, `mapped`).
pub fn is_blank(text: &str) -> bool {
    text.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .is_empty()
}

/// Guess the format of a history text (see the module doc for the rules).
pub fn detect_format(text: &str) -> InputFormat {
    if is_blank(text) {
        return InputFormat::Jsonl;
    }
    if text.lines().take(200).any(|l| l.contains(log::LOG_MARK)) {
        return InputFormat::JepsenLog;
    }
    if looks_like_json_array(text) {
        return InputFormat::Json;
    }
    let first = meaningful_lines(text).next().unwrap_or("");
    if first.starts_with("{\"") || first.starts_with("{ \"") {
        return InputFormat::Jsonl;
    }
    if log::is_history_txt_line(first) {
        return InputFormat::HistoryTxt;
    }
    if first.starts_with('{')
        && let Ok(forms) = edn::parse_all(first)
        && forms.len() == 1
        && matches!(&forms[0].value, Edn::Map(kv) if log::has_key(kv, "key"))
    {
        return InputFormat::Porcupine;
    }
    InputFormat::Edn
}

fn is_tuple(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.len() == 2)
}

fn is_keyed_tuple(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.len() == 2 && matches!(a[0], Value::String(_) | Value::Number(_)))
}

/// True when the history's client ops carry `jepsen.independent` tuple values (see the module
/// doc).
pub fn looks_independent(history: &History) -> bool {
    let mut seen = false;
    // Each process's open invoke's tuple key.
    let mut open: HashMap<Process, Value> = HashMap::new();
    for op in history.ops.iter().filter(|o| o.is_client()) {
        if op.key.is_some() {
            continue;
        }
        if op.op_type != OpType::Invoke {
            let key = open.remove(&op.process);
            // An ok completion holding a collection that is not its invoke's [k v]: the values
            // are literal (an untupled info or fail completion, `:timed-out`, is tolerated).
            let tupled = match (&op.value, key) {
                (Value::Array(a), Some(k)) => is_keyed_tuple(&op.value) && a[0] == k,
                (Value::Array(_) | Value::Object(_), None) => false,
                _ => true,
            };
            if op.op_type == OpType::Ok && !tupled {
                return false;
            }
            continue;
        }
        if !is_keyed_tuple(&op.value) {
            return false;
        }
        if op.f == "cas" && !op.value.get(1).is_some_and(is_tuple) {
            return false;
        }
        open.insert(op.process, op.value[0].clone());
        seen = true;
    }
    seen
}

fn key_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Move the `k` of every client op's `[k v]` value into `Op::key` (ops that already have a key are
/// left alone; a completion whose value is not a tuple takes its invoke's key and keeps its value).
/// Errors name the op and what was found.
pub fn split_independent(history: &mut History) -> Result<(), String> {
    let mut open_key: HashMap<Process, Name> = HashMap::new();
    for (i, op) in history.ops.iter_mut().enumerate() {
        if !op.is_client() || op.key.is_some() {
            continue;
        }
        let invoke = op.op_type == OpType::Invoke;
        let value = std::mem::take(&mut op.value);
        let tuple_key = match &value {
            Value::Array(a) if is_keyed_tuple(&value) => Some(Name::from(key_string(&a[0]))),
            _ => None,
        };
        let open = open_key.remove(&op.process);
        let key = match (tuple_key, open) {
            // A completion's tuple must name its invoke's key; otherwise the value is not a tuple.
            (Some(k), Some(o)) if !invoke && k != o => {
                op.value = value;
                op.key = Some(o);
                continue;
            }
            (Some(k), _) => k,
            (None, Some(o)) if !invoke => {
                op.value = value;
                op.key = Some(o);
                continue;
            }
            (None, _) => {
                return Err(format!(
                    "history position {i} (process {} {}): independent op value must be a [key value] tuple, found {value}",
                    op.process, op.f
                ));
            }
        };
        if invoke {
            open_key.insert(op.process, key.clone());
        }
        op.value = match value {
            Value::Array(mut a) => a.pop().unwrap_or_default(),
            other => other,
        };
        op.key = Some(key);
    }
    Ok(())
}

/// Nemesis ops whose function is one client ops use (or `read`, `write`, `cas`): such ops are
/// never checked; counted per function for a warning.
pub fn nemesis_client_ops(history: &History) -> BTreeMap<String, usize> {
    let mut sniff = ModelSniff::default();
    let mut nemesis = BTreeMap::new();
    for op in &history.ops {
        sniff.see(op);
        if op.process == Process::Nemesis {
            *nemesis.entry(op.f.clone()).or_insert(0) += 1;
        }
    }
    nemesis_client_ops_of(&nemesis, &sniff)
}

/// [`nemesis_client_ops`] from the nemesis ops counted per function and the client functions
/// seen (the streamed check counts them as it reads).
pub fn nemesis_client_ops_of(
    nemesis: &BTreeMap<Name, usize>,
    clients: &ModelSniff,
) -> BTreeMap<String, usize> {
    let mut client_fs: BTreeSet<&str> = ["read", "write", "cas"].into_iter().collect();
    client_fs.extend(clients.functions());
    nemesis
        .iter()
        .filter(|(f, _)| client_fs.contains(f.as_str()))
        .map(|(f, n)| (f.to_string(), *n))
        .collect()
}

/// A history read from text, with how it was read.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The history.
    pub history: History,
    /// The format it was read as.
    pub format: InputFormat,
    /// Whether `jepsen.independent` tuples were split into keys.
    pub independent: bool,
    /// The register semantics this input shape means by default (see the module doc).
    pub semantics: SemanticsPreset,
}

/// Read a history text. `format: None` auto-detects; `independent: None` auto-detects tuples
/// (not for jsonl and porcupine input), `Some(b)` forces. `name` labels errors.
pub fn read_text(
    text: &str,
    name: &str,
    format: Option<InputFormat>,
    independent: Option<bool>,
) -> Result<Imported, String> {
    let detected = format.is_none();
    let format = format.unwrap_or_else(|| detect_format(text));
    // EDN is the fallback guess: JSON that reached it is JSON of another shape, and deserves
    // JSON's words rather than the EDN reader's.
    if detected
        && format == InputFormat::Edn
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return Err(format!(
            "{name}: is JSON but not a history: expected a JSON array of op objects or one op object per line, found {}",
            json_shape(&v)
        ));
    }
    let history = match format {
        InputFormat::Jsonl => {
            History::read_jsonl(text.as_bytes(), name).map_err(|e| e.to_string())?
        }
        InputFormat::Json => read_json_array(text, name)?,
        InputFormat::Edn => edn::read_history(text, name, EdnOptions::default())?,
        InputFormat::HistoryTxt => read_history_txt(text, name)?,
        InputFormat::JepsenLog => read_jepsen_log(text, name)?,
        InputFormat::Porcupine => read_porcupine(text, name)?,
    };
    let semantics = match format {
        InputFormat::Jsonl => SemanticsPreset::Etcd,
        InputFormat::JepsenLog if is_porcupine_etcd_log(text) => SemanticsPreset::Etcd,
        _ => SemanticsPreset::Knossos,
    };
    imported(history, name, format, independent, semantics)
}

/// Files past this size are read as they are parsed when they are JSONL ([`read_file`]).
pub const STREAM_ABOVE: u64 = 64 << 20;

/// Read the history file `path` (`name` in messages) as [`read_text`] reads its text, but
/// that a JSONL file over [`STREAM_ABOVE`] (its format told by its first MiB) is parsed as it is
/// read: its text is never held whole next to the history made from it, and the history has
/// room for its ops from the start. `None`: the file is not such a file, read it whole.
pub fn read_big_jsonl(
    path: &std::path::Path,
    name: &str,
    format: Option<InputFormat>,
    independent: Option<bool>,
) -> Option<Result<Imported, String>> {
    read_jsonl_above(path, name, format, independent, STREAM_ABOVE)
}

fn read_jsonl_above(
    path: &std::path::Path,
    name: &str,
    format: Option<InputFormat>,
    independent: Option<bool>,
    above: u64,
) -> Option<Result<Imported, String>> {
    use std::io::Read;
    let size = std::fs::metadata(path).ok()?.len();
    if size <= above {
        return None;
    }
    let mut head = Vec::with_capacity(1 << 20);
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    let whole_lines = head.iter().rposition(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&head[..whole_lines]).ok()?;
    if is_blank(head) || format.unwrap_or_else(|| detect_format(head)) != InputFormat::Jsonl {
        return None;
    }
    Some(
        History::read_file(path)
            .map_err(|e| e.to_string())
            .and_then(|h| {
                imported(
                    h,
                    name,
                    InputFormat::Jsonl,
                    independent,
                    SemanticsPreset::Etcd,
                )
            }),
    )
}

/// What [`read_text`] does after parsing: completion-only histories get their invokes, and
/// `jepsen.independent` tuples are split into keys where the format can hold them.
fn imported(
    mut history: History,
    name: &str,
    format: InputFormat,
    independent: Option<bool>,
    semantics: SemanticsPreset,
) -> Result<Imported, String> {
    if history.synthesize_invokes() {
        history.warnings.push(format!(
            "{name}: the history has completions only, no invokes (as Elle writes them): each completion is read as invoked just before it, by its process; real-time order is unknown"
        ));
    }
    let tuples_possible = !matches!(format, InputFormat::Jsonl | InputFormat::Porcupine);
    let independent = match independent {
        Some(b) => b,
        None => tuples_possible && looks_independent(&history),
    };
    if independent {
        split_independent(&mut history).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(Imported {
        history,
        format,
        independent,
        semantics,
    })
}

/// What a JSON value is, for an error saying it is not a history: `an empty object`,
/// `an object with keys "a", "b" (…)`, `an array of 2 elements whose first is a number`.
fn json_shape(v: &Value) -> String {
    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    match v {
        Value::Object(m) if m.is_empty() => "an empty object".into(),
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().take(5).map(|k| format!("{k:?}")).collect();
            let more = if m.len() > 5 { ", …" } else { "" };
            format!(
                "an object with {} {}{more} (an op object has \"type\", \"process\" and \"f\")",
                if m.len() == 1 { "key" } else { "keys" },
                keys.join(", ")
            )
        }
        Value::Array(a) => match a.first() {
            None => "an empty array".into(),
            Some(first) => format!(
                "an array of {} {} whose first is {} {}",
                a.len(),
                if a.len() == 1 { "element" } else { "elements" },
                if matches!(first, Value::Array(_) | Value::Object(_)) {
                    "an"
                } else {
                    "a"
                },
                kind(first)
            ),
        },
        Value::Null => "null".into(),
        other => format!("a {}", kind(other)),
    }
}

/// The model `--model auto` means for an input format: `kv` for Porcupine kv lines, else
/// `cas-register`.
pub fn default_model(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Porcupine => "kv",
        _ => "cas-register",
    }
}

/// A transaction value with an `append` or `w` micro-op (Elle's list-append and rw-register
/// shapes; Knossos multi-register histories spell writes `write`).
fn is_elle_txn(v: &Value) -> bool {
    v.as_array().is_some_and(|mops| {
        mops.iter().any(|m| {
            m.as_array().is_some_and(|p| {
                p.len() >= 2
                    && matches!(
                        p[0].as_str().map(|f| f.trim_start_matches(':')),
                        Some("append" | "w")
                    )
            })
        })
    })
}

/// The model `--model auto` means for a loaded history: `list-append` when a JSONL history has
/// client `append` ops (the list-append workload); else, from the client functions: `mutex` for
/// acquire/release, `lock` for the lock workloads (`lock-acquire`), `queue` for enqueue/dequeue,
/// `txn` for transactions with `append` or `w` micro-ops (any `:f`, as Elle's list-append and
/// rw-register), `multi-register` for other txn (Knossos spells writes `write`), `kv` for get/put/append,
/// `set` for add/read with a list or set read value and `counter` for other add/read histories;
/// else [`default_model`] of its format.
pub fn default_model_for(format: InputFormat, history: &History) -> &'static str {
    let mut sniff = ModelSniff::default();
    history.ops.iter().for_each(|o| sniff.see(o));
    sniff.model(format)
}

/// What `--model auto` reads of a history, gathered op by op ([`default_model_for`] over a whole
/// history; the streamed check as it reads, to confirm at the end the model it chose from the
/// file's first lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSniff {
    append: bool,
    send: bool,
    acquire: bool,
    /// The client functions, each once (a history has a handful; names compare as pointers).
    fs: Vec<Name>,
    elle_txn: bool,
    set_read: bool,
}

impl ModelSniff {
    /// Take in one op (non-client ops say nothing).
    pub fn see(&mut self, o: &Op) {
        if !o.is_client() {
            return;
        }
        // What the function alone says, once per function (the reader's hot path).
        if !self.fs.contains(&o.f) {
            self.fs.push(o.f.clone());
            self.append |= o.f == "append";
            self.send |= o.f == crate::generator::log::SEND;
            self.acquire |= o.f == crate::generator::lock::ACQUIRE;
        }
        self.elle_txn = self.elle_txn || is_elle_txn(&o.value);
        self.set_read = self.set_read || (o.value.is_array() && o.f == "read");
    }

    /// The client functions seen.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.fs.iter().map(|f| f.as_str())
    }

    /// The model `--model auto` means for what was seen, read as `format`.
    pub fn model(&self, format: InputFormat) -> &'static str {
        if format == InputFormat::Jsonl && self.append {
            return "list-append";
        }
        if self.send {
            return crate::model::registry::LOG;
        }
        if self.acquire {
            return crate::model::registry::LOCK;
        }
        let fs = &self.fs;
        let only =
            |allowed: &[&str]| !fs.is_empty() && fs.iter().all(|f| allowed.contains(&f.as_str()));
        if only(&["acquire", "release"]) {
            "mutex"
        } else if only(&["enqueue", "dequeue"]) {
            "queue"
        } else if self.elle_txn {
            crate::model::registry::TXN
        } else if only(&["txn"]) {
            "multi-register"
        } else if only(&["get", "put", "append"]) {
            "kv"
        } else if only(&["add", "read"]) && fs.iter().any(|f| f.as_str() == "add") {
            if self.set_read { "set" } else { "counter" }
        } else {
            default_model(format)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_jsonl_file_is_read_as_it_is_parsed_like_its_text_and_others_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("h.jsonl");
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "{{\"type\":\"invoke\",\"process\":{p},\"f\":\"write\",\"key\":\"k{p}\",\"value\":{i}}}\n{{\"type\":\"ok\",\"process\":{p},\"f\":\"write\",\"key\":\"k{p}\",\"value\":{i}}}\n",
                p = i % 7
            ));
        }
        std::fs::write(&jsonl, &text).unwrap();
        let streamed = read_jsonl_above(&jsonl, "h", None, None, 100)
            .expect("streamed")
            .unwrap();
        let whole = read_text(&text, "h", None, None).unwrap();
        assert_eq!(streamed.history.ops, whole.history.ops);
        assert_eq!(streamed.history.lines, whole.history.lines);
        assert_eq!(streamed.format, InputFormat::Jsonl);
        assert_eq!(streamed.semantics, whole.semantics);
        // Under the size, or not JSONL: read whole (None).
        assert!(read_jsonl_above(&jsonl, "h", None, None, 1 << 30).is_none());
        let edn = dir.path().join("h.edn");
        std::fs::write(
            &edn,
            "{:type :invoke, :f :read, :process 0, :value nil}\n".repeat(50),
        )
        .unwrap();
        assert!(read_jsonl_above(&edn, "h", None, None, 100).is_none());
        // A malformed line deep in a streamed file names its line.
        std::fs::write(&jsonl, format!("{text}{{\"type\": oops}}\n")).unwrap();
        let err = read_jsonl_above(&jsonl, "h", None, None, 100)
            .expect("streamed")
            .unwrap_err();
        assert!(err.contains(":801:"), "{err}");
    }
    use proptest::prelude::*;
    use serde_json::json;

    const LOG: &str = "2024-01-01 10:00:00,001{GMT}\tINFO\t[main] jepsen.core - Running test\n\
INFO  jepsen.util - 3\t:invoke\t:read\tnil\n\
INFO  jepsen.util - 3\t:ok\t:read\t4\n\
INFO jepsen.util - 1 :invoke :cas [1 4]\n\
INFO jepsen.util - :nemesis :info :start nil\n\
INFO jepsen.util - 1 :info :cas [1 4] indeterminate: timed out\n\
WARN jepsen.util - Retrying connection\n";

    #[test]
    fn jepsen_log_lines_become_ops_and_other_lines_are_ignored() {
        assert_eq!(detect_format(LOG), InputFormat::JepsenLog);
        let h = read_jepsen_log(LOG, "log").unwrap();
        assert_eq!(h.ops.len(), 5);
        assert_eq!(h.ops[0].process, Process::Client(3));
        assert_eq!(h.ops[0].op_type, OpType::Invoke);
        assert_eq!(h.ops[0].f, "read");
        assert_eq!(h.ops[0].value, Value::Null);
        assert_eq!(h.ops[1].value, json!(4));
        assert_eq!(h.ops[2].value, json!([1, 4]));
        assert_eq!(h.ops[3].process, Process::Nemesis);
        assert_eq!(h.ops[3].f, "start");
        assert_eq!(h.ops[4].op_type, OpType::Info);
        assert_eq!(h.ops[4].error.as_deref(), Some("indeterminate: timed out"));
        assert_eq!(h.ops[4].index, 4);
    }

    /// Found reading the console-log timestamp code for issue 43's fuzzing: a fraction on the
    /// last second chrono counts in nanoseconds (2262-04-11 23:47:16) overflowed an i64 (a panic
    /// under `cargo test`'s overflow checks, a wrapped stamp in release). Such a stamp is no
    /// stamp, so no times.
    #[test]
    fn a_timestamp_at_the_end_of_nanosecond_time_is_no_timestamp() {
        let log = "2262-04-11 23:47:16,999999999 INFO jepsen.util - 0 :invoke :read nil\n\
2262-04-11 23:47:16,1 INFO jepsen.util - 0 :ok :read 1\n";
        let h = read_jepsen_log(log, "t.log").unwrap();
        assert_eq!(h.ops.len(), 2);
        assert!(h.ops.iter().all(|o| o.time_ns == 0));
    }

    /// Found by the libFuzzer run of the jepsen-log reader (issue 43): stamps more than 292
    /// years apart (1720 and 2017) differ by more than an i64 holds, and the relative time
    /// overflowed (a panic with overflow checks, a wrapped time of 0 without).
    /// Fuzzing, history-txt: a 7 KB line whose value nested map keys in map keys read in 0.4 s and
    /// 140 MB, each key's JSON text escaped again inside the key around it. Every reader of EDN
    /// values now makes JSON in proportion to the input (edn::tests has the conversion itself).
    #[test]
    fn nested_map_keys_read_in_proportion_to_the_input_in_every_edn_reader() {
        let mut value = String::from(r#""\\\"\u0000""#);
        for _ in 0..25 {
            value = format!("{{{value} 1}}");
        }
        let txt = format!("0\t:invoke\t:write\t{value}\n");
        let log = format!("INFO  jepsen.util - 0\t:invoke\t:write\t{value}\n");
        let edn = format!("{{:process 0, :type :invoke, :f :write, :value {value}}}\n");
        let histories = [
            read_history_txt(&txt, "h.txt").unwrap(),
            read_jepsen_log(&log, "h.log").unwrap(),
            crate::edn::read_history(&edn, "h.edn", crate::edn::EdnOptions::default()).unwrap(),
        ];
        for h in histories {
            let json = h.ops[0].value.to_string();
            assert!(
                json.len() <= 8 * value.len(),
                "{} bytes: {json:.200}",
                json.len()
            );
        }
    }

    #[test]
    fn timestamps_centuries_apart_give_their_real_distance() {
        let log = "1720-03-01 10:00:00,001 INFO jepsen.util - 0 :invoke :read nil\n\
2017-03-01 10:00:00,004 INFO jepsen.util - 0 :ok :read nil\n";
        let h = read_jepsen_log(log, "t.log").unwrap();
        let day_ns = 86_400_000_000_000u64;
        // 297 years of 365 days and 72 leap days (1800 and 1900 are not), and 3 ms.
        let want = (297 * 365 + 72) * day_ns + 3_000_000;
        assert_eq!(h.ops[1].time_ns, want);
        assert!(want > i64::MAX as u64);
    }

    #[test]
    fn jepsen_log_timestamps_become_relative_times() {
        let log = "INFO [2020-04-08 11:41:29,564] jepsen worker 3 - jepsen.util 3\t:invoke\t:read\tnil\n\
2020-04-08 11:41:29,600{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3\t:ok\t:read\t1\n\
INFO [2020-04-08 11:41:30.5] jepsen.util 1 :invoke :write 2\n";
        let h = read_jepsen_log(log, "t.log").unwrap();
        let times: Vec<u64> = h.ops.iter().map(|o| o.time_ns).collect();
        assert_eq!(times, vec![0, 36_000_000, 936_000_000]);
        // One line without a timestamp: no times at all.
        let h = read_jepsen_log(
            &format!("{log}INFO jepsen.util - 1 :ok :write 2\n"),
            "t.log",
        )
        .unwrap();
        assert!(h.ops.iter().all(|o| o.time_ns == 0));
    }

    #[test]
    fn jepsen_log_errors_name_line_and_expectation() {
        let e = read_jepsen_log("x\nINFO jepsen.util - 3 :okay :read 1\n", "a.log").unwrap_err();
        assert!(e.starts_with("a.log:2: expected an op type"), "{e}");
        let e = read_jepsen_log("INFO jepsen.util - 3 :ok :read [1 2\n", "a.log").unwrap_err();
        assert!(e.starts_with("a.log:1: expected an EDN value"), "{e}");
        let e = read_jepsen_log("INFO jepsen.util - 3 :ok :read\n", "a.log").unwrap_err();
        assert!(e.contains("found end of line"), "{e}");
        let e = read_jepsen_log("nothing here\n", "a.log").unwrap_err();
        assert!(e.contains("no op lines"), "{e}");
    }

    #[test]
    fn porcupine_lines_carry_keys() {
        let src = "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"x\"}\n\
{:process 0, :type :ok, :f :put, :key \"1\", :value \"x\"}\n\
\n\
{:process 1, :type :invoke, :f :get, :key \"1\", :value nil}\n\
{:process 1, :type :ok, :f :get, :key \"1\", :value \"x\"}\n";
        assert_eq!(detect_format(src), InputFormat::Porcupine);
        let h = read_porcupine(src, "p.txt").unwrap();
        assert_eq!(h.ops.len(), 4);
        assert_eq!(h.ops[2].key.as_deref(), Some("1"));
        assert_eq!(h.ops[2].f, "get");
        assert_eq!(h.ops[3].value, json!("x"));
        let e = read_porcupine(
            "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"x\"}\n{:process 0, :type :ok, :f :put, :value \"x\"}\n",
            "p.txt",
        )
        .unwrap_err();
        assert!(e.starts_with("p.txt:2:1: expected a :key"), "{e}");
        let e = read_porcupine("{:process 0, :type :nope, :f :put, :key 1}", "p.txt").unwrap_err();
        assert!(e.starts_with("p.txt:1:1: :type must be"), "{e}");
        let e = read_porcupine("{:process 0 :key", "p.txt").unwrap_err();
        assert!(e.starts_with("p.txt:1:"), "{e}");
    }

    #[test]
    fn detects_jsonl_and_edn() {
        assert_eq!(
            detect_format("\n{\"type\":\"invoke\"}\n"),
            InputFormat::Jsonl
        );
        assert_eq!(
            detect_format("[{:process 0 :type :invoke :f :read}]"),
            InputFormat::Edn
        );
        assert_eq!(
            detect_format("{:process 0 :type :invoke :f :read :value nil}\n"),
            InputFormat::Edn
        );
        // Nothing, or only a killed writer's zero padding: our own format, an empty history.
        for blank in ["", "\n \n", "\0\0\0", "\n\0\0"] {
            assert_eq!(detect_format(blank), InputFormat::Jsonl, "{blank:?}");
            assert!(
                read_text(blank, "h", None, None)
                    .unwrap()
                    .history
                    .ops
                    .is_empty()
            );
        }
    }

    #[test]
    fn json_that_is_not_a_history_is_refused_in_json_words() {
        for (text, found) in [
            ("{}", "found an empty object"),
            ("{\n  \"a\": 1\n}\n", "found an object with key \"a\""),
            (
                "[1, 2]",
                "found an array of 2 elements whose first is a number",
            ),
            ("\"x\"", "found a string"),
        ] {
            let e = read_text(text, "h.json", None, None).unwrap_err();
            assert!(
                e.starts_with("h.json: is JSON but not a history: expected a JSON array of op objects or one op object per line, "),
                "{e}"
            );
            assert!(e.contains(found), "{e}");
        }
        // Asked for EDN, EDN's words.
        let e = read_text("{}", "h.edn", Some(InputFormat::Edn), None).unwrap_err();
        assert!(e.contains(":type"), "{e}");
    }

    #[test]
    fn line_formats_keep_the_line_each_op_is_on() {
        assert_eq!(
            read_jepsen_log(LOG, "log").unwrap().lines,
            vec![2, 3, 4, 5, 6]
        );
        let txt = "0\t:invoke\t:read\tnil\n\n0\t:ok\t:read\t1\n";
        assert_eq!(read_history_txt(txt, "h.txt").unwrap().lines, vec![1, 3]);
        let kv = "; kv\n{:process 0 :type :invoke :f :get :key \"1\" :value nil}\n{:process 0 :type :ok :f :get :key \"1\" :value \"x\"}\n";
        assert_eq!(read_porcupine(kv, "kv.txt").unwrap().lines, vec![2, 3]);
        // So a mismatched completion names lines there too.
        let bad = "0\t:invoke\t:write\t1\n0\t:ok\t:read\t1\n";
        assert_eq!(
            read_history_txt(bad, "h.txt").unwrap().pairs().unwrap_err(),
            "line 2 completes the invoke on line 1 with f \"read\", but that invoke was f \"write\""
        );
    }

    #[test]
    fn independent_tuples_are_detected_and_split() {
        let src = "{:process 0 :type :invoke :f :write :value [:a 1]}\n\
{:process 0 :type :ok :f :write :value [:a 1]}\n\
{:process 1 :type :invoke :f :cas :value [7 [1 2]]}\n\
{:process 1 :type :fail :f :cas :value [7 [1 2]]}\n\
{:process :nemesis :type :info :f :start :value nil}\n";
        let imp = read_text(src, "h.edn", None, None).unwrap();
        assert!(imp.independent);
        assert_eq!(imp.history.ops[0].key.as_deref(), Some("a"));
        assert_eq!(imp.history.ops[0].value, json!(1));
        assert_eq!(imp.history.ops[2].key.as_deref(), Some("7"));
        assert_eq!(imp.history.ops[2].value, json!([1, 2]));
        assert_eq!(imp.history.ops[4].key, None);
        // Plain cas [old new] values are not tuples of tuples.
        let plain = "[{:process 0 :type :invoke :f :cas :value [1 2]} {:process 0 :type :ok :f :cas :value [1 2]}]";
        let imp = read_text(plain, "p.edn", None, None).unwrap();
        assert!(!imp.independent);
        assert_eq!(imp.history.ops[0].key, None);
        // Forcing on a plain history names the op.
        let e = read_text(
            "[{:process 0 :type :invoke :f :write :value 3}]",
            "p.edn",
            None,
            Some(true),
        )
        .unwrap_err();
        assert!(
            e.contains("history position 0") && e.contains("[key value]"),
            "{e}"
        );
    }

    #[test]
    fn independent_tuples_for_every_model_and_untupled_completions() {
        // Mutex and queue ops carry tuples too; an info completion without a tuple (`:timed-out`)
        // takes its invoke's key.
        let src = "{:process 0 :type :invoke :f :acquire :value [:l nil]}\n\
{:process 0 :type :ok :f :acquire :value [:l nil]}\n\
{:process 1 :type :invoke :f :enqueue :value [3 \"x\"]}\n\
{:process 1 :type :info :f :enqueue :value :timed-out}\n\
{:process 2 :type :invoke :f :dequeue :value [3 nil]}\n\
{:process 2 :type :ok :f :dequeue :value [3 \"x\"]}\n";
        let imp = read_text(src, "h.edn", None, None).unwrap();
        assert!(imp.independent);
        let keys: Vec<Option<&str>> = imp.history.ops.iter().map(|o| o.key.as_deref()).collect();
        assert_eq!(
            keys,
            vec![
                Some("l"),
                Some("l"),
                Some("3"),
                Some("3"),
                Some("3"),
                Some("3")
            ]
        );
        assert_eq!(imp.history.ops[3].value, json!("timed-out"));
        assert_eq!(imp.history.ops[5].value, json!("x"));
        // A txn of two micro-ops is not a tuple: its first element is not a key.
        let txn = "[{:process 0 :type :invoke :f :txn :value [[:r :x nil] [:w :y 1]]}]";
        assert!(!read_text(txn, "t.edn", None, None).unwrap().independent);
        // An ok completion holding a collection other than its invoke's tuple: literal values
        // (elle-cli's set_full.edn: adds of [0 i], a read of [0 1 2 …]), as elle-cli reads them.
        let flat = "{:process 0 :type :invoke :f :add :value [0 0]}\n\
{:process 0 :type :ok :f :add :value [0 0]}\n\
{:process 0 :type :invoke :f :read :value [0 nil]}\n\
{:process 0 :type :ok :f :read :value [0 1 2]}\n";
        assert!(!read_text(flat, "f.edn", None, None).unwrap().independent);
        let other_key = flat.replace("[0 1 2]", "[1 #{0}]");
        assert!(
            !read_text(&other_key, "f.edn", None, None)
                .unwrap()
                .independent
        );
        let tupled = flat.replace("[0 1 2]", "[0 #{0}]");
        assert!(read_text(&tupled, "f.edn", None, None).unwrap().independent);
        // A set read value of two elements is not mistaken for a tuple: invokes decide.
        let set = "[{:process 0 :type :invoke :f :read :value nil} {:process 0 :type :ok :f :read :value [1 2]}]";
        assert!(!read_text(set, "s.edn", None, None).unwrap().independent);
    }

    #[test]
    fn semantics_default_per_input_shape() {
        let porcupine_etcd =
            "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1\n";
        assert_eq!(
            read_text(porcupine_etcd, "p.log", None, None)
                .unwrap()
                .semantics,
            SemanticsPreset::Etcd
        );
        assert_eq!(
            read_text(LOG, "j.log", None, None).unwrap().semantics,
            SemanticsPreset::Knossos
        );
        let jsonl = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}\n";
        assert_eq!(
            read_text(jsonl, "h.jsonl", None, None).unwrap().semantics,
            SemanticsPreset::Etcd
        );
        let txt = "0\t:invoke\t:read\tnil\n0\t:ok\t:read\t1\n";
        let imp = read_text(txt, "history.txt", None, None).unwrap();
        assert_eq!(imp.format, InputFormat::HistoryTxt);
        assert_eq!(imp.semantics, SemanticsPreset::Knossos);
        assert_eq!(detect_format("[]"), InputFormat::Json);
        assert_eq!(detect_format(" [ {\"process\": 0}]"), InputFormat::Json);
        let e = read_history_txt("0\t:invoke\t:read\tnil\nhello\n", "h.txt").unwrap_err();
        assert!(e.starts_with("h.txt:2: expected an op line"), "{e}");
    }

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,200}") {
            let _ = read_jepsen_log(&s, "fuzz");
            let _ = read_porcupine(&s, "fuzz");
            let _ = read_text(&s, "fuzz", None, None);
            let _ = read_text(&s, "fuzz", None, Some(true));
        }

        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let s = String::from_utf8_lossy(&b);
            let _ = detect_format(&s);
            let _ = read_jepsen_log(&s, "fuzz");
            let _ = read_porcupine(&s, "fuzz");
            let _ = read_history_txt(&s, "fuzz");
            let _ = read_json_array(&s, "fuzz");
            let _ = History::read_jsonl(&b[..], "fuzz");
            let _ = is_porcupine_etcd_log(&s);
        }

        #[test]
        fn history_txt_like_lines_never_panic(
            lines in proptest::collection::vec(
                "(:nemesis|[0-9]{1,3}|x)?\\t?(:invoke|:ok|:fail|:info|:x)?\\t?(:read|:cas|:f)?\\t?[\\[\\]{}()#:\"\\\\ nil0-9a-z]{0,20}(\\t:timeout)?",
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = read_text(&text, "fuzz", None, None);
            let _ = read_text(&text, "fuzz", Some(InputFormat::HistoryTxt), None);
        }

        #[test]
        fn json_array_like_text_never_panics(
            items in proptest::collection::vec(
                "\\{(\"(process|type|f|value|key|time|error)\": ?(0|-1|\"nemesis\"|\":ok\"|\"invoke\"|\"read\"|null|\\[\\[\"r\",1,null\\]\\]|\\[1,2\\]|1e99|\"x\"),? ?){0,6}\\}?",
                0..6,
            ),
            close in any::<bool>(),
        ) {
            let mut text = format!("[{}", items.join(",\n"));
            if close {
                text.push(']');
            }
            let _ = read_text(&text, "fuzz", None, None);
            let _ = read_text(&text, "fuzz", Some(InputFormat::Json), Some(true));
            let _ = read_text(&text, "fuzz", Some(InputFormat::Jsonl), None);
        }

        #[test]
        fn jsonl_like_lines_never_panic(
            lines in proptest::collection::vec(
                "\\{(\"(index|time|process|type|f|value|key|error|version)\": ?(0|-1|\"nemesis\"|\"ok\"|\"invoke\"|\"read\"|null|\\[1,2\\]|\"x\"|18446744073709551616),? ?){0,7}\\}?",
                0..6,
            )
        ) {
            let text = lines.join("\n");
            let _ = History::read_jsonl(text.as_bytes(), "fuzz");
            let _ = read_text(&text, "fuzz", None, Some(true));
        }

        #[test]
        fn log_like_lines_never_panic(
            lines in proptest::collection::vec(
                "(INFO )?jepsen\\.util( -|:)? (:nemesis|[0-9]{1,3}|x) (:invoke|:ok|:fail|:info|:x)? ?(:read|:cas|:f)? ?[\\[\\]{}()#:\"\\\\ nil0-9a-z]{0,20}",
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = read_text(&text, "fuzz", Some(InputFormat::JepsenLog), None);
        }

        #[test]
        fn porcupine_like_lines_never_panic(
            lines in proptest::collection::vec(
                "\\{(:process [0-9] ?|:type :(invoke|ok|x) ?|:f :(get|put) ?|:key [\"0-9]{0,3} ?|:value [\"a-z\\[\\]]{0,4} ?){0,6}\\}?",
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = read_text(&text, "fuzz", Some(InputFormat::Porcupine), None);
        }
    }
}
