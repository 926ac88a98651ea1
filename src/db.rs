//! The shared seam of systems on the nodes: the `Db` trait (install, setup, teardown, logs) and
//! optional abilities, and `Abilities`, the part of a system faults see. Implementations live in
//! each system's folder (`systems::<name>::db`); `db::layer` is the lose-unsynced layer a data
//! directory can be served from.
//!
//! Following Jepsen, optional abilities are separate traits (`Kill`, `Pause`, `Primaries`,
//! `Promote`, `Membership`) a system may offer; nemeses ask for them through
//! `Abilities::as_kill`/`as_pause`/`as_primaries`/`as_promote`/`as_membership` instead of
//! assuming every system has them, and `systems::Supports::check` refuses a fault whose ability
//! is missing before a run starts. `MemberView` is what a node's server says the membership is;
//! merging views, pending changes and schedules belong to the fault, not here.
//! `Db::packages` feeds `provision`; `Db::required_binaries` feeds `shakedown doctor`. Every method is blocking and talks to one
//! node through a `Remote`; the caller runs nodes in parallel. Nothing here is sandbox-specific:
//! the sandbox only supplies the node list.

pub mod layer;

use crate::control::{Cmd, ExecError, Remote};
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

/// Exits 0 when program `$1` is at one of the paths `$2…` or on `PATH`.
const HAS_BINARY_SCRIPT: &str = r#"n="$1"; shift
for p in "$@"; do [ -x "$p" ] && exit 0; done
command -v "$n" >/dev/null 2>&1
"#;

