//! Sequential specifications (models) for the linearizability checker.
//!
//! Owns the `Model` trait, the helpers every model shares to read history ops, and the register /
//! cas-register model with its semantics (`RegisterConfig`). The other models live in submodules and
//! are re-exported here: multi-register (Knossos `:txn` histories), key-value map (get/put/append),
//! list-append, set (add/read), FIFO queue (enqueue/dequeue), mutex (acquire/release) and counter
//! (add/read); `value` interns non-integer values. Does not own the search (that is
//! `checker::linear`) nor history parsing (`history`, `edn`, `import`).
//!
//! # How history ops become model ops
//!
//! The checker pairs every client invoke with its completion and asks the model to `convert` the pair:
//! - `ok`: the op happened between its invoke and its completion; its output is the completion value.
//! - `fail`: the op did not happen and is dropped — except *definite negative evidence*: with
//!   `RegisterConfig::cas_mismatch_is_evidence`, a failed `cas` did happen (atomically, within its
//!   interval) and observed a value different from `old`.
//! - `info` or no completion: the op may take effect at any point after its invoke, or never; its
//!   output is unknown. Ops whose only content is an output (reads) impose nothing and are dropped.
//!
//! Values of any JSON/EDN type compare by equality, as Knossos compares them: `938`, `"938"` and
//! `938.0` are three different values (see `value`). Counters stay numeric.
//!
//! # Register semantics (`RegisterConfig`)
//!
//! - `initial`: the register's value before any op (`None` = absent). etcd: absent; Knossos: 0.
//! - `nil_read_is_unknown`: what an ok read of `null` means. `false` (etcd): the key was absent, a
//!   definite observation. `true` (Knossos): an unknown read that imposes nothing.
//! - `cas_mismatch_is_evidence`: a failed `cas` whose error is absent or `cas-mismatch` happened and
//!   saw a value other than `old` (etcd; Porcupine's etcd model reads a failed cas so). A failed cas
//!   with any other error (a refused connection) did not happen. Off (Knossos): every failed cas
//!   is dropped.
//!
//! Every model here is deterministic once the observed output is known, so `step` returns at most
//! one next state; a nondeterministic specification can be expressed by making the state a set of
//! possible states.

mod collections;
mod kv;
mod list_append;
mod multi_register;
mod mutex_counter;
pub mod registry;
pub mod value;

pub use collections::{QueueModel, QueueOp, SetModel, SetOp};
pub use kv::{KvModel, KvOp};
pub use list_append::{ListAppendModel, ListAppendOp};
pub use multi_register::{MicroOp, MultiRegisterModel};
pub use mutex_counter::{CounterModel, CounterOp, MutexModel, MutexOp};
pub use value::{Scalar, Values};

use crate::history::{Op, OpType};
use serde_json::Value;
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
    /// Heap bytes `s` holds beyond `size_of::<State>()` (strings, map nodes), so the search's
    /// memory budget counts what its cache really holds. The default 0 is right for states that
    /// own no heap memory.
    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        let _ = s;
        0
    }
    /// Human description of an op, e.g. `read → 3`.
    fn describe_op(&self, op: &Self::Op) -> String;
    /// Human description of a state.
    fn describe_state(&self, s: &Self::State) -> String;
    /// How a history can start in state `s` instead of the initial one: the streamed check
    /// checks a key's later ops after such a stand-in for its earlier ones. `None` (the default)
    /// when no single op sets any state to `s`.
    fn stand_in(&self, s: &Self::State) -> Option<StandIn> {
        let _ = s;
        None
    }
}

/// What takes a model from its initial state to a given one ([`Model::stand_in`]).
#[derive(Debug, Clone, PartialEq)]
pub enum StandIn {
    /// The state is the initial one: nothing to do.
    Initial,
    /// One op, invoked with this function and value and completed `ok`, sets the state from any
    /// state.
    Op {
        /// The op's function.
        f: &'static str,
        /// Its invoke's value.
        value: Value,
    },
}

/// Approximate heap bytes of a `BTreeMap` / `BTreeSet` of `len` entries of `entry` bytes each:
/// nodes of 11 entries plus links, about two thirds full.
pub(crate) fn btree_heap_bytes(len: usize, entry: usize) -> usize {
    if len == 0 {
        0
    } else {
        len.div_ceil(7) * (11 * entry + 64)
    }
}

/// The error text of a cas that ran and found another value (our clients write it on `fail`).
pub const CAS_MISMATCH: &str = "cas-mismatch";

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

