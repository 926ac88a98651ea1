//! Clients that perform workload ops against a system under test.
//!
//! Owns the `Client` trait the interpreter's worker tasks call, and the `Completion` a client
//! reports for each op. Does not own op generation, history writing, process numbering or retries:
//! a client performs exactly one attempt per `invoke` and classifies the outcome honestly
//! (`Ok` = happened, `Fail` = definitely did not happen, `Info` = unknown). Implementations live in
//! submodules (`etcd`, `postgres`).

pub mod etcd;
pub mod postgres;

use crate::history::OpType;
use serde_json::Value;

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
    /// within the configured timeout (plus small slack).
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion;

    /// Release resources (connections). Ops must not be invoked afterwards.
    async fn close(&mut self) {}
}
