//! Clients that perform workload ops against a system under test.
//!
//! Owns the `Client` trait the interpreter's worker tasks call, and the `Completion` a client
//! reports for each op. Does not own op generation, history writing, process numbering or retries:
//! a client performs exactly one attempt per `invoke` and classifies the outcome honestly
//! (`Ok` = happened, `Fail` = definitely did not happen, `Info` = unknown). Also owns
//! `ClientCtx`, what a system's client factory is told about its thread, and `ClientOpenError`,
//! why the factory could not make one. Implementations live in each system's folder
//! (`systems::<name>::client`).

use crate::history::OpType;
use crate::node::Node;
use crate::options::{ReadFrom, ReadMode};
use serde_json::Value;

/// Why a system could not make a thread's client (`systems::System::client`). No built-in
/// client contacts a node when it is made (each connects at its first op, where an unreachable
/// node is that op's `fail` or `info`), so what can go wrong here is the run's settings or the
/// client library. The text is the same words whatever the kind: which client and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientOpenError {
    /// The settings cannot make this client: a node they name is not in the cluster
    /// (`--read-nodes`, the primary), no nodes, a zero timeout, an endpoint that is no URL. The
    /// same settings never will; asking again is pointless.
    #[error("{0}")]
    Config(String),
    /// The client library could not be set up (a Sentinel list the driver refuses).
    #[error("{0}")]
    Driver(String),
}

impl ClientOpenError {
    /// The same error, its words after `what` (`what: cause`): which client was being made.
    pub fn context(self, what: impl std::fmt::Display) -> ClientOpenError {
        match self {
            ClientOpenError::Config(m) => ClientOpenError::Config(format!("{what}: {m}")),
            ClientOpenError::Driver(m) => ClientOpenError::Driver(format!("{what}: {m}")),
        }
    }

    /// Whether the settings themselves are at fault (asking again cannot help).
    pub fn is_config(&self) -> bool {
        matches!(self, ClientOpenError::Config(_))
    }
}

/// How an op ended, from the client's point of view.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// The op took effect (or, for reads, observed a state).
    Ok {
        /// The result: the value read, or the argument written.
        value: Value,
        /// System-provided version of the value read or written (e.g. etcd mod_revision).
        version: Option<i64>,
    },
    /// The op definitely did not take effect.
    Fail {
        /// Why, e.g. `cas-mismatch` or a connection error naming the endpoint.
        error: String,
        /// The invoke's argument, echoed (the checker may use it).
        value: Value,
    },
    /// The op may or may not have taken effect (timeouts, crashes, unknown server errors).
    Info {
        /// What happened, naming the endpoint.
        error: String,
    },
}

impl Completion {
    /// The history op type this completion is recorded as.
    pub fn op_type(&self) -> OpType {
        match self {
            Completion::Ok { .. } => OpType::Ok,
            Completion::Fail { .. } => OpType::Fail,
            Completion::Info { .. } => OpType::Info,
        }
    }

    /// An op ended by its bound after `after`, nothing more known: `info` (it may have taken
    /// effect). The words every timed-out op without a client's own account is recorded with.
    pub fn timed_out(after: std::time::Duration) -> Completion {
        Completion::Info {
            error: format!("timed out after {} ms", after.as_millis()),
        }
    }

    /// The error text, for `Fail` and `Info`.
    pub fn error(&self) -> Option<&str> {
        match self {
            Completion::Ok { .. } => None,
            Completion::Fail { error, .. } | Completion::Info { error } => Some(error),
        }
    }
}

/// A connection to the system under test, owned by one worker thread and bound to one node.
#[async_trait::async_trait]
pub trait Client: Send {
    /// Perform one op. `f`/`key`/`value` as in `crate::history::Op`. Must not panic; must return
    /// within the configured timeout (plus small slack), unless [`Client::op_bound`] hands that
    /// bound to the interpreter.
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion;

    /// The bound the interpreter should put on each op of this client, instead of the client
    /// timing its ops itself: an op still running after it is dropped, and
    /// [`Client::timed_out`] says how it ended. One timer per op instead of two. `None` (the
    /// default): the client bounds its own ops and the interpreter only backstops one that
    /// hangs anyway (the op timeout plus half a second).
    fn op_bound(&self) -> Option<std::time::Duration> {
        None
    }

    /// The completion of an op the interpreter dropped after `after`. By default `info` (it may
    /// have taken effect); a client that knows nothing was sent says `fail`, and forgets what
    /// the dropped op may have left half-done (a connection mid-reply).
    fn timed_out(&mut self, after: std::time::Duration) -> Completion {
        Completion::timed_out(after)
    }

    /// Release resources (connections). Ops must not be invoked afterwards.
    async fn close(&mut self) {}
}

/// What a client factory (`systems::System::client`) is told about one worker thread: the run's
/// settings that reach clients, and nothing else of the test config.
#[derive(Debug, Clone)]
pub struct ClientCtx {
    /// Worker thread number (0-based).
    pub thread: usize,
    /// Every node of the cluster, in order.
    pub nodes: Vec<Node>,
    /// Index in `nodes` of the node this thread is bound to (its writes go there).
    pub node: usize,
    /// The run's seed (key prefixes, seeded choices; mix in `thread` for per-thread streams).
    pub seed: u64,
    /// Time one op may take; past it the op completes `info`.
    pub op_timeout_ms: u64,
    /// Consistency asked of reads.
    pub read_mode: ReadMode,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Node names `replica`/`any` reads may pick from; empty = all eligible nodes.
    pub read_nodes: Vec<String>,
    /// The workload's kind (`WorkloadSpec::kind`: `register`, `list-append`, `set`), for clients
    /// whose ops of the same name differ per workload (a set `read`).
    pub workload_kind: String,
}

