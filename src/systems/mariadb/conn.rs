//! What the MariaDB clients (`txn`, `kv`) share: the nodes they talk to and how messages name
//! them, connecting with `mysql_async`, routing (which node a write or a read goes to) and the
//! classification of server errors into the reasons a `fail` is counted by.
//!
//! Routing. Writes (and transactions): on `--db mariadb` always the primary (the first node);
//! on `--db galera` per `--write-to` (`own` node, `primary` = first node, `any` = a random node
//! per op). Reads per `--read-from`: `own` the thread's node, `primary` the first node,
//! `replica` a random non-primary node per read (from `--read-nodes` when given), `any` a random
//! node per read (from `--read-nodes` when given). Choices come from a seeded ChaCha8 stream per
//! thread.
//!
//! Error classification. A server error whose code says the statement or transaction was
//! aborted is definite ([`FailReason::definite`]); everything else sent to the server is
//! unknown after a `COMMIT` or an autocommit write, definite before a `COMMIT`:
//!
//! | error                                                              | before COMMIT | at COMMIT / autocommit write |
//! |--------------------------------------------------------------------|---------------|------------------------------|
//! | connecting failed                                                  | fail          | fail                         |
//! | 1213 deadlock (at COMMIT: Galera's certification failure)          | fail          | fail                         |
//! | 1205 lock wait timeout, 1020 snapshot conflict, 1047 wsrep not ready| fail         | fail                         |
//! | 1290 read-only server (a write to a replica)                       | fail          | fail                         |
//! | 1044/1045/1046/1054/1064/1142/1146 refused before running          | fail          | fail                         |
//! | any other server error                                             | fail          | info                         |
//! | lost connection, IO error, timeout                                 | fail          | info                         |
//!
//! Reads change nothing: every read error is `fail`. Does not own the SQL of a workload (`txn`,
//! `kv`) or the servers (`db`).

use crate::client::ClientOpenError;
use crate::options::ReadFrom;
use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// One node the client may talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyNode {
    /// Node name, for error messages.
    pub name: String,
    /// Host or address.
    pub host: String,
}

/// Settings of one client (one worker thread).
#[derive(Debug, Clone)]
pub struct MyClientConfig {
    /// Every node of the cluster; the first is the primary (`--db mariadb`).
    pub nodes: Vec<MyNode>,
    /// SQL port on every node.
    pub port: u16,
    /// Index into `nodes` of the thread's own node.
    pub own: usize,
    /// Where writes and transactions go (`--db mariadb`: always `Primary`).
    pub write_to: super::WriteTo,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Indices of the nodes `replica`/`any` reads may pick; empty = all eligible nodes.
    pub read_nodes: Vec<usize>,
    /// Isolation level of every transaction of the txn workload.
    pub isolation: super::txn::Isolation,
    /// Per-op timeout (connecting included).
    pub timeout_ms: u64,
    /// Seed of the per-op node choices.
    pub seed: u64,
}

impl MyClientConfig {
    /// Refuse an empty node list, an index out of range and a zero timeout.
    pub fn check(&self) -> Result<(), ClientOpenError> {
        let n = self.nodes.len();
        if n == 0 {
            return Err(ClientOpenError::Config("no nodes".into()));
        }
        if self.own >= n || self.read_nodes.iter().any(|&i| i >= n) {
            return Err(ClientOpenError::Config(format!(
                "node index out of range (cluster of {n})"
            )));
        }
        if self.timeout_ms == 0 {
            return Err(ClientOpenError::Config(
                "timeout_ms must be positive".into(),
            ));
        }
        Ok(())
    }

    /// How messages name node `i`: `n2 (10.0.0.2:3306)`.
    pub fn label(&self, i: usize) -> String {
        let n = &self.nodes[i];
        format!("{} ({}:{})", n.name, n.host, self.port)
    }

    /// Open a connection to node `i` as the workload user, in the workload database.
    pub async fn connect(&self, i: usize) -> Result<mysql_async::Conn, mysql_async::Error> {
        let n = &self.nodes[i];
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(n.host.clone())
            .tcp_port(self.port)
            .user(Some(super::db::USER))
            .db_name(Some(super::db::DATABASE))
            .prefer_socket(false)
            .tcp_nodelay(true);
        mysql_async::Conn::new(opts).await
    }
}

