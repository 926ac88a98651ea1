//! Writing a history in the forms other tools read, so a verdict of ours can be confirmed with the
//! reference tool: Jepsen / Elle / Knossos EDN, elle-cli's JSON, and Porcupine's kv lines.
//!
//! Owns the three writers and what each can and cannot hold. Does not own reading them back
//! (`edn`, `import`), the run directory or which check flags reproduce a run's verdict
//! (`app::export`). Pure: no IO.
//!
//! - **edn**: one op map per line, as Jepsen's `history.edn`:
//!   `{:type :invoke, :f :read, :value nil, :process 0, :time 123, :index 0}`, then `:error` and
//!   `:node` when the op has them; the nemesis is `:process :nemesis`. Ops with a key carry a
//!   `jepsen.independent` tuple `[key value]` (an integer-looking key as an integer). A
//!   transaction's micro-ops are written Elle's way, `[:append :x 1]` (the function, and a key
//!   that is a plain word, as keywords).
//! - **elle-json**: one JSON array, one op object per line, with the same fields and tuples:
//!   `{"type":"invoke","f":"read","value":null,"process":0,"time":123,"index":0}`; the nemesis is
//!   `"nemesis"`. In both, `:index` is the op's position (dense, as Jepsen numbers ops) and
//!   errors name ops by it. Micro-ops stay `["append","x",1]` (elle-cli makes the first a keyword).
//! - **porcupine**: the lines Porcupine's kv test reads, exactly
//!   `{:process 0, :type :invoke, :f :put, :key "1", :value "x"}`: only `get`, `put` and `append`
//!   with string keys and values, so `read` / `write` are written as `get` / `put`, values as
//!   their text (a nil read as `""`, the value Porcupine's kv keys start with), a key-less op
//!   under key `""`. No times (line order is real-time order) and no nemesis ops (left out, with
//!   a note). Any other function (`cas`, `add`, `txn`, …) is an error naming it: Porcupine's
//!   kv model has no such operation. Porcupine's parser skips `fail` and `info` lines, so it
//!   treats those ops as pending (may have happened).
//!
//! Exporting refuses a history whose invokes were made up on reading (completions only): written
//! out, they would look recorded. A history in which some client ops have keys and others not is
//! refused for edn and elle-json (independent tuples are all or nothing).

