//! MariaDB / Galera client for the list-append transaction workload (`--workload txn`), with
//! `mysql_async`: each op is one real SQL transaction (`SET TRANSACTION ISOLATION LEVEL …`, then
//! `START TRANSACTION`, one statement per micro-op, `COMMIT`) on `shakedown.txn_lists(k
//! varchar primary key, v text)`, the list kept as comma-separated text as published analyses
//! of Galera do:
//! - `["append", k, e]` → `INSERT … VALUES (k, 'e') ON DUPLICATE KEY UPDATE v = CONCAT(v, ',',
//!   VALUES(v))` (an upsert that appends);
//! - `["r", k, nil]` → `SELECT v … WHERE k = ?` → `["r", k, [e…]]` (no row = `[]`).
//!
//! Routing (`--write-to`): `own` (default) sends every transaction of a thread to its own node,
//! `primary` to the first node, `any` to a random node per transaction (seeded per thread). One
//! connection per node, opened on first use, dropped after an error that may have broken it.
//!
//! Outcomes, as for PostgreSQL: any error before `COMMIT` was sent leaves the transaction
//! uncommitted → `fail`; at `COMMIT`, a server error that aborts the transaction (1213, which is
//! how Galera reports a failed certification, and the other [`FailReason`]s) → `fail`; a lost
//! connection, a timeout or another error after `COMMIT` was sent → `info`. Every `fail` error
//! starts with its [`FailReason`] word, so the history counts certification failures, deadlocks
//! and lock-wait timeouts apart. Does not own the cluster (`db`) or the checker (`checker::txn`).

use crate::client::{Client, Completion};
use crate::generator::txn::{Mop, key_text, parse_mops as parse};
use mysql_async::prelude::Queryable;
use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// Transaction isolation level (`--isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// READ COMMITTED.
    ReadCommitted,
    /// REPEATABLE READ (InnoDB's default: consistent reads from a read view, but writes and
    /// locking reads see the latest committed row).
    #[default]
    RepeatableRead,
    /// SERIALIZABLE (InnoDB: every plain read is a shared-locking read; local to a node).
    Serializable,
}

impl Isolation {
    /// The flag value (`repeatable-read`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The statement that sets the next transaction's level.
    fn set_sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
            Isolation::RepeatableRead => "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const APPEND_SQL: &str = "INSERT INTO txn_lists (k, v) VALUES (?, ?) \
     ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', VALUES(v))";
const READ_SQL: &str = "SELECT v FROM txn_lists WHERE k = ?";

/// Why a transaction definitely did not commit: the first word of its `fail` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    /// 1213 at `COMMIT`: Galera's certification refused the write set (a conflicting
    /// transaction from another node certified first).
    Certification,
    /// 1213 before `COMMIT`: a local InnoDB deadlock, or the transaction was aborted by a
    /// replicated write set that conflicted with it (Galera's brute-force abort).
    Deadlock,
    /// 1205: a lock wait timed out.
    LockWaitTimeout,
    /// 1020 "Record has changed since last read" (`innodb_snapshot_isolation`).
    SnapshotConflict,
    /// 1047 / 1180 wsrep refusals: the node is not in a primary component or not ready.
    NotReady,
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
            FailReason::Connect => "connect",
            FailReason::Other => "aborted",
        }
    }

    /// The reason of a server error code, when it definitely aborts the transaction at any
    /// point (also at `COMMIT`); `None` for the rest.
    fn definite(code: u16, at_commit: bool) -> Option<FailReason> {
        match code {
            1213 if at_commit => Some(FailReason::Certification),
            1213 => Some(FailReason::Deadlock),
            1205 => Some(FailReason::LockWaitTimeout),
            1020 => Some(FailReason::SnapshotConflict),
            1047 => Some(FailReason::NotReady),
            _ => None,
        }
    }
}