/// A thread's node choices (seeded).
pub struct Router {
    rng: ChaCha8Rng,
}

/// The primary: the first node.
pub const PRIMARY: usize = 0;

impl Router {
    /// A router drawing from `seed`.
    pub fn new(seed: u64) -> Router {
        Router {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The node the next write (or transaction) goes to.
    pub fn write(&mut self, cfg: &MyClientConfig) -> usize {
        match cfg.write_to {
            super::WriteTo::Own => cfg.own,
            super::WriteTo::Primary => PRIMARY,
            super::WriteTo::Any => self.rng.random_range(0..cfg.nodes.len()),
        }
    }

    /// The node the next read goes to.
    pub fn read(&mut self, cfg: &MyClientConfig) -> usize {
        let candidates: Vec<usize> = match cfg.read_from {
            ReadFrom::Own => return cfg.own,
            ReadFrom::Primary => return PRIMARY,
            ReadFrom::Replica if cfg.read_nodes.is_empty() => {
                (0..cfg.nodes.len()).filter(|&i| i != PRIMARY).collect()
            }
            ReadFrom::Any if cfg.read_nodes.is_empty() => (0..cfg.nodes.len()).collect(),
            ReadFrom::Replica | ReadFrom::Any => cfg.read_nodes.clone(),
        };
        if candidates.is_empty() {
            return PRIMARY;
        }
        candidates[self.rng.random_range(0..candidates.len())]
    }
}

/// Why an op definitely did not take effect: the first word of its `fail` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    /// 1213 at `COMMIT` (or on an autocommit write): Galera's certification refused the write
    /// set (a conflicting transaction from another node certified first).
    Certification,
    /// 1213 before `COMMIT`: a local InnoDB deadlock, or the transaction was aborted by a
    /// replicated write set that conflicted with it (Galera's brute-force abort).
    Deadlock,
    /// 1205: a lock wait timed out.
    LockWaitTimeout,
    /// 1020 "Record has changed since last read" (`innodb_snapshot_isolation`).
    SnapshotConflict,
    /// 1047 wsrep refusals: the node is not in a primary component or not ready.
    NotReady,
    /// 1290: the server runs with `read_only` (a replica) and refuses writes.
    ReadOnly,
    /// The statement was refused before it ran (no such table or column, no privilege, bad
    /// syntax).
    Refused,
    /// Connecting failed.
    Connect,
    /// Another error before `COMMIT` was sent.
    Other,
}

impl FailReason {
    /// The word the `fail` error starts with.
    pub fn as_str(self) -> &'static str {
        match self {
            FailReason::Certification => "certification-failure",
            FailReason::Deadlock => "deadlock",
            FailReason::LockWaitTimeout => "lock-wait-timeout",
            FailReason::SnapshotConflict => "snapshot-conflict",
            FailReason::NotReady => "node-not-ready",
            FailReason::ReadOnly => "read-only",
            FailReason::Refused => "refused",
            FailReason::Connect => "connect",
            FailReason::Other => "aborted",
        }
    }

    /// The reason of a server error code, when it definitely aborts the statement or the
    /// transaction at any point (also at `COMMIT`); `None` for the rest. `at_commit`: the
    /// error answered a `COMMIT` or an autocommit write.
    pub fn definite(code: u16, at_commit: bool) -> Option<FailReason> {
        match code {
            1213 if at_commit => Some(FailReason::Certification),
            1213 => Some(FailReason::Deadlock),
            1205 => Some(FailReason::LockWaitTimeout),
            1020 => Some(FailReason::SnapshotConflict),
            1047 => Some(FailReason::NotReady),
            1290 => Some(FailReason::ReadOnly),
            1044 | 1045 | 1046 | 1054 | 1064 | 1142 | 1146 => Some(FailReason::Refused),
            _ => None,
        }
    }

    /// The reason of a `mysql_async` error, when it is definite (`at_commit` as for
    /// [`FailReason::definite`]).
    pub fn of(e: &mysql_async::Error, at_commit: bool) -> Option<FailReason> {
        match e {
            mysql_async::Error::Server(s) => FailReason::definite(s.code, at_commit),
            _ => None,
        }
    }
}

