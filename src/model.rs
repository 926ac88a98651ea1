//! Sequential specifications (models) for the linearizability checker.
//!
//! Owns the `Model` trait and the concrete models: register / cas-register, multi-register (Knossos
//! `:txn` histories), key-value map (get/put/append), list-append (append/read of whole lists), set (add/read), FIFO queue (enqueue/dequeue),
//! mutex (acquire/release) and counter (add/read). Does not own the search (that is
//! `checker::linear`) nor history parsing (`history`, `edn`).
//!
//! # How history ops become model ops
//!
//! The checker pairs every client invoke with its completion and asks the model to `convert` the pair:
//! - `ok`: the op happened between its invoke and its completion; its output is the completion value.
//! - `fail`: the op did not happen and is dropped — except *definite negative evidence*: with
//!   `RegisterConfig::cas_mismatch_is_evidence`, a `cas` failed with `error: "cas-mismatch"` did
//!   happen (atomically, within its interval) and observed a value different from `old`.
//! - `info` or no completion: the op may take effect at any point after its invoke, or never; its
//!   output is unknown. Ops whose only content is an output (reads) impose nothing and are dropped.
//!
//! # Register semantics (`RegisterConfig`)
//!
//! - `initial`: the register's value before any op. Our etcd workload starts with the key absent
//!   (`None`); Knossos histories start at `Some(0)`.
//! - `nil_read_is_unknown`: what an ok read of `null` means. `false` (etcd): the key was absent, a
//!   definite observation. `true` (Knossos): an unknown read that imposes nothing.
//! - `cas_mismatch_is_evidence`: see above. On for our JSONL (`RegisterConfig::etcd`), off for EDN
//!   (`RegisterConfig::knossos`).
//!
//! Every model here is deterministic once the observed output is known, so `step` returns at most
//! one next state; a nondeterministic specification can be expressed by making the state a set of
//! possible states.

use crate::history::{Op, OpType};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

/// What a history op pair means to a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Convert<O> {
    /// The op imposes nothing (a failed op, an unknown read): drop it.
    Skip,
    /// The op took effect between its invoke and its completion.
    Completed(O),
    /// The op may take effect at any point after its invoke, or never.
    Pending(O),
}

/// A sequential specification.
pub trait Model: Send + Sync {
    /// Model state; hashed into the search cache, so keep it small.
    type State: Clone + Eq + Hash + Send + Sync + Debug;
    /// A model operation with its observed output, as produced by `convert`. Equal ops are
    /// interchangeable: the search counts pending ops per class of equal ops instead of naming
    /// each one, so equality must mean "same effect and same observed output".
    type Op: Clone + Eq + Hash + Debug + Send + Sync;
    /// Short stable name, e.g. `cas-register`.
    fn name(&self) -> &'static str;
    /// The state before any op.
    fn init(&self) -> Self::State;
    /// Interpret an invoke and its completion (`None` when the op never completed). Errors name the
    /// op index and what was expected.
    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<Self::Op>, String>;
    /// Apply `op` with its observed output to `s`: the next state, or `None` if inconsistent.
    fn step(&self, s: &Self::State, op: &Self::Op) -> Option<Self::State>;
    /// True when `op` never changes the state (a pure observation). Witness minimization may drop
    /// such ops; others it only relaxes. The default `false` is always safe.
    fn is_read_only(&self, op: &Self::Op) -> bool {
        let _ = op;
        false
    }
    /// Human description of an op, e.g. `read → 3`.
    fn describe_op(&self, op: &Self::Op) -> String;
    /// Human description of a state.
    fn describe_state(&self, s: &Self::State) -> String;
}

/// How a completed pair ended, from the model's point of view.
enum Outcome<'a> {
    Ok(&'a Op),
    Fail(&'a Op),
    Unknown,
}

fn outcome(completion: Option<&Op>) -> Outcome<'_> {
    match completion {
        Some(c) if c.op_type == OpType::Ok => Outcome::Ok(c),
        Some(c) if c.op_type == OpType::Fail => Outcome::Fail(c),
        _ => Outcome::Unknown,
    }
}