/// Integer argument of an op: the invoke value, or the completion value when the invoke has none.
fn int_arg(invoke: &Op, completion: Option<&Op>, what: &str) -> Result<i64, String> {
    if let Some(i) = invoke.value.as_i64() {
        return Ok(i);
    }
    if invoke.value.is_null()
        && let Some(i) = completion.and_then(|c| c.value.as_i64())
    {
        return Ok(i);
    }
    Err(bad(invoke, what, &invoke.value))
}

/// Value argument of an op (any non-null value): the invoke value, or the completion value when
/// the invoke has none.
fn scalar_arg(
    values: &Values,
    invoke: &Op,
    completion: Option<&Op>,
    what: &str,
) -> Result<Scalar, String> {
    values
        .scalar(&invoke.value)
        .or_else(|| completion.and_then(|c| values.scalar(&c.value)))
        .ok_or_else(|| bad(invoke, what, &invoke.value))
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

/// A named register semantics (`--semantics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticsPreset {
    /// Knossos: starts at 0, a nil read is unknown, a failed cas did not happen.
    Knossos,
    /// etcd (and Porcupine's etcd model): starts absent, a nil read means absent, a failed cas
    /// saw another value.
    Etcd,
}

impl SemanticsPreset {
    /// The preset's `--semantics` name.
    pub fn name(self) -> &'static str {
        match self {
            SemanticsPreset::Knossos => "knossos",
            SemanticsPreset::Etcd => "etcd",
        }
    }

    /// The preset a `--semantics` name (or a run's recorded name) means; `None` for another.
    pub fn from_name(name: &str) -> Option<SemanticsPreset> {
        [SemanticsPreset::Knossos, SemanticsPreset::Etcd]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// Semantics switches for the register models; see the module doc.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterConfig {
    /// Value before any op; `None` = absent.
    pub initial: Option<Value>,
    /// An ok read of `null` imposes nothing (Knossos) instead of meaning "absent" (etcd).
    pub nil_read_is_unknown: bool,
    /// A failed `cas` (error absent or `cas-mismatch`) happened and observed a value other than
    /// `old`.
    pub cas_mismatch_is_evidence: bool,
}

impl RegisterConfig {
    /// Our etcd workload: key initially absent, null reads mean absent, cas mismatches are evidence.
    pub fn etcd() -> RegisterConfig {
        RegisterConfig::preset(SemanticsPreset::Etcd)
    }

    /// Knossos corpus: initial value 0, nil reads are unknown, failed ops did not happen.
    pub fn knossos() -> RegisterConfig {
        RegisterConfig::preset(SemanticsPreset::Knossos)
    }

    /// The semantics of a preset.
    pub fn preset(p: SemanticsPreset) -> RegisterConfig {
        match p {
            SemanticsPreset::Etcd => RegisterConfig {
                initial: None,
                nil_read_is_unknown: false,
                cas_mismatch_is_evidence: true,
            },
            SemanticsPreset::Knossos => RegisterConfig {
                initial: Some(Value::from(0)),
                nil_read_is_unknown: true,
                cas_mismatch_is_evidence: false,
            },
        }
    }

    /// The preset these semantics are exactly, if any.
    pub fn preset_name(&self) -> Option<&'static str> {
        [SemanticsPreset::Etcd, SemanticsPreset::Knossos]
            .into_iter()
            .find(|p| RegisterConfig::preset(*p) == *self)
            .map(SemanticsPreset::name)
    }

    fn initial_text(&self) -> String {
        match &self.initial {
            None => "absent".to_string(),
            Some(v) => v.to_string(),
        }
    }

    fn nil_read_text(&self) -> &'static str {
        if self.nil_read_is_unknown {
            "unknown"
        } else {
            "absent"
        }
    }

    fn failed_cas_text(&self) -> &'static str {
        if self.cas_mismatch_is_evidence {
            "evidence"
        } else {
            "ignored"
        }
    }

    /// One line for people, e.g. `etcd (initial absent, nil read = absent, failed cas = evidence)`.
    pub fn describe(&self) -> String {
        format!(
            "{} (initial {}, nil read = {}, failed cas = {})",
            self.preset_name().unwrap_or("custom"),
            self.initial_text(),
            self.nil_read_text(),
            self.failed_cas_text()
        )
    }

    /// The semantics as JSON: `{"preset", "initial", "nil_read", "failed_cas"}`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "preset": self.preset_name().unwrap_or("custom"),
            "initial": self.initial.clone().unwrap_or(Value::Null),
            "nil_read": self.nil_read_text(),
            "failed_cas": self.failed_cas_text(),
        })
    }
}