/// A server error as the server said it (`ERROR 1213 (40001): Deadlock found…`), anything else
/// as its chain of causes.
pub fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => {
            format!("ERROR {} ({}): {}", s.code, s.state, s.message)
        }
        other => crate::client::error_chain(other),
    }
}

/// Whether the connection may be unusable after `e` (anything but a server error answer).
pub fn breaks_connection(e: &mysql_async::Error) -> bool {
    !matches!(e, mysql_async::Error::Server(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(
        read_from: ReadFrom,
        read_nodes: Vec<usize>,
        write_to: super::super::WriteTo,
    ) -> MyClientConfig {
        MyClientConfig {
            nodes: (1..=5)
                .map(|i| MyNode {
                    name: format!("n{i}"),
                    host: format!("10.104.0.{i}"),
                })
                .collect(),
            port: 3306,
            own: 2,
            write_to,
            read_from,
            read_nodes,
            isolation: Default::default(),
            timeout_ms: 1000,
            seed: 7,
        }
    }

    fn picks(c: &MyClientConfig, read: bool) -> std::collections::BTreeSet<usize> {
        let mut r = Router::new(c.seed);
        (0..200)
            .map(|_| if read { r.read(c) } else { r.write(c) })
            .collect()
    }

    #[test]
    fn reads_and_writes_are_routed_per_flag() {
        use super::super::WriteTo;
        let set = |v: &[usize]| v.iter().copied().collect::<std::collections::BTreeSet<_>>();
        let c = cfg(ReadFrom::Primary, vec![], WriteTo::Primary);
        assert_eq!(picks(&c, true), set(&[0]));
        assert_eq!(picks(&c, false), set(&[0]));
        let c = cfg(ReadFrom::Own, vec![], WriteTo::Own);
        assert_eq!(picks(&c, true), set(&[2]));
        assert_eq!(picks(&c, false), set(&[2]));
        let c = cfg(ReadFrom::Replica, vec![], WriteTo::Any);
        assert_eq!(picks(&c, true), set(&[1, 2, 3, 4]));
        assert_eq!(picks(&c, false), set(&[0, 1, 2, 3, 4]));
        let c = cfg(ReadFrom::Any, vec![], WriteTo::Primary);
        assert_eq!(picks(&c, true), set(&[0, 1, 2, 3, 4]));
        let c = cfg(ReadFrom::Replica, vec![3], WriteTo::Primary);
        assert_eq!(picks(&c, true), set(&[3]));
    }

    #[test]
    fn bad_configs_are_refused() {
        let mut c = cfg(ReadFrom::Own, vec![], Default::default());
        assert!(c.check().is_ok());
        c.read_nodes = vec![9];
        assert!(c.check().unwrap_err().to_string().contains("out of range"));
        c.read_nodes.clear();
        c.timeout_ms = 0;
        assert!(c.check().is_err());
        c.timeout_ms = 1;
        c.nodes.clear();
        assert!(c.check().is_err());
    }

    #[test]
    fn galera_aborts_and_refusals_are_definite_with_their_own_reasons() {
        use FailReason::*;
        assert_eq!(FailReason::definite(1213, true), Some(Certification));
        assert_eq!(FailReason::definite(1213, false), Some(Deadlock));
        assert_eq!(FailReason::definite(1205, true), Some(LockWaitTimeout));
        assert_eq!(FailReason::definite(1047, false), Some(NotReady));
        assert_eq!(FailReason::definite(1290, true), Some(ReadOnly));
        assert_eq!(FailReason::definite(1146, true), Some(Refused));
        assert_eq!(FailReason::definite(1020, true), Some(SnapshotConflict));
        // "Got error during COMMIT" and unknown codes: the commit may have happened.
        assert_eq!(FailReason::definite(1180, true), None);
        assert_eq!(FailReason::definite(1927, true), None);
        let lost = mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed);
        assert_eq!(FailReason::of(&lost, true), None);
        assert!(breaks_connection(&lost));
    }
}