fn bad(invoke: &Op, what: &str, got: &Value) -> String {
    format!(
        "op {} (process {} {}): expected {what}, got {got}",
        invoke.index, invoke.process, invoke.f
    )
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// Integer argument of an op: the invoke value, or the completion value when the invoke has none.
fn int_arg(invoke: &Op, completion: Option<&Op>, what: &str) -> Result<i64, String> {
    if let Some(i) = int(&invoke.value) {
        return Ok(i);
    }
    if let Some(i) = completion.and_then(|c| int(&c.value)) {
        return Ok(i);
    }
    Err(bad(invoke, what, &invoke.value))
}

fn pair_arg(invoke: &Op, completion: Option<&Op>) -> Result<(i64, i64), String> {
    let get = |v: &Value| match v.as_array().map(|a| a.as_slice()) {
        Some([a, b]) => Some((int(a)?, int(b)?)),
        _ => None,
    };
    get(&invoke.value)
        .or_else(|| completion.and_then(|c| get(&c.value)))
        .ok_or_else(|| bad(invoke, "a cas value [old, new] of integers", &invoke.value))
}

fn wrap<O>(o: Outcome<'_>, op: O) -> Convert<O> {
    match o {
        Outcome::Ok(_) => Convert::Completed(op),
        Outcome::Fail(_) => Convert::Skip,
        Outcome::Unknown => Convert::Pending(op),
    }
}

// ---------------------------------------------------------------------------------------------
// Register / cas-register

/// Semantics switches for the register models; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterConfig {
    /// Value before any op; `None` = absent.
    pub initial: Option<i64>,
    /// An ok read of `null` imposes nothing (Knossos) instead of meaning "absent" (etcd).
    pub nil_read_is_unknown: bool,
    /// A `cas` failed with `error: "cas-mismatch"` happened and observed a value other than `old`.
    pub cas_mismatch_is_evidence: bool,
}

impl RegisterConfig {
    /// Our etcd workload: key initially absent, null reads mean absent, cas mismatches are evidence.
    pub fn etcd() -> RegisterConfig {
        RegisterConfig {
            initial: None,
            nil_read_is_unknown: false,
            cas_mismatch_is_evidence: true,
        }
    }

    /// Knossos corpus: initial value 0, nil reads are unknown, failed ops did not happen.
    pub fn knossos() -> RegisterConfig {
        RegisterConfig {
            initial: Some(0),
            nil_read_is_unknown: true,
            cas_mismatch_is_evidence: false,
        }
    }
}

/// A register op with its observed output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// A read that observed this value (`None` = absent).
    Read(Option<i64>),
    /// Write a value.
    Write(i64),
    /// Compare-and-set that succeeded: value was `old`, becomes `new`.
    Cas(i64, i64),
    /// Compare-and-set whose compare definitely failed: the value was not `old`.
    CasMismatch(i64),
}

/// Register (read/write) or cas-register (read/write/cas); state `Option<i64>`.
#[derive(Debug, Clone, Copy)]
pub struct RegisterModel {
    /// Semantics switches.
    pub config: RegisterConfig,
    /// Whether `cas` ops are allowed (cas-register) or rejected as ill-formed (register).
    pub allow_cas: bool,
}

impl RegisterModel {
    /// A plain read/write register.
    pub fn register(config: RegisterConfig) -> RegisterModel {
        RegisterModel {
            config,
            allow_cas: false,
        }
    }

    /// A read/write/compare-and-set register.
    pub fn cas_register(config: RegisterConfig) -> RegisterModel {
        RegisterModel {
            config,
            allow_cas: true,
        }
    }
}

