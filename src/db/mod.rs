//! Systems under test: the `Db` trait (install, setup, teardown, logs) and optional abilities.
//!
//! Following Jepsen, optional abilities are separate traits (`Kill`, `Pause`) a system may offer;
//! nemeses ask for them through `Db::as_kill`/`Db::as_pause` instead of assuming every system has
//! them. Every method is blocking and talks to one node through a `Remote`; the caller runs nodes
//! in parallel. Nothing here is sandbox-specific: the sandbox only supplies the node list.

pub mod etcd;
pub mod postgres;

use crate::config::Node;
use crate::control::{ExecError, Remote};

/// Why a DB operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A remote command failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The system did not become ready in time.
    #[error("{node}: {what} not ready after {waited_ms} ms: {detail}")]
    NotReady {
        /// Node name.
        node: String,
        /// What was awaited (e.g. "etcd").
        what: String,
        /// How long we waited.
        waited_ms: u64,
        /// Last observation (error text, output).
        detail: String,
    },
    /// Anything else, with the node named.
    #[error("{node}: {message}")]
    Other {
        /// Node name.
        node: String,
        /// What went wrong.
        message: String,
    },
}

/// A database system under test.
pub trait Db: Send + Sync {
    /// Short name, e.g. `etcd`.
    fn name(&self) -> &str;
    /// Make sure the binaries are present on the node (install if missing).
    fn install(&self, remote: &dyn Remote) -> Result<(), DbError>;
    /// Wipe previous state and start the system on `node` as part of `cluster`.
    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;
    /// Stop the system on the node (data stays until the next setup wipes it, for post-mortems).
    fn teardown(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// Remote paths of log files worth collecting.
    fn log_files(&self, node: &Node) -> Vec<String>;
    /// Version string of the installed system, if it can be determined.
    fn version(&self, remote: &dyn Remote) -> Option<String>;
    /// The kill/restart ability, when the system has it.
    fn as_kill(&self) -> Option<&dyn Kill> {
        None
    }
    /// The pause/resume ability, when the system has it.
    fn as_pause(&self) -> Option<&dyn Pause> {
        None
    }
}

/// Crash a node's process and bring it back.
pub trait Kill: Send + Sync {
    /// SIGKILL the system's process on the node. Succeeds if it is already dead.
    fn kill(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// Start the system again if it is not running (data kept). Idempotent.
    fn start(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;
}

/// Freeze a node's process and thaw it.
pub trait Pause: Send + Sync {
    /// SIGSTOP the system's process.
    fn pause(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// SIGCONT the system's process. Idempotent.
    fn resume(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
}
