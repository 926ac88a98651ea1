//! Transactions from a history: every client op is a transaction whose value is a list of
//! micro-ops — Elle's list-append shape (`["append", k, v]`, `["r", k, list]`) or its rw-register
//! shape (`["w", k, v]`, `["r", k, v]`). Which one a history is follows from its micro-ops (any
//! `w` → rw-register; a history mixing `append` and `w` is an error). Keys, elements and register
//! values are interned to small integers; what they were is kept for the explanations.
//!
//! Owns reading micro-ops in every shape the importers hand over (keywords already turned into
//! strings by `edn`, `[:r :x]` and `[:r :x nil]` invokes, keys and values that are numbers, strings
//! or vectors, integral floats from EDN `1M` read as integers) and pairing each invoke with its
//! completion. Does not own the file formats (`history`, `edn`, `import`) or any inference. Pure.

use crate::history::{History, OpType};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Committed: its reads are what it saw.
    Ok,
    /// Did not commit (`fail`): its appends must never be read.
    Fail,
    /// May or may not have committed (`info`, or no completion): its reads are unknown.
    Info,
}

/// One micro-op with interned key and elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mop {
    /// Append `elem` to the list at `key`.
    Append {
        /// Interned key.
        key: u32,
        /// Interned element.
        elem: u32,
    },
    /// Read the list at `key`; `None` when unknown (an invoke, an info op).
    Read {
        /// Interned key.
        key: u32,
        /// The list read, interned.
        list: Option<Vec<u32>>,
    },
    /// Set the register at `key` to `value` (rw-register).
    Write {
        /// Interned key.
        key: u32,
        /// Interned value.
        value: u32,
    },
    /// Read the register at `key` (rw-register).
    ReadRegister {
        /// Interned key.
        key: u32,
        /// What was read: `None` when unknown (an invoke, an info op), `Some(None)` for nil (the
        /// initial state), `Some(Some(v))` for a value.
        value: Option<Option<u32>>,
    },
}

/// Which of Elle's transaction workloads a history is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnKind {
    /// Appends to lists and reads of whole lists.
    #[default]
    ListAppend,
    /// Writes of unique values to registers and reads of them.
    RwRegister,
}

impl TxnKind {
    /// Both workloads.
    pub const ALL: [TxnKind; 2] = [TxnKind::ListAppend, TxnKind::RwRegister];

    /// The workload Elle (and elle-cli's `--model`) calls `name`.
    pub fn parse(name: &str) -> Option<TxnKind> {
        TxnKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Elle's name: `list-append`, `rw-register`.
    pub fn name(self) -> &'static str {
        match self {
            TxnKind::ListAppend => "list-append",
            TxnKind::RwRegister => "rw-register",
        }
    }
}

/// One transaction.
#[derive(Debug, Clone)]
pub struct Txn {
    /// Index of its invoke in the history.
    pub invoke: usize,
    /// The number it is named by (`T3`): its invoke's index, or, when the invokes were
    /// synthesized from completions, its completion's position in the input as written.
    pub name: usize,
    /// Index of its completion, when it completed.
    pub complete: Option<usize>,
    /// Client process.
    pub process: u64,
    /// How it ended.
    pub status: Status,
    /// Its micro-ops, in order (from the completion when it has them, else the invoke).
    pub mops: Vec<Mop>,
    /// Invoke time, ns.
    pub invoke_ns: u64,
    /// Completion time, ns (`u64::MAX` when it never completed).
    pub complete_ns: u64,
}

/// Interned names: index → the value as written (for explanations).
#[derive(Debug, Clone, Default)]
pub struct Interner {
    /// Index → value.
    pub values: Vec<Value>,
    ids: FxHashMap<String, u32>,
    /// Integers, the common case, without formatting them.
    ints: FxHashMap<i64, u32>,
}

impl Interner {
    fn intern(&mut self, v: Value) -> u32 {
        if let Some(i) = v.as_i64() {
            let next = self.values.len() as u32;
            let id = *self.ints.entry(i).or_insert(next);
            if id == next {
                self.values.push(v);
            }
            return id;
        }
        let text = v.to_string();
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(v);
        self.ids.insert(text, id);
        id
    }

    /// The value as written, compactly (`x`, `3`, `[1,2]`).
    pub fn show(&self, id: u32) -> String {
        match self.values.get(id as usize) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => format!("#{id}"),
        }
    }
}