fn show_opt(v: Option<i64>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

impl Model for RegisterModel {
    type State = Option<i64>;
    type Op = RegisterOp;

    fn name(&self) -> &'static str {
        if self.allow_cas {
            "cas-register"
        } else {
            "register"
        }
    }

    fn init(&self) -> Option<i64> {
        self.config.initial
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<RegisterOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "read" => match o {
                Outcome::Ok(c) => match &c.value {
                    Value::Null if self.config.nil_read_is_unknown => Ok(Convert::Skip),
                    Value::Null => Ok(Convert::Completed(RegisterOp::Read(None))),
                    v => int(v)
                        .map(|i| Convert::Completed(RegisterOp::Read(Some(i))))
                        .ok_or_else(|| bad(invoke, "an integer or null read value", v)),
                },
                _ => Ok(Convert::Skip),
            },
            "write" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = int_arg(invoke, completion, "an integer write value")?;
                Ok(wrap(o, RegisterOp::Write(v)))
            }
            "cas" if self.allow_cas => {
                if let Outcome::Fail(c) = o {
                    if self.config.cas_mismatch_is_evidence
                        && c.error.as_deref() == Some("cas-mismatch")
                    {
                        let (old, _) = pair_arg(invoke, completion)?;
                        return Ok(Convert::Completed(RegisterOp::CasMismatch(old)));
                    }
                    return Ok(Convert::Skip);
                }
                let (old, new) = pair_arg(invoke, completion)?;
                Ok(wrap(o, RegisterOp::Cas(old, new)))
            }
            f => Err(format!(
                "op {} (process {}): {} model has no operation {f:?}",
                invoke.index,
                invoke.process,
                self.name()
            )),
        }
    }

    #[inline]
    fn step(&self, s: &Option<i64>, op: &RegisterOp) -> Option<Option<i64>> {
        match *op {
            RegisterOp::Read(v) => (*s == v).then_some(*s),
            RegisterOp::Write(v) => Some(Some(v)),
            RegisterOp::Cas(old, new) => (*s == Some(old)).then_some(Some(new)),
            RegisterOp::CasMismatch(old) => (*s != Some(old)).then_some(*s),
        }
    }

    fn is_read_only(&self, op: &RegisterOp) -> bool {
        matches!(op, RegisterOp::Read(_) | RegisterOp::CasMismatch(_))
    }

    fn describe_op(&self, op: &RegisterOp) -> String {
        match *op {
            RegisterOp::Read(v) => format!("read → {}", show_opt(v)),
            RegisterOp::Write(v) => format!("write {v}"),
            RegisterOp::Cas(a, b) => format!("cas {a} → {b}"),
            RegisterOp::CasMismatch(a) => format!("cas from {a} (mismatch)"),
        }
    }

    fn describe_state(&self, s: &Option<i64>) -> String {
        show_opt(*s)
    }
}

// ---------------------------------------------------------------------------------------------
// Multi-register (Knossos `:txn` of `[f k v]` micro-ops)

/// One micro-op of a multi-register transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MicroOp {
    /// Read `key`, observed value (`None` = unknown, imposes nothing).
    Read(String, Option<i64>),
    /// Write `key`.
    Write(String, i64),
}

/// Several registers updated by atomic transactions `f: "txn"`, value `[["read"|"write", key, v]…]`.
/// Every key starts at `initial`; a read of `null` is unknown.
#[derive(Debug, Clone, Copy)]
pub struct MultiRegisterModel {
    /// Initial value of every key.
    pub initial: i64,
}

impl Model for MultiRegisterModel {
    type State = BTreeMap<String, i64>;
    type Op = Vec<MicroOp>;

    fn name(&self) -> &'static str {
        "multi-register"
    }

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn convert(
        &self,
        invoke: &Op,
        completion: Option<&Op>,
    ) -> Result<Convert<Vec<MicroOp>>, String> {
        if invoke.f != "txn" {
            return Err(bad(invoke, "f \"txn\"", &Value::String(invoke.f.clone())));
        }
        let o = outcome(completion);
        if matches!(o, Outcome::Fail(_)) {
            return Ok(Convert::Skip);
        }
        let src = match o {
            Outcome::Ok(c) => &c.value,
            _ => &invoke.value,
        };
        let known = matches!(o, Outcome::Ok(_));
        let items = src
            .as_array()
            .ok_or_else(|| bad(invoke, "a txn vector of [f key value]", src))?;
        let mut ops = Vec::new();
        for it in items {
            let parts = it.as_array().map(|a| a.as_slice());
            let Some([f, k, v]) = parts else {
                return Err(bad(invoke, "a micro-op [f key value]", it));
            };
            let key = match k {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(bad(invoke, "a string or integer key", other)),
            };
            match f.as_str() {
                Some("read") | Some("r") => {
                    let val = if known { int(v) } else { None };
                    if val.is_some() {
                        ops.push(MicroOp::Read(key, val));
                    }
                }
                Some("write") | Some("w") => {
                    let val = int(v).ok_or_else(|| bad(invoke, "an integer write", v))?;
                    ops.push(MicroOp::Write(key, val));
                }
                _ => return Err(bad(invoke, "micro-op f read or write", f)),
            }
        }
        if ops.is_empty() {
            return Ok(Convert::Skip);
        }
        Ok(wrap(o, ops))
    }

    fn step(&self, s: &Self::State, op: &Vec<MicroOp>) -> Option<Self::State> {
        let mut next = s.clone();
        for m in op {
            match m {
                MicroOp::Read(k, Some(v)) => {
                    if *next.get(k).unwrap_or(&self.initial) != *v {
                        return None;
                    }
                }
                MicroOp::Read(_, None) => {}
                MicroOp::Write(k, v) => {
                    next.insert(k.clone(), *v);
                }
            }
        }
        Some(next)
    }

    fn is_read_only(&self, op: &Vec<MicroOp>) -> bool {
        op.iter().all(|m| matches!(m, MicroOp::Read(..)))
    }

    fn describe_op(&self, op: &Vec<MicroOp>) -> String {
        let parts: Vec<String> = op
            .iter()
            .map(|m| match m {
                MicroOp::Read(k, v) => format!("read {k} → {}", show_opt(*v)),
                MicroOp::Write(k, v) => format!("write {k} {v}"),
            })
            .collect();
        format!("txn [{}]", parts.join(", "))
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?} (others {})", self.initial)
    }
}