/// Checks that every one of `binaries` is on the node; the error names each missing one and
/// how to get it (what [`Db::install`] does by default).
pub fn check_binaries(remote: &dyn Remote, binaries: &[Binary]) -> Result<(), DbError> {
    let mut missing: Vec<&Binary> = Vec::new();
    for b in binaries {
        let args = std::iter::once(b.name.clone()).chain(b.paths.iter().cloned());
        if !remote
            .exec(&Cmd::script(HAS_BINARY_SCRIPT, args))?
            .success()
        {
            missing.push(b);
        }
    }
    let Some(first) = missing.first() else {
        return Ok(());
    };
    let names: Vec<&str> = missing.iter().map(|b| b.name.as_str()).collect();
    let fix = if missing.iter().all(|b| b.fix == first.fix) {
        first.fix.clone()
    } else {
        missing
            .iter()
            .map(|b| format!("{}: {}", b.name, b.fix))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Err(DbError::Other {
        node: remote.node().to_string(),
        message: format!("{} not found; {fix}", names.join(", ")),
    })
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
    /// The system answered that it did not do what was asked: nothing changed, and the same
    /// request may succeed later (e.g. etcd refusing a membership change while a member is
    /// unhealthy). Errors of other kinds leave open whether the request took effect.
    #[error("{node}: {message}")]
    Refused {
        /// Node name (the one that refused).
        node: String,
        /// What was asked and the system's words.
        message: String,
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

/// What faults need from a system, and all the nemesis sees of it: its name, the optional
/// abilities it has (kill, pause, promote, primaries, membership) and its data directory. Every [`Db`] has
/// it; `shakedown chaos`, which runs no system lifecycle, serves it alone (`chaos::run`'s
/// `ChaosAbilities`: pause and primaries of its `--db`, if any).
pub trait Abilities: Send + Sync {
    /// Short name, e.g. `etcd`.
    fn name(&self) -> &str;
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
    /// The membership-change ability (remove a member, add one back fresh), when the system
    /// has it.
    fn as_membership(&self) -> Option<&dyn Membership> {
        None
    }
    /// The directory holding the state that must survive a power failure (what the
    /// `power-loss` fault serves from the lose-unsynced layer); `None`: not declared, and the
    /// fault is refused.
    fn data_dir(&self) -> Option<String> {
        None
    }
    /// Globs, relative to [`Abilities::data_dir`], of the files holding acknowledged data (WAL
    /// segments, append-only files, snapshots): what the `bitflip` and `truncate` faults choose
    /// from (`*` also matches across `/`). Empty: none declared; those faults then need their
    /// own `files`.
    fn data_files(&self) -> Vec<String> {
        Vec::new()
    }
    /// The lose-unsynced layer this run mounted on [`Abilities::data_dir`] (set when the nemesis has
    /// `power-loss`); `None`: the data directory is a plain directory.
    fn data_layer(&self) -> Option<layer::DataLayer> {
        None
    }
    /// How to read on `node` the wall clock the database process itself reports (a timestamp
    /// it serves), for `clock-offsets` beside the node's `date`; `None`: the system cannot tell.
    fn process_clock(&self, _node: &Node) -> Option<ProcessClock> {
        None
    }
}

/// A reading of the wall clock a database process reports: a command run on its node that
/// prints the process's time as `<epoch seconds>.<fraction>` (what `date +%s.%N` prints).
#[derive(Debug, Clone)]
pub struct ProcessClock {
    /// The command (exits non-zero when the process does not answer).
    pub cmd: Cmd,
    /// What is read, in words (`etcd's HTTP Date header`).
    pub source: &'static str,
    /// The reading's resolution in ms (a `Date` header's is 1000; the command prints the middle
    /// of the interval).
    pub resolution_ms: f64,
}

/// A database system under test: its lifecycle on the nodes, and (the supertrait) what faults
/// need from it.
pub trait Db: Abilities {
    /// Debian packages every node needs. `provision` installs the missing ones before
    /// [`Db::install`] (on this machine for the sandbox, whose nodes share its files; over SSH
    /// otherwise), unless the user manages packages (`--no-install`).
    fn packages(&self) -> Vec<String> {
        Vec::new()
    }
    /// The system's own steps after its packages (e.g. a release tarball), then a check that its
    /// programs are on the node: an error names what is missing and how to get it.
    fn install(&self, remote: &dyn Remote) -> Result<(), DbError> {
        check_binaries(remote, &self.required_binaries())
    }
    /// Wipe previous state and start the system on `node` as part of `cluster`.
    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;
    /// Stop the system on the node (data stays until the next setup wipes it, for post-mortems).
    fn teardown(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// Remote paths of log files worth collecting.
    fn log_files(&self, node: &Node) -> Vec<String>;
    /// Version string of the installed system, if it can be determined.
    fn version(&self, remote: &dyn Remote) -> Option<String>;
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
    /// Whether the system's process runs on the node now; `None` when the system cannot tell
    /// (the end-of-run status then says unknown for it).
    fn running(&self, _remote: &dyn Remote, _node: &Node) -> Option<Result<bool, DbError>> {
        None
    }
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

/// Change who is a member of the cluster through the system's own admin interface: remove a
/// member, stop and wipe it once the removal is confirmed, add it back as a fresh member.
///
/// Each method is one step; the caller (the membership fault) polls views between them, decides
/// when a change is confirmed and keeps changes that timed out pending (one that timed out may
/// still commit). `via` is a member the request is sent to; `target` the node that leaves or
/// joins. Every error names the node it is about and the system's own words; a change the
/// system refused outright is [`DbError::Refused`] (it did not happen), any other error leaves
/// open whether it did (a timed-out change may still commit).
pub trait Membership: Send + Sync {
    /// `node`'s view of the membership, asked through its own server (not a linearizable read:
    /// a node cut off from the others answers with what it last knew). `cluster` maps the
    /// system's members to nodes. An error when the node does not answer.
    fn view(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<MemberView, DbError>;
    /// Ask the member `via` to remove `target` from the cluster. Succeeds at once, sending
    /// nothing, when `via`'s view no longer lists `target` (an earlier removal committed). Does
    /// not touch `target`'s process or data: [`Membership::retire`] does, once the caller saw
    /// the removal in the views.
    fn remove(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError>;
    /// Stop the system's process on a node that is no longer a member (succeeds if it already
    /// exited, as a removed member may by itself) and wipe its data, so it can only come back
    /// through [`Membership::add`]. The log stays, for the post-mortem.
    fn retire(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError>;
    /// Ask the member `via` to add `target`, then start `target` with empty data as a new member
    /// joining the running cluster whose members are `members` (`target` not among them).
    /// `cluster` is every node of the cluster in its configured order (what maps the system's
    /// members, ids and indices to nodes, as for [`Membership::view`]). When `via`'s view already lists `target` as added but never started (an earlier add
    /// committed), only the start is done. Returns once `target`'s process is started, not
    /// once it has caught up: its own view says when it has joined.
    fn add(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target_remote: &dyn Remote,
        target: &Node,
        members: &[Node],
        cluster: &[Node],
    ) -> Result<(), DbError>;
    /// How many of `members` voting members must be up and connected for the cluster to make
    /// progress (a majority by default). A fault refuses to shrink a cluster of `n` nodes
    /// below `quorum(n)` members unless told to allow a minority.
    fn quorum(&self, members: usize) -> usize {
        members / 2 + 1
    }
}

/// One node's view of the cluster's membership, as its server lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemberView {
    /// The members, in the order the server listed them.
    pub members: Vec<Member>,
}

/// One member in a [`MemberView`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// The node of the cluster this member is (by the system's name for it, else by its
    /// address); `None` when it is none of them.
    pub node: Option<String>,
    /// The system's id for it, as its admin interface takes it (etcd: hex).
    pub id: String,
    /// The system's name for it; empty for a member added but not started yet (etcd learns a
    /// member's name when it first joins).
    pub name: String,
    /// A non-voting member (etcd: a learner).
    pub learner: bool,
    /// Whether it has started since it was added (`false` between an add and its first join).
    pub started: bool,
}

impl MemberView {
    /// The nodes this view lists as members, started or not, learners too (sorted, distinct).
    pub fn nodes(&self) -> Vec<String> {
        self.nodes_where(|_| true)
    }

    /// The nodes that are started voting members in this view (sorted, distinct).
    pub fn voters(&self) -> Vec<String> {
        self.nodes_where(|m| m.started && !m.learner)
    }

    /// The nodes whose membership is not complete in this view: added but not started, or
    /// learners (sorted, distinct).
    pub fn pending(&self) -> Vec<String> {
        self.nodes_where(|m| !m.started || m.learner)
    }

    /// Whether this view lists `node` as a member (started or not).
    pub fn lists(&self, node: &str) -> bool {
        self.member(node).is_some()
    }

    /// The member that is `node`, if this view lists it.
    pub fn member(&self, node: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| m.node.as_deref() == Some(node))
    }

    /// How many members this view lists that are none of the cluster's nodes.
    pub fn strangers(&self) -> usize {
        self.members.iter().filter(|m| m.node.is_none()).count()
    }

    fn nodes_where(&self, keep: impl Fn(&Member) -> bool) -> Vec<String> {
        let set: std::collections::BTreeSet<String> = self
            .members
            .iter()
            .filter(|m| keep(m))
            .filter_map(|m| m.node.clone())
            .collect();
        set.into_iter().collect()
    }
}