/// Transactions read from a history, with the interned keys and elements.
#[derive(Debug, Clone, Default)]
pub struct Txns {
    /// List-append or rw-register.
    pub kind: TxnKind,
    /// Transactions in invoke order.
    pub txns: Vec<Txn>,
    /// Keys.
    pub keys: Interner,
    /// List elements.
    pub elems: Interner,
    /// The history's invokes were synthesized from its completions
    /// ([`History::invokes_synthesized`]): real-time order is unknown, so no real-time edge is
    /// drawn (and no version order is inferred from real time).
    pub realtime_unknown: bool,
    /// The order edges the dependency graph gets: both with invokes; for completions only, what
    /// the checker sets from the ask ([`super::judge::Orders::completions_only`]).
    pub orders: super::judge::Orders,
}

/// The micro-op function names.
pub mod mop_f {
    /// Append to a list.
    pub const APPEND: &str = "append";
    /// Read a list (or a register).
    pub const READ: &str = "r";
    /// Write a register (rw-register histories).
    pub const WRITE: &str = "w";
}

/// EDN `1M` arrives as the float `1.0`; elements compare as integers when they are integral.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        _ => v.clone(),
    }
}

/// True when `v` is a non-empty list of micro-ops (`[f k]` or `[f k v]` with a string `f`).
pub fn is_txn_value(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter().all(|m| {
                m.as_array()
                    .is_some_and(|m| (m.len() == 2 || m.len() == 3) && m[0].is_string())
            })
    })
}

/// True when every client op with a value holds a transaction ([`is_txn_value`]) and one does:
/// a history elle-cli's `--model list-append` / `rw-register` means as transactions even when
/// it only reads (`[["r", 1, []]]`), which `--model auto` cannot tell from a list-append
/// history of single ops without an append or a write among its micro-ops.
pub fn is_txn_history(history: &History) -> bool {
    let mut any = false;
    for op in history
        .ops
        .iter()
        .filter(|o| o.is_client() && !o.value.is_null())
    {
        if !is_txn_value(&op.value) {
            return false;
        }
        any = true;
    }
    any
}

/// `line 7 (op 3, process 0, txn)` for the op at position `pos` (0-based, as transactions are
/// named `T3`) when the reader knew its line, else `op 3 (process 0, txn)`.
fn op_label(history: &History, pos: usize) -> String {
    let op = &history.ops[pos];
    match history.line_of(pos) {
        Some(line) => format!("line {line} (op {pos}, process {}, {})", op.process, op.f),
        None => format!("op {pos} (process {}, {})", op.process, op.f),
    }
}

/// The micro-op function of a micro-op value, without a keyword colon.
fn mop_fn(m: &Value) -> Option<&str> {
    m.as_array()?
        .first()?
        .as_str()
        .map(|f| f.trim_start_matches(':'))
}

/// Which workload the client ops' micro-ops belong to: rw-register when any is a `w`, or when
/// there are no appends and some read returned a single value; else list-append. Appends and
/// writes in one history are an error naming one op of each.
pub fn kind_of(history: &History) -> Result<TxnKind, String> {
    let mut append: Option<usize> = None;
    let mut write: Option<usize> = None;
    let mut scalar_read = false;
    for (pos, op) in history
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_client())
    {
        for m in op.value.as_array().into_iter().flatten() {
            match mop_fn(m) {
                Some(mop_f::APPEND) => {
                    append.get_or_insert(pos);
                }
                Some(mop_f::WRITE) => {
                    write.get_or_insert(pos);
                }
                Some(mop_f::READ) => {
                    scalar_read |= m.get(2).is_some_and(|v| !v.is_null() && !v.is_array());
                }
                _ => {}
            }
        }
    }
    match (append, write) {
        (Some(a), Some(w)) => Err(format!(
            "{} appends to a list and {} writes a register: a history is either list-append or rw-register, not both; check them as separate histories",
            op_label(history, a),
            op_label(history, w)
        )),
        (None, Some(_)) => Ok(TxnKind::RwRegister),
        (None, None) if scalar_read => Ok(TxnKind::RwRegister),
        _ => Ok(TxnKind::ListAppend),
    }
}