/// The list a text column holds (`"3,7,12"`; empty or no row = `[]`); the error quotes it.
fn parse_list(text: Option<&str>) -> Result<Vec<i64>, String> {
    match text {
        None | Some("") => Ok(Vec::new()),
        Some(t) => t
            .split(',')
            .map(|e| {
                e.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("unreadable list element {e:?} in {t:?}"))
            })
            .collect(),
    }
}

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
    /// Every node of the cluster.
    pub nodes: Vec<MyNode>,
    /// SQL port on every node.
    pub port: u16,
    /// Index into `nodes` of the thread's own node.
    pub own: usize,
    /// Where transactions go.
    pub write_to: super::WriteTo,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// Per-op timeout (connecting included).
    pub timeout_ms: u64,
    /// Seed of the per-transaction node choice (`--write-to any`).
    pub seed: u64,
}

/// Where one transaction got to when it stopped.
struct Stopped {
    error: String,
    /// `COMMIT` had been sent.
    commit_sent: bool,
    /// The transaction definitely did not commit, and why.
    definite: Option<FailReason>,
    /// The connection may be unusable.
    broken: bool,
}

/// The list-append transaction client (one per worker thread).
pub struct MyTxnClient {
    cfg: MyClientConfig,
    conns: Vec<Option<mysql_async::Conn>>,
    rng: ChaCha8Rng,
    /// Set once the current transaction's `COMMIT` was handed to the connection.
    commit_sent: bool,
}

fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => {
            format!("ERROR {} ({}): {}", s.code, s.state, s.message)
        }
        other => crate::client::error_chain(other),
    }
}

impl MyTxnClient {
    /// A client; connections open on first use.
    pub fn new(cfg: MyClientConfig) -> MyTxnClient {
        MyTxnClient {
            conns: (0..cfg.nodes.len()).map(|_| None).collect(),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            commit_sent: false,
        }
    }

    fn label(&self, i: usize) -> String {
        let n = &self.cfg.nodes[i];
        format!("{} ({}:{})", n.name, n.host, self.cfg.port)
    }

    fn pick_node(&mut self) -> usize {
        match self.cfg.write_to {
            super::WriteTo::Own => self.cfg.own,
            super::WriteTo::Primary => 0,
            super::WriteTo::Any => self.rng.random_range(0..self.cfg.nodes.len()),
        }
    }

    async fn connect(&self, i: usize) -> Result<mysql_async::Conn, mysql_async::Error> {
        let n = &self.cfg.nodes[i];
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(n.host.clone())
            .tcp_port(self.cfg.port)
            .user(Some(super::db::USER))
            .db_name(Some(super::db::DATABASE))
            .prefer_socket(false)
            .tcp_nodelay(true);
        mysql_async::Conn::new(opts).await
    }

    /// Run the transaction on node `i`: the completed micro-ops, or where it stopped.
    async fn run(&mut self, i: usize, mops: &[Mop]) -> Result<Value, Stopped> {
        let label = self.label(i);
        let stopped = |e: &mysql_async::Error, commit_sent: bool| {
            let (definite, broken) = match e {
                mysql_async::Error::Server(s) => (FailReason::definite(s.code, commit_sent), false),
                _ => (None, true),
            };
            Stopped {
                error: format!("{label}: {}", describe(e)),
                commit_sent,
                definite,
                broken,
            }
        };
        if self.conns[i].is_none() {
            match self.connect(i).await {
                Ok(c) => self.conns[i] = Some(c),
                Err(e) => {
                    let mut s = stopped(&e, false);
                    s.error = format!("{label}: connecting: {}", describe(&e));
                    s.definite = Some(FailReason::Connect);
                    return Err(s);
                }
            }
        }
        let isolation = self.cfg.isolation;
        let conn = self.conns[i].as_mut().expect("connection just opened");
        let begun = async {
            conn.query_drop(isolation.set_sql()).await?;
            conn.query_drop("START TRANSACTION").await
        };
        if let Err(e) = begun.await {
            return Err(stopped(&e, false));
        }
        let mut done = Vec::with_capacity(mops.len());
        for m in mops {
            let r = match m {
                Mop::Append { key, elem } => conn
                    .exec_drop(APPEND_SQL, (key_text(key), elem.to_string()))
                    .await
                    .map(|()| Ok(json!(["append", key, elem]))),
                Mop::Read { key } => conn
                    .exec_first::<Option<String>, _, _>(READ_SQL, (key_text(key),))
                    .await
                    .map(|row| {
                        parse_list(row.flatten().as_deref()).map(|list| json!(["r", key, list]))
                    }),
            };
            match r {
                Ok(Ok(v)) => done.push(v),
                Ok(Err(unreadable)) => {
                    // The read happened and returned something that is not a list: nothing
                    // was committed yet, but hiding it as a plain failure would hide the
                    // garbage; roll back and say so.
                    let _ = conn.query_drop("ROLLBACK").await;
                    return Err(Stopped {
                        error: format!("{label}: {unreadable}"),
                        commit_sent: false,
                        definite: Some(FailReason::Other),
                        broken: false,
                    });
                }
                Err(e) => {
                    let s = stopped(&e, false);
                    // Not committed: roll back so the connection can be reused.
                    if s.broken || conn.query_drop("ROLLBACK").await.is_err() {
                        self.conns[i] = None;
                    }
                    return Err(s);
                }
            }
        }
        self.commit_sent = true;
        match conn.query_drop("COMMIT").await {
            Ok(()) => Ok(Value::Array(done)),
            Err(e) => Err(stopped(&e, true)),
        }
    }
}

