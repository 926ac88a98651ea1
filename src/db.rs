//! The shared seam of systems on the nodes: the `Db` trait (install, setup, teardown, logs) and
//! optional abilities. Implementations live in each system's folder (`systems::<name>::db`).
//!
//! Following Jepsen, optional abilities are separate traits (`Kill`, `Pause`, `Primaries`,
//! `Promote`) a system may offer; nemeses ask for them through `Db::as_kill`/`Db::as_pause`/
//! `Db::as_primaries`/`Db::as_promote` instead of assuming every system has them, and
//! `systems::Supports::check` refuses a fault whose ability is missing before a run starts.
//! `Db::required_binaries` feeds `shakedown doctor`. Every method is blocking and talks to one
//! node through a `Remote`; the caller runs nodes in parallel. Nothing here is sandbox-specific:
//! the sandbox only supplies the node list.

use crate::control::{ExecError, Remote};
use crate::node::Node;
use std::sync::Arc;

/// A program the system needs on every node (checked by `shakedown doctor`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Binary {
    /// Program name, looked up in `PATH`.
    pub name: String,
    /// Absolute paths tried before `PATH` (e.g. a tarball install).
    pub paths: Vec<String>,
    /// How to get it when it is missing.
    pub fix: String,
}

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
    /// The promote-a-replica (failover) ability, when the system has it.
    fn as_promote(&self) -> Option<&dyn Promote> {
        None
    }
    /// The "who leads now" ability, when the system has it (targets and partitions `primaries`).
    fn as_primaries(&self) -> Option<&dyn Primaries> {
        None
    }
    /// Programs that must be present on every node (none by default).
    fn required_binaries(&self) -> Vec<Binary> {
        Vec::new()
    }
}

/// Ask the system which nodes currently lead.
pub trait Primaries: Send + Sync {
    /// Names of the nodes some reachable member currently considers leader (more than one
    /// during a partition, when a deposed leader has not noticed yet). Asks the nodes in turn
    /// until one answers; `remotes` and `nodes` are in the same order. An error when no node
    /// answers or none knows a leader.
    fn primaries(
        &self,
        remotes: &[Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError>;
}

/// Crash a node's process and bring it back.
pub trait Kill: Send + Sync {
    /// SIGKILL the system's process on the node. Succeeds if it is already dead.
    fn kill(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// Start the system again if it is not running (data kept). Idempotent.
    fn start(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;
}

/// Fail over: make a replica the primary. One-shot: nothing undoes it (the old primary is not
/// fenced, as in an unmanaged failover); clients that route by primary follow the promotion.
pub trait Promote: Send + Sync {
    /// Nodes that can be promoted now (the replicas), by name.
    fn candidates(&self, cluster: &[Node]) -> Vec<String>;
    /// Promote `node` to primary and direct new writes to it.
    fn promote(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;
}

/// Freeze a node's process and thaw it.
pub trait Pause: Send + Sync {
    /// SIGSTOP the system's process.
    fn pause(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// SIGCONT the system's process. Idempotent.
    fn resume(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
}