/// Why `--model asked` does not fit `history`: it holds the other kind's micro-ops (an append
/// for rw-register; a write, or a single-value read, for list-append), named with the first op
/// that shows it. `None` when it fits or the history shows neither kind (reads of nil only).
pub fn kind_mismatch(history: &History, asked: TxnKind) -> Option<String> {
    let held = kind_of(history).ok()?;
    if held == asked {
        return None;
    }
    let evident = |m: &Value| match held {
        TxnKind::ListAppend => mop_fn(m) == Some(mop_f::APPEND),
        TxnKind::RwRegister => {
            mop_fn(m) == Some(mop_f::WRITE)
                || (mop_fn(m) == Some(mop_f::READ)
                    && m.get(2).is_some_and(|v| !v.is_null() && !v.is_array()))
        }
    };
    let (pos, m) = history
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_client())
        .find_map(|(pos, o)| {
            o.value
                .as_array()
                .and_then(|ms| ms.iter().find(|m| evident(m)))
                .map(|m| (pos, m))
        })?;
    Some(format!(
        "--model {}: the history holds {} transactions ({} has the micro-op {m}); check it with --model {} (or auto)",
        asked.name(),
        held.name(),
        op_label(history, pos),
        held.name()
    ))
}

fn parse_mops(
    history: &History,
    pos: usize,
    txns: &mut Txns,
    with_reads: bool,
) -> Result<Vec<Mop>, String> {
    let op = &history.ops[pos];
    let register = txns.kind == TxnKind::RwRegister;
    let Value::Array(items) = &op.value else {
        return Err(format!(
            "{}: expected a transaction, a list of micro-ops such as {}, found {}",
            op_label(history, pos),
            if register {
                "[[\"w\",\"x\",3],[\"r\",\"y\",2]]"
            } else {
                "[[\"append\",\"x\",3],[\"r\",\"y\",[1,2]]]"
            },
            op.value
        ));
    };
    let mut mops = Vec::with_capacity(items.len());
    for (i, m) in items.iter().enumerate() {
        let bad = |why: &str| {
            format!(
                "{}: micro-op {} {m}: {why}; expected {}",
                op_label(history, pos),
                i + 1,
                if register {
                    "[\"w\", key, value] or [\"r\", key, value]"
                } else {
                    "[\"append\", key, element] or [\"r\", key, list]"
                }
            )
        };
        let Some(parts) = m.as_array().filter(|p| p.len() == 2 || p.len() == 3) else {
            return Err(bad("not a vector of 2 or 3 items"));
        };
        // JSON exports of EDN histories may keep the keyword colon (`":append"`).
        let f = parts[0].as_str().unwrap_or("").trim_start_matches(':');
        let key = txns.keys.intern(normalize(&parts[1]));
        let arg = parts.get(2).unwrap_or(&Value::Null);
        match f {
            mop_f::WRITE => {
                if arg.is_null() {
                    return Err(bad(
                        "a register write needs a value (nil is the initial state)",
                    ));
                }
                let value = txns.elems.intern(normalize(arg));
                mops.push(Mop::Write { key, value });
            }
            mop_f::READ if register => {
                let value = with_reads.then(|| match arg {
                    Value::Null => None,
                    v => Some(txns.elems.intern(normalize(v))),
                });
                mops.push(Mop::ReadRegister { key, value });
            }
            mop_f::APPEND => {
                if arg.is_null() {
                    return Err(bad("an append needs an element"));
                }
                let elem = txns.elems.intern(normalize(arg));
                mops.push(Mop::Append { key, elem });
            }
            mop_f::READ => {
                let list = match (with_reads, arg) {
                    (false, _) => None,
                    // Elle reads nil as the empty list.
                    (true, Value::Null) => Some(Vec::new()),
                    (true, Value::Array(a)) => {
                        Some(a.iter().map(|e| txns.elems.intern(normalize(e))).collect())
                    }
                    (true, _) => return Err(bad("a list-append read must be a list or nil")),
                };
                mops.push(Mop::Read { key, list });
            }
            _ => return Err(bad("unknown micro-op function")),
        }
    }
    Ok(mops)
}