/// The semantic choices of every model, chosen per input (see `app::check`): the register
/// semantics, and whether kv keys start as `""` (Porcupine) instead of absent.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOptions {
    /// Semantics of the register and cas-register models.
    pub register: RegisterConfig,
    /// The kv model's configuration.
    pub kv: KvModel,
}

impl ModelOptions {
    /// Options for a register preset, kv keys starting absent.
    pub fn preset(p: SemanticsPreset) -> ModelOptions {
        ModelOptions {
            register: RegisterConfig::preset(p),
            kv: KvModel::default(),
        }
    }

    /// The semantics that matter to the named model, for people: the register semantics for
    /// register models, what a never-written key holds for kv; `None` for the others.
    pub fn describe(&self, model_name: &str) -> Option<String> {
        match model_name {
            "register" | "cas-register" => Some(self.register.describe()),
            "kv" if self.kv.missing_is_empty => Some("porcupine (keys start as \"\")".into()),
            "kv" => Some("keys start absent".into()),
            _ => None,
        }
    }

    /// [`ModelOptions::describe`] as JSON (`null` when no semantics apply).
    pub fn to_json(&self, model_name: &str) -> Value {
        match model_name {
            "register" | "cas-register" => self.register.to_json(),
            "kv" => serde_json::json!({
                "preset": if self.kv.missing_is_empty { "porcupine" } else { "absent" },
                "initial": if self.kv.missing_is_empty { Value::from("") } else { Value::Null },
            }),
            _ => Value::Null,
        }
    }
}

/// A register op with its observed output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// A read that observed this value (`None` = absent).
    Read(Option<Scalar>),
    /// Write a value.
    Write(Scalar),
    /// Compare-and-set that succeeded: value was `old`, becomes `new`.
    Cas(Scalar, Scalar),
    /// Compare-and-set whose compare definitely failed: the value was not `old`.
    CasMismatch(Scalar),
}

/// Register (read/write) or cas-register (read/write/cas); state `Option<Scalar>` (`None` =
/// absent).
#[derive(Debug, Clone)]
pub struct RegisterModel {
    /// Semantics switches.
    pub config: RegisterConfig,
    /// Whether `cas` ops are allowed (cas-register) or rejected as ill-formed (register).
    pub allow_cas: bool,
    values: Values,
    init: Option<Scalar>,
}

impl RegisterModel {
    fn with(config: RegisterConfig, allow_cas: bool) -> RegisterModel {
        let values = Values::new();
        let init = config.initial.as_ref().and_then(|v| values.scalar(v));
        RegisterModel {
            config,
            allow_cas,
            values,
            init,
        }
    }

    /// A plain read/write register.
    pub fn register(config: RegisterConfig) -> RegisterModel {
        RegisterModel::with(config, false)
    }

    /// A read/write/compare-and-set register.
    pub fn cas_register(config: RegisterConfig) -> RegisterModel {
        RegisterModel::with(config, true)
    }

    /// The model value of a JSON value (`None` for null), interned in this model's table.
    pub fn value(&self, v: &Value) -> Option<Scalar> {
        self.values.scalar(v)
    }

    fn pair_arg(&self, invoke: &Op, completion: Option<&Op>) -> Result<(Scalar, Scalar), String> {
        let get = |v: &Value| match v.as_array().map(|a| a.as_slice()) {
            Some([a, b]) => Some((self.values.scalar(a)?, self.values.scalar(b)?)),
            _ => None,
        };
        get(&invoke.value)
            .or_else(|| completion.and_then(|c| get(&c.value)))
            .ok_or_else(|| bad(invoke, "a cas value [old, new] of scalars", &invoke.value))
    }
}

impl Model for RegisterModel {
    type State = Option<Scalar>;
    type Op = RegisterOp;