impl ClientCtx {
    /// The node this thread is bound to.
    pub fn own(&self) -> &Node {
        &self.nodes[self.node]
    }

    /// Index of each `read_nodes` name in `nodes` (empty when none are named); the error names
    /// the unknown one.
    pub fn read_node_indices(&self) -> Result<Vec<usize>, ClientOpenError> {
        self.read_nodes
            .iter()
            .map(|name| {
                self.nodes
                    .iter()
                    .position(|n| &n.name == name)
                    .ok_or_else(|| {
                        ClientOpenError::Config(format!("--read-nodes: no node named {name:?}"))
                    })
            })
            .collect()
    }
}

/// An error and every cause under it, `outer: inner: …`: transport errors often say what
/// happened only in their sources (the clients' own words for a failed op).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    s
}

/// A parsed key-value op of the register and set workloads, the one reading of their `f`/`value`
/// vocabulary that built-in clients share: register `read`/`write`/`cas` (`[old, new]`), set
/// `add`/`read` (a `read` is a set read when the client serves the set workload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadOp {
    /// Read a register.
    Read,
    /// Write a register.
    Write(i64),
    /// Compare-and-set a register: `(old, new)`.
    Cas(i64, i64),
    /// Add an element to a set.
    SetAdd(i64),
    /// Read a set's elements.
    SetRead,
}

impl WorkloadOp {
    /// Parse `f` and `value`; `set` when the client serves the set workload. The error names
    /// the op and what was expected.
    pub fn parse(f: &str, value: &Value, set: bool) -> Result<WorkloadOp, String> {
        let int = |v: &Value| {
            v.as_i64()
                .ok_or_else(|| format!("{f}: expected an integer, got {v}"))
        };
        match f {
            "read" if set => Ok(WorkloadOp::SetRead),
            "add" if set => Ok(WorkloadOp::SetAdd(int(value)?)),
            "read" => Ok(WorkloadOp::Read),
            "write" => Ok(WorkloadOp::Write(int(value)?)),
            "cas" => match value.as_array().map(Vec::as_slice) {
                Some([old, new]) => Ok(WorkloadOp::Cas(int(old)?, int(new)?)),
                _ => Err(format!("cas: expected [old, new], got {value}")),
            },
            other => Err(format!("unsupported op {other:?}")),
        }
    }

    /// [`WorkloadOp::parse`] of an op on `key`, which the kv workloads always name: the op and its
    /// key, or the `fail` completion a malformed op gets (nothing was sent).
    pub fn parse_keyed<'k>(
        f: &str,
        key: Option<&'k str>,
        value: &Value,
        set: bool,
    ) -> Result<(WorkloadOp, &'k str), Completion> {
        let fail = |error| Completion::Fail {
            error,
            value: value.clone(),
        };
        let op = WorkloadOp::parse(f, value, set).map_err(fail)?;
        let key = key.ok_or_else(|| fail(format!("{f}: no key")))?;
        Ok((op, key))
    }

    /// True for register and set reads.
    pub fn is_read(self) -> bool {
        matches!(self, WorkloadOp::Read | WorkloadOp::SetRead)
    }

    /// The op's value as it appears in the history.
    pub fn value(self) -> Value {
        match self {
            WorkloadOp::Read | WorkloadOp::SetRead => Value::Null,
            WorkloadOp::Write(v) | WorkloadOp::SetAdd(v) => serde_json::json!(v),
            WorkloadOp::Cas(old, new) => serde_json::json!([old, new]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_open_error_keeps_its_kind_and_words_under_context() {
        let e = ClientOpenError::Config("--read-nodes: no node named \"n7\"".into())
            .context("creating redis client 3");
        assert!(e.is_config());
        assert_eq!(
            e.to_string(),
            "creating redis client 3: --read-nodes: no node named \"n7\""
        );
        let e =
            ClientOpenError::Driver("sentinel list: bad".into()).context("creating redis client 0");
        assert!(!e.is_config());
        assert_eq!(e.to_string(), "creating redis client 0: sentinel list: bad");
    }

    #[test]
    fn kv_ops_parse_per_workload_and_bad_arguments_are_rejected() {
        assert_eq!(
            WorkloadOp::parse("read", &Value::Null, false),
            Ok(WorkloadOp::Read)
        );
        assert_eq!(
            WorkloadOp::parse("write", &json!(3), false),
            Ok(WorkloadOp::Write(3))
        );
        assert_eq!(
            WorkloadOp::parse("cas", &json!([1, 2]), false),
            Ok(WorkloadOp::Cas(1, 2))
        );
        assert!(WorkloadOp::parse("cas", &json!([1]), false).is_err());
        assert!(WorkloadOp::parse("write", &json!("x"), false).is_err());
        assert!(WorkloadOp::parse("append", &json!(1), false).is_err());
        // The set workload: add and a whole-set read; add is no register op.
        assert_eq!(
            WorkloadOp::parse("read", &Value::Null, true),
            Ok(WorkloadOp::SetRead)
        );
        assert_eq!(
            WorkloadOp::parse("add", &json!(7), true),
            Ok(WorkloadOp::SetAdd(7))
        );
        assert!(WorkloadOp::parse("add", &json!(7), false).is_err());
        assert!(WorkloadOp::parse("add", &json!("x"), true).is_err());
    }
}