#[async_trait::async_trait]
impl Client for MyTxnClient {
    async fn invoke(&mut self, f: &str, _key: Option<&str>, value: &Value) -> Completion {
        let mops = match parse(value) {
            Ok(m) if f == crate::generator::txn::F => m,
            Ok(_) => {
                return Completion::Fail {
                    error: format!("the txn workload has no operation {f:?}"),
                    value: value.clone(),
                };
            }
            Err(error) => {
                return Completion::Fail {
                    error,
                    value: value.clone(),
                };
            }
        };
        let node = self.pick_node();
        self.commit_sent = false;
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        let result = match tokio::time::timeout(timeout, self.run(node, &mops)).await {
            Ok(r) => r,
            Err(_) => Err(Stopped {
                error: format!(
                    "{}: timed out after {} ms{}",
                    self.label(node),
                    self.cfg.timeout_ms,
                    if self.commit_sent {
                        " after COMMIT was sent"
                    } else {
                        ""
                    }
                ),
                commit_sent: self.commit_sent,
                definite: None,
                broken: true,
            }),
        };
        match result {
            Ok(value) => Completion::Ok {
                value,
                version: None,
            },
            Err(s) => {
                if s.broken {
                    self.conns[node] = None;
                }
                match (s.commit_sent, s.definite) {
                    (_, Some(reason)) => Completion::Fail {
                        error: format!("{}: {}", reason.as_str(), s.error),
                        value: value.clone(),
                    },
                    // Uncommitted until COMMIT was sent.
                    (false, None) => Completion::Fail {
                        error: format!("{}: {}", FailReason::Other.as_str(), s.error),
                        value: value.clone(),
                    },
                    (true, None) => Completion::Info { error: s.error },
                }
            }
        }
    }

    async fn close(&mut self) {
        for c in self.conns.iter_mut() {
            if let Some(conn) = c.take() {
                let _ = tokio::time::timeout(Duration::from_secs(1), conn.disconnect()).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lists_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_list(None).unwrap(), Vec::<i64>::new());
        assert_eq!(parse_list(Some("")).unwrap(), Vec::<i64>::new());
        assert_eq!(parse_list(Some("3,7,12")).unwrap(), vec![3, 7, 12]);
        assert!(parse_list(Some("3,x")).unwrap_err().contains("\"x\""));
        assert_eq!(
            Isolation::RepeatableRead.set_sql(),
            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        );
    }

    #[test]
    fn galera_aborts_are_definite_with_their_own_reasons() {
        assert_eq!(
            FailReason::definite(1213, true),
            Some(FailReason::Certification)
        );
        assert_eq!(
            FailReason::definite(1213, false),
            Some(FailReason::Deadlock)
        );
        assert_eq!(
            FailReason::definite(1205, true),
            Some(FailReason::LockWaitTimeout)
        );
        assert_eq!(
            FailReason::definite(1047, false),
            Some(FailReason::NotReady)
        );
        assert_eq!(FailReason::definite(1064, true), None);
    }
}