    fn name(&self) -> &'static str {
        if self.allow_cas {
            "cas-register"
        } else {
            "register"
        }
    }

    fn init(&self) -> Option<Scalar> {
        self.init
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<RegisterOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "read" => match o {
                Outcome::Ok(c) => match self.values.observed(&c.value) {
                    Ok(None) if self.config.nil_read_is_unknown => Ok(Convert::Skip),
                    Ok(v) => Ok(Convert::Completed(RegisterOp::Read(v))),
                    Err(value::NotScalar) => Err(bad(
                        invoke,
                        "a read value that is a number, string, boolean or null",
                        &c.value,
                    )),
                },
                _ => Ok(Convert::Skip),
            },
            "write" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = scalar_arg(&self.values, invoke, completion, "a value to write")?;
                Ok(wrap(o, RegisterOp::Write(v)))
            }
            "cas" if self.allow_cas => {
                if let Outcome::Fail(c) = o {
                    let mismatch = c.error.as_deref().is_none_or(|e| e == CAS_MISMATCH);
                    if self.config.cas_mismatch_is_evidence && mismatch {
                        let (old, _) = self.pair_arg(invoke, completion)?;
                        return Ok(Convert::Completed(RegisterOp::CasMismatch(old)));
                    }
                    return Ok(Convert::Skip);
                }
                let (old, new) = self.pair_arg(invoke, completion)?;
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
    fn step(&self, s: &Option<Scalar>, op: &RegisterOp) -> Option<Option<Scalar>> {
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
        let show = |v| self.values.show(v);
        match *op {
            RegisterOp::Read(v) => format!("read → {}", self.values.show_opt(v)),
            RegisterOp::Write(v) => format!("write {}", show(v)),
            RegisterOp::Cas(a, b) => format!("cas {} → {}", show(a), show(b)),
            RegisterOp::CasMismatch(a) => format!("cas from {} (mismatch)", show(a)),
        }
    }

    fn describe_state(&self, s: &Option<Scalar>) -> String {
        self.values.show_opt(*s)
    }

    /// A write of the value (the initial state needs nothing; no write makes a register absent
    /// again).
    fn stand_in(&self, s: &Option<Scalar>) -> Option<StandIn> {
        match *s {
            _ if *s == self.init => Some(StandIn::Initial),
            Some(v) => Some(StandIn::Op {
                f: "write",
                value: self.values.json(v)?,
            }),
            None => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::Process;
    use serde_json::json;

    pub(crate) fn inv(f: &str, v: Value) -> Op {
        Op::new(OpType::Invoke, Process::Client(0), f, v)
    }
    pub(crate) fn done(t: OpType, f: &str, v: Value) -> Op {
        Op::new(t, Process::Client(0), f, v)
    }
    pub(crate) fn conv<M: Model>(
        m: &M,
        f: &str,
        iv: Value,
        t: Option<OpType>,
        cv: Value,
    ) -> Convert<M::Op> {
        let c = t.map(|t| done(t, f, cv));
        m.convert(&inv(f, iv), c.as_ref()).unwrap()
    }
    /// Run a sequence of ops from init; `None` if some step is inconsistent.
    pub(crate) fn run<M: Model>(m: &M, ops: &[M::Op]) -> Option<M::State> {
        let mut s = m.init();
        for o in ops {
            s = m.step(&s, o)?;
        }
        Some(s)
    }

    const fn i(v: i64) -> Scalar {
        Scalar::Int(v)
    }

    #[test]
    fn register_etcd_semantics() {
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        use RegisterOp::*;
        assert_eq!(m.init(), None);
        assert_eq!(
            run(
                &m,
                &[Read(None), Write(i(1)), Cas(i(1), i(2)), Read(Some(i(2)))]
            ),
            Some(Some(i(2)))
        );
        assert_eq!(run(&m, &[Read(Some(i(0)))]), None);
        assert_eq!(run(&m, &[Write(i(1)), Read(None)]), None);
        assert_eq!(
            run(&m, &[Cas(i(1), i(2))]),
            None,
            "cas on absent key must fail"
        );
        assert_eq!(run(&m, &[CasMismatch(i(1))]), Some(None));
        assert_eq!(run(&m, &[Write(i(1)), CasMismatch(i(1))]), None);
        // Conversion: null read is definite, cas-mismatch fail is evidence, other fails dropped.
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(Read(None))
        );
        let mut f = done(OpType::Fail, "cas", json!([3, 4]));
        f.error = Some("cas-mismatch".into());
        assert_eq!(
            m.convert(&inv("cas", json!([3, 4])), Some(&f)).unwrap(),
            Convert::Completed(CasMismatch(i(3)))
        );
        // A failed cas without an error (Jepsen, Porcupine) is evidence too.
        f.error = None;
        assert_eq!(
            m.convert(&inv("cas", json!([3, 4])), Some(&f)).unwrap(),
            Convert::Completed(CasMismatch(i(3)))
        );
        f.error = Some("timeout".into());
        assert_eq!(
            m.convert(&inv("cas", json!([3, 4])), Some(&f)).unwrap(),
            Convert::Skip
        );
        assert_eq!(
            conv(&m, "write", json!(5), Some(OpType::Info), json!(5)),
            Convert::Pending(Write(i(5)))
        );
        assert_eq!(
            conv(&m, "write", json!(5), None, Value::Null),
            Convert::Pending(Write(i(5)))
        );
        // Porcupine's etcd logs complete a timed-out write with `:timed-out`: the invoke counts.
        assert_eq!(
            conv(
                &m,
                "write",
                json!(5),
                Some(OpType::Info),
                json!("timed-out")
            ),
            Convert::Pending(Write(i(5)))
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
        assert!(
            m.convert(&inv("write", Value::Null), None)
                .unwrap_err()
                .contains("op 0 (process 0 write): expected a value to write, got null")
        );
    }

    #[test]
    fn register_knossos_semantics() {
        let m = RegisterModel::cas_register(RegisterConfig::knossos());
        assert_eq!(m.init(), Some(i(0)));
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
    fn a_register_stand_in_writes_its_value_and_sets_any_state() {
        for m in [
            RegisterModel::cas_register(RegisterConfig::knossos()),
            RegisterModel::cas_register(RegisterConfig::etcd()),
        ] {
            assert_eq!(m.stand_in(&m.init()), Some(StandIn::Initial));
            let read = |v| conv(&m, "read", Value::Null, Some(OpType::Ok), v);
            let Convert::Completed(w) = conv(&m, "write", json!("x"), Some(OpType::Ok), json!("x"))
            else {
                panic!("a write")
            };
            let s = m.step(&m.init(), &w).unwrap();
            let Some(StandIn::Op { f, value }) = m.stand_in(&s) else {
                panic!("a stand-in op")
            };
            assert_eq!((f, &value), ("write", &json!("x")));
            // The stand-in, from another state, reaches the same one: a read of "x" fits it.
            let Convert::Completed(again) = conv(&m, f, value.clone(), Some(OpType::Ok), value)
            else {
                panic!("a write")
            };
            let other = m.step(&m.init(), &conv_write(&m, 7)).unwrap();
            let back = m.step(&other, &again).unwrap();
            assert_eq!(back, s);
            let Convert::Completed(r) = read(json!("x")) else {
                panic!("a read")
            };
            assert!(m.step(&back, &r).is_some());
        }
        // Absent is no state a write reaches: from a register that starts at 0, no stand-in.
        let m = RegisterModel::cas_register(RegisterConfig::knossos());
        assert_eq!(m.stand_in(&None), None);
    }

    fn conv_write(m: &RegisterModel, v: i64) -> RegisterOp {
        match conv(m, "write", json!(v), Some(OpType::Ok), json!(v)) {
            Convert::Completed(w) => w,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn register_values_of_any_type_compare_by_equality() {
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let op = |f: &str, iv: Value, cv: Value| match conv(&m, f, iv, Some(OpType::Ok), cv) {
            Convert::Completed(o) => o,
            other => panic!("{other:?}"),
        };
        let w = op("write", json!("938"), json!("938"));
        let r_str = op("read", Value::Null, json!("938"));
        let r_int = op("read", Value::Null, json!(938));
        assert!(run(&m, &[w, r_str]).is_some());
        assert!(run(&m, &[w, r_int]).is_none(), "\"938\" is not 938");
        let cas = op("cas", json!(["938", "foo"]), json!(["938", "foo"]));
        let r_foo = op("read", Value::Null, json!("foo"));
        assert!(run(&m, &[w, cas, r_foo]).is_some());
        assert_eq!(m.describe_op(&w), "write \"938\"");
        assert_eq!(m.describe_op(&cas), "cas \"938\" → \"foo\"");
        assert_eq!(m.describe_state(&run(&m, &[w]).unwrap()), "\"938\"");
        // A string initial value.
        let cfg = RegisterConfig {
            initial: Some(json!("x")),
            ..RegisterConfig::knossos()
        };
        let m = RegisterModel::cas_register(cfg.clone());
        let Convert::Completed(r) = conv(&m, "read", Value::Null, Some(OpType::Ok), json!("x"))
        else {
            panic!()
        };
        assert!(run(&m, &[r]).is_some());
        assert_eq!(cfg.preset_name(), None);
        assert!(
            cfg.describe().starts_with("custom (initial \"x\""),
            "{}",
            cfg.describe()
        );
    }

    #[test]
    fn semantics_presets_describe_themselves() {
        assert_eq!(
            RegisterConfig::etcd().describe(),
            "etcd (initial absent, nil read = absent, failed cas = evidence)"
        );
        assert_eq!(
            RegisterConfig::knossos().describe(),
            "knossos (initial 0, nil read = unknown, failed cas = ignored)"
        );
        assert_eq!(
            RegisterConfig::knossos().to_json(),
            json!({"preset": "knossos", "initial": 0, "nil_read": "unknown", "failed_cas": "ignored"})
        );
    }
}