use crate::edn::{is_plain_keyword, write_json_as_edn, write_str};
use crate::history::{History, Op, OpType, Process};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A format [`export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Jepsen / Elle / Knossos EDN, one op map per line.
    Edn,
    /// Porcupine's kv lines.
    Porcupine,
    /// elle-cli's JSON: an array of op objects.
    ElleJson,
}

impl ExportFormat {
    /// Every format, by its `--format` name.
    pub const ALL: [(&'static str, ExportFormat); 3] = [
        ("edn", ExportFormat::Edn),
        ("porcupine", ExportFormat::Porcupine),
        ("elle-json", ExportFormat::ElleJson),
    ];

    /// The format named `name`; an unknown name is an error listing the known ones.
    pub fn parse(name: &str) -> Result<ExportFormat, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, f)| f)
            .ok_or_else(|| format!("--format {name:?}: expected edn, porcupine or elle-json"))
    }

    /// Its `--format` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("edn", |(n, _)| n)
    }
}

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The file's text.
    pub text: String,
    /// How many ops it holds.
    pub ops: usize,
    /// What the format could not hold and how it was written instead, for the user.
    pub notes: Vec<String>,
}

/// Write `history` as `format` says (see the module doc). `Err` says, in words, what the format
/// cannot hold.
pub fn export(history: &History, format: ExportFormat) -> Result<Exported, String> {
    if history.invokes_synthesized {
        return Err(
            "the history has completions only: its invokes were made up when it was read, and an export would present them as recorded"
                .into(),
        );
    }
    match format {
        ExportFormat::Edn => {
            let tuples = tuples(history)?;
            let mut text = String::new();
            for (i, op) in history.ops.iter().enumerate() {
                edn_line(&mut text, i, op, tuples);
                text.push('\n');
            }
            Ok(Exported {
                text,
                ops: history.ops.len(),
                notes: Vec::new(),
            })
        }
        ExportFormat::ElleJson => {
            let tuples = tuples(history)?;
            let mut text = String::from("[");
            for (i, op) in history.ops.iter().enumerate() {
                text.push_str(if i == 0 { "\n" } else { ",\n" });
                json_line(&mut text, i, op, tuples);
            }
            text.push_str("\n]\n");
            Ok(Exported {
                text,
                ops: history.ops.len(),
                notes: Vec::new(),
            })
        }
        ExportFormat::Porcupine => porcupine(history),
    }
}

/// Whether client ops carry independent tuples: every client op has a key. Some with and some
/// without is an error.
fn tuples(history: &History) -> Result<bool, String> {
    let (mut keyed, mut bare) = (0usize, None);
    for (i, op) in history
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_client())
    {
        match op.key {
            Some(_) => keyed += 1,
            None => bare = bare.or(Some(i)),
        }
    }
    match bare {
        Some(i) if keyed > 0 => Err(format!(
            "{keyed} client op(s) have a key and op {i} (process {} {}) has none: jepsen.independent tuples need a key on every client op",
            history.ops[i].process, history.ops[i].f
        )),
        _ => Ok(keyed > 0),
    }
}

fn type_name(t: OpType) -> &'static str {
    match t {
        OpType::Invoke => "invoke",
        OpType::Ok => "ok",
        OpType::Fail => "fail",
        OpType::Info => "info",
    }
}

/// A key as a tuple's first element: an integer when the key is one written plainly.
fn key_value(k: &str) -> Value {
    match k.parse::<i64>() {
        Ok(n) if n.to_string() == k => Value::from(n),
        _ => Value::from(k),
    }
}

/// An op's value as written: `[key value]` with tuples.
fn value_of(op: &Op, tuples: bool) -> Value {
    match (&op.key, tuples && op.is_client()) {
        (Some(k), true) => Value::Array(vec![key_value(k), op.value.clone()]),
        _ => op.value.clone(),
    }
}

/// Whether `v` is a list of Elle micro-ops (`[["append", "x", 1], ["r", "x", null]]`).
fn is_micro_ops(v: &Value) -> bool {
    matches!(v, Value::Array(ms) if !ms.is_empty() && ms.iter().all(|m| {
        matches!(m, Value::Array(parts) if matches!(parts.first(), Some(Value::String(f)) if is_plain_keyword(f)))
    }))
}

/// Write a value as EDN, micro-ops Elle's way (function and plain-word keys as keywords).
fn edn_value(out: &mut String, v: &Value, txn: bool) {
    if !(txn && is_micro_ops(v)) {
        write_json_as_edn(out, v);
        return;
    }
    out.push('[');
    for (i, m) in v.as_array().into_iter().flatten().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push('[');
        for (j, part) in m.as_array().into_iter().flatten().enumerate() {
            if j > 0 {
                out.push(' ');
            }
            match part {
                Value::String(s) if j < 2 && is_plain_keyword(s) => {
                    out.push(':');
                    out.push_str(s);
                }
                other => write_json_as_edn(out, other),
            }
        }
        out.push(']');
    }
    out.push(']');
}

/// Op number `index` (its position: Jepsen's indexes are dense) as one EDN map.
fn edn_line(out: &mut String, index: usize, op: &Op, tuples: bool) {
    let _ = write!(out, "{{:type :{}, :f ", type_name(op.op_type));
    if is_plain_keyword(&op.f) {
        out.push(':');
        out.push_str(&op.f);
    } else {
        write_str(out, &op.f);
    }
    out.push_str(", :value ");
    let txn = op.f == "txn";
    match (&op.key, tuples && op.is_client()) {
        (Some(k), true) => {
            out.push('[');
            write_json_as_edn(out, &key_value(k));
            out.push(' ');
            edn_value(out, &op.value, txn);
            out.push(']');
        }
        _ => edn_value(out, &op.value, txn),
    }
    match op.process {
        Process::Client(p) => {
            let _ = write!(out, ", :process {p}");
        }
        Process::Nemesis => out.push_str(", :process :nemesis"),
    }
    let _ = write!(out, ", :time {}, :index {index}", op.time_ns);
    if let Some(e) = &op.error {
        out.push_str(", :error ");
        write_str(out, e);
    }
    if let Some(n) = &op.node {
        out.push_str(", :node ");
        write_str(out, n);
    }
    out.push('}');
}

/// Op number `index` (its position) as one JSON object.
fn json_line(out: &mut String, index: usize, op: &Op, tuples: bool) {
    let s = |v: &Value| serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    let process = match op.process {
        Process::Client(p) => p.to_string(),
        Process::Nemesis => "\"nemesis\"".into(),
    };
    let _ = write!(
        out,
        "{{\"type\":\"{}\",\"f\":{},\"value\":{},\"process\":{process},\"time\":{},\"index\":{index}",
        type_name(op.op_type),
        s(&Value::from(op.f.as_str())),
        s(&value_of(op, tuples)),
        op.time_ns,
    );
    if let Some(e) = &op.error {
        let _ = write!(out, ",\"error\":{}", s(&Value::from(e.as_str())));
    }
    if let Some(n) = &op.node {
        let _ = write!(out, ",\"node\":{}", s(&Value::from(n.as_str())));
    }
    out.push('}');
}

/// A value as Porcupine's kv strings hold it: strings as they are, nil as `""`, other scalars
/// as their JSON text. Lists and maps have no string form there.
fn kv_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some(String::new()),
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn porcupine(history: &History) -> Result<Exported, String> {
    let mut other: BTreeMap<String, usize> = BTreeMap::new();
    for op in history.ops.iter().filter(|o| o.is_client()) {
        if !matches!(op.f.as_str(), "get" | "put" | "append" | "read" | "write") {
            *other.entry(op.f.to_string()).or_insert(0) += 1;
        }
    }
    if !other.is_empty() {
        let listed: Vec<String> = other.iter().map(|(f, n)| format!("{f} ×{n}")).collect();
        return Err(format!(
            "Porcupine's kv lines hold get, put and append ops (read and write are written as get and put); this history also has {}: export it as edn or elle-json",
            listed.join(", ")
        ));
    }
    let mut text = String::new();
    let (mut ops, mut nemesis, mut renamed) = (0usize, 0usize, false);
    for (i, op) in history.ops.iter().enumerate() {
        let Process::Client(p) = op.process else {
            nemesis += 1;
            continue;
        };
        let f = match op.f.as_str() {
            "read" => {
                renamed = true;
                "get"
            }
            "write" => {
                renamed = true;
                "put"
            }
            f => f,
        };
        let _ = write!(
            text,
            "{{:process {p}, :type :{}, :f :{f}, :key ",
            type_name(op.op_type)
        );
        write_str(&mut text, op.key.as_deref().unwrap_or(""));
        text.push_str(", :value ");
        if f == "get" && op.op_type == OpType::Invoke {
            text.push_str("nil");
        } else {
            let v = kv_text(&op.value).ok_or_else(|| {
                format!(
                    "op {i} (process {p} {}): Porcupine's kv values are strings, and {} has no string form",
                    op.f, op.value
                )
            })?;
            write_str(&mut text, &v);
        }
        text.push_str("}\n");
        ops += 1;
    }
    let mut notes = Vec::new();
    if renamed {
        notes.push(
            "read and write ops are written as Porcupine's get and put, values as their text (a nil read as \"\", where Porcupine's kv keys start)"
                .to_string(),
        );
    }
    if nemesis > 0 {
        notes.push(format!(
            "left out {nemesis} nemesis op(s): Porcupine's kv lines have none"
        ));
    }
    Ok(Exported { text, ops, notes })
}

#[cfg(test)]
mod tests;