/// Read the transactions of `history`: every client op must be a transaction. Nemesis ops are
/// skipped. An error names the op (and its line, when the reader knew it) and the micro-op.
pub fn read_txns(history: &History) -> Result<Txns, String> {
    let pairs = history.pairs()?;
    let mut txns = Txns {
        kind: kind_of(history)?,
        realtime_unknown: history.invokes_synthesized,
        orders: if history.invokes_synthesized {
            super::judge::Orders {
                realtime: false,
                process: true,
            }
        } else {
            super::judge::Orders::BOTH
        },
        ..Txns::default()
    };
    let mut synthesized_before = 0;
    for (i, op) in history.ops.iter().enumerate() {
        if !op.is_client() || op.op_type != OpType::Invoke {
            continue;
        }
        let name = if history.invokes_synthesized {
            synthesized_before += 1;
            i + 1 - synthesized_before
        } else {
            i
        };
        let completion = pairs[i].map(|j| &history.ops[j]);
        let status = match completion.map(|c| c.op_type) {
            Some(OpType::Ok) => Status::Ok,
            Some(OpType::Fail) => Status::Fail,
            _ => Status::Info,
        };
        // The invoke carries the appends; a committed completion also the reads. An invoke
        // without a value (nil) takes its micro-ops from its completion, as Elle reads only
        // completions; with a completion that has none either, the transaction is empty.
        let invoke_nil = op.value.is_null();
        let invoke_mops = match completion {
            Some(c) if invoke_nil && !c.value.is_null() => {
                parse_mops(history, pairs[i].unwrap_or(i), &mut txns, false)?
            }
            Some(_) if invoke_nil => Vec::new(),
            _ => parse_mops(history, i, &mut txns, false)?,
        };
        let mops = match completion {
            Some(c) if status == Status::Ok && !c.value.is_null() => {
                let j = pairs[i].unwrap_or(i);
                let done = parse_mops(history, j, &mut txns, true)?;
                if !invoke_nil && done.len() != invoke_mops.len() {
                    return Err(format!(
                        "{}: it has {} micro-ops, its invoke ({}) {}",
                        op_label(history, j),
                        done.len(),
                        op_label(history, i),
                        invoke_mops.len()
                    ));
                }
                done
            }
            _ => invoke_mops,
        };
        txns.txns.push(Txn {
            invoke: i,
            name,
            complete: pairs[i],
            process: op.process.client().unwrap_or(0),
            status,
            mops,
            invoke_ns: op.time_ns,
            complete_ns: completion.map_or(u64::MAX, |c| c.time_ns),
        });
    }
    Ok(txns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, Process};
    use serde_json::json;

    fn op(t: OpType, p: u64, v: Value) -> Op {
        Op::new(t, Process::Client(p), "txn", v)
    }

    #[test]
    fn a_history_of_read_only_transactions_is_a_transaction_history() {
        // elle-cli's list-append-valid-read-empty.json: one read, no append; `check --model
        // list-append` refused it as a list-append history of single ops.
        let reads = History::from_ops(vec![
            op(OpType::Invoke, 0, json!([["r", 1, null]])),
            op(OpType::Ok, 0, json!([["r", 1, []]])),
            op(OpType::Invoke, 1, json!([["r", "x", null]])),
            op(OpType::Info, 1, Value::Null),
        ]);
        assert!(is_txn_history(&reads));
        // Single ops of the list-append model, nothing at all, or one op that is no transaction.
        let single = History::from_ops(vec![
            Op::new(OpType::Invoke, Process::Client(0), "read", Value::Null),
            Op::new(OpType::Ok, Process::Client(0), "read", json!([1, 2])),
        ]);
        assert!(!is_txn_history(&single));
        assert!(!is_txn_history(&History::from_ops(Vec::new())));
        let mixed = History::from_ops(vec![
            op(OpType::Invoke, 0, json!([["r", 1, null]])),
            op(OpType::Ok, 0, json!([["r", 1, []]])),
            Op::new(OpType::Invoke, Process::Client(1), "append", json!(3)),
        ]);
        assert!(!is_txn_history(&mixed));
    }

    #[test]
    fn an_invoke_without_a_value_takes_its_completions_micro_ops() {
        // Elle reads completions only; an invoke written as nil was an error here.
        let h = History::from_ops(vec![
            op(OpType::Invoke, 0, Value::Null),
            op(OpType::Ok, 0, json!([["append", "x", 1], ["r", "y", [2]]])),
            op(OpType::Invoke, 1, Value::Null),
            op(OpType::Info, 1, json!([["append", "y", 2]])),
            op(OpType::Invoke, 2, Value::Null),
            op(OpType::Fail, 2, Value::Null),
        ]);
        let t = read_txns(&h).unwrap();
        assert_eq!(t.txns.len(), 3);
        assert_eq!(t.txns[0].mops.len(), 2);
        assert!(matches!(t.txns[0].mops[1], Mop::Read { list: Some(ref l), .. } if l.len() == 1));
        // An indeterminate completion gives its writes, no read.
        assert!(matches!(t.txns[1].mops[..], [Mop::Append { .. }]));
        assert!(t.txns[2].mops.is_empty());
    }

    #[test]
    fn invokes_completions_and_shapes_become_txns() {
        let h = History::from_ops(vec![
            op(
                OpType::Invoke,
                0,
                json!([["append", "x", 1.0], ["r", ["y", 2]]]),
            ),
            op(
                OpType::Ok,
                0,
                json!([["append", "x", 1], ["r", ["y", 2], null]]),
            ),
            op(OpType::Invoke, 1, json!([["r", 5, null]])),
            op(OpType::Info, 1, json!([["r", 5, null]])),
        ]);
        let t = read_txns(&h).unwrap();
        assert_eq!(t.txns.len(), 2);
        assert_eq!(t.txns[0].status, Status::Ok);
        assert_eq!(
            t.txns[0].mops,
            vec![
                Mop::Append { key: 0, elem: 0 },
                Mop::Read {
                    key: 1,
                    list: Some(vec![])
                }
            ]
        );
        assert_eq!(t.elems.show(0), "1");
        assert_eq!(t.keys.show(1), "[\"y\",2]");
        assert_eq!(t.txns[1].status, Status::Info);
        assert_eq!(t.txns[1].mops, vec![Mop::Read { key: 2, list: None }]);
    }

    #[test]
    fn a_model_of_the_other_kind_is_named_with_the_op_that_shows_the_kind() {
        let register = History::from_ops_at_lines(
            vec![
                op(OpType::Invoke, 0, json!([["r", "x", null]])),
                op(OpType::Ok, 0, json!([["r", "x", null]])),
                op(OpType::Invoke, 1, json!([["w", "x", 1]])),
            ],
            vec![1, 2, 4],
        );
        assert_eq!(kind_mismatch(&register, TxnKind::RwRegister), None);
        let e = kind_mismatch(&register, TxnKind::ListAppend).unwrap();
        assert!(
            e.starts_with("--model list-append: the history holds rw-register transactions (line 4 (op 2, process 1, txn) has the micro-op [\"w\",\"x\",1])"),
            "{e}"
        );
        // Reads of nil only show neither kind: either model fits.
        let reads = History::from_ops(vec![op(OpType::Invoke, 0, json!([["r", "x", null]]))]);
        assert_eq!(kind_mismatch(&reads, TxnKind::RwRegister), None);
        assert_eq!(kind_mismatch(&reads, TxnKind::ListAppend), None);
    }

    #[test]
    fn malformed_micro_ops_are_errors_naming_the_op() {
        let h = History::from_ops(vec![op(OpType::Invoke, 0, json!([["cas", "x", 1]]))]);
        let e = read_txns(&h).unwrap_err();
        assert!(e.contains("op 0 (process 0, txn): micro-op 1"), "{e}");
        assert!(e.contains("unknown micro-op function"), "{e}");
        let h = History::from_ops(vec![
            op(OpType::Invoke, 0, json!([["r", "x"], ["append", "y", 1]])),
            op(OpType::Ok, 0, json!([["r", "x", 3], ["append", "y", 1]])),
        ]);
        assert!(read_txns(&h).unwrap_err().contains("list or nil"));
        // With the lines the reader saw, the error names the line.
        let h = History::from_ops_at_lines(
            vec![
                op(OpType::Invoke, 0, json!([["w", "x", 1]])),
                op(OpType::Ok, 0, json!([["w", "x", 1]])),
                op(OpType::Invoke, 0, json!([["w", "x"]])),
            ],
            vec![1, 2, 5],
        );
        let e = read_txns(&h).unwrap_err();
        assert!(
            e.starts_with("line 5 (op 2, process 0, txn): micro-op 1"),
            "{e}"
        );
        assert!(e.contains("a register write needs a value"), "{e}");
        let h = History::from_ops(vec![Op::new(
            OpType::Invoke,
            Process::Client(0),
            "read",
            json!(null),
        )]);
        assert!(
            read_txns(&h)
                .unwrap_err()
                .contains("expected a transaction")
        );
    }
}