// ---------------------------------------------------------------------------------------------
// Key-value map

/// A key-value op; keys come from `Op::key` (`""` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// `get` observed this value (`None` = absent).
    Get(String, Option<String>),
    /// `put` a value.
    Put(String, String),
    /// `append` a string to the value (absent counts as empty).
    Append(String, String),
}

/// Key-value map with `get`, `put` and `append`; values are strings (integers are stringified).
#[derive(Debug, Clone, Copy, Default)]
pub struct KvModel;

fn string_value(invoke: &Op, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(bad(invoke, "a string value", other)),
    }
}

impl Model for KvModel {
    type State = BTreeMap<String, String>;
    type Op = KvOp;

    fn name(&self) -> &'static str {
        "kv"
    }

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<KvOp>, String> {
        let key = invoke.key.clone().unwrap_or_default();
        let o = outcome(completion);
        match invoke.f.as_str() {
            "get" => match o {
                Outcome::Ok(c) => {
                    let v = match &c.value {
                        Value::Null => None,
                        v => Some(string_value(invoke, v)?),
                    };
                    Ok(Convert::Completed(KvOp::Get(key, v)))
                }
                _ => Ok(Convert::Skip),
            },
            "put" | "append" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = string_value(invoke, &invoke.value)?;
                let op = if invoke.f == "put" {
                    KvOp::Put(key, v)
                } else {
                    KvOp::Append(key, v)
                };
                Ok(wrap(o, op))
            }
            f => Err(format!(
                "op {} (process {}): kv model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &KvOp) -> Option<Self::State> {
        match op {
            KvOp::Get(k, v) => (s.get(k) == v.as_ref()).then(|| s.clone()),
            KvOp::Put(k, v) => {
                let mut n = s.clone();
                n.insert(k.clone(), v.clone());
                Some(n)
            }
            KvOp::Append(k, v) => {
                let mut n = s.clone();
                n.entry(k.clone()).or_default().push_str(v);
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &KvOp) -> bool {
        matches!(op, KvOp::Get(..))
    }

    fn describe_op(&self, op: &KvOp) -> String {
        match op {
            KvOp::Get(k, v) => format!("get {k} → {v:?}"),
            KvOp::Put(k, v) => format!("put {k} {v:?}"),
            KvOp::Append(k, v) => format!("append {k} {v:?}"),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?}")
    }
}

// ---------------------------------------------------------------------------------------------
// List append

/// A list-append op on one key (the checker partitions histories by key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListAppendOp {
    /// `append` an integer to the end of the list.
    Append(i64),
    /// `read` observed the whole list (`null` = empty).
    Read(Vec<i64>),
}

/// One list of integers per key with `append` (value: the element) and `read` (value: the whole
/// list, `null` = empty), the list-append workload's ops. Info appends may take effect or not;
/// info and failed reads impose nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListAppendModel;

impl Model for ListAppendModel {
    type State = Vec<i64>;
    type Op = ListAppendOp;

    fn name(&self) -> &'static str {
        "list-append"
    }

    fn init(&self) -> Vec<i64> {
        Vec::new()
    }

    fn convert(
        &self,
        invoke: &Op,
        completion: Option<&Op>,
    ) -> Result<Convert<ListAppendOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "read" => match o {
                Outcome::Ok(c) => {
                    let list = match &c.value {
                        Value::Null => Vec::new(),
                        Value::Array(a) => a
                            .iter()
                            .map(|e| {
                                e.as_i64()
                                    .ok_or_else(|| bad(invoke, "a list of integers", &c.value))
                            })
                            .collect::<Result<_, _>>()?,
                        other => return Err(bad(invoke, "a list of integers", other)),
                    };
                    Ok(Convert::Completed(ListAppendOp::Read(list)))
                }
                _ => Ok(Convert::Skip),
            },
            "append" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let e = int_arg(invoke, completion, "an integer element")?;
                Ok(wrap(o, ListAppendOp::Append(e)))
            }
            f => Err(format!(
                "op {} (process {}): list-append model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Vec<i64>, op: &ListAppendOp) -> Option<Vec<i64>> {
        match op {
            ListAppendOp::Read(l) => (s == l).then(|| s.clone()),
            ListAppendOp::Append(e) => {
                let mut n = s.clone();
                n.push(*e);
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &ListAppendOp) -> bool {
        matches!(op, ListAppendOp::Read(_))
    }

    fn describe_op(&self, op: &ListAppendOp) -> String {
        match op {
            ListAppendOp::Append(e) => format!("append {e}"),
            ListAppendOp::Read(l) => format!("read → {l:?}"),
        }
    }

    fn describe_state(&self, s: &Vec<i64>) -> String {
        format!("{s:?}")
    }
}

// ---------------------------------------------------------------------------------------------
// Set

/// A set op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SetOp {
    /// Add an element.
    Add(i64),
    /// A read that observed exactly these elements.
    Read(BTreeSet<i64>),
}

/// A set of integers with `add` and `read` (read returns all elements).
#[derive(Debug, Clone, Copy, Default)]
pub struct SetModel;

impl Model for SetModel {
    type State = BTreeSet<i64>;
    type Op = SetOp;

    fn name(&self) -> &'static str {
        "set"
    }

    fn init(&self) -> Self::State {
        BTreeSet::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<SetOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "add" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                Ok(wrap(
                    o,
                    SetOp::Add(int_arg(invoke, completion, "an integer element")?),
                ))
            }
            "read" => match o {
                Outcome::Ok(c) => {
                    let arr = c
                        .value
                        .as_array()
                        .ok_or_else(|| bad(invoke, "a read value array", &c.value))?;
                    let mut set = BTreeSet::new();
                    for v in arr {
                        set.insert(int(v).ok_or_else(|| bad(invoke, "integer elements", v))?);
                    }
                    Ok(Convert::Completed(SetOp::Read(set)))
                }
                _ => Ok(Convert::Skip),
            },
            f => Err(format!(
                "op {} (process {}): set model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &SetOp) -> Option<Self::State> {
        match op {
            SetOp::Add(v) => {
                let mut n = s.clone();
                n.insert(*v);
                Some(n)
            }
            SetOp::Read(r) => (s == r).then(|| s.clone()),
        }
    }

    fn is_read_only(&self, op: &SetOp) -> bool {
        matches!(op, SetOp::Read(_))
    }

    fn describe_op(&self, op: &SetOp) -> String {
        match op {
            SetOp::Add(v) => format!("add {v}"),
            SetOp::Read(r) => format!("read → {r:?}"),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?}")
    }
}

// ---------------------------------------------------------------------------------------------
// FIFO queue

/// A queue op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueOp {
    /// Enqueue an element.
    Enqueue(i64),
    /// Dequeue that returned `Some(v)`, or `None` for an empty queue.
    Dequeue(Option<i64>),
    /// Dequeue with unknown output (crashed): removes the head if any.
    DequeueUnknown,
}

/// FIFO queue of integers with `enqueue` and `dequeue` (ok value `null` = queue was empty).
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueModel;

impl Model for QueueModel {
    type State = VecDeque<i64>;
    type Op = QueueOp;

    fn name(&self) -> &'static str {
        "queue"
    }

    fn init(&self) -> Self::State {
        VecDeque::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<QueueOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "enqueue" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = int_arg(invoke, completion, "an integer element")?;
                Ok(wrap(o, QueueOp::Enqueue(v)))
            }
            "dequeue" => match o {
                Outcome::Ok(c) => match &c.value {
                    Value::Null => Ok(Convert::Completed(QueueOp::Dequeue(None))),
                    v => int(v)
                        .map(|i| Convert::Completed(QueueOp::Dequeue(Some(i))))
                        .ok_or_else(|| bad(invoke, "an integer or null dequeue value", v)),
                },
                Outcome::Fail(_) => Ok(Convert::Skip),
                Outcome::Unknown => Ok(Convert::Pending(QueueOp::DequeueUnknown)),
            },
            f => Err(format!(
                "op {} (process {}): queue model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &QueueOp) -> Option<Self::State> {
        match *op {
            QueueOp::Enqueue(v) => {
                let mut n = s.clone();
                n.push_back(v);
                Some(n)
            }
            QueueOp::Dequeue(None) => s.is_empty().then(|| s.clone()),
            QueueOp::Dequeue(Some(v)) => {
                if s.front() == Some(&v) {
                    let mut n = s.clone();
                    n.pop_front();
                    Some(n)
                } else {
                    None
                }
            }
            QueueOp::DequeueUnknown => {
                let mut n = s.clone();
                n.pop_front();
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &QueueOp) -> bool {
        matches!(op, QueueOp::Dequeue(None))
    }

    fn describe_op(&self, op: &QueueOp) -> String {
        match op {
            QueueOp::Enqueue(v) => format!("enqueue {v}"),
            QueueOp::Dequeue(v) => {
                format!("dequeue → {}", v.map_or("empty".into(), |v| v.to_string()))
            }
            QueueOp::DequeueUnknown => "dequeue → ?".to_string(),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?}")
    }
}

// ---------------------------------------------------------------------------------------------
// Mutex

/// A mutex op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MutexOp {
    /// Acquire: requires the mutex free.
    Acquire,
    /// Release: requires the mutex held.
    Release,
}

/// A mutex with `acquire` and `release`; state `true` = held. Owners are not tracked (as Knossos).
#[derive(Debug, Clone, Copy, Default)]
pub struct MutexModel;

impl Model for MutexModel {
    type State = bool;
    type Op = MutexOp;

    fn name(&self) -> &'static str {
        "mutex"
    }

    fn init(&self) -> bool {
        false
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<MutexOp>, String> {
        let op = match invoke.f.as_str() {
            "acquire" => MutexOp::Acquire,
            "release" => MutexOp::Release,
            f => {
                return Err(format!(
                    "op {} (process {}): mutex model has no operation {f:?}",
                    invoke.index, invoke.process
                ));
            }
        };
        Ok(wrap(outcome(completion), op))
    }

    fn step(&self, s: &bool, op: &MutexOp) -> Option<bool> {
        match op {
            MutexOp::Acquire => (!*s).then_some(true),
            MutexOp::Release => (*s).then_some(false),
        }
    }

    fn describe_op(&self, op: &MutexOp) -> String {
        match op {
            MutexOp::Acquire => "acquire".into(),
            MutexOp::Release => "release".into(),
        }
    }

    fn describe_state(&self, s: &bool) -> String {
        if *s { "held" } else { "free" }.into()
    }
}

// ---------------------------------------------------------------------------------------------
// Counter

/// A counter op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterOp {
    /// Add a (possibly negative) delta.
    Add(i64),
    /// A read that observed this value.
    Read(i64),
}

/// An integer counter starting at 0 with `add` (value = delta) and `read`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterModel;

impl Model for CounterModel {
    type State = i64;
    type Op = CounterOp;

    fn name(&self) -> &'static str {
        "counter"
    }

    fn init(&self) -> i64 {
        0
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<CounterOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "add" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                Ok(wrap(
                    o,
                    CounterOp::Add(int_arg(invoke, completion, "an integer delta")?),
                ))
            }
            "read" => match o {
                Outcome::Ok(c) => int(&c.value)
                    .map(|v| Convert::Completed(CounterOp::Read(v)))
                    .ok_or_else(|| bad(invoke, "an integer read value", &c.value)),
                _ => Ok(Convert::Skip),
            },
            f => Err(format!(
                "op {} (process {}): counter model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &i64, op: &CounterOp) -> Option<i64> {
        match *op {
            CounterOp::Add(d) => s.checked_add(d),
            CounterOp::Read(v) => (*s == v).then_some(*s),
        }
    }

    fn is_read_only(&self, op: &CounterOp) -> bool {
        matches!(op, CounterOp::Read(_))
    }

    fn describe_op(&self, op: &CounterOp) -> String {
        match op {
            CounterOp::Add(d) => format!("add {d}"),
            CounterOp::Read(v) => format!("read → {v}"),
        }
    }

    fn describe_state(&self, s: &i64) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;
    use serde_json::json;

    fn inv(f: &str, v: Value) -> Op {
        Op::new(OpType::Invoke, Process::Client(0), f, v)
    }
    fn done(t: OpType, f: &str, v: Value) -> Op {
        Op::new(t, Process::Client(0), f, v)
    }
    fn conv<M: Model>(m: &M, f: &str, iv: Value, t: Option<OpType>, cv: Value) -> Convert<M::Op> {
        let c = t.map(|t| done(t, f, cv));
        m.convert(&inv(f, iv), c.as_ref()).unwrap()
    }
    /// Run a sequence of ops from init; `None` if some step is inconsistent.
    fn run<M: Model>(m: &M, ops: &[M::Op]) -> Option<M::State> {
        let mut s = m.init();
        for o in ops {
            s = m.step(&s, o)?;
        }
        Some(s)
    }

    #[test]
    fn register_etcd_semantics() {
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        use RegisterOp::*;
        assert_eq!(m.init(), None);
        assert_eq!(
            run(&m, &[Read(None), Write(1), Cas(1, 2), Read(Some(2))]),
            Some(Some(2))
        );
        assert_eq!(run(&m, &[Read(Some(0))]), None);
        assert_eq!(run(&m, &[Write(1), Read(None)]), None);
        assert_eq!(run(&m, &[Cas(1, 2)]), None, "cas on absent key must fail");
        assert_eq!(run(&m, &[CasMismatch(1)]), Some(None));
        assert_eq!(run(&m, &[Write(1), CasMismatch(1)]), None);
        // Conversion: null read is definite, cas-mismatch fail is evidence, other fails dropped.
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(Read(None))
        );
        let mut f = done(OpType::Fail, "cas", json!([3, 4]));
        f.error = Some("cas-mismatch".into());
        assert_eq!(
            m.convert(&inv("cas", json!([3, 4])), Some(&f)).unwrap(),
            Convert::Completed(CasMismatch(3))
        );
        f.error = Some("timeout".into());
        assert_eq!(
            m.convert(&inv("cas", json!([3, 4])), Some(&f)).unwrap(),
            Convert::Skip
        );
        assert_eq!(
            conv(&m, "write", json!(5), Some(OpType::Info), json!(5)),
            Convert::Pending(Write(5))
        );
        assert_eq!(
            conv(&m, "write", json!(5), None, Value::Null),
            Convert::Pending(Write(5))
        );
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Info), Value::Null),
            Convert::Skip
        );
        assert!(
            m.convert(&inv("cas", json!("x")), None)
                .unwrap_err()
                .contains("[old, new]")
        );
        assert!(m.convert(&inv("frob", Value::Null), None).is_err());
    }

    #[test]
    fn register_knossos_semantics() {
        let m = RegisterModel::cas_register(RegisterConfig::knossos());
        assert_eq!(m.init(), Some(0));
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Skip
        );
        let mut f = done(OpType::Fail, "cas", json!([0, 4]));
        f.error = Some("cas-mismatch".into());
        assert_eq!(
            m.convert(&inv("cas", json!([0, 4])), Some(&f)).unwrap(),
            Convert::Skip
        );
        let plain = RegisterModel::register(RegisterConfig::knossos());
        assert!(plain.convert(&inv("cas", json!([0, 1])), None).is_err());
        assert_eq!(plain.describe_state(&None), "absent");
    }

    #[test]
    fn multi_register_txns() {
        let m = MultiRegisterModel { initial: 0 };
        let c = conv(
            &m,
            "txn",
            json!([["read", "x", null], ["write", "y", 2]]),
            Some(OpType::Ok),
            json!([["read", "x", 0], ["write", "y", 2]]),
        );
        let Convert::Completed(op) = c else {
            panic!("{c:?}")
        };
        let s = m.step(&m.init(), &op).unwrap();
        assert_eq!(s.get("y"), Some(&2));
        let read_y1 = vec![MicroOp::Read("y".into(), Some(1))];
        assert_eq!(m.step(&s, &read_y1), None);
        let read_y2 = vec![MicroOp::Read("y".into(), Some(2))];
        assert!(m.step(&s, &read_y2).is_some());
        // An info txn keeps only its writes.
        let p = conv(
            &m,
            "txn",
            json!([["read", "x", null], ["write", "x", 1]]),
            None,
            Value::Null,
        );
        assert_eq!(p, Convert::Pending(vec![MicroOp::Write("x".into(), 1)]));
    }

    #[test]
    fn kv_get_put_append() {
        let m = KvModel;
        let k = || "k".to_string();
        let ops = [
            KvOp::Get(k(), None),
            KvOp::Put(k(), "a".into()),
            KvOp::Append(k(), "b".into()),
            KvOp::Get(k(), Some("ab".into())),
        ];
        assert!(run(&m, &ops).is_some());
        assert!(
            run(
                &m,
                &[
                    KvOp::Append(k(), "x".into()),
                    KvOp::Get(k(), Some("y".into()))
                ]
            )
            .is_none()
        );
        let mut i = inv("put", json!("v"));
        i.key = Some("k9".into());
        assert_eq!(
            m.convert(&i, None).unwrap(),
            Convert::Pending(KvOp::Put("k9".into(), "v".into()))
        );
    }

    #[test]
    fn set_add_read() {
        let m = SetModel;
        let r = |v: &[i64]| SetOp::Read(v.iter().copied().collect());
        assert!(run(&m, &[SetOp::Add(1), SetOp::Add(2), r(&[1, 2])]).is_some());
        assert!(run(&m, &[SetOp::Add(1), r(&[1, 2])]).is_none());
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), json!([2, 1])),
            Convert::Completed(r(&[1, 2]))
        );
        assert!(
            m.convert(
                &inv("read", Value::Null),
                Some(&done(OpType::Ok, "read", json!(3)))
            )
            .is_err()
        );
    }

    #[test]
    fn queue_is_fifo() {
        let m = QueueModel;
        use QueueOp::*;
        assert!(
            run(
                &m,
                &[
                    Enqueue(1),
                    Enqueue(2),
                    Dequeue(Some(1)),
                    Dequeue(Some(2)),
                    Dequeue(None)
                ]
            )
            .is_some()
        );
        assert!(run(&m, &[Enqueue(1), Enqueue(2), Dequeue(Some(2))]).is_none());
        assert!(run(&m, &[Enqueue(1), Dequeue(None)]).is_none());
        assert_eq!(
            run(&m, &[Enqueue(1), DequeueUnknown, DequeueUnknown]),
            Some(VecDeque::new())
        );
        assert_eq!(
            conv(&m, "dequeue", Value::Null, None, Value::Null),
            Convert::Pending(DequeueUnknown)
        );
    }

    #[test]
    fn mutex_acquire_release() {
        let m = MutexModel;
        use MutexOp::*;
        assert_eq!(run(&m, &[Acquire, Release, Acquire]), Some(true));
        assert!(run(&m, &[Acquire, Acquire]).is_none());
        assert!(run(&m, &[Release]).is_none());
        assert_eq!(
            conv(&m, "acquire", Value::Null, Some(OpType::Fail), Value::Null),
            Convert::Skip
        );
    }

    #[test]
    fn counter_add_read() {
        let m = CounterModel;
        use CounterOp::*;
        assert_eq!(run(&m, &[Add(2), Add(-1), Read(1)]), Some(1));
        assert!(run(&m, &[Add(2), Read(1)]).is_none());
        assert!(
            run(&m, &[Add(i64::MAX), Add(1)]).is_none(),
            "overflow is inconsistent, not a panic"
        );
        assert!(m.convert(&inv("add", json!("x")), None).is_err());
    }

    #[test]
    fn list_append_model_steps_and_converts() {
        use crate::history::Process;
        let m = ListAppendModel;
        let s = m.init();
        let s = m.step(&s, &ListAppendOp::Append(3)).unwrap();
        let s = m.step(&s, &ListAppendOp::Append(1)).unwrap();
        assert_eq!(s, vec![3, 1]);
        assert!(m.step(&s, &ListAppendOp::Read(vec![3])).is_none());
        assert_eq!(
            m.step(&s, &ListAppendOp::Read(vec![3, 1])),
            Some(vec![3, 1])
        );
        let inv = Op::new(OpType::Invoke, Process::Client(1), "read", Value::Null);
        let ok = Op::new(
            OpType::Ok,
            Process::Client(1),
            "read",
            serde_json::json!([1, 2]),
        );
        assert_eq!(
            m.convert(&inv, Some(&ok)).unwrap(),
            Convert::Completed(ListAppendOp::Read(vec![1, 2]))
        );
        let empty = Op::new(OpType::Ok, Process::Client(1), "read", Value::Null);
        assert_eq!(
            m.convert(&inv, Some(&empty)).unwrap(),
            Convert::Completed(ListAppendOp::Read(vec![]))
        );
        let junk = Op::new(
            OpType::Ok,
            Process::Client(1),
            "read",
            serde_json::json!(["x"]),
        );
        assert!(
            m.convert(&inv, Some(&junk))
                .unwrap_err()
                .contains("list of integers")
        );
        let app = Op::new(
            OpType::Invoke,
            Process::Client(1),
            "append",
            serde_json::json!(7),
        );
        let info = Op::new(OpType::Info, Process::Client(1), "append", Value::Null);
        assert_eq!(
            m.convert(&app, Some(&info)).unwrap(),
            Convert::Pending(ListAppendOp::Append(7))
        );
        let fail = Op::new(
            OpType::Fail,
            Process::Client(1),
            "append",
            serde_json::json!(7),
        );
        assert_eq!(m.convert(&app, Some(&fail)).unwrap(), Convert::Skip);
        let w = Op::new(
            OpType::Invoke,
            Process::Client(1),
            "write",
            serde_json::json!(7),
        );
        assert!(m.convert(&w, None).unwrap_err().contains("no operation"));
    }
}
