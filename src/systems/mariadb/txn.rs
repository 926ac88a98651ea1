//! MariaDB / Galera client for the list-append transaction workload (`--workload txn`), with
//! `mysql_async`: each op is one real SQL transaction (`SET TRANSACTION ISOLATION LEVEL …`, then
//! `START TRANSACTION`, one statement per micro-op, `COMMIT`) on `shakedown.txn_lists(k
//! varchar primary key, v text)`, the list kept as comma-separated text as published analyses
//! of Galera do:
//! - `["append", k, e]` → `INSERT … VALUES (k, 'e') ON DUPLICATE KEY UPDATE v = CONCAT(v, ',',
//!   VALUES(v))` (an upsert that appends);
//! - `["r", k, nil]` → `SELECT v … WHERE k = ?` → `["r", k, [e…]]` (no row = `[]`).
//!
//! Routing: every transaction goes where writes go (`conn::Router::write`: on `--db mariadb`
//! the primary; on `--db galera` per `--write-to`). One connection per node, opened on first
//! use, dropped after an error that may have broken it.
//!
//! Outcomes, as for PostgreSQL: any error before `COMMIT` was sent leaves the transaction
//! uncommitted → `fail`; at `COMMIT`, a server error that aborts the transaction (1213, which is
//! how Galera reports a failed certification, and the other `conn::FailReason`s) → `fail`; a lost
//! connection, a timeout or another error after `COMMIT` was sent → `info`. Every `fail` error
//! starts with its [`FailReason`] word (`conn`), so the history counts certification failures, deadlocks
//! and lock-wait timeouts apart. Does not own the cluster (`db`) or the checker (`checker::txn`).

use super::conn::{FailReason, MyClientConfig, Router, breaks_connection, describe};
use crate::client::{Client, ClientOpenError, Completion};
use crate::generator::txn::{Mop, key_text, parse_mops as parse};
use mysql_async::prelude::Queryable;
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
    router: Router,
    /// Set once the current transaction's `COMMIT` was handed to the connection.
    commit_sent: bool,
}

impl MyTxnClient {
    /// A client; connections open on first use. Fails on a config [`MyClientConfig::check`]
    /// refuses.
    pub fn new(cfg: MyClientConfig) -> Result<MyTxnClient, ClientOpenError> {
        cfg.check()?;
        Ok(MyTxnClient {
            conns: (0..cfg.nodes.len()).map(|_| None).collect(),
            router: Router::new(cfg.seed),
            cfg,
            commit_sent: false,
        })
    }

    fn label(&self, i: usize) -> String {
        self.cfg.label(i)
    }

    /// Run the transaction on node `i`: the completed micro-ops, or where it stopped.
    async fn run(&mut self, i: usize, mops: &[Mop]) -> Result<Value, Stopped> {
        let label = self.label(i);
        let stopped = |e: &mysql_async::Error, commit_sent: bool| {
            let (definite, broken) = (FailReason::of(e, commit_sent), breaks_connection(e));
            Stopped {
                error: format!("{label}: {}", describe(e)),
                commit_sent,
                definite,
                broken,
            }
        };
        if self.conns[i].is_none() {
            match self.cfg.connect(i).await {
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
        let node = self.router.write(&self.cfg);
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
}
